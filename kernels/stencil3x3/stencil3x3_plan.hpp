// What the 3x3 stencil's launcher runs, as a pure function of the device (tested on the host).
#pragma once

namespace tmakit::detail::stencil3x3 {

// The shipped layouts (sm90_stencil3x3.cuh): runs of two tiles per CTA through two paired
// stages, tile rows of 512 bytes.
enum class PlannedLayout {
  run2_rows32,  // RunRows32: 32 rows per tile
  run2_rows16,  // RunRows16: 16 rows per tile
};

// NOTE: the memory system decides (kernels/stencil3x3/README.md has the runs): 32-row tiles
// led on H100-class memory (3.35 TB/s), 16-row tiles on H200-class (4 TB/s and more), for
// both element types.
constexpr PlannedLayout plan_layout(double dram_bytes_per_second) {
  return dram_bytes_per_second >= 4e12 ? PlannedLayout::run2_rows16 : PlannedLayout::run2_rows32;
}

}  // namespace tmakit::detail::stencil3x3
