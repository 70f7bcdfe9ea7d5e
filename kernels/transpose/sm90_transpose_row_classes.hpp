// The row-class transpose (sm90_transpose_row_classes.cu): 1- and 2-byte elements whose rows
// TMA cannot load or whose out it cannot store, loaded with one tensor map per residue class
// of rows (row_class_plan.hpp; one class where in's pitch is a multiple of 16 bytes).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "tmakit/host/tensor_map_spec.hpp"
#include "tmakit/kernels/tensor_ref.hpp"

namespace tmakit::detail::transpose {

// Whether launch_row_classes takes these checked, non-empty views: 1- or 2-byte elements, one
// image, at least 16 rows, sizes within 2^30, and a pitch and size where the kernel measured
// faster than the plain one (row_class_plan.hpp, takes_classes: every class count of 1-byte
// elements; 2-byte ones at 2-8 classes, and at one class from 8 tiles an SM on). sm_count:
// the device's SMs (the first form asks the current device).
bool takes_row_classes(ConstTensorRef in, TensorRef out);
bool takes_row_classes(ConstTensorRef in, TensorRef out, int sm_count);

// The tensor map of in's rows of class j (j < K), as the launcher builds it (for its tests).
TensorMapSpec row_class_map_spec(ConstTensorRef in, std::uint32_t j);

// out = in transposed, for views takes_row_classes takes.
void launch_row_classes(ConstTensorRef in, TensorRef out, cudaStream_t stream);

}  // namespace tmakit::detail::transpose
