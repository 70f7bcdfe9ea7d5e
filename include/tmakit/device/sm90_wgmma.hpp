// wgmma for kernels (sm_90a): operands as TMA loads them, one k-block of e4m3 products, the
// warpgroup's fences, and the epilogue that writes an accumulator fragment into swizzled
// boxes for a TMA store. Built on tmakit/ptx/sm90_wgmma.hpp (one wrapper per instruction);
// kernels use these, so debug mode (TMAKIT_DEBUG_WAITS) checks what they hand the tensor cores.
//
// Operands: K-major tiles of e4m3 loaded by TMA with the 128B swizzle: rows of 128 bytes of
// K (one k-block), 8 rows (1024 bytes) per swizzle pattern, the box starting on a 1024-byte
// boundary (rule D2). wgmma m64nNk32 reads 32 bytes of K per instruction: four per k-block.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "tmakit/device/debug.hpp"
#include "tmakit/ptx/common.hpp"
#include "tmakit/ptx/grid_dependency.hpp"
#include "tmakit/ptx/sm90_wgmma.hpp"

namespace tmakit {

inline constexpr int kWgmmaKBlockBytes = 128;  // a k-block: one 128B swizzle span of e4m3
inline constexpr int kWgmmaKBytes = 32;        // K per wgmma of e4m3

// ---- the warpgroup's registers and the grid's order ------------------------------------

// setmaxnreg: the producer warpgroup gives registers back, the math warpgroups take them.
template <int Registers>
__device__ __forceinline__ void warpgroup_release_registers() {
  ptx::setmaxnreg_dec_sync_aligned_u32<Registers>();
}
template <int Registers>
__device__ __forceinline__ void warpgroup_claim_registers() {
  ptx::setmaxnreg_inc_sync_aligned_u32<Registers>();
}

// A dependent launch's start: wait until the kernel before it in the stream is complete and
// its writes are visible (griddepcontrol.wait), and let the next kernel start setting up
// (griddepcontrol.launch_dependents).
__device__ __forceinline__ void wait_for_previous_kernel() {
  ptx::griddepcontrol_wait();
}
__device__ __forceinline__ void allow_next_kernel() {
  ptx::griddepcontrol_launch_dependents();
}

// ---- operands -------------------------------------------------------------------------

// The shared-memory address of `p` (a pointer into shared memory), as the descriptors take it.
__device__ __forceinline__ std::uint32_t smem_address(const void* p) {
  return ptx::smem_u32(p);
}

// The descriptor of a K-major, 128B-swizzled operand at shared-memory address `smem_addr`: a
// box start, or whole 8-row groups (1024 bytes) into one. Debug mode traps when it is not on
// the swizzle pattern's 1024-byte repeat.
__device__ __forceinline__ std::uint64_t wgmma_operand_sw128(std::uint32_t smem_addr) {
  if constexpr (kDebugWaits) {
    if (smem_addr % 1024 != 0) {
      detail::report_misaligned("wgmma operand", smem_addr, 1024, "swizzle 128B repeat, rule D2");
    }
  }
  return ptx::wgmma_smem_desc_k_major_sw128(smem_addr);
}
// The same operand `bytes` further on (a multiple of 16; whole 1024-byte row groups to
// select other rows, 32-byte steps inside a k-block to select a K slice).
__device__ __forceinline__ std::uint64_t wgmma_operand_advance(std::uint64_t desc,
                                                               std::uint32_t bytes) {
  return ptx::wgmma_smem_desc_advance(desc, bytes);
}

// ---- one k-block ----------------------------------------------------------------------

// The four wgmma m64nNk32 e4m3 of one k-block, A's 64 rows x B's N rows, into `acc` (fp32,
// wgmma's fragment layout); with Fresh the first one overwrites `acc` (a new partial
// product), else every one adds. No fence, no commit: callers put those around whole groups,
// with no run-time control flow between the wgmmas of a group (it makes ptxas serialise them).
// NOTE: advancing the start address by 32 bytes inside the 128-byte swizzled row selects the
// next K slice; the hardware applies the swizzle to the full address.
template <int N, bool Fresh>
__device__ __forceinline__ void wgmma_k_block_e4m3(float (&acc)[N / 2], std::uint64_t desc_a,
                                                   std::uint64_t desc_b) {
  static_assert(N == 8 || N == 16 || N == 32 || N == 64 || N == 80 || N == 128 || N == 144 ||
                    N == 192 || N == 256,
                "wgmma N: the wrappers in tmakit/ptx/sm90_wgmma.hpp are 8, 16, 32, 64, 80, "
                "128, 144, 192 and 256");
#pragma unroll
  for (int kk = 0; kk < kWgmmaKBlockBytes / kWgmmaKBytes; ++kk) {
    ptx::wgmma_mma_async_m64k32_f32_e4m3<N>(acc, wgmma_operand_advance(desc_a, kk * kWgmmaKBytes),
                                            wgmma_operand_advance(desc_b, kk * kWgmmaKBytes),
                                            kk > 0 || !Fresh ? 1u : 0u);
  }
}

// The warpgroup's ordering around wgmmas: registers written by ordinary code before a wgmma
// reads them (fence), accumulators the compiler must not touch while wgmmas own them
// (fence_registers), a group of issued wgmmas (commit), and waiting until at most
// `Pending` groups are in flight (wait).
__device__ __forceinline__ void wgmma_fence() {
  ptx::wgmma_fence_sync_aligned();
}
template <int R>
__device__ __forceinline__ void wgmma_fence_registers(float (&acc)[R]) {
  ptx::wgmma_fence_operands(acc);
}
__device__ __forceinline__ void wgmma_commit() {
  ptx::wgmma_commit_group_sync_aligned();
}
template <int Pending>
__device__ __forceinline__ void wgmma_wait() {
  ptx::wgmma_wait_group_sync_aligned<Pending>();
}

// ---- the epilogue ---------------------------------------------------------------------

// One value of an output type, rounded to nearest even once; two as one 32-bit word (lo in
// the low half).
template <class T>
__device__ __forceinline__ T round_to(float v);
template <>
__device__ __forceinline__ __nv_bfloat16 round_to<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <>
__device__ __forceinline__ __half round_to<__half>(float v) {
  return __float2half_rn(v);
}
template <class T>
__device__ __forceinline__ std::uint32_t round_pair(float lo, float hi);
template <>
__device__ __forceinline__ std::uint32_t round_pair<__nv_bfloat16>(float lo, float hi) {
  const __nv_bfloat162 r = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const std::uint32_t*>(&r);
}
template <>
__device__ __forceinline__ std::uint32_t round_pair<__half>(float lo, float hi) {
  const __half2 r = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const std::uint32_t*>(&r);
}

// (stmatrix_fragment below, with or without multiplying by its scale)
namespace detail {
template <class DTile, class T, int Cols, bool Scaled, int R>
__device__ __forceinline__ void stmatrix_fragment_impl(const float (&acc)[R], float scale,
                                                       typename DTile::Buffer* boxes, int run,
                                                       std::uint32_t warp, std::uint32_t lane) {
  static_assert(sizeof(T) == 2 && DTile::elem_bytes == 2 && Cols % 16 == 0,
                "pairs of 8-column groups of 2-byte elements");
  static_assert(DTile::rows == 64, "a warpgroup's fragment is 64 rows: boxes of 64 rows");
  // NOTE: not DTile::box[0]: std::array's operator[] is a host function to nvcc without
  // --expt-relaxed-constexpr, which a kernel built on these headers need not pass
  constexpr std::uint32_t kBoxCols = DTile::row_bytes / DTile::elem_bytes;
  const std::uint32_t mat = lane / 8;
  const std::uint32_t row = 16 * warp + lane % 8 + 8 * (mat % 2);
  const auto v = [&](int i) { return Scaled ? acc[i] * scale : acc[i]; };
#pragma unroll
  for (int j = run * Cols / 8; j < (run + 1) * Cols / 8; j += 2) {
    const std::uint32_t col = 8 * (j + mat / 2) - run * Cols;
    const std::uint32_t offset = DTile::offset_bytes(col % kBoxCols, row);
    ptx::stmatrix_x4(smem_address(&boxes[col / kBoxCols].bytes[offset]),
                     round_pair<T>(v(4 * j), v(4 * j + 1)),
                     round_pair<T>(v(4 * j + 2), v(4 * j + 3)),
                     round_pair<T>(v(4 * j + 4), v(4 * j + 5)),
                     round_pair<T>(v(4 * j + 6), v(4 * j + 7)));
  }
}
}  // namespace detail

// Columns [Cols * run, Cols * (run + 1)) of a warpgroup's 64 x N fp32 fragment (wgmma's
// layout: register 4j + 2h + e of lane l in warp w holds row 16w + l/4 + 8h, column
// 8j + 2(l%4) + e), times `scale` and rounded once to T, into `boxes`: 64-row boxes of DTile
// (a 2-byte element, the 128B swizzle), column Cols * run landing in column 0 of
// boxes[0]. Two 8-column groups per stmatrix.x4: matrices (rows 0-7, group j), (rows 8-15,
// j), (0-7, j + 1), (8-15, j + 1) of the warp's 16 rows; lane l gives the address of row
// l % 8 of matrix l / 8. With the 128B swizzle a quarter-warp's eight rows land on eight
// distinct 16-byte chunks: no bank conflicts. `warp` (0-3) and `lane`: the calling thread's
// in its warpgroup. `run` must be known once the caller's loops are unrolled (it indexes
// registers). The caller fences (fence_view_async_shared) and syncs before a TMA store reads
// the boxes.
// NOTE: a scale of 1 multiplies nothing: those multiplies are left out (x * 1 is x, so the
// boxes hold the same bits), which the epilogues of short-K GEMM calls measurably pay for
// (kernels/gemm/EXPERIMENTS.md, "A unit's decode and the epilogue's scale of 1").
template <class DTile, class T, int Cols, int R>
__device__ __forceinline__ void stmatrix_fragment(const float (&acc)[R], float scale,
                                                  typename DTile::Buffer* boxes, int run,
                                                  std::uint32_t warp, std::uint32_t lane) {
  if (scale == 1.0f) {
    detail::stmatrix_fragment_impl<DTile, T, Cols, false>(acc, 1.0f, boxes, run, warp, lane);
  } else {
    detail::stmatrix_fragment_impl<DTile, T, Cols, true>(acc, scale, boxes, run, warp, lane);
  }
}

}  // namespace tmakit
