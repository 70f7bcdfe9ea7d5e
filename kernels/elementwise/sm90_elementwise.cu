// The add-constant launcher: validate -> plan (elementwise_plan.hpp) -> maps -> launch (the last
// three are launch_with in sm90_elementwise.cuh).
#include "elementwise/sm90_elementwise.cuh"

namespace tmakit::detail::elementwise {

void check_arguments(ConstTensorRef in, TensorRef out) {
  detail::check_view("in", in, false);
  detail::check_view("out", out, false);
  const DataType t = in.type;
  if (t != DataType::int32 && t != DataType::float32 && t != DataType::bfloat16 &&
      t != DataType::float16) {
    throw ArgumentError("in.type", std::string(name(t)) +
                                       " is not supported; use INT32, FLOAT32, BFLOAT16 or "
                                       "FLOAT16");
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
  const bool in_place = in.data == out.data && in.row_pitch() == out.row_pitch();
  if (!in_place && detail::overlaps(in, out)) {
    throw ArgumentError("out.data",
                        "overlaps in without being the same tensor; pass the "
                        "same pointer and stride for in place, or disjoint memory");
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

void add_constant(ConstTensorRef in, TensorRef out, double value, cudaStream_t stream) {
  using namespace detail::elementwise;
  // step 1: every argument checked before anything is written (the value by make_constant,
  // before the pointers)
  check_arguments(in, out);
  const Constant constant = make_constant(in.type, value);
  // NOTE: after every argument check that needs no driver (remembered for repeated calls)
  detail::require_device_pointer(in.data, "in.data");
  detail::require_device_pointer(out.data, "out.data");
  // steps 2-4
  switch (in.type) {
    case DataType::int32: return launch_planned<std::int32_t>(in, out, constant, stream);
    case DataType::float32: return launch_planned<float>(in, out, constant, stream);
    case DataType::bfloat16: return launch_planned<__nv_bfloat16>(in, out, constant, stream);
    default: return launch_planned<__half>(in, out, constant, stream);
  }
}

}  // namespace tmakit
