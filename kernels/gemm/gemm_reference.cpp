// CPU reference of the FP8 GEMM: inputs dequantised exactly (e4m3 -> float), products
// summed in double, scaled once. The tests compare the kernel's bf16/fp16 output with it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "gemm_launch.hpp"
#include "tmakit/kernels/gemm.hpp"

namespace tmakit::reference {

float e4m3_to_float(std::uint8_t bits) {
  // e4m3 (OCP FP8): 1 sign, 4 exponent (bias 7), 3 mantissa bits; S.1111.111 is NaN, no
  // infinities; exponent 0 is subnormal (m / 8 * 2^-6).
  const int sign = bits >> 7;
  const int exponent = (bits >> 3) & 0xF;
  const int mantissa = bits & 0x7;
  if (exponent == 0xF && mantissa == 0x7) return std::numeric_limits<float>::quiet_NaN();
  const float magnitude = exponent == 0
                              ? std::ldexp(static_cast<float>(mantissa) / 8.0f, -6)
                              : std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f,
                                           exponent - 7);
  return sign ? -magnitude : magnitude;
}

namespace {

void check_host_operand(const char* name, const ConstTensorRef& v) {
  const std::string n(name);
  if (v.data == nullptr) throw ArgumentError(n + ".data", "is null; pass a host pointer");
  if (v.type != DataType::uint8) {
    throw ArgumentError(n + ".type", std::string(tmakit::name(v.type)) +
                                         " is not UINT8 (e4m3 bits travel as UINT8)");
  }
  if (v.rows == 0 || v.cols == 0) {
    throw ArgumentError(n + (v.rows == 0 ? ".rows" : ".cols"), "is 0; extents must be >= 1");
  }
  if (v.batch != 1) throw ArgumentError(n + ".batch", "must be 1: one matrix");
  if (v.row_stride_bytes != 0 && v.row_stride_bytes < v.cols) {
    throw ArgumentError(n + ".row_stride_bytes", std::to_string(v.row_stride_bytes) +
                                                     " is less than a row's " +
                                                     std::to_string(v.cols) + " bytes");
  }
}

}  // namespace

void gemm_fp8(ConstTensorRef a, ConstTensorRef b, float* d_out, const GemmScales& scales) {
  check_host_operand("a", a);
  check_host_operand("b", b);
  if (b.cols != a.cols) {
    throw ArgumentError("b.cols", std::to_string(b.cols) + " (K of B) differs from a.cols " +
                                      std::to_string(a.cols) + " (K of A)");
  }
  if (d_out == nullptr) throw ArgumentError("d_out", "is null; pass M x N floats");
  const std::uint64_t m = a.rows, n = b.rows, k = a.cols;
  const bool per_tensor = scales.recipe == GemmScaleRecipe::tensor;
  if (per_tensor && (scales.scale_a_device != nullptr || scales.scale_b_device != nullptr)) {
    throw ArgumentError(scales.scale_a_device != nullptr ? "scales.scale_a_device"
                                                         : "scales.scale_b_device",
                        "is set; the CPU reference reads no device memory: pass the value "
                        "as scale_a / scale_b");
  }
  // the kernel's scale (per tensor), or alpha and the arrays' strides (row, block: the
  // arrays are host memory here)
  const detail::GemmKernelScale ks = detail::gemm_kernel_scale(scales, m, n, k);
  float table[256];
  for (int i = 0; i < 256; ++i) table[i] = e4m3_to_float(static_cast<std::uint8_t>(i));
  // dequantise once: rows of K floats
  std::vector<float> af(m * k), bf(n * k);
  for (std::uint64_t r = 0; r < m; ++r) {
    const auto* row = static_cast<const std::uint8_t*>(a.data) + r * a.row_pitch();
    for (std::uint64_t c = 0; c < k; ++c) af[r * k + c] = table[row[c]];
  }
  for (std::uint64_t r = 0; r < n; ++r) {
    const auto* row = static_cast<const std::uint8_t*>(b.data) + r * b.row_pitch();
    for (std::uint64_t c = 0; c < k; ++c) bf[r * k + c] = table[row[c]];
  }
  const auto sa = [&](std::uint64_t i, std::uint64_t kb) {
    return ks.a[static_cast<std::int64_t>(i) * ks.a_mn + static_cast<std::int64_t>(kb) * ks.a_k];
  };
  const auto sb = [&](std::uint64_t j, std::uint64_t kb) {
    return ks.b[static_cast<std::int64_t>(j) * ks.b_mn + static_cast<std::int64_t>(kb) * ks.b_k];
  };
  const std::uint64_t kBlock = 128;
  for (std::uint64_t i = 0; i < m; ++i) {
    for (std::uint64_t j = 0; j < n; ++j) {
      const float* x = &af[i * k];
      const float* y = &bf[j * k];
      // NOTE: an e4m3 x e4m3 product is exact in float (8 significant bits at most)
      if (scales.recipe == GemmScaleRecipe::block) {
        // each k-block's sum times its two scales (their product rounded to float, as the
        // kernel forms it), then alpha
        double sum = 0.0;
        for (std::uint64_t kb = 0; kb * kBlock < k; ++kb) {
          double part = 0.0;
          for (std::uint64_t c = kb * kBlock; c < std::min(k, (kb + 1) * kBlock); ++c) {
            part += static_cast<double>(x[c] * y[c]);
          }
          sum += part * static_cast<double>(sa(i, kb) * sb(j / kBlock, kb));
        }
        d_out[i * n + j] = static_cast<float>(sum * static_cast<double>(ks.host));
        continue;
      }
      double sum = 0.0;
      for (std::uint64_t c = 0; c < k; ++c) sum += static_cast<double>(x[c] * y[c]);
      const float factor =
          scales.recipe == GemmScaleRecipe::row ? ks.host * sa(i, 0) * sb(j, 0) : ks.host;
      d_out[i * n + j] = static_cast<float>(sum * static_cast<double>(factor));
    }
  }
}

}  // namespace tmakit::reference
