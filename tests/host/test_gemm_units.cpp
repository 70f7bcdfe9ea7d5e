// The GEMM's units of work (kernels/gemm/gemm_units.hpp), the mapping the tiled and two-wave
// kernels decode on the device: every output tile computed once, a split tile's shares of K
// in order and covering K, tiles in groups of kGroupM tile rows; and the plan's grids.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "gemm/gemm_configs.hpp"
#include "gemm/gemm_plan.hpp"
#include "gemm/gemm_units.hpp"
#include "tmakit/kernels/gemm.hpp"

namespace tmakit {
namespace {

using detail::gemm::kGroupM;
using detail::gemm::Unit;
using detail::gemm::unit_of;
using detail::gemm::UnitGrid;

std::string describe(const UnitGrid& g) {
  return std::to_string(g.tiles_m) + " x " + std::to_string(g.tiles_n) + " tiles, " +
         std::to_string(g.whole_tiles) + " whole, " + std::to_string(g.splits) + " splits, " +
         std::to_string(g.k_blocks) + " k-blocks";
}

// Plays every unit of grid g out: each tile once (whole, or as `splits` shares of K that
// follow each other in order and cover [0, k_blocks) without overlap; with split_pairs, the
// shares of tiles 2p and 2p + 1 alternating).
void expect_every_tile_once(const UnitGrid& g) {
  const std::int64_t tiles = static_cast<std::int64_t>(g.tiles_m) * g.tiles_n;
  const std::int64_t units = g.whole_tiles + (tiles - g.whole_tiles) * g.splits;
  std::vector<int> seen(static_cast<std::size_t>(tiles), 0);
  for (std::int64_t u = 0; u < units; ++u) {
    const Unit w = unit_of(g, u);
    ASSERT_GE(w.tm, 0) << describe(g) << ", unit " << u;
    ASSERT_LT(w.tm, g.tiles_m) << describe(g) << ", unit " << u;
    ASSERT_GE(w.tn, 0) << describe(g) << ", unit " << u;
    ASSERT_LT(w.tn, g.tiles_n) << describe(g) << ", unit " << u;
    const auto tile = static_cast<std::size_t>(w.tm) * g.tiles_n + w.tn;
    if (u < g.whole_tiles) {
      EXPECT_EQ(w.splits, 1);
      EXPECT_EQ(w.split, 0);
      EXPECT_EQ(w.kb_begin, 0);
      EXPECT_EQ(w.kb_end, g.k_blocks);
      EXPECT_EQ(seen[tile], 0) << describe(g) << ", unit " << u << ": tile again";
      seen[tile] = g.splits;  // (whole: counts as all its shares)
      continue;
    }
    const std::int64_t v = u - g.whole_tiles;
    EXPECT_EQ(w.splits, g.splits);
    if (g.split_pairs != 0) {
      EXPECT_EQ(w.split, v % (2 * g.splits) / 2) << describe(g) << ", unit " << u;
      EXPECT_EQ(w.slot, v / (2 * g.splits) * 2 + v % 2) << describe(g) << ", unit " << u;
    } else {
      EXPECT_EQ(w.split, v % g.splits) << describe(g) << ", unit " << u;
      EXPECT_EQ(w.slot, v / g.splits) << describe(g) << ", unit " << u;
    }
    EXPECT_EQ(seen[tile], w.split) << describe(g) << ", unit " << u << ": shares out of order";
    ++seen[tile];
    EXPECT_LT(w.kb_begin, w.kb_end) << describe(g) << ", unit " << u << ": an empty share";
    if (w.split == 0) {
      EXPECT_EQ(w.kb_begin, 0);
    }
    if (w.split + 1 == w.splits) {
      EXPECT_EQ(w.kb_end, g.k_blocks);
    }
    if (w.split > 0) {  // (the tile's share before: the unit before, or two before in pairs)
      EXPECT_EQ(w.kb_begin, unit_of(g, u - (g.split_pairs != 0 ? 2 : 1)).kb_end)
          << describe(g) << ", unit " << u;
    }
  }
  for (std::int64_t t = 0; t < tiles; ++t) {
    EXPECT_EQ(seen[static_cast<std::size_t>(t)], g.splits)
        << describe(g) << ": tile " << t / g.tiles_n << ", " << t % g.tiles_n;
  }
}

TEST(GemmUnits, EveryTileOnceEveryShareOfKInOrder) {
  for (std::int32_t tiles_m : {1, 2, 7, 8, 9, 16, 17, 23}) {
    for (std::int32_t tiles_n : {1, 3, 8, 13}) {
      const std::int32_t tiles = tiles_m * tiles_n;
      for (std::int32_t k_blocks : {1, 2, 5, 56}) {
        for (std::int32_t splits : {1, 2, 3, 4, 16}) {
          if (splits > k_blocks) continue;
          for (std::int32_t whole : {tiles, tiles - 1, tiles / 2, 0}) {
            if (whole < 0 || (splits == 1 && whole != tiles)) continue;
            expect_every_tile_once({tiles_m, tiles_n, whole, splits, k_blocks});
          }
          // split tiles in pairs: every tile split, an even number of them
          if (splits > 1 && tiles % 2 == 0) {
            expect_every_tile_once({tiles_m, tiles_n, 0, splits, k_blocks, 1});
          }
        }
      }
    }
  }
}

// Tiles walk down a group of kGroupM tile rows, then along N; the last group holds the rows
// left (fewer than kGroupM). The same order written plainly, with signed quotients.
TEST(GemmUnits, GroupsOfTileRowsDownThenAlong) {
  ASSERT_EQ(kGroupM, 8);
  for (std::int32_t tiles_m : {1, 5, 8, 12, 16, 22, 32, 33, 64, 257}) {
    for (std::int32_t tiles_n : {1, 2, 17, 56, 256, 1025}) {
      const UnitGrid g{tiles_m, tiles_n, tiles_m * tiles_n, 1, 4};
      for (std::int32_t t = 0; t < tiles_m * tiles_n; ++t) {
        const std::int32_t per_group = kGroupM * tiles_n;
        const std::int32_t first_m = t / per_group * kGroupM;
        const std::int32_t rows = std::min(kGroupM, tiles_m - first_m);
        const std::int32_t in_group = t % per_group;
        const Unit w = unit_of(g, t);
        ASSERT_EQ(w.tm, first_m + in_group % rows) << describe(g) << ", tile " << t;
        ASSERT_EQ(w.tn, in_group / rows) << describe(g) << ", tile " << t;
      }
    }
  }
  // the first units of a wide grid: down the group's eight rows, then the next column
  const UnitGrid g{20, 100, 2000, 1, 8};
  for (int t = 0; t < 16; ++t) {
    EXPECT_EQ(unit_of(g, t).tm, t % 8);
    EXPECT_EQ(unit_of(g, t).tn, t / 8);
  }
  // the last group's four rows (16..19)
  EXPECT_EQ(unit_of(g, 1600).tm, 16);
  EXPECT_EQ(unit_of(g, 1603).tm, 19);
  EXPECT_EQ(unit_of(g, 1604).tm, 16);
  EXPECT_EQ(unit_of(g, 1604).tn, 1);
}

// The plan's grid of units as the launch hands it to the kernels (plan_unit_grid) covers D
// once and K in every tile.
TEST(GemmUnits, EveryPlanCoversItsOutput) {
  struct Shape {
    std::uint64_t m, n, k;
  };
  for (const Shape s : {Shape{4096, 32768, 512}, Shape{4096, 7168, 16384}, Shape{128, 2112, 7168},
                        Shape{128, 24576, 1536}, Shape{1000, 3000, 2000}, Shape{300, 129, 4096},
                        Shape{129, 4096, 4096}, Shape{2048, 2048, 256}}) {
    for (const GemmScaleRecipe recipe :
         {GemmScaleRecipe::tensor, GemmScaleRecipe::row, GemmScaleRecipe::block}) {
      const GemmPlan p = gemm_fp8_plan({s.m, s.n, s.k, 0, 132, 0, {}, recipe, true});
      if (detail::gemm::small_m(p.config)) continue;  // (its tiles are its own)
      const UnitGrid g = detail::gemm::plan_unit_grid(p, s.m, s.n, s.k);
      ASSERT_EQ(static_cast<std::int64_t>(g.tiles_m) * g.tiles_n, p.tiles) << describe(g);
      expect_every_tile_once(g);
    }
  }
}

// Rule G1 (clusters of 2): wherever the plan pairs CTAs, the CTAs 2j and 2j + 1 of the grid
// read the same tile of B, and the same share of K of it, in every round (units 2j + r *
// grid and 2j + 1 + r * grid: the same tile column, neighbouring rows), on the grid the
// launch hands the kernels (plan_unit_grid), for every recipe and over shapes with many
// rounds, one round, K split in every tile, a last group of fewer than kGroupM rows of tiles.
TEST(GemmUnits, ClusteredPairsShareTheirTilesOfB) {
  int clustered = 0, split = 0;
  for (const std::uint64_t m : {128u, 256u, 384u, 1000u, 1536u, 4096u}) {
    for (const std::uint64_t n : {1024u, 2112u, 4096u, 7168u, 24576u}) {
      for (const std::uint64_t k : {512u, 2048u, 7168u}) {
        for (const GemmScaleRecipe recipe :
             {GemmScaleRecipe::tensor, GemmScaleRecipe::row, GemmScaleRecipe::block}) {
          const GemmPlan p = gemm_fp8_plan({m, n, k, 0, 132, 0, {}, recipe, true});
          if (p.cluster != 2) continue;
          ++clustered;
          EXPECT_STREQ(p.cluster_rule, "G1");
          const UnitGrid g = detail::gemm::plan_unit_grid(p, m, n, k);
          ASSERT_EQ(g.split_pairs, p.splits > 1 ? 1 : 0) << describe(g);
          ASSERT_TRUE(p.splits == 1 || p.split_tiles == p.tiles) << describe(g);
          ASSERT_EQ(p.grid % 2, 0u);
          if (p.splits > 1) ++split;
          expect_every_tile_once(g);
          const std::int64_t units = p.tiles * p.splits;
          for (std::int64_t cta = 0; cta < p.grid; cta += 2) {
            for (std::int64_t u = cta; u + 1 < units; u += p.grid) {
              const Unit first = unit_of(g, u), second = unit_of(g, u + 1);
              ASSERT_EQ(first.tn, second.tn) << describe(g) << ", units " << u << ", " << u + 1;
              ASSERT_NE(first.tm, second.tm) << describe(g) << ", units " << u << ", " << u + 1;
              ASSERT_EQ(first.kb_begin, second.kb_begin) << describe(g) << ", unit " << u;
              ASSERT_EQ(first.kb_end, second.kb_end) << describe(g) << ", unit " << u;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(clustered, 20);
  EXPECT_GT(split, 3);
}

}  // namespace
}  // namespace tmakit
