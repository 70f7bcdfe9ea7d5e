// The tile stream shared by the memory-bound kernels (elementwise, transpose, stencil3x3):
// one producer warp loads tiles with TMA into a ring of shared-memory stages, consumer warps
// turn each input stage into an output stage, one consumer thread stores it with TMA. A CTA
// takes one tile (grid = tiles: the defaults, measured fastest), a run of kRun consecutive
// tiles (grid = runs), or, persistent, tiles blockIdx.x, blockIdx.x + gridDim.x, ...
//
//   producer (warp 0, lane 0)            consumers (warps 1..C)
//   wait empty[s]                        wait full[s]
//   arm full[s] with the box bytes       Op::compute(in[s] -> out[o])
//   Op::load(tile, in[s], full[s])       fence.proxy.async; bar.sync among consumers
//                                        thread 0: Op::store(out[o]); commit; arrive empty[s]
//                                        all: Op::store_tail (the last partial 16 bytes of
//                                        each row, with ordinary stores)
//
// Three buffer layouts, chosen by the Op:
// - in place (kOutBytes == 0): the output overwrites the input stage;
// - paired (kOutBytes > 0, kOutStages == 0): each stage holds an input box and its output
//   tile side by side;
// - separate (kOutStages >= 2): kStages input boxes and kOutStages output buffers; an input
//   stage is free as soon as every consumer has read it, so loads run kStages - 1 tiles ahead.
// In place and paired, a stage is free once its store has read shared memory, checked
// kReleaseLag tiles later (wait_group.read<kReleaseLag>), so that many stores stay in flight;
// with kReleaseLag 0 (a ring of one stage) once the store and every consumer's store_tail
// have read it, and only when the CTA has another tile to load into it.
//
// NOTE: a TMA store writes whole 16-byte chunks: when a row's bytes are not a multiple of 16,
// the chunk holding its end is written past the tensor's last column (seen on H200; Triton's
// documentation warns of it too). Output maps therefore end at the last full 16 bytes of a
// row and store_tail writes the rest element by element.
//
// An Op supplies: Params; kStages, kOutStages, kReleaseLag, kConsumerWarps, kInBytes, (kRun,)
// kOutBytes; tile_count(p), tx_bytes(p) (the bytes of one stage's loads, which arm its
// barrier), prefetch(p), load(p, tile, stage, full) (the stage's loads, completing on
// `full`), compute(...), store(p, tile, out) (the tile's stores) and store_tail(...).
// Loads and stores go through the copy helpers (device/copy.hpp) with the Op's Tile types, so
// in debug mode (TMAKIT_DEBUG_WAITS) their buffers and coordinates are checked. The kernels
// keep the anatomy (static checks, shared storage, arch guard) and call run_tile_stream<Op>.
// The ring is a tmakit::Pipeline (device/pipeline.hpp), so in debug mode every wait of the
// stream is bounded and reported.
#pragma once

#include <cstdint>
#include <type_traits>

#include "tmakit/device/barrier.hpp"
#include "tmakit/device/copy.hpp"
#include "tmakit/device/pipeline.hpp"

namespace tmakit::detail::stream {

// ---- tile order -------------------------------------------------------------------------

// Tiles of one image walked in panels of `panel` tile rows: down a panel's column of tiles,
// then the next column (panel 1: row-major). NOTE: a transpose reads rows of its input and
// writes rows of its output; with one panel of every tile row, the tiles in flight write
// neighbouring pieces of the same output rows (measured faster than the row-major walk,
// kernels/transpose/README.md).
struct TileOrder {
  std::int32_t tiles_x;
  std::int32_t tiles_y;
  std::int32_t panel;  // 1: plain row-major order

  __device__ __forceinline__ void coords(std::int64_t tile, std::int32_t& tx, std::int32_t& ty,
                                         std::int32_t& image) const {
    const std::int64_t per_image = static_cast<std::int64_t>(tiles_x) * tiles_y;
    image = static_cast<std::int32_t>(tile / per_image);
    const std::int64_t t = tile - image * per_image;
    const std::int64_t per_panel = static_cast<std::int64_t>(tiles_x) * panel;
    const auto p = static_cast<std::int32_t>(t / per_panel);
    const auto r = static_cast<std::int32_t>(t - p * per_panel);
    const std::int32_t rows_here = min(panel, tiles_y - p * panel);
    ty = p * panel + r % rows_here;
    tx = r / rows_here;
  }
};

// ---- row tails ----------------------------------------------------------------------

// The unsigned type whose bits stand for an element of E bytes where only bits are moved:
// the row tails' copies, the transpose's tiles and maps.
template <int E>
using ElementWord = std::conditional_t<
    E == 1, std::uint8_t,
    std::conditional_t<E == 2, std::uint16_t,
                       std::conditional_t<E == 4, std::uint32_t, std::uint64_t>>>;

// Where a tile's output goes for the part TMA cannot store: columns [main_cols, cols).
struct RowTail {
  std::uint8_t* out;          // global output, first element of image 0
  std::uint64_t row_pitch;    // bytes
  std::uint64_t image_pitch;  // bytes
  std::int32_t rows;
  std::int32_t cols;
  std::int32_t main_cols;     // columns the output map covers (a multiple of 16 bytes)
};

// Copies the tile's elements in columns [main_cols, cols) from shared memory with ordinary
// stores; `smem_offset(r, c)` gives the byte offset of tile element (r, c). All consumer
// threads call it; nothing happens for tiles left of main_cols.
template <int E, class SmemOffset>
__device__ __forceinline__ void store_row_tail(const RowTail& t, std::int32_t x0, std::int32_t y0,
                                               std::int32_t image, std::int32_t tile_cols,
                                               std::int32_t tile_rows, const std::uint8_t* smem,
                                               SmemOffset smem_offset, std::uint32_t tid,
                                               std::uint32_t threads) {
  // NOTE: x0 + tile_cols stays below 2^31: no view with an extent past kMaxExtent reaches a
  // TMA kernel (plain_path.hpp, rule P6; the tuning lab's check_view refuses it). Written as min(t.cols - x0, tile_cols), the int32 add measured
  // slower (the code of the whole loop changed).
  const std::int32_t c_begin = max(t.main_cols, x0) - x0;
  const std::int32_t c_end = min(t.cols, x0 + tile_cols) - x0;
  if (c_begin >= c_end) return;
  const std::int32_t width = c_end - c_begin;
  const std::int32_t height = min(t.rows - y0, tile_rows);
  using Word = ElementWord<E>;
  for (std::int32_t i = static_cast<std::int32_t>(tid); i < width * height;
       i += static_cast<std::int32_t>(threads)) {
    const std::int32_t r = i / width;
    const std::int32_t c = c_begin + i % width;
    std::uint8_t* dst = t.out + image * t.image_pitch + (y0 + r) * t.row_pitch +
                        static_cast<std::uint64_t>(x0 + c) * E;
    *reinterpret_cast<Word*>(dst) = *reinterpret_cast<const Word*>(smem + smem_offset(r, c));
  }
}

// ---- which tiles a CTA takes -----------------------------------------------------------

// Runs of kRun consecutive tiles, the grid's runs in turn; body(tile, k) for the CTA's k-th
// tile. kRun 0 or 1 is the stride walk blockIdx.x, blockIdx.x + gridDim.x, ...: persistent
// layouts (grid = CTAs that fit) and one tile per CTA (grid = tiles) alike.
template <int kRun, class Body>
__device__ __forceinline__ void for_each_tile(std::int64_t tiles, Body&& body) {
  int k = 0;
  if constexpr (kRun <= 1) {
    for (std::int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x, ++k) body(tile, k);
  } else {
    for (std::int64_t run = blockIdx.x; run * kRun < tiles; run += gridDim.x) {
      const std::int64_t end = min(tiles, (run + 1) * kRun);
      for (std::int64_t tile = run * kRun; tile < end; ++tile, ++k) body(tile, k);
    }
  }
}

// An Op's run of tiles per CTA (kRun, 0 when it names none).
template <class Op>
constexpr int run_of() {
  if constexpr (requires { Op::kRun; }) {
    return Op::kRun;
  } else {
    return 0;
  }
}

// ---- the stream -------------------------------------------------------------------------

// full[s]: the producer armed it and TMA completed the load; empty[s]: the stage's store has
// read its source (or, separate, every consumer has read the input box).
template <int Stages>
using StreamBarriers = PipelineBarriers<Stages>;

template <class Op>
__device__ __forceinline__ void run_tile_stream(const typename Op::Params& p,
                                                std::uint8_t* stages_smem,
                                                StreamBarriers<Op::kStages>& bars) {
  constexpr int kStages = Op::kStages;
  constexpr bool kInPlace = Op::kOutBytes == 0;
  constexpr bool kPaired = !kInPlace && Op::kOutStages == 0;
  constexpr bool kLateRelease = kInPlace || kPaired;  // a stage waits for its store's read
  constexpr int kOutStages = kLateRelease ? 1 : Op::kOutStages;
  constexpr int kLag = Op::kReleaseLag;
  // a paired stage is input box then output tile; otherwise stages are input boxes only
  constexpr std::uint32_t kStageBytes = Op::kInBytes + (kPaired ? Op::kOutBytes : 0u);
  static_assert(kLateRelease || kOutStages >= 2, "separate outputs need two buffers or more");
  // NOTE: kLag 0 frees a stage once its own store and tail have read it: a ring of one stage,
  // for layouts that run one tile per CTA and leave the overlap to the CTAs sharing an SM.
  static_assert(!kLateRelease || (kLag >= 0 && kLag < kStages),
                "a stage freed kReleaseLag tiles late needs kStages > kReleaseLag >= 0");
  static_assert(!kLateRelease || kLag >= 1 || kStages == 1,
                "kReleaseLag 0 needs a single stage (its release waits for the row tails)");
  static_assert(kStageBytes % 128 == 0 && Op::kInBytes % 128 == 0,
                "TMA shared-memory boxes need 128-byte alignment (rule D1)");
  constexpr std::uint32_t kConsumerThreads = 32u * Op::kConsumerWarps;
  std::uint8_t* const out_smem = stages_smem + kStages * kStageBytes;
  const int warp = static_cast<int>(threadIdx.x / 32);
  const int lane = static_cast<int>(threadIdx.x % 32);
  const std::int64_t tiles = Op::tile_count(p);

  // step 1: barrier init by one thread, made visible to the async proxy
  Pipeline<kStages> pipe(bars);
  using State = typename Pipeline<kStages>::State;
  if (threadIdx.x == 0) {
    pipe.init(1);
    fence_barrier_init();
    Op::prefetch(p);
  }
  __syncthreads();

  if (warp == 0) {
    // step 2 (producer): fill stages as soon as their previous store has read them
    if (lane == 0) {
      const std::uint32_t tx_bytes = Op::tx_bytes(p);
      State st;  // NOTE: a fresh ring finds every stage free on the first trip
      for_each_tile<run_of<Op>()>(tiles, [&](std::int64_t tile, int) {
        Barrier& full = pipe.producer_arm(st, tx_bytes);
        Op::load(p, tile, stages_smem + st.stage * kStageBytes, full);
        st.advance();
      });
    }
    return;
  }

  // step 3 (consumers): transform each stage, then one thread stores it
  const std::uint32_t tid = threadIdx.x - 32;
  State st;  // the stage of this tile
  for_each_tile<run_of<Op>()>(tiles, [&](std::int64_t tile, int k) {
    std::uint8_t* in = stages_smem + st.stage * kStageBytes;
    std::uint8_t* out = kInPlace  ? in
                        : kPaired ? in + Op::kInBytes
                                  : out_smem + (k % kOutStages) * Op::kOutBytes;
    pipe.consumer_wait(st);
    Op::compute(p, tile, in, out, tid);

    // NOTE: generic-proxy writes must be fenced by each writer before the async proxy (the
    // TMA store) reads them; the named barrier then orders all writers before the store.
    fence_view_async_shared();
    if constexpr (!kLateRelease) {
      // the next tile's output buffer is free once the store that last used it has read it
      if (tid == 0) store_wait_read<kOutStages - 2>();
    }
    named_barrier_sync(1, kConsumerThreads);
    if (tid == 0) {
      Op::store(p, tile, out);
      store_commit();
      if constexpr (kLateRelease && kLag > 0) {
        // release the stage of tile k - kLag once its store has read shared memory (kLag
        // stores stay in flight, keeping the write stream busy while this thread goes on;
        // every consumer finished that tile's store_tail before this tile's barrier)
        if (k >= kLag) {
          store_wait_read<kLag>();
          pipe.consumer_release(st.behind(kLag));
        }
      } else if constexpr (!kLateRelease) {
        pipe.consumer_release(st);  // every consumer has read in[s]
      }
    }
    Op::store_tail(p, tile, out, tid, kConsumerThreads);
    if constexpr (kLateRelease && kLag == 0) {
      // one stage, one tile per CTA: a next tile (only when the grid was capped) may load
      // into the stage once the store and every consumer's store_tail have read it
      if (tile + gridDim.x < tiles) {
        named_barrier_sync(1, kConsumerThreads);
        if (tid == 0) {
          store_wait_read<0>();
          pipe.consumer_release(st);
        }
      }
    }
    st.advance();
  });
  // step 4: a CTA may not exit while a store still reads its shared memory
  if (tid == 0) store_wait<0>();
}

}  // namespace tmakit::detail::stream
