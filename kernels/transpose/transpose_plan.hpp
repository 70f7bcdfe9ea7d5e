// What the transpose's launcher runs, as a pure function of the element size (tested on the
// host).
#pragma once

#include <cstdint>

namespace tmakit::detail::transpose {

// The shipped layouts (sm90_transpose.cuh): one tile per CTA, the output tile written over its
// own input stage, 128 input rows.
enum class PlannedLayout {
  one_tile_in_place_128x256,  // OneTileInPlace128x256: 256-byte tiles, three CTAs' registers
  one_tile_in_place_128x128,  // OneTileInPlace128x128: 128-byte tiles, four CTAs' registers
};

// NOTE: one tile per CTA measured 2-5% faster than every persistent ring on H100 and H200, and
// 1-byte elements preferred the narrower tile (kernels/transpose/README.md has the runs).
constexpr PlannedLayout plan_layout(std::uint32_t element_bytes) {
  return element_bytes == 1 ? PlannedLayout::one_tile_in_place_128x128
                            : PlannedLayout::one_tile_in_place_128x256;
}

}  // namespace tmakit::detail::transpose
