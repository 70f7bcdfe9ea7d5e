// The plain CUDA way to add a constant, as most code does it today: no TMA, each thread
// loads 16-byte vectors straight from global memory into registers, adds, stores them back.
// A reference for how close a TMA pipeline comes to what ordinary loads and stores reach.
#include <cstdint>

#include "baselines.hpp"
#include "harness.hpp"
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

// The access pattern of a transpose and nothing else: tiles of R input rows x W bytes (powers
// of two), walked down the columns of tiles (or row-major); each 16-byte chunk of a tile is
// copied whole (not transposed inside) to the output region the tile's transpose covers
// (W / esize output rows x R * esize bytes), chunk c of the tile to chunk c of that region
// in row order. Every DRAM piece a transpose of this tiling reads and writes, read and
// written once, with no shared memory and no shuffling in between.
struct PatternGeometry {
  std::uint64_t in_pitch16, out_pitch16;  // row pitches in 16-byte chunks
  std::uint32_t tiles_x, tiles_y;
  std::uint32_t in_row_log2;   // log2(W / 16): chunks per input row of a tile
  std::uint32_t out_row_log2;  // log2(R * esize / 16): chunks per output row of a tile
  std::uint32_t out_rows;      // W / esize
  std::uint32_t chunks;        // R * W / 16 per tile
  std::uint32_t row_major;     // 1: tiles row-major, else down the columns
  __device__ __forceinline__ void places(std::uint64_t tile, std::uint32_t c, std::uint64_t& src,
                                         std::uint64_t& dst) const {
    const std::uint64_t tx = row_major ? tile % tiles_x : tile / tiles_y;
    const std::uint64_t ty = row_major ? tile / tiles_x : tile % tiles_y;
    const std::uint32_t in_row = 1u << in_row_log2, out_row = 1u << out_row_log2;
    const std::uint64_t tile_rows = chunks >> in_row_log2;
    src = (ty * tile_rows + (c >> in_row_log2)) * in_pitch16 + tx * in_row + (c & (in_row - 1));
    dst = (tx * out_rows + (c >> out_row_log2)) * out_pitch16 + ty * out_row + (c & (out_row - 1));
  }
};

template <int kIlp>
__global__ void __launch_bounds__(256)
    transpose_pattern_kernel(const uint4* in, uint4* out, PatternGeometry g) {
  for (std::uint32_t c0 = threadIdx.x; c0 < g.chunks; c0 += 256 * kIlp) {
    uint4 v[kIlp];
    std::uint64_t dst[kIlp];
#pragma unroll
    for (int u = 0; u < kIlp; ++u) {
      std::uint64_t src = 0;
      g.places(blockIdx.x, c0 + 256 * u, src, dst[u]);
      v[u] = __ldcs(in + src);
    }
#pragma unroll
    for (int u = 0; u < kIlp; ++u) __stcs(out + dst[u], v[u]);
  }
}

__global__ void transpose_pattern_check_kernel(const uint4* in, const uint4* out, PatternGeometry g,
                                               std::uint64_t tiles, unsigned long long* wrong) {
  const std::uint64_t chunks = tiles * g.chunks;
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x;
       i < chunks; i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x) {
    std::uint64_t src = 0, dst = 0;
    g.places(i / g.chunks, static_cast<std::uint32_t>(i % g.chunks), src, dst);
    const uint4 a = in[src], b = out[dst];
    if (a.x != b.x || a.y != b.y || a.z != b.z || a.w != b.w) atomicAdd(wrong, 1ull);
  }
}

// log2 of v when v is a power of two, else -1
int log2_exact(std::uint64_t v) {
  for (int l = 0; l < 64; ++l) {
    if ((std::uint64_t{1} << l) == v) return l;
  }
  return -1;
}

PatternGeometry pattern_geometry(const TransposePattern& t, std::uint64_t rows, std::uint64_t cols,
                                 int esize) {
  // NOTE: sizes are checked positive before they are converted to unsigned for the logs
  const bool positive = t.tile_rows > 0 && t.tile_bytes >= 16 && esize > 0;
  const int in_row = positive ? log2_exact(static_cast<std::uint64_t>(t.tile_bytes) / 16) : -1;
  const int out_row =
      positive ? log2_exact(static_cast<std::uint64_t>(t.tile_rows) * esize / 16) : -1;
  if (!positive || t.tile_bytes % 16 != 0 || in_row < 0 || out_row < 0 ||
      t.tile_bytes % esize != 0 || t.tile_rows * t.tile_bytes % 4096 != 0 ||
      rows % t.tile_rows != 0 || (cols * esize) % t.tile_bytes != 0 || (t.ilp != 1 && t.ilp != 4) ||
      t.tile_rows * t.tile_bytes % (4096 * t.ilp) != 0) {
    throw Error(
        "a transpose pattern takes whole tiles of R rows x W bytes, both powers of two, "
        "R * esize and W multiples of 16 bytes, R * W a multiple of 4 KB times ilp (1 "
        "or 4)");
  }
  PatternGeometry g{};
  g.in_pitch16 = cols * esize / 16;
  g.out_pitch16 = rows * esize / 16;
  g.tiles_x = static_cast<std::uint32_t>(cols * esize / t.tile_bytes);
  g.tiles_y = static_cast<std::uint32_t>(rows / t.tile_rows);
  g.in_row_log2 = static_cast<std::uint32_t>(in_row);
  g.out_row_log2 = static_cast<std::uint32_t>(out_row);
  g.out_rows = static_cast<std::uint32_t>(t.tile_bytes / esize);
  g.chunks = static_cast<std::uint32_t>(t.tile_rows * t.tile_bytes / 16);
  g.row_major = t.row_major ? 1u : 0u;
  return g;
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

void transpose_pattern(const TransposePattern& t, const void* in, void* out, std::uint64_t rows,
                       std::uint64_t cols, int element_bytes, cudaStream_t stream) {
  const PatternGeometry g = pattern_geometry(t, rows, cols, element_bytes);
  const auto tiles = static_cast<unsigned>(std::uint64_t{g.tiles_x} * g.tiles_y);
  if (t.ilp == 4) {
    transpose_pattern_kernel<4>
        <<<tiles, 256, 0, stream>>>(static_cast<const uint4*>(in), static_cast<uint4*>(out), g);
  } else {
    transpose_pattern_kernel<1>
        <<<tiles, 256, 0, stream>>>(static_cast<const uint4*>(in), static_cast<uint4*>(out), g);
  }
  TMAKIT_CUDA_CHECK(cudaGetLastError());
}

std::uint64_t count_transpose_pattern_errors(const TransposePattern& t, const void* in,
                                             const void* out, std::uint64_t rows,
                                             std::uint64_t cols, int element_bytes,
                                             cudaStream_t stream) {
  const PatternGeometry g = pattern_geometry(t, rows, cols, element_bytes);
  ErrorCounter c;
  transpose_pattern_check_kernel<<<1024, 256, 0, stream>>>(
      static_cast<const uint4*>(in), static_cast<const uint4*>(out), g,
      std::uint64_t{g.tiles_x} * g.tiles_y, c.reset(stream));
  return c.read(stream);
}

}  // namespace tmakit::bench
