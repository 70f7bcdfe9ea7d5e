// Blackwell's tile copies (sm_100a, sm_103a, sm_120a), issued by ONE thread like copy.hpp's:
// loads into the CTA's own shared memory (`.shared::cta`, the form sm_120a needs for the packed
// types and the 128B_ATOM_* swizzles), gather4 / scatter4 of four rows, im2col-wide loads, and
// the barrier byte count of a packed box. In debug mode (TMAKIT_DEBUG_WAITS) the rules only an
// instruction can break are checked on the device (docs/rules.md, "Rules only the instruction
// can break"): the buffer's alignment, the padded types' first coordinate, the im2col-wide
// operands and non-negative store coordinates.
#pragma once

#include <cstdint>

#include "tmakit/core/dtype.hpp"
#include "tmakit/device/barrier.hpp"
#include "tmakit/device/debug.hpp"
#include "tmakit/ptx/sm100_tma.hpp"
#include "tmakit/swizzle.hpp"

namespace tmakit {

// Bytes a load of `values` values of packed type T counts on its barrier: the packed bits,
// not the padded shared footprint (docs/model.md, "Blackwell"), as CUTLASS's sm100 collectives
// count.
TMAKIT_HOST_DEVICE constexpr std::uint32_t packed_tx_bytes(DataType t, std::uint32_t values) {
  return values * static_cast<std::uint32_t>(value_bits(t)) / 8;
}
static_assert(packed_tx_bytes(DataType::packed_u4_align16, 128) == 64);
static_assert(packed_tx_bytes(DataType::packed_u6_align16, 128) == 96);

#if TMAKIT_PTX_SM100

namespace detail {
__device__ __forceinline__ void debug_check_rows(const char* op, std::int32_t col,
                                                 const std::int32_t (&rows)[4], bool is_store) {
  if constexpr (kDebugWaits) {
    if (is_store) {
      if (col < 0) {
        report_bad_coordinate(op, 0, col, "a store must not start at a negative coordinate");
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        if (rows[i] < 0) {
          report_bad_coordinate(op, 1, rows[i], "a store must not start at a negative coordinate");
        }
      }
    }
  } else {
    (void)op, (void)col, (void)rows, (void)is_store;
  }
}
}  // namespace detail

// A box of packed type T (16U4_ALIGN8B, 16U4_ALIGN16B, 16U6_ALIGN16B) at `coords` (values,
// innermost first) into `smem`, a buffer of the CTA, swizzled with S, completing on `bar`
// (armed by the caller, packed_tx_bytes).
template <DataType T, Swizzle S, int N>
__device__ __forceinline__ void load_packed_tile(void* smem, const CUtensorMap* map, Barrier& bar,
                                                 const std::int32_t (&coords)[N]) {
  static_assert(is_packed(T), "load_packed_tile: T is one of the packed types");
  detail::debug_check_tensor_map("load_packed_tile", map);
  debug_check_smem_alignment(smem, S == Swizzle::none ? 128u : swizzle_repeat_bytes(S),
                             "packed TMA buffer", "128 B destination or swizzle repeat, D1/D2");
  if constexpr (kDebugWaits &&
                (T == DataType::packed_u4_align16 || T == DataType::packed_u6_align16)) {
    if (coords[0] % 128 != 0) {
      detail::report_bad_coordinate("load_packed_tile", 0, coords[0],
                                    "the padded types' first coordinate is a multiple of 128");
    }
  }
  ptx::cp_async_bulk_tensor_shared_cta_global_tile(ptx::smem_u32(smem), map, coords, bar.smem());
}

// Four rows of a rank-2 map (boxDim = {width, 1}, tileMode gather4) from column `col`, stored
// one after the other at `smem`; the barrier counts 4 x width x element size bytes.
__device__ __forceinline__ void load_rows_gather4(void* smem, const CUtensorMap* map, Barrier& bar,
                                                  std::int32_t col, const std::int32_t (&rows)[4]) {
  debug_check_smem_alignment(smem, 128, "gather4 buffer", "128 B TMA destination, rule D1");
  detail::debug_check_tensor_map("load_rows_gather4", map);
  detail::debug_check_rows("load_rows_gather4", col, rows, false);
  ptx::cp_async_bulk_tensor_shared_cta_global_gather4(ptx::smem_u32(smem), map, col, rows,
                                                      bar.smem());
}

#if TMAKIT_PTX_SCATTER4_W128
// The four rows at `smem` to rows rows[0..3] from column `col` (sm_100a, sm_103a); completes
// through the issuing thread's bulk group, as store_tile.
__device__ __forceinline__ void store_rows_scatter4(const CUtensorMap* map, const void* smem,
                                                    std::int32_t col,
                                                    const std::int32_t (&rows)[4]) {
  debug_check_smem_alignment(smem, 128, "scatter4 buffer", "128 B TMA source, rule D1");
  detail::debug_check_tensor_map("store_rows_scatter4", map);
  detail::debug_check_rows("store_rows_scatter4", col, rows, true);
  ptx::cp_async_bulk_tensor_global_shared_scatter4(map, col, rows, ptx::smem_u32(smem));
}
#endif

// An im2col-wide load (cuTensorMapEncodeIm2colWide map): coords (c, w, h, d, n) in dimension
// order; W128 for mode W128 (`.im2col::w::128`, not sm_120a).
template <bool W128, int N>
__device__ __forceinline__ void load_im2col_wide(void* smem, const CUtensorMap* map, Barrier& bar,
                                                 const std::int32_t (&coords)[N],
                                                 std::uint16_t w_halo, std::uint16_t w_offset) {
  debug_check_smem_alignment(smem, 128, "im2col-wide buffer", "128 B TMA destination, rule D1");
  detail::debug_check_tensor_map("load_im2col_wide", map);
  if constexpr (kDebugWaits) {
    if (w_halo >= (W128 ? 32u : 512u)) {
      detail::report_bad_coordinate("load_im2col_wide", 1, w_halo,
                                    W128 ? "wHalo must be below 32 for .im2col::w::128"
                                         : "wHalo must be below 512 for .im2col::w");
    }
    if (w_offset >= 32u) {
      detail::report_bad_coordinate("load_im2col_wide", 1, w_offset, "wOffset must be below 32");
    }
  }
  ptx::cp_async_bulk_tensor_shared_cta_global_im2col_w<W128>(ptx::smem_u32(smem), map, coords,
                                                             bar.smem(), w_halo, w_offset);
}

#endif  // TMAKIT_PTX_SM100

}  // namespace tmakit
