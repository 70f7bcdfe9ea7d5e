// The CPU model of TMA on hand-checked cases: every expected byte below was worked out from
// the PTX ISA and docs/hardware.md by hand, never by calling the model.
#include <gtest/gtest.h>

#include <functional>

#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "tmakit/model/tma_model.hpp"

namespace tmakit::model {
namespace {

// Global bytes whose value is their offset (mod 256): a byte read shows where it came from.
std::vector<std::uint8_t> counting_bytes(std::size_t n) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(i);
  return v;
}

TensorMapSpec tiled(DataType t, std::uint32_t rank, std::array<std::uint64_t, 5> dims,
                    std::array<std::uint64_t, 4> strides, std::array<std::uint32_t, 5> box) {
  TensorMapSpec s;
  s.data_type = t;
  s.rank = rank;
  s.global_address = 0x10000;
  s.global_dim = dims;
  s.global_strides_bytes = strides;
  s.box_dim = box;
  return s;
}

std::vector<std::uint8_t> iota_bytes(std::uint8_t first, std::size_t n) {
  std::vector<std::uint8_t> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

std::vector<std::uint8_t> slice(const std::vector<std::uint8_t>& v, std::size_t at, std::size_t n) {
  return {v.begin() + static_cast<std::ptrdiff_t>(at),
          v.begin() + static_cast<std::ptrdiff_t>(at + n)};
}

bool all_written(const SharedBytes& s, std::size_t at, std::size_t n) {
  for (std::size_t i = at; i < at + n; ++i) {
    if (!s.written[i]) return false;
  }
  return true;
}
bool none_written(const SharedBytes& s, std::size_t at, std::size_t n) {
  for (std::size_t i = at; i < at + n; ++i) {
    if (s.written[i]) return false;
  }
  return true;
}

// --- tiled loads ---------------------------------------------------------------------------

TEST(ModelLoad, Rank2InBoundsBox) {
  // 8 x 4 floats, rows 32 bytes apart; box 4 x 2 at (4, 1): elements x 4..7 of rows 1 and 2
  const auto s = tiled(DataType::float32, 2, {8, 4}, {32}, {4, 2});
  const auto g = counting_bytes(128);
  const SharedBytes r = load_tiled(s, g, {4, 1});
  ASSERT_EQ(r.bytes.size(), 32u);
  EXPECT_EQ(slice(r.bytes, 0, 16), iota_bytes(48, 16));   // row 1: bytes 32 + 16 .. 32 + 31
  EXPECT_EQ(slice(r.bytes, 16, 16), iota_bytes(80, 16));  // row 2: bytes 64 + 16 ..
  EXPECT_TRUE(all_written(r, 0, 32));
  EXPECT_EQ(r.tx_bytes, 32u);
}

TEST(ModelLoad, NegativeCornerFillsZero) {
  // box 8 x 2 at (-4, 0): four out-of-bounds floats, then x 0..3 of rows 0 and 1
  const auto s = tiled(DataType::float32, 2, {8, 4}, {32}, {8, 2});
  std::vector<std::uint8_t> g(128, 0xEE);
  for (int i = 0; i < 128; ++i) g[i] = static_cast<std::uint8_t>(i + 1);  // no zero byte
  const SharedBytes r = load_tiled(s, g, {-4, 0});
  ASSERT_EQ(r.bytes.size(), 64u);
  EXPECT_EQ(slice(r.bytes, 0, 16), std::vector<std::uint8_t>(16, 0));
  EXPECT_EQ(slice(r.bytes, 16, 16), iota_bytes(1, 16));
  EXPECT_EQ(slice(r.bytes, 32, 16), std::vector<std::uint8_t>(16, 0));
  EXPECT_EQ(slice(r.bytes, 48, 16), iota_bytes(33, 16));
  EXPECT_TRUE(all_written(r, 0, 64));  // out-of-bounds elements are written too (filled)
}

TEST(ModelLoad, BoxPastFarEdgesAndWhollyOutside) {
  const auto s = tiled(DataType::float32, 2, {8, 4}, {32}, {8, 2});
  std::vector<std::uint8_t> g(128, 0x11);
  // rows 3 and 4 of a 4-row tensor: row 4 is outside
  const SharedBytes r = load_tiled(s, g, {0, 3});
  EXPECT_EQ(slice(r.bytes, 0, 32), std::vector<std::uint8_t>(32, 0x11));
  EXPECT_EQ(slice(r.bytes, 32, 32), std::vector<std::uint8_t>(32, 0));
  // far outside in every direction: all zero, nothing read
  const SharedBytes far = load_tiled(s, std::span<const std::uint8_t>(), {-1000, 77});
  EXPECT_EQ(far.bytes, std::vector<std::uint8_t>(64, 0));
  EXPECT_TRUE(all_written(far, 0, 64));
}

TEST(ModelLoad, NanFillIs7FF7Repeated) {
  auto s = tiled(DataType::float16, 1, {8}, {}, {16});
  s.oob_fill = OobFill::nan_request_zero_fma;
  const auto g = counting_bytes(16);
  const SharedBytes r = load_tiled(s, g, {0});
  ASSERT_EQ(r.bytes.size(), 32u);
  EXPECT_EQ(slice(r.bytes, 0, 16), iota_bytes(0, 16));
  for (int i = 16; i < 32; i += 2) {
    EXPECT_EQ(r.bytes[i], 0xF7) << i;
    EXPECT_EQ(r.bytes[i + 1], 0x7F) << i;
  }
  // fp64 elements get four copies of the pattern; integer types cannot ask for NaN (T13)
  auto d = tiled(DataType::float64, 1, {2}, {}, {4});
  d.oob_fill = OobFill::nan_request_zero_fma;
  const SharedBytes rd = load_tiled(d, counting_bytes(16), {0});
  EXPECT_EQ(slice(rd.bytes, 16, 8),
            (std::vector<std::uint8_t>{0xF7, 0x7F, 0xF7, 0x7F, 0xF7, 0x7F, 0xF7, 0x7F}));
  auto u = tiled(DataType::uint8, 1, {16}, {}, {16});
  u.oob_fill = OobFill::nan_request_zero_fma;
  EXPECT_THROW(load_tiled(u, counting_bytes(16), {0}), ModelError);
}

TEST(ModelLoad, ElementStridesSkipRows) {
  // 16 x 8 bytes; box 16 x 6 with stride 3 in dimension 1 delivers ceil(6/3) = 2 rows
  auto s = tiled(DataType::uint8, 2, {16, 8}, {16}, {16, 6});
  s.element_strides = {1, 3, 1, 1, 1};
  const auto g = counting_bytes(128);
  const SharedBytes r = load_tiled(s, g, {0, 1});
  ASSERT_EQ(r.bytes.size(), 32u);
  EXPECT_EQ(slice(r.bytes, 0, 16), iota_bytes(16, 16));   // row 1
  EXPECT_EQ(slice(r.bytes, 16, 16), iota_bytes(64, 16));  // row 4
  EXPECT_EQ(r.tx_bytes, 32u);
  // from row 5 the second element is row 8: outside an 8-row tensor
  const SharedBytes edge = load_tiled(s, g, {0, 5});
  EXPECT_EQ(slice(edge.bytes, 0, 16), iota_bytes(80, 16));
  EXPECT_EQ(slice(edge.bytes, 16, 16), std::vector<std::uint8_t>(16, 0));
}

TEST(ModelLoad, Rank5Walk) {
  // 16 x 2 x 2 x 2 x 2 bytes, strides 16, 32, 64, 128; box 16 x 1 x 1 x 1 x 2 at (0,1,1,1,0)
  const auto s = tiled(DataType::uint8, 5, {16, 2, 2, 2, 2}, {16, 32, 64, 128}, {16, 1, 1, 1, 2});
  const auto g = counting_bytes(256);
  const SharedBytes r = load_tiled(s, g, {0, 1, 1, 1, 0});
  ASSERT_EQ(r.bytes.size(), 32u);
  EXPECT_EQ(slice(r.bytes, 0, 16), iota_bytes(16 + 32 + 64, 16));
  EXPECT_EQ(slice(r.bytes, 16, 16), iota_bytes(16 + 32 + 64 + 128, 16));
}

TEST(ModelLoad, Swizzle128PermutesChunksByRow) {
  // 128 x 8 bytes, box = whole tensor: row r's chunk j lands at chunk j ^ r
  auto s = tiled(DataType::uint8, 2, {128, 8}, {128}, {128, 8});
  s.swizzle = Swizzle::bytes128;
  std::vector<std::uint8_t> g(1024);
  for (int y = 0; y < 8; ++y) {
    for (int x = 0; x < 128; ++x) g[y * 128 + x] = static_cast<std::uint8_t>(y * 16 + x / 16);
  }
  const SharedBytes r = load_tiled(s, g, {0, 0});
  ASSERT_EQ(r.bytes.size(), 1024u);
  EXPECT_EQ(r.bytes[0 * 128 + 0 * 16], 0x00);  // row 0 unchanged
  EXPECT_EQ(r.bytes[0 * 128 + 5 * 16], 0x05);
  EXPECT_EQ(r.bytes[1 * 128 + 0 * 16], 0x11);  // row 1: chunk 1 at chunk 0
  EXPECT_EQ(r.bytes[1 * 128 + 1 * 16], 0x10);
  EXPECT_EQ(r.bytes[3 * 128 + 1 * 16], 0x32);  // row 3: 1 ^ 3 = 2
  EXPECT_EQ(r.bytes[7 * 128 + 0 * 16], 0x77);  // row 7: 0 ^ 7 = 7
  EXPECT_EQ(r.bytes[7 * 128 + 7 * 16 + 15], 0x70);
  EXPECT_EQ(r.bytes[6 * 128 + 2 * 16 + 3], 0x64);  // 2 ^ 6 = 4
}

TEST(ModelLoad, SwizzleFollowsTheBufferAddress) {
  // the same 128B load into a buffer at shared address 128 (off the 1024 repeat): row 0 sits
  // at address bits 7..9 = 1, so its chunks swap pairwise (D2)
  auto s = tiled(DataType::uint8, 2, {128, 8}, {128}, {128, 8});
  s.swizzle = Swizzle::bytes128;
  std::vector<std::uint8_t> g(1024);
  for (int y = 0; y < 8; ++y) {
    for (int x = 0; x < 128; ++x) g[y * 128 + x] = static_cast<std::uint8_t>(y * 16 + x / 16);
  }
  const SharedBytes r = load_tiled(s, g, {0, 0}, 128);
  EXPECT_EQ(r.bytes[0 * 16], 0x01);
  EXPECT_EQ(r.bytes[1 * 16], 0x00);
  EXPECT_EQ(r.bytes[128 + 0 * 16], 0x12);      // row 1 at line 2: 0 ^ 2
  EXPECT_EQ(r.bytes[7 * 128 + 0 * 16], 0x70);  // row 7 at line 8 = line 0 of the next repeat
  // a buffer at 1024 + 0 behaves as at 0
  const SharedBytes aligned = load_tiled(s, g, {0, 0}, 2048);
  EXPECT_EQ(aligned.bytes[1 * 128], 0x11);
}

TEST(ModelSwizzle, SharedAddressOffTheOperandsAlignmentIsRefused) {
  // D1: the shared-memory operand is 128-byte aligned; off it a swizzled chunk would leave
  // the buffer's rows, so loads, stores and reduces all refuse, naming the address
  auto s = tiled(DataType::float32, 2, {64, 16}, {256}, {32, 8});
  s.swizzle = Swizzle::bytes128;
  std::vector<std::uint8_t> g(64 * 16 * 4);
  const std::vector<std::uint8_t> smem(footprint(s).total_bytes);
  const std::string expected =
      "smem_address 0x90 is not 128-byte aligned; TMA's shared-memory operand is (D1): use 0x80 "
      "or 0x100";
  const auto message = [](const std::function<void()>& call) {
    try {
      call();
    } catch (const ModelError& e) {
      return std::string(e.what());
    }
    return std::string("(nothing thrown)");
  };
  EXPECT_EQ(message([&] { load_tiled(s, g, {0, 0}, 144); }), expected);
  EXPECT_EQ(message([&] { store_tiled(s, g, smem, {0, 0}, 144); }), expected);
  EXPECT_EQ(message([&] { reduce_tiled(s, ReduceOp::min, g, smem, {0, 0}, 144); }).substr(0, 10),
            "reduce min");  // (min is not defined on FLOAT32: that rule speaks first)
  s.data_type = DataType::uint32;
  EXPECT_EQ(message([&] { reduce_tiled(s, ReduceOp::add, g, smem, {0, 0}, 144); }), expected);
  for (std::uint32_t address = 0; address < 2048; address += 128) {
    EXPECT_NO_THROW(store_tiled(s, g, smem, {0, 0}, address)) << address;
  }
}

TEST(ModelReduce, AnOperationPastTheEnumIsRefusedNotRead) {
  const auto op = static_cast<ReduceOp>(8);
  EXPECT_EQ(name(op), "(not a ReduceOp)");
  EXPECT_EQ(reduce_unsupported_reason(op, DataType::uint32),
            "reduce op 8 is not a ReduceOp (add, min, max, inc, dec, and, or, xor)");
  std::uint8_t dst[4] = {}, src[4] = {};
  EXPECT_THROW(reduce_element(op, DataType::uint32, dst, src), ModelError);
  auto s = tiled(DataType::uint32, 2, {64, 16}, {256}, {32, 8});
  std::vector<std::uint8_t> g(64 * 16 * 4);
  const std::vector<std::uint8_t> smem(footprint(s).total_bytes);
  EXPECT_THROW(reduce_tiled(s, static_cast<ReduceOp>(200), g, smem, {0, 0}), ModelError);
}

// The table the model and the device layer's reduce_tile share (core/reduce.hpp), written
// out whole: per operator, the Hopper data types it is defined on (H8).
TEST(ModelReduce, TheOperatorTypeTableIsH8s) {
  const char* const want[tmakit::kReduceOpCount] = {
      "UINT32 INT32 UINT64 FLOAT16 FLOAT32 BFLOAT16 FLOAT32_FTZ",  // add
      "UINT32 INT32 UINT64 INT64 FLOAT16 BFLOAT16",                // min
      "UINT32 INT32 UINT64 INT64 FLOAT16 BFLOAT16",                // max
      "UINT32",                                                    // inc
      "UINT32",                                                    // dec
      "UINT32 INT32 UINT64",                                       // and
      "UINT32 INT32 UINT64",                                       // or
      "UINT32 INT32 UINT64",                                       // xor
  };
  for (int o = 0; o < tmakit::kReduceOpCount; ++o) {
    const auto op = static_cast<ReduceOp>(o);
    std::string got;
    for (int t = 0; t < tmakit::kDataTypeCount; ++t) {
      const auto type = static_cast<DataType>(t);
      const bool defined = tmakit::reduce_defined_on(op, type);
      EXPECT_EQ(defined, reduce_unsupported_reason(op, type).empty()) << name(op) << " " << t;
      if (!defined) continue;
      if (!got.empty()) got += ' ';
      got += tmakit::name(type);
    }
    EXPECT_EQ(got, want[o]) << name(op);
  }
  EXPECT_FALSE(tmakit::reduce_defined_on(static_cast<ReduceOp>(8), DataType::uint32));
}

TEST(ModelLoad, NarrowRowTakesFullSpanO2) {
  // float32 box 8 x 4 (32-byte rows) with the 64B swizzle: rows 64 bytes apart; rows 2 and 3
  // sit in 128-byte line 1 and have their two chunks swapped; bytes 32..63 of each row untouched
  auto s = tiled(DataType::float32, 2, {8, 4}, {32}, {8, 4});
  s.swizzle = Swizzle::bytes64;
  const auto g = counting_bytes(128);
  const SharedBytes r = load_tiled(s, g, {0, 0});
  ASSERT_EQ(r.bytes.size(), 256u);
  EXPECT_EQ(slice(r.bytes, 0, 32), iota_bytes(0, 32));     // row 0
  EXPECT_EQ(slice(r.bytes, 64, 32), iota_bytes(32, 32));   // row 1
  EXPECT_EQ(slice(r.bytes, 128, 16), iota_bytes(80, 16));  // row 2, chunk 1 first
  EXPECT_EQ(slice(r.bytes, 144, 16), iota_bytes(64, 16));
  EXPECT_EQ(slice(r.bytes, 192, 16), iota_bytes(112, 16));  // row 3, chunk 1 first
  EXPECT_EQ(slice(r.bytes, 208, 16), iota_bytes(96, 16));
  for (std::size_t row = 0; row < 4; ++row) {
    EXPECT_TRUE(all_written(r, row * 64, 32)) << row;
    EXPECT_TRUE(none_written(r, row * 64 + 32, 32)) << row;
  }
  EXPECT_EQ(r.tx_bytes, 128u);  // O3: logical bytes, not the padded footprint
  const Footprint fp = footprint(s);
  EXPECT_EQ(fp.rows, 4u);
  EXPECT_EQ(fp.row_bytes, 32u);
  EXPECT_EQ(fp.pitch_bytes, 64u);
}

TEST(ModelLoad, Swizzle32SwapsEveryOtherLine) {
  // uint8 32 x 8, 32B swizzle: rows 4..7 sit in 128-byte line 1 (bit 7 set): chunks swap
  auto s = tiled(DataType::uint8, 2, {32, 8}, {32}, {32, 8});
  s.swizzle = Swizzle::bytes32;
  const auto g = counting_bytes(256);
  const SharedBytes r = load_tiled(s, g, {0, 0});
  EXPECT_EQ(slice(r.bytes, 0, 32), iota_bytes(0, 32));
  EXPECT_EQ(slice(r.bytes, 96, 32), iota_bytes(96, 32));
  EXPECT_EQ(slice(r.bytes, 128, 16), iota_bytes(144, 16));
  EXPECT_EQ(slice(r.bytes, 144, 16), iota_bytes(128, 16));
}

TEST(ModelLoad, GlobalByteOutsideTheSpanIsAnError) {
  const auto s = tiled(DataType::uint8, 2, {16, 4}, {16}, {16, 4});
  const auto g = counting_bytes(32);  // rows 2 and 3 missing
  try {
    load_tiled(s, g, {0, 0});
    FAIL() << "no error";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("offset 32 (address 0x10020)"), std::string::npos)
        << e.what();
  }
}

TEST(ModelLoad, UnwalkableSpecsAreErrors) {
  auto s = tiled(DataType::uint8, 2, {16, 4}, {16}, {16, 4});
  s.rank = 0;
  EXPECT_THROW(load_tiled(s, counting_bytes(64), {}), ModelError);
  s.rank = 6;
  EXPECT_THROW(footprint(s), ModelError);
  s.rank = 2;
  s.box_dim[1] = 0;
  EXPECT_THROW(load_tiled(s, counting_bytes(64), {}), ModelError);
  s.box_dim[1] = 4;
  s.element_strides[1] = 9;
  EXPECT_THROW(load_tiled(s, counting_bytes(64), {}), ModelError);
  s.element_strides[1] = 1;
  s.global_dim[1] = 0;
  EXPECT_THROW(load_tiled(s, counting_bytes(64), {}), ModelError);
}

TEST(ModelLoad, Tf32RoundsToNearestEvenAndCanonicalisesNan) {
  // measured on H200: TFLOAT32 loads keep 10 mantissa bits (nearest even), NaN -> 0x7FFFE000
  const auto s = tiled(DataType::tfloat32, 1, {8}, {}, {8});
  const std::uint32_t in[8] = {
      0x3F801000u,  // tie, even below: 0x3F800000
      0x3F803000u,  // tie, odd below: rounds up to 0x3F804000
      0x3F800FFFu,  // below half: 0x3F800000
      0x7F7FF000u,  // rounds up into the exponent: +inf 0x7F800000
      0xFFC12345u,  // NaN (negative): canonical 0x7FFFE000
      0x00001001u,  // subnormal above half: 0x00002000 (kept, not flushed)
      0x7F800000u,  // +inf unchanged
      0x80000000u,  // -0 unchanged
  };
  std::vector<std::uint8_t> g(32);
  std::memcpy(g.data(), in, 32);
  const SharedBytes r = load_tiled(s, g, {0});
  std::uint32_t out[8];
  std::memcpy(out, r.bytes.data(), 32);
  EXPECT_EQ(out[0], 0x3F800000u);
  EXPECT_EQ(out[1], 0x3F804000u);
  EXPECT_EQ(out[2], 0x3F800000u);
  EXPECT_EQ(out[3], 0x7F800000u);
  EXPECT_EQ(out[4], 0x7FFFE000u);
  EXPECT_EQ(out[5], 0x00002000u);
  EXPECT_EQ(out[6], 0x7F800000u);
  EXPECT_EQ(out[7], 0x80000000u);
  // FLOAT32 is copied bit for bit
  auto f = s;
  f.data_type = DataType::float32;
  EXPECT_EQ(load_tiled(f, g, {0}).bytes, g);
}

TEST(ModelLoad, DimZeroElementStrideIsIgnoredWithoutInterleave) {
  // measured on H200: elementStrides[0] = 2 still delivers boxDim[0] = 16 consecutive bytes
  auto s = tiled(DataType::uint8, 2, {32, 4}, {32}, {16, 2});
  s.element_strides = {2, 1, 1, 1, 1};
  const SharedBytes r = load_tiled(s, counting_bytes(128), {0, 1});
  ASSERT_EQ(r.bytes.size(), 32u);
  EXPECT_EQ(slice(r.bytes, 0, 16), iota_bytes(32, 16));
  EXPECT_EQ(slice(r.bytes, 16, 16), iota_bytes(64, 16));
  EXPECT_EQ(r.tx_bytes, 32u);  // more than box_bytes() = 16: a barrier armed with that hangs
}

// --- interleave (measured on H200, docs/hardware.md H12) ------------------------------------
// Dimension 0 steps by whole 16/32-byte slices (boxDim[0], elementStrides[0], globalDim[0] and
// the coordinate count slices); dimension rank-2 is not walked; rows are dense.

TEST(ModelInterleave, Dim0CountsSlicesAndDim1IsNotWalked) {
  // UINT8 [12, 4, 3], interleave 16B, box [16, 2, 2]: slices 0..11 are in bounds (globalDim[0]
  // counts slices), 12..15 filled; box[1] = 2 is not walked; rows step dimension 2 (64 bytes)
  auto s = tiled(DataType::uint8, 3, {12, 4, 3}, {16, 64}, {16, 2, 2});
  s.interleave = Interleave::bytes16;
  const SharedBytes r = load_tiled(s, counting_bytes(512), {0, 0, 0});
  ASSERT_EQ(r.bytes.size(), 512u);
  EXPECT_EQ(slice(r.bytes, 0, 192), iota_bytes(0, 192));      // row 0: global 0..191
  EXPECT_EQ(slice(r.bytes, 192, 64), std::vector<std::uint8_t>(64, 0));
  EXPECT_EQ(slice(r.bytes, 256, 192), iota_bytes(64, 192));   // row 1: global 64..255
  EXPECT_EQ(slice(r.bytes, 448, 64), std::vector<std::uint8_t>(64, 0));
  EXPECT_TRUE(all_written(r, 0, 512));
  EXPECT_EQ(r.tx_bytes, 512u);
  EXPECT_EQ(box_bytes(s), 512u);
}

TEST(ModelInterleave, CoordinateZeroIsInSlices) {
  // UINT8 [64, 4, 3] strides [64, 256], box [16, 2, 2] at (16, 0, 0): starts at byte 16 * 16
  auto s = tiled(DataType::uint8, 3, {64, 4, 3}, {64, 256}, {16, 2, 2});
  s.interleave = Interleave::bytes16;
  const SharedBytes r = load_tiled(s, counting_bytes(1024), {16, 0, 0});
  ASSERT_EQ(r.bytes.size(), 512u);
  EXPECT_EQ(slice(r.bytes, 0, 256), iota_bytes(0, 256));  // global 256..511 (mod 256)
  EXPECT_EQ(r.bytes[256], 0);                             // global 512: row 1 = 256 + 256
  EXPECT_EQ(r.bytes[257], 1);
}

TEST(ModelInterleave, Dim0ElementStrideSkipsSlices) {
  // FLOAT16 [8, 4, 3], box [8, 2, 2], elementStrides [2, 1, 1]: slices 0, 2, 4, 6 of each row
  auto s = tiled(DataType::float16, 3, {8, 4, 3}, {16, 64}, {8, 2, 2});
  s.interleave = Interleave::bytes16;
  s.element_strides = {2, 1, 1, 1, 1};
  const SharedBytes r = load_tiled(s, counting_bytes(256), {0, 0, 0});
  ASSERT_EQ(r.bytes.size(), 128u);
  EXPECT_EQ(slice(r.bytes, 0, 16), iota_bytes(0, 16));
  EXPECT_EQ(slice(r.bytes, 16, 16), iota_bytes(32, 16));
  EXPECT_EQ(slice(r.bytes, 48, 16), iota_bytes(96, 16));
  EXPECT_EQ(slice(r.bytes, 64, 16), iota_bytes(64, 16));   // row 1 starts at 64
  EXPECT_EQ(slice(r.bytes, 112, 16), iota_bytes(160, 16));
  EXPECT_EQ(r.tx_bytes, 128u);
}

TEST(ModelInterleave, Rank4SkipsDimension2AndSwizzleFollowsTheAddress) {
  // FLOAT16 [8, 3, 2, 2] strides [16, 48, 96], box [8, 2, 2, 2]: rows (d1, d3) = (0,0) (1,0)
  // (0,1) (1,1) start at 0, 16, 96, 112; box[2] = 2 is not walked
  auto s = tiled(DataType::float16, 4, {8, 3, 2, 2}, {16, 48, 96}, {8, 2, 2, 2});
  s.interleave = Interleave::bytes16;
  const SharedBytes r = load_tiled(s, counting_bytes(256), {0, 0, 0, 0});
  ASSERT_EQ(r.bytes.size(), 512u);
  EXPECT_EQ(slice(r.bytes, 0, 128), iota_bytes(0, 128));
  EXPECT_EQ(slice(r.bytes, 128, 128), iota_bytes(16, 128));
  EXPECT_EQ(slice(r.bytes, 256, 128), iota_bytes(96, 128));
  EXPECT_EQ(slice(r.bytes, 384, 128), iota_bytes(112, 128));
  EXPECT_EQ(r.tx_bytes, 512u);
  // 32B swizzle at a 1024-aligned buffer: the two 16-byte halves of each 32 bytes swap in
  // odd 128-byte lines (O5), rows stay dense
  s.swizzle = Swizzle::bytes32;
  const SharedBytes w = load_tiled(s, counting_bytes(256), {0, 0, 0, 0});
  ASSERT_EQ(w.bytes.size(), 512u);
  EXPECT_EQ(slice(w.bytes, 0, 128), iota_bytes(0, 128));
  EXPECT_EQ(slice(w.bytes, 128, 16), iota_bytes(32, 16));  // row 1 bytes 16..31 <- global 32..
  EXPECT_EQ(slice(w.bytes, 144, 16), iota_bytes(16, 16));
}

TEST(ModelInterleave, OutsideDimensionRankMinus2FillsTheWholeBox) {
  // FLOAT32 [4, 4, 3], box [4, 4, 3] at (0, -1, -1), NaN fill: dimension 1 sits at -1 for every
  // row, so all 3 rows x 4 slices are filled with 0x7FF7
  auto s = tiled(DataType::float32, 3, {4, 4, 3}, {16, 64}, {4, 4, 3});
  s.interleave = Interleave::bytes16;
  s.oob_fill = OobFill::nan_request_zero_fma;
  const SharedBytes r = load_tiled(s, counting_bytes(256), {0, -1, -1});
  ASSERT_EQ(r.bytes.size(), 192u);
  for (std::size_t i = 0; i < r.bytes.size(); i += 2) {
    ASSERT_EQ(r.bytes[i], 0xF7) << i;
    ASSERT_EQ(r.bytes[i + 1], 0x7F) << i;
  }
  EXPECT_EQ(r.tx_bytes, 192u);
}

TEST(ModelInterleave, Im2colWithInterleaveIsRefused) {
  TensorMapSpec s;
  s.kind = EncodeKind::im2col;
  s.data_type = DataType::float16;
  s.rank = 3;
  s.global_dim = {8, 4, 2};
  s.global_strides_bytes = {16, 64};
  s.channels_per_pixel = 8;
  s.pixels_per_column = 4;
  s.interleave = Interleave::bytes16;
  EXPECT_THROW(load_im2col(s, counting_bytes(128), {0, 0, 0}, {0, 0, 0}), ModelError);
}

// --- im2col ------------------------------------------------------------------------------

TEST(ModelIm2col, PixelsWrapAtThePixelBoxThenNextImage) {
  // NWC float32: C = 4, W = 5, N = 2 (pixel 16 bytes, image 80). Pixel box W -1 .. 5-1-1 = 3.
  TensorMapSpec s;
  s.kind = EncodeKind::im2col;
  s.data_type = DataType::float32;
  s.rank = 3;
  s.global_dim = {4, 5, 2};
  s.global_strides_bytes = {16, 80};
  s.pixel_box_lower_corner = {-1};
  s.pixel_box_upper_corner = {-1};
  s.channels_per_pixel = 4;
  s.pixels_per_column = 6;
  const auto g = counting_bytes(160);
  // filter base w = 2 in image 0: pixels w 2, 3, then -1, 0, 1, 2 of image 1; offset +1
  const SharedBytes r = load_im2col(s, g, {0, 2, 0}, {1, 0, 0});
  ASSERT_EQ(r.bytes.size(), 96u);
  EXPECT_EQ(slice(r.bytes, 0, 16), iota_bytes(48, 16));        // w 3, n 0
  EXPECT_EQ(slice(r.bytes, 16, 16), iota_bytes(64, 16));       // w 4, n 0
  EXPECT_EQ(slice(r.bytes, 32, 16), iota_bytes(80, 16));       // w 0, n 1
  EXPECT_EQ(slice(r.bytes, 80, 16), iota_bytes(80 + 48, 16));  // w 3, n 1
  // without the offset the third pixel reads w = -1: zero filled
  const SharedBytes z = load_im2col(s, g, {0, 2, 0}, {0, 0, 0});
  EXPECT_EQ(slice(z.bytes, 0, 16), iota_bytes(32, 16));
  EXPECT_EQ(slice(z.bytes, 32, 16), std::vector<std::uint8_t>(16, 0));
  EXPECT_EQ(slice(z.bytes, 48, 16), iota_bytes(80, 16));
}

TEST(ModelIm2col, TraversalStrideStepsThePixels) {
  TensorMapSpec s;
  s.kind = EncodeKind::im2col;
  s.data_type = DataType::float32;
  s.rank = 3;
  s.global_dim = {4, 8, 1};
  s.global_strides_bytes = {16, 128};
  s.pixel_box_lower_corner = {0};
  s.pixel_box_upper_corner = {0};
  s.channels_per_pixel = 4;
  s.pixels_per_column = 3;
  s.element_strides = {1, 3, 1, 1, 1};
  const SharedBytes r = load_im2col(s, counting_bytes(128), {0, 1, 0}, {0, 0, 0});
  EXPECT_EQ(slice(r.bytes, 0, 16), iota_bytes(16, 16));    // w 1
  EXPECT_EQ(slice(r.bytes, 16, 16), iota_bytes(64, 16));   // w 4
  EXPECT_EQ(slice(r.bytes, 32, 16), iota_bytes(112, 16));  // w 7
}

TEST(ModelIm2col, ImageStepsByItsTraversalStride) {
  // NWC float32: C = 4, W = 2, N = 4 (pixel 16 bytes, image 32); elementStrides[N] = 2
  TensorMapSpec s;
  s.kind = EncodeKind::im2col;
  s.data_type = DataType::float32;
  s.rank = 3;
  s.global_dim = {4, 2, 4};
  s.global_strides_bytes = {16, 32};
  s.channels_per_pixel = 4;
  s.pixels_per_column = 6;
  s.element_strides = {1, 1, 2, 1, 1};
  const SharedBytes r = load_im2col(s, counting_bytes(128), {0, 1, 0}, {0, 0, 0});
  EXPECT_EQ(slice(r.bytes, 0, 16), iota_bytes(16, 16));   // w 1, n 0
  EXPECT_EQ(slice(r.bytes, 16, 16), iota_bytes(64, 16));  // w 0, n 2 (not n 1)
  EXPECT_EQ(slice(r.bytes, 32, 16), iota_bytes(80, 16));  // w 1, n 2
  // n 4 and 6 lie past N = 4: zero filled, and written
  EXPECT_EQ(slice(r.bytes, 48, 48), std::vector<std::uint8_t>(48, 0));
  EXPECT_EQ(slice(r.written, 48, 48), std::vector<std::uint8_t>(48, 1));
}

TEST(ModelIm2col, PixelOutsideThePixelBoxIsRefusedH10) {
  // NHWC uint8: C = 16, W = 5, H = 4, N = 1; box W -1 .. 5-1+1 = 5, H 1 .. 4-1-2 = 1
  TensorMapSpec s;
  s.kind = EncodeKind::im2col;
  s.data_type = DataType::uint8;
  s.rank = 4;
  s.global_dim = {16, 5, 4, 1};
  s.global_strides_bytes = {16, 80, 320};
  s.pixel_box_lower_corner = {-1, 1};
  s.pixel_box_upper_corner = {1, -2};
  s.channels_per_pixel = 16;
  s.pixels_per_column = 4;
  const auto g = counting_bytes(320);
  // both ends of the box are inside; channel and image coordinates may lie anywhere
  for (const Coords& c : {Coords{0, -1, 1, 0}, Coords{0, 5, 1, 0}, Coords{-16, 0, 1, 3}}) {
    EXPECT_EQ(im2col_coords_refused_reason(s, c), "");
    EXPECT_NO_THROW(load_im2col(s, g, c, {0, 0, 0}));
  }
  // one step past either end of either box dimension kills the kernel on H200
  for (const Coords& c :
       {Coords{0, -2, 1, 0}, Coords{0, 6, 1, 0}, Coords{0, 0, 0, 0}, Coords{0, 0, 2, 0}}) {
    EXPECT_THROW(load_im2col(s, g, c, {0, 0, 0}), ModelError);
  }
  EXPECT_EQ(im2col_coords_refused_reason(s, {0, 0, 2, 0}),
            "im2col pixel coordinate H (coords[2]) = 2 is outside the pixel box 1..1 "
            "(pixelBoxLowerCorner[1] .. globalDim[2] - 1 + pixelBoxUpperCorner[1]): on H200 such "
            "a load kills the kernel (docs/hardware.md H10); start the column at a pixel inside "
            "the box");
  try {
    load_im2col(s, g, {0, -2, 1, 0}, {0, 0, 0});
    ADD_FAILURE() << "no ModelError for W = -2";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("W (coords[1]) = -2 is outside the pixel box -1..5"),
              std::string::npos)
        << e.what();
  }
}

// O1: a tiled copy whose coords[0] times the element size is off 16 bytes kills the kernel on
// H100 / H200 (loads and stores measured: ModelVsHardware.O1InnerCoordinateOn16Bytes); the
// model refuses it, negative coordinates included, and judges interleaved maps by slices.
TEST(ModelTiled, InnerCoordinateOff16BytesIsRefusedO1) {
  const auto s = tiled(DataType::int32, 2, {1024, 8}, {4096}, {32, 8});
  const auto g = counting_bytes(4096 * 8);
  for (std::int32_t x : {0, 4, 288, 992, -4, -32}) {
    EXPECT_EQ(tiled_coords_refused_reason(s, {x, 0}), "") << x;
    EXPECT_NO_THROW(load_tiled(s, g, {x, 0})) << x;
  }
  EXPECT_EQ(tiled_coords_refused_reason(s, {290, 0}),
            "coords[0] = 290: 290 x 4 bytes is not a multiple of 16; on H200 such a load ends "
            "the kernel with 'illegal instruction' (docs/hardware.md O1); start the box at 288 "
            "(a multiple of 4 elements), 2 columns wider, and skip its first 2");
  EXPECT_NE(tiled_coords_refused_reason(s, {-1, 0}).find("start the box at -4 "),
            std::string::npos);
  // a store or reduce writes every column of its box: it starts right of x, never left
  EXPECT_EQ(tiled_coords_refused_reason(s, {290, 0}, Direction::store),
            "coords[0] = 290: 290 x 4 bytes is not a multiple of 16; on H200 such a store ends "
            "the kernel with 'illegal instruction' (docs/hardware.md O1); start the box at 292 "
            "(a multiple of 4 elements) and write columns 290..291 with ordinary stores");
  EXPECT_NE(tiled_coords_refused_reason(s, {290, 0}, Direction::reduce)
                .find("(docs/hardware.md O1; a reduce is refused with it, not measured)"),
            std::string::npos);
  EXPECT_NE(tiled_coords_refused_reason(s, {3, 0}).find("start the box at 0 (a multiple of 4 "
                                                       "elements), 3 columns wider, and skip its "
                                                       "first 3"),
            std::string::npos);
  EXPECT_NE(tiled_coords_refused_reason(s, {1, 0}).find(", 1 column wider, and skip its first 1"),
            std::string::npos);
  EXPECT_NE(tiled_coords_refused_reason(s, {3, 0}, Direction::store)
                .find("start the box at 4 (a multiple of 4 elements) and write column 3 with "
                      "ordinary stores"),
            std::string::npos);
  EXPECT_NE(tiled_coords_refused_reason(s, {-1, 0}, Direction::store)
                .find("start the box at 0 (a multiple of 4 elements)"),
            std::string::npos);
  try {
    std::vector<std::uint8_t> scratch(g.begin(), g.end());
    store_tiled(s, scratch, iota_bytes(0, 32 * 8 * 4), {-5, 0});
    ADD_FAILURE() << "no ModelError for a store at -5";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("start the box at 0 ("), std::string::npos) << e.what();
  }
  std::vector<std::uint8_t> out(g.begin(), g.end());
  const auto smem = iota_bytes(0, 32 * 8 * 4);
  for (std::int32_t x : {1, 2, 3, 290, 991, -1}) {
    EXPECT_THROW(load_tiled(s, g, {x, 0}), ModelError) << x;
    EXPECT_THROW(store_tiled(s, out, smem, {x, 0}), ModelError) << x;
    EXPECT_THROW(store_tiled_ranges(s, {x, 0}), ModelError) << x;
    EXPECT_THROW(reduce_tiled(s, ReduceOp::add, out, smem, {x, 0}), ModelError) << x;
    EXPECT_THROW(load_multicast(s, g, {x, 0}, 1, 1), ModelError) << x;
  }
  EXPECT_EQ(out, g);  // nothing written
  // per element size: 16 / size elements a step (one byte: 16; eight bytes: 2)
  EXPECT_EQ(tiled_coords_refused_reason(tiled(DataType::uint8, 1, {64}, {}, {16}), {8}).substr(0, 15),
            "coords[0] = 8: ");
  EXPECT_EQ(tiled_coords_refused_reason(tiled(DataType::float64, 1, {64}, {}, {16}), {2}), "");
  EXPECT_NE(tiled_coords_refused_reason(tiled(DataType::float64, 1, {64}, {}, {16}), {1}), "");
  // interleave counts dimension 0 in slices: any slice index is on 16 bytes
  auto inter = tiled(DataType::int32, 3, {32, 4, 4}, {128, 512}, {8, 4, 1});
  inter.interleave = Interleave::bytes16;
  EXPECT_EQ(tiled_coords_refused_reason(inter, {1, 0, 0}), "");
}

// --- multicast and prefetch ----------------------------------------------------------------

TEST(ModelMulticast, SameBoxIntoEveryCtaOfTheMask) {
  const auto s = tiled(DataType::uint8, 2, {16, 4}, {16}, {16, 2});
  const auto g = counting_bytes(64);
  const auto out = load_multicast(s, g, {0, 2}, 0b0101, 4);
  ASSERT_EQ(out.size(), 4u);
  ASSERT_TRUE(out[0].has_value());
  ASSERT_TRUE(out[2].has_value());
  EXPECT_FALSE(out[1].has_value());
  EXPECT_FALSE(out[3].has_value());
  EXPECT_EQ(out[0]->bytes, iota_bytes(32, 32));
  EXPECT_EQ(out[2]->bytes, out[0]->bytes);
  EXPECT_THROW(load_multicast(s, g, {0, 0}, 0b10000, 4), ModelError);
  EXPECT_THROW(load_multicast(s, g, {0, 0}, 1, 17), ModelError);
}

TEST(ModelPrefetch, ReportsInBoundsRangesWithoutGlobalBytes) {
  const auto s = tiled(DataType::float32, 2, {8, 4}, {64}, {8, 2});
  const auto ranges = prefetch_tiled(s, {-4, 3});
  ASSERT_EQ(ranges.size(), 1u);  // row 3, x 0..3; row 4 is outside
  EXPECT_EQ(ranges[0].begin, 3u * 64);
  EXPECT_EQ(ranges[0].end, 3u * 64 + 16);
}

// --- stores --------------------------------------------------------------------------------

TEST(ModelStore, OutOfBoundsPartIsDroppedPerChunk) {
  // 20 bytes in a row padded to 32; box of 16 at 16: the chunk [16, 32) holds in-bounds bytes
  // 16..19, and the hardware writes the whole chunk (measured on H200)
  const auto s = tiled(DataType::uint8, 2, {20, 2}, {32}, {16, 1});
  std::vector<std::uint8_t> g(64, 0xAA);
  const auto smem = iota_bytes(100, 16);
  store_tiled(s, g, smem, {16, 1});
  for (int i = 0; i < 48; ++i) EXPECT_EQ(g[i], 0xAA) << i;
  EXPECT_EQ(slice(g, 48, 16), iota_bytes(100, 16));
  // past the chunk, and in other dimensions, the box is dropped exactly
  std::vector<std::uint8_t> h(64, 0xAA);
  const auto wide = tiled(DataType::uint8, 2, {20, 2}, {32}, {32, 2});
  store_tiled(wide, h, counting_bytes(64), {16, 1});
  EXPECT_EQ(slice(h, 32, 16), std::vector<std::uint8_t>(16, 0xAA));
  EXPECT_EQ(slice(h, 48, 16), iota_bytes(0, 16));  // row 1, x 16..31
  // a box wholly outside kills the kernel on H200: the model refuses it
  std::vector<std::uint8_t> none;
  EXPECT_THROW(store_tiled(s, none, smem, {-16, 0}), ModelError);
  EXPECT_THROW(store_tiled(s, g, smem, {32, 0}), ModelError);
}

TEST(ModelStore, NegativeStartIsRefused) {
  // partly inside, but starting at a negative coordinate: kills the kernel on H200
  const auto s = tiled(DataType::uint8, 2, {32, 4}, {32}, {16, 2});
  std::vector<std::uint8_t> g(128, 0xAA);
  const auto smem = iota_bytes(0, 32);
  EXPECT_THROW(store_tiled(s, g, smem, {0, -1}), ModelError);
  EXPECT_THROW(store_tiled(s, g, smem, {-16, 1}), ModelError);
  EXPECT_EQ(g, std::vector<std::uint8_t>(128, 0xAA));  // nothing written
}

TEST(ModelStore, Tf32StoreWritesTheBitsUnchanged) {
  // loads round to tf32; a store writes the shared-memory bits as they are (measured on H200)
  const auto s = tiled(DataType::tfloat32, 1, {4}, {}, {4});
  const std::uint32_t bits[4] = {0x3F800FFFu, 0x7FC00001u, 0x00000001u, 0xBF801234u};
  std::vector<std::uint8_t> smem(16);
  std::memcpy(smem.data(), bits, 16);
  std::vector<std::uint8_t> g(16, 0);
  store_tiled(s, g, smem, {0});
  EXPECT_EQ(g, smem);
}

TEST(ModelStore, ReadsSharedMemoryThroughTheSwizzle) {
  // uint8 32 x 8 with the 32B swizzle: global row 4 comes from line 1 with chunks swapped
  auto s = tiled(DataType::uint8, 2, {32, 8}, {32}, {32, 8});
  s.swizzle = Swizzle::bytes32;
  std::vector<std::uint8_t> g(256, 0);
  const auto smem = counting_bytes(256);
  store_tiled(s, g, smem, {0, 0});
  EXPECT_EQ(slice(g, 0, 32), iota_bytes(0, 32));
  EXPECT_EQ(slice(g, 128, 16), iota_bytes(144, 16));
  EXPECT_EQ(slice(g, 144, 16), iota_bytes(128, 16));
  // a short shared buffer is an error
  EXPECT_THROW(store_tiled(s, g, std::span<const std::uint8_t>(smem.data(), 100), {0, 0}),
               ModelError);
}

// --- reduce --------------------------------------------------------------------------------

template <class T>
T reduce1(ReduceOp op, DataType t, T dst, T src) {
  std::uint8_t d[8]{};
  std::uint8_t s[8]{};
  std::memcpy(d, &dst, sizeof(T));
  std::memcpy(s, &src, sizeof(T));
  reduce_element(op, t, d, s);
  T out{};
  std::memcpy(&out, d, sizeof(T));
  return out;
}

TEST(ModelReduce, IntegerOps) {
  EXPECT_EQ(reduce1<std::uint32_t>(ReduceOp::add, DataType::uint32, 0xFFFFFFFFu, 2u), 1u);
  EXPECT_EQ(reduce1<std::int32_t>(ReduceOp::add, DataType::int32, -5, 3), -2);
  EXPECT_EQ(reduce1<std::int32_t>(ReduceOp::min, DataType::int32, -5, 3), -5);
  EXPECT_EQ(reduce1<std::uint32_t>(ReduceOp::min, DataType::uint32, 0xFFFFFFFBu, 3u), 3u);
  EXPECT_EQ(reduce1<std::int64_t>(ReduceOp::max, DataType::int64, -1, -7), -1);
  EXPECT_EQ(reduce1<std::uint64_t>(ReduceOp::max, DataType::uint64, ~0ull, 7ull), ~0ull);
  // inc: old >= src ? 0 : old + 1; dec: (old == 0 || old > src) ? src : old - 1
  EXPECT_EQ(reduce1<std::uint32_t>(ReduceOp::inc, DataType::uint32, 5u, 5u), 0u);
  EXPECT_EQ(reduce1<std::uint32_t>(ReduceOp::inc, DataType::uint32, 4u, 5u), 5u);
  EXPECT_EQ(reduce1<std::uint32_t>(ReduceOp::dec, DataType::uint32, 0u, 7u), 7u);
  EXPECT_EQ(reduce1<std::uint32_t>(ReduceOp::dec, DataType::uint32, 9u, 7u), 7u);
  EXPECT_EQ(reduce1<std::uint32_t>(ReduceOp::dec, DataType::uint32, 3u, 7u), 2u);
  EXPECT_EQ(reduce1<std::uint64_t>(ReduceOp::bit_and, DataType::uint64, 0xF0F0ull, 0xFF00ull),
            0xF000ull);
  EXPECT_EQ(reduce1<std::uint64_t>(ReduceOp::bit_or, DataType::uint64, 0xF0F0ull, 0xFF00ull),
            0xFFF0ull);
  EXPECT_THROW(reduce1<std::uint64_t>(ReduceOp::bit_and, DataType::int64, 1, 1), ModelError);
  EXPECT_EQ(reduce1<std::uint32_t>(ReduceOp::bit_xor, DataType::int32, 0xF0F0u, 0xFF00u), 0x0FF0u);
  // fp8 carried as UINT8: add killed the kernel on H200, so the model refuses it
  EXPECT_THROW(reduce1<std::uint8_t>(ReduceOp::add, DataType::uint8, 200, 100), ModelError);
}

TEST(ModelReduce, FloatAddRoundsToNearestEven) {
  // f32: 1.5 + 2.25 = 3.75 (0x40700000); subnormals flush to zero keeping the sign
  EXPECT_EQ(reduce1<std::uint32_t>(ReduceOp::add, DataType::float32, 0x3FC00000u, 0x40100000u),
            0x40700000u);
  EXPECT_EQ(reduce1<std::uint32_t>(ReduceOp::add, DataType::float32, 0x00000001u, 0x00000000u), 0u);
  EXPECT_EQ(reduce1<std::uint32_t>(ReduceOp::add, DataType::float32, 0x80000001u, 0x80000000u),
            0x80000000u);
  // 1 + 2^-24 is a tie between 1 and 1 + 2^-23: even mantissa wins (1.0)
  EXPECT_EQ(reduce1<std::uint32_t>(ReduceOp::add, DataType::float32, 0x3F800000u, 0x33800000u),
            0x3F800000u);
  // f16: 1 + 1 = 2; 2048 + 1 ties to 2048; 2050 + 1 ties to 2052; subnormals kept (noftz)
  EXPECT_EQ(reduce1<std::uint16_t>(ReduceOp::add, DataType::float16, 0x3C00, 0x3C00), 0x4000);
  EXPECT_EQ(reduce1<std::uint16_t>(ReduceOp::add, DataType::float16, 0x6800, 0x3C00), 0x6800);
  EXPECT_EQ(reduce1<std::uint16_t>(ReduceOp::add, DataType::float16, 0x6801, 0x3C00), 0x6802);
  EXPECT_EQ(reduce1<std::uint16_t>(ReduceOp::add, DataType::float16, 0x0001, 0x0001), 0x0002);
  EXPECT_EQ(reduce1<std::uint16_t>(ReduceOp::add, DataType::float16, 0x7BFF, 0x7BFF), 0x7C00);
  // bf16 (spacing 2^-7 at 1): 1 + 2^-8 ties to 1; 1 + 3 * 2^-8 ties to the even 1 + 2^-6
  EXPECT_EQ(reduce1<std::uint16_t>(ReduceOp::add, DataType::bfloat16, 0x3F80, 0x3B80), 0x3F80);
  EXPECT_EQ(reduce1<std::uint16_t>(ReduceOp::add, DataType::bfloat16, 0x3F80, 0x3C40), 0x3F82);
  EXPECT_EQ(reduce1<std::uint16_t>(ReduceOp::max, DataType::bfloat16, 0x3F80, 0xBF80), 0x3F80);
  EXPECT_EQ(reduce1<std::uint16_t>(ReduceOp::min, DataType::float16, 0x3C00, 0xC000), 0xC000);
}

TEST(ModelReduce, UndefinedPairsAreErrors) {
  EXPECT_THROW(reduce1<std::int32_t>(ReduceOp::inc, DataType::int32, 1, 1), ModelError);
  EXPECT_THROW(reduce1<std::uint32_t>(ReduceOp::bit_and, DataType::float32, 1, 1), ModelError);
  EXPECT_THROW(reduce1<std::uint64_t>(ReduceOp::add, DataType::float64, 1, 1), ModelError);
  EXPECT_FALSE(reduce_unsupported_reason(ReduceOp::min, DataType::uint8).empty());
  EXPECT_TRUE(reduce_unsupported_reason(ReduceOp::min, DataType::int64).empty());
  // add on s64 is not in the PTX ISA's table and kills the kernel on H200
  EXPECT_FALSE(reduce_unsupported_reason(ReduceOp::add, DataType::int64).empty());
  EXPECT_TRUE(reduce_unsupported_reason(ReduceOp::add, DataType::uint64).empty());
  EXPECT_EQ(parse_reduce_op("xor"), ReduceOp::bit_xor);
  EXPECT_EQ(name(ReduceOp::bit_and), "and");
  EXPECT_FALSE(parse_reduce_op("mul").has_value());
}

TEST(ModelReduce, TiledAddDropsOutOfBounds) {
  // 4 uint32 in global, box of 8 at 0: elements 4..7 are outside and dropped
  const auto s = tiled(DataType::uint32, 1, {4}, {}, {8});
  std::vector<std::uint8_t> g(16, 0);
  for (int i = 0; i < 4; ++i) g[i * 4] = static_cast<std::uint8_t>(10 * (i + 1));
  std::vector<std::uint8_t> smem(32, 0);
  for (int i = 0; i < 8; ++i) smem[i * 4] = static_cast<std::uint8_t>(i + 1);
  reduce_tiled(s, ReduceOp::add, g, smem, {0});
  EXPECT_EQ(g[0], 11);
  EXPECT_EQ(g[4], 22);
  EXPECT_EQ(g[8], 33);
  EXPECT_EQ(g[12], 44);
  auto f = tiled(DataType::float32, 1, {4}, {}, {8});
  EXPECT_THROW(reduce_tiled(f, ReduceOp::min, g, smem, {0}), ModelError);
}

}  // namespace
}  // namespace tmakit::model
