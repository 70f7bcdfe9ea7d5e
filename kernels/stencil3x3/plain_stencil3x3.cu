// The 3x3 stencil without TMA, for rows TMA cannot describe (a pitch or start off 16 bytes):
// a thread owns one column of a strip of kStripRows output rows and slides a 3 x 3 window
// down it, loading one new input row (three neighbours) per output row; the left and right
// neighbours are the adjacent threads' centres, so they come from L1. Outside the image reads
// as zero. The sum is the TMA kernel's and the reference's: fused multiply-adds in tap order.
#include <cstdint>

#include "stencil3x3/plain_stencil3x3.hpp"
#include "tmakit/core/cuda_check.hpp"
#include "tmakit/kernels/detail/launch_support.hpp"
#include "tmakit/kernels/detail/plain_grid.hpp"

namespace tmakit::detail::stencil3x3 {
namespace {

constexpr int kThreads = 128;   // columns per block
constexpr int kStripRows = 16;  // output rows per thread

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

template <class T>
__global__ void __launch_bounds__(kThreads) plain_stencil3x3_kernel(const PlainParams<T> p) {
  T taps[9];
#pragma unroll
  for (int i = 0; i < 9; ++i) taps[i] = p.taps[i];
  const std::int64_t strips = (p.rows + kStripRows - 1) / kStripRows;
  for (std::int64_t image = blockIdx.z; image < p.images; image += gridDim.z) {
    const std::uint8_t* src = p.in + image * p.in_image;
    std::uint8_t* dst = p.out + image * p.out_image;
    for (std::int64_t strip = blockIdx.y; strip < strips; strip += gridDim.y) {
      for (std::int64_t x = static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x;
           x < p.cols; x += static_cast<std::int64_t>(gridDim.x) * kThreads) {
        // (y, x + dx) of the input, zero outside the image
        const auto at = [&](std::int64_t y, std::int64_t c) -> T {
          if (y < 0 || y >= p.rows || c < 0 || c >= p.cols) return T(0);
          return reinterpret_cast<const T*>(src + y * p.in_pitch)[c];
        };
        const std::int64_t y0 = strip * kStripRows;
        T w[3][3];  // rows y - 1, y, y + 1; columns x - 1, x, x + 1
#pragma unroll
        for (int dy = 0; dy < 2; ++dy) {
#pragma unroll
          for (int dx = 0; dx < 3; ++dx) w[dy][dx] = at(y0 - 1 + dy, x - 1 + dx);
        }
#pragma unroll 4
        for (int i = 0; i < kStripRows; ++i) {
          const std::int64_t y = y0 + i;
          if (y >= p.rows) break;
#pragma unroll
          for (int dx = 0; dx < 3; ++dx) w[2][dx] = at(y + 1, x - 1 + dx);
          T acc = T(0);
#pragma unroll
          for (int dy = 0; dy < 3; ++dy) {
#pragma unroll
            for (int dx = 0; dx < 3; ++dx) acc = fma(taps[3 * dy + dx], w[dy][dx], acc);
          }
          reinterpret_cast<T*>(dst + y * p.out_pitch)[x] = acc;
#pragma unroll
          for (int dx = 0; dx < 3; ++dx) {
            w[0][dx] = w[1][dx];
            w[1][dx] = w[2][dx];
          }
        }
      }
    }
  }
}

template <class T>
void launch_typed(ConstTensorRef in, TensorRef out, const Filter3x3& filter,
                  cudaStream_t stream) {
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
  const dim3 grid(
      plain::blocks_for(in.cols, kThreads, plain::kMaxGridX),
      plain::blocks_for((in.rows + kStripRows - 1) / kStripRows, 1, plain::kMaxGridYZ),
      plain::blocks_for(in.batch, 1, plain::kMaxGridYZ));
  plain_stencil3x3_kernel<T><<<grid, kThreads, 0, stream>>>(p);
  check_launch("plain_stencil3x3_kernel");
}

}  // namespace

void launch_plain(ConstTensorRef in, TensorRef out, const Filter3x3& filter, cudaStream_t stream) {
  if (in.type == DataType::float64) return launch_typed<double>(in, out, filter, stream);
  launch_typed<float>(in, out, filter, stream);
}

}  // namespace tmakit::detail::stencil3x3
