// Matrix transpose through TMA for 1-, 2-, 4- and 8-byte elements: the device template and the
// host steps that launch one layout (README.md beside this file). A tile stream: the producer loads
// one or two (side by side) 128- or 256-row x 128-byte input boxes per tile with the 128B swizzle;
// consumer threads each move V x V blocks (V = 16 / element size) with 16-byte shared-memory
// accesses, transposing them in registers; one thread stores the output as 128-byte x (slices *
// 8V)-row boxes, also swizzled. Shared-memory offsets go through the one swizzle function
// (tmakit/swizzle.hpp).
#pragma once

#include <algorithm>
#include <cstdint>

#include "tmakit/device/barrier.hpp"
#include "tmakit/device/copy.hpp"
#include "tmakit/device/tile.hpp"
#include "common/grid_cap.hpp"
#include "tmakit/kernels/detail/launch_support.hpp"
#include "tmakit/kernels/detail/sm90_tile_stream.cuh"
#include "tmakit/kernels/transpose.hpp"
#include "tmakit/swizzle.hpp"
#include "transpose_mapping.hpp"

namespace tmakit::detail::transpose {

using stream::RowTail;
using stream::run_tile_stream;
using stream::StreamBarriers;
using stream::TileOrder;
using Swz = Swizzled<Swizzle::bytes128>;

// A buffer layout of the tile stream, a template argument of the kernel (the launcher's plan
// picks one per element size; bench/tune/ compiles more to compare).
template <int Stages, int OutStages, int Lag, int CtasPerSm, int TileRows, int Slices = 1,
          bool InPlace = false, int Run = 0>
struct Layout {
  static constexpr int kStages = Stages;  // input boxes in flight
  // tiles per CTA, in one run (grid = runs); 0: persistent (grid = CTAs that fit). A single
  // stage always means one tile per CTA. With a run, CtasPerSm is the residency the
  // registers must allow (__launch_bounds__'s minimum).
  static constexpr int kRun = Stages == 1 ? 1 : Run;
  static constexpr int kOutStages = OutStages;  // 0: each stage holds its output tile
  static constexpr int kReleaseLag = Lag;       // paired: stage freed this many tiles late
  static constexpr int kCtasPerSm = CtasPerSm;
  static constexpr std::uint32_t kBoxRows = TileRows;  // input rows per tile (128 or 256)
  static constexpr int kSlices = Slices;               // 128-byte input boxes side by side
  // NOTE: in place, the output tile overwrites its own input stage (every consumer reads
  // its blocks into registers, a named barrier, then all write): a stage is one tile, so
  // the same shared memory holds twice the tiles of a paired layout.
  static constexpr bool kInPlace = InPlace;
  // NOTE: an output row gets kBoxRows elements from one tile, an input row Slices * 128
  // bytes: the two pieces a tile moves contiguously in DRAM.
  static constexpr std::uint32_t kTileBytes = kBoxRows * 128 * Slices;  // swizzle spans
};

// The layouts the plan picks (transpose_plan.hpp): one tile per CTA (grid = tiles), in place
// (the output tile overwrites its input stage), 128 input rows; 256 bytes wide (two boxes
// side by side) with three CTAs' registers reserved, or 128 bytes wide with four.
using OneTileInPlace128x256 = Layout<1, 0, 0, 3, 128, 2, true>;
using OneTileInPlace128x128 = Layout<1, 0, 0, 4, 128, 1, true>;

struct Params {
  CUtensorMap in_map;
  CUtensorMap out_map;
  TileOrder order;
  RowTail tail;
};

// Word w of a 16-byte vector; w is a compile-time constant after unrolling.
__device__ __forceinline__ std::uint32_t word(const uint4& v, int w) {
  return w == 0 ? v.x : w == 1 ? v.y : w == 2 ? v.z : v.w;
}

// Transposes a V x V block held as V rows of 16 bytes: out[k] = column k of the rows.
template <int E>
__device__ __forceinline__ void transpose_block(const uint4 (&in)[16 / E], uint4 (&out)[16 / E]);

template <>
__device__ __forceinline__ void transpose_block<8>(const uint4 (&in)[2], uint4 (&out)[2]) {
  out[0] = make_uint4(in[0].x, in[0].y, in[1].x, in[1].y);
  out[1] = make_uint4(in[0].z, in[0].w, in[1].z, in[1].w);
}

template <>
__device__ __forceinline__ void transpose_block<4>(const uint4 (&in)[4], uint4 (&out)[4]) {
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    out[k] = make_uint4(word(in[0], k), word(in[1], k), word(in[2], k), word(in[3], k));
  }
}

template <>
__device__ __forceinline__ void transpose_block<2>(const uint4 (&in)[8], uint4 (&out)[8]) {
  // out word m of column k = (row 2m, row 2m+1) halves k % 2 of word k / 2.
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    const std::uint32_t sel = (k % 2 == 0) ? 0x5410u : 0x7632u;
    std::uint32_t w[4];
#pragma unroll
    for (int m = 0; m < 4; ++m) {
      w[m] = __byte_perm(word(in[2 * m], k / 2), word(in[2 * m + 1], k / 2), sel);
    }
    out[k] = make_uint4(w[0], w[1], w[2], w[3]);
  }
}

template <>
__device__ __forceinline__ void transpose_block<1>(const uint4 (&in)[16], uint4 (&out)[16]) {
  // out word m of column k = byte k % 4 of word k / 4 of rows 4m .. 4m+3.
#pragma unroll
  for (int k = 0; k < 16; ++k) {
    const std::uint32_t b = k % 4;
    const std::uint32_t pair = b | ((4 + b) << 4);  // byte b of x, then byte b of y
    std::uint32_t w[4];
#pragma unroll
    for (int m = 0; m < 4; ++m) {
      const std::uint32_t lo =
          __byte_perm(word(in[4 * m], k / 4), word(in[4 * m + 1], k / 4), pair);
      const std::uint32_t hi =
          __byte_perm(word(in[4 * m + 2], k / 4), word(in[4 * m + 3], k / 4), pair);
      w[m] = __byte_perm(lo, hi, 0x5410u);
    }
    out[k] = make_uint4(w[0], w[1], w[2], w[3]);
  }
}

// Consumer warps: paired and separate layouts 4 (2 for 1-byte elements in one slice; two
// slices spill at 2); in place every thread holds all its blocks in registers across the
// barrier, so up to 8 warps share them.
template <int E, class L, class Map>
constexpr int consumer_warps() {
  if constexpr (L::kInPlace) {
    return Map::kBlocksPerTile / 32 < 8 ? Map::kBlocksPerTile / 32 : 8;
  } else {
    return E == 1 && L::kSlices == 1 ? 2 : 4;
  }
}

template <int E, class L>
struct TransposeOp {
  using Params = transpose::Params;
  using Map = BlockMapping<E, static_cast<int>(L::kBoxRows), L::kSlices>;
  static constexpr std::uint32_t kBoxRows = L::kBoxRows;
  static constexpr std::uint32_t kTileBytes = L::kTileBytes;
  static constexpr int V = Map::kV;
  static constexpr int kStages = L::kStages;
  static constexpr int kOutStages = L::kOutStages;
  static constexpr int kReleaseLag = L::kReleaseLag;
  static constexpr int kRun = L::kRun;
  static constexpr int kConsumerWarps = consumer_warps<E, L, Map>();
  static constexpr std::uint32_t kInBytes = kTileBytes;
  static constexpr std::uint32_t kOutBytes = L::kInPlace ? 0u : kTileBytes;  // 0: in place
  static constexpr std::int32_t kOutRows = Map::kSlices * Map::kGroupElems;  // per tile
  static constexpr int kBlocksPerThread = Map::kBlocksPerTile / (32 * kConsumerWarps);
  static_assert(Map::kTileBytes == kTileBytes, "the mapping and the layout agree on the tile");
  static_assert(kBlocksPerThread >= 1 &&
                    kBlocksPerThread * 32 * kConsumerWarps == Map::kBlocksPerTile,
                "the consumer threads must split a tile's blocks evenly");
  static_assert(!L::kInPlace || kBlocksPerThread * V <= 16,
                "in place, a thread's blocks must fit in registers (at most 64 words)");
  // One input slice: kBoxRows rows of 128 bytes; one output group: Slices * 8V rows of 128
  // bytes. Both swizzled, both laid out back to back in the tile as the mapping places them;
  // elements travel as unsigned words of their size (the maps' transport_type).
  using InTile = Tile<stream::ElementWord<E>, Swizzle::bytes128, Map::kGroupElems, kBoxRows>;
  using OutTile = Tile<stream::ElementWord<E>, Swizzle::bytes128, Map::kGroupElems, kOutRows>;
  static_assert(InTile::smem_bytes == Map::kSliceBytes && OutTile::smem_bytes == Map::kOutBoxBytes,
                "the tiles and the block mapping agree on where each box sits");

  __device__ static std::int64_t tile_count(const Params& p) {
    return static_cast<std::int64_t>(p.order.tiles_x) * p.order.tiles_y;
  }
  // NOTE: a box wholly right of the tensor is zero-filled and still counts its bytes
  __device__ static std::uint32_t tx_bytes(const Params&) {
    return Map::kSlices * InTile::tx_bytes;
  }
  __device__ static void prefetch(const Params& p) {
    prefetch_tensor_map(&p.in_map);
    prefetch_tensor_map(&p.out_map);
  }
  __device__ static void load(const Params& p, std::int64_t tile, std::uint8_t* dst,
                              Barrier& full) {
    std::int32_t tx, ty, image;
    p.order.coords(tile, tx, ty, image);
    // one box per 128-byte slice, all on the stage's barrier
#pragma unroll
    for (int s = 0; s < Map::kSlices; ++s) {
      const std::int32_t c[2] = {(tx * Map::kSlices + s) * Map::kGroupElems,
                                 ty * static_cast<std::int32_t>(kBoxRows)};
      load_tile<InTile>(dst + s * InTile::smem_bytes, &p.in_map, full, c);
    }
  }
  // Reads V rows of 16 bytes (one chunk of each) of block number b, transposed into cols.
  __device__ static void read_block(const std::uint8_t* in, std::uint32_t b, uint4 (&cols)[V]) {
    const BlockCoord bc = Map::block(b);
    uint4 rows[V];
#pragma unroll
    for (int i = 0; i < V; ++i) {
      rows[i] = *reinterpret_cast<const uint4*>(in + Swz::apply(Map::in_offset(bc, i)));
    }
    transpose_block<E>(rows, cols);
  }
  // Writes the V output rows' chunks of block number b.
  __device__ static void write_block(std::uint8_t* out, std::uint32_t b, const uint4 (&cols)[V]) {
    const BlockCoord bc = Map::block(b);
#pragma unroll
    for (int k = 0; k < V; ++k) {
      *reinterpret_cast<uint4*>(out + Swz::apply(Map::out_offset(bc, k))) = cols[k];
    }
  }
  __device__ static void compute(const Params&, std::int64_t, std::uint8_t* in, std::uint8_t* out,
                                 std::uint32_t tid) {
    constexpr std::uint32_t kThreads = 32u * kConsumerWarps;
    if constexpr (L::kInPlace) {
      // read every block of this thread, wait until all consumers have read theirs, write
      uint4 cols[kBlocksPerThread][V];
#pragma unroll
      for (int n = 0; n < kBlocksPerThread; ++n) read_block(in, tid + n * kThreads, cols[n]);
      named_barrier_sync(1, kThreads);  // NOTE: the writes land on blocks other threads read
#pragma unroll
      for (int n = 0; n < kBlocksPerThread; ++n) write_block(out, tid + n * kThreads, cols[n]);
    } else {
#pragma unroll
      for (int n = 0; n < kBlocksPerThread; ++n) {
        uint4 cols[V];
        read_block(in, tid + n * kThreads, cols);
        write_block(out, tid + n * kThreads, cols);
      }
    }
  }
  __device__ static void store(const Params& p, std::int64_t tile, const std::uint8_t* src) {
    if (p.tail.main_cols == 0) return;  // output rows under 16 bytes: all of it is tail
    std::int32_t tx, ty, image;
    p.order.coords(tile, tx, ty, image);
    // one box per group: the Slices * 8V output rows of the tile x 128 bytes
#pragma unroll
    for (int g = 0; g < Map::kGroups; ++g) {
      const std::int32_t c[2] = {ty * static_cast<std::int32_t>(kBoxRows) + g * Map::kGroupElems,
                                 tx * kOutRows};
      // NOTE: a store box wholly outside the tensor kills the kernel (docs/hardware.md H5)
      if (c[0] >= p.tail.main_cols) break;
      store_tile<OutTile>(&p.out_map, src + g * OutTile::smem_bytes, c);
    }
  }
  __device__ static void store_tail(const Params& p, std::int64_t tile, const std::uint8_t* out,
                                    std::uint32_t tid, std::uint32_t threads) {
    if (p.tail.main_cols == p.tail.cols) return;
    std::int32_t tx, ty, image;
    p.order.coords(tile, tx, ty, image);
    // output tile: Slices * 8V rows x kBoxRows columns, one swizzled box per 8V columns
    stream::store_row_tail<E>(
        p.tail, ty * static_cast<std::int32_t>(kBoxRows), tx * kOutRows, 0,
        static_cast<std::int32_t>(kBoxRows), kOutRows, out,
        [](std::int32_t r, std::int32_t c) {
          return Swz::apply(Map::out_element_offset(static_cast<std::uint32_t>(r),
                                                    static_cast<std::uint32_t>(c)));
        },
        tid, threads);
  }
};

// The ring as the tile stream lays it out (separate: input boxes, then output buffers;
// paired: box then output tile in each stage; in place: one tile per stage), then the
// barriers.
template <class L>
struct alignas(1024) SharedStorage {
  static constexpr int kBuffers = L::kInPlace          ? L::kStages
                                  : L::kOutStages == 0 ? 2 * L::kStages
                                                       : L::kStages + L::kOutStages;
  std::uint8_t ring[kBuffers][L::kTileBytes];  // each 1024-aligned (rule D2)
  StreamBarriers<L::kStages> bars;
};
template <class L>
constexpr std::size_t kSmemBytes = sizeof(SharedStorage<L>) + 1024;  // + alignment slack
// CTAs of this layout that fit in one SM's 228 KB (1 KB of it reserved per CTA)
template <class L>
constexpr int kMaxCtasPerSm = static_cast<int>(228 * 1024 / (kSmemBytes<L> + 1024));

template <int E, class L>
__global__ void __launch_bounds__(32 * (1 + TransposeOp<E, L>::kConsumerWarps),
                                  L::kRun > 0 ? L::kCtasPerSm : 1)
    sm90_transpose_kernel(const __grid_constant__ Params p) {
  static_assert(E == 1 || E == 2 || E == 4 || E == 8, "elements of 1, 2, 4 or 8 bytes");
  static_assert(L::kTileBytes % Swz::repeat_bytes == 0, "tiles must sit on the swizzle repeat");
  static_assert(kMaxCtasPerSm<L> >= L::kCtasPerSm, "the default CTAs per SM must fit");
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900)
  extern __shared__ std::uint8_t smem_raw[];
  auto* storage = reinterpret_cast<SharedStorage<L>*>(
      (reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t{1023});
  run_tile_stream<TransposeOp<E, L>>(p, &storage->ring[0][0], storage->bars);
#else
  if (threadIdx.x == 0) printf("sm90_transpose_kernel needs sm_90a\n");
  __trap();
#endif
}

template <int E, class L>
void launch(const Params& p, unsigned grid, cudaStream_t stream) {
  allow_dynamic_smem<sm90_transpose_kernel<E, L>>(kSmemBytes<L>);
  sm90_transpose_kernel<E, L>
      <<<grid, 32 * (1 + TransposeOp<E, L>::kConsumerWarps), kSmemBytes<L>, stream>>>(p);
  check_launch("sm90_transpose_kernel");
}

// What the host steps need of a layout.
struct LayoutFacts {
  int run;  // tiles per CTA (grid = runs); 0: persistent
  std::uint32_t box_rows;
  std::uint32_t slices;  // 128-byte input boxes side by side per tile
  int ctas_per_sm;
  int max_ctas_per_sm;
};
template <class L>
constexpr LayoutFacts facts() {
  return {L::kRun, L::kBoxRows, static_cast<std::uint32_t>(L::kSlices), L::kCtasPerSm,
          kMaxCtasPerSm<L>};
}

inline DataType transport_type(std::uint32_t esize) {
  return esize == 1   ? DataType::uint8
         : esize == 2 ? DataType::uint16
         : esize == 4 ? DataType::uint32
                      : DataType::uint64;
}

// Steps 2 and 3 of a launch of `layout` on checked arguments: the maps, the tile order (panels
// of `panel_tiles` tile rows; 0: one panel, tiles walk down the columns), the grid, then
// `launch_kernel(params, grid, stream)` (launch<E, L> for the layout and element size).
template <class LaunchKernel>
void launch_with(const LayoutFacts& layout, LaunchKernel&& launch_kernel, ConstTensorRef in,
                 TensorRef out, std::uint32_t esize, int ctas_per_sm, int panel_tiles,
                 cudaStream_t stream) {
  // step 2: tensor maps: input boxes of 128 B x box_rows rows, output boxes of 128 B x
  // slices * 8V rows
  const DataType t = transport_type(esize);
  const std::uint32_t group = 128 / esize;  // elements in one 128-byte row = 8V
  Params p{};
  p.in_map = cached_tensor_map(view_spec(in, t, {group, layout.box_rows, 1}, Swizzle::bytes128));
  // NOTE: the output map stops at the row's last full 16 bytes; store_tail writes the rest.
  const std::uint64_t main_cols = tma_store_cols(out.cols, esize);
  if (main_cols > 0) {
    TensorMapSpec out_spec =
        view_spec(out, t, {group, layout.slices * group, 1}, Swizzle::bytes128);
    out_spec.global_dim[0] = main_cols;
    p.out_map = cached_tensor_map(out_spec);
  }
  p.tail = {static_cast<std::uint8_t*>(out.data),
            out.row_pitch(),
            0,
            static_cast<std::int32_t>(out.rows),
            static_cast<std::int32_t>(out.cols),
            static_cast<std::int32_t>(main_cols)};
  const auto tiles_y = static_cast<std::int32_t>((in.rows + layout.box_rows - 1) / layout.box_rows);
  const std::uint64_t tile_cols = static_cast<std::uint64_t>(layout.slices) * group;
  // NOTE: by default one panel spans every tile row, so tiles walk down the columns: the
  // tiles in flight write neighbouring pieces of the same output rows, which measured 0.3-2%
  // faster than the row-major walk on H100 and 2-4% on H200 (README).
  const int panel = panel_tiles > 0 ? std::min(panel_tiles, tiles_y) : tiles_y;
  p.order = {static_cast<std::int32_t>((in.cols + tile_cols - 1) / tile_cols), tiles_y, panel};

  // step 3: launch
  const std::int64_t tiles = static_cast<std::int64_t>(p.order.tiles_x) * p.order.tiles_y;
  const unsigned grid = layout.run > 0 ? tile_grid(tiles, layout.run, grid_cap())
                                       : persistent_grid(tiles, ctas_per_sm);
  launch_kernel(p, grid, stream);
}

// The checks of the arguments that need no driver (shapes, element sizes, overlap); throws
// ArgumentError naming the argument. The launchers then check the pointers
// (detail::require_device_pointer).
// check_operands: what either path takes (any alignment, empty views); check_arguments: what
// this TMA kernel takes (16-byte rules), for callers that launch it directly (bench/tune).
void check_operands(ConstTensorRef in, TensorRef out);
void check_arguments(ConstTensorRef in, TensorRef out);

}  // namespace tmakit::detail::transpose
