// The row-class transpose's plan and index mapping (sm90_transpose_row_classes.cu), pure
// functions on the host and the device, so that the host tests play the kernel's mapping out
// element by element (tests/host/test_transpose_row_classes.cpp).
//
// In's rows r = j mod K lie K pitches apart; with K = 16 / gcd(pitch, 16) that is a multiple
// of 16 bytes, a stride TMA takes (T6). So class j's rows form a tensor of their own, whose
// base, rounded down to 16 bytes, is `skew` bytes before its first row's start: the class's
// tensor map reads each row from `skew` bytes before the row, and a box at x = c0 (16-byte
// aligned, O1) holds the row's columns c0.. at `skew` bytes into its shared row.
#pragma once

#include <cstdint>

#include "tmakit/swizzle.hpp"  // TMAKIT_HOST_DEVICE

namespace tmakit::detail::transpose::row_classes {

inline constexpr int kMaxClasses = 16;
inline constexpr int kLineBytes = 128;   // each span of an out row starts on a line
inline constexpr int kChunkBytes = 16;   // what one lane stores
inline constexpr int kMaxBoxRows = 256;  // TMA's boxDim limit (T7)
inline constexpr int kThreads = 256;

// A tile of E-byte elements: RowBytes of each of its in rows (its out rows), and a span of
// SpanBytes of each out row, which starts up to a line before the tile's first in row; the
// tile so holds kLeadRows in rows more than it writes. WalkRows: consecutive tiles take
// neighbouring columns of one span (else neighbouring spans down one column of tiles).
// MinBlocks: CTAs per SM that the registers must leave room for (__launch_bounds__).
// L2PromotionBytes: the class maps' L2 promotion (0: none, 64, 128 or 256 bytes).
template <int E, int RowBytes, int SpanBytes, bool WalkRows, int MinBlocks, int L2PromotionBytes>
struct Geometry {
  static constexpr int kElementBytes = E;
  static constexpr bool kWalkRows = WalkRows;
  static constexpr int kMinBlocks = MinBlocks;
  static constexpr int kL2PromotionBytes = L2PromotionBytes;
  static constexpr int kCols = RowBytes / E;                   // in's columns = out's rows
  static constexpr int kBoxRowBytes = RowBytes + 16;           // + up to 15 bytes of skew
  static constexpr int kSpanRows = SpanBytes / E;              // in rows one span writes
  static constexpr int kLeadRows = kLineBytes / E;             // read before the span
  static constexpr int kLocalRows = kSpanRows + kLeadRows;     // in rows of a tile
  static constexpr int kChunkElems = kChunkBytes / E;
  static constexpr int kChunks = SpanBytes / kChunkBytes;      // per out row and tile
  static constexpr int kSmemBytes = kLocalRows * kBoxRowBytes;
  // a warp's lanes: 4 out rows x 8 chunks
  static constexpr int kRowGroups = kCols / 4;
  static constexpr int kChunkSteps = kChunks / 8;
  static_assert(RowBytes % 16 == 0, "a tile's columns start on 16 bytes (O1)");
  static_assert(kCols % 4 == 0 && kChunks % 8 == 0, "a warp: 4 out rows x 8 chunks");
  static_assert(SpanBytes % kLineBytes == 0, "spans are whole lines");
  static_assert(kLocalRows % kMaxClasses == 0, "a tile's rows are whole cycles of classes");
};

// The tiles the launcher runs (kernels/transpose/README.md, "Row classes": a sweep of
// in-row widths 32-192 bytes, spans of 256-1024 bytes, both walks and the L2 promotions at
// 8191 x 8193 on H200; u8 walked along rows 3% faster, bf16 down columns 1%; bf16 without
// promotion 3-4% faster than with 256 bytes, u8 with 128 bytes 1-3%).
using U8Tile = Geometry<1, 96, 512, true, 2, 128>;
using U16Tile = Geometry<2, 192, 512, false, 1, 0>;

// K: the classes of a row pitch (1 where the pitch is a multiple of 16 bytes).
TMAKIT_HOST_DEVICE constexpr std::uint32_t classes_of(std::uint64_t row_pitch_bytes) {
  std::uint32_t g = 16;
  while (row_pitch_bytes % g != 0) g /= 2;
  return 16 / g;
}

// Bytes of each class's rows of a tile in shared memory (class j's at j times this).
template <class G>
TMAKIT_HOST_DEVICE constexpr int class_bytes(std::uint32_t classes) {
  return G::kLocalRows / static_cast<int>(classes) * G::kBoxRowBytes;
}

struct Plan {
  std::uint32_t classes = 0;  // K, 2..16
  std::int32_t box_rows = 0;  // rows of one TMA box: a class's rows of a tile, or a half...
  std::int32_t tiles_x = 0;   // tiles across in's columns
  std::int32_t tiles_y = 0;   // spans down each out row
};

// The plan of in's rows x cols of E-byte elements `row_pitch` bytes apart.
template <class G>
constexpr Plan plan(std::uint64_t rows, std::uint64_t cols, std::uint64_t row_pitch) {
  Plan p;
  p.classes = classes_of(row_pitch);
  p.box_rows = G::kLocalRows / static_cast<std::int32_t>(p.classes);
  while (p.box_rows > kMaxBoxRows) p.box_rows /= 2;
  p.tiles_x = static_cast<std::int32_t>((cols + G::kCols - 1) / G::kCols);
  // the spans of an out row cover in rows -lead .. : every row once whatever the lead
  p.tiles_y = static_cast<std::int32_t>((rows + G::kLeadRows - 1 + G::kSpanRows - 1) /
                                        G::kSpanRows);
  return p;
}

// Tile t of the grid (x across in's columns, y down out's rows' spans), in G's walk.
struct TilePos {
  std::int32_t x, y;
};
template <class G>
TMAKIT_HOST_DEVICE constexpr TilePos tile_position(std::int32_t t, const Plan& p) {
  if constexpr (G::kWalkRows) {
    return {t % p.tiles_x, t / p.tiles_x};
  } else {
    return {t / p.tiles_y, t % p.tiles_y};
  }
}

// The first in row a tile's shared rows hold (local row 0): a multiple of 16 (so local row l
// is of class l mod K).
template <class G>
TMAKIT_HOST_DEVICE constexpr std::int32_t first_local_row(std::int32_t tile_y) {
  return tile_y * G::kSpanRows - G::kLeadRows;
}

// Elements by which an out row's spans start before multiples of kSpanRows: its start's
// offset in its 128-byte line (the same for every span of the row).
template <class G>
TMAKIT_HOST_DEVICE constexpr std::int32_t lead_elements(std::uint64_t out_row_address) {
  return static_cast<std::int32_t>(out_row_address % kLineBytes) / G::kElementBytes;
}

// Shared-memory byte offset of local row l, tile column col (skew: the class's).
template <class G>
TMAKIT_HOST_DEVICE constexpr std::uint32_t shared_offset(std::int32_t l, std::int32_t col,
                                                         std::uint32_t classes,
                                                         std::uint32_t skew) {
  const auto k = static_cast<std::int32_t>(classes);
  return static_cast<std::uint32_t>((l % k) * class_bytes<G>(classes) + (l / k) * G::kBoxRowBytes +
                                    col * G::kElementBytes) +
         skew;
}

}  // namespace tmakit::detail::transpose::row_classes
