// The seed write-ups' kernels as they describe them, as baselines: three fp32 transposes
// (naive, swizzled, batched; one 32x32 tile per block) and the padded-input fp64 3x3
// convolution (one TMA copy of tile + halo per block, one output per thread, plain stores).
// Written from the write-ups' descriptions; deliberately not tuned.
#include "baselines.hpp"
#include "tmakit/kernels/detail/launch_support.hpp"
#include "tmakit/device/barrier.hpp"
#include "tmakit/ptx/fence.hpp"
#include "tmakit/ptx/tma.hpp"
#include "tmakit/swizzle.hpp"

namespace tmakit::bench {
namespace {

constexpr int kTile = 32;

// One thread arms the barrier and issues the tile's load; every thread waits for phase 0.
__device__ __forceinline__ void load_tile(const CUtensorMap* map, void* dst, Barrier* bar,
                                          std::int32_t x, std::int32_t y, std::uint32_t bytes) {
  if (threadIdx.x == 0 && threadIdx.y == 0) {
    bar->init(1);
    fence_barrier_init();
    bar->arrive_expect_tx(bytes);
    const std::int32_t c[2] = {x, y};
    ptx::cp_async_bulk_tensor_shared_global_tile<2>(ptx::smem_u32(dst), map, c, bar->smem());
  }
  __syncthreads();
  bar->wait(0);
}

// Every writer fences, the block syncs, one thread stores the tile and waits for its read.
__device__ __forceinline__ void store_tile(const CUtensorMap* map, const void* src,
                                           std::int32_t x, std::int32_t y) {
  ptx::fence_proxy_async_shared_cta();
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0) {
    const std::int32_t c[2] = {x, y};
    ptx::cp_async_bulk_tensor_global_shared_tile<2>(map, c, ptx::smem_u32(src));
    ptx::cp_async_bulk_commit_group();
    ptx::cp_async_bulk_wait_group_read<0>();
  }
}

// naive: block 32 x 32 threads, one element each; the write to out[tx][ty] is a 32-way bank
// conflict, as in the write-up.
__global__ void __launch_bounds__(1024) seed_transpose_naive(const __grid_constant__ CUtensorMap in_map,
                                                             const __grid_constant__ CUtensorMap out_map) {
  __shared__ alignas(128) float in[kTile][kTile];
  __shared__ alignas(128) float out[kTile][kTile];
  __shared__ Barrier bar;
  const int x = blockIdx.x * kTile;
  const int y = blockIdx.y * kTile;
  load_tile(&in_map, in, &bar, x, y, sizeof in);
  out[threadIdx.x][threadIdx.y] = in[threadIdx.y][threadIdx.x];
  store_tile(&out_map, out, y, x);
}

// swizzled: 128B swizzle on both maps; shared offsets through the swizzle function.
__global__ void __launch_bounds__(1024) seed_transpose_swizzled(const __grid_constant__ CUtensorMap in_map,
                                                                const __grid_constant__ CUtensorMap out_map) {
  __shared__ alignas(1024) std::uint8_t in[kTile * kTile * 4];
  __shared__ alignas(1024) std::uint8_t out[kTile * kTile * 4];
  __shared__ Barrier bar;
  const int x = blockIdx.x * kTile;
  const int y = blockIdx.y * kTile;
  load_tile(&in_map, in, &bar, x, y, sizeof in);
  const auto r = threadIdx.y;
  const auto c = threadIdx.x;
  *reinterpret_cast<float*>(out + swizzled_offset(Swizzle::bytes128, c, r, 128, 4)) =
      *reinterpret_cast<const float*>(in + swizzled_offset(Swizzle::bytes128, r, c, 128, 4));
  store_tile(&out_map, out, y, x);
}

// batched: swizzled; block 32 x 4 threads, each moving 8 elements of its column.
__global__ void __launch_bounds__(128) seed_transpose_batched(const __grid_constant__ CUtensorMap in_map,
                                                              const __grid_constant__ CUtensorMap out_map) {
  __shared__ alignas(1024) std::uint8_t in[kTile * kTile * 4];
  __shared__ alignas(1024) std::uint8_t out[kTile * kTile * 4];
  __shared__ Barrier bar;
  const int x = blockIdx.x * kTile;
  const int y = blockIdx.y * kTile;
  load_tile(&in_map, in, &bar, x, y, sizeof in);
  const auto c = threadIdx.x;
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    const std::uint32_t r = threadIdx.y * 8 + k;
    *reinterpret_cast<float*>(out + swizzled_offset(Swizzle::bytes128, c, r, 128, 4)) =
        *reinterpret_cast<const float*>(in + swizzled_offset(Swizzle::bytes128, r, c, 128, 4));
  }
  store_tile(&out_map, out, y, x);
}

// The padded-input convolution: a 34 x 34 tile of the padded input per block, one TMA copy.
__global__ void __launch_bounds__(1024) seed_conv3x3(const __grid_constant__ CUtensorMap in_map,
                                                     double* out, std::uint64_t rows,
                                                     std::uint64_t cols, Filter3x3 filter) {
  __shared__ alignas(128) double tile[kTile + 2][kTile + 2];
  __shared__ Barrier bar;
  const int x0 = blockIdx.x * kTile;
  const int y0 = blockIdx.y * kTile;
  load_tile(&in_map, tile, &bar, x0, y0, sizeof tile);
  const auto ty = threadIdx.y;
  const auto tx = threadIdx.x;
  double acc = 0;
#pragma unroll
  for (int dy = 0; dy < 3; ++dy) {
#pragma unroll
    for (int dx = 0; dx < 3; ++dx) acc = fma(filter.taps[3 * dy + dx], tile[ty + dy][tx + dx], acc);
  }
  const std::uint64_t y = y0 + ty;
  const std::uint64_t x = x0 + tx;
  if (y < rows && x < cols) out[y * cols + x] = acc;
}

__global__ void pad_kernel(const double* in, double* padded, std::uint64_t rows,
                           std::uint64_t cols) {
  const std::uint64_t pc = cols + 2;
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
       i < (rows + 2) * pc; i += std::uint64_t{gridDim.x} * blockDim.x) {
    const std::uint64_t y = i / pc;
    const std::uint64_t x = i % pc;
    const bool inside = y >= 1 && y <= rows && x >= 1 && x <= cols;
    padded[i] = inside ? in[(y - 1) * cols + (x - 1)] : 0.0;
  }
}

CUtensorMap dense_map(const void* data, DataType t, std::uint64_t rows, std::uint64_t cols,
                      std::uint32_t box, Swizzle swizzle) {
  ConstTensorRef v(data, t, rows, cols);
  return detail::cached_tensor_map(detail::view_spec(v, t, {box, box, 1}, swizzle));
}

}  // namespace

void seed_transpose(SeedTranspose variant, const float* in, float* out, std::uint64_t rows,
                    std::uint64_t cols, cudaStream_t stream) {
  const Swizzle s = variant == SeedTranspose::naive ? Swizzle::none : Swizzle::bytes128;
  const CUtensorMap in_map = dense_map(in, DataType::float32, rows, cols, kTile, s);
  const CUtensorMap out_map = dense_map(out, DataType::float32, cols, rows, kTile, s);
  const dim3 grid(static_cast<unsigned>(cols / kTile), static_cast<unsigned>(rows / kTile));
  switch (variant) {
    case SeedTranspose::naive:
      seed_transpose_naive<<<grid, dim3(kTile, kTile), 0, stream>>>(in_map, out_map);
      break;
    case SeedTranspose::swizzled:
      seed_transpose_swizzled<<<grid, dim3(kTile, kTile), 0, stream>>>(in_map, out_map);
      break;
    case SeedTranspose::batched:
      seed_transpose_batched<<<grid, dim3(kTile, 4), 0, stream>>>(in_map, out_map);
      break;
  }
  detail::check_launch("seed_transpose");
}

void seed_conv3x3_padded(const double* padded, double* out, std::uint64_t rows,
                         std::uint64_t cols, const Filter3x3& filter, cudaStream_t stream) {
  const CUtensorMap map =
      dense_map(padded, DataType::float64, rows + 2, cols + 2, kTile + 2, Swizzle::none);
  const dim3 grid(static_cast<unsigned>(cols / kTile), static_cast<unsigned>(rows / kTile));
  seed_conv3x3<<<grid, dim3(kTile, kTile), 0, stream>>>(map, out, rows, cols, filter);
  detail::check_launch("seed_conv3x3");
}

void make_padded_copy(const double* in, double* padded, std::uint64_t rows, std::uint64_t cols,
                      cudaStream_t stream) {
  pad_kernel<<<132 * 16, 256, 0, stream>>>(in, padded, rows, cols);
  detail::check_launch("pad_kernel");
}

}  // namespace tmakit::bench
