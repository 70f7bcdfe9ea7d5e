// Every rule of host/validate.cpp: a spec that breaks it, the id and the exact message.
#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <utility>
#include <variant>
#include <string>

#include "tmakit/host/encode.hpp"
#include "tmakit/host/spec_json.hpp"
#include "tmakit/host/validate.hpp"

namespace tmakit {
namespace {

// A valid 2D FLOAT32 tiled map: 1024 x 512, 4 KiB rows, 32 x 32 box.
TensorMapSpec tiled() {
  TensorMapSpec s;
  s.kind = EncodeKind::tiled;
  s.data_type = DataType::float32;
  s.rank = 2;
  s.global_address = 0x7f0000000000;
  s.global_dim = {1024, 512};
  s.global_strides_bytes = {4096};
  s.box_dim = {32, 32};
  return s;
}

// A valid NHWC FLOAT16 im2col map: C=64, W=32, H=32, N=8.
TensorMapSpec im2col() {
  TensorMapSpec s;
  s.kind = EncodeKind::im2col;
  s.data_type = DataType::float16;
  s.rank = 4;
  s.global_address = 0x7f0000000000;
  s.global_dim = {64, 32, 32, 8};
  s.global_strides_bytes = {128, 128 * 32, 128 * 32 * 32};
  s.pixel_box_lower_corner = {-1, -1};
  s.pixel_box_upper_corner = {-1, -1};
  s.channels_per_pixel = 64;
  s.pixels_per_column = 128;
  return s;
}

void expect_broken(const TensorMapSpec& s, const std::string& id, const std::string& message) {
  const auto v = find_violation(s);
  ASSERT_TRUE(v.has_value()) << "expected " << id << " to reject the spec";
  EXPECT_EQ(v->rule_id(), id);
  EXPECT_EQ(std::string(v->what()), id + ": " + message);
  EXPECT_THROW(validate(s), RuleViolation);
}

TEST(Rules, ValidBasesPass) {
  EXPECT_FALSE(find_violation(tiled()).has_value());
  EXPECT_FALSE(find_violation(im2col()).has_value());
  EXPECT_NO_THROW(validate(tiled()));
}

TEST(Rules, TableHasUniqueIdsAndSummaries) {
  std::set<std::string_view> ids;
  for (const Rule& r : rules()) {
    EXPECT_FALSE(r.summary.empty()) << r.id;
    EXPECT_TRUE(ids.insert(r.id).second) << "duplicate rule id " << r.id;
  }
  EXPECT_GE(ids.size(), 18u);
}

TEST(Rules, T2DataType) {
  auto s = tiled();
  s.data_type = static_cast<DataType>(13);
  expect_broken(s, "T2",
                "data type 16U4_ALIGN8B is not a Hopper tensor-map type; fp8 travels as UINT8, "
                "packed 4/6-bit types need Blackwell");
}

TEST(Rules, T3Rank) {
  auto s = tiled();
  s.rank = 6;
  expect_broken(s, "T3",
                "rank = 6 is outside 1..5; fold the extra dimensions into ones whose byte "
                "strides allow it");
  s = tiled();
  s.rank = 0;
  expect_broken(s, "T3",
                "rank = 0 is outside 1..5; a tensor map has at least one dimension: give "
                "globalDim and boxDim an entry per dimension");
  s = tiled();
  s.interleave = Interleave::bytes16;
  expect_broken(s, "T3",
                "rank = 2 with interleave 16B; interleaved maps need rank >= 3: use interleave "
                "NONE or add a dimension");
}

TEST(Rules, I1Rank) {
  auto s = im2col();
  s.rank = 2;
  expect_broken(s, "I1",
                "rank = 2 is outside 3..5; im2col maps are NWC (3), NHWC (4) or NDHWC (5) with "
                "channels innermost");
}

TEST(Rules, T4AddressAlignment) {
  auto s = tiled();
  s.global_address = 0x1008;
  expect_broken(s, "T4",
                "globalAddress = 0x1008 is not 16-byte aligned (address % 16 = 8); use 0x1000 "
                "and offset the coordinates, or allocate with cudaMalloc");
  s = tiled();
  s.rank = 3;
  s.global_dim = {64, 4, 4};
  s.global_strides_bytes = {256, 1024};
  s.box_dim = {8, 4, 4};
  s.interleave = Interleave::bytes32;
  s.global_address = 0x1010;
  expect_broken(s, "T4",
                "globalAddress = 0x1010 is not 32-byte aligned (address % 32 = 16); use 0x1000 "
                "and offset the coordinates, or allocate with cudaMalloc");
}

TEST(Rules, T5GlobalDims) {
  auto s = tiled();
  s.global_dim[1] = 0;
  expect_broken(s, "T5", "globalDim[1] = 0 is outside 1..2^32 (4294967296); an empty tensor "
                         "needs no copy (the least size is 1)");
  s.global_dim[1] = (std::uint64_t{1} << 32) + 1;
  expect_broken(s, "T5",
                "globalDim[1] = 4294967297 is outside 1..2^32 (4294967296); split the "
                "dimension into several (the largest size is 4294967296)");
  s.global_dim[1] = ~std::uint64_t{0};
  expect_broken(s, "T5",
                "globalDim[1] = 18446744073709551615 is outside 1..2^32 (4294967296); "
                "split the dimension into several (the largest size is 4294967296)");
  s.global_dim[1] = std::uint64_t{1} << 32;  // the upper bound itself is allowed
  EXPECT_FALSE(find_violation(s).has_value());
}

TEST(Rules, T6GlobalStrides) {
  auto s = tiled();
  s.global_strides_bytes[0] = 4100;
  expect_broken(s, "T6", "globalStrides[0] = 4100 bytes (dimension 1) is not a multiple of 16; "
                         "pad to 4112 bytes");
  s.global_strides_bytes[0] = std::uint64_t{1} << 40;
  expect_broken(s, "T6",
                "globalStrides[0] = 1099511627776 bytes is not below 2^40 (1099511627776): no "
                "tensor that large is addressable by TMA; use 1099511627760 bytes");
}

TEST(Rules, T7BoxDims) {
  auto s = tiled();
  s.box_dim[1] = 257;
  expect_broken(s, "T7", "boxDim[1] = 257 is outside 1..256; cover larger tiles with several "
                         "copies of 256");
  s = tiled();
  s.box_dim[0] = 25;
  expect_broken(s, "T7", "boxDim[0]*4 = 100 bytes is not a multiple of 16; use 24 or 28");
  s.box_dim[0] = 3;  // below one chunk: only the larger width is offered
  expect_broken(s, "T7", "boxDim[0]*4 = 12 bytes is not a multiple of 16; use 4");
  // 32 would make the box 235520 bytes, which X1 refuses: the message offers 16 alone
  s = tiled();
  s.data_type = DataType::uint8;
  s.rank = 3;
  s.global_dim = {4096, 4096, 4096};
  s.global_strides_bytes = {65536, std::uint64_t{1} << 28};
  s.box_dim = {17, 64, 115};
  expect_broken(s, "T7", "boxDim[0]*1 = 17 bytes is not a multiple of 16; use 16");
}

TEST(Rules, T7AppliesWithInterleaveToo) {
  // Documented for interleave NONE only; the driver refuses it for 16B/32B as well.
  auto s = tiled();
  s.rank = 3;
  s.global_dim = {64, 4, 4};
  s.global_strides_bytes = {256, 1024};
  s.box_dim = {6, 4, 4};
  s.interleave = Interleave::bytes16;
  expect_broken(s, "T7", "boxDim[0]*4 = 24 bytes is not a multiple of 16; use 4 or 8");
}

TEST(Rules, T8ElementStrides) {
  auto s = tiled();
  s.element_strides[1] = 9;
  expect_broken(s, "T8", "elementStrides[1] = 9 is outside 1..8; use 8 (1 for a dense box)");
  auto m = im2col();
  m.element_strides[0] = 0;
  expect_broken(m, "I6", "elementStrides[0] = 0 is outside 1..8; use 1 for a dense box");
}

TEST(Rules, T9SwizzleSpan) {
  auto s = tiled();
  s.box_dim[0] = 64;  // 256 bytes
  s.swizzle = Swizzle::bytes64;
  expect_broken(s, "T9",
                "boxDim[0]*4 = 256 bytes exceeds the swizzle 64B span of 64 bytes; use "
                "boxDim[0] <= 16 or a wider swizzle and several copies along dimension 0");
  s.swizzle = Swizzle::bytes128;
  expect_broken(s, "T9",
                "boxDim[0]*4 = 256 bytes exceeds the swizzle 128B span of 128 bytes; use "
                "boxDim[0] <= 32 and several copies along dimension 0");
  auto m = im2col();
  m.swizzle = Swizzle::bytes32;
  expect_broken(m, "I7",
                "channelsPerPixel*2 = 128 bytes exceeds the swizzle 32B span of 32 bytes; use "
                "channelsPerPixel <= 16 or a wider swizzle and several copies along "
                "dimension 0");
}

TEST(Rules, T12Enums) {
  // each value outside its enum, named in the message (by its name where it has one)
  const std::pair<void (*)(TensorMapSpec&), const char*> cases[] = {
      {[](TensorMapSpec& s) { s.l2_promotion = static_cast<L2Promotion>(4); },
       "l2Promotion = 4 is not NONE/64B/128B/256B"},
      {[](TensorMapSpec& s) { s.swizzle = static_cast<Swizzle>(4); },
       "swizzle = 128B_ATOM_32B is not NONE/32B/64B/128B"},
      {[](TensorMapSpec& s) { s.interleave = static_cast<Interleave>(7); },
       "interleave = 7 is not NONE/16B/32B"},
      {[](TensorMapSpec& s) { s.oob_fill = static_cast<OobFill>(5); },
       "oobFill = 5 is not NONE/NAN_REQUEST_ZERO_FMA"},
      {[](TensorMapSpec& s) { s.direction = static_cast<Direction>(200); },
       "direction = 200 is not any/load/store/reduce"},
  };
  for (const auto& [spoil, message] : cases) {
    auto s = tiled();
    spoil(s);
    expect_broken(s, "T12", message);
  }
}

TEST(Rules, T12RefusesAnEncodeKindOutsideTheEnum) {
  // It was judged by the im2col rules without I3, X3 and X4, and passed.
  auto s = tiled();
  s.kind = static_cast<EncodeKind>(3);
  for (Arch a : {Arch::sm_90a, Arch::sm_100a, Arch::sm_103a, Arch::sm_120a}) {
    const auto v = find_violation(s, a);
    ASSERT_TRUE(v.has_value()) << name(a);
    EXPECT_EQ(std::string(v->what()), "T12: encode = 3 is not tiled/im2col/im2col_wide");
  }
  EXPECT_FALSE(diagnose(s)->fix.has_value());
}

TEST(Rules, NamesOfValuesOutsideAnEnumAreAQuestionMark) {
  // (indexing the name tables with them read past their ends: describe() crashed)
  EXPECT_EQ(name(static_cast<Interleave>(9)), "?");
  EXPECT_EQ(name(static_cast<L2Promotion>(200)), "?");
  EXPECT_EQ(name(static_cast<OobFill>(5)), "?");
  auto s = tiled();
  s.l2_promotion = static_cast<L2Promotion>(200);
  s.oob_fill = static_cast<OobFill>(5);
  EXPECT_NE(describe(s).find("?"), std::string::npos);
  EXPECT_NE(spec_to_json(s).find(R"("oobFill":"?")"), std::string::npos);
}

TEST(Rules, BoxBytesSaturatesPastSixtyFourBits) {
  auto s = tiled();
  s.data_type = DataType::uint8;
  s.rank = 4;
  s.box_dim = {65536, 65536, 65536, 65536, 1};  // 2^64 bytes, which wrapped to 0
  EXPECT_EQ(box_bytes(s), ~std::uint64_t{0});
  s.data_type = DataType::packed_u4_align8;
  EXPECT_EQ(box_bytes(s), ~std::uint64_t{0});
  s.box_dim = {256, 256, 256, 256, 256};
  s.rank = 5;
  s.data_type = DataType::float64;
  EXPECT_EQ(box_bytes(s), std::uint64_t{8} << 40);
}

TEST(Rules, T13NanFill) {
  auto s = tiled();
  s.data_type = DataType::int32;
  s.oob_fill = OobFill::nan_request_zero_fma;
  expect_broken(s, "T13", "oobFill NAN_REQUEST_ZERO_FMA with integer type INT32; use oobFill "
                          "NONE (zero fill) or a floating-point type");
  s.data_type = DataType::bfloat16;
  s.box_dim[0] = 64;
  EXPECT_FALSE(find_violation(s).has_value());
}

TEST(Rules, I3Corners) {
  auto m = im2col();
  m.pixel_box_upper_corner[1] = 128;
  expect_broken(m, "I3", "pixelBoxUpperCorner[1] = 128 is outside [-128, 127] for rank 4; use 127");
  m = im2col();
  m.rank = 5;
  m.global_dim = {64, 8, 8, 8, 2};
  m.global_strides_bytes = {128, 1024, 8192, 65536};
  m.pixel_box_lower_corner = {-17, 0, 0};
  expect_broken(m, "I3", "pixelBoxLowerCorner[0] = -17 is outside [-16, 15] for rank 5; use -16");
}

TEST(Rules, I4I5ChannelsAndPixels) {
  auto m = im2col();
  m.channels_per_pixel = 0;
  expect_broken(m, "I4", "channelsPerPixel = 0 is outside 1..256; use 8");
  m = im2col();
  m.pixels_per_column = 1025;
  expect_broken(m, "I5", "pixelsPerColumn = 1025 is outside 1..1024; use 1024");
}

TEST(Rules, X1BoxBytes) {
  auto s = tiled();
  s.rank = 3;
  s.global_dim = {1024, 512, 8};
  s.global_strides_bytes = {4096, 4096 * 512};
  s.box_dim = {32, 256, 8};  // 32*256*8*4 = 262144 bytes
  expect_broken(s, "X1",
                "the box is 262144 bytes (elementSize 4 x prod(boxDim / elementStrides)); the "
                "driver allows at most 233472 (228 KiB): shrink boxDim[2] to 7 or split the copy");
  s.box_dim = {32, 228, 8};  // exactly 228 KiB
  EXPECT_FALSE(find_violation(s).has_value());
  // The driver rounds boxDim / elementStrides down, even to zero.
  s.box_dim = {32, 256, 8};
  s.element_strides = {1, 1, 2};
  EXPECT_FALSE(find_violation(s).has_value());
  s.box_dim = {32, 256, 1};
  s.element_strides = {1, 1, 2};
  EXPECT_FALSE(find_violation(s).has_value());
}

TEST(Rules, X2AddressRange) {
  auto s = tiled();
  s.global_address = std::uint64_t{1} << 57;
  expect_broken(s, "X2",
                "globalAddress = 0x200000000000000 is at or above 2^57, outside the GPU's "
                "virtual address space; pass a device pointer (the highest allowed is "
                "0x1fffffffffffff0)");
  s.global_address = (std::uint64_t{1} << 57) - 16;
  EXPECT_FALSE(find_violation(s).has_value());
}

TEST(Rules, X3Im2colRowsAndBox) {
  auto m = im2col();
  m.channels_per_pixel = 12;  // 24 bytes
  expect_broken(m, "X3", "channelsPerPixel*2 = 24 bytes is not a multiple of 16; use 8 or 16");
  m = im2col();
  m.channels_per_pixel = 256;
  m.pixels_per_column = 1024;
  expect_broken(m, "X3",
                "the im2col box is 524288 bytes (channelsPerPixel 256 x pixelsPerColumn 1024 x "
                "2); the driver allows at most 233472 (228 KiB): lower pixelsPerColumn to 456");
  // 60 channels would make the box 245760 bytes, past X3's own bound: 56 alone is offered
  m = im2col();
  m.data_type = DataType::float32;
  m.global_strides_bytes = {256, 256 * 32, 256 * 32 * 32};
  m.channels_per_pixel = 57;
  m.pixels_per_column = 1024;
  expect_broken(m, "X3", "channelsPerPixel*4 = 228 bytes is not a multiple of 16; use 56");
}

TEST(Rules, X4Im2colExtent) {
  auto m = im2col();
  m.pixel_box_lower_corner = {20, 0};
  m.pixel_box_upper_corner = {-12, 0};  // 32 - 12 - 20 = 0 pixels along W
  expect_broken(m, "X4",
                "spatial dimension 1: globalDim[1] + pixelBoxUpperCorner[0] - "
                "pixelBoxLowerCorner[0] = 32 + -12 - 20 leaves no pixel; raise "
                "pixelBoxUpperCorner[0] to -11");
  m.pixel_box_upper_corner = {-11, 0};
  EXPECT_FALSE(find_violation(m).has_value());
  // globalDim + upper wraps to 32-bit signed: 2^31 + 5 is negative there.
  m = im2col();
  m.global_dim[1] = std::uint64_t{1} << 31;
  m.pixel_box_lower_corner = {0, 0};
  m.pixel_box_upper_corner = {5, 0};
  expect_broken(m, "X4",
                "spatial dimension 1: globalDim[1] + pixelBoxUpperCorner[0] - "
                "pixelBoxLowerCorner[0] = 2147483648 + 5 - 0 leaves no pixel (the driver wraps "
                "globalDim + upper to 32-bit signed: -2147483643); lower "
                "pixelBoxUpperCorner[0] to -1 (so that the sum does not wrap)");
  m.pixel_box_upper_corner = {-5, 0};
  EXPECT_FALSE(find_violation(m).has_value());
}

TEST(Rules, X4InterleavedPairsCornerWithPreviousDim) {
  auto m = im2col();
  m.interleave = Interleave::bytes16;
  m.channels_per_pixel = 8;
  m.global_dim = {4, 32, 32, 8};  // corner 0 is checked against globalDim[0] = 4
  m.global_strides_bytes = {64, 64 * 32, 64 * 32 * 32};
  m.pixel_box_lower_corner = {4, 0};
  m.pixel_box_upper_corner = {0, 0};
  expect_broken(m, "X4",
                "spatial dimension 1: globalDim[0] + pixelBoxUpperCorner[0] - "
                "pixelBoxLowerCorner[0] = 4 + 0 - 4 leaves no pixel; raise "
                "pixelBoxUpperCorner[0] to 1");
}

// ---- fixes: every suggestion is data, mends its rule and is refused by no other rule ----------

// The spec breaks `id`; its fix sets `field` (entry `index`) to `value`; the fixed spec passes.
void expect_fix(const TensorMapSpec& s, const std::string& id, const std::string& field,
                std::optional<std::size_t> index,
                std::variant<std::uint64_t, std::int64_t, std::string> value) {
  const auto f = diagnose(s);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->violation.rule_id(), id);
  ASSERT_TRUE(f->fix.has_value()) << f->violation.what();
  EXPECT_EQ(f->fix->field, field);
  EXPECT_EQ(f->fix->index, index);
  EXPECT_EQ(f->fix->value, value) << f->violation.what();
  const auto fixed = with_fix(s, *f->fix);
  EXPECT_FALSE(find_violation(fixed).has_value()) << find_violation(fixed)->what();
}

TEST(RuleFixes, StridesNeverOverflowAndStayBelow2To40) {
  auto s = tiled();
  s.global_strides_bytes[0] = ~std::uint64_t{0};  // 2^64 - 1: padding up would wrap to 0
  expect_fix(s, "T6", "globalStrides", 0, std::uint64_t{1099511627760});
  EXPECT_NE(std::string(find_violation(s)->what()).find("use 1099511627760 bytes"),
            std::string::npos);
  s.global_strides_bytes[0] = 1099511627775;  // 2^40 - 1: padding up reaches 2^40, refused
  expect_fix(s, "T6", "globalStrides", 0, std::uint64_t{1099511627760});
  s.global_strides_bytes[0] = 4100;
  expect_fix(s, "T6", "globalStrides", 0, std::uint64_t{4112});
}

TEST(RuleFixes, AddressesStayBelow2To57) {
  auto s = tiled();
  s.global_address = (std::uint64_t{1} << 57) + 1;  // rounding down gives 2^57, which X2 refuses
  expect_fix(s, "T4", "globalAddress", std::nullopt, std::uint64_t{(std::uint64_t{1} << 57) - 16});
  EXPECT_NE(std::string(find_violation(s)->what()).find("use 0x1fffffffffffff0"),
            std::string::npos);
  s.global_address = 0x1008;
  expect_fix(s, "T4", "globalAddress", std::nullopt, std::uint64_t{0x1000});
  s.global_address = ~std::uint64_t{0} - 15;
  expect_fix(s, "X2", "globalAddress", std::nullopt, std::uint64_t{(std::uint64_t{1} << 57) - 16});
}

TEST(RuleFixes, EnumsAndBoxes) {
  auto s = tiled();
  s.interleave = Interleave::bytes16;
  expect_fix(s, "T3", "interleave", std::nullopt, std::string("NONE"));
  s = tiled();
  s.box_dim[0] = 25;
  expect_fix(s, "T7", "boxDim", 0, std::uint64_t{24});
  // 256 x 256 FLOAT32 with 128B swizzle: the row fix (32) keeps T7 and X1 passing
  s = tiled();
  s.swizzle = Swizzle::bytes128;
  s.box_dim = {256, 256};
  expect_fix(s, "T9", "boxDim", 0, std::uint64_t{32});
  s = tiled();
  s.data_type = DataType::int32;
  s.oob_fill = OobFill::nan_request_zero_fma;
  expect_fix(s, "T13", "oobFill", std::nullopt, std::string("NONE"));
}

TEST(RuleFixes, Im2colCornersAndWrappingDimensions) {
  auto m = im2col();
  m.global_dim[1] = 3000000000;  // wraps negative for every corner in [-128, 127]
  const auto f = diagnose(m);
  ASSERT_TRUE(f && f->fix);
  EXPECT_EQ(f->violation.rule_id(), "X4");
  EXPECT_EQ(f->fix->field, "globalDim");
  const auto fixed = with_fix(m, *f->fix);
  EXPECT_FALSE(find_violation(fixed).has_value());
  m = im2col();
  m.pixel_box_lower_corner = {20, 0};
  m.pixel_box_upper_corner = {-12, 0};
  expect_fix(m, "X4", "pixelBoxUpperCorner", 0, std::int64_t{-11});
}

TEST(RuleFixes, NearestPassingSpecMendsEveryRuleInTurn) {
  auto s = tiled();
  s.global_address = 0x1008;
  s.global_strides_bytes[0] = 4100;
  s.box_dim = {25, 300};
  s.element_strides = {0, 9};
  std::string why;
  const auto fixed = nearest_passing_spec(s, &why);
  ASSERT_TRUE(fixed.has_value()) << why;
  EXPECT_FALSE(find_violation(*fixed).has_value());
  EXPECT_EQ(fixed->global_address, 0x1000u);
  EXPECT_EQ(fixed->box_dim[0], 24u);
  EXPECT_EQ(fixed->box_dim[1], 256u);
  EXPECT_EQ(nearest_passing_spec(tiled()), tiled());  // a passing spec is its own answer
  s = tiled();
  s.rank = 7;  // no single field mends a rank
  EXPECT_FALSE(nearest_passing_spec(s, &why).has_value());
  EXPECT_EQ(why.rfind("T3: rank = 7", 0), 0u) << why;
}

TEST(RuleFixes, WithFixRefusesFieldsTheSpecLacks) {
  EXPECT_THROW(with_fix(tiled(), {"rank", std::nullopt, std::uint64_t{3}}), Error);
  EXPECT_THROW(with_fix(tiled(), {"boxDim", 9, std::uint64_t{3}}), Error);
  EXPECT_THROW(with_fix(tiled(), {"boxDim", std::nullopt, std::uint64_t{3}}), Error);
  EXPECT_THROW(with_fix(tiled(), {"swizzle", std::nullopt, std::string("512B")}), Error);
  EXPECT_THROW(with_fix(tiled(), {"boxDim", 0, std::uint64_t{1} << 32}), Error);  // 32-bit field
  EXPECT_THROW(with_fix(tiled(), {"globalDim", 0, std::int64_t{-1}}), Error);
  EXPECT_EQ(with_fix(tiled(), {"globalAddress", std::nullopt, ~std::uint64_t{0}}).global_address,
            ~std::uint64_t{0});
  EXPECT_EQ(with_fix(tiled(), {"swizzle", std::nullopt, std::string("64B")}).swizzle,
            Swizzle::bytes64);
}

}  // namespace
}  // namespace tmakit
