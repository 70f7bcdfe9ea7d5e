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

// One block per 16 KB chunk (256 threads x 4 vectors), no grid stride: the hardware hands
// out the chunks in order, as a library kernel sized to the data does.
__global__ void __launch_bounds__(256) plain_add_int32_chunk_kernel(const int4* in, int4* out,
                                                                    std::uint64_t vectors,
                                                                    std::int32_t value) {
  constexpr int kUnroll = 4;
  const std::uint64_t base = blockIdx.x * static_cast<std::uint64_t>(kUnroll * 256) + threadIdx.x;
  int4 v[kUnroll];
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    if (base + u * 256 < vectors) v[u] = in[base + u * 256];
  }
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    if (base + u * 256 < vectors) {
      out[base + u * 256] = make_int4(v[u].x + value, v[u].y + value, v[u].z + value, v[u].w + value);
    }
  }
}

// The classic shared-memory transpose, sized like a vendor's: one block of 32 x 8 threads per
// kTile x kTile tile, 4-byte loads and stores through registers, rows padded by one word.
template <int kTile>
__global__ void __launch_bounds__(256) plain_transpose_f32_kernel(const float* in, float* out,
                                                                  std::uint64_t rows,
                                                                  std::uint64_t cols) {
  __shared__ float tile[kTile][kTile + 1];
  const std::uint64_t x0 = static_cast<std::uint64_t>(blockIdx.x) * kTile;
  const std::uint64_t y0 = static_cast<std::uint64_t>(blockIdx.y) * kTile;
#pragma unroll
  for (int c = 0; c < kTile; c += 32) {
#pragma unroll
    for (int r = threadIdx.y; r < kTile; r += 8) {
      tile[r][c + threadIdx.x] = in[(y0 + r) * cols + x0 + c + threadIdx.x];
    }
  }
  __syncthreads();
#pragma unroll
  for (int c = 0; c < kTile; c += 32) {
#pragma unroll
    for (int r = threadIdx.y; r < kTile; r += 8) {
      out[(x0 + r) * rows + y0 + c + threadIdx.x] = tile[c + threadIdx.x][r];
    }
  }
}

}  // namespace

void plain_add_int32_chunks(const std::int32_t* in, std::int32_t* out, std::uint64_t count,
                            std::int32_t value, cudaStream_t stream) {
  if (count % 4 != 0 || reinterpret_cast<std::uintptr_t>(in) % 16 != 0 ||
      reinterpret_cast<std::uintptr_t>(out) % 16 != 0) {
    throw Error("plain_add_int32_chunks needs 16-byte aligned buffers of whole 16-byte vectors");
  }
  const std::uint64_t vectors = count / 4;
  const std::uint64_t blocks = (vectors + 1023) / 1024;
  plain_add_int32_chunk_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(
      reinterpret_cast<const int4*>(in), reinterpret_cast<int4*>(out), vectors, value);
  TMAKIT_CUDA_CHECK(cudaGetLastError());
}

void plain_transpose_f32(int tile, const float* in, float* out, std::uint64_t rows,
                         std::uint64_t cols, cudaStream_t stream) {
  if ((tile != 32 && tile != 64) || rows % tile != 0 || cols % tile != 0) {
    throw Error("plain_transpose_f32 takes tiles of 32 or 64 over whole tiles");
  }
  const dim3 grid(static_cast<unsigned>(cols / tile), static_cast<unsigned>(rows / tile));
  if (tile == 32) {
    plain_transpose_f32_kernel<32><<<grid, dim3(32, 8), 0, stream>>>(in, out, rows, cols);
  } else {
    plain_transpose_f32_kernel<64><<<grid, dim3(32, 8), 0, stream>>>(in, out, rows, cols);
  }
  TMAKIT_CUDA_CHECK(cudaGetLastError());
}

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
