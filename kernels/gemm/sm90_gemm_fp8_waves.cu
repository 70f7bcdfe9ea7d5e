// Launch of the two-wave kernel (sm90_gemm_fp8_waves.cuh): the configurations of families
// waves_m and waves_n in gemm_configs.hpp (m256n128, m128n256w). The tiled launch
// (sm90_gemm_fp8_tiled.cu) has built the parameters (maps with boxes of this configuration's
// tiles) from a checked call and its plan.
#include "gemm_launch.hpp"
#include "sm90_gemm_fp8_waves.cuh"
#include "tmakit/kernels/detail/launch_support.hpp"

namespace tmakit::detail::gemm {

template <int Id, class T>
void launch_two_waves(const Params& p, unsigned grid, cudaStream_t stream, bool overlap,
                      bool promote, bool block_scales) {
  using Cfg = TwoWaveConfig<Id>;
  static_assert(Cfg::kBlockM == row(Id).block_m && Cfg::kBlockN == row(Id).block_n &&
                    Cfg::kDBoxCols == row(Id).d_box_cols,
                "the kernel's tiles and D's boxes are the table's (the maps are built from it)");
  if (block_scales) {  // (the plan chose this row for them only where TMA loads scale_a)
    using BlockCfg = BlockScalesWaveConfig<Cfg, T>;
    constexpr std::size_t kBytes = kWaveSmemBytes<BlockCfg, T, true>;
    KernelLaunch l(grid, BlockCfg::kThreads, kBytes, stream);
    if (overlap) l.overlap_previous_kernel();
    launch_kernel_ex(
        l, prepared_kernel<&sm90_gemm_fp8_waves_kernel<BlockCfg, T, true, true>>(kBytes),
        "sm90_gemm_fp8_waves_kernel", p);
    launched_config() = Id;
    return;
  }
  constexpr std::size_t kBytes = kWaveSmemBytes<Cfg, T>;
  KernelLaunch l(grid, Cfg::kThreads, kBytes, stream);
  if (overlap) l.overlap_previous_kernel();
  auto* kernel = promote ? prepared_kernel<&sm90_gemm_fp8_waves_kernel<Cfg, T, true>>(kBytes)
                         : prepared_kernel<&sm90_gemm_fp8_waves_kernel<Cfg, T, false>>(kBytes);
  launch_kernel_ex(l, kernel, "sm90_gemm_fp8_waves_kernel", p);
  launched_config() = Id;
}

template void launch_two_waves<config::m256n128, __nv_bfloat16>(const Params&, unsigned,
                                                                cudaStream_t, bool, bool, bool);
template void launch_two_waves<config::m256n128, __half>(const Params&, unsigned, cudaStream_t,
                                                         bool, bool, bool);
template void launch_two_waves<config::m128n256w, __nv_bfloat16>(const Params&, unsigned,
                                                                 cudaStream_t, bool, bool, bool);
template void launch_two_waves<config::m128n256w, __half>(const Params&, unsigned, cudaStream_t,
                                                          bool, bool, bool);
template void launch_two_waves<config::m192n128, __nv_bfloat16>(const Params&, unsigned,
                                                                cudaStream_t, bool, bool, bool);
template void launch_two_waves<config::m192n128, __half>(const Params&, unsigned, cudaStream_t,
                                                         bool, bool, bool);

}  // namespace tmakit::detail::gemm
