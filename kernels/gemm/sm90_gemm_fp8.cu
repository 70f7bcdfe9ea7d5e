// The FP8 GEMM's entry, gemm_fp8: check -> pointers -> plan -> launch. Every argument is
// checked once (gemm_plan.cpp, check_arguments), the plan is what runs (plan_checked: the
// rules of gemm_plan.cpp over the table of gemm_configs.hpp), and the launch of the plan's
// configuration is its family's (sm90_gemm_fp8_tiled.cu, sm90_gemm_fp8_small_m.cu). See
// README.md beside this file, "One call's path".
#include "gemm_launch.hpp"
#include "gemm_plan.hpp"
#include "gemm_workspace.hpp"
#include "tmakit/kernels/detail/launch_support.hpp"
#include "tmakit/kernels/gemm.hpp"

namespace tmakit {

void gemm_fp8_release_workspace(cudaStream_t stream) {
  detail::gemm::release_stream_workspace(stream);
}

void gemm_fp8(ConstTensorRef a, ConstTensorRef b, TensorRef d, const GemmScales& scales,
              cudaStream_t stream, const GemmTuning& tuning) {
  using namespace detail;
  // step 1: every argument, before anything is written or asked of the device
  const GemmKernelScale scale = gemm::check_arguments(a, b, d, scales, tuning);
  int device = 0;
  TMAKIT_CUDA_CHECK(cudaGetDevice(&device));
  GemmCall call{a,
                b,
                d,
                scale,
                stream,
                GemmCallKey{a.data, b.data, d.data, a.rows, b.rows, a.cols, a.row_pitch(),
                            b.row_pitch(), d.row_pitch(), d.type, tuning.config, tuning.splits,
                            device, tuning.accumulation, scales.recipe, scale.a_tma != 0,
                            tuning.overlap_launch},
                GemmPlan{}};
  // step 2: pointers the GPU can use, and the plan (once per distinct call on this thread)
  thread_local LastCall<GemmPlan> last;
  call.plan = last.get(call.key, [&] {
    // memory the GPU cannot reach (malloc'd, another device's) is refused by name, once per
    // distinct call: a kernel faulting on it would leave every later CUDA call failing
    require_device_pointer(a.data, "a.data");
    require_device_pointer(b.data, "b.data");
    require_device_pointer(d.data, "d.data");
    return gemm::plan_checked(GemmProblem{a.rows, b.rows, a.cols, d.row_pitch(),
                                          multiprocessor_count(), peak_dram_bytes_per_second(),
                                          tuning, scales.recipe, scale.a_tma != 0});
  });
  // (not part of the key: remembered by require_device_pointer itself)
  if (scales.scale_a_device != nullptr) {
    require_device_pointer(scales.scale_a_device, "scales.scale_a_device");
  }
  if (scales.scale_b_device != nullptr) {
    require_device_pointer(scales.scale_b_device, "scales.scale_b_device");
  }
  // step 3: a call captured into a CUDA graph on a stream whose split-K workspace is too small
  // (growing it would allocate during the capture) runs without a split of K, where the plan
  // chose the split; a split asked for in `tuning` is refused naming the stream instead
  // (gemm_workspace.hpp, stream_workspace)
  if (tuning.splits == 0 && call.plan.splits > 1 && !gemm::small_m(call.plan.config)) {
    const gemm::SplitWorkspaceNeed need = gemm::split_workspace_need(call.plan);
    if (gemm::capture_outgrows_workspace(need.partial_bytes, need.counters, stream)) {
      GemmTuning unsplit = tuning;
      unsplit.splits = 1;
      return gemm_fp8(a, b, d, scales, stream, unsplit);
    }
  }
  // step 4: the plan's configuration, on its kernel
  if (gemm::small_m(call.plan.config)) {
    gemm::launch_small_m(call);
  } else {
    gemm::launch_tiled(call);
  }
}

}  // namespace tmakit
