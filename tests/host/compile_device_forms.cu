// Compile-only: the device layer's copy helpers in the forms a kernel writes them, with and
// without debug mode: a tile's own Buffer by address or its bytes, a void*, coordinates
// signed or unsigned (`blockIdx.x * 32`), every defined reduce. Nothing runs; that each
// call resolves to one helper and compiles for sm_90a is the test (the misuse beside them
// must not: compile_device_misuse.cu).
#include <cuda.h>

#include "tmakit/device/copy.hpp"
#include "tmakit/device/pipeline.hpp"

using F32Tile = tmakit::Tile<float, tmakit::Swizzle::none, 32, 8>;
using U32Tile = tmakit::Tile<std::uint32_t, tmakit::Swizzle::none, 32, 8>;
using I64Tile = tmakit::Tile<std::int64_t, tmakit::Swizzle::none, 16, 8>;
using U64Tile = tmakit::Tile<std::uint64_t, tmakit::Swizzle::none, 16, 8>;
using Bf16Tile = tmakit::Tile<__nv_bfloat16, tmakit::Swizzle::bytes64, 32, 8>;
using Half8 = tmakit::Tile<float, tmakit::Swizzle::none, 32, 4>;  // fits F32Tile's Buffer

__global__ void every_copy_form(const __grid_constant__ CUtensorMap map, int x) {
  __shared__ F32Tile::Buffer buf[2];
  __shared__ Bf16Tile::Buffer bf16_buf;
  __shared__ tmakit::Barrier bar;
  const unsigned u = blockIdx.x * 32;
  tmakit::arrive_and_load<F32Tile>(&buf[0], &map, bar, {blockIdx.x * 32, 0});
  tmakit::arrive_and_load<F32Tile>(&buf[1], &map, bar, {u, blockIdx.y * 8});
  tmakit::arrive_and_load<F32Tile>(buf[1].bytes, &map, bar, {x, 0});
  tmakit::arrive_and_load<Half8>(&buf[1], &map, bar, {0, 0});
  tmakit::arrive_and_load<Bf16Tile>(&bf16_buf, &map, bar, {x, x});
  tmakit::load_tile<F32Tile>(static_cast<void*>(&buf[1]), &map, bar, {x, x});
  tmakit::load_tile<F32Tile>(&buf[0], &map, bar, {x, x}, 0ull);
  tmakit::load_tile<F32Tile, 2>(&buf[0], &map, bar, {x, x});  // the rank given, as before
  tmakit::reduce_tile<F32Tile, tmakit::ReduceOp::add, 2>(&map, &buf[0], {x, 0});
  tmakit::load_tile<F32Tile>(&buf[0], &map, bar, {u, 0u}, 0ull);
  tmakit::load_tile_multicast<F32Tile>(&buf[0], &map, bar, {u, 0}, 3);
  tmakit::load_tile_multicast<F32Tile>(buf[0].bytes, &map, bar, {x, 0}, 1);
  tmakit::store_tile<F32Tile>(&map, &buf[0], {u, 0u});
  tmakit::store_tile<F32Tile>(&map, buf[0].bytes, {x, 0});
  tmakit::store_tile<F32Tile>(&map, static_cast<const void*>(&buf[0]), {x, 0}, 0ull);
  tmakit::store_tile<F32Tile>(&map, &buf[0], {u, 0}, 0ull);
  tmakit::reduce_tile<F32Tile, tmakit::ReduceOp::add>(&map, &buf[0], {u, 0});
  tmakit::reduce_tile<U32Tile, tmakit::ReduceOp::inc>(&map, &buf[0], {x, 0});
  tmakit::reduce_tile<U32Tile, tmakit::ReduceOp::bit_xor>(&map, buf[0].bytes, {x, 0});
  tmakit::reduce_tile<I64Tile, tmakit::ReduceOp::min>(&map, &buf[0], {x, 0});
  tmakit::reduce_tile<U64Tile, tmakit::ReduceOp::bit_and>(&map, &buf[0], {x, 0});
  tmakit::reduce_tile<Bf16Tile, tmakit::ReduceOp::max>(&map, &bf16_buf, {x, 0});
  // coordinate lists of constants that mix types, a named array of unsigned, 64-bit values,
  // an unsigned value that wraps below 0 (-16: a load may start there)
  constexpr std::uint32_t kCols = 32;
  const std::uint32_t named[2] = {u, 8};
  const std::int64_t wide = x;
  tmakit::arrive_and_load<F32Tile>(&buf[0], &map, bar, {0u, 0});
  tmakit::arrive_and_load<F32Tile>(&buf[0], &map, bar, {kCols, 0});
  tmakit::arrive_and_load<F32Tile>(&buf[0], &map, bar, {0, sizeof(float) * 8});
  tmakit::arrive_and_load<F32Tile>(&buf[0], &map, bar, named);
  tmakit::arrive_and_load<F32Tile>(&buf[0], &map, bar, {wide, x});
  tmakit::arrive_and_load<F32Tile>(&buf[0], &map, bar, {wide, wide});
  tmakit::arrive_and_load<F32Tile>(&buf[0], &map, bar, {blockIdx.x * 32u - 16u, 0u});
  tmakit::load_tile<F32Tile>(&buf[0], &map, bar, {kCols, x}, 0ull);
  tmakit::reduce_tile<F32Tile, tmakit::ReduceOp::add>(&map, &buf[0], {F32Tile::rows, 0});
  tmakit::store_tile<F32Tile>(&map, &buf[0], {threadIdx.x * 32, x});
  enum Corner { kLeft = 0, kTop = 0 };
  tmakit::prefetch_tile<F32Tile>(&map, {kLeft, kTop});
  tmakit::prefetch_tile<F32Tile>(&map, {u, 0});
  tmakit::prefetch_tile<F32Tile>(&map, {x, 0});
  tmakit::ClusterPipelineBarriers<2> bars;
  tmakit::ClusterPipeline<2> pipe(bars, 2);
  (void)pipe;
}
