// The 3x3 stencil without TMA, for rows TMA cannot describe (a pitch or start off 16 bytes):
// a warp owns 32 x Cols consecutive output columns of a strip of StripRows output rows. Lane
// l holds columns x0 + 32 j + l (j < Cols), so each load and store is one coalesced warp
// access at any start, and a warp writes 32 x Cols contiguous elements of each output row.
// All StripRows + 2 input rows are loaded before the first sum; a column's left and right
// neighbours then come from the adjacent lanes (one rotation each way per input element),
// and only the columns x0 - 1 and x0 + 32 Cols are loaded besides, by lanes 0 and 31.
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

// Output columns of a block: 32 x Cols a warp.
template <int Cols>
constexpr int kBlockSpan = 32 * Cols * (kThreads / 32);

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

template <class T, int StripRows, int Cols>
__global__ void __launch_bounds__(kThreads) plain_stencil3x3_kernel(const PlainParams<T> p) {
  T taps[9];
#pragma unroll
  for (int i = 0; i < 9; ++i) taps[i] = p.taps[i];
  constexpr int kWarpSpan = 32 * Cols;
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
      for (std::int64_t x0 = static_cast<std::int64_t>(blockIdx.x) * kBlockSpan<Cols> +
                             static_cast<std::int64_t>(warp) * kWarpSpan;
           x0 < p.cols; x0 += static_cast<std::int64_t>(gridDim.x) * kBlockSpan<Cols>) {
        // The halo column this lane loads: x0 - 1 for lane 0, x0 + 32 Cols for lane 31.
        const std::int64_t hx = lane == 0 ? x0 - 1 : x0 + kWarpSpan;
        const bool h_in = (lane == 0 || lane == 31) && hx >= 0 && hx < p.cols;
        T v[StripRows + 2][Cols];
        T h[StripRows + 2];
#pragma unroll
        for (int i = 0; i < StripRows + 2; ++i) {
          const std::int64_t y = y0 - 1 + i;
          const bool y_in = y >= 0 && y < p.rows;
          const T* row = reinterpret_cast<const T*>(src + y * p.in_pitch);
#pragma unroll
          for (int j = 0; j < Cols; ++j) {
            const std::int64_t x = x0 + 32 * j + lane;
            v[i][j] = (y_in && x < p.cols) ? row[x] : T(0);
          }
          h[i] = (y_in && h_in) ? row[hx] : T(0);
        }
        // The window: input rows i - 2, i - 1, i as row i arrives; each element's left and
        // right neighbours are rotated in from the lanes beside it once per input row.
        T left[3][Cols], mid[3][Cols], right[3][Cols];
#pragma unroll
        for (int i = 0; i < StripRows + 2; ++i) {
          T from_left[Cols], from_right[Cols];
#pragma unroll
          for (int j = 0; j < Cols; ++j) {
            from_left[j] = __shfl_sync(0xffffffffU, v[i][j], (lane + 31) & 31);
            from_right[j] = __shfl_sync(0xffffffffU, v[i][j], (lane + 1) & 31);
          }
#pragma unroll
          for (int j = 0; j < Cols; ++j) {
            left[0][j] = left[1][j];
            left[1][j] = left[2][j];
            mid[0][j] = mid[1][j];
            mid[1][j] = mid[2][j];
            right[0][j] = right[1][j];
            right[1][j] = right[2][j];
            // Lane 0's left neighbour is lane 31's previous column, lane 31's right one lane
            // 0's next column; the warp's two outer neighbours are the halo.
            const T lane0_left = j > 0 ? from_left[j > 0 ? j - 1 : 0] : h[i];
            const T lane31_right = j + 1 < Cols ? from_right[j + 1 < Cols ? j + 1 : j] : h[i];
            left[2][j] = lane > 0 ? from_left[j] : lane0_left;
            right[2][j] = lane < 31 ? from_right[j] : lane31_right;
            mid[2][j] = v[i][j];
          }
          if (i < 2) continue;
          const std::int64_t y = y0 + i - 2;
          if (y >= p.rows) break;  // uniform across the warp
          T* out_row = reinterpret_cast<T*>(dst + y * p.out_pitch);
#pragma unroll
          for (int j = 0; j < Cols; ++j) {
            T acc = T(0);
            // NOTE: fused multiply-adds in the order of the taps, as the CPU reference does.
            acc = fma(taps[0], left[0][j], acc);
            acc = fma(taps[1], mid[0][j], acc);
            acc = fma(taps[2], right[0][j], acc);
            acc = fma(taps[3], left[1][j], acc);
            acc = fma(taps[4], mid[1][j], acc);
            acc = fma(taps[5], right[1][j], acc);
            acc = fma(taps[6], left[2][j], acc);
            acc = fma(taps[7], mid[2][j], acc);
            acc = fma(taps[8], right[2][j], acc);
            const std::int64_t x = x0 + 32 * j + lane;
            if (x < p.cols) out_row[x] = acc;
          }
        }
      }
    }
  }
}

template <class T, int StripRows, int Cols>
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
  const dim3 grid(plain::blocks_for(in.cols, kBlockSpan<Cols>, plain::kMaxGridX),
                  plain::blocks_for((in.rows + StripRows - 1) / StripRows, 1, plain::kMaxGridYZ),
                  plain::blocks_for(in.batch, 1, plain::kMaxGridYZ));
  plain_stencil3x3_kernel<T, StripRows, Cols><<<grid, kThreads, 0, stream>>>(p);
  check_launch("plain_stencil3x3_kernel");
}

}  // namespace

void launch_plain(ConstTensorRef in, TensorRef out, const Filter3x3& filter, cudaStream_t stream) {
  // NOTE: strips of 8 rows, 128 columns a warp: measured fastest of 4-32 rows and 32-256
  // columns for both types (README.md); more registers than that cost more than they hide.
  if (in.type == DataType::float64) return launch_typed<double, 8, 4>(in, out, filter, stream);
  launch_typed<float, 8, 4>(in, out, filter, stream);
}

}  // namespace tmakit::detail::stencil3x3
