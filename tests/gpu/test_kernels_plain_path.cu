// The launchers on views TMA cannot describe (rows a pitch or a start off 16 bytes, types
// without a TMA kernel), which take the plain kernels (tmakit/kernels/detail/plain_path.hpp),
// against the CPU references bit for bit, the bytes around each view untouched; and empty
// views, which launch nothing.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "test_kernels_common.hpp"
#include "tmakit/kernels/elementwise.hpp"
#include "tmakit/kernels/stencil3x3.hpp"
#include "tmakit/kernels/transpose.hpp"
#include "transpose/row_class_plan.hpp"
#include "transpose/sm90_transpose_row_classes.hpp"

namespace tmakit::test {
namespace {

// Where a view sits in its allocation: rows `pad` elements longer than the row, the first
// element `offset` elements past the (256-byte aligned) allocation.
struct Placement {
  std::uint64_t pad, offset;
};

// A batch x rows x cols view at any pitch and start, in a poisoned allocation with a host
// twin of the same bytes.
struct OddImage {
  DataType type;
  std::uint64_t batch, rows, cols, esize, row_stride, image_stride, offset_bytes;
  std::vector<std::uint8_t> host;
  std::uint8_t* device = nullptr;

  OddImage(DataType t, std::uint64_t b, std::uint64_t r, std::uint64_t c, Placement p)
      : type(t), batch(b), rows(r), cols(c), esize(element_bytes(t)) {
    row_stride = (c + p.pad) * esize;
    image_stride = r * row_stride + p.pad * esize;  // images off 16 bytes too when padded
    offset_bytes = p.offset * esize;
    host.assign(bytes(), kPoison);
    EXPECT_EQ(cudaMalloc(&device, bytes()), cudaSuccess);
    EXPECT_EQ(cudaMemset(device, kPoison, bytes()), cudaSuccess);
  }
  ~OddImage() { cudaFree(device); }
  OddImage(const OddImage&) = delete;
  OddImage& operator=(const OddImage&) = delete;

  std::uint64_t bytes() const { return offset_bytes + batch * image_stride + 64; }
  TensorRef ref() const {
    return TensorRef(device + offset_bytes, type, rows, cols, row_stride, batch, image_stride);
  }
  TensorRef host_ref() {
    return TensorRef(host.data() + offset_bytes, type, rows, cols, row_stride, batch,
                     image_stride);
  }
  // Random elements (floats in [-1, 1), 16-bit floats finite, integers any bits), uploaded.
  void randomize(std::uint32_t seed) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    for (std::uint64_t b = 0; b < batch; ++b) {
      for (std::uint64_t r = 0; r < rows; ++r) {
        for (std::uint64_t c = 0; c < cols; ++c) {
          std::uint8_t* p = host.data() + offset_bytes + b * image_stride + r * row_stride +
                            c * esize;
          if (type == DataType::float32) {
            const float v = unit(gen);
            std::memcpy(p, &v, 4);
          } else if (type == DataType::float64) {
            const double v = static_cast<double>(unit(gen)) + unit(gen) * 1e-9;
            std::memcpy(p, &v, 8);
          } else if (type == DataType::bfloat16 || type == DataType::float16) {
            const std::uint16_t h = static_cast<std::uint16_t>(
                (gen() & 0x83ff) | (0x3400 + (gen() % 8) * 0x400));  // finite in both types
            std::memcpy(p, &h, 2);
          } else {
            for (std::uint64_t k = 0; k < esize; ++k) p[k] = static_cast<std::uint8_t>(gen());
          }
        }
      }
    }
    ASSERT_EQ(cudaMemcpy(device, host.data(), bytes(), cudaMemcpyHostToDevice), cudaSuccess);
  }
  // Bytes (view and surroundings) that differ from the host twin.
  std::uint64_t mismatches() const {
    std::vector<std::uint8_t> got(bytes());
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(got.data(), device, bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
    std::uint64_t wrong = 0;
    for (std::uint64_t i = 0; i < got.size(); ++i) {
      if (got[i] != host[i] && wrong++ < 3) {
        ADD_FAILURE() << "byte " << i << " (view byte " << static_cast<std::int64_t>(i) -
                                                              static_cast<std::int64_t>(offset_bytes)
                      << ", row pitch " << row_stride << "): got " << int(got[i])
                      << ", expected " << int(host[i]);
      }
    }
    return wrong;
  }
};

struct Extent {
  std::uint64_t rows, cols;
};
const Extent kExtents[] = {{1, 1}, {1, 37}, {37, 1}, {3, 5}, {97, 101}, {255, 257}, {2049, 2047}};
// A pitch off 16 bytes; a start off 16 bytes; both; dense and aligned (P2 for the types
// without a TMA kernel, P7 for the rest: the same results either way).
const Placement kPlacements[] = {{1, 0}, {0, 1}, {3, 1}, {0, 0}};

std::string describe(DataType t, Extent e, Placement p) {
  return std::string(name(t)) + " " + std::to_string(e.rows) + "x" + std::to_string(e.cols) +
         " pad " + std::to_string(p.pad) + " offset " + std::to_string(p.offset);
}

const DataType kAddTypes[] = {DataType::uint8,   DataType::uint16,  DataType::uint32,
                              DataType::int32,   DataType::uint64,  DataType::int64,
                              DataType::float16, DataType::bfloat16, DataType::float32,
                              DataType::float64};

class AddConstantAnyView
    : public ::testing::TestWithParam<std::tuple<DataType, Extent, Placement>> {};

TEST_P(AddConstantAnyView, MatchesReferenceInAndOutOfPlace) {
  TMAKIT_SKIP_WITHOUT_GPU();
  const auto [type, e, p] = GetParam();
  SCOPED_TRACE(describe(type, e, p));
  const bool integer = type != DataType::float16 && type != DataType::bfloat16 &&
                       type != DataType::float32 && type != DataType::float64;
  const double value = integer ? -3.0 : 0.375;
  OddImage in(type, 1, e.rows, e.cols, p);
  // out at another placement: the plain kernel's element path (offsets differ mod 16)
  OddImage out(type, 1, e.rows, e.cols, Placement{p.pad + 2, p.offset + 1});
  in.randomize(static_cast<std::uint32_t>(e.rows * 31 + e.cols));
  add_constant(in.ref(), out.ref(), value);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  reference::add_constant(in.host_ref(), out.host_ref(), value);
  EXPECT_EQ(out.mismatches(), 0u);
  EXPECT_EQ(in.mismatches(), 0u);  // the input untouched
  add_constant(in.ref(), in.ref(), value);  // in place: the vector path
  reference::add_constant(in.host_ref(), in.host_ref(), value);
  EXPECT_EQ(in.mismatches(), 0u);
  if (integer) {  // an integer constant past 2^53, exact
    add_integer(in.ref(), in.ref(), 9007199254740993);
    reference::add_integer(in.host_ref(), in.host_ref(), 9007199254740993);
    EXPECT_EQ(in.mismatches(), 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Views, AddConstantAnyView,
                         ::testing::Combine(::testing::ValuesIn(kAddTypes),
                                            ::testing::ValuesIn(kExtents),
                                            ::testing::ValuesIn(kPlacements)));

const DataType kBitsTypes[] = {DataType::uint8, DataType::uint16, DataType::float32,
                               DataType::float64};

class TransposeAnyView
    : public ::testing::TestWithParam<std::tuple<DataType, Extent, Placement>> {};

TEST_P(TransposeAnyView, MatchesReference) {
  TMAKIT_SKIP_WITHOUT_GPU();
  const auto [type, e, p] = GetParam();
  SCOPED_TRACE(describe(type, e, p));
  OddImage in(type, 1, e.rows, e.cols, p);
  OddImage out(type, 1, e.cols, e.rows, Placement{p.offset, p.pad});
  in.randomize(static_cast<std::uint32_t>(e.rows + e.cols * 17));
  transpose(in.ref(), out.ref());
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  reference::transpose(in.host_ref(), out.host_ref());
  EXPECT_EQ(out.mismatches(), 0u);
  EXPECT_EQ(in.mismatches(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Views, TransposeAnyView,
                         ::testing::Combine(::testing::ValuesIn(kBitsTypes),
                                            ::testing::ValuesIn(kExtents),
                                            ::testing::ValuesIn(kPlacements)));

// The row-class kernel with grids capped at a few CTAs: each CTA then walks many tiles through
// its stages (u8: a ring of two), each stage refilled and its barrier's phase flipping.
TEST(PlainPathGpu, RowClassesCappedGridWalksEveryTile) {
  TMAKIT_SKIP_WITHOUT_GPU();
  for (const DataType type : {DataType::uint8, DataType::uint16}) {
    // pitches of 2047 and 2050 elements (2 to 16 row classes), starts on and off 16 bytes
    for (const Placement p : {Placement{0, 0}, Placement{0, 1}, Placement{3, 1}}) {
      OddImage in(type, 1, 2049, 2047, p);
      in.randomize(11);
      for (const std::int64_t cap : {1, 3, 7}) {
        SCOPED_TRACE(describe(type, Extent{2049, 2047}, p) + " grid capped at " +
                     std::to_string(cap));
        const GridCap capped(cap);
        OddImage out(type, 1, 2047, 2049, Placement{p.offset, p.pad});
        transpose(in.ref(), out.ref());
        ASSERT_EQ(cudaGetLastError(), cudaSuccess);
        reference::transpose(in.host_ref(), out.host_ref());
        EXPECT_EQ(out.mismatches(), 0u);
      }
    }
  }
}

// The row-class kernel itself at every class count of each element size (turned gathers
// included: u8 at 1 and 2 classes, u16 at 1), on views from starts on and off 16 bytes into
// outs on and off 16 bytes, whatever the launcher's size rule would pick at this size.
TEST(PlainPathGpu, RowClassesEveryClassCount) {
  TMAKIT_SKIP_WITHOUT_GPU();
  constexpr std::uint64_t kRows = 2049, kCols = 2047;
  for (const DataType type : {DataType::uint8, DataType::uint16}) {
    const std::uint64_t esize = element_bytes(type);
    for (const std::uint32_t k : {1u, 2u, 4u, 8u, 16u}) {
      if (esize == 2 && k == 16) continue;  // (a 2-byte pitch is even: at most 8 classes)
      std::uint64_t pad = 0;
      while (detail::transpose::row_classes::classes_of((kCols + pad) * esize) != k) ++pad;
      for (const std::uint64_t offset : {0ull, 1ull}) {
        for (const std::uint64_t out_pad : {0ull, 8ull / esize}) {
          SCOPED_TRACE(std::string(name(type)) + " " + std::to_string(k) + " classes, start +" +
                       std::to_string(offset) + ", out pad " + std::to_string(out_pad));
          OddImage in(type, 1, kRows, kCols, Placement{pad, offset});
          in.randomize(static_cast<std::uint32_t>(k * 10 + offset));
          OddImage out(type, 1, kCols, kRows, Placement{out_pad, 0});
          detail::transpose::launch_row_classes(in.ref(), out.ref(), nullptr);
          ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
          reference::transpose(in.host_ref(), out.host_ref());
          EXPECT_EQ(out.mismatches(), 0u);
        }
      }
    }
  }
}

class StencilAnyView
    : public ::testing::TestWithParam<std::tuple<DataType, Extent, Placement, int>> {};

TEST_P(StencilAnyView, MatchesReferenceBitForBit) {
  TMAKIT_SKIP_WITHOUT_GPU();
  const auto [type, e, p, batch] = GetParam();
  SCOPED_TRACE(describe(type, e, p) + " batch " + std::to_string(batch));
  OddImage in(type, batch, e.rows, e.cols, p);
  OddImage out(type, batch, e.rows, e.cols, Placement{p.pad + 1, p.offset});
  in.randomize(static_cast<std::uint32_t>(e.rows * 3 + e.cols + batch));
  const Filter3x3 f{{0.25, -1.0, 0.5, 2.0, -3.0, 1.0, 0.125, 0.75, -0.5}};
  stencil3x3(in.ref(), out.ref(), f);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  reference::stencil3x3(in.host_ref(), out.host_ref(), f);
  EXPECT_EQ(out.mismatches(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Views, StencilAnyView,
                         ::testing::Combine(::testing::Values(DataType::float32,
                                                              DataType::float64),
                                            ::testing::ValuesIn(kExtents),
                                            ::testing::ValuesIn(kPlacements),
                                            ::testing::Values(1, 3)));

// The plain kernel's stores rotated onto whole lines: an out starting at every element offset
// from its line (32 elements), at widths that end inside the first, second and fifth line of a
// warp's span; in dense (pitch off 16 bytes for most widths) and in on aligned rows (where
// the out is aligned too the 16-byte form runs and the columns past its whole spans take the
// 1-element form from a column past 0).
TEST(PlainPathGpu, StencilOutAtEveryOffsetFromItsLine) {
  TMAKIT_SKIP_WITHOUT_GPU();
  const Filter3x3 f{{0.25, -1.0, 0.5, 2.0, -3.0, 1.0, 0.125, 0.75, -0.5}};
  for (const DataType type : {DataType::float32, DataType::float64}) {
    for (const std::uint64_t cols : {1ull, 7ull, 31ull, 33ull, 129ull, 300ull}) {
      for (const std::uint64_t in_pad : {0ull, 1ull}) {
        OddImage in(type, 1, 5, cols, Placement{in_pad, 0});
        in.randomize(static_cast<std::uint32_t>(cols + in_pad));
        for (std::uint64_t offset = 0; offset < 32; ++offset) {
          SCOPED_TRACE(describe(type, Extent{5, cols}, Placement{in_pad, 0}) + ", out offset " +
                       std::to_string(offset));
          OddImage out(type, 1, 5, cols, Placement{(32 - cols % 32) % 32, offset});
          stencil3x3(in.ref(), out.ref(), f);
          ASSERT_EQ(cudaGetLastError(), cudaSuccess);
          reference::stencil3x3(in.host_ref(), out.host_ref(), f);
          EXPECT_EQ(out.mismatches(), 0u);
        }
      }
    }
  }
}

// The issue's shapes through every launcher: odd pitches at the sizes the benchmark runs.
TEST(PlainPathGpu, LargeOddShapesMatchReference) {
  TMAKIT_SKIP_WITHOUT_GPU();
  OddImage in(DataType::float32, 1, 997, 3001, Placement{0, 0});
  OddImage out(DataType::float32, 1, 3001, 997, Placement{0, 0});
  in.randomize(1);
  transpose(in.ref(), out.ref());
  reference::transpose(in.host_ref(), out.host_ref());
  EXPECT_EQ(out.mismatches(), 0u);
  OddImage ints(DataType::int32, 1, 1025, 4099, Placement{0, 0});
  ints.randomize(2);
  add_constant(ints.ref(), ints.ref(), 5);
  reference::add_constant(ints.host_ref(), ints.host_ref(), 5);
  EXPECT_EQ(ints.mismatches(), 0u);
  OddImage images(DataType::float64, 3, 257, 129, Placement{0, 0});
  OddImage result(DataType::float64, 3, 257, 129, Placement{0, 0});
  images.randomize(3);
  stencil3x3(images.ref(), result.ref(), Filter3x3::laplacian());
  reference::stencil3x3(images.host_ref(), result.host_ref(), Filter3x3::laplacian());
  EXPECT_EQ(result.mismatches(), 0u);
}

// A dense view whose out sits at in's offset within 16 bytes takes the plain kernel's dense
// form (dense_form_takes): every type, every start within 16 bytes (so every head), lengths
// that leave every tail and that span several blocks, in and out of place, against the
// reference bit for bit with the bytes around each view untouched.
TEST(PlainPathGpu, DenseFormEveryHeadAndTail) {
  TMAKIT_SKIP_WITHOUT_GPU();
  const std::uint64_t lengths[] = {1, 2, 3, 15, 16, 17, 31, 33, 63, 64, 65, 2047, 2049, 70001};
  for (const DataType type : kAddTypes) {
    const std::uint64_t esize = element_bytes(type);
    const bool integer = type != DataType::float16 && type != DataType::bfloat16 &&
                         type != DataType::float32 && type != DataType::float64;
    const double value = integer ? 200.0 : -0.625;
    for (std::uint64_t offset = 0; offset < 16 / esize; ++offset) {
      for (const std::uint64_t n : lengths) {
        SCOPED_TRACE(std::string(name(type)) + " n " + std::to_string(n) + " offset " +
                     std::to_string(offset));
        OddImage in(type, 1, 1, n, Placement{0, offset});
        // out 16 bytes further into its allocation: the same offset within 16 bytes
        OddImage out(type, 1, 1, n, Placement{0, offset + 16 / esize});
        in.randomize(static_cast<std::uint32_t>(n * 7 + offset));
        add_constant(in.ref(), out.ref(), value);
        ASSERT_EQ(cudaGetLastError(), cudaSuccess);
        reference::add_constant(in.host_ref(), out.host_ref(), value);
        EXPECT_EQ(out.mismatches(), 0u);
        EXPECT_EQ(in.mismatches(), 0u);
        add_constant(in.ref(), in.ref(), value);
        reference::add_constant(in.host_ref(), in.host_ref(), value);
        EXPECT_EQ(in.mismatches(), 0u);
        if (HasFailure()) return;
      }
    }
  }
}

// Empty views launch nothing: no error, no byte written, on any pointer (even null).
TEST(PlainPathGpu, EmptyViewsWriteNothing) {
  TMAKIT_SKIP_WITHOUT_GPU();
  OddImage buf(DataType::float32, 1, 4, 4, Placement{1, 1});
  TensorRef none = buf.ref();
  none.rows = 0;
  add_constant(none, none, 1.0);
  TensorRef wide = buf.ref();
  wide.cols = 0;
  transpose(none, TensorRef(buf.device, DataType::float32, 4, 0));
  stencil3x3(wide, wide, Filter3x3::laplacian());
  add_constant(TensorRef(nullptr, DataType::int64, 0, 9), TensorRef(nullptr, DataType::int64, 0, 9),
               1.0);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(buf.mismatches(), 0u);
}

// Memory the GPU cannot reach is refused on the plain path as on the TMA path.
TEST(PlainPathGpu, HostMemoryIsRefusedOnThePlainPath) {
  TMAKIT_SKIP_WITHOUT_GPU();
  std::vector<float> host(64 * 65);
  OddImage out(DataType::float32, 1, 64, 64, Placement{1, 0});
  const TensorRef bad(host.data(), DataType::float32, 64, 64, 65 * 4);
  try {
    add_constant(bad, out.ref(), 1.0);
    ADD_FAILURE() << "no ArgumentError for host memory";
  } catch (const ArgumentError& e) {
    EXPECT_EQ(e.argument(), "in.data") << e.what();
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(out.mismatches(), 0u);
}

}  // namespace
}  // namespace tmakit::test
