// The rules per architecture: Blackwell's encodings (packed types, 128B_ATOM_* swizzles,
// im2col-wide, gather4/scatter4) judged for sm_90a, sm_100a, sm_103a and sm_120a, each with
// its id and exact message, and the fixes that mend them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <variant>
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
// An NHWC im2col map whose box reaches one pixel past the tensor on every side.
const std::string kIm2col =
    R"({"encode":"im2col","dataType":"FLOAT16","globalAddress":65536,"globalDim":[64,16,16,2],)"
    R"("globalStrides":[128,2048,32768],"pixelBoxLowerCorner":[-1,-1],)"
    R"("pixelBoxUpperCorner":[1,1],"channelsPerPixel":64,"pixelsPerColumn":16)";

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
  EXPECT_EQ(verdict(with(kU4, ""), h), "T2: data type 16U4_ALIGN8B" + t2);
  EXPECT_EQ(verdict(with(kU4Padded, ""), h), "T2: data type 16U4_ALIGN16B" + t2);
  EXPECT_EQ(verdict(with(kU6, ""), h), "T2: data type 16U6_ALIGN16B" + t2);
  for (const char* sw : {"128B_ATOM_32B", "128B_ATOM_32B_FLIP_8B", "128B_ATOM_64B"}) {
    EXPECT_EQ(verdict(with(kHalf, std::string(R"("swizzle":")") + sw + "\""), h),
              "T12: swizzle = " + std::string(sw) + " is not NONE/32B/64B/128B");
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
  EXPECT_EQ(std::string(find_violation(s)->what()),
            "T12: swizzle = 128B_ATOM_64B is not NONE/32B/64B/128B");
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
      // im2col-wide takes fewer of them (cuTensorMapEncodeIm2colWide)
      {R"({"encode":"im2col_wide","dataType":"16U6_ALIGN16B","globalAddress":65536,)"
       R"("globalDim":[128,32,16,2],"globalStrides":[192,6144,98304],)"
       R"("pixelBoxLowerCornerWidth":0,"pixelBoxUpperCornerWidth":0,"channelsPerPixel":128,)"
       R"("pixelsPerColumn":32,"swizzle":"64B"})",
       "P5: swizzle 64B with 16U6_ALIGN16B; with encode im2col_wide it takes 128B, "
       "128B_ATOM_32B: use 128B"},
      // a stride that only a smaller multiple of 32 mends is not padded
      {R"({"dataType":"16U4_ALIGN16B","globalAddress":0,"globalDim":[128,64],)"
       R"("globalStrides":[1099511627760],"boxDim":[128,8]})",
       "P1: globalStrides[0] = 1099511627760 bytes is not a multiple of 32, which 16U4_ALIGN16B "
       "needs; use 1099511627744 bytes"},
      {with(kIm2col, R"("direction":"store")"),
       "I8: pixelBoxLowerCorner[0] = -1 with direction store; the bounding box of an im2col "
       "store must stay within the tensor (lower corners >= 0, upper corners <= 0): use "
       "pixelBoxLowerCorner[0] = 0"},
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
       "the tensor to rank 2 (rows x columns), or load the rows with tiled copies (tileMode "
       "tile)"},
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
          c.expected.rfind("P6: direction store", 0) == 0) {
        EXPECT_FALSE(mended.has_value()) << c.line;  // no single field mends these
      } else {
        ASSERT_TRUE(mended.has_value()) << name(a) << ": " << c.line << ": " << why;
        EXPECT_FALSE(find_violation(*mended, a).has_value());
      }
    }
  }
}

// The fixes that another rule refused: each is now a value that the other rules take, or
// another field's.
TEST(RulesArch, FixesThatAnotherRuleWouldRefuse) {
  auto fix_of = [](const std::string& line, Arch a) {
    const auto f = diagnose(parse_spec_json(line, a), a);
    EXPECT_TRUE(f && f->fix) << line;
    return f && f->fix ? *f->fix : SpecFix{};
  };
  auto value = [](const SpecFix& f) {
    return std::visit(
        [](const auto& v) {
          std::ostringstream os;
          os << v;
          return os.str();
        },
        f.value);
  };
  // T10 with a padded type: swizzle 32B is P5's to refuse, so the interleave goes
  const std::string padded32 =
      R"({"dataType":"16U4_ALIGN16B","globalAddress":0,"globalDim":[128,4,4],)"
      R"("globalStrides":[128,512],"boxDim":[128,2,2],"interleave":"32B"})";
  // P5 under interleave 32B: no swizzle of the type keeps T10, so P5's own choice, then T10's
  const std::string padded32_swizzled = sub(padded32, R"("32B"})", R"("32B","swizzle":"32B"})");
  for (Arch a : {Arch::sm_100a, Arch::sm_103a, Arch::sm_120a}) {
    EXPECT_EQ(verdict(padded32, a),
              "T10: interleave 32B with swizzle NONE; the driver reference asks for swizzle 32B "
              "with interleave 32B, which P5 refuses here: use interleave NONE");
    SpecFix f = fix_of(padded32, a);
    EXPECT_EQ(f.field + "=" + value(f), "interleave=NONE");
    EXPECT_EQ(verdict(padded32_swizzled, a),
              "P5: swizzle 32B with 16U4_ALIGN16B; it takes NONE, 128B, 128B_ATOM_32B: use 128B");
    std::string why;
    const auto mended = nearest_passing_spec(parse_spec_json(padded32_swizzled, a), a, &why);
    ASSERT_TRUE(mended.has_value()) << why;
    EXPECT_EQ(mended->swizzle, Swizzle::bytes128);
    EXPECT_EQ(mended->interleave, Interleave::none);
    // a type that takes swizzle 32B is told so, as before
    EXPECT_EQ(fix_of(sub(padded32, "16U4_ALIGN16B", "16U4_ALIGN8B"), a).field, "swizzle");

    // X2: the highest address that P1's 32-byte alignment takes
    const std::string high =
        R"({"dataType":"16U6_ALIGN16B","globalAddress":288230376151711744,"globalDim":[256],)"
        R"("boxDim":[128]})";
    EXPECT_EQ(verdict(high, a),
              "X2: globalAddress = 0x400000000000000 is at or above 2^57, outside the GPU's "
              "virtual address space; pass a device pointer (the highest allowed is "
              "0x1ffffffffffffe0)");
    EXPECT_EQ(value(fix_of(high, a)), std::to_string((std::uint64_t{1} << 57) - 32));

    // T4, T6, P1 with a padded type: the 32-byte multiples P1 takes, never 2^57 (X2)
    const std::string padded =
        R"({"dataType":"16U4_ALIGN16B","globalAddress":0,"globalDim":[256,64],)"
        R"("globalStrides":[128],"boxDim":[128,8]})";
    auto at = [&](const std::string& address) {
      return sub(padded, "\"globalAddress\":0", "\"globalAddress\":" + address);
    };
    EXPECT_EQ(verdict(at("144115188075855873"), a),
              "T4: globalAddress = 0x200000000000001 is not 16-byte aligned (address % 16 = 1); "
              "use 0x1ffffffffffffe0 (16U4_ALIGN16B needs 32-byte alignment) and offset the "
              "coordinates, or allocate with cudaMalloc");
    EXPECT_EQ(value(fix_of(at("144115188075855873"), a)),
              std::to_string((std::uint64_t{1} << 57) - 32));
    EXPECT_EQ(verdict(at("144115188075855888"), a),
              "P1: globalAddress = 0x200000000000010 is not 32-byte aligned (address % 32 = 16), "
              "which 16U4_ALIGN16B needs; use 0x1ffffffffffffe0 and offset the coordinates");
    EXPECT_EQ(verdict(at("4120"), a),
              "T4: globalAddress = 0x1018 is not 16-byte aligned (address % 16 = 8); use 0x1000 "
              "(16U4_ALIGN16B needs 32-byte alignment) and offset the coordinates, or allocate "
              "with cudaMalloc");
    EXPECT_EQ(verdict(sub(padded, "[128]", "[40]"), a),
              "T6: globalStrides[0] = 40 bytes (dimension 1) is not a multiple of 16; pad to 64 "
              "bytes (16U4_ALIGN16B needs a multiple of 32)");
    f = fix_of(sub(padded, "[128]", "[40]"), a);
    EXPECT_EQ(f.field + "[" + std::to_string(f.index.value_or(99)) + "]=" + value(f),
              "globalStrides[0]=64");
    EXPECT_EQ(verdict(sub(sub(padded, "[128]", "[18446744073709551615]"), "16U4", "16U6"), a),
              "T6: globalStrides[0] = 18446744073709551615 bytes (dimension 1) is not a multiple "
              "of 16; use 1099511627744 bytes (16U6_ALIGN16B needs a multiple of 32)");
    // the byte types keep T4's and T6's 16 bytes
    EXPECT_EQ(verdict(sub(sub(padded, "[128]", "[40]"), "16U4_ALIGN16B", "16U4_ALIGN8B"), a),
              "T6: globalStrides[0] = 40 bytes (dimension 1) is not a multiple of 16; pad to 48 "
              "bytes");

    // S1 under interleave 32B: the swizzle T10 takes, not 128B_ATOM_32B, which T10 refuses
    const std::string flip =
        R"({"dataType":"FLOAT16","rank":3,"globalAddress":4096,"globalDim":[1024,64,4],)"
        R"("globalStrides":[2048,131072],"boxDim":[64,16,1],"interleave":"32B",)"
        R"("swizzle":"128B_ATOM_32B_FLIP_8B","direction":"store"})";
    EXPECT_EQ(verdict(flip, a),
              "S1: swizzle 128B_ATOM_32B_FLIP_8B for a store; the 8-byte flip is for loads only: "
              "use 32B (interleave 32B takes swizzle 32B, T10)");
    f = fix_of(flip, a);
    EXPECT_EQ(f.field + "=" + value(f), "swizzle=32B");
    EXPECT_FALSE(find_violation(with_fix(parse_spec_json(flip, a), f), a).has_value());

    // X4 of an im2col store: the lower corner, as I8 holds the upper one at 0 or below
    const std::string flat =
        R"({"encode":"im2col","dataType":"FLOAT16","globalAddress":65536,"globalDim":[64,1,2],)"
        R"("globalStrides":[128,128],"pixelBoxLowerCorner":[1],"pixelBoxUpperCorner":[0],)"
        R"("channelsPerPixel":64,"pixelsPerColumn":16,"direction":"store"})";
    EXPECT_EQ(verdict(flat, a),
              "X4: spatial dimension 1: globalDim[1] + pixelBoxUpperCorner[0] - "
              "pixelBoxLowerCorner[0] = 1 + 0 - 1 leaves no pixel; lower pixelBoxLowerCorner[0] "
              "to 0");

    // X4: a size below 2^31 that P2 takes (even for 16U4_ALIGN8B), not 2147483647
    const std::string wraps =
        R"({"encode":"im2col","dataType":"16U4_ALIGN8B","rank":3,"globalAddress":4096,)"
        R"("globalDim":[3000000000,64,64],"globalStrides":[8192,524288],"interleave":"16B",)"
        R"("pixelBoxLowerCorner":[0],"pixelBoxUpperCorner":[0],"channelsPerPixel":128,)"
        R"("pixelsPerColumn":64})";
    f = fix_of(wraps, a);
    EXPECT_EQ(f.field + "[" + std::to_string(f.index.value_or(99)) + "]=" + value(f),
              "globalDim[0]=2147483646");

    // T5: the least size that P2 takes for a padded type, 128
    const std::string empty = R"({"dataType":"16U4_ALIGN16B","globalAddress":0,"globalDim":[0,4],)"
                              R"("globalStrides":[128],"boxDim":[128,2]})";
    EXPECT_EQ(verdict(empty, a),
              "T5: globalDim[0] = 0 is outside 1..2^32 (4294967296); an empty tensor needs no "
              "copy (the least size is 128)");

    // G1: a plain tiled map, as A1 tells sm_90a
    f = fix_of(R"({"dataType":"UINT8","globalAddress":4096,"globalDim":[128],"boxDim":[32],)"
               R"("tileMode":"gather4"})",
               a);
    EXPECT_EQ(f.field + "=" + value(f), "tileMode=tile");
  }
}

// Over a grid of specs (byte types of each size and the packed types, every interleave,
// swizzle, tile mode and direction, with addresses, strides, sizes and corners that break P1,
// P2, T4, T5, T6, X2, X4 and I8, the padded types' addresses and strides at and past 2^57 and
// 2^40 among them; sm_103a has sm_100a's rules): applying the fixes one after another never
// comes back to a spec already seen, each fix mends its rule and breaks no rule before it in the
// table, its value is none that the next broken rule asks to change again (a value another rule
// refuses), and the last spec passes, unless a rule without a fix stops it.
TEST(RulesArch, EveryFixMendsItsRuleAndTheFixesEndInAPassingSpec) {
  auto rule_index = [](const std::string& id) {
    for (std::size_t i = 0; i < rules().size(); ++i) {
      if (rules()[i].id == id || rules()[i].im2col_id == id) return i;
    }
    return rules().size();
  };
  std::vector<TensorMapSpec> grid;
  const std::uint64_t two57 = std::uint64_t{1} << 57;
  const std::uint64_t addresses[] = {4096, 4112, std::uint64_t{1} << 58, two57 + 1, two57 + 16};
  const std::uint64_t dims[] = {256, 0, 3000000000};
  const std::uint64_t strides[] = {1024, 40, UINT64_MAX, (std::uint64_t{1} << 40) - 16};
  const std::int32_t corners[][2] = {{-1, -1}, {1, 2}};
  std::size_t n = 0;
  for (int kind = 0; kind < 3; ++kind) {
    for (DataType type :
         {DataType::uint8, DataType::float16, DataType::float32, DataType::float64,
          DataType::packed_u4_align8, DataType::packed_u4_align16, DataType::packed_u6_align16}) {
      for (int il = 0; il < 3; ++il) {
        for (int sw = 0; sw < 7; ++sw) {
          for (int mode = 0; mode < (kind == 1 ? 3 : 1); ++mode) {
            for (int dir = 0; dir < 4; ++dir, ++n) {
              TensorMapSpec s;
              s.data_type = type;
              s.interleave = static_cast<Interleave>(il);
              s.swizzle = static_cast<Swizzle>(sw);
              s.direction = static_cast<Direction>(dir);
              s.global_address = addresses[n % 5];
              if (kind == 2) {  // im2col NWC
                s.kind = EncodeKind::im2col;
                s.rank = 3;
                s.global_dim = {256, 32, 4};
                s.global_strides_bytes = {1024, 32768};
                s.pixel_box_lower_corner = {corners[n / 60 % 2][0]};
                s.pixel_box_upper_corner = {corners[n / 60 % 2][1]};
                s.channels_per_pixel = 64;
                s.pixels_per_column = 32;
              } else {  // tiled, rank 3, or rank 2 for gather4/scatter4
                s.rank = kind == 0 ? 3 : 2;
                s.global_dim = {256, 64, 4};
                s.global_strides_bytes = {1024, 65536};
                s.box_dim = {64, kind == 0 ? 2u : 1u, 2};
                s.tile_mode = static_cast<TileMode>(mode);
              }
              s.global_dim[0] = dims[n / 5 % 3];
              s.global_strides_bytes[0] = strides[n / 15 % 4];
              grid.push_back(s);
            }
          }
        }
      }
    }
  }
  std::size_t failures = 0, passed = 0;
  for (Arch a : {Arch::sm_100a, Arch::sm_120a}) {
    for (const TensorMapSpec& start : grid) {
      auto fail = [&](const std::string& what) {
        if (++failures <= 10)
          ADD_FAILURE() << name(a) << ": " << what << "\n  " << spec_to_json(start);
      };
      std::vector<TensorMapSpec> seen{start};
      TensorMapSpec s = start;
      for (;;) {
        const auto f = diagnose(s, a);
        if (!f) {
          ++passed;
          break;
        }
        if (!f->fix) {
          const std::string id = f->violation.rule_id();
          if (id != "T2" && id != "T3" && id != "I1" && id != "P6")
            fail(id + " has no fix: " + f->violation.what());
          break;
        }
        const TensorMapSpec t = with_fix(s, *f->fix);
        const auto next = find_violation(t, a);
        if (next && next->rule_id() == f->violation.rule_id() &&
            std::string(next->what()) == f->violation.what()) {
          fail("the fix leaves " + std::string(f->violation.what()));
          break;
        }
        if (next && rule_index(next->rule_id()) < rule_index(f->violation.rule_id())) {
          fail("the fix of " + std::string(f->violation.what()) + " breaks " + next->what());
          break;
        }
        if (const auto then = next ? diagnose(t, a) : std::nullopt;
            then && then->fix && then->fix->field == f->fix->field &&
            then->fix->index == f->fix->index) {
          fail("the fix of " + std::string(f->violation.what()) + " gives a value that " +
               next->what() + " refuses");
          break;
        }
        if (std::find(seen.begin(), seen.end(), t) != seen.end()) {
          fail("the fixes come back to a spec: " + std::string(f->violation.what()));
          break;
        }
        seen.push_back(t);
        s = t;
      }
    }
  }
  EXPECT_EQ(failures, 0u);
  EXPECT_GT(passed, grid.size());  // most end in a passing spec
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

// An im2col store (or reduction) keeps its bounding box within the tensor (PTX ISA,
// restrictions on the .global.shared::cta direction); loads may reach past it.
TEST(RulesArch, I8Im2colStoresKeepTheBoxInTheTensor) {
  const std::string corners = "\"pixelBoxLowerCorner\":[-1,-1],\"pixelBoxUpperCorner\":[1,1]";
  auto box = [&](const std::string& line, const std::string& lower, const std::string& upper) {
    return sub(line, corners,
               "\"pixelBoxLowerCorner\":" + lower + ",\"pixelBoxUpperCorner\":" + upper);
  };
  const std::string store = with(kIm2col, R"("direction":"store")");
  const std::string reduce = with(kIm2col, R"("direction":"reduce")");
  const std::string rule =
      " must stay within the tensor (lower corners >= 0, upper corners <= 0): use ";
  for (Arch a : {Arch::sm_100a, Arch::sm_103a, Arch::sm_120a}) {
    EXPECT_EQ(verdict(store, a),
              "I8: pixelBoxLowerCorner[0] = -1 with direction store; the "
              "bounding box of an im2col store" +
                  rule + "pixelBoxLowerCorner[0] = 0")
        << name(a);
    EXPECT_EQ(verdict(box(store, "[0,0]", "[0,1]"), a),
              "I8: pixelBoxUpperCorner[1] = 1 with direction store; the bounding box of an im2col "
              "store" +
                  rule + "pixelBoxUpperCorner[1] = 0");
    EXPECT_EQ(verdict(box(reduce, "[0,0]", "[2,0]"), a),
              "I8: pixelBoxUpperCorner[0] = 2 with direction reduce; the bounding box of an im2col "
              "reduction" +
                  rule + "pixelBoxUpperCorner[0] = 0");
    // a packed type too
    EXPECT_EQ(verdict(R"({"encode":"im2col","dataType":"16U4_ALIGN8B","globalAddress":65536,)"
                      R"("globalDim":[64,16,16,2],"globalStrides":[32,512,8192],)"
                      R"("pixelBoxLowerCorner":[-1,0],"pixelBoxUpperCorner":[0,0],)"
                      R"("channelsPerPixel":64,"pixelsPerColumn":16,"direction":"store"})",
                      a),
              "I8: pixelBoxLowerCorner[0] = -1 with direction store; the bounding box of an im2col "
              "store" +
                  rule + "pixelBoxLowerCorner[0] = 0");
    // a box inside the tensor, or on its edges, stores; loads and unsaid directions reach past
    EXPECT_EQ(verdict(box(store, "[3,2]", "[-4,-1]"), a), "ok");
    EXPECT_EQ(verdict(box(store, "[0,0]", "[0,0]"), a), "ok");
    EXPECT_EQ(verdict(with(kIm2col, R"("direction":"load")"), a), "ok");
    EXPECT_EQ(verdict(with(kIm2col, ""), a), "ok");
    // the fixes end at the tensor's edges
    const auto mended = nearest_passing_spec(parse_spec_json(store, a), a);
    ASSERT_TRUE(mended.has_value());
    EXPECT_EQ(spec_to_json(*mended), spec_to_json(parse_spec_json(box(store, "[0,0]", "[0,0]"))));
    // where every upper corner at 0 or below leaves no pixel (X4), I8 still moves it, and X4 then
    // moves the lower corner
    const std::string flat =
        R"({"encode":"im2col","dataType":"FLOAT16","globalAddress":65536,"globalDim":[64,1,2],)"
        R"("globalStrides":[128,128],"pixelBoxLowerCorner":[1],"pixelBoxUpperCorner":[2],)"
        R"("channelsPerPixel":64,"pixelsPerColumn":16,"direction":"store"})";
    const auto flat_mended = nearest_passing_spec(parse_spec_json(flat, a), a);
    ASSERT_TRUE(flat_mended.has_value());
    EXPECT_EQ(flat_mended->pixel_box_lower_corner[0], 0);
    EXPECT_EQ(flat_mended->pixel_box_upper_corner[0], 0);
  }
  // sm_90a gives the Hopper driver's verdicts, which judge no direction
  EXPECT_EQ(verdict(store, Arch::sm_90a), "ok");
  EXPECT_EQ(verdict(R"({"encode":"im2col","dataType":"FLOAT16","globalAddress":65536,)"
                    R"("globalDim":[64,1,2],"globalStrides":[128,128],"pixelBoxLowerCorner":[1],)"
                    R"("pixelBoxUpperCorner":[0],"channelsPerPixel":64,"pixelsPerColumn":16,)"
                    R"("direction":"store"})",
                    Arch::sm_90a),
            "X4: spatial dimension 1: globalDim[1] + pixelBoxUpperCorner[0] - "
            "pixelBoxLowerCorner[0] = 1 + 0 - 1 leaves no pixel; raise pixelBoxUpperCorner[0] to "
            "1");
  // an im2col-wide store is W5's, whatever its corners
  EXPECT_EQ(
      verdict(sub(with(kWide, R"("swizzle":"128B","direction":"store")"),
                  "\"pixelBoxUpperCornerWidth\":-1", "\"pixelBoxUpperCornerWidth\":3"),
              Arch::sm_100a),
      "W5: direction store with encode im2col_wide; .im2col::w and .im2col::w::128 are loads");
}

TEST(RulesArch, RulesPerArchitecture) {
  auto ids = [](Arch a) {
    std::string out;
    for (const Rule& r : rules(a)) out += std::string(r.id) + " ";
    return out;
  };
  EXPECT_EQ(ids(Arch::sm_90a), "T2 T12 A1 T3 I1 T4 T5 T6 T7 T8 I3 I4 I5 T9 T13 X1 X2 X3 X4 ");
  // A1 refuses nothing on sm_100a and sm_103a, which have every encoding it judges
  EXPECT_EQ(ids(Arch::sm_100a),
            "T2 T12 T3 I1 T4 T5 T6 P1 P2 P3 P4 T7 T8 I3 W1 I4 I5 G1 G2 G4 W3 W4 W5 P5 S1 P6 I8 T9 "
            "P7 T10 T13 X1 X2 X3 X4 W2 ");
  EXPECT_EQ(ids(Arch::sm_103a), ids(Arch::sm_100a));
  EXPECT_EQ(ids(Arch::sm_120a),
            "T2 T12 A1 T3 I1 T4 T5 T6 P1 P2 P3 P4 T7 T8 I3 W1 I4 I5 G1 G2 G4 W3 W4 W5 P5 S1 P6 I8 "
            "T9 P7 T10 T13 X1 X2 X3 X4 W2 ");
  EXPECT_EQ(rules().size(), rules(Arch::sm_120a).size());
  // T2's summary names the architecture's types
  EXPECT_EQ(rules(Arch::sm_90a)[0].summary, "data type is one of the 13 Hopper tensor-map types");
  for (Arch a : {Arch::sm_100a, Arch::sm_103a, Arch::sm_120a}) {
    EXPECT_EQ(rules(a)[0].summary,
              "data type is one of the 16 tensor-map types (Hopper's 13 and 16U4_ALIGN8B, "
              "16U4_ALIGN16B, 16U6_ALIGN16B)");
  }
  EXPECT_EQ(rules()[0].summary,
            "data type is a tensor-map type: the 13 Hopper types on sm_90a, also the 3 packed "
            "types on sm_100a, sm_103a and sm_120a");
  // an architecture tmakit has no rules for is refused, as validate() refuses it
  for (int bad : {4, 9, 200}) {
    try {
      rules(static_cast<Arch>(bad));
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), "rules: architecture " + std::to_string(bad) +
                                           " is not one of sm_90a, sm_100a, sm_103a, sm_120a");
    }
  }
  EXPECT_EQ(arch_bit(static_cast<Arch>(200)), 0);
  EXPECT_EQ(arch_bit(Arch::sm_120a), 8);
}

// P6 judges a gather4 map as a load and a scatter4 map as a store, as S1 does, direction
// given or not.
TEST(RulesArch, P6JudgesGather4AsALoadAndScatter4AsAStore) {
  const std::string scatter =
      sub(with(kU4Padded, R"("tileMode":"scatter4")"), "[128,16]", "[128,1]");
  for (Arch a : {Arch::sm_100a, Arch::sm_103a}) {
    EXPECT_EQ(verdict(scatter, a),
              "P6: tileMode scatter4 (a store) with 16U4_ALIGN16B, a load-only type; store 4-bit "
              "data as 16U4_ALIGN8B (packed, no gaps)");
    EXPECT_EQ(verdict(sub(scatter, "scatter4", "gather4"), a), "ok");
  }
  const std::string gather =
      sub(with(kU6, R"("tileMode":"gather4","swizzle":"128B_ATOM_64B")"), "[128,16]", "[128,1]");
  for (Arch a : {Arch::sm_100a, Arch::sm_103a, Arch::sm_120a}) {
    EXPECT_EQ(verdict(gather, a),
              "P6: tileMode gather4 (a load) with 16U6_ALIGN16B and swizzle 128B_ATOM_64B, which "
              "the driver reference allows for stores only; use 128B_ATOM_32B");
    // G4's fix (direction load) stands: P6 then mends the swizzle
    const auto mended = nearest_passing_spec(
        parse_spec_json(sub(gather, "\"gather4\"", "\"gather4\",\"direction\":\"store\""), a), a);
    ASSERT_TRUE(mended.has_value());
    EXPECT_EQ(mended->direction, Direction::load);
    EXPECT_EQ(mended->swizzle, Swizzle::bytes128_atom32);
  }
}

// A fix that makes a gather4 / scatter4 map a plain tiled one (A1 on sm_120a, G1) keeps the
// copy the tile mode implied: the direction left `any` is written out, so that the fixed map is
// not passed as a load of what only a load may take.
TEST(RulesArch, TileFixesKeepTheCopyTheTileModeImplied) {
  const std::string scatter = sub(with(kHalf, R"("tileMode":"scatter4")"), "[64,16]", "[64,1]");
  const auto half = nearest_passing_spec(parse_spec_json(scatter), Arch::sm_120a);
  ASSERT_TRUE(half.has_value());
  EXPECT_EQ(half->tile_mode, TileMode::tile);
  EXPECT_EQ(half->direction, Direction::store);
  EXPECT_EQ(rewrite_spec_json(scatter, parse_spec_json(scatter), *half),
            sub(scatter, R"("scatter4")", R"("tile","direction":"store")"));

  // a store of a load-only type: the tile fix ends at P6, which has none
  const std::string packed =
      sub(with(kU4Padded, R"("tileMode":"scatter4")"), "[128,16]", "[128,1]");
  std::string why;
  EXPECT_FALSE(nearest_passing_spec(parse_spec_json(packed), Arch::sm_120a, &why).has_value());
  EXPECT_EQ(why.substr(0, 3), "P6:");
  const auto step = diagnose(parse_spec_json(packed), Arch::sm_120a);
  ASSERT_TRUE(step.has_value() && step->fix.has_value());
  EXPECT_EQ(step->violation.rule_id(), "A1");
  EXPECT_EQ(with_fix(parse_spec_json(packed), *step->fix).direction, Direction::store);

  // G1 (rank 3) on sm_100a: gather4 becomes a tiled load, scatter4 a tiled store
  const std::string rank3 =
      R"({"dataType":"FLOAT16","globalAddress":4096,"globalDim":[64,16,4],)"
      R"("globalStrides":[128,2048],"boxDim":[64,1,1],"tileMode":"gather4"})";
  for (const auto& [mode, copy] : {std::pair{"gather4", Direction::load},
                                   std::pair{"scatter4", Direction::store}}) {
    const auto fixed =
        nearest_passing_spec(parse_spec_json(sub(rank3, "gather4", mode)), Arch::sm_100a);
    ASSERT_TRUE(fixed.has_value()) << mode;
    EXPECT_EQ(fixed->tile_mode, TileMode::tile) << mode;
    EXPECT_EQ(fixed->direction, copy) << mode;
  }
  // between gather4 and scatter4 the direction stays unsaid: each mode implies its own
  const auto swapped =
      with_fix(parse_spec_json(rank3), SpecFix{"tileMode", std::nullopt, std::string("scatter4")});
  EXPECT_EQ(swapped.tile_mode, TileMode::scatter4);
  EXPECT_EQ(swapped.direction, Direction::any);
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
