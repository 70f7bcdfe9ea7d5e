// The FP8 GEMM's plan (gemm_fp8_plan): which configuration, how many splits of K and CTAs for
// a shape, from the measurements its rules cite (kernels/gemm/EXPERIMENTS.md); the checks of a
// GemmTuning; gemm_config_name and gemm_config_built. Pure host code: the host tests call the
// plan for any SM count without a GPU.
#include "gemm_plan.hpp"

#include <algorithm>
#include <string>

#include "tmakit/kernels/tensor_ref.hpp"

namespace tmakit::detail::gemm {

void check_config(const GemmTuning& tuning) {
  if (tuning.config < -1 || tuning.config >= kGemmConfigs) {
    throw ArgumentError("tuning.config", std::to_string(tuning.config) +
                                             " is not a configuration; use -1 or 0.." +
                                             std::to_string(kGemmConfigs - 1));
  }
  if (tuning.config >= 0 && kConfigShapes[tuning.config].retired != nullptr) {
    throw ArgumentError("tuning.config",
                        "configuration " + std::to_string(tuning.config) + " (" +
                            kConfigShapes[tuning.config].name +
                            ") is no longer built: " + kConfigShapes[tuning.config].retired +
                            " (kernels/gemm/EXPERIMENTS.md); use -1 or configuration 1");
  }
}

void check_splits(const GemmTuning& tuning, std::uint64_t k) {
  const std::uint64_t k_blocks = (k + kKBlock - 1) / kKBlock;
  if (tuning.splits < 0 || static_cast<std::uint64_t>(tuning.splits) > k_blocks) {
    throw ArgumentError("tuning.splits", std::to_string(tuning.splits) +
                                             " is not 0 (chosen) "
                                             "or 1.." +
                                             std::to_string(k_blocks) + " (K's k-blocks of 128)");
  }
}

void check_small_m_tuning(int config, std::uint64_t m, std::int64_t k_blocks,
                          const GemmTuning& tuning) {
  if (config == kSmallMWideConfig) {
    if (m > 64) {
      throw ArgumentError("tuning.config",
                          "configuration smallm128 takes M <= 64 (two waves "
                          "of 64 x M sums in registers); M is " +
                              std::to_string(m) + "; use configuration 3");
    }
    if (tuning.splits > 1) {
      throw ArgumentError("tuning.splits", std::to_string(tuning.splits) +
                                               ": configuration smallm128 does not split K; "
                                               "use splits 0 or 1, or configuration 3");
    }
    return;
  }
  if (m > 128) {
    throw ArgumentError("tuning.config",
                        "configuration smallm takes M <= 128; M is " + std::to_string(m));
  }
  if (tuning.splits > 0 && ((tuning.splits & (tuning.splits - 1)) != 0 || tuning.splits > 8 ||
                            tuning.splits > k_blocks)) {
    throw ArgumentError("tuning.splits", std::to_string(tuning.splits) +
                                             ": configuration smallm splits K over a cluster "
                                             "of 1, 2, 4 or 8 CTAs, at most " +
                                             std::to_string(k_blocks) + " (K's k-blocks)");
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

void check_config_tuning(int config, const GemmTuning& tuning) {
  if (config < 0 || small_m_config(config)) return;
  const ConfigShape& c = kConfigShapes[config];
  if (tuning.splits > 1 && !c.splits_k) {
    throw ArgumentError("tuning.splits", std::string("configuration ") + c.name +
                                             " does not split K; use splits 0 or 1");
  }
  if (!c.promotes && tuning.accumulation == GemmAccumulation::promoted) {
    throw ArgumentError("tuning.accumulation",
                        std::string("configuration ") + c.name + " holds " +
                            std::to_string(c.block_n / 2) +
                            " fp32 sums per thread and has no registers to promote into; use "
                            "GemmAccumulation::fast or another configuration");
  }
}

}  // namespace tmakit::detail::gemm

namespace tmakit {

const char* gemm_config_name(int config) {
  if (config < 0 || config >= kGemmConfigs) return "?";
  return detail::gemm::kConfigShapes[config].name;
}

bool gemm_config_built(int config) {
  return config >= 0 && config < kGemmConfigs &&
         detail::gemm::kConfigShapes[config].retired == nullptr;
}

GemmPlan gemm_fp8_plan(std::uint64_t m, std::uint64_t n, std::uint64_t k, int sm_count,
                       const GemmTuning& tuning) {
  using namespace detail::gemm;
  if (m == 0 || n == 0 || k == 0) {
    throw ArgumentError(m == 0 ? "m" : n == 0 ? "n" : "k", "is 0; a GEMM needs M, N, K >= 1");
  }
  if (sm_count < 1) {
    throw ArgumentError("sm_count", std::to_string(sm_count) + " is not a multiprocessor count");
  }
  check_config(tuning);
  const std::int64_t k_blocks = static_cast<std::int64_t>((k + kKBlock - 1) / kKBlock);
  check_splits(tuning, k);
  check_accumulation(tuning);
  auto tiles_of = [&](int config) {
    const ConfigShape& c = kConfigShapes[config];
    return static_cast<std::int64_t>((m + c.block_m - 1) / c.block_m) *
           static_cast<std::int64_t>((n + c.block_n - 1) / c.block_n);
  };
  GemmPlan plan;
  // NOTE: the rules below follow measurements (kernels/gemm/EXPERIMENTS.md, "The plan's
  // rules"): the small-M kernel up to M = 64, and for 64 < M <= 128 where its CTAs (one per
  // 64 rows of B) fill 3/4 of the SMs in one round and K <= 4096 (8192 at M = 128); 64-row
  // tiles up to M = 256, 64 x 64 ones (config 5) where 64 x 128 tiles would fill under 3/4 of
  // the SMs; 128-row tiles above, and the two-wave 256-row tiles (config 7) where they fill
  // the SMs.
  const auto fills = [&](std::int64_t ctas) {
    return ctas * 4 >= static_cast<std::int64_t>(sm_count) * 3;
  };
  // NOTE: at 4096 < K <= 8192 only for M = 128, where no row of A is zero-filled: the
  // small-M kernel was ahead there and behind at M = 96-100 (EXPERIMENTS.md, "The plan's
  // rules")
  const auto small_m_ctas = static_cast<std::int64_t>(
      (n + detail::kSmallMRowsB - 1) / static_cast<std::uint64_t>(detail::kSmallMRowsB));
  const bool small_m_fills = m <= 128 && (k <= 4096 || (m == 128 && k <= 8192)) &&
                             fills(small_m_ctas) && small_m_ctas <= sm_count;
  // NOTE: M <= 64 and more 64-row tiles of B than SMs: 128-row tiles (config 8), in one round
  // or several: half the CTAs, and so half the rounds (EXPERIMENTS.md, "The plan's rules")
  const bool small_m_wide = m <= 64 && tuning.splits <= 1 && small_m_ctas > sm_count;
  // NOTE: 64 < M <= 256 otherwise: a configuration whose tiles need a second round on the SMs
  // gives way to one whose tiles fit in one (measured, EXPERIMENTS.md).
  // rounds of a configuration's tiles on the SMs (a CTA's last round ends the call)
  const auto rounds = [&](int config) { return (tiles_of(config) + sm_count - 1) / sm_count; };
  const auto one_round = [&](int config) { return rounds(config) == 1; };
  // NOTE: and where M fills more than 3/4 of a second 128-row tile (224 < M <= 256), 128-row
  // tiles whenever 64 x 128 ones take several rounds (configs 7 or 9 in their place where
  // they pay): half as many tiles for the same work once the tiles are mostly full; at M =
  // 160 and 192 they are not, and 64 x 128 tiles stayed ahead.
  // NOTE: and in one row of 128-row tiles that M fills more than 3/4 (96 < M <= 128), 128 x
  // 128 tiles where their rounds are no longer than half the 64 x 128 tiles' (33/32 of it);
  // where they are longer the 64 x 128 tiles stayed ahead (EXPERIMENTS.md, "The plan's
  // rules").
  const bool rows_of_two_tiles = m > 224;
  const bool one_row_filled = m > 96 && m <= 128;
  const bool half_rounds = 64 * rounds(1) <= 33 * rounds(0);
  const bool rows_128 =
      !one_round(0) && (one_round(1) || rows_of_two_tiles || (one_row_filled && half_rounds));
  const int mid_m = fills(tiles_of(0)) ? (rows_128 ? 1 : 0)
                                       : (one_round(kSmallTileConfig) ? kSmallTileConfig : 0);
  plan.config = tuning.config >= 0         ? tuning.config
                : small_m_wide             ? kSmallMWideConfig
                : m <= 64 || small_m_fills ? kSmallMConfig
                : m <= 256                 ? mid_m
                                           : 1;
  if (small_m_config(plan.config)) {
    check_small_m_tuning(plan.config, m, k_blocks, tuning);
    if (tuning.splits > 0) {
      plan.splits = tuning.splits;
    } else if (plan.config == kSmallMWideConfig) {
      plan.splits = 1;
    } else {
      plan.splits = detail::small_m_splits(n, static_cast<std::uint64_t>(k_blocks), sm_count);
    }
    const auto rows = static_cast<std::uint64_t>(small_m_rows_b(plan.config));
    plan.tiles = static_cast<std::int64_t>((n + rows - 1) / rows);
    plan.split_tiles = plan.splits > 1 ? plan.tiles : 0;
    plan.grid = static_cast<unsigned>(plan.tiles * plan.splits);
    return plan;
  }
  // NOTE: a split tail. Past one round, where the last round's 128 x 128 tiles would keep at
  // most a quarter of the SMs busy and K is long (6144 or more), those tiles split K four
  // ways over the idle SMs, the rounds before running whole tiles: the call then takes about
  // a quarter of a round where it took a whole one, plus the partial tiles' sum (EXPERIMENTS.md,
  // "A split tail"). The rules of configurations 6, 7 and 10 below count its rounds so; 9 is
  // not taken in its place, and 4's rule compares whole rounds.
  const std::int64_t tail_tiles = tiles_of(1) - (rounds(1) - 1) * sm_count;
  const bool split_tail = tuning.config < 0 && tuning.splits == 0 && plan.config == 1 && m > 256 &&
                          rounds(1) >= 2 && tail_tiles * 4 <= sm_count && k >= 6144;
  // NOTE: 128 x 128 tiles in one round that leave a quarter of the SMs or more idle give way to
  // 128 x 80 ones (config 9) where those fill the SMs in one round and M more than 3/4 of
  // their rows (at M = 65 they were slower, at M = 96 level). So do 128 x 128 tiles in two
  // rounds where 128 x 80 ones take two rounds too: the second round of 128 x 128 tiles is
  // then at most about a quarter full (EXPERIMENTS.md, "The plan's rules").
  const auto narrow_rows = static_cast<std::uint64_t>(kConfigShapes[kNarrowConfig].block_m);
  const bool rows_filled = m % narrow_rows == 0 || 4 * (m % narrow_rows) > 3 * narrow_rows;
  const bool narrow_one_round =
      !fills(tiles_of(1)) && fills(tiles_of(kNarrowConfig)) && one_round(kNarrowConfig);
  const bool narrow_two_rounds = rounds(1) == 2 && rounds(kNarrowConfig) == 2;
  if (tuning.config < 0 && plan.config == 1 && !split_tail && rows_filled &&
      (narrow_one_round || narrow_two_rounds)) {
    plan.config = kNarrowConfig;
  }
  // NOTE: where 128 x 128 tiles are so few that K would be split (256 < M <= 512), 64 x 128
  // tiles unsplit wherever they fill more than half the SMs in one round: the split's partial
  // tiles cost more than the 64-row tiles' extra bytes (EXPERIMENTS.md, "The plan past the
  // bench's shapes").
  if (tuning.config < 0 && plan.config == 1 && m > 256 && m <= 512 && tiles_of(1) * 2 <= sm_count &&
      one_round(0) && tiles_of(0) * 2 > sm_count) {
    plan.config = 0;
  }
  // NOTE: tiles of twice 128 x 128 (configs 6, 7 and 10) pay where they fill 3/4 of the SMs
  // and their rounds on the SMs are no longer than 128 x 128 tiles' (a CTA's last round ends
  // the call): one of their tiles takes about 0.98 of the time of two 128 x 128 tiles, so
  // their rounds may be at most 33/64 of config 1's (EXPERIMENTS.md, "The plan's rules").
  // (configuration 1's rounds in quarters: a split tail's last round counts as one quarter)
  const std::int64_t quarter_rounds_1 = 4 * rounds(1) - (split_tail ? 3 : 0);
  // NOTE: and above M = 256, where they take one round and 128 x 128 tiles two, they pay
  // below 3/4 of the SMs too, in place of 128 x 128 tiles (EXPERIMENTS.md, "The plan past the
  // bench's shapes").
  const auto twice_tiles_pay = [&](int config) {
    const bool one_against_two = m > 256 && plan.config == 1 && one_round(config) && rounds(1) == 2;
    return (fills(tiles_of(config)) || one_against_two) &&
           256 * rounds(config) <= 33 * quarter_rounds_1;
  };
  // NOTE: 256-row tiles only where M fills more than half of the last one: with it half
  // empty or more (M = 320, 384) they ran 1.2-1.5x slower than 128-row tiles, with a quarter
  // empty (M = 448) as fast (EXPERIMENTS.md, "The plan past the bench's shapes").
  const auto waves_rows = static_cast<std::uint64_t>(kConfigShapes[kWavesConfig].block_m);
  const bool waves_rows_half = m % waves_rows == 0 || 2 * (m % waves_rows) > waves_rows;
  // NOTE: fast accumulation frees the promotion's registers for 128 x 256 tiles (config 6),
  // measured faster than 128 x 128 or 64 x 128 tiles where they pay (EXPERIMENTS.md, "The
  // plan's rules").
  if (tuning.config < 0 && tuning.accumulation == GemmAccumulation::fast &&
      !small_m_config(plan.config) && twice_tiles_pay(kWideConfig)) {
    plan.config = kWideConfig;
  }
  // NOTE: promotion on 256 x 128 tiles in two waves (config 7) where they pay and D's rows
  // are whole 16-byte chunks (N a multiple of 8; gemm_fp8 also needs D's pitch to be).
  if (tuning.config < 0 && tuning.accumulation == GemmAccumulation::promoted && plan.config == 1 &&
      n % 8 == 0 && waves_rows_half && twice_tiles_pay(kWavesConfig)) {
    plan.config = kWavesConfig;
  }
  // NOTE: at M <= 128 the same two waves along N (config 10: 128 x 256 tiles) where they pay, M
  // fills more than 3/4 of their rows and K has 32 k-blocks or more (K > 3968), in place of 64 x
  // 128 or 128 x 128 tiles; at K = 2048 the 64 x 128 tiles stayed ahead (EXPERIMENTS.md, "The
  // plan's rules").
  if (tuning.config < 0 && tuning.accumulation == GemmAccumulation::promoted &&
      !small_m_config(plan.config) && m <= 128 && rows_filled && n % 8 == 0 && k_blocks >= 32 &&
      twice_tiles_pay(kWavesNConfig)) {
    plan.config = kWavesNConfig;
  }
  // NOTE: and above M = 256 where 256-row tiles would leave their last one half empty, the
  // same 128 x 256 tiles in place of 128 x 128 ones (the same rows) where they pay
  // (EXPERIMENTS.md, "The plan past the bench's shapes").
  if (tuning.config < 0 && tuning.accumulation == GemmAccumulation::promoted && plan.config == 1 &&
      m > 256 && !waves_rows_half && n % 8 == 0 && twice_tiles_pay(kWavesNConfig)) {
    plan.config = kWavesNConfig;
  }
  // NOTE: 128 x 144 tiles (config 4) above M = 256 at 32 k-blocks or more (K > 3968; measured at K
  // = 4096-7168), in place of 128 x 128 or 128 x 80 tiles (split tail or not), where their rounds
  // are at most 4/5 of 128 x 128 tiles' (2 against 1 up to 5 against 4): a round of them took
  // 1.0-1.3 times one of 128 x 128 tiles, so one round saved in five or fewer paid (1024 x 2112 x
  // 7168: 120 tiles in one round against 136 in two, 27.4 against 34.5 us), one in seven or more
  // did not (6144 x 3072 x 7168: 223 against 191 us). EXPERIMENTS.md, "128 x 144 tiles again".
  if (tuning.config < 0 && m > 256 && k_blocks >= 32 &&
      (plan.config == 1 || plan.config == kNarrowConfig) &&
      5 * rounds(kWide144Config) <= 4 * rounds(1)) {
    plan.config = kWide144Config;
  }
  check_config_tuning(plan.config, tuning);
  const ConfigShape& c = kConfigShapes[plan.config];
  plan.tiles = tiles_of(plan.config);
  if (tuning.splits > 0) {
    if (tuning.splits > k_blocks) {
      throw ArgumentError("tuning.splits", std::to_string(tuning.splits) + " splits of " +
                                               std::to_string(k_blocks) +
                                               " k-blocks of 128; use at most that many");
    }
    plan.splits = tuning.splits;
  } else if (plan.config == 1 && split_tail) {
    plan.splits = 4;
    plan.split_tiles = tail_tiles;
  } else if (c.splits_k) {
    // NOTE: too few tiles to give every SM one: split K so every SM streams a share of B,
    // keeping at least 4 k-blocks (512 of K) per split.
    std::int64_t splits = 1;
    if (plan.tiles * 2 <= sm_count) {
      splits =
          std::min<std::int64_t>(sm_count / plan.tiles, std::max<std::int64_t>(1, k_blocks / 4));
      splits = std::min<std::int64_t>(splits, 32);
    }
    plan.splits = static_cast<int>(std::max<std::int64_t>(splits, 1));
  }
  if (plan.splits > 1 && plan.split_tiles == 0) plan.split_tiles = plan.tiles;
  // a unit: one whole tile, or one split of K of a split tile; a persistent grid of at most
  // one CTA per SM
  const std::int64_t units = plan_units(plan);
  plan.grid = static_cast<unsigned>(std::min<std::int64_t>(units, sm_count));
  // NOTE: whole tiles in several rounds: as few CTAs as take the same number of rounds (2048
  // tiles on 132 SMs: 128 CTAs of 16 tiles, not 68 of 16 and 64 of 15). The call takes as
  // many rounds and leaves the other SMs free for other streams' kernels; measured level or
  // up to 2% faster (EXPERIMENTS.md, "Fewer CTAs for the same rounds"). Not with a split
  // tail, whose last round is meant for the SMs the whole tiles leave idle.
  if (plan.split_tiles == 0 && units > sm_count) {
    const std::int64_t rounds_of_units = (units + sm_count - 1) / sm_count;
    plan.grid = static_cast<unsigned>((units + rounds_of_units - 1) / rounds_of_units);
  }
  return plan;
}

}  // namespace tmakit
