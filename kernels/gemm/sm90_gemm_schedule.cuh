// The tiled FP8 GEMM kernels' launch parameters and work schedule: what their launch
// (sm90_gemm_fp8_tiled.cu) fills once per distinct call and every tiled kernel decodes its units
// from (sm90_gemm_fp8_tiled.cuh and sm90_gemm_fp8_waves.cuh).
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "gemm_launch.hpp"
#include "tmakit/device/copy.hpp"
#include "tmakit/device/pipeline.hpp"

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
