// The 3x3 stencil without TMA: a warp owns 32 x Cols x E consecutive output columns of a
// strip of StripRows output rows. Lane l holds the E columns from x0 + (32 j + l) E (j < Cols),
// so each load and store is one coalesced warp access, and a warp writes 32 x Cols x E
// contiguous elements of each output row. E = 1 takes rows TMA cannot describe (a pitch or
// start off 16 bytes) at any start; E = 16 bytes / element size takes rows whose starts and
// pitches are 16-byte aligned, one 16-byte access per lane and slot, over whole warp spans
// only (the columns right of the last whole span go to E = 1 in a second launch). All
// StripRows + 2 input rows are loaded before the first sum; the left neighbour of a lane's
// first column and the right one of its last then come from the adjacent lanes (one rotation
// each way per input run), and only the columns x0 - 1 and x0 + 32 Cols E are loaded besides,
// by lanes 0 and 31. Outside the image reads as zero. The sum is the TMA kernel's and the
// reference's: fused multiply-adds in tap order, zeros included. The strip shape (StripRows,
// Cols) is the plan's pick by image size (stencil3x3_plan.hpp, plain_strip).
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "stencil3x3/plain_stencil3x3.hpp"
#include "stencil3x3/stencil3x3_plan.hpp"
#include "tmakit/core/cuda_check.hpp"
#include "tmakit/kernels/detail/launch_support.hpp"
#include "tmakit/kernels/detail/plain_grid.hpp"

namespace tmakit::detail::stencil3x3 {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

// Output columns of a warp: 32 lanes x Cols runs x E elements.
template <int Cols, int E>
constexpr int kWarpSpan = 32 * Cols * E;

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
  // The columns this launch writes: [col_begin, col_end); all of [0, cols) is read.
  std::int64_t col_begin;
  std::int64_t col_end;
  T taps[9];
};

// E consecutive elements of a row from x (zero outside the image). E > 1: one 16-byte load,
// the run lying whole in the row (the row's start and x are 16-byte aligned).
template <class T, int E>
__device__ __forceinline__ void load_run(const T* row, std::int64_t x, std::int64_t cols,
                                         bool row_in, T (&v)[E]) {
  if constexpr (E > 1) {
    static_assert(E * sizeof(T) == 16, "a run is one 16-byte access");
    using Vec = std::conditional_t<sizeof(T) == 4, float4, double2>;
    const Vec q = row_in ? *reinterpret_cast<const Vec*>(row + x) : Vec{};
    if constexpr (E == 4) {
      v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
    } else {
      v[0] = q.x, v[1] = q.y;
    }
  } else {
    v[0] = (row_in && x < cols) ? row[x] : T(0);
  }
}

// The run's elements inside the row: E > 1, one 16-byte store of a run lying whole in it.
template <class T, int E>
__device__ __forceinline__ void store_run(T* row, std::int64_t x, std::int64_t cols,
                                          const T (&o)[E]) {
  if constexpr (E == 4) {
    *reinterpret_cast<float4*>(row + x) = make_float4(o[0], o[1], o[2], o[3]);
  } else if constexpr (E == 2) {
    *reinterpret_cast<double2*>(row + x) = make_double2(o[0], o[1]);
  } else {
    if (x < cols) row[x] = o[0];
  }
}

// NOTE: the 16-byte form is held to two blocks an SM (128 registers): float64 fits in 126
// at 8 warps along a strip because no run is cut by a row's end (an element-by-element
// fallback for cut runs took 146, one block an SM, 0.71x memcpy; README.md). E = 1 is not
// held (0: no minimum).
// WarpsX: a block's warps side by side along a strip (1, 2, 4 or 8); kWarps / WarpsX strips
// of them.
template <class T, int StripRows, int Cols, int E, int WarpsX>
__global__ void __launch_bounds__(kThreads, E > 1 ? 2 : 0)
    plain_stencil3x3_kernel(const PlainParams<T> p) {
  static_assert(kWarps % WarpsX == 0, "whole rows of warps in a block");
  T taps[9];
#pragma unroll
  for (int i = 0; i < 9; ++i) taps[i] = p.taps[i];
  constexpr int kSpan = kWarpSpan<Cols, E>;
  constexpr int kWarpsY = kWarps / WarpsX;
  constexpr std::int64_t kBlockSpan = WarpsX * kSpan;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  // (constants where the block is one row of warps: the code of a block along one strip)
  const int warp_x = WarpsX == kWarps ? warp : warp % WarpsX;
  const int warp_y = WarpsX == kWarps ? 0 : warp / WarpsX;
  const std::int64_t strips = (p.rows + StripRows - 1) / StripRows;
  for (std::int64_t image = blockIdx.z; image < p.images; image += gridDim.z) {
    const std::uint8_t* src = p.in + image * p.in_image;
    std::uint8_t* dst = p.out + image * p.out_image;
    for (std::int64_t strip = static_cast<std::int64_t>(blockIdx.y) * kWarpsY + warp_y;
         strip < strips; strip += static_cast<std::int64_t>(gridDim.y) * kWarpsY) {
      const std::int64_t y0 = strip * StripRows;
      // NOTE: the loop bound is the warp's first column, so the whole warp stays in step
      // for the shuffles.
      for (std::int64_t x0 = p.col_begin + static_cast<std::int64_t>(blockIdx.x) * kBlockSpan +
                             static_cast<std::int64_t>(warp_x) * kSpan;
           x0 < p.col_end; x0 += static_cast<std::int64_t>(gridDim.x) * kBlockSpan) {
        // The halo column this lane loads: x0 - 1 for lane 0, x0 + 32 Cols E for lane 31.
        const std::int64_t hx = lane == 0 ? x0 - 1 : x0 + kSpan;
        const bool h_in = (lane == 0 || lane == 31) && hx >= 0 && hx < p.cols;
        // NOTE: the lane's first column in 64 bits, then a constant a slot: the compiler folds
        // the slots' offsets into the addresses (an int slot index widened after the sum
        // cost a separate address each, about 15% more instructions).
        const std::int64_t xl = x0 + static_cast<std::int64_t>(lane) * E;
        T v[StripRows + 2][Cols][E];
        T h[StripRows + 2];
#pragma unroll
        for (int i = 0; i < StripRows + 2; ++i) {
          const std::int64_t y = y0 - 1 + i;
          const bool y_in = y >= 0 && y < p.rows;
          const T* row = reinterpret_cast<const T*>(src + y * p.in_pitch);
#pragma unroll
          for (int j = 0; j < Cols; ++j) {
            load_run<T, E>(row, xl + 32 * E * j, p.cols, y_in, v[i][j]);
          }
          h[i] = (y_in && h_in) ? row[hx] : T(0);
        }
        // The window: input rows i - 2, i - 1, i as row i arrives; the left neighbour of each
        // run's first element and the right one of its last are rotated in from the lanes
        // beside it once per input row.
        T left[3][Cols], mid[3][Cols][E], right[3][Cols];
#pragma unroll
        for (int i = 0; i < StripRows + 2; ++i) {
          T from_left[Cols], from_right[Cols];
#pragma unroll
          for (int j = 0; j < Cols; ++j) {
            from_left[j] = __shfl_sync(0xffffffffU, v[i][j][E - 1], (lane + 31) & 31);
            from_right[j] = __shfl_sync(0xffffffffU, v[i][j][0], (lane + 1) & 31);
          }
#pragma unroll
          for (int j = 0; j < Cols; ++j) {
            left[0][j] = left[1][j];
            left[1][j] = left[2][j];
            right[0][j] = right[1][j];
            right[1][j] = right[2][j];
#pragma unroll
            for (int e = 0; e < E; ++e) {
              mid[0][j][e] = mid[1][j][e];
              mid[1][j][e] = mid[2][j][e];
              mid[2][j][e] = v[i][j][e];
            }
            // Lane 0's left neighbour is lane 31's previous run, lane 31's right one lane 0's
            // next run; the warp's two outer neighbours are the halo.
            const T lane0_left = j > 0 ? from_left[j > 0 ? j - 1 : 0] : h[i];
            const T lane31_right = j + 1 < Cols ? from_right[j + 1 < Cols ? j + 1 : j] : h[i];
            left[2][j] = lane > 0 ? from_left[j] : lane0_left;
            right[2][j] = lane < 31 ? from_right[j] : lane31_right;
          }
          if (i < 2) continue;
          const std::int64_t y = y0 + i - 2;
          if (y >= p.rows) break;  // uniform across the warp
          T* out_row = reinterpret_cast<T*>(dst + y * p.out_pitch);
#pragma unroll
          for (int j = 0; j < Cols; ++j) {
            T o[E];
#pragma unroll
            for (int e = 0; e < E; ++e) {
              // The element's neighbour dx (-1 or 1) in window row d: in the run, or the one
              // rotated in beside it.
              const auto at = [&](int d, int dx) -> T {
                const int k = e + dx;
                if (k < 0) return left[d][j];
                if (k >= E) return right[d][j];
                return mid[d][j][k];
              };
              T acc = T(0);
              // NOTE: fused multiply-adds in the order of the taps, as the CPU reference does.
              acc = fma(taps[0], at(0, -1), acc);
              acc = fma(taps[1], mid[0][j][e], acc);
              acc = fma(taps[2], at(0, 1), acc);
              acc = fma(taps[3], at(1, -1), acc);
              acc = fma(taps[4], mid[1][j][e], acc);
              acc = fma(taps[5], at(1, 1), acc);
              acc = fma(taps[6], at(2, -1), acc);
              acc = fma(taps[7], mid[2][j][e], acc);
              acc = fma(taps[8], at(2, 1), acc);
              o[e] = acc;
            }
            store_run<T, E>(out_row, xl + 32 * E * j, p.cols, o);
          }
        }
      }
    }
  }
}

// Writes the columns [col_begin, col_end) of every output row: with E > 1 a whole number of
// warp spans.
template <class T, int StripRows, int Cols, int E>
void launch_typed(ConstTensorRef in, TensorRef out, const Filter3x3& filter,
                  std::int64_t col_begin, std::int64_t col_end, cudaStream_t stream) {
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
  p.col_begin = col_begin;
  p.col_end = col_end;
  for (int i = 0; i < 9; ++i) p.taps[i] = static_cast<T>(filter.taps[i]);
  constexpr std::int64_t kSpan = kWarpSpan<Cols, E>;
  const std::int64_t spans = (col_end - col_begin + kSpan - 1) / kSpan;
  const auto launch = [&](auto warps_x) {
    constexpr int kWarpsX = decltype(warps_x)::value;
    const dim3 grid(
        plain::blocks_for(static_cast<std::uint64_t>(spans), kWarpsX, plain::kMaxGridX),
        plain::blocks_for((in.rows + StripRows - 1) / StripRows, kWarps / kWarpsX,
                          plain::kMaxGridYZ),
        plain::blocks_for(in.batch, 1, plain::kMaxGridYZ));
    plain_stencil3x3_kernel<T, StripRows, Cols, E, kWarpsX><<<grid, kThreads, 0, stream>>>(p);
  };
  static_assert(kWarps == 8, "warps along a strip: 1, 2, 4 or 8");
  switch (plain_warps_along_strip(spans)) {
    case 1: launch(std::integral_constant<int, 1>{}); break;
    case 2: launch(std::integral_constant<int, 2>{}); break;
    case 4: launch(std::integral_constant<int, 4>{}); break;
    default: launch(std::integral_constant<int, 8>{}); break;
  }
  check_launch("plain_stencil3x3_kernel");
}

// The E-element form over the columns [col_begin, col_end) in strip shape Shapes[pick].
template <class T, int E, const auto& Shapes, std::size_t... I>
void launch_shape(std::size_t pick, ConstTensorRef in, TensorRef out, const Filter3x3& filter,
                  std::int64_t col_begin, std::int64_t col_end, cudaStream_t stream,
                  std::index_sequence<I...>) {
  ((pick == I ? launch_typed<T, Shapes[I].rows, Shapes[I].runs, E>(in, out, filter, col_begin,
                                                                    col_end, stream)
              : void()),
   ...);
}

// The strip shape of `Shapes` the plan picks for `columns` columns of every row and image.
template <const auto& Shapes>
std::size_t planned_shape(ConstTensorRef in, std::int64_t columns, int run) {
  return plain_strip(Shapes, static_cast<std::int64_t>(in.batch),
                     static_cast<std::int64_t>(in.rows), columns, run,
                     detail::multiprocessor_count());
}

// The 1-element form over the columns [col_begin, cols).
template <class T>
void launch_columns(ConstTensorRef in, TensorRef out, const Filter3x3& filter,
                    std::int64_t col_begin, std::optional<StripChoice> strips,
                    cudaStream_t stream) {
  const auto cols = static_cast<std::int64_t>(in.cols);
  const std::size_t pick =
      strips ? strips->element : planned_shape<kElementStrips>(in, cols - col_begin, 1);
  launch_shape<T, 1, kElementStrips>(pick, in, out, filter, col_begin, cols, stream,
                                     std::make_index_sequence<std::size(kElementStrips)>{});
}

// The 16-byte form over the row's whole warp spans of its strip shape, the 1-element form
// over the columns right of them; or, where the plan says so, the 1-element form alone.
template <class T>
void launch_vector(ConstTensorRef in, TensorRef out, const Filter3x3& filter,
                   std::optional<StripChoice> strips, cudaStream_t stream) {
  constexpr int kE = 16 / sizeof(T);
  constexpr std::size_t kShapes = std::size(kVectorStrips);
  const auto cols = static_cast<std::int64_t>(in.cols);
  const std::size_t pick = strips ? strips->vector16 : planned_shape<kVectorStrips>(in, cols, kE);
  const std::int64_t span = plain_span(kVectorStrips[pick], kE);
  const std::int64_t whole = cols - cols % span;
  const std::uint64_t bytes = in.batch * in.rows * in.cols * sizeof(T);
  if (!strips && whole < cols && !vector_form_with_part_span_takes(bytes, sizeof(T))) {
    return launch_columns<T>(in, out, filter, 0, strips, stream);
  }
  if (whole > 0) {
    launch_shape<T, kE, kVectorStrips>(pick, in, out, filter, 0, whole, stream,
                                       std::make_index_sequence<kShapes>{});
  }
  if (whole < cols) launch_columns<T>(in, out, filter, whole, strips, stream);
}

// A given choice names shapes the kernel is built in.
void check_strips(const std::optional<StripChoice>& strips) {
  const auto check = [](const char* name, std::size_t pick, std::size_t shapes) {
    if (pick >= shapes) {
      throw ArgumentError(name, std::to_string(pick) + " is past the " + std::to_string(shapes) +
                                    " strip shapes; pass 0 to " + std::to_string(shapes - 1));
    }
  };
  if (strips) {
    check("strips.element", strips->element, std::size(kElementStrips));
    check("strips.vector16", strips->vector16, std::size(kVectorStrips));
  }
}

}  // namespace

void launch_plain(ConstTensorRef in, TensorRef out, const Filter3x3& filter, cudaStream_t stream,
                  std::optional<StripChoice> strips) {
  check_strips(strips);
  if (in.type == DataType::float64) {
    return launch_columns<double>(in, out, filter, 0, strips, stream);
  }
  launch_columns<float>(in, out, filter, 0, strips, stream);
}

void launch_plain_vector(ConstTensorRef in, TensorRef out, const Filter3x3& filter,
                         cudaStream_t stream, std::optional<StripChoice> strips) {
  check_strips(strips);
  if (in.type == DataType::float64) return launch_vector<double>(in, out, filter, strips, stream);
  launch_vector<float>(in, out, filter, strips, stream);
}

}  // namespace tmakit::detail::stencil3x3
