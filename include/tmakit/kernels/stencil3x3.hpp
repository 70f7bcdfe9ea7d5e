// 3x3 stencil (cross-correlation) with zero padding, float32 and float64, one image or a
// batch: out[y][x] = sum_{dy,dx in -1..1} taps[dy+1][dx+1] * in[y+dy][x+dx], the input read
// as zero outside the image; no padded copy is made. Rows TMA can describe run through the TMA
// kernel (its out-of-bounds fill is the halo), or where the plan picks it the plain kernel's
// 16-byte form; the rest through the plain kernel (the rule table in
// tmakit/kernels/detail/plain_path.hpp). Design and measured figures:
// kernels/stencil3x3/README.md.
#pragma once

#include <cuda_runtime.h>

#include <array>

#include "tmakit/kernels/tensor_ref.hpp"

namespace tmakit {

struct Filter3x3 {
  std::array<double, 9> taps{};  // row-major: taps[3 * (dy + 1) + (dx + 1)]
  // The seed write-up's filter: 8 in the centre, -1 around.
  static Filter3x3 laplacian() { return {{-1, -1, -1, -1, 8, -1, -1, -1, -1}}; }
};

// `in` and `out`: same type (float32 or float64), shape and batch, disjoint. Any extents (an
// empty view writes nothing), any data alignment, row and image stride that are multiples of
// the element size (a single row needs no row stride). The taps are rounded to the element
// type: each must be finite there ("filter.taps[i]" names one that is not, or that float32
// cannot hold). Throws ArgumentError naming the argument before anything is written.
// Asynchronous.
// The sum runs in the order of `taps` with fused multiply-adds, the same on every path. The
// path and layout are chosen per view, device and type (kernels/stencil3x3/README.md).
void stencil3x3(ConstTensorRef in, TensorRef out, const Filter3x3& filter,
                cudaStream_t stream = nullptr);

namespace reference {
void stencil3x3(ConstTensorRef in, TensorRef out, const Filter3x3& filter);
}  // namespace reference

}  // namespace tmakit
