// The 3x3 stencil's tuning lab: every layout measured so far (kernels/stencil3x3/README.md),
// selectable at run time by number so that layouts compare in one benchmark run. Compiled into
// the benchmark only; the library ships the layouts its plan picks (variants 32 and 34).
#include <array>
#include <string>
#include <type_traits>

#include "stencil3x3/sm90_stencil3x3.cuh"
#include "stencil3x3/stencil3x3_plan.hpp"
#include "tune/tuning.hpp"

namespace tmakit::detail::stencil3x3 {

// NOTE: Layout0 (variant 22, the fp64 default on H200) measured fastest of the first five on H200
// (README): 4 paired stages freed one tile late, 2 CTAs per SM. Separate input/output buffers
// freed inputs early but measured slower (fp32 0.80 vs 0.89-0.98 of memcpy, fp64 0.64 vs
// 0.85), as did deeper rings.
using Layout0 = Layout<4, 0, 1, 32>;
using Layout1 = Layout<6, 0, 2, 32>;  // deeper paired ring, two stores in flight
using Layout2 = Layout<6, 3, 1, 32>;  // separate: 6 input boxes, 3 output buffers
using Layout3 = Layout<3, 0, 1, 64>;  // taller tiles: less halo re-read per output row
using Layout4 = Layout<3, 0, 1, 32>;  // shallower paired ring
// Wider tiles: longer runs of contiguous bytes per box row, fewer boxes per byte moved.
// NOTE: a box row holds at most 256 elements (rule T7), so 1 KB fp32 tiles (256 columns plus
// a halo) load as two 512-byte slices; fp64 (128 columns plus 4) fits one box.
template <class T, int TileRows, int Stages, int Ctas>
using Wide1K = Layout<Stages, 0, 1, TileRows, 1024, sizeof(T) == 4 ? 2 : 1, Ctas>;
template <class T>
using Layout5 = Layout<3, 0, 1, 32, 512>;  // 32 x 512 B
template <class T>
using Layout6 = Layout<4, 0, 1, 16, 512>;  // 16 x 512 B
template <class T>
using Layout7 = Wide1K<T, 16, 3, 2>;  // 16 x 1 KB
template <class T>
using Layout8 = Wide1K<T, 32, 3, 1>;  // 32 x 1 KB, 1 CTA
template <class T>
using Layout9 = Wide1K<T, 8, 4, 2>;  // 8 x 1 KB
// Variant 0 with the input map's L2 promotion off / 128 bytes (the halo's 16-byte edges
// otherwise pull 256-byte L2 fetches), a deeper ring, two stores in flight.
using Layout14 = Layout<4, 0, 1, 32, 256, 1, 2, L2Promotion::none>;
using Layout15 = Layout<4, 0, 1, 32, 256, 1, 2, L2Promotion::bytes128>;
using Layout16 = Layout<5, 0, 1, 32>;
using Layout17 = Layout<4, 0, 2, 32>;
// NOTE: ncu's source view of variant 0 showed its stage reads and writes as generic LD/ST
// (the aligned base went through an integer, so the compiler lost the address space): the
// consumers' fused multiply-adds waited on the long scoreboard. These keep the pointer
// derived from the __shared__ array, so the compiler emits LDS/STS.
using Layout18 = Layout<4, 0, 1, 32, 256, 1, 2, L2Promotion::bytes256, true>;
using Layout19 = Layout<3, 0, 1, 32, 256, 1, 3, L2Promotion::bytes256, true>;  // 3 CTAs/SM
using Layout20 = Layout<4, 0, 1, 16, 512, 1, 2, L2Promotion::bytes256, true>;  // 6, .shared
using Layout21 = Layout<3, 0, 1, 32, 512, 1, 2, L2Promotion::bytes256, true>;  // 5, .shared
// One tile per CTA (a single paired stage, grid = tiles): as many CTAs per SM as fit, the
// hardware handing tiles out in order. (Ctas is only the static check's floor here.)
template <int TileRows, int TileBytes, int Slices = 1, bool SharedSpace = false>
using OneTile = Layout<1, 0, 0, TileRows, TileBytes, Slices, 1, L2Promotion::bytes256, SharedSpace>;
using Layout23 = OneTile<32, 256>;
using Layout24 = OneTile<32, 512>;
template <class T>
using Layout25 = OneTile<32, 1024, sizeof(T) == 4 ? 2 : 1>;
using Layout26 = OneTile<64, 256>;
using Layout27 = OneTile<32, 256, 1, true>;
using Layout28 = OneTile<16, 512>;
using Layout29 = OneTile<64, 512>;
template <class T>
using Layout30 = OneTile<16, 1024, sizeof(T) == 4 ? 2 : 1>;
template <class T>
using Layout31 = OneTile<8, 1024, sizeof(T) == 4 ? 2 : 1>;
// Runs of consecutive tiles per CTA through a ring of two paired stages (grid = runs)
template <int Run, int TileRows = 32, int TileBytes = 512, int Slices = 1>
using TwoStageRun =
    Layout<2, 0, 1, TileRows, TileBytes, Slices, 1, L2Promotion::bytes256, false, Run>;
using Layout32 = TwoStageRun<2>;
using Layout33 = TwoStageRun<4>;
using Layout34 = TwoStageRun<2, 16>;  // 16 x 512 B
using Layout35 = TwoStageRun<3>;
template <class T>
using Layout36 = TwoStageRun<2, 16, 1024, sizeof(T) == 4 ? 2 : 1>;  // 16 x 1 KB
// NOTE: variant 0 (the default) names no layout of its own: default_variant() picks one per
// memory system, Layout32 or Layout34 since 2026-11-22. Before, the persistent rings split
// the two parts measured: on H200 (4.8 TB/s) Layout19 for fp32 and Layout0 (variant 22) for
// fp64; on H100 (3.35 TB/s) the 1 KB tiles of Layout8 for fp32 and the row walk of
// RowLayout13 for fp64.
// (variants 10..13: the row walk further down)
constexpr int kVariants = tune::kStencilVariants;
static_assert(std::is_same_v<Layout32, RunRows32> && std::is_same_v<Layout34, RunRows16>,
              "variants 32 and 34 are the layouts the library's plan picks");

// ---- row walk: each input value crosses L2 once per tile (variants 10..13) ---------------
//
// NOTE: ncu on H200 (README) put the tile stream at ~90% of L2 throughput with DRAM at ~77%:
// the 16-byte side halos cost a quarter more L2 sectors than the tile (288 of every 256 bytes,
// in four 128-byte lines instead of two). Here boxes are exactly the tile's columns (plus the
// row above and below), and the left/right neighbour columns come from the neighbouring
// tiles' boxes, which the CTA holds anyway: each CTA walks one contiguous run of tiles in
// row-major order, so tile t's neighbours are the boxes loaded just before and after it.
// A run that starts or ends inside a tile row loads one more box at that end.
// NOTE: measured 12-30% slower than the tile stream on H200 (README) although it cut L2
// requests 3.5x: one run per CTA spreads the CTAs over 264 tile rows at once, and DRAM reads
// rose 6.5%. On H100 it is the fastest fp64 layout (RowLayout13, the default there).
//
//   producer: boxes b0 .. bM-1 = tiles begin - L .. end - 1 + R into a ring of input stages
//   consumers, tile at box m: wait boxes m-1 (if it has a left neighbour), m, m+1 (if right)
//     -> compute into output buffer k % kOutStages -> one thread stores it, frees box m - 1
template <int InStages, int OutStages, int TileRows, int TileBytes, int Ctas>
struct RowLayout {
  static constexpr int kStages = InStages;      // input boxes in the ring (>= 3: m-1, m, m+1)
  static constexpr int kOutStages = OutStages;  // output buffers, kOutStages - 1 stores in flight
  static constexpr int kTileRows = TileRows;
  static constexpr int kTileBytes = TileBytes;
  static constexpr int kCtasPerSm = Ctas;
};
using RowLayout10 = RowLayout<6, 3, 32, 256, 2>;  // 32 x 256 B
using RowLayout11 = RowLayout<6, 3, 16, 512, 2>;  // 16 x 512 B
using RowLayout12 = RowLayout<4, 2, 32, 256, 2>;  // shallower ring
using RowLayout13 = RowLayout<5, 2, 32, 512, 1>;  // 32 x 512 B, one CTA

template <class T, class L>
struct RowGeometry {
  static constexpr int kE = sizeof(T);
  static constexpr int kTileRows = L::kTileRows;
  static constexpr int kTileCols = L::kTileBytes / kE;
  static constexpr int kInRows = kTileRows + 2;
  static constexpr std::uint32_t kInBytes = kTileCols * kInRows * kE;
  static constexpr std::uint32_t kOutBytes = kTileCols * kTileRows * kE;
  static constexpr int kStrips = 32 * kConsumerWarps / kTileCols;
  static constexpr int kStripRows = kTileRows / kStrips;
  static_assert(kTileCols <= 256, "a box row holds at most 256 elements (rule T7)");
  static_assert(kStrips * kTileCols == 32 * kConsumerWarps && kStripRows * kStrips == kTileRows,
                "one column per consumer thread, strips of equal height");
  static_assert(kInBytes % 128 == 0 && kOutBytes % 128 == 0,
                "TMA shared-memory boxes need 128-byte alignment (rule D1)");
};

template <class T, class L>
struct alignas(128) RowSharedStorage {
  using G = RowGeometry<T, L>;
  std::uint8_t in[L::kStages][G::kInBytes];
  std::uint8_t out[L::kOutStages][G::kOutBytes];
  StreamBarriers<L::kStages> bars;  // full: box landed; empty: box no longer read
};
template <class T, class L>
constexpr std::size_t kRowSmemBytes = sizeof(RowSharedStorage<T, L>) + 128;

template <class T, class L>
__global__ void __launch_bounds__(32 * (1 + kConsumerWarps))
    sm90_stencil3x3_row_kernel(const __grid_constant__ Params<T> p) {
  using G = RowGeometry<T, L>;
  constexpr int kStages = L::kStages;
  constexpr int kOutStages = L::kOutStages;
  constexpr std::uint32_t kConsumerThreads = 32u * kConsumerWarps;
  static_assert(kStages >= 3, "a tile needs its box and both neighbours resident");
  static_assert(kOutStages >= 2, "one output buffer filling while the last one stores");
  static_assert(L::kCtasPerSm * (kRowSmemBytes<T, L> + 1024) <= 228 * 1024,
                "the layout's default CTAs per SM must fit");
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900)
  extern __shared__ std::uint8_t smem_raw[];
  auto& st = *reinterpret_cast<RowSharedStorage<T, L>*>(
      (reinterpret_cast<std::uintptr_t>(smem_raw) + 127) & ~std::uintptr_t{127});
  const int warp = static_cast<int>(threadIdx.x / 32);
  const std::int32_t tiles_x = p.order.tiles_x;

  // this CTA's run of tiles [begin, end) and its boxes [first, last): one more box at an end
  // that falls inside a tile row (the neighbour's columns)
  const std::int64_t tiles = static_cast<std::int64_t>(tiles_x) * p.order.tiles_y * p.images;
  const std::int64_t begin = tiles * blockIdx.x / gridDim.x;
  const std::int64_t end = tiles * (blockIdx.x + 1) / gridDim.x;
  const std::int64_t first = begin - (begin % tiles_x != 0 ? 1 : 0);
  const std::int64_t last = end + (end % tiles_x != 0 ? 1 : 0);

  // step 1: barrier init by one thread, made visible to the async proxy
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      st.bars.full[s].init(1);
      st.bars.empty[s].init(1);
    }
    fence_barrier_init();
    ptx::prefetch_tensormap(&p.in_map);
    ptx::prefetch_tensormap(&p.out_map);
  }
  __syncthreads();

  if (warp == 0) {
    // step 2 (producer): box m into stage m % kStages once box m - kStages is no longer read
    if (threadIdx.x == 0) {
      for (std::int64_t t = first; t < last; ++t) {
        const int m = static_cast<int>(t - first);
        const int s = m % kStages;
        st.bars.empty[s].wait(((m / kStages) & 1) ^ 1);  // fresh barriers pass at once
        st.bars.full[s].arrive_expect_tx(G::kInBytes);
        std::int32_t tx, ty, image;
        p.order.coords(t, tx, ty, image);
        // the tile's columns, one row up (zero fill above the first and below the last row)
        const std::int32_t c[3] = {tx * G::kTileCols, ty * G::kTileRows - 1, image};
        ptx::cp_async_bulk_tensor_shared_global_tile<3>(ptx::smem_u32(st.in[s]), &p.in_map, c,
                                                        st.bars.full[s].smem());
      }
    }
    return;
  }

  // step 3 (consumers): each thread one column of a strip, neighbours from adjacent boxes
  const std::uint32_t tid = threadIdx.x - 32;
  const int col = static_cast<int>(tid) % G::kTileCols;
  const int row0 = static_cast<int>(tid) / G::kTileCols * G::kStripRows;
  T taps[9];
#pragma unroll
  for (int i = 0; i < 9; ++i) taps[i] = p.taps[i];
  int k = 0;
  for (std::int64_t t = begin; t < end; ++t, ++k) {
    const int m = static_cast<int>(t - first);
    std::int32_t tx, ty, image;
    p.order.coords(t, tx, ty, image);
    const bool has_left = tx > 0;
    const bool has_right = tx < tiles_x - 1;
    // wait for the boxes this tile reads (a completed phase passes at once)
    if (has_left) st.bars.full[(m - 1) % kStages].wait(((m - 1) / kStages) & 1);
    st.bars.full[m % kStages].wait((m / kStages) & 1);
    if (has_right) st.bars.full[(m + 1) % kStages].wait(((m + 1) / kStages) & 1);

    const T* centre = reinterpret_cast<const T*>(st.in[m % kStages]);
    // NOTE: edge threads read their outer neighbour from the adjacent box at the same row
    // pitch; outside the image (no such box) the value is masked to +0, as TMA's fill.
    // Masked threads point at their own column so that no read touches a box in flight.
    const T* left = col > 0    ? centre + col - 1
                    : has_left ? reinterpret_cast<const T*>(st.in[(m + kStages - 1) % kStages]) +
                                     (G::kTileCols - 1)
                               : centre + col;
    const T* right = col < G::kTileCols - 1 ? centre + col + 1
                     : has_right            ? reinterpret_cast<const T*>(st.in[(m + 1) % kStages])
                                            : centre + col;
    const bool left_zero = col == 0 && !has_left;
    const bool right_zero = col == G::kTileCols - 1 && !has_right;
    std::uint8_t* out_bytes = st.out[k % kOutStages];
    T* out = reinterpret_cast<T*>(out_bytes) + col;

    T acc[G::kStripRows];
#pragma unroll
    for (int o = 0; o < G::kStripRows; ++o) acc[o] = T(0);
#pragma unroll
    for (int i = 0; i < G::kStripRows + 2; ++i) {
      const int r = (row0 + i) * G::kTileCols;
      const T l = left_zero ? T(0) : left[r];
      const T c = centre[r + col];
      const T rt = right_zero ? T(0) : right[r];
#pragma unroll
      for (int dy = 0; dy < 3; ++dy) {
        const int o = i - dy;
        if (o < 0 || o >= G::kStripRows) continue;
        // NOTE: fused multiply-adds in the order of the taps, as the CPU reference does.
        acc[o] = fma(taps[3 * dy + 0], l, acc[o]);
        acc[o] = fma(taps[3 * dy + 1], c, acc[o]);
        acc[o] = fma(taps[3 * dy + 2], rt, acc[o]);
      }
      if (i >= 2) out[(row0 + i - 2) * G::kTileCols] = acc[i - 2];
    }

    // generic-proxy writes fenced by each writer before the TMA store reads them; the next
    // tile's output buffer is free once the store that last used it has read it
    ptx::fence_proxy_async_shared_cta();
    if (tid == 0) ptx::cp_async_bulk_wait_group_read<kOutStages - 2>();
    ptx::bar_sync(1, kConsumerThreads);
    if (tid == 0) {
      if (tx * G::kTileCols < p.tail.main_cols) {  // a store wholly outside kills (H5)
        const std::int32_t c[3] = {tx * G::kTileCols, ty * G::kTileRows, image};
        ptx::cp_async_bulk_tensor_global_shared_tile<3>(&p.out_map, c, ptx::smem_u32(out_bytes));
      }
      ptx::cp_async_bulk_commit_group();
      // box m - 1 was last read as this tile's left neighbour (every consumer passed bar_sync)
      if (m >= 1) st.bars.empty[(m - 1) % kStages].arrive();
    }
    if (p.tail.main_cols != p.tail.cols) {
      stream::store_row_tail<G::kE>(
          p.tail, tx * G::kTileCols, ty * G::kTileRows, image, G::kTileCols, G::kTileRows,
          out_bytes,
          [](std::int32_t r, std::int32_t c) {
            return static_cast<std::uint32_t>((r * G::kTileCols + c) * G::kE);
          },
          tid, kConsumerThreads);
    }
  }
  // step 4: a CTA may not exit while a store still reads its shared memory
  if (tid == 0) ptx::cp_async_bulk_wait_group<0>();
#else
  if (threadIdx.x == 0) printf("sm90_stencil3x3_row_kernel needs sm_90a\n");
  __trap();
#endif
}

// (`panel` is ignored: the row walk's tiles go in order)
template <class T, class L>
void launch_row(ConstTensorRef in, TensorRef out, const Filter3x3& filter, int ctas_per_sm,
                int /*panel*/, cudaStream_t stream) {
  using G = RowGeometry<T, L>;
  Params<T> p{};
  // step 2: maps (input boxes of the tile's columns, no side halo, the rows above and below;
  // the default 256-byte L2 promotion), tails, taps, tile order
  // NOTE: panel 1 (row-major tiles): a CTA's run of tiles walks along tile rows.
  set_up(p, in, out, filter, {G::kTileCols, G::kInRows, 1}, L2Promotion::bytes256, G::kTileCols,
         G::kTileRows, 1);
  // step 3: launch, one run of consecutive tiles per CTA
  allow_dynamic_smem<sm90_stencil3x3_row_kernel<T, L>>(kRowSmemBytes<T, L>);
  launch_persistent(sm90_stencil3x3_row_kernel<T, L>, kRowSmemBytes<T, L>, p, ctas_per_sm, stream,
                    "sm90_stencil3x3_row_kernel");
}

// CTAs of a row-walk layout that fit in one SM (max_ctas in the .cuh for the tile stream)
template <class T, class L>
constexpr int max_row_ctas() {
  return static_cast<int>(228 * 1024 / (kRowSmemBytes<T, L> + 1024));
}
// What the launcher needs of a layout at run time, per element type (kLayouts<T>[variant]).
struct LayoutFacts {
  int max_ctas;  // the most CTAs per SM that fit
  int default_ctas;
  int run;  // tiles per CTA (grid = runs); 0: persistent
  void (*launch)(ConstTensorRef, TensorRef, const Filter3x3&, int ctas_per_sm, int panel,
                 cudaStream_t);
};
template <class T, class L>
constexpr LayoutFacts facts() {
  return {max_ctas<T, L>(), L::kCtasPerSm, L::kRun, &launch<T, L>};
}
template <class T, class L>
constexpr LayoutFacts row_facts() {
  return {max_row_ctas<T, L>(), L::kCtasPerSm, 0, &launch_row<T, L>};
}
// (index 0 is never looked up: variant 0 is resolved to a layout first)
template <class T>
constexpr std::array<LayoutFacts, kVariants> kLayouts = {
    LayoutFacts{0, 0, 0, nullptr}, facts<T, Layout1>(),         facts<T, Layout2>(),
    facts<T, Layout3>(),           facts<T, Layout4>(),         facts<T, Layout5<T>>(),
    facts<T, Layout6<T>>(),        facts<T, Layout7<T>>(),      facts<T, Layout8<T>>(),
    facts<T, Layout9<T>>(),        row_facts<T, RowLayout10>(), row_facts<T, RowLayout11>(),
    row_facts<T, RowLayout12>(),   row_facts<T, RowLayout13>(), facts<T, Layout14>(),
    facts<T, Layout15>(),          facts<T, Layout16>(),        facts<T, Layout17>(),
    facts<T, Layout18>(),          facts<T, Layout19>(),        facts<T, Layout20>(),
    facts<T, Layout21>(),          facts<T, Layout0>(),         facts<T, Layout23>(),
    facts<T, Layout24>(),          facts<T, Layout25<T>>(),     facts<T, Layout26>(),
    facts<T, Layout27>(),          facts<T, Layout28>(),        facts<T, Layout29>(),
    facts<T, Layout30<T>>(),       facts<T, Layout31<T>>(),     facts<T, Layout32>(),
    facts<T, Layout33>(),          facts<T, Layout34>(),        facts<T, Layout35>(),
    facts<T, Layout36<T>>()};

// Variant 0. Each CTA takes its own tiles (grid = tiles or runs), which measured 5-7% faster
// than every persistent layout on both parts (README, 2026-11-22 10:03Z-10:17Z), where the
// persistent rings had split the two parts (H200: small tiles at 2-3 CTAs per SM, 19 and 22;
// H100: 1 KB tiles at one CTA, 8, and the row walk, 13). Runs of two tiles through two stages
// lead (10:28Z-10:35Z): 32 x 512 B (layout 32) on H100 (fp32 0.970, fp64 0.971-0.973 of
// memcpy; one tile per CTA, 24: 0.968 / 0.964), 16 x 512 B (layout 34) on H200 (0.928 / 0.930
// against 0.923-0.926 for 32 and 0.917 / 0.907 for 24). Told apart by the memory system.
int default_variant(double dram_bytes_per_second) {
  return plan_tma_layout(dram_bytes_per_second) == PlannedLayout::run2_rows16 ? 34 : 32;
}

// Panels of tile rows (TileOrder) on a device of this peak DRAM bandwidth. On H200, panels
// of 3 tile rows measured 0.5-1.5% faster than the row-major walk for variants 19 and 22
// (README, 2026-11-22 08:34Z); on H100 panels of 2-4 made variant 8 2% slower. (Layouts of
// one tile per CTA walk row-major on both: see the launcher.)
int default_panel(double dram_bytes_per_second) {
  return dram_bytes_per_second >= 4e12 ? 3 : 1;
}

constexpr bool is_row_walk(int variant) {
  return variant >= 10 && variant <= 13;
}

}  // namespace tmakit::detail::stencil3x3

namespace tmakit::tune {

void stencil3x3(ConstTensorRef in, TensorRef out, const Filter3x3& filter, cudaStream_t stream,
                const StencilTuning& tuning) {
  using namespace detail::stencil3x3;
  check_arguments(in, out, filter);
  check_variant(tuning.variant, kVariants);
  tune::check_knob("tuning.ctas_per_sm", tuning.ctas_per_sm);
  tune::check_knob("tuning.panel_tiles", tuning.panel_tiles);
  if (tuning.panel_tiles > 1 && is_row_walk(tuning.variant)) {
    throw ArgumentError("tuning.panel_tiles", std::to_string(tuning.panel_tiles) +
                                                  " with the row walk (variant " +
                                                  std::to_string(tuning.variant) +
                                                  "), which takes tile rows in order; use 0 or 1");
  }
  const bool fp64 = in.type == DataType::float64;
  // NOTE: the device is asked for its memory system only when a default needs it
  const int variant =
      tuning.variant != 0 ? tuning.variant : default_variant(detail::peak_dram_bytes_per_second());
  const LayoutFacts layout = fp64 ? kLayouts<double>[variant] : kLayouts<float>[variant];
  const int ctas_per_sm = tune::ctas_per_sm_for(tuning.ctas_per_sm, tuning.variant, layout.run,
                                                  layout.default_ctas, layout.max_ctas);
  // NOTE: layouts that give each CTA its own tiles walk row-major by default on every part
  // (H200: layout 24 0.919 / 0.907 of memcpy row-major against 0.911 / 0.899 in panels of 3,
  // 2026-11-22 10:15Z; H100 the same either way)
  int panel = 1;  // the row walks' order, and the default when each CTA takes its own tiles
  if (!is_row_walk(variant)) {
    if (tuning.panel_tiles > 0) {
      panel = tuning.panel_tiles;
    } else if (layout.run == 0) {
      panel = default_panel(detail::peak_dram_bytes_per_second());
    }
  }

  detail::require_device_pointer(in.data, "in.data");
  detail::require_device_pointer(out.data, "out.data");
  layout.launch(in, out, filter, ctas_per_sm, panel, stream);
}

int stencil3x3_default_variant(DataType type, double dram_bytes_per_second) {
  if (type != DataType::float32 && type != DataType::float64) {
    throw ArgumentError("type", std::string(name(type)) +
                                    " is not supported; use FLOAT32 or "
                                    "FLOAT64");
  }
  return detail::stencil3x3::default_variant(dram_bytes_per_second);
}

int stencil3x3_default_variant(DataType type) {
  if (type != DataType::float32 && type != DataType::float64) {
    return stencil3x3_default_variant(type, 0.0);  // throws, naming the type
  }
  return stencil3x3_default_variant(type, detail::peak_dram_bytes_per_second());
}

}  // namespace tmakit::tune
