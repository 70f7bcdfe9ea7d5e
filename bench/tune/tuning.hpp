// The tuning lab of tmakit's memory-bound kernels: every layout measured so far, selectable at
// run time by number, so that `tmakit bench --tune` compares them in one run. Compiled into the
// benchmark only; the library ships the layouts its plans pick. Each function validates as the
// library's entry does, then the knobs, and throws ArgumentError naming the knob.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "tmakit/kernels/elementwise.hpp"
#include "tmakit/kernels/stencil3x3.hpp"
#include "tmakit/kernels/transpose.hpp"

namespace tmakit::tune {

// A tuning knob where 0 means "the default" (CTAs per SM, panel heights): refuses negatives.
inline void check_knob(const char* name, int value) {
  if (value < 0) {
    throw ArgumentError(name, std::to_string(value) + " is negative; use 0 (the default) or more");
  }
}

// The CTAs per SM a launch takes: `requested` (tuning.ctas_per_sm, already checked by
// check_knob; 0: the layout's `fallback`). Refused when the layout gives each CTA its own
// tiles (`run` > 0: the SMs then take as many as fit) or when more than `max` fit in shared
// memory.
inline int ctas_per_sm_for(int requested, int variant, int run, int fallback, int max) {
  if (run > 0 && requested > 0) {
    throw ArgumentError("tuning.ctas_per_sm",
                        "variant " + std::to_string(variant) +
                            " gives each CTA its own tiles and the SMs take as many as fit; "
                            "use 0");
  }
  const int ctas = requested > 0 ? requested : fallback;
  if (ctas > max) {
    throw ArgumentError("tuning.ctas_per_sm",
                        "at most " + std::to_string(max) + " fit in shared memory");
  }
  return ctas;
}

// Refuses a layout number outside 0 .. count - 1, naming the knob (tuning.variant).
inline void check_variant(int variant, int count) {
  if (variant < 0 || variant >= count) {
    throw ArgumentError("tuning.variant", std::to_string(variant) + " is not a layout; use 0.." +
                                              std::to_string(count - 1));
  }
}

// ---- add-constant (bench/tune/sm90_elementwise_layouts.cu) --------------------------------
struct ElementwiseTuning {
  int ctas_per_sm = 0;  // persistent CTAs per multiprocessor; 0: the layout's default (the
                        // layouts of one tile per CTA, variant 0 among them, take only 0)
  int variant = 0;      // box and pipeline shape (0: the library's, 9; 1 ..
                        // kElementwiseVariants - 1 fixed shapes, kernels/elementwise/README.md)
};
inline constexpr int kElementwiseVariants = 11;

void add_constant(ConstTensorRef in, TensorRef out, double value, cudaStream_t stream,
                  const ElementwiseTuning& tuning);

// ---- 3x3 stencil (bench/tune/sm90_stencil3x3_layouts.cu) --------------------------------
struct StencilTuning {
  int ctas_per_sm = 0;  // persistent CTAs per multiprocessor; 0: the layout's default (the
                        // layouts that give each CTA its own tiles, variant 0 among them, take
                        // only 0)
  int variant = 0;      // shared-memory layout (0: the library's choice on this device; 1 ..
                        // kStencilVariants - 1 fixed layouts, kernels/stencil3x3/README.md)
  int panel_tiles = 0;  // tile rows walked together (down a panel's column of tiles, then the
                        // next column); 0: the default (1 = row-major for the layouts that
                        // give each CTA its own tiles, variant 0 among them; for the persistent
                        // layouts 3 on memory systems of 4 TB/s and more, else 1). The row
                        // walks (10-13) take only 0 or 1.
};
inline constexpr int kStencilVariants = 37;

void stencil3x3(ConstTensorRef in, TensorRef out, const Filter3x3& filter, cudaStream_t stream,
                const StencilTuning& tuning);
// The layout the library runs for float32 or float64 input on the current device / on a device
// of this peak DRAM bandwidth (bytes per second). Throws ArgumentError for other types.
int stencil3x3_default_variant(DataType type);
int stencil3x3_default_variant(DataType type, double dram_bytes_per_second);

// ---- transpose (bench/tune/sm90_transpose_layouts.cu) -------------------------------------
struct TransposeTuning {
  int ctas_per_sm = 0;  // persistent CTAs per multiprocessor; 0: the layout's default (the
                        // layouts of one tile per CTA, variant 0 among them, take only 0)
  int panel_tiles = 0;  // tile rows walked together, down each column of tiles, then the next
                        // column; 0: all of them (column by column), 1: row-major order
  int variant = 0;      // shared-memory layout: 0 the library's choice (14; 16 for 1-byte), 1 ..
                        // kTransposeVariants - 1 fixed layouts (kernels/transpose/README.md)
};
inline constexpr int kTransposeVariants = 17;

void transpose(ConstTensorRef in, TensorRef out, cudaStream_t stream,
               const TransposeTuning& tuning);
// The layout the library runs for elements of this size.
int transpose_default_variant(std::uint32_t element_bytes);

}  // namespace tmakit::tune
