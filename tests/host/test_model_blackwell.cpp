// The CPU model's Blackwell additions: the 128B_ATOM_* swizzles against the PTX ISA's tables
// ("Tensor swizzling modes"), and loads of the packed types (padding never written).
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "tmakit/model/tma_model.hpp"
#include "tmakit/swizzle.hpp"

namespace tmakit {
namespace {

// The logical 16-byte chunk stored at each of the 8 chunks of 128-byte row r of a buffer on a
// 1024-byte boundary, as the PTX ISA's tables list it ("01234567").
std::string row_chunks(Swizzle s, std::uint32_t r) {
  std::string out;
  for (std::uint32_t j = 0; j < 8; ++j) {
    // swizzle_address is an involution: the logical offset stored at physical offset p.
    out += static_cast<char>('0' + swizzle_address(s, r * 128 + j * 16) % 128 / 16);
  }
  return out;
}

TEST(SwizzleAtomicity, Atom32BKeeps32ByteUnitsWhole) {
  const char* table[4] = {"01234567", "23016745", "45670123", "67452301"};
  for (std::uint32_t r = 0; r < 8; ++r) {
    EXPECT_EQ(row_chunks(Swizzle::bytes128_atom32, r), table[r % 4]) << "row " << r;
  }
}

TEST(SwizzleAtomicity, Atom64BSwapsHalvesOnOddRows) {
  for (std::uint32_t r = 0; r < 8; ++r) {
    EXPECT_EQ(row_chunks(Swizzle::bytes128_atom64, r), r % 2 ? "45670123" : "01234567");
  }
}

TEST(SwizzleAtomicity, Hopper128BUnchanged) {
  const char* table[8] = {"01234567", "10325476", "23016745", "32107654",
                          "45670123", "54761032", "67452301", "76543210"};
  for (std::uint32_t r = 0; r < 8; ++r) EXPECT_EQ(row_chunks(Swizzle::bytes128, r), table[r]);
}

TEST(SwizzleAtomicity, Flip8BSwapsEightByteHalvesOnAlternateRows) {
  for (std::uint32_t r = 0; r < 8; ++r) {
    // 32-byte units move as in 128B_ATOM_32B ...
    EXPECT_EQ(row_chunks(Swizzle::bytes128_atom32_flip8, r),
              row_chunks(Swizzle::bytes128_atom32, r));
    // ... and within each 16 bytes the 8-byte halves trade places on odd rows.
    for (std::uint32_t b = 0; b < 128; ++b) {
      const std::uint32_t a = r * 128 + b;
      EXPECT_EQ(swizzle_address(Swizzle::bytes128_atom32_flip8, a),
                swizzle_address(Swizzle::bytes128_atom32, a) ^ (r % 2 ? 8u : 0u));
    }
  }
}

TEST(SwizzleAtomicity, EveryModeIsAnInvolutionWithinItsRow) {
  for (Swizzle s :
       {Swizzle::bytes128_atom32, Swizzle::bytes128_atom32_flip8, Swizzle::bytes128_atom64}) {
    for (std::uint32_t a = 0; a < 4096; ++a) {
      EXPECT_EQ(swizzle_address(s, swizzle_address(s, a)), a);
      EXPECT_EQ(swizzle_address(s, a) / 128, a / 128);  // never leaves its 128-byte row
    }
    EXPECT_EQ(swizzle_span_bytes(s), 128);
    EXPECT_EQ(swizzle_repeat_bytes(s), 1024u);
  }
  EXPECT_EQ(swizzle_atom_bytes(Swizzle::bytes128), 16u);
  EXPECT_EQ(swizzle_atom_bytes(Swizzle::bytes128_atom32), 32u);
  EXPECT_EQ(swizzle_atom_bytes(Swizzle::bytes128_atom64), 64u);
}

TEST(SwizzleAtomicity, ModelLoadPlacesUnitsByThePattern) {
  // A FLOAT16 64 x 4 box under 128B_ATOM_64B: row 1's halves trade places.
  TensorMapSpec s;
  s.data_type = DataType::float16;
  s.rank = 2;
  s.global_address = 0x10000;
  s.global_dim = {64, 4};
  s.global_strides_bytes = {128};
  s.box_dim = {64, 4};
  s.swizzle = Swizzle::bytes128_atom64;
  std::vector<std::uint8_t> global(512);
  std::iota(global.begin(), global.end(), 0);
  const auto out = model::load_tiled(s, global, {0, 0}, 0);
  ASSERT_EQ(out.bytes.size(), 512u);
  EXPECT_EQ(out.bytes[0], 0);
  EXPECT_EQ(out.bytes[128], 128 + 64);  // row 1 starts with its second half
  EXPECT_EQ(out.bytes[128 + 64], 128);
  EXPECT_EQ(out.tx_bytes, 512u);
}

// A 2 x 128-value tiled box of a packed type, rows `stride` bytes apart in global memory.
TensorMapSpec packed(DataType t, std::uint64_t stride) {
  TensorMapSpec s;
  s.data_type = t;
  s.rank = 2;
  s.global_address = 0x10000;
  s.global_dim = {256, 2};
  s.global_strides_bytes = {stride};
  s.box_dim = {128, 2};
  return s;
}

std::vector<std::uint8_t> ramp(std::size_t n) {
  std::vector<std::uint8_t> g(n);
  std::iota(g.begin(), g.end(), 1);
  return g;
}

TEST(PackedLoads, Align16BPutsEightDataBytesInEachSixteenAndLeavesThePadUnwritten) {
  const auto s = packed(DataType::packed_u4_align16, 128);
  const auto global = ramp(256);
  const auto out = model::load_tiled(s, global, {0, 0}, 0);
  ASSERT_EQ(out.bytes.size(), 256u);  // 2 rows of 128 shared bytes
  for (std::size_t b = 0; b < 256; ++b) {
    const std::size_t row = b / 128, slot = b % 128 / 16, k = b % 16;
    if (k < 8) {
      EXPECT_EQ(out.written[b], 1) << b;
      EXPECT_EQ(out.bytes[b], global[row * 128 + slot * 8 + k]) << b;
    } else {
      EXPECT_EQ(out.written[b], 0) << b;  // "un-initialized" per the PTX ISA
    }
  }
  EXPECT_EQ(out.tx_bytes, 128u);  // packed bytes: 2 rows x 64
}

TEST(PackedLoads, U6PutsTwelveDataBytesInEachSixteen) {
  const auto s = packed(DataType::packed_u6_align16, 192);
  const auto global = ramp(384);
  const auto out = model::load_tiled(s, global, {128, 0}, 0);
  for (std::size_t b = 0; b < 256; ++b) {
    const std::size_t row = b / 128, slot = b % 128 / 16, k = b % 16;
    if (k < 12) {
      EXPECT_EQ(out.bytes[b], global[row * 192 + 96 + slot * 12 + k]) << b;
      EXPECT_EQ(out.written[b], 1);
    } else {
      EXPECT_EQ(out.written[b], 0) << b;
    }
  }
  EXPECT_EQ(out.tx_bytes, 192u);
}

TEST(PackedLoads, Align8BIsAPackedCopyAndFillsOutOfBoundsWithZeros) {
  auto s = packed(DataType::packed_u4_align8, 128);
  s.box_dim = {64, 2};
  const auto global = ramp(256);
  // Values 224..287 of rows 1 and 2: values past globalDim[0] = 256 and row 2 (past
  // globalDim[1] = 2) read 0. A shared row is 32 bytes.
  const auto out = model::load_tiled(s, global, {224, 1}, 0);
  ASSERT_EQ(out.bytes.size(), 64u);
  for (std::size_t b = 0; b < 64; ++b) {
    EXPECT_EQ(out.bytes[b], b < 16 ? global[128 + 112 + b] : 0) << b;
    EXPECT_EQ(out.written[b], 1) << b;
  }
  EXPECT_EQ(out.tx_bytes, 64u);
}

TEST(PackedLoads, StoresAndReductionsOfPackedTypesAreRefusedNotDropped) {
  // 16U4_ALIGN8B stores are legal on sm_100a; the model has only the loads, so a store must
  // say so rather than copy element_bytes() = 0 bytes a value and return
  for (const DataType t :
       {DataType::packed_u4_align8, DataType::packed_u4_align16, DataType::packed_u6_align16}) {
    const auto s = packed(t, 256);
    std::vector<std::uint8_t> global(512, 7);
    const std::vector<std::uint8_t> smem(256, 1);
    try {
      model::store_tiled(s, global, smem, {0, 0}, 0);
      FAIL() << name(t);
    } catch (const model::ModelError& e) {
      EXPECT_EQ(std::string(e.what()), std::string(name(t)) +
                                           ": only tiled loads of the packed types are modelled");
    }
    EXPECT_THROW(model::reduce_tiled(s, model::ReduceOp::add, global, smem, {0, 0}, 0),
                 model::ModelError);
    EXPECT_EQ(global, std::vector<std::uint8_t>(512, 7)) << name(t);
  }
}

TEST(PackedLoads, PaddedTypesNeedAFirstCoordinateMultipleOf128) {
  const auto s = packed(DataType::packed_u4_align16, 128);
  const auto global = ramp(256);
  try {
    model::load_tiled(s, global, {64, 0}, 0);
    FAIL();
  } catch (const model::ModelError& e) {
    EXPECT_EQ(std::string(e.what()),
              "coords[0] = 64 with 16U4_ALIGN16B: the first coordinate must be a multiple of "
              "128 (the copy is illegal otherwise)");
  }
}

TEST(PackedLoads, AnOffsetPast64BitsIsRefusedNotWrapped) {
  // Row 2^22 lies 2^61 bytes on, whose bit offset (x 8) wraps 64 bits to row 0's: the model
  // refuses it as it refuses any byte outside those given, rather than read row 0.
  auto s = packed(DataType::packed_u4_align8, std::uint64_t{1} << 39);
  s.global_dim = {32, std::uint64_t{1} << 23};
  s.box_dim = {32, 1};
  const auto global = ramp(16);
  try {
    model::load_tiled(s, global, {0, 1 << 22}, 0);
    FAIL() << "the wrapped offset was read";
  } catch (const model::ModelError& e) {
    EXPECT_EQ(std::string(e.what()),
              "the element at coordinate 0 of box row 0 lies more than 2^64 bits past "
              "globalAddress, outside the 16 bytes given");
  }
  EXPECT_EQ(model::load_tiled(s, global, {0, 0}, 0).bytes[0], 1);  // row 0 itself reads
}

}  // namespace
}  // namespace tmakit
