// encode(spec): validate, then build the CUtensorMap through the driver. describe() for logs.
// With TMAKIT_LOG_TENSOR_MAPS=1 in the environment every encoded map is logged to stderr.
#pragma once

#include <cuda.h>

#include <string>

#include "tmakit/core/error.hpp"  // (RuleViolation, which encode throws)
#include "tmakit/host/tensor_map_spec.hpp"

namespace tmakit {

// Validates (throws RuleViolation), then calls cuTensorMapEncodeTiled / ...Im2col.
// If the driver still refuses, throws CudaError whose message lists every argument passed.
CUtensorMap encode(const TensorMapSpec& spec);

// Calls the driver without validating first; returns its result. For differential tests.
CUresult encode_unchecked(const TensorMapSpec& spec, CUtensorMap* out) noexcept;

// One line: "tiled FLOAT32 rank 2 @0x7f..00 dim [1024, 512] strides [4096] box [32, 32] ...".
std::string describe(const TensorMapSpec& spec);

// The 128 bytes of an encoded map as 16 hex qwords.
std::string describe(const CUtensorMap& map);

}  // namespace tmakit
