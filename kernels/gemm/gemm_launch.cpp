// The FP8 GEMM's host pieces that need no GPU: the small-M plan and the scales (declared in
// gemm_launch.hpp, shared by both kernels' launches and the CPU reference).
#include "gemm_launch.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

namespace tmakit::detail {

int small_m_padded(std::uint64_t m) {
  for (int mp : {8, 16, 32, 64, 128}) {
    if (m <= static_cast<std::uint64_t>(mp)) return mp;
  }
  return 0;
}

int small_m_splits(std::uint64_t n, std::uint64_t k_blocks, int sm_count) {
  // NOTE: measured on H200 (README): clusters only pay when the tiles alone would leave most
  // SMs idle; with half of them busy, one CTA per tile was as fast or faster.
  const std::uint64_t tiles = (n + kSmallMRowsB - 1) / kSmallMRowsB;
  for (int s : {8, 4, 2}) {
    if (static_cast<std::uint64_t>(s) <= k_blocks &&
        tiles * s <= static_cast<std::uint64_t>(sm_count) / 2) {
      return s;
    }
  }
  return 1;
}

int small_m_prefetch(std::uint64_t m, std::uint64_t rank_k_blocks, int splits, int rows_b,
                     double dram_bytes_per_second) {
  // NOTE: measured in streams of calls on both parts (kernels/gemm/EXPERIMENTS.md, "The
  // small-M prefetch"): in clusters 4 k-blocks paid on both; at one CTA per tile, on H100 4
  // for 16 < M <= 64 and 2 above paid in every context measured, at M <= 16 a prefetch helped
  // in runs of GEMMs alone and hurt after the memory-bound workloads, and on H200 the late
  // start of the next kernel cost more than any prefetch gave.
  // Never more than half of a rank's k-blocks.
  // NOTE: 128 rows of B per CTA (configuration 8) leave a third of the SMs free, where the
  // next call's CTAs start early: 2 k-blocks took 16 x 10240 x 8192 from 34.3 to 31.1 us in
  // streams on H100 and from 29.1 to 24.8 on H200, call by call the same (EXPERIMENTS.md,
  // "The L2 prefetch for 128 rows of B").
  int depth = 0;
  if (rows_b == kSmallMWideRowsB) {
    depth = 2;
  } else if (splits > 1) {
    depth = 4;
  } else if (dram_bytes_per_second < 4e12) {
    depth = m <= 16 ? 0 : m <= 64 ? 4 : 2;
  }
  return static_cast<int>(
      std::min<std::uint64_t>(static_cast<std::uint64_t>(depth), rank_k_blocks / 2));
}

float gemm_scale(const GemmScales& scales) {
  const double wide = static_cast<double>(scales.alpha) * scales.scale_a * scales.scale_b;
  const auto scale = static_cast<float>(wide);
  if (!std::isfinite(scale) || (scale == 0.0f && wide != 0.0)) {
    throw ArgumentError("scales",
                        "alpha * scale_a * scale_b = " + std::to_string(wide) +
                            " is not a finite, representable float (" +
                            (std::isfinite(wide) ? "out of float's range" : "not finite") + ")");
  }
  return scale;
}

void check_device_scales(const GemmScales& scales) {
  const auto check = [](const char* pointer_name, const float* pointer, const char* value_name,
                        float value) {
    if (pointer == nullptr) return;
    if (reinterpret_cast<std::uintptr_t>(pointer) % alignof(float) != 0) {
      char address[32];
      std::snprintf(address, sizeof address, "%p", static_cast<const void*>(pointer));
      throw ArgumentError(pointer_name,
                          std::string(address) + " is not 4-byte aligned; point it at a float");
    }
    if (value != 1.0f) {
      throw ArgumentError(value_name, std::to_string(value) + " while " + pointer_name +
                                          " is set: the device value replaces it; leave " +
                                          value_name + " at 1 (or fold it into alpha)");
    }
  };
  check("scales.scale_a_device", scales.scale_a_device, "scales.scale_a", scales.scale_a);
  check("scales.scale_b_device", scales.scale_b_device, "scales.scale_b", scales.scale_b);
}

GemmKernelScale gemm_kernel_scale(const GemmScales& scales) {
  check_device_scales(scales);
  GemmKernelScale s;
  s.host = gemm_scale(scales);
  s.host_wide = static_cast<double>(scales.alpha) * scales.scale_a * scales.scale_b;
  s.a = scales.scale_a_device;
  s.b = scales.scale_b_device;
  return s;
}

}  // namespace tmakit::detail
