// What the FP8 GEMM kernels (sm90_gemm_fp8_tiled.cuh, sm90_gemm_fp8_small_m.cu,
// sm90_gemm_fp8_waves.cuh) share: the k-block size, the start of a dependent launch, the
// scale, the software pipeline that overlaps one k-block's wgmmas with the promotion of the
// previous one; and the tiled and two-wave kernels' launch parameters and work schedule, which
// their launch (sm90_gemm_fp8_tiled.cu) fills once per distinct call and the kernels decode
// their units from.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "gemm_launch.hpp"
#include "gemm_scale_runs.hpp"
#include "gemm_units.hpp"
#include "tmakit/device/barrier.hpp"
#include "tmakit/device/copy.hpp"
#include "tmakit/device/pipeline.hpp"
#include "tmakit/device/sm90_wgmma.hpp"
#include "tmakit/device/tile.hpp"
#include "tmakit/swizzle.hpp"

namespace tmakit::detail::gemm_common {

constexpr int kBlockK = kWgmmaKBlockBytes;  // K bytes per k-block: one 128B swizzle span
constexpr int kWgmmaK = kWgmmaKBytes;       // K per wgmma (fp8)

// A tiled kernel's start once its barriers are initialised and visible: thread 0 warms the
// tensor maps (kernel parameters, which the kernel before does not write), then every thread
// waits for the kernel before it (griddepcontrol.wait: complete, its writes visible; the
// kernel is launched to overlap it, GemmTuning::overlap_launch) before any global access, and
// lets the next kernel start setting up the same way.
template <class... Maps>
__device__ __forceinline__ void warm_maps_and_wait_for_previous_kernel(const Maps*... maps) {
  if (threadIdx.x == 0) (prefetch_tensor_map(maps), ...);
  wait_for_previous_kernel();
  allow_next_kernel();
}

// A kernel's shared storage in its dynamic shared memory, 1024-aligned (the 128B swizzle's
// repeat). Aligned: the storage at the base, declared 1024-aligned, so that the addresses a
// loop forms from it are fixed offsets from the CTA's shared window rather than from a
// generic pointer rounded up at run time (64-bit adds at every iteration); else the base
// rounded up at run time (the launch's 1024 bytes of slack). NOTE: the 128-block kernels take
// the first (and hold its address in a register: held_in_register); the others keep the
// second, which measured as fast or faster for them (EXPERIMENTS.md, "The block kernel's
// k-block loop beside DeepGEMM's").
template <class Storage, bool Aligned>
__device__ __forceinline__ Storage& shared_storage() {
  std::uint8_t* base;
  if constexpr (Aligned) {
    extern __shared__ __align__(1024) std::uint8_t smem_aligned[];
    base = smem_aligned;
  } else {
    extern __shared__ std::uint8_t smem_raw[];
    base = reinterpret_cast<std::uint8_t*>(
        (reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t{1023});
  }
  return *reinterpret_cast<Storage*>(base);
}

// `v` (a pointer, an address or a descriptor) as a value ptxas cannot trace back to how it
// was formed: it then keeps it in a register. NOTE: a shared address carries the CTA's id in
// the cluster (S2UR SR_CgaCtaId), and in the 128-block kernels ptxas re-derived it, and each
// descriptor's fields from it, at every k-block, on the loop's way to its next barrier wait
// and wgmma; held, the block kernels ran 1-4% faster at M >= 1024, while the per-tensor
// two-wave kernels, given the same, ran no faster (EXPERIMENTS.md, "Addresses held in
// registers").
template <class T>
__device__ __forceinline__ T held_in_register(T v) {
  static_assert(sizeof(T) == 8 || sizeof(T) == 4, "a 32- or 64-bit value");
  if constexpr (sizeof(T) == 8) {
    asm volatile("" : "+l"(v));
  } else {
    asm volatile("" : "+r"(v));
  }
  return v;
}

// The scale of this call (GemmKernelScale). Call it after griddepcontrol.wait: a device-side
// scale may be written by the kernel before this one. Read through the L2 (ld.global.cg),
// never from a line of L1 that may predate that kernel's writes.
// Row-wise and 128-block recipes: alpha (their arrays are read where they apply, below).
__device__ __forceinline__ float kernel_scale(const GemmKernelScale& s) {
  if (s.recipe != GemmScaleRecipe::tensor || (s.a == nullptr && s.b == nullptr)) return s.host;
  double v = s.host_wide;
  if (s.a != nullptr) v *= static_cast<double>(__ldcg(s.a));
  if (s.b != nullptr) v *= static_cast<double>(__ldcg(s.b));
  return static_cast<float>(v);
}

// Row-wise scales on a warpgroup's 64 x Cols fragment of sums (wgmma's layout: register
// 4j + 2h + e of lane l in warp w holds row 16w + l/4 + 8h, column 8j + 2(l%4) + e): each sum
// times (alpha * rows[row]) * cols[col], products rounded to float. `rows` and `cols`: the
// fragment's scale_a and scale_b in shared memory (RowScaleSlots, from its first row and
// column; 0 past M and N, whose sums are not stored).
// (shared loads by address: through the generic pointers they would be generic LDs)
namespace row_scale_detail {
// alpha * rows[row] of the lane's two rows of a 64-row fragment
__device__ __forceinline__ void lane_rows(float (&row_scale)[2], const float* rows, float alpha,
                                          std::uint32_t warp, std::uint32_t lane) {
  const std::uint32_t row_at = ptx::smem_u32(&rows[16 * warp + lane / 4]);
  row_scale[0] = alpha * ptx::ld_shared_f32(row_at);
  row_scale[1] = alpha * ptx::ld_shared_f32(row_at + 8 * 4);
}
// The lane's sums of 8-column group j times the row's and the column's scales (c: the
// lane's two columns of the group)
template <int R>
__device__ __forceinline__ void scale_group(float (&acc)[R], int j, const float (&row_scale)[2],
                                            float2 c) {
  acc[4 * j] *= row_scale[0] * c.x;
  acc[4 * j + 1] *= row_scale[0] * c.y;
  acc[4 * j + 2] *= row_scale[1] * c.x;
  acc[4 * j + 3] *= row_scale[1] * c.y;
}
}  // namespace row_scale_detail

template <int R>
__device__ __forceinline__ void apply_row_scales(float (&acc)[R], const float* rows,
                                                 const float* cols, float alpha,
                                                 std::uint32_t warp, std::uint32_t lane) {
  static_assert(R % 4 == 0, "whole 8-column groups");
  const std::uint32_t col_at = ptx::smem_u32(&cols[2 * (lane % 4)]);
  float row_scale[2];
  row_scale_detail::lane_rows(row_scale, rows, alpha, warp, lane);
#pragma unroll
  for (int j = 0; j < R / 4; ++j) {
    row_scale_detail::scale_group(acc, j, row_scale, ptx::ld_shared_v2_f32(col_at + 8 * j * 4));
  }
}

// The same on the two 64-row halves of a 128 x Cols tile (top: rows[0..63], bottom:
// rows[64..127]; the same columns), each column pair's scales loaded once for both.
// NOTE: where the epilogue is on the tile's critical path (the ping-pong tiles at short K)
// each shared load it saves counts.
template <int R>
__device__ __forceinline__ void apply_row_scales(float (&top)[R], float (&bottom)[R],
                                                 const float* rows, const float* cols, float alpha,
                                                 std::uint32_t warp, std::uint32_t lane) {
  static_assert(R % 4 == 0, "whole 8-column groups");
  const std::uint32_t col_at = ptx::smem_u32(&cols[2 * (lane % 4)]);
  float top_rows[2], bottom_rows[2];
  row_scale_detail::lane_rows(top_rows, rows, alpha, warp, lane);
  row_scale_detail::lane_rows(bottom_rows, rows + 64, alpha, warp, lane);
#pragma unroll
  for (int j = 0; j < R / 4; ++j) {
    const float2 c = ptx::ld_shared_v2_f32(col_at + 8 * j * 4);
    row_scale_detail::scale_group(top, j, top_rows, c);
    row_scale_detail::scale_group(bottom, j, bottom_rows, c);
  }
}

// Output rounding (the device layer's): one value of D, or two as one 32-bit word.
using tmakit::round_pair;
using tmakit::round_to;

// A consumer warpgroup's walk over `count` (>= 1) k-blocks of the ring, from `st`:
// issue(part, state, which) waits for the stage and commits its wgmmas into `part` (a fresh
// partial product); retire(part, state, which) runs once they are done (free the stage, add
// the partial into the fp32 sums). Two partials alternate by name, so both stay in
// registers, and k-block k + 1's wgmmas run while k-block k's partial is added
// (wgmma.wait_group 1). `which` (std::integral_constant 0 or 1: part0 or part1) lets a caller
// keep state of its own per partial in registers too.
// NOTE: retiring k first whenever k + 1's data was not there yet (mbarrier.test_wait), to
// hand its stage back sooner, measured slower (M = 16-64 and 4096^3, one run on H200).
template <class State, int N, class Issue, class Retire>
__device__ __forceinline__ void pipelined_k_blocks(std::int32_t count, State& st, float (&part0)[N],
                                                   float (&part1)[N], Issue&& issue,
                                                   Retire&& retire) {
  using First = std::integral_constant<int, 0>;
  using Second = std::integral_constant<int, 1>;
  // k-block j + 1 into `next` while `last` (k-block j, at `prev`) is retired
  auto step = [&](float(&next)[N], auto next_which, float(&last)[N], auto last_which,
                  State& prev) {
    const State cur = st;
    issue(next, st, next_which);
    st.advance();
    wgmma_wait<1>();
    retire(last, prev, last_which);
    prev = cur;
  };
  State prev = st;
  issue(part0, st, First{});
  st.advance();
  for (std::int32_t j = 1;; j += 2) {
    if (j >= count) {
      wgmma_wait<0>();
      retire(part0, prev, First{});
      return;
    }
    step(part1, Second{}, part0, First{}, prev);
    if (j + 1 >= count) {
      wgmma_wait<0>();
      retire(part1, prev, Second{});
      return;
    }
    step(part0, First{}, part1, Second{}, prev);
  }
}

// The same walk through one partial (the tiled kernel's 192-column tiles, whose registers
// hold the sums and one partial): each k-block's wgmmas into `part`, waited for
// (wgmma.wait_group 0) and retired before the next k-block's are issued. The warpgroup's
// tensor-core work pauses for each add; the CTA's other consumer warpgroup issues meanwhile.
template <class State, int N, class Issue, class Retire>
__device__ __forceinline__ void serial_k_blocks(std::int32_t count, State& st, float (&part)[N],
                                                Issue&& issue, Retire&& retire) {
  using First = std::integral_constant<int, 0>;
  for (std::int32_t j = 0; j < count; ++j) {
    const State cur = st;
    issue(part, st, First{});
    st.advance();
    wgmma_wait<0>();
    retire(part, cur, First{});
  }
}

// The same walk without promotion (GemmAccumulation::fast): every k-block's wgmmas add into
// the one accumulator the caller zeroed, issue(state) waiting for the stage and committing
// them as one group; k-block j's stage is freed (release(state)) once k-block j + 1's wgmmas
// are issued and j's are done (wgmma.wait_group 1), so one k-block's loads are always
// overlapped by the next one's wgmmas. issued_all() runs once every k-block's wgmmas are
// issued, before the last wait (the ping-pong kernel passes its turn there).
struct NothingToDo {
  __device__ void operator()() const {}
};
template <class State, class Issue, class Release, class IssuedAll = NothingToDo>
__device__ __forceinline__ void accumulated_k_blocks(std::int32_t count, State& st, Issue&& issue,
                                                     Release&& release,
                                                     IssuedAll&& issued_all = {}) {
  State prev = st;
  issue(st);
  st.advance();
  for (std::int32_t j = 1; j < count; ++j) {
    const State cur = st;
    issue(st);
    st.advance();
    wgmma_wait<1>();
    release(prev);
    prev = cur;
  }
  issued_all();
  wgmma_wait<0>();
  release(prev);
}

}  // namespace tmakit::detail::gemm_common

namespace tmakit::detail::gemm {

struct Params {
  // NOTE: the scalars a CTA's first instructions read (the unit grid, d_tma_store, the scale
  // recipe and its TMA flags) lie in the first 64 bytes, one constant-cache line, ahead of the
  // tensor maps: with them after the maps, on three lines, the block kernels at M <= 128 ran
  // about 1% slower (kernels/gemm/EXPERIMENTS.md, "A call's fixed cost at M <= 128").
  std::int64_t units;        // whole_tiles + split_tiles * splits
  std::int32_t k_blocks;
  std::int32_t tiles_m, tiles_n;
  std::int32_t splits;       // of each of the last split_tiles tiles (in the units' order)
  std::int32_t whole_tiles;  // tiles before those, each one unit with all of K
  std::int32_t split_pairs;  // 1: split tiles' units in pairs (UnitGrid::split_pairs)
  std::int32_t m, n;
  std::int32_t d_tma_store;  // 1: the epilogue stores D through shared memory and TMA
  GemmKernelScale scale;     // alpha * scale_a * scale_b, or where the kernel reads them
  std::uint64_t d_row_elems;  // D's row pitch in elements
  void* d;
  float* workspace;         // split-K partial tiles: split_tiles * splits of them
  std::uint32_t* counters;  // per split tile: splits finished (reset to 0 by the last)
  CUtensorMap a_map;  // M x K bytes, box 128 x BlockM, 128B swizzle
  CUtensorMap b_map;  // N x K bytes, box 128 x BlockN, 128B swizzle
  CUtensorMap d_map;  // D (M x N elements), box DBoxCols x 64, 128B swizzle; when d_tma_store
  // 128-block scale_a where TMA loads it (scale.a_tma): M x k-blocks floats, M-major, box
  // BlockM x kScaleRun (scale_a_run_box; zeros past M)
  CUtensorMap scale_a_map;
  // and scale_b (scale.b_tma): N-blocks x k-blocks floats, K-major, box 4 x the tile's blocks
  CUtensorMap scale_b_map;
};
static_assert(offsetof(Params, d_tma_store) < 64 &&
                  offsetof(Params, scale) + offsetof(GemmKernelScale, b_tma) + 4 <= 64,
              "the prologue's scalars share the parameters' first constant-cache line");

// The tiled and two-wave kernels' start once their barriers are visible: thread 0 warms every
// tensor map the launch reads (A, B; D where the epilogue stores through TMA; the 128-block
// scales' maps where TMA loads them), then the wait for the kernel before
// (gemm_common::warm_maps_and_wait_for_previous_kernel).
// NOTE: a descriptor not warmed is fetched by the first TMA instruction that reads it, on the
// critical path: the scale boxes land with a run's first stage, D's first box at the end.
template <bool BlockScales>
__device__ __forceinline__ void warm_maps_and_wait(const Params& p) {
  if (threadIdx.x == 0) {
    if (p.d_tma_store) prefetch_tensor_map(&p.d_map);
    if (BlockScales && p.scale.a_tma) prefetch_tensor_map(&p.scale_a_map);
    if (BlockScales && p.scale.b_tma) prefetch_tensor_map(&p.scale_b_map);
  }
  gemm_common::warm_maps_and_wait_for_previous_kernel(&p.a_map, &p.b_map);
}

// 128-block scales (GemmScaleRecipe::block) beside the ring: scale_a of the tile's BlockM rows
// (0 past M) and scale_b of each 128-row block of B the tile covers (0 past N). The consumers
// read a k-block's before they free its stage.
// - Where TMA can load both (scale.b_tma), the producer thread loads each run's boxes into a
//   run slot (load_scale_run_boxes; the scale thread does in rings shorter than a run).
// - Where TMA can load scale_a alone (scale.a_tma), one thread of the scale warp loads its
//   run boxes and writes each stage's scale_b from its own ring of kBAhead slots, into which
//   it copies (cp.async) the k-blocks ahead (load_block_scales_tma).
// - Else the tiled kernel's scale warp writes both into each stage's slots (load_block_scales).
// Stages run slots, taken in turn, one per run (ScaleRunSlot, gemm_scale_runs.hpp, says why
// that many are enough).
template <int BlockM, int BlockN, int Stages>
struct BlockScaleStages {
  static constexpr int kBlockM = BlockM;
  static constexpr int kBlockN = BlockN;
  static constexpr int kBBlocks = (BlockN + 127) / 128;
  static constexpr int kBAhead = 8;
  static_assert(kBBlocks <= 4, "scale_b: at most four 128-row blocks of B per tile");
  static_assert(kScaleRun * sizeof(float) % 16 == 0,
                "a run of scale_b is whole 16-byte chunks (TMA's box rows and coordinates)");
  // TMA's boxes (128-byte aligned, D1): the run's columns of scale_a, kScaleRun x BlockM
  // floats; its runs of scale_b, kBBlocks x kScaleRun floats
  using ARun = Tile<float, Swizzle::none, BlockM, kScaleRun>;
  using BRun = Tile<float, Swizzle::none, kScaleRun, kBBlocks>;
  static_assert(ARun::box == scale_a_run_box(BlockM) && BRun::box == scale_b_run_box(BlockN),
                "the kernel's scale boxes are the ones the launcher's maps are built with");
  // NOTE: scale_a comes by TMA into the run slots, or (where TMA cannot load it) from the
  // scale warp into the stages' slots; a launch takes one of the two (scale.a_tma), so they
  // share their bytes. That gives m64n32's ring its 16th stage beside the scales.
  union {
    typename ARun::Buffer a_run[Stages];
    alignas(16) float a[Stages][BlockM];  // the stages' slots of the scale warp's writes
  };
  typename BRun::Buffer b_run[Stages];
  alignas(16) float b[Stages][4];  // (kBBlocks used: 16 bytes keep the rows aligned)
  alignas(16) float b_ahead[kBAhead][4];

  // Shared-memory addresses of k-block kb's scales, in run slot `run` (TMA's) or at the
  // stage's slots: scale_a of the tile's row r, scale_b of its 128-row block j.
  __device__ std::uint32_t a_address(std::uint32_t stage, std::uint32_t run, std::uint32_t r,
                                     std::int32_t kb, bool a_tma) const {
    return a_tma ? smem_address(a_run[run].bytes) +
                       (static_cast<std::uint32_t>(kb) % kScaleRun * BlockM + r) * 4
                 : smem_address(&a[stage][r]);
  }
  __device__ std::uint32_t b_address(std::uint32_t stage, std::uint32_t run, std::uint32_t j,
                                     std::int32_t kb, bool b_tma) const {
    return b_tma ? smem_address(b_run[run].bytes) +
                       (j * kScaleRun + static_cast<std::uint32_t>(kb) % kScaleRun) * 4
                 : smem_address(&b[stage][j]);
  }
};

// Where load_block_scales_tma copies scale_b from next: unit u's k-block kb (kb_end its end),
// the tile's first 128-row block of B nb0; u >= p.units past this CTA's last k-block.
// NOTE: formed once per unit and stepped per k-block (a decode per k-block would cost the
// thread more than the k-block's wgmmas at small M).
struct ScaleBCursor {
  std::int64_t u;
  std::int32_t kb, kb_end, nb0;

  __device__ void start(const Params& p, std::int32_t block_n) {
    if (u >= p.units) return;
    const Unit w = unit_of(p, u);
    kb = w.kb_begin;
    kb_end = w.kb_end;
    nb0 = w.tn * block_n / 128;
  }
  __device__ void advance(const Params& p, std::int32_t block_n) {
    if (++kb < kb_end) return;
    u += gridDim.x;
    start(p, block_n);
  }
};

struct NoBlockScales {};

// load_units' default at a run's first k-block: no boxes beside A's and B's
struct NoRunBoxes {
  template <class U>
  __device__ void operator()(std::int32_t, const U&, Barrier&) const {}
};

// A kernel's producer (one thread): every unit's k-blocks, in the order above, into the
// ring: wait until the consumers freed the stage, arm its full barrier for the stage's boxes
// (out-of-bounds fill counts too), load A's and B's: BlockM x 128 bytes of A, BlockN x 128 of
// B. With 128-block scales that TMA loads, `scale_tx_bytes` is the bytes of a run's scale
// boxes (block_scale_tx_bytes), armed on the barrier of each run's first k-block too, and
// `run_boxes(kb, unit, full)` loads them there before A and B where this thread does
// (producer_loads_scale_runs); else the scale thread loads them onto the same barrier
// (load_block_scales_tma), which keeps one arm per k-block.
template <class ATile, class BTile, int Stages, class RunBoxes = NoRunBoxes>
__device__ __forceinline__ void load_units(const Params& p, Pipeline<Stages>& pipe,
                                           typename ATile::Buffer (&a)[Stages],
                                           typename BTile::Buffer (&b)[Stages],
                                           std::uint32_t scale_tx_bytes = 0,
                                           RunBoxes&& run_boxes = {}) {
  constexpr std::int32_t kBlockK = static_cast<std::int32_t>(ATile::box[0]);
  constexpr auto kBlockM = static_cast<std::int32_t>(ATile::box[1]);
  constexpr auto kBlockN = static_cast<std::int32_t>(BTile::box[1]);
  constexpr std::uint32_t ab_bytes = ATile::tx_bytes + BTile::tx_bytes;
  const std::uint32_t tx_bytes = ab_bytes + scale_tx_bytes;
  PipelineState<Stages> st;
  for (std::int64_t u = blockIdx.x; u < p.units; u += gridDim.x) {
    const Unit w = unit_of(p, u);
    for (std::int32_t kb = w.kb_begin; kb < w.kb_end; ++kb) {
      const bool run_start = scale_tx_bytes != 0 && starts_scale_run(kb, w.kb_begin);
      Barrier& full = pipe.producer_arm(st, run_start ? tx_bytes : ab_bytes);
      if (run_start) run_boxes(kb, w, full);
      load_tile<ATile>(&a[st.stage], &p.a_map, full, {kb * kBlockK, w.tm * kBlockM});
      load_tile<BTile>(&b[st.stage], &p.b_map, full, {kb * kBlockK, w.tn * kBlockN});
      st.advance();
    }
  }
}

// The bytes of a run's scale boxes, loaded onto the full barrier of its first k-block (the
// producer arms them: load_units).
template <class Scales>
__device__ __forceinline__ std::uint32_t block_scale_tx_bytes(const Params& p) {
  return Scales::ARun::tx_bytes + (p.scale.b_tma ? Scales::BRun::tx_bytes : 0u);
}

// The boxes of the run that starts at unit w's k-block kb onto `full`: scale_a's (the tile's
// rows, four k-blocks) into the next run slot, and scale_b's too where TMA loads it
// (scale.b_tma). From the producer thread or the scale thread (producer_loads_scale_runs).
template <class Scales, int Stages>
__device__ __forceinline__ void load_scale_run_boxes(const Params& p, Scales& scales,
                                                     ScaleRunSlot<Stages>& run, std::int32_t kb,
                                                     const Unit& w, Barrier& full) {
  run.at(kb, w.kb_begin);
  const std::int32_t kb0 = scale_run_origin(kb);
  load_tile<typename Scales::ARun>(&scales.a_run[run.slot], &p.scale_a_map, full,
                                   {w.tm * Scales::kBlockM, kb0});
  if (p.scale.b_tma) {
    load_tile<typename Scales::BRun>(&scales.b_run[run.slot], &p.scale_b_map, full,
                                     {kb0, w.tn * Scales::kBlockN / 128});
  }
}

// One thread of the scale warp, for 128-block scales whose scale_a TMA loads (scale.a_tma)
// where the producer does not load the run boxes itself (producer_loads_scale_runs: scale_b
// not TMA's, or a ring shorter than a run). For the k-blocks of the ring, in the producer's
// order, it waits for the stage to be free, loads a run's boxes at its first k-block
// (load_scale_run_boxes), writes the stage's scale_b where TMA does not load it, and arrives
// on the full barrier (Pipeline::init's second producer arrival). It copies (cp.async) the
// scale_b it writes kBAhead - 1 k-blocks ahead, the tile's 128-row blocks of B (0 past N),
// into a staging slot, and for the ring's k-block waits for that copy (its oldest group).
// Issued after griddepcontrol.wait (the kernel before may write the scales).
// NOTE: the producer arms the barrier for the boxes too; a box that lands before the arm only
// takes the barrier's transaction count below zero, and the phase cannot complete before the
// producer's arrival.
template <class Scales, int Stages>
__device__ __forceinline__ void load_block_scales_tma(const Params& p, Pipeline<Stages>& pipe,
                                                      Scales& scales) {
  constexpr int kBBlocks = Scales::kBBlocks, kAhead = Scales::kBAhead;
  const bool b_tma = p.scale.b_tma != 0;
  const std::int32_t b_blocks = (p.n + 127) / 128;
  ScaleBCursor ahead{static_cast<std::int64_t>(blockIdx.x), 0, 0, 0};
  ahead.start(p, Scales::kBlockN);
  std::uint32_t copy_slot = 0, read_slot = 0;
  // the next k-block's copies of scale_b as one group (an empty group past this CTA's last
  // k-block)
  const auto copy_ahead = [&] {
    if (ahead.u < p.units) {
#pragma unroll
      for (int j = 0; j < kBBlocks; ++j) {
        const std::int32_t nb = ahead.nb0 + j;
        const bool in = nb < b_blocks;
        copy_4_bytes_async(&scales.b_ahead[copy_slot][j],
                           p.scale.b + (in ? nb * p.scale.b_mn + ahead.kb * p.scale.b_k : 0),
                           in);
      }
      ahead.advance(p, Scales::kBlockN);
      copy_slot = copy_slot + 1 == kAhead ? 0 : copy_slot + 1;
    }
    commit_async_copies();
  };
  if (!b_tma) {
    for (int n = 0; n < kAhead - 1; ++n) copy_ahead();
  }
  PipelineState<Stages> st;
  ScaleRunSlot<Stages> run;
  for (std::int64_t u = blockIdx.x; u < p.units; u += gridDim.x) {
    const Unit w = unit_of(p, u);
    for (std::int32_t kb = w.kb_begin; kb < w.kb_end; ++kb) {
      float sb[kBBlocks];
      if (!b_tma) {
        copy_ahead();
        wait_async_copies<kAhead - 1>();  // this k-block's (the oldest group) has landed
#pragma unroll
        for (int j = 0; j < kBBlocks; ++j) sb[j] = scales.b_ahead[read_slot][j];
        read_slot = read_slot + 1 == kAhead ? 0 : read_slot + 1;
      }
      pipe.producer_wait_free(st);
      Barrier& full = pipe.producer_full(st);
      if (starts_scale_run(kb, w.kb_begin)) load_scale_run_boxes(p, scales, run, kb, w, full);
      if (!b_tma) {
#pragma unroll
        for (int j = 0; j < kBBlocks; ++j) scales.b[st.stage][j] = sb[j];
      }
      full.arrive();  // (releases the writes above, where there are any, to the consumers)
      st.advance();
    }
  }
  if (!b_tma) wait_async_copies<0>();  // (the empty groups past the last k-block)
}

// Row-wise scales (GemmScaleRecipe::row) of one tile in shared memory: scale_a of its BlockM
// rows and scale_b of its BlockN columns, 0 past M and N. The producer warpgroup's second warp
// fills them for each unit (load_row_scales) while the consumers run its k-blocks; the
// consumers read them in the epilogue. Handed over to each consumer warpgroup g through two
// named barriers of the scale warp and its 128 threads: `first + 2g` (full: the scale warp
// arrives once a unit's copies landed, the warpgroup syncs) and `first + 2g + 1` (empty: the
// warpgroup arrives once done with them, the scale warp syncs before the next unit's).
// NOTE: one buffer: a unit's scales are written once the consumers are done with the previous
// unit's, long before its epilogue. Read from global memory in the epilogue instead, the L2's
// latency stalled every tile (kernels/gemm/README.md, "Scale recipes"). Named barriers, not
// mbarriers: a consumer then needs no phase of its own (a register m128n144 does not have);
// one pair per warpgroup, so that the warpgroups' epilogues stay apart as they were.
// (compute-sanitizer racecheck reports the reuse of a slot through that pair: docs/hardware.md,
// H15.)
template <int BlockM, int BlockN>
struct RowScaleSlots {
  alignas(16) float a[BlockM];
  alignas(16) float b[BlockN];
};
template <int Groups>
struct RowScaleBarriers {
  std::uint32_t first;  // named barrier ids first .. first + 2 Groups - 1
  static constexpr std::uint32_t kThreads = 32 + 128;
  // Consumer warpgroup g: wait for the unit's scales; done with them.
  __device__ void wait(std::uint32_t g) const { named_barrier_sync(first + 2 * g, kThreads); }
  __device__ void release(std::uint32_t g) const {
    named_barrier_arrive(first + 2 * g + 1, kThreads);
  }
};

// The scale warp of a tiled or two-wave kernel (GemmScaleRecipe::row): for every unit of this
// CTA, in the consumers' order, once every warpgroup released the previous unit's, cp.async of
// the tile's scale_a rows and scale_b columns (zeros past M and N); it waits for them to land
// and hands them to each warpgroup. Issued after griddepcontrol.wait (the kernel before may
// write the scales).
template <int BlockM, int BlockN, int Groups>
__device__ __forceinline__ void load_row_scales(const Params& p, RowScaleSlots<BlockM, BlockN>& slots,
                                                const RowScaleBarriers<Groups>& bars,
                                                std::uint32_t lane) {
  const auto released = [&] {
#pragma unroll
    for (std::uint32_t g = 0; g < Groups; ++g) {
      named_barrier_sync(bars.first + 2 * g + 1, bars.kThreads);
    }
  };
  for (std::int64_t u = blockIdx.x; u < p.units; u += gridDim.x) {
    const Unit w = unit_of(p, u);
    if (u != blockIdx.x) released();
    for (int r = static_cast<int>(lane); r < BlockM; r += 32) {
      const std::int32_t row = w.tm * BlockM + r;
      const bool in = row < p.m;
      copy_4_bytes_async(&slots.a[r], p.scale.a + (in ? row * p.scale.a_mn : 0), in);
    }
    for (int c = static_cast<int>(lane); c < BlockN; c += 32) {
      const std::int32_t col = w.tn * BlockN + c;
      const bool in = col < p.n;
      copy_4_bytes_async(&slots.b[c], p.scale.b + (in ? col * p.scale.b_mn : 0), in);
    }
    commit_async_copies();
    wait_async_copies<0>();
#pragma unroll
    for (std::uint32_t g = 0; g < Groups; ++g) named_barrier_arrive(bars.first + 2 * g, bars.kThreads);
  }
  // every warpgroup's release of the last unit (every arrival on a named barrier is matched)
  if (blockIdx.x < p.units) released();
}

// The producer warpgroup of the tiled and two-wave kernels (warpgroup 0), from its first
// instruction: it gives its registers to the consumers, then
// - one lane of the first warp (elect_one) streams every unit's boxes of A and B into the
//   ring (load_units), and with them the 128-block scales' run boxes where TMA loads both
//   scales and a run fits in the ring (producer_loads_scale_runs);
// - the second warp loads the other scales: for 128-block scales, one lane loads them onto
//   the stages' barriers (load_block_scales_tma) where TMA loads scale_a (scale.a_tma), else
//   the whole warp copies every scale (`copy_block_scales(lane)`, the tiled kernel's
//   load_block_scales); row-wise scales a tile at a time (load_row_scales);
// - the other threads are done.
// Cfg: a tiled or two-wave configuration (ATile, BTile, kStages, kBlockM, kBlockN,
// kProducerRegs); `block` the stages' 128-block scale slots (nullptr without them).
template <class Cfg, bool BlockScales, int Groups, class CopyBlockScales>
__device__ __forceinline__ void run_producer_warpgroup(
    const Params& p, Pipeline<Cfg::kStages>& pipe,
    typename Cfg::ATile::Buffer (&a)[Cfg::kStages], typename Cfg::BTile::Buffer (&b)[Cfg::kStages],
    BlockScaleStages<Cfg::kBlockM, Cfg::kBlockN, Cfg::kStages>* block,
    RowScaleSlots<Cfg::kBlockM, Cfg::kBlockN>& row, const RowScaleBarriers<Groups>& row_bars,
    CopyBlockScales&& copy_block_scales) {
  warpgroup_release_registers<Cfg::kProducerRegs>();
  const std::uint32_t warp = __shfl_sync(0xffffffffu, threadIdx.x / 32, 0);
  // NOTE: the copies are issued from an elected lane of a warp-uniform branch (elect_one),
  // so that each TMA instruction is one instruction with uniform operands (EXPERIMENTS.md,
  // "The producer's copies from an elected lane")
  if (warp == 0) {
    if (!elect_one()) return;
    if constexpr (BlockScales) {
      using Scales = BlockScaleStages<Cfg::kBlockM, Cfg::kBlockN, Cfg::kStages>;
      const std::uint32_t scale_bytes = p.scale.a_tma ? block_scale_tx_bytes<Scales>(p) : 0u;
      if (p.scale.a_tma && producer_loads_scale_runs(p.scale.b_tma != 0, Cfg::kStages)) {
        ScaleRunSlot<Cfg::kStages> run;
        load_units<typename Cfg::ATile, typename Cfg::BTile>(
            p, pipe, a, b, scale_bytes, [&](std::int32_t kb, const Unit& w, Barrier& full) {
              load_scale_run_boxes(p, *block, run, kb, w, full);
            });
      } else {
        load_units<typename Cfg::ATile, typename Cfg::BTile>(p, pipe, a, b, scale_bytes);
      }
    } else {
      load_units<typename Cfg::ATile, typename Cfg::BTile>(p, pipe, a, b);
    }
  } else if (warp == 1) {
    const std::uint32_t lane = threadIdx.x % 32;
    if constexpr (BlockScales) {
      if (!p.scale.a_tma) {
        copy_block_scales(lane);
      } else if (!producer_loads_scale_runs(p.scale.b_tma != 0, Cfg::kStages) && elect_one()) {
        load_block_scales_tma(p, pipe, *block);
      }
    } else if (p.scale.recipe == GemmScaleRecipe::row) {
      load_row_scales(p, row, row_bars, lane);
    }
  }
}

// The two-wave kernel's launch (sm90_gemm_fp8_waves.cu, instantiated there for the two
// configurations of its families): (params, grid, stream, overlap_launch, promote,
// 128-block scales).
template <int Id, class T>
void launch_two_waves(const Params& p, unsigned grid, cudaStream_t stream, bool overlap,
                      bool promote, bool block_scales);

}  // namespace tmakit::detail::gemm
