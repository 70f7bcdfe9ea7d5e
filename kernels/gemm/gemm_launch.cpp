// The FP8 GEMM's scales (declared in gemm_launch.hpp, shared by the kernels' launches and the
// CPU reference) and the tests' record of the last launch.
#include "gemm_launch.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

namespace tmakit::detail {

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

int& gemm::launched_config() {
  thread_local int config = -1;
  return config;
}

}  // namespace tmakit::detail
