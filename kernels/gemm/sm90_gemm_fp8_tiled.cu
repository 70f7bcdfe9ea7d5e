// Launch of the tiled, two-wave and ping-pong FP8 GEMM kernels (sm90_gemm_fp8_tiled.cuh,
// sm90_gemm_fp8_waves.cuh, sm90_gemm_fp8_pingpong.cuh): the tensor maps of the plan's tiles,
// then the one kernel instantiation of the plan's configuration, D's type and mode, from a
// table built over the configurations of gemm_configs.hpp.
#include <array>
#include <utility>

#include "gemm_launch.hpp"
#include "gemm_plan.hpp"
#include "gemm_workspace.hpp"
#include "sm90_gemm_fp8_pingpong.cuh"
#include "sm90_gemm_fp8_tiled.cuh"
#include "tmakit/kernels/detail/launch_support.hpp"

namespace tmakit::detail::gemm {
namespace {

// One instantiation's launch: its shared-memory limit raised on the current device (once
// per device), in clusters of `cluster` CTAs where the device holds the whole grid's clusters
// at once (clusters_fit), as a programmatic dependent where `overlap`.
template <auto Kernel>
void launch_kernel(const Params& p, unsigned grid, unsigned cluster, unsigned threads,
                   std::size_t smem_bytes, cudaStream_t stream, bool overlap) {
  auto* const kernel = prepared_kernel<Kernel>(smem_bytes);
  KernelLaunch l(grid, threads, smem_bytes, stream);
  if (cluster == 2 && clusters_fit<Kernel, 2>(l)) l.cluster(2);
  if (overlap) l.overlap_previous_kernel();
  launch_kernel_ex(l, kernel, "sm90_gemm_fp8_kernel", p);
}

// The kernel of a configuration and mode, so that a call costs one launch on the host.
template <class Cfg, class T>
void launch(const Params& p, unsigned grid, unsigned cluster, cudaStream_t stream, bool overlap,
            bool promote, bool block_scales) {
  // (the plan refuses promotion for a configuration that cannot promote, and 128-block scales
  // for one that cannot apply them: takes_block_scales)
  if constexpr (Cfg::kPromotes && Cfg::kBlockColumns) {
    if (block_scales) {
      using BlockCfg = BlockScalesConfig<Cfg>;
      launch_kernel<&sm90_gemm_fp8_kernel<BlockCfg, T, true, true>>(
          p, grid, cluster, BlockCfg::kThreads, kSmemBytes<BlockCfg, true>, stream, overlap);
      return;
    }
  }
  if constexpr (Cfg::kPromotes) {
    if (promote) {
      launch_kernel<&sm90_gemm_fp8_kernel<Cfg, T, true>>(p, grid, cluster, Cfg::kThreads,
                                                         kSmemBytes<Cfg>, stream, overlap);
      return;
    }
  }
  launch_kernel<&sm90_gemm_fp8_kernel<Cfg, T, false>>(p, grid, cluster, Cfg::kThreads,
                                                      kSmemBytes<Cfg>, stream, overlap);
}

// Configuration `Id`'s kernel for D's type T: a tiled row in its second form where some CTA
// takes more than one tile (when it has one), a two-wave or ping-pong row through its own
// launch.
template <int Id, class T>
void launch_config(const Params& p, unsigned grid, unsigned cluster, cudaStream_t stream,
                   bool overlap, bool promote, bool block_scales) {
  constexpr ConfigRow c = row(Id);
  if constexpr (c.family == Family::tiled) {
    static_assert(TiledConfig<Id>::kBlockM == c.block_m &&
                      TiledConfig<Id>::kPromotes == c.promotes &&
                      TiledConfig<Id>::kSplitsK == c.splits_k && c.plain_stores &&
                      (TiledConfig<Id>::kPromotes && TiledConfig<Id>::kBlockColumns) ==
                          takes_block_scales(Id),
                  "the table's row agrees with the kernel it instantiates");
    if constexpr (c.rounds_stages != 0) {
      if (p.units > static_cast<std::int64_t>(grid)) {
        launch<TiledRoundsConfig<Id>, T>(p, grid, cluster, stream, overlap, promote,
                                         block_scales);
        launched_config() = Id;
        return;
      }
    }
    launch<TiledConfig<Id>, T>(p, grid, cluster, stream, overlap, promote, block_scales);
    launched_config() = Id;
  } else if constexpr (waves_kernel(Id)) {
    static_assert(!c.splits_k && !c.plain_stores, "the two-wave kernel: K unsplit, TMA stores");
    (void)cluster;  // (the plan clusters the tiled kernel's CTAs only: rule G1)
    launch_two_waves<Id, T>(p, grid, stream, overlap, promote, block_scales);
  } else if constexpr (c.family == Family::pingpong) {
    (void)cluster;
    (void)promote;       // (fast accumulation only: the plan refuses promotion here)
    (void)block_scales;  // (and 128-block scales, which need promotion)
    launch_pingpong<Id, T>(p, grid, stream, overlap);
  }
}

using LaunchFn = void (*)(const Params&, unsigned, unsigned, cudaStream_t, bool, bool, bool);
// Per D's type, a launch for every row of the table that runs here; null for the others
// (the small-M kernel's, the retired one).
template <class T, std::size_t... Id>
constexpr std::array<LaunchFn, sizeof...(Id)> launch_table(std::index_sequence<Id...>) {
  return {(built(Id) && !small_m(Id) ? &launch_config<Id, T> : nullptr)...};
}
constexpr auto kLaunchBf16 = launch_table<__nv_bfloat16>(std::make_index_sequence<config::count>{});
constexpr auto kLaunchFp16 = launch_table<__half>(std::make_index_sequence<config::count>{});

// The plan's view of the k-blocks is the kernels'.
static_assert(kKBlock == kBlockK, "the plan's k-blocks are the kernels'");

Params make_params(const GemmCall& call) {
  const ConfigRow& c = row(call.plan.config);
  const GemmPlan& plan = call.plan;
  Params q{};
  q.a_map = cached_tensor_map(
      view_spec(call.a, DataType::uint8,
                {static_cast<std::uint32_t>(kBlockK), static_cast<std::uint32_t>(c.block_m), 1},
                Swizzle::bytes128));
  q.b_map = cached_tensor_map(
      view_spec(call.b, DataType::uint8,
                {static_cast<std::uint32_t>(kBlockK), static_cast<std::uint32_t>(c.block_n), 1},
                Swizzle::bytes128));
  q.d = call.d.data;
  q.d_row_elems = call.d.row_pitch() / 2;
  q.d_tma_store = plan.d_tma_store ? 1 : 0;
  if (plan.d_tma_store) {
    q.d_map = cached_tensor_map(view_spec(
        call.d, call.d.type, {static_cast<std::uint32_t>(c.d_box_cols), 64, 1}, Swizzle::bytes128));
  }
  q.m = static_cast<std::int32_t>(call.a.rows);
  q.n = static_cast<std::int32_t>(call.b.rows);
  const UnitGrid g = plan_unit_grid(plan, call.a.rows, call.b.rows, call.a.cols);
  q.k_blocks = g.k_blocks;
  q.tiles_m = g.tiles_m;
  q.tiles_n = g.tiles_n;
  q.splits = g.splits;
  q.whole_tiles = g.whole_tiles;
  q.split_pairs = g.split_pairs;
  q.units = plan_units(plan);
  return q;
}

}  // namespace

SplitWorkspaceNeed split_workspace_need(const GemmPlan& plan) {
  const ConfigRow& c = row(plan.config);
  const std::size_t tile_bytes = static_cast<std::size_t>(c.block_m) * c.block_n * 4;
  return {tile_bytes * static_cast<std::size_t>(plan.split_tiles * plan.splits),
          static_cast<std::size_t>(plan.split_tiles)};
}

void launch_tiled(const GemmCall& call) {
  const GemmPlan& plan = call.plan;
  thread_local LastCall<Params> last;
  Params p = last.get(call.key, [&] { return make_params(call); });
  p.scale = call.scale;
  // NOTE: the boxes are the kernel's runs (gemm_scale_runs.hpp; BlockScaleStages checks its
  // own against them): a box other than the one the kernel arms for would leave its stage
  // waiting forever
  if (call.scale.a_tma != 0) {  // 128-block scale_a by TMA: M x k-blocks floats, M-major
    const ConfigRow& c = row(plan.config);
    const std::uint64_t k_blocks = (call.a.cols + kBlockK - 1) / kBlockK;
    const ConstTensorRef scale_a(call.scale.a, DataType::float32, k_blocks, call.a.rows,
                                 static_cast<std::uint64_t>(call.scale.a_k) * 4);
    const auto box = scale_a_run_box(c.block_m);
    p.scale_a_map =
        cached_tensor_map(view_spec(scale_a, DataType::float32, {box[0], box[1], 1}, Swizzle::none));
  }
  if (call.scale.b_tma != 0) {  // and scale_b: N-blocks x k-blocks floats, K-major
    const ConfigRow& c = row(plan.config);
    const std::uint64_t k_blocks = (call.a.cols + kBlockK - 1) / kBlockK;
    const std::uint64_t n_blocks = (call.b.rows + 127) / 128;
    const ConstTensorRef scale_b(call.scale.b, DataType::float32, n_blocks, k_blocks,
                                 static_cast<std::uint64_t>(call.scale.b_mn) * 4);
    const auto box = scale_b_run_box(c.block_n);
    p.scale_b_map =
        cached_tensor_map(view_spec(scale_b, DataType::float32, {box[0], box[1], 1}, Swizzle::none));
  }
  if (plan.splits > 1) {  // split K: the partial tiles through the stream's workspace
    const SplitWorkspaceNeed need = split_workspace_need(plan);
    const Workspace w = stream_workspace(need.partial_bytes, need.counters, call.stream);
    p.workspace = w.partials;
    p.counters = w.counters;
  }
  const LaunchFn fn =
      call.d.type == DataType::bfloat16 ? kLaunchBf16[plan.config] : kLaunchFp16[plan.config];
  fn(p, plan.grid, static_cast<unsigned>(plan.cluster), call.stream, call.key.overlap,
     call.key.accumulation == GemmAccumulation::promoted,
     call.key.recipe == GemmScaleRecipe::block);
}

}  // namespace tmakit::detail::gemm
