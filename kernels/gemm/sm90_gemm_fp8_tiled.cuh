// The tiled FP8 GEMM kernel, D = scale * (A * B^T), on TMA + wgmma (sm_90a): the
// configurations of family `tiled` in gemm_configs.hpp (m64n128, m128n128, m128n144, m64n64,
// m128n256, m128n80, m64n32, m128n192). One persistent kernel: one thread of a producer
// warpgroup streams 128B-swizzled K-major tiles of A and B into a ring of shared-memory stages
// (full/empty mbarriers); one or two consumer warpgroups run wgmma m64nNk32 e4m3 on them,
// promote each 128-deep partial product into fp32 registers, and store D through shared
// memory and TMA (or, where D's rows are not whole 16-byte chunks, with ordinary stores).
// Shapes with too few output tiles to fill the GPU split K; the last CTA of a tile to finish
// sums the partial tiles. Its launch: sm90_gemm_fp8_tiled.cu. See README.md beside this file.
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
  // Tiles wider than 128 that hold two partials only in 240 (144 columns: 3 * 72 + 24) or
  // cannot promote at all (256) take 8 more per consumer thread from the producer: 128 * 24 +
  // 256 * 240 = 64512. 192 columns promote through one partial in 232 (2 * 96 + 24) and keep
  // the producer's 40: in 24 its 128-block scale warp spilled.
  static constexpr bool kLeanProducer =
      BlockN > 128 && (3 * (BlockN / 2) + 24 <= 240 || 2 * (BlockN / 2) + 24 > 240);
  static constexpr int kProducerRegs = kLeanProducer ? 24 : 40;
  static constexpr int kConsumerRegs = ConsumerWGs == 1 || kLeanProducer ? 240 : 232;
  // Promotion needs the sums, one or two partials (BlockN / 2 registers each) and about 24
  // more (addresses, indices, the ring's state), split K a second set in its epilogue and the
  // loads of the other splits' in flight: 144 columns (3 * 72 + 24 = 240) promote through two
  // partials and split; 192 (2 * 96 + 24) promote through one, unsplit (split, they spilled);
  // 256 run GemmAccumulation::fast only, and unsplit.
  static constexpr int kPartials = 3 * (BlockN / 2) + 24 <= kConsumerRegs ? 2 : 1;
  static constexpr bool kPromotes = 2 * (BlockN / 2) + 24 <= kConsumerRegs;
  static constexpr bool kSplitsK = kPromotes && kPartials == 2;
  // 128-block scales: a tile within one 128-row block of B (BlockN divides 128) takes one
  // scale of B per k-block; else its 64-column pieces (tiles start on multiples of 64) take
  // the scale of their own block, one of kBBlocks
  static constexpr bool kBlockColumns = tiled_block_columns(BlockN);
  static constexpr int kScalePieces = 128 % BlockN == 0 ? 1 : BlockN / 64;
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

// 128-block scales (GemmScaleRecipe::block): the stages' slots (BlockScaleStages), and the
// scale warp's own ring of kScaleAhead staging slots, into which it copies the scales of the
// k-blocks ahead where TMA cannot load scale_a (load_block_scales). None without them.
inline constexpr int kScaleAhead = 12;
template <class Cfg, bool BlockScales>
struct BlockScaleSlots {};
template <class Cfg>
struct BlockScaleSlots<Cfg, true> {
  BlockScaleStages<Cfg::kBlockM, Cfg::kBlockN, Cfg::kStages> stages;
  alignas(16) float ahead_a[kScaleAhead][Cfg::kBlockM];
  alignas(16) float ahead_b[kScaleAhead][4];
};

template <class Cfg, bool BlockScales = false>
struct alignas(1024) SharedStorage {
  typename Cfg::ATile::Buffer a[Cfg::kStages];
  typename Cfg::BTile::Buffer b[Cfg::kStages];
  // the epilogue's staging: per consumer warpgroup, kDStaged boxes of its 64 x BlockN tile of
  // D (a row takes a whole 128-byte span, 128B swizzle), stored by TMA
  typename Cfg::DTile::Buffer d[Cfg::kConsumerWGs][Cfg::kDStaged];
  PipelineBarriers<Cfg::kStages> bars;
  RowScaleSlots<Cfg::kBlockM, Cfg::kBlockN> row_scales;
  BlockScaleSlots<Cfg, BlockScales> block_scales;
  int last_split;  // split-K: this CTA finishes the current tile
};
template <class Cfg, bool BlockScales = false>
constexpr std::size_t kSmemBytes =
    sizeof(SharedStorage<Cfg, BlockScales>) + 1024;  // + alignment slack

// The configuration a tiled row runs 128-block scales with: its own, one stage shallower
// where the scales' slots would not fit beside its ring (m128n128: 5 stages, not 6).
template <class Cfg>
using BlockScalesConfig =
    Config<Cfg::kConsumerWGs, Cfg::kBlockN,
           kSmemBytes<Cfg, true> <= 227 * 1024 ? Cfg::kStages : Cfg::kStages - 1,
           Cfg::kDBoxCols, Cfg::kDStaged>;

// Where one lane of the scale warp reads the 128-block scales of the next k-block of its
// CTA's units (in the producer's order): its rows' scale_a (r = lane + 32 i, none past M) and,
// lane j < BBlocks, scale_b of the tile's 128-row block j of B (none past N), as pointers that
// step by one k-block's stride.
// NOTE: the addresses are formed once per unit and stepped per k-block: formed per k-block
// (64-bit products), one warp's instructions took longer than a k-block's wgmmas.
template <int RowsPerLane, int BBlocks>
struct BlockScaleCursor {
  std::int64_t u;
  std::int32_t kb, kb_end;
  const float* a[RowsPerLane];
  const float* b;
  std::uint32_t rows_in;  // bit i: row i is below M
  bool b_in;              // this lane copies a block of B that N holds

  template <int BlockM, int BlockN>
  __device__ void start(const Params& p, std::uint32_t lane) {
    if (u >= p.units) return;
    const Unit w = unit_of(p, u);
    kb = w.kb_begin;
    kb_end = w.kb_end;
    rows_in = 0;
#pragma unroll
    for (int i = 0; i < RowsPerLane; ++i) {
      const std::int32_t row = w.tm * BlockM + static_cast<std::int32_t>(lane) + 32 * i;
      const bool in = row < p.m;
      rows_in |= in ? 1u << i : 0u;
      a[i] = p.scale.a + (in ? row * p.scale.a_mn + kb * p.scale.a_k : 0);
    }
    const std::int32_t nb = (w.tn * BlockN) / 128 + static_cast<std::int32_t>(lane);
    b_in = lane < BBlocks && nb < (p.n + 127) / 128;
    b = p.scale.b + (b_in ? nb * p.scale.b_mn + kb * p.scale.b_k : 0);
  }
  template <int BlockM, int BlockN>
  __device__ void advance(const Params& p, std::uint32_t lane) {
    if (++kb < kb_end) {
#pragma unroll
      for (int i = 0; i < RowsPerLane; ++i) a[i] += (rows_in >> i & 1u) ? p.scale.a_k : 0;
      b += b_in ? p.scale.b_k : 0;
      return;
    }
    u += gridDim.x;
    start<BlockM, BlockN>(p, lane);
  }
};

// The scale warp of the tiled kernel for 128-block scales that TMA cannot load (scale_a not
// in M-major, 16-byte aligned columns: block_scale_a_tma). Each of its 32 threads copies
// (cp.async) scale_a[row][kb] of its rows of the tile (zeros past M) and, lane j of the tile's
// 128-row blocks of B, scale_b[nb + j][kb] (zero past N), for the k-block kScaleAhead - 1 ahead
// of the ring's, into its staging slot;
// for the ring's k-block it waits for that k-block's copies (its oldest group), waits for the
// stage to be free and moves them into the stage's slots; then the warp arrives once on the
// stage's full barrier (Pipeline::init's second producer arrival). Issued after
// griddepcontrol.wait.
// NOTE: the copies run ahead of the stages, whose slots may not be written before they are
// free, so that the L2's latency under the TMA loads' traffic is hidden. Every thread moves
// only what it copied itself; the warp's lanes then sync before lane 0 arrives.
template <class Cfg>
__device__ __forceinline__ void load_block_scales(const Params& p, Pipeline<Cfg::kStages>& pipe,
                                                  BlockScaleSlots<Cfg, true>& slots,
                                                  std::uint32_t lane) {
  constexpr int kRowsPerLane = Cfg::kBlockM / 32;
  constexpr int kBBlocks = BlockScaleStages<Cfg::kBlockM, Cfg::kBlockN, Cfg::kStages>::kBBlocks;
  static_assert(Cfg::kBlockM % 32 == 0, "whole rows per lane");
  // this CTA's k-blocks, all units
  std::uint32_t k_blocks = 0;
  for (std::int64_t u = blockIdx.x; u < p.units; u += gridDim.x) {
    const Unit w = unit_of(p, u);
    k_blocks += static_cast<std::uint32_t>(w.kb_end - w.kb_begin);
  }
  BlockScaleCursor<kRowsPerLane, kBBlocks> ahead{
      static_cast<std::int64_t>(blockIdx.x), 0, 0, {}, nullptr, 0, false};
  ahead.template start<Cfg::kBlockM, Cfg::kBlockN>(p, lane);
  constexpr std::uint32_t kSlotA = Cfg::kBlockM * 4, kSlotB = 16;
  static_assert(sizeof(slots.stages.a[0]) == kSlotA, "a stage's scale_a: its rows, no more");
  // the staging slots the next copies go to (k-block `copied`, slot `copy_slot`) and are
  // read from (the ring's k-block n, slot `read_slot`)
  std::uint32_t copied = 0, copy_slot = 0, read_slot = 0;
  const std::uint32_t ahead_a = smem_address(&slots.ahead_a[0][lane]);
  const std::uint32_t ahead_b = smem_address(&slots.ahead_b[0][0]);
  // the next k-block's copies as one group (an empty group past the last)
  const auto copy_ahead = [&] {
    if (copied < k_blocks) {
#pragma unroll
      for (int i = 0; i < kRowsPerLane; ++i) {
        copy_4_bytes_async(ahead_a + copy_slot * kSlotA + 32 * 4 * i, ahead.a[i],
                           ahead.rows_in >> i & 1u);
      }
      if (lane < kBBlocks) {
        copy_4_bytes_async(ahead_b + copy_slot * kSlotB + lane * 4, ahead.b, ahead.b_in);
      }
      ahead.template advance<Cfg::kBlockM, Cfg::kBlockN>(p, lane);
      ++copied;
      copy_slot = copy_slot + 1 == kScaleAhead ? 0 : copy_slot + 1;
    }
    commit_async_copies();
  };
  for (int n = 0; n < kScaleAhead - 1; ++n) copy_ahead();
  PipelineState<Cfg::kStages> st;
  const std::uint32_t stage_a = smem_address(&slots.stages.a[0][0]) + lane * 4;
  const std::uint32_t stage_b = smem_address(&slots.stages.b[0][0]);
  for (std::uint32_t n = 0; n < k_blocks; ++n) {
    copy_ahead();
    wait_async_copies<kScaleAhead - 1>();  // k-block n's (the oldest group) has landed
    float a[kRowsPerLane];
#pragma unroll
    for (int i = 0; i < kRowsPerLane; ++i) {
      a[i] = ptx::ld_shared_f32(ahead_a + read_slot * kSlotA + 128 * i);
    }
    const float b = lane < kBBlocks ? ptx::ld_shared_f32(ahead_b + read_slot * kSlotB + lane * 4)
                                    : 0.0f;
    read_slot = read_slot + 1 == kScaleAhead ? 0 : read_slot + 1;
    pipe.producer_wait_free(st);
#pragma unroll
    for (int i = 0; i < kRowsPerLane; ++i) {
      ptx::st_shared_f32(stage_a + st.stage * kSlotA + 128 * i, a[i]);
    }
    if (lane < kBBlocks) ptx::st_shared_f32(stage_b + st.stage * kSlotB + lane * 4, b);
    __syncwarp();  // every lane's writes before the warp's one arrival
    if (lane == 0) pipe.producer_full(st).arrive();
    st.advance();
  }
  wait_async_copies<0>();  // (the empty groups past the last k-block)
}

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
// NewerStores (one pass only): how many of the calling thread's store groups since the one
// that last used `boxes` may still be reading shared memory (the ping-pong kernel's halves in
// buffers of their own: the other half's group); each call then commits one group, an empty one
// where it stores nothing, so that the count holds.
template <class Cfg, class T, int NewerStores = 0>
__device__ __forceinline__ void store_tile_tma(const Params& p, const float (&acc)[Cfg::kAccum],
                                               float scale, typename Cfg::DTile::Buffer* boxes,
                                               std::int32_t row0,
                                               std::int32_t col0, std::uint32_t wg_tid,
                                               std::uint32_t barrier_id) {
  constexpr bool kOnePass = Cfg::kDStaged == Cfg::kDBoxes;
  static_assert(NewerStores == 0 || kOnePass, "newer stores pending: one pass only");
  // NOTE: a TMA store wholly outside the tensor kills the kernel (docs/hardware.md H5): rows of
  // a tile past M (the second warpgroup of a short tile) store nothing
  if (row0 >= p.m) {
    if constexpr (NewerStores > 0) {
      if (wg_tid == 0) store_commit();  // (an empty group)
    }
    return;
  }
  const std::uint32_t warp = wg_tid / 32, lane = wg_tid % 32;
  constexpr int kPassBoxes = kOnePass ? Cfg::kDBoxes : 1;
  constexpr int kPassCols = Cfg::kDBoxCols * kPassBoxes;
  static_assert(Cfg::kDStaged >= 1 && Cfg::kDStaged <= Cfg::kDBoxes, "1..kDBoxes buffers");
  static_assert(kPassCols % 16 == 0, "a pass is whole pairs of 8-column groups (stmatrix.x4)");
#pragma unroll
  for (int pass = 0; pass < Cfg::kDBoxes / kPassBoxes; ++pass) {
    if (col0 + pass * kPassCols >= p.n) break;  // boxes wholly past N (see above)
    // the buffers this pass writes: read by every earlier store (the previous tile's) for the
    // first pass, but for NewerStores newer groups; else by the store kDStaged boxes back, with
    // kDStaged - 1 newer ones pending
    if (wg_tid == 0) {
      if (kOnePass || pass == 0) {
        store_wait_read<NewerStores>();
      } else if (pass >= Cfg::kDStaged) {
        store_wait_read<Cfg::kDStaged - 1>();
      }
    }
    named_barrier_sync(barrier_id, 128);
    typename Cfg::DTile::Buffer* pass_boxes = kOnePass ? boxes : &boxes[pass % Cfg::kDStaged];
    // (a scale of 1, as alpha 1 with row-wise or 128-block scales, costs no multiplies there)
    stmatrix_fragment<typename Cfg::DTile, T, kPassCols>(acc, scale, pass_boxes, pass, warp,
                                                         lane);
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
// The same from the operands' descriptors, formed once and advanced per stage by the caller
// (the 128-block kernels). NOTE: the other kernels keep the form above: their descriptors
// formed once measured up to 10% slower for 64 x 128 tiles in streams, and even formed per
// k-block but before the fences rather than after them their code changed (EXPERIMENTS.md,
// "The block kernel's k-block loop beside DeepGEMM's").
template <class Cfg>
__device__ __forceinline__ void issue_k_block_descs(float (&part)[Cfg::kAccum],
                                                    std::uint64_t a_desc, std::uint64_t b_desc) {
  wgmma_fence_registers(part);
  wgmma_fence();
  wgmma_k_block_e4m3<Cfg::kBlockN, true>(part, a_desc, b_desc);
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
  static_assert(kSmemBytes<Cfg, BlockScales> <= 227 * 1024,
                "shared memory: 227 KB per CTA at most");
  static_assert(128 * Cfg::kProducerRegs + Cfg::kConsumerThreads * Cfg::kConsumerRegs <= 65536,
                "register budget after setmaxnreg exceeds the SM's 64 K registers");
  static_assert(!Promote || Cfg::kPromotes, "this configuration runs fast accumulation only");
  // named barriers: 1 the consumers (split K), 2.. each consumer warpgroup's epilogue, then
  // two per consumer warpgroup for the row-wise scales' hand-over
  constexpr RowScaleBarriers<Cfg::kConsumerWGs> kRowScaleBarriers{2 + Cfg::kConsumerWGs};
  static_assert(!BlockScales || (Promote && Cfg::kBlockColumns),
                "128-block scales: promotion every 128 of K, each 64-column piece of a tile "
                "within one 128-row block of B");
  static_assert(!BlockScales || Cfg::kScalePieces <= 3,
                "128-block scales: a tile's 64-column pieces lie in its first two 128-row "
                "blocks of B");
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  // (the 128-block kernels at the aligned base with its address held in a register: see
  // a_desc0 below)
  using Storage = SharedStorage<Cfg, BlockScales>;
  Storage* const storage = &gemm_common::shared_storage<Storage, BlockScales>();
  Storage& s = *(BlockScales ? gemm_common::held_in_register(storage) : storage);
  Pipeline<Cfg::kStages> pipe(s.bars);
  using State = typename Pipeline<Cfg::kStages>::State;

  // barrier init: full[s] takes the producer's arm (and, with 128-block scales that the
  // producer does not load itself, the scale warp's arrival); empty[s] is freed by one arrival
  // per consumer warp
  if (threadIdx.x == 0) {
    pipe.init(4 * Cfg::kConsumerWGs,
              BlockScales ? block_scale_full_arrivals(p.scale.b_tma != 0, Cfg::kStages) : 1u);
    fence_barrier_init();
  }
  __syncthreads();
  // NOTE: everything above touched shared memory only. Asking the L2 to prefetch the first
  // unit's k-blocks before the wait did not pay (kernels/gemm/EXPERIMENTS.md).
  warm_maps_and_wait<BlockScales>(p);

  const std::uint32_t wg = threadIdx.x / 128;
  if (wg == 0) {
    // ---- producer warpgroup: the TMA thread and the scale warp ----------------------
    BlockScaleStages<Cfg::kBlockM, Cfg::kBlockN, Cfg::kStages>* block = nullptr;
    if constexpr (BlockScales) block = &s.block_scales.stages;
    run_producer_warpgroup<Cfg, BlockScales>(
        p, pipe, s.a, s.b, block, s.row_scales, kRowScaleBarriers, [&](std::uint32_t lane) {
          if constexpr (BlockScales) load_block_scales<Cfg>(p, pipe, s.block_scales, lane);
        });
  } else {
    // ---- consumer warpgroups: wgmma on 64 rows of A each ------------------------------
    warpgroup_claim_registers<Cfg::kConsumerRegs>();
    // NOTE: read from lane 0 so that ptxas knows it is warp-uniform: the wgmma descriptors
    // built from it then live in uniform registers (no R2UR before every wgmma)
    const std::uint32_t cw = __shfl_sync(0xffffffffu, wg, 0) - 1;  // consumer warpgroup 0..C-1
    const std::uint32_t wg_tid = threadIdx.x % 128;
    const std::uint32_t ctid = threadIdx.x - 128;      // 0..kConsumerThreads-1
    const bool warp_leader = (threadIdx.x % 32) == 0;
    // past griddepcontrol.wait: a device-side scale written by the kernel before is visible
    const float scale = gemm_common::kernel_scale(p.scale);
    State st;
    // acc: the fp32 sums; part0/part1: partial products of alternate k-blocks, so that one
    // k-block's wgmmas run while the previous one's partial is added into acc (where the
    // registers hold one partial, kPartials == 1, part0 alone)
    float acc[Cfg::kAccum];
    float part0[Cfg::kAccum];
    [[maybe_unused]] float part1[Cfg::kPartials == 2 ? Cfg::kAccum : 1];
    const std::uint32_t a_off = cw * 64 * kBlockK;  // this warpgroup's 64 rows of A
    // With 128-block scales: that A and the tile's B as wgmma descriptors formed once at stage
    // 0, a stage's advanced from them by whole stage buffers (one add per k-block).
    // NOTE: with the aligned base above and BlockScaleStages' unsigned run index, the block
    // kernels ran 1.5-6.5% faster (H200; README.md, "128-block scales"). The other kernels
    // keep their per-k-block form: descriptors formed once made 64 x 128 tiles 5-10% slower
    // in streams at M = 256, and the aligned base fast accumulation 2-4% slower at M = 128.
    [[maybe_unused]] std::uint64_t a_desc0 = 0, b_desc0 = 0;
    if constexpr (BlockScales) {
      a_desc0 = wgmma_operand_sw128(smem_address(&s.a[0]) + a_off);
      b_desc0 = wgmma_operand_sw128(smem_address(&s.b[0]));
      a_desc0 = gemm_common::held_in_register(a_desc0);
      b_desc0 = gemm_common::held_in_register(b_desc0);
    }
    const auto a_desc = [&](const State& at) {
      return wgmma_operand_advance(
          a_desc0, at.stage * static_cast<std::uint32_t>(sizeof(typename Cfg::ATile::Buffer)));
    };
    const auto b_desc = [&](const State& at) {
      return wgmma_operand_advance(
          b_desc0, at.stage * static_cast<std::uint32_t>(sizeof(typename Cfg::BTile::Buffer)));
    };

    auto release = [&](const State& done) {
      if (warp_leader) pipe.consumer_release(done);
    };
    // With 128-block scales, each partial's k-block's scale_a[row] * scale_b (float products;
    // this thread's two rows of the tile: register 4j + 2h + e holds row h, 8 apart; per
    // 64-column piece, register i in piece i / 32, where a tile spans two blocks of B), read
    // from the stage's slots as its wgmmas are issued, applied when it is retired
    // NOTE: read as the wgmmas are issued, so that the loads' latency is not between a
    // partial's completion and its promotion (measured no faster than reading them at
    // retirement at 128 x 4096 x 7168: README.md, "128-block scales")
    [[maybe_unused]] float row_scales[Cfg::kPartials][Cfg::kScalePieces][2];
    // the k-block the next issue() reads, its unit's first, and the run slot of its scales
    [[maybe_unused]] std::int32_t issue_kb = 0, unit_kb_begin = 0;
    // where a tile spans two blocks of B: whether it starts 64 columns into its first (its
    // odd pieces then lie in the second)
    [[maybe_unused]] bool tile_off64 = false;
    [[maybe_unused]] ScaleRunSlot<Cfg::kStages> run;
    auto issue = [&](float (&part)[Cfg::kAccum], const State& at, auto which) {
      pipe.consumer_wait(at);
      if constexpr (BlockScales) {
        const std::uint32_t tile_row = cw * 64 + 16 * (wg_tid / 32) + (wg_tid % 32) / 4;
        run.at(issue_kb, unit_kb_begin);
        // NOTE: shared loads by address (through `s`, a generic pointer, they were generic
        // LDs)
        const auto& scales = s.block_scales.stages;
        const bool b_tma = p.scale.b_tma != 0;
        const std::uint32_t a_at =
            scales.a_address(at.stage, run.slot, tile_row, issue_kb, p.scale.a_tma != 0);
        const float a[2] = {ptx::ld_shared_f32(a_at), ptx::ld_shared_f32(a_at + 8 * 4)};
        if constexpr (Cfg::kScalePieces == 1) {
          const float b =
              ptx::ld_shared_f32(scales.b_address(at.stage, run.slot, 0, issue_kb, b_tma));
          row_scales[which][0][0] = a[0] * b;
          row_scales[which][0][1] = a[1] * b;
        } else {
          // piece c's block of B: the tile's first or second (kScalePieces <= 3)
          const float b[2] = {
              ptx::ld_shared_f32(scales.b_address(at.stage, run.slot, 0, issue_kb, b_tma)),
              ptx::ld_shared_f32(scales.b_address(at.stage, run.slot, 1, issue_kb, b_tma))};
#pragma unroll
          for (int c = 0; c < Cfg::kScalePieces; ++c) {
            const float bc = piece_scale_block(c, tile_off64) == 0 ? b[0] : b[1];
            row_scales[which][c][0] = a[0] * bc;
            row_scales[which][c][1] = a[1] * bc;
          }
        }
        ++issue_kb;
      }
      if constexpr (BlockScales) {
        issue_k_block_descs<Cfg>(part, a_desc(at), b_desc(at));
      } else {
        issue_k_block<Cfg>(part, smem_address(&s.a[at.stage]) + a_off,
                           smem_address(&s.b[at.stage]));
      }
    };
    // NOTE: promotion. The tensor cores' fp8 accumulation keeps fewer bits than fp32;
    // adding each 128-deep partial into fp32 registers keeps long sums accurate. (256-deep
    // partials, two k-blocks per group, measured slower once the descriptors sat in uniform
    // registers: a pair holds four stages, so fewer are in flight; EXPERIMENTS.md.)
    // With 128-block scales, the partial is multiplied by its k-block's scales as it is
    // added: one fused multiply-add per sum.
    auto retire = [&](float (&part)[Cfg::kAccum], const State& done, auto which) {
      if constexpr (BlockScales) {
        __syncwarp();  // every lane's reads of the slots before its warp frees the stage
        release(done);
        wgmma_fence_registers(part);
#pragma unroll
        for (int i = 0; i < Cfg::kAccum; ++i) {
          const int piece = Cfg::kScalePieces == 1 ? 0 : i / 32;
          acc[i] = fmaf(part[i], row_scales[which][piece][(i / 2) % 2], acc[i]);
        }
      } else {
        release(done);
        wgmma_fence_registers(part);
#pragma unroll
        for (int i = 0; i < Cfg::kAccum; ++i) acc[i] += part[i];
      }
    };

    for (std::int64_t u = blockIdx.x; u < p.units; u += gridDim.x) {
      const Unit w = unit_of(p, u);
#pragma unroll
      for (int i = 0; i < Cfg::kAccum; ++i) acc[i] = 0.0f;
      // NOTE: tried (one run on H200, against this build): a single stream of k-blocks over
      // all of a CTA's tiles, storing each tile while the next tile's first k-block ran,
      // measured 0-10% slower at 4096^3, 8192^3 and 4096x7168x2048; storing one step later
      // (two k-blocks in flight) spilled acc. Each tile drains before its epilogue.
      const std::int32_t kbs = w.kb_end - w.kb_begin;
      if constexpr (BlockScales) {
        issue_kb = unit_kb_begin = w.kb_begin;
        tile_off64 = w.tn * Cfg::kBlockN % 128 != 0;
      }
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
      } else if constexpr (Cfg::kPromotes && Cfg::kPartials == 2) {
        gemm_common::pipelined_k_blocks(kbs, st, part0, part1, issue, retire);
      } else if constexpr (Cfg::kPromotes) {
        gemm_common::serial_k_blocks(kbs, st, part0, issue, retire);
      }

      const std::int32_t row0 = w.tm * Cfg::kBlockM + static_cast<std::int32_t>(cw) * 64;
      const std::int32_t col0 = w.tn * Cfg::kBlockN;
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
        if (!__shfl_sync(0xffffffffu, s.last_split, 0)) {
          if (p.scale.recipe == GemmScaleRecipe::row) {  // (another CTA stores the tile)
            kRowScaleBarriers.wait(cw);
            kRowScaleBarriers.release(cw);
          }
          continue;
        }
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
        kRowScaleBarriers.wait(cw);
        gemm_common::apply_row_scales(acc, &s.row_scales.a[cw * 64], s.row_scales.b, scale,
                                      wg_tid / 32, wg_tid % 32);
        kRowScaleBarriers.release(cw);
        out_scale = 1.0f;
      }
      if (p.d_tma_store) {
        store_tile_tma<Cfg, T>(p, acc, out_scale, s.d[cw], row0, col0, wg_tid, 2 + cw);
      } else {
        store_tile<Cfg, T>(p, acc, out_scale, row0, col0, wg_tid);
      }
    }
    // a CTA may not exit while its stores still read shared memory (their writes complete
    // with the grid, as for any store)
    if (p.d_tma_store && wg_tid == 0) store_wait_read<0>();
  }
#else
  // NOTE: built for another target; fail loudly rather than return garbage.
  if (threadIdx.x == 0) printf("sm90_gemm_fp8_kernel needs sm_90a\n");
  __trap();
#endif
}

}  // namespace tmakit::detail::gemm
