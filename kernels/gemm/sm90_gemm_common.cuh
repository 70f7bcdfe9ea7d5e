// What the FP8 GEMM kernels (sm90_gemm_fp8_tiled.cuh, sm90_gemm_fp8_small_m.cu,
// sm90_gemm_fp8_waves.cuh) share: the k-block size, the start of a dependent launch, the
// scale, the software pipeline that overlaps one k-block's wgmmas with the promotion of the
// previous one; and the tiled and two-wave kernels' launch parameters and work schedule, which
// their launch (sm90_gemm_fp8_tiled.cu) fills once per distinct call and the kernels decode
// their units from.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "gemm_launch.hpp"
#include "tmakit/device/copy.hpp"
#include "tmakit/device/pipeline.hpp"
#include "tmakit/device/sm90_wgmma.hpp"

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
// 4j + 2h + e of lane l in warp w holds row 16w + l/4 + 8h, column 8j + 2(l%4) + e, of the
// tile at row0, col0): each sum times (alpha * scale_a[row]) * scale_b[col], products
// rounded to float. Rows past M and columns past N read no scale (their sums are not stored).
// Call it after griddepcontrol.wait; the arrays are read through the L2, as kernel_scale's.
template <int R>
__device__ __forceinline__ void apply_row_scales(float (&acc)[R], const GemmKernelScale& s,
                                                 float alpha, std::int32_t row0,
                                                 std::int32_t col0, std::int32_t m,
                                                 std::int32_t n, std::uint32_t warp,
                                                 std::uint32_t lane) {
  static_assert(R % 4 == 0, "whole 8-column groups");
  float row_scale[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const std::int32_t r = row0 + static_cast<std::int32_t>(16 * warp + lane / 4) + 8 * h;
    row_scale[h] = r < m ? alpha * __ldcg(s.a + r * s.a_mn) : 0.0f;
  }
#pragma unroll
  for (int j = 0; j < R / 4; ++j) {
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const std::int32_t c = col0 + 8 * j + static_cast<std::int32_t>(2 * (lane % 4)) + e;
      const float col_scale = c < n ? __ldcg(s.b + c * s.b_mn) : 0.0f;
      acc[4 * j + e] *= row_scale[0] * col_scale;
      acc[4 * j + 2 + e] *= row_scale[1] * col_scale;
    }
  }
}

// 128-block scales of one k-block for a thread's two rows of a 64-row fragment (rows
// row0 + 16w + l/4 and 8 below it) in columns of B's 128-row block `nb`: scale_a[row][kb] *
// scale_b[nb][kb], rounded to float; 0 for rows past M (their sums are not stored).
__device__ __forceinline__ void load_block_scales(float (&out)[2], const GemmKernelScale& s,
                                                  std::int32_t row0, std::int32_t nb,
                                                  std::int32_t kb, std::int32_t m,
                                                  std::uint32_t warp, std::uint32_t lane) {
  const float b = __ldcg(s.b + nb * s.b_mn + kb * s.b_k);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const std::int32_t r = row0 + static_cast<std::int32_t>(16 * warp + lane / 4) + 8 * h;
    out[h] = r < m ? __ldcg(s.a + r * s.a_mn + kb * s.a_k) * b : 0.0f;
  }
}

// Output rounding (the device layer's): one value of D, or two as one 32-bit word.
using tmakit::round_pair;
using tmakit::round_to;

// A consumer warpgroup's walk over `count` (>= 1) k-blocks of the ring, from `st`:
// issue(part, slot, state) waits for the stage and commits its wgmmas into `part` (a fresh
// partial product); retire(part, slot, state) runs once they are done (free the stage, add
// the partial into the fp32 sums). Two partials alternate by name, so both stay in
// registers, and k-block k + 1's wgmmas run while k-block k's partial is added
// (wgmma.wait_group 1). `slot` (std::integral_constant 0 or 1: part0 or part1) lets the
// caller keep registers beside each partial (128-block scales loaded at issue, used at
// retire).
// NOTE: retiring k first whenever k + 1's data was not there yet (mbarrier.test_wait), to
// hand its stage back sooner, measured slower (M = 16-64 and 4096^3, one run on H200).
template <class State, int N, class Issue, class Retire>
__device__ __forceinline__ void pipelined_k_blocks(std::int32_t count, State& st, float (&part0)[N],
                                                   float (&part1)[N], Issue&& issue,
                                                   Retire&& retire) {
  using Slot0 = std::integral_constant<int, 0>;
  using Slot1 = std::integral_constant<int, 1>;
  // k-block j + 1 into `next` while `last` (k-block j, at `prev`) is retired
  auto step = [&](float(&next)[N], auto next_slot, float(&last)[N], auto last_slot,
                  State& prev) {
    const State cur = st;
    issue(next, next_slot, st);
    st.advance();
    wgmma_wait<1>();
    retire(last, last_slot, prev);
    prev = cur;
  };
  State prev = st;
  issue(part0, Slot0{}, st);
  st.advance();
  for (std::int32_t j = 1;; j += 2) {
    if (j >= count) {
      wgmma_wait<0>();
      retire(part0, Slot0{}, prev);
      return;
    }
    step(part1, Slot1{}, part0, Slot0{}, prev);
    if (j + 1 >= count) {
      wgmma_wait<0>();
      retire(part1, Slot1{}, prev);
      return;
    }
    step(part0, Slot0{}, part1, Slot1{}, prev);
  }
}

// The same walk without promotion (GemmAccumulation::fast): every k-block's wgmmas add into
// the one accumulator the caller zeroed, issue(state) waiting for the stage and committing
// them as one group; k-block j's stage is freed (release(state)) once k-block j + 1's wgmmas
// are issued and j's are done (wgmma.wait_group 1), so one k-block's loads are always
// overlapped by the next one's wgmmas.
template <class State, class Issue, class Release>
__device__ __forceinline__ void accumulated_k_blocks(std::int32_t count, State& st, Issue&& issue,
                                                     Release&& release) {
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
  wgmma_wait<0>();
  release(prev);
}

}  // namespace tmakit::detail::gemm_common

namespace tmakit::detail::gemm {

struct Params {
  CUtensorMap a_map;  // M x K bytes, box 128 x BlockM, 128B swizzle
  CUtensorMap b_map;  // N x K bytes, box 128 x BlockN, 128B swizzle
  CUtensorMap d_map;  // D (M x N elements), box DBoxCols x 64, 128B swizzle; when d_tma_store
  void* d;
  std::uint64_t d_row_elems;  // D's row pitch in elements
  std::int32_t d_tma_store;   // 1: the epilogue stores D through shared memory and TMA
  std::int32_t m, n;
  std::int32_t k_blocks;
  std::int32_t tiles_m, tiles_n;
  std::int32_t splits;       // of each of the last split_tiles tiles (in the units' order)
  std::int32_t whole_tiles;  // tiles before those, each one unit with all of K
  std::int64_t units;        // whole_tiles + split_tiles * splits
  GemmKernelScale scale;    // alpha * scale_a * scale_b, or where the kernel reads them
  float* workspace;         // split-K partial tiles: split_tiles * splits of them
  std::uint32_t* counters;  // per split tile: splits finished (reset to 0 by the last)
};

// Output tile of a work unit, rasterised in groups of kGroupM tile rows so that CTAs running
// at the same time share A rows and B rows in L2. The first whole_tiles units are whole
// tiles; each tile after them is `splits` units, one share of K each (a split tail: the last
// round's few tiles spread over the SMs, or every tile when whole_tiles is 0).
constexpr int kGroupM = 8;
struct Unit {
  std::int32_t tm, tn, tile;   // tile: in the rasterised order
  std::int32_t split, splits;  // this unit's share of K, of `splits`
  std::int32_t slot;           // a split tile's index among the split ones (split-K state)
  std::int32_t kb_begin, kb_end;
};
__device__ __forceinline__ Unit decode_unit(const Params& p, std::int64_t u) {
  Unit r;
  std::int32_t tile = static_cast<std::int32_t>(u);
  r.split = 0;
  r.splits = 1;
  r.slot = 0;
  if (u >= p.whole_tiles) {
    const std::int64_t v = u - p.whole_tiles;
    r.slot = static_cast<std::int32_t>(v / p.splits);
    tile = p.whole_tiles + r.slot;
    r.split = static_cast<std::int32_t>(v % p.splits);
    r.splits = p.splits;
  }
  const std::int32_t per_group = kGroupM * p.tiles_n;
  const std::int32_t group = tile / per_group;
  const std::int32_t first_m = group * kGroupM;
  const std::int32_t rows = min(kGroupM, p.tiles_m - first_m);
  const std::int32_t in_group = tile % per_group;
  r.tm = first_m + in_group % rows;
  r.tn = in_group / rows;
  r.tile = r.tm * p.tiles_n + r.tn;
  // split s takes k-blocks [s * KB / S, (s + 1) * KB / S): never empty since S <= KB
  r.kb_begin =
      static_cast<std::int32_t>(static_cast<std::int64_t>(r.split) * p.k_blocks / r.splits);
  r.kb_end =
      static_cast<std::int32_t>(static_cast<std::int64_t>(r.split + 1) * p.k_blocks / r.splits);
  return r;
}

// A tiled kernel's producer (one thread): every unit's k-blocks, in the order above, into the
// ring: wait until the consumers freed the stage, arm its full barrier for A's and B's boxes
// (out-of-bounds fill counts too), load both. BlockM x 128 bytes of A, BlockN x 128 of B.
template <class ATile, class BTile, int Stages>
__device__ __forceinline__ void load_units(const Params& p, Pipeline<Stages>& pipe,
                                           typename ATile::Buffer (&a)[Stages],
                                           typename BTile::Buffer (&b)[Stages]) {
  constexpr std::int32_t kBlockK = static_cast<std::int32_t>(ATile::box[0]);
  constexpr auto kBlockM = static_cast<std::int32_t>(ATile::box[1]);
  constexpr auto kBlockN = static_cast<std::int32_t>(BTile::box[1]);
  PipelineState<Stages> st;
  for (std::int64_t u = blockIdx.x; u < p.units; u += gridDim.x) {
    const Unit w = decode_unit(p, u);
    for (std::int32_t kb = w.kb_begin; kb < w.kb_end; ++kb) {
      Barrier& full = pipe.producer_arm(st, ATile::tx_bytes + BTile::tx_bytes);
      load_tile<ATile>(&a[st.stage], &p.a_map, full, {kb * kBlockK, w.tm * kBlockM});
      load_tile<BTile>(&b[st.stage], &p.b_map, full, {kb * kBlockK, w.tn * kBlockN});
      st.advance();
    }
  }
}

// The two-wave kernel's launch (sm90_gemm_fp8_waves.cu, instantiated there for the two
// configurations of its families): (params, grid, stream, overlap_launch, promote).
template <int Id, class T>
void launch_two_waves(const Params& p, unsigned grid, cudaStream_t stream, bool overlap,
                      bool promote);

}  // namespace tmakit::detail::gemm
