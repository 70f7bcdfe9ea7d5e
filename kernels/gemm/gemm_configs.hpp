// The FP8 GEMM's configurations: ONE table. Each row is a configuration by name (its id is
// its place here, GemmTuning::config), the kernel that runs it and every number that kernel
// is instantiated with. The kernels' template configurations (sm90_gemm_fp8.cu), the launch
// table, the plan (gemm_plan.cpp), the CLI's --tune names, the bench's variants and the error
// messages all read it; nothing restates it. Host and device code (constexpr only).
#pragma once

#include <cstdint>
#include <string_view>

namespace tmakit::detail::gemm {

// K per k-block: 128 bytes of e4m3, one 128B swizzle span (every kernel's kBlockK).
inline constexpr int kKBlock = 128;

// The kernel that runs a configuration.
enum class Family {
  tiled,      // sm90_gemm_fp8_tiled.cuh: ConsumerWGs x 64 rows of A per tile, split K
  waves_m,    // sm90_gemm_fp8_waves.cuh: each math warpgroup's rows as two 64-row waves
  waves_n,    // the same kernel, the waves along N (two 128-column halves of a 256 tile)
  waves_1x3,  // the same kernel, three math warpgroups of one 64-row wave each
  small_m,    // sm90_gemm_fp8_small_m.cu: M <= 128, operands swapped, K split over a cluster
  pingpong,   // sm90_gemm_fp8_pingpong.cuh: a tile per math warpgroup, the two in turn
  retired,    // no longer built (its name stays, so that forcing it is answered)
};

struct ConfigRow {
  const char* name;  // one name everywhere: CLI, bench rows, errors, docs
  Family family;
  int block_m;     // rows of A (of D) per tile; 0 for the small-M kernel (its tiles are B's)
  int block_n;     // rows of B (columns of D) per tile; the small-M kernel: rows of B per CTA
  int stages;      // the ring's depth (the small-M kernel sizes its own: 0)
  int d_box_cols;  // the epilogue's TMA-store box width (bf16/fp16 columns)
  int d_staged;    // box buffers per consumer warpgroup (== block_n / d_box_cols: one pass;
                   // ping-pong: one 64-row half's boxes, or twice that, both halves')
  // The same tiles where CTAs take several tiles (a second form of the kernel; 0: none):
  // the ring's depth and the box buffers there.
  int rounds_stages;
  int rounds_d_staged;
  bool promotes;        // runs GemmAccumulation::promoted (every row runs fast)
  bool splits_k;        // may split K (tiled: through the workspace; small-M: over a cluster)
  bool plain_stores;    // stores D without TMA where its rows are not whole 16-byte chunks
  int max_m;            // the largest M it takes (0: any)
  const char* what;     // what it is for, one line (gemm_config_info, docs)
  const char* retired;  // why it is no longer built, else nullptr
};

// Ids by name: config::m128n128 is 1. The enumerators are the rows' names.
namespace config {
enum : int {
  m64n128,
  m128n128,
  m128n128c2,
  smallm,
  m128n144,
  m64n64,
  m128n256,
  m256n128,
  smallm128,
  m128n80,
  m128n256w,
  m192n128,
  m64n32,
  m128n192,
  m128n128pp,
  m128n128ppd,
  count
};
}  // namespace config

// NOTE: a tiled row's registers (setmaxnreg: 232 per consumer thread for two warpgroups of
// 128-column tiles, 240 otherwise) decide `promotes`: promotion holds the block_n / 2 sums and
// one or two partials of as many, and about 24 more. Up to 144 columns hold two partials (one
// k-block's wgmmas run while the last one's partial is added), 192 one (the warpgroup waits
// for its wgmmas before each add; the other warpgroup's run meanwhile), 256 none: fast
// accumulation only. The kernels assert that each row agrees with its instantiation.
inline constexpr ConfigRow kConfigs[] = {
    {"m64n128", Family::tiled, 64, 128, 8, 64, 2, 0, 0, true, true, true, 0,
     "64 x 128 tiles: M <= 256 where 128-row tiles would leave SMs idle", nullptr},
    {"m128n128", Family::tiled, 128, 128, 6, 64, 2, 0, 0, true, true, true, 0,
     "128 x 128 tiles: the default above M = 256", nullptr},
    {"m128n128c2", Family::retired, 0, 0, 0, 0, 0, 0, 0, false, false, false, 0,
     "clusters of two 128 x 128 tiles sharing B",
     "clusters of 2 sharing B ran 0.85-0.97x m128n128's speed at every measured shape"},
    {"smallm", Family::small_m, 0, 64, 0, 0, 0, 0, 0, true, true, true, 128,
     "M <= 128: 64 rows of B per CTA, A whole, K split over a cluster of 1, 2, 4 or 8", nullptr},
    {"m128n144", Family::tiled, 128, 144, 6, 48, 1, 0, 0, true, true, true, 0,
     "128 x 144 tiles: where they take fewer rounds than 128 x 128 ones", nullptr},
    {"m64n64", Family::tiled, 64, 64, 12, 64, 1, 0, 0, true, true, true, 0,
     "64 x 64 tiles: where 64 x 128 tiles are too few and these fit one round", nullptr},
    {"m128n256", Family::tiled, 128, 256, 4, 64, 2, 3, 4, false, false, true, 0,
     "128 x 256 tiles, fast accumulation only, no split of K", nullptr},
    {"m256n128", Family::waves_m, 256, 128, 4, 64, 2, 0, 0, true, false, false, 0,
     "256 x 128 tiles, two 64-row waves per warpgroup; D's rows whole 16-byte chunks", nullptr},
    {"smallm128", Family::small_m, 0, 128, 0, 0, 0, 0, 0, true, false, true, 64,
     "M <= 64: 128 rows of B per CTA as two waves, no split of K", nullptr},
    {"m128n80", Family::tiled, 128, 80, 7, 40, 2, 0, 0, true, true, true, 0,
     "128 x 80 tiles: where 128 x 128 tiles would leave SMs idle", nullptr},
    {"m128n256w", Family::waves_n, 128, 256, 4, 64, 2, 0, 0, true, false, false, 0,
     "128 x 256 tiles, two 128-column waves per warpgroup; D's rows whole 16-byte chunks", nullptr},
    {"m192n128", Family::waves_1x3, 192, 128, 4, 64, 2, 0, 0, true, false, false, 0,
     "192 x 128 tiles, three math warpgroups of one 64-row wave; D's rows whole 16-byte chunks",
     nullptr},
    {"m64n32", Family::tiled, 64, 32, 16, 32, 1, 0, 0, true, true, true, 0,
     "64 x 32 tiles: four times the CTAs of 64 x 128 ones on the same B", nullptr},
    {"m128n192", Family::tiled, 128, 192, 4, 64, 3, 0, 0, true, false, true, 0,
     "128 x 192 tiles, one partial product per promotion: where they take one round", nullptr},
    {"m128n128pp", Family::pingpong, 128, 128, 5, 64, 2, 0, 0, false, false, true, 0,
     "128 x 128 tiles, one per math warpgroup in turn (ping-pong), fast accumulation only: "
     "one warpgroup's epilogue under the other's wgmmas",
     nullptr},
    {"m128n128ppd", Family::pingpong, 128, 128, 5, 64, 4, 0, 0, false, false, true, 0,
     "the ping-pong tiles with both halves of D staged (a box pair each): each half's epilogue "
     "waits for its own boxes only, where the epilogue outlasts the other warpgroup's k-blocks",
     nullptr},
};
static_assert(sizeof(kConfigs) / sizeof(kConfigs[0]) == config::count,
              "a row for every configuration id");

constexpr const ConfigRow& row(int id) {
  return kConfigs[id];
}
constexpr bool built(int id) {
  return id >= 0 && id < config::count && kConfigs[id].family != Family::retired;
}
constexpr bool small_m(int id) {
  return kConfigs[id].family == Family::small_m;
}
constexpr bool two_waves(int id) {
  return kConfigs[id].family == Family::waves_m || kConfigs[id].family == Family::waves_n;
}
// Whether the two-wave kernel (sm90_gemm_fp8_waves.cuh) runs it: its two-wave rows and its
// three-warpgroup one.
constexpr bool waves_kernel(int id) {
  return two_waves(id) || kConfigs[id].family == Family::waves_1x3;
}

// NOTE: 128-block scales (GemmScaleRecipe::block) multiply each 128-deep partial sum by one
// scale of B per 128 rows: a configuration takes them where it promotes every 128 of K and
// knows each column's 128-row block of B. The tiled kernel does so where block_n divides 128
// (a tile lies within one block) or is a multiple of 64 (each 64-column piece of a tile does,
// as tiles start on multiples of 64: tiled_block_columns), with scale_a in any layout (its
// scale warp copies what TMA cannot load). The two-wave kernel (128-column waves, promoted
// every 256 of K without them) does so where TMA loads scale_a
// (GemmProblem::block_scale_a_tma). The small-M kernel is left out: its columns are rows of A,
// each needing its own scale at every promotion.
constexpr bool tiled_block_columns(int block_n) {
  return 128 % block_n == 0 || block_n % 64 == 0;
}
constexpr bool takes_block_scales(int id, bool scale_a_tma = false) {
  const ConfigRow& c = kConfigs[id];
  if (c.family == Family::tiled) return c.promotes && tiled_block_columns(c.block_n);
  return scale_a_tma && c.promotes && waves_kernel(id);
}

// The id of a configuration name, -1 for none.
constexpr int config_id(std::string_view name) {
  for (int id = 0; id < config::count; ++id) {
    if (name == kConfigs[id].name) return id;
  }
  return -1;
}
static_assert(config_id("m128n80") == config::m128n80 &&
                  config_id("m128n256w") == config::m128n256w &&
                  config_id("m192n128") == config::m192n128 &&
                  config_id("m128n192") == config::m128n192 &&
                  config_id("m128n128pp") == config::m128n128pp &&
                  config_id("m128n128ppd") == config::m128n128ppd,
              "the enumerators and the rows' names agree");

}  // namespace tmakit::detail::gemm
