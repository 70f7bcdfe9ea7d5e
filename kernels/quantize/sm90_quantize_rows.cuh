// The FP8 quantizer's rows kernel (rule Q7, README.md beside this file, "Rows in registers"):
// a CTA per row of x, the row in registers, for the row recipe and the tensor recipe's few
// rows. The elements, the rounding and the grid barrier are sm90_quantize.cuh's.
#pragma once

#include <cfloat>
#include <cstdint>

#include "quantize/quantize_plan.hpp"
#include "quantize/sm90_quantize.cuh"

namespace tmakit::detail::quantize {

// The rows kernel's arguments: CTA r takes row r of x, thread t its 16-byte vectors t,
// t + blockDim.x, ... (at most kRowVectorsPerThread of them).
struct RowParams {
  const std::uint8_t* x;
  std::uint64_t x_pitch;  // bytes between rows of x
  std::uint8_t* out;      // x_fp8
  std::uint64_t out_pitch;
  float* scale;
  std::int64_t stride_mn;     // the row recipe's scale of row r: scale[r * stride_mn]
  std::uint32_t row_vectors;  // 16-byte vectors of a row of x
  // the tensor recipe (a cooperative launch): kGridCounters zeroed words, where the CTAs meet
  // for x's amax (rule Q6's barrier); null for the row recipe
  std::uint32_t* grid_counters;
};

// One row of x: its vectors loaded into registers with plain 16-byte loads, its amax taken
// across the CTA (and for the tensor recipe across the grid), then cast and stored with plain
// stores: no shared-memory tile, no tensor map, no TMA round trips (README.md, rule Q7).
template <class T>
__global__ void __launch_bounds__(kMaxRowThreads)
    sm90_quantize_rows_kernel(const __grid_constant__ RowParams p) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900)
  using E = Elements<T>;
  constexpr int kV = E::kPerVector;
  __shared__ std::uint32_t warp_bits[kMaxRowThreads / 32];
  __shared__ std::uint32_t grid_bits;
  const std::uint32_t tid = threadIdx.x;
  const std::uint64_t row = blockIdx.x;
  const auto* x = reinterpret_cast<const uint4*>(p.x + row * p.x_pitch);
  std::uint8_t* out = p.out + row * p.out_pitch;

  // step 1: the row's vectors (zero past its end: they leave the amax as it is)
  uint4 v[kRowVectorsPerThread];
#pragma unroll
  for (int i = 0; i < kRowVectorsPerThread; ++i) {
    const std::uint32_t at = i * blockDim.x + tid;
    v[i] = at < p.row_vectors ? __ldg(x + at) : make_uint4(0, 0, 0, 0);
  }

  // step 2: the row's amax (each warp's, then the CTA's), or x's (the grid's)
  std::uint32_t bits = 0;
#pragma unroll
  for (int i = 0; i < kRowVectorsPerThread; ++i) bits = E::abs_max(v[i], bits);
  bits = __reduce_max_sync(0xffffffffu, E::finish(bits));
  if ((tid & 31) == 0) warp_bits[tid >> 5] = bits;
  __syncthreads();
  for (std::uint32_t w = 0; w < blockDim.x / 32; ++w) bits = max(bits, warp_bits[w]);
  if (p.grid_counters != nullptr) {
    if (tid == 0) grid_bits = grid_amax_bits(bits, p.grid_counters);
    __syncthreads();
    bits = grid_bits;
  }
  const float amax = E::value_of_bits(bits);
  float scale, inverse;
  scale_of(amax, scale, inverse);
  if (tid == 0 && (p.grid_counters == nullptr || row == 0)) {
    p.scale[static_cast<std::int64_t>(row) * p.stride_mn] = scale;
  }

  // step 3: the cast and the stores
  // NOTE: only an amax that is not finite can produce NaN bytes
  const bool not_finite = !(amax <= FLT_MAX);
#pragma unroll
  for (int i = 0; i < kRowVectorsPerThread; ++i) {
    const std::uint32_t at = i * blockDim.x + tid;
    if (at >= p.row_vectors) break;
    cast_vector<T>(v[i], inverse, not_finite, out + at * kV);
  }
  if (p.grid_counters != nullptr && tid == 0) grid_leave(p.grid_counters);
#else
  if (threadIdx.x == 0) printf("sm90_quantize_rows_kernel needs sm_90a\n");
  __trap();
#endif
}

}  // namespace tmakit::detail::quantize
