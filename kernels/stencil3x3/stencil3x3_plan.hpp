// What the 3x3 stencil's launcher runs on views TMA can describe, as a pure function of the
// device's memory system, and the plain kernel's strip shape by image size and how it lays a
// block's warps (tested on the host).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tmakit::detail::stencil3x3 {

// The shipped layouts: the TMA kernel's (sm90_stencil3x3.cuh: runs of two tiles per CTA
// through two paired stages, tile rows of 512 bytes), or the plain kernel with 16-byte runs
// (plain_stencil3x3.cu).
enum class PlannedLayout {
  run2_rows32,    // RunRows32: 32 rows per tile
  run2_rows16,    // RunRows16: 16 rows per tile
  plain_vector16, // launch_plain_vector: no TMA, 16-byte loads and stores
};

// The TMA kernel's layout. NOTE: the memory system decides (kernels/stencil3x3/README.md has
// the runs): 32-row tiles led on H100-class memory (3.35 TB/s), 16-row tiles on H200-class
// (4 TB/s and more), for both element types.
constexpr PlannedLayout plan_tma_layout(double dram_bytes_per_second) {
  return dram_bytes_per_second >= 4e12 ? PlannedLayout::run2_rows16 : PlannedLayout::run2_rows32;
}

// NOTE: on H200-class memory the plain kernel with 16-byte runs led the TMA kernel for both
// types at every size measured (16384^2: float32 0.965 against 0.926x memcpy, float64 0.966
// against 0.931; kernels/stencil3x3/README.md). H100-class memory keeps the TMA kernel (0.97x
// memcpy there): the 16-byte form has not been measured on it.
constexpr PlannedLayout plan_layout(double dram_bytes_per_second) {
  return dram_bytes_per_second >= 4e12 ? PlannedLayout::plain_vector16
                                       : plan_tma_layout(dram_bytes_per_second);
}

// The plain kernel's warps side by side along a strip (its template argument WarpsX), for a
// row of `spans` warp spans: as many as there are spans, rounded up to 1, 2 or 4, else all 8
// of a block; the block's other warps take the next strips. NOTE: with 8 warps along a strip
// always, a 512-column float32 image left 6 of 8 idle (0.65x memcpy at 16 x 512 x 512, 0.92x
// with two along a strip; kernels/stencil3x3/README.md).
constexpr int plain_warps_along_strip(std::int64_t spans) {
  return spans <= 1 ? 1 : spans <= 2 ? 2 : spans <= 4 ? 4 : 8;
}

// Whether the 16-byte form takes an aligned image of `bytes` bytes of `element_bytes`-byte
// elements whose rows end in a part warp span (those columns then take a second launch, of
// the 1-element form); where it does not, the 1-element form takes every column in one launch.
// NOTE: below these sizes that second launch cost more than the 16-byte runs won (float32
// 4000 x 4000: 36.6 us for the 1-element form alone, 38.9 for both; 8192 x 8000: 136.2
// against 131.8; float64 1024 x 3008: 16.5 against 17.1, 2048 x 4000: 39.2 against 37.7;
// README.md, "Rows that end in a part span").
constexpr bool vector_form_with_part_span_takes(std::uint64_t bytes,
                                                std::uint32_t element_bytes) {
  return bytes >= (element_bytes == 8 ? std::uint64_t{48} << 20 : std::uint64_t{128} << 20);
}

// A strip shape of the plain kernel: the output rows of a warp's strip, and the runs a lane
// holds (a run is one element, or 16 bytes in the 16-byte form).
struct PlainStrip {
  int rows;
  int runs;
};

// The shapes the plain kernel is built in, one list a form, largest first. NOTE: the first
// led on large images (1-element form: 8 x 4 of 4-32 rows and 1-8 runs at 8191 x 8193, both
// types; 16-byte form: 4 x 2 of 4-32 rows (float32) or 2-8 (float64) and 1-2 runs at 16384^2;
// README.md): more registers cost more than they hide. On small images the grid it makes is a few warps an SM, each a
// long chain of loads before its first sum, and the smaller shapes ran up to 2.4x faster
// (100 x 100 float32: 1.94 us at 1 x 1 against 4.64 at 8 x 4; README.md, "Small images").
inline constexpr PlainStrip kElementStrips[] = {{8, 4}, {4, 2}, {2, 2}, {1, 1}};
inline constexpr PlainStrip kVectorStrips[] = {{4, 2}, {2, 2}, {1, 1}};

// The columns a warp of strip shape `s` writes of each row, `run` columns a run.
constexpr std::int64_t plain_span(PlainStrip s, int run) {
  return std::int64_t{32} * s.runs * run;
}

// The warps a launch of strip shape `s` makes over `images` images of `rows` x `columns`,
// `run` columns a run.
constexpr std::int64_t plain_warps(PlainStrip s, std::int64_t images, std::int64_t rows,
                                   std::int64_t columns, int run) {
  const std::int64_t span = plain_span(s, run);
  return images * ((rows + s.rows - 1) / s.rows) * ((columns + span - 1) / span);
}

// NOTE: the fewest warps an SM at which a larger strip shape still led a smaller one in the
// sweep of README.md, "Small images" (132 SMs: 513 x 1025 float32 at 8 x 4, 585 warps, level
// with 4 x 2; 255 x 257 at 8 x 4, 96 warps, 2.0x slower than 2 x 2).
inline constexpr std::int64_t kPlainMinWarpsPerSm = 4;

// The index in `shapes` of the strip shape a launch takes: the first (largest) that makes
// at least kPlainMinWarpsPerSm warps an SM of `sms`, else the last.
template <std::size_t N>
constexpr std::size_t plain_strip(const PlainStrip (&shapes)[N], std::int64_t images,
                                  std::int64_t rows, std::int64_t columns, int run, int sms) {
  std::size_t i = 0;
  while (i + 1 < N &&
         plain_warps(shapes[i], images, rows, columns, run) < kPlainMinWarpsPerSm * sms) {
    ++i;
  }
  return i;
}

}  // namespace tmakit::detail::stencil3x3
