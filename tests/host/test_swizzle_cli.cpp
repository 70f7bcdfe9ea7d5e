// `tmakit swizzle`: the picture's content for hand-worked layouts, and clear errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>

#include "../cli_runner.hpp"

namespace {

using Result = tmakit::testing::CliResult;

Result run(const std::string& args, bool with_stderr = false) {
  return tmakit::testing::run_cli("swizzle " + args, with_stderr);
}

std::string line_starting(const std::string& text, const std::string& prefix, int nth) {
  std::istringstream in(text);
  std::string line;
  int seen = 0;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0 && seen++ == nth) return line;
  }
  return {};
}

// The nth line of `args`'s picture that starts with `row_label` begins with `expected`.
void expect_row(const std::string& args, const std::string& row_label, int nth,
                const std::string& expected) {
  const Result r = run(args);
  ASSERT_EQ(r.code, 0) << args;
  EXPECT_EQ(line_starting(r.out, row_label, nth).substr(0, expected.size()), expected) << args;
}

// Each (arguments, message): refused with exit 2 and a message that holds the text.
template <std::size_t N>
void expect_refused(const std::pair<const char*, const char*> (&cases)[N]) {
  for (const auto& [args, message] : cases) {
    const Result r = run(args, true);
    EXPECT_EQ(r.code, 2) << args;
    EXPECT_NE(r.out.find(message), std::string::npos) << args << ": " << r.out;
  }
}

TEST(SwizzleCli, NarrowRowsOffTheRepeat) {
  // FLOAT32 8 x 4, 64B swizzle, buffer at 128: rows 64 bytes apart. Row 0 sits in 128-byte
  // line 1 (chunks swap), row 2 in line 2 (chunks 0,1 -> 2,3). Banks: address / 4 mod 32.
  const Result r = run("--type FLOAT32 --swizzle 64B --box 8x4 --base 128 --text");
  ASSERT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("NOT on the 512-byte repeat"), std::string::npos);
  EXPECT_EQ(
      line_starting(r.out, "row   0", 0),
      "row   0 | c  0-3    b00-03 | c  4-7    b04-07 | (unused)  b08-11 | (unused)  b12-15 |");
  EXPECT_EQ(
      line_starting(r.out, "row   0", 1),
      "row   0 | c  4-7    b00-03 | c  0-3    b04-07 | (unused)  b08-11 | (unused)  b12-15 |");
  EXPECT_EQ(
      line_starting(r.out, "row   2", 1),
      "row   2 | (unused)  b00-03 | (unused)  b04-07 | c  0-3    b08-11 | c  4-7    b12-15 |");
}

TEST(SwizzleCli, Full128ByteRowsShowTheXorOfTheRow) {
  // FLOAT16 64 x 8 with 128B: row 5's chunk j holds columns of chunk j ^ 5
  const Result r = run("--type FLOAT16 --swizzle 128B --box 64x8");
  ASSERT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("stored = off ^ (((base + off) >> 7) & 7) << 4"), std::string::npos);
  const std::string row5 = line_starting(r.out, "row   5", 1);
  EXPECT_EQ(row5.rfind("row   5 | c 40-47   b00-03 | c 32-39   b04-07 | c 56-63   b08-11 |", 0), 0u)
      << row5;
}

TEST(SwizzleCli, WritesAnSvg) {
  const auto path = std::filesystem::temp_directory_path() / "tmakit_swizzle_test.svg";
  const Result r = run("--type UINT8 --swizzle 32B --box 32x8 --svg " + path.string());
  ASSERT_EQ(r.code, 0);
  std::ifstream f(path);
  const std::string svg((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(svg.rfind("<svg ", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  // row 4 (line 1 of the 32B pattern): column 0 is stored in chunk 1, at byte 4 * 32 + 16
  EXPECT_NE(svg.find("<title>row 4 col 0 at byte 144 bank 4</title>"), std::string::npos);
  std::filesystem::remove(path);
}

TEST(SwizzleCli, BadInputGivesClearErrors) {
  const std::pair<const char*, const char*> cases[] = {
      {"--type FLOAT8", "not a tensor-map data type"},
      {"--swizzle 16B", "is not NONE, 32B, 64B or 128B"},
      {"--box 8", "is not COLSxROWS"},
      {"--type FLOAT32 --box 7x2",
       "28 bytes, not a multiple of 16 (rule T7); use 4 or 8 columns"},
      {"--type FLOAT32 --box 3x2", "12 bytes, not a multiple of 16 (rule T7); use 4 columns"},
      // (a negative extent was read modulo 2^64, and white space skipped)
      {"--box -18446744073709551600x8", "each box dimension is 1..256 (rule T7)"},
      {"--box ' 16x 8'", "is not COLSxROWS"},
      {"--box +16x8", "is not COLSxROWS"},
      {"--type FLOAT64 --swizzle NONE --box 256x256",
       "the box is 524288 bytes, more than the 233472 (228 KiB) one copy can fill (rule X1); "
       "use at most 114 rows"},
      {"--type FLOAT32 --swizzle 128B --box 64x2", "wider than the 128B span (rule T9)"},
      {"--base 100", "not 128-byte aligned (rule D1)"},
      {"--box 300x1", "1..256 (rule T7)"},
      {"--box 0x8", "--box 0x8: each box dimension is 1..256 (rule T7)"},
      {"--box 16x-4", "--box 16x-4: each box dimension is 1..256 (rule T7)"},
  };
  expect_refused(cases);
}

TEST(SwizzleCli, APngLeavesNoSvgBehindUnlessOneWasAsked) {
  // a stand-in converter on PATH copies its input: the picture arrives, the SVG it was made
  // from is removed, and kept where --svg names it
  const tmakit::testing::ScratchDir dir("swizzle_png");
  const std::string converter = dir.write("rsvg-convert", "#!/bin/sh\ncp \"$3\" \"$2\"\n");
  std::filesystem::permissions(converter, std::filesystem::perms::owner_all);
  const std::string path = "PATH='" + dir.path("") + ":'\"$PATH\" ";
  const std::string png = dir.path("box.png");
  auto r = tmakit::testing::run_cli("swizzle --png '" + png + "'", false, path);
  ASSERT_EQ(r.code, 0);
  EXPECT_TRUE(std::filesystem::exists(png));
  EXPECT_FALSE(std::filesystem::exists(png + ".svg"));
  const std::string svg = dir.path("kept.svg");
  r = tmakit::testing::run_cli("swizzle --png '" + png + "' --svg '" + svg + "'", false, path);
  ASSERT_EQ(r.code, 0);
  EXPECT_TRUE(std::filesystem::exists(svg));
  // nor when it fails: a converter that fails, a name the shell command cannot quote
  std::filesystem::create_directories(dir.path("fails"));
  const std::string failing = dir.write("fails/rsvg-convert", "#!/bin/sh\nexit 3\n");
  std::filesystem::permissions(failing, std::filesystem::perms::owner_all);
  const std::string lost = dir.path("lost.png");
  r = tmakit::testing::run_cli("swizzle --png '" + lost + "'", true,
                               "PATH='" + dir.path("fails") + ":'\"$PATH\" ");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("the converter failed"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(lost + ".svg"));
  const std::string quoted = dir.path("x'y.png");
  r = tmakit::testing::run_cli("swizzle --png \"" + quoted + "\"", true, path);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("single quote"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(quoted + ".svg"));
}

TEST(SwizzleCli, AtomicityModes) {
  // FLOAT32 32 x 2 under 128B_ATOM_64B: line 1 stores its second 64 bytes first.
  expect_row("--type FLOAT32 --swizzle 128B_ATOM_64B --box 32x2 --text", "row   1", 1,
             "row   1 | c 16-19   b00-03 | c 20-23   b");
  // 128B_ATOM_32B_FLIP_8B draws 8-byte cells: line 1 swaps the halves of each 16 bytes.
  expect_row("--type FLOAT16 --swizzle 128B_ATOM_32B_FLIP_8B --box 64x2 --text", "row   1", 1,
             "row   1 | c 20-23   b00-01 | c 16-19   b02-03 | ");
}

TEST(SwizzleCli, PackedTypesDrawTheirBytes) {
  // 16U4_ALIGN16B under 128B_ATOM_32B: each 16 values' 8 bytes, then 8 of padding, in a slot;
  // line 1 swaps its two first 32-byte units, so stored bytes 0-31 hold slots 2 and 3.
  Result r = run("--type 16U4_ALIGN16B --swizzle 128B_ATOM_32B --box 128x2 --text");
  ASSERT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("(128 bytes: 64 of data, 64 of padding)"), std::string::npos);
  EXPECT_EQ(line_starting(r.out, "row   1", 1).substr(0, 77),
            "row   1 | c 32-47   b00-01 | (padding) b02-03 | c 48-63   b04-05 | (padding) ");
  // 16U6_ALIGN16B: 12 bytes of 6-bit values a slot; byte 7 holds values 9 and 10.
  expect_row("--type 16U6_ALIGN16B --swizzle NONE --box 128x1 --text", "row   0", 1,
             "row   0 | c  0-10   b00-01 | c 10-15   b02-03 | ");
  // 16U4_ALIGN8B stays packed (two values a byte): under the flip, line 1's first 8 bytes hold
  // logical bytes 40-47 (unit 1's second half), values 80-95.
  expect_row("--type 16U4_ALIGN8B --swizzle 128B_ATOM_32B_FLIP_8B --box 256x2 --text",
             "row   1", 1, "row   1 | c 80-95   b00-01 | c 64-79   b02-03 | ");
  // the SVG marks padding: row 1's slot 0 (line 1 under 128B: chunk 0 -> 1) pads at 156-159
  const auto path = std::filesystem::temp_directory_path() / "tmakit_swizzle_packed.svg";
  r = run("--type 16U6_ALIGN16B --swizzle 128B --box 128x2 --svg " + path.string());
  ASSERT_EQ(r.code, 0);
  std::ifstream f(path);
  const std::string svg((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(svg.find("<title>row 1 padding of slot 0 at byte 156 bank 7</title>"),
            std::string::npos);
  EXPECT_NE(svg.find("<title>row 0 cols 0-1 at byte 0 bank 0</title>"), std::string::npos);
  std::filesystem::remove(path);
}

TEST(SwizzleCli, PackedTypesRefusedByTheirRules) {
  const std::pair<const char*, const char*> cases[] = {
      {"--type 16U4_ALIGN16B --box 64x3",
       "a 16U4_ALIGN16B box row is exactly 128 values (rule P3); use --box 128x3"},
      {"--type 16U4_ALIGN16B --swizzle 64B --box 128x1",
       "16U4_ALIGN16B takes NONE, 128B or 128B_ATOM_32B (rule P5)"},
      {"--type 16U6_ALIGN16B --swizzle 128B_ATOM_32B_FLIP_8B --box 128x1",
       "takes NONE, 128B or 128B_ATOM_32B (and 128B_ATOM_64B for stores) (rule P5)"},
      {"--type 16U4_ALIGN8B --box 31x3",
       "a row is 15.5 bytes, not a multiple of 16 (rule T7); use 32 columns"},
      {"--type 16U4_ALIGN8B --swizzle 64B --box 256x2",
       "wider than the 64B span (rule T9); use at most 128 columns"},
  };
  expect_refused(cases);
}

// The picture agrees with the CPU model: a load of the same box (`tmakit simulate`, global
// bytes that are their offsets) puts at each shared byte the SVG names the global byte that
// holds those columns, and leaves every byte it calls padding unwritten.
TEST(SwizzleCli, PackedPicturesAgreeWithTheModel) {
  struct Case {
    const char* type;
    const char* swizzle;
    int cols, value_bits, row_data_bytes;
  };
  const Case cases[] = {{"16U4_ALIGN16B", "128B", 128, 4, 64},
                        {"16U4_ALIGN16B", "128B_ATOM_32B", 128, 4, 64},
                        {"16U6_ALIGN16B", "128B_ATOM_32B", 128, 6, 96},
                        {"16U6_ALIGN16B", "NONE", 128, 6, 96},
                        {"16U4_ALIGN8B", "128B_ATOM_32B_FLIP_8B", 256, 4, 128},
                        {"16U4_ALIGN8B", "64B", 128, 4, 64}};
  const tmakit::testing::ScratchDir dir("swizzle_model");
  std::string global(256, '\0');
  for (int i = 0; i < 256; ++i) global[i] = static_cast<char>(i);
  const std::string g = dir.write("g.bin", global);
  for (const Case& c : cases) {
    const std::string what = std::string(c.type) + " " + c.swizzle;
    char line[512];
    std::snprintf(line, sizeof line,
                  R"({"encode":"tiled","dataType":"%s","rank":2,"globalAddress":4096,)"
                  R"("globalDim":[%d,2],"globalStrides":[%d],"boxDim":[%d,2],)"
                  R"("elementStrides":[1,1],"interleave":"NONE","swizzle":"%s",)"
                  R"("l2Promotion":"NONE","oobFill":"NONE","coords":[0,0]})",
                  c.type, c.cols, c.row_data_bytes, c.cols, c.swizzle);
    const std::string spec = dir.write("s.jsonl", std::string(line) + "\n");
    const Result sim = tmakit::testing::run_cli("simulate --arch sm_100a --grid --global '" + g +
                                                "' --jsonl '" + spec + "'");
    ASSERT_EQ(sim.code, 0) << what << ": " << sim.out;
    // shared byte -> its value, or -1 where the load wrote nothing
    std::map<int, int> shared;
    std::istringstream in(sim.out);
    std::string text;
    while (std::getline(in, text)) {
      unsigned offset = 0;
      int used = 0;
      if (text.empty() || text[0] == '#' ||
          std::sscanf(text.c_str(), " %x:%n", &offset, &used) != 1) {
        continue;
      }
      std::istringstream bytes(text.substr(used));
      std::string b;
      for (int k = 0; bytes >> b; ++k) {
        shared[static_cast<int>(offset) + k] = b == ".." ? -1 : std::stoi(b, nullptr, 16);
      }
    }
    const std::string svg_path = dir.path("p.svg");
    std::snprintf(line, sizeof line, "--type %s --swizzle %s --box %dx2 --svg '%s'", c.type,
                  c.swizzle, c.cols, svg_path.c_str());
    ASSERT_EQ(run(line).code, 0) << what;
    std::ifstream f(svg_path);
    const std::string svg((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const std::size_t after = svg.find("after the swizzle (as stored)");
    ASSERT_NE(after, std::string::npos) << what;
    int checked = 0, padding = 0;
    for (std::size_t at = svg.find("<title>", after); at != std::string::npos;
         at = svg.find("<title>", at + 1)) {
      const std::string title = svg.substr(at + 7, svg.find("</title>", at) - at - 7);
      int row = 0, first = 0, last = 0, slot = 0, byte = 0, bank = 0;
      if (std::sscanf(title.c_str(), "row %d padding of slot %d at byte %d bank %d", &row, &slot,
                      &byte, &bank) == 4) {
        EXPECT_EQ(shared.at(byte), -1) << what << ": " << title;
        ++padding;
        continue;
      }
      ASSERT_EQ(std::sscanf(title.c_str(), "row %d cols %d-%d at byte %d", &row, &first, &last,
                            &byte),
                4)
          << what << ": " << title;
      // the byte of the row's packed data whose values are first..last
      int source = -1;
      for (int k = 0; k < c.row_data_bytes; ++k) {
        if (8 * k / c.value_bits == first && (8 * k + 7) / c.value_bits == last) source = k;
      }
      ASSERT_GE(source, 0) << what << ": " << title;
      EXPECT_EQ(shared.at(byte), row * c.row_data_bytes + source) << what << ": " << title;
      ++checked;
    }
    EXPECT_EQ(checked, 2 * c.row_data_bytes) << what;
    // (a padded type's row: 128 bytes of slots; a packed one's: its data alone)
    const bool padded = std::string(c.type) != "16U4_ALIGN8B";
    EXPECT_EQ(padding, padded ? 2 * (128 - c.row_data_bytes) : 0) << what;
  }
}

}  // namespace
