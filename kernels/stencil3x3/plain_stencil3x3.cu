// The 3x3 stencil without TMA, for rows TMA cannot describe (a pitch or start off 16 bytes):
// a warp owns 30 output columns of a strip of StripRows output rows. Its 32 lanes read the 32
// input columns x0 - 1 .. x0 + 30 (one coalesced load per row, at any start) for the strip's
// StripRows + 2 input rows, all of them loaded before the first sum; a lane's left and right
// neighbours are then the adjacent lanes' values (warp shuffles), so each input element is
// read from memory once per warp and the two edge lanes only feed their neighbours.
// Outside the image reads as zero. The sum is the TMA kernel's and the reference's: fused
// multiply-adds in tap order, zeros included.
#include <cstdint>

#include "stencil3x3/plain_stencil3x3.hpp"
#include "tmakit/core/cuda_check.hpp"
#include "tmakit/kernels/detail/launch_support.hpp"
#include "tmakit/kernels/detail/plain_grid.hpp"

namespace tmakit::detail::stencil3x3 {
namespace {

constexpr int kThreads = 256;
constexpr int kWarpCols = 30;  // output columns per warp: 32 lanes less the two edge ones
constexpr int kBlockCols = kWarpCols * (kThreads / 32);

template <class T>
struct PlainParams {
  const std::uint8_t* in;
  std::uint8_t* out;
  std::uint64_t in_pitch;
  std::uint64_t out_pitch;
  std::uint64_t in_image;
  std::uint64_t out_image;
  std::int64_t rows;
  std::int64_t cols;
  std::int64_t images;
  T taps[9];
};

template <class T, int StripRows>
__global__ void __launch_bounds__(kThreads) plain_stencil3x3_kernel(const PlainParams<T> p) {
  T taps[9];
#pragma unroll
  for (int i = 0; i < 9; ++i) taps[i] = p.taps[i];
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const std::int64_t strips = (p.rows + StripRows - 1) / StripRows;
  for (std::int64_t image = blockIdx.z; image < p.images; image += gridDim.z) {
    const std::uint8_t* src = p.in + image * p.in_image;
    std::uint8_t* dst = p.out + image * p.out_image;
    for (std::int64_t strip = blockIdx.y; strip < strips; strip += gridDim.y) {
      const std::int64_t y0 = strip * StripRows;
      // NOTE: the loop bound is the warp's first column, so the whole warp stays in step
      // for the shuffles.
      for (std::int64_t x0 = static_cast<std::int64_t>(blockIdx.x) * kBlockCols +
                             static_cast<std::int64_t>(warp) * kWarpCols;
           x0 < p.cols; x0 += static_cast<std::int64_t>(gridDim.x) * kBlockCols) {
        const std::int64_t x = x0 - 1 + lane;
        const bool x_in = x >= 0 && x < p.cols;
        T v[StripRows + 2];  // input rows y0 - 1 .. y0 + StripRows, column x
#pragma unroll
        for (int i = 0; i < StripRows + 2; ++i) {
          const std::int64_t y = y0 - 1 + i;
          v[i] = (x_in && y >= 0 && y < p.rows)
                     ? reinterpret_cast<const T*>(src + y * p.in_pitch)[x]
                     : T(0);
        }
        const bool writes = lane >= 1 && lane <= kWarpCols && x < p.cols;
        T left[3] = {}, right[3] = {};
#pragma unroll
        for (int i = 0; i < StripRows + 2; ++i) {
          // rows i - 2, i - 1, i of the window's rows as input row i arrives
          left[0] = left[1];
          left[1] = left[2];
          right[0] = right[1];
          right[1] = right[2];
          left[2] = __shfl_up_sync(0xffffffffU, v[i], 1);
          right[2] = __shfl_down_sync(0xffffffffU, v[i], 1);
          if (i < 2) continue;
          const int o = i - 2;
          T acc = T(0);
          // NOTE: fused multiply-adds in the order of the taps, as the CPU reference does.
          acc = fma(taps[0], left[0], acc);
          acc = fma(taps[1], v[i - 2], acc);
          acc = fma(taps[2], right[0], acc);
          acc = fma(taps[3], left[1], acc);
          acc = fma(taps[4], v[i - 1], acc);
          acc = fma(taps[5], right[1], acc);
          acc = fma(taps[6], left[2], acc);
          acc = fma(taps[7], v[i], acc);
          acc = fma(taps[8], right[2], acc);
          if (writes && y0 + o < p.rows) {
            reinterpret_cast<T*>(dst + (y0 + o) * p.out_pitch)[x] = acc;
          }
        }
      }
    }
  }
}

template <class T, int StripRows>
void launch_typed(ConstTensorRef in, TensorRef out, const Filter3x3& filter, cudaStream_t stream) {
  PlainParams<T> p{};
  p.in = static_cast<const std::uint8_t*>(in.data);
  p.out = static_cast<std::uint8_t*>(out.data);
  p.in_pitch = in.row_pitch();
  p.out_pitch = out.row_pitch();
  p.in_image = in.image_pitch();
  p.out_image = out.image_pitch();
  p.rows = static_cast<std::int64_t>(in.rows);
  p.cols = static_cast<std::int64_t>(in.cols);
  p.images = static_cast<std::int64_t>(in.batch);
  for (int i = 0; i < 9; ++i) p.taps[i] = static_cast<T>(filter.taps[i]);
  const dim3 grid(plain::blocks_for(in.cols, kBlockCols, plain::kMaxGridX),
                  plain::blocks_for((in.rows + StripRows - 1) / StripRows, 1, plain::kMaxGridYZ),
                  plain::blocks_for(in.batch, 1, plain::kMaxGridYZ));
  plain_stencil3x3_kernel<T, StripRows><<<grid, kThreads, 0, stream>>>(p);
  check_launch("plain_stencil3x3_kernel");
}

}  // namespace

void launch_plain(ConstTensorRef in, TensorRef out, const Filter3x3& filter, cudaStream_t stream) {
  // NOTE: strips of 8 rows, bands of columns walked first: measured fastest of 4-32 rows and
  // of walking strips first, for both types (README.md).
  if (in.type == DataType::float64) return launch_typed<double, 8>(in, out, filter, stream);
  launch_typed<float, 8>(in, out, filter, stream);
}

}  // namespace tmakit::detail::stencil3x3
