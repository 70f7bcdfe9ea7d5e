// describe() and encode()'s behaviour without a GPU (the live driver is tests/gpu's job).
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

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

// What parse_json_line says of a line ("parsed" when it takes it).
std::string parse_message(const std::string& text) {
  try {
    parse_json_line(text);
  } catch (const ParseError& e) {
    return std::string(e.what());
  }
  return std::string("parsed");
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

// Whether `text` is well-formed UTF-8 (no sequence cut short, no stray continuation byte).
bool valid_utf8(const std::string& text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > text.size()) return false;
    for (std::size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

TEST(SpecJson, MessagesQuotingNonAsciiTextNeverCutACharacter) {
  // NOTE: the Python package turns messages into str: a character cut in half would raise
  // UnicodeDecodeError in place of the message. Every cut offset, for 2-, 3- and 4-byte ones.
  for (const std::string ch : {"\u00e9", "\u201c", "\U0001F600"}) {
    for (std::size_t prefix = 0; prefix < 8; ++prefix) {
      std::string text(prefix, 'a');
      while (text.size() < 200) text += ch;
      const std::string tail = R"(,"globalAddress":0,"globalDim":[16],"boxDim":[4]})";
      for (const std::string& line : {R"({"dataType":")" + text + "\"" + tail,
                                      R"({"dataType":"FLOAT32",")" + text + R"(":1e999)" + tail}) {
        std::string message;
        try {
          parse_spec_json(line);
        } catch (const ParseError& e) {
          message = e.what();
        }
        ASSERT_FALSE(message.empty()) << line;
        EXPECT_TRUE(valid_utf8(message)) << message;
        EXPECT_NE(message.find("..."), std::string::npos) << "the text was cut: " << message;
      }
    }
  }
}

TEST(SpecJson, RewriteKeepsTheKeysOrderAndTakesLinearTimeInThem) {
  // boxDim[0] = 25 FLOAT32s breaks T7; the mended line keeps every other key where it was,
  // a repeated key where it first appears with its last value, as a JSON object keeps it
  const std::string head = R"({"z":1,"dataType":"FLOAT32","globalAddress":4096,"z":2,)";
  const std::string tail = R"("globalDim":[1024,512],"globalStrides":[4096],"boxDim":[25,32]})";
  const TensorMapSpec from = parse_spec_json(head + tail);
  TensorMapSpec to = from;
  to.box_dim[0] = 24;
  to.swizzle = Swizzle::bytes32;
  EXPECT_EQ(rewrite_spec_json(head + tail, from, to),
            R"({"z":2,"dataType":"FLOAT32","globalAddress":4096,"globalDim":[1024,512],)"
            R"("globalStrides":[4096],"boxDim":[24,32],"swizzle":"32B"})");
  // 90,000 keys in a line under 1 MiB: quadratic in them (a linear search per key), this took
  // minutes
  std::string many = R"({"dataType":"FLOAT32","globalAddress":4096,)";
  for (int i = 0; i < 90000; ++i) many += "\"k" + std::to_string(i) + "\":0,";
  const auto started = std::chrono::steady_clock::now();
  const std::string mended = rewrite_spec_json(many + tail, from, to);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_LT(seconds, 5.0);
  EXPECT_EQ(mended.substr(0, 57), R"({"dataType":"FLOAT32","globalAddress":4096,"k0":0,"k1":0,)");
  EXPECT_NE(mended.find(R"("k89999":0,"globalDim":[1024,512])"), std::string::npos);
  EXPECT_EQ(parse_spec_json(mended).box_dim[0], 24u);
}

TEST(SpecJson, ALineOfManyObjectsParsesInLinearTime) {
  // 1 MiB of "{}," in one array: nlohmann's callback parser scanned the whole array each time
  // an object closed, 16 s for this line (33 s through rewrite_spec_json, which parses twice).
  const std::string head = R"({"x":[)";
  const std::string tail = R"(],"dataType":"FLOAT32","globalAddress":4096,"globalDim":[16],)"
                           R"("boxDim":[5]})";
  std::string line = head;
  while (line.size() + 3 + tail.size() <= kMaxLineBytes) line += "{},";
  line += "{}" + tail;
  ASSERT_LE(line.size(), kMaxLineBytes);
  const auto started = std::chrono::steady_clock::now();
  const nlohmann::json parsed = parse_json_line(line);
  const TensorMapSpec from = spec_from_json(parsed);
  TensorMapSpec to = from;
  to.box_dim[0] = 4;
  const std::string mended = rewrite_spec_json(line, from, to);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_LT(seconds, 2.0);
  EXPECT_EQ(parsed["x"].size(), (line.size() - head.size() - tail.size() + 1) / 3);
  EXPECT_EQ(parse_spec_json(mended).box_dim[0], 4u);
  // the limits and their messages stay
  std::string deep = R"({"coords":)" + std::string(17, '[') + std::string(17, ']') + "}";
  EXPECT_THROW(
      {
        try {
          parse_json_line(deep);
        } catch (const ParseError& e) {
          EXPECT_STREQ(e.what(), "coords: nested deeper than 16 levels of arrays and objects");
          throw;
        }
      },
      ParseError);
  deep = R"({"coords":)" + std::string(15, '[') + std::string(15, ']') + "}";
  EXPECT_NO_THROW(parse_json_line(deep));
  EXPECT_EQ(parse_message(R"({"a":1,"b":[1,2,1e999]})"),
            "b[2]: 1e999 is too large for any number");
  EXPECT_EQ(parse_message(R"({"a":[[1],{"c":[2]},1e999]})"),
            "a[2]: 1e999 is too large for any number");
  EXPECT_EQ(parse_message(R"({"a":x})").rfind("invalid JSON at byte 6: ", 0), 0u);
  EXPECT_EQ(parse_message(R"({"a":1}x)").rfind("invalid JSON at byte 8: ", 0), 0u);
}

TEST(SpecJson, BytesCountFromOneAndEmptyLinesSaySo) {
  // the first byte is byte 1, for a NUL as for a syntax error
  EXPECT_EQ(parse_message(std::string("{\0}", 3)),
            "byte 2 of the line is NUL; a spec line is text");
  EXPECT_EQ(parse_message("x").rfind("invalid JSON at byte 1: ", 0), 0u);
  EXPECT_EQ(parse_message(""), "the line is empty; a spec line is one JSON object");
  EXPECT_EQ(parse_message(" \t\r"), "the line is empty; a spec line is one JSON object");
}

TEST(SpecJson, CoordsRefuseARankPastTheArray) {
  const auto o = nlohmann::json::parse(R"({"coords":[1,2,3,4,5,6,7,8,9]})");
  for (std::uint32_t rank : {0u, 6u, 9u}) {
    try {
      coords_from_json(o, rank);
      ADD_FAILURE() << "rank " << rank << " was read";
    } catch (const ParseError& e) {
      EXPECT_EQ(std::string(e.what()), "coords: rank " + std::to_string(rank) +
                                           " is outside 1..5; validate the spec before reading "
                                           "its coords");
    }
  }
  const auto five = coords_from_json(nlohmann::json::parse(R"({"coords":[1,2,3,4,-5]})"), 5);
  EXPECT_EQ(five[4], -5);
}

TEST(SpecJson, RewriteChangesTheTypeTheRankAndTheEncode) {
  const std::string line =
      R"({"encode":"tiled","note":"kept","dataType":"FLOAT32","rank":2,"globalAddress":4096,)"
      R"("globalDim":[64,64],"globalStrides":[256],"boxDim":[32,1],"elementStrides":[1,1]})";
  const TensorMapSpec from = parse_spec_json(line);
  // the data type
  TensorMapSpec to = from;
  to.data_type = DataType::float16;
  EXPECT_EQ(rewrite_spec_json(line, from, to),
            R"({"encode":"tiled","note":"kept","dataType":"FLOAT16","rank":2,"globalAddress":4096,)"
            R"("globalDim":[64,64],"globalStrides":[256],"boxDim":[32,1],"elementStrides":[1,1]})");
  // the rank: every array is written whole, entries equal to the defaults too
  to = from;
  to.rank = 3;
  to.global_dim[2] = 1;
  to.global_strides_bytes[1] = 16384;
  to.box_dim[2] = 1;
  std::string out = rewrite_spec_json(line, from, to);
  EXPECT_EQ(out,
            R"({"encode":"tiled","note":"kept","dataType":"FLOAT32","rank":3,"globalAddress":4096,)"
            R"("globalDim":[64,64,1],"globalStrides":[256,16384],"boxDim":[32,1,1],)"
            R"("elementStrides":[1,1,1]})");
  EXPECT_EQ(parse_spec_json(out), to);
  // without a "rank" key the arrays' length says it
  const std::string no_rank = R"({"dataType":"FLOAT32","globalAddress":4096,"globalDim":[64,64],)"
                              R"("globalStrides":[256],"boxDim":[32,1]})";
  to = parse_spec_json(no_rank);
  to.rank = 1;
  out = rewrite_spec_json(no_rank, parse_spec_json(no_rank), to);
  EXPECT_EQ(out, R"({"dataType":"FLOAT32","globalAddress":4096,"globalDim":[64],)"
                 R"("globalStrides":[],"boxDim":[32]})");
  EXPECT_EQ(parse_spec_json(out).rank, 1u);
  // the encode kind: every key the new kind reads is written, the old kind's stay (ignored)
  to = from;
  to.kind = EncodeKind::im2col;
  to.rank = 3;
  to.global_dim[2] = 4;
  to.global_strides_bytes[1] = 16384;
  to.channels_per_pixel = 64;
  to.pixels_per_column = 32;
  out = rewrite_spec_json(line, from, to);
  EXPECT_EQ(out, R"({"encode":"im2col","note":"kept","dataType":"FLOAT32","rank":3,)"
                 R"("globalAddress":4096,"globalDim":[64,64,4],"globalStrides":[256,16384],)"
                 R"("boxDim":[32,1],"elementStrides":[1,1,1],"pixelBoxLowerCorner":[0],)"
                 R"("pixelBoxUpperCorner":[0],"channelsPerPixel":64,"pixelsPerColumn":32})");
  TensorMapSpec back = parse_spec_json(out);
  back.box_dim = to.box_dim;  // not an im2col field
  EXPECT_EQ(back, to);
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
