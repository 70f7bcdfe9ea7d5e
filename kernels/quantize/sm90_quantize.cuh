// The FP8 quantizer's device code (README.md beside this file): the tile kernel, which loads
// a tile of x with TMA, takes each group's amax from shared memory (row and block recipes)
// or reads the tensor's scale, casts the tile to e4m3 into a second buffer and stores it with
// TMA; and, for the tensor recipe, either the CTAs meet at a grid barrier for the tensor's
// amax (rule Q6) or the amax kernel and the scale kernel run before it (Q1). The rows kernel
// (rule Q7), built on the same element and rounding functions: sm90_quantize_rows.cuh.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cfloat>
#include <cstdint>
#include <cuda/atomic>

#include "quantize/quantize_plan.hpp"
#include "tmakit/device/barrier.hpp"
#include "tmakit/device/copy.hpp"
#include "tmakit/device/tile.hpp"
#include "tmakit/kernels/detail/launch_support.hpp"

namespace tmakit::detail::quantize {

struct Params {
  CUtensorMap in_map;   // x: boxes of box_cols x tile_rows elements, no swizzle
  CUtensorMap out_map;  // x_fp8: the same boxes of bytes
  float* scale;         // row / block: written per group; tensor: scale[0] read
  std::int64_t stride_mn;
  std::int64_t stride_k;
  std::uint64_t scales_mn;  // the scale array's extents (groups outside are not written)
  std::uint64_t scales_k;
  std::int32_t tiles_x;
  std::uint32_t tile_rows;
  std::uint32_t box_cols_log2;  // 128 or 256 columns
  std::uint32_t boxes;
  std::uint32_t group_rows_log2;  // a group: 2^group_rows_log2 rows x all the tile's boxes
  std::uint32_t threads_per_group_log2;
  std::uint32_t in_bytes;
  std::uint32_t out_bytes;
  bool fused_amax;  // false: the tensor recipe's cast, scale[0] given
  // 0: the tile is `boxes` boxes side by side; else (rules Q2 and Q6) its rows of row_cols
  // elements, dense, loaded and stored as one 3-D box (QuantizePlan::row_chunk)
  std::uint32_t row_cols;
  // rule Q6 (a cooperative launch): kGridCounters words of the stream's workspace, zero on
  // entry, where the CTAs meet for the tensor's amax; null for every other rule
  std::uint32_t* grid_counters;
  // rule Q1's cast: CTA i takes tile gridDim.x - 1 - i
  bool reverse_tiles;
};

// ---- elements: 16 bytes at a time ----------------------------------------------------

// Per element type: the 16-byte vector's elements as floats, and the unsigned max of |x|'s
// bits (ordered as |x| is, NaN above infinity, so a NaN wins: the max is exact and the same
// in any order).
template <class T>
struct Elements;

template <>
struct Elements<float> {
  static constexpr int kPerVector = 4;
  __device__ static std::uint32_t abs_max(const uint4& v, std::uint32_t acc) {
    acc = max(acc, v.x & 0x7fffffffu);
    acc = max(acc, v.y & 0x7fffffffu);
    acc = max(acc, v.z & 0x7fffffffu);
    return max(acc, v.w & 0x7fffffffu);
  }
  __device__ static std::uint32_t finish(std::uint32_t acc) { return acc; }
  __device__ static float value_of_bits(std::uint32_t bits) { return __uint_as_float(bits); }
  __device__ static void to_floats(const uint4& v, float (&f)[4]) {
    f[0] = __uint_as_float(v.x);
    f[1] = __uint_as_float(v.y);
    f[2] = __uint_as_float(v.z);
    f[3] = __uint_as_float(v.w);
  }
};

// 16-bit types: two |x| per word, maxed halfword by halfword.
struct Elements16 {
  static constexpr int kPerVector = 8;
  __device__ static std::uint32_t abs_max(const uint4& v, std::uint32_t acc) {
    acc = __vmaxu2(acc, v.x & 0x7fff7fffu);
    acc = __vmaxu2(acc, v.y & 0x7fff7fffu);
    acc = __vmaxu2(acc, v.z & 0x7fff7fffu);
    return __vmaxu2(acc, v.w & 0x7fff7fffu);
  }
  __device__ static std::uint32_t finish(std::uint32_t acc) {
    return max(acc & 0xffffu, acc >> 16);
  }
};

template <>
struct Elements<__nv_bfloat16> : Elements16 {
  __device__ static float value_of_bits(std::uint32_t bits) { return __uint_as_float(bits << 16); }
  __device__ static void to_floats(const uint4& v, float (&f)[8]) {
    const std::uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      f[2 * i] = __uint_as_float(w[i] << 16);
      f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    }
  }
};

template <>
struct Elements<__half> : Elements16 {
  __device__ static float value_of_bits(std::uint32_t bits) {
    return __half2float(__ushort_as_half(static_cast<unsigned short>(bits)));
  }
  __device__ static void to_floats(const uint4& v, float (&f)[8]) {
    const std::uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 p = __half22float2(*reinterpret_cast<const __half2*>(&w[i]));
      f[2 * i] = p.x;
      f[2 * i + 1] = p.y;
    }
  }
};

// Two floats to e4m3, round to nearest even, saturated to +-448; `lo` in the low byte.
// PTX: cvt.rn.satfinite.e4m3x2.f32 d, a, b puts a's in the upper byte, b's in the lower.
__device__ __forceinline__ std::uint32_t e4m3x2(float lo, float hi) {
  std::uint16_t d;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(d) : "f"(hi), "f"(lo));
  return d;
}

// Every e4m3 NaN byte (S.1111.111) of a word made 0x7F: the sign of a NaN is not kept.
__device__ __forceinline__ std::uint32_t positive_nans(std::uint32_t w) {
  const std::uint32_t nan = __vcmpeq4(w | 0x80808080u, 0xffffffffu);  // 0xFF per NaN byte
  return w & ~(nan & 0x80808080u);
}

// The scale of a group from its amax and its reciprocal (README.md, "Rounding"); the same
// float operations as reference::quantize_fp8.
__device__ __forceinline__ void scale_of(float amax, float& scale, float& inverse) {
  if (amax == 0.0f) {
    scale = 1.0f;
  } else {
    scale = __fdiv_rn(amax, 448.0f);
    if (scale < FLT_MIN) scale = FLT_MIN;  // NOTE: false for NaN, which stays NaN
  }
  inverse = __frcp_rn(scale);
}

// One 16-byte vector of x as e4m3 bytes at `dst` (8 for 16-bit x, 4 for fp32): each element
// times `inverse`, rounded as README.md's "Rounding" says; every NaN byte made 0x7F where the
// group's amax (or scale) is not finite.
template <class T>
__device__ __forceinline__ void cast_vector(const uint4& v, float inverse, bool not_finite,
                                            std::uint8_t* dst) {
  using E = Elements<T>;
  constexpr int kV = E::kPerVector;
  float f[kV];
  E::to_floats(v, f);
  std::uint32_t w[kV / 4];
#pragma unroll
  for (int i = 0; i < kV / 4; ++i) {
    w[i] = e4m3x2(__fmul_rn(f[4 * i], inverse), __fmul_rn(f[4 * i + 1], inverse)) |
           (e4m3x2(__fmul_rn(f[4 * i + 2], inverse), __fmul_rn(f[4 * i + 3], inverse)) << 16);
    if (not_finite) w[i] = positive_nans(w[i]);
  }
  if constexpr (kV == 8) {
    *reinterpret_cast<uint2*>(dst) = make_uint2(w[0], w[1]);
  } else {
    *reinterpret_cast<std::uint32_t*>(dst) = w[0];
  }
}

// ---- rule Q6: the tensor's amax across the grid -----------------------------------------

// The unsigned max of every CTA's `tile_bits` (|x|'s bits, as above), once every CTA of the
// grid has given its own: one thread per CTA calls it, then grid_leave once the CTA no longer
// needs the counters. The grid must be resident at once (a cooperative launch), or the CTAs
// that wait here would hold the SMs the others need. counters: arrivals, the max,
// departures; zero on entry, and zero again once the last CTA has left (the next call on the
// stream finds them so).
__device__ __forceinline__ std::uint32_t grid_amax_bits(std::uint32_t tile_bits,
                                                        std::uint32_t* counters) {
  using Ref = cuda::atomic_ref<std::uint32_t, cuda::thread_scope_device>;
  Ref arrived(counters[0]), amax(counters[1]);
  if (tile_bits != 0) amax.fetch_max(tile_bits, cuda::memory_order_relaxed);
  // NOTE: release: a CTA that sees every arrival (acquire) sees every CTA's max before it
  arrived.fetch_add(1, cuda::memory_order_release);
  while (arrived.load(cuda::memory_order_acquire) < gridDim.x) __nanosleep(32);
  return amax.load(cuda::memory_order_relaxed);
}

// The CTA is done with the counters; the last CTA to leave sets them to zero.
// NOTE: at the kernel's end, off the path to the cast (its atomic is a round trip to the
// L2); acq_rel: the last to leave follows every CTA's read of the max, so its reset cannot
// overtake one
__device__ __forceinline__ void grid_leave(std::uint32_t* counters) {
  using Ref = cuda::atomic_ref<std::uint32_t, cuda::thread_scope_device>;
  Ref arrived(counters[0]), amax(counters[1]), left(counters[2]);
  if (left.fetch_add(1, cuda::memory_order_acq_rel) == gridDim.x - 1) {
    arrived.store(0, cuda::memory_order_relaxed);
    amax.store(0, cuda::memory_order_relaxed);
    left.store(0, cuda::memory_order_relaxed);
  }
}

// ---- the tile kernel ------------------------------------------------------------------

// Shared memory: x's boxes (box j at j * tile_rows * box_cols elements, each box dense rows
// of box_cols), or the tile's rows back to back (row_cols); x_fp8's laid out alike in bytes,
// one amax word per group, the barrier.
// The element offset in the tile of vector v of the group whose first row is group_row0:
// box_cols / kPerVector vectors per box row, the group's rows of a box, then the next box;
// with row_cols, the group's rows (one for the row recipe, the whole tile for the tensor
// recipe's), dense: v after v.
template <class T, bool Runs>
__device__ __forceinline__ std::uint32_t group_vector_offset(std::uint32_t v,
                                                             std::uint32_t group_row0,
                                                             const Params& p) {
  constexpr std::uint32_t kVectorLog2 = Elements<T>::kPerVector == 8 ? 3 : 2;
  if constexpr (Runs) return group_row0 * p.row_cols + (v << kVectorLog2);
  const std::uint32_t per_row_log2 = p.box_cols_log2 - kVectorLog2;
  const std::uint32_t box_row = v >> per_row_log2;
  const std::uint32_t within = v & ((1u << per_row_log2) - 1);
  const std::uint32_t box = box_row >> p.group_rows_log2;
  const std::uint32_t row = group_row0 + (box_row & ((1u << p.group_rows_log2) - 1));
  return ((box * p.tile_rows + row) << p.box_cols_log2) + (within << kVectorLog2);
}

// Runs: the tile as one box of runs of whole rows (Params::row_cols: rules Q2, Q6); a
// template argument, so that the other layouts' loops keep no test of it per vector.
template <class T, bool Runs>
__global__ void __launch_bounds__(kThreads, 4)
    sm90_quantize_kernel(const __grid_constant__ Params p) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900)
  using E = Elements<T>;
  using InBox = DynamicTile<T, Swizzle::none, 2, 128>;
  using OutBox = DynamicTile<std::uint8_t, Swizzle::none, 2, 128>;
  using InRows = DynamicTile<T, Swizzle::none, 3, 128>;  // {chunk, row / chunk, rows}
  using OutRows = DynamicTile<std::uint8_t, Swizzle::none, 3, 128>;
  constexpr int kV = E::kPerVector;
  extern __shared__ std::uint8_t smem_raw[];
  auto* in = reinterpret_cast<std::uint8_t*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) &
                                             ~std::uintptr_t{1023});
  // NOTE: x_fp8's buffer on 128 bytes (TMA's shared-memory alignment, rule D1): a tile of
  // runs is any whole number of 16-byte chunks (K = 272 bf16: 544 bytes a row)
  std::uint8_t* out = in + out_buffer_offset(p.in_bytes);
  auto* amax_words = reinterpret_cast<std::uint32_t*>(out + p.out_bytes);
  auto* full = reinterpret_cast<Barrier*>(amax_words + kThreads);
  const std::uint32_t tid = threadIdx.x;
  const auto tile =
      static_cast<std::int32_t>(p.reverse_tiles ? gridDim.x - 1 - blockIdx.x : blockIdx.x);
  const std::int32_t tx = tile % p.tiles_x;
  const std::int32_t ty = tile / p.tiles_x;
  const std::uint32_t box_cols = Runs ? p.row_cols : 1u << p.box_cols_log2;
  const std::uint32_t in_box_bytes = p.tile_rows * box_cols * sizeof(T);
  const std::uint32_t out_box_bytes = p.tile_rows * box_cols;
  const std::int32_t col0 = tx * static_cast<std::int32_t>(p.boxes * box_cols);
  const std::int32_t row0 = ty * static_cast<std::int32_t>(p.tile_rows);

  // step 1: the barrier, then one thread loads the tile's boxes onto it
  if (tid == 0) {
    full->init(1);
    fence_barrier_init();
    prefetch_tensor_map(&p.in_map);
    prefetch_tensor_map(&p.out_map);
  }
  amax_words[tid] = 0;
  __syncthreads();
  if (tid == 0) {
    // NOTE: boxes partly past the tensor are zero-filled and count all their bytes; zeros
    // leave a group's amax as it is
    full->arrive_expect_tx(p.in_bytes);
    if constexpr (Runs) {
      const std::int32_t c[3] = {0, 0, row0};
      load_tile<InRows>(in, &p.in_map, *full, c);
    }
    for (std::uint32_t j = 0; j < p.boxes && !Runs; ++j) {
      const std::int32_t c[2] = {col0 + static_cast<std::int32_t>(j * box_cols), row0};
      load_tile<InBox>(in + j * in_box_bytes, &p.in_map, *full, c);
    }
  }

  // step 2: this thread's group, and while the load is in flight, the given scale
  const std::uint32_t tpg_log2 = p.threads_per_group_log2;
  const std::uint32_t group = tid >> tpg_log2;
  const std::uint32_t lane_in_group = tid & ((1u << tpg_log2) - 1);
  const std::uint32_t group_row0 = group << p.group_rows_log2;
  const std::uint32_t group_vectors =
      (p.boxes << p.group_rows_log2) * (box_cols / static_cast<std::uint32_t>(kV));
  // NOTE: a group narrower than a warp (a 1 x 128 block: two threads a row) would have its
  // lanes read the same columns as the next group's, a row (256 or 512 bytes) further: the
  // same banks, 16-way conflicts. Where a group's vectors are a power of two, each group
  // walks them from its own start, `group` steps of its threads round: the lanes of a warp
  // then spread over the banks (the same vectors, in another order).
  const bool rotate = tpg_log2 < 5 && (group_vectors & (group_vectors - 1)) == 0;
  const std::uint32_t vector_mask = rotate ? group_vectors - 1 : 0xffffffffu;
  const std::uint32_t rotation = rotate ? (group << tpg_log2) & vector_mask : 0;
  float scale = 0.0f;
  float amax = 0.0f;
  if (!p.fused_amax) scale = p.scale[0];  // NOTE: written by the scale kernel before this one
  full->wait(0);
  const T* x = reinterpret_cast<const T*>(in);

  // step 3: the group's amax (row and block recipes): each thread's vectors, then the group
  if (p.fused_amax) {
    std::uint32_t acc = 0;
    for (std::uint32_t v = lane_in_group; v < group_vectors; v += 1u << tpg_log2) {
      const std::uint32_t at = (v + rotation) & vector_mask;
      acc = E::abs_max(
          *reinterpret_cast<const uint4*>(x + group_vector_offset<T, Runs>(at, group_row0, p)),
          acc);
    }
    acc = E::finish(acc);
    // within a warp: the group's lanes (a group of 32 or fewer threads is lanes of one warp)
    const std::uint32_t width = tpg_log2 >= 5 ? 32u : 1u << tpg_log2;
    for (std::uint32_t o = width / 2; o > 0; o /= 2) {
      acc = max(acc, __shfl_xor_sync(0xffffffffu, acc, static_cast<int>(o)));
    }
    if (tpg_log2 > 5) {
      // NOTE: a group spans several warps: their maxima meet in shared memory
      if ((tid & 31) == 0) atomicMax(&amax_words[group], acc);
      __syncthreads();
      acc = amax_words[group];
    }
    if (p.grid_counters != nullptr) {
      // rule Q6: the tile is the group; the tensor's amax is every tile's
      __syncthreads();  // every thread has read amax_words[0]
      if (tid == 0) amax_words[0] = grid_amax_bits(acc, p.grid_counters);
      __syncthreads();
      acc = amax_words[0];
    }
    amax = E::value_of_bits(acc);
    float inverse;
    scale_of(amax, scale, inverse);
    if (lane_in_group == 0) {
      const std::uint64_t gm =
          static_cast<std::uint64_t>(ty) * (p.tile_rows >> p.group_rows_log2) + group;
      const auto gk = static_cast<std::uint64_t>(tx);
      if (gm < p.scales_mn && gk < p.scales_k) {
        p.scale[gm * static_cast<std::uint64_t>(p.stride_mn) +
                gk * static_cast<std::uint64_t>(p.stride_k)] = scale;
      }
    }
  }

  // step 4: the cast, each vector of the group to its bytes of x_fp8's buffer
  const float inverse = __frcp_rn(scale);
  // NOTE: only a group whose amax (or scale) is not finite can produce NaN bytes
  const bool not_finite = p.fused_amax ? !(amax <= FLT_MAX) : !(scale <= FLT_MAX);
  for (std::uint32_t v = lane_in_group; v < group_vectors; v += 1u << tpg_log2) {
    const std::uint32_t offset =
        group_vector_offset<T, Runs>((v + rotation) & vector_mask, group_row0, p);
    cast_vector<T>(*reinterpret_cast<const uint4*>(x + offset), inverse, not_finite, out + offset);
  }

  // step 5: every writer fences its shared stores for the async proxy, then one thread stores
  fence_view_async_shared();
  __syncthreads();
  if (tid == 0) {
    if constexpr (Runs) {
      const std::int32_t c[3] = {0, 0, row0};
      store_tile<OutRows>(&p.out_map, out, c);
    }
    for (std::uint32_t j = 0; j < p.boxes && !Runs; ++j) {
      const std::int32_t c[2] = {col0 + static_cast<std::int32_t>(j * box_cols), row0};
      store_tile<OutBox>(&p.out_map, out + j * out_box_bytes, c);
    }
    store_commit();
    if (p.grid_counters != nullptr) grid_leave(p.grid_counters);
    // NOTE: the CTA's shared memory must outlive the store's reads of it
    store_wait_read<0>();
  }
#else
  if (threadIdx.x == 0) printf("sm90_quantize_kernel needs sm_90a\n");
  __trap();
#endif
}

// ---- the tensor recipe's amax and scale -------------------------------------------------

// amax_bits[0] = max(amax_bits[0], the unsigned max of |x|'s bits over `segments` runs of
// `vectors` 16-byte vectors, `pitch` bytes apart). grid.y walks the runs, grid.x and the
// threads a run's vectors. amax_bits[0] must start at 0 (the launcher's memset).
template <class T>
__global__ void __launch_bounds__(kThreads)
    sm90_quantize_amax_kernel(const std::uint8_t* x, std::uint64_t pitch, std::uint64_t segments,
                              std::uint64_t vectors, std::uint32_t* amax_bits) {
  using E = Elements<T>;
  std::uint32_t acc = 0;
  const std::uint64_t step = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t s = blockIdx.y; s < segments; s += gridDim.y) {
    const auto* row = reinterpret_cast<const uint4*>(x + s * pitch);
    std::uint64_t v = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    // NOTE: four independent loads in flight per thread, then the rest one by one
    for (; v + 3 * step < vectors; v += 4 * step) {
      const uint4 a = __ldg(row + v), b = __ldg(row + v + step), c = __ldg(row + v + 2 * step),
                  d = __ldg(row + v + 3 * step);
      acc = E::abs_max(d, E::abs_max(c, E::abs_max(b, E::abs_max(a, acc))));
    }
    for (; v < vectors; v += step) acc = E::abs_max(__ldg(row + v), acc);
  }
  acc = __reduce_max_sync(0xffffffffu, E::finish(acc));
  if ((threadIdx.x & 31) == 0 && acc != 0) atomicMax(amax_bits, acc);
}

// scale[0] = the scale of the amax the amax kernel left in the same float (as bits of |x|).
template <class T>
__global__ void sm90_quantize_scale_kernel(float* scale) {
  const std::uint32_t bits = *reinterpret_cast<const std::uint32_t*>(scale);
  float s, inverse;
  scale_of(Elements<T>::value_of_bits(bits), s, inverse);
  *scale = s;
}

}  // namespace tmakit::detail::quantize
