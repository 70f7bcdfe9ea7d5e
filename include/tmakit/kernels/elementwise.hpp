// Elementwise add-constant over a 2D tensor: out = in + value, in place or not, any shape, row
// pitch and alignment. Types: float32, float64, bfloat16 and float16 (computed in float32,
// rounded to nearest even once), and the integer types (wrapping add). Rows TMA can describe
// run through the TMA kernel; the rest through a plain vectorised kernel (the rule table in
// tmakit/kernels/detail/plain_path.hpp). Design and measured figures:
// kernels/elementwise/README.md.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "tmakit/kernels/tensor_ref.hpp"

namespace tmakit {

// out = in + value for every element. `in` and `out` have the same type and shape; they are
// either the same tensor (same data and strides: in place) or disjoint. Types: INT32, INT64,
// UINT8, UINT16, UINT32, UINT64 (the sum wraps modulo 2^bits, so the unsigned types serve
// signed tensors of their width too), FLOAT32, FLOAT64, BFLOAT16, FLOAT16. `value` is
// converted to the element type first: integer types take an integer in the type's range
// (an unsigned n-bit type also -(2^n - 1)..-1, which subtracts); the float types below
// float64 round it to float32 (bf16/fp16 add it as float32 and round the sum once, as torch's
// x + value does; a finite value past float32's range is refused). Any extents (an empty view writes nothing), any row stride and data alignment that
// are multiples of the element size. Throws ArgumentError naming the argument before anything
// is written; CudaError if the launch fails. Asynchronous.
void add_constant(ConstTensorRef in, TensorRef out, double value, cudaStream_t stream = nullptr);

// The same for the integer types with an integer constant, exact for every int64 (a double
// holds integers exactly only up to 2^53): out = in + value modulo 2^bits.
void add_integer(ConstTensorRef in, TensorRef out, std::int64_t value,
                 cudaStream_t stream = nullptr);

namespace reference {
// CPU reference over host memory, same arithmetic as the kernels (bit-exact).
void add_constant(ConstTensorRef in, TensorRef out, double value);
void add_integer(ConstTensorRef in, TensorRef out, std::int64_t value);
}  // namespace reference

}  // namespace tmakit
