// Which V x V block each consumer thread of the transpose moves, and where its 16-byte rows
// sit in the input and output tiles (unswizzled offsets; the kernel passes them through the
// swizzle function). Host and device, so host tests check coverage and bank conflicts.
//
// A tile is TileRows (128 or 256) input rows x Slices * 128 bytes, loaded as Slices boxes of
// TileRows rows x 128 bytes, one after the other in shared memory. Groups of 8V input rows
// (V = 16 / element size) form one output box: Slices * 8V output rows x 128 bytes, the
// output rows of slice s stacked after those of slice s - 1 (they are adjacent rows of the
// output). Within a group of a slice, block (a, j) covers input rows a*V .. a*V+V-1 and
// 16-byte chunk j. Threads t = 0..7 of quarter-warp d take a = t and j = t ^ d: with the
// 128B swizzle (chunk ^= row % 8) the eight 16-byte accesses of every quarter-warp fall in
// eight different chunk positions, for loads and stores alike.
#pragma once

#include <cstdint>

#include "tmakit/swizzle.hpp"  // TMAKIT_HOST_DEVICE

namespace tmakit::detail::transpose {

struct BlockCoord {
  std::uint32_t slice;  // 128-byte input column slice of the tile (its own input box)
  std::uint32_t group;  // 8V-row group of the tile = output box
  std::uint32_t a;      // block row in the group (input rows a*V ..)
  std::uint32_t j;      // 16-byte chunk of the slice's input row (input columns j*V ..)
};

template <int E, int TileRows = 128, int Slices = 1>
struct BlockMapping {
  static constexpr int kV = 16 / E;                       // elements per 16 bytes
  static constexpr int kGroupElems = 8 * kV;              // rows of a group = elements in 128 B
  static constexpr int kGroups = TileRows / kGroupElems;  // groups (output boxes) in a tile
  static constexpr int kSlices = Slices;
  static constexpr std::uint32_t kGroupBytes = static_cast<std::uint32_t>(kGroupElems) * 128u;
  static constexpr std::uint32_t kSliceBytes = static_cast<std::uint32_t>(TileRows) * 128u;
  static constexpr std::uint32_t kOutBoxBytes = kGroupBytes * Slices;  // Slices * 8V rows
  static constexpr std::uint32_t kTileBytes = kSliceBytes * Slices;
  static constexpr int kBlocksPerSlice = 64 * kGroups;
  static constexpr int kBlocksPerTile = kBlocksPerSlice * Slices;
  static_assert(TileRows % kGroupElems == 0, "a tile holds whole groups of 8V rows");

  TMAKIT_HOST_DEVICE static constexpr BlockCoord block(std::uint32_t b) {
    const std::uint32_t q = b % 64;
    const std::uint32_t t = q % 8;
    const std::uint32_t d = q / 8;
    return {b / kBlocksPerSlice, b % kBlocksPerSlice / 64, t, t ^ d};
  }
  // Input tile: row i (0..V-1) of block bc, its chunk j, in the slice's box.
  TMAKIT_HOST_DEVICE static constexpr std::uint32_t in_offset(BlockCoord bc, int i) {
    return bc.slice * kSliceBytes +
           (bc.group * kGroupElems + bc.a * kV + static_cast<std::uint32_t>(i)) * 128u + bc.j * 16u;
  }
  // Output tile: group's box, output row slice*8V + j*V + k, chunk a (input rows a*V ..).
  TMAKIT_HOST_DEVICE static constexpr std::uint32_t out_offset(BlockCoord bc, int k) {
    return bc.group * kOutBoxBytes +
           (bc.slice * kGroupElems + bc.j * kV + static_cast<std::uint32_t>(k)) * 128u + bc.a * 16u;
  }
  // Where output element (row r, column c) of the tile sits: box c / 8V, row r, its bytes.
  TMAKIT_HOST_DEVICE static constexpr std::uint32_t out_element_offset(std::uint32_t r,
                                                                       std::uint32_t c) {
    return c / kGroupElems * kOutBoxBytes + r * 128u + c % kGroupElems * E;
  }
};

}  // namespace tmakit::detail::transpose
