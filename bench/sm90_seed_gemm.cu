// The FP8 GEMM write-up's kernel written its way, as the floor of the GEMM table: one CTA
// per 64 x 128 output tile, no warp specialisation, no persistence. One warpgroup loads the
// next k-block's A and B tiles with TMA (two stages, so one load is in flight) and runs wgmma
// on the current one, adding each 128-deep partial into fp32 registers; plain stores of D.
// Deliberately not tuned: the baseline a newcomer to TMA and wgmma would write first.
#include <cuda_bf16.h>

#include <cstdint>

#include "baselines.hpp"
#include "tmakit/device/barrier.hpp"
#include "tmakit/kernels/detail/launch_support.hpp"
#include "tmakit/ptx/sm90_wgmma.hpp"
#include "tmakit/ptx/tma.hpp"

namespace tmakit::bench {
namespace {

constexpr int kM = 64, kN = 128, kK = 128;  // tile; K bytes per k-block (one 128B span)
constexpr int kAccum = kN / 2;

struct SeedGemmShared {
  alignas(1024) std::uint8_t a[2][kM * kK];
  alignas(1024) std::uint8_t b[2][kN * kK];
  Barrier full[2];
};

__global__ void __launch_bounds__(128, 1)
    seed_gemm_fp8_kernel(const __grid_constant__ CUtensorMap a_map,
                         const __grid_constant__ CUtensorMap b_map, __nv_bfloat16* d,
                         std::int32_t m, std::int32_t n, std::int32_t k_blocks, float scale) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ std::uint8_t smem_raw[];
  auto& s = *reinterpret_cast<SeedGemmShared*>(
      (reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t{1023});
  const std::int32_t tm = blockIdx.y, tn = blockIdx.x;
  auto load = [&](int kb) {
    Barrier& bar = s.full[kb % 2];
    bar.arrive_expect_tx(kM * kK + kN * kK);
    const std::int32_t ca[2] = {kb * kK, tm * kM};
    const std::int32_t cb[2] = {kb * kK, tn * kN};
    ptx::cp_async_bulk_tensor_shared_global_tile<2>(ptx::smem_u32(s.a[kb % 2]), &a_map, ca,
                                                    bar.smem());
    ptx::cp_async_bulk_tensor_shared_global_tile<2>(ptx::smem_u32(s.b[kb % 2]), &b_map, cb,
                                                    bar.smem());
  };
  if (threadIdx.x == 0) {
    s.full[0].init(1);
    s.full[1].init(1);
    fence_barrier_init();
    load(0);
  }
  __syncthreads();
  float acc[kAccum] = {};
  float part[kAccum];
  for (int kb = 0; kb < k_blocks; ++kb) {
    // the other stage was read by the last k-block's wgmmas (waited for): load into it
    if (threadIdx.x == 0 && kb + 1 < k_blocks) load(kb + 1);
    s.full[kb % 2].wait((kb / 2) & 1);
    ptx::wgmma_fence_operands(part);
    ptx::wgmma_fence_sync_aligned();
    for (int kk = 0; kk < kK / 32; ++kk) {
      ptx::wgmma_mma_async_m64k32_f32_e4m3<kN>(
          part, ptx::wgmma_smem_desc_k_major_sw128(ptx::smem_u32(s.a[kb % 2]) + kk * 32),
          ptx::wgmma_smem_desc_k_major_sw128(ptx::smem_u32(s.b[kb % 2]) + kk * 32),
          kk > 0 ? 1u : 0u);
    }
    ptx::wgmma_commit_group_sync_aligned();
    ptx::wgmma_wait_group_sync_aligned<0>();
    ptx::wgmma_fence_operands(part);
    for (int i = 0; i < kAccum; ++i) acc[i] += part[i];
    __syncthreads();  // every warp is past this stage before it is loaded again
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int i = 0; i < kAccum; ++i) {
    const std::int32_t row = tm * kM + 16 * warp + lane / 4 + 8 * ((i / 2) % 2);
    const std::int32_t col = tn * kN + 8 * (i / 4) + 2 * (lane % 4) + i % 2;
    if (row < m && col < n) d[static_cast<std::int64_t>(row) * n + col] = __float2bfloat16_rn(acc[i] * scale);
  }
#else
  if (threadIdx.x == 0) printf("seed_gemm_fp8_kernel needs sm_90a\n");
  __trap();
#endif
}

}  // namespace

void seed_gemm_fp8(const std::uint8_t* a, const std::uint8_t* b, __nv_bfloat16* d,
                   std::uint64_t m, std::uint64_t n, std::uint64_t k, float scale,
                   cudaStream_t stream) {
  const ConstTensorRef ra(a, DataType::uint8, m, k);
  const ConstTensorRef rb(b, DataType::uint8, n, k);
  const CUtensorMap a_map = detail::cached_tensor_map(
      detail::view_spec(ra, DataType::uint8, {kK, kM, 1}, Swizzle::bytes128));
  const CUtensorMap b_map = detail::cached_tensor_map(
      detail::view_spec(rb, DataType::uint8, {kK, kN, 1}, Swizzle::bytes128));
  constexpr std::size_t kSmem = sizeof(SeedGemmShared) + 1024;
  static const bool prepared = [] {
    TMAKIT_CUDA_CHECK(cudaFuncSetAttribute(seed_gemm_fp8_kernel,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(kSmem)));
    return true;
  }();
  (void)prepared;
  const dim3 grid(static_cast<unsigned>((n + kN - 1) / kN), static_cast<unsigned>((m + kM - 1) / kM));
  seed_gemm_fp8_kernel<<<grid, 128, kSmem, stream>>>(
      a_map, b_map, d, static_cast<std::int32_t>(m), static_cast<std::int32_t>(n),
      static_cast<std::int32_t>((k + kK - 1) / kK), scale);
  detail::check_launch("seed_gemm_fp8_kernel");
}

}  // namespace tmakit::bench
