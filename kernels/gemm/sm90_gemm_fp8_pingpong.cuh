// FP8 GEMM with fast accumulation, one output tile per math warpgroup in turn ("ping-pong"):
// D = scale * (A * B^T), A M x K and B N x K e4m3 (K-major), D bf16 / fp16 (sm_90a).
//
// Why another kernel: in the tiled and two-wave kernels both math warpgroups work on one tile,
// so both run its epilogue (row-wise scales, rounding, the stores into shared memory) at once
// and the tensor cores wait for it. Here the CTA's units alternate between the two math
// warpgroups (unit i of the CTA is warpgroup i % 2's), each warpgroup holding a whole 128 x
// BlockN tile (two 64-row halves: BlockN fp32 sums per thread, so fast accumulation only), and
// the warpgroups take turns issuing their k-blocks' wgmmas: one warpgroup's epilogue runs while
// the other's tile keeps the tensor cores busy.
//
// Roles: warpgroup 0 is the producer (one thread streams A and B boxes of every unit of the CTA,
// in order, into a ring of stages); warpgroups 1 and 2 are the math warpgroups, each walking
// the ring over its own units' k-blocks and past the other's, and copying its own units'
// row-wise scales. Persistent: each CTA walks output
// tiles in the tiled kernels' rasterised order (gemm_units.hpp). See README.md beside this
// file, "Configurations".
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstdio>

#include "gemm_configs.hpp"
#include "sm90_gemm_common.cuh"
#include "sm90_gemm_fp8_tiled.cuh"
#include "tmakit/device/barrier.hpp"
#include "tmakit/device/copy.hpp"
#include "tmakit/device/pipeline.hpp"
#include "tmakit/device/sm90_wgmma.hpp"
#include "tmakit/device/tile.hpp"
#include "tmakit/swizzle.hpp"

namespace tmakit::detail::gemm {

// A ping-pong configuration: 128 x BlockN tiles, one per math warpgroup at a time, Stages deep,
// DStaged 64 x DBoxCols boxes of D per math warpgroup: one half's (BlockN / DBoxCols), which
// the bottom half reuses once the top half's stores have read them, or both halves'.
template <int BlockN, int Stages, int DBoxCols, int DStaged>
struct PingpongConfig {
  static constexpr int kMathWGs = 2;
  static constexpr int kBlockM = 128;  // a math warpgroup's tile: two 64-row halves
  static constexpr int kBlockN = BlockN;
  static constexpr int kStages = Stages;
  static constexpr int kThreads = 128 * (1 + kMathWGs);  // producer warpgroup first
  // A half's epilogue is the tiled kernel's for one warpgroup of 64 x BlockN (its boxes,
  // store_tile_tma and store_tile), in one pass
  using Half = Config<1, BlockN, Stages, DBoxCols>;
  static_assert(DStaged == Half::kDBoxes || DStaged == 2 * Half::kDBoxes,
                "D's boxes: one half's or both halves'");
  static constexpr int kHalvesStaged = DStaged / Half::kDBoxes;  // 1 or 2
  static constexpr int kAccum = Half::kAccum;  // fp32 sums per thread per half
  using ATile = Tile<std::uint8_t, Swizzle::bytes128, gemm_common::kBlockK, kBlockM>;
  using BTile = Tile<std::uint8_t, Swizzle::bytes128, gemm_common::kBlockK, BlockN>;
  // NOTE: setmaxnreg as in the tiled kernel's two-warpgroup tiles: 128 * 40 + 256 * 232 =
  // 64512 of the SM's 65536; the two halves' sums take 2 * BlockN / 2 of a thread's 232
  static constexpr int kProducerRegs = 40;
  static constexpr int kMathRegs = 232;
  static constexpr int kRegsNeeded = 2 * kAccum + 32;
};
template <int Id>
using PingpongRowConfig =
    PingpongConfig<row(Id).block_n, row(Id).stages, row(Id).d_box_cols, row(Id).d_staged>;

template <class Cfg>
struct alignas(1024) PingpongStorage {
  typename Cfg::ATile::Buffer a[Cfg::kStages];  // 1024-aligned: the swizzle repeat (D2)
  typename Cfg::BTile::Buffer b[Cfg::kStages];
  // per math warpgroup: the staging boxes of its tile's halves, one half at a time or both
  typename Cfg::Half::DTile::Buffer d[Cfg::kMathWGs][Cfg::kHalvesStaged][Cfg::Half::kDStaged];
  PipelineBarriers<Cfg::kStages> bars;
  // GemmScaleRecipe::row: each math warpgroup's current tile's scales, copied by the
  // warpgroup itself (copy_row_scales)
  RowScaleSlots<Cfg::kBlockM, Cfg::kBlockN> row_scales[Cfg::kMathWGs];
};
// The storage at the base of dynamic shared memory, declared 1024-aligned, where the 1 KB of
// slack for rounding the base up would pass 227 KB (m128n128ppd: 5 stages and both halves'
// boxes take 227 KB; docs/hardware.md, H16); else the base rounded up
// (gemm_common::shared_storage).
template <class Cfg>
constexpr bool kPingpongAligned = sizeof(PingpongStorage<Cfg>) + 1024 > 227 * 1024;
template <class Cfg>
constexpr std::size_t kPingpongSmemBytes =
    sizeof(PingpongStorage<Cfg>) + (kPingpongAligned<Cfg> ? 0 : 1024);  // (+ the slack)

// The units of this CTA (blockIdx.x, blockIdx.x + gridDim.x, ...): how many.
__device__ __forceinline__ std::int64_t cta_unit_count(const Params& p) {
  const auto first = static_cast<std::int64_t>(blockIdx.x);
  return p.units > first ? (p.units - first + gridDim.x - 1) / gridDim.x : 0;
}

// GemmScaleRecipe::row: a math warpgroup's copies (cp.async, one commit group) of its unit's
// scale_a rows and scale_b columns into its slots, zeros past M and N; thread t copies row t
// and column t. Issued as the unit starts, after griddepcontrol.wait (the kernel before may
// write the scales), and waited for before the epilogue (wait_async_copies, then a named
// barrier of the warpgroup), so that their latency lies under the unit's k-blocks.
// NOTE: the warpgroup's own copies, not the producer warpgroup's hand-over of the tiled
// kernels (load_row_scales): its units alternate, and each warpgroup's reads of one unit's
// scales and its copies of its next unit's are ordered by its own barriers (bar.sync on both
// sides; racecheck reported the hand-over's reuse of a slot here: docs/hardware.md, H15).
template <int BlockM, int BlockN>
__device__ __forceinline__ void copy_row_scales(const Params& p, const Unit& w,
                                                RowScaleSlots<BlockM, BlockN>& slots,
                                                std::uint32_t wg_tid) {
  static_assert(BlockM <= 128 && BlockN <= 128, "a row and a column per thread at most");
  const auto t = static_cast<std::int32_t>(wg_tid);
  if (t < BlockM) {
    const std::int32_t row = w.tm * BlockM + t;
    const bool in = row < p.m;
    copy_4_bytes_async(&slots.a[t], p.scale.a + (in ? row * p.scale.a_mn : 0), in);
  }
  if (t < BlockN) {
    const std::int32_t col = w.tn * BlockN + t;
    const bool in = col < p.n;
    copy_4_bytes_async(&slots.b[t], p.scale.b + (in ? col * p.scale.b_mn : 0), in);
  }
  commit_async_copies();
}

// One k-block of a math warpgroup's tile (its stage's data already waited for) added into the
// sums of both halves, committed as one group.
template <class Cfg>
__device__ __forceinline__ void accumulate_tile_k_block(float (&top)[Cfg::kAccum],
                                                        float (&bottom)[Cfg::kAccum],
                                                        std::uint32_t a_base,
                                                        std::uint32_t b_base) {
  wgmma_fence_registers(top);
  wgmma_fence_registers(bottom);
  wgmma_fence();
  const std::uint64_t b = wgmma_operand_sw128(b_base);
  wgmma_k_block_e4m3<Cfg::kBlockN, false>(top, wgmma_operand_sw128(a_base), b);
  wgmma_k_block_e4m3<Cfg::kBlockN, false>(bottom,
                                          wgmma_operand_sw128(a_base + 64 * gemm_common::kBlockK),
                                          b);
  wgmma_commit();
}

// Fast accumulation (GemmAccumulation::fast) only; row-wise scales in the epilogue where
// p.scale.recipe says so (a runtime branch), else the per-tensor scale.
template <class Cfg, class T>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    sm90_gemm_fp8_pingpong_kernel(const __grid_constant__ Params p) {
  using Storage = PingpongStorage<Cfg>;
  using Half = typename Cfg::Half;
  static_assert(Cfg::kBlockN % 16 == 0 && Cfg::kBlockN <= 256, "wgmma N: 16..256, step 16");
  static_assert(Cfg::kRegsNeeded <= Cfg::kMathRegs,
                "both halves' sums must fit the math warpgroups' registers");
  static_assert(128 * Cfg::kProducerRegs + 128 * Cfg::kMathWGs * Cfg::kMathRegs <= 65536,
                "register budget after setmaxnreg exceeds the SM's 64 K registers");
  static_assert(kPingpongSmemBytes<Cfg> <= 227 * 1024, "shared memory: 227 KB per CTA at most");
  static_assert(Cfg::ATile::smem_bytes == Cfg::ATile::tx_bytes &&
                    Cfg::BTile::smem_bytes == Cfg::BTile::tx_bytes,
                "wgmma reads A and B as dense 128-byte rows: whole 8-row groups, no padding");
  // named barriers: 2 + g math warpgroup g's epilogue and row-wise scales, 4 + g the turn
  // passed to math warpgroup g
  constexpr std::uint32_t kTurnBarrier = 4;
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  Storage& s = gemm_common::shared_storage<Storage, kPingpongAligned<Cfg>>();
  using State = PipelineState<Cfg::kStages>;
  Pipeline<Cfg::kStages> pipe(s.bars);

  // a stage is read by one math warpgroup: freed by one arrival per warp of it
  if (threadIdx.x == 0) {
    pipe.init(4, 1);
    fence_barrier_init();
  }
  __syncthreads();
  // NOTE: everything above touched shared memory only
  warm_maps_and_wait<false>(p);

  const std::uint32_t wg = threadIdx.x / 128;
  if (wg == 0) {
    // ---- producer warpgroup: the TMA thread -----------------------------------------
    warpgroup_release_registers<Cfg::kProducerRegs>();
    const std::uint32_t warp = __shfl_sync(0xffffffffu, threadIdx.x / 32, 0);
    if (warp == 0 && elect_one()) {
      load_units<typename Cfg::ATile, typename Cfg::BTile>(p, pipe, s.a, s.b);
    }
  } else {
    // ---- math warpgroups: the CTA's units in turn ----------------------------------
    warpgroup_claim_registers<Cfg::kMathRegs>();
    // NOTE: read from lane 0 so that ptxas knows it is warp-uniform (uniform descriptors)
    const std::uint32_t g = __shfl_sync(0xffffffffu, wg, 0) - 1;  // math warpgroup 0..1
    const std::uint32_t wg_tid = threadIdx.x % 128;
    const bool warp_leader = (threadIdx.x % 32) == 0;
    // past griddepcontrol.wait: a device-side scale written by the kernel before is visible
    const float scale = gemm_common::kernel_scale(p.scale);
    const std::int64_t units = cta_unit_count(p);
    // NOTE: K is never split here (the table's row), so every unit is k_blocks k-blocks and
    // unit i's first lies k_blocks * i into the ring
    const auto k_blocks = static_cast<std::uint32_t>(p.k_blocks);
    State st;
    st.advance_by(g * k_blocks);
    float top[Cfg::kAccum], bottom[Cfg::kAccum];
    const auto release = [&](const State& at) {
      if (warp_leader) pipe.consumer_release(at);
    };
    const auto issue = [&](const State& at) {
      pipe.consumer_wait(at);
      accumulate_tile_k_block<Cfg>(top, bottom, smem_address(&s.a[at.stage]),
                                   smem_address(&s.b[at.stage]));
    };
    const bool row_scales = p.scale.recipe == GemmScaleRecipe::row;
    for (std::int64_t i = g; i < units; i += 2) {
      const Unit w = unit_of(p, blockIdx.x + i * gridDim.x);
      const bool passes = i + 1 < units;  // the other warpgroup has a unit after this one
      if (row_scales) copy_row_scales(p, w, s.row_scales[g], wg_tid);
#pragma unroll
      for (int j = 0; j < Cfg::kAccum; ++j) top[j] = bottom[j] = 0.0f;
      // NOTE: the turn: a warpgroup issues a tile's wgmmas once the other has issued all of
      // its previous tile's, so that the two tiles do not share the tensor cores and each
      // warpgroup's epilogue runs under the other's k-blocks
      if (i > 0) named_barrier_sync(kTurnBarrier + g, 256);
      gemm_common::accumulated_k_blocks(static_cast<std::int32_t>(k_blocks), st, issue, release,
                                        [&] {
                                          if (passes) {
                                            named_barrier_arrive(kTurnBarrier + (1 - g), 256);
                                          }
                                        });
      wgmma_fence_registers(top);
      wgmma_fence_registers(bottom);
      st.advance_by(k_blocks);  // past the other warpgroup's next unit

      const std::int32_t row0 = w.tm * Cfg::kBlockM;
      const std::int32_t col0 = w.tn * Cfg::kBlockN;
      float out_scale = scale;
      if (row_scales) {
        wait_async_copies<0>();
        named_barrier_sync(2 + g, 128);  // every thread's copies landed
        gemm_common::apply_row_scales(top, bottom, s.row_scales[g].a, s.row_scales[g].b, scale,
                                      wg_tid / 32, wg_tid % 32);
        named_barrier_sync(2 + g, 128);  // every thread's reads, before the next unit's copies
        out_scale = 1.0f;
      }
      if (p.d_tma_store) {
        // NOTE: with both halves' boxes staged, each half waits only for its own boxes'
        // previous stores (the other half's may still read shared memory): at K = 512 the
        // bottom half's wait for the top half's stores held the epilogue, which there outlasts
        // the other warpgroup's k-blocks (kernels/gemm/README.md, "Ping-pong tiles at short K")
        constexpr int kNewer = Cfg::kHalvesStaged - 1;
        store_tile_tma<Half, T, kNewer>(p, top, out_scale, s.d[g][0], row0, col0, wg_tid, 2 + g);
        store_tile_tma<Half, T, kNewer>(p, bottom, out_scale, s.d[g][Cfg::kHalvesStaged - 1],
                                        row0 + 64, col0, wg_tid, 2 + g);
      } else {
        store_tile<Half, T>(p, top, out_scale, row0, col0, wg_tid);
        store_tile<Half, T>(p, bottom, out_scale, row0 + 64, col0, wg_tid);
      }
    }
    // a CTA may not exit while its stores still read shared memory (their writes complete
    // with the grid, as for any store)
    if (p.d_tma_store && wg_tid == 0) store_wait_read<0>();
  }
#else
  // NOTE: built for another target; fail loudly rather than return garbage.
  if (threadIdx.x == 0) printf("sm90_gemm_fp8_pingpong_kernel needs sm_90a\n");
  __trap();
#endif
}

// The ping-pong kernel's launch (sm90_gemm_fp8_pingpong.cu, instantiated there for the
// configurations of its family): (params, grid, stream, overlap_launch).
template <int Id, class T>
void launch_pingpong(const Params& p, unsigned grid, cudaStream_t stream, bool overlap);

}  // namespace tmakit::detail::gemm
