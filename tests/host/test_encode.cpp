// describe() and encode()'s behaviour without a GPU (the live driver is tests/gpu's job).
#include <gtest/gtest.h>

#include <cstring>

#include "tmakit/host/driver.hpp"
#include "tmakit/host/encode.hpp"
#include "tmakit/host/spec_json.hpp"
#include "tmakit/host/validate.hpp"

namespace tmakit {
namespace {

TensorMapSpec example() {
  return parse_spec_json(
      R"({"dataType":"BFLOAT16","rank":3,"globalAddress":1048576,"globalDim":[64,32,8],)"
      R"("globalStrides":[128,4096],"boxDim":[64,16,2],"elementStrides":[1,2,1],)"
      R"("swizzle":"128B","l2Promotion":"256B"})");
}

TEST(Describe, SpecOnOneLine) {
  EXPECT_EQ(describe(example()),
            "tiled BFLOAT16 rank 3 @0x100000 dim [64, 32, 8] strides [128, 4096] box [64, 16, 2] "
            "elementStrides [1, 2, 1] interleave NONE swizzle 128B l2 256B oobFill NONE");
  TensorMapSpec m = parse_spec_json(
      R"({"encode":"im2col","dataType":"FLOAT16","globalAddress":0,"globalDim":[64,32,32,8],)"
      R"("globalStrides":[128,4096,131072],"pixelBoxLowerCorner":[-1,-1],)"
      R"("pixelBoxUpperCorner":[-1,-1],"channelsPerPixel":64,"pixelsPerColumn":128})");
  EXPECT_EQ(describe(m),
            "im2col FLOAT16 rank 4 @0x0 dim [64, 32, 32, 8] strides [128, 4096, 131072] corners "
            "[-1, -1]..[-1, -1] channels 64 pixels 128 elementStrides [1, 1, 1, 1] interleave "
            "NONE swizzle NONE l2 NONE oobFill NONE");
}

TEST(Describe, EncodedMapAsSixteenQwords) {
  CUtensorMap map{};
  map.opaque[0] = 0x0123456789abcdefull;
  map.opaque[15] = 1;
  const std::string d = describe(map);
  EXPECT_EQ(d.size(), 16u * 16u + 15u);
  EXPECT_EQ(d.substr(0, 17), "0123456789abcdef ");
  EXPECT_EQ(d.substr(d.size() - 16), "0000000000000001");
}

TEST(SpecJson, RoundTrips) {
  const TensorMapSpec s = example();
  EXPECT_EQ(parse_spec_json(spec_to_json(s)), s);
}

TEST(Encode, ValidatesBeforeTheDriver) {
  TensorMapSpec s = example();
  s.box_dim[0] = 65;  // T9 (130 bytes > the 128B span) comes after T7 (130 % 16 != 0)
  try {
    encode(s);
    FAIL() << "encode accepted a spec that breaks T7";
  } catch (const RuleViolation& v) {
    EXPECT_EQ(v.rule_id(), "T7");
  }
}

TEST(Encode, WithoutADriverSaysSo) {
  if (driver_available()) GTEST_SKIP() << "a CUDA driver is present; this checks its absence";
  try {
    encode(example());
    FAIL() << "encode succeeded without a driver";
  } catch (const CudaError& e) {
    EXPECT_NE(std::string(e.what()).find("libcuda.so.1"), std::string::npos) << e.what();
  }
  CUtensorMap map{};
  EXPECT_NE(encode_unchecked(example(), &map), CUDA_SUCCESS);
}

}  // namespace
}  // namespace tmakit
