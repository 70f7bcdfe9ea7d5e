#include <gtest/gtest.h>

#include <string>

#include "tmakit/core/error.hpp"
#include "tmakit/host/tensor_map_spec.hpp"

namespace tmakit {
namespace {

TEST(DataType, SizesAndNamesRoundTrip) {
  for (int i = 0; i < kDataTypeCount; ++i) {
    const auto t = static_cast<DataType>(i);
    EXPECT_EQ(parse_data_type(name(t)), t) << name(t);
    EXPECT_GT(element_bytes(t), 0);
  }
  EXPECT_EQ(element_bytes(DataType::bfloat16), 2);
  EXPECT_EQ(element_bytes(DataType::tfloat32_ftz), 4);
  EXPECT_EQ(element_bytes(DataType::int64), 8);
  EXPECT_FALSE(parse_data_type("FLOAT8").has_value());
  EXPECT_TRUE(is_floating(DataType::bfloat16));
  EXPECT_FALSE(is_floating(DataType::int32));
}

TEST(TensorMapSpec, EnumNamesRoundTrip) {
  EXPECT_EQ(parse_swizzle("128B"), Swizzle::bytes128);
  EXPECT_EQ(name(Swizzle::bytes64), "64B");
  EXPECT_EQ(parse_interleave("32B"), Interleave::bytes32);
  EXPECT_EQ(parse_l2_promotion("256B"), L2Promotion::bytes256);
  EXPECT_EQ(parse_oob_fill("NAN_REQUEST_ZERO_FMA"), OobFill::nan_request_zero_fma);
  EXPECT_EQ(parse_encode_kind("im2col"), EncodeKind::im2col);
  EXPECT_FALSE(parse_swizzle("128").has_value());
}

TEST(TensorMapSpec, BoxBytesCountsElementStrides) {
  TensorMapSpec s;
  s.data_type = DataType::float32;
  s.rank = 2;
  s.box_dim = {32, 10};
  s.element_strides = {1, 3, 1, 1, 1};
  EXPECT_EQ(box_elements(s, 1), 4u);      // ceil(10 / 3)
  EXPECT_EQ(box_bytes(s), 4u * 32u * 4u);
}

TEST(TensorMapSpec, BoxBytesIgnoresDimensionZeroStrideWithoutInterleave) {
  TensorMapSpec s;
  s.data_type = DataType::uint16;
  s.rank = 2;
  s.box_dim = {16, 4};
  s.element_strides = {4, 2, 1, 1, 1};
  EXPECT_EQ(box_elements(s, 0), 16u);  // not ceil(16 / 4)
  EXPECT_EQ(box_bytes(s), 2u * 16u * 2u);
  s.interleave = Interleave::bytes16;
  EXPECT_EQ(box_elements(s, 0), 4u);
}

TEST(TensorMapSpec, BoxBytesWithInterleaveCountsSlicesAndSkipsDimensionRankMinus2) {
  // measured on H200 (docs/hardware.md H12)
  TensorMapSpec s;
  s.data_type = DataType::float32;
  s.rank = 4;
  s.box_dim = {8, 5, 6, 2};
  s.element_strides = {2, 1, 1, 1, 1};
  s.interleave = Interleave::bytes32;
  EXPECT_EQ(box_elements(s, 0), 4u);  // slices
  EXPECT_EQ(box_elements(s, 2), 1u);  // rank - 2: not walked
  EXPECT_EQ(box_bytes(s), 32u * 4u * 5u * 2u);
}

TEST(TensorMapSpec, BoxElementsRefusesADimensionPastTheArrays) {
  TensorMapSpec s;
  s.box_dim = {32, 8};
  EXPECT_EQ(box_elements(s, 4), 0u);  // a dimension past the rank: its box, 0
  for (int d : {-1, 5, 1000}) {
    try {
      box_elements(s, d);
      ADD_FAILURE() << "d = " << d << " was read";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), "box_elements: dimension d = " + std::to_string(d) +
                                           " is outside 0..4 (a tensor map has at most 5 "
                                           "dimensions)");
    }
  }
}

TEST(TensorMapSpec, BoxBytesOfAnInvalidRankIsZero) {
  TensorMapSpec s;
  s.data_type = DataType::float32;
  s.box_dim = {32, 8, 2, 2, 2};
  for (std::uint32_t rank : {0u, 6u, 7u, 0xffffffffu}) {
    s.rank = rank;
    EXPECT_EQ(box_bytes(s), 0u) << rank;
  }
  s.rank = 5;
  EXPECT_EQ(box_bytes(s), 4u * 32 * 8 * 2 * 2 * 2);
}

}  // namespace
}  // namespace tmakit
