// The GPU tests' cap on the memory-bound kernels' grids (0: none): one-tile-per-CTA grids, so
// that small tensors exercise the walk that grids past 2^31 - 1 CTAs need, and the row-class
// transpose's persistent grid, so that each CTA walks many tiles (tests/gpu: CappedGrid*).
// Inside the library only (not installed): the kernels pass it to tile_grid.
#pragma once

#include <atomic>
#include <cstdint>

namespace tmakit::detail {

std::atomic<std::int64_t>& grid_cap_for_tests();

// tile_grid's cap as the kernels read it at launch.
inline std::int64_t grid_cap() {
  return grid_cap_for_tests().load(std::memory_order_relaxed);
}

}  // namespace tmakit::detail
