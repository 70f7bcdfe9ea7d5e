// The add-constant launcher: validate -> path (tmakit/kernels/detail/plain_path.hpp) -> the
// plain kernel (plain_elementwise.cu), or box plan (elementwise_plan.hpp) -> maps -> launch of
// the TMA kernel (the last three are launch_with in sm90_elementwise.cuh); a view of one row
// (a dense tensor) through the plain kernel.
#include "elementwise/plain_elementwise.hpp"
#include "elementwise/sm90_elementwise.cuh"
#include "tmakit/kernels/detail/plain_path.hpp"
#include "tmakit/kernels/detail/plain_view_check.hpp"

namespace tmakit::detail::elementwise {

void check_operands(ConstTensorRef in, TensorRef out) {
  detail::check_any_view("in", in, false);
  detail::check_any_view("out", out, false);
  const DataType t = in.type;
  if (!add_type(t)) {
    throw ArgumentError("in.type", std::string(name(t)) +
                                       " is not supported; use an integer type, FLOAT32, "
                                       "FLOAT64, BFLOAT16 or FLOAT16");
  }
  if (out.type != t) {
    throw ArgumentError(
        "out.type", std::string(name(out.type)) + " differs from in.type " + std::string(name(t)));
  }
  if (out.rows != in.rows || out.cols != in.cols) {
    throw ArgumentError("out", "shape " + std::to_string(out.rows) + "x" +
                                   std::to_string(out.cols) + " differs from in's " +
                                   std::to_string(in.rows) + "x" + std::to_string(in.cols));
  }
  // (one row's stride is never followed: a single row at in's address is in place whatever
  // strides the two views carry)
  const bool in_place =
      in.data == out.data && (in.rows <= 1 || in.row_pitch() == out.row_pitch());
  if (!in_place && detail::overlaps(in, out)) {
    throw ArgumentError("out.data",
                        "overlaps in without being the same tensor; pass the "
                        "same pointer and stride for in place, or disjoint memory");
  }
}

void check_arguments(ConstTensorRef in, TensorRef out) {
  detail::check_view("in", in, false);
  detail::check_view("out", out, false);
  check_operands(in, out);
  if (!add_tma_type(in.type)) {
    throw ArgumentError("in.type", std::string(name(in.type)) +
                                       " has no TMA kernel; use INT32, FLOAT32, BFLOAT16 or "
                                       "FLOAT16");
  }
}

namespace {

template <class T>
void launch_planned(ConstTensorRef in, TensorRef out, const Constant& value,
                    cudaStream_t stream) {
  // NOTE: one tile per CTA: no persistent CTA count
  launch_with(facts<OneTile8K>(), launch<T, OneTile8K>, in, out, value, 0, stream);
}

}  // namespace
}  // namespace tmakit::detail::elementwise

namespace tmakit {

namespace {

void run(ConstTensorRef in, TensorRef out, const detail::elementwise::Constant& constant,
         cudaStream_t stream) {
  using namespace detail::elementwise;
  const detail::PathPlan plan = detail::plan_path(in, out, add_tma_type(in.type));
  if (plan.path == detail::Path::nothing) return;
  // NOTE: after every argument check that needs no driver (remembered for repeated calls)
  detail::require_device_pointer(in.data, "in.data");
  detail::require_device_pointer(out.data, "out.data");
  if (plan.path == detail::Path::plain_loads) return launch_plain(in, out, constant, stream);
  if (one_row_takes_plain(in.rows, in.batch)) return launch_plain(in, out, constant, stream);
  // steps 2-4: the TMA kernel
  switch (in.type) {
    case DataType::int32: return launch_planned<std::int32_t>(in, out, constant, stream);
    case DataType::float32: return launch_planned<float>(in, out, constant, stream);
    case DataType::bfloat16: return launch_planned<__nv_bfloat16>(in, out, constant, stream);
    default: return launch_planned<__half>(in, out, constant, stream);
  }
}

}  // namespace

void add_constant(ConstTensorRef in, TensorRef out, double value, cudaStream_t stream) {
  using namespace detail::elementwise;
  // step 1: every argument checked before anything is written (the value by make_constant,
  // before the pointers)
  check_operands(in, out);
  run(in, out, make_constant(in.type, value), stream);
}

void add_integer(ConstTensorRef in, TensorRef out, std::int64_t value, cudaStream_t stream) {
  using namespace detail::elementwise;
  check_operands(in, out);
  if (!is_integer(in.type)) {
    throw ArgumentError("in.type", std::string(name(in.type)) +
                                       " is not an integer type; add_constant takes a "
                                       "floating-point constant");
  }
  run(in, out, integer_constant(value), stream);
}

}  // namespace tmakit
