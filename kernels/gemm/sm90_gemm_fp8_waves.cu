// Launch of the two-wave kernel (sm90_gemm_fp8_waves.cuh): configurations 7 (256 x 128 tiles)
// and 10 (128 x 256) of kernels/gemm/README.md. gemm_fp8 (sm90_gemm_fp8.cu) has checked every
// argument and built the parameters (maps with boxes of this configuration's tiles) first.
#include "sm90_gemm_fp8_waves.cuh"
#include "tmakit/kernels/detail/launch_support.hpp"

namespace tmakit::detail::gemm {
namespace {

template <class Cfg, class T>
void launch_waves(const Params& p, unsigned grid, cudaStream_t stream, bool overlap, bool promote) {
  static_assert(((Cfg::kBlockM == kWavesBlockM && Cfg::kBlockN == kWavesBlockN) ||
                 (Cfg::kBlockM == kWavesNBlockM && Cfg::kBlockN == kWavesNBlockN)) &&
                    Cfg::kDBoxCols == kWavesDBoxCols,
                "sm90_gemm_schedule.cuh states this kernel's tiles for the launcher");
  KernelLaunch l(grid, Cfg::kThreads, kWaveSmemBytes<Cfg, T>, stream);
  if (overlap) l.overlap_previous_kernel();
  constexpr std::size_t kBytes = kWaveSmemBytes<Cfg, T>;
  auto* kernel = promote ? prepared_kernel<&sm90_gemm_fp8_waves_kernel<Cfg, T, true>>(kBytes)
                         : prepared_kernel<&sm90_gemm_fp8_waves_kernel<Cfg, T, false>>(kBytes);
  launch_kernel_ex(l, kernel, "sm90_gemm_fp8_waves_kernel", p);
}

}  // namespace

void launch_gemm_fp8_waves_bf16(const Params& p, unsigned grid, cudaStream_t stream, bool overlap,
                                bool promote) {
  launch_waves<WaveConfig256x128, __nv_bfloat16>(p, grid, stream, overlap, promote);
}
void launch_gemm_fp8_waves_fp16(const Params& p, unsigned grid, cudaStream_t stream, bool overlap,
                                bool promote) {
  launch_waves<WaveConfig256x128, __half>(p, grid, stream, overlap, promote);
}
void launch_gemm_fp8_waves_n_bf16(const Params& p, unsigned grid, cudaStream_t stream, bool overlap,
                                  bool promote) {
  launch_waves<WaveConfig128x256, __nv_bfloat16>(p, grid, stream, overlap, promote);
}
void launch_gemm_fp8_waves_n_fp16(const Params& p, unsigned grid, cudaStream_t stream, bool overlap,
                                  bool promote) {
  launch_waves<WaveConfig128x256, __half>(p, grid, stream, overlap, promote);
}

}  // namespace tmakit::detail::gemm
