// stencil3x3 against its CPU reference (bit for bit: same fused multiply-adds in the same
// order) on odd shapes and batches, fp32 and fp64, outputs (padding included) poisoned first.
#include <gtest/gtest.h>

#include <iterator>
#include <tuple>
#include <vector>

#include "stencil3x3/plain_stencil3x3.hpp"
#include "stencil3x3/stencil3x3_plan.hpp"
#include "test_kernels_common.hpp"
#include "tune/tuning.hpp"
#include "tmakit/kernels/stencil3x3.hpp"

namespace tmakit::test {
namespace {

struct Shape {
  std::uint64_t batch, rows, cols, pad;
};

const Shape kShapes[] = {{1, 1, 1, 0},      {1, 1, 37, 0},     {1, 37, 1, 0},    {1, 2, 2, 0},
                         {1, 97, 101, 0},   {1, 127, 131, 32}, {1, 32, 64, 0},   {1, 300, 500, 0},
                         {1, 256, 512, 16}, {3, 33, 65, 0},    {4, 61, 59, 48},  {1, 1031, 1999, 0},
                         {2, 513, 257, 0},  {1, 19, 257, 0},   {2, 35, 130, 16}, {1, 40, 1029, 0}};
const DataType kTypes[] = {DataType::float32, DataType::float64};

// Taps with no symmetry, so a flipped or shifted filter fails.
Filter3x3 asymmetric() { return {{0.5, -1.25, 2.0, 0.125, -3.0, 0.75, 1.5, -0.25, 0.0625}}; }

class Stencil : public ::testing::TestWithParam<std::tuple<DataType, Shape>> {};

TEST_P(Stencil, MatchesReference) {
  TMAKIT_SKIP_WITHOUT_GPU();
  const auto [type, s] = GetParam();
  for (const Filter3x3& f : {asymmetric(), Filter3x3::laplacian()}) {
    Image in(type, s.batch, s.rows, s.cols, s.pad);
    Image out(type, s.batch, s.rows, s.cols, s.pad + 16);
    in.randomize(static_cast<std::uint32_t>(s.rows * 31 + s.cols + s.batch));
    stencil3x3(in.ref(), out.ref(), f);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    reference::stencil3x3(in.host_ref(), out.host_ref(), f);
    EXPECT_EQ(count_mismatches(out, out.host, out.download()), 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, Stencil,
                         ::testing::Combine(::testing::ValuesIn(kTypes),
                                            ::testing::ValuesIn(kShapes)));

// The plain kernel's 16-byte form, which the plan picks for aligned views on H200-class
// memory, called directly so that every part and both types run it: Image's rows are 16-byte
// aligned; the shapes have columns past the last whole warp span (the second, 1-element
// launch) and narrower than one span, batch images and pad rows.
class StencilVector16 : public ::testing::TestWithParam<std::tuple<DataType, Shape>> {};

TEST_P(StencilVector16, MatchesReference) {
  TMAKIT_SKIP_WITHOUT_GPU();
  const auto [type, s] = GetParam();
  Image in(type, s.batch, s.rows, s.cols, s.pad);
  Image out(type, s.batch, s.rows, s.cols, s.pad + 16);  // poisoned, padding included
  in.randomize(static_cast<std::uint32_t>(s.rows * 13 + s.cols + s.batch));
  detail::stencil3x3::launch_plain_vector(in.ref(), out.ref(), asymmetric(), nullptr);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  reference::stencil3x3(in.host_ref(), out.host_ref(), asymmetric());
  EXPECT_EQ(count_mismatches(out, out.host, out.download()), 0u);
}

INSTANTIATE_TEST_SUITE_P(Shapes, StencilVector16,
                         ::testing::Combine(::testing::ValuesIn(kTypes),
                                            ::testing::ValuesIn(kShapes)));

// Every strip shape of the plain kernel in both forms on every shape, whatever the plan would
// pick there (stencil3x3_plan.hpp, plain_strip): the 1-element form alone, and the 16-byte
// form with each 1-element shape for the columns right of its last whole span.
class StencilStrips : public ::testing::TestWithParam<std::tuple<DataType, Shape>> {};

TEST_P(StencilStrips, EveryShapeMatchesReference) {
  TMAKIT_SKIP_WITHOUT_GPU();
  const auto [type, s] = GetParam();
  Image in(type, s.batch, s.rows, s.cols, s.pad);
  in.randomize(static_cast<std::uint32_t>(s.rows * 7 + s.cols + s.batch));
  Image expected(type, s.batch, s.rows, s.cols, s.pad + 16);
  reference::stencil3x3(in.host_ref(), expected.host_ref(), asymmetric());
  using detail::stencil3x3::StripChoice;
  for (std::size_t element = 0; element < std::size(detail::stencil3x3::kElementStrips);
       ++element) {
    for (std::size_t vector16 = 0; vector16 < std::size(detail::stencil3x3::kVectorStrips);
         ++vector16) {
      for (const bool vector_form : {false, true}) {
        if (!vector_form && vector16 > 0) continue;  // the 1-element form once a shape
        Image out(type, s.batch, s.rows, s.cols, s.pad + 16);  // poisoned, padding included
        const StripChoice strips{element, vector16};
        if (vector_form) {
          detail::stencil3x3::launch_plain_vector(in.ref(), out.ref(), asymmetric(), nullptr,
                                                  strips);
        } else {
          detail::stencil3x3::launch_plain(in.ref(), out.ref(), asymmetric(), nullptr, strips);
        }
        ASSERT_EQ(cudaGetLastError(), cudaSuccess);
        EXPECT_EQ(count_mismatches(out, expected.host, out.download()), 0u)
            << "element strip " << element << ", 16-byte strip " << vector16
            << (vector_form ? " (16-byte form)" : " (1-element form)");
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, StencilStrips,
                         ::testing::Combine(::testing::ValuesIn(kTypes),
                                            ::testing::ValuesIn(kShapes)));

// A strip shape past the lists is refused naming it, before anything is launched.
TEST(StencilStripsRefused, PastTheListNamesTheArgument) {
  TMAKIT_SKIP_WITHOUT_GPU();
  Image in(DataType::float32, 1, 8, 8, 0);
  Image out(DataType::float32, 1, 8, 8, 0);
  using detail::stencil3x3::StripChoice;
  const std::size_t elements = std::size(detail::stencil3x3::kElementStrips);
  try {
    detail::stencil3x3::launch_plain(in.ref(), out.ref(), asymmetric(), nullptr,
                                     StripChoice{elements, 0});
    FAIL() << "not refused";
  } catch (const ArgumentError& e) {
    EXPECT_EQ(e.argument(), "strips.element");
  }
  try {
    detail::stencil3x3::launch_plain_vector(in.ref(), out.ref(), asymmetric(), nullptr,
                                            StripChoice{0, 3});
    FAIL() << "not refused";
  } catch (const ArgumentError& e) {
    EXPECT_EQ(e.argument(), "strips.vector16");
  }
}

constexpr int kVariants = tune::kStencilVariants;  // kernels/stencil3x3/README.md

// Every layout other than the default on every odd shape: tiles wider and taller than the
// image, slices wholly right of it, row tails, padding, batches.
class StencilVariant : public ::testing::TestWithParam<std::tuple<DataType, Shape, int>> {};

TEST_P(StencilVariant, MatchesReference) {
  TMAKIT_SKIP_WITHOUT_GPU();
  const auto [type, s, variant] = GetParam();
  Image in(type, s.batch, s.rows, s.cols, s.pad);
  Image out(type, s.batch, s.rows, s.cols, s.pad + 16);  // poisoned, padding included
  in.randomize(static_cast<std::uint32_t>(s.rows * 17 + s.cols + s.batch + variant));
  tune::stencil3x3(in.ref(), out.ref(), asymmetric(), nullptr, tune::StencilTuning{0, variant});
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  reference::stencil3x3(in.host_ref(), out.host_ref(), asymmetric());
  EXPECT_EQ(count_mismatches(out, out.host, out.download()), 0u);
}

INSTANTIATE_TEST_SUITE_P(Shapes, StencilVariant,
                         ::testing::Combine(::testing::ValuesIn(kTypes),
                                            ::testing::ValuesIn(kShapes),
                                            ::testing::Range(1, kVariants)));

// Each tuning in turn on one random batch of `images` x `rows` x `cols` (16 bytes of row
// padding in, `out_pad` out), every output poisoned first, against the CPU reference.
void expect_tunings_match(DataType type, std::uint64_t images, std::uint64_t rows,
                          std::uint64_t cols, std::uint64_t out_pad, std::uint32_t seed,
                          const std::vector<tune::StencilTuning>& tunings) {
  Image in(type, images, rows, cols, 16);
  in.randomize(seed);
  Image expect(type, images, rows, cols, out_pad);
  reference::stencil3x3(in.host_ref(), expect.host_ref(), asymmetric());
  for (const tune::StencilTuning& tuning : tunings) {
    Image out(type, images, rows, cols, out_pad);  // poisoned, padding included
    tune::stencil3x3(in.ref(), out.ref(), asymmetric(), nullptr, tuning);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    EXPECT_EQ(count_mismatches(out, expect.host, out.download()), 0u)
        << name(type) << " variant " << tuning.variant << " ctas_per_sm " << tuning.ctas_per_sm
        << " panel " << tuning.panel_tiles;
  }
}

// The layouts that give each CTA its own tiles (kernels/stencil3x3/README.md) take no CTA
// count.
bool refuses_ctas_per_sm(int variant) { return variant == 0 || variant >= 23; }

// Every layout (tune::StencilTuning::variant) on a batch large enough that each CTA's ring wraps
// several times, with row tails and image padding.
class StencilLayouts : public ::testing::TestWithParam<DataType> {};

TEST_P(StencilLayouts, EveryVariantMatchesReference) {
  TMAKIT_SKIP_WITHOUT_GPU();
  std::vector<tune::StencilTuning> tunings;
  for (int variant = 0; variant < kVariants; ++variant) {
    for (int ctas : {0, 1, variant == 19 ? 3 : 1}) {  // variant 19's default is 3 per SM
      if (ctas > 0 && refuses_ctas_per_sm(variant)) continue;
      tunings.push_back(tune::StencilTuning{ctas, variant});
    }
  }
  expect_tunings_match(GetParam(), 3, 1031, 2053, 48, 77, tunings);
}

INSTANTIATE_TEST_SUITE_P(Types, StencilLayouts, ::testing::ValuesIn(kTypes));

// Grids capped at a few CTAs: each CTA then takes many tiles (one-tile layouts through their
// single stage, runs through their ring), row tails and image edges included.
TEST(StencilGpu, CappedGridWalksEveryTile) {
  TMAKIT_SKIP_WITHOUT_GPU();
  std::vector<tune::StencilTuning> tunings;
  for (int variant = 0; variant < kVariants; ++variant) {
    if (refuses_ctas_per_sm(variant)) tunings.push_back(tune::StencilTuning{0, variant});
  }
  for (const std::int64_t cap : {1, 3}) {
    const GridCap capped(cap);
    for (const DataType type : kTypes) expect_tunings_match(type, 2, 99, 301, 32, 13, tunings);
  }
}

// Panels of tile rows (tune::StencilTuning::panel_tiles) on the tile-stream layouts: panels that
// do not divide the tile rows, a panel taller than the image, and the row walk's panel 1.
TEST(StencilGpu, PanelsMatchReference) {
  TMAKIT_SKIP_WITHOUT_GPU();
  for (const DataType type : kTypes) {
    expect_tunings_match(type, 2, 203, 517, 32, 31,
                         {tune::StencilTuning{0, 0, 1}, tune::StencilTuning{0, 19, 3}, tune::StencilTuning{0, 22, 2},
                          tune::StencilTuning{0, 8, 4}, tune::StencilTuning{0, 4, 1000},
                          tune::StencilTuning{0, 13, 1}, tune::StencilTuning{0, 24, 3},
                          tune::StencilTuning{0, 23, 1000}});
  }
}

// Variant 0 stands for a concrete layout of this device, and runs exactly as that layout.
TEST(StencilGpu, DefaultVariantIsAConcreteLayout) {
  TMAKIT_SKIP_WITHOUT_GPU();
  for (const DataType type : kTypes) {
    const int chosen = tune::stencil3x3_default_variant(type);
    ASSERT_GE(chosen, 1);
    ASSERT_LT(chosen, kVariants);
    Image in(type, 1, 97, 203, 16);
    in.randomize(5);
    Image by_default(type, 1, 97, 203, 16);
    Image by_name(type, 1, 97, 203, 16);
    tune::stencil3x3(in.ref(), by_default.ref(), asymmetric(), nullptr, tune::StencilTuning{0, 0});
    tune::stencil3x3(in.ref(), by_name.ref(), asymmetric(), nullptr, tune::StencilTuning{0, chosen});
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    EXPECT_EQ(by_default.download(), by_name.download()) << "variant " << chosen;
  }
  EXPECT_THROW(tune::stencil3x3_default_variant(DataType::int32), ArgumentError);
}

TEST(StencilGpu, UnknownVariantThrows) {
  TMAKIT_SKIP_WITHOUT_GPU();
  Image in(DataType::float32, 1, 8, 8);
  Image out(DataType::float32, 1, 8, 8);
  EXPECT_THROW(stencil3x3(in.ref(), out.ref(), Filter3x3::laplacian(), nullptr,
                          tune::StencilTuning{0, kVariants}),
               ArgumentError);
  for (std::uint8_t b : out.download()) ASSERT_EQ(b, kPoison);
}

// Small enough for compute-sanitizer (scripts/gpu_check): every layout, both types, a row
// tail, padding and two images.
TEST(StencilGpu, EveryVariantSmall) {
  TMAKIT_SKIP_WITHOUT_GPU();
  std::vector<tune::StencilTuning> tunings;
  for (int variant = 0; variant < kVariants; ++variant) {
    tunings.push_back({refuses_ctas_per_sm(variant) ? 0 : 1, variant});
  }
  for (const DataType type : kTypes) expect_tunings_match(type, 2, 70, 301, 32, 11, tunings);
}

TEST(StencilGpu, EdgesSeeZeroPadding) {
  TMAKIT_SKIP_WITHOUT_GPU();
  // all ones: the Laplacian gives 0 inside, 3 on edges, 5 in corners
  Image in(DataType::float32, 1, 5, 6);
  Image out(DataType::float32, 1, 5, 6);
  for (std::uint64_t r = 0; r < 5; ++r) {
    for (std::uint64_t c = 0; c < 6; ++c) {
      const float one = 1.0f;
      std::memcpy(in.host.data() + r * in.row_stride + 4 * c, &one, 4);
    }
  }
  in.upload();
  stencil3x3(in.ref(), out.ref(), Filter3x3::laplacian());
  const auto got = out.download();
  const auto at = [&](int r, int c) {
    float v;
    std::memcpy(&v, got.data() + r * out.row_stride + 4 * c, 4);
    return v;
  };
  EXPECT_EQ(at(0, 0), 5.0f);
  EXPECT_EQ(at(0, 3), 3.0f);
  EXPECT_EQ(at(2, 0), 3.0f);
  EXPECT_EQ(at(2, 3), 0.0f);
  EXPECT_EQ(at(4, 5), 5.0f);
}

TEST(StencilGpu, BadInputWritesNothing) {
  TMAKIT_SKIP_WITHOUT_GPU();
  Image in(DataType::float64, 1, 8, 8);
  Image out(DataType::float32, 1, 8, 8);
  in.randomize(5);
  EXPECT_THROW(stencil3x3(in.ref(), out.ref(), Filter3x3::laplacian()), ArgumentError);
  for (std::uint8_t b : out.download()) ASSERT_EQ(b, kPoison);
}

// malloc'd memory as either pointer is refused naming it, before anything runs; the context
// survives: the same call on device memory then gives the right result.
TEST(StencilGpu, HostPointersAreRefusedAndTheContextSurvives) {
  TMAKIT_SKIP_WITHOUT_GPU();
  Image in(DataType::float32, 2, 45, 77);
  Image out(DataType::float32, 2, 45, 77);
  in.randomize(13);
  MallocImage host_in(in), host_out(out);
  expect_pointer_refused([&] { stencil3x3(host_in.ref(), out.ref(), asymmetric()); }, "in.data");
  expect_pointer_refused([&] { stencil3x3(in.ref(), host_out.ref(), asymmetric()); }, "out.data");
  stencil3x3(in.ref(), out.ref(), asymmetric());
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  reference::stencil3x3(in.host_ref(), out.host_ref(), asymmetric());
  EXPECT_EQ(count_mismatches(out, out.host, out.download()), 0u);
}

}  // namespace
}  // namespace tmakit::test
