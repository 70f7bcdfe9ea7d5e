// Add-constant without TMA, for rows TMA cannot describe (a pitch or start off 16 bytes), for
// the types the TMA kernel is not built for, and for a view of one row (a dense tensor:
// one_row_takes_plain). Each row is cut into 16-byte slots aligned to in's addresses: a
// thread adds a whole slot with one 16-byte load and store when out's row sits at the same
// offset within 16 bytes (dense tensors, in place), element by element otherwise and at the
// row's two ends. A dense view is one long row; where out sits at in's offset within 16 bytes
// (dense_form_takes) the dense form walks it with 32-bit slot indices, two slots a thread and
// no grid-stride loop, its ends (dense_split's head and tail) on block 0's first threads.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "elementwise/elementwise_plan.hpp"
#include "elementwise/plain_elementwise.hpp"
#include "tmakit/core/cuda_check.hpp"
#include "tmakit/kernels/detail/launch_support.hpp"
#include "tmakit/kernels/detail/plain_grid.hpp"
#include "tmakit/kernels/detail/plain_path.hpp"

namespace tmakit::detail::elementwise {
namespace {

constexpr int kThreads = 256;
constexpr int kSlotsPerThread = 2;  // NOTE: two 16-byte loads in flight per thread

struct PlainParams {
  const std::uint8_t* in;
  std::uint8_t* out;
  std::uint64_t in_pitch;
  std::uint64_t out_pitch;
  std::int64_t rows;
  std::int64_t cols;
  Constant value;
};

// One element plus the constant, as the TMA kernel and the reference compute it.
template <class T>
__device__ __forceinline__ T add_one(T v, const Constant& c) {
  // unsigned integers of every width: the sum wraps
  return static_cast<T>(v + static_cast<T>(c.bits));
}
template <>
__device__ __forceinline__ float add_one<float>(float v, const Constant& c) {
  return v + c.f32;
}
template <>
__device__ __forceinline__ double add_one<double>(double v, const Constant& c) {
  return v + c.f64;
}
template <>
__device__ __forceinline__ __half add_one<__half>(__half v, const Constant& c) {
  return __float2half_rn(__half2float(v) + c.f32);
}
template <>
__device__ __forceinline__ __nv_bfloat16 add_one<__nv_bfloat16>(__nv_bfloat16 v,
                                                               const Constant& c) {
  return __float2bfloat16_rn(__bfloat162float(v) + c.f32);
}

// One 16-byte slot plus the constant, element by element as add_one (the same roundings):
// 16-bit floats through their float pairs (a float pair rounded by one conversion), 8- and
// 16-bit integers by SIMD adds that wrap per element.
template <class T>
__device__ __forceinline__ uint4 add_slot(uint4 v, const Constant& c) {
  std::uint32_t w[4] = {v.x, v.y, v.z, v.w};
  if constexpr (std::is_same_v<T, float>) {
#pragma unroll
    for (auto& x : w) x = __float_as_uint(__uint_as_float(x) + c.f32);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
#pragma unroll
    for (auto& x : w) {
      // NOTE: a bf16's float is its bits in the high half
      const __nv_bfloat162 r = __floats2bfloat162_rn(__uint_as_float(x << 16) + c.f32,
                                                     __uint_as_float(x & 0xffff0000u) + c.f32);
      x = *reinterpret_cast<const std::uint32_t*>(&r);
    }
  } else if constexpr (std::is_same_v<T, __half>) {
#pragma unroll
    for (auto& x : w) {
      float2 f = __half22float2(*reinterpret_cast<const __half2*>(&x));
      f.x += c.f32;
      f.y += c.f32;
      const __half2 r = __float22half2_rn(f);
      x = *reinterpret_cast<const std::uint32_t*>(&r);
    }
  } else if constexpr (std::is_same_v<T, std::uint8_t>) {
    const std::uint32_t k = static_cast<std::uint32_t>(c.bits & 0xffu) * 0x01010101u;
#pragma unroll
    for (auto& x : w) x = __vadd4(x, k);
  } else if constexpr (std::is_same_v<T, std::uint16_t>) {
    const std::uint32_t k = static_cast<std::uint32_t>(c.bits & 0xffffu) * 0x00010001u;
#pragma unroll
    for (auto& x : w) x = __vadd2(x, k);
  } else if constexpr (std::is_same_v<T, std::uint32_t>) {
#pragma unroll
    for (auto& x : w) x += static_cast<std::uint32_t>(c.bits);
  } else {
    // 8-byte elements: two a slot
    T e[2];
    memcpy(e, w, 16);
    e[0] = add_one<T>(e[0], c);
    e[1] = add_one<T>(e[1], c);
    memcpy(w, e, 16);
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

template <class T>
__global__ void __launch_bounds__(kThreads) plain_add_constant_kernel(const PlainParams p) {
  constexpr int kPer = 16 / static_cast<int>(sizeof(T));
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * kThreads * kSlotsPerThread;
  for (std::int64_t r = blockIdx.y; r < p.rows; r += gridDim.y) {
    const auto* src = reinterpret_cast<const T*>(p.in + r * p.in_pitch);
    auto* dst = reinterpret_cast<T*>(p.out + r * p.out_pitch);
    const auto src_addr = reinterpret_cast<std::uintptr_t>(src);
    const auto dst_addr = reinterpret_cast<std::uintptr_t>(dst);
    // elements of slot 0 before the row starts (slots are aligned to in's 16 bytes)
    const std::int64_t lead = static_cast<std::int64_t>((src_addr & 15) / sizeof(T));
    const bool vectors = ((dst_addr - src_addr) & 15) == 0;
    const std::int64_t slots = (lead + p.cols + kPer - 1) / kPer;
    for (std::int64_t base = static_cast<std::int64_t>(blockIdx.x) * kThreads * kSlotsPerThread +
                             threadIdx.x;
         base < slots; base += stride) {
      uint4 v[kSlotsPerThread];
      bool whole[kSlotsPerThread];
#pragma unroll
      for (int k = 0; k < kSlotsPerThread; ++k) {
        const std::int64_t first = (base + k * kThreads) * kPer - lead;
        whole[k] = vectors && first >= 0 && first + kPer <= p.cols;
        if (whole[k]) v[k] = *reinterpret_cast<const uint4*>(src + first);
      }
#pragma unroll
      for (int k = 0; k < kSlotsPerThread; ++k) {
        const std::int64_t first = (base + k * kThreads) * kPer - lead;
        if (whole[k]) {
          *reinterpret_cast<uint4*>(dst + first) = add_slot<T>(v[k], p.value);
        } else if (first < p.cols && first + kPer > 0) {
          for (int j = 0; j < kPer; ++j) {
            const std::int64_t c = first + j;
            if (c >= 0 && c < p.cols) dst[c] = add_one<T>(src[c], p.value);
          }
        }
      }
    }
  }
}

// The dense form: one run of elements, out at in's offset within 16 bytes.
constexpr int kDenseThreads = 128;
// NOTE: two 16-byte slots a thread led or came within 8% of the best of 1, 2, 4 and 8 at
// every size from 33 x 65 to 8191 x 8193 (H200, kernels/elementwise/README.md); four lost up
// to 12% (bf16 of 2-8 MB: half a wave of blocks) and 2-3% at the largest sizes.
constexpr int kDenseSlots = 2;
// The last slot index a grid may reach without wrapping 32 bits.
constexpr std::uint64_t kDenseMaxSlots = 0xffffffffull - kDenseThreads * kDenseSlots;

struct DenseParams {
  const std::uint8_t* in;  // in's first element
  std::uint8_t* out;
  const uint4* in_slots;  // in's first whole 16-byte slot (head elements on)
  uint4* out_slots;
  std::uint32_t slots;
  std::uint32_t head;  // elements before the first slot
  std::uint32_t tail;  // elements after the last
  Constant value;
};

template <class T>
__global__ void __launch_bounds__(kDenseThreads) plain_add_constant_dense_kernel(const DenseParams p) {
  constexpr std::uint64_t kPer = 16 / sizeof(T);
  // NOTE: the run's end elements are loaded beside the slots, not after them: a second load
  // after the stores lengthened short calls
  const bool end = blockIdx.x == 0 && threadIdx.x < p.head + p.tail;
  const std::uint64_t end_at = threadIdx.x < p.head
                                   ? threadIdx.x
                                   : p.head + static_cast<std::uint64_t>(p.slots) * kPer +
                                         (threadIdx.x - p.head);
  T end_value{};
  if (end) end_value = reinterpret_cast<const T*>(p.in)[end_at];
  const std::uint32_t first = blockIdx.x * (kDenseThreads * kDenseSlots) + threadIdx.x;
  uint4 v[kDenseSlots];
#pragma unroll
  for (int k = 0; k < kDenseSlots; ++k) {
    const std::uint32_t s = first + k * kDenseThreads;
    if (s < p.slots) v[k] = p.in_slots[s];
  }
#pragma unroll
  for (int k = 0; k < kDenseSlots; ++k) {
    const std::uint32_t s = first + k * kDenseThreads;
    if (s < p.slots) p.out_slots[s] = add_slot<T>(v[k], p.value);
  }
  if (end) reinterpret_cast<T*>(p.out)[end_at] = add_one<T>(end_value, p.value);
}

template <class T>
void launch_dense(const std::uint8_t* in, std::uint8_t* out, std::uint64_t elements,
                  const Constant& value, cudaStream_t stream) {
  const DenseSplit d = dense_split(reinterpret_cast<std::uintptr_t>(in), elements, sizeof(T));
  DenseParams p{};
  p.in = in;
  p.out = out;
  p.in_slots = reinterpret_cast<const uint4*>(in + d.head * sizeof(T));
  p.out_slots = reinterpret_cast<uint4*>(out + d.head * sizeof(T));
  p.slots = static_cast<std::uint32_t>(d.slots);
  p.head = static_cast<std::uint32_t>(d.head);
  p.tail = static_cast<std::uint32_t>(d.tail);
  p.value = value;
  const unsigned grid =
      plain::blocks_for(d.slots, kDenseThreads * kDenseSlots, plain::kMaxGridX);
  plain_add_constant_dense_kernel<T><<<grid, kDenseThreads, 0, stream>>>(p);
  check_launch("plain_add_constant_dense_kernel");
}

template <class T>
void launch_typed(const PlainParams& p, cudaStream_t stream) {
  constexpr std::uint64_t kPer = 16 / sizeof(T);
  const std::uint64_t slots = static_cast<std::uint64_t>(p.cols) / kPer + 2;
  const dim3 grid(plain::blocks_for(slots, kThreads * kSlotsPerThread, plain::kMaxGridX),
                  plain::blocks_for(static_cast<std::uint64_t>(p.rows), 1, plain::kMaxGridYZ));
  plain_add_constant_kernel<T><<<grid, kThreads, 0, stream>>>(p);
  check_launch("plain_add_constant_kernel");
}

// Calls f with a value of the plain kernels' element type for `type`: the bits they move
// (signed and unsigned integers of one size share one; the add wraps alike).
template <class F>
void visit_element_type(DataType type, F&& f) {
  switch (type) {
    case DataType::uint8: return f(std::uint8_t{});
    case DataType::uint16: return f(std::uint16_t{});
    case DataType::uint32:
    case DataType::int32: return f(std::uint32_t{});
    case DataType::uint64:
    case DataType::int64: return f(std::uint64_t{});
    case DataType::float16: return f(__half{});
    case DataType::bfloat16: return f(__nv_bfloat16{});
    case DataType::float32: return f(float{});
    default: return f(double{});
  }
}

}  // namespace

void launch_plain(ConstTensorRef in, TensorRef out, const Constant& value, cudaStream_t stream) {
  PlainParams p{};
  p.in = static_cast<const std::uint8_t*>(in.data);
  p.out = static_cast<std::uint8_t*>(out.data);
  p.value = value;
  bool dense_form = false;
  std::uint64_t elements = 0;
  if (dense_rows(in) && dense_rows(out)) {
    elements = in.rows * in.cols;
    dense_form = dense_form_takes(reinterpret_cast<std::uintptr_t>(in.data),
                                  reinterpret_cast<std::uintptr_t>(out.data), elements,
                                  static_cast<std::uint32_t>(in.element_size()), kDenseMaxSlots);
    // NOTE: otherwise one long row: a dense tensor of short rows still fills whole blocks
    p.rows = 1;
    p.cols = static_cast<std::int64_t>(elements);
  } else {
    p.rows = static_cast<std::int64_t>(in.rows);
    p.cols = static_cast<std::int64_t>(in.cols);
    p.in_pitch = in.row_pitch();
    p.out_pitch = out.row_pitch();
  }
  visit_element_type(in.type, [&](auto element) {
    using T = decltype(element);
    if (dense_form) {
      launch_dense<T>(p.in, p.out, elements, value, stream);
    } else {
      launch_typed<T>(p, stream);
    }
  });
}

}  // namespace tmakit::detail::elementwise
