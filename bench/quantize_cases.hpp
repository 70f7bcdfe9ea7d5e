// FP8 quantizer benchmark cases for `tmakit bench`: tmakit::quantize_fp8 on bf16 x for each
// recipe beside a memcpy of the same bytes (x read once, x_fp8 and the scales written once).
// Ids: "quantize/bf16/<rows>x<K>/<recipe>/memcpy" and ".../tmakit", recipe "tensor", "row",
// "block-a" (1 x 128 scales) or "block-b" (128 x 128).
#pragma once

#include <string>
#include <vector>

#include "cases.hpp"
#include "suite.hpp"

namespace tmakit::bench {

// The quantizer's workloads as declared (no GPU needed; the filter is not applied).
std::vector<DeclaredWorkload> declared_quantize_workloads(const SuiteOptions& options);

// Case ids in run order (no GPU needed); options.filter and options.quick apply.
std::vector<std::string> list_quantize_cases(const SuiteOptions& options);

// Runs the selected cases. Each tmakit call is checked once against the CPU reference, every
// byte of x_fp8 and every scale, before it is timed in rounds with its memcpy.
std::vector<Result> run_quantize_cases(const SuiteOptions& options);

}  // namespace tmakit::bench
