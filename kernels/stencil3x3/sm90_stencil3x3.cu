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

constexpr int kConsumerWarps = 4;
constexpr int kDefaultCtasPerSm = 2;

// A buffer layout of the tile stream (sm90_tile_stream.cuh), selectable at run time through
// StencilTuning::variant so layouts compare in one benchmark run.
template <int Stages, int OutStages, int Lag, int TileRows>
struct Layout {
  static constexpr int kStages = Stages;        // input boxes in flight
  static constexpr int kOutStages = OutStages;  // 0: each stage holds its output tile
  static constexpr int kReleaseLag = Lag;       // paired: stage freed this many tiles late
  static constexpr int kTileRows = TileRows;
};
// NOTE: variant 0 is the layout measured fastest on H200 (README): 4 paired stages freed one
// tile late, 2 CTAs per SM. Separate input/output buffers freed inputs early but measured
// slower (fp32 0.80 vs 0.89-0.98 of memcpy, fp64 0.64 vs 0.85), as did deeper rings.
using Layout0 = Layout<4, 0, 1, 32>;
using Layout1 = Layout<6, 0, 2, 32>;  // deeper paired ring, two stores in flight
using Layout2 = Layout<6, 3, 1, 32>;  // separate: 6 input boxes, 3 output buffers
using Layout3 = Layout<3, 0, 1, 64>;  // taller tiles: less halo re-read per output row
using Layout4 = Layout<3, 0, 1, 32>;  // shallower paired ring
constexpr int kVariants = 5;

// Tile geometry for element type T: 256-byte output rows.
template <class T, int TileRows>
struct Geometry {
  static constexpr int kE = sizeof(T);
  static constexpr int kTileRows = TileRows;
  static constexpr int kTileCols = 256 / kE;  // 64 fp32, 32 fp64
  // NOTE: the box's inner coordinate times the element size must be a multiple of 16 bytes
  // (TMA_FACTS O1), so the left halo is 16 bytes wide although the filter needs one element.
  static constexpr int kHalo = 16 / kE;
  static constexpr int kInCols = kTileCols + 2 * kHalo;
  static constexpr int kInRows = kTileRows + 2;
  static constexpr std::uint32_t kInBytes = (kInCols * kInRows * kE + 127) / 128 * 128;
  static constexpr std::uint32_t kOutBytes = kTileCols * kTileRows * kE;
  static constexpr int kStrips = 32 * kConsumerWarps / kTileCols;  // thread rows per tile
  static constexpr int kStripRows = kTileRows / kStrips;
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

template <class T, class L>
struct StencilOp {
  using Params = stencil3x3::Params<T>;
  using G = Geometry<T, L::kTileRows>;
  static constexpr int kTileRows = L::kTileRows;
  static constexpr int kStages = L::kStages;
  static constexpr int kOutStages = L::kOutStages;
  static constexpr int kReleaseLag = L::kReleaseLag;
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

// The ring of stages as the tile stream lays it out (paired: box then tile in each stage;
// separate: boxes, then output buffers), then the barriers.
template <class T, class L>
struct alignas(128) SharedStorage {
  using G = Geometry<T, L::kTileRows>;
  static constexpr std::uint32_t kRingBytes =
      L::kOutStages == 0 ? L::kStages * (G::kInBytes + G::kOutBytes)
                         : L::kStages * G::kInBytes + L::kOutStages * G::kOutBytes;
  std::uint8_t ring[kRingBytes];  // 128-aligned boxes (rule D1)
  StreamBarriers<L::kStages> bars;
};
template <class T, class L>
constexpr std::size_t kSmemBytes = sizeof(SharedStorage<T, L>) + 128;  // + alignment slack

template <class T, class L>
__global__ void __launch_bounds__(32 * (1 + kConsumerWarps))
    sm90_stencil3x3_kernel(const __grid_constant__ Params<T> p) {
  using G = Geometry<T, L::kTileRows>;
  static_assert(G::kInBytes % 128 == 0 && G::kOutBytes % 128 == 0,
                "TMA shared-memory boxes need 128-byte alignment (rule D1)");
  static_assert(G::kInCols * G::kE % 16 == 0, "box rows of 16-byte units");
  static_assert(2 * (kSmemBytes<T, L> + 1024) <= 228 * 1024, "two CTAs per SM must fit");
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900)
  extern __shared__ std::uint8_t smem_raw[];
  auto* storage = reinterpret_cast<SharedStorage<T, L>*>(
      (reinterpret_cast<std::uintptr_t>(smem_raw) + 127) & ~std::uintptr_t{127});
  run_tile_stream<StencilOp<T, L>>(p, storage->ring, storage->bars);
#else
  if (threadIdx.x == 0) printf("sm90_stencil3x3_kernel needs sm_90a\n");
  __trap();
#endif
}

template <class T, class L>
void launch(Params<T>& p, ConstTensorRef in, TensorRef out, const Filter3x3& filter,
            int ctas_per_sm, cudaStream_t stream) {
  using G = Geometry<T, L::kTileRows>;
  constexpr int kTileRows = L::kTileRows;
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
  TMAKIT_CUDA_CHECK(cudaFuncSetAttribute(sm90_stencil3x3_kernel<T, L>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(kSmemBytes<T, L>)));
  sm90_stencil3x3_kernel<T, L>
      <<<grid, 32 * (1 + kConsumerWarps), kSmemBytes<T, L>, stream>>>(p);
  check_launch("sm90_stencil3x3_kernel");
}

// CTAs of each layout that fit in one SM's 228 KB (1 KB of it reserved per CTA): [variant][fp64]
template <class T, class L>
constexpr int max_ctas() {
  return static_cast<int>(228 * 1024 / (kSmemBytes<T, L> + 1024));
}
constexpr int kMaxCtasPerSm[kVariants][2] = {
    {max_ctas<float, Layout0>(), max_ctas<double, Layout0>()},
    {max_ctas<float, Layout1>(), max_ctas<double, Layout1>()},
    {max_ctas<float, Layout2>(), max_ctas<double, Layout2>()},
    {max_ctas<float, Layout3>(), max_ctas<double, Layout3>()},
    {max_ctas<float, Layout4>(), max_ctas<double, Layout4>()}};

template <class T>
void launch_variant(int variant, ConstTensorRef in, TensorRef out, const Filter3x3& filter,
                    int ctas_per_sm, cudaStream_t stream) {
  Params<T> p{};
  switch (variant) {
    case 1: launch<T, Layout1>(p, in, out, filter, ctas_per_sm, stream); break;
    case 2: launch<T, Layout2>(p, in, out, filter, ctas_per_sm, stream); break;
    case 3: launch<T, Layout3>(p, in, out, filter, ctas_per_sm, stream); break;
    case 4: launch<T, Layout4>(p, in, out, filter, ctas_per_sm, stream); break;
    default: launch<T, Layout0>(p, in, out, filter, ctas_per_sm, stream); break;
  }
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
  if (tuning.variant < 0 || tuning.variant >= kVariants) {
    throw ArgumentError("tuning.variant", std::to_string(tuning.variant) +
                                              " is not a layout; use 0.." +
                                              std::to_string(kVariants - 1));
  }
  const int max_ctas = kMaxCtasPerSm[tuning.variant][in.type == DataType::float64 ? 1 : 0];
  if (ctas_per_sm > max_ctas) {
    throw ArgumentError("tuning.ctas_per_sm",
                        "at most " + std::to_string(max_ctas) + " fit in shared memory");
  }


  if (in.type == DataType::float32) {
    launch_variant<float>(tuning.variant, in, out, filter, ctas_per_sm, stream);
  } else {
    launch_variant<double>(tuning.variant, in, out, filter, ctas_per_sm, stream);
  }
}

}  // namespace tmakit
