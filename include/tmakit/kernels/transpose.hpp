// Matrix transpose through TMA: out (cols x rows) = in (rows x cols) transposed, for 1-, 2-,
// 4- and 8-byte elements, any shape, user row strides. Design and measured figures:
// kernels/transpose/README.md.
#pragma once

#include <cuda_runtime.h>

#include "tmakit/kernels/tensor_ref.hpp"

namespace tmakit {

struct TransposeTuning {
  int ctas_per_sm = 0;  // persistent CTAs per multiprocessor; 0: the layout's default (the
                        // layouts of one tile per CTA, variant 0 among them, take only 0)
  int panel_tiles = 0;  // tile rows walked together, down each column of tiles, then the next
                        // column; 0: all of them (column by column), 1: row-major order
  int variant = 0;      // shared-memory layout: 0 the measured best (14; 16 for 1-byte), 1 ..
                        // kTransposeVariants - 1 fixed layouts (kernels/transpose/README.md)
};
// Layouts TransposeTuning::variant may name: 0 .. kTransposeVariants - 1.
inline constexpr int kTransposeVariants = 17;

// out[c][r] = in[r][c]. `in` and `out` have the same element size (any type of 1, 2, 4 or 8
// bytes; the bits are moved, not converted), out.rows == in.cols, out.cols == in.rows, and
// they do not overlap. Data and row strides must be 16-byte aligned (a single row needs no
// stride). Throws ArgumentError naming the argument before anything is written. Asynchronous.
void transpose(ConstTensorRef in, TensorRef out, cudaStream_t stream = nullptr,
               const TransposeTuning& tuning = {});

namespace reference {
void transpose(ConstTensorRef in, TensorRef out);
}  // namespace reference

}  // namespace tmakit
