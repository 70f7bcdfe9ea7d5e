// The FP8 GEMM's configurations in host code (no GPU): each one's tile, epilogue boxes and
// abilities, which the plan and the launcher read; the ids the plan's rules name; the checks
// of a GemmTuning. gemm_plan.cpp defines the plan (gemm_fp8_plan), gemm_config_name,
// gemm_config_built and the checks. The kernels behind the ids: sm90_gemm_fp8.cu (the tiled
// kernel, 0, 1, 4, 5, 6, 9), sm90_gemm_fp8_small_m.cu (3, 8), sm90_gemm_fp8_waves.cu (7,
// 10); sm90_gemm_fp8.cu asserts at compile time that the tiled kernel's Configs and the
// two-wave kernel's tiles agree with their rows here.
#pragma once

#include <cstdint>

#include "gemm_launch.hpp"
#include "tmakit/kernels/gemm.hpp"

namespace tmakit::detail::gemm {

// K per k-block: 128 bytes of e4m3, one 128B swizzle span (the kernels' kBlockK).
inline constexpr int kKBlock = 128;

// A configuration as the plan and the launcher see it.
struct ConfigShape {
  const char* name;
  int block_m;     // rows of A (of D) per tile; 0 for the small-M kernel (its own plan)
  int block_n;     // rows of B (columns of D) per tile
  int d_box_cols;  // the epilogue's TMA-store box width
  bool promotes;   // runs GemmAccumulation::promoted (else fast only)
  bool splits_k;
  bool plain_stores;  // stores D without TMA where its rows are not whole 16-byte chunks
  // a configuration no longer built: why (its id and name stay, so a caller who forces it
  // is told), else nullptr
  const char* retired;
};
inline constexpr ConfigShape kConfigShapes[] = {
    {"m64n128", 64, 128, 64, true, true, true, nullptr},
    {"m128n128", 128, 128, 64, true, true, true, nullptr},
    {"m128n128c2", 0, 0, 0, false, false, false,
     "clusters of 2 sharing B ran 0.85-0.97x configuration 1's speed at every measured shape"},
    {"smallm", 0, 0, 0, true, true, true, nullptr},
    // three sets of 72 registers (sums and two partials) fit 240 per consumer thread
    {"m128n144", 128, 144, 48, true, true, true, nullptr},
    {"m64n64", 64, 64, 64, true, true, true, nullptr},
    // 128 sums per thread: no registers to promote into
    {"m128n256", 128, 256, 64, false, false, true, nullptr},
    {"m256n128", 256, 128, 64, true, false, false, nullptr},
    {"smallm128", 0, 0, 0, true, false, true, nullptr},
    {"m128n80", 128, 80, 40, true, true, true, nullptr},
    {"m128n256w", 128, 256, 64, true, false, false, nullptr}};
static_assert(sizeof(kConfigShapes) / sizeof(kConfigShapes[0]) == kGemmConfigs,
              "gemm.hpp's kGemmConfigs counts the configurations here");

// Configuration 3 is the small-M kernel (sm90_gemm_fp8_small_m.cu), and 8 the same on 128 rows
// of B per CTA: their rows here give a name and their abilities (that kernel has its own plan
// of tiles, gemm_launch.hpp, and stores D without TMA wherever it must).
constexpr int kSmallMConfig = 3;
constexpr int kSmallMWideConfig = 8;
constexpr bool small_m_config(int config) {
  return config == kSmallMConfig || config == kSmallMWideConfig;
}
// Rows of B per CTA of a small-M configuration (the plan's tiles, the launch's kernel).
constexpr int small_m_rows_b(int config) {
  return config == kSmallMWideConfig ? detail::kSmallMWideRowsB : detail::kSmallMRowsB;
}
// Configuration 5, 64 x 64 tiles: what the plan takes when 64 x 128 tiles are too few and
// its own fit in one round on the SMs.
constexpr int kSmallTileConfig = 5;
// Configuration 4, 128 x 144 tiles: where they take a round less than 128 x 128 tiles.
constexpr int kWide144Config = 4;
// Configuration 6, 128 x 256 tiles: fast accumulation where they fill the SMs.
constexpr int kWideConfig = 6;
// Configuration 7, 256 x 128 tiles in two waves (sm90_gemm_fp8_waves.cuh): promotion where
// they fill the SMs.
constexpr int kWavesConfig = 7;
// Configuration 9, 128 x 80 tiles: where 128 x 128 ones would leave SMs idle.
constexpr int kNarrowConfig = 9;
// Configuration 10, 128 x 256 tiles in two waves along N: promotion at M <= 128 where they
// fill the SMs.
constexpr int kWavesNConfig = 10;

// A plan's work units: one per whole tile, and one per split of K of each split tile.
constexpr std::int64_t plan_units(const GemmPlan& plan) {
  return plan.tiles - plan.split_tiles + plan.split_tiles * plan.splits;
}

// The checks of a GemmTuning, each throwing ArgumentError naming the field; gemm_fp8 runs
// them before it asks the device anything, gemm_fp8_plan before it plans.
void check_config(const GemmTuning& tuning);
void check_splits(const GemmTuning& tuning, std::uint64_t k);
// Configuration 3 (the small-M kernel) takes M <= 128 and K split over a cluster of 1, 2, 4
// or 8 CTAs (0: chosen); configuration 8 (its 128 rows of B per CTA) M <= 64 and no split.
void check_small_m_tuning(int config, std::uint64_t m, std::int64_t k_blocks,
                          const GemmTuning& tuning);
void check_accumulation(const GemmTuning& tuning);
// A tiled configuration's own limits, forced or chosen (after check_accumulation): no split
// of K where it has none, no promotion where its registers cannot hold it.
void check_config_tuning(int config, const GemmTuning& tuning);

}  // namespace tmakit::detail::gemm
