// The row-class transpose's plan and index mapping (sm90_transpose_row_classes.cu), pure
// functions on the host and the device, so that the host tests play the kernel's mapping out
// element by element (tests/host/test_kernels_row_classes.cpp).
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
inline constexpr int kChunkBytes = 16;   // what one lane stores
inline constexpr int kMaxBoxRows = 256;  // TMA's boxDim limit (T7)

// A tile of E-byte elements: RowBytes of each of its in rows (its out rows), and a span of
// SpanBytes of each out row. A span starts on SpanAlignBytes (a 32-byte sector or a 128-byte
// line), up to that many bytes before the tile's first in row, so that every store covers
// whole sectors (lines); the tile so holds kLeadRows in rows more than it writes.
// WalkRows: consecutive tiles take neighbouring columns of one span (else neighbouring spans
// down one column of tiles). L2PromotionBytes: the class maps' L2 promotion (0: none, 64,
// 128 or 256 bytes). Stages: 1, one tile per CTA; else each CTA of a persistent grid walks
// tiles through a ring of Stages tiles, the next ones loading while it writes one.
// MinBlocks: CTAs per SM that the registers must leave room for (__launch_bounds__), and the
// persistent grid's CTAs per SM. Threads: a CTA's.
template <int E, int RowBytes, int SpanBytes, int SpanAlignBytes, bool WalkRows,
          int L2PromotionBytes, int Stages, int MinBlocks, int Threads = 256>
struct Geometry {
  static constexpr int kElementBytes = E;
  static constexpr int kSpanAlignBytes = SpanAlignBytes;
  static constexpr bool kWalkRows = WalkRows;
  static constexpr int kL2PromotionBytes = L2PromotionBytes;
  static constexpr int kStages = Stages;
  static constexpr int kMinBlocks = MinBlocks;
  static constexpr int kThreads = Threads;
  static constexpr int kCols = RowBytes / E;                   // in's columns = out's rows
  static constexpr int kBoxRowBytes = RowBytes + 16;           // + up to 15 bytes of skew
  static constexpr int kSpanRows = SpanBytes / E;              // in rows one span writes
  static constexpr int kLeadRows = SpanAlignBytes / E;         // read before the span
  static constexpr int kLocalRows = kSpanRows + kLeadRows;     // in rows of a tile
  static constexpr int kChunkElems = kChunkBytes / E;
  static constexpr int kChunks = SpanBytes / kChunkBytes;      // per out row and tile
  static constexpr int kTileBytes = kLocalRows * kBoxRowBytes;  // what TMA writes of a tile
  // a stage: each class's rows start on 128 bytes (TMA, D1; class_bytes), so a stage keeps
  // room for up to 127 bytes of padding after each of 16 classes
  static constexpr int kSmemBytes = (kTileBytes + kMaxClasses * 128 + 127) / 128 * 128;
  // a warp's lanes: 4 out rows x 8 chunks
  static constexpr int kRowGroups = kCols / 4;
  static constexpr int kChunkSteps = kChunks / 8;
  static_assert(RowBytes % 16 == 0, "a tile's columns start on 16 bytes (O1)");
  static_assert(kCols % 4 == 0 && kChunks % 8 == 0, "a warp: 4 out rows x 8 chunks");
  static_assert(SpanAlignBytes % 32 == 0 && SpanBytes % SpanAlignBytes == 0,
                "spans start on whole sectors");
  static_assert(kSpanRows % kMaxClasses == 0 && kLeadRows % kMaxClasses == 0,
                "a tile's rows are whole cycles of classes from a multiple of 16");
  static_assert(Stages >= 1 && Threads % 32 == 0 && Threads <= 1024, "a ring; whole warps");
  // (+ 2 KB a CTA: its static shared memory and the 1 KB the system reserves)
  static_assert(MinBlocks * (Stages * kSmemBytes + 2048) <= 228 * 1024,
                "MinBlocks CTAs' rings fit an SM's shared memory");
};

// The tiles the launcher runs (kernels/transpose/README.md, "Row classes": sweeps of in-row
// widths 32-192 bytes, spans of 256-1024 bytes, span alignments, walks, L2 promotions, rings
// and CTAs per SM at 8191 x 8193 on H200).
// - u8: 96 x 384 on 32-byte sectors, two stages, two CTAs an SM: 1.15-1.18x the speed of one
//   tile per CTA at 96 x 512 on lines; rings measured slower for bf16 (0.80-0.92x).
// - bf16: 256 x 384 on lines, walked down columns, no promotion, one tile per CTA (three CTAs
//   an SM by shared memory): 1.5-2.5% faster than 192 x 512 at every class count (a box row's
//   16 bytes of skew are a smaller share of 272 bytes than of 208).
using U8Tile = Geometry<1, 96, 384, 32, true, 128, 2, 2>;
using U16Tile = Geometry<2, 256, 384, 128, false, 0, 1, 1>;

// K: the classes of a row pitch (1 where the pitch is a multiple of 16 bytes).
TMAKIT_HOST_DEVICE constexpr std::uint32_t classes_of(std::uint64_t row_pitch_bytes) {
  std::uint32_t g = 16;
  while (row_pitch_bytes % g != 0) g /= 2;
  return 16 / g;
}

// Bytes of each class's rows of a tile in shared memory (class j's at j times this).
template <class G>
TMAKIT_HOST_DEVICE constexpr int class_bytes(std::uint32_t classes) {
  return (G::kLocalRows / static_cast<int>(classes) * G::kBoxRowBytes + 127) / 128 * 128;
}

// Rows of one TMA box: a class's rows of a tile, halved until within TMA's limit.
template <class G>
TMAKIT_HOST_DEVICE constexpr std::int32_t box_rows_of(std::uint32_t classes) {
  std::int32_t rows = G::kLocalRows / static_cast<std::int32_t>(classes);
  while (rows > kMaxBoxRows) rows /= 2;
  return rows;
}

// Bank conflicts of the gather. A warp's 8 chunk lanes of one out row (lane / 4 = 0..7) read,
// at each load, element b of their chunks: rows kChunkElems / K class rows apart in one
// class, whose offsets meet on one bank wherever they are equal modulo 128 bytes. With few
// classes (u8: 1 or 2, u16: 1) that step is a whole multiple of 128 bytes and all 8 meet. So
// there the chunk lanes turn: lane group c gathers its elements from element K c on (mod
// kChunkElems), one class row further per group, and turns the gathered chunk back before
// the store (turn_chunk_back).
// conflict_ways: how many of 8 lanes step_rows box rows apart meet on one bank.
template <class G>
TMAKIT_HOST_DEVICE constexpr int conflict_ways(std::uint32_t step_rows) {
  const std::uint32_t step_words = step_rows * G::kBoxRowBytes / 4;
  std::uint32_t seen = 0;  // bit b: some lane's offset is b banks
  int distinct = 0;
  for (std::uint32_t m = 0; m < 8; ++m) {
    const std::uint32_t bank = m * step_words % 32;
    if ((seen >> bank & 1u) == 0) ++distinct;
    seen |= 1u << bank;
  }
  return 8 / distinct;
}

// Elements by which lane group c's gather turns per group (0: it does not turn).
template <class G>
TMAKIT_HOST_DEVICE constexpr int gather_turn(std::uint32_t classes) {
  const auto rows = static_cast<std::uint32_t>(G::kChunkElems) / classes;
  return conflict_ways<G>(rows) == 8 ? static_cast<int>(classes) : 0;
}

// The element a lane of lane group `group` gathers at its load b (0 <= b < kChunkElems).
template <class G>
TMAKIT_HOST_DEVICE constexpr int gather_element(int b, int group, std::uint32_t classes) {
  return (b + gather_turn<G>(classes) * group) % G::kChunkElems;
}

// How many ways a gather load's chunk lanes meet on one bank (turned where they turn: one
// class row further per lane group).
template <class G>
TMAKIT_HOST_DEVICE constexpr int gather_conflict_ways(std::uint32_t classes) {
  const auto rows = static_cast<std::uint32_t>(G::kChunkElems) / classes;
  return conflict_ways<G>(gather_turn<G>(classes) != 0 ? rows + 1 : rows);
}

// A chunk gathered from element `turn` on (bytes t[0..15]: t[k] = element byte k + turn mod
// 16), put back in order: byte k of the result is t[(k - turn) mod 16]. Words little-endian.
TMAKIT_HOST_DEVICE constexpr void turn_chunk_back(std::uint32_t (&w)[4], std::uint32_t turn_bytes) {
  const std::uint32_t words = turn_bytes / 4 % 4, shift = turn_bytes % 4 * 8;
  std::uint32_t x[4], y[4];
  // NOTE: selects, not a dynamically indexed array, which would go to local memory
  for (int q = 0; q < 4; ++q) x[q] = (words & 1u) ? w[(q + 3) % 4] : w[q];
  for (int q = 0; q < 4; ++q) y[q] = (words & 2u) ? x[(q + 2) % 4] : x[q];
  for (int q = 0; q < 4; ++q) {
    const std::uint32_t lo = y[(q + 3) % 4], hi = y[q];
    // (hi:lo << shift)'s high word: a funnel shift
    w[q] = shift == 0 ? hi : (hi << shift) | (lo >> (32 - shift));
  }
}

// NOTE: a class count whose gather meets 8 ways on a bank ran slower than the plain kernel
// before the turn (u8 at 2 classes 0.45x memcpy against its 0.61x, and at 1 class, a pitch of
// whole 16 bytes from a start off 16, 0.42x against 0.57x; bf16 at 1 class 0.68x against
// 0.79x), 4 ways or fewer faster (u8 at 4 classes 0.69x against 0.61x, bf16 at 2 classes
// 0.84x against 0.78x): README.md, "Row classes", "Which class counts".
inline constexpr int kMaxGatherConflictWays = 4;

// NOTE: the turned gather of 2-byte elements (one class) ran slower than the plain kernel on
// small views and faster on large ones (H200, views from a start one element in: 4096 x 4095,
// 731 tiles, 0.73x memcpy against the plain kernel's 0.76x; 6144 x 6143, 1600 tiles, 0.79x
// against 0.77x; 8192 x 8191 0.82x against 0.78x): it takes such views from 8 tiles an SM on.
// 1-byte elements ran faster at every size measured (1023 to 8191 rows; README.md, "Which
// class counts").
inline constexpr int kMinTilesPerSmTurnedU16 = 8;

// Whether G's kernel takes a view of `classes` classes and `tiles` tiles on `sm_count` SMs.
template <class G>
TMAKIT_HOST_DEVICE constexpr bool takes_classes(std::uint32_t classes, std::int64_t tiles,
                                                int sm_count) {
  if (gather_conflict_ways<G>(classes) > kMaxGatherConflictWays) return false;
  if (G::kElementBytes == 2 && gather_turn<G>(classes) != 0) {
    return tiles >= static_cast<std::int64_t>(kMinTilesPerSmTurnedU16) * sm_count;
  }
  return true;
}

struct Plan {
  std::uint32_t classes = 0;  // K, 1..16
  std::int32_t box_rows = 0;  // rows of one TMA box: a class's rows of a tile, or a half...
  std::int32_t tiles_x = 0;   // tiles across in's columns
  std::int32_t tiles_y = 0;   // spans down each out row
};

// The plan of in's rows x cols of E-byte elements `row_pitch` bytes apart.
template <class G>
constexpr Plan plan(std::uint64_t rows, std::uint64_t cols, std::uint64_t row_pitch) {
  Plan p;
  p.classes = classes_of(row_pitch);
  p.box_rows = box_rows_of<G>(p.classes);
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
// offset in its sector (line) of SpanAlignBytes, the same for every span of the row.
template <class G>
TMAKIT_HOST_DEVICE constexpr std::int32_t lead_elements(std::uint64_t out_row_address) {
  return static_cast<std::int32_t>(out_row_address % G::kSpanAlignBytes) / G::kElementBytes;
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
