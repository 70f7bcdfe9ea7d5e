// The bulk tensor copy engine (TMA): one wrapper per PTX instruction (PTX ISA 8.0+,
// "cp.async.bulk.tensor", "cp.reduce.async.bulk.tensor", "cp.async.bulk.prefetch.tensor",
// "prefetch.tensormap", "cp.async.bulk.commit_group / wait_group", "createpolicy").
//
// Arguments follow the PTX operand order. Shared-memory operands are 32-bit shared-space
// addresses (ptx::smem_u32); the tensor map is the generic address of a CUtensorMap held in
// kernel-parameter, constant or global memory (rule D4). Coordinates are signed 32-bit, in
// elements, innermost first; the rank is the length of the coordinate array.
#pragma once

#include <cstdint>

#include "tmakit/core/reduce.hpp"
#include "tmakit/ptx/common.hpp"

namespace tmakit::ptx {

// ---------------------------------------------------------------------------------------
// global -> shared, tile mode, completion on an mbarrier (transaction bytes)
// ---------------------------------------------------------------------------------------

// cp.async.bulk.tensor.{1..5}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
//     [dstMem], [tensorMap, {c0, ...}], [mbar];
template <int N>
__device__ __forceinline__ void cp_async_bulk_tensor_shared_global_tile(
    std::uint32_t dst_smem, const CUtensorMap* map, const std::int32_t (&coords)[N],
    std::uint32_t mbar_smem) {
  const detail::Coords5 p(coords);
#define TMAKIT_EMIT(DIM, COORDS)                                                       \
  asm volatile("cp.async.bulk.tensor" DIM                                              \
               ".shared::cluster.global.tile.mbarrier::complete_tx::bytes"             \
               " [%8], [%9, " COORDS "], [%10];" ::TMAKIT_PTX_COORD_OPERANDS(p),        \
               TMAKIT_PTX_NO_OFFSETS, "r"(dst_smem), "l"(tensormap_u64(map)), "r"(mbar_smem) \
               : "memory");
  TMAKIT_PTX_FOR_RANK(N, TMAKIT_EMIT)
#undef TMAKIT_EMIT
}

// cp.async.bulk.tensor.{1..5}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
//     .L2::cache_hint [dstMem], [tensorMap, {c0, ...}], [mbar], policy;
template <int N>
__device__ __forceinline__ void cp_async_bulk_tensor_shared_global_tile_hint(
    std::uint32_t dst_smem, const CUtensorMap* map, const std::int32_t (&coords)[N],
    std::uint32_t mbar_smem, std::uint64_t l2_policy) {
  const detail::Coords5 p(coords);
#define TMAKIT_EMIT(DIM, COORDS)                                                            \
  asm volatile("cp.async.bulk.tensor" DIM                                                   \
               ".shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint"   \
               " [%8], [%9, " COORDS "], [%10], %11;" ::TMAKIT_PTX_COORD_OPERANDS(p),        \
               TMAKIT_PTX_NO_OFFSETS, "r"(dst_smem), "l"(tensormap_u64(map)), "r"(mbar_smem), \
               "l"(l2_policy)                                                               \
               : "memory");
  TMAKIT_PTX_FOR_RANK(N, TMAKIT_EMIT)
#undef TMAKIT_EMIT
}

// cp.async.bulk.tensor.{1..5}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
//     .multicast::cluster [dstMem], [tensorMap, {c0, ...}], [mbar], ctaMask;
// NOTE: the box lands at the same shared offset in every CTA of ctaMask, and each of those
// CTAs' barrier at offset mbar gets the complete_tx (PTX ISA, ".multicast::cluster").
template <int N>
__device__ __forceinline__ void cp_async_bulk_tensor_shared_global_tile_multicast(
    std::uint32_t dst_smem, const CUtensorMap* map, const std::int32_t (&coords)[N],
    std::uint32_t mbar_smem, std::uint16_t cta_mask) {
  const detail::Coords5 p(coords);
#define TMAKIT_EMIT(DIM, COORDS)                                                            \
  asm volatile("cp.async.bulk.tensor" DIM                                                   \
               ".shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster" \
               " [%8], [%9, " COORDS "], [%10], %11;" ::TMAKIT_PTX_COORD_OPERANDS(p),        \
               TMAKIT_PTX_NO_OFFSETS, "r"(dst_smem), "l"(tensormap_u64(map)), "r"(mbar_smem), \
               "h"(cta_mask)                                                                \
               : "memory");
  TMAKIT_PTX_FOR_RANK(N, TMAKIT_EMIT)
#undef TMAKIT_EMIT
}

// cp.async.bulk.tensor.{1..5}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
//     .multicast::cluster.L2::cache_hint [dstMem], [tensorMap, {c0, ...}], [mbar], ctaMask,
//     policy;
template <int N>
__device__ __forceinline__ void cp_async_bulk_tensor_shared_global_tile_multicast_hint(
    std::uint32_t dst_smem, const CUtensorMap* map, const std::int32_t (&coords)[N],
    std::uint32_t mbar_smem, std::uint16_t cta_mask, std::uint64_t l2_policy) {
  const detail::Coords5 p(coords);
#define TMAKIT_EMIT(DIM, COORDS)                                                             \
  asm volatile("cp.async.bulk.tensor" DIM                                                    \
               ".shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster" \
               ".L2::cache_hint [%8], [%9, " COORDS "], [%10], %11, %12;"                    \
               ::TMAKIT_PTX_COORD_OPERANDS(p), TMAKIT_PTX_NO_OFFSETS, "r"(dst_smem),         \
               "l"(tensormap_u64(map)), "r"(mbar_smem), "h"(cta_mask), "l"(l2_policy)        \
               : "memory");
  TMAKIT_PTX_FOR_RANK(N, TMAKIT_EMIT)
#undef TMAKIT_EMIT
}

// ---------------------------------------------------------------------------------------
// global -> shared, im2col mode (ranks 3..5; offsets are the kernel-window position)
// ---------------------------------------------------------------------------------------

// cp.async.bulk.tensor.{3..5}d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes
//     [dstMem], [tensorMap, {c0, ...}], [mbar], {off0, ...};
template <int N, int M>
__device__ __forceinline__ void cp_async_bulk_tensor_shared_global_im2col(
    std::uint32_t dst_smem, const CUtensorMap* map, const std::int32_t (&coords)[N],
    std::uint32_t mbar_smem, const std::uint16_t (&offsets)[M]) {
  static_assert(N >= 3 && M == N - 2, "im2col: rank 3..5 with rank-2 offsets (rule I1)");
  const detail::Coords5 p(coords);
  const detail::Offsets3 o(offsets);
#define TMAKIT_EMIT(DIM, COORDS, OFFS)                                                  \
  asm volatile("cp.async.bulk.tensor" DIM                                               \
               ".shared::cluster.global.im2col.mbarrier::complete_tx::bytes"            \
               " [%8], [%9, " COORDS "], [%10], " OFFS ";" ::TMAKIT_PTX_COORD_OPERANDS(p), \
               TMAKIT_PTX_OFFSET_OPERANDS(o), "r"(dst_smem), "l"(tensormap_u64(map)),    \
               "r"(mbar_smem)                                                           \
               : "memory");
  TMAKIT_PTX_FOR_IM2COL_RANK(N, TMAKIT_EMIT)
#undef TMAKIT_EMIT
}

// cp.async.bulk.tensor.{3..5}d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes
//     .L2::cache_hint [dstMem], [tensorMap, {c0, ...}], [mbar], {off0, ...}, policy;
template <int N, int M>
__device__ __forceinline__ void cp_async_bulk_tensor_shared_global_im2col_hint(
    std::uint32_t dst_smem, const CUtensorMap* map, const std::int32_t (&coords)[N],
    std::uint32_t mbar_smem, const std::uint16_t (&offsets)[M], std::uint64_t l2_policy) {
  static_assert(N >= 3 && M == N - 2, "im2col: rank 3..5 with rank-2 offsets (rule I1)");
  const detail::Coords5 p(coords);
  const detail::Offsets3 o(offsets);
#define TMAKIT_EMIT(DIM, COORDS, OFFS)                                                       \
  asm volatile("cp.async.bulk.tensor" DIM                                                    \
               ".shared::cluster.global.im2col.mbarrier::complete_tx::bytes.L2::cache_hint"  \
               " [%8], [%9, " COORDS "], [%10], " OFFS ", %11;"                              \
               ::TMAKIT_PTX_COORD_OPERANDS(p), TMAKIT_PTX_OFFSET_OPERANDS(o), "r"(dst_smem), \
               "l"(tensormap_u64(map)), "r"(mbar_smem), "l"(l2_policy)                       \
               : "memory");
  TMAKIT_PTX_FOR_IM2COL_RANK(N, TMAKIT_EMIT)
#undef TMAKIT_EMIT
}

// cp.async.bulk.tensor.{3..5}d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes
//     .multicast::cluster [dstMem], [tensorMap, {c0, ...}], [mbar], {off0, ...}, ctaMask;
template <int N, int M>
__device__ __forceinline__ void cp_async_bulk_tensor_shared_global_im2col_multicast(
    std::uint32_t dst_smem, const CUtensorMap* map, const std::int32_t (&coords)[N],
    std::uint32_t mbar_smem, const std::uint16_t (&offsets)[M], std::uint16_t cta_mask) {
  static_assert(N >= 3 && M == N - 2, "im2col: rank 3..5 with rank-2 offsets (rule I1)");
  const detail::Coords5 p(coords);
  const detail::Offsets3 o(offsets);
#define TMAKIT_EMIT(DIM, COORDS, OFFS)                                                       \
  asm volatile("cp.async.bulk.tensor" DIM                                                    \
               ".shared::cluster.global.im2col.mbarrier::complete_tx::bytes"                 \
               ".multicast::cluster [%8], [%9, " COORDS "], [%10], " OFFS ", %11;"           \
               ::TMAKIT_PTX_COORD_OPERANDS(p), TMAKIT_PTX_OFFSET_OPERANDS(o), "r"(dst_smem), \
               "l"(tensormap_u64(map)), "r"(mbar_smem), "h"(cta_mask)                        \
               : "memory");
  TMAKIT_PTX_FOR_IM2COL_RANK(N, TMAKIT_EMIT)
#undef TMAKIT_EMIT
}

// ---------------------------------------------------------------------------------------
// shared -> global store and reduce (completion through bulk groups)
// ---------------------------------------------------------------------------------------

// cp.async.bulk.tensor.{1..5}d.global.shared::cta.tile.bulk_group
//     [tensorMap, {c0, ...}], [srcMem];
// NOTE: the box's out-of-bounds part is dropped (rule D3). The shared source must have been
// written before a fence.proxy.async.shared::cta in each writing thread (ptx/fence.hpp).
template <int N>
__device__ __forceinline__ void cp_async_bulk_tensor_global_shared_tile(
    const CUtensorMap* map, const std::int32_t (&coords)[N], std::uint32_t src_smem) {
  const detail::Coords5 p(coords);
#define TMAKIT_EMIT(DIM, COORDS)                                                            \
  asm volatile("cp.async.bulk.tensor" DIM ".global.shared::cta.tile.bulk_group"             \
               " [%9, " COORDS "], [%8];" ::TMAKIT_PTX_COORD_OPERANDS(p),                    \
               TMAKIT_PTX_NO_OFFSETS, "r"(src_smem), "l"(tensormap_u64(map))                 \
               : "memory");
  TMAKIT_PTX_FOR_RANK(N, TMAKIT_EMIT)
#undef TMAKIT_EMIT
}

// cp.async.bulk.tensor.{1..5}d.global.shared::cta.tile.bulk_group.L2::cache_hint
//     [tensorMap, {c0, ...}], [srcMem], policy;
template <int N>
__device__ __forceinline__ void cp_async_bulk_tensor_global_shared_tile_hint(
    const CUtensorMap* map, const std::int32_t (&coords)[N], std::uint32_t src_smem,
    std::uint64_t l2_policy) {
  const detail::Coords5 p(coords);
#define TMAKIT_EMIT(DIM, COORDS)                                                            \
  asm volatile("cp.async.bulk.tensor" DIM ".global.shared::cta.tile.bulk_group.L2::cache_hint" \
               " [%9, " COORDS "], [%8], %10;" ::TMAKIT_PTX_COORD_OPERANDS(p),               \
               TMAKIT_PTX_NO_OFFSETS, "r"(src_smem), "l"(tensormap_u64(map)), "l"(l2_policy) \
               : "memory");
  TMAKIT_PTX_FOR_RANK(N, TMAKIT_EMIT)
#undef TMAKIT_EMIT
}

// cp.async.bulk.tensor.{3..5}d.global.shared::cta.im2col_no_offs.bulk_group
//     [tensorMap, {c0, ...}], [srcMem];
template <int N>
__device__ __forceinline__ void cp_async_bulk_tensor_global_shared_im2col_no_offs(
    const CUtensorMap* map, const std::int32_t (&coords)[N], std::uint32_t src_smem) {
  static_assert(N >= 3, "im2col needs rank 3..5 (rule I1)");
  const detail::Coords5 p(coords);
#define TMAKIT_EMIT(DIM, COORDS)                                                            \
  asm volatile("cp.async.bulk.tensor" DIM ".global.shared::cta.im2col_no_offs.bulk_group"   \
               " [%9, " COORDS "], [%8];" ::TMAKIT_PTX_COORD_OPERANDS(p),                    \
               TMAKIT_PTX_NO_OFFSETS, "r"(src_smem), "l"(tensormap_u64(map))                 \
               : "memory");
  TMAKIT_PTX_FOR_RANK(N, TMAKIT_EMIT)
#undef TMAKIT_EMIT
}

// The reduction operators of cp.reduce.async.bulk.tensor (.add .min .max .inc .dec .and .or
// .xor); which data types allow which: tmakit::reduce_defined_on (core/reduce.hpp, rule H8).
// NOTE: fp8 carried as UINT8 cannot be reduced as fp8: the data type decides the add (H8).
using ReduceOp = ::tmakit::ReduceOp;

// cp.reduce.async.bulk.tensor.{1..5}d.global.shared::cta.<op>.tile.bulk_group
//     [tensorMap, {c0, ...}], [srcMem];
// One function per operator, as the operator is part of the instruction.
#define TMAKIT_DEFINE_REDUCE(NAME, OP)                                                         \
  template <int N>                                                                             \
  __device__ __forceinline__ void NAME(const CUtensorMap* map, const std::int32_t(&coords)[N], \
                                       std::uint32_t src_smem) {                               \
    const detail::Coords5 p(coords);                                                           \
    TMAKIT_PTX_FOR_RANK(N, TMAKIT_EMIT_REDUCE_##OP)                                            \
  }
#define TMAKIT_EMIT_REDUCE(OP, DIM, COORDS)                                                  \
  asm volatile("cp.reduce.async.bulk.tensor" DIM ".global.shared::cta." OP ".tile.bulk_group" \
               " [%9, " COORDS "], [%8];" ::TMAKIT_PTX_COORD_OPERANDS(p),                     \
               TMAKIT_PTX_NO_OFFSETS, "r"(src_smem), "l"(tensormap_u64(map))                  \
               : "memory");
#define TMAKIT_EMIT_REDUCE_add(DIM, COORDS) TMAKIT_EMIT_REDUCE("add", DIM, COORDS)
#define TMAKIT_EMIT_REDUCE_min(DIM, COORDS) TMAKIT_EMIT_REDUCE("min", DIM, COORDS)
#define TMAKIT_EMIT_REDUCE_max(DIM, COORDS) TMAKIT_EMIT_REDUCE("max", DIM, COORDS)
#define TMAKIT_EMIT_REDUCE_inc(DIM, COORDS) TMAKIT_EMIT_REDUCE("inc", DIM, COORDS)
#define TMAKIT_EMIT_REDUCE_dec(DIM, COORDS) TMAKIT_EMIT_REDUCE("dec", DIM, COORDS)
#define TMAKIT_EMIT_REDUCE_and(DIM, COORDS) TMAKIT_EMIT_REDUCE("and", DIM, COORDS)
#define TMAKIT_EMIT_REDUCE_or(DIM, COORDS) TMAKIT_EMIT_REDUCE("or", DIM, COORDS)
#define TMAKIT_EMIT_REDUCE_xor(DIM, COORDS) TMAKIT_EMIT_REDUCE("xor", DIM, COORDS)
TMAKIT_DEFINE_REDUCE(cp_reduce_async_bulk_tensor_global_shared_add_tile, add)
TMAKIT_DEFINE_REDUCE(cp_reduce_async_bulk_tensor_global_shared_min_tile, min)
TMAKIT_DEFINE_REDUCE(cp_reduce_async_bulk_tensor_global_shared_max_tile, max)
TMAKIT_DEFINE_REDUCE(cp_reduce_async_bulk_tensor_global_shared_inc_tile, inc)
TMAKIT_DEFINE_REDUCE(cp_reduce_async_bulk_tensor_global_shared_dec_tile, dec)
TMAKIT_DEFINE_REDUCE(cp_reduce_async_bulk_tensor_global_shared_and_tile, and)
TMAKIT_DEFINE_REDUCE(cp_reduce_async_bulk_tensor_global_shared_or_tile, or)
TMAKIT_DEFINE_REDUCE(cp_reduce_async_bulk_tensor_global_shared_xor_tile, xor)
#undef TMAKIT_DEFINE_REDUCE
#undef TMAKIT_EMIT_REDUCE
#undef TMAKIT_EMIT_REDUCE_add
#undef TMAKIT_EMIT_REDUCE_min
#undef TMAKIT_EMIT_REDUCE_max
#undef TMAKIT_EMIT_REDUCE_inc
#undef TMAKIT_EMIT_REDUCE_dec
#undef TMAKIT_EMIT_REDUCE_and
#undef TMAKIT_EMIT_REDUCE_or
#undef TMAKIT_EMIT_REDUCE_xor

// The operator as a template argument: cp_reduce_async_bulk_tensor_tile<ReduceOp::add>(...).
template <ReduceOp Op, int N>
__device__ __forceinline__ void cp_reduce_async_bulk_tensor_tile(
    const CUtensorMap* map, const std::int32_t (&coords)[N], std::uint32_t src_smem) {
  if constexpr (Op == ReduceOp::add) {
    cp_reduce_async_bulk_tensor_global_shared_add_tile(map, coords, src_smem);
  } else if constexpr (Op == ReduceOp::min) {
    cp_reduce_async_bulk_tensor_global_shared_min_tile(map, coords, src_smem);
  } else if constexpr (Op == ReduceOp::max) {
    cp_reduce_async_bulk_tensor_global_shared_max_tile(map, coords, src_smem);
  } else if constexpr (Op == ReduceOp::inc) {
    cp_reduce_async_bulk_tensor_global_shared_inc_tile(map, coords, src_smem);
  } else if constexpr (Op == ReduceOp::dec) {
    cp_reduce_async_bulk_tensor_global_shared_dec_tile(map, coords, src_smem);
  } else if constexpr (Op == ReduceOp::bit_and) {
    cp_reduce_async_bulk_tensor_global_shared_and_tile(map, coords, src_smem);
  } else if constexpr (Op == ReduceOp::bit_or) {
    cp_reduce_async_bulk_tensor_global_shared_or_tile(map, coords, src_smem);
  } else {
    cp_reduce_async_bulk_tensor_global_shared_xor_tile(map, coords, src_smem);
  }
}

// ---------------------------------------------------------------------------------------
// prefetch into L2 (no shared memory, no completion)
// ---------------------------------------------------------------------------------------

// cp.async.bulk.prefetch.tensor.{1..5}d.L2.global.tile [tensorMap, {c0, ...}];
template <int N>
__device__ __forceinline__ void cp_async_bulk_prefetch_tensor_tile(
    const CUtensorMap* map, const std::int32_t (&coords)[N]) {
  const detail::Coords5 p(coords);
#define TMAKIT_EMIT(DIM, COORDS)                                                      \
  asm volatile("cp.async.bulk.prefetch.tensor" DIM ".L2.global.tile [%8, " COORDS "];" \
               ::TMAKIT_PTX_COORD_OPERANDS(p), TMAKIT_PTX_NO_OFFSETS,                  \
               "l"(tensormap_u64(map))                                                \
               : "memory");
  TMAKIT_PTX_FOR_RANK(N, TMAKIT_EMIT)
#undef TMAKIT_EMIT
}

// cp.async.bulk.prefetch.tensor.{3..5}d.L2.global.im2col [tensorMap, {c0, ...}],
//     {off0, ...};
template <int N, int M>
__device__ __forceinline__ void cp_async_bulk_prefetch_tensor_im2col(
    const CUtensorMap* map, const std::int32_t (&coords)[N], const std::uint16_t (&offsets)[M]) {
  static_assert(N >= 3 && M == N - 2, "im2col: rank 3..5 with rank-2 offsets (rule I1)");
  const detail::Coords5 p(coords);
  const detail::Offsets3 o(offsets);
#define TMAKIT_EMIT(DIM, COORDS, OFFS)                                                   \
  asm volatile("cp.async.bulk.prefetch.tensor" DIM ".L2.global.im2col [%8, " COORDS "], " \
               OFFS ";" ::TMAKIT_PTX_COORD_OPERANDS(p), TMAKIT_PTX_OFFSET_OPERANDS(o),    \
               "l"(tensormap_u64(map))                                                   \
               : "memory");
  TMAKIT_PTX_FOR_IM2COL_RANK(N, TMAKIT_EMIT)
#undef TMAKIT_EMIT
}

// prefetch.tensormap [tensorMap];
// Warms the descriptor itself (rule D4); issue once per map, early, from one thread.
__device__ __forceinline__ void prefetch_tensormap(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(tensormap_u64(map)) : "memory");
}

// ---------------------------------------------------------------------------------------
// bulk async-groups: completion of stores, reduces (per issuing thread)
// ---------------------------------------------------------------------------------------

// cp.async.bulk.commit_group;
__device__ __forceinline__ void cp_async_bulk_commit_group() {
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

// cp.async.bulk.wait_group N;  (all but the N most recent groups complete, writes visible)
template <int N>
__device__ __forceinline__ void cp_async_bulk_wait_group() {
  static_assert(N >= 0, "wait_group takes a non-negative count");
  asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
}

// cp.async.bulk.wait_group.read N;  (the sources of all but N groups may be overwritten)
template <int N>
__device__ __forceinline__ void cp_async_bulk_wait_group_read() {
  static_assert(N >= 0, "wait_group.read takes a non-negative count");
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}

// ---------------------------------------------------------------------------------------
// L2 cache policies for the .L2::cache_hint forms
// ---------------------------------------------------------------------------------------

// createpolicy.fractional.L2::evict_first.b64 policy, 1.0;  (streamed once)
__device__ __forceinline__ std::uint64_t createpolicy_fractional_l2_evict_first() {
  std::uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}

// createpolicy.fractional.L2::evict_last.b64 policy, 1.0;  (reused by many CTAs)
__device__ __forceinline__ std::uint64_t createpolicy_fractional_l2_evict_last() {
  std::uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}

// createpolicy.fractional.L2::evict_normal.b64 policy, 1.0;
__device__ __forceinline__ std::uint64_t createpolicy_fractional_l2_evict_normal() {
  std::uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}

}  // namespace tmakit::ptx
