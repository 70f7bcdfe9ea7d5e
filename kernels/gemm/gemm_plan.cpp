// The FP8 GEMM's plan (gemm_fp8_plan) and the checks of a call's arguments. Pure host code:
// the host tests call the plan for any device facts without a GPU. The plan's choices are an
// ordered table of rules with ids (kRules); each rule's measurement lives in
// kernels/gemm/EXPERIMENTS.md under the section the table names.
#include "gemm_plan.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "gemm_launch.hpp"
#include "tmakit/kernels/detail/launch_support.hpp"

namespace tmakit::detail::gemm {
namespace {

std::string config_label(int id) {
  return std::string("configuration ") + row(id).name;
}

// The configurations that take 128-block scales with scale_a in any layout, read from the
// table, smallest tiles first: "m64n32, m64n64, m64n128 or m128n128".
std::string any_layout_block_configs() {
  std::vector<int> ids;
  for (int id = 0; id < config::count; ++id) {
    if (built(id) && takes_block_scales(id)) ids.push_back(id);
  }
  std::stable_sort(ids.begin(), ids.end(), [](int a, int b) {
    return row(a).block_m * row(a).block_n < row(b).block_m * row(b).block_n;
  });
  std::string names;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    names += (i == 0 ? "" : i + 1 == ids.size() ? " or " : ", ") + std::string(row(ids[i]).name);
  }
  return names;
}

void check_operand_type(const char* arg, const ConstTensorRef& v) {
  if (v.type != DataType::uint8) {
    throw ArgumentError(std::string(arg) + ".type",
                        std::string(name(v.type)) +
                            " is not UINT8; pass e4m3 bits as UINT8 (fp8 travels as UINT8 "
                            "through TMA)");
  }
}

// ---- the checks of a GemmTuning, each naming its field --------------------------------------

void check_config(const GemmTuning& tuning) {
  if (tuning.config < -1 || tuning.config >= config::count) {
    throw ArgumentError("tuning.config",
                        std::to_string(tuning.config) + " is not a configuration; use -1 or 0.." +
                            std::to_string(config::count - 1) + " (gemm_config_id(name))");
  }
  if (tuning.config >= 0 && !built(tuning.config)) {
    throw ArgumentError("tuning.config", config_label(tuning.config) + " (" +
                                             std::to_string(tuning.config) +
                                             ") is no longer built: " + row(tuning.config).retired +
                                             " (kernels/gemm/EXPERIMENTS.md); use -1 or m128n128");
  }
}

void check_splits(const GemmTuning& tuning, std::uint64_t k) {
  const std::uint64_t k_blocks = (k + kKBlock - 1) / kKBlock;
  if (tuning.splits < 0 || static_cast<std::uint64_t>(tuning.splits) > k_blocks) {
    throw ArgumentError("tuning.splits", std::to_string(tuning.splits) +
                                             " is not 0 (chosen) or 1.." +
                                             std::to_string(k_blocks) + " (K's k-blocks of 128)");
  }
}

void check_accumulation(const GemmTuning& tuning) {
  if (tuning.accumulation != GemmAccumulation::promoted &&
      tuning.accumulation != GemmAccumulation::fast) {
    throw ArgumentError("tuning.accumulation",
                        std::to_string(static_cast<int>(tuning.accumulation)) +
                            " is not a GemmAccumulation; use promoted or fast");
  }
}

// The scale recipe: a GemmScaleRecipe; 128-block scales promote every 128 of K by definition,
// and a forced configuration must apply them.
void check_recipe(const GemmProblem& q) {
  check_scale_recipe(q.recipe, "scales.recipe");
  if (q.recipe != GemmScaleRecipe::block) return;
  if (q.tuning.accumulation != GemmAccumulation::promoted) {
    throw ArgumentError("tuning.accumulation",
                        "fast with 128-block scales, which are applied at each promotion (every "
                        "128 of K); use GemmAccumulation::promoted");
  }
  const int id = q.tuning.config;
  if (id >= 0 && built(id) && !takes_block_scales(id, q.block_scale_a_tma)) {
    if (takes_block_scales(id, true)) {
      throw ArgumentError("tuning.config",
                          config_label(id) +
                              " takes 128-block scales only where TMA loads scale_a: M-major "
                              "columns, 16-byte aligned, a multiple of 4 floats apart (at least "
                              "M); use " +
                              any_layout_block_configs() + ", or -1");
    }
    throw ArgumentError("tuning.config",
                        config_label(id) +
                            " does not take 128-block scales (they need promotion every 128 of "
                            "K, each 64-column piece of a tile within one 128-row block of B); "
                            "use " +
                            any_layout_block_configs() + ", or -1");
  }
}

// Whether a configuration runs `splits` asked for by GemmTuning::splits (0: none asked for):
// check_config_tuning's rules for them.
bool takes_splits(int id, int splits, std::int64_t k_blocks) {
  if (splits <= 1) return true;
  const ConfigRow& c = row(id);
  if (!c.splits_k) return false;
  return !small_m(id) || ((splits & (splits - 1)) == 0 && splits <= 8 && splits <= k_blocks);
}

// A configuration's own limits, forced or chosen: M, splits of K, promotion, D's stores.
void check_config_tuning(int id, const GemmProblem& q) {
  const ConfigRow& c = row(id);
  const GemmTuning& t = q.tuning;
  const std::int64_t k_blocks = static_cast<std::int64_t>((q.k + kKBlock - 1) / kKBlock);
  if (c.max_m != 0 && q.m > static_cast<std::uint64_t>(c.max_m)) {
    throw ArgumentError("tuning.config",
                        config_label(id) + " takes M <= " + std::to_string(c.max_m) + "; M is " +
                            std::to_string(q.m) + (id == config::smallm128 ? "; use smallm" : ""));
  }
  if (small_m(id)) {
    if (!c.splits_k && t.splits > 1) {
      throw ArgumentError("tuning.splits", std::to_string(t.splits) + ": " + config_label(id) +
                                               " does not split K; use splits 0 or 1, or "
                                               "configuration smallm");
    }
    if (t.splits > 0 && ((t.splits & (t.splits - 1)) != 0 || t.splits > 8 || t.splits > k_blocks)) {
      throw ArgumentError("tuning.splits", std::to_string(t.splits) + ": " + config_label(id) +
                                               " splits K over a cluster of 1, 2, 4 or 8 CTAs, "
                                               "at most " +
                                               std::to_string(k_blocks) + " (K's k-blocks)");
    }
    return;
  }
  if (t.splits > 1 && !c.splits_k) {
    throw ArgumentError("tuning.splits", config_label(id) + " does not split K; use splits 0 or 1");
  }
  if (!c.promotes && t.accumulation == GemmAccumulation::promoted) {
    // (a warpgroup's 64 rows of the tile, or, ping-pong, the whole 128-row tile)
    const int sums = c.family == Family::pingpong ? c.block_n : c.block_n / 2;
    throw ArgumentError("tuning.accumulation",
                        config_label(id) + " holds " + std::to_string(sums) +
                            " fp32 sums per thread and has no registers to promote into; use "
                            "GemmAccumulation::fast or another configuration");
  }
}

// D's rows are whole 16-byte chunks: TMA stores stop exactly at column N.
bool d_whole_chunks(const GemmProblem& q) {
  const std::uint64_t pitch = q.d_row_pitch_bytes != 0 ? q.d_row_pitch_bytes : q.n * 2;
  return (q.n * 2) % 16 == 0 && pitch % 16 == 0;
}

// ---- the facts the rules read ------------------------------------------------------------

struct Facts {
  const GemmProblem& q;
  std::uint64_t m, n, k;
  std::int64_t k_blocks;
  std::int64_t sm;
  bool forced;

  std::int64_t tiles_m(int id) const {
    return static_cast<std::int64_t>((m + row(id).block_m - 1) / row(id).block_m);
  }
  std::int64_t tiles(int id) const {
    return tiles_m(id) * static_cast<std::int64_t>((n + row(id).block_n - 1) / row(id).block_n);
  }
  // rounds of a configuration's tiles on the SMs (a CTA's last round ends the call)
  std::int64_t rounds(int id) const { return (tiles(id) + sm - 1) / sm; }
  bool one_round(int id) const { return rounds(id) == 1; }
  // CTAs that keep 3/4 of the SMs busy
  bool fills(std::int64_t ctas) const { return ctas * 4 >= sm * 3; }
  std::int64_t small_m_ctas() const {
    return static_cast<std::int64_t>((n + row(config::smallm).block_n - 1) /
                                     static_cast<std::uint64_t>(row(config::smallm).block_n));
  }
  // a last round of 128 x 128 tiles that keeps at most a quarter of the SMs busy, at long K
  std::int64_t tail_tiles() const {
    return tiles(config::m128n128) - (rounds(config::m128n128) - 1) * sm;
  }
  bool split_tail() const {
    return !forced && q.tuning.splits == 0 && m > 256 && rounds(config::m128n128) >= 2 &&
           tail_tiles() * 4 <= sm && k >= 6144;
  }
  // M fills more than 3/4 of the last 128-row tile
  bool rows_filled() const { return m % 128 == 0 || 4 * (m % 128) > 3 * 128; }
  // M fills more than half of the last 256-row tile
  bool waves_rows_half() const { return m % 256 == 0 || 2 * (m % 256) > 256; }
  bool promoted() const { return q.tuning.accumulation == GemmAccumulation::promoted; }
  // tiles of twice 128 x 128 pay where they fill 3/4 of the SMs (or, above M = 256, take
  // one round where 128 x 128 ones take two) and their rounds are at most 33/64 of
  // 128 x 128 tiles' (a split tail's last round counting a quarter)
  bool twice_tiles_pay(int id, int chosen) const {
    const std::int64_t quarter_rounds_1 = 4 * rounds(config::m128n128) - (split_tail() ? 3 : 0);
    const bool one_against_two =
        m > 256 && chosen == config::m128n128 && one_round(id) && rounds(config::m128n128) == 2;
    return (fills(tiles(id)) || one_against_two) && 256 * rounds(id) <= 33 * quarter_rounds_1;
  }
};

// ---- the configuration rules, in order: the last that applies decides --------------------

struct ConfigRule {
  PlanRule rule;
  int config;
  bool (*applies)(const Facts& f, int chosen);
};
constexpr int kUnset = -1;

const ConfigRule kConfigRules[] = {
    {{"C1", "a configuration forced by GemmTuning::config runs, whatever the shape", ""},
     kUnset,  // (the forced id: see plan_config)
     [](const Facts& f, int) { return f.forced; }},
    {{"C2",
      "M <= 64 with more 64-row tiles of B than SMs (and no split asked for): 128 rows of B per "
      "CTA, half the CTAs and so half the rounds",
      "The plan's rules"},
     config::smallm128,
     [](const Facts& f, int chosen) {
       return chosen == kUnset && f.m <= 64 && f.q.tuning.splits <= 1 && f.small_m_ctas() > f.sm;
     }},
    {{"C3",
      "M <= 64, or M <= 128 where one CTA per 64 rows of B fills 3/4 of the SMs in one round "
      "and K <= 4096 (at M = 128: 24576): the small-M kernel",
      "The plan's rules"},
     config::smallm,
     [](const Facts& f, int chosen) {
       // NOTE: at M = 128, K = 12288-24576: 1.04-1.22x faster in streams than the tiles
       // chosen without it, 0.94-1.01x call by call, in both modes (a fast-accumulation call
       // then promotes): a trade for the sustained case (kernels/gemm/README.md, "The small-M
       // kernel at M = 128 and long K")
       const std::uint64_t k_max = f.m < 128 ? 4096 : 24576;
       const bool fills = f.m <= 128 && f.k <= k_max && f.fills(f.small_m_ctas()) &&
                          f.small_m_ctas() <= f.sm;
       return chosen == kUnset && (f.m <= 64 || fills);
     }},
    {{"C4",
      "64 < M <= 256 where 64 x 128 tiles fill 3/4 of the SMs, or where neither they nor 64 x "
      "64 tiles in one round do: 64 x 128 tiles",
      "The plan's rules"},
     config::m64n128,
     [](const Facts& f, int chosen) { return chosen == kUnset && f.m <= 256; }},
    {{"C5",
      "64 < M <= 256 where 64 x 128 tiles take several rounds and 128 x 128 ones one, or M > "
      "224, or 96 < M <= 128 with rounds no longer than half the 64 x 128 tiles' (33/32): "
      "128 x 128 tiles",
      "The plan's rules"},
     config::m128n128,
     [](const Facts& f, int chosen) {
       if (chosen != config::m64n128 || !f.fills(f.tiles(config::m64n128))) return false;
       const bool half_rounds = 64 * f.rounds(config::m128n128) <= 33 * f.rounds(config::m64n128);
       return !f.one_round(config::m64n128) && (f.one_round(config::m128n128) || f.m > 224 ||
                                                (f.m > 96 && f.m <= 128 && half_rounds));
     }},
    {{"C6",
      "64 < M <= 256 where 64 x 128 tiles fill under 3/4 of the SMs and 64 x 64 ones fit one "
      "round: 64 x 64 tiles",
      "The plan's rules"},
     config::m64n64,
     [](const Facts& f, int chosen) {
       return chosen == config::m64n128 && !f.fills(f.tiles(config::m64n128)) &&
              f.one_round(config::m64n64);
     }},
    {{"C7", "M > 256: 128 x 128 tiles", "The plan's rules"},
     config::m128n128,
     [](const Facts&, int chosen) { return chosen == kUnset; }},
    {{"C8",
      "128 x 128 tiles that leave a quarter of the SMs idle in one round, or take two rounds "
      "where 128 x 80 ones take two too, with M filling 3/4 of the last row of tiles (no "
      "split tail): 128 x 80 tiles",
      "The plan's rules"},
     config::m128n80,
     [](const Facts& f, int chosen) {
       const bool one_round = !f.fills(f.tiles(config::m128n128)) &&
                              f.fills(f.tiles(config::m128n80)) && f.one_round(config::m128n80);
       const bool two_rounds = f.rounds(config::m128n128) == 2 && f.rounds(config::m128n80) == 2;
       return chosen == config::m128n128 && !f.split_tail() && f.rows_filled() &&
              (one_round || two_rounds);
     }},
    {{"C9",
      "256 < M <= 512 where 128 x 128 tiles would split K and 64 x 128 ones fill more than "
      "half the SMs in one round: 64 x 128 tiles, unsplit",
      "The plan past the bench's shapes"},
     config::m64n128,
     [](const Facts& f, int chosen) {
       return chosen == config::m128n128 && f.m > 256 && f.m <= 512 &&
              f.tiles(config::m128n128) * 2 <= f.sm && f.one_round(config::m64n128) &&
              f.tiles(config::m64n128) * 2 > f.sm;
     }},
    {{"C10",
      "fast accumulation where 128 x 256 tiles pay (their rounds at most 33/64 of 128 x 128 "
      "tiles'): 128 x 256 tiles",
      "The plan's rules"},
     config::m128n256,
     [](const Facts& f, int chosen) {
       return !f.promoted() && !small_m(chosen) && f.twice_tiles_pay(config::m128n256, chosen);
     }},
    {{"C11",
      "promotion in place of 128 x 128 tiles where 256 x 128 ones pay, M fills more than half "
      "their last row and N is a multiple of 8: 256 x 128 tiles in two waves",
      "The plan's rules"},
     config::m256n128,
     [](const Facts& f, int chosen) {
       return f.promoted() && chosen == config::m128n128 && f.n % 8 == 0 && f.waves_rows_half() &&
              f.twice_tiles_pay(config::m256n128, chosen);
     }},
    {{"C12",
      "promotion at M <= 128 where 128 x 256 tiles pay, M fills 3/4 of their rows, N is a "
      "multiple of 8 and K has 32 k-blocks or more: 128 x 256 tiles in two waves along N",
      "The plan's rules"},
     config::m128n256w,
     [](const Facts& f, int chosen) {
       return f.promoted() && !small_m(chosen) && f.m <= 128 && f.rows_filled() && f.n % 8 == 0 &&
              f.k_blocks >= 32 && f.twice_tiles_pay(config::m128n256w, chosen);
     }},
    {{"C13",
      "promotion above M = 256 where 256-row tiles would leave their last one half empty: "
      "128 x 256 tiles in two waves along N where they pay",
      "The plan past the bench's shapes"},
     config::m128n256w,
     [](const Facts& f, int chosen) {
       return f.promoted() && chosen == config::m128n128 && f.m > 256 && !f.waves_rows_half() &&
              f.n % 8 == 0 && f.twice_tiles_pay(config::m128n256w, chosen);
     }},
    {{"C14",
      "above M = 256 with 32 k-blocks or more, in place of 128 x 128 or 128 x 80 tiles, where "
      "128 x 144 tiles take at most 4/5 of 128 x 128 tiles' rounds: 128 x 144 tiles",
      "128 x 144 tiles again"},
     config::m128n144,
     [](const Facts& f, int chosen) {
       return !f.forced && f.m > 256 && f.k_blocks >= 32 &&
              (chosen == config::m128n128 || chosen == config::m128n80) &&
              5 * f.rounds(config::m128n144) <= 4 * f.rounds(config::m128n128);
     }},
    {{"C15",
      "a chosen configuration that stores D with TMA only, where D's rows are not whole "
      "16-byte chunks: 128 x 128 tiles (plain stores)",
      "Configurations"},
     config::m128n128,
     [](const Facts& f, int chosen) {
       return !f.forced && !row(chosen).plain_stores && !d_whole_chunks(f.q);
     }},
    {{"C16",
      "128-block scales at M <= 64 (the small-M kernel cannot apply them): 64 x 128 tiles",
      "Scale recipes"},
     config::m64n128,
     [](const Facts& f, int chosen) {
       return !f.forced && f.q.recipe == GemmScaleRecipe::block &&
              !takes_block_scales(chosen, f.q.block_scale_a_tma) && f.m <= 64;
     }},
    {{"C17",
      "128-block scales above M = 64 where the chosen configuration cannot apply them (tiles "
      "of B across 128-row blocks, the two-wave kernel where TMA cannot load scale_a): 128 x "
      "128 tiles",
      "Scale recipes"},
     config::m128n128,
     [](const Facts& f, int chosen) {
       return !f.forced && f.q.recipe == GemmScaleRecipe::block && !small_m(chosen) &&
              !takes_block_scales(chosen, f.q.block_scale_a_tma) && f.m > 64;
     }},
    {{"C18",
      "M <= 64 where smallm128 was chosen, 64-row tiles of B number at least 2.5 times the SMs "
      "and K <= 1536: 64 x 128 tiles in its place",
      "64 x 128 tiles at small M and wide N"},
     config::m64n128,
     [](const Facts& f, int chosen) {
       return chosen == config::smallm128 && f.k <= 1536 && 2 * f.small_m_ctas() >= 5 * f.sm;
     }},
    {{"C19",
      "128-block scales at M <= 64 where C16 took 64 x 128 tiles and K has more than 4 "
      "k-blocks: 64 x 64 tiles (twice the CTAs streaming B)",
      "128-block scales at M <= 128: the tiles"},
     config::m64n64,
     [](const Facts& f, int chosen) {
       return !f.forced && f.q.recipe == GemmScaleRecipe::block && f.m <= 64 &&
              chosen == config::m64n128 && f.k_blocks > 4;
     }},
    {{"C20",
      "128-block scales above M = 64 where the small-M kernel was chosen (it cannot apply "
      "them): 64 x 128 tiles, as many CTAs as it had, unsplit",
      "128-block scales at M <= 128: the tiles"},
     config::m64n128,
     [](const Facts& f, int chosen) {
       return !f.forced && f.q.recipe == GemmScaleRecipe::block && f.m > 64 && small_m(chosen);
     }},
    {{"C21",
      "128-block scales, or promoted per-tensor scales with K <= 2048 and row-wise ones with "
      "K <= 512, where 256 x 128 tiles were chosen and 192 x 128 ones take under 25/18 of "
      "their rounds, or (128-block) 128 x 128 tiles above M = 256 and they take at most 18/25 "
      "of theirs (a split tail's last round counting a quarter), D's rows whole 16-byte "
      "chunks: 192 x 128 tiles, three math warpgroups of one 64-row wave (no wave waits for "
      "another's promotion)",
      "Three math warpgroups: 192 x 128 tiles"},
     config::m192n128,
     [](const Facts& f, int chosen) {
       const bool block = f.q.recipe == GemmScaleRecipe::block;
       // (row-wise scales: level with 256 x 128 tiles at K = 1536, ahead at 512)
       const std::int64_t short_k_blocks =
           f.q.recipe == GemmScaleRecipe::tensor ? 16 : f.q.recipe == GemmScaleRecipe::row ? 4 : 0;
       const bool short_k = !block && f.promoted() && f.k_blocks <= short_k_blocks;
       if (f.forced || !(block || short_k) || !d_whole_chunks(f.q) ||
           (block && !takes_block_scales(config::m192n128, f.q.block_scale_a_tma))) {
         return false;
       }
       const std::int64_t rounds = f.rounds(config::m192n128);
       if (chosen == config::m256n128) return 18 * rounds < 25 * f.rounds(config::m256n128);
       if (!block) return false;
       // (128 x 128 tiles in quarter rounds, as twice_tiles_pay counts them)
       const std::int64_t quarters = 4 * f.rounds(config::m128n128) - (f.split_tail() ? 3 : 0);
       return chosen == config::m128n128 && f.m > 256 && 100 * rounds <= 18 * quarters;
     }},
    {{"C22",
      "fast accumulation at 96 <= M <= 128 with 4 to 8 k-blocks where 128 x 256 tiles were "
      "chosen (C10): 128 x 128 tiles",
      "Fast accumulation at M <= 128 and short K"},
     config::m128n128,
     [](const Facts& f, int chosen) {
       // NOTE: one row of tiles and a short K: 128 x 128 tiles (twice the rounds) ran
       // 1.02-1.12x faster than the 128 x 256 ones at M = 96 and 128; at M = 65 both ways
       // (1.03-1.06x faster at N x K = 32768 x 512, 1.07-1.13x slower at 57344 x 1024)
       return !f.forced && !f.promoted() && chosen == config::m128n256 && f.m >= 96 &&
              f.m <= 128 && f.k_blocks >= 4 && f.k_blocks <= 8;
     }},
    {{"C23",
      "128-block scales at M <= 64 where C19 took 64 x 64 tiles and they number at most half "
      "the SMs: 64 x 32 tiles (twice the CTAs streaming B)",
      "128-block scales at M <= 64: 64 x 32 tiles"},
     config::m64n32,
     [](const Facts& f, int chosen) {
       // NOTE: 1.04-1.07x faster in streams at 64 x {2112, 4096} x 7168 (33 and 64 tiles of
       // 64 x 64), level call by call; slower where 64 x 64 tiles number more (112 at N =
       // 7168: 7.0 against 8.6 us) (kernels/gemm/README.md)
       return !f.forced && f.q.recipe == GemmScaleRecipe::block && f.m <= 64 &&
              chosen == config::m64n64 && 2 * f.tiles(config::m64n64) <= f.sm;
     }},
    {{"C24",
      "promotion at 96 < M <= 128 with at least 8 k-blocks (and no split asked for) where "
      "128 x 192 tiles fill 3/4 of the SMs in one round: 128 x 192 tiles (each CTA reads its "
      "rows of B once; one partial per promotion)",
      "128 x 192 tiles: one round at M = 128"},
     config::m128n192,
     [](const Facts& f, int) {
       // NOTE: promoted, in streams 1.05-1.21x faster than the tiles chosen without it (64 x
       // 128, or 128 x 256 in two waves) at N = 20480-25344, K = 1536-16384, every recipe;
       // call by call 0.96-1.06x. Fast accumulation ran 0.96-0.97x call by call at 128 x
       // 24576 x 1536, and 4 k-blocks 0.98-1.05x: both left out (kernels/gemm/README.md,
       // "128 x 192 tiles: one round at M = 128")
       return !f.forced && f.promoted() && f.q.tuning.splits <= 1 && f.m > 96 && f.m <= 128 &&
              f.k_blocks >= 8 && f.one_round(config::m128n192) &&
              f.fills(f.tiles(config::m128n192));
     }},
    {{"C25",
      "fast accumulation with at most 32 k-blocks (K <= 4096) where 128 x 128 or 128 x 256 "
      "tiles were chosen, 128 x 128 tiles number at least twice the SMs and D's rows are whole "
      "16-byte chunks: ping-pong 128 x 128 tiles (each math warpgroup's epilogue under the "
      "other's wgmmas)",
      "Ping-pong tiles for fast accumulation"},
     config::m128n128pp,
     [](const Facts& f, int chosen) {
       // NOTE: 0.88-1.00x the time of the tiles chosen before at M >= 2048 and K <= 4096,
       // row-wise and per-tensor, call by call and in streams; at longer K 0.97-1.02x call by
       // call and 0.97-1.03x in streams; with fewer than two tiles per SM (M <= 1024 at N =
       // 4096) level or slower (kernels/gemm/README.md, "Ping-pong tiles for fast accumulation")
       return !f.forced && !f.promoted() && f.k_blocks <= 32 &&
              (chosen == config::m128n128 || chosen == config::m128n256) &&
              f.tiles(config::m128n128pp) >= 2 * f.sm && d_whole_chunks(f.q);
     }},
    {{"C26",
      "ping-pong tiles (C25) with at most 4 k-blocks (K <= 512): both halves of D staged "
      "(m128n128ppd: each half's epilogue waits for its own boxes' stores only)",
      "Ping-pong tiles at short K"},
     config::m128n128ppd,
     [](const Facts& f, int chosen) {
       // NOTE: at K <= 512 a warpgroup's epilogue outlasts the other's k-blocks: both halves
       // staged ran 0.93-1.00x the time at K = 512 (per-tensor and row-wise, call by call and
       // in streams); at K = 1024-4096 0.99-1.02x, per-tensor at K = 1024 1.01-1.02x
       // (kernels/gemm/README.md, "Ping-pong tiles at short K")
       return !f.forced && chosen == config::m128n128pp && f.k_blocks <= 4;
     }},
};

// ---- the splits rules ----------------------------------------------------------------------

const PlanRule kSplitsRules[] = {
    {"K1",
     "splits forced by GemmTuning::splits apply to every tile; with no configuration forced, "
     "only the configuration rules whose tiles take them apply",
     ""},
    {"K2",
     "the small-M kernel: a cluster of 8, 4 or 2 CTAs along K, the largest that keeps CTAs "
     "to half the SMs (at most K's k-blocks)",
     "The plan's rules"},
    {"K3", "smallm128 and the configurations that do not split K: no split", ""},
    {"K4",
     "a split tail: past one round of 128 x 128 tiles, a last round keeping at most a quarter "
     "of the SMs busy at K >= 6144 splits its tiles four ways",
     "A split tail"},
    {"K5",
     "too few tiles to give every SM one (tiles <= SMs / 2): split K so every SM streams a "
     "share of B, at least 4 k-blocks per split, at most 32 splits",
     "The plan's rules"},
    {"K6", "enough tiles: no split", ""},
};

// ---- the cluster rules ---------------------------------------------------------------------

const PlanRule kClusterRules[] = {
    {"G1",
     "the tiled kernel with K unsplit or split in every tile, an even number of rows of tiles "
     "and an even grid: clusters of 2 CTAs, whose neighbouring units read the same tile of B "
     "(and share of K), so that each pair runs on one GPC (also where a dependent launch's "
     "CTAs take the SMs the kernel before frees)",
     "Pairs of CTAs on one GPC"},
    {"G2", "the small-M kernel: a cluster of its splits of K (K2)", ""},
    {"G3", "otherwise: no cluster", ""},
};

std::vector<PlanRule> all_rules() {
  std::vector<PlanRule> r;
  for (const ConfigRule& c : kConfigRules) r.push_back(c.rule);
  for (const PlanRule& s : kSplitsRules) r.push_back(s);
  for (const PlanRule& g : kClusterRules) r.push_back(g);
  return r;
}


}  // namespace

int small_m_padded(std::uint64_t m) {
  for (int mp : {8, 16, 32, 64, 128}) {
    if (m <= static_cast<std::uint64_t>(mp)) return mp;
  }
  return 0;
}

int small_m_splits(std::uint64_t n, std::uint64_t k_blocks, int sm_count) {
  // NOTE: clusters pay only when the tiles alone would leave most SMs idle; with half of
  // them busy, one CTA per tile was as fast or faster (EXPERIMENTS.md, "The small-M
  // kernel's clusters").
  const auto rows = static_cast<std::uint64_t>(row(config::smallm).block_n);
  const std::uint64_t tiles = (n + rows - 1) / rows;
  for (int s : {8, 4, 2}) {
    if (static_cast<std::uint64_t>(s) <= k_blocks &&
        tiles * s <= static_cast<std::uint64_t>(sm_count) / 2) {
      return s;
    }
  }
  return 1;
}

int small_m_prefetch(std::uint64_t m, std::uint64_t rank_k_blocks, int splits, int rows_b,
                     double dram_bytes_per_second) {
  // NOTE: measured in streams of calls on both memory systems (EXPERIMENTS.md, "The small-M
  // prefetch" and "The L2 prefetch for 128 rows of B"): 4 k-blocks in clusters; at one CTA
  // per 64-row tile, on H100-class memory 4 for 16 < M <= 64 and 2 above (at M <= 16 it hurt
  // after memory-bound work), on H200-class memory none (the next kernel's late start cost
  // more); 128 rows of B per CTA leave SMs free for the next call's CTAs: 2 on both. Never
  // more than half of a rank's k-blocks.
  int depth = 0;
  if (rows_b == row(config::smallm128).block_n) {
    depth = 2;
  } else if (splits > 1) {
    depth = 4;
  } else if (dram_bytes_per_second < 4e12) {
    depth = m <= 16 ? 0 : m <= 64 ? 4 : 2;
  }
  return static_cast<int>(
      std::min<std::uint64_t>(static_cast<std::uint64_t>(depth), rank_k_blocks / 2));
}

const PlanRule* plan_rules(std::size_t* count) {
  static const std::vector<PlanRule> rules = all_rules();
  *count = rules.size();
  return rules.data();
}

// The kernels number units in 32 bits (UnitGrid, unit_of). Before any SM count is known: the
// fewest tiles any configuration that takes M makes of D (or the configuration asked for),
// times the splits asked for, already past 2^31 - 1 is refused here; plan_checked checks the
// plan's own count.
void check_unit_count(const GemmProblem& q) {
  std::uint64_t fewest = UINT64_MAX;
  int by = -1;
  for (int id = 0; id < config::count; ++id) {
    const ConfigRow& c = row(id);
    if (!built(id) || (q.tuning.config >= 0 && id != q.tuning.config) ||
        (c.max_m != 0 && q.m > static_cast<std::uint64_t>(c.max_m))) {
      continue;
    }
    const auto bn = static_cast<std::uint64_t>(c.block_n);
    const std::uint64_t along_n = (q.n + bn - 1) / bn;
    const std::uint64_t tiles =
        c.block_m == 0 ? along_n
                       : (q.m + static_cast<std::uint64_t>(c.block_m) - 1) /
                             static_cast<std::uint64_t>(c.block_m) * along_n;
    if (tiles < fewest) fewest = tiles, by = id;
  }
  const auto most = static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max());
  const std::uint64_t splits = q.tuning.splits > 1 ? static_cast<std::uint64_t>(q.tuning.splits) : 1;
  if (by < 0 || fewest <= most / splits) return;  // (extents below 2^31: no product wraps)
  const bool splits_at_fault = fewest <= most;
  throw ArgumentError(splits_at_fault ? "tuning.splits" : "n",
                      "M x N = " + std::to_string(q.m) + " x " + std::to_string(q.n) + " makes " +
                          std::to_string(fewest) + " tiles of " + config_label(by) +
                          (q.tuning.config >= 0 ? "" : " (the fewest of any configuration)") +
                          (splits > 1 ? ", each in " + std::to_string(splits) + " splits"
                                      : std::string()) +
                          ", more than the kernels number in 32 bits (2^31 - 1)" +
                          (splits_at_fault ? "; ask for fewer splits, or none (0)" : ""));
}

void check_tuning(const GemmProblem& q) {
  if (q.m == 0 || q.n == 0 || q.k == 0) {
    throw ArgumentError(q.m == 0 ? "m" : q.n == 0 ? "n" : "k", "is 0; a GEMM needs M, N, K >= 1");
  }
  for (const auto& [name, extent] :
       {std::pair{"m", q.m}, std::pair{"n", q.n}, std::pair{"k", q.k}}) {
    // NOTE: gemm_fp8's operands are refused past this (check_view); the plan's tile and grid
    // arithmetic (in 64 bits) holds below it
    if (extent > kMaxExtent) {
      throw ArgumentError(name, std::to_string(extent) +
                                    " exceeds 2^31 - 4096, the largest extent gemm_fp8 takes");
    }
  }
  if (q.sm_count < 1) {
    throw ArgumentError("sm_count", std::to_string(q.sm_count) + " is not a multiprocessor count");
  }
  check_config(q.tuning);
  check_splits(q.tuning, q.k);
  check_unit_count(q);
  check_accumulation(q.tuning);
  check_recipe(q);
  if (q.tuning.config >= 0) {
    check_config_tuning(q.tuning.config, q);
    // NOTE: TMA stores write whole 16-byte chunks: D's rows must be whole chunks (N * 2 and
    // the pitch multiples of 16) for the stores to stop exactly at column N; the two-wave
    // kernel has no plain stores
    if (!row(q.tuning.config).plain_stores && !d_whole_chunks(q)) {
      const std::uint64_t pitch = q.d_row_pitch_bytes != 0 ? q.d_row_pitch_bytes : q.n * 2;
      throw ArgumentError("tuning.config",
                          config_label(q.tuning.config) +
                              " stores D with TMA only, and D's rows are not whole 16-byte "
                              "chunks (N = " +
                              std::to_string(q.n) + ", row pitch " + std::to_string(pitch) +
                              " bytes); use another configuration, or N and a pitch that are "
                              "multiples of 8 elements");
    }
  } else if (q.m <= 64 && q.recipe != GemmScaleRecipe::block) {
    // NOTE: the plan takes a small-M configuration for every M <= 64 (but with 128-block
    // scales, which it never runs: C16, C19, C23): its rules for the splits apply whether it
    // was forced or chosen (C2, C3), before any SM count is known
    try {
      check_config_tuning(q.tuning.splits <= 1 ? config::smallm128 : config::smallm, q);
    } catch (const ArgumentError& e) {
      throw ArgumentError(e.argument(),
                          std::string(e.what()).substr(e.argument().size() + 2) +
                              " (tuning.config -1: the plan takes smallm for M <= 64)");
    }
  }
}

GemmPlan plan_checked(const GemmProblem& q) {
  const Facts f{q,
                q.m,
                q.n,
                q.k,
                static_cast<std::int64_t>((q.k + kKBlock - 1) / kKBlock),
                q.sm_count,
                q.tuning.config >= 0};
  GemmPlan plan;
  // the configuration: every rule in order, the last that applies decides
  int chosen = kUnset;
  for (const ConfigRule& r : kConfigRules) {
    // NOTE: splits asked for (K1) with no configuration forced: only rules whose tiles take
    // that many splits apply, so that the plan's choice runs them rather than refusing them
    if (!f.forced && r.config != kUnset && !takes_splits(r.config, q.tuning.splits, f.k_blocks)) {
      continue;
    }
    if (!r.applies(f, chosen)) continue;
    chosen = r.config == kUnset ? q.tuning.config : r.config;
    plan.config_rule = r.rule.id;
    if (f.forced) break;
  }
  plan.config = chosen;
  // (a chosen configuration's own limits: the rules above keep to them)
  check_config_tuning(plan.config, q);
  const ConfigRow& c = row(plan.config);
  const bool fell_back = std::strcmp(plan.config_rule, "C15") == 0;
  plan.d_tma_store = d_whole_chunks(q);

  // the splits of K
  const char* splits_id = "K6";
  if (small_m(plan.config)) {
    if (q.tuning.splits > 0) {
      plan.splits = q.tuning.splits;
      splits_id = "K1";
    } else if (!c.splits_k) {
      plan.splits = 1;
      splits_id = "K3";
    } else {
      plan.splits = small_m_splits(q.n, static_cast<std::uint64_t>(f.k_blocks), q.sm_count);
      splits_id = "K2";
    }
    plan.tiles = static_cast<std::int64_t>((q.n + c.block_n - 1) / c.block_n);
    plan.split_tiles = plan.splits > 1 ? plan.tiles : 0;
    plan.grid = static_cast<unsigned>(plan.tiles * plan.splits);
    // the L2 prefetch: for a dependent launch (without one the wait returns at once) whose
    // CTAs fit one round on the SMs (measured only there)
    if (q.tuning.overlap_launch && plan.tiles * plan.splits <= q.sm_count) {
      plan.prefetch_k_blocks =
          small_m_prefetch(q.m, static_cast<std::uint64_t>(f.k_blocks) / plan.splits, plan.splits,
                           c.block_n, q.dram_bytes_per_second);
    }
    plan.splits_rule = splits_id;
    plan.cluster = plan.splits;
    plan.cluster_rule = "G2";
    return plan;
  }
  plan.tiles = f.tiles(plan.config);
  if (q.tuning.splits > 0) {
    plan.splits = q.tuning.splits;
    splits_id = "K1";
  } else if (!c.splits_k) {
    splits_id = "K3";
  } else if (plan.config == config::m128n128 && f.split_tail() && !fell_back) {
    plan.splits = 4;
    plan.split_tiles = f.tail_tiles();
    splits_id = "K4";
  } else if (plan.tiles * 2 <= q.sm_count) {
    // keep at least 4 k-blocks (512 of K) per split
    std::int64_t splits =
        std::min<std::int64_t>(q.sm_count / plan.tiles, std::max<std::int64_t>(1, f.k_blocks / 4));
    plan.splits = static_cast<int>(std::max<std::int64_t>(std::min<std::int64_t>(splits, 32), 1));
    splits_id = plan.splits > 1 ? "K5" : "K6";
  }
  if (plan.splits > 1 && plan.split_tiles == 0) plan.split_tiles = plan.tiles;
  plan.splits_rule = splits_id;
  // the grid: a unit is one whole tile or one split of K of a split tile; a persistent grid
  // of at most one CTA per SM
  const std::int64_t units = plan_units(plan);
  // NOTE: the kernels number units and tiles in 32 bits (UnitGrid, unit_of): a D of more
  // tiles spans some 2^45 bytes at least, past any device's memory, yet check_span's 2^48
  // lets it through
  if (units > std::numeric_limits<std::int32_t>::max()) {
    // (the splits asked for are what to change where the tiles alone fit)
    const bool splits_at_fault = plan.tiles <= std::numeric_limits<std::int32_t>::max() &&
                                 q.tuning.splits > 1;
    throw ArgumentError(splits_at_fault ? "tuning.splits" : "n",
                        "M x N = " + std::to_string(q.m) + " x " + std::to_string(q.n) +
                            " makes " + std::to_string(units) + " units of " +
                            config_label(plan.config) +
                            (plan.splits > 1 ? " in " + std::to_string(plan.splits) + " splits"
                                             : std::string()) +
                            ", more than the kernels number in 32 bits (2^31 - 1)" +
                            (splits_at_fault ? "; ask for fewer splits, or none (0)" : ""));
  }
  plan.grid = static_cast<unsigned>(std::min<std::int64_t>(units, q.sm_count));
  // NOTE: whole tiles in several rounds: as few CTAs as take the same number of rounds (2048
  // tiles on 132 SMs: 128 CTAs of 16 tiles, not 68 of 16 and 64 of 15), which leaves the
  // other SMs to other streams (EXPERIMENTS.md, "Fewer CTAs for the same rounds"). Not with a
  // split tail, whose last round is meant for the SMs the whole tiles leave idle.
  if (plan.split_tiles == 0 && units > q.sm_count) {
    const std::int64_t rounds = (units + q.sm_count - 1) / q.sm_count;
    plan.grid = static_cast<unsigned>((units + rounds - 1) / rounds);
  }
  // the cluster: a unit's neighbour in the schedule's order (unit_of: groups of kGroupM rows
  // of tiles, row fastest) is the same tile column's next row, so units 2i and 2i + 1 read
  // the same tile of B wherever every group's rows are even (tiles_m even) and K is
  // unsplit; where K is split in every tile, the launch orders the units in pairs of tiles
  // (UnitGrid::split_pairs) so that they read the same share of it; with an even grid each
  // CTA's every unit has its pair's partner in the CTA beside it.
  // NOTE: a launch places a cluster's CTAs on one GPC. A dependent launch's CTAs otherwise
  // take the SMs the kernel before frees, in the order it frees them, which split the pairs
  // and ran the tiles 10-20% slower (EXPERIMENTS.md, "Pairs of CTAs on one GPC").
  const bool pairs = c.family == Family::tiled &&
                     (plan.splits == 1 || plan.split_tiles == plan.tiles) &&
                     f.tiles_m(plan.config) % 2 == 0 &&
                     plan.grid % 2 == 0;
  plan.cluster = pairs ? 2 : 1;
  plan.cluster_rule = pairs ? "G1" : "G3";
  return plan;
}

namespace {

// The device scales must be memory of their own: the kernels read them (each CTA, at every
// unit or k-block) while other CTAs store D. ArgumentError naming the array that overlaps D.
void check_scales_apart_from_d(const TensorRef& d, const GemmKernelScale& s, std::uint64_t m,
                               std::uint64_t n, std::uint64_t k) {
  const auto d0 = reinterpret_cast<std::uintptr_t>(d.data);
  const std::uint64_t d1 = d0 + d.span_bytes();
  // `rows` x `cols` floats at element strides (mn, kk); their span is within 2^46 floats
  // (gemm_kernel_scale)
  const auto apart = [&](const char* field, const float* p, std::uint64_t rows, std::int64_t mn,
                         std::uint64_t cols, std::int64_t kk) {
    if (p == nullptr) return;
    const auto p0 = reinterpret_cast<std::uintptr_t>(p);
    const std::uint64_t span =
        ((rows - 1) * static_cast<std::uint64_t>(mn) + (cols - 1) * static_cast<std::uint64_t>(kk) +
         1) * sizeof(float);
    if (p0 < d1 && d0 < p0 + span) {
      throw ArgumentError(field, "overlaps d, which the kernel writes while it reads the "
                                 "scales; pass scales in memory of their own");
    }
  };
  const std::uint64_t k_blocks = (k + 127) / 128;
  switch (s.recipe) {
    case GemmScaleRecipe::tensor:
      apart("scales.scale_a_device", s.a, 1, 0, 1, 0);
      apart("scales.scale_b_device", s.b, 1, 0, 1, 0);
      break;
    case GemmScaleRecipe::row:
      apart("scales.scale_a_device", s.a, m, s.a_mn, 1, 0);
      apart("scales.scale_b_device", s.b, n, s.b_mn, 1, 0);
      break;
    case GemmScaleRecipe::block:
      apart("scales.scale_a_device", s.a, m, s.a_mn, k_blocks, s.a_k);
      apart("scales.scale_b_device", s.b, (n + 127) / 128, s.b_mn, k_blocks, s.b_k);
      break;
  }
}

}  // namespace

GemmKernelScale check_arguments(const ConstTensorRef& a_in, const ConstTensorRef& b_in,
                                const TensorRef& d_in, const GemmScales& scales,
                                const GemmTuning& tuning, Addresses addresses) {
  ConstTensorRef a = a_in, b = b_in;
  TensorRef d = d_in;
  if (addresses == Addresses::unknown) {
    // NOTE: stand-in addresses, 16-byte aligned and apart by more than any view spans (2^48
    // bytes at most, check_span), so that only the rules that need no address can fail
    a.data = reinterpret_cast<const void*>(std::uintptr_t{1} << 49);
    b.data = reinterpret_cast<const void*>(std::uintptr_t{2} << 49);
    d.data = reinterpret_cast<void*>(std::uintptr_t{3} << 49);
  }
  // NOTE: K first: a K that is not a multiple of 16 also gives rows no TMA stride can step,
  // and the fix is to pad K, not the stride
  const std::uint64_t m = a.rows, n = b.rows, k = a.cols;
  check_operand_type("a", a);
  check_operand_type("b", b);
  if (k % 16 != 0) {
    throw ArgumentError("a.cols", "K = " + std::to_string(k) +
                                      " is not a multiple of 16 (TMA's 16-byte rows); pad K "
                                      "with zeros to " +
                                      std::to_string((k + 15) / 16 * 16));
  }
  if (b.cols != a.cols) {
    throw ArgumentError("b.cols", std::to_string(b.cols) + " (K of B) differs from a.cols " +
                                      std::to_string(a.cols) + " (K of A); both are K-major");
  }
  check_view("a", a, false);
  check_view("b", b, false);
  // (throws for scales no float holds, misaligned device scales, recipe arrays missing)
  GemmKernelScale scale = gemm_kernel_scale(scales, m, n, k);
  // (an address not known yet is taken to be aligned; the call's own check decides)
  const bool a_aligned = addresses == Addresses::unknown ||
                         reinterpret_cast<std::uintptr_t>(scale.a) % 16 == 0;
  scale.a_tma = block_scale_a_tma(scale, m, k, a_aligned) ? 1 : 0;
  const bool b_aligned = addresses == Addresses::unknown ||
                         reinterpret_cast<std::uintptr_t>(scale.b) % 16 == 0;
  scale.b_tma = scale.a_tma != 0 && block_scale_b_tma(scale, n, k, b_aligned) ? 1 : 0;
  if (d.data == nullptr) throw ArgumentError("d.data", "is null; pass a device pointer");
  if (reinterpret_cast<std::uintptr_t>(d.data) % 16 != 0) {
    throw ArgumentError("d.data", hex_address(d.data) + " is not 16-byte aligned");
  }
  if (d.type != DataType::bfloat16 && d.type != DataType::float16) {
    throw ArgumentError("d.type", std::string(name(d.type)) +
                                      " is not supported; use "
                                      "BFLOAT16 or FLOAT16");
  }
  if (d.rows != m || d.cols != n) {
    throw ArgumentError("d", "shape " + std::to_string(d.rows) + "x" + std::to_string(d.cols) +
                                 " is not M x N = " + std::to_string(m) + "x" + std::to_string(n));
  }
  if (d.batch != 1) throw ArgumentError("d.batch", "must be 1: one matrix");
  if (d.row_stride_bytes != 0 && (d.row_stride_bytes < n * 2 || d.row_stride_bytes % 2 != 0)) {
    throw ArgumentError("d.row_stride_bytes", std::to_string(d.row_stride_bytes) +
                                                  " is under a row's " + std::to_string(n * 2) +
                                                  " bytes or not whole elements");
  }
  check_span("d", d);  // before the overlap test: a wrapped span would miss overlap
  if (overlaps(d, a) || overlaps(d, b)) {
    throw ArgumentError("d.data", "overlaps a or b; D must be separate memory");
  }
  if (addresses != Addresses::unknown) check_scales_apart_from_d(d, scale, m, n, k);
  GemmProblem q;
  q.m = m;
  q.n = n;
  q.k = k;
  q.d_row_pitch_bytes = d.row_pitch();
  q.sm_count = 1;  // (not asked of the device yet: the tuning's checks need none)
  q.tuning = tuning;
  q.recipe = scales.recipe;
  q.block_scale_a_tma = scale.a_tma != 0;
  check_tuning(q);
  return scale;
}

}  // namespace tmakit::detail::gemm

namespace tmakit {

const char* gemm_config_name(int config) {
  if (config < 0 || config >= kGemmConfigs) return "?";
  return detail::gemm::row(config).name;
}

int gemm_config_id(const std::string& name) {
  return detail::gemm::config_id(name);
}

bool gemm_config_built(int config) {
  return detail::gemm::built(config);
}

GemmConfigInfo gemm_config_info(int config) {
  GemmConfigInfo info;
  if (config < 0 || config >= kGemmConfigs) return info;
  const detail::gemm::ConfigRow& c = detail::gemm::row(config);
  info.name = c.name;
  info.built = detail::gemm::built(config);
  info.block_m = c.block_m;
  info.block_n = c.block_n;
  info.promotes = c.promotes;
  info.splits_k = c.splits_k;
  info.block_scales = detail::gemm::takes_block_scales(config);
  info.block_scales_tma = detail::gemm::takes_block_scales(config, true);
  info.max_m = static_cast<std::uint64_t>(c.max_m);
  info.what = c.what;
  return info;
}

void gemm_fp8_check_shapes(ConstTensorRef a, ConstTensorRef b, TensorRef d,
                           const GemmScales& scales, const GemmTuning& tuning) {
  detail::gemm::check_arguments(a, b, d, scales, tuning, detail::gemm::Addresses::unknown);
}

GemmPlan gemm_fp8_plan(const GemmProblem& problem) {
  detail::gemm::check_tuning(problem);
  return detail::gemm::plan_checked(problem);
}

GemmPlan gemm_fp8_plan(std::uint64_t m, std::uint64_t n, std::uint64_t k, int sm_count,
                       const GemmTuning& tuning) {
  GemmProblem q;
  q.m = m;
  q.n = n;
  q.k = k;
  q.sm_count = sm_count;
  q.tuning = tuning;
  return gemm_fp8_plan(q);
}

static_assert(kGemmConfigs == detail::gemm::config::count,
              "gemm.hpp's kGemmConfigs counts the table's rows");

}  // namespace tmakit
