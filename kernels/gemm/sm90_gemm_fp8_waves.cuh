// FP8 GEMM with promotion on large tiles: D = scale * (A * B^T), A M x K and B N x K e4m3
// (K-major), fp32 sums promoted on the CUDA cores, D bf16 / fp16 (sm_90a).
//
// Why another kernel: promotion keeps two sets of registers per output (the fp32 sums and the
// partial product the tensor cores write), so the tiled kernel (sm90_gemm_fp8_tiled.cuh) stops at
// 128 x 128 tiles. Here each math warpgroup owns Waves waves of 64 rows x WaveN columns of
// the tile and runs them through ONE partial-product set: per pair of k-blocks, wave w's wgmmas
// write the partial, the warpgroup waits for them and adds the partial into wave w's sums,
// then wave w + 1 reuses the registers. Two waves so cost 2 x 64 sums + 64 partials per
// thread, what 128 x 128 tiles with two partials cost, and load 48 KB from L2 per 4 M MACs
// instead of 32 KB per 2 M: down M they make 256 x 128 tiles (m256n128), along N
// 128 x 256 ones (m128n256w). A warpgroup's tensor-core work pauses
// while it adds, so the two math warpgroups take turns issuing: one adds while the other's
// wgmmas run.
//
// Roles: warpgroup 0 is the producer (one thread streams A and B boxes into a ring of stages
// through tmakit::Pipeline); warpgroups 1 and 2 are the math warpgroups. m192n128 runs three
// math warpgroups of one wave each (192 x 128 tiles): no warpgroup's wgmmas then wait for its
// own other wave's promotion. Persistent: each CTA walks output tiles in the tiled kernels'
// rasterised order (sm90_gemm_common.cuh). The epilogue stages D in shared memory (128B
// swizzle, stmatrix) and stores it with TMA, one wave at a time per warpgroup. See README.md
// beside this file.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstdio>
#include <type_traits>

#include "gemm_configs.hpp"
#include "sm90_gemm_common.cuh"
#include "tmakit/device/barrier.hpp"
#include "tmakit/device/copy.hpp"
#include "tmakit/device/pipeline.hpp"
#include "tmakit/device/tile.hpp"
#include "tmakit/device/sm90_wgmma.hpp"
#include "tmakit/swizzle.hpp"

namespace tmakit::detail::gemm {

// Where a math warpgroup's waves lie in the tile: down M (wave v is rows 64 v further) or
// along N (wave v is columns WaveN v further, the same 64 rows).
enum class WaveAxis { m, n };

// MathWGs (2 or 3) math warpgroups, each running Waves waves of 64 rows x WaveN columns;
// Stages deep. Waves down M make a (64 MathWGs Waves) x WaveN tile, waves along N a
// (64 MathWGs) x (WaveN Waves) one.
template <int Waves, int WaveN, int Stages, WaveAxis Axis = WaveAxis::m, int MathWGs = 2>
struct WaveConfig {
  static constexpr int kWaves = Waves;
  static constexpr WaveAxis kAxis = Axis;
  static constexpr int kMathWGs = MathWGs;
  static constexpr int kWaveN = WaveN;
  static constexpr int kWgRows = Axis == WaveAxis::m ? 64 * Waves : 64;  // per math warpgroup
  static constexpr int kBlockM = kMathWGs * kWgRows;
  static constexpr int kBlockN = Axis == WaveAxis::m ? WaveN : WaveN * Waves;
  static constexpr int kStages = Stages;
  static constexpr int kThreads = 128 * (1 + kMathWGs);  // producer warpgroup first
  static constexpr int kPartial = WaveN / 2;             // fp32 registers per wave per thread
  // K-major boxes of one k-block: 128 bytes of K x the tile's rows, 128B swizzle
  using ATile = Tile<std::uint8_t, Swizzle::bytes128, gemm_common::kBlockK, kBlockM>;
  using BTile = Tile<std::uint8_t, Swizzle::bytes128, gemm_common::kBlockK, kBlockN>;
  // D's TMA-store box: 64 columns (one 128-byte span of bf16 / fp16) x one wave's 64 rows
  static constexpr int kDBoxCols = 64;
  static constexpr int kDBoxes = WaveN / kDBoxCols;
  // NOTE: setmaxnreg moves registers from the producer (which needs few) to the math
  // warpgroups: 128 * 40 + 256 * 232 = 64512 of the SM's 65536; with three math warpgroups
  // 128 * 40 + 384 * 152 = 63488 (the producer thread needs more than 32: it spilled there).
  static constexpr int kProducerRegs = 40;
  static constexpr int kMathRegs = MathWGs == 2 ? 232 : 152;
  // sums of every wave + one partial + about 24 for addresses, indices and the ring's state
  static constexpr int kRegsNeeded = (Waves + 1) * kPartial + 24;
};
// A configuration of the table (gemm_configs.hpp) this kernel runs: two waves per math
// warpgroup, down M (waves_m: m256n128, 48 KB per stage) or along N (waves_n: m128n256w, the
// same stage bytes and registers), or three math warpgroups of one 64-row wave each
// (waves_1x3: m192n128, 40 KB per stage).
template <int Id>
using TwoWaveConfig =
    WaveConfig<row(Id).family == Family::waves_1x3 ? 1 : 2,
               row(Id).family == Family::waves_n ? row(Id).block_n / 2 : row(Id).block_n,
               row(Id).stages, row(Id).family == Family::waves_n ? WaveAxis::n : WaveAxis::m,
               row(Id).family == Family::waves_1x3 ? 3 : 2>;

template <class Cfg, class T, bool BlockScales = false>
struct alignas(1024) WaveStorage {
  using DTile = Tile<T, Swizzle::bytes128, Cfg::kDBoxCols, 64>;
  typename Cfg::ATile::Buffer a[Cfg::kStages];  // 1024-aligned: the swizzle repeat (D2)
  typename Cfg::BTile::Buffer b[Cfg::kStages];
  // per math warpgroup: one wave's 64 x WaveN of D, as kDBoxes boxes of 64 x 64
  typename DTile::Buffer d[Cfg::kMathWGs][Cfg::kDBoxes];
  PipelineBarriers<Cfg::kStages> bars;
  RowScaleSlots<Cfg::kBlockM, Cfg::kBlockN> row_scales;  // GemmScaleRecipe::row
  // GemmScaleRecipe::block: the stages' scales (BlockScaleStages says who loads them)
  std::conditional_t<BlockScales, BlockScaleStages<Cfg::kBlockM, Cfg::kBlockN, Cfg::kStages>,
                     NoBlockScales>
      block_scales;
};
template <class Cfg, class T, bool BlockScales = false>
constexpr std::size_t kWaveSmemBytes =
    sizeof(WaveStorage<Cfg, T, BlockScales>) + 1024;  // + alignment slack

// The configuration a two-wave row runs 128-block scales with: its own where the scales'
// slots fit beside its ring, else one stage shallower (m256n128 and m128n256w: 3 stages;
// m192n128 keeps 4).
// NOTE: four stages with D staged one box at a time (the room the slots need) measured 1-4%
// slower at M = 4096 than three with the wave's boxes staged at once (H200; README.md,
// "128-block scales").
template <class Cfg, class T>
using BlockScalesWaveConfig =
    WaveConfig<Cfg::kWaves, Cfg::kWaveN,
               kWaveSmemBytes<Cfg, T, true> <= 227 * 1024 ? Cfg::kStages : Cfg::kStages - 1,
               Cfg::kAxis, Cfg::kMathWGs>;

// One wave's 64 x WaveN sums (wgmma's fragment layout: register 4j + 2h + e of lane l in warp
// w holds row 16w + l/4 + 8h, column 8j + 2(l%4) + e), scaled and rounded once, into the
// warpgroup's staging boxes (128B swizzle: a quarter-warp's eight rows land on eight distinct
// 16-byte chunks, no bank conflicts), then stored by one thread with TMA, which clips rows
// past M and columns past N. The boxes are reused once the previous wave's stores read them.
template <class Cfg, class T, bool BlockScales>
__device__ __forceinline__ void store_wave(
    const Params& p, const float (&sums)[Cfg::kPartial], float scale,
    typename WaveStorage<Cfg, T, BlockScales>::DTile::Buffer* boxes, std::int32_t row0,
    std::int32_t col0, std::uint32_t wg_tid, std::uint32_t barrier_id) {
  using DTile = typename WaveStorage<Cfg, T, BlockScales>::DTile;
  // NOTE: a TMA store wholly outside the tensor kills the kernel (docs/hardware.md H5): a
  // wave past M stores nothing, and boxes past N are skipped below
  if (row0 >= p.m) return;
  const std::uint32_t warp = wg_tid / 32, lane = wg_tid % 32;
  if (wg_tid == 0) store_wait_read<0>();  // the previous wave's stores have read the boxes
  named_barrier_sync(barrier_id, 128);
  // (a scale of 1, as alpha 1 with row-wise or 128-block scales, costs no multiplies there)
  stmatrix_fragment<DTile, T, Cfg::kWaveN>(sums, scale, boxes, 0, warp, lane);
  fence_view_async_shared();  // each writer, before the async proxy reads
  named_barrier_sync(barrier_id, 128);
  if (wg_tid == 0) {
#pragma unroll
    for (int b = 0; b < Cfg::kDBoxes; ++b) {
      const std::int32_t c[2] = {col0 + Cfg::kDBoxCols * b, row0};
      if (c[0] >= p.n) break;  // a box wholly past N (see above)
      store_tile<DTile>(&p.d_map, boxes[b].bytes, c);
    }
    store_commit();
  }
}

// Promote: GemmAccumulation::promoted (true) or fast (false: each wave's wgmmas add into its
// sums across all of K, no partial product). BlockScales: 128-block scales (GemmScaleRecipe::
// block) that TMA loads (scale.a_tma), applied at each promotion, every 128 of K. Row-wise
// scales are applied in the epilogue of any instantiation (a runtime branch: p.scale.recipe).
template <class Cfg, class T, bool Promote, bool BlockScales = false>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    sm90_gemm_fp8_waves_kernel(const __grid_constant__ Params p) {
  using Storage = WaveStorage<Cfg, T, BlockScales>;
  static_assert(Cfg::kWaves >= 1 && Cfg::kWaves <= 2, "one or two waves per math warpgroup");
  static_assert(Cfg::kWaveN % Cfg::kDBoxCols == 0, "a wave of D is whole 64-column boxes");
  static_assert(Cfg::kBlockM <= 256 && Cfg::kBlockN <= 256, "TMA boxDim <= 256 (rule T7)");
  static_assert(Cfg::kRegsNeeded <= Cfg::kMathRegs,
                "the sums of every wave and one partial must fit the math warpgroups' registers");
  static_assert(Cfg::kMathWGs == 2 || Cfg::kMathWGs == 3, "two or three math warpgroups");
  static_assert(128 * Cfg::kProducerRegs + 128 * Cfg::kMathWGs * Cfg::kMathRegs <= 65536,
                "register budget after setmaxnreg exceeds the SM's 64 K registers");
  static_assert(kWaveSmemBytes<Cfg, T, BlockScales> <= 227 * 1024,
                "shared memory: 227 KB per CTA at most");
  static_assert(!BlockScales || (Promote && 128 % Cfg::kWaveN == 0 && Cfg::kBlockN % 128 == 0),
                "128-block scales: promotion every 128 of K, each wave's columns within one "
                "128-row block of B");
  // named barriers: 1.. each math warpgroup's epilogue, 3 and 4 their turns (two math
  // warpgroups only), then two per math warpgroup for the row-wise scales' hand-over
  constexpr RowScaleBarriers<Cfg::kMathWGs> kRowScaleBarriers{5};
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  // (the 128-block kernels at the aligned base with its address held in a register, as in
  // the tiled kernel)
  Storage* const storage = &gemm_common::shared_storage<Storage, BlockScales>();
  Storage& s = *(BlockScales ? gemm_common::held_in_register(storage) : storage);
  using State = PipelineState<Cfg::kStages>;
  Pipeline<Cfg::kStages> pipe(s.bars);

  // a stage is freed by one arrival per math warp, and filled by the producer's arm (and, with
  // 128-block scales that the producer does not load itself, the scale thread's arrival)
  if (threadIdx.x == 0) {
    pipe.init(4 * Cfg::kMathWGs,
              BlockScales ? block_scale_full_arrivals(p.scale.b_tma != 0, Cfg::kStages) : 1u);
    fence_barrier_init();
  }
  __syncthreads();
  // NOTE: everything above touched shared memory only
  warm_maps_and_wait<BlockScales>(p);

  const std::uint32_t wg = threadIdx.x / 128;
  if (wg == 0) {
    // ---- producer warpgroup: the TMA thread and the scale warp ----------------------
    BlockScaleStages<Cfg::kBlockM, Cfg::kBlockN, Cfg::kStages>* block = nullptr;
    if constexpr (BlockScales) block = &s.block_scales;
    // NOTE: 128-block scales here always have scale_a by TMA (the plan refuses the others:
    // takes_block_scales), so the whole-warp copy is never reached; a launch that broke the
    // rule would otherwise wait forever for the scales' arrival
    run_producer_warpgroup<Cfg, BlockScales>(p, pipe, s.a, s.b, block, s.row_scales,
                                             kRowScaleBarriers, [](std::uint32_t) { __trap(); });
  } else {
    // ---- math warpgroups: Waves x 64 rows of the tile each -----------------------------
    warpgroup_claim_registers<Cfg::kMathRegs>();
    // NOTE: read from lane 0 so that ptxas knows it is warp-uniform: the wgmma descriptors
    // built from it then live in uniform registers (no R2UR before every wgmma)
    const std::uint32_t mw = __shfl_sync(0xffffffffu, wg, 0) - 1;  // math warpgroup 0..1
    const std::uint32_t wg_tid = threadIdx.x % 128;
    const bool warp_leader = (threadIdx.x % 32) == 0;
    // past griddepcontrol.wait: a device-side scale written by the kernel before is visible
    const float scale = gemm_common::kernel_scale(p.scale);
    // this warpgroup's first row of the tile (kWgRows consecutive rows)
    const std::uint32_t a_row0 = mw * Cfg::kWgRows;
    constexpr bool kDownM = Cfg::kAxis == WaveAxis::m;
    // wave v's rows of the stage's A and B boxes as wgmma descriptors: 128 bytes per row,
    // 8-row groups 1024 bytes apart (whole 64-row steps keep the swizzle's 1024-byte
    // alignment). NOTE: with 128-block scales they are formed once at stage 0 and advanced
    // by whole stage buffers (one add per k-block, as in the tiled kernel)
    const auto a_row = [&](int v) { return a_row0 + (kDownM ? 64 * v : 0); };
    const auto b_row = [&](int v) {
      return kDownM ? 0u : static_cast<std::uint32_t>(Cfg::kWaveN * v);
    };
    [[maybe_unused]] std::uint64_t a_desc0[Cfg::kWaves], b_desc0[Cfg::kWaves];
    if constexpr (BlockScales) {
#pragma unroll
      for (int v = 0; v < Cfg::kWaves; ++v) {
        a_desc0[v] =
            wgmma_operand_sw128(smem_address(s.a[0].bytes) + a_row(v) * gemm_common::kBlockK);
        b_desc0[v] =
            wgmma_operand_sw128(smem_address(s.b[0].bytes) + b_row(v) * gemm_common::kBlockK);
        a_desc0[v] = gemm_common::held_in_register(a_desc0[v]);
        b_desc0[v] = gemm_common::held_in_register(b_desc0[v]);
      }
    }
    const auto a_rows = [&](const State& at, int v) {
      if constexpr (BlockScales) {
        return wgmma_operand_advance(
            a_desc0[v], at.stage * static_cast<std::uint32_t>(sizeof(typename Cfg::ATile::Buffer)));
      } else {
        return wgmma_operand_sw128(smem_address(s.a[at.stage].bytes) +
                                   a_row(v) * gemm_common::kBlockK);
      }
    };
    const auto b_rows = [&](const State& at, int v) {
      if constexpr (BlockScales) {
        return wgmma_operand_advance(
            b_desc0[v], at.stage * static_cast<std::uint32_t>(sizeof(typename Cfg::BTile::Buffer)));
      } else {
        return wgmma_operand_sw128(smem_address(s.b[at.stage].bytes) +
                                   b_row(v) * gemm_common::kBlockK);
      }
    };
    const auto release = [&](const State& at) {
      if (warp_leader) pipe.consumer_release(at);
    };
    // 128-block scales: k-block kb's operands and this thread's scales at stage `at`, run
    // slot `slot`. NOTE: formed one k-block ahead, while the last wave's wgmmas run, so that
    // less stands between a k-block's last adds and the next one's first wgmmas, where both
    // math warpgroups' adds can leave the tensor cores idle (kernels/gemm/EXPERIMENTS.md,
    // "The block kernel's k-block addresses formed ahead").
    struct KBlockAt {
      std::uint64_t a[Cfg::kWaves], b[Cfg::kWaves];
      std::uint32_t a_scale, b_scale[Cfg::kWaves];
    };
    [[maybe_unused]] const std::uint32_t scale_row =
        gemm_common::held_in_register(a_row0 + 16 * (wg_tid / 32) + (wg_tid % 32) / 4);
    [[maybe_unused]] const auto k_block_at = [&](const auto& at, std::uint32_t slot,
                                                 std::int32_t kb) {
      KBlockAt k;
      if constexpr (BlockScales) {
        k.a_scale = s.block_scales.a_address(at.stage, slot, scale_row, kb, true);
#pragma unroll
        for (int v = 0; v < Cfg::kWaves; ++v) {
          k.a[v] = a_rows(at, v);
          k.b[v] = b_rows(at, v);
          k.b_scale[v] = s.block_scales.b_address(
              at.stage, slot, kDownM ? 0 : v * Cfg::kWaveN / 128, kb, p.scale.b_tma != 0);
        }
      }
      return k;
    };
    // NOTE: with promotion, the math warpgroups take turns issuing their wgmmas (warpgroup 0
    // first; named barrier 3 passes the turn to warpgroup 1, 4 back), so that one's
    // promotion runs while the other's wgmmas keep the tensor cores busy; left to
    // themselves they drift into step and both promote at once (kernels/gemm/EXPERIMENTS.md).
    // Every step but the kernel's first takes the turn and every step but its last passes
    // it, so the arrivals on each barrier match its waits.
    // NOTE: not with 128-block scales, whose promotions (128-deep, twice as many) measured
    // 3-5% faster at M = 4096 without turns (kernels/gemm/README.md, "128-block scales")
    constexpr bool kTurns = !BlockScales && Cfg::kMathWGs == 2;
    const auto take_turn = [&](bool first_step) {
      if constexpr (!kTurns) return;
      if (mw == 1) {
        named_barrier_sync(3, 256);
      } else if (!first_step) {
        named_barrier_sync(4, 256);
      }
    };
    const auto pass_turn = [&](bool last_step) {
      if constexpr (!kTurns) return;
      if (mw == 0) {
        named_barrier_arrive(3, 256);
      } else if (!last_step) {
        named_barrier_arrive(4, 256);
      }
    };
    float sums[Cfg::kWaves][Cfg::kPartial];
    float part[Cfg::kPartial];
    State st;
    [[maybe_unused]] ScaleRunSlot<Cfg::kStages> run;  // (128-block scales' run slot)
    [[maybe_unused]] KBlockAt next_k;                 // (128-block scales: the next k-block's)
    bool first_step = true;
    const bool row_scales = p.scale.recipe == GemmScaleRecipe::row;
    for (std::int64_t u = blockIdx.x; u < p.units; u += gridDim.x) {
      const Unit w = unit_of(p, u);
      const bool last_unit = u + gridDim.x >= p.units;
#pragma unroll
      for (int v = 0; v < Cfg::kWaves; ++v) {
#pragma unroll
        for (int i = 0; i < Cfg::kPartial; ++i) sums[v][i] = 0.0f;
      }
      if constexpr (!Promote) {
        // every wave's wgmmas of a k-block as one group; k-block j's stage is freed once
        // k-block j + 1's group is issued and j's is done (wgmma.wait_group 1)
        State prev = st;
        for (std::int32_t kb = w.kb_begin; kb < w.kb_end; ++kb) {
          pipe.consumer_wait(st);
#pragma unroll
          for (int v = 0; v < Cfg::kWaves; ++v) wgmma_fence_registers(sums[v]);
          wgmma_fence();
#pragma unroll
          for (int v = 0; v < Cfg::kWaves; ++v) {
            wgmma_k_block_e4m3<Cfg::kWaveN, false>(sums[v], a_rows(st, v), b_rows(st, v));
          }
          wgmma_commit();
          if (kb > w.kb_begin) {
            wgmma_wait<1>();
            release(prev);
          }
          prev = st;
          st.advance();
        }
        wgmma_wait<0>();
        release(prev);
#pragma unroll
        for (int v = 0; v < Cfg::kWaves; ++v) wgmma_fence_registers(sums[v]);
      } else {
        // Count (1 or 2) k-blocks from `at`: per wave, their wgmmas into the partial (in
        // turn), wait, free the stages after the last wave's, add the partial into the
        // wave's sums. NOTE: 256-deep partials (two k-blocks) halve the promotions and
        // the turns; a tile's odd last k-block goes alone.
        const auto promote_k_blocks = [&](const State& at, auto count, bool first, bool last,
                                          [[maybe_unused]] std::int32_t kb) {
          constexpr int kCount = decltype(count)::value;
          static_assert(!BlockScales || kCount == 1, "128-block scales: one k-block at a time");
          State next = at;
          next.advance();
          pipe.consumer_wait(at);
          // 128-block scales: each wave's two rows' scale_a times its block's scale_b,
          // read before the stage is freed
          [[maybe_unused]] float row_scale[Cfg::kWaves][2];
          [[maybe_unused]] KBlockAt k;
          if constexpr (BlockScales) {
            k = next_k;
#pragma unroll
            for (int v = 0; v < Cfg::kWaves; ++v) {
              const float b = ptx::ld_shared_f32(k.b_scale[v]);
              const std::uint32_t rows_at = k.a_scale + (kDownM ? 64 * v * 4 : 0);
              row_scale[v][0] = ptx::ld_shared_f32(rows_at) * b;
              row_scale[v][1] = ptx::ld_shared_f32(rows_at + 8 * 4) * b;
            }
          }
          // a wave's operands at a stage (with 128-block scales: formed ahead, in k)
          const auto a_operand = [&](const State& s_at, int v) {
            if constexpr (BlockScales) {
              return k.a[v];
            } else {
              return a_rows(s_at, v);
            }
          };
          const auto b_operand = [&](const State& s_at, int v) {
            if constexpr (BlockScales) {
              return k.b[v];
            } else {
              return b_rows(s_at, v);
            }
          };
#pragma unroll
          for (int v = 0; v < Cfg::kWaves; ++v) {
            take_turn(first && v == 0);
            wgmma_fence_registers(part);
            wgmma_fence();
            const bool last_wave = v == Cfg::kWaves - 1;  // (v is unrolled: a constant)
            wgmma_k_block_e4m3<Cfg::kWaveN, true>(part, a_operand(at, v), b_operand(at, v));
            // NOTE: the last wave's wgmmas are the stages' last readers. It commits a pair's
            // k-blocks as two groups, so that the first stage goes back to the producer once
            // its own wgmmas are done, a quarter of a step before the second: its loads then
            // have that much longer to land (3-6% at M = 8192). The first wave does the same
            // to start on the first stage before the second has landed (about 1% more at
            // large K; EXPERIMENTS.md). No wait stands between the wgmmas of one group.
            if (kCount == 2 && (v == 0 || last_wave)) wgmma_commit();
            if constexpr (kCount == 2) {
              if (v == 0) {
                pipe.consumer_wait(next);
                // (the wait's loop stands between the two groups: the fence ptxas inserted
                // there by itself, with its note C7519; the same code)
                wgmma_fence();
              }
              wgmma_k_block_e4m3<Cfg::kWaveN, false>(part, a_rows(next, v), b_rows(next, v));
            }
            wgmma_commit();
            pass_turn(last && last_wave);
            if constexpr (BlockScales) {
              if (last_wave) {
                // the next k-block's addresses
                next_k = k_block_at(next, run.ahead(kb, w.kb_begin, w.kb_end), kb + 1);
              }
            }
            if (kCount == 2 && last_wave) {
              wgmma_wait<1>();
              release(at);
            }
            wgmma_wait<0>();
            // hand the (last) stage back before adding (with 128-block scales, once every
            // lane of the warp has read the stage's scales)
            if (BlockScales && last_wave) __syncwarp();
            if (last_wave) release(kCount == 2 ? next : at);
            // NOTE: promotion. The tensor cores' fp8 accumulation keeps fewer bits than
            // fp32; adding each 256-deep partial into fp32 registers keeps long sums accurate.
            wgmma_fence_registers(part);
            if constexpr (BlockScales) {
#pragma unroll
              for (int i = 0; i < Cfg::kPartial; ++i) {
                sums[v][i] = fmaf(part[i], row_scale[v][(i / 2) % 2], sums[v][i]);
              }
            } else {
#pragma unroll
              for (int i = 0; i < Cfg::kPartial; ++i) sums[v][i] += part[i];
            }
          }
        };
        std::int32_t kb = w.kb_begin;
        if constexpr (!BlockScales) {
          for (; kb + 1 < w.kb_end; kb += 2) {
            promote_k_blocks(st, std::integral_constant<int, 2>{}, first_step,
                             last_unit && kb + 2 == w.kb_end, kb);
            first_step = false;
            st.advance();
            st.advance();
          }
        }
        if constexpr (BlockScales) {
          run.at(kb, w.kb_begin);
          next_k = k_block_at(st, run.slot, kb);
        }
        // (every k-block with 128-block scales, else the odd last one)
        // NOTE: written as a loop (it runs at most once): as an `if`, ptxas spilled the sums
        for (; kb < w.kb_end; ++kb) {
          promote_k_blocks(st, std::integral_constant<int, 1>{}, first_step,
                           last_unit && kb + 1 == w.kb_end, kb);
          first_step = false;
          st.advance();
        }
      }
#pragma unroll
      for (int v = 0; v < Cfg::kWaves; ++v) {
        const std::int32_t row0 =
            w.tm * Cfg::kBlockM + static_cast<std::int32_t>(a_row0) + (kDownM ? 64 * v : 0);
        const std::int32_t col0 = w.tn * Cfg::kBlockN + (kDownM ? 0 : Cfg::kWaveN * v);
        float out_scale = scale;
        if (row_scales) {
          if (v == 0) kRowScaleBarriers.wait(mw);
          gemm_common::apply_row_scales(sums[v], &s.row_scales.a[row0 - w.tm * Cfg::kBlockM],
                                        &s.row_scales.b[col0 - w.tn * Cfg::kBlockN], scale,
                                        wg_tid / 32, wg_tid % 32);
          if (v == Cfg::kWaves - 1) kRowScaleBarriers.release(mw);
          out_scale = 1.0f;
        }
        store_wave<Cfg, T, BlockScales>(p, sums[v], out_scale, s.d[mw], row0, col0, wg_tid,
                                        1 + mw);
      }
    }
    // a CTA may not exit while its stores still read shared memory (their writes complete
    // with the grid, as for any store)
    if (wg_tid == 0) store_wait_read<0>();
  }
#else
  // NOTE: built for another target; fail loudly rather than return garbage.
  if (threadIdx.x == 0) printf("sm90_gemm_fp8_waves_kernel needs sm_90a\n");
  __trap();
#endif
}

}  // namespace tmakit::detail::gemm
