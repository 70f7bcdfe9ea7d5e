// 3x3 stencil (cross-correlation) with zero padding through TMA, float32 and float64, one
// image or a batch: out[y][x] = sum_{dy,dx in -1..1} taps[dy+1][dx+1] * in[y+dy][x+dx], the
// input read as zero outside the image. The halo comes from TMA's out-of-bounds fill: no
// padded copy is made. Design and measured figures: kernels/stencil3x3/README.md.
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

struct StencilTuning {
  int ctas_per_sm = 0;  // persistent CTAs per multiprocessor; 0: the layout's default (the
                        // layouts that give each CTA its own tiles, variant 0 among them, take
                        // only 0)
  int variant = 0;      // shared-memory layout (0: the default; 1 .. kStencilVariants - 1
                        // fixed layouts, kernels/stencil3x3/README.md)
  int panel_tiles = 0;  // tile rows walked together (down a panel's column of tiles, then the
                        // next column); 0: the default (1 = row-major for the layouts that
                        // give each CTA its own tiles, variant 0 among them; for the persistent
                        // layouts 3 on memory systems of 4 TB/s and more, else 1). The row
                        // walks (10-13) take only 0 or 1.
};
// Layouts StencilTuning::variant may name: 0 .. kStencilVariants - 1.
inline constexpr int kStencilVariants = 37;

// The layout variant 0 stands for on the current device for float32 or float64 input: the
// one measured fastest on that memory system (kernels/stencil3x3/README.md). Throws
// ArgumentError for other types.
int stencil3x3_default_variant(DataType type);
// The same for a device of this peak DRAM bandwidth (bytes per second): H200-class (4 TB/s
// and more) or H100-class. No GPU needed.
int stencil3x3_default_variant(DataType type, double dram_bytes_per_second);

// `in` and `out`: same type (float32 or float64), shape and batch, disjoint. Data, row and
// image strides 16-byte aligned (a single row needs no row stride). The taps are rounded to
// the element type. Throws ArgumentError naming the argument before anything is written.
// Asynchronous. The sum runs in the order of `taps` with fused multiply-adds.
void stencil3x3(ConstTensorRef in, TensorRef out, const Filter3x3& filter,
                cudaStream_t stream = nullptr, const StencilTuning& tuning = {});

namespace reference {
void stencil3x3(ConstTensorRef in, TensorRef out, const Filter3x3& filter);
}  // namespace reference

}  // namespace tmakit
