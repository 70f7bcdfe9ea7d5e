// Blackwell's tensor copies (sm_100a, sm_103a, sm_120a; PTX ISA 8.6+, "cp.async.bulk.tensor"):
// the `.shared::cta` destination, `.tile::gather4` / `.tile::scatter4` and the im2col-wide
// load modes `.im2col::w` / `.im2col::w::128`. Same conventions as ptx/tma.hpp (operands in
// PTX order, 32-bit shared addresses, coordinates innermost first).
//
// The packed types (16U4_ALIGN8B, 16U4_ALIGN16B, 16U6_ALIGN16B) and the 128B_ATOM_* swizzles
// are tensor-map fields: the instructions are the same, and ptx/tma.hpp's copies carry them.
// NOTE: on sm_120a a copy into `.shared::cluster` takes no sub-byte type and no swizzle
// atomicity (PTX ISA, "Restriction on Tensor Copy instructions"): use the `_cta` forms here.
//
// Everything here needs an sm_100-class target; compiled for anything older it is left out,
// so including the header from sm_90a code costs nothing.
#pragma once

#include <cstdint>

#include "tmakit/ptx/common.hpp"

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 1000
#define TMAKIT_PTX_SM100 1
#else
#define TMAKIT_PTX_SM100 0
#endif
// NOTE: ptxas (CUDA 13.0) refuses `.tile::scatter4` and `.im2col::w::128` on sm_120a, as the
// PTX ISA's target notes list neither for sm_120: they exist for sm_100a and sm_103a only.
#if !defined(__CUDA_ARCH__) || (__CUDA_ARCH__ >= 1000 && __CUDA_ARCH__ < 1200)
#define TMAKIT_PTX_SCATTER4_W128 1
#else
#define TMAKIT_PTX_SCATTER4_W128 0
#endif

namespace tmakit::ptx {

#if TMAKIT_PTX_SM100

// cp.async.bulk.tensor.{1..5}d.shared::cta.global.tile.mbarrier::complete_tx::bytes
//     [dstMem], [tensorMap, {c0, ...}], [mbar];
// NOTE: dstMem and mbar must be the executing CTA's (PTX ISA 8.6, `.shared::cta`).
template <int N>
__device__ __forceinline__ void cp_async_bulk_tensor_shared_cta_global_tile(
    std::uint32_t dst_smem, const CUtensorMap* map, const std::int32_t (&coords)[N],
    std::uint32_t mbar_smem) {
  const detail::Coords5 p(coords);
#define TMAKIT_EMIT(DIM, COORDS)                                                             \
  asm volatile("cp.async.bulk.tensor" DIM                                                    \
               ".shared::cta.global.tile.mbarrier::complete_tx::bytes"                       \
               " [%8], [%9, " COORDS "], [%10];" ::TMAKIT_PTX_COORD_OPERANDS(p),             \
               TMAKIT_PTX_NO_OFFSETS, "r"(dst_smem), "l"(tensormap_u64(map)), "r"(mbar_smem) \
               : "memory");
  TMAKIT_PTX_FOR_RANK(N, TMAKIT_EMIT)
#undef TMAKIT_EMIT
}

// cp.async.bulk.tensor.2d.shared::cta.global.tile::gather4.mbarrier::complete_tx::bytes
//     [dstMem], [tensorMap, {col, row0, row1, row2, row3}], [mbar];
// Four rows (dimension 1) of a rank-2 map whose boxDim[1] is 1, boxDim[0] elements each from
// column `col`, stored one after the other (rules G1, G2).
__device__ __forceinline__ void cp_async_bulk_tensor_shared_cta_global_gather4(
    std::uint32_t dst_smem, const CUtensorMap* map, std::int32_t col, const std::int32_t (&rows)[4],
    std::uint32_t mbar_smem) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cta.global.tile::gather4.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4, %5, %6}], [%7];" ::"r"(dst_smem),
      "l"(tensormap_u64(map)), "r"(col), "r"(rows[0]), "r"(rows[1]), "r"(rows[2]), "r"(rows[3]),
      "r"(mbar_smem)
      : "memory");
}

#if TMAKIT_PTX_SCATTER4_W128
// cp.async.bulk.tensor.2d.global.shared::cta.tile::scatter4.bulk_group
//     [tensorMap, {col, row0, row1, row2, row3}], [srcMem];
// The inverse of gather4: four rows of the source go to rows row0..row3 (not sm_120a: A1).
__device__ __forceinline__ void cp_async_bulk_tensor_global_shared_scatter4(
    const CUtensorMap* map, std::int32_t col, const std::int32_t (&rows)[4],
    std::uint32_t src_smem) {
  asm volatile(
      "cp.async.bulk.tensor.2d.global.shared::cta.tile::scatter4.bulk_group"
      " [%0, {%1, %2, %3, %4, %5}], [%6];" ::"l"(tensormap_u64(map)),
      "r"(col), "r"(rows[0]), "r"(rows[1]), "r"(rows[2]), "r"(rows[3]), "r"(src_smem)
      : "memory");
}
#endif  // TMAKIT_PTX_SCATTER4_W128

// cp.async.bulk.tensor.{3..5}d.shared::cta.global.im2col::w{::128}.mbarrier::complete_tx::bytes
//     [dstMem], [tensorMap, {c, w, (h, (d,)) n}], [mbar], {wHalo, wOffset};
// The map is an im2col-wide one (cuTensorMapEncodeIm2colWide). wHalo: halo pixels after the
// row (W128: after every 32 elements), below 512 (W128: 32); wOffset below 32 (PTX ISA,
// cp.async.bulk.tensor operands). W128 = true for `.im2col::w::128` (not sm_120a).
template <bool W128, int N>
__device__ __forceinline__ void cp_async_bulk_tensor_shared_cta_global_im2col_w(
    std::uint32_t dst_smem, const CUtensorMap* map, const std::int32_t (&coords)[N],
    std::uint32_t mbar_smem, std::uint16_t w_halo, std::uint16_t w_offset) {
  static_assert(N >= 3 && N <= 5, "im2col-wide maps have rank 3..5 (rule I1)");
  static_assert(!W128 || TMAKIT_PTX_SCATTER4_W128, ".im2col::w::128 does not exist on sm_120a");
  const detail::Coords5 p(coords);
#define TMAKIT_EMIT(DIM, COORDS)                                                                \
  if constexpr (W128) {                                                                         \
    asm volatile("cp.async.bulk.tensor" DIM                                                     \
                 ".shared::cta.global.im2col::w::128.mbarrier::complete_tx::bytes"              \
                 " [%8], [%9, " COORDS "], [%10], {%11, %12};" ::TMAKIT_PTX_COORD_OPERANDS(p),  \
                 TMAKIT_PTX_NO_OFFSETS, "r"(dst_smem), "l"(tensormap_u64(map)), "r"(mbar_smem), \
                 "h"(w_halo), "h"(w_offset)                                                     \
                 : "memory");                                                                   \
  } else {                                                                                      \
    asm volatile("cp.async.bulk.tensor" DIM                                                     \
                 ".shared::cta.global.im2col::w.mbarrier::complete_tx::bytes"                   \
                 " [%8], [%9, " COORDS "], [%10], {%11, %12};" ::TMAKIT_PTX_COORD_OPERANDS(p),  \
                 TMAKIT_PTX_NO_OFFSETS, "r"(dst_smem), "l"(tensormap_u64(map)), "r"(mbar_smem), \
                 "h"(w_halo), "h"(w_offset)                                                     \
                 : "memory");                                                                   \
  }
  TMAKIT_PTX_FOR_RANK(N, TMAKIT_EMIT)
#undef TMAKIT_EMIT
}

#endif  // TMAKIT_PTX_SM100

}  // namespace tmakit::ptx
