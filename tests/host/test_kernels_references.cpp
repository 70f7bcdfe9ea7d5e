// The CPU references on hand-checked cases, and the transpose's thread-to-block mapping:
// every block covered once and every quarter-warp's 16-byte accesses on distinct banks,
// through the same swizzle function the kernel uses.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <vector>

#include "tmakit/kernels/elementwise.hpp"
#include "tmakit/kernels/stencil3x3.hpp"
#include "tmakit/kernels/transpose.hpp"
#include "tmakit/swizzle.hpp"
#include "transpose/transpose_mapping.hpp"

namespace tmakit {
namespace {

TEST(KernelReferences, AddConstantInt32WrapsAndRespectsStrides) {
  // 2 x 3 int32 with rows 16 bytes apart; the fourth slot of each row is padding
  std::vector<std::int32_t> in = {1, 2, 2147483647, 99, -5, 0, 7, 99};
  std::vector<std::int32_t> out(8, 42);
  reference::add_constant(ConstTensorRef(in.data(), DataType::int32, 2, 3, 16),
                          TensorRef(out.data(), DataType::int32, 2, 3, 16), 1.0);
  EXPECT_EQ(out, (std::vector<std::int32_t>{2, 3, -2147483647 - 1, 42, -4, 1, 8, 42}));
}

TEST(KernelReferences, AddConstantRoundsHalfTypesOnce) {
  // bf16 1.0 = 0x3F80; + 2^-9 rounds to nearest even (stays 1.0); + 0.75 = 1.75 (0x3FE0)
  std::vector<std::uint16_t> in = {0x3F80, 0x3F80};
  std::vector<std::uint16_t> out(2);
  reference::add_constant(ConstTensorRef(in.data(), DataType::bfloat16, 1, 2),
                          TensorRef(out.data(), DataType::bfloat16, 1, 2), 0.75);
  EXPECT_EQ(out[0], 0x3FE0);
  reference::add_constant(ConstTensorRef(in.data(), DataType::bfloat16, 1, 2),
                          TensorRef(out.data(), DataType::bfloat16, 1, 2), 1.0 / 512);
  EXPECT_EQ(out[0], 0x3F80);
  // fp16 1.0 = 0x3C00; + 1.0 = 2.0 = 0x4000
  std::vector<std::uint16_t> h = {0x3C00};
  reference::add_constant(ConstTensorRef(h.data(), DataType::float16, 1, 1),
                          TensorRef(h.data(), DataType::float16, 1, 1), 1.0);
  EXPECT_EQ(h[0], 0x4000);
  EXPECT_THROW(reference::add_constant(ConstTensorRef(h.data(), DataType::int32, 1, 1),
                                       TensorRef(h.data(), DataType::int32, 1, 1), 0.5),
               ArgumentError);
}

// The types the plain kernel adds: bytes wrap (uint8 for int8 tensors: -1 subtracts one),
// int64 exact past 2^53, float64 in double, rows at an odd pitch.
TEST(KernelReferences, AddConstantWrapsEveryIntegerWidth) {
  std::vector<std::uint8_t> bytes = {0, 1, 255, 9, 128, 127, 9};  // 2 x 3, rows 4 bytes apart
  std::vector<std::uint8_t> bytes_out(7, 9);
  reference::add_constant(ConstTensorRef(bytes.data(), DataType::uint8, 2, 3, 4),
                          TensorRef(bytes_out.data(), DataType::uint8, 2, 3, 4), -1);
  EXPECT_EQ(bytes_out, (std::vector<std::uint8_t>{255, 0, 254, 9, 127, 126, 8}));
  std::vector<std::int64_t> longs = {0, -1, 9007199254740992};
  reference::add_integer(ConstTensorRef(longs.data(), DataType::int64, 1, 3),
                         TensorRef(longs.data(), DataType::int64, 1, 3), 9007199254740993);
  EXPECT_EQ(longs, (std::vector<std::int64_t>{9007199254740993, 9007199254740992,
                                              18014398509481985}));
  std::vector<double> d = {0.1, -2.5};
  reference::add_constant(ConstTensorRef(d.data(), DataType::float64, 1, 2),
                          TensorRef(d.data(), DataType::float64, 1, 2), 0.2);
  EXPECT_EQ(d[0], 0.1 + 0.2);  // in double: 0.30000000000000004
  EXPECT_EQ(d[1], -2.3);
  EXPECT_THROW(reference::add_integer(ConstTensorRef(d.data(), DataType::float64, 1, 2),
                                      TensorRef(d.data(), DataType::float64, 1, 2), 1),
               ArgumentError);
}

TEST(KernelReferences, TransposeMovesBitsWithStrides) {
  // 2 x 3 uint16 with 8-byte rows -> 3 x 2 dense
  std::vector<std::uint16_t> in = {1, 2, 3, 0xAAAA, 4, 5, 6, 0xAAAA};
  std::vector<std::uint16_t> out(6, 0);
  reference::transpose(ConstTensorRef(in.data(), DataType::uint16, 2, 3, 8),
                       TensorRef(out.data(), DataType::bfloat16, 3, 2));
  EXPECT_EQ(out, (std::vector<std::uint16_t>{1, 4, 2, 5, 3, 6}));
  EXPECT_THROW(reference::transpose(ConstTensorRef(in.data(), DataType::uint16, 2, 3, 8),
                                    TensorRef(out.data(), DataType::uint16, 2, 3)),
               ArgumentError);
}

TEST(KernelReferences, StencilZeroPaddingByHand) {
  // 3 x 3 image 1..9, the Laplacian: centre 8*5 - (1+2+3+4+6+7+8+9) = 0; corner (0,0):
  // 8*1 - (2 + 4 + 5) = -3; edge (0,1): 8*2 - (1+3+4+5+6) = -3
  std::vector<double> in = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<double> out(9, -1);
  reference::stencil3x3(ConstTensorRef(in.data(), DataType::float64, 3, 3),
                        TensorRef(out.data(), DataType::float64, 3, 3), Filter3x3::laplacian());
  EXPECT_EQ(out[4], 0.0);
  EXPECT_EQ(out[0], -3.0);
  EXPECT_EQ(out[1], -3.0);
  EXPECT_EQ(out[8], 8 * 9.0 - (5 + 6 + 8));
  // an asymmetric filter picks the right neighbour: only the tap right of centre set
  Filter3x3 right{};
  right.taps[5] = 1.0;
  reference::stencil3x3(ConstTensorRef(in.data(), DataType::float64, 3, 3),
                        TensorRef(out.data(), DataType::float64, 3, 3), right);
  EXPECT_EQ(out, (std::vector<double>{2, 3, 0, 5, 6, 0, 8, 9, 0}));
}

TEST(KernelReferences, StencilBatchUsesImageStride) {
  // two 1 x 2 float images 16 bytes apart, each [a, b]: out = right neighbour
  std::vector<float> in = {1, 2, -1, -1, 3, 4, -1, -1};
  std::vector<float> out(8, 7);
  Filter3x3 right{};
  right.taps[5] = 1.0;
  reference::stencil3x3(ConstTensorRef(in.data(), DataType::float32, 1, 2, 0, 2, 16),
                        TensorRef(out.data(), DataType::float32, 1, 2, 0, 2, 16), right);
  EXPECT_EQ(out, (std::vector<float>{2, 0, 7, 7, 4, 0, 7, 7}));
}

// ---- transpose mapping ---------------------------------------------------------------

template <int E, int TileRows, int Slices>
void check_mapping() {
  using Map = detail::transpose::BlockMapping<E, TileRows, Slices>;
  constexpr int V = Map::kV;
  constexpr std::uint32_t kGroupElems = Map::kGroupElems;
  SCOPED_TRACE("element bytes " + std::to_string(E) + ", " + std::to_string(TileRows) + " rows, " +
               std::to_string(Slices) + " slices");
  // coverage: the tile's input and output bytes are each touched exactly once
  std::vector<int> in_hits(Map::kTileBytes, 0);
  std::vector<int> out_hits(Map::kTileBytes, 0);
  for (int b = 0; b < Map::kBlocksPerTile; ++b) {
    const auto bc = Map::block(static_cast<std::uint32_t>(b));
    for (int i = 0; i < V; ++i) {
      for (int k = 0; k < 16; ++k) {
        ++in_hits[Map::in_offset(bc, i) + k];
        ++out_hits[Map::out_offset(bc, i) + k];
      }
    }
  }
  for (int x : in_hits) ASSERT_EQ(x, 1);
  for (int x : out_hits) ASSERT_EQ(x, 1);
  // every element: input (r, c) of the tile, read as element k of row i of its block, is
  // written as element i of the block's output row k; that must be output (row c, column r),
  // where the output boxes (and store_tail) expect it
  for (int b = 0; b < Map::kBlocksPerTile; ++b) {
    const auto bc = Map::block(static_cast<std::uint32_t>(b));
    for (int i = 0; i < V; ++i) {
      for (int k = 0; k < V; ++k) {
        const std::uint32_t in = Map::in_offset(bc, i) + static_cast<std::uint32_t>(k * E);
        const std::uint32_t slice = in / Map::kSliceBytes;
        const std::uint32_t r = in % Map::kSliceBytes / 128;
        const std::uint32_t c = slice * kGroupElems + in % 128 / E;
        ASSERT_EQ(Map::out_offset(bc, k) + static_cast<std::uint32_t>(i * E),
                  Map::out_element_offset(c, r))
            << "block " << b << " row " << i << " element " << k;
      }
    }
  }
  // output element (row, column) sits in box column / 8V, whose rows are 128 bytes
  EXPECT_EQ(Map::out_element_offset(1, kGroupElems + 2), Map::kOutBoxBytes + 128 + 2 * E);
  // banks: each quarter-warp's eight 16-byte accesses (one per row i or k) take eight
  // distinct 16-byte positions of a 128-byte line after the 128B swizzle
  for (int warp_first = 0; warp_first < Map::kBlocksPerTile; warp_first += 32) {
    for (int q = 0; q < 4; ++q) {
      for (int i = 0; i < V; ++i) {
        std::set<std::uint32_t> in_chunks;
        std::set<std::uint32_t> out_chunks;
        for (int t = 0; t < 8; ++t) {
          const auto bc = Map::block(static_cast<std::uint32_t>(warp_first + 8 * q + t));
          in_chunks.insert(swizzle_address(Swizzle::bytes128, Map::in_offset(bc, i)) / 16 % 8);
          out_chunks.insert(swizzle_address(Swizzle::bytes128, Map::out_offset(bc, i)) / 16 % 8);
        }
        EXPECT_EQ(in_chunks.size(), 8u) << "load row " << i << " quarter " << q;
        EXPECT_EQ(out_chunks.size(), 8u) << "store row " << i << " quarter " << q;
      }
    }
  }
}

template <int TileRows, int Slices>
void check_mappings() {
  check_mapping<1, TileRows, Slices>();
  check_mapping<2, TileRows, Slices>();
  check_mapping<4, TileRows, Slices>();
  check_mapping<8, TileRows, Slices>();
}

// the tile shapes of the layouts (TransposeTuning::variant): 128 or 256 rows, one or two
// 128-byte slices side by side
TEST(TransposeMapping, CoversTileAndIsBankConflictFree) {
  check_mappings<128, 1>();
  check_mappings<256, 1>();
}

TEST(TransposeMapping, WideTilesCoverTileAndAreBankConflictFree) {
  check_mappings<128, 2>();
  check_mappings<256, 2>();
}

}  // namespace
}  // namespace tmakit
