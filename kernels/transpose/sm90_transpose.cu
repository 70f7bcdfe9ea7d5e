// The transpose's launcher: validate -> path (tmakit/kernels/detail/plain_path.hpp) -> on the
// plain path the row-class kernel (sm90_transpose_row_classes.cu: 1- and 2-byte elements, where
// it measured faster) or the plain kernel (plain_transpose.cu), else plan -> maps -> launch
// of the TMA kernel (the maps and the launch are launch_with in sm90_transpose.cuh).
#include "tmakit/kernels/detail/plain_path.hpp"
#include "tmakit/kernels/detail/plain_view_check.hpp"
#include "transpose/plain_transpose.hpp"
#include "transpose/sm90_transpose_row_classes.hpp"
#include "transpose/sm90_transpose.cuh"
#include "transpose/transpose_plan.hpp"

namespace tmakit::detail::transpose {

void check_operands(ConstTensorRef in, TensorRef out) {
  detail::check_any_view("in", in, false);
  detail::check_any_view("out", out, false);
  const auto esize = static_cast<std::uint32_t>(in.element_size());
  if (out.element_size() != esize) {
    throw ArgumentError("out.type",
                        std::string(name(out.type)) + " (" + std::to_string(out.element_size()) +
                            " bytes) differs in size from in.type " + std::string(name(in.type)));
  }
  if (out.rows != in.cols || out.cols != in.rows) {
    throw ArgumentError("out", "shape " + std::to_string(out.rows) + "x" +
                                   std::to_string(out.cols) + " is not in's transposed, " +
                                   std::to_string(in.cols) + "x" + std::to_string(in.rows));
  }
  if (detail::overlaps(in, out)) {
    throw ArgumentError("out.data", "overlaps in; a transpose cannot run in place");
  }
}

void check_arguments(ConstTensorRef in, TensorRef out) {
  detail::check_view("in", in, false);
  detail::check_view("out", out, false);
  check_operands(in, out);
}

namespace {

template <int E, class L>
void launch_planned(ConstTensorRef in, TensorRef out, cudaStream_t stream) {
  // NOTE: one tile per CTA: no persistent CTA count; tiles walk down the columns (panel 0)
  launch_with(facts<L>(), launch<E, L>, in, out, E, 0, 0, stream);
}

}  // namespace
}  // namespace tmakit::detail::transpose

namespace tmakit {

void transpose(ConstTensorRef in, TensorRef out, cudaStream_t stream) {
  using namespace detail::transpose;
  // step 1: every argument checked before anything is written
  check_operands(in, out);
  const detail::PathPlan path = detail::plan_path(in, out, true);
  if (path.path == detail::Path::nothing) return;
  // NOTE: after every argument check that needs no driver (remembered for repeated calls)
  detail::require_device_pointer(in.data, "in.data");
  detail::require_device_pointer(out.data, "out.data");
  if (path.path == detail::Path::plain_loads) {
    // NOTE: rows TMA cannot step one at a time it can still step K at a time (K = 16 /
    // gcd(pitch, 16)), and rows from a start off 16 bytes from 16 bytes before it: for 1- and
    // 2-byte elements that beat the plain kernel (README.md, "Row classes", "Which class
    // counts"); 4- and 8-byte ones stay on the plain kernel, near memcpy there already
    if (takes_row_classes(in, out)) return launch_row_classes(in, out, stream);
    return launch_plain(in, out, stream);
  }
  // steps 2-4: plan, maps, launch
  switch (plan_layout(static_cast<std::uint32_t>(in.element_size()))) {
    case PlannedLayout::one_tile_in_place_128x128:
      return launch_planned<1, OneTileInPlace128x128>(in, out, stream);
    case PlannedLayout::one_tile_in_place_128x256:
      switch (in.element_size()) {
        case 2: return launch_planned<2, OneTileInPlace128x256>(in, out, stream);
        case 4: return launch_planned<4, OneTileInPlace128x256>(in, out, stream);
        default: return launch_planned<8, OneTileInPlace128x256>(in, out, stream);
      }
  }
}

}  // namespace tmakit
