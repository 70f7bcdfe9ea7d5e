// Helpers shared by the GPU sweeps that compare real TMA copies with the CPU model
// (test_model_vs_hw.cu, test_model_im2col_prefetch.cu). Test code only.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tmakit/host/driver.hpp"
#include "tmakit/host/tensor_map_spec.hpp"

namespace tmakit::testing {

// Why the sweeps cannot run here (no driver, no device, not sm_90), or empty.
inline std::string gpu_missing_reason() {
  if (!tmakit::driver_available()) return "no usable CUDA driver (libcuda.so.1 / cuInit)";
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) return "no CUDA device";
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return "cannot query device 0";
  if (p.major < 9) return std::string("device 0 (") + p.name + ") is not sm_90+: no TMA";
  return {};
}

#define SKIP_WITHOUT_HOPPER()                                                   \
  do {                                                                          \
    const std::string why = gpu_missing_reason();                               \
    if (!why.empty()) GTEST_SKIP() << "needs a Hopper GPU and driver: " << why; \
  } while (0)

#define CK(call) ASSERT_EQ((call), cudaSuccess) << #call << ": " << cudaGetErrorString(call)

using Rng = std::mt19937_64;
inline int uniform(Rng& rng, int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}
inline bool chance(Rng& rng, double p) {
  return std::uniform_real_distribution<double>(0, 1)(rng) < p;
}

inline std::uint64_t round_up(std::uint64_t v, std::uint64_t m) {
  return (v + m - 1) / m * m;
}

// NOTE: with interleave (tiled) dimension 0 counts 16/32-byte slices (docs/hardware.md H12).
inline std::uint64_t tensor_extent(const TensorMapSpec& s) {
  const int unit = s.kind == EncodeKind::tiled && s.interleave != Interleave::none
                       ? interleave_bytes(s.interleave)
                       : element_bytes(s.data_type);
  std::uint64_t e = s.global_dim[0] * static_cast<std::uint64_t>(unit);
  for (std::uint32_t d = 1; d < s.rank; ++d)
    e += (s.global_dim[d] - 1) * s.global_strides_bytes[d - 1];
  return e;
}

inline std::string hex_dump(const std::vector<std::uint8_t>& v, const std::vector<std::uint8_t>& w) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!w[i]) {
      s += "..";
    } else {
      s += digits[v[i] >> 4];
      s += digits[v[i] & 15];
    }
  }
  return s;
}

// TMAKIT_MODEL_TRACE=1 names each case before it is launched (to find one that kills the
// kernel).
inline bool trace() {
  const char* v = std::getenv("TMAKIT_MODEL_TRACE");
  return v != nullptr && *v == '1';
}

}  // namespace tmakit::testing
