// Matrix transpose: out (cols x rows) = in (rows x cols) transposed, for 1-, 2-, 4- and 8-byte
// elements, any shape, row pitch and alignment. Rows TMA can describe run through the TMA
// kernel; the rest through a plain tiled kernel (the rule table in
// tmakit/kernels/detail/plain_path.hpp), except 1- and 2-byte elements (one image of at least
// 16 rows): TMA loads those one residue class of rows at a time (the row-class kernel) where
// in's pitch is off 16 bytes, and as one class where only in's start or out is off 16 bytes
// (2-byte elements: on views of at least 8 tiles an SM, where that measured faster than the
// plain kernel).
// Design and measured figures: kernels/transpose/README.md.
#pragma once

#include <cuda_runtime.h>

#include "tmakit/kernels/tensor_ref.hpp"

namespace tmakit {

// out[c][r] = in[r][c]. `in` and `out` have the same element size (any type of 1, 2, 4 or 8
// bytes; the bits are moved, not converted), out.rows == in.cols, out.cols == in.rows, and
// they do not overlap. Any extents (an empty view writes nothing), any row stride and data
// alignment that are multiples of the element size (a single row needs no stride). Throws
// ArgumentError naming the argument before anything is written. Asynchronous. The path and
// the tile layout are chosen per view and element size (kernels/transpose/README.md).
void transpose(ConstTensorRef in, TensorRef out, cudaStream_t stream = nullptr);

namespace reference {
void transpose(ConstTensorRef in, TensorRef out);
}  // namespace reference

}  // namespace tmakit
