// What the quantizer's launcher runs, as a pure function of the shape, the element size, the
// recipe and the SM count (tested on the host), and the checks of its arguments that need no
// driver. The kernels: sm90_quantize.cuh; the rules: README.md beside this file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tmakit/kernels/detail/launch_support.hpp"
#include "tmakit/kernels/gemm.hpp"
#include "tmakit/swizzle.hpp"  // TMAKIT_HOST_DEVICE
#include "tmakit/kernels/quantize.hpp"
#include "tmakit/kernels/tensor_ref.hpp"

namespace tmakit::detail::quantize {

// A tile is tile_rows rows x `boxes` TMA boxes of box_cols columns side by side; each box
// lands dense in shared memory (no swizzle), box j at j * tile_rows * box_cols elements.
// Boxes are kBoxCols wide (a block's 128 columns), the row recipe's kRowBoxCols (the widest
// box TMA takes: half the boxes per row, each twice the bytes).
inline constexpr std::uint32_t kBoxCols = 128;
inline constexpr std::uint32_t kRowBoxCols = 256;
inline constexpr std::uint32_t kThreads = 256;  // one CTA: 8 warps, every one a consumer
// The x bytes a row tile aims at (whole rows): with its fp8 output, four CTAs fit an SM.
inline constexpr std::uint32_t kRowTileTargetBytes = 32 * 1024;
// The most a tile of one row may take in shared memory, x and x_fp8 together (rule Q5).
inline constexpr std::uint32_t kMaxRowTileBytes = 200 * 1024;
// The most rows of a tile: a tile's groups (a row each at most) never outnumber its threads,
// and a 1 x 128 group keeps two of them. NOTE: 128 rows x 128 columns is 32 KiB of 16-bit x.
inline constexpr std::uint32_t kMaxTileRows = 128;
// Rule Q7's rows kernel: one CTA per row of x, each thread holding up to this many of its
// 16-byte vectors in registers, at most kMaxRowThreads threads (a row of up to 64 KiB)
inline constexpr std::uint32_t kRowVectorsPerThread = 4;
inline constexpr std::uint32_t kMaxRowThreads = 1024;
// ... and for the tensor recipe's rows past one an SM: R rows a CTA (a power of two), each
// thread holding up to kTensorRowVectorsPerThread vectors, at most kMaxTensorRowThreads
// threads a CTA and kTensorRowCtasPerSm CTAs an SM, so that every CTA is resident at its grid
// barrier (the kernel's registers, at most 64 a thread, hold two such CTAs an SM): up to
// 128 KiB of x an SM
inline constexpr std::uint32_t kTensorRowVectorsPerThread = 8;
inline constexpr std::uint32_t kMaxTensorRowThreads = 512;
inline constexpr std::uint32_t kTensorRowCtasPerSm = 2;
// ... for operand a's 1 x 128 blocks where the rows are few (at most kMaxSegmentCtasPerSm
// CTAs an SM): a CTA per segment of up to kSegmentVectors of a row's vectors, one a thread
inline constexpr std::uint32_t kSegmentVectors = 128;
inline constexpr std::uint32_t kMaxSegmentCtasPerSm = 128;
// ... and for rows of fewer than 32 x kRowVectorsPerThread vectors (the row and block
// recipes): a warp a row, R rows a CTA, so that a CTA holds this many vectors
inline constexpr std::uint32_t kShortRowCtaVectors = 128;
// Rule Q8's blocks kernel: a CTA per 128 x 128 block of operand b, each thread holding this
// many of its 16-byte vectors (256 threads for 16-bit x, 512 for fp32)
inline constexpr std::uint32_t kBlockVectorsPerThread = 8;

// The plan's rules, in the order tried; the first that applies picks the layout. (Rule Q5,
// the longest row the row recipe takes, is check_shapes's.)
struct QuantizeRule {
  const char* id;
  const char* when;
  const char* layout;
};
inline constexpr QuantizeRule kQuantizeRules[] = {
    {"Q7", "recipe row, block with operand a, or tensor where x fits the SMs' registers; rows "
     "of 32 to kMaxRowThreads x kRowVectorsPerThread 16-byte vectors (512 bytes to 64 KiB)",
     "the rows kernel: one CTA per row, the row's vectors in registers (plain 16-byte loads), "
     "each 1 x 128 block's amax across its threads by shuffles (block), or the row's across "
     "the CTA; cast and stored with plain stores. Rows of fewer than 128 vectors (row and "
     "block recipes): a warp a row at 1, 2 or 4 vectors a thread, rows a CTA until it holds "
     "kShortRowCtaVectors. Operand a's longer rows where rows x segments is at most "
     "kMaxSegmentCtasPerSm CTAs an SM: a CTA per segment of kSegmentVectors vectors of a row, "
     "a vector a thread, the segments on the grid's y. The tensor recipe: a cooperative launch "
     "whose CTAs meet at rule Q6's grid barrier, a CTA per row where the rows are at most one "
     "an SM, else R rows a CTA (R a power of two, up to kTensorRowVectorsPerThread vectors a "
     "thread, kMaxTensorRowThreads threads a CTA, kTensorRowCtasPerSm CTAs an SM)"},
    {"Q6", "recipe tensor, and its tiles (not halved) no more than the SMs hold at once",
     "one cooperative launch of the tile kernel: each CTA loads its tile and takes its amax, the "
     "CTAs meet at a grid barrier for the tensor's amax, then each casts and stores the tile it "
     "holds: x read once. Tiles of whole rows as rule Q2's where K has one box of runs and they "
     "are at least one an SM, else of up to 128 rows x 128 columns"},
    {"Q1", "recipe tensor",
     "an amax kernel over all of x (plain 16-byte loads), a one-thread kernel that turns it "
     "into the scale, then the cast: tiles of up to 128 rows x 128 columns (rule Q6's, where "
     "a call planned for Q6 can have no grid barrier), walked last to first"},
    {"Q2", "recipe row",
     "tiles of whole rows: R rows (a power of two up to 128, about 32 KiB of x), loaded as one "
     "3-D box of c x K / c x R (c the greatest power of two <= 256 dividing K) where K / c <= "
     "256, else as ceil(K / 256) boxes of 256 columns; a group per row"},
    {"Q3", "recipe block, operand a",
     "tiles of up to 128 rows x 128 columns; a group per row of the tile (1 x 128)"},
    {"Q8", "recipe block, operand b; at most 65535 blocks down the rows",
     "the blocks kernel: a CTA per 128 x 128 block (256 threads for 16-bit x, 512 for fp32), "
     "its vectors in registers (plain 16-byte loads, kBlockVectorsPerThread a thread, a warp "
     "reading whole row segments), the block's amax across the CTA, cast and stored with "
     "plain stores"},
    {"Q4", "recipe block, operand b, past rule Q8's rows",
     "tiles of 128 rows x 128 columns; one group (128 x 128)"},
};
inline constexpr int kQuantizeRuleCount =
    static_cast<int>(sizeof kQuantizeRules / sizeof kQuantizeRules[0]);

// The index of rule `id` in kQuantizeRules (-1 if none).
constexpr int quantize_rule_index(std::string_view id) {
  for (int i = 0; i < kQuantizeRuleCount; ++i) {
    if (id == kQuantizeRules[i].id) return i;
  }
  return -1;
}

// What an SM holds of the tile kernel (rule Q6's test): sm_90's 228 KiB of shared memory an
// SM, of which the runtime keeps 1 KiB per CTA, and at most kMaxCtasPerSm CTAs (the kernel's
// __launch_bounds__, which keeps registers for that many). The launcher checks the device's
// shared memory per SM and per CTA against these before it relies on them.
inline constexpr std::uint32_t kSmemPerSmBytes = 228 * 1024;
inline constexpr std::uint32_t kSmemReservedPerCtaBytes = 1024;
inline constexpr std::uint32_t kMaxCtasPerSm = 4;
constexpr std::uint32_t tile_ctas_per_sm(std::uint32_t smem_bytes) {
  const std::uint32_t fit = kSmemPerSmBytes / (smem_bytes + kSmemReservedPerCtaBytes);
  return fit < kMaxCtasPerSm ? fit : kMaxCtasPerSm;
}
// The grid counters of a rule-Q6 call (its stream's, or a captured call's own): arrivals,
// the amax's bits, departures; zero before and after each call.
inline constexpr std::size_t kGridCounters = 3;

// Where x_fp8's buffer starts in a tile's shared memory, after x's in_bytes: on 128 bytes
// (TMA's shared-memory alignment, rule D1). Host and device.
TMAKIT_HOST_DEVICE constexpr std::uint32_t out_buffer_offset(std::uint32_t in_bytes) {
  return (in_bytes + 127u) & ~127u;
}

struct QuantizePlan {
  int rule = 0;                   // index into kQuantizeRules
  bool amax_pass = false;         // the tensor recipe: amax kernel + scale kernel before the cast
  bool resident = false;          // Q6: one cooperative launch, every tile's CTA resident at once
  bool reverse_tiles = false;     // Q1: CTA i casts tile tiles() - 1 - i (the amax pass's last
                                  // reads are still in the L2)
  bool fused_amax = false;        // row and block: each group's amax taken from the tile in hand
  // Q7: the rows kernel, one CTA of row_threads per row (the tile fields below then describe
  // the tiles the launcher falls back to for the tensor recipe: two_pass)
  bool in_registers = false;
  bool row_blocks = false;  // Q7 for operand a's block recipe: a scale per 1 x 128 of the row
  bool square_blocks = false;  // Q8: the blocks kernel, a CTA of row_threads per 128 x 128 block
  std::uint32_t row_threads = 0;        // a row's threads (a power of two)
  std::uint32_t rows_per_cta = 0;       // R: CTAs of R * row_threads threads
  std::uint32_t row_segments = 0;       // CTAs a row (R = 1): its segments of
                                        // row_threads * vectors_per_thread vectors
  std::uint32_t vectors_per_thread = 0; // a thread's: 1 or 2 (short rows, segments),
                                        // kRowVectorsPerThread or kTensorRowVectorsPerThread
  std::uint32_t tile_rows = 0;    // rows of a tile = rows of each TMA box (a power of two)
  std::uint32_t box_cols = 0;     // columns of a box: kBoxCols, kRowBoxCols, or K (row_chunk)
  std::uint32_t boxes = 0;        // boxes side by side
  // A tile of whole rows as one box (rules Q2, Q6): 0, or c (box_cols = K, boxes = 1): x's
  // rows as K / c runs of c columns, the box {c, K / c, tile_rows}; the tile lands as dense rows
  std::uint32_t row_chunk = 0;
  std::uint32_t group_rows = 0;   // a group's rows within the tile
  std::uint32_t group_boxes = 0;  // a group's boxes within the tile
  std::int64_t tiles_x = 0, tiles_y = 0;     // tiles along K and down the rows
  std::uint32_t in_bytes = 0;                // x per tile in shared memory
  std::uint32_t out_bytes = 0;               // x_fp8 per tile
  std::uint32_t smem_bytes = 0;              // dynamic shared memory per CTA (with alignment slack)
  QuantizeScaleShape scales;                 // the scale array's extents
  std::int64_t stride_mn = 0, stride_k = 0;  // its strides in elements, defaults resolved

  const char* id() const { return kQuantizeRules[rule].id; }
  std::uint32_t groups_per_tile() const { return (tile_rows / group_rows) * (boxes / group_boxes); }
  std::uint32_t threads_per_group() const { return kThreads / groups_per_tile(); }
  std::int64_t tiles() const { return tiles_x * tiles_y; }
};

// The plan for checked arguments (check_shapes passed): x rows x cols of `element_bytes`.
QuantizePlan plan_quantize(std::uint64_t rows, std::uint64_t cols, std::uint32_t element_bytes,
                           GemmScaleRecipe recipe, QuantizeOperand operand,
                           const GemmScaleStrides& strides, int sm_count);

// Rule Q6's or Q7's plan for the tensor recipe as rule Q1 (the tile kernel on the tiles
// planned, the amax and scale kernels first): what the launcher runs where the grid barrier
// cannot be had (no counters for the stream, or an SM that holds fewer CTAs than the plan
// counted). Any other plan is returned as it is.
QuantizePlan two_pass(QuantizePlan resident);

// The row recipe's tile as one box (QuantizePlan::row_chunk): v's rows as cols / chunk runs of
// `chunk` elements, {chunk, cols / chunk, rows}, boxes of tile_rows whole rows.
template <class P>
inline TensorMapSpec row_runs_spec(const BasicTensorRef<P>& v, DataType map_type, std::uint32_t chunk,
                            std::uint32_t tile_rows) {
  TensorMapSpec s = view_spec(v, map_type, {chunk, 1, 1}, Swizzle::none);
  const std::uint64_t run_bytes = chunk * static_cast<std::uint64_t>(element_bytes(map_type));
  s.rank = 3;
  s.global_dim = {chunk, v.cols / chunk, v.rows, 1, 1};
  s.global_strides_bytes = {run_bytes, s.global_strides_bytes[0], 0, 0};
  s.box_dim = {chunk, static_cast<std::uint32_t>(v.cols / chunk), tile_rows, 1, 1};
  return s;
}

// Every check of the arguments but the addresses (rules Q5 and the views'): ArgumentError
// naming "x.type", "x.cols", "x_fp8", "recipe", "operand", "scale_strides", ...
void check_shapes(ConstTensorRef x, TensorRef x_fp8, GemmScaleRecipe recipe,
                  QuantizeOperand operand, const GemmScaleStrides& strides);
// The grid: the tiles of `fewest` (x planned for one SM, the fewest tiles any SM count makes)
// within 2^31 - 1 CTAs.
void check_tile_count(ConstTensorRef x, const QuantizePlan& fewest);
// The addresses: x and x_fp8 16-byte aligned and not null, scale not null and 4-byte
// aligned, none of the three overlapping (the scale array's span from the plan).
void check_addresses(ConstTensorRef x, TensorRef x_fp8, const float* scale,
                     const QuantizePlan& plan);

}  // namespace tmakit::detail::quantize
