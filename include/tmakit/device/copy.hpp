// Tile copies: load / store / reduce / prefetch one Tile through a tensor map. Each helper
// is issued by ONE thread; the rank of the coordinates must equal the tile's (compile time),
// and in debug mode the shared buffer's alignment is checked on the device (D1, D2).
//
// Loads complete on a Barrier: arm it with the tile's byte count first, or use
// arrive_and_load, which does both so the count cannot be wrong:
//   if (threadIdx.x == 0) arrive_and_load<ATile>(smem.a, &map_a, smem.full, {x, y});
//   smem.full.wait(parity);
// (In a loop of copies, `warp == 0 && elect_one()`, with warp read through lane 0, in place of
// `threadIdx.x == 0` keeps each copy one instruction: elect_one below.)
// Stores and reduces complete through bulk groups of the issuing thread:
//   fence_view_async_shared();  __syncthreads();          // all writers, then
//   if (threadIdx.x == 0) { store_tile<CTile>(&map_c, smem.c, {x, y}); store_commit();
//                           store_wait<0>(); }
#pragma once

#include <cstdint>

#include "tmakit/device/barrier.hpp"
#include "tmakit/device/debug.hpp"
#include "tmakit/device/tile.hpp"
#include "tmakit/ptx/cluster.hpp"
#include "tmakit/ptx/cp_async.hpp"
#include "tmakit/ptx/fence.hpp"
#include "tmakit/ptx/tma.hpp"

namespace tmakit {

using ptx::ReduceOp;

// True in one lane of a warp whose 32 lanes all call it (elect.sync): the way to pick the
// thread that issues a warp's copies. NOTE: a branch on `threadIdx.x == 0` is per-thread to
// ptxas, which then wraps each TMA instruction inside it in a loop that elects a lane and
// moves its operands into uniform registers (ELECT, R2UR, BRA.U.ANY); under `warp == w &&
// elect_one()`, with w read through lane 0, the operands stay uniform and each copy is one
// instruction (docs/device.md, "One lane of a warp-uniform branch").
__device__ __forceinline__ bool elect_one() { return ptx::elect_sync(); }

namespace detail {
template <class TileT>
__device__ __forceinline__ void debug_check_tile_buffer(const void* smem) {
  if constexpr (TileT::swizzle == Swizzle::none) {
    debug_check_smem_alignment(smem, TileT::align_bytes, "TMA buffer",
                               "128 B TMA destination, rule D1");
  } else {
    debug_check_smem_alignment(smem, TileT::align_bytes, "swizzled TMA buffer",
                               "swizzle pattern repeat, rule D2");
  }
}
// Debug mode: coordinates the hardware answers with "illegal instruction" instead of data.
template <class TileT, int N>
__device__ __forceinline__ void debug_check_coords(const char* op,
                                                   const std::int32_t (&coords)[N],
                                                   bool is_store) {
  if constexpr (kDebugWaits) {
    // O1: the dimension-0 coordinate must fall on a 16-byte boundary
    // NOTE: unsigned, so a coordinate near 2^31 times the element size wraps instead of
    // overflowing; a wrap by 2^32 keeps the remainder mod 16
    if (static_cast<std::uint32_t>(coords[0]) * TileT::elem_bytes % 16u != 0) {
      report_bad_coordinate(op, 0, coords[0],
                            "times the element size it is not a multiple of 16 bytes "
                            "(observed: illegal instruction, O1)");
    }
    // observed: stores and reduces starting at a negative coordinate fault
    if (is_store) {
#pragma unroll
      for (int d = 0; d < N; ++d) {
        if (coords[d] < 0) {
          report_bad_coordinate(op, d, coords[d],
                                "a store or reduce box must not start at a negative coordinate "
                                "(observed: illegal instruction; loads may)");
        }
      }
    }
  } else {
    (void)op, (void)coords, (void)is_store;
  }
}
}  // namespace detail

// Global -> shared, 4 bytes, without waiting (cp.async): `src` into `smem_dst` (4-byte aligned
// both), or 4 zero bytes where `in_bounds` is false (src then not read). The issuing thread
// closes its copies into groups (commit_async_copies) and waits for them by group
// (wait_async_copies), then hands the data to other threads through a barrier.
// NOTE: for small gathers a TMA box cannot describe (scales at any stride); the copy goes
// through L1 (.ca: the only caching cp.async takes for 4 bytes), so issue it after
// griddepcontrol.wait when the kernel before may write the source.
__device__ __forceinline__ void copy_4_bytes_async(void* smem_dst, const void* src,
                                                   bool in_bounds) {
  debug_check_smem_alignment(smem_dst, 4, "cp.async destination", "4-byte copy");
  ptx::cp_async_ca_4(ptx::smem_u32(smem_dst), src, in_bounds ? 4u : 0u);
}
// The same by the destination's shared-state-space address (smem_u32), for loops that step
// it rather than form it again per copy.
__device__ __forceinline__ void copy_4_bytes_async(std::uint32_t smem_dst, const void* src,
                                                   bool in_bounds) {
  ptx::cp_async_ca_4(smem_dst, src, in_bounds ? 4u : 0u);
}
__device__ __forceinline__ void commit_async_copies() { ptx::cp_async_commit_group(); }
// Wait until at most `Pending` of this thread's groups of copies are still in flight.
template <int Pending>
__device__ __forceinline__ void wait_async_copies() {
  ptx::cp_async_wait_group<Pending>();
}

// Global -> shared: one box at `coords` into `smem`, completing on `bar` (armed by the caller).
template <class TileT, int N>
__device__ __forceinline__ void load_tile(void* smem, const CUtensorMap* map, Barrier& bar,
                                          const std::int32_t (&coords)[N]) {
  static_assert(N == TileT::rank, "load_tile: give one coordinate per tile dimension");
  detail::debug_check_tile_buffer<TileT>(smem);
  detail::debug_check_coords<TileT>("load_tile", coords, false);
  ptx::cp_async_bulk_tensor_shared_global_tile(ptx::smem_u32(smem), map, coords, bar.smem());
}

// As load_tile, with an L2 policy (ptx::createpolicy_fractional_l2_evict_*).
template <class TileT, int N>
__device__ __forceinline__ void load_tile(void* smem, const CUtensorMap* map, Barrier& bar,
                                          const std::int32_t (&coords)[N],
                                          std::uint64_t l2_policy) {
  static_assert(N == TileT::rank, "load_tile: give one coordinate per tile dimension");
  detail::debug_check_tile_buffer<TileT>(smem);
  detail::debug_check_coords<TileT>("load_tile", coords, false);
  ptx::cp_async_bulk_tensor_shared_global_tile_hint(ptx::smem_u32(smem), map, coords,
                                                    bar.smem(), l2_policy);
}

// Arm `bar` for exactly this tile's bytes, then load it: the count comes from the type.
template <class TileT, int N>
__device__ __forceinline__ void arrive_and_load(void* smem, const CUtensorMap* map, Barrier& bar,
                                                const std::int32_t (&coords)[N]) {
  bar.arrive_expect_tx(TileT::tx_bytes);
  load_tile<TileT>(smem, map, bar, coords);
}

// Global -> shared of every CTA in `cta_mask` (same smem offset, same barrier offset).
// Every receiving CTA must have armed its barrier for TileT::tx_bytes before this is issued:
// use ClusterPipeline (device/pipeline.hpp), which orders that.
template <class TileT, int N>
__device__ __forceinline__ void load_tile_multicast(void* smem, const CUtensorMap* map,
                                                    Barrier& bar,
                                                    const std::int32_t (&coords)[N],
                                                    std::uint16_t cta_mask) {
  static_assert(N == TileT::rank, "load_tile_multicast: one coordinate per tile dimension");
  detail::debug_check_tile_buffer<TileT>(smem);
  detail::debug_check_coords<TileT>("load_tile_multicast", coords, false);
  ptx::cp_async_bulk_tensor_shared_global_tile_multicast(ptx::smem_u32(smem), map, coords,
                                                         bar.smem(), cta_mask);
}

// Shared -> global: one box from `smem` to `coords`; the part outside the tensor is dropped,
// at 16-byte granularity along dimension 0 (observed: a row whose end is not on a 16-byte
// boundary gets the rest of its last chunk written). Coordinates must not be negative
// (observed: illegal instruction). Both are reported in debug mode / documented in docs/device.md.
template <class TileT, int N>
__device__ __forceinline__ void store_tile(const CUtensorMap* map, const void* smem,
                                           const std::int32_t (&coords)[N]) {
  static_assert(N == TileT::rank, "store_tile: give one coordinate per tile dimension");
  detail::debug_check_tile_buffer<TileT>(smem);
  detail::debug_check_coords<TileT>("store_tile", coords, true);
  ptx::cp_async_bulk_tensor_global_shared_tile(map, coords, ptx::smem_u32(smem));
}

// As store_tile, with an L2 policy (ptx::createpolicy_fractional_l2_evict_*).
template <class TileT, int N>
__device__ __forceinline__ void store_tile(const CUtensorMap* map, const void* smem,
                                           const std::int32_t (&coords)[N],
                                           std::uint64_t l2_policy) {
  static_assert(N == TileT::rank, "store_tile: give one coordinate per tile dimension");
  detail::debug_check_tile_buffer<TileT>(smem);
  detail::debug_check_coords<TileT>("store_tile", coords, true);
  ptx::cp_async_bulk_tensor_global_shared_tile_hint(map, coords, ptx::smem_u32(smem), l2_policy);
}

// Global[coords] = Global[coords] <op> smem, element-wise, atomically per element.
template <class TileT, ReduceOp Op, int N>
__device__ __forceinline__ void reduce_tile(const CUtensorMap* map, const void* smem,
                                            const std::int32_t (&coords)[N]) {
  static_assert(N == TileT::rank, "reduce_tile: give one coordinate per tile dimension");
  detail::debug_check_tile_buffer<TileT>(smem);
  detail::debug_check_coords<TileT>("reduce_tile", coords, true);
  ptx::cp_reduce_async_bulk_tensor_tile<Op>(map, coords, ptx::smem_u32(smem));
}

// Warm L2 with the box at `coords` (no shared memory, no completion to wait for).
template <class TileT, int N>
__device__ __forceinline__ void prefetch_tile(const CUtensorMap* map,
                                              const std::int32_t (&coords)[N]) {
  static_assert(N == TileT::rank, "prefetch_tile: give one coordinate per tile dimension");
  ptx::cp_async_bulk_prefetch_tensor_tile(map, coords);
}

// Warm the descriptor itself; once per map, early in the kernel (D4).
__device__ __forceinline__ void prefetch_tensor_map(const CUtensorMap* map) {
  ptx::prefetch_tensormap(map);
}

// Every thread that wrote a shared buffer with ordinary stores, before the barrier that
// precedes a TMA store/reduce of it (HOPPER.md, "Ordering").
__device__ __forceinline__ void fence_view_async_shared() { ptx::fence_proxy_async_shared_cta(); }

// Close the issuing thread's group of stores/reduces.
__device__ __forceinline__ void store_commit() { ptx::cp_async_bulk_commit_group(); }

// Wait until at most `Pending` groups are in flight and their writes are done (visible).
template <int Pending = 0>
__device__ __forceinline__ void store_wait() {
  ptx::cp_async_bulk_wait_group<Pending>();
}

// Wait until the shared sources of all but `Pending` groups may be reused (writes may not
// be visible yet): the cheaper wait before overwriting a store buffer.
template <int Pending = 0>
__device__ __forceinline__ void store_wait_read() {
  ptx::cp_async_bulk_wait_group_read<Pending>();
}

}  // namespace tmakit
