// 3x3 stencil with zero padding through TMA, float32 / float64, one image or a batch: the
// device template and the host steps that launch one layout (README.md beside this file).
// A tile stream: the producer loads the tile plus its halo in one box whose corner sits left of
// and above the tile, negative coordinates included, so TMA's out-of-bounds fill supplies the
// zero padding and no padded copy of the input exists. Consumer threads each slide down one
// column of a 16- or 8-row strip, keeping three rows of the sum in registers; one thread
// stores the finished tile with TMA. The launcher (sm90_stencil3x3.cu) validates, asks the
// plan (stencil3x3_plan.hpp) for a layout and launches it.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "tmakit/device/copy.hpp"
#include "tmakit/device/tile.hpp"
#include "common/grid_cap.hpp"
#include "tmakit/kernels/detail/launch_support.hpp"
#include "tmakit/kernels/detail/sm90_tile_stream.cuh"
#include "tmakit/kernels/stencil3x3.hpp"
#include "tmakit/ptx/common.hpp"

namespace tmakit::detail::stencil3x3 {

using stream::RowTail;
using stream::run_tile_stream;
using stream::StreamBarriers;
using stream::TileOrder;

constexpr int kConsumerWarps = 4;

// A buffer layout of the tile stream (sm90_tile_stream.cuh), a template argument of the kernel
// (the launcher's plan picks one; bench/tune/ compiles more to compare). A tile is TileRows
// rows of TileBytes output bytes; its input comes as Slices boxes side by side, each covering
// TileBytes / Slices output bytes plus its own 16-byte halo on both sides.
template <int Stages, int OutStages, int Lag, int TileRows, int TileBytes = 256, int Slices = 1,
          int Ctas = 2, L2Promotion Promotion = L2Promotion::bytes256, bool SharedSpace = false,
          int Run = 0>
struct Layout {
  static constexpr int kStages = Stages;  // input boxes in flight
  // tiles per CTA, in one run (grid = runs); 0: persistent (grid = CTAs that fit). A single
  // stage always means one tile per CTA.
  static constexpr int kRun = Stages == 1 ? 1 : Run;
  static constexpr int kOutStages = OutStages;  // 0: each stage holds its output tile
  static constexpr int kReleaseLag = Lag;       // paired: stage freed this many tiles late
  static constexpr int kTileRows = TileRows;
  static constexpr int kTileBytes = TileBytes;          // output bytes per tile row
  static constexpr int kSlices = Slices;                // input boxes per tile, side by side
  static constexpr int kCtasPerSm = Ctas;               // default persistent CTAs per SM
  static constexpr L2Promotion kPromotion = Promotion;  // the input map's L2 fetch size
  static constexpr bool kSharedSpace = SharedSpace;     // stage pointers kept in .shared
};

// The layouts the plan picks (stencil3x3_plan.hpp): runs of two tiles per CTA through two
// paired stages, 512-byte tile rows, 32 or 16 rows.
using RunRows32 = Layout<2, 0, 1, 32, 512, 1, 1, L2Promotion::bytes256, false, 2>;
using RunRows16 = Layout<2, 0, 1, 16, 512, 1, 1, L2Promotion::bytes256, false, 2>;

// Tile geometry for element type T and layout L.
template <class T, class L>
struct Geometry {
  static constexpr int kE = sizeof(T);
  static constexpr int kTileRows = L::kTileRows;
  static constexpr int kTileCols = L::kTileBytes / kE;  // 64 fp32, 32 fp64 at 256 bytes
  static constexpr int kSlices = L::kSlices;
  static constexpr int kSliceCols = kTileCols / kSlices;
  // NOTE: the box's inner coordinate times the element size must be a multiple of 16 bytes
  // (O1), so the left halo is 16 bytes wide although the filter needs one element.
  static constexpr int kHalo = 16 / kE;
  static constexpr int kInCols = kSliceCols + 2 * kHalo;  // one slice's box
  static constexpr int kInRows = kTileRows + 2;
  static constexpr std::uint32_t kSliceInBytes = (kInCols * kInRows * kE + 127) / 128 * 128;
  static constexpr std::uint32_t kInBytes = kSlices * kSliceInBytes;
  static constexpr std::uint32_t kOutBytes = kTileCols * kTileRows * kE;
  static constexpr int kStrips = 32 * kConsumerWarps / kSliceCols;  // thread rows per slice
  static constexpr int kStripRows = kTileRows / kStrips;
  static_assert(kSliceCols * kSlices == kTileCols && kInCols <= 256,
                "a slice's box row holds at most 256 elements (rule T7)");
  static_assert(kStrips * kSliceCols == 32 * kConsumerWarps && kStripRows * kStrips == kTileRows,
                "one column of each slice per consumer thread, strips of equal height");
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

// What both launchers (tile stream and row walk) set up alike: the input map for `in_box`
// (always rank 3: cols, rows, images, so one kernel serves a batch of one), the output map
// for tiles of `tile_cols` x `tile_rows`, the row tails, the taps and the tile order.
template <class T>
void set_up(Params<T>& p, ConstTensorRef in, TensorRef out, const Filter3x3& filter,
            std::array<std::uint32_t, 3> in_box, L2Promotion in_promotion, std::uint32_t tile_cols,
            std::uint32_t tile_rows, int panel) {
  const DataType t = in.type;
  auto in_spec = view_spec(in, t, in_box, Swizzle::none);
  auto out_spec = view_spec(out, t, {tile_cols, tile_rows, 1}, Swizzle::none);
  in_spec.rank = 3;
  out_spec.rank = 3;
  in_spec.l2_promotion = in_promotion;
  p.in_map = cached_tensor_map(in_spec);
  // NOTE: the output map stops at the row's last full 16 bytes; store_tail writes the rest.
  const std::uint64_t main_cols = tma_store_cols(out.cols, sizeof(T));
  if (main_cols > 0) {
    out_spec.global_dim[0] = main_cols;
    p.out_map = cached_tensor_map(out_spec);
  }
  p.tail = {static_cast<std::uint8_t*>(out.data),
            out.row_pitch(),
            out.image_pitch(),
            static_cast<std::int32_t>(out.rows),
            static_cast<std::int32_t>(out.cols),
            static_cast<std::int32_t>(main_cols)};
  for (int i = 0; i < 9; ++i) p.taps[i] = static_cast<T>(filter.taps[i]);
  const auto tiles_y = static_cast<std::int32_t>((in.rows + tile_rows - 1) / tile_rows);
  p.order = {static_cast<std::int32_t>((in.cols + tile_cols - 1) / tile_cols), tiles_y,
             std::min(panel, tiles_y)};
  p.images = static_cast<std::int32_t>(in.batch);
}

// What both launchers do last: a persistent grid (ctas_per_sm per SM, at most one per tile)
// of `kernel` with `smem` bytes of dynamic shared memory (its limit already raised).
// Layouts with runs of tiles take one CTA per run instead (`run` tiles; 0: persistent).
template <class T>
void launch_persistent(void (*kernel)(Params<T>), std::size_t smem, const Params<T>& p,
                       int ctas_per_sm, cudaStream_t stream, const char* name, int run = 0) {
  const std::int64_t tiles =
      static_cast<std::int64_t>(p.order.tiles_x) * p.order.tiles_y * p.images;
  const unsigned grid =
      run > 0 ? tile_grid(tiles, run, grid_cap()) : persistent_grid(tiles, ctas_per_sm);
  kernel<<<grid, 32 * (1 + kConsumerWarps), smem, stream>>>(p);
  check_launch(name);
}

template <class T, class L>
struct StencilOp {
  using Params = stencil3x3::Params<T>;
  using G = Geometry<T, L>;
  static constexpr int kTileRows = L::kTileRows;
  static constexpr int kStages = L::kStages;
  static constexpr int kOutStages = L::kOutStages;
  static constexpr int kReleaseLag = L::kReleaseLag;
  static constexpr int kRun = L::kRun;
  static constexpr int kConsumerWarps = stencil3x3::kConsumerWarps;
  static constexpr std::uint32_t kInBytes = G::kInBytes;
  static constexpr std::uint32_t kOutBytes = G::kOutBytes;
  // One slice's input box (its columns and halo, the rows above and below, one image) and the
  // output tile, dense in shared memory; the stage holds kSlices InTiles side by side.
  using InTile = Tile<T, Swizzle::none, G::kInCols, G::kInRows, 1>;
  using OutTile = Tile<T, Swizzle::none, G::kTileCols, kTileRows, 1>;
  static_assert(InTile::smem_bytes == G::kSliceInBytes && OutTile::tx_bytes == G::kOutBytes,
                "the tiles and the geometry agree on the buffers");

  __device__ static std::int64_t tile_count(const Params& p) {
    // NOTE: the image count rides in the map's third dimension; TileOrder walks images last.
    return static_cast<std::int64_t>(p.order.tiles_x) * p.order.tiles_y * p.images;
  }
  __device__ static std::uint32_t tx_bytes(const Params&) {
    // NOTE: out-of-bounds parts of a box count: the fill is delivered like loaded bytes.
    return G::kSlices * InTile::tx_bytes;
  }
  __device__ static void prefetch(const Params& p) {
    prefetch_tensor_map(&p.in_map);
    prefetch_tensor_map(&p.out_map);
  }
  __device__ static void load(const Params& p, std::int64_t tile, std::uint8_t* dst,
                              Barrier& full) {
    std::int32_t tx, ty, image;
    p.order.coords(tile, tx, ty, image);
#pragma unroll
    for (int s = 0; s < G::kSlices; ++s) {
      // the box's corner: kHalo columns left, one row up (negative at the edges: zero fill;
      // a slice wholly right of the image loads zeros too)
      const std::int32_t c[3] = {tx * G::kTileCols + s * G::kSliceCols - G::kHalo,
                                 ty * kTileRows - 1, image};
      load_tile<InTile>(dst + s * InTile::smem_bytes, &p.in_map, full, c);
    }
  }
  __device__ static void compute(const Params& p, std::int64_t, std::uint8_t* in_bytes,
                                 std::uint8_t* out_bytes, std::uint32_t tid) {
    T* out = reinterpret_cast<T*>(out_bytes);
    const int col = static_cast<int>(tid) % G::kSliceCols;
    const int row0 = static_cast<int>(tid) / G::kSliceCols * G::kStripRows;
    T taps[9];
#pragma unroll
    for (int i = 0; i < 9; ++i) taps[i] = p.taps[i];

#pragma unroll
    for (int s = 0; s < G::kSlices; ++s) {
      const T* in = reinterpret_cast<const T*>(in_bytes + s * G::kSliceInBytes);
      T* out_col = out + s * G::kSliceCols + col;
      // slide down the strip: input row i feeds output rows i-2, i-1, i (filter rows 2, 1,
      // 0); output row o is complete after input row o + 2 and is written out at once
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
        if (i >= 2) out_col[(row0 + i - 2) * G::kTileCols] = acc[i - 2];
      }
    }
  }
  __device__ static void store(const Params& p, std::int64_t tile, const std::uint8_t* src) {
    std::int32_t tx, ty, image;
    p.order.coords(tile, tx, ty, image);
    // NOTE: rows under 16 bytes are all tail, and a tile that starts at or past the map's
    // last column has nothing for TMA: a store wholly outside the tensor kills the kernel
    // (docs/hardware.md H5).
    if (tx * G::kTileCols >= p.tail.main_cols) return;
    const std::int32_t c[3] = {tx * G::kTileCols, ty * kTileRows, image};
    store_tile<OutTile>(&p.out_map, src, c);
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
  using G = Geometry<T, L>;
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
  using G = Geometry<T, L>;
  static_assert(G::kInBytes % 128 == 0 && G::kOutBytes % 128 == 0,
                "TMA shared-memory boxes need 128-byte alignment (rule D1)");
  static_assert(G::kInCols * G::kE % 16 == 0, "box rows of 16-byte units");
  static_assert(L::kCtasPerSm * (kSmemBytes<T, L> + 1024) <= 228 * 1024,
                "the layout's default CTAs per SM must fit");
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900)
  extern __shared__ std::uint8_t smem_raw[];
  SharedStorage<T, L>* storage;
  if constexpr (L::kSharedSpace) {
    // round up by pointer arithmetic on the array itself: the result stays a .shared pointer
    const std::uint32_t pad = (128u - (ptx::smem_u32(smem_raw) & 127u)) & 127u;
    storage = reinterpret_cast<SharedStorage<T, L>*>(smem_raw + pad);
  } else {
    storage = reinterpret_cast<SharedStorage<T, L>*>(
        (reinterpret_cast<std::uintptr_t>(smem_raw) + 127) & ~std::uintptr_t{127});
  }
  run_tile_stream<StencilOp<T, L>>(p, storage->ring, storage->bars);
#else
  if (threadIdx.x == 0) printf("sm90_stencil3x3_kernel needs sm_90a\n");
  __trap();
#endif
}

template <class T, class L>
void launch(ConstTensorRef in, TensorRef out, const Filter3x3& filter, int ctas_per_sm, int panel,
            cudaStream_t stream) {
  using Op = StencilOp<T, L>;
  Params<T> p{};
  // step 2: maps (the input box: the tile plus its halo), tails, taps, tile order; the boxes
  // are the kernel's tile types, whose bytes arm its barriers
  set_up(p, in, out, filter, Op::InTile::box, L::kPromotion, Op::OutTile::box[0],
         Op::OutTile::box[1], panel);
  // step 3: launch
  allow_dynamic_smem<sm90_stencil3x3_kernel<T, L>>(kSmemBytes<T, L>);
  launch_persistent(sm90_stencil3x3_kernel<T, L>, kSmemBytes<T, L>, p, ctas_per_sm, stream,
                    "sm90_stencil3x3_kernel", L::kRun);
}

// CTAs of a layout that fit in one SM's 228 KB (1 KB of it reserved per CTA).
template <class T, class L>
constexpr int max_ctas() {
  return static_cast<int>(228 * 1024 / (kSmemBytes<T, L> + 1024));
}

// The checks of the arguments that need no driver (types, shapes, overlap, taps); throws
// ArgumentError naming the argument. The launchers then check the pointers
// (detail::require_device_pointer).
// check_operands: what either path takes (any alignment, empty views); check_arguments: what
// this TMA kernel takes (16-byte rules), for callers that launch it directly (bench/tune).
void check_operands(ConstTensorRef in, TensorRef out, const Filter3x3& filter);
void check_arguments(ConstTensorRef in, TensorRef out, const Filter3x3& filter);

}  // namespace tmakit::detail::stencil3x3
