// A GEMM launch's units of work and the output tile each one computes (host and device, so
// the kernels and the host tests share one mapping). A unit is a whole output tile, or one
// share of K of a split tile: the first whole_tiles units are whole tiles; each tile after
// them is `splits` consecutive units (a split tail: the last round's few tiles spread over
// the SMs, or every tile where whole_tiles is 0). Tiles are taken in groups of kGroupM tile
// rows, down a group's rows first, then along N, so that the CTAs running at the same time
// share rows of A and of B in L2.
#pragma once

#include <cstdint>

#include "tmakit/swizzle.hpp"  // TMAKIT_HOST_DEVICE

namespace tmakit::detail::gemm {

inline constexpr int kGroupM = 8;

// The launch's tiles and how they split (the kernels' Params has the same members).
struct UnitGrid {
  std::int32_t tiles_m, tiles_n;  // output tiles down M and along N
  std::int32_t whole_tiles;       // units [0, whole_tiles) are whole tiles
  std::int32_t splits;            // shares of K per tile after them
  std::int32_t k_blocks;          // 128-deep k-blocks of K
  // 1: the split tiles (every tile: whole_tiles 0) in pairs of neighbouring ones, 2p and
  // 2p + 1, whose units alternate, share by share (split s of tile 2p, then of 2p + 1), so
  // that units 2i and 2i + 1 are the same share of K of two tiles on one column of B
  std::int32_t split_pairs = 0;
};

struct Unit {
  std::int32_t tm, tn;         // the output tile: tile row and tile column
  std::int32_t split, splits;  // this unit's share of K, of `splits` (0 of 1: whole)
  std::int32_t slot;           // a split tile's index among the split ones (split-K state)
  std::int32_t kb_begin, kb_end;
};

// Unit u (0 <= u < whole_tiles + splits * (tiles - whole_tiles)). Split s takes k-blocks
// [s * KB / S, (s + 1) * KB / S): never empty, since S <= KB.
// NOTE: the quotients are unsigned 32-bit ones, a whole group's by its constant row count (a
// shift), and the k-block range is divided only for split units: a unit's decode runs on the
// producer's and the consumers' paths once per unit, where signed and 64-bit divisions showed
// in the time of short-K calls (kernels/gemm/EXPERIMENTS.md, "A unit's decode and the
// epilogue's scale of 1").
// `Grid`: UnitGrid, or anything with its members (the kernels pass their Params, read where
// they lie).
template <class Grid>
TMAKIT_HOST_DEVICE constexpr Unit unit_of(const Grid& g, std::int64_t u) {
  Unit r{};
  std::int32_t tile = static_cast<std::int32_t>(u);
  r.split = 0;
  r.splits = 1;
  r.slot = 0;
  r.kb_begin = 0;
  r.kb_end = g.k_blocks;
  if (u >= g.whole_tiles) {
    const std::int64_t v = u - g.whole_tiles;
    if (g.split_pairs != 0) {
      const auto w = static_cast<std::uint32_t>(v);
      const std::uint32_t per_pair = 2u * static_cast<std::uint32_t>(g.splits);
      const std::uint32_t pair = w / per_pair;
      const std::uint32_t in_pair = w - pair * per_pair;
      r.slot = static_cast<std::int32_t>(2u * pair + (in_pair & 1u));
      r.split = static_cast<std::int32_t>(in_pair >> 1);
    } else {
      r.slot = static_cast<std::int32_t>(v / g.splits);
      r.split = static_cast<std::int32_t>(v % g.splits);
    }
    tile = g.whole_tiles + r.slot;
    r.splits = g.splits;
    r.kb_begin =
        static_cast<std::int32_t>(static_cast<std::int64_t>(r.split) * g.k_blocks / r.splits);
    r.kb_end = static_cast<std::int32_t>(static_cast<std::int64_t>(r.split + 1) * g.k_blocks /
                                         r.splits);
  }
  const auto t = static_cast<std::uint32_t>(tile);
  const auto per_group = static_cast<std::uint32_t>(kGroupM * g.tiles_n);
  const std::uint32_t group = t / per_group;
  const std::uint32_t first_m = group * kGroupM;
  const std::uint32_t in_group = t - group * per_group;
  const std::uint32_t left = static_cast<std::uint32_t>(g.tiles_m) - first_m;
  const bool whole = left >= static_cast<std::uint32_t>(kGroupM);
  const std::uint32_t rows = whole ? static_cast<std::uint32_t>(kGroupM) : left;
  const std::uint32_t tn =
      whole ? in_group / static_cast<std::uint32_t>(kGroupM) : in_group / rows;
  r.tm = static_cast<std::int32_t>(first_m + (in_group - tn * rows));
  r.tn = static_cast<std::int32_t>(tn);
  return r;
}

}  // namespace tmakit::detail::gemm
