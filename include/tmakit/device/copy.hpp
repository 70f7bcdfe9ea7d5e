// Tile copies: load / store / reduce / prefetch one Tile through a tensor map. Each helper
// is issued by ONE thread; the rank of the coordinates must equal the tile's (compile time),
// and in debug mode the shared buffer's alignment is checked on the device (D1, D2).
//
// Shared buffers are passed by pointer: a tile's own Buffer (`&smem.a[stage]`), which the
// helpers check at compile time against the tile's footprint, or raw bytes (`buf.bytes`, a
// `void*`), which they cannot. Coordinates are TMA's signed 32-bit ones (D3), given as a
// braced list or array of any integer types (`{blockIdx.x * 64, 0}`): each value is taken as
// its low 32 bits, two's complement; debug mode reports one past 32 bits.
//
// Loads complete on a Barrier: arm it with the tile's byte count first, or use
// arrive_and_load, which does both so the count cannot be wrong:
//   if (threadIdx.x == 0) arrive_and_load<ATile>(&smem.a[stage], &map_a, smem.full, {x, y});
//   smem.full.wait(parity);
// (In a loop of copies, `warp == 0 && elect_one()`, with warp read through lane 0, in place of
// `threadIdx.x == 0` keeps each copy one instruction: elect_one below.)
// Stores and reduces complete through bulk groups of the issuing thread:
//   fence_view_async_shared();  __syncthreads();          // all writers, then
//   if (threadIdx.x == 0) { store_tile<CTile>(&map_c, &smem.c, {x, y}); store_commit();
//                           store_wait<0>(); }
#pragma once

#include <concepts>
#include <cstdint>
#include <type_traits>

#include "tmakit/core/reduce.hpp"
#include "tmakit/device/barrier.hpp"
#include "tmakit/device/debug.hpp"
#include "tmakit/device/tile.hpp"
#include "tmakit/ptx/cluster.hpp"
#include "tmakit/ptx/cp_async.hpp"
#include "tmakit/ptx/fence.hpp"
#include "tmakit/ptx/tma.hpp"

namespace tmakit {

// True in one lane of a warp whose 32 lanes all call it (elect.sync): the way to pick the
// thread that issues a warp's copies. NOTE: a branch on `threadIdx.x == 0` is per-thread to
// ptxas, which then wraps each TMA instruction inside it in a loop that elects a lane and
// moves its operands into uniform registers (ELECT, R2UR, BRA.U.ANY); under `warp == w &&
// elect_one()`, with w read through lane 0, the operands stay uniform and each copy is one
// instruction (docs/device.md, "One lane of a warp-uniform branch").
__device__ __forceinline__ bool elect_one() { return ptx::elect_sync(); }

namespace detail {
// NOTE: a namespace-scope constant, so that device code reads the host constexpr table
// without --expt-relaxed-constexpr
template <ReduceOp Op, DataType Type>
inline constexpr bool kReduceDefinedOn = reduce_defined_on(Op, Type);
// A tile's Buffer type (Tile<...>::Buffer, DynamicTile<...>::Buffer): its capacity is known.
template <class B>
concept TileBufferType = requires {
  { B::tile_capacity_bytes } -> std::convertible_to<std::uint32_t>;
};
// Compile time: a typed buffer must hold the whole box the copy moves (a smaller tile's Buffer
// handed to a larger tile's copy would overflow shared memory, silently); a load must not
// write through a pointer to const.
template <class TileT, class P, bool Writes>
__device__ __forceinline__ constexpr void check_buffer_type() {
  static_assert(!Writes || !std::is_const_v<P>,
                "a load writes its shared buffer: pass a pointer to non-const storage");
  using B = std::remove_cv_t<P>;
  if constexpr (TileBufferType<B>) {
    static_assert(B::tile_capacity_bytes >= TileT::smem_bytes,
                  "the shared buffer is smaller than the tile copied through it (its Buffer's "
                  "tile_capacity_bytes < TileT::smem_bytes): pass the copied tile's own Buffer, "
                  "or a larger one");
    static_assert(alignof(B) >= TileT::align_bytes,
                  "the shared buffer's type is aligned for a narrower swizzle than the tile "
                  "copied through it needs (D2: 1024 bytes for 128B, 512 for 64B, 256 for "
                  "32B): pass the copied tile's own Buffer");
  } else if constexpr (std::is_array_v<B>) {
    static_assert(!TileBufferType<std::remove_cv_t<std::remove_all_extents_t<B>>>,
                  "a pointer to a whole array of tile Buffers: pass one stage's, "
                  "&smem.a[stage]");
  }
}
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
// Debug mode: a multicast must reach at least one CTA, and only CTAs of this cluster.
__device__ __forceinline__ void debug_check_cta_mask(const char* op, std::uint16_t cta_mask) {
  if constexpr (kDebugWaits) {
    const std::uint32_t ctas = ptx::cluster_nctarank();
    if (cta_mask == 0 || (ctas < 16 && (cta_mask >> ctas) != 0)) {
      report_bad_cta_mask(op, cta_mask, ctas);
    }
  } else {
    (void)op, (void)cta_mask;
  }
}
// Coordinates of any integer type as TMA's signed 32-bit ones (D3): a value is taken as its low
// 32 bits, two's complement, as the hardware reads them (so `blockIdx.x * 32u - 16u` is -16
// at block 0, which a load may start at); debug mode reports one that is neither a signed
// nor an unsigned 32-bit value (a 64-bit index past 2^32, say), which would wrap silently.
template <int N>
struct Coords32 {
  std::int32_t v[N];
};
template <int N, class C>
__device__ __forceinline__ Coords32<N> coords32(const char* op, const C (&coords)[N]) {
  // (an unscoped enum's constants too, as a signed coordinate array took them before)
  static_assert((std::is_integral_v<C> && !std::is_same_v<std::remove_cv_t<C>, bool>) ||
                    (std::is_enum_v<C> && std::is_convertible_v<C, long long>),
                "TMA coordinates are integers (signed 32-bit, D3)");
  Coords32<N> c{};
#pragma unroll
  for (int d = 0; d < N; ++d) {
    if constexpr (kDebugWaits && sizeof(C) > 4) {
      const auto v = coords[d];
      const bool fits = std::is_signed_v<C>
                            ? v >= -(std::int64_t{1} << 31) && v < (std::int64_t{1} << 32)
                            : static_cast<std::uint64_t>(v) < (std::uint64_t{1} << 32);
      if (!fits) {
        report_bad_coordinate(op, d, static_cast<std::int32_t>(v),
                              "the value is neither a signed nor an unsigned 32-bit integer, and "
                              "TMA's coordinates are signed 32-bit (D3): it would wrap (the low "
                              "32 bits are printed)");
      }
    }
    c.v[d] = static_cast<std::int32_t>(static_cast<std::uint32_t>(coords[d]));
  }
  (void)op;
  return c;
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
template <class TileT, int N, class P, class C>
__device__ __forceinline__ void load_tile(P* smem, const CUtensorMap* map, Barrier& bar,
                                          const C (&coords)[N]) {
  static_assert(N == TileT::rank, "load_tile: give one coordinate per tile dimension");
  detail::check_buffer_type<TileT, P, true>();
  detail::debug_check_tensor_map("load_tile", map);
  detail::debug_check_tile_buffer<TileT>(smem);
  const auto c = detail::coords32("load_tile", coords);
  detail::debug_check_coords<TileT>("load_tile", c.v, false);
  ptx::cp_async_bulk_tensor_shared_global_tile(ptx::smem_u32(smem), map, c.v, bar.smem());
}

// As load_tile, with an L2 policy (ptx::createpolicy_fractional_l2_evict_*).
template <class TileT, int N, class P, class C>
__device__ __forceinline__ void load_tile(P* smem, const CUtensorMap* map, Barrier& bar,
                                          const C (&coords)[N], std::uint64_t l2_policy) {
  static_assert(N == TileT::rank, "load_tile: give one coordinate per tile dimension");
  detail::check_buffer_type<TileT, P, true>();
  detail::debug_check_tensor_map("load_tile", map);
  detail::debug_check_tile_buffer<TileT>(smem);
  const auto c = detail::coords32("load_tile", coords);
  detail::debug_check_coords<TileT>("load_tile", c.v, false);
  ptx::cp_async_bulk_tensor_shared_global_tile_hint(ptx::smem_u32(smem), map, c.v, bar.smem(),
                                                    l2_policy);
}

// Arm `bar` for exactly this tile's bytes, then load it: the count comes from the type.
template <class TileT, int N, class P, class C>
__device__ __forceinline__ void arrive_and_load(P* smem, const CUtensorMap* map, Barrier& bar,
                                                const C (&coords)[N]) {
  bar.arrive_expect_tx(TileT::tx_bytes);
  load_tile<TileT>(smem, map, bar, coords);
}

// Global -> shared of every CTA in `cta_mask` (same smem offset, same barrier offset).
// Every receiving CTA must have armed its barrier for TileT::tx_bytes before this is issued:
// use ClusterPipeline (device/pipeline.hpp), which orders that. Debug mode reports a mask of
// no CTA or of CTAs past the cluster's.
template <class TileT, int N, class P, class C>
__device__ __forceinline__ void load_tile_multicast(P* smem, const CUtensorMap* map, Barrier& bar,
                                                    const C (&coords)[N],
                                                    std::uint16_t cta_mask) {
  static_assert(N == TileT::rank, "load_tile_multicast: one coordinate per tile dimension");
  detail::check_buffer_type<TileT, P, true>();
  detail::debug_check_tensor_map("load_tile_multicast", map);
  detail::debug_check_cta_mask("load_tile_multicast", cta_mask);
  detail::debug_check_tile_buffer<TileT>(smem);
  const auto c = detail::coords32("load_tile_multicast", coords);
  detail::debug_check_coords<TileT>("load_tile_multicast", c.v, false);
  ptx::cp_async_bulk_tensor_shared_global_tile_multicast(ptx::smem_u32(smem), map, c.v,
                                                         bar.smem(), cta_mask);
}

// Shared -> global: one box from `smem` to `coords`; the part outside the tensor is dropped,
// at 16-byte granularity along dimension 0 (observed: a row whose end is not on a 16-byte
// boundary gets the rest of its last chunk written). Coordinates must not be negative
// (observed: illegal instruction). Both are reported in debug mode / documented in docs/device.md.
template <class TileT, int N, class P, class C>
__device__ __forceinline__ void store_tile(const CUtensorMap* map, const P* smem,
                                           const C (&coords)[N]) {
  static_assert(N == TileT::rank, "store_tile: give one coordinate per tile dimension");
  detail::check_buffer_type<TileT, P, false>();
  detail::debug_check_tensor_map("store_tile", map);
  detail::debug_check_tile_buffer<TileT>(smem);
  const auto c = detail::coords32("store_tile", coords);
  detail::debug_check_coords<TileT>("store_tile", c.v, true);
  ptx::cp_async_bulk_tensor_global_shared_tile(map, c.v, ptx::smem_u32(smem));
}

// As store_tile, with an L2 policy (ptx::createpolicy_fractional_l2_evict_*).
template <class TileT, int N, class P, class C>
__device__ __forceinline__ void store_tile(const CUtensorMap* map, const P* smem,
                                           const C (&coords)[N], std::uint64_t l2_policy) {
  static_assert(N == TileT::rank, "store_tile: give one coordinate per tile dimension");
  detail::check_buffer_type<TileT, P, false>();
  detail::debug_check_tensor_map("store_tile", map);
  detail::debug_check_tile_buffer<TileT>(smem);
  const auto c = detail::coords32("store_tile", coords);
  detail::debug_check_coords<TileT>("store_tile", c.v, true);
  ptx::cp_async_bulk_tensor_global_shared_tile_hint(map, c.v, ptx::smem_u32(smem), l2_policy);
}

// Global[coords] = Global[coords] <op> smem, element-wise, atomically per element. The pairs
// of operator and element type the hardware defines: reduce_defined_on (core/reduce.hpp, H8).
template <class TileT, ReduceOp Op, int N, class P, class C>
__device__ __forceinline__ void reduce_tile(const CUtensorMap* map, const P* smem,
                                            const C (&coords)[N]) {
  static_assert(N == TileT::rank, "reduce_tile: give one coordinate per tile dimension");
  static_assert(detail::kReduceDefinedOn<Op, TileT::data_type>,
                "reduce_tile: the hardware does not define this operator on this element type "
                "(H8, PTX ISA: add on u32/s32/u64/f32/f16/bf16, min/max on u32/s32/u64/s64/"
                "f16/bf16, inc/dec on u32, and/or/xor on u32/s32/u64)");
  detail::check_buffer_type<TileT, P, false>();
  detail::debug_check_tensor_map("reduce_tile", map);
  detail::debug_check_tile_buffer<TileT>(smem);
  const auto c = detail::coords32("reduce_tile", coords);
  detail::debug_check_coords<TileT>("reduce_tile", c.v, true);
  ptx::cp_reduce_async_bulk_tensor_tile<Op>(map, c.v, ptx::smem_u32(smem));
}

// Warm L2 with the box at `coords` (no shared memory, no completion to wait for).
template <class TileT, int N, class C>
__device__ __forceinline__ void prefetch_tile(const CUtensorMap* map, const C (&coords)[N]) {
  static_assert(N == TileT::rank, "prefetch_tile: give one coordinate per tile dimension");
  detail::debug_check_tensor_map("prefetch_tile", map);
  const auto c = detail::coords32("prefetch_tile", coords);
  ptx::cp_async_bulk_prefetch_tensor_tile(map, c.v);
}

// NOTE: a braced list of one integer type deduces C above; one that mixes types (`{blockIdx.x
// * 64, 0}`, unsigned and int) deduces nothing and takes these forms, whose 64-bit elements
// hold any 32-bit value of either sign. (A list with a 64-bit unsigned variable, such as a
// size_t, matches neither: cast it.)
template <class TileT, int N, class P>
__device__ __forceinline__ void load_tile(P* smem, const CUtensorMap* map, Barrier& bar,
                                          const std::int64_t (&coords)[N]) {
  load_tile<TileT, N, P, std::int64_t>(smem, map, bar, coords);
}
template <class TileT, int N, class P>
__device__ __forceinline__ void load_tile(P* smem, const CUtensorMap* map, Barrier& bar,
                                          const std::int64_t (&coords)[N],
                                          std::uint64_t l2_policy) {
  load_tile<TileT, N, P, std::int64_t>(smem, map, bar, coords, l2_policy);
}
template <class TileT, int N, class P>
__device__ __forceinline__ void arrive_and_load(P* smem, const CUtensorMap* map, Barrier& bar,
                                                const std::int64_t (&coords)[N]) {
  arrive_and_load<TileT, N, P, std::int64_t>(smem, map, bar, coords);
}
template <class TileT, int N, class P>
__device__ __forceinline__ void load_tile_multicast(P* smem, const CUtensorMap* map, Barrier& bar,
                                                    const std::int64_t (&coords)[N],
                                                    std::uint16_t cta_mask) {
  load_tile_multicast<TileT, N, P, std::int64_t>(smem, map, bar, coords, cta_mask);
}
template <class TileT, int N, class P>
__device__ __forceinline__ void store_tile(const CUtensorMap* map, const P* smem,
                                           const std::int64_t (&coords)[N]) {
  store_tile<TileT, N, P, std::int64_t>(map, smem, coords);
}
template <class TileT, int N, class P>
__device__ __forceinline__ void store_tile(const CUtensorMap* map, const P* smem,
                                           const std::int64_t (&coords)[N],
                                           std::uint64_t l2_policy) {
  store_tile<TileT, N, P, std::int64_t>(map, smem, coords, l2_policy);
}
template <class TileT, ReduceOp Op, int N, class P>
__device__ __forceinline__ void reduce_tile(const CUtensorMap* map, const P* smem,
                                            const std::int64_t (&coords)[N]) {
  reduce_tile<TileT, Op, N, P, std::int64_t>(map, smem, coords);
}
template <class TileT, int N>
__device__ __forceinline__ void prefetch_tile(const CUtensorMap* map,
                                              const std::int64_t (&coords)[N]) {
  prefetch_tile<TileT, N, std::int64_t>(map, coords);
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
