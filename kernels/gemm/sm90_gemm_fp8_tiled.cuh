// The tiled FP8 GEMM kernel, D = scale * (A * B^T), on TMA + wgmma (sm_90a): the
// configurations of family `tiled` in gemm_configs.hpp (m64n128, m128n128, m128n144, m64n64,
// m128n256, m128n80). One persistent kernel: one thread of a producer warpgroup streams
// 128B-swizzled K-major tiles of A and B into a ring of shared-memory stages (full/empty
// mbarriers); one or two consumer warpgroups run wgmma m64nNk32 e4m3 on them, promote each
// 128-deep partial product into fp32 registers, and store D through shared memory and TMA (or,
// where D's rows are not whole 16-byte chunks, with ordinary stores). Shapes with too few
// output tiles to fill the GPU split K; the last CTA of a tile to finish sums the partial
// tiles. Its launch: sm90_gemm_fp8_tiled.cu. See README.md beside this file.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>

#include "gemm_configs.hpp"
#include "sm90_gemm_common.cuh"
#include "tmakit/device/barrier.hpp"
#include "tmakit/device/copy.hpp"
#include "tmakit/device/pipeline.hpp"
#include "tmakit/device/tile.hpp"
#include "tmakit/device/sm90_wgmma.hpp"
#include "tmakit/swizzle.hpp"

namespace tmakit::detail::gemm {

using gemm_common::kBlockK;
using gemm_common::kWgmmaK;

// A tile configuration: ConsumerWGs x 64 rows of A, BlockN rows of B, Stages deep.
template <int ConsumerWGs, int BlockN, int Stages, int DBoxCols = 64,
          int DStaged = BlockN / DBoxCols>
struct Config {
  static constexpr int kConsumerWGs = ConsumerWGs;
  static constexpr int kBlockM = 64 * ConsumerWGs;
  static constexpr int kBlockN = BlockN;
  static constexpr int kStages = Stages;
  // the TMA-store epilogue's boxes: DBoxCols columns (<= 64: one 128-byte swizzle span of
  // bf16/fp16) x 64 rows; BlockN is a whole number of them
  static constexpr int kDBoxCols = DBoxCols;
  static constexpr int kDBoxes = BlockN / DBoxCols;
  // box buffers in shared memory per consumer warpgroup: kDBoxes store the tile in one pass;
  // fewer take the boxes in turn, each reused once its previous store has read it
  static constexpr int kDStaged = DStaged;
  static constexpr int kConsumerThreads = 128 * ConsumerWGs;
  static constexpr int kThreads = 128 + kConsumerThreads;  // producer warpgroup first
  static constexpr int kAccum = BlockN / 2;                // fp32 accumulators per thread
  // The TMA boxes (128B swizzle): kBlockM rows of A and BlockN of B, 128 bytes of K
  // (kBlockK e4m3) each; 64 rows of D's DBoxCols 2-byte elements (bf16 and fp16 alike).
  using ATile = Tile<std::uint8_t, Swizzle::bytes128, kBlockK, kBlockM>;
  using BTile = Tile<std::uint8_t, Swizzle::bytes128, kBlockK, BlockN>;
  using DTile = Tile<std::uint16_t, Swizzle::bytes128, DBoxCols, 64>;
  // NOTE: setmaxnreg moves registers from the producer warpgroup (which needs few) to the
  // consumers; the totals must fit the SM's 64 K registers: 128 * 40 + 256 * 232 = 64512.
  // Tiles wider than 128 (three sets of BlockN / 2 registers) take 8 more per consumer thread
  // from the producer: 128 * 24 + 256 * 240 = 64512.
  static constexpr int kProducerRegs = BlockN > 128 ? 24 : 40;
  static constexpr int kConsumerRegs = ConsumerWGs == 1 || BlockN > 128 ? 240 : 232;
  // Promotion needs three sets of BlockN / 2 registers (sums and two partials) and about 24
  // more (addresses, indices, the ring's state), split K a second set in its epilogue: 144
  // columns (3 * 72 + 24 = 240) still promote and split; 256 run GemmAccumulation::fast only,
  // and unsplit.
  static constexpr bool kPromotes = 3 * (BlockN / 2) + 24 <= kConsumerRegs;
  static constexpr bool kSplitsK = kPromotes;
};
// A configuration of the table (gemm_configs.hpp) as the kernel's template: the row's tile,
// ring depth and epilogue boxes; its second form (rounds_stages, rounds_d_staged) where CTAs
// take several tiles.
template <int Id>
using TiledConfig = Config<row(Id).block_m / 64, row(Id).block_n, row(Id).stages,
                           row(Id).d_box_cols, row(Id).d_staged>;
template <int Id>
using TiledRoundsConfig = Config<row(Id).block_m / 64, row(Id).block_n, row(Id).rounds_stages,
                                 row(Id).d_box_cols, row(Id).rounds_d_staged>;

template <class Cfg>
struct alignas(1024) SharedStorage {
  typename Cfg::ATile::Buffer a[Cfg::kStages];
  typename Cfg::BTile::Buffer b[Cfg::kStages];
  // the epilogue's staging: per consumer warpgroup, kDStaged boxes of its 64 x BlockN tile of
  // D (a row takes a whole 128-byte span, 128B swizzle), stored by TMA
  typename Cfg::DTile::Buffer d[Cfg::kConsumerWGs][Cfg::kDStaged];
  PipelineBarriers<Cfg::kStages> bars;
  int last_split;  // split-K: this CTA finishes the current tile
};
template <class Cfg>
constexpr std::size_t kSmemBytes = sizeof(SharedStorage<Cfg>) + 1024;  // + alignment slack

// Stores one warpgroup's 64 x BlockN accumulators (wgmma's fragment layout, PTX ISA
// "Matrix Fragments for wgmma .m64nNk32": register 4j + 2h + e of lane l in warp w holds
// row 16w + l/4 + 8h, column 8j + 2(l%4) + e), scaled, rounded once, clipped to M x N.
template <class Cfg, class T>
__device__ __forceinline__ void store_tile(const Params& p, const float (&acc)[Cfg::kAccum],
                                           float scale, std::int32_t row0, std::int32_t col0,
                                           std::uint32_t wg_tid) {
  const std::int32_t warp = static_cast<std::int32_t>(wg_tid / 32);
  const std::int32_t lane = static_cast<std::int32_t>(wg_tid % 32);
  auto* d = static_cast<T*>(p.d);
  // NOTE: two elements as one 4-byte store when rows keep 4-byte alignment (even pitch)
  const bool paired = (p.d_row_elems % 2) == 0;
#pragma unroll
  for (int j = 0; j < Cfg::kBlockN / 8; ++j) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const std::int32_t row = row0 + 16 * warp + lane / 4 + 8 * h;
      const std::int32_t col = col0 + 8 * j + 2 * (lane % 4);
      if (row >= p.m || col >= p.n) continue;
      const float v0 = acc[4 * j + 2 * h] * scale;
      const float v1 = acc[4 * j + 2 * h + 1] * scale;
      T* dst = d + static_cast<std::uint64_t>(row) * p.d_row_elems + col;
      if (paired && col + 1 < p.n) {
        *reinterpret_cast<std::uint32_t*>(dst) = round_pair<T>(v0, v1);
      } else {
        dst[0] = round_to<T>(v0);
        if (col + 1 < p.n) dst[1] = round_to<T>(v1);
      }
    }
  }
}

// The same tile through shared memory and TMA stores: the warpgroup writes its 64 x BlockN
// tile, scaled and rounded, into 64 x kDBoxCols boxes with the 128B swizzle (a quarter-warp's eight
// rows land on eight distinct 16-byte chunks: no bank conflicts), then one thread stores the
// boxes; TMA clips rows past M and columns past N (N * 2 is a multiple of 16 here, so no
// 16-byte chunk spills past a row). With a buffer per box (kDStaged == kDBoxes) the whole tile
// goes in one pass, once the previous tile's stores have read the buffers; with fewer, box b
// goes through buffer b % kDStaged, once the store that used it before has read it, so one
// box is written while the stores of the ones before it read shared memory.
template <class Cfg, class T>
__device__ __forceinline__ void store_tile_tma(const Params& p, const float (&acc)[Cfg::kAccum],
                                               float scale, typename Cfg::DTile::Buffer* boxes,
                                               std::int32_t row0,
                                               std::int32_t col0, std::uint32_t wg_tid,
                                               std::uint32_t barrier_id) {
  // NOTE: a TMA store wholly outside the tensor kills the kernel (docs/hardware.md H5): rows of
  // a tile past M (the second warpgroup of a short tile) store nothing
  if (row0 >= p.m) return;
  const std::uint32_t warp = wg_tid / 32, lane = wg_tid % 32;
  constexpr bool kOnePass = Cfg::kDStaged == Cfg::kDBoxes;
  constexpr int kPassBoxes = kOnePass ? Cfg::kDBoxes : 1;
  constexpr int kPassCols = Cfg::kDBoxCols * kPassBoxes;
  static_assert(Cfg::kDStaged >= 1 && Cfg::kDStaged <= Cfg::kDBoxes, "1..kDBoxes buffers");
  static_assert(kPassCols % 16 == 0, "a pass is whole pairs of 8-column groups (stmatrix.x4)");
#pragma unroll
  for (int pass = 0; pass < Cfg::kDBoxes / kPassBoxes; ++pass) {
    if (col0 + pass * kPassCols >= p.n) break;  // boxes wholly past N (see above)
    // the buffers this pass writes: read by every earlier store (the previous tile's) for the
    // first pass; else by the store kDStaged boxes back, with kDStaged - 1 newer ones pending
    if (wg_tid == 0) {
      if (kOnePass || pass == 0) {
        store_wait_read<0>();
      } else if (pass >= Cfg::kDStaged) {
        store_wait_read<Cfg::kDStaged - 1>();
      }
    }
    named_barrier_sync(barrier_id, 128);
    typename Cfg::DTile::Buffer* pass_boxes = kOnePass ? boxes : &boxes[pass % Cfg::kDStaged];
    stmatrix_fragment<typename Cfg::DTile, T, kPassCols>(acc, scale, pass_boxes,
                                                         pass, warp, lane);
    fence_view_async_shared();  // each writer, before the async proxy reads
    named_barrier_sync(barrier_id, 128);
    if (wg_tid == 0) {
#pragma unroll
      for (int b = 0; b < kPassBoxes; ++b) {
        const std::int32_t c[2] = {col0 + pass * kPassCols + Cfg::kDBoxCols * b, row0};
        if (c[0] >= p.n) break;  // a box wholly past N (see above)
        tmakit::store_tile<typename Cfg::DTile>(&p.d_map, &pass_boxes[b], c);
      }
      store_commit();
    }
  }
}

// One k-block of a consumer warpgroup (its stage's data already waited for) into a fresh
// partial product, committed as one group (not waited for here).
template <class Cfg>
__device__ __forceinline__ void issue_k_block(float (&part)[Cfg::kAccum], std::uint32_t a_base,
                                              std::uint32_t b_base) {
  wgmma_fence_registers(part);
  wgmma_fence();
  wgmma_k_block_e4m3<Cfg::kBlockN, true>(part, wgmma_operand_sw128(a_base),
                                         wgmma_operand_sw128(b_base));
  wgmma_commit();
}

// One k-block of a consumer warpgroup (its stage's data already waited for) added into the
// running sums `acc` (GemmAccumulation::fast), committed as one group.
template <class Cfg>
__device__ __forceinline__ void accumulate_k_block(float (&acc)[Cfg::kAccum],
                                                   std::uint32_t a_base, std::uint32_t b_base) {
  wgmma_fence_registers(acc);
  wgmma_fence();
  wgmma_k_block_e4m3<Cfg::kBlockN, false>(acc, wgmma_operand_sw128(a_base),
                                          wgmma_operand_sw128(b_base));
  wgmma_commit();
}

// Promote: GemmAccumulation::promoted (true) or fast (false). BlockScales: 128-block scales
// (GemmScaleRecipe::block) multiply each k-block's partial as it is promoted. Row-wise scales
// are applied in the epilogue of any instantiation (a runtime branch: p.scale.recipe).
template <class Cfg, class T, bool Promote, bool BlockScales = false>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    sm90_gemm_fp8_kernel(const __grid_constant__ Params p) {
  static_assert(Cfg::kBlockN % 8 == 0 && Cfg::kBlockN <= 256, "wgmma N: 8..256, step 8");
  static_assert(Cfg::kBlockN % Cfg::kDBoxCols == 0 && Cfg::kDBoxCols % 8 == 0 && Cfg::kDBoxCols <= 64,
                "the epilogue's boxes: whole 8-column fragments, at most one 128-byte span");
  static_assert(Cfg::kBlockM <= 256 && Cfg::kBlockN <= 256, "TMA boxDim <= 256 (rule T7)");
  // (each Buffer starts on the 128B swizzle's 1024-byte repeat, rule D2)
  static_assert(Cfg::ATile::smem_bytes == Cfg::ATile::tx_bytes &&
                    Cfg::BTile::smem_bytes == Cfg::BTile::tx_bytes,
                "wgmma reads A and B as dense 128-byte rows: a box "
                "must be whole 8-row groups, with no padding after it");
  static_assert(kSmemBytes<Cfg> <= 227 * 1024, "shared memory: 227 KB per CTA at most");
  static_assert(128 * Cfg::kProducerRegs + Cfg::kConsumerThreads * Cfg::kConsumerRegs <= 65536,
                "register budget after setmaxnreg exceeds the SM's 64 K registers");
  static_assert(!Promote || Cfg::kPromotes, "this configuration runs fast accumulation only");
  static_assert(!BlockScales || (Promote && 128 % Cfg::kBlockN == 0),
                "128-block scales: promotion every 128 of K, tiles of B within one 128-row "
                "block");
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ std::uint8_t smem_raw[];
  auto& s = *reinterpret_cast<SharedStorage<Cfg>*>(
      (reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t{1023});
  Pipeline<Cfg::kStages> pipe(s.bars);
  using State = typename Pipeline<Cfg::kStages>::State;

  // barrier init: full[s] takes the producer's arm; empty[s] is freed by one arrival per
  // consumer warp
  if (threadIdx.x == 0) {
    pipe.init(4 * Cfg::kConsumerWGs);
    fence_barrier_init();
  }
  __syncthreads();
  // NOTE: everything above touched shared memory only. Asking the L2 to prefetch the first
  // unit's k-blocks before the wait did not pay (kernels/gemm/EXPERIMENTS.md).
  gemm_common::warm_maps_and_wait_for_previous_kernel(&p.a_map, &p.b_map);

  const std::uint32_t wg = threadIdx.x / 128;
  if (wg == 0) {
    // ---- producer warpgroup: one thread issues every TMA load ---------------------------
    warpgroup_release_registers<Cfg::kProducerRegs>();
    if (threadIdx.x == 0) load_units<typename Cfg::ATile, typename Cfg::BTile>(p, pipe, s.a, s.b);
  } else {
    // ---- consumer warpgroups: wgmma on 64 rows of A each ------------------------------
    warpgroup_claim_registers<Cfg::kConsumerRegs>();
    // NOTE: read from lane 0 so that ptxas knows it is warp-uniform: the wgmma descriptors
    // built from it then live in uniform registers (no R2UR before every wgmma)
    const std::uint32_t cw = __shfl_sync(0xffffffffu, wg, 0) - 1;  // consumer warpgroup 0..C-1
    const std::uint32_t wg_tid = threadIdx.x % 128;
    const std::uint32_t warp = wg_tid / 32, lane = wg_tid % 32;
    const std::uint32_t ctid = threadIdx.x - 128;      // 0..kConsumerThreads-1
    const bool warp_leader = (threadIdx.x % 32) == 0;
    // past griddepcontrol.wait: a device-side scale written by the kernel before is visible
    const float scale = gemm_common::kernel_scale(p.scale);
    State st;
    // acc: the fp32 sums; part0/part1: partial products of alternate k-blocks, so that one
    // k-block's wgmmas run while the previous one's partial is added into acc
    float acc[Cfg::kAccum];
    float part0[Cfg::kAccum];
    float part1[Cfg::kAccum];
    const std::uint32_t a_off = cw * 64 * kBlockK;  // this warpgroup's 64 rows of A
    // 128-block scales: each partial's two (its k-block's, for this thread's two rows),
    // loaded when its wgmmas are issued, used when it is promoted; the next k-block to issue
    float block_scale[2][2];
    std::int32_t kb_issue = 0, scale_row0 = 0, scale_nb = 0;

    auto release = [&](const State& done) {
      if (warp_leader) pipe.consumer_release(done);
    };
    auto load_block_scales_for = [&](float (&out)[2], std::int32_t kb) {
      gemm_common::load_block_scales(out, p.scale, scale_row0, scale_nb, kb, p.m, warp, lane);
    };
    auto issue = [&](float (&part)[Cfg::kAccum], auto slot, const State& at) {
      if constexpr (BlockScales) {
        load_block_scales_for(block_scale[decltype(slot)::value], kb_issue++);
      }
      pipe.consumer_wait(at);
      issue_k_block<Cfg>(part, smem_address(&s.a[at.stage]) + a_off, smem_address(&s.b[at.stage]));
    };
    // NOTE: promotion. The tensor cores' fp8 accumulation keeps fewer bits than fp32;
    // adding each 128-deep partial into fp32 registers keeps long sums accurate. (256-deep
    // partials, two k-blocks per group, measured slower once the descriptors sat in uniform
    // registers: a pair holds four stages, so fewer are in flight; EXPERIMENTS.md.)
    auto retire = [&](float (&part)[Cfg::kAccum], auto slot, const State& done) {
      release(done);
      wgmma_fence_registers(part);
      if constexpr (BlockScales) {
        // (register 4j + 2h + e holds row h of the two)
        const float(&b)[2] = block_scale[decltype(slot)::value];
#pragma unroll
        for (int i = 0; i < Cfg::kAccum; ++i) acc[i] = fmaf(part[i], b[(i / 2) % 2], acc[i]);
      } else {
#pragma unroll
        for (int i = 0; i < Cfg::kAccum; ++i) acc[i] += part[i];
      }
    };

    for (std::int64_t u = blockIdx.x; u < p.units; u += gridDim.x) {
      const Unit w = decode_unit(p, u);
      const std::int32_t row0 = w.tm * Cfg::kBlockM + static_cast<std::int32_t>(cw) * 64;
      const std::int32_t col0 = w.tn * Cfg::kBlockN;
      if constexpr (BlockScales) {
        scale_row0 = row0;
        scale_nb = col0 / 128;
        kb_issue = w.kb_begin;
      }
#pragma unroll
      for (int i = 0; i < Cfg::kAccum; ++i) acc[i] = 0.0f;
      // NOTE: tried (one run on H200, against this build): a single stream of k-blocks over
      // all of a CTA's tiles, storing each tile while the next tile's first k-block ran,
      // measured 0-10% slower at 4096^3, 8192^3 and 4096x7168x2048; storing one step later
      // (two k-blocks in flight) spilled acc. Each tile drains before its epilogue.
      const std::int32_t kbs = w.kb_end - w.kb_begin;
      if constexpr (!Promote) {
        gemm_common::accumulated_k_blocks(
            kbs, st,
            [&](const State& at) {
              pipe.consumer_wait(at);
              accumulate_k_block<Cfg>(acc, smem_address(&s.a[at.stage]) + a_off,
                                      smem_address(&s.b[at.stage]));
            },
            release);
        wgmma_fence_registers(acc);
      } else if constexpr (Cfg::kPromotes) {
        gemm_common::pipelined_k_blocks(kbs, st, part0, part1, issue, retire);
      }

      if (Cfg::kSplitsK && w.splits > 1) {
        // split-K: publish this split's partial tile (thread-major, coalesced, L2 only)
        constexpr int kTileFloats = Cfg::kBlockM * Cfg::kBlockN;
        float* tile_ws = p.workspace + static_cast<std::int64_t>(w.slot) * p.splits * kTileFloats;
        float* mine = tile_ws + static_cast<std::int64_t>(w.split) * kTileFloats;
#pragma unroll
        for (int i = 0; i < Cfg::kAccum; ++i) __stcg(mine + i * Cfg::kConsumerThreads + ctid, acc[i]);
        __threadfence();
        named_barrier_sync(1, Cfg::kConsumerThreads);
        if (ctid == 0) {
          const std::uint32_t done = atomicAdd(&p.counters[w.slot], 1u);
          s.last_split = done == static_cast<std::uint32_t>(p.splits - 1) ? 1 : 0;
        }
        named_barrier_sync(1, Cfg::kConsumerThreads);
        // NOTE: through lane 0, so that ptxas knows the branch is warp-uniform; a plain load
        // here made every later value of the loop (the ring's state, the wgmma descriptors)
        // per-thread, and each wgmma then waited for R2UR copies of its descriptors
        if (!__shfl_sync(0xffffffffu, s.last_split, 0)) continue;
        // the last split of the tile: sum every split's partial in split order (the same
        // order whichever CTA is last, so results do not depend on timing)
        __threadfence();
        // NOTE: split outer, elements inner: a split's kAccum loads are independent and in
        // flight together (element outer made a chain of dependent L2 loads). `part0` is
        // free here (the next tile's first wgmma overwrites it); the sum order is unchanged.
#pragma unroll
        for (int i = 0; i < Cfg::kAccum; ++i) part0[i] = 0.0f;
        for (std::int32_t sp = 0; sp < p.splits; ++sp) {
          if (sp == w.split) {
#pragma unroll
            for (int i = 0; i < Cfg::kAccum; ++i) part0[i] += acc[i];
          } else {
            const float* src = tile_ws + static_cast<std::int64_t>(sp) * kTileFloats + ctid;
#pragma unroll
            for (int i = 0; i < Cfg::kAccum; ++i) part0[i] += __ldcg(src + i * Cfg::kConsumerThreads);
          }
        }
#pragma unroll
        for (int i = 0; i < Cfg::kAccum; ++i) acc[i] = part0[i];
        if (ctid == 0) p.counters[w.slot] = 0;  // ready for the next call
      }
      float out_scale = scale;
      if (p.scale.recipe == GemmScaleRecipe::row) {
        gemm_common::apply_row_scales(acc, p.scale, scale, row0, col0, p.m, p.n, warp, lane);
        out_scale = 1.0f;
      }
      if (p.d_tma_store) {
        store_tile_tma<Cfg, T>(p, acc, out_scale, s.d[cw], row0, col0, wg_tid, 2 + cw);
      } else {
        store_tile<Cfg, T>(p, acc, out_scale, row0, col0, wg_tid);
      }
    }
    // a CTA may not exit while its stores still read shared memory
    if (p.d_tma_store && wg_tid == 0) store_wait<0>();
  }
#else
  // NOTE: built for another target; fail loudly rather than return garbage.
  if (threadIdx.x == 0) printf("sm90_gemm_fp8_kernel needs sm_90a\n");
  __trap();
#endif
}

}  // namespace tmakit::detail::gemm
