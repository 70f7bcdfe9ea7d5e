// CPU reference of the FP8 quantizer: the same groups and the same float operations, in the
// same order, as the kernels (sm90_quantize.cuh), so the GPU tests compare bit for bit.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <vector>

#include "quantize/quantize_plan.hpp"
#include "tmakit/kernels/quantize.hpp"

namespace tmakit::reference {

namespace {

// |x|'s bits as an unsigned integer ordered as |x| is (NaN above infinity), and its float.
std::uint32_t abs_bits(const std::uint8_t* p, DataType t) {
  if (t == DataType::float32) {
    std::uint32_t b;
    std::memcpy(&b, p, 4);
    return b & 0x7fffffffu;
  }
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  return h & 0x7fffu;
}

float value_of_bits(std::uint32_t bits, DataType t) {
  if (t == DataType::float32) {
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  if (t == DataType::bfloat16) {
    const std::uint32_t w = bits << 16;
    float f;
    std::memcpy(&f, &w, 4);
    return f;
  }
  __half_raw raw;
  raw.x = static_cast<unsigned short>(bits);
  return __half2float(__half(raw));
}

float element(const std::uint8_t* p, DataType t) {
  const std::uint32_t sign =
      t == DataType::float32 ? 0u : (static_cast<std::uint32_t>(p[1]) >> 7);  // 16-bit: bit 15
  if (t == DataType::float32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  const float a = value_of_bits(abs_bits(p, t), t);
  return sign != 0 ? -a : a;
}

// The scale of a group from its amax, and 1 / scale (README.md, "Rounding").
void scale_of(float amax, float& scale, float& inverse) {
  if (amax == 0.0f) {
    scale = 1.0f;
  } else {
    scale = amax / 448.0f;
    if (scale < FLT_MIN) scale = FLT_MIN;  // NOTE: false for NaN, which stays
  }
  inverse = 1.0f / scale;
}

}  // namespace

std::uint8_t e4m3_from_float(float x) {
  if (std::isnan(x)) return 0x7f;
  const std::uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const double a = std::fabs(static_cast<double>(x));
  if (a >= 448.0) return sign | 0x7e;  // saturated (satfinite); +-inf too
  // the quantum: 2^-9 below 2^-6 (subnormals), else 2^(e - 3) for a in [2^e, 2^(e + 1))
  const int e = a < 0x1p-6 ? -6 : std::ilogb(a);
  const double quantum = std::ldexp(1.0, e - 3);
  // NOTE: a / quantum is exact (a power of two); nearbyint rounds half to even
  const double r = std::nearbyint(a / quantum) * quantum;
  if (r == 0.0) return sign;
  if (r < 0x1p-6) return sign | static_cast<std::uint8_t>(r / 0x1p-9);  // subnormal: m x 2^-9
  const int re = std::ilogb(r);  // rounding may have carried into the next binade
  const int mantissa = static_cast<int>(r / std::ldexp(1.0, re - 3)) - 8;
  return sign | static_cast<std::uint8_t>(((re + 7) << 3) | mantissa);
}

void quantize_fp8(ConstTensorRef x, TensorRef x_fp8, float* scale, GemmScaleRecipe recipe,
                  QuantizeOperand operand, const GemmScaleStrides& scale_strides) {
  if (x.data == nullptr) throw ArgumentError("x.data", "is null");
  if (x_fp8.data == nullptr) throw ArgumentError("x_fp8.data", "is null");
  if (scale == nullptr) throw ArgumentError("scale", "is null");
  detail::quantize::check_shapes(x, x_fp8, recipe, operand, scale_strides);
  const auto plan =
      detail::quantize::plan_quantize(x.rows, x.cols, static_cast<std::uint32_t>(x.element_size()),
                                      recipe, operand, scale_strides, 1);
  const std::uint64_t esize = x.element_size();
  const auto* in = static_cast<const std::uint8_t*>(x.data);
  auto* out = static_cast<std::uint8_t*>(x_fp8.data);
  // the groups: row extent and column extent in elements
  const bool block_b = recipe == GemmScaleRecipe::block && operand == QuantizeOperand::b;
  const std::uint64_t group_rows = recipe == GemmScaleRecipe::tensor ? x.rows : block_b ? 128 : 1;
  const std::uint64_t group_cols = recipe == GemmScaleRecipe::block ? 128 : x.cols;
  for (std::uint64_t gi = 0; gi < plan.scales.mn; ++gi) {
    for (std::uint64_t gk = 0; gk < plan.scales.k; ++gk) {
      const std::uint64_t r0 = gi * group_rows, r1 = std::min(x.rows, r0 + group_rows);
      const std::uint64_t c0 = gk * group_cols, c1 = std::min(x.cols, c0 + group_cols);
      std::uint32_t amax_bits = 0;  // NOTE: the unsigned max of |x|'s bits: NaN wins
      for (std::uint64_t r = r0; r < r1; ++r) {
        for (std::uint64_t c = c0; c < c1; ++c) {
          amax_bits = std::max(amax_bits, abs_bits(in + r * x.row_pitch() + c * esize, x.type));
        }
      }
      float s, inverse;
      scale_of(value_of_bits(amax_bits, x.type), s, inverse);
      scale[gi * static_cast<std::uint64_t>(plan.stride_mn) +
            gk * static_cast<std::uint64_t>(plan.stride_k)] = s;
      for (std::uint64_t r = r0; r < r1; ++r) {
        for (std::uint64_t c = c0; c < c1; ++c) {
          const float v = element(in + r * x.row_pitch() + c * esize, x.type);
          out[r * x_fp8.row_pitch() + c] = e4m3_from_float(v * inverse);
        }
      }
    }
  }
}

}  // namespace tmakit::reference
