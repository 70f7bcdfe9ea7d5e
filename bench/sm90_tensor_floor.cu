// The GEMM table's compute ceiling: the tensor cores' time for a shape's FLOPs and nothing
// else (baselines.hpp, tensor_floor). What the bytes floor is to the shapes bound by memory,
// this is to the others: a ratio to it says how much of a GEMM's time is not the tensor
// cores' work.
// NOTE: the operands are random e4m3 values drawn as the bench's (|v| < 4, any sign): an H100
// running these GEMMs sits at its power limit, and the tensor cores' power depends on the bits
// they multiply; operands of constant 1.0 ran this kernel at clocks no GEMM of random data
// reaches (kernels/gemm/EXPERIMENTS.md).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "baselines.hpp"
#include "tmakit/core/cuda_check.hpp"
#include "tmakit/core/error.hpp"
#include "tmakit/device/copy.hpp"
#include "tmakit/kernels/detail/launch_support.hpp"
#include "tmakit/kernels/gemm.hpp"
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

// The e4m3 bits at (row, k) of operand `which` (0: A, 1: B): the bench's distribution
// (exponent field 1..8, any mantissa, any sign), from a hash of the position.
std::uint8_t operand_bits(std::uint32_t which, std::uint32_t row, std::uint32_t k) {
  std::uint32_t h = (which * 0x9E3779B9u) ^ (row * 0x85EBCA6Bu) ^ (k * 0xC2B2AE35u);
  h ^= h >> 16;
  h *= 0x7FEB352Du;
  h ^= h >> 15;
  h *= 0x846CA68Bu;
  h ^= h >> 16;
  return static_cast<std::uint8_t>(((h & 1) << 7) | ((1 + (h >> 1) % 8) << 3) | ((h >> 8) & 7));
}

// CTA c runs k_blocks / grid k-blocks (one more for c < k_blocks % grid) on operands that
// stay in shared memory (`image`: A's 128 rows, then B's 256, as wgmma reads them), chaining
// `restart` k-blocks into one sum before starting over, and writes each warpgroup's first sum
// to out[3 c + warpgroup] (D(64 wg, 0): the k-blocks since the last restart times the dot
// product of A's row 64 wg and B's row 0) and its k-block count to out[3 c + 2].
__global__ void __launch_bounds__(256, 1)
    tensor_floor_kernel(const uint4* image, std::uint64_t k_blocks, std::uint32_t restart,
                        float* out) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ std::uint8_t smem_raw[];
  auto* const a = reinterpret_cast<std::uint8_t*>(
      (reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t{1023});
  std::uint8_t* const b = a + kRowsA * kBlockK;
  for (std::uint32_t i = threadIdx.x; i < kTensorFloorImageBytes / 16; i += blockDim.x) {
    reinterpret_cast<uint4*>(a)[i] = image[i];
  }
  fence_view_async_shared();  // the generic writes, before wgmma reads them
  __syncthreads();
  const std::uint32_t wg = threadIdx.x / 128;
  const std::uint64_t mine = k_blocks / gridDim.x + (blockIdx.x < k_blocks % gridDim.x ? 1 : 0);
  const std::uint64_t desc_a =
      ptx::wgmma_smem_desc_k_major_sw128(ptx::smem_u32(a + wg * 64 * kBlockK));
  const std::uint64_t desc_b = ptx::wgmma_smem_desc_k_major_sw128(ptx::smem_u32(b));
  float acc[kAccum];
  std::uint32_t chained = 0;  // k-blocks in acc since the last restart
  for (std::uint64_t i = 0; i < mine; ++i) {
    const std::uint32_t keep = chained == 0 ? 0u : 1u;
    ptx::wgmma_fence_operands(acc);
    ptx::wgmma_fence_sync_aligned();
#pragma unroll
    for (int kk = 0; kk < kBlockK / 32; ++kk) {
      ptx::wgmma_mma_async_m64k32_f32_e4m3<kRowsB>(
          acc, ptx::wgmma_smem_desc_advance(desc_a, 32 * kk),
          ptx::wgmma_smem_desc_advance(desc_b, 32 * kk), kk > 0 ? 1u : keep);
    }
    ptx::wgmma_commit_group_sync_aligned();
    // two groups in flight, as a GEMM's main loop keeps them
    ptx::wgmma_wait_group_sync_aligned<1>();
    chained = chained + 1 == restart ? 0 : chained + 1;
  }
  ptx::wgmma_wait_group_sync_aligned<0>();
  ptx::wgmma_fence_operands(acc);
  if (threadIdx.x % 128 == 0) out[3 * blockIdx.x + wg] = mine == 0 ? 0.0f : acc[0];
  if (threadIdx.x == 0) out[3 * blockIdx.x + 2] = static_cast<float>(mine);
#else
  // NOTE: built for another target; fail loudly rather than time nothing.
  if (threadIdx.x == 0) printf("tensor_floor_kernel needs sm_90a\n");
  __trap();
#endif
}

}  // namespace

std::vector<std::uint8_t> tensor_floor_image() {
  static_assert(kTensorFloorImageBytes == (kRowsA + kRowsB) * kBlockK, "A's and B's rows");
  std::vector<std::uint8_t> image(kTensorFloorImageBytes);
  // 16 bytes of K per chunk: row r's chunk c lands on chunk c ^ (r % 8) of the row (D2)
  for (std::uint32_t r = 0; r < kRowsA + kRowsB; ++r) {
    const std::uint32_t which = r < kRowsA ? 0 : 1, row = r < kRowsA ? r : r - kRowsA;
    for (std::uint32_t k = 0; k < kBlockK; ++k) {
      image[r * kBlockK + ((k / 16) ^ (r % 8)) * 16 + k % 16] = operand_bits(which, row, k);
    }
  }
  return image;
}

std::uint64_t tensor_floor_k_blocks(std::uint64_t flops) {
  return (flops + kFlopsPerKBlock - 1) / kFlopsPerKBlock;
}

void tensor_floor(const void* image, std::uint64_t flops, unsigned grid, float* out,
                  cudaStream_t stream) {
  if (grid == 0) throw Error("tensor_floor: grid must be at least one CTA");
  detail::allow_dynamic_smem<tensor_floor_kernel>(kSmemBytes);
  tensor_floor_kernel<<<grid, 256, kSmemBytes, stream>>>(
      static_cast<const uint4*>(image), tensor_floor_k_blocks(flops), kTensorFloorRestart, out);
  detail::check_launch("tensor_floor_kernel");
}

std::string check_tensor_floor(const float* out, std::uint64_t flops, unsigned grid) {
  std::vector<float> got(3 * static_cast<std::size_t>(grid));
  TMAKIT_CUDA_CHECK(
      cudaMemcpy(got.data(), out, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  // D(64 wg, 0) of one k-block, and the sum of its terms' magnitudes
  double dot[2] = {0, 0}, mag[2] = {0, 0};
  for (std::uint32_t wg = 0; wg < 2; ++wg) {
    for (std::uint32_t k = 0; k < kBlockK; ++k) {
      const double t = static_cast<double>(reference::e4m3_to_float(operand_bits(0, 64 * wg, k))) *
                       reference::e4m3_to_float(operand_bits(1, 0, k));
      dot[wg] += t;
      mag[wg] += std::fabs(t);
    }
  }
  const std::uint64_t k_blocks = tensor_floor_k_blocks(flops);
  std::uint64_t wrong_count = 0, wrong_sum = 0;
  for (unsigned c = 0; c < grid; ++c) {
    const std::uint64_t mine = k_blocks / grid + (c < k_blocks % grid ? 1 : 0);
    wrong_count += got[3 * c + 2] == static_cast<float>(mine) ? 0 : 1;
    const double chained =
        mine == 0 ? 0.0 : static_cast<double>((mine - 1) % kTensorFloorRestart + 1);
    for (int wg = 0; wg < 2; ++wg) {
      // the tensor cores' own accumulation: 2^-13 of sum |a b| per 32 of K (the GEMM tests')
      const double tol = chained * mag[wg] * std::ldexp(chained * kBlockK / 32.0, -13) + 1e-6;
      wrong_sum += std::fabs(got[3 * c + wg] - chained * dot[wg]) <= tol ? 0 : 1;
    }
  }
  if (wrong_count != 0) {
    return std::to_string(wrong_count) + " of " + std::to_string(grid) +
           " CTAs ran another count of k-blocks than their share";
  }
  return wrong_sum == 0 ? ""
                        : std::to_string(wrong_sum) + " of " + std::to_string(2 * grid) +
                              " warpgroup sums off the dot products they chain";
}

}  // namespace tmakit::bench
