// Matrix transpose through TMA: out (cols x rows) = in (rows x cols) transposed, for 1-, 2-,
// 4- and 8-byte elements, any shape, user row strides. Design and measured figures:
// kernels/transpose/README.md.
#pragma once

#include <cuda_runtime.h>

#include "tmakit/kernels/tensor_ref.hpp"

namespace tmakit {

// out[c][r] = in[r][c]. `in` and `out` have the same element size (any type of 1, 2, 4 or 8
// bytes; the bits are moved, not converted), out.rows == in.cols, out.cols == in.rows, and
// they do not overlap. Data and row strides must be 16-byte aligned (a single row needs no
// stride). Throws ArgumentError naming the argument before anything is written. Asynchronous.
// The tile layout is chosen per element size (kernels/transpose/README.md).
void transpose(ConstTensorRef in, TensorRef out, cudaStream_t stream = nullptr);

namespace reference {
void transpose(ConstTensorRef in, TensorRef out);
}  // namespace reference

}  // namespace tmakit
