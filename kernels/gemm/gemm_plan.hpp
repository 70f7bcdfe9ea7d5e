// The FP8 GEMM's plan in host code (no GPU): the rules that pick a configuration of the table
// (gemm_configs.hpp), the splits of K and the grid for a problem, as data with ids, and the
// checks of a call's arguments. gemm_plan.cpp defines them, and the public gemm_fp8_plan,
// gemm_config_name, gemm_config_built and gemm_config_id; the launcher (sm90_gemm_fp8.cu)
// runs exactly what the plan returns.
#pragma once

#include <cstdint>

#include "gemm_configs.hpp"
#include "gemm_launch.hpp"
#include "gemm_units.hpp"
#include "tmakit/kernels/gemm.hpp"
#include "tmakit/kernels/tensor_ref.hpp"

namespace tmakit::detail::gemm {

// Every argument of a gemm_fp8 call, checked once, before anything is asked of the device:
// the operands' types, K, the views, D's type, shape and pitch, overlap, the scales and the
// tuning (each throws ArgumentError naming the argument and the fix). Returns the scale the
// kernel applies. With Addresses::unknown (a traced call, whose memory is not there yet:
// torch.compile's fake tensors) the views' data pointers are not read: everything but them
// is checked, as if each view had memory of its own, 16-byte aligned.
enum class Addresses { known, unknown };
GemmKernelScale check_arguments(const ConstTensorRef& a, const ConstTensorRef& b,
                                const TensorRef& d, const GemmScales& scales,
                                const GemmTuning& tuning, Addresses addresses = Addresses::known);

// The problem's tuning, alone (what gemm_fp8_plan checks before it plans).
void check_tuning(const GemmProblem& problem);

// The plan of a problem whose arguments are checked (check_arguments, or check_tuning).
GemmPlan plan_checked(const GemmProblem& problem);

// One rule of the plan: its id, what it says, and the experiment it rests on (a section of
// kernels/gemm/EXPERIMENTS.md). The rules are walked in order; the last one that applies
// decides (GemmPlan::config_rule, splits_rule, cluster_rule). The tests read the table
// (kernels/gemm/README.md, "The plan's rules", lists it).
struct PlanRule {
  const char* id;
  const char* says;
  const char* experiment;
};
// Configuration rules C1..C25, splits rules K1..K6, cluster rules G1..G3.
const PlanRule* plan_rules(std::size_t* count);

// The small-M kernel's own numbers (pure, tested on the host):
// M rounded up to the kernel's widths 8, 16, 32, 64, 128; 0 when M > 128.
int small_m_padded(std::uint64_t m);
// The cluster size (K splits: 8, 4, 2 or 1): the largest that keeps CTAs to half the SMs.
int small_m_splits(std::uint64_t n, std::uint64_t k_blocks, int sm_count);
// k-blocks of B each CTA asks the L2 for before it waits for the kernel before it (0: none),
// at M rows, `rank_k_blocks` k-blocks per cluster rank, `splits` ranks, `rows_b` rows of B
// per CTA, on a device of this peak DRAM bandwidth (bytes/s): 4 in clusters; at one CTA per
// tile of 64 rows 4 for 16 < M <= 64 and 2 above on H100-class memory, else none; 2 for
// tiles of 128 rows on both. Measured per memory system, like the stencil's layouts.
int small_m_prefetch(std::uint64_t m, std::uint64_t rank_k_blocks, int splits, int rows_b,
                     double dram_bytes_per_second);

// A plan's work units: one per whole tile, and one per split of K of each split tile.
// NOTE: saturated at INT64_MAX rather than wrapped (a plan of 2^46 tiles in 2^18 splits would
// wrap to 0 units and pass the 32-bit bound its caller checks)
constexpr std::int64_t plan_units(const GemmPlan& plan) {
  const std::int64_t whole = plan.tiles - plan.split_tiles;
  const std::int64_t most = INT64_MAX - whole;
  return plan.splits > 0 && plan.split_tiles > most / plan.splits
             ? INT64_MAX
             : whole + plan.split_tiles * plan.splits;
}

// The units' grid of a tiled or two-wave plan of M x N x K, as the launch hands it to the
// kernels (make_params) and the host tests play it out: the configuration's tiles, the
// splits, and (rule G1 where K is split) split tiles' units in pairs.
constexpr UnitGrid plan_unit_grid(const GemmPlan& plan, std::uint64_t m, std::uint64_t n,
                                  std::uint64_t k) {
  const ConfigRow& c = row(plan.config);
  UnitGrid g{};
  g.tiles_m = static_cast<std::int32_t>((m + c.block_m - 1) / c.block_m);
  g.tiles_n = static_cast<std::int32_t>((n + c.block_n - 1) / c.block_n);
  g.whole_tiles = static_cast<std::int32_t>(plan.tiles - plan.split_tiles);
  g.splits = plan.splits;
  g.k_blocks = static_cast<std::int32_t>((k + kKBlock - 1) / kKBlock);
  g.split_pairs = plan.cluster == 2 && plan.splits > 1 ? 1 : 0;
  return g;
}

}  // namespace tmakit::detail::gemm
