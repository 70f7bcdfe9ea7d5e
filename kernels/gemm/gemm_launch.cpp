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
    char shown[32];  // (%g: std::to_string prints 1e-46 as 0.000000)
    std::snprintf(shown, sizeof shown, "%.9g", wide);
    throw ArgumentError("scales",
                        "alpha * scale_a * scale_b = " + std::string(shown) +
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

const char* scale_recipe_name(GemmScaleRecipe r) {
  switch (r) {
    case GemmScaleRecipe::tensor: return "tensor";
    case GemmScaleRecipe::row: return "row";
    case GemmScaleRecipe::block: return "block";
  }
  return "?";
}

void check_scale_recipe(GemmScaleRecipe r, const char* field) {
  if (r != GemmScaleRecipe::tensor && r != GemmScaleRecipe::row && r != GemmScaleRecipe::block) {
    throw ArgumentError(field, std::to_string(static_cast<int>(r)) +
                                   " is not a GemmScaleRecipe; use tensor, row or block");
  }
}

namespace {

// One scale array's strides (torch's layout for -1, -1), checked: each >= 0. `k_used` false
// (row scales, one column): k is never followed, and -1 there stands for any (the layout
// the quantizer writes, {mn, -1}).
void resolve_strides(const char* field, const GemmScaleStrides& given, std::int64_t mn_default,
                     std::int64_t k_default, std::int64_t* mn, std::int64_t* k,
                     bool k_used = true) {
  if (given.mn == -1 && given.k == -1) {
    *mn = mn_default;
    *k = k_default;
    return;
  }
  if (!k_used && given.mn >= 0 && given.k == -1) {
    *mn = given.mn;
    *k = k_default;
    return;
  }
  if (given.mn < 0 || given.k < 0) {
    throw ArgumentError(field, "{" + std::to_string(given.mn) + ", " + std::to_string(given.k) +
                                   "}: strides are elements >= 0, or -1 in both for torch's "
                                   "layout");
  }
  *mn = given.mn;
  *k = given.k;
}

}  // namespace

GemmKernelScale gemm_kernel_scale(const GemmScales& scales, std::uint64_t m, std::uint64_t n,
                                  std::uint64_t k) {
  GemmKernelScale s;
  s.recipe = scales.recipe;
  if (scales.recipe == GemmScaleRecipe::tensor) {
    check_device_scales(scales);
    s.host = gemm_scale(scales);
    s.host_wide = static_cast<double>(scales.alpha) * scales.scale_a * scales.scale_b;
    s.a = scales.scale_a_device;
    s.b = scales.scale_b_device;
    return s;
  }
  check_scale_recipe(scales.recipe, "scales.recipe");
  const std::string recipe = scale_recipe_name(scales.recipe);
  const bool block = scales.recipe == GemmScaleRecipe::block;
  const std::string a_shape = block ? "M x ceil(K / 128) floats" : "M floats";
  const std::string b_shape = block ? "ceil(N / 128) x ceil(K / 128) floats" : "N floats";
  if (scales.scale_a_device == nullptr || scales.scale_b_device == nullptr) {
    const bool a_missing = scales.scale_a_device == nullptr;
    throw ArgumentError(a_missing ? "scales.scale_a_device" : "scales.scale_b_device",
                        "is null; " + recipe + " scales read " +
                            (a_missing ? a_shape : b_shape) + " from device memory");
  }
  check_device_scales(scales);  // (alignment, and scale_a / scale_b left at 1)
  const float alpha = scales.alpha;
  if (!std::isfinite(alpha)) {
    throw ArgumentError("scales.alpha", std::to_string(alpha) + " is not finite");
  }
  s.host = alpha;
  s.host_wide = alpha;
  s.a = scales.scale_a_device;
  s.b = scales.scale_b_device;
  const auto k_blocks = static_cast<std::int64_t>((k + 127) / 128);
  if (block) {
    resolve_strides("scales.scale_a_strides", scales.scale_a_strides,
                    1, static_cast<std::int64_t>(m), &s.a_mn, &s.a_k);
    resolve_strides("scales.scale_b_strides", scales.scale_b_strides, k_blocks, 1, &s.b_mn,
                    &s.b_k);
  } else {
    resolve_strides("scales.scale_a_strides", scales.scale_a_strides, 1, 0, &s.a_mn, &s.a_k,
                    false);
    resolve_strides("scales.scale_b_strides", scales.scale_b_strides, 1, 0, &s.b_mn, &s.b_k,
                    false);
    s.a_k = 0;  // (row scales have no k-blocks)
    s.b_k = 0;
  }
  // NOTE: the kernels form each element's offset in 64 bits (index * stride summed): an array
  // spanning more than 2^46 floats (2^48 bytes, the most any view spans: check_span) is no
  // scale array, and its offsets could wrap
  const auto n_rows = static_cast<std::int64_t>(block ? (n + 127) / 128 : n);
  const auto span = [&](std::int64_t rows, std::int64_t mn, std::int64_t kk) {
    return static_cast<double>(rows - 1) * static_cast<double>(mn) +
           static_cast<double>(block ? k_blocks - 1 : 0) * static_cast<double>(kk);
  };
  constexpr double kMaxSpan = 70368744177664.0;  // 2^46
  const bool a_wide = span(static_cast<std::int64_t>(m), s.a_mn, s.a_k) > kMaxSpan;
  if (a_wide || span(n_rows, s.b_mn, s.b_k) > kMaxSpan) {
    throw ArgumentError(a_wide ? "scales.scale_a_strides" : "scales.scale_b_strides",
                        "span more than 2^46 floats (2^48 bytes); pass the strides of the "
                        "scale array, in elements");
  }
  return s;
}

bool block_scale_a_tma(const GemmKernelScale& s, std::uint64_t m, std::uint64_t k,
                       bool aligned) {
  if (s.recipe != GemmScaleRecipe::block || !aligned || s.a_mn != 1) return false;
  const std::uint64_t k_blocks = (k + 127) / 128;
  // (one k-block: its column's stride is never followed)
  if (k_blocks == 1) return true;
  const auto a_k = static_cast<std::uint64_t>(s.a_k);
  // NOTE: TMA strides are multiples of 16 bytes below 2^40 (rule T6)
  return a_k % 4 == 0 && a_k >= m && a_k * 4 < (std::uint64_t{1} << 40);
}

bool block_scale_b_tma(const GemmKernelScale& s, std::uint64_t n, std::uint64_t k,
                       bool aligned) {
  if (s.recipe != GemmScaleRecipe::block || !aligned || s.b_k != 1) return false;
  // (one 128-row block of B: its row's stride is never followed)
  if ((n + 127) / 128 == 1) return true;
  const std::uint64_t k_blocks = (k + 127) / 128;
  const auto b_mn = static_cast<std::uint64_t>(s.b_mn);
  // NOTE: TMA strides are multiples of 16 bytes below 2^40 (rule T6)
  return b_mn % 4 == 0 && b_mn >= k_blocks && b_mn * 4 < (std::uint64_t{1} << 40);
}

int& gemm::launched_config() {
  thread_local int config = -1;
  return config;
}

}  // namespace tmakit::detail
