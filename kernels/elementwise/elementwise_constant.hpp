// The constant of add_constant as the kernels and the CPU reference all apply it: validated
// and converted once, here, so they cannot drift apart.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>

#include "tmakit/kernels/tensor_ref.hpp"

namespace tmakit::detail::elementwise {

struct Constant {
  std::int32_t i32 = 0;     // int32 tensors (the TMA kernel)
  std::uint64_t bits = 0;   // integer tensors: the constant modulo 2^64 (the sum wraps)
  float f32 = 0.0f;         // float32/bf16/fp16 tensors: the value rounded to float32
  double f64 = 0.0;         // float64 tensors
};

constexpr bool is_integer(DataType t) {
  return t == DataType::uint8 || t == DataType::uint16 || t == DataType::uint32 ||
         t == DataType::int32 || t == DataType::uint64 || t == DataType::int64;
}

// The types add_constant takes, and the subset its TMA kernel is built for.
constexpr bool add_type(DataType t) {
  return is_integer(t) || t == DataType::float16 || t == DataType::bfloat16 ||
         t == DataType::float32 || t == DataType::float64;
}
constexpr bool add_tma_type(DataType t) {
  return t == DataType::int32 || t == DataType::float32 || t == DataType::bfloat16 ||
         t == DataType::float16;
}

// An integer constant, wrapped to the element's width by the add itself.
inline Constant integer_constant(std::int64_t value) {
  Constant c;
  c.bits = static_cast<std::uint64_t>(value);
  c.i32 = static_cast<std::int32_t>(static_cast<std::uint32_t>(c.bits));
  return c;
}

// The range of `value` an integer type takes from add_constant's double: a signed type its
// own range; an unsigned n-bit type [-(2^n - 1), 2^n - 1] (a negative value subtracts, the
// sum wrapping modulo 2^n), uint64 [-2^63, 2^64).
inline void integer_range(DataType t, double& lo, double& hi) {
  switch (t) {
    case DataType::int32: lo = -2147483648.0; hi = 2147483647.0; return;
    case DataType::int64: lo = -9223372036854775808.0; hi = 9223372036854775807.0; return;
    case DataType::uint64: lo = -9223372036854775808.0; hi = 18446744073709551615.0; return;
    default: {
      const int bits = element_bytes(t) * 8;
      hi = std::ldexp(1.0, bits) - 1.0;
      lo = -hi;
    }
  }
}

inline Constant make_constant(DataType t, double value) {
  if (is_integer(t)) {
    double lo = 0, hi = 0;
    integer_range(t, lo, hi);
    // NOTE: 2^63 - 1 and 2^64 - 1 round up to 2^63 and 2^64 as doubles: the bound is exclusive
    // there, as a double at the bound does not fit
    const bool past_hi = t == DataType::int64 || t == DataType::uint64 ? value >= hi : value > hi;
    if (!(std::nearbyint(value) == value) || value < lo || past_hi) {
      throw ArgumentError("value", std::to_string(value) + " is not an integer " +
                                       std::string(name(t)) + " can add");
    }
    // NOTE: through int64 for values below 0, uint64 above 2^63 (uint64 only)
    return integer_constant(value >= 9223372036854775808.0
                                ? static_cast<std::int64_t>(static_cast<std::uint64_t>(value))
                                : static_cast<std::int64_t>(value));
  }
  Constant c;
  if (t == DataType::float64) {
    c.f64 = value;
    return c;
  }
  // NOTE: bf16/fp16 tensors add the constant as float32, the type their sum is formed in,
  // not first rounded to their own type: torch's x + value does the same (its CUDA add takes
  // a Python scalar as the float32 of the "opmath" type), so the two agree bit for bit.
  c.f32 = static_cast<float>(value);
  if (!std::isfinite(c.f32) && std::isfinite(value)) {
    char shown[32];  // (%g: std::to_string prints 1e39 with 40 digits)
    std::snprintf(shown, sizeof shown, "%.9g", value);
    throw ArgumentError("value", std::string(shown) + " overflows FLOAT32, the type " +
                                     std::string(name(t)) + " sums are formed in");
  }
  return c;
}

}  // namespace tmakit::detail::elementwise
