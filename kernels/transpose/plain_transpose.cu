// Transpose without TMA, for rows TMA cannot describe (a pitch or start off 16 bytes): a block
// stages a tile of in through shared memory, already transposed: TileCols in columns by
// 32 x RowWords x V in rows, which are TileCols out rows of 32 x RowWords words each.
//
// Load: a warp reads 32 consecutive elements of an in row per load (coalesced at any start);
// a thread packs the elements of V = 4 / element size consecutive in rows of one column into
// one 32-bit word (1- and 2-byte elements; V = 1 for 4- and 8-byte ones), which is V
// consecutive elements of one out row, and stores it in the shared row of that out row. All
// of a thread's words are loaded before the first shared store. A tile inside the view walks
// each thread's rows with one pointer; one at the view's edge clamps every position. 1-byte
// elements inside the view load a 4-byte word of each of 4 rows instead and transpose the
// 4 x 4 block in registers (stage_word_blocks).
// Store: a warp writes one out row's span of the tile, 32 shared words per store. Where an
// out row of 1- or 2-byte elements does not start on 4 bytes, each lane funnel-shifts its
// word with the word before it so that it writes an aligned 32-bit word; only the words
// wholly inside the span are written whole, the bytes at either end one by one, so no byte
// outside the view is written.
// Walk: block t takes the tile t rows of tiles down one column of tiles, then the next
// column, so the blocks in flight write neighbouring pieces of the same out rows (the TMA
// kernel's order).
#include <cstdint>
#include <type_traits>

#include "tmakit/core/cuda_check.hpp"
#include "tmakit/kernels/detail/launch_support.hpp"
#include "tmakit/kernels/detail/plain_grid.hpp"
#include "transpose/plain_transpose.hpp"

namespace tmakit::detail::transpose {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

struct PlainParams {
  const std::uint8_t* in;
  std::uint8_t* out;
  std::uint64_t in_pitch;   // bytes between in's rows
  std::uint64_t out_pitch;  // bytes between out's rows
  std::int64_t rows;        // in's
  std::int64_t cols;        // in's
  std::int64_t tiles_y;     // tiles down in's rows (one column of tiles)
  std::int64_t tiles;
};

// The shared word: V elements of one out row (V = 1 for 4- and 8-byte elements).
template <class T>
using WordOf = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;

template <class T>
constexpr int kPack = sizeof(T) >= 4 ? 1 : 4 / static_cast<int>(sizeof(T));

// out's rows c0 .. c0 + TileCols - 1 of a tile, elements r0 .. r0 + 32 RowWords V - 1, from the
// shared words (warp-wide: every lane of a warp takes part).
template <class T, int TileCols, int RowWords, class Word>
__device__ __forceinline__ void store_out_rows(const PlainParams& p, const Word (*tile)[32 * RowWords + 1],
                                               std::int64_t c0, std::int64_t r0, int lane,
                                               int warp) {
  constexpr int V = kPack<T>;
  constexpr int kWords = 32 * RowWords;
  constexpr int kRows = kWords * V;
  const std::int64_t valid_rows = p.rows - r0 < kRows ? p.rows - r0 : kRows;
#pragma unroll
  for (int i = warp; i < TileCols; i += kWarps) {
    const std::int64_t c = c0 + i;
    if (c >= p.cols) break;  // uniform across the warp
    std::uint8_t* row = p.out + c * p.out_pitch;
    if constexpr (V == 1) {
#pragma unroll
      for (int j = 0; j < RowWords; ++j) {
        const int k = j * 32 + lane;
        if (r0 + k < p.rows) reinterpret_cast<Word*>(row)[r0 + k] = tile[i][k];
      }
    } else {
      // The span of out's row that this tile writes starts `skew` bytes into the aligned
      // word at `base`; aligned word k holds the span's bytes 4 k - skew .. 4 k - skew + 3:
      // the top bytes of shared word k - 1 and the bottom bytes of shared word k.
      std::uint8_t* const first = row + r0 * static_cast<std::int64_t>(sizeof(T));
      const int skew = static_cast<int>(reinterpret_cast<std::uintptr_t>(first) & 3U);
      // NOTE: pointer arithmetic from p.out, not an integer address cast back: the compiler
      // then knows the stores are global (STG, not generic ST).
      auto* const base = reinterpret_cast<std::uint32_t*>(first - skew);
      const unsigned shift = 8 * (4 - skew);  // 32 when skew is 0: word k is shared word k
      if (valid_rows == kRows) {
        // A whole span: words 1 .. kWords - 1 lie inside it, word 0 too when skew is 0; with
        // a skew, the span's first 4 - skew bytes (lane 0) and last skew bytes (the last
        // lane, word kWords) are written byte by byte.
#pragma unroll
        for (int j = 0; j < RowWords; ++j) {
          const int k = j * 32 + lane;
          const Word before = k > 0 ? tile[i][k - 1] : Word(0);
          const std::uint32_t bytes = __funnelshift_rc(before, tile[i][k], shift);
          if (k > 0 || skew == 0) base[k] = bytes;
        }
        if (skew != 0 && (lane == 0 || lane == 31)) {
          const bool head = lane == 0;
          const int k = head ? 0 : kWords;
          const std::uint32_t bytes = head ? __funnelshift_rc(0U, tile[i][0], shift)
                                           : __funnelshift_rc(tile[i][kWords - 1], 0U, shift);
          auto* const at = reinterpret_cast<std::uint8_t*>(base + k);
#pragma unroll
          for (int b = 0; b < 4; ++b) {
            if ((b >= skew) == head) at[b] = static_cast<std::uint8_t>(bytes >> (8 * b));
          }
        }
      } else {
        // The view's last rows: only the words wholly inside the span are written whole.
        const int span_bytes = static_cast<int>(valid_rows) * static_cast<int>(sizeof(T));
        auto* const base_bytes = reinterpret_cast<std::uint8_t*>(base);
        const auto put = [&](int k, std::uint32_t bytes) {
          const int lo = 4 * k - skew;
          if (lo >= 0 && lo + 4 <= span_bytes) {
            base[k] = bytes;
            return;
          }
#pragma unroll
          for (int b = 0; b < 4; ++b) {
            if (lo + b >= 0 && lo + b < span_bytes) {
              base_bytes[4 * k + b] = static_cast<std::uint8_t>(bytes >> (8 * b));
            }
          }
        };
#pragma unroll
        for (int j = 0; j < RowWords; ++j) {
          const int k = j * 32 + lane;
          const Word word = tile[i][k];
          const Word before = k > 0 ? tile[i][k - 1] : Word(0);
          put(k, __funnelshift_rc(before, word, shift));
          if (k == kWords - 1 && skew != 0) put(kWords, __funnelshift_rc(word, 0U, shift));
        }
      }
    }
  }
}

// A thread's words of the tile at (r0, c0): item it = g * TileCols / 32 + h holds in rows
// r0 + (g kWarps + warp) V + v (v < V) of column c0 + 32 h + lane. A tile wholly inside the
// view walks each thread's rows with one pointer; a tile at the view's edge clamps every
// position and reads one outside the view as 0.
template <class T, int TileCols, int RowWords, bool Whole, class Word>
__device__ __forceinline__ void load_words(const PlainParams& p, std::int64_t c0, std::int64_t r0,
                                           int lane, int warp, Word* w) {
  constexpr int V = kPack<T>;
  constexpr int kColGroups = TileCols / 32;
  constexpr int kRowGroups = 32 * RowWords * TileCols / kThreads / kColGroups;
  if constexpr (Whole) {
    const std::uint8_t* rows = p.in + (r0 + static_cast<std::int64_t>(warp) * V) * p.in_pitch +
                               (c0 + lane) * static_cast<std::int64_t>(sizeof(T));
    const std::uint64_t group_step = static_cast<std::uint64_t>(kWarps) * V * p.in_pitch;
#pragma unroll
    for (int g = 0; g < kRowGroups; ++g) {
      const std::uint8_t* row = rows;
#pragma unroll
      for (int h = 0; h < kColGroups; ++h) w[g * kColGroups + h] = 0;
#pragma unroll
      for (int v = 0; v < V; ++v) {
#pragma unroll
        for (int h = 0; h < kColGroups; ++h) {
          const T e = reinterpret_cast<const T*>(row)[32 * h];
          w[g * kColGroups + h] |= static_cast<Word>(e) << (8 * sizeof(T) * v);
        }
        row += p.in_pitch;
      }
      rows += group_step;
    }
  } else {
#pragma unroll
    for (int g = 0; g < kRowGroups; ++g) {
#pragma unroll
      for (int h = 0; h < kColGroups; ++h) {
        const std::int64_t col = c0 + 32 * h + lane;
        Word word = 0;
#pragma unroll
        for (int v = 0; v < V; ++v) {
          const std::int64_t row = r0 + static_cast<std::int64_t>(g * kWarps + warp) * V + v;
          // NOTE: every load is issued, at a clamped position, and a position outside the
          // view then reads as 0: straight-line code, so the compiler may issue all of a
          // thread's loads before the first one is used.
          const bool inside = row < p.rows && col < p.cols;
          const std::int64_t row_c = row < p.rows ? row : p.rows - 1;
          const std::int64_t col_c = col < p.cols ? col : p.cols - 1;
          const T e = reinterpret_cast<const T*>(p.in + row_c * p.in_pitch)[col_c];
          word |= static_cast<Word>(inside ? e : T(0)) << (8 * sizeof(T) * v);
        }
        w[g * kColGroups + h] = word;
      }
    }
  }
}

// 1-byte elements, a tile inside the view with at least 4 bytes of its rows after it: each
// lane loads one 4-byte word of each of V = 4 consecutive in rows, at the row's own byte
// offset (two aligned words funnel-shifted), and transposes the 4 x 4 block in registers
// into 4 shared words, one per out row. kLanes lanes span an in row's TileCols elements, so a
// warp's load covers 32 / kLanes rows, and its shared stores hit 32 banks (the shared rows'
// odd word count).
template <class T, int TileCols, int RowWords, class Word>
__device__ __forceinline__ void stage_word_blocks(const PlainParams& p, Word (*tile)[32 * RowWords + 1],
                                                  std::int64_t c0, std::int64_t r0, int lane,
                                                  int warp) {
  constexpr int V = kPack<T>;
  constexpr int kLanes = TileCols / V;  // 4-byte words of an in row's span
  constexpr int kGroups = 32 / kLanes;
  constexpr int kBlocks = 32 * RowWords * TileCols / kThreads / V;
  static_assert(V == 4 && 32 % kLanes == 0, "1-byte elements; a warp spans whole rows of the tile");
  const int wc = lane % kLanes;
  const int group = lane / kLanes;
  std::uint32_t x[kBlocks][V];
#pragma unroll
  for (int b = 0; b < kBlocks; ++b) {
    const std::int64_t kk = (static_cast<std::int64_t>(b) * kWarps + warp) * kGroups + group;
    const std::uint8_t* row = p.in + (r0 + kk * V) * p.in_pitch + c0 * sizeof(T);
#pragma unroll
    for (int v = 0; v < V; ++v) {
      const unsigned skew = static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(row) & 3U);
      const auto* aligned = reinterpret_cast<const std::uint32_t*>(row - skew);
      x[b][v] = __funnelshift_r(aligned[wc], aligned[wc + 1], 8 * skew);
      row += p.in_pitch;
    }
  }
#pragma unroll
  for (int b = 0; b < kBlocks; ++b) {
    const int k = (b * kWarps + warp) * kGroups + group;
    // Byte q of the four rows' words, in row order: out[q] = x0.q | x1.q << 8 | x2.q << 16 |
    // x3.q << 24 (__byte_perm picks bytes of {y, x} by the selector's nibbles).
    const std::uint32_t lo01 = __byte_perm(x[b][0], x[b][1], 0x5140);
    const std::uint32_t lo23 = __byte_perm(x[b][2], x[b][3], 0x5140);
    const std::uint32_t hi01 = __byte_perm(x[b][0], x[b][1], 0x7362);
    const std::uint32_t hi23 = __byte_perm(x[b][2], x[b][3], 0x7362);
    const std::uint32_t out[V] = {
        __byte_perm(lo01, lo23, 0x5410), __byte_perm(lo01, lo23, 0x7632),
        __byte_perm(hi01, hi23, 0x5410), __byte_perm(hi01, hi23, 0x7632)};
#pragma unroll
    for (int q = 0; q < V; ++q) tile[V * wc + q][k] = out[q];
  }
}

template <class T, int TileCols, int RowWords>
__global__ void __launch_bounds__(kThreads) plain_transpose_kernel(const PlainParams p) {
  using Word = WordOf<T>;
  constexpr int V = kPack<T>;
  constexpr int kWords = 32 * RowWords;  // words per out row of a tile
  constexpr int kRows = kWords * V;      // in rows of a tile
  constexpr int kItems = kWords * TileCols / kThreads;
  // NOTE: an odd number of words per shared row: the 32 lanes storing one word row across 32
  // columns hit 32 banks (8-byte words: each half-warp 16 bank pairs).
  __shared__ Word tile[TileCols][kWords + 1];
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  for (std::int64_t t = blockIdx.x; t < p.tiles; t += gridDim.x) {
    // NOTE: a 32-bit division where the tile count allows (any tensor that fits a GPU's
    // memory): a 64-bit one is a called routine of some 70 instructions, a tenth of a u8
    // tile's.
    std::int64_t tile_col;
    if (p.tiles <= 0xffffffff) {
      tile_col = static_cast<std::uint32_t>(t) / static_cast<std::uint32_t>(p.tiles_y);
    } else {
      tile_col = t / p.tiles_y;
    }
    const std::int64_t c0 = tile_col * TileCols;
    const std::int64_t r0 = (t - tile_col * p.tiles_y) * kRows;
    // NOTE: uniform across the block: the tile is inside the view or at its edge.
    const bool inside = r0 + kRows <= p.rows && c0 + TileCols <= p.cols;
    if (V == 4 && inside && c0 + TileCols + 4 <= p.cols) {
      if constexpr (V == 4) stage_word_blocks<T, TileCols, RowWords>(p, tile, c0, r0, lane, warp);
    } else {
      Word w[kItems];
      if (inside) {
        load_words<T, TileCols, RowWords, true>(p, c0, r0, lane, warp, w);
      } else {
        load_words<T, TileCols, RowWords, false>(p, c0, r0, lane, warp, w);
      }
#pragma unroll
      for (int it = 0; it < kItems; ++it) {
        const int c = (it % (TileCols / 32)) * 32 + lane;
        const int k = (it / (TileCols / 32)) * kWarps + warp;
        tile[c][k] = w[it];
      }
    }
    __syncthreads();
    store_out_rows<T, TileCols, RowWords>(p, tile, c0, r0, lane, warp);
    __syncthreads();
  }
}

template <class T, int TileCols, int RowWords>
void launch_typed(PlainParams p, cudaStream_t stream) {
  constexpr int kRows = 32 * RowWords * kPack<T>;
  p.tiles_y = (p.rows + kRows - 1) / kRows;
  p.tiles = p.tiles_y * ((p.cols + TileCols - 1) / TileCols);
  const unsigned grid = plain::blocks_for(static_cast<std::uint64_t>(p.tiles), 1, plain::kMaxGridX);
  plain_transpose_kernel<T, TileCols, RowWords><<<grid, kThreads, 0, stream>>>(p);
  check_launch("plain_transpose_kernel");
}

PlainParams params_of(ConstTensorRef in, TensorRef out) {
  PlainParams p{};
  p.in = static_cast<const std::uint8_t*>(in.data);
  p.out = static_cast<std::uint8_t*>(out.data);
  p.in_pitch = in.row_pitch();
  p.out_pitch = out.row_pitch();
  p.rows = static_cast<std::int64_t>(in.rows);
  p.cols = static_cast<std::int64_t>(in.cols);
  return p;
}

}  // namespace

void launch_plain(ConstTensorRef in, TensorRef out, cudaStream_t stream) {
  const PlainParams p = params_of(in, out);
  // NOTE: the tiles measured fastest at 8191 x 8193 on H200 (README.md): 512-byte spans of
  // out's rows and in-row spans of 32 or 64 elements; a taller tile then holds more registers
  // than it hides latency.
  switch (in.element_size()) {
    case 1: return launch_typed<std::uint8_t, 32, 4>(p, stream);
    case 2: return launch_typed<std::uint16_t, 64, 4>(p, stream);
    case 4: return launch_typed<std::uint32_t, 64, 4>(p, stream);
    default: return launch_typed<std::uint64_t, 64, 2>(p, stream);
  }
}

}  // namespace tmakit::detail::transpose
