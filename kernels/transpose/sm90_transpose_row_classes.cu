// Transpose of 1- and 2-byte elements whose rows TMA cannot load (a pitch or a start off 16
// bytes) or whose out it cannot store, loaded with TMA all the same: one tensor map per residue
// class of in's rows (row_class_plan.hpp says why that is legal). Per tile:
// - one thread loads the tile's in rows into a stage of shared memory, class by class (each
//   class's rows contiguous; each row the tile's RowBytes after the class's skew);
// - every thread then writes 16-byte chunks of out's rows, each gathered element by element
//   from 16 / E in rows of one column. A tile writes, of each of its out rows, a span that
//   starts on a sector or a line (G::kSpanAlignBytes; the tile holds that many bytes' worth of
//   in rows more than it writes), so a warp's store covers whole sectors (lines) whatever
//   out's pitch. Chunks that reach past in's first or last row are written element by
//   element: nothing outside the view is written.
// The loads go through the TMA unit and the stores through the SM's load/store path. With one
// stage a CTA takes one tile, and the CTAs on an SM overlap one's loads with another's
// stores; with a ring (G::kStages > 1) a persistent CTA also loads its next tiles while it
// writes one (README.md, "Row classes").
#include <cuda.h>

#include <cstdint>
#include <cstdio>
#include <type_traits>

#include "tmakit/core/cuda_check.hpp"
#include "tmakit/device/barrier.hpp"
#include "tmakit/device/copy.hpp"
#include "tmakit/device/tile.hpp"
#include "tmakit/kernels/detail/launch_support.hpp"
#include "common/grid_cap.hpp"
#include "transpose/row_class_plan.hpp"
#include "transpose/sm90_transpose_row_classes.hpp"

namespace tmakit::detail::transpose {
namespace {

using namespace row_classes;

struct RowClassParams {
  CUtensorMap maps[kMaxClasses];   // class j: in's rows j, j + K, ...
  std::uint8_t skew[kMaxClasses];  // bytes from class j's map base to its rows' start
  Plan plan;
  std::uint8_t* out;
  std::uint64_t out_pitch;  // bytes
  std::int32_t rows, cols;  // in's
};

template <int E>
using Word = std::conditional_t<E == 1, std::uint8_t, std::uint16_t>;

// A class's box for load_tile's checks (rank, element size, alignment): its rows are the
// map's (plan.box_rows), and the barrier is armed for the whole tile (G::kTileBytes).
template <class G>
using ClassBox = Tile<Word<G::kElementBytes>, Swizzle::none, G::kBoxRowBytes / G::kElementBytes, 8>;

// One element of shared memory, zero-extended (ptx::ld_shared_u8 / u16).
template <int E>
__device__ __forceinline__ std::uint32_t ld_shared_element(std::uint32_t addr) {
  if constexpr (E == 1) {
    return ptx::ld_shared_u8(addr);
  } else {
    return ptx::ld_shared_u16(addr);
  }
}

// A chunk's four words from its elements (each in a register's low bits), in order.
template <int E, int N>
__device__ __forceinline__ void pack_chunk(const std::uint32_t (&e)[N], std::uint32_t (&w)[4]) {
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    if constexpr (E == 1) {
      // (__byte_perm picks bytes of {y, x} by the selector's nibbles)
      const std::uint32_t lo = __byte_perm(e[4 * q], e[4 * q + 1], 0x0040);
      const std::uint32_t hi = __byte_perm(e[4 * q + 2], e[4 * q + 3], 0x0040);
      w[q] = __byte_perm(lo, hi, 0x5410);
    } else {
      w[q] = __byte_perm(e[2 * q], e[2 * q + 1], 0x5410);
    }
  }
}

// Writes the tile at `tile` from its rows in shared memory (`rows_at`): each lane 16-byte
// chunks of out's rows, gathered element by element.
template <class G, int K>
__device__ __forceinline__ void write_tile(const RowClassParams& p, TilePos tile,
                                           std::uint32_t rows_at) {
  constexpr int E = G::kElementBytes;
  const std::int32_t c0 = tile.x * G::kCols;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int warp = static_cast<int>(threadIdx.x / 32);
  const int lane_row = lane % 4, lane_chunk = lane / 4;
#pragma unroll 1
  for (int g = warp; g < G::kRowGroups; g += G::kThreads / 32) {
    const std::int32_t col = 4 * g + lane_row;  // out's row c0 + col
    if (c0 + col >= p.cols) continue;           // (nothing warp-wide below)
    std::uint8_t* const out_row = p.out + static_cast<std::uint64_t>(c0 + col) * p.out_pitch;
    const std::int32_t lead = lead_elements<G>(reinterpret_cast<std::uintptr_t>(out_row));
    const std::int32_t x_first = tile.y * G::kSpanRows - lead;  // the span's first element
    const std::int32_t l_first = G::kLeadRows - lead;           // its local row
    // load b of chunk m: its element eb (gather_element: b, or b turned by this lane's group),
    // local row l_first + m kChunkElems + eb, whose class is the same in every chunk, and
    // whose class row is m kChunkElems / K further on in chunk m
    constexpr int kTurn = gather_turn<G>(K);
    const auto turn = static_cast<std::uint32_t>(kTurn * lane_chunk);  // < kChunkElems
    std::uint32_t at[G::kChunkElems];
#pragma unroll
    for (int b = 0; b < G::kChunkElems; ++b) {
      const std::int32_t l = l_first + gather_element<G>(b, lane_chunk, K);
      at[b] = rows_at + shared_offset<G>(l, col, K, p.skew[l % K]);
    }
#pragma unroll
    for (int s = 0; s < G::kChunkSteps; ++s) {
      const int m = lane_chunk + 8 * s;
      const std::int32_t x0 = x_first + m * G::kChunkElems;
      if (x0 + G::kChunkElems <= 0 || x0 >= p.rows) continue;  // wholly outside in's rows
      constexpr std::uint32_t kChunkStep = G::kChunkElems / K * G::kBoxRowBytes;
      std::uint32_t e[G::kChunkElems];
#pragma unroll
      for (int b = 0; b < G::kChunkElems; ++b) {
        e[b] = ld_shared_element<E>(at[b] + static_cast<std::uint32_t>(m) * kChunkStep);
      }
      Word<E>* const first = reinterpret_cast<Word<E>*>(out_row) + x0;
      if (x0 >= 0 && x0 + G::kChunkElems <= p.rows) {
        std::uint32_t w[4];
        pack_chunk<E>(e, w);
        if constexpr (kTurn != 0) turn_chunk_back(w, turn * E);
        // 16-byte aligned: the span's sector or line
        *reinterpret_cast<uint4*>(first) = make_uint4(w[0], w[1], w[2], w[3]);
      } else {
#pragma unroll
        for (int b = 0; b < G::kChunkElems; ++b) {
          const auto k = static_cast<std::int32_t>((b + turn) % G::kChunkElems);  // e[b]'s place
          if (x0 + k >= 0 && x0 + k < p.rows) first[k] = static_cast<Word<E>>(e[b]);
        }
      }
    }
  }
}

template <class G, int K>
__global__ void __launch_bounds__(G::kThreads, G::kMinBlocks)
    row_class_transpose_kernel(const __grid_constant__ RowClassParams p) {
  constexpr int kClassBytes = class_bytes<G>(K);
  static_assert(kClassBytes % 128 == 0, "each class's rows start on 128 bytes (TMA, D1)");
  static_assert(K * kClassBytes <= G::kSmemBytes, "a stage holds every class");
  static_assert(box_rows_of<G>(K) == G::kLocalRows / K ||
                    box_rows_of<G>(K) * G::kBoxRowBytes % 128 == 0,
                "each of a class's boxes starts on 128 bytes (TMA, D1)");
  static_assert(G::kSmemBytes % 128 == 0, "each stage starts on 128 bytes (TMA, D1)");
  static_assert(G::kChunkElems % K == 0, "a chunk is whole cycles of classes");
  extern __shared__ __align__(128) std::uint8_t ring[];  // G::kStages tiles' rows
  __shared__ Barrier full[G::kStages];
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
  const std::int64_t tiles = static_cast<std::int64_t>(p.plan.tiles_x) * p.plan.tiles_y;
  // one thread: tile t's rows into stage `stage`, class by class (K boxes, halves where a
  // class's rows pass 256)
  const auto load = [&](std::int64_t t, int stage) {
    const TilePos tile = tile_position<G>(static_cast<std::int32_t>(t), p.plan);
    const std::int32_t r0 = first_local_row<G>(tile.y);
    std::uint8_t* const rows = ring + stage * G::kSmemBytes;
    full[stage].arrive_expect_tx(G::kTileBytes);
#pragma unroll 1
    for (int j = 0; j < K; ++j) {
#pragma unroll 1
      for (int k = 0; k < G::kLocalRows / K; k += p.plan.box_rows) {
        // NOTE: x = c0 from the class's base, 16-byte aligned (O1); rows before in's first
        // and past its last read as 0
        const std::int32_t coords[2] = {tile.x * G::kCols, r0 / K + k};
        load_tile<ClassBox<G>>(rows + j * kClassBytes + k * G::kBoxRowBytes, &p.maps[j],
                               full[stage], coords);
      }
    }
  };
  if (threadIdx.x == 0) {
#pragma unroll
    for (int s = 0; s < G::kStages; ++s) full[s].init(1);
    fence_barrier_init();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
#pragma unroll 1
    for (int s = 0; s < G::kStages; ++s) {
      const std::int64_t t = blockIdx.x + static_cast<std::int64_t>(s) * gridDim.x;
      if (t < tiles) load(t, s);
    }
  }
  int stage = 0;
  std::uint32_t phase = 0;
#pragma unroll 1
  for (std::int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    full[stage].wait(phase);
    write_tile<G, K>(p, tile_position<G>(static_cast<std::int32_t>(t), p.plan),
                     ptx::smem_u32(ring + stage * G::kSmemBytes));
    // every thread has read the stage before it is loaded again
    __syncthreads();
    if (threadIdx.x == 0) {
      const std::int64_t next = t + static_cast<std::int64_t>(G::kStages) * gridDim.x;
      if (next < tiles) load(next, stage);
    }
    if (++stage == G::kStages) {
      stage = 0;
      phase ^= 1u;
    }
  }
#else
  // NOTE: built for another target; fail loudly rather than return garbage.
  if (threadIdx.x == 0) printf("row_class_transpose_kernel needs sm_90\n");
  __trap();
#endif
}

// Class j's tensor map: a view of in's rows j, j + K, ... from 16 bytes at or before row j's
// start (`skew` bytes before it; the rows so hold `skew` / E more columns).
template <class G>
TensorMapSpec class_map_spec(ConstTensorRef in, std::uint32_t j, const Plan& plan) {
  constexpr int E = G::kElementBytes;
  const DataType type = E == 1 ? DataType::uint8 : DataType::uint16;
  const std::uint64_t start = reinterpret_cast<std::uint64_t>(in.data) + j * in.row_pitch();
  const std::uint64_t base = start / 16 * 16;
  const ConstTensorRef rows(reinterpret_cast<const void*>(base), type,
                            (in.rows - j + plan.classes - 1) / plan.classes,
                            in.cols + (start - base) / E, plan.classes * in.row_pitch());
  TensorMapSpec s = view_spec(rows, type,
                              {G::kBoxRowBytes / E, static_cast<std::uint32_t>(plan.box_rows), 1},
                              Swizzle::none);
  // NOTE: a box row is RowBytes + 16 bytes of a row whose neighbouring pieces other CTAs load;
  // promoting its misses to 256 bytes measured 3-4% slower for bf16 (README.md)
  s.l2_promotion = G::kL2PromotionBytes == 256   ? L2Promotion::bytes256
                   : G::kL2PromotionBytes == 128 ? L2Promotion::bytes128
                   : G::kL2PromotionBytes == 64  ? L2Promotion::bytes64
                                                 : L2Promotion::none;
  s.direction = Direction::load;
  return s;
}

// The maps of in's classes; the last view's are remembered (per host thread), so repeated
// calls on one tensor look up no spec.
template <class G>
void build_maps(ConstTensorRef in, RowClassParams& p) {
  struct Key {
    const void* data;
    std::uint64_t rows, cols, pitch;
    bool operator==(const Key&) const = default;
  };
  struct Memo {
    Key key{};
    CUtensorMap maps[kMaxClasses];
    std::uint8_t skew[kMaxClasses];
  };
  thread_local Memo memo;  // (one per element size: G differs)
  const Key key{in.data, in.rows, in.cols, in.row_pitch()};
  if (!(memo.key == key)) {
    for (std::uint32_t j = 0; j < p.plan.classes; ++j) {
      const TensorMapSpec s = class_map_spec<G>(in, j, p.plan);
      memo.maps[j] = cached_tensor_map(s);
      memo.skew[j] = static_cast<std::uint8_t>(reinterpret_cast<std::uint64_t>(in.data) +
                                               j * in.row_pitch() - s.global_address);
    }
    memo.key = key;
  }
  for (std::uint32_t j = 0; j < p.plan.classes; ++j) {
    p.maps[j] = memo.maps[j];
    p.skew[j] = memo.skew[j];
  }
}

template <class G, int K>
void launch_classes(const RowClassParams& p, cudaStream_t stream) {
  const std::int64_t tiles = static_cast<std::int64_t>(p.plan.tiles_x) * p.plan.tiles_y;
  // one tile per CTA, or a persistent grid for a ring; capped by the GPU tests (grid_cap)
  const unsigned grid = G::kStages == 1 ? tile_grid(tiles, 1, grid_cap())
                                        : tile_grid(persistent_grid(tiles, G::kMinBlocks), 1,
                                                    grid_cap());
  constexpr int kRingBytes = G::kStages * G::kSmemBytes;
  allow_dynamic_smem<row_class_transpose_kernel<G, K>>(kRingBytes);
  row_class_transpose_kernel<G, K><<<grid, G::kThreads, kRingBytes, stream>>>(p);
  check_launch("row_class_transpose_kernel");
}

template <class G>
void launch_typed(ConstTensorRef in, TensorRef out, cudaStream_t stream) {
  // plan -> maps -> launch (the views were checked by the caller: takes_row_classes)
  RowClassParams p{};
  p.plan = plan<G>(in.rows, in.cols, in.row_pitch());
  build_maps<G>(in, p);
  p.out = static_cast<std::uint8_t*>(out.data);
  p.out_pitch = out.row_pitch();
  p.rows = static_cast<std::int32_t>(in.rows);
  p.cols = static_cast<std::int32_t>(in.cols);
  switch (p.plan.classes) {
    case 1: return launch_classes<G, 1>(p, stream);
    case 2: return launch_classes<G, 2>(p, stream);
    case 4: return launch_classes<G, 4>(p, stream);
    case 8: return launch_classes<G, 8>(p, stream);
    default:
      // (16 classes: 1-byte elements only; a 2-byte element's pitch is even)
      if constexpr (G::kElementBytes == 1) return launch_classes<G, 16>(p, stream);
  }
}

}  // namespace

bool takes_row_classes(ConstTensorRef in, TensorRef out, int sm_count) {
  const std::uint64_t esize = in.element_size();
  if (esize != 1 && esize != 2) return false;
  if (in.batch > 1 || out.batch > 1) return false;
  // NOTE: at least one row in every class; coordinates within 31 bits
  if (in.rows < kMaxClasses || in.rows >= (1ull << 30) || in.cols >= (1ull << 30) ||
      reinterpret_cast<std::uintptr_t>(out.data) % esize != 0 || out.row_pitch() % esize != 0) {
    return false;
  }
  const Plan p = esize == 1 ? plan<U8Tile>(in.rows, in.cols, in.row_pitch())
                            : plan<U16Tile>(in.rows, in.cols, in.row_pitch());
  const std::int64_t tiles = static_cast<std::int64_t>(p.tiles_x) * p.tiles_y;
  // the grid within 31 bits; the class counts (and sizes) where the kernel measured faster
  // than the plain one (row_class_plan.hpp: takes_classes)
  return tiles < (1ll << 31) && (esize == 1 ? takes_classes<U8Tile>(p.classes, tiles, sm_count)
                                            : takes_classes<U16Tile>(p.classes, tiles, sm_count));
}

bool takes_row_classes(ConstTensorRef in, TensorRef out) {
  return takes_row_classes(in, out, multiprocessor_count());
}

TensorMapSpec row_class_map_spec(ConstTensorRef in, std::uint32_t j) {
  if (in.element_size() == 1) {
    return class_map_spec<U8Tile>(in, j, plan<U8Tile>(in.rows, in.cols, in.row_pitch()));
  }
  return class_map_spec<U16Tile>(in, j, plan<U16Tile>(in.rows, in.cols, in.row_pitch()));
}

void launch_row_classes(ConstTensorRef in, TensorRef out, cudaStream_t stream) {
  if (in.element_size() == 1) return launch_typed<U8Tile>(in, out, stream);
  return launch_typed<U16Tile>(in, out, stream);
}

}  // namespace tmakit::detail::transpose
