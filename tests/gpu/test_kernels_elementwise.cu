// add_constant against its CPU reference on odd shapes, every type, in place and not, with
// the output (padding included) poisoned first.
#include <gtest/gtest.h>

#include <tuple>

#include "test_kernels_common.hpp"
#include "tune/tuning.hpp"
#include "tmakit/kernels/elementwise.hpp"
#include "tmakit/kernels/stencil3x3.hpp"
#include "tmakit/kernels/transpose.hpp"

namespace tmakit::test {
namespace {

struct Shape {
  std::uint64_t rows, cols, pad;
};

// NOTE: one row of 1,000,003 elements: what a dense tensor is to the Python op (the plain
// kernel over the whole grid).
const Shape kShapes[] = {{1, 1, 0},     {1, 37, 0},     {1, 1000, 0},  {1, 1000003, 0},
                         {5, 1, 0},     {97, 101, 0},   {127, 131, 32}, {300, 500, 0},
                         {256, 512, 0}, {17, 4099, 48}, {1031, 263, 0}, {2053, 1999, 16}};
const DataType kTypes[] = {DataType::int32, DataType::float32, DataType::bfloat16,
                           DataType::float16};

// The layouts that give each CTA its own tiles (kernels/elementwise/README.md) take no CTA
// count.
bool refuses_ctas_per_sm(int variant) {
  return variant == 0 || (variant >= 7 && variant <= 9);
}

class AddConstant : public ::testing::TestWithParam<std::tuple<DataType, Shape>> {};

TEST_P(AddConstant, MatchesReferenceOutOfPlace) {
  TMAKIT_SKIP_WITHOUT_GPU();
  const auto [type, s] = GetParam();
  Image in(type, 1, s.rows, s.cols, s.pad);
  Image out(type, 1, s.rows, s.cols, s.pad + 16);
  in.randomize(static_cast<std::uint32_t>(s.rows * 7919 + s.cols));
  const double value = type == DataType::int32 ? 12345.0 : 0.75;
  add_constant(in.ref(), out.ref(), value);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  reference::add_constant(in.host_ref(), out.host_ref(), value);
  const auto got = out.download();
  EXPECT_EQ(count_mismatches(out, out.host, got), 0u);
  // the input is untouched
  EXPECT_EQ(count_mismatches(in, in.host, in.download()), 0u);
}

TEST_P(AddConstant, MatchesReferenceInPlace) {
  TMAKIT_SKIP_WITHOUT_GPU();
  const auto [type, s] = GetParam();
  Image img(type, 1, s.rows, s.cols, s.pad);
  img.randomize(static_cast<std::uint32_t>(s.rows + s.cols * 31));
  const double value = type == DataType::int32 ? -7.0 : -1.5;
  add_constant(img.ref(), img.ref(), value);
  reference::add_constant(img.host_ref(), img.host_ref(), value);
  EXPECT_EQ(count_mismatches(img, img.host, img.download()), 0u);
}

INSTANTIATE_TEST_SUITE_P(Shapes, AddConstant,
                         ::testing::Combine(::testing::ValuesIn(kTypes),
                                            ::testing::ValuesIn(kShapes)));

// Every layout (tune::ElementwiseTuning::variant) on a shape large enough that each CTA's ring of
// stages wraps several times, with row tails, out of place and in place.
class AddConstantLayouts : public ::testing::TestWithParam<DataType> {};

TEST_P(AddConstantLayouts, EveryVariantMatchesReference) {
  TMAKIT_SKIP_WITHOUT_GPU();
  const DataType type = GetParam();
  constexpr std::uint64_t kRows = 6151, kCols = 4099;
  Image in(type, 1, kRows, kCols, 16);
  in.randomize(static_cast<std::uint32_t>(kRows + kCols));
  const double value = type == DataType::int32 ? 999.0 : 0.375;
  Image expect(type, 1, kRows, kCols, 48);
  reference::add_constant(in.host_ref(), expect.host_ref(), value);
  for (int variant = 0; variant < tune::kElementwiseVariants; ++variant) {
    for (int ctas : {0, 1}) {
      const tune::ElementwiseTuning tuning{ctas, variant};
      if (ctas > 0 && refuses_ctas_per_sm(variant)) continue;  // one tile per CTA
      Image out(type, 1, kRows, kCols, 48);  // poisoned, padding included
      tune::add_constant(in.ref(), out.ref(), value, nullptr, tuning);
      ASSERT_EQ(cudaGetLastError(), cudaSuccess);
      EXPECT_EQ(count_mismatches(out, expect.host, out.download()), 0u)
          << "variant " << variant << " ctas_per_sm " << ctas;
    }
    Image self(type, 1, kRows, kCols, 16);
    self.host = in.host;
    self.upload();
    tune::add_constant(self.ref(), self.ref(), value, nullptr, tune::ElementwiseTuning{0, variant});
    reference::add_constant(self.host_ref(), self.host_ref(), value);
    EXPECT_EQ(count_mismatches(self, self.host, self.download()), 0u)
        << "in place, variant " << variant;
  }
}

INSTANTIATE_TEST_SUITE_P(Types, AddConstantLayouts, ::testing::ValuesIn(kTypes));

// Grids capped at a few CTAs: each CTA of a one-tile layout then takes many tiles through its
// single stage, whose row tails must be read before the next tile loads into it.
TEST(AddConstantGpu, CappedGridWalksEveryTile) {
  TMAKIT_SKIP_WITHOUT_GPU();
  for (const DataType type : {DataType::int32, DataType::bfloat16}) {
    constexpr std::uint64_t kRows = 301, kCols = 1001;
    Image in(type, 1, kRows, kCols, 16);
    in.randomize(7);
    const double value = type == DataType::int32 ? 5.0 : 0.25;
    Image expect(type, 1, kRows, kCols, 48);
    reference::add_constant(in.host_ref(), expect.host_ref(), value);
    for (const std::int64_t cap : {1, 3, 7}) {
      const GridCap capped(cap);
      for (const int variant : {0, 7, 8, 9}) {
        Image out(type, 1, kRows, kCols, 48);  // poisoned, padding included
        tune::add_constant(in.ref(), out.ref(), value, nullptr, tune::ElementwiseTuning{0, variant});
        ASSERT_EQ(cudaGetLastError(), cudaSuccess);
        EXPECT_EQ(count_mismatches(out, expect.host, out.download()), 0u)
            << name(type) << " variant " << variant << " grid capped at " << cap;
      }
    }
  }
}

TEST(AddConstantGpu, UnknownVariantThrows) {
  TMAKIT_SKIP_WITHOUT_GPU();
  Image in(DataType::int32, 1, 8, 8);
  Image out(DataType::int32, 1, 8, 8);
  EXPECT_THROW(tune::add_constant(in.ref(), out.ref(), 1.0, nullptr, tune::ElementwiseTuning{0, 99}),
               ArgumentError);
  EXPECT_THROW(tune::add_constant(in.ref(), out.ref(), 1.0, nullptr, tune::ElementwiseTuning{2, 3}),
               ArgumentError);  // variant 3 fits one CTA per SM
  for (std::uint8_t b : out.download()) ASSERT_EQ(b, kPoison);
}

TEST(AddConstantGpu, SingleRowNeedsNoStride) {
  TMAKIT_SKIP_WITHOUT_GPU();
  Image in(DataType::int32, 1, 1, 13);
  Image out(DataType::int32, 1, 1, 13);
  in.randomize(3);
  TensorRef dense_in(in.device, DataType::int32, 1, 13);  // stride 0: 52 bytes, not 16-aligned
  TensorRef dense_out(out.device, DataType::int32, 1, 13);
  add_constant(dense_in, dense_out, 1.0);
  reference::add_constant(in.host_ref(), out.host_ref(), 1.0);
  EXPECT_EQ(count_mismatches(out, out.host, out.download()), 0u);
}

TEST(AddConstantGpu, IntegerWrapsAround) {
  TMAKIT_SKIP_WITHOUT_GPU();
  Image img(DataType::int32, 1, 3, 4);
  const std::int32_t max = 2147483647;
  for (int i = 0; i < 12; ++i) std::memcpy(img.host.data() + 4 * i, &max, 4);
  img.upload();
  add_constant(img.ref(), img.ref(), 1.0);
  const auto got = img.download();
  std::int32_t v;
  std::memcpy(&v, got.data(), 4);
  EXPECT_EQ(v, -2147483647 - 1);
}

TEST(AddConstantGpu, BadInputWritesNothing) {
  TMAKIT_SKIP_WITHOUT_GPU();
  Image in(DataType::float32, 1, 8, 8);
  Image out(DataType::float32, 1, 8, 9);
  in.randomize(5);
  EXPECT_THROW(add_constant(in.ref(), out.ref(), 1.0), ArgumentError);
  const auto got = out.download();
  for (std::uint8_t b : got) ASSERT_EQ(b, kPoison);
}

// Near and past the longest row TMA takes (2^31 - 4096 elements; bf16, 4 GB), ending in a row
// tail of 5 elements: every element is added to, nothing past the row is written. A boundary
// test of the plain kernel's walk over one row (the path a row takes) at its largest offsets;
// past the limit the view takes the plain kernels by rule P6 (plain_path.hpp), which index in
// 64 bits (2^31 + 5 elements: more than a 32-bit element index holds).
TEST(AddConstantGpu, LongestRowStopsAtItsEnd) {
  TMAKIT_SKIP_WITHOUT_GPU();
  for (const std::uint64_t cols : {(1ull << 31) - 4096 - 3, (1ull << 31) + 5}) {
    SCOPED_TRACE("cols " + std::to_string(cols));
    const std::uint64_t row_bytes = cols * 2;
    std::size_t free_bytes = 0, total = 0;
    ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
    if (free_bytes < row_bytes + (1ull << 30)) GTEST_SKIP() << "needs 5.3 GB of device memory";
    std::uint8_t* buf = nullptr;
    ASSERT_EQ(cudaMalloc(&buf, row_bytes + 64), cudaSuccess);
    ASSERT_EQ(cudaMemset(buf, 0, row_bytes), cudaSuccess);           // bf16 zeros
    ASSERT_EQ(cudaMemset(buf + row_bytes, kPoison, 64), cudaSuccess);  // guard
    const TensorRef row(buf, DataType::bfloat16, 1, cols);
    add_constant(row, row, 1.0);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<std::uint8_t> tail(128 + 64), head(64), middle(64);
    ASSERT_EQ(cudaMemcpy(tail.data(), buf + row_bytes - 128, tail.size(), cudaMemcpyDeviceToHost),
              cudaSuccess);
    ASSERT_EQ(cudaMemcpy(head.data(), buf, head.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    // past the limit: the 32 elements before element 2^31 (whose index needs 32 bits)
    const bool past = cols > (1ull << 31);
    if (past) {
      ASSERT_EQ(cudaMemcpy(middle.data(), buf + (1ull << 32) - 64, middle.size(),
                           cudaMemcpyDeviceToHost),
                cudaSuccess);
    }
    cudaFree(buf);
    for (int i = 0; i < 64; ++i) {  // bf16 1.0 = 0x3F80, little-endian
      EXPECT_EQ(tail[2 * i] | tail[2 * i + 1] << 8, 0x3F80) << "element cols - " << 64 - i;
      EXPECT_EQ(head[i], i % 2 == 0 ? 0x80 : 0x3F) << "byte " << i;
      if (past) EXPECT_EQ(middle[i], i % 2 == 0 ? 0x80 : 0x3F) << "byte " << i;
    }
    for (int i = 128; i < 192; ++i) EXPECT_EQ(tail[i], kPoison) << "guard byte " << i - 128;
  }
}

// Launch set-up (shared-memory limits, SM counts) is per device: after device 0, every
// memory-bound kernel still runs, and matches its reference, on device 1.
TEST(KernelsGpu, SecondDeviceAfterTheFirst) {
  TMAKIT_SKIP_WITHOUT_TWO_GPUS();
  on_devices_0_1_0([](int device) {
    Image in(DataType::float32, 1, 67, 301, 16);
    in.randomize(17 + device);
    Image added(DataType::float32, 1, 67, 301, 16);
    add_constant(in.ref(), added.ref(), 2.5);
    reference::add_constant(in.host_ref(), added.host_ref(), 2.5);
    EXPECT_EQ(count_mismatches(added, added.host, added.download()), 0u) << "device " << device;
    Image flipped(DataType::float32, 1, 301, 67, 16);
    transpose(in.ref(), flipped.ref());
    reference::transpose(in.host_ref(), flipped.host_ref());
    EXPECT_EQ(count_mismatches(flipped, flipped.host, flipped.download()), 0u)
        << "device " << device;
    Image filtered(DataType::float32, 1, 67, 301, 16);
    stencil3x3(in.ref(), filtered.ref(), Filter3x3::laplacian());
    reference::stencil3x3(in.host_ref(), filtered.host_ref(), Filter3x3::laplacian());
    EXPECT_EQ(count_mismatches(filtered, filtered.host, filtered.download()), 0u)
        << "device " << device;
  });
}

// malloc'd memory as either pointer is refused naming it, before anything runs; the context
// survives: the same call on device memory then gives the right result.
TEST(AddConstantGpu, HostPointersAreRefusedAndTheContextSurvives) {
  TMAKIT_SKIP_WITHOUT_GPU();
  Image in(DataType::float32, 1, 67, 129);
  Image out(DataType::float32, 1, 67, 129);
  in.randomize(12);
  MallocImage host_in(in), host_out(out);
  expect_pointer_refused([&] { add_constant(host_in.ref(), out.ref(), 1.5); }, "in.data");
  expect_pointer_refused([&] { add_constant(in.ref(), host_out.ref(), 1.5); }, "out.data");
  add_constant(in.ref(), out.ref(), 1.5);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  reference::add_constant(in.host_ref(), out.host_ref(), 1.5);
  EXPECT_EQ(count_mismatches(out, out.host, out.download()), 0u);
}

}  // namespace
}  // namespace tmakit::test
