// Which V x V block each consumer thread of the transpose moves, and where its 16-byte rows
// sit in the input and output tiles (unswizzled offsets; the kernel passes them through the
// swizzle function). Host and device, so host tests check coverage and bank conflicts.
//
// A tile is TileRows (128 or 256) input rows x 128 bytes. Groups of 8V rows (V = 16 / element size) form one
// output box: 8V output rows x 128 bytes. Within a group, block (a, j) covers input rows
// a*V .. a*V+V-1 and 16-byte chunk j. Threads t = 0..7 of quarter-warp d take a = t and
// j = t ^ d: with the 128B swizzle (chunk ^= row % 8) the eight 16-byte accesses of every
// quarter-warp fall in eight different chunk positions, for loads and stores alike.
#pragma once

#include <cstdint>

#include "tmakit/swizzle.hpp"  // TMAKIT_HOST_DEVICE

namespace tmakit::detail::transpose {

struct BlockCoord {
  std::uint32_t group;  // 8V-row group of the tile = output box
  std::uint32_t a;      // block row in the group (input rows a*V ..)
  std::uint32_t j;      // 16-byte chunk of the input row (input columns j*V ..)
};

template <int E, int TileRows = 128>
struct BlockMapping {
  static constexpr int kV = 16 / E;                   // elements per 16 bytes
  static constexpr int kGroupElems = 8 * kV;          // rows of a group = elements in 128 B
  static constexpr int kGroups = TileRows / kGroupElems;  // groups in a tile
  static constexpr std::uint32_t kGroupBytes = static_cast<std::uint32_t>(kGroupElems) * 128u;
  static constexpr int kBlocksPerTile = 64 * kGroups;

  TMAKIT_HOST_DEVICE static constexpr BlockCoord block(std::uint32_t b) {
    const std::uint32_t q = b % 64;
    const std::uint32_t t = q % 8;
    const std::uint32_t d = q / 8;
    return {b / 64, t, t ^ d};
  }
  // Input tile: row i (0..V-1) of block bc, its chunk j.
  TMAKIT_HOST_DEVICE static constexpr std::uint32_t in_offset(BlockCoord bc, int i) {
    return (bc.group * kGroupElems + bc.a * kV + static_cast<std::uint32_t>(i)) * 128u +
           bc.j * 16u;
  }
  // Output tile: group's box, output row j*V + k, chunk a (input rows a*V ..).
  TMAKIT_HOST_DEVICE static constexpr std::uint32_t out_offset(BlockCoord bc, int k) {
    return bc.group * kGroupBytes + (bc.j * kV + static_cast<std::uint32_t>(k)) * 128u +
           bc.a * 16u;
  }
};

}  // namespace tmakit::detail::transpose
