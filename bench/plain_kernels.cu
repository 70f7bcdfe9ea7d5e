// The plain CUDA way to add a constant, as most code does it today: no TMA, each thread
// loads 16-byte vectors straight from global memory into registers, adds, stores them back.
// A reference for how close a TMA pipeline comes to what ordinary loads and stores reach.
#include <cstdint>

#include "baselines.hpp"
#include "tmakit/core/cuda_check.hpp"
#include "tmakit/core/error.hpp"

namespace tmakit::bench {
namespace {

// Grid-stride over 16-byte vectors, four independent vectors in flight per thread.
__global__ void plain_add_int32_kernel(const int4* in, int4* out, std::uint64_t vectors,
                                       std::int32_t value) {
  constexpr int kUnroll = 4;
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x;
  for (; i + (kUnroll - 1) * stride < vectors; i += kUnroll * stride) {
    int4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = in[i + u * stride];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      out[i + u * stride] = make_int4(v[u].x + value, v[u].y + value, v[u].z + value, v[u].w + value);
    }
  }
  for (; i < vectors; i += stride) {
    const int4 v = in[i];
    out[i] = make_int4(v.x + value, v.y + value, v.z + value, v.w + value);
  }
}

}  // namespace

void plain_add_int32(const std::int32_t* in, std::int32_t* out, std::uint64_t count,
                     std::int32_t value, cudaStream_t stream) {
  if (count % 4 != 0 || reinterpret_cast<std::uintptr_t>(in) % 16 != 0 ||
      reinterpret_cast<std::uintptr_t>(out) % 16 != 0) {
    throw Error("plain_add_int32 needs 16-byte aligned buffers of whole 16-byte vectors");
  }
  int device = 0, sms = 0;
  TMAKIT_CUDA_CHECK(cudaGetDevice(&device));
  TMAKIT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  // NOTE: 8 blocks of 256 per SM fill it (2048 threads), each with 4 vectors in flight
  plain_add_int32_kernel<<<static_cast<unsigned>(sms) * 8, 256, 0, stream>>>(
      reinterpret_cast<const int4*>(in), reinterpret_cast<int4*>(out), count / 4, value);
  TMAKIT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tmakit::bench
