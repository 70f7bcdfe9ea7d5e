// Transpose without TMA, for rows TMA cannot describe (a pitch or start off 16 bytes): a block
// stages a square tile through shared memory, reading in's rows and writing out's rows with
// consecutive threads on consecutive elements. A tile's row is 128 bytes (128, 64 and 32
// elements of 1, 2 and 4 bytes; 32 elements of 8 bytes), the line TMA's kernels move too;
// each shared row is padded by 4 bytes, so the 32 lanes reading a tile column hit 32 banks.
#include <cstdint>

#include "tmakit/core/cuda_check.hpp"
#include "tmakit/kernels/detail/launch_support.hpp"
#include "tmakit/kernels/detail/plain_grid.hpp"
#include "transpose/plain_transpose.hpp"

namespace tmakit::detail::transpose {
namespace {

constexpr int kWarpCols = 32;
constexpr int kBlockRows = 8;  // 256 threads

struct PlainParams {
  const std::uint8_t* in;
  std::uint8_t* out;
  std::uint64_t in_pitch;   // bytes between in's rows
  std::uint64_t out_pitch;  // bytes between out's rows
  std::int64_t rows;        // in's
  std::int64_t cols;        // in's
  std::int64_t tiles_x;     // tiles across in's columns
  std::int64_t tiles;
};

template <class T, int Tile>
__global__ void __launch_bounds__(kWarpCols* kBlockRows) plain_transpose_kernel(const PlainParams p) {
  constexpr int kPad = sizeof(T) >= 4 ? 1 : 4 / static_cast<int>(sizeof(T));
  __shared__ T tile[Tile][Tile + kPad];
  const int tx = static_cast<int>(threadIdx.x);
  const int ty = static_cast<int>(threadIdx.y);
  for (std::int64_t t = blockIdx.x; t < p.tiles; t += gridDim.x) {
    const std::int64_t c0 = (t % p.tiles_x) * Tile;
    const std::int64_t r0 = (t / p.tiles_x) * Tile;
#pragma unroll
    for (int i = ty; i < Tile; i += kBlockRows) {
      const std::int64_t r = r0 + i;
      if (r >= p.rows) break;
      const auto* row = reinterpret_cast<const T*>(p.in + r * p.in_pitch);
#pragma unroll
      for (int j = tx; j < Tile; j += kWarpCols) {
        if (c0 + j < p.cols) tile[i][j] = row[c0 + j];
      }
    }
    __syncthreads();
    // out's row c0 + i holds in's column c0 + i: its elements r0 + j
#pragma unroll
    for (int i = ty; i < Tile; i += kBlockRows) {
      const std::int64_t c = c0 + i;
      if (c >= p.cols) break;
      auto* row = reinterpret_cast<T*>(p.out + c * p.out_pitch);
#pragma unroll
      for (int j = tx; j < Tile; j += kWarpCols) {
        if (r0 + j < p.rows) row[r0 + j] = tile[j][i];
      }
    }
    __syncthreads();
  }
}

template <class T, int Tile>
void launch_typed(PlainParams p, cudaStream_t stream) {
  p.tiles_x = (p.cols + Tile - 1) / Tile;
  p.tiles = p.tiles_x * ((p.rows + Tile - 1) / Tile);
  const unsigned grid = plain::blocks_for(static_cast<std::uint64_t>(p.tiles), 1, plain::kMaxGridX);
  plain_transpose_kernel<T, Tile><<<grid, dim3(kWarpCols, kBlockRows), 0, stream>>>(p);
  check_launch("plain_transpose_kernel");
}

}  // namespace

void launch_plain(ConstTensorRef in, TensorRef out, cudaStream_t stream) {
  PlainParams p{};
  p.in = static_cast<const std::uint8_t*>(in.data);
  p.out = static_cast<std::uint8_t*>(out.data);
  p.in_pitch = in.row_pitch();
  p.out_pitch = out.row_pitch();
  p.rows = static_cast<std::int64_t>(in.rows);
  p.cols = static_cast<std::int64_t>(in.cols);
  switch (in.element_size()) {
    case 1: return launch_typed<std::uint8_t, 128>(p, stream);
    case 2: return launch_typed<std::uint16_t, 64>(p, stream);
    case 4: return launch_typed<std::uint32_t, 32>(p, stream);
    default: return launch_typed<std::uint64_t, 32>(p, stream);
  }
}

}  // namespace tmakit::detail::transpose
