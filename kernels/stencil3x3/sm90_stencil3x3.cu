// 3x3 stencil with zero padding through TMA, float32 / float64, one image or a batch
// (README.md beside this file). A persistent tile stream: the producer loads the tile plus
// its halo in one box whose corner sits left of and above the tile, negative coordinates
// included, so TMA's out-of-bounds fill supplies the zero padding and no padded copy of the
// input exists. Consumer threads each slide down one column of a 16- or 8-row strip, keeping
// three rows of the sum in registers; one thread stores the finished tile with TMA.
#include <algorithm>
#include <cmath>

#include "tmakit/kernels/detail/launch_support.hpp"
#include "tmakit/kernels/detail/sm90_tile_stream.cuh"
#include "tmakit/kernels/stencil3x3.hpp"

namespace tmakit::detail::stencil3x3 {

using stream::RowTail;
using stream::run_tile_stream;
using stream::StreamBarriers;
using stream::TileOrder;

constexpr int kStages = 6;     // input boxes in flight
// NOTE: three output buffers let a store finish reading shared memory while the next tile is
// computed; with two, consumers waited on each store's read (measured slower on H200).
constexpr int kOutStages = 3;
constexpr int kConsumerWarps = 4;
constexpr int kTileRows = 32;
constexpr int kDefaultCtasPerSm = 2;

// Tile geometry for element type T: 256-byte output rows.
template <class T>
struct Geometry {
  static constexpr int kE = sizeof(T);
  static constexpr int kTileCols = 256 / kE;  // 64 fp32, 32 fp64
  // NOTE: the box's inner coordinate times the element size must be a multiple of 16 bytes
  // (TMA_FACTS O1), so the left halo is 16 bytes wide although the filter needs one element.
  static constexpr int kHalo = 16 / kE;
  static constexpr int kInCols = kTileCols + 2 * kHalo;
  static constexpr int kInRows = kTileRows + 2;
  static constexpr std::uint32_t kInBytes = (kInCols * kInRows * kE + 127) / 128 * 128;
  static constexpr std::uint32_t kOutBytes = kTileCols * kTileRows * kE;
  static constexpr int kStrips = 32 * kConsumerWarps / kTileCols;  // thread rows per tile
  static constexpr int kStripRows = kTileRows / kStrips;           // 16 fp32, 8 fp64
  static_assert(kStrips * kTileCols == 32 * kConsumerWarps, "one column per consumer thread");
};

template <class T>
struct Params {
  CUtensorMap in_map;
  CUtensorMap out_map;
  TileOrder order;
  RowTail tail;
  std::int32_t images;
  T taps[9];
};

template <class T>
struct StencilOp {
  using Params = stencil3x3::Params<T>;
  using G = Geometry<T>;
  static constexpr int kStages = stencil3x3::kStages;
  static constexpr int kOutStages = stencil3x3::kOutStages;
  static constexpr int kConsumerWarps = stencil3x3::kConsumerWarps;
  static constexpr std::uint32_t kInBytes = G::kInBytes;
  static constexpr std::uint32_t kOutBytes = G::kOutBytes;

  __device__ static std::int64_t tile_count(const Params& p) {
    // NOTE: the image count rides in the map's third dimension; TileOrder walks images last.
    return static_cast<std::int64_t>(p.order.tiles_x) * p.order.tiles_y * p.images;
  }
  __device__ static std::uint32_t tx_bytes(const Params&) {
    return G::kInCols * G::kInRows * G::kE;
  }
  __device__ static void prefetch(const Params& p) {
    ptx::prefetch_tensormap(&p.in_map);
    ptx::prefetch_tensormap(&p.out_map);
  }
  __device__ static void load(const Params& p, std::int64_t tile, std::uint32_t dst,
                              std::uint32_t bar) {
    std::int32_t tx, ty, image;
    p.order.coords(tile, tx, ty, image);
    // the box's corner: kHalo columns left, one row up (negative at the edges: zero fill)
    const std::int32_t c[3] = {tx * G::kTileCols - G::kHalo, ty * kTileRows - 1, image};
    ptx::cp_async_bulk_tensor_shared_global_tile<3>(dst, &p.in_map, c, bar);
  }
  __device__ static void compute(const Params& p, std::int64_t, std::uint8_t* in_bytes,
                                 std::uint8_t* out_bytes, std::uint32_t tid) {
    const T* in = reinterpret_cast<const T*>(in_bytes);
    T* out = reinterpret_cast<T*>(out_bytes);
    const int col = static_cast<int>(tid) % G::kTileCols;
    const int row0 = static_cast<int>(tid) / G::kTileCols * G::kStripRows;
    T taps[9];
#pragma unroll
    for (int i = 0; i < 9; ++i) taps[i] = p.taps[i];

    // slide down the strip: input row i feeds output rows i-2, i-1, i (filter rows 2, 1, 0)
    T acc[G::kStripRows];
#pragma unroll
    for (int o = 0; o < G::kStripRows; ++o) acc[o] = T(0);
#pragma unroll
    for (int i = 0; i < G::kStripRows + 2; ++i) {
      const T* row = in + (row0 + i) * G::kInCols + col + G::kHalo - 1;
      const T left = row[0];
      const T centre = row[1];
      const T right = row[2];
#pragma unroll
      for (int dy = 0; dy < 3; ++dy) {
        const int o = i - dy;
        if (o < 0 || o >= G::kStripRows) continue;
        // NOTE: fused multiply-adds in the order of the taps, as the CPU reference does.
        acc[o] = fma(taps[3 * dy + 0], left, acc[o]);
        acc[o] = fma(taps[3 * dy + 1], centre, acc[o]);
        acc[o] = fma(taps[3 * dy + 2], right, acc[o]);
      }
    }
#pragma unroll
    for (int o = 0; o < G::kStripRows; ++o) out[(row0 + o) * G::kTileCols + col] = acc[o];
  }
  __device__ static void store(const Params& p, std::int64_t tile, std::uint32_t src) {
    if (p.tail.main_cols == 0) return;  // rows under 16 bytes: all of it is tail
    std::int32_t tx, ty, image;
    p.order.coords(tile, tx, ty, image);
    const std::int32_t c[3] = {tx * G::kTileCols, ty * kTileRows, image};
    ptx::cp_async_bulk_tensor_global_shared_tile<3>(&p.out_map, c, src);
  }
  __device__ static void store_tail(const Params& p, std::int64_t tile, const std::uint8_t* out,
                                    std::uint32_t tid, std::uint32_t threads) {
    if (p.tail.main_cols == p.tail.cols) return;
    std::int32_t tx, ty, image;
    p.order.coords(tile, tx, ty, image);
    stream::store_row_tail<G::kE>(
        p.tail, tx * G::kTileCols, ty * kTileRows, image, G::kTileCols, kTileRows, out,
        [](std::int32_t r, std::int32_t c) {
          return static_cast<std::uint32_t>((r * G::kTileCols + c) * G::kE);
        },
        tid, threads);
  }
};

template <class T>
struct alignas(128) SharedStorage {
  std::uint8_t in[kStages][Geometry<T>::kInBytes];  // 128-aligned boxes (rule D1)
  std::uint8_t out[kOutStages][Geometry<T>::kOutBytes];
  StreamBarriers<kStages> bars;
};
template <class T>
constexpr std::size_t kSmemBytes = sizeof(SharedStorage<T>) + 128;  // + alignment slack

template <class T>
__global__ void __launch_bounds__(32 * (1 + kConsumerWarps))
    sm90_stencil3x3_kernel(const __grid_constant__ Params<T> p) {
  static_assert(Geometry<T>::kInBytes % 128 == 0 && Geometry<T>::kOutBytes % 128 == 0,
                "TMA shared-memory boxes need 128-byte alignment (rule D1)");
  static_assert(Geometry<T>::kInCols * Geometry<T>::kE % 16 == 0, "box rows of 16-byte units");
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900)
  extern __shared__ std::uint8_t smem_raw[];
  auto* storage = reinterpret_cast<SharedStorage<T>*>(
      (reinterpret_cast<std::uintptr_t>(smem_raw) + 127) & ~std::uintptr_t{127});
  run_tile_stream<StencilOp<T>>(p, &storage->in[0][0], storage->bars);
#else
  if (threadIdx.x == 0) printf("sm90_stencil3x3_kernel needs sm_90a\n");
  __trap();
#endif
}

template <class T>
void launch(Params<T>& p, ConstTensorRef in, TensorRef out, const Filter3x3& filter,
            int ctas_per_sm, cudaStream_t stream) {
  using G = Geometry<T>;
  const DataType t = in.type;
  // step 2: maps, always rank 3 (cols, rows, images) so one kernel serves a batch of one
  auto in_spec = view_spec(in, t, {G::kInCols, G::kInRows, 1}, Swizzle::none);
  auto out_spec = view_spec(out, t, {G::kTileCols, kTileRows, 1}, Swizzle::none);
  in_spec.rank = 3;
  out_spec.rank = 3;
  p.in_map = cached_tensor_map(in_spec);
  // NOTE: the output map stops at the row's last full 16 bytes; store_tail writes the rest.
  const std::uint64_t main_cols = tma_store_cols(out.cols, sizeof(T));
  if (main_cols > 0) {
    out_spec.global_dim[0] = main_cols;
    p.out_map = cached_tensor_map(out_spec);
  }
  p.tail = {static_cast<std::uint8_t*>(out.data), out.row_pitch(), out.image_pitch(),
            static_cast<std::int32_t>(out.rows), static_cast<std::int32_t>(out.cols),
            static_cast<std::int32_t>(main_cols)};
  for (int i = 0; i < 9; ++i) p.taps[i] = static_cast<T>(filter.taps[i]);
  p.order = {static_cast<std::int32_t>((in.cols + G::kTileCols - 1) / G::kTileCols),
             static_cast<std::int32_t>((in.rows + kTileRows - 1) / kTileRows), 1};
  p.images = static_cast<std::int32_t>(in.batch);

  // step 3: launch
  const std::int64_t tiles =
      static_cast<std::int64_t>(p.order.tiles_x) * p.order.tiles_y * p.images;
  const unsigned grid = persistent_grid(tiles, ctas_per_sm);
  TMAKIT_CUDA_CHECK(cudaFuncSetAttribute(sm90_stencil3x3_kernel<T>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(kSmemBytes<T>)));
  sm90_stencil3x3_kernel<T><<<grid, 32 * (1 + kConsumerWarps), kSmemBytes<T>, stream>>>(p);
  check_launch("sm90_stencil3x3_kernel");
}

}  // namespace tmakit::detail::stencil3x3

namespace tmakit {

void stencil3x3(ConstTensorRef in, TensorRef out, const Filter3x3& filter, cudaStream_t stream,
                const StencilTuning& tuning) {
  using namespace detail::stencil3x3;
  // step 1: validate every argument before anything is written
  detail::check_view("in", in, true);
  detail::check_view("out", out, true);
  if (in.type != DataType::float32 && in.type != DataType::float64) {
    throw ArgumentError("in.type", std::string(name(in.type)) +
                                       " is not supported; use FLOAT32 or FLOAT64");
  }
  if (out.type != in.type) {
    throw ArgumentError("out.type", std::string(name(out.type)) + " differs from in.type " +
                                        std::string(name(in.type)));
  }
  if (out.rows != in.rows || out.cols != in.cols || out.batch != in.batch) {
    throw ArgumentError("out", "shape " + std::to_string(out.batch) + "x" +
                                   std::to_string(out.rows) + "x" + std::to_string(out.cols) +
                                   " differs from in's " + std::to_string(in.batch) + "x" +
                                   std::to_string(in.rows) + "x" + std::to_string(in.cols));
  }
  if (detail::overlaps(in, out)) {
    throw ArgumentError("out.data", "overlaps in; the stencil reads neighbours, so it cannot "
                                    "run in place");
  }
  for (int i = 0; i < 9; ++i) {
    if (!std::isfinite(filter.taps[i])) {
      throw ArgumentError("filter.taps[" + std::to_string(i) + "]", "is not finite");
    }
  }
  const int ctas_per_sm = tuning.ctas_per_sm > 0 ? tuning.ctas_per_sm : kDefaultCtasPerSm;
  if (ctas_per_sm > 2) throw ArgumentError("tuning.ctas_per_sm", "at most 2 fit in shared memory");

  if (in.type == DataType::float32) {
    Params<float> p{};
    launch<float>(p, in, out, filter, ctas_per_sm, stream);
  } else {
    Params<double> p{};
    launch<double>(p, in, out, filter, ctas_per_sm, stream);
  }
}

}  // namespace tmakit
