// FP8 GEMM benchmark cases for `tmakit bench`: tmakit's gemm_fp8 beside cuBLASLt FP8 (same
// scales, bf16 output) and cuBLAS FP16, both loaded at run time (vendor_library.hpp). Ids:
// "gemm/fp8/m<M>n<N>k<K>/tmakit", ".../cublaslt-fp8", ".../cublas-fp16", and the fast
// accumulation rows ".../tmakit-fast", ".../cublaslt-fp8-fast" (each compared with the other
// library's row of the same mode). The scale recipes (GemmScales::recipe) beside cuBLASLt's own
// modes of them, on the same operands: ".../tmakit-row", "-row-fast" against
// ".../cublaslt-fp8-row", "-row-fast" (row-wise scales, CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F),
// ".../tmakit-block" against ".../cublaslt-fp8-block" (128-block scales, VEC128_32F on A and
// BLK128x128_32F on B; promoted only). A mode this cuBLASLt refuses is reported as
// "baseline unavailable: cuBLASLt <version> ... refuses ..." (or "has no algorithm ...").
#pragma once

#include <string>
#include <vector>

#include "cases.hpp"
#include "suite.hpp"

namespace tmakit::bench {

// The GEMM shapes' cases as declared (no GPU needed; the filter is not applied).
std::vector<DeclaredWorkload> declared_gemm_workloads(const SuiteOptions& options);

// Case ids in run order, each shape's rows call by call, then its stream rows (no GPU
// needed); options.filter and options.quick apply.
std::vector<std::string> list_gemm_cases(const SuiteOptions& options);

// Runs the selected cases. Each result is checked on the device (2048 sampled elements against
// a double-precision dot product, each product weighed by its recipe's scales) before it is
// timed. `bytes` counts A + B + D once in the
// implementation's own types; `gbps` is that over the median time; `note` gives TFLOP/s, the
// sampled elements' relative error and, for tmakit, the speedup over cuBLASLt FP8 of the
// same accumulation mode in the same run.
std::vector<Result> run_gemm_cases(const SuiteOptions& options);

}  // namespace tmakit::bench
