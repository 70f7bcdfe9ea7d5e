// Add-constant without TMA, for rows TMA cannot describe (a pitch or start off 16 bytes), for
// the types the TMA kernel is not built for, and for a view of one row (a dense tensor:
// one_row_takes_plain). Each row is cut into 16-byte slots aligned to in's addresses: a
// thread adds a whole slot with one 16-byte load and store when out's row sits at the same
// offset within 16 bytes (dense tensors, in place), element by element otherwise and at the
// row's two ends. A dense view is one long row.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

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
          T e[kPer];
          memcpy(e, &v[k], 16);
#pragma unroll
          for (int j = 0; j < kPer; ++j) e[j] = add_one<T>(e[j], p.value);
          memcpy(&v[k], e, 16);
          *reinterpret_cast<uint4*>(dst + first) = v[k];
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

template <class T>
void launch_typed(const PlainParams& p, cudaStream_t stream) {
  constexpr std::uint64_t kPer = 16 / sizeof(T);
  const std::uint64_t slots = static_cast<std::uint64_t>(p.cols) / kPer + 2;
  const dim3 grid(plain::blocks_for(slots, kThreads * kSlotsPerThread, plain::kMaxGridX),
                  plain::blocks_for(static_cast<std::uint64_t>(p.rows), 1, plain::kMaxGridYZ));
  plain_add_constant_kernel<T><<<grid, kThreads, 0, stream>>>(p);
  check_launch("plain_add_constant_kernel");
}

}  // namespace

void launch_plain(ConstTensorRef in, TensorRef out, const Constant& value, cudaStream_t stream) {
  PlainParams p{};
  p.in = static_cast<const std::uint8_t*>(in.data);
  p.out = static_cast<std::uint8_t*>(out.data);
  p.value = value;
  if (dense_rows(in) && dense_rows(out)) {
    // NOTE: one long row: a dense tensor of short rows still fills whole blocks
    p.rows = 1;
    p.cols = static_cast<std::int64_t>(in.rows * in.cols);
  } else {
    p.rows = static_cast<std::int64_t>(in.rows);
    p.cols = static_cast<std::int64_t>(in.cols);
    p.in_pitch = in.row_pitch();
    p.out_pitch = out.row_pitch();
  }
  switch (in.type) {
    case DataType::uint8: return launch_typed<std::uint8_t>(p, stream);
    case DataType::uint16: return launch_typed<std::uint16_t>(p, stream);
    case DataType::uint32:
    case DataType::int32: return launch_typed<std::uint32_t>(p, stream);
    case DataType::uint64:
    case DataType::int64: return launch_typed<std::uint64_t>(p, stream);
    case DataType::float16: return launch_typed<__half>(p, stream);
    case DataType::bfloat16: return launch_typed<__nv_bfloat16>(p, stream);
    case DataType::float32: return launch_typed<float>(p, stream);
    default: return launch_typed<double>(p, stream);
  }
}

}  // namespace tmakit::detail::elementwise
