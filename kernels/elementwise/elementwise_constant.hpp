// The constant of add_constant as the kernel and the CPU reference both apply it: validated
// and rounded to the element type once, here, so the two cannot drift apart.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "tmakit/kernels/tensor_ref.hpp"

namespace tmakit::detail::elementwise {

struct Constant {
  std::int32_t i32 = 0;  // int32 tensors
  float f32 = 0.0f;      // float tensors: the value rounded to the element type, as float
};

inline Constant make_constant(DataType t, double value) {
  Constant c;
  if (t == DataType::int32) {
    if (!(std::nearbyint(value) == value) ||
        value < static_cast<double>(std::numeric_limits<std::int32_t>::min()) ||
        value > static_cast<double>(std::numeric_limits<std::int32_t>::max())) {
      throw ArgumentError("value", std::to_string(value) + " is not an int32 value");
    }
    c.i32 = static_cast<std::int32_t>(value);
    return c;
  }
  // NOTE: bf16/fp16 tensors add the constant rounded to their own type.
  c.f32 = t == DataType::bfloat16  ? __bfloat162float(__double2bfloat16(value))
          : t == DataType::float16 ? __half2float(__double2half(value))
                                   : static_cast<float>(value);
  if (!std::isfinite(c.f32) && std::isfinite(value)) {
    throw ArgumentError("value", std::to_string(value) + " overflows " + std::string(name(t)));
  }
  return c;
}

}  // namespace tmakit::detail::elementwise
