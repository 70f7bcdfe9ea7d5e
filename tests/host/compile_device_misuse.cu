// Compile-fail: each CASE is a misuse of the device layer that must not compile, with the
// message the test (tests/host/CMakeLists.txt) expects. Built by nvcc once per CASE.
#include <cuda.h>

#include "tmakit/device/copy.hpp"

using F32Tile = tmakit::Tile<float, tmakit::Swizzle::none, 32, 8>;
using F32TallTile = tmakit::Tile<float, tmakit::Swizzle::none, 32, 16>;
using I64Tile = tmakit::Tile<std::int64_t, tmakit::Swizzle::none, 16, 8>;
using U8Tile = tmakit::Tile<std::uint8_t, tmakit::Swizzle::none, 64, 8>;
using F32Tile3 = tmakit::Tile<float, tmakit::Swizzle::none, 32, 8, 2>;
using Sw128Tile = tmakit::Tile<float, tmakit::Swizzle::bytes128, 32, 4>;  // 512 bytes

__global__ void misuse(const __grid_constant__ CUtensorMap map, int x) {
  __shared__ F32Tile::Buffer buf[2];
  __shared__ tmakit::Barrier bar;
#if CASE == 1  // a smaller tile's Buffer handed to a larger tile's load
  tmakit::arrive_and_load<F32TallTile>(&buf[0], &map, bar, {x, 0});
#elif CASE == 2  // the same for a store
  tmakit::store_tile<F32TallTile>(&map, &buf[1], {x, 0});
#elif CASE == 3  // a load into a buffer reached through a pointer to const
  const F32Tile::Buffer* c = &buf[0];
  tmakit::load_tile<F32Tile>(c, &map, bar, {x, 0});
#elif CASE == 4  // add on INT64 (H8)
  tmakit::reduce_tile<I64Tile, tmakit::ReduceOp::add>(&map, &buf[0], {x, 0});
#elif CASE == 5  // add on UINT8, fp8's carrier (H8)
  tmakit::reduce_tile<U8Tile, tmakit::ReduceOp::add>(&map, &buf[0], {x, 0});
#elif CASE == 6  // and on INT64 (H8)
  tmakit::reduce_tile<I64Tile, tmakit::ReduceOp::bit_and>(&map, &buf[0], {x, 0});
#elif CASE == 7  // inc on float (H8)
  tmakit::reduce_tile<F32Tile, tmakit::ReduceOp::inc>(&map, &buf[0], {x, 0});
#elif CASE == 8  // two coordinates for a rank-3 tile
  tmakit::prefetch_tile<F32Tile3>(&map, {blockIdx.x * 32, 0});
#elif CASE == 9  // a pointer to the whole array of stages, not one stage's buffer
  tmakit::arrive_and_load<F32Tile>(&buf, &map, bar, {x, 0});
#elif CASE == 10  // a plain tile's Buffer (128-byte aligned) for a 128B-swizzled tile (D2)
  tmakit::arrive_and_load<Sw128Tile>(&buf[0], &map, bar, {x, 0});
#elif CASE == 11  // coordinates that are not integers
  tmakit::arrive_and_load<F32Tile>(&buf[0], &map, bar, {1.0f, 2.0f});
#endif
}
