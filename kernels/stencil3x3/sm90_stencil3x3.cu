// The 3x3 stencil's launcher: validate -> path (tmakit/kernels/detail/plain_path.hpp) -> the
// plain kernel (plain_stencil3x3.cu), or plan (stencil3x3_plan.hpp) -> maps -> launch of the
// TMA kernel (the maps and the launch are launch<T, Layout> in sm90_stencil3x3.cuh), or the
// plain kernel's 16-byte form where the plan picks it.
#include <cstdio>
#include <string>

#include "stencil3x3/plain_stencil3x3.hpp"
#include "stencil3x3/sm90_stencil3x3.cuh"
#include "tmakit/kernels/detail/plain_path.hpp"
#include "tmakit/kernels/detail/plain_view_check.hpp"
#include "stencil3x3/stencil3x3_plan.hpp"

namespace tmakit::detail::stencil3x3 {

void check_operands(ConstTensorRef in, TensorRef out, const Filter3x3& filter) {
  detail::check_any_view("in", in, true);
  detail::check_any_view("out", out, true);
  if (in.type != DataType::float32 && in.type != DataType::float64) {
    throw ArgumentError("in.type",
                        std::string(name(in.type)) + " is not supported; use FLOAT32 or FLOAT64");
  }
  if (out.type != in.type) {
    throw ArgumentError("out.type", std::string(name(out.type)) + " differs from in.type " +
                                        std::string(name(in.type)));
  }
  if (out.rows != in.rows || out.cols != in.cols || out.batch != in.batch) {
    throw ArgumentError("out", "shape " + std::to_string(out.batch) + "x" +
                                   std::to_string(out.rows) + "x" + std::to_string(out.cols) +
                                   " differs from in's " + std::to_string(in.batch) + "x" +
                                   std::to_string(in.rows) + "x" + std::to_string(in.cols));
  }
  if (detail::overlaps(in, out)) {
    throw ArgumentError("out.data",
                        "overlaps in; the stencil reads neighbours, so it cannot "
                        "run in place");
  }
  for (int i = 0; i < 9; ++i) {
    if (!std::isfinite(filter.taps[i])) {
      throw ArgumentError("filter.taps[" + std::to_string(i) + "]", "is not finite");
    }
    // NOTE: the kernel computes in the image's type: a tap past float's range would be inf
    if (in.type == DataType::float32 && !std::isfinite(static_cast<float>(filter.taps[i]))) {
      char shown[32];  // (%g: std::to_string prints 1e39 with 40 digits)
      std::snprintf(shown, sizeof shown, "%.9g", filter.taps[i]);
      throw ArgumentError("filter.taps[" + std::to_string(i) + "]",
                          std::string(shown) + " overflows FLOAT32, the image's type");
    }
  }
}

void check_arguments(ConstTensorRef in, TensorRef out, const Filter3x3& filter) {
  detail::check_view("in", in, true);
  detail::check_view("out", out, true);
  check_operands(in, out, filter);
}

namespace {

template <class T>
void launch_planned(ConstTensorRef in, TensorRef out, const Filter3x3& filter,
                    cudaStream_t stream) {
  // NOTE: each CTA takes its own run of tiles (grid = runs): no persistent CTA count, and the
  // tiles go row-major (panel 1)
  switch (plan_layout(detail::peak_dram_bytes_per_second())) {
    case PlannedLayout::run2_rows32: return launch<T, RunRows32>(in, out, filter, 0, 1, stream);
    case PlannedLayout::run2_rows16: return launch<T, RunRows16>(in, out, filter, 0, 1, stream);
    case PlannedLayout::plain_vector16: return launch_plain_vector(in, out, filter, stream);
  }
}

}  // namespace
}  // namespace tmakit::detail::stencil3x3

namespace tmakit {

void stencil3x3(ConstTensorRef in, TensorRef out, const Filter3x3& filter, cudaStream_t stream) {
  using namespace detail::stencil3x3;
  // step 1: every argument checked before anything is written
  check_operands(in, out, filter);
  const detail::PathPlan path = detail::plan_path(in, out, true);
  if (path.path == detail::Path::nothing) return;
  // NOTE: after every argument check that needs no driver (remembered for repeated calls)
  detail::require_device_pointer(in.data, "in.data");
  detail::require_device_pointer(out.data, "out.data");
  if (path.path == detail::Path::plain_loads) return launch_plain(in, out, filter, stream);
  // steps 2-4: plan, maps, launch
  if (in.type == DataType::float64) {
    launch_planned<double>(in, out, filter, stream);
  } else {
    launch_planned<float>(in, out, filter, stream);
  }
}

}  // namespace tmakit
