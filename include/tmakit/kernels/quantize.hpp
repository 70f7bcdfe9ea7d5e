// FP8 quantizer: x (rows x K, bf16 / fp16 / fp32) -> x_fp8 (e4m3 bits) and the dequantisation
// scales the FP8 GEMM takes (include/tmakit/kernels/gemm.hpp), in its layouts: one per tensor,
// one per row, or one per 1 x 128 (operand a) / 128 x 128 (operand b) block. Row and block
// scales are computed in the same pass over x that casts it (rows of 512 bytes to 64 KiB of
// the row and operand-a block recipes through registers: a CTA per row, short rows a warp each
// several to a CTA, or operand a's rows in several CTAs each where they are few; operand b's
// 128 x 128 blocks too, one CTA per block; else TMA loads of tiles); a tensor scale needs the amax of all of x first: one pass where x fits the SMs at
// once (the CTAs hold their rows or tiles and meet at a grid barrier), else two reads of x.
// Design, rounding and measured figures: kernels/quantize/README.md.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "tmakit/kernels/gemm.hpp"
#include "tmakit/kernels/tensor_ref.hpp"

namespace tmakit {

// Which GEMM operand x will be: a (M x K, scales per row of A / per 1 x 128 of a row) or b
// (N x K, scales per row of B / per 128 x 128 block). Only block scales differ between them.
enum class QuantizeOperand { a, b };

// The scale array's extents for a recipe: `mn` x `k` floats (tensor: 1 x 1; row: rows x 1;
// block a: rows x ceil(K / 128); block b: ceil(rows / 128) x ceil(K / 128)). Throws
// ArgumentError for a recipe or operand out of range.
struct QuantizeScaleShape {
  std::uint64_t mn = 0;
  std::uint64_t k = 0;
};
QuantizeScaleShape quantize_scale_shape(std::uint64_t rows, std::uint64_t cols,
                                        GemmScaleRecipe recipe, QuantizeOperand operand);

// For each group of x (the tensor, a row, a 1 x 128 or 128 x 128 block; the last blocks
// along K and down the rows are K's and rows' remainders):
//   amax  = max |x| over the group (exact, in float; a NaN in the group makes it NaN)
//   scale = amax / 448 in float (rounded to nearest); 1 where amax is 0; 2^-126 (the least
//           normal float) where the quotient is below it, so that 1 / scale is finite
//   x_fp8 = e4m3(x * (1 / scale)): the reciprocal and the product each rounded to nearest
//           float, then to nearest-even e4m3, saturated to +-448 (cvt.rn.satfinite).
// Non-finite x: a group holding a NaN gets scale NaN and every x_fp8 0x7F (NaN); a group
// holding +-inf (no NaN) gets scale inf, its infinities 0x7F and its finite elements +-0.
// kernels/quantize/README.md states it in full; reference::quantize_fp8 computes the same.
//
// x: rows x K of BFLOAT16, FLOAT16 or FLOAT32, K a multiple of 16 (the GEMM's K rule), data
// and row stride 16-byte aligned (TMA's rules; a view that breaks them is refused, naming
// it). x_fp8: rows x K of UINT8 (e4m3 bits), 16-byte aligned, not overlapping x. scale:
// float32 device memory, written at scale[i * mn + j * k] for group (i, j) with the strides
// in elements `scale_strides` (-1, -1: the GEMM's defaults, GemmScaleStrides; ignored for the
// tensor recipe), no two groups on one float, not overlapping x or x_fp8. The row recipe
// holds whole rows in shared memory: ceil(K / 256) * 256 * (element bytes + 1) must be at
// most 200 KiB (K <= 68096 for 16-bit x, 40960 for fp32). Throws ArgumentError naming the
// argument before anything is written; CudaError if a launch fails. Asynchronous on `stream`;
// the row and block recipes enqueue one kernel. The tensor recipe enqueues one cooperative
// kernel where x fits the SMs at once (its rows in registers, or its tiles in shared memory:
// about 17 MB of x on a 132-SM part), else a memset and three kernels. The cooperative kernel's CTAs meet at three
// counters (zero between calls): an uncaptured call uses its stream's (in the workspace
// gemm_fp8's split-K calls keep per stream; gemm_fp8_release_workspace frees it), so calls
// on one stream take turns as the stream orders them; a call captured into a CUDA graph gets
// counters of its own from slots the device's first uncaptured such call allocates (4096
// per device), and takes the three kernels where there are none. That first call also
// waits once for its stream (the slots are zeroed on it before any graph may use them).
void quantize_fp8(ConstTensorRef x, TensorRef x_fp8, float* scale, GemmScaleRecipe recipe,
                  QuantizeOperand operand = QuantizeOperand::a,
                  const GemmScaleStrides& scale_strides = {}, cudaStream_t stream = nullptr);

// quantize_fp8's checks without the addresses (which may be null): what a framework tracing
// a call before its memory exists can check. Throws what quantize_fp8 would for anything but
// the addresses (null, alignment of data, overlap, memory the device cannot use).
void quantize_fp8_check_shapes(ConstTensorRef x, TensorRef x_fp8, GemmScaleRecipe recipe,
                               QuantizeOperand operand = QuantizeOperand::a,
                               const GemmScaleStrides& scale_strides = {});

namespace reference {
// The e4m3 bits of a float, rounded to nearest even, saturated to +-448; NaN -> 0x7F.
std::uint8_t e4m3_from_float(float x);
// CPU reference over host memory computing exactly what quantize_fp8 does (same groups,
// same float operations in the same order), for the bit-exact tests. Same arguments (host
// pointers; scale strides honoured).
void quantize_fp8(ConstTensorRef x, TensorRef x_fp8, float* scale, GemmScaleRecipe recipe,
                  QuantizeOperand operand = QuantizeOperand::a,
                  const GemmScaleStrides& scale_strides = {});
}  // namespace reference

}  // namespace tmakit
