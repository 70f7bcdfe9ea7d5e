// The FP8 quantizer without a GPU: the plan (which layout, tiles and scale layout a shape
// gets), the launcher's refusals naming the argument (before any CUDA call; the pointers are
// never dereferenced), the e4m3 encoder and the CPU reference's stated rules (scale, rounding,
// non-finite x, the scale layouts).
#include <cuda_bf16.h>
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "quantize/quantize_plan.hpp"
#include "refusal.hpp"
#include "tmakit/host/validate.hpp"
#include "tmakit/kernels/gemm.hpp"
#include "tmakit/kernels/quantize.hpp"

namespace tmakit {
namespace {

using detail::quantize::plan_quantize;
using detail::quantize::QuantizePlan;
using R = GemmScaleRecipe;
using O = QuantizeOperand;

using test::fake;
using test::refused;

constexpr std::uintptr_t kX = 0x10000000, kQ = 0x20000000, kS = 0x30000000;

// ---- the plan -------------------------------------------------------------------------

TEST(QuantizePlan, RowRecipeTakesWholeRowsOfAbout32KiB) {
  // rows of more than 64 KiB (40960 bf16) are past what the rows kernel holds (rule Q7)
  const QuantizePlan p = plan_quantize(8192, 40960, 2, R::row, O::a, {}, 132);
  EXPECT_STREQ(p.id(), "Q2");
  EXPECT_FALSE(p.in_registers);
  EXPECT_FALSE(p.amax_pass);
  EXPECT_TRUE(p.fused_amax);
  // one box per tile: the rows as 160 runs of 256 columns
  EXPECT_EQ(p.row_chunk, 256u);
  EXPECT_EQ(p.box_cols, 40960u);
  EXPECT_EQ(p.boxes, 1u);
  EXPECT_EQ(p.tile_rows, 1u);  // 80 KiB rows
  EXPECT_EQ(p.tiles_x, 1);
  EXPECT_EQ(p.tiles_y, 8192);
  EXPECT_EQ(p.group_rows, 1u);
  EXPECT_EQ(p.groups_per_tile(), 1u);
  EXPECT_EQ(p.threads_per_group(), 256u);
  EXPECT_EQ(p.in_bytes, 81920u);
  EXPECT_EQ(p.out_bytes, 40960u);
  EXPECT_EQ(p.smem_bytes, 81920u + 40960u + 1024u + 16u + 1024u);
  EXPECT_EQ(p.scales.mn, 8192u);
  EXPECT_EQ(p.scales.k, 1u);
  EXPECT_EQ(p.stride_mn, 1);
  // fp32 rows just past 64 KiB (16400 columns): a row a tile
  const QuantizePlan two = plan_quantize(8192, 16400, 4, R::row, O::a, {}, 132);
  EXPECT_STREQ(two.id(), "Q2");
  EXPECT_EQ(two.tile_rows, 1u);
  // short rows (K = 16: one run of 16 columns, 32 bytes): the most rows a tile takes
  const QuantizePlan short_rows = plan_quantize(4096, 16, 2, R::row, O::a, {}, 1);
  EXPECT_EQ(short_rows.row_chunk, 16u);
  EXPECT_EQ(short_rows.tile_rows, 128u);
  EXPECT_EQ(short_rows.in_bytes, 4096u);
  // a row of more than 32 KiB: one per tile
  EXPECT_EQ(plan_quantize(64, 16384, 4, R::row, O::a, {}, 1).tile_rows, 1u);
}

// Rule Q7: rows of 512 bytes (32 vectors) to 64 KiB (1024 threads x 4 vectors) go through
// registers, one CTA per row (rows of 128 vectors or more), for the row recipe and operand a's
// blocks at any row count and the tensor recipe where the rows are no more than the SMs;
// operand b's blocks never. (Operand a's segments and short rows: the tests after this one.)
TEST(QuantizePlan, RowsOfHalfAKiBTo64KiBGoThroughRegisters) {
  struct Case {
    std::uint64_t rows, cols;
    std::uint32_t element_bytes;
    std::uint32_t threads;  // 0: not rule Q7
  };
  for (const Case c : {Case{8192, 8192, 2, 256}, Case{16, 7168, 2, 256}, Case{1, 7168, 2, 256},
                       Case{8192, 1024, 2, 32}, Case{5, 240, 2, 0}, Case{64, 16384, 4, 1024},
                       Case{64, 16400, 4, 0}, Case{3, 32768, 2, 1024}, Case{3, 32784, 2, 0},
                       Case{7, 4112, 2, 256}}) {
    const QuantizePlan p = plan_quantize(c.rows, c.cols, c.element_bytes, R::row, O::a, {}, 132);
    SCOPED_TRACE(std::to_string(c.rows) + "x" + std::to_string(c.cols));
    EXPECT_EQ(p.in_registers, c.threads != 0);
    EXPECT_STREQ(p.id(), c.threads != 0 ? "Q7" : "Q2");
    EXPECT_EQ(p.row_threads, c.threads);
    EXPECT_FALSE(p.row_blocks);
    EXPECT_EQ(p.rows_per_cta, c.threads != 0 ? 1u : 0u);
    EXPECT_EQ(p.row_segments, c.threads != 0 ? 1u : 0u);
    EXPECT_EQ(p.vectors_per_thread, c.threads != 0 ? 4u : 0u);
    // operand a's 1 x 128 blocks: the same rule, a scale per block; the same threads but
    // where the rows are few enough for segments, a vector a thread (16 x 7168, 8192 x 1024)
    const QuantizePlan a =
        plan_quantize(c.rows, c.cols, c.element_bytes, R::block, O::a, {}, 132);
    EXPECT_STREQ(a.id(), c.threads != 0 ? "Q7" : "Q3");
    EXPECT_EQ(a.in_registers, c.threads != 0);
    EXPECT_EQ(a.row_blocks, c.threads != 0);
    if (a.vectors_per_thread == 4) {
      EXPECT_EQ(a.row_threads, c.threads);
    }
    EXPECT_FALSE(a.resident);
    EXPECT_EQ(a.scales.mn, c.rows);
    EXPECT_EQ(a.scales.k, (c.cols + 127) / 128);
    EXPECT_EQ(a.stride_mn, 1);  // M-major, the GEMM's layout
    EXPECT_EQ(a.stride_k, static_cast<std::int64_t>(c.rows));
    // a 1 x 128 block is 16 (16-bit x) or 32 (fp32) vectors: never more threads than a warp
    EXPECT_EQ(c.threads % 32, 0u);
    EXPECT_FALSE(p.resident);  // the row recipe needs no grid barrier
    EXPECT_FALSE(p.amax_pass);
    EXPECT_EQ(p.scales.mn, c.rows);
    EXPECT_EQ(p.stride_mn, 1);
    // rows of 16-byte vectors: a thread holds at most four
    if (c.threads != 0) {
      EXPECT_LE(c.cols * c.element_bytes / 16, 4u * c.threads);
      EXPECT_TRUE(c.threads == 32 || c.cols * c.element_bytes / 16 > 4u * c.threads / 2);
    }
  }
  // the row scales' stride as given
  EXPECT_EQ(plan_quantize(16, 7168, 2, R::row, O::a, {3, -1}, 132).stride_mn, 3);
  // operand a's block scales at the strides given; operand b's blocks (128 rows) keep their
  // tiles at every size
  const QuantizePlan row_major = plan_quantize(16, 7168, 2, R::block, O::a, {56, 1}, 132);
  EXPECT_TRUE(row_major.row_blocks);
  EXPECT_EQ(row_major.stride_mn, 56);
  EXPECT_EQ(row_major.stride_k, 1);
  // operand b's 128 x 128 blocks span 128 rows: rule Q8's blocks kernel, not the rows kernel
  for (const QuantizePlan& b : {plan_quantize(16, 7168, 2, R::block, O::b, {}, 132),
                                plan_quantize(8192, 8192, 2, R::block, O::b, {}, 132)}) {
    EXPECT_STREQ(b.id(), "Q8");
    EXPECT_TRUE(b.square_blocks);
    EXPECT_FALSE(b.row_blocks);
  }

  // the tensor recipe: at most one row an SM (all resident at its grid barrier)
  const QuantizePlan t = plan_quantize(132, 7168, 2, R::tensor, O::a, {}, 132);
  EXPECT_STREQ(t.id(), "Q7");
  EXPECT_TRUE(t.in_registers);
  EXPECT_TRUE(t.resident);
  EXPECT_TRUE(t.fused_amax);
  EXPECT_FALSE(t.amax_pass);
  EXPECT_FALSE(t.reverse_tiles);
  EXPECT_EQ(t.row_threads, 256u);
  EXPECT_EQ(t.rows_per_cta, 1u);
  EXPECT_EQ(t.vectors_per_thread, 4u);
  // the launcher's way back without counters: Q1 on the tiles the plan holds
  const QuantizePlan back = detail::quantize::two_pass(t);
  EXPECT_STREQ(back.id(), "Q1");
  EXPECT_FALSE(back.in_registers);
  EXPECT_FALSE(back.resident);
  EXPECT_TRUE(back.amax_pass);
  EXPECT_FALSE(back.fused_amax);
  EXPECT_TRUE(back.reverse_tiles);
  EXPECT_EQ(back.tile_rows, 128u);
  EXPECT_EQ(back.tiles(), 56 * 2);
  EXPECT_GT(back.smem_bytes, back.in_bytes + back.out_bytes);
}

// Rule Q7's short rows (fewer than 128 vectors, the row and block recipes): a warp a row, the
// fewest vectors a thread that let it hold the row, and rows a CTA until it holds
// kShortRowCtaVectors; the tensor recipe keeps its own rows a CTA, operand b its blocks.
TEST(QuantizePlan, ShortRowsTakeAWarpEachAndShareACta) {
  struct Case {
    std::uint64_t cols;
    std::uint32_t element_bytes;
    std::uint32_t vectors, rows_per_cta;
  };
  for (const Case c : {Case{256, 2, 1, 4}, Case{272, 2, 2, 2}, Case{512, 2, 2, 2},
                       Case{528, 2, 4, 1}, Case{1008, 2, 4, 1}, Case{128, 4, 1, 4},
                       Case{144, 4, 2, 2}, Case{496, 4, 4, 1}}) {
    for (const R recipe : {R::row, R::block}) {
      for (const std::uint64_t rows : {1ull, 4097ull, 1ull << 20}) {
        SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(c.cols) + " fp" +
                     std::to_string(8 * c.element_bytes));
        const QuantizePlan p = plan_quantize(rows, c.cols, c.element_bytes, recipe, O::a, {}, 132);
        EXPECT_STREQ(p.id(), "Q7");
        EXPECT_EQ(p.row_threads, 32u);
        EXPECT_EQ(p.vectors_per_thread, c.vectors);
        EXPECT_EQ(p.rows_per_cta, c.rows_per_cta);
        EXPECT_EQ(p.row_segments, 1u);
        EXPECT_EQ(p.row_blocks, recipe == R::block);
        // a warp holds the row, and not with half the vectors a thread
        const std::uint64_t row_vectors = c.cols * c.element_bytes / 16;
        EXPECT_LE(row_vectors, 32u * c.vectors);
        EXPECT_TRUE(c.vectors == 1 || row_vectors > 16u * c.vectors);
        EXPECT_EQ(32u * c.vectors * c.rows_per_cta,
                  c.vectors == 4 ? 128u : detail::quantize::kShortRowCtaVectors);
      }
    }
  }
  // the tensor recipe's rows past one an SM keep their own R (8 vectors a thread)
  const QuantizePlan t = plan_quantize(300, 256, 2, R::tensor, O::a, {}, 132);
  EXPECT_EQ(t.vectors_per_thread, detail::quantize::kTensorRowVectorsPerThread);
  EXPECT_TRUE(t.resident);
  EXPECT_STREQ(plan_quantize(4097, 256, 2, R::block, O::b, {}, 132).id(), "Q8");
}

// Operand a's segments: a CTA per 128 vectors of a row (a vector a thread, the last segment
// part full) while rows x segments is at most kMaxSegmentCtasPerSm CTAs an SM; past it a CTA a
// row. Rows of 128 vectors are one segment; the row recipe never takes segments.
TEST(QuantizePlan, OperandAInSegmentsWhereTheRowsAreFew) {
  constexpr std::uint32_t kPerSm = detail::quantize::kMaxSegmentCtasPerSm;
  struct Case {
    std::uint64_t rows, cols;
    std::uint32_t element_bytes;
    int sms;
    std::uint32_t segments;  // 0: a CTA a row (4 vectors a thread)
  };
  for (const Case c : {Case{16, 7168, 2, 132, 7}, Case{1024, 7168, 2, 132, 7},
                       Case{132 * kPerSm / 7, 7168, 2, 132, 7},
                       Case{132 * kPerSm / 7 + 1, 7168, 2, 132, 0},
                       Case{132 * kPerSm / 7 + 1, 7168, 2, 133, 7},
                       Case{8192, 8192, 2, 132, 0}, Case{33, 7184, 2, 132, 8},
                       Case{5, 7168, 4, 132, 14}, Case{301, 1040, 2, 132, 2},
                       Case{1024, 16384, 2, 132, 16}, Case{1, 32768, 2, 1, 32},
                       Case{777, 1024, 2, 132, 1}}) {
    SCOPED_TRACE(std::to_string(c.rows) + "x" + std::to_string(c.cols) + " on " +
                 std::to_string(c.sms) + " SMs");
    const QuantizePlan a =
        plan_quantize(c.rows, c.cols, c.element_bytes, R::block, O::a, {}, c.sms);
    EXPECT_STREQ(a.id(), "Q7");
    EXPECT_TRUE(a.row_blocks);
    EXPECT_EQ(a.rows_per_cta, 1u);
    if (c.segments == 0) {
      EXPECT_EQ(a.row_segments, 1u);
      EXPECT_EQ(a.vectors_per_thread, 4u);
      EXPECT_GT(c.rows * ((c.cols * c.element_bytes / 16 + 127) / 128),
                static_cast<std::uint64_t>(c.sms) * kPerSm);
      continue;
    }
    EXPECT_EQ(a.row_segments, c.segments);
    EXPECT_EQ(a.vectors_per_thread, 1u);
    EXPECT_EQ(a.row_threads, detail::quantize::kSegmentVectors);
    EXPECT_LE(c.rows * c.segments, static_cast<std::uint64_t>(c.sms) * kPerSm);
    // the row recipe needs the whole row's amax in one CTA
    EXPECT_EQ(plan_quantize(c.rows, c.cols, c.element_bytes, R::row, O::a, {}, c.sms).row_segments,
              1u);
  }
  // the rows are the grid's x (segments its y): past 65535 rows too
  EXPECT_EQ(plan_quantize(65536, 2048, 2, R::block, O::a, {}, 4096).row_segments, 2u);
}

TEST(QuantizePlan, RowRecipeRunsAreTheGreatestPowerOfTwoThatFitsOneBox) {
  struct Case {
    std::uint64_t k;
    std::uint32_t chunk;  // 0: boxes of 256 columns
    std::uint32_t boxes;
  };
  // 7168 = 28 x 256; 272 = 17 x 16; 4112 = 257 x 16 (more runs than a box dimension takes:
  // rule T7); 65536 = 256 x 256; 384 = 3 x 128
  for (const Case c : {Case{7168, 256, 1}, Case{272, 16, 1}, Case{4112, 0, 17}, Case{65536, 256, 1},
                       Case{384, 128, 1}}) {
    const QuantizePlan p = plan_quantize(1024, c.k, 2, R::row, O::a, {}, 132);
    EXPECT_EQ(p.row_chunk, c.chunk) << c.k;
    EXPECT_EQ(p.boxes, c.boxes) << c.k;
    EXPECT_EQ(p.box_cols, c.chunk != 0 ? c.k : 256u) << c.k;
    EXPECT_EQ(p.tiles_x, 1) << c.k;
    EXPECT_EQ(p.group_rows, 1u) << c.k;  // (the kernel's row_cols offsets assume it)
    EXPECT_EQ(p.in_bytes, p.tile_rows * p.boxes * p.box_cols * 2u) << c.k;
  }
  // x_fp8's buffer starts on 128 bytes after x's (TMA's shared-memory alignment): one row of
  // 272 bf16 is 544 bytes
  const QuantizePlan odd = plan_quantize(5, 272, 2, R::row, O::a, {}, 132);
  EXPECT_EQ(odd.tile_rows, 1u);
  EXPECT_EQ(odd.in_bytes, 544u);
  EXPECT_EQ(detail::quantize::out_buffer_offset(odd.in_bytes), 640u);
  EXPECT_EQ(odd.smem_bytes, 640u + 272u + 1024u + 16u + 1024u);
  EXPECT_EQ(detail::quantize::out_buffer_offset(32768), 32768u);
  // the other recipes never take runs
  EXPECT_EQ(plan_quantize(1024, 7168, 2, R::block, O::a, {}, 132).row_chunk, 0u);
  EXPECT_EQ(plan_quantize(1024, 7168, 2, R::block, O::b, {}, 132).row_chunk, 0u);
  // (the tensor recipe's rule Q6 may: TensorRecipeOnRowTilesWhereTheyFillTheSms)
}

// The launcher's maps for row runs (x and x_fp8) pass every rule tmakit checks, and cover
// exactly the rows: K / c runs of c, each run's bytes the next run's stride.
TEST(QuantizePlan, RowRunMapsPassTheRules) {
  for (const std::uint64_t k : {7168ull, 272ull, 16ull, 65536ull}) {
    for (const std::uint32_t esize : {2u, 4u}) {
      const std::uint64_t rows = 300;
      if (k * esize > 200 * 1024 * 2 / 3) continue;  // (rule Q5's longest row)
      const QuantizePlan p = plan_quantize(rows, k, esize, R::row, O::a, {}, 132);
      ASSERT_NE(p.row_chunk, 0u) << k;
      const DataType t = esize == 2 ? DataType::bfloat16 : DataType::float32;
      const ConstTensorRef x{reinterpret_cast<const void*>(kX), t, rows, k, (k + 8) * esize};
      const TensorRef q{reinterpret_cast<void*>(kQ), DataType::uint8, rows, k, k};
      const TensorMapSpec in = detail::quantize::row_runs_spec(x, t, p.row_chunk, p.tile_rows);
      const TensorMapSpec out =
          detail::quantize::row_runs_spec(q, DataType::uint8, p.row_chunk, p.tile_rows);
      EXPECT_NO_THROW(validate(in)) << k << " " << esize;
      EXPECT_NO_THROW(validate(out)) << k << " " << esize;
      EXPECT_EQ(in.rank, 3u);
      EXPECT_EQ(in.global_dim[0] * in.global_dim[1], k);
      EXPECT_EQ(in.global_dim[2], rows);
      EXPECT_EQ(in.global_strides_bytes[0], p.row_chunk * esize);
      EXPECT_EQ(in.global_strides_bytes[1], (k + 8) * esize);
      EXPECT_EQ(in.box_dim[0] * in.box_dim[1] * in.box_dim[2] * esize, p.in_bytes);
      EXPECT_EQ(out.box_dim[0] * out.box_dim[1] * out.box_dim[2], p.out_bytes);
      EXPECT_EQ(out.global_strides_bytes[1], k);
    }
  }
}

TEST(QuantizePlan, FewTilesHalveTheirRowsUntilEverySmHasOne) {
  // 16 x 128 bf16 rows (too short for rule Q7): 16 rows a tile would make one tile
  const QuantizePlan row = plan_quantize(16, 128, 2, R::row, O::a, {}, 132);
  EXPECT_STREQ(row.id(), "Q2");
  EXPECT_EQ(row.tile_rows, 1u);
  EXPECT_EQ(row.tiles(), 16);
  // 16 x 16400 fp32 (rows past rule Q7's 64 KiB): 129 tiles of 16 rows, 258 of 8
  const QuantizePlan a = plan_quantize(16, 16400, 4, R::block, O::a, {}, 132);
  EXPECT_STREQ(a.id(), "Q3");
  EXPECT_EQ(a.tile_rows, 8u);
  EXPECT_EQ(a.tiles_x, 129);
  EXPECT_EQ(a.tiles_y, 2);
  // one SM: the rows a power of two holds, at most 128
  EXPECT_EQ(plan_quantize(16, 16400, 4, R::block, O::a, {}, 1).tile_rows, 16u);
  EXPECT_EQ(plan_quantize(129, 16400, 4, R::block, O::a, {}, 1).tile_rows, 128u);
  EXPECT_EQ(plan_quantize(1, 16, 2, R::block, O::a, {}, 132).tile_rows, 1u);
}

TEST(QuantizePlan, BlockRecipeLayoutsAreTheGemms) {
  const QuantizePlan a = plan_quantize(8192, 8192, 2, R::block, O::a, {}, 132);
  EXPECT_EQ(a.tile_rows, 128u);
  EXPECT_EQ(a.box_cols, 128u);
  EXPECT_EQ(a.boxes, 1u);
  EXPECT_EQ(a.groups_per_tile(), 128u);  // a 1 x 128 group per row
  EXPECT_EQ(a.threads_per_group(), 2u);
  EXPECT_EQ(a.scales.mn, 8192u);
  EXPECT_EQ(a.scales.k, 64u);
  EXPECT_EQ(a.stride_mn, 1);  // M-major, torch's layout of scale_a
  EXPECT_EQ(a.stride_k, 8192);
  const QuantizePlan b = plan_quantize(8192, 8192, 2, R::block, O::b, {}, 132);
  EXPECT_STREQ(b.id(), "Q8");
  EXPECT_TRUE(b.in_registers);
  EXPECT_TRUE(b.square_blocks);
  // a CTA per block, 8 of its 16-byte vectors a thread: 128 rows x 16 vectors of bf16
  EXPECT_EQ(b.row_threads, 256u);
  EXPECT_EQ(plan_quantize(8192, 8192, 4, R::block, O::b, {}, 132).row_threads, 512u);
  // rule Q4's tiles (the layout Q8 falls back to past 65535 blocks down the rows)
  EXPECT_EQ(b.tile_rows, 128u);
  EXPECT_EQ(b.groups_per_tile(), 1u);
  EXPECT_EQ(b.threads_per_group(), 256u);
  EXPECT_EQ(b.scales.mn, 64u);
  EXPECT_EQ(b.scales.k, 64u);
  EXPECT_EQ(b.stride_mn, 64);  // row-major
  EXPECT_EQ(b.stride_k, 1);
  // a 128 x 128 block is never split; fewer rows load as the power of two holding them
  EXPECT_EQ(plan_quantize(7, 144, 4, R::block, O::b, {}, 132).tile_rows, 8u);
  EXPECT_EQ(plan_quantize(7, 144, 4, R::block, O::b, {}, 132).scales.mn, 1u);
  EXPECT_EQ(plan_quantize(129, 144, 4, R::block, O::b, {}, 132).tiles(), 4);
  const QuantizePlan most = plan_quantize(65535ull * 128, 16, 2, R::block, O::b, {}, 132);
  EXPECT_STREQ(most.id(), "Q8");
  const QuantizePlan past = plan_quantize(65535ull * 128 + 1, 16, 2, R::block, O::b, {}, 132);
  EXPECT_STREQ(past.id(), "Q4");
  EXPECT_FALSE(past.in_registers);
  EXPECT_FALSE(past.square_blocks);
  // strides given are kept
  const QuantizePlan s = plan_quantize(129, 144, 2, R::block, O::a, {2, 300}, 1);
  EXPECT_EQ(s.stride_mn, 2);
  EXPECT_EQ(s.stride_k, 300);
}

TEST(QuantizePlan, TensorRecipeRunsTheAmaxPassFirst) {
  const QuantizePlan t = plan_quantize(8192, 8192, 2, R::tensor, O::a, {}, 132);
  EXPECT_STREQ(t.id(), "Q1");
  EXPECT_TRUE(t.amax_pass);
  EXPECT_FALSE(t.fused_amax);
  EXPECT_TRUE(t.reverse_tiles);  // the cast starts where the amax pass ended
  EXPECT_EQ(t.row_chunk, 0u);
  // past what 4 SMs hold (16 tiles; 32 row tiles of 2 rows), the same 56 tiles of 64 rows in
  // two passes (tiles halve only where they are fewer than the SMs, and then they are
  // resident: rule Q6)
  const QuantizePlan past = plan_quantize(64, 7168, 2, R::tensor, O::a, {}, 4);
  EXPECT_STREQ(past.id(), "Q1");
  EXPECT_EQ(past.tile_rows, 64u);
  EXPECT_EQ(past.tiles(), 56);
  EXPECT_EQ(past.row_chunk, 0u);
  EXPECT_EQ(t.groups_per_tile(), 1u);
  EXPECT_EQ(t.tiles(), 64 * 64);
  EXPECT_EQ(t.scales.mn, 1u);
  EXPECT_EQ(t.scales.k, 1u);
}

// Rule Q7 for the tensor recipe past one row an SM: R rows a CTA (the fewest that leave at
// most two CTAs an SM, a CTA at least a warp), eight vectors a thread, at most 512 threads a
// CTA; past that, rule Q6 or Q1.
TEST(QuantizePlan, TensorRecipeInRegistersWhereXFitsTheSms) {
  static_assert(detail::quantize::quantize_rule_index("Q7") == 0);
  static_assert(detail::quantize::quantize_rule_index("Q6") == 1);
  static_assert(detail::quantize::quantize_rule_index("Q1") == 2);
  static_assert(detail::quantize::quantize_rule_index("Q9") == -1);
  struct Case {
    std::uint64_t rows, cols;
    std::uint32_t element_bytes;
    int sms;
    std::uint32_t rows_per_cta, threads;  // 0: not rule Q7
  };
  for (const Case c : {Case{1024, 7168, 2, 132, 4, 128},  // 256 CTAs of 4 rows
                       Case{1056, 7168, 2, 132, 4, 128},  // 264: two an SM
                       Case{1057, 7168, 2, 132, 0, 0},    // 8 rows a CTA would be 1024 threads
                       Case{133, 7168, 2, 132, 1, 128},   // one row a CTA, two an SM
                       Case{256, 1024, 2, 132, 2, 16},    // 16 threads a row: a warp a CTA
                       Case{16896, 272, 2, 132, 64, 8},   // 34 vectors a row: 8 threads
                       Case{16897, 272, 2, 132, 0, 0},
                       Case{528, 7168, 4, 132, 2, 256},   // fp32
                       Case{529, 7168, 4, 132, 0, 0},
                       Case{1024, 7168, 2, 66, 0, 0},     // fewer SMs
                       Case{256, 240, 2, 132, 0, 0},      // rows under 512 bytes
                       Case{256, 33024, 2, 132, 0, 0}}) { // rows over 64 KiB
    SCOPED_TRACE(std::to_string(c.rows) + "x" + std::to_string(c.cols) + " on " +
                 std::to_string(c.sms) + " SMs");
    const QuantizePlan p = plan_quantize(c.rows, c.cols, c.element_bytes, R::tensor, O::a, {}, c.sms);
    EXPECT_EQ(p.in_registers, c.rows_per_cta != 0);
    if (c.rows_per_cta == 0) {
      EXPECT_STRNE(p.id(), "Q7");
      continue;
    }
    EXPECT_STREQ(p.id(), "Q7");
    EXPECT_EQ(p.rows_per_cta, c.rows_per_cta);
    EXPECT_EQ(p.row_threads, c.threads);
    EXPECT_EQ(p.vectors_per_thread, detail::quantize::kTensorRowVectorsPerThread);
    EXPECT_TRUE(p.resident);
    EXPECT_TRUE(p.fused_amax);
    EXPECT_FALSE(p.amax_pass);
    EXPECT_FALSE(p.row_blocks);
    // every vector of a row has a thread, every CTA a whole warp, at most two CTAs an SM
    const std::uint64_t row_vectors = c.cols * c.element_bytes / 16;
    EXPECT_GE(static_cast<std::uint64_t>(c.threads) * 8, row_vectors);
    EXPECT_EQ(c.rows_per_cta * c.threads % 32, 0u);
    EXPECT_LE(c.rows_per_cta * c.threads, detail::quantize::kMaxTensorRowThreads);
    EXPECT_LE((c.rows + c.rows_per_cta - 1) / c.rows_per_cta, 2u * c.sms);
    // the launcher's way back: Q1 on tiles
    const QuantizePlan back = detail::quantize::two_pass(p);
    EXPECT_STREQ(back.id(), "Q1");
    EXPECT_FALSE(back.in_registers);
    EXPECT_TRUE(back.amax_pass);
    EXPECT_GT(back.tiles(), 0);
  }
}

// Rule Q6: where rule Q7 does not apply and every tile's CTA fits the SMs at once (four 128 x
// 128 bf16 tiles an SM, two of fp32), one cooperative kernel reads x once; past that, rule
// Q1's two reads.
TEST(QuantizePlan, TensorRecipeReadsXOnceWhereEveryTileIsResident) {
  // 256 rows of 240 (too short for rule Q7): 4 row tiles of 64 rows are fewer than the SMs,
  // so 128 x 128 tiles
  const QuantizePlan small = plan_quantize(256, 240, 2, R::tensor, O::a, {}, 132);
  EXPECT_STREQ(small.id(), "Q6");
  EXPECT_TRUE(small.resident);
  EXPECT_TRUE(small.fused_amax);
  EXPECT_FALSE(small.amax_pass);
  EXPECT_FALSE(small.in_registers);
  // not halved to fill the SMs (rule Q1 would take 8 rows a tile)
  EXPECT_EQ(small.tile_rows, 128u);
  EXPECT_EQ(small.tiles(), 4);
  EXPECT_EQ(small.groups_per_tile(), 1u);
  EXPECT_FALSE(small.reverse_tiles);
  EXPECT_EQ(small.scales.mn, 1u);

  // bf16 rows of 64 KiB + 64 bytes (too long for rule Q7; no run layout: 1025 runs of 32)
  const QuantizePlan bf16 = plan_quantize(256, 32800, 2, R::tensor, O::a, {}, 132);
  EXPECT_EQ(detail::quantize::tile_ctas_per_sm(bf16.smem_bytes), 4u);
  EXPECT_EQ(bf16.tiles(), 2 * 257);
  EXPECT_STREQ(bf16.id(), "Q6");
  EXPECT_STREQ(plan_quantize(257, 32800, 2, R::tensor, O::a, {}, 132).id(), "Q1");  // 771
  const QuantizePlan fp32 = plan_quantize(256, 16400, 4, R::tensor, O::a, {}, 132);
  EXPECT_EQ(detail::quantize::tile_ctas_per_sm(fp32.smem_bytes), 2u);
  EXPECT_STREQ(fp32.id(), "Q6");                                                     // 258
  EXPECT_STREQ(plan_quantize(257, 16400, 4, R::tensor, O::a, {}, 132).id(), "Q1");  // 387
  EXPECT_STREQ(plan_quantize(256, 32800, 2, R::tensor, O::a, {}, 64).id(), "Q1");   // fewer SMs

  // the launcher's way back: Q1 on the same tiles
  const QuantizePlan back = detail::quantize::two_pass(bf16);
  EXPECT_STREQ(back.id(), "Q1");
  EXPECT_FALSE(back.resident);
  EXPECT_TRUE(back.amax_pass);
  EXPECT_FALSE(back.fused_amax);
  EXPECT_TRUE(back.reverse_tiles);
  EXPECT_EQ(back.tiles(), bf16.tiles());
  EXPECT_EQ(back.tile_rows, bf16.tile_rows);
  EXPECT_EQ(back.smem_bytes, bf16.smem_bytes);
  const QuantizePlan row = plan_quantize(16, 7168, 2, R::row, O::a, {}, 132);
  EXPECT_STREQ(detail::quantize::two_pass(row).id(), "Q7");  // not resident: as it is
  // every other recipe's rule is unchanged by the tensor's
  EXPECT_FALSE(row.resident);
  EXPECT_FALSE(row.reverse_tiles);
  EXPECT_FALSE(plan_quantize(16, 7168, 2, R::block, O::a, {}, 132).resident);
  EXPECT_FALSE(plan_quantize(16, 7168, 2, R::block, O::b, {}, 132).resident);
}

// Rule Q6 takes the row recipe's tiles (one box of runs of whole rows) where K has that layout
// and there are at least as many as SMs, and all are resident; else the 128 x 128 tiles.
// (Rows of 512 bytes to 64 KiB are rule Q7's up to 17 MB of x: these rows are longer.)
TEST(QuantizePlan, TensorRecipeOnRowTilesWhereTheyFillTheSms) {
  const QuantizePlan p = plan_quantize(200, 33024, 2, R::tensor, O::a, {}, 132);
  EXPECT_STREQ(p.id(), "Q6");
  EXPECT_EQ(p.row_chunk, 256u);  // 129 runs of 256
  EXPECT_EQ(p.box_cols, 33024u);
  EXPECT_EQ(p.boxes, 1u);
  EXPECT_EQ(p.tile_rows, 1u);  // 66 KiB of x, as rule Q2's
  EXPECT_EQ(p.tiles_x, 1);
  EXPECT_EQ(p.tiles(), 200);
  EXPECT_EQ(p.group_rows, 1u);  // the tile is the group
  EXPECT_EQ(p.groups_per_tile(), 1u);
  EXPECT_EQ(p.threads_per_group(), detail::quantize::kThreads);
  EXPECT_EQ(p.in_bytes, 33024u * 2u);
  EXPECT_EQ(p.out_bytes, 33024u);
  EXPECT_EQ(detail::quantize::tile_ctas_per_sm(p.smem_bytes), 2u);
  EXPECT_FALSE(p.reverse_tiles);
  // 264 row tiles are what 132 SMs hold; one more takes the 128 x 128 tiles (3 x 258, not
  // resident): rule Q1 on them
  EXPECT_EQ(plan_quantize(264, 33024, 2, R::tensor, O::a, {}, 132).row_chunk, 256u);
  const QuantizePlan q1 = plan_quantize(265, 33024, 2, R::tensor, O::a, {}, 132);
  EXPECT_STREQ(q1.id(), "Q1");
  EXPECT_EQ(q1.row_chunk, 0u);
  // fewer row tiles than SMs (131): the 128 x 128 tiles, more CTAs (2 x 258, resident)
  const QuantizePlan blocks = plan_quantize(131, 33024, 2, R::tensor, O::a, {}, 132);
  EXPECT_STREQ(blocks.id(), "Q6");
  EXPECT_EQ(blocks.row_chunk, 0u);
  EXPECT_EQ(blocks.tiles(), 2 * 258);
  EXPECT_EQ(plan_quantize(132, 33024, 2, R::tensor, O::a, {}, 132).row_chunk, 256u);
  // K with no run layout (32800: 1025 runs of 32) keeps the 128 x 128 tiles
  EXPECT_EQ(plan_quantize(200, 32800, 2, R::tensor, O::a, {}, 132).row_chunk, 0u);
  // the launcher's way back keeps the tiles
  const QuantizePlan back = detail::quantize::two_pass(p);
  EXPECT_STREQ(back.id(), "Q1");
  EXPECT_EQ(back.row_chunk, 256u);
  EXPECT_EQ(back.tiles(), p.tiles());
}

TEST(QuantizePlan, ScaleShapes) {
  EXPECT_EQ(quantize_scale_shape(7, 144, R::tensor, O::a).mn, 1u);
  EXPECT_EQ(quantize_scale_shape(7, 144, R::row, O::b).mn, 7u);
  EXPECT_EQ(quantize_scale_shape(7, 144, R::block, O::a).k, 2u);
  EXPECT_EQ(quantize_scale_shape(7, 144, R::block, O::a).mn, 7u);
  EXPECT_EQ(quantize_scale_shape(257, 7168, R::block, O::b).mn, 3u);
  EXPECT_EQ(quantize_scale_shape(257, 7168, R::block, O::b).k, 56u);
  // extents near 2^64 do not wrap; a recipe or operand past its enum is refused
  constexpr std::uint64_t kHuge = ~std::uint64_t{0};
  EXPECT_EQ(quantize_scale_shape(kHuge, kHuge, R::block, O::b).mn, (kHuge >> 7) + 1);
  EXPECT_EQ(quantize_scale_shape(kHuge, kHuge, R::block, O::b).k, (kHuge >> 7) + 1);
  EXPECT_EQ(refused([] { quantize_scale_shape(7, 144, static_cast<R>(3), O::a); }), "recipe");
  EXPECT_EQ(refused([] { quantize_scale_shape(7, 144, R::row, static_cast<O>(2)); }), "operand");
}

// ---- refusals --------------------------------------------------------------------------

struct Args {
  TensorRef x{fake(kX), DataType::bfloat16, 64, 256};
  TensorRef q{fake(kQ), DataType::uint8, 64, 256};
  float* scale = static_cast<float*>(fake(kS));
  GemmScaleRecipe recipe = R::row;
  QuantizeOperand operand = O::a;
  GemmScaleStrides strides{};
  void run() const { quantize_fp8(x, q, scale, recipe, operand, strides); }
};

std::string refused_with(const std::function<void(Args&)>& change, std::string* message = nullptr) {
  Args a;
  change(a);
  return refused([&] { a.run(); }, message);
}

TEST(QuantizeLauncher, NamesTheArgument) {
  EXPECT_EQ(refused_with([](Args& a) { a.x.type = DataType::float64; }), "x.type");
  EXPECT_EQ(refused_with([](Args& a) { a.x.type = DataType::uint8; }), "x.type");
  EXPECT_EQ(refused_with([](Args& a) { a.q.type = DataType::int32; }), "x_fp8.type");
  EXPECT_EQ(refused_with([](Args& a) { a.x.data = nullptr; }), "x.data");
  EXPECT_EQ(refused_with([](Args& a) { a.x.data = fake(kX + 8); }), "x.data");
  EXPECT_EQ(refused_with([](Args& a) { a.q.data = nullptr; }), "x_fp8.data");
  EXPECT_EQ(refused_with([](Args& a) { a.q.data = fake(kX + 256); }), "x_fp8.data");  // overlap
  EXPECT_EQ(refused_with([](Args& a) { a.scale = nullptr; }), "scale");
  EXPECT_EQ(refused_with([](Args& a) { a.scale = static_cast<float*>(fake(kS + 2)); }), "scale");
  EXPECT_EQ(refused_with([](Args& a) { a.scale = static_cast<float*>(fake(kQ + 64)); }), "scale");
  EXPECT_EQ(refused_with([](Args& a) { a.x.rows = 0; }), "x.rows");
  EXPECT_EQ(refused_with([](Args& a) { a.x.cols = 100, a.q.cols = 100; }), "x.cols");
  EXPECT_EQ(refused_with([](Args& a) { a.q.rows = 63; }), "x_fp8");
  EXPECT_EQ(refused_with([](Args& a) { a.x.row_stride_bytes = 520; }), "x.row_stride_bytes");
  EXPECT_EQ(refused_with([](Args& a) { a.q.row_stride_bytes = 100; }), "x_fp8.row_stride_bytes");
  EXPECT_EQ(refused_with([](Args& a) { a.x.batch = 2; }), "x.batch");
  EXPECT_EQ(refused_with([](Args& a) { a.recipe = static_cast<GemmScaleRecipe>(7); }), "recipe");
  EXPECT_EQ(refused_with([](Args& a) { a.operand = static_cast<QuantizeOperand>(2); }), "operand");
  EXPECT_EQ(refused_with([](Args& a) {
              a.recipe = R::block;
              a.strides = {0, 64};
            }),
            "scale_strides");
}

// Strides whose 64-bit products wrap (3 + 2 (2^63 - 1) is 1 modulo 2^64) would pass both the
// "two groups on one float" and the span test and let the kernels write far from the scales:
// the tests are in 128 bits.
TEST(QuantizeLauncher, ScaleStridesThatWrap64BitsAreRefused) {
  std::string m;
  EXPECT_EQ(refused_with(
                [](Args& a) {
                  a.x.cols = a.q.cols = 384;  // 3 k-blocks: 63 * 3 + 2 (2^63 - 1) wraps to 187
                  a.recipe = R::block;
                  a.strides = {3, std::numeric_limits<std::int64_t>::max()};
                },
                &m),
            "scale_strides");
  EXPECT_NE(m.find("2^40 floats"), std::string::npos) << m;
  EXPECT_EQ(refused_with([](Args& a) {
              a.recipe = R::row;
              a.strides = {std::int64_t{1} << 62, -1};
            }),
            "scale_strides");
  EXPECT_EQ(refused_with([](Args& a) {
              a.recipe = R::row;
              a.strides = {292805461487453201, 1};  // ceil(2^64 / 63): 63 of them wrap to 47
            }),
            "scale_strides");
  // the largest span below 2^40 floats is taken (past the checks; no GPU here)
  const std::string argument = refused_with([](Args& a) {
    a.recipe = R::row;
    a.strides = {(std::int64_t{1} << 40) / 64 - 1, 1};
  });
  EXPECT_NE(argument, "scale_strides");
}

// Interleaved strides that put no two groups on one float are taken (the test took only
// layouts where one dimension steps over the whole other); those that collide are refused.
TEST(QuantizeLauncher, ScaleStridesAreRefusedOnlyWhereGroupsShareAFloat) {
  // 64 rows x 2 k-blocks: (3, 2) puts group (i, j) at 3 i + 2 j, all different
  EXPECT_NE(refused_with([](Args& a) {
              a.recipe = R::block;
              a.strides = {3, 2};
            }),
            "scale_strides");
  // (2, 3) too: 2 (i - i') = 3 (j' - j) needs j' - j even, and j < 2
  EXPECT_NE(refused_with([](Args& a) {
              a.recipe = R::block;
              a.strides = {2, 3};
            }),
            "scale_strides");
  // (2, 64): groups (32, 0) and (0, 1) share float 64
  EXPECT_EQ(refused_with([](Args& a) {
              a.recipe = R::block;
              a.strides = {2, 64};
            }),
            "scale_strides");
  // 3 k-blocks (K = 384), (4, 3): 4 (i - i') = 3 (j' - j) needs j' - j a multiple of 4, and
  // j < 3
  EXPECT_NE(refused_with([](Args& a) {
              a.x.cols = a.q.cols = 384;
              a.recipe = R::block;
              a.strides = {4, 3};
            }),
            "scale_strides");
}

TEST(QuantizeLauncher, MessagesSayWhatAndTheFix) {
  std::string m;
  refused_with([](Args& a) { a.x.cols = 100, a.q.cols = 100; }, &m);
  EXPECT_EQ(m,
            "x.cols: K = 100 is not a multiple of 16 (the FP8 GEMM's K: rows of whole "
            "16-byte chunks of e4m3); pad K to 112 with zeros");
  refused_with([](Args& a) { a.x.type = DataType::float64; }, &m);
  EXPECT_EQ(m,
            "x.type: FLOAT64 is not BFLOAT16, FLOAT16 or FLOAT32, the types the quantizer "
            "reads");
  refused_with([](Args& a) { a.x.type = static_cast<DataType>(200); }, &m);
  EXPECT_EQ(m,
            "x.type: 200 is not BFLOAT16, FLOAT16 or FLOAT32, the types the quantizer reads");
  refused_with([](Args& a) { a.q.cols = 128; }, &m);
  EXPECT_EQ(m, "x_fp8: shape 64x128 differs from x's 64x256");
  refused_with(
      [](Args& a) {
        a.recipe = R::block;
        a.strides = {1, 32};  // 64 rows, 2 k-blocks: (1, 32) puts row 32 on k-block 1 of row 0
      },
      &m);
  EXPECT_EQ(m,
            "scale_strides: (1, 32) puts two of the 64 x 2 block scales on one float; use "
            "(1, 64) (M-major) or (2, 1) (row-major)");
  refused_with(
      [](Args& a) {
        a.x = TensorRef(fake(kX), DataType::float32, 4, 40976);
        a.q = TensorRef(fake(0x40000000), DataType::uint8, 4, 40976);
      },
      &m);
  EXPECT_EQ(m,
            "x.cols: K = 40976 is too long for the row recipe (rule Q5): a row of x and of "
            "x_fp8 must fit in shared memory at once, K <= 40960 for FLOAT32; use recipe "
            "block, or tensor");
}

TEST(QuantizeLauncher, CheckShapesTakesNullAddresses) {
  const TensorRef x(nullptr, DataType::float16, 7, 144);
  const TensorRef q(nullptr, DataType::uint8, 7, 144);
  EXPECT_EQ(refused([&] { quantize_fp8_check_shapes(x, q, R::block, O::b); }), "");
  EXPECT_EQ(refused([&] {
              quantize_fp8_check_shapes(x, TensorRef(nullptr, DataType::uint8, 7, 128), R::row);
            }),
            "x_fp8");
  // the longest row the row recipe takes, and one chunk more
  EXPECT_EQ(refused([&] {
              quantize_fp8_check_shapes(TensorRef(nullptr, DataType::bfloat16, 2, 68096),
                                        TensorRef(nullptr, DataType::uint8, 2, 68096), R::row);
            }),
            "");
  EXPECT_EQ(refused([&] {
              quantize_fp8_check_shapes(TensorRef(nullptr, DataType::bfloat16, 2, 68112),
                                        TensorRef(nullptr, DataType::uint8, 2, 68112), R::row);
            }),
            "x.cols");
  // ... which the block recipe takes
  EXPECT_EQ(refused([&] {
              quantize_fp8_check_shapes(TensorRef(nullptr, DataType::bfloat16, 2, 68112),
                                        TensorRef(nullptr, DataType::uint8, 2, 68112), R::block);
            }),
            "");
  // more tiles than a grid holds (2^24 rows of 2^22: 2^47 bytes, within the spans taken) are
  // refused here as quantize_fp8 refuses them
  std::string msg;
  EXPECT_EQ(refused([&] {
              quantize_fp8_check_shapes(TensorRef(nullptr, DataType::bfloat16, 1ull << 24,
                                                  1ull << 22),
                                        TensorRef(nullptr, DataType::uint8, 1ull << 24, 1ull << 22),
                                        R::tensor);
            }, &msg),
            "x.rows");
  EXPECT_EQ(msg, "x.rows: 16777216 rows make 4294967296 tiles, more than a grid of 2^31 - 1 CTAs");
}

// ---- the e4m3 encoder ------------------------------------------------------------------

TEST(QuantizeReference, E4m3RoundTripsEveryCodeAndRoundsHalfToEven) {
  for (int code = 0; code < 256; ++code) {
    if ((code & 0x7f) == 0x7f) continue;  // NaN
    const float v = reference::e4m3_to_float(static_cast<std::uint8_t>(code));
    EXPECT_EQ(reference::e4m3_from_float(v), code) << "code " << code << " = " << v;
  }
  // every midpoint between neighbours rounds to the even code; a hair above it, up
  for (int code = 0; code < 0x7e; ++code) {
    const double lo = reference::e4m3_to_float(static_cast<std::uint8_t>(code));
    const double hi = reference::e4m3_to_float(static_cast<std::uint8_t>(code + 1));
    const auto mid = static_cast<float>((lo + hi) / 2);
    ASSERT_EQ(static_cast<double>(mid), (lo + hi) / 2);
    EXPECT_EQ(reference::e4m3_from_float(mid), code % 2 == 0 ? code : code + 1) << code;
    EXPECT_EQ(reference::e4m3_from_float(std::nextafter(mid, 1000.0f)), code + 1) << code;
    EXPECT_EQ(reference::e4m3_from_float(-std::nextafter(mid, 0.0f)), 0x80 | code) << code;
  }
}

TEST(QuantizeReference, E4m3SaturatesAndKeepsNanPositive) {
  EXPECT_EQ(reference::e4m3_from_float(448.0f), 0x7e);
  EXPECT_EQ(reference::e4m3_from_float(464.0f), 0x7e);  // the midpoint to 480: saturated
  EXPECT_EQ(reference::e4m3_from_float(1e30f), 0x7e);
  EXPECT_EQ(reference::e4m3_from_float(-std::numeric_limits<float>::infinity()), 0xfe);
  EXPECT_EQ(reference::e4m3_from_float(std::numeric_limits<float>::quiet_NaN()), 0x7f);
  EXPECT_EQ(reference::e4m3_from_float(-std::numeric_limits<float>::quiet_NaN()), 0x7f);
  EXPECT_EQ(reference::e4m3_from_float(0x1p-10f), 0x00);  // half the least subnormal: even
  EXPECT_EQ(reference::e4m3_from_float(-0x1p-10f), 0x80);
  EXPECT_EQ(reference::e4m3_from_float(0x1.8p-9f), 0x02);  // 1.5 quanta: even is 2
  EXPECT_EQ(reference::e4m3_from_float(1.0f), 0x38);
  EXPECT_EQ(reference::e4m3_from_float(-2.0f), 0xc0);
  EXPECT_EQ(reference::e4m3_from_float(0x1.fp-7f), 0x08);  // carries into the least normal
  EXPECT_EQ(reference::e4m3_from_float(0.0f), 0x00);
  EXPECT_EQ(reference::e4m3_from_float(-0.0f), 0x80);
}

// ---- the reference's rules -------------------------------------------------------------

std::uint16_t bf16_bits(float v) {
  const __nv_bfloat16 h = __float2bfloat16_rn(v);
  std::uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}

struct HostCase {
  std::uint64_t rows, cols;
  std::vector<float> x;  // fp32
  std::vector<std::uint8_t> q;
  std::vector<float> scale;
  explicit HostCase(std::uint64_t r, std::uint64_t c, std::size_t scales)
      : rows(r), cols(c), x(r * c, 0.0f), q(r * c, 0xa5), scale(scales, -1.0f) {}
  void run(GemmScaleRecipe recipe, QuantizeOperand operand = O::a,
           const GemmScaleStrides& strides = {}) {
    reference::quantize_fp8(ConstTensorRef(x.data(), DataType::float32, rows, cols),
                            TensorRef(q.data(), DataType::uint8, rows, cols), scale.data(), recipe,
                            operand, strides);
  }
};

TEST(QuantizeReference, RowScalesAndCast) {
  HostCase c(3, 16, 3);
  for (int i = 0; i < 16; ++i) c.x[i] = static_cast<float>(i - 8);  // amax 8
  c.x[16 + 5] = -896.0f;                                            // amax 896: scale 2
  // row 2: all zero
  c.run(R::row);
  EXPECT_EQ(c.scale[0], 8.0f / 448.0f);
  EXPECT_EQ(c.scale[1], 2.0f);
  EXPECT_EQ(c.scale[2], 1.0f);  // amax 0
  const float inverse = 1.0f / (8.0f / 448.0f);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(c.q[i], reference::e4m3_from_float(static_cast<float>(i - 8) * inverse)) << i;
  }
  EXPECT_EQ(c.q[0], 0xfe);  // -8 is the row's amax: -448
  EXPECT_EQ(c.q[16 + 5], 0xfe);
  EXPECT_EQ(c.q[16], 0x00);
  EXPECT_EQ(c.q[32 + 3], 0x00);
}

TEST(QuantizeReference, NonFiniteGroups) {
  HostCase c(3, 16, 3);
  for (float& v : c.x) v = 1.0f;
  c.x[3] = std::numeric_limits<float>::quiet_NaN();
  c.x[16 + 2] = -std::numeric_limits<float>::infinity();
  c.x[16 + 3] = -2.0f;
  c.x[32 + 0] = 1e-44f;  // a subnormal amax: scale clamped to the least normal float
  for (int i = 1; i < 16; ++i) c.x[32 + i] = 0.0f;
  c.run(R::row);
  EXPECT_TRUE(std::isnan(c.scale[0]));
  for (int i = 0; i < 16; ++i) EXPECT_EQ(c.q[i], 0x7f) << i;
  EXPECT_TRUE(std::isinf(c.scale[1]));
  EXPECT_EQ(c.q[16 + 2], 0x7f);  // -inf * 0 is NaN
  EXPECT_EQ(c.q[16 + 3], 0x80);  // -2 * 0 is -0
  EXPECT_EQ(c.q[16 + 0], 0x00);
  EXPECT_EQ(c.scale[2], FLT_MIN);
  EXPECT_EQ(c.q[32], reference::e4m3_from_float(1e-44f * 0x1p126f));
  EXPECT_EQ(c.q[33], 0x00);
}

TEST(QuantizeReference, BlockLayouts) {
  // 3 rows x 144 columns: k-blocks of 128 and 16
  HostCase a(3, 144, 3 * 2);
  for (std::uint64_t r = 0; r < 3; ++r) {
    for (std::uint64_t k = 0; k < 144; ++k)
      a.x[r * 144 + k] = static_cast<float>(r + 1) * (k < 128 ? 1.0f : 4.0f);
  }
  a.run(R::block, O::a);
  // M-major: scale[m + kb * M]
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(a.scale[r], static_cast<float>(r + 1) / 448.0f) << r;
    EXPECT_EQ(a.scale[r + 3], static_cast<float>(r + 1) * 4.0f / 448.0f) << r;
    EXPECT_EQ(a.q[r * 144], 0x7e);  // each element is its group's amax
    EXPECT_EQ(a.q[r * 144 + 130], 0x7e);
  }
  // the same as row-major through strides (2, 1)
  HostCase rm(3, 144, 6);
  rm.x = a.x;
  rm.run(R::block, O::a, {2, 1});
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(rm.scale[2 * r], a.scale[r]);
    EXPECT_EQ(rm.scale[2 * r + 1], a.scale[r + 3]);
  }
  EXPECT_EQ(rm.q, a.q);
  // operand b: one 128 x 128 block (and its K remainder) for the 3 rows
  HostCase b(3, 144, 2);
  b.x = a.x;
  b.run(R::block, O::b);
  EXPECT_EQ(b.scale[0], 3.0f / 448.0f);
  EXPECT_EQ(b.scale[1], 12.0f / 448.0f);
  EXPECT_EQ(b.q[2 * 144], 0x7e);
  EXPECT_EQ(b.q[0], reference::e4m3_from_float(1.0f * (1.0f / (3.0f / 448.0f))));
}

TEST(QuantizeReference, TensorScaleAndBf16) {
  const std::uint64_t rows = 2, cols = 32;
  std::vector<std::uint16_t> x(rows * cols);
  for (std::uint64_t i = 0; i < x.size(); ++i)
    x[i] = bf16_bits(static_cast<float>(i) * 0.37f - 5.0f);
  x[17] = bf16_bits(-300.0f);
  std::vector<std::uint8_t> q(rows * cols);
  float scale = 0;
  reference::quantize_fp8(ConstTensorRef(x.data(), DataType::bfloat16, rows, cols),
                          TensorRef(q.data(), DataType::uint8, rows, cols), &scale, R::tensor);
  EXPECT_EQ(scale, 300.0f / 448.0f);
  EXPECT_EQ(q[17], 0xfe);
  const float inverse = 1.0f / scale;
  const __nv_bfloat16 v3 = __float2bfloat16_rn(3.0f * 0.37f - 5.0f);
  EXPECT_EQ(q[3], reference::e4m3_from_float(__bfloat162float(v3) * inverse));
}

}  // namespace
}  // namespace tmakit
