// transpose against its CPU reference for 1-, 2-, 4- and 8-byte elements on odd shapes, user
// strides, outputs (padding included) poisoned first.
#include <gtest/gtest.h>

#include <tuple>

#include "test_kernels_common.hpp"
#include "tune/tuning.hpp"
#include "tmakit/kernels/transpose.hpp"

namespace tmakit::test {
namespace {

struct Shape {
  std::uint64_t rows, cols, in_pad, out_pad;
};

const Shape kShapes[] = {
    {1, 1, 0, 0},       {1, 37, 0, 0},       {37, 1, 0, 16},    {1, 1000, 0, 0},  {97, 101, 0, 0},
    {127, 131, 32, 16}, {128, 128, 0, 0},    {300, 500, 16, 0}, {256, 512, 0, 0}, {129, 257, 0, 48},
    {1031, 263, 0, 0},  {2053, 1999, 0, 32}, {4099, 517, 64, 0}};
constexpr int kVariants = tune::kTransposeVariants;  // kernels/transpose/README.md
const DataType kTypes[] = {DataType::uint8, DataType::bfloat16, DataType::float32,
                           DataType::float64};

class Transpose : public ::testing::TestWithParam<std::tuple<DataType, Shape>> {};

TEST_P(Transpose, MatchesReference) {
  TMAKIT_SKIP_WITHOUT_GPU();
  const auto [type, s] = GetParam();
  Image in(type, 1, s.rows, s.cols, s.in_pad);
  Image out(type, 1, s.cols, s.rows, s.out_pad);
  in.randomize(static_cast<std::uint32_t>(s.rows * 131 + s.cols));
  transpose(in.ref(), out.ref());
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  reference::transpose(in.host_ref(), out.host_ref());
  EXPECT_EQ(count_mismatches(out, out.host, out.download()), 0u);
}

TEST_P(Transpose, TwiceIsIdentity) {
  TMAKIT_SKIP_WITHOUT_GPU();
  const auto [type, s] = GetParam();
  Image a(type, 1, s.rows, s.cols, s.in_pad);
  Image t(type, 1, s.cols, s.rows, s.out_pad);
  Image back(type, 1, s.rows, s.cols, s.in_pad);
  a.randomize(static_cast<std::uint32_t>(s.rows + 17 * s.cols));
  transpose(a.ref(), t.ref());
  transpose(t.ref(), back.ref());
  // back's padding holds the poison, a's the same poison: bytes compare equal throughout
  EXPECT_EQ(count_mismatches(back, a.host, back.download()), 0u);
}

INSTANTIATE_TEST_SUITE_P(Shapes, Transpose,
                         ::testing::Combine(::testing::ValuesIn(kTypes),
                                            ::testing::ValuesIn(kShapes)));

TEST(TransposeGpu, TuningKnobsKeepResults) {
  TMAKIT_SKIP_WITHOUT_GPU();
  // NOTE: the default layout runs one tile per CTA (no CTA count); two CTAs need layout 1
  for (const tune::TransposeTuning tuning :
       {tune::TransposeTuning{0, 1}, tune::TransposeTuning{2, 3, 1}, tune::TransposeTuning{0, 64},
        tune::TransposeTuning{0, 3, 6}, tune::TransposeTuning{0, 2, 7}, tune::TransposeTuning{1, 5, 8},
        tune::TransposeTuning{0, 4, 9}, tune::TransposeTuning{2, 1, 10}, tune::TransposeTuning{0, 3, 11},
        tune::TransposeTuning{1, 2, 12}}) {
    Image in(DataType::float32, 1, 1000, 777);
    Image out(DataType::float32, 1, 777, 1000);
    in.randomize(11);
    tune::transpose(in.ref(), out.ref(), nullptr, tuning);
    reference::transpose(in.host_ref(), out.host_ref());
    EXPECT_EQ(count_mismatches(out, out.host, out.download()), 0u)
        << "ctas_per_sm " << tuning.ctas_per_sm << " panel " << tuning.panel_tiles << " variant "
        << tuning.variant;
  }
}

// The layouts with two 128-byte input slices per tile (6, 7, 9, 10, 11, 13, 14), in place
// (7 .. 10, 14, 16), 256-row tiles (7, 8, 12) and one tile per CTA (13 .. 16; 14 and 16 are
// the defaults) on every odd shape: tiles whose second slice lies wholly right of the input,
// output rows shorter than 16 bytes, user strides.
class TransposeWideLayouts : public ::testing::TestWithParam<std::tuple<DataType, Shape, int>> {};

TEST_P(TransposeWideLayouts, MatchesReference) {
  TMAKIT_SKIP_WITHOUT_GPU();
  const auto [type, s, variant] = GetParam();
  Image in(type, 1, s.rows, s.cols, s.in_pad);
  Image out(type, 1, s.cols, s.rows, s.out_pad);
  in.randomize(static_cast<std::uint32_t>(s.rows * 7 + s.cols * 3 + variant));
  tune::transpose(in.ref(), out.ref(), nullptr, tune::TransposeTuning{0, 0, variant});
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  reference::transpose(in.host_ref(), out.host_ref());
  EXPECT_EQ(count_mismatches(out, out.host, out.download()), 0u);
}

INSTANTIATE_TEST_SUITE_P(Shapes, TransposeWideLayouts,
                         ::testing::Combine(::testing::ValuesIn(kTypes),
                                            ::testing::ValuesIn(kShapes),
                                            ::testing::Values(6, 7, 8, 9, 10, 11, 12, 13, 14,
                                                              15, 16)));

// Every layout (tune::TransposeTuning::variant) on a shape large enough that each CTA's ring wraps
// several times, with user strides and output row tails.
class TransposeLayouts : public ::testing::TestWithParam<DataType> {};

TEST_P(TransposeLayouts, EveryVariantMatchesReference) {
  TMAKIT_SKIP_WITHOUT_GPU();
  const DataType type = GetParam();
  constexpr std::uint64_t kRows = 8195, kCols = 4099;
  Image in(type, 1, kRows, kCols, 16);
  in.randomize(static_cast<std::uint32_t>(kRows * 3 + kCols));
  Image expect(type, 1, kCols, kRows, 48);
  reference::transpose(in.host_ref(), expect.host_ref());
  for (int variant = 0; variant < kVariants; ++variant) {
    Image out(type, 1, kCols, kRows, 48);  // poisoned, padding included
    tune::transpose(in.ref(), out.ref(), nullptr, tune::TransposeTuning{0, 0, variant});
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    EXPECT_EQ(count_mismatches(out, expect.host, out.download()), 0u) << "variant " << variant;
  }
}

INSTANTIATE_TEST_SUITE_P(Types, TransposeLayouts, ::testing::ValuesIn(kTypes));

// Grids capped at a few CTAs: each CTA of a one-tile layout then takes many tiles through its
// single stage, whose row tails must be read before the next tile loads into it.
TEST(TransposeGpu, CappedGridWalksEveryTile) {
  TMAKIT_SKIP_WITHOUT_GPU();
  for (const DataType type : kTypes) {
    constexpr std::uint64_t kRows = 515, kCols = 1001;
    Image in(type, 1, kRows, kCols, 16);
    in.randomize(9);
    Image expect(type, 1, kCols, kRows, 48);
    reference::transpose(in.host_ref(), expect.host_ref());
    for (const std::int64_t cap : {1, 3, 7}) {
      const GridCap capped(cap);
      for (const int variant : {0, 13, 14, 15, 16}) {
        Image out(type, 1, kCols, kRows, 48);  // poisoned, padding included
        tune::transpose(in.ref(), out.ref(), nullptr, tune::TransposeTuning{0, 0, variant});
        ASSERT_EQ(cudaGetLastError(), cudaSuccess);
        EXPECT_EQ(count_mismatches(out, expect.host, out.download()), 0u)
            << name(type) << " variant " << variant << " grid capped at " << cap;
      }
    }
  }
}

TEST(TransposeGpu, UnknownVariantThrows) {
  TMAKIT_SKIP_WITHOUT_GPU();
  Image in(DataType::float32, 1, 8, 12);
  Image out(DataType::float32, 1, 12, 8);
  EXPECT_THROW(tune::transpose(in.ref(), out.ref(), nullptr, tune::TransposeTuning{0, 0, kVariants}),
               ArgumentError);
  EXPECT_THROW(tune::transpose(in.ref(), out.ref(), nullptr, tune::TransposeTuning{0, 0, -1}), ArgumentError);
  EXPECT_THROW(tune::transpose(in.ref(), out.ref(), nullptr, tune::TransposeTuning{2, 0, 0}), ArgumentError);
  for (std::uint8_t b : out.download()) ASSERT_EQ(b, kPoison);
}

TEST(TransposeGpu, BadInputWritesNothing) {
  TMAKIT_SKIP_WITHOUT_GPU();
  Image in(DataType::float32, 1, 8, 12);
  Image out(DataType::float32, 1, 8, 12);  // not the transposed shape
  in.randomize(5);
  EXPECT_THROW(transpose(in.ref(), out.ref()), ArgumentError);
  for (std::uint8_t b : out.download()) ASSERT_EQ(b, kPoison);
}

// malloc'd memory as either pointer is refused naming it, before anything runs; the context
// survives: the same call on device memory then gives the right result.
TEST(TransposeGpu, HostPointersAreRefusedAndTheContextSurvives) {
  TMAKIT_SKIP_WITHOUT_GPU();
  Image in(DataType::float32, 1, 97, 101);
  Image out(DataType::float32, 1, 101, 97);
  in.randomize(11);
  MallocImage host_in(in), host_out(out);
  expect_pointer_refused([&] { transpose(host_in.ref(), out.ref()); }, "in.data");
  expect_pointer_refused([&] { transpose(in.ref(), host_out.ref()); }, "out.data");
  transpose(in.ref(), out.ref());
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  reference::transpose(in.host_ref(), out.host_ref());
  EXPECT_EQ(count_mismatches(out, out.host, out.download()), 0u);
}

}  // namespace
}  // namespace tmakit::test
