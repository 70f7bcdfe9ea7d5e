// The persistent tile stream shared by the memory-bound kernels (elementwise, transpose,
// stencil3x3): one producer warp loads tiles with TMA into a ring of shared-memory stages,
// consumer warps turn each input stage into an output stage, one consumer thread stores it
// with TMA. Each CTA walks tiles blockIdx.x, blockIdx.x + gridDim.x, ...
//
//   producer (warp 0, lane 0)            consumers (warps 1..C)
//   wait empty[s]                        wait full[s]
//   arm full[s] with the box bytes       Op::compute(in[s] -> out[s])
//   Op::load(tile, in[s], full[s])       fence.proxy.async; bar.sync among consumers
//                                        thread 0: Op::store(out[s]); commit; once the
//                                        previous store has read its source, arrive empty[s-1]
//
// An Op supplies: Params; kStages, kConsumerWarps, kInBytes, kOutBytes (0: the output is
// written over the input stage); tile_count(p), tx_bytes(p), prefetch(p), load(...),
// compute(...), store(...). The kernels keep the anatomy (static checks, shared storage,
// arch guard) and call run_tile_stream<Op>.
#pragma once

#include <cstdint>

#include "tmakit/device/barrier.hpp"
#include "tmakit/ptx/fence.hpp"
#include "tmakit/ptx/tma.hpp"

namespace tmakit::detail::stream {

// ---- a local primitive the ptx/ and device/ layers do not provide (yet) ----------------

// bar.sync id, threads;  a named barrier among `threads` threads (a multiple of 32).
__device__ __forceinline__ void named_barrier_sync(std::uint32_t id, std::uint32_t threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// ---- tile order -------------------------------------------------------------------------

// Tiles of one image walked in panels of `panel` tile rows: down a panel's column of tiles,
// then the next column. NOTE: a transpose reads rows of its input and writes rows of its
// output; a panel keeps both sides' in-flight tiles within a few DRAM pages.
struct TileOrder {
  std::int32_t tiles_x;
  std::int32_t tiles_y;
  std::int32_t panel;  // 1: plain row-major order

  __device__ __forceinline__ void coords(std::int64_t tile, std::int32_t& tx, std::int32_t& ty,
                                         std::int32_t& image) const {
    const std::int64_t per_image = static_cast<std::int64_t>(tiles_x) * tiles_y;
    image = static_cast<std::int32_t>(tile / per_image);
    const std::int64_t t = tile - image * per_image;
    const std::int64_t per_panel = static_cast<std::int64_t>(tiles_x) * panel;
    const auto p = static_cast<std::int32_t>(t / per_panel);
    const auto r = static_cast<std::int32_t>(t - p * per_panel);
    const std::int32_t rows_here = min(panel, tiles_y - p * panel);
    ty = p * panel + r % rows_here;
    tx = r / rows_here;
  }
};

// ---- the stream -------------------------------------------------------------------------

template <int Stages>
struct StreamBarriers {
  Barrier full[Stages];   // producer armed, TMA completed the load
  Barrier empty[Stages];  // the stage's store has read its source
};

template <class Op>
__device__ __forceinline__ void run_tile_stream(const typename Op::Params& p,
                                                std::uint8_t* stages_smem,
                                                StreamBarriers<Op::kStages>& bars) {
  constexpr int kStages = Op::kStages;
  constexpr std::uint32_t kStageBytes = Op::kInBytes + Op::kOutBytes;
  constexpr std::uint32_t kConsumerThreads = 32u * Op::kConsumerWarps;
  const int warp = static_cast<int>(threadIdx.x / 32);
  const int lane = static_cast<int>(threadIdx.x % 32);
  const std::int64_t tiles = Op::tile_count(p);

  // step 1: barrier init by one thread, made visible to the async proxy
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      bars.full[s].init(1);
      bars.empty[s].init(1);
    }
    fence_barrier_init();
    Op::prefetch(p);
  }
  __syncthreads();

  if (warp == 0) {
    // step 2 (producer): fill stages as soon as their previous store has read them
    if (lane == 0) {
      const std::uint32_t tx_bytes = Op::tx_bytes(p);
      int k = 0;
      for (std::int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x, ++k) {
        const int s = k % kStages;
        // NOTE: parity ^ 1 passes at once on a fresh barrier: every stage starts free.
        bars.empty[s].wait(((k / kStages) & 1) ^ 1);
        bars.full[s].arrive_expect_tx(tx_bytes);
        Op::load(p, tile, ptx::smem_u32(stages_smem + s * kStageBytes), bars.full[s].smem());
      }
    }
    return;
  }

  // step 3 (consumers): transform each stage, then one thread stores it
  const std::uint32_t tid = threadIdx.x - 32;
  int k = 0;
  for (std::int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x, ++k) {
    const int s = k % kStages;
    std::uint8_t* in = stages_smem + s * kStageBytes;
    std::uint8_t* out = Op::kOutBytes == 0 ? in : in + Op::kInBytes;
    bars.full[s].wait((k / kStages) & 1);
    Op::compute(p, tile, in, out, tid);

    // NOTE: generic-proxy writes must be fenced by each writer before the async proxy (the
    // TMA store) reads them; the named barrier then orders all writers before the store.
    ptx::fence_proxy_async_shared_cta();
    named_barrier_sync(1, kConsumerThreads);
    if (tid == 0) {
      Op::store(p, tile, ptx::smem_u32(out));
      ptx::cp_async_bulk_commit_group();
      // release the previous stage once its store has read shared memory (one store in
      // flight keeps the write stream busy while this thread goes on)
      if (k > 0) {
        ptx::cp_async_bulk_wait_group_read<1>();
        bars.empty[(k - 1) % kStages].arrive();
      }
    }
  }
  // step 4: a CTA may not exit while a store still reads its shared memory
  if (tid == 0) ptx::cp_async_bulk_wait_group<0>();
}

}  // namespace tmakit::detail::stream
