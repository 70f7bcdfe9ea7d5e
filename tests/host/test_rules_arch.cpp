// The rules per architecture: Blackwell's encodings (packed types, 128B_ATOM_* swizzles,
// im2col-wide, gather4/scatter4) judged for sm_90a, sm_100a, sm_103a and sm_120a, each with
// its id and exact message, and the fixes that mend them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tmakit/host/spec_json.hpp"
#include "tmakit/host/validate.hpp"

namespace tmakit {
namespace {

// `ok` or "<id>: <message>", as `tmakit check` prints after "rejected ".
std::string verdict(const std::string& line, Arch arch) {
  const auto v = find_violation(parse_spec_json(line, arch), arch);
  return v ? std::string(v->what()) : "ok";
}

const std::string kU4 = R"({"dataType":"16U4_ALIGN8B","globalAddress":4096,"globalDim":[1024,64],)"
                        R"("globalStrides":[512],"boxDim":[64,16])";
const std::string kU4Padded =
    R"({"dataType":"16U4_ALIGN16B","globalAddress":4096,"globalDim":[1024,64],)"
    R"("globalStrides":[512],"boxDim":[128,16])";
const std::string kU6 = R"({"dataType":"16U6_ALIGN16B","globalAddress":4096,"globalDim":[1024,64],)"
                        R"("globalStrides":[768],"boxDim":[128,16])";
const std::string kHalf = R"({"dataType":"FLOAT16","globalAddress":4096,"globalDim":[1024,64],)"
                          R"("globalStrides":[2048],"boxDim":[64,16])";
const std::string kWide =
    R"({"encode":"im2col_wide","dataType":"FLOAT16","globalAddress":4096,)"
    R"("globalDim":[64,32,32,8],"globalStrides":[128,4096,131072],)"
    R"("pixelBoxLowerCornerWidth":-1,"pixelBoxUpperCornerWidth":-1,"channelsPerPixel":64,)"
    R"("pixelsPerColumn":128)";

// `line` with its first `from` replaced by `to`.
std::string sub(std::string line, const std::string& from, const std::string& to) {
  const auto at = line.find(from);
  if (at != std::string::npos) line.replace(at, from.size(), to);
  return line;
}

std::string with(const std::string& base, const std::string& more) {
  return base + (more.empty() ? "" : "," + more) + "}";
}

TEST(RulesArch, NamesAndComputeCapabilities) {
  for (Arch a : kArchs) EXPECT_EQ(parse_arch(name(a)), a);
  EXPECT_FALSE(parse_arch("sm_90").has_value());
  EXPECT_EQ(arch_names(), "sm_90a, sm_100a, sm_103a, sm_120a");
  EXPECT_EQ(arch_of_compute_capability(9, 0), Arch::sm_90a);
  EXPECT_EQ(arch_of_compute_capability(10, 0), Arch::sm_100a);
  EXPECT_EQ(arch_of_compute_capability(10, 3), Arch::sm_103a);
  EXPECT_EQ(arch_of_compute_capability(12, 1), Arch::sm_120a);
  EXPECT_FALSE(arch_of_compute_capability(8, 0).has_value());
}

TEST(RulesArch, HopperRefusesEveryBlackwellEncoding) {
  const Arch h = Arch::sm_90a;
  const std::string t2 =
      " is not a Hopper tensor-map type; fp8 travels as UINT8, packed 4/6-bit "
      "types need Blackwell";
  EXPECT_EQ(verdict(with(kU4, ""), h), "T2: data type 13" + t2);
  EXPECT_EQ(verdict(with(kU4Padded, ""), h), "T2: data type 14" + t2);
  EXPECT_EQ(verdict(with(kU6, ""), h), "T2: data type 15" + t2);
  for (const char* sw : {"128B_ATOM_32B", "128B_ATOM_32B_FLIP_8B", "128B_ATOM_64B"}) {
    EXPECT_EQ(verdict(with(kHalf, std::string(R"("swizzle":")") + sw + "\""), h),
              "T12: swizzle is not NONE/32B/64B/128B");
  }
  EXPECT_EQ(verdict(with(kWide, R"("swizzle":"128B")"), h),
            "A1: encode im2col_wide needs sm_100a, sm_103a or sm_120a "
            "(cuTensorMapEncodeIm2colWide: compute capability 10.0 or higher; .im2col::w: "
            "sm_100 or higher); on sm_90a use encode im2col");
  EXPECT_EQ(verdict(R"({"dataType":"FLOAT16","globalAddress":4096,"globalDim":[1024,64],)"
                    R"("globalStrides":[2048],"boxDim":[64,1],"tileMode":"gather4"})",
                    h),
            "A1: tileMode gather4 (.tile::gather4) is not available on sm_90a (sm_100a or "
            "later); load the four rows with four tiled copies (tileMode tile)");
  // The same specs pass on Blackwell.
  for (Arch a : {Arch::sm_100a, Arch::sm_103a, Arch::sm_120a}) {
    EXPECT_EQ(verdict(with(kU4, ""), a), "ok") << name(a);
    EXPECT_EQ(verdict(with(kU4Padded, R"("swizzle":"128B_ATOM_32B")"), a), "ok") << name(a);
    EXPECT_EQ(verdict(with(kU6, R"("swizzle":"128B_ATOM_64B","direction":"store")"), a), "ok");
    EXPECT_EQ(verdict(with(kHalf, R"("swizzle":"128B_ATOM_32B_FLIP_8B")"), a), "ok");
    EXPECT_EQ(verdict(with(kWide, R"("swizzle":"128B")"), a), "ok") << name(a);
  }
}

TEST(RulesArch, HopperVerdictsUnchangedByTheDefault) {
  // The overloads without an architecture are sm_90a's.
  const auto s = parse_spec_json(with(kHalf, R"("swizzle":"128B_ATOM_64B")"));
  EXPECT_EQ(std::string(find_violation(s)->what()), "T12: swizzle is not NONE/32B/64B/128B");
  EXPECT_FALSE(find_violation(s, Arch::sm_100a).has_value());
}

TEST(RulesArch, UnknownNamesListTheArchitecturesOwn) {
  const std::string line = with(kHalf, R"("swizzle":"256B")");
  try {
    parse_spec_json(line, Arch::sm_100a);
    FAIL();
  } catch (const ParseError& e) {
    EXPECT_EQ(std::string(e.what()),
              "swizzle: unknown value \"256B\" (expected one of NONE, 32B, 64B, 128B, "
              "128B_ATOM_32B, 128B_ATOM_32B_FLIP_8B, 128B_ATOM_64B)");
  }
  try {
    parse_spec_json(line);
    FAIL();
  } catch (const ParseError& e) {
    EXPECT_EQ(std::string(e.what()),
              "swizzle: unknown value \"256B\" (expected one of NONE, 32B, 64B, 128B)");
  }
}

struct Case {
  std::string line;
  std::string expected;  // for sm_100a, sm_103a and sm_120a unless `only`
};

TEST(RulesArch, BlackwellRulesAndMessages) {
  const std::vector<Case> cases = {
      {R"({"dataType":"16U4_ALIGN16B","globalAddress":4112,"globalDim":[1024,64],)"
       R"("globalStrides":[512],"boxDim":[128,16]})",
       "P1: globalAddress = 0x1010 is not 32-byte aligned (address % 32 = 16), which "
       "16U4_ALIGN16B needs; use 0x1000 and offset the coordinates"},
      {R"({"dataType":"16U6_ALIGN16B","globalAddress":4096,"globalDim":[1024,64],)"
       R"("globalStrides":[784],"boxDim":[128,16]})",
       "P1: globalStrides[0] = 784 bytes is not a multiple of 32, which 16U6_ALIGN16B needs; "
       "pad to 800 bytes"},
      {R"({"dataType":"16U4_ALIGN16B","globalAddress":4096,"globalDim":[1000,64],)"
       R"("globalStrides":[512],"boxDim":[128,16]})",
       "P2: globalDim[0] = 1000 values of 16U4_ALIGN16B is not a multiple of 128; pad the rows "
       "to 1024 values or use 896"},
      {R"({"dataType":"16U4_ALIGN8B","globalAddress":4096,"globalDim":[1023,64],)"
       R"("globalStrides":[512],"boxDim":[64,16]})",
       "P2: globalDim[0] = 1023 values of 16U4_ALIGN8B is not a multiple of 2; pad the rows to "
       "1024 values or use 1022"},
      {with(kU6, "").substr(0, with(kU6, "").find("\"boxDim\"")) + R"("boxDim":[64,16]})",
       "P3: boxDim[0] = 64 with 16U6_ALIGN16B; the padded types copy rows of exactly 128 "
       "values (one 128-byte shared row): use boxDim[0] = 128 and mask the unused values"},
      {R"({"dataType":"16U6_ALIGN16B","rank":3,"globalAddress":4096,"globalDim":[1024,64,4],)"
       R"("globalStrides":[768,49152],"boxDim":[128,16,1],"interleave":"16B"})",
       "P4: interleave 16B with 16U6_ALIGN16B; the 6-bit type takes interleave NONE only"},
      {with(kU4Padded, R"("swizzle":"128B_ATOM_64B")"),
       "P5: swizzle 128B_ATOM_64B with 16U4_ALIGN16B; it takes NONE, 128B, 128B_ATOM_32B: use "
       "128B_ATOM_32B"},
      {with(kU6, R"("swizzle":"64B")"),
       "P5: swizzle 64B with 16U6_ALIGN16B; it takes NONE, 128B, 128B_ATOM_32B, 128B_ATOM_64B "
       "(stores): use 128B"},
      {with(kU4, R"("direction":"reduce")"),
       "P6: direction reduce with 16U4_ALIGN8B; cp.reduce.async.bulk.tensor takes no packed "
       "type: reduce in a byte type (UINT8 or wider) instead"},
      {with(kU4Padded, R"("direction":"store")"),
       "P6: direction store with 16U4_ALIGN16B, a load-only type; store 4-bit data as "
       "16U4_ALIGN8B (packed, no gaps)"},
      {with(kU6, R"("swizzle":"128B_ATOM_64B","direction":"load")"),
       "P6: direction load with 16U6_ALIGN16B and swizzle 128B_ATOM_64B, which the driver "
       "reference allows for stores only; use 128B_ATOM_32B"},
      {with(kU4, R"("oobFill":"NAN_REQUEST_ZERO_FMA")"),
       "P7: oobFill NAN_REQUEST_ZERO_FMA with 16U4_ALIGN8B; the packed types fill out-of-bounds "
       "values with zeros only: use oobFill NONE"},
      {R"({"dataType":"16U4_ALIGN8B","globalAddress":4096,"globalDim":[1024,64],)"
       R"("globalStrides":[512],"boxDim":[40,16]})",
       "T7: boxDim[0] = 40 values of 4 bits is not a whole number of 16-byte chunks (32 values "
       "each); use 32 or 64"},
      {R"({"dataType":"16U4_ALIGN8B","globalAddress":4096,"globalDim":[1024,64],)"
       R"("globalStrides":[512],"boxDim":[128,16],"swizzle":"32B"})",
       "T9: boxDim[0] = 128 values take 64 bytes in shared memory, which exceeds the swizzle "
       "32B span of 32 bytes; use boxDim[0] <= 64 or a wider swizzle and several copies along "
       "dimension 0"},
      {with(kHalf, R"("swizzle":"128B_ATOM_32B_FLIP_8B","direction":"store")"),
       "S1: swizzle 128B_ATOM_32B_FLIP_8B for a store; the 8-byte flip is for loads only: use "
       "128B_ATOM_32B"},
      {sub(with(kHalf, R"("swizzle":"128B_ATOM_64B")"), "[64,16]", "[128,16]"),
       "T9: boxDim[0]*2 = 256 bytes exceeds the swizzle 128B_ATOM_64B span of 128 bytes; use "
       "boxDim[0] <= 64 and several copies along dimension 0"},
      {R"({"dataType":"FLOAT16","rank":3,"globalAddress":4096,"globalDim":[1024,64,4],)"
       R"("globalStrides":[2048,131072],"boxDim":[64,16,1],"interleave":"32B",)"
       R"("swizzle":"128B"})",
       "T10: interleave 32B with swizzle 128B; the driver reference asks for swizzle 32B with "
       "interleave 32B: use swizzle 32B"},
      {with(kWide, ""),
       "W3: swizzle NONE with encode im2col_wide; it takes 64B, 128B or 128B_ATOM_32B: use "
       "128B"},
      {sub(with(kWide, R"("swizzle":"32B")"), "\"channelsPerPixel\":64", "\"channelsPerPixel\":16"),
       "W3: swizzle 32B with encode im2col_wide; it takes 64B, 128B or 128B_ATOM_32B: use 64B"},
      {with(kWide, R"("swizzle":"128B","direction":"store")"),
       "W5: direction store with encode im2col_wide; .im2col::w and .im2col::w::128 are loads"},
      {sub(with(kWide, R"("swizzle":"128B")"), "\"pixelBoxLowerCornerWidth\":-1",
           "\"pixelBoxLowerCornerWidth\":-40000"),
       "W1: pixelBoxLowerCornerWidth = -40000 is outside [-32768, 32767]; use -32768"},
      {sub(with(kWide, R"("swizzle":"128B")"), "\"pixelBoxLowerCornerWidth\":-1",
           "\"pixelBoxLowerCornerWidth\":40"),
       "W2: globalDim[1] + pixelBoxUpperCornerWidth - pixelBoxLowerCornerWidth = 32 + -1 - 40 "
       "leaves no pixel along W; raise pixelBoxUpperCornerWidth to 9"},
      {sub(with(kWide, R"("swizzle":"128B")"), "\"channelsPerPixel\":64",
           "\"channelsPerPixel\":128"),
       "I7: channelsPerPixel*2 = 256 bytes exceeds the swizzle 128B span of 128 bytes; use "
       "channelsPerPixel <= 64 and several copies along dimension 0"},
      {R"({"dataType":"FLOAT16","rank":3,"globalAddress":4096,"globalDim":[1024,64,2],)"
       R"("globalStrides":[2048,131072],"boxDim":[64,1,1],"tileMode":"gather4"})",
       "G1: tileMode gather4 with rank 3; gather4 and scatter4 work on 2D tensors only: fold "
       "the tensor to rank 2 (rows x columns)"},
      {with(kHalf, R"("tileMode":"gather4")"),
       "G2: boxDim[1] = 16 with tileMode gather4; the box is one row (the copy names its four "
       "rows): use boxDim[1] = 1"},
      {sub(with(kHalf, R"("tileMode":"gather4","direction":"store")"), "[64,16]", "[64,1]"),
       "G4: direction store with tileMode gather4, which is a load; use direction load"},
  };
  for (Arch a : {Arch::sm_100a, Arch::sm_103a, Arch::sm_120a}) {
    for (const Case& c : cases) {
      EXPECT_EQ(verdict(c.line, a), c.expected) << name(a) << ": " << c.line;
      // Every one of them is mended by the fixes.
      std::string why;
      const auto mended = nearest_passing_spec(parse_spec_json(c.line, a), a, &why);
      if (c.expected.rfind("P6: direction reduce", 0) == 0 ||
          c.expected.rfind("P6: direction store", 0) == 0 || c.expected.rfind("G1", 0) == 0) {
        EXPECT_FALSE(mended.has_value()) << c.line;  // no single field mends these
      } else {
        ASSERT_TRUE(mended.has_value()) << name(a) << ": " << c.line << ": " << why;
        EXPECT_FALSE(find_violation(*mended, a).has_value());
      }
    }
  }
}

TEST(RulesArch, Sm120LacksScatter4AndW128) {
  const std::string scatter = sub(with(kHalf, R"("tileMode":"scatter4")"), "[64,16]", "[64,1]");
  const std::string w128 = with(kWide, R"("swizzle":"128B","mode":"W128")");
  for (Arch a : {Arch::sm_100a, Arch::sm_103a}) {
    EXPECT_EQ(verdict(scatter, a), "ok");
    EXPECT_EQ(verdict(w128, a), "ok");
  }
  EXPECT_EQ(verdict(scatter, Arch::sm_120a),
            "A1: tileMode scatter4 (.tile::scatter4) is not available on sm_120a (sm_100a, "
            "sm_103a, sm_110a); store the four rows with four tiled copies (tileMode tile)");
  EXPECT_EQ(verdict(w128, Arch::sm_120a),
            "A1: mode W128 (.im2col::w::128) is not available on sm_120a (the PTX ISA lists "
            "sm_100a and sm_103a, the sm_100f family, sm_110a); use mode W");
  const auto fixed = nearest_passing_spec(parse_spec_json(w128), Arch::sm_120a);
  ASSERT_TRUE(fixed.has_value());
  EXPECT_EQ(fixed->wide_mode, Im2colWideMode::w);
}

TEST(RulesArch, RulesPerArchitecture) {
  auto ids = [](Arch a) {
    std::string out;
    for (const Rule& r : rules(a)) out += std::string(r.id) + " ";
    return out;
  };
  EXPECT_EQ(ids(Arch::sm_90a), "T2 T12 A1 T3 I1 T4 T5 T6 T7 T8 I3 I4 I5 T9 T13 X1 X2 X3 X4 ");
  EXPECT_EQ(ids(Arch::sm_100a),
            "T2 T12 A1 T3 I1 T4 T5 T6 P1 P2 P3 P4 T7 T8 I3 W1 I4 I5 G1 G2 G4 W3 W4 W5 P5 S1 P6 T9 "
            "P7 T10 T13 X1 X2 X3 X4 W2 ");
  EXPECT_EQ(rules().size(), rules(Arch::sm_100a).size());
}

TEST(RulesArch, PackedTransactionBytesArePackedBits) {
  // 16 rows of 128 values: 64 bytes a row packed (4 bits), 96 (6 bits).
  EXPECT_EQ(box_bytes(parse_spec_json(with(kU4Padded, ""))), 16u * 64);
  EXPECT_EQ(box_bytes(parse_spec_json(with(kU6, ""))), 16u * 96);
  EXPECT_EQ(box_bytes(parse_spec_json(with(kU4, ""))), 16u * 32);
  // gather4: four rows of boxDim[0].
  EXPECT_EQ(
      box_bytes(parse_spec_json(sub(with(kHalf, R"("tileMode":"gather4")"), "[64,16]", "[64,1]"))),
      4u * 64 * 2);
}

TEST(RulesArch, JsonRoundTripsTheNewFields) {
  for (const std::string& line :
       {with(kWide, R"("swizzle":"128B","mode":"W128","direction":"load")"),
        with(kHalf, R"("tileMode":"scatter4","direction":"store")"), with(kU6, "")}) {
    const auto s = parse_spec_json(line);
    EXPECT_EQ(parse_spec_json(spec_to_json(s)), s) << line;
  }
}

}  // namespace
}  // namespace tmakit
