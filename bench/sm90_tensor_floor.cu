// The GEMM table's compute ceiling: the tensor cores' time for a shape's FLOPs and nothing
// else (baselines.hpp, tensor_floor). What the bytes floor is to the shapes bound by memory,
// this is to the others: no kernel can do the shape's wgmmas faster on this GPU at the clocks
// it holds under such a load, so a ratio to it says how much of a GEMM's time is not the
// tensor cores' work.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "baselines.hpp"
#include "tmakit/core/cuda_check.hpp"
#include "tmakit/core/error.hpp"
#include "tmakit/device/copy.hpp"
#include "tmakit/ptx/sm90_wgmma.hpp"

namespace tmakit::bench {
namespace {

// One k-block: 128 rows of A and 256 rows of B, 128 bytes of K each (e4m3). The widest fp8
// wgmma (m64n256k32) reads the fewest shared-memory bytes per FLOP, so this is the cheapest
// way to keep the tensor cores busy: two warpgroups, each on 64 of the 128 rows.
constexpr int kRowsA = 128, kRowsB = 256, kBlockK = 128;
constexpr int kAccum = kRowsB / 2;  // fp32 sums per thread
constexpr std::uint64_t kFlopsPerKBlock = 2ull * kRowsA * kRowsB * kBlockK;
constexpr int kSmemBytes = (kRowsA + kRowsB) * kBlockK + 1024;  // + alignment slack
constexpr std::uint8_t kE4m3One = 0x38;

// CTA c runs k_blocks / grid k-blocks (one more for c < k_blocks % grid) on operands that
// stay in shared memory (every byte e4m3 1.0), chaining `restart` k-blocks into one sum
// before starting over (keeps the sums exact: 1.0 x 1.0 added K times), and writes each
// warpgroup's first sum to out[2 c + warpgroup]: 128 x the k-blocks since the last restart.
__global__ void __launch_bounds__(256, 1)
    tensor_floor_kernel(std::uint64_t k_blocks, std::uint32_t restart, float* out) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ std::uint8_t smem_raw[];
  auto* const a = reinterpret_cast<std::uint8_t*>(
      (reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t{1023});
  std::uint8_t* const b = a + kRowsA * kBlockK;
  for (int i = threadIdx.x; i < (kRowsA + kRowsB) * kBlockK / 16; i += blockDim.x) {
    const std::uint32_t w = 0x01010101u * kE4m3One;
    reinterpret_cast<uint4*>(a)[i] = make_uint4(w, w, w, w);
  }
  fence_view_async_shared();  // the generic writes, before wgmma reads them
  __syncthreads();
  const std::uint32_t wg = threadIdx.x / 128;
  const std::uint64_t mine = k_blocks / gridDim.x + (blockIdx.x < k_blocks % gridDim.x ? 1 : 0);
  // NOTE: with every byte the same, the swizzle the descriptors name does not change a value
  const std::uint64_t desc_a = ptx::wgmma_smem_desc_k_major_sw128(ptx::smem_u32(a + wg * 64 * kBlockK));
  const std::uint64_t desc_b = ptx::wgmma_smem_desc_k_major_sw128(ptx::smem_u32(b));
  float acc[kAccum];
  std::uint32_t chained = 0;  // k-blocks in acc since the last restart
  for (std::uint64_t i = 0; i < mine; ++i) {
    const std::uint32_t keep = chained == 0 ? 0u : 1u;
    ptx::wgmma_fence_operands(acc);
    ptx::wgmma_fence_sync_aligned();
#pragma unroll
    for (int kk = 0; kk < kBlockK / 32; ++kk) {
      ptx::wgmma_mma_async_m64k32_f32_e4m3<kRowsB>(acc, ptx::wgmma_smem_desc_advance(desc_a, 32 * kk),
                                                   ptx::wgmma_smem_desc_advance(desc_b, 32 * kk),
                                                   kk > 0 ? 1u : keep);
    }
    ptx::wgmma_commit_group_sync_aligned();
    // two groups in flight, as a GEMM's main loop keeps them
    ptx::wgmma_wait_group_sync_aligned<1>();
    chained = chained + 1 == restart ? 0 : chained + 1;
  }
  ptx::wgmma_wait_group_sync_aligned<0>();
  ptx::wgmma_fence_operands(acc);
  if (threadIdx.x % 128 == 0) out[2 * blockIdx.x + wg] = mine == 0 ? 0.0f : acc[0];
#else
  // NOTE: built for another target; fail loudly rather than time nothing.
  if (threadIdx.x == 0) printf("tensor_floor_kernel needs sm_90a\n");
  __trap();
#endif
}

}  // namespace

std::uint64_t tensor_floor_k_blocks(std::uint64_t flops) {
  return (flops + kFlopsPerKBlock - 1) / kFlopsPerKBlock;
}

void tensor_floor(std::uint64_t flops, unsigned grid, float* out, cudaStream_t stream) {
  static const bool sized = [] {
    TMAKIT_CUDA_CHECK(cudaFuncSetAttribute(
        tensor_floor_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
    return true;
  }();
  (void)sized;
  if (grid == 0) throw Error("tensor_floor: grid must be at least one CTA");
  tensor_floor_kernel<<<grid, 256, kSmemBytes, stream>>>(tensor_floor_k_blocks(flops),
                                                         kTensorFloorRestart, out);
  TMAKIT_CUDA_CHECK(cudaGetLastError());
}

std::string check_tensor_floor(const float* out, std::uint64_t flops, unsigned grid) {
  std::vector<float> got(2 * static_cast<std::size_t>(grid));
  TMAKIT_CUDA_CHECK(cudaMemcpy(got.data(), out, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  const std::uint64_t k_blocks = tensor_floor_k_blocks(flops);
  std::uint64_t wrong = 0;
  for (unsigned c = 0; c < grid; ++c) {
    const std::uint64_t mine = k_blocks / grid + (c < k_blocks % grid ? 1 : 0);
    const std::uint64_t chained = mine == 0 ? 0 : (mine - 1) % kTensorFloorRestart + 1;
    const auto want = static_cast<float>(chained * kBlockK);
    for (int wg = 0; wg < 2; ++wg) wrong += got[2 * c + wg] == want ? 0 : 1;
  }
  return wrong == 0 ? "" : std::to_string(wrong) + " of " + std::to_string(2 * grid) +
                               " warpgroup sums not 128 x their k-blocks";
}

}  // namespace tmakit::bench
