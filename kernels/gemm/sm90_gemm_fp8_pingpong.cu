// Launch of the ping-pong kernel (sm90_gemm_fp8_pingpong.cuh): the configurations of family
// pingpong in gemm_configs.hpp (m128n128pp, m128n128ppd). The tiled launch (sm90_gemm_fp8_tiled.cu) has
// built the parameters (maps with boxes of this configuration's tiles) from a checked call
// and its plan.
#include "gemm_launch.hpp"
#include "sm90_gemm_fp8_pingpong.cuh"
#include "tmakit/kernels/detail/launch_support.hpp"

namespace tmakit::detail::gemm {

template <int Id, class T>
void launch_pingpong(const Params& p, unsigned grid, cudaStream_t stream, bool overlap) {
  using Cfg = PingpongRowConfig<Id>;
  static_assert(Cfg::kBlockM == row(Id).block_m && Cfg::kBlockN == row(Id).block_n &&
                    Cfg::Half::kDBoxCols == row(Id).d_box_cols && !row(Id).promotes &&
                    !row(Id).splits_k,
                "the kernel's tiles and D's boxes are the table's (the maps are built from "
                "it); fast accumulation, K unsplit");
  constexpr std::size_t kBytes = kPingpongSmemBytes<Cfg>;
  KernelLaunch l(grid, Cfg::kThreads, kBytes, stream);
  if (overlap) l.overlap_previous_kernel();
  launch_kernel_ex(l, prepared_kernel<&sm90_gemm_fp8_pingpong_kernel<Cfg, T>>(kBytes),
                   "sm90_gemm_fp8_pingpong_kernel", p);
  launched_config() = Id;
}

template void launch_pingpong<config::m128n128pp, __nv_bfloat16>(const Params&, unsigned,
                                                                 cudaStream_t, bool);
template void launch_pingpong<config::m128n128pp, __half>(const Params&, unsigned, cudaStream_t,
                                                          bool);
template void launch_pingpong<config::m128n128ppd, __nv_bfloat16>(const Params&, unsigned,
                                                                  cudaStream_t, bool);
template void launch_pingpong<config::m128n128ppd, __half>(const Params&, unsigned, cudaStream_t,
                                                           bool);

}  // namespace tmakit::detail::gemm
