// FP8 GEMM, D = alpha * scale_a * scale_b * (A * B^T), on TMA + wgmma (sm_90a).
// One persistent kernel: one thread of a producer warpgroup streams 128B-swizzled K-major
// tiles of A and B into a ring of shared-memory stages (full/empty mbarriers); one or two
// consumer warpgroups run wgmma m64nNk32 e4m3 on them, promote each 128-deep partial
// product into fp32 registers, and store D through shared memory and TMA (or, where D's rows
// are not whole 16-byte chunks, with ordinary stores). Shapes with too few output tiles to
// fill the GPU split K; the last CTA of a tile to finish sums the partial tiles.
// Configurations 0, 1, 4, 5, 6 and 9 (2 is retired); the small-M kernel (configurations 3 and
// 8) is sm90_gemm_fp8_small_m.cu, the two-wave kernel (configurations 7 and 10)
// sm90_gemm_fp8_waves.cuh; the plan that picks one per shape, gemm_plan.cpp.
// See README.md beside this file.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "gemm_launch.hpp"
#include "gemm_plan.hpp"
#include "gemm_workspace.hpp"
#include "sm90_gemm_common.cuh"
#include "sm90_gemm_schedule.cuh"
#include "tmakit/device/barrier.hpp"
#include "tmakit/device/copy.hpp"
#include "tmakit/device/pipeline.hpp"
#include "tmakit/device/tile.hpp"
#include "tmakit/kernels/detail/launch_support.hpp"
#include "tmakit/kernels/gemm.hpp"
#include "tmakit/ptx/sm90_wgmma.hpp"
#include "tmakit/swizzle.hpp"

namespace tmakit::detail::gemm {

using gemm_common::kBlockK;
using gemm_common::kWgmmaK;
using gemm_common::pack2;
using gemm_common::to_out;

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
using Config0 = Config<1, 128, 8>;  // m64n128:  small M, 24 KB per stage
// m128n128: 32 KB per stage
using Config1 = Config<2, 128, 6>;
// m64n64: 16 KB per stage, 12 deep: twice the tiles of config 0, for shapes whose 64 x 128
// tiles would leave SMs idle (M = 128, N = 4096: 64 of them on 132 SMs)
using Config5 = Config<1, 64, 12>;
// m128n256 (fast accumulation only): 48 KB per stage, 4 deep; each consumer warpgroup one
// m64n256 wgmma per K slice (A read once per slice, as cuBLASLt's fast 128 x 256 kernel);
// D through two 64-column box buffers per warpgroup, one box written while the other's store
// reads (the ring leaves 32 KB for them)
using Config6 = Config<2, 256, 4, 64, 2>;
// The same where CTAs take several tiles: 3 deep, and a buffer for each of D's four boxes
// per warpgroup, so that a tile's epilogue never waits for its own stores and the next
// tile's wgmmas start sooner. NOTE: one tile per CTA (1024 x 4096 x 4096) ran 1-2.5% slower
// so, several 1-4% faster (EXPERIMENTS.md, "Configuration 6's epilogue").
using Config6Rounds = Config<2, 256, 3, 64, 4>;
static_assert(Config6Rounds::kBlockM == Config6::kBlockM &&
                  Config6Rounds::kBlockN == Config6::kBlockN &&
                  Config6Rounds::kDBoxCols == Config6::kDBoxCols,
              "configuration 6's two forms share its tensor maps (tiles and D's boxes)");
// m128n144: 34 KB per stage, 6 deep; D in three 48-column boxes (a 96-byte box row takes a
// whole 128-byte swizzle span), one buffer per warpgroup, box after box. Three sets of 72
// registers (sums and two partials) fit at 240 registers per consumer thread.
using Config4 = Config<2, 144, 6, 48, 1>;
// m128n80: 26 KB per stage, 7 deep; D in two 40-column boxes. For shapes whose 128 x 128
// tiles, in their one round, leave a quarter of the SMs or more idle: 128 x 10240 on 132 SMs
// is 80 tiles of 128 columns, 128 of 80 (the tile cuBLASLt's kernel takes there).
using Config9 = Config<2, 80, 7, 40>;

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
        *reinterpret_cast<std::uint32_t*>(dst) = pack2<T>(v0, v1);
      } else {
        dst[0] = to_out<T>(v0);
        if (col + 1 < p.n) dst[1] = to_out<T>(v1);
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
    // two 8-column groups per stmatrix.x4: matrices (rows 0-7, group j), (rows 8-15, j),
    // (0-7, j + 1), (8-15, j + 1) of this warp's 16 rows; lane l gives the address of row
    // l % 8 of matrix l / 8
    const std::uint32_t mat = lane / 8;
    const std::uint32_t row = 16 * warp + lane % 8 + 8 * (mat % 2);
#pragma unroll
    for (int j = pass * kPassCols / 8; j < (pass + 1) * kPassCols / 8; j += 2) {
      const std::uint32_t col = 8 * (j + mat / 2) - pass * kPassCols;  // in the pass
      const std::uint32_t offset = Cfg::DTile::offset_bytes(col % Cfg::kDBoxCols, row);
      ptx::stmatrix_x4(ptx::smem_u32(&pass_boxes[col / Cfg::kDBoxCols].bytes[offset]),
                       pack2<T>(acc[4 * j] * scale, acc[4 * j + 1] * scale),
                       pack2<T>(acc[4 * j + 2] * scale, acc[4 * j + 3] * scale),
                       pack2<T>(acc[4 * j + 4] * scale, acc[4 * j + 5] * scale),
                       pack2<T>(acc[4 * j + 6] * scale, acc[4 * j + 7] * scale));
    }
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

// The 4 wgmmas of K = 32 of one k-block into `part`; with Fresh, the first overwrites it (a new
// partial product). No fence, no commit: the callers put these around whole groups.
template <class Cfg, bool Fresh>
__device__ __forceinline__ void k_block_wgmmas(float (&part)[Cfg::kAccum], std::uint32_t a_base,
                                               std::uint32_t b_base) {
  const std::uint64_t desc_a = ptx::wgmma_smem_desc_k_major_sw128(a_base);
  const std::uint64_t desc_b = ptx::wgmma_smem_desc_k_major_sw128(b_base);
#pragma unroll
  for (int kk = 0; kk < kBlockK / kWgmmaK; ++kk) {
    // NOTE: advancing the start address by 32 bytes inside the 128-byte swizzled row selects
    // the next K slice; the hardware applies the swizzle to the full address.
    ptx::wgmma_mma_async_m64k32_f32_e4m3<Cfg::kBlockN>(
        part, ptx::wgmma_smem_desc_advance(desc_a, kk * kWgmmaK),
        ptx::wgmma_smem_desc_advance(desc_b, kk * kWgmmaK), kk > 0 || !Fresh ? 1u : 0u);
  }
}

// One k-block of a consumer warpgroup (its stage's data already waited for) into a fresh
// partial product, committed as one group (not waited for here).
template <class Cfg>
__device__ __forceinline__ void issue_k_block(float (&part)[Cfg::kAccum], std::uint32_t a_base,
                                              std::uint32_t b_base) {
  ptx::wgmma_fence_operands(part);
  ptx::wgmma_fence_sync_aligned();
  k_block_wgmmas<Cfg, true>(part, a_base, b_base);
  ptx::wgmma_commit_group_sync_aligned();
}

// One k-block of a consumer warpgroup (its stage's data already waited for) added into the
// running sums `acc` (GemmAccumulation::fast), committed as one group.
template <class Cfg>
__device__ __forceinline__ void accumulate_k_block(float (&acc)[Cfg::kAccum],
                                                   std::uint32_t a_base, std::uint32_t b_base) {
  ptx::wgmma_fence_operands(acc);
  ptx::wgmma_fence_sync_aligned();
  k_block_wgmmas<Cfg, false>(acc, a_base, b_base);
  ptx::wgmma_commit_group_sync_aligned();
}

// Promote: GemmAccumulation::promoted (true) or fast (false).
template <class Cfg, class T, bool Promote>
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
    ptx::setmaxnreg_dec_sync_aligned_u32<Cfg::kProducerRegs>();
    if (threadIdx.x == 0) load_units<typename Cfg::ATile, typename Cfg::BTile>(p, pipe, s.a, s.b);
  } else {
    // ---- consumer warpgroups: wgmma on 64 rows of A each ------------------------------
    ptx::setmaxnreg_inc_sync_aligned_u32<Cfg::kConsumerRegs>();
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
    // k-block's wgmmas run while the previous one's partial is added into acc
    float acc[Cfg::kAccum];
    float part0[Cfg::kAccum];
    float part1[Cfg::kAccum];
    const std::uint32_t a_off = cw * 64 * kBlockK;  // this warpgroup's 64 rows of A

    auto release = [&](const State& done) {
      if (warp_leader) pipe.consumer_release(done);
    };
    auto issue = [&](float (&part)[Cfg::kAccum], const State& at) {
      pipe.consumer_wait(at);
      issue_k_block<Cfg>(part, ptx::smem_u32(&s.a[at.stage]) + a_off, ptx::smem_u32(&s.b[at.stage]));
    };
    // NOTE: promotion. The tensor cores' fp8 accumulation keeps fewer bits than fp32;
    // adding each 128-deep partial into fp32 registers keeps long sums accurate. (256-deep
    // partials, two k-blocks per group, measured slower once the descriptors sat in uniform
    // registers: a pair holds four stages, so fewer are in flight; EXPERIMENTS.md.)
    auto retire = [&](float (&part)[Cfg::kAccum], const State& done) {
      release(done);
      ptx::wgmma_fence_operands(part);
#pragma unroll
      for (int i = 0; i < Cfg::kAccum; ++i) acc[i] += part[i];
    };

    for (std::int64_t u = blockIdx.x; u < p.units; u += gridDim.x) {
      const Unit w = decode_unit(p, u);
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
              accumulate_k_block<Cfg>(acc, ptx::smem_u32(&s.a[at.stage]) + a_off,
                                      ptx::smem_u32(&s.b[at.stage]));
            },
            release);
        ptx::wgmma_fence_operands(acc);
      } else if constexpr (Cfg::kPromotes) {
        gemm_common::pipelined_k_blocks(kbs, st, part0, part1, issue, retire);
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
      if (p.d_tma_store) {
        store_tile_tma<Cfg, T>(p, acc, scale, s.d[cw], row0, col0, wg_tid, 2 + cw);
      } else {
        store_tile<Cfg, T>(p, acc, scale, row0, col0, wg_tid);
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

// The kernel of a configuration and mode, its shared-memory limit raised on the current device
// (once per device), so that a call costs one launch on the host.
template <class Cfg, class T>
void launch(const Params& p, unsigned grid, cudaStream_t stream, bool overlap, bool promote) {
  // (gemm_fp8 refuses promotion for a configuration that cannot promote)
  auto* const kernel = [promote] {
    if constexpr (Cfg::kPromotes) {
      if (promote) return prepared_kernel<&sm90_gemm_fp8_kernel<Cfg, T, true>>(kSmemBytes<Cfg>);
    }
    return prepared_kernel<&sm90_gemm_fp8_kernel<Cfg, T, false>>(kSmemBytes<Cfg>);
  }();
  KernelLaunch l(grid, Cfg::kThreads, kSmemBytes<Cfg>, stream);
  if (overlap) l.overlap_previous_kernel();
  launch_kernel_ex(l, kernel, "sm90_gemm_fp8_kernel", p);
}

// Configuration 6: Config6Rounds where some CTA takes more than one tile, else Config6.
template <class T>
void launch_wide(const Params& p, unsigned grid, cudaStream_t stream, bool overlap, bool promote) {
  if (p.units > static_cast<std::int64_t>(grid)) {
    launch<Config6Rounds, T>(p, grid, stream, overlap, promote);
  } else {
    launch<Config6, T>(p, grid, stream, overlap, promote);
  }
}

// What launches each configuration's kernel, by D's type: (params, grid, stream,
// overlap_launch, promote). Null for the small-M kernel (its own launch) and retired ids.
struct ConfigLaunch {
  void (*bf16)(const Params&, unsigned, cudaStream_t, bool, bool);
  void (*fp16)(const Params&, unsigned, cudaStream_t, bool, bool);
};
template <class Cfg>
constexpr ConfigLaunch launches() {
  return {&launch<Cfg, __nv_bfloat16>, &launch<Cfg, __half>};
}
const ConfigLaunch kLaunches[] = {launches<Config0>(),
                                  launches<Config1>(),
                                  {nullptr, nullptr},  // retired
                                  {nullptr, nullptr},  // the small-M kernel
                                  launches<Config4>(),
                                  launches<Config5>(),
                                  {&launch_wide<__nv_bfloat16>, &launch_wide<__half>},
                                  {&launch_gemm_fp8_waves_bf16, &launch_gemm_fp8_waves_fp16},
                                  {nullptr, nullptr},  // the small-M kernel
                                  launches<Config9>(),
                                  {&launch_gemm_fp8_waves_n_bf16, &launch_gemm_fp8_waves_n_fp16}};
static_assert(sizeof(kLaunches) / sizeof(kLaunches[0]) == kGemmConfigs,
              "a launch for every configuration id");

// The plan's view of each configuration (gemm_plan.hpp) is the kernel's own.
static_assert(kKBlock == kBlockK, "the plan's k-blocks are the kernels'");
template <class Cfg>
constexpr bool shape_is(int id) {
  const ConfigShape& c = kConfigShapes[id];
  return c.block_m == Cfg::kBlockM && c.block_n == Cfg::kBlockN && c.d_box_cols == Cfg::kDBoxCols &&
         c.promotes == Cfg::kPromotes && c.splits_k == Cfg::kSplitsK && c.plain_stores &&
         c.retired == nullptr;
}
static_assert(shape_is<Config0>(0) && shape_is<Config1>(1) && shape_is<Config4>(4) &&
                  shape_is<Config5>(5) && shape_is<Config6>(kWideConfig) &&
                  shape_is<Config6Rounds>(kWideConfig) && shape_is<Config9>(kNarrowConfig),
              "gemm_plan.hpp's kConfigShapes rows agree with the tiled kernel's Configs");
constexpr bool waves_shape_is(int id, int block_m, int block_n) {
  const ConfigShape& c = kConfigShapes[id];
  return c.block_m == block_m && c.block_n == block_n && c.d_box_cols == kWavesDBoxCols &&
         c.promotes && !c.splits_k && !c.plain_stores && c.retired == nullptr;
}
static_assert(waves_shape_is(kWavesConfig, kWavesBlockM, kWavesBlockN) &&
                  waves_shape_is(kWavesNConfig, kWavesNBlockM, kWavesNBlockN),
              "gemm_plan.hpp's kConfigShapes rows agree with the two-wave kernel's tiles");
static_assert(kConfigShapes[kSmallMConfig].block_m == 0 &&
                  kConfigShapes[kSmallMWideConfig].block_m == 0 &&
                  kConfigShapes[2].retired != nullptr,
              "the small-M kernel's rows and the retired one have no tiled kernel");

void check_operand_type(const char* arg, const ConstTensorRef& v) {
  if (v.type != DataType::uint8) {
    throw ArgumentError(std::string(arg) + ".type",
                        std::string(name(v.type)) +
                            " is not UINT8; pass e4m3 bits as UINT8 (fp8 travels as UINT8 "
                            "through TMA)");
  }
}

}  // namespace tmakit::detail::gemm

namespace tmakit {

void gemm_fp8_release_workspace(cudaStream_t stream) {
  detail::gemm::release_stream_workspace(stream);
}

void gemm_fp8(ConstTensorRef a, ConstTensorRef b, TensorRef d, const GemmScales& scales,
              cudaStream_t stream, const GemmTuning& tuning) {
  using namespace detail::gemm;
  // step 1: validate every argument before anything is written
  // NOTE: K first: a K that is not a multiple of 16 also gives rows no TMA stride can step,
  // and the fix is to pad K, not the stride
  const std::uint64_t m = a.rows, n = b.rows, k = a.cols;
  check_operand_type("a", a);
  check_operand_type("b", b);
  if (k % 16 != 0) {
    throw ArgumentError("a.cols", "K = " + std::to_string(k) +
                                      " is not a multiple of 16 (TMA's 16-byte rows); pad K "
                                      "with zeros to " + std::to_string((k + 15) / 16 * 16));
  }
  if (b.cols != a.cols) {
    throw ArgumentError("b.cols", std::to_string(b.cols) + " (K of B) differs from a.cols " +
                                      std::to_string(a.cols) + " (K of A); both are K-major");
  }
  detail::check_view("a", a, false);
  detail::check_view("b", b, false);
  const detail::GemmKernelScale scale = detail::gemm_kernel_scale(scales);
  if (d.data == nullptr) throw ArgumentError("d.data", "is null; pass a device pointer");
  if (reinterpret_cast<std::uintptr_t>(d.data) % 16 != 0) {
    throw ArgumentError("d.data", detail::hex_address(d.data) + " is not 16-byte aligned");
  }
  if (d.type != DataType::bfloat16 && d.type != DataType::float16) {
    throw ArgumentError("d.type", std::string(name(d.type)) + " is not supported; use "
                                                              "BFLOAT16 or FLOAT16");
  }
  if (d.rows != m || d.cols != n) {
    throw ArgumentError("d", "shape " + std::to_string(d.rows) + "x" + std::to_string(d.cols) +
                                 " is not M x N = " + std::to_string(m) + "x" +
                                 std::to_string(n));
  }
  if (d.batch != 1) throw ArgumentError("d.batch", "must be 1: one matrix");
  if (d.row_stride_bytes != 0 && (d.row_stride_bytes < n * 2 || d.row_stride_bytes % 2 != 0)) {
    throw ArgumentError("d.row_stride_bytes", std::to_string(d.row_stride_bytes) +
                                                  " is under a row's " + std::to_string(n * 2) +
                                                  " bytes or not whole elements");
  }
  detail::check_span("d", d);  // before the overlap test: a wrapped span would miss overlap
  if (detail::overlaps(d, a) || detail::overlaps(d, b)) {
    throw ArgumentError("d.data", "overlaps a or b; D must be separate memory");
  }
  check_config(tuning);
  check_splits(tuning, k);  // before the device is asked for its SM count
  check_accumulation(tuning);
  check_config_tuning(tuning.config, tuning);
  // NOTE: TMA stores write whole 16-byte chunks: D's rows must be whole chunks (N * 2 and
  // the pitch multiples of 16) for the stores to stop exactly at column N; else plain
  // stores, which the two-wave kernel (configurations 7 and 10) does not have
  const bool d_whole_chunks = (n * 2) % 16 == 0 && d.row_pitch() % 16 == 0;
  if (tuning.config >= 0 && !kConfigShapes[tuning.config].plain_stores && !d_whole_chunks) {
    throw ArgumentError("tuning.config",
                        std::string("configuration ") + kConfigShapes[tuning.config].name +
                            " stores D with TMA only, and D's rows are not whole 16-byte "
                            "chunks (N = " +
                            std::to_string(n) + ", row pitch " + std::to_string(d.row_pitch()) +
                            " bytes); use another configuration, or N and a pitch that are "
                            "multiples of 8 elements");
  }
  // NOTE: the plan takes the small-M kernel for every M <= 64: its rules for the splits
  // apply there whether the configuration was forced or chosen (no SM count needed)
  if (small_m_config(tuning.config) || (tuning.config < 0 && m <= 64)) {
    check_small_m_tuning(tuning.config < 0 ? kSmallMConfig : tuning.config, m,
                         static_cast<std::int64_t>((k + kBlockK - 1) / kBlockK), tuning);
  }

  // step 2: the plan, parameters and cached tensor maps (box: 128 bytes of K x the tile's
  // rows), or those of the last call on this thread when its operands were the same
  int device = 0;
  TMAKIT_CUDA_CHECK(cudaGetDevice(&device));
  const detail::GemmCallKey key{a.data,       b.data,       d.data,       m, n, k,
                                a.row_pitch(), b.row_pitch(), d.row_pitch(), d.type,
                                tuning.config, tuning.splits, device,
                                tuning.accumulation};
  struct Prepared {
    GemmPlan plan;
    Params p;
  };
  thread_local detail::LastCall<Prepared> last;
  const Prepared& prepared = last.get(key, [&] {
    // memory the GPU cannot reach (malloc'd, another device's) is refused by name here, once
    // per distinct call: a kernel faulting on it would leave every later CUDA call failing
    detail::require_device_pointer(a.data, "a.data");
    detail::require_device_pointer(b.data, "b.data");
    detail::require_device_pointer(d.data, "d.data");
    Prepared r{gemm_fp8_plan(m, n, k, detail::multiprocessor_count(), tuning), Params{}};
    if (!kConfigShapes[std::max(r.plan.config, 0)].plain_stores && !d_whole_chunks) {
      // (chosen, not forced: see above) a configuration that stores D with TMA only, and D's
      // pitch is not whole chunks: the 128 x 128 tiles instead
      GemmTuning t = tuning;
      t.config = 1;
      r.plan = gemm_fp8_plan(m, n, k, detail::multiprocessor_count(), t);
    }
    if (small_m_config(r.plan.config)) return r;
    const ConfigShape& c = kConfigShapes[r.plan.config];
    Params& q = r.p;
    q.a_map = detail::cached_tensor_map(detail::view_spec(
        a, DataType::uint8, {static_cast<std::uint32_t>(kBlockK),
                             static_cast<std::uint32_t>(c.block_m), 1},
        Swizzle::bytes128));
    q.b_map = detail::cached_tensor_map(detail::view_spec(
        b, DataType::uint8, {static_cast<std::uint32_t>(kBlockK),
                             static_cast<std::uint32_t>(c.block_n), 1},
        Swizzle::bytes128));
    q.d = d.data;
    q.d_row_elems = d.row_pitch() / 2;
    q.d_tma_store = d_whole_chunks ? 1 : 0;
    if (q.d_tma_store) {
      q.d_map = detail::cached_tensor_map(detail::view_spec(
          d, d.type, {static_cast<std::uint32_t>(c.d_box_cols), 64, 1}, Swizzle::bytes128));
    }
    q.m = static_cast<std::int32_t>(m);
    q.n = static_cast<std::int32_t>(n);
    q.k_blocks = static_cast<std::int32_t>((k + kBlockK - 1) / kBlockK);
    q.tiles_m = static_cast<std::int32_t>((m + c.block_m - 1) / c.block_m);
    q.tiles_n = static_cast<std::int32_t>((n + c.block_n - 1) / c.block_n);
    q.splits = r.plan.splits;
    q.whole_tiles = static_cast<std::int32_t>(r.plan.tiles - r.plan.split_tiles);
    q.units = plan_units(r.plan);
    return r;
  });
  // (not part of the key: remembered by require_device_pointer itself)
  if (scales.scale_a_device != nullptr) {
    detail::require_device_pointer(scales.scale_a_device, "scales.scale_a_device");
  }
  if (scales.scale_b_device != nullptr) {
    detail::require_device_pointer(scales.scale_b_device, "scales.scale_b_device");
  }
  const GemmPlan& plan = prepared.plan;
  if (small_m_config(plan.config)) {
    detail::launch_gemm_fp8_small_m(a, b, d, scale, small_m_rows_b(plan.config), plan.splits,
                                    stream, key, tuning.overlap_launch,
                                    tuning.accumulation == GemmAccumulation::promoted);
    return;
  }
  const ConfigShape& c = kConfigShapes[plan.config];
  const ConfigLaunch& launches_of = kLaunches[plan.config];
  Params p = prepared.p;
  p.scale = scale;

  // step 3: launch (split K: with the stream's workspace)
  const bool promote = tuning.accumulation == GemmAccumulation::promoted;
  const auto launch = [&](const Params& q) {
    if (d.type == DataType::bfloat16) {
      launches_of.bf16(q, plan.grid, stream, tuning.overlap_launch, promote);
    } else {
      launches_of.fp16(q, plan.grid, stream, tuning.overlap_launch, promote);
    }
  };
  if (plan.splits > 1) {
    const std::size_t tile_bytes = static_cast<std::size_t>(c.block_m) * c.block_n * 4;
    const auto split_units = static_cast<std::size_t>(plan.split_tiles * plan.splits);
    const Workspace w = stream_workspace(tile_bytes * split_units,
                                         static_cast<std::size_t>(plan.split_tiles), stream);
    p.workspace = w.partials;
    p.counters = w.counters;
  }
  launch(p);
}

}  // namespace tmakit
