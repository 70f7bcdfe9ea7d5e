// Launcher validation: every bad argument is refused with an ArgumentError naming it, before
// any CUDA call (these run without a GPU; the pointers are never dereferenced).
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <string>
#include <utility>

#include "tmakit/kernels/elementwise.hpp"
#include "tmakit/kernels/stencil3x3.hpp"
#include "tmakit/kernels/transpose.hpp"
#include "elementwise/elementwise_constant.hpp"
#include "elementwise/elementwise_plan.hpp"
#include "tmakit/host/validate.hpp"
#include "tmakit/kernels/detail/plain_path.hpp"
#include "tmakit/kernels/detail/plain_view_check.hpp"
#include "stencil3x3/stencil3x3_plan.hpp"
#include "transpose/transpose_plan.hpp"
#include "tune/tuning.hpp"
#include "refusal.hpp"

namespace tmakit {
namespace {

using test::fake;
using test::refused;

const std::uintptr_t kA = 0x10000000;
const std::uintptr_t kB = 0x20000000;

TEST(KernelLaunchers, TypesOfPartBytesAreRefusedByName) {
  const TensorRef out(fake(kB), DataType::uint8, 64, 64);
  std::string msg;
  EXPECT_EQ(refused([&] {
              transpose(TensorRef(fake(kA), DataType::packed_u4_align8, 64, 64), out);
            }, &msg), "in.type");
  EXPECT_EQ(msg, "in.type: 16U4_ALIGN8B packs values smaller than a byte; the kernels take "
                 "types of whole bytes");
  EXPECT_EQ(refused([&] {
              add_constant(TensorRef(fake(kA), static_cast<DataType>(40), 64, 64), out, 1);
            }, &msg), "in.type");
  EXPECT_EQ(msg, "in.type: 40 is not a DataType");
}

TEST(KernelLaunchers, AddConstantNamesTheArgument) {
  const TensorRef in(fake(kA), DataType::float32, 64, 64);
  const TensorRef out(fake(kB), DataType::float32, 64, 64);
  EXPECT_EQ(refused([&] { add_constant(TensorRef(nullptr, DataType::float32, 64, 64), out, 1); }),
            "in.data");
  EXPECT_EQ(refused([&] { add_constant(in, TensorRef(nullptr, DataType::float32, 64, 64), 1); }),
            "out.data");
  // any alignment of whole elements runs (the plain path); inside an element it cannot
  EXPECT_EQ(refused([&] { add_constant(TensorRef(fake(kA + 2), DataType::float32, 64, 64), out, 1); }),
            "in.data");
  // an empty view of either shape: nothing to do, and no CUDA call is made
  EXPECT_EQ(refused([&] {
              add_constant(TensorRef(fake(kA), DataType::float32, 0, 64),
                           TensorRef(fake(kB), DataType::float32, 0, 64), 1);
            }),
            "");
  EXPECT_EQ(refused([&] {
              add_constant(TensorRef(nullptr, DataType::float64, 7, 0),
                           TensorRef(nullptr, DataType::float64, 7, 0), 1);
            }),
            "");
  EXPECT_EQ(refused([&] { add_constant(in, TensorRef(fake(kB), DataType::float32, 64, 0), 1); }),
            "out");
  EXPECT_EQ(refused([&] { add_constant(in, TensorRef(fake(kB), DataType::float32, 64, 68), 1); }),
            "out");
  EXPECT_EQ(refused([&] { add_constant(in, TensorRef(fake(kB), DataType::int32, 64, 64), 1); }),
            "out.type");
  std::string msg;
  EXPECT_EQ(refused([&] {
              add_constant(TensorRef(fake(kA), DataType::tfloat32, 64, 64),
                           TensorRef(fake(kB), DataType::tfloat32, 64, 64), 1);
            }, &msg),
            "in.type");
  EXPECT_NE(msg.find("FLOAT64"), std::string::npos) << msg;
  EXPECT_EQ(refused([&] {
              add_constant(TensorRef(fake(kA), DataType::float32, 4, 8, 16), out, 1);
            }),
            "in.row_stride_bytes");  // stride shorter than a row
  EXPECT_EQ(refused([&] {
              add_constant(TensorRef(fake(kA), DataType::float32, 4, 8, 34),
                           TensorRef(fake(kB), DataType::float32, 4, 8), 1);
            }, &msg),
            "in.row_stride_bytes");  // stride inside an element
  EXPECT_NE(msg.find("4-byte element"), std::string::npos) << msg;
  // add_integer is for integer types
  EXPECT_EQ(refused([&] { add_integer(in, out, 1); }), "in.type");
}

TEST(KernelLaunchers, AddConstantValueAndAliasing) {
  const TensorRef ints(fake(kA), DataType::int32, 64, 64);
  const TensorRef ints_out(fake(kB), DataType::int32, 64, 64);
  EXPECT_EQ(refused([&] { add_constant(ints, ints_out, 1.5); }), "value");
  EXPECT_EQ(refused([&] { add_constant(ints, ints_out, 3e9); }), "value");
  const TensorRef bytes(fake(kA), DataType::uint8, 64, 64);
  const TensorRef bytes_out(fake(kB), DataType::uint8, 64, 64);
  EXPECT_EQ(refused([&] { add_constant(bytes, bytes_out, 256); }), "value");
  EXPECT_EQ(refused([&] { add_constant(bytes, bytes_out, -256); }), "value");
  const TensorRef longs(fake(kA), DataType::int64, 64, 64);
  const TensorRef longs_out(fake(kB), DataType::int64, 64, 64);
  EXPECT_EQ(refused([&] { add_constant(longs, longs_out, 9223372036854775808.0); }), "value");
  const TensorRef halfs(fake(kA), DataType::float16, 64, 64);
  const TensorRef halfs_out(fake(kB), DataType::float16, 64, 64);
  // a value past float32, the type 16-bit sums are formed in (1e6 is not: its sums round to
  // fp16's infinity, as torch's)
  EXPECT_EQ(refused([&] { add_constant(halfs, halfs_out, 1e39); }), "value");
  // out overlapping in, shifted by one row: neither in place nor disjoint
  const TensorRef shifted(fake(kA + 256), DataType::int32, 64, 64);
  EXPECT_EQ(refused([&] { add_constant(ints, shifted, 1); }), "out.data");
  const TensorRef batched(fake(kA), DataType::int32, 64, 64, 0, 2);
  EXPECT_EQ(refused([&] { add_constant(batched, batched, 1); }), "in.batch");
  EXPECT_EQ(refused([&] { tune::add_constant(ints, ints_out, 1, nullptr, tune::ElementwiseTuning{3}); }),
            "tuning.ctas_per_sm");
  EXPECT_EQ(refused([&] {
              tune::add_constant(ints, ints_out, 1, nullptr, tune::ElementwiseTuning{0, tune::kElementwiseVariants});
            }),
            "tuning.variant");
  // persistent CTAs per SM mean nothing to a layout of one tile per CTA (variant 0, 9)
  std::string msg;
  EXPECT_EQ(refused([&] { tune::add_constant(ints, ints_out, 1, nullptr, tune::ElementwiseTuning{1, 9}); },
                    &msg),
            "tuning.ctas_per_sm");
  EXPECT_NE(msg.find("its own tiles"), std::string::npos) << msg;
  // a persistent layout takes only as many CTAs as its shared memory allows (10: two)
  EXPECT_EQ(refused([&] { tune::add_constant(ints, ints_out, 1, nullptr, tune::ElementwiseTuning{3, 10}); },
                    &msg),
            "tuning.ctas_per_sm");
  EXPECT_NE(msg.find("at most 2 fit in shared memory"), std::string::npos) << msg;
  EXPECT_EQ(refused([&] { tune::add_constant(ints, ints_out, 1, nullptr, tune::ElementwiseTuning{-1, 0}); }),
            "tuning.ctas_per_sm");
}

// Sizes whose byte span would wrap 64 bits (2^25 + 1 images 2^39 bytes apart) are refused
// before any product of them is taken; otherwise the overlap check could miss real overlap.
TEST(KernelLaunchers, ViewsLargerThanAnyMemoryAreRefused) {
  const std::uint64_t images = (1ull << 25) + 1, image_stride = 1ull << 39;
  const TensorRef in(fake(kA), DataType::float32, 4, 4, 16, images, image_stride);
  const TensorRef out(fake(kA + image_stride), DataType::float32, 4, 4, 16, images,
                      image_stride);
  std::string msg;
  EXPECT_EQ(refused([&] { stencil3x3(in, out, Filter3x3::laplacian()); }, &msg), "in");
  EXPECT_NE(msg.find("2^48"), std::string::npos) << msg;
  // 2^31 - 4096 rows (the most a view may have) of a 2^20-byte stride: 2^51 bytes
  const std::uint64_t most = (1ull << 31) - 4096;
  EXPECT_EQ(refused([&] {
              add_constant(TensorRef(fake(kA), DataType::int32, most, 4, 1ull << 20),
                           TensorRef(fake(kB), DataType::int32, most, 4), 1);
            }),
            "in");
  // one row or column more than that is not refused for itself (the plain kernels index in
  // 64 bits: rule P6): the checks of either path take it
  EXPECT_NO_THROW(detail::check_any_view("in", TensorRef(fake(kA), DataType::bfloat16, 1, most + 1),
                                         false));
  EXPECT_NO_THROW(detail::check_any_view(
      "in", TensorRef(fake(kA), DataType::uint8, most + 1, 4, 16), false));
  EXPECT_NO_THROW(detail::check_any_view(
      "in", TensorRef(fake(kA), DataType::float32, 2, 4, 16, most + 1), true));
  // a view whose bytes reach past 2^57 (no allocation lies there; near 2^64 the kernels'
  // addressing would wrap) is refused naming its address, on either path
  EXPECT_EQ(refused([&] {
              add_constant(TensorRef(fake(~std::uintptr_t{15}), DataType::float32, 4, 8),
                           TensorRef(fake(kB), DataType::float32, 4, 8), 1);
            }, &msg),
            "in.data");
  EXPECT_EQ(msg, "in.data: 0xfffffffffffffff0 and the view's bytes after it reach past 2^57, "
                 "where the GPU's virtual addresses end");
  EXPECT_EQ(refused([&] {
              detail::check_any_view(
                  "out", TensorRef(fake((std::uintptr_t{1} << 57) - 64), DataType::uint8, 2, 64),
                  false);
            }),
            "out.data");
  EXPECT_NO_THROW(detail::check_any_view(
      "out", TensorRef(fake((std::uintptr_t{1} << 57) - 128), DataType::uint8, 2, 64), false));
  // one row's stride is never followed: any value is taken; two rows' is judged
  EXPECT_NO_THROW(detail::check_any_view(
      "in", TensorRef(fake(kA), DataType::float32, 1, 64, 1ull << 41), false));
  EXPECT_EQ(refused([&] {
              detail::check_any_view(
                  "in", TensorRef(fake(kA), DataType::float32, 2, 64, 1ull << 41), false);
            }),
            "in.row_stride_bytes");
  // rows of 2^38 floats back to back: the row pitch no stride gave is named, with its value
  EXPECT_EQ(refused([&] {
              detail::check_any_view("in", TensorRef(fake(kA), DataType::float32, 4, 1ull << 38),
                                     false);
            }, &msg),
            "in.row_stride_bytes");
  EXPECT_EQ(msg,
            "in.row_stride_bytes: 1099511627776 bytes between rows (rows back to back, none "
            "given) is 2^40 or more (TMA rule T6)");
}

// A single row's stride is never followed: its map gets the row's bytes rounded up to 16,
// whatever stride the view gives, so a stride TMA could not take (2^40 bytes and more: one
// k-block of a 128-block scale_a whose columns lie far apart) still makes a valid map.
TEST(KernelLaunchers, ASingleRowsStrideIsNeverFollowed) {
  for (const std::uint64_t stride : {0ull, 20ull, 4096ull, 1ull << 40, (1ull << 42) + 4}) {
    const TensorRef one(fake(kA), DataType::float32, 1, 5, stride);
    const TensorMapSpec s = detail::view_spec(one, DataType::float32, {8, 1, 1}, Swizzle::none);
    EXPECT_EQ(s.global_strides_bytes[0], 32u) << stride;
    const auto finding = diagnose(s);
    EXPECT_FALSE(finding.has_value()) << stride << ": " << finding->violation.what();
  }
  // nor judged: a (1, N) view whose stride is shorter than its row (what a framework keeps
  // for one row) passes the launchers' checks (here the call then fails without a driver),
  // and is in place on itself whatever stride each side gives
  for (const std::uint64_t stride : {4ull, 16ull}) {
    const TensorRef one(fake(kA), DataType::float32, 1, 5, stride);
    EXPECT_EQ(refused([&] { add_constant(one, TensorRef(fake(kB), DataType::float32, 1, 5), 1); }),
              "<other exception>")
        << stride;
    EXPECT_EQ(refused([&] {
                add_constant(one, TensorRef(fake(kA), DataType::float32, 1, 5, 64), 1);
              }),
              "<other exception>")
        << stride;
    EXPECT_EQ(refused([&] { transpose(one, TensorRef(fake(kB), DataType::float32, 5, 1)); }),
              "<other exception>")
        << stride;
  }
  // two rows: the stride is the view's
  const TensorRef two(fake(kA), DataType::float32, 2, 5, 4096);
  EXPECT_EQ(detail::view_spec(two, DataType::float32, {8, 2, 1}, Swizzle::none)
                .global_strides_bytes[0],
            4096u);
}

TEST(KernelLaunchers, TransposeNamesTheArgument) {
  const TensorRef in(fake(kA), DataType::float32, 64, 32);
  const TensorRef out(fake(kB), DataType::float32, 32, 64);
  EXPECT_EQ(refused([&] { transpose(in, TensorRef(fake(kB), DataType::float32, 64, 32)); }), "out");
  EXPECT_EQ(refused([&] { transpose(in, TensorRef(fake(kB), DataType::float64, 32, 64)); }),
            "out.type");
  // in place is refused: a transpose reads what it would overwrite
  const TensorRef square(fake(kA), DataType::float32, 64, 64);
  EXPECT_EQ(refused([&] { transpose(square, square); }), "out.data");
  // the plain path takes any whole-element alignment and stride, nothing inside an element
  EXPECT_EQ(refused([&] { transpose(TensorRef(fake(kA + 2), DataType::float32, 64, 32), out); }),
            "in.data");
  EXPECT_EQ(refused([&] {
              transpose(TensorRef(fake(kA), DataType::float32, 64, 32, 130), out);
            }),
            "in.row_stride_bytes");
  EXPECT_EQ(refused([&] {
              transpose(TensorRef(fake(kA), DataType::float32, 64, 32, 120), out);
            }),
            "in.row_stride_bytes");  // shorter than a row
  // empty: nothing launched, no CUDA call
  EXPECT_EQ(refused([&] {
              transpose(TensorRef(fake(kA), DataType::uint16, 0, 5),
                        TensorRef(fake(kB), DataType::uint16, 5, 0));
            }),
            "");
  // the tuning lab launches the TMA kernel itself: it keeps TMA's rules
  EXPECT_EQ(refused([&] {
              tune::transpose(TensorRef(fake(kA + 8), DataType::float32, 64, 32), out, nullptr,
                              tune::TransposeTuning{});
            }),
            "in.data");
  EXPECT_EQ(refused([&] { tune::transpose(in, out, nullptr, tune::TransposeTuning{5, 0}); }),
            "tuning.ctas_per_sm");
  // any type of 1, 2, 4 or 8 bytes goes through as bits: int32 into float32 is allowed
  EXPECT_EQ(refused([&] {
              tune::transpose(TensorRef(fake(kA), DataType::int32, 64, 32), out, nullptr,
                        tune::TransposeTuning{5, 0});
            }),
            "tuning.ctas_per_sm");
  EXPECT_EQ(refused([&] { tune::transpose(in, out, nullptr, tune::TransposeTuning{0, 0, -1}); }),
            "tuning.variant");
  EXPECT_EQ(refused([&] { tune::transpose(in, out, nullptr, tune::TransposeTuning{-5, 0}); }),
            "tuning.ctas_per_sm");
  EXPECT_EQ(refused([&] { tune::transpose(in, out, nullptr, tune::TransposeTuning{0, -3}); }),
            "tuning.panel_tiles");
  // one tile per CTA (variant 0 = 14 here, 13) takes no persistent CTA count; a persistent
  // layout only as many as its shared memory allows (6: one)
  std::string why;
  EXPECT_EQ(refused([&] { tune::transpose(in, out, nullptr, tune::TransposeTuning{1, 0, 13}); }, &why),
            "tuning.ctas_per_sm");
  EXPECT_NE(why.find("its own tiles"), std::string::npos) << why;
  EXPECT_EQ(refused([&] { tune::transpose(in, out, nullptr, tune::TransposeTuning{2, 0, 6}); }, &why),
            "tuning.ctas_per_sm");
  EXPECT_NE(why.find("at most 1 fit in shared memory"), std::string::npos) << why;
}

// The stencil's plan by memory system: H100 SXM (3.35 TB/s) and H200 (4.8 TB/s) as measured;
// the tuning lab numbers the TMA layouts 32 and 34. On H200-class memory both types take the
// plain kernel's 16-byte form.
TEST(KernelPlans, StencilLayoutFollowsTheMemorySystem) {
  using detail::stencil3x3::plan_layout;
  using detail::stencil3x3::plan_tma_layout;
  using detail::stencil3x3::PlannedLayout;
  EXPECT_EQ(plan_layout(3.35e12), PlannedLayout::run2_rows32);
  EXPECT_EQ(plan_layout(3.99e12), PlannedLayout::run2_rows32);
  EXPECT_EQ(plan_layout(4.0e12), PlannedLayout::plain_vector16);
  EXPECT_EQ(plan_layout(4.8e12), PlannedLayout::plain_vector16);
  EXPECT_EQ(plan_tma_layout(3.35e12), PlannedLayout::run2_rows32);
  EXPECT_EQ(plan_tma_layout(4.8e12), PlannedLayout::run2_rows16);
  EXPECT_EQ(tune::stencil3x3_default_variant(DataType::float32, 3.35e12), 32);
  EXPECT_EQ(tune::stencil3x3_default_variant(DataType::float64, 3.35e12), 32);
  EXPECT_EQ(tune::stencil3x3_default_variant(DataType::float32, 4.8e12), 34);
  EXPECT_EQ(tune::stencil3x3_default_variant(DataType::float64, 4.8e12), 34);
  EXPECT_THROW(tune::stencil3x3_default_variant(DataType::int32, 4.8e12), ArgumentError);
}

// The plain stencil's warps along a strip: one per warp span of a row up to 1, 2, 4, else 8.
TEST(KernelPlans, PlainStencilWarpsFollowTheRowsSpans) {
  using detail::stencil3x3::plain_warps_along_strip;
  EXPECT_EQ(plain_warps_along_strip(1), 1);
  EXPECT_EQ(plain_warps_along_strip(2), 2);
  EXPECT_EQ(plain_warps_along_strip(3), 4);
  EXPECT_EQ(plain_warps_along_strip(4), 4);
  EXPECT_EQ(plain_warps_along_strip(5), 8);
  EXPECT_EQ(plain_warps_along_strip(8), 8);
  EXPECT_EQ(plain_warps_along_strip(std::int64_t{1} << 40), 8);
}

// The plain stencil's strip shape: the largest that makes at least 4 warps an SM, else the
// smallest. On 132 SMs (H200): 528 warps.
TEST(KernelPlans, PlainStencilStripShapeFollowsTheImageSize) {
  using detail::stencil3x3::kElementStrips;
  using detail::stencil3x3::kVectorStrips;
  using detail::stencil3x3::plain_strip;
  using detail::stencil3x3::plain_warps;
  // a warp's span: 32 lanes x runs x columns a run
  EXPECT_EQ(detail::stencil3x3::plain_span({8, 4}, 1), 128);
  EXPECT_EQ(detail::stencil3x3::plain_span({4, 2}, 4), 256);
  EXPECT_EQ(detail::stencil3x3::plain_span({1, 1}, 2), 64);
  // warps: images x strips x warp spans
  EXPECT_EQ(plain_warps({8, 4}, 1, 513, 1025, 1), 65 * 9);
  EXPECT_EQ(plain_warps({4, 2}, 3, 257, 129, 1), 3 * 65 * 3);
  EXPECT_EQ(plain_warps({4, 2}, 1, 512, 1024, 4), 128 * 4);
  EXPECT_EQ(plain_warps({1, 1}, 1, 1, 1, 2), 1);
  // the 1-element form: 8 x 4, 4 x 2, 2 x 2, 1 x 1
  EXPECT_EQ(plain_strip(kElementStrips, 1, 513, 1025, 1, 132), 0u);   // 585 warps
  EXPECT_EQ(plain_strip(kElementStrips, 1, 8191, 8193, 1, 132), 0u);
  EXPECT_EQ(plain_strip(kElementStrips, 3, 257, 129, 1, 132), 1u);    // 198, then 585
  EXPECT_EQ(plain_strip(kElementStrips, 1, 255, 257, 1, 132), 2u);    // 96, 320, then 640
  EXPECT_EQ(plain_strip(kElementStrips, 1, 100, 100, 1, 132), 3u);    // 13, 50, 100, 400
  EXPECT_EQ(plain_strip(kElementStrips, 1, 1, 1, 1, 132), 3u);
  // fewer SMs: fewer warps fill them
  EXPECT_EQ(plain_strip(kElementStrips, 1, 255, 257, 1, 16), 0u);     // 96 >= 64
  EXPECT_EQ(plain_strip(kElementStrips, 1, 255, 257, 1, 80), 1u);     // 320 >= 320
  // the 16-byte form (float32: 4 elements a run): 4 x 2, 2 x 2, 1 x 1
  EXPECT_EQ(plain_strip(kVectorStrips, 1, 2048, 2048, 4, 132), 0u);
  EXPECT_EQ(plain_strip(kVectorStrips, 1, 512, 1024, 4, 132), 1u);    // 512, then 1024
  EXPECT_EQ(plain_strip(kVectorStrips, 1, 128, 128, 4, 132), 2u);
  // the 16-byte form with a second launch for a part span: from 128 MiB (4-byte elements),
  // 48 MiB (8-byte)
  using detail::stencil3x3::vector_form_with_part_span_takes;
  EXPECT_FALSE(vector_form_with_part_span_takes(4000ull * 4000 * 4, 4));
  EXPECT_FALSE(vector_form_with_part_span_takes((128ull << 20) - 1, 4));
  EXPECT_TRUE(vector_form_with_part_span_takes(128ull << 20, 4));
  EXPECT_TRUE(vector_form_with_part_span_takes(8192ull * 8000 * 4, 4));
  EXPECT_FALSE(vector_form_with_part_span_takes(1024ull * 3008 * 8, 8));
  EXPECT_TRUE(vector_form_with_part_span_takes(48ull << 20, 8));
  EXPECT_TRUE(vector_form_with_part_span_takes(2048ull * 4000 * 8, 8));
  // a single shape is taken whatever the size
  constexpr detail::stencil3x3::PlainStrip one[] = {{8, 4}};
  EXPECT_EQ(plain_strip(one, 1, 1, 1, 1, 132), 0u);
}

// The transpose's plan: the narrower in-place tile for 1-byte elements (lab variant 16), the
// wider one (14) for 2, 4 and 8 bytes.
TEST(KernelPlans, TransposeLayoutFollowsTheElementSize) {
  using detail::transpose::plan_layout;
  using detail::transpose::PlannedLayout;
  EXPECT_EQ(plan_layout(1), PlannedLayout::one_tile_in_place_128x128);
  for (std::uint32_t e : {2u, 4u, 8u}) {
    EXPECT_EQ(plan_layout(e), PlannedLayout::one_tile_in_place_128x256) << e;
  }
  EXPECT_EQ(tune::transpose_default_variant(1), 16);
  EXPECT_EQ(tune::transpose_default_variant(4), 14);
}

// The add-constant's box: rows of up to 1 KB (256 elements at most), narrow rows rounded up to
// 16 bytes, as many rows as the stage holds (at most 256).
TEST(KernelPlans, AddConstantBoxKeepsTheMatrixShape) {
  using detail::elementwise::plan_box;
  const auto box = [](std::uint32_t e, std::uint64_t cols, std::uint32_t stage) {
    const auto b = plan_box(e, cols, stage);
    return std::make_pair(b.cols, b.rows);
  };
  EXPECT_EQ(box(4, 32768, 8192), std::make_pair(256u, 8u));   // fp32: 1 KB rows
  EXPECT_EQ(box(2, 32768, 8192), std::make_pair(256u, 16u));  // bf16: 256 elements = 512 B
  EXPECT_EQ(box(1, 32768, 8192), std::make_pair(256u, 32u));  // T7: 256 elements at most
  EXPECT_EQ(box(4, 5, 8192), std::make_pair(8u, 256u));       // 20 B rows -> 32 B, 256 rows
  EXPECT_EQ(box(8, 1, 8192), std::make_pair(2u, 256u));       // one fp64 -> 16 B
  EXPECT_EQ(box(4, 300, 32768), std::make_pair(256u, 32u));   // 32 KB stages
}

// The add-constant's one-row rule: a view of one row in one image takes the plain kernel;
// two rows, or one row in each of several images, keep the TMA kernel.
TEST(KernelPlans, AddConstantOneRowTakesThePlainKernel) {
  using detail::elementwise::one_row_takes_plain;
  EXPECT_TRUE(one_row_takes_plain(1, 1));
  EXPECT_TRUE(one_row_takes_plain(1, 0));
  EXPECT_FALSE(one_row_takes_plain(2, 1));
  EXPECT_FALSE(one_row_takes_plain(1, 3));
  EXPECT_FALSE(one_row_takes_plain(8191, 1));
}

// The dense form's split of a run into head elements, whole 16-byte slots and tail elements,
// and when it takes a view: every start within 16 bytes, lengths around the slot size.
TEST(ElementwisePlan, DenseSplitCoversTheRunOnce) {
  using detail::elementwise::dense_split;
  for (const std::uint32_t e : {1u, 2u, 4u, 8u}) {
    const std::uint64_t per = 16 / e;
    for (std::uint64_t address = 4096; address < 4096 + 16; address += e) {
      for (std::uint64_t n = 0; n < 3 * per + 2; ++n) {
        const auto d = dense_split(address, n, e);
        EXPECT_EQ(d.head + d.slots * per + d.tail, n);
        EXPECT_LT(d.head, per);
        EXPECT_LT(d.tail, per);
        if (d.slots > 0) {
          EXPECT_EQ((address + d.head * e) % 16, 0u) << e << " " << address << " " << n;
        }
        if (n >= d.head + per) {
          EXPECT_GE(d.slots, 1u);  // a whole slot past the head is taken as one
        }
      }
    }
  }
  EXPECT_EQ(dense_split(4096 + 4, 100, 4).head, 3u);
  EXPECT_EQ(dense_split(4096 + 4, 100, 4).slots, 24u);
  EXPECT_EQ(dense_split(4096 + 4, 100, 4).tail, 1u);
  EXPECT_EQ(dense_split(4096 + 6, 2, 2).head, 2u);  // a run shorter than its head
  EXPECT_EQ(dense_split(4096 + 6, 2, 2).slots, 0u);
}

TEST(ElementwisePlan, DenseFormTakesSameOffsetsWithinItsIndices) {
  using detail::elementwise::dense_form_takes;
  EXPECT_TRUE(dense_form_takes(4096, 8192, 1000, 4, 1u << 20));
  EXPECT_TRUE(dense_form_takes(4100, 8196, 1000, 4, 1u << 20));   // both 4 past 16
  EXPECT_FALSE(dense_form_takes(4100, 8192, 1000, 4, 1u << 20));  // offsets differ mod 16
  EXPECT_FALSE(dense_form_takes(4098, 8194, 1000, 4, 1u << 20));  // not whole elements
  EXPECT_TRUE(dense_form_takes(4096, 4096, 1000, 8, 1u << 20));   // in place
  EXPECT_TRUE(dense_form_takes(4096, 8192, 16 * 100, 1, 100));    // 100 slots, at the limit
  EXPECT_FALSE(dense_form_takes(4096, 8192, 16 * 101, 1, 100));   // past it
}

// Images of one row each and no image stride lie one row pitch apart: a pitch off the
// element (22 bytes of float32) would misalign every other image's loads and stores (a
// misaligned-address fault on the plain path), so it is refused, named, for in and out.
TEST(KernelLaunchers, ImagesOneRowPitchApartAreWholeElements) {
  const Filter3x3 f = Filter3x3::laplacian();
  std::string msg;
  EXPECT_EQ(refused([&] {
              stencil3x3(TensorRef(fake(kA), DataType::float32, 1, 5, 22, 2),
                         TensorRef(fake(kB), DataType::float32, 1, 5, 0, 2), f);
            }, &msg),
            "in.row_stride_bytes");
  EXPECT_NE(msg.find("not a multiple of the 4-byte element"), std::string::npos) << msg;
  EXPECT_EQ(refused([&] {
              stencil3x3(TensorRef(fake(kA), DataType::float64, 1, 5, 0, 2),
                         TensorRef(fake(kB), DataType::float64, 1, 5, 44, 2), f);
            }),
            "out.row_stride_bytes");
  // with an image stride of whole elements the single row's pitch is never followed
  const std::string argument = refused([&] {
    stencil3x3(TensorRef(fake(kA), DataType::float32, 1, 5, 22, 2, 64),
               TensorRef(fake(kB), DataType::float32, 1, 5, 0, 2), f);
  });
  EXPECT_EQ(argument.find("stride_bytes"), std::string::npos) << argument;
}

TEST(KernelLaunchers, StencilNamesTheArgument) {
  const TensorRef in(fake(kA), DataType::float64, 64, 64);
  const TensorRef out(fake(kB), DataType::float64, 64, 64);
  const Filter3x3 f = Filter3x3::laplacian();
  EXPECT_EQ(refused([&] {
              stencil3x3(TensorRef(fake(kA), DataType::int32, 64, 64),
                         TensorRef(fake(kB), DataType::int32, 64, 64), f);
            }),
            "in.type");
  EXPECT_EQ(refused([&] { stencil3x3(in, TensorRef(fake(kB), DataType::float32, 64, 64), f); }),
            "out.type");
  EXPECT_EQ(refused([&] { stencil3x3(in, TensorRef(fake(kB), DataType::float64, 64, 64, 0, 2), f); }),
            "out");
  EXPECT_EQ(refused([&] { stencil3x3(in, in, f); }), "out.data");
  Filter3x3 bad = f;
  bad.taps[4] = std::numeric_limits<double>::infinity();
  EXPECT_EQ(refused([&] { stencil3x3(in, out, bad); }), "filter.taps[4]");
  // 3 rows of 16 bytes: an image stride of 40 is too short, one of 52 inside an element
  EXPECT_EQ(refused([&] {
              stencil3x3(TensorRef(fake(kA), DataType::float64, 3, 2, 16, 2, 40),
                         TensorRef(fake(kB), DataType::float64, 3, 2, 16, 2, 48), f);
            }),
            "in.image_stride_bytes");
  EXPECT_EQ(refused([&] {
              stencil3x3(TensorRef(fake(kA), DataType::float64, 3, 2, 16, 2, 52),
                         TensorRef(fake(kB), DataType::float64, 3, 2, 16, 2, 48), f);
            }),
            "in.image_stride_bytes");
  EXPECT_EQ(refused([&] {
              stencil3x3(TensorRef(fake(kA), DataType::float32, 0, 9, 0, 3),
                         TensorRef(fake(kB), DataType::float32, 0, 9, 0, 3), f);
            }),
            "");
  // layouts are 1..36 plus 0 (the default); checked before any device query
  EXPECT_EQ(refused([&] { tune::stencil3x3(in, out, f, nullptr, tune::StencilTuning{0, tune::kStencilVariants}); }),
            "tuning.variant");
  EXPECT_EQ(refused([&] { tune::stencil3x3(in, out, f, nullptr, tune::StencilTuning{1, 24}); }),
            "tuning.ctas_per_sm");
  EXPECT_EQ(refused([&] { tune::stencil3x3(in, out, f, nullptr, tune::StencilTuning{0, -1}); }),
            "tuning.variant");
  EXPECT_EQ(refused([&] { tune::stencil3x3(in, out, f, nullptr, tune::StencilTuning{2, 8}); }),
            "tuning.ctas_per_sm");
  EXPECT_EQ(refused([&] { tune::stencil3x3(in, out, f, nullptr, tune::StencilTuning{-1, 8}); }),
            "tuning.ctas_per_sm");
  // a tap past float's range would be inf in a float32 image (fine for float64)
  Filter3x3 huge = f;
  huge.taps[0] = 1e39;
  EXPECT_EQ(refused([&] {
              stencil3x3(TensorRef(fake(kA), DataType::float32, 8, 8),
                         TensorRef(fake(kB), DataType::float32, 8, 8), huge);
            }),
            "filter.taps[0]");
  // panels: not negative, and the row walks (10-13) take their tiles row by row
  EXPECT_EQ(refused([&] { tune::stencil3x3(in, out, f, nullptr, tune::StencilTuning{0, 8, -1}); }),
            "tuning.panel_tiles");
  EXPECT_EQ(refused([&] { tune::stencil3x3(in, out, f, nullptr, tune::StencilTuning{0, 13, 2}); }),
            "tuning.panel_tiles");
}

// The path of a view, rule by rule (tmakit/kernels/detail/plain_path.hpp).
TEST(KernelPlans, PathFollowsTheRules) {
  using detail::Path;
  using detail::plan_path;
  const auto plan = [](const TensorRef& in, const TensorRef& out, bool tma_type = true) {
    return std::string(plan_path(in, out, tma_type).id());
  };
  const TensorRef aligned(fake(kA), DataType::float32, 8191, 8192);
  const TensorRef aligned_t(fake(kB), DataType::float32, 8192, 8191, 8192 * 4);
  EXPECT_EQ(plan(aligned, TensorRef(fake(kB), DataType::float32, 8191, 8192)), "P7");
  EXPECT_EQ(plan_path(aligned, aligned, true).path, Path::tma_rows);
  // P1: no element (either view), before anything else
  EXPECT_EQ(plan(TensorRef(fake(kA + 4), DataType::float32, 0, 3),
                 TensorRef(fake(kB), DataType::float32, 0, 3)), "P1");
  EXPECT_EQ(plan_path(TensorRef(nullptr, DataType::float32, 2, 3, 0, 0),
                      TensorRef(nullptr, DataType::float32, 2, 3, 0, 0), false).path,
            Path::nothing);
  // P2: a type without a TMA kernel, whatever the alignment
  EXPECT_EQ(plan(aligned, aligned, false), "P2");
  // P3: a start off 16 bytes, in or out
  EXPECT_EQ(plan(TensorRef(fake(kA + 4), DataType::float32, 4, 8),
                 TensorRef(fake(kB), DataType::float32, 4, 8)), "P3");
  EXPECT_EQ(plan(TensorRef(fake(kA), DataType::float32, 4, 8),
                 TensorRef(fake(kB + 8), DataType::float32, 4, 8)), "P3");
  // P4: the shapes: 8191 x 8193 fp32 rows are 32772 bytes apart
  EXPECT_EQ(plan(TensorRef(fake(kA), DataType::float32, 8191, 8193),
                 TensorRef(fake(kB), DataType::float32, 8191, 8193)), "P4");
  EXPECT_EQ(plan(aligned, TensorRef(fake(kB), DataType::float32, 8191, 8192, 8192 * 4 + 4)),
            "P4");
  EXPECT_EQ(plan_path(aligned_t, TensorRef(fake(kA), DataType::float32, 8191, 8192), true).path,
            Path::tma_rows);
  // a single row needs no pitch: 1 x 5 float32 runs through TMA
  EXPECT_EQ(plan(TensorRef(fake(kA), DataType::float32, 1, 5),
                 TensorRef(fake(kB), DataType::float32, 1, 5)), "P7");
  // P5: images off 16 bytes (3 x 257 x 128 float64: rows of 1024 bytes, images 263168 apart is
  // aligned; 3 rows of 2 doubles at an image stride of 56 is not)
  EXPECT_EQ(plan(TensorRef(fake(kA), DataType::float64, 3, 2, 16, 2, 56),
                 TensorRef(fake(kB), DataType::float64, 3, 2, 16, 2)), "P5");
  EXPECT_EQ(plan(TensorRef(fake(kA), DataType::float64, 257, 128, 0, 3),
                 TensorRef(fake(kB), DataType::float64, 257, 128, 0, 3)), "P7");
  // P6: an extent past 2^31 - 4096 in either view (a dense tensor of more elements as one row,
  // its transpose's rows, images), aligned otherwise; at the limit itself TMA takes it
  const std::uint64_t most = detail::kMaxExtent;
  EXPECT_EQ(most, (1ull << 31) - 4096);
  EXPECT_EQ(plan(TensorRef(fake(kA), DataType::float32, 1, most + 4),
                 TensorRef(fake(kB), DataType::float32, 1, most + 4)), "P6");
  EXPECT_EQ(plan(TensorRef(fake(kA), DataType::float32, 1, most),
                 TensorRef(fake(kB), DataType::float32, 1, most)), "P7");
  EXPECT_EQ(plan(TensorRef(fake(kA), DataType::uint8, 4, most + 1, 1ull << 31),
                 TensorRef(fake(kB), DataType::uint8, most + 1, 4, 16)), "P6");
  EXPECT_EQ(plan(TensorRef(fake(kA), DataType::uint8, 16, 4, 16),
                 TensorRef(fake(kB), DataType::uint8, 4, 16)), "P7");
  EXPECT_EQ(plan(TensorRef(fake(kA), DataType::float32, 2, 4, 16, most + 1),
                 TensorRef(fake(kB), DataType::float32, 2, 4, 16, most + 1)), "P6");
  EXPECT_EQ(plan_path(TensorRef(fake(kA), DataType::float32, 1, most + 4),
                      TensorRef(fake(kB), DataType::float32, 1, most + 4), true).path,
            Path::plain_loads);
  // every rule has a distinct id
  for (int i = 0; i < detail::kPathRuleCount; ++i) {
    for (int j = i + 1; j < detail::kPathRuleCount; ++j) {
      EXPECT_STRNE(detail::kPathRules[i].id, detail::kPathRules[j].id);
    }
  }
}

// The constant an integer tensor adds: wrapped to the element's width by the add, exact for
// every int64; an unsigned type takes -(2^n - 1)..2^n - 1.
TEST(KernelPlans, IntegerConstantsWrap) {
  using detail::elementwise::integer_constant;
  using detail::elementwise::make_constant;
  EXPECT_EQ(integer_constant(-1).bits, ~std::uint64_t{0});
  EXPECT_EQ(integer_constant(-1).i32, -1);
  EXPECT_EQ(integer_constant(9007199254740993).bits, 9007199254740993u);  // 2^53 + 1
  EXPECT_EQ(make_constant(DataType::uint8, -255).bits, static_cast<std::uint64_t>(-255));
  EXPECT_EQ(make_constant(DataType::uint8, 255).bits, 255u);
  EXPECT_EQ(make_constant(DataType::int64, -9223372036854775808.0).bits, std::uint64_t{1} << 63);
  EXPECT_EQ(make_constant(DataType::uint64, 18446744073709549568.0).bits,
            18446744073709549568u);
  EXPECT_EQ(make_constant(DataType::float64, 0.1).f64, 0.1);
  // bf16/fp16 add the value as float32, not first rounded to their own type (as torch)
  EXPECT_EQ(make_constant(DataType::float16, 0.1).f32, 0.1f);
  EXPECT_EQ(make_constant(DataType::bfloat16, -12345.678).f32, -12345.678f);
  EXPECT_EQ(make_constant(DataType::float16, 1e6).f32, 1e6f);
  EXPECT_EQ(refused([] { make_constant(DataType::uint16, 65536); }), "value");
  EXPECT_EQ(refused([] { make_constant(DataType::uint64, 18446744073709551616.0); }), "value");
  EXPECT_EQ(refused([] { make_constant(DataType::int64, 0.5); }), "value");
}

}  // namespace
}  // namespace tmakit
