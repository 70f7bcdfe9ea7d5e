// The FP8 quantizer's kernels that hold x in registers (README.md beside this file, "Rows in
// registers"): the rows kernel (rule Q7), a CTA per row of x (or R rows, or a segment of a
// row), for the row recipe, operand a's 1 x 128 blocks and the tensor recipe where x fits
// the SMs; the blocks kernel (rule Q8), a CTA per 128 x 128 block of operand b. The elements,
// the rounding and the grid barrier are sm90_quantize.cuh's.
#pragma once

#include <cfloat>
#include <cstdint>

#include "quantize/quantize_plan.hpp"
#include "quantize/sm90_quantize.cuh"

namespace tmakit::detail::quantize {

// The arguments of both kernels. The rows kernel's CTA c (blockIdx.x) takes rows c * R to c *
// R + R - 1 of x (R = blockDim.x / 2^row_threads_log2: one but for the tensor recipe's many
// rows and for short rows), the t-th of a row's threads its 16-byte vectors t, t +
// 2^row_threads_log2, ... (at most V of them: the kernel's); for operand a's segments (R = 1,
// the grid's y the segments) CTA (r, s) takes segment s of row r, V x 2^row_threads_log2
// vectors from vector s x V x 2^row_threads_log2 on. The blocks kernel's CTAs are its grid's
// blocks, and it reads no row_threads_log2 and no grid_counters.
struct RowParams {
  const std::uint8_t* x;
  std::uint64_t x_pitch;  // bytes between rows of x
  std::uint8_t* out;      // x_fp8
  std::uint64_t out_pitch;
  float* scale;
  std::int64_t stride_mn;     // the scale of row r: scale[r * stride_mn]; of its block j
  std::int64_t stride_k;      // (operand a's 1 x 128 blocks): scale[r * stride_mn + j * stride_k]
  std::uint32_t rows;         // rows of x
  std::uint32_t row_vectors;  // 16-byte vectors of a row of x
  std::uint32_t row_threads_log2;  // a row's threads: a power of two, at least 32 where R = 1
  // the tensor recipe (a cooperative launch): kGridCounters zeroed words, where the CTAs meet
  // for x's amax (rule Q6's barrier); null for the row recipe
  std::uint32_t* grid_counters;
};

// The amax, scale and cast of each 1 x 128 block of a row's segment from vector `first` on
// (operand a's block recipe): the block's vectors are on consecutive threads (a row's threads
// are a multiple of 32 and `first` a multiple of them, so a block never straddles a warp), its
// amax a max across them by shuffles.
template <class T, int V>
__device__ __forceinline__ void cast_blocks(const uint4 (&v)[V], const RowParams& p,
                                            std::uint64_t row, std::uint32_t first,
                                            std::uint32_t t, std::uint8_t* out) {
  using E = Elements<T>;
  constexpr int kV = E::kPerVector;
  constexpr std::uint32_t kBlockVectors = 128 / kV;  // 16 for 16-bit x, 32 for fp32
  const std::uint32_t threads = 1u << p.row_threads_log2;
#pragma unroll
  for (int i = 0; i < V; ++i) {
    // NOTE: the same for the whole CTA, so every lane of a warp reaches the shuffles below
    if (first + i * threads >= p.row_vectors) break;
    const std::uint32_t at = first + i * threads + t;
    std::uint32_t bits = E::finish(E::abs_max(v[i], 0));
#pragma unroll
    for (std::uint32_t lanes = kBlockVectors / 2; lanes >= 1; lanes /= 2) {
      bits = max(bits, __shfl_xor_sync(0xffffffffu, bits, lanes));
    }
    // past the row, or a row past x's (short rows, R a CTA): zeros, which left the max as it
    // was, and nothing to write
    if (at >= p.row_vectors || row >= p.rows) continue;
    const float amax = E::value_of_bits(bits);
    float scale, inverse;
    scale_of(amax, scale, inverse);
    if (at % kBlockVectors == 0) {
      p.scale[static_cast<std::int64_t>(row) * p.stride_mn +
              static_cast<std::int64_t>(at / kBlockVectors) * p.stride_k] = scale;
    }
    cast_vector<T>(v[i], inverse, !(amax <= FLT_MAX), out + at * kV);
  }
}

// The |x| bits' max of the thread's row (each warp's, then its row's warps': the row recipe's
// rows of 32 threads or more) or, with whole_cta, of the CTA's vectors. warp_bits: a word per
// warp of the CTA in shared memory, this call's own.
template <class T, int V>
__device__ __forceinline__ std::uint32_t row_amax_bits(const uint4 (&v)[V], const RowParams& p,
                                                       bool whole_cta, std::uint32_t* warp_bits) {
  using E = Elements<T>;
  const std::uint32_t tid = threadIdx.x;
  std::uint32_t bits = 0;
#pragma unroll
  for (int i = 0; i < V; ++i) bits = E::abs_max(v[i], bits);
  bits = __reduce_max_sync(0xffffffffu, E::finish(bits));
  if ((tid & 31) == 0) warp_bits[tid >> 5] = bits;
  __syncthreads();
  const std::uint32_t row_warps = whole_cta ? blockDim.x / 32 : (1u << p.row_threads_log2) / 32;
  const std::uint32_t first_warp = whole_cta ? 0 : (tid >> p.row_threads_log2) * row_warps;
  for (std::uint32_t w = first_warp; w < first_warp + row_warps; ++w) {
    bits = max(bits, warp_bits[w]);
  }
  return bits;
}

// The cast of the row's vectors with the scale of amax `bits`; the row's first thread writes
// the scale where `writes_scale`.
template <class T, int V>
__device__ __forceinline__ void cast_row(const uint4 (&v)[V], const RowParams& p,
                                         std::uint64_t row, std::uint32_t t, std::uint8_t* out,
                                         std::uint32_t bits, bool writes_scale) {
  using E = Elements<T>;
  constexpr int kV = E::kPerVector;
  const float amax = E::value_of_bits(bits);
  float scale, inverse;
  scale_of(amax, scale, inverse);
  if (t == 0 && writes_scale) p.scale[static_cast<std::int64_t>(row) * p.stride_mn] = scale;
  // NOTE: only an amax that is not finite can produce NaN bytes
  const bool not_finite = !(amax <= FLT_MAX);
  if (row < p.rows) {
    const std::uint32_t threads = 1u << p.row_threads_log2;
#pragma unroll
    for (int i = 0; i < V; ++i) {
      const std::uint32_t at = i * threads + t;
      if (at >= p.row_vectors) break;
      cast_vector<T>(v[i], inverse, not_finite, out + at * kV);
    }
  }
}

// The amax of the thread's row (the row recipe) or, for the tensor recipe, x's (the CTA's,
// then the grid's: rule Q6's barrier), then the cast of the row's vectors with its scale.
template <class T, int V>
__device__ __forceinline__ void cast_rows(const uint4 (&v)[V], const RowParams& p,
                                          std::uint64_t row, std::uint32_t t,
                                          std::uint8_t* out, std::uint32_t* warp_bits) {
  __shared__ std::uint32_t grid_bits;
  const bool tensor = p.grid_counters != nullptr;
  std::uint32_t bits = row_amax_bits<T, V>(v, p, tensor, warp_bits);
  if (tensor) {
    if (threadIdx.x == 0) grid_bits = grid_amax_bits(bits, p.grid_counters);
    __syncthreads();
    bits = grid_bits;
  }
  cast_row<T, V>(v, p, row, t, out, bits, tensor ? row == 0 : row < p.rows);
  if (tensor && threadIdx.x == 0) grid_leave(p.grid_counters);
}

// Row `row`'s vectors first + t, first + t + 2^row_threads_log2, ... into v (zero past the
// row's end, and for rows past x's: they leave the amax as it is).
template <int V>
__device__ __forceinline__ void load_row(uint4 (&v)[V], const RowParams& p, std::uint64_t row,
                                         std::uint32_t first, std::uint32_t t) {
  const auto* x = reinterpret_cast<const uint4*>(p.x + row * p.x_pitch);
  const std::uint32_t live_vectors = row < p.rows ? p.row_vectors : 0;
#pragma unroll
  for (int i = 0; i < V; ++i) {
    const std::uint32_t at = first + (i << p.row_threads_log2) + t;
    v[i] = at < live_vectors ? __ldg(x + at) : make_uint4(0, 0, 0, 0);
  }
}

// Rows of x: each row's vectors loaded into registers with plain 16-byte loads (V a thread),
// then cast by 1 x 128 blocks (Blocks: operand a's block recipe) or whole (the row recipe's
// row, the tensor recipe's rows), stored with plain stores. No shared-memory tile, no tensor
// map, no TMA round trips (README.md, rule Q7).
template <class T, int V, bool Blocks>
__global__ void __launch_bounds__(kMaxRowThreads)
    sm90_quantize_rows_kernel(const __grid_constant__ RowParams p) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900)
  __shared__ std::uint32_t warp_bits[kMaxRowThreads / 32];
  const std::uint32_t t = threadIdx.x & ((1u << p.row_threads_log2) - 1);
  const std::uint64_t row =
      (static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> p.row_threads_log2;
  // NOTE: operand a's segments on the grid's y: the same CTAs with the segment and the row
  // from blockIdx.x alone ran 4-7% slower (README.md, "Operand a in segments")
  const std::uint32_t first = blockIdx.y * (static_cast<std::uint32_t>(V) << p.row_threads_log2);
  uint4 v[V];
  load_row<V>(v, p, row, first, t);
  std::uint8_t* out = p.out + row * p.out_pitch;
  if constexpr (Blocks) {
    cast_blocks<T, V>(v, p, row, first, t, out);
  } else {
    cast_rows<T, V>(v, p, row, t, out, warp_bits);
  }
#else
  if (threadIdx.x == 0) printf("sm90_quantize_rows_kernel needs sm_90a\n");
  __trap();
#endif
}

// Operand b's 128 x 128 blocks (rule Q8): CTA (j, i) takes block (i, j), rows 128 i to 128 i +
// 127 and columns 128 j to 128 j + 127 of x, its kBlockVectors vectors a row in registers:
// thread t loads vector t % kBlockVectors of rows t / kBlockVectors + s x (blockDim.x /
// kBlockVectors), s < kBlockVectorsPerThread (a warp reads whole 256- or 512-byte row
// segments); the block's amax across the CTA, then the cast and the stores.
template <class T>
__global__ void __launch_bounds__(kMaxRowThreads)
    sm90_quantize_block_kernel(const __grid_constant__ RowParams p) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900)
  using E = Elements<T>;
  constexpr int kV = E::kPerVector;
  constexpr std::uint32_t kBlockVectors = 128 / kV;  // a row's vectors in a block
  constexpr std::uint32_t kSteps = kBlockVectorsPerThread;
  static_assert(kSteps * kMaxRowThreads / kBlockVectors >= 128,
                "a CTA of kMaxRowThreads threads holds a block's 128 rows");
  __shared__ std::uint32_t warp_bits[kMaxRowThreads / 32];
  const std::uint32_t tid = threadIdx.x;
  const std::uint32_t rows_per_step = blockDim.x / kBlockVectors;
  const std::uint32_t vector = blockIdx.x * kBlockVectors + tid % kBlockVectors;
  const std::uint64_t row0 = static_cast<std::uint64_t>(blockIdx.y) * 128 + tid / kBlockVectors;
  const bool live = vector < p.row_vectors;
  uint4 v[kSteps];
#pragma unroll
  for (std::uint32_t s = 0; s < kSteps; ++s) {
    const std::uint64_t row = row0 + s * rows_per_step;
    v[s] = live && row < p.rows
               ? __ldg(reinterpret_cast<const uint4*>(p.x + row * p.x_pitch) + vector)
               : make_uint4(0, 0, 0, 0);
  }
  const float amax = E::value_of_bits(row_amax_bits<T, kSteps>(v, p, true, warp_bits));
  float scale, inverse;
  scale_of(amax, scale, inverse);
  if (tid == 0) {
    p.scale[static_cast<std::int64_t>(blockIdx.y) * p.stride_mn +
            static_cast<std::int64_t>(blockIdx.x) * p.stride_k] = scale;
  }
  // NOTE: only an amax that is not finite can produce NaN bytes
  const bool not_finite = !(amax <= FLT_MAX);
#pragma unroll
  for (std::uint32_t s = 0; s < kSteps; ++s) {
    const std::uint64_t row = row0 + s * rows_per_step;
    if (live && row < p.rows) {
      cast_vector<T>(v[s], inverse, not_finite, p.out + row * p.out_pitch + vector * kV);
    }
  }
#else
  if (threadIdx.x == 0) printf("sm90_quantize_block_kernel needs sm_90a\n");
  __trap();
#endif
}

}  // namespace tmakit::detail::quantize
