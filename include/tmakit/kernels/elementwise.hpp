// Elementwise add-constant over a 2D tensor through TMA: out = in + value, in place or not.
// Types: int32 (wrapping add), float32, bfloat16, float16 (computed in float32, rounded to
// nearest even once). Design and measured figures: kernels/elementwise/README.md.
#pragma once

#include <cuda_runtime.h>

#include "tmakit/kernels/tensor_ref.hpp"

namespace tmakit {

// out = in + value for every element. `in` and `out` have the same type and shape; they are
// either the same tensor (same data and strides: in place) or disjoint. `value` is converted
// to the element type first (int32: must be an integer in range). Rows must be 16-byte
// aligned (data and row stride); a single row needs no stride. Throws ArgumentError naming
// the argument before anything is written; CudaError if the launch fails. Asynchronous.
void add_constant(ConstTensorRef in, TensorRef out, double value, cudaStream_t stream = nullptr);

namespace reference {
// CPU reference over host memory, same arithmetic as the kernel (bit-exact).
void add_constant(ConstTensorRef in, TensorRef out, double value);
}  // namespace reference

}  // namespace tmakit
