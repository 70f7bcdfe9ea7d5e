// `tmakit simulate` end to end: output format, error lines, exit codes. Expected outputs are
// written out by hand.
#include <gtest/gtest.h>

#include <algorithm>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../cli_runner.hpp"

namespace {

namespace fs = std::filesystem;

using Result = tmakit::testing::CliResult;

Result run(const std::string& args) { return tmakit::testing::run_cli(args); }

class SimulateCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tmakit_sim_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    // 128 global bytes whose value is their offset
    std::vector<char> g(128);
    for (int i = 0; i < 128; ++i) g[i] = static_cast<char>(i);
    write("g.bin", std::string(g.begin(), g.end()));
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

// 8 x 4 floats, rows 32 bytes apart.
std::string spec(const std::string& box, const std::string& swizzle, const std::string& coords,
                 const std::string& fill = "NONE") {
  return R"({"encode":"tiled","dataType":"FLOAT32","rank":2,"globalAddress":4096,)"
         R"("globalDim":[8,4],"globalStrides":[32],"boxDim":)" +
         box + R"(,"elementStrides":[1,1],"interleave":"NONE","swizzle":")" + swizzle +
         R"(","l2Promotion":"NONE","oobFill":")" + fill + R"(","coords":)" + coords + "}";
}

std::string hex_run(int first, int n) {
  std::string s;
  char b[3];
  for (int i = 0; i < n; ++i) {
    std::snprintf(b, sizeof b, "%02x", (first + i) & 0xFF);
    s += b;
  }
  return s;
}
std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

TEST_F(SimulateCli, PlainLoadPrintsTheBoxBytes) {
  const auto specs = write("s.jsonl", spec("[4,2]", "NONE", "[4,1]") + "\n");
  const Result r = run("simulate --global " + path("g.bin") + " --jsonl " + specs);
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, hex_run(48, 16) + hex_run(80, 16) + "\n");
}

TEST_F(SimulateCli, PaddedPackedLoadLeavesThePadUnwritten) {
  // 16U4_ALIGN16B, one row of 128 values (64 bytes) from global bytes 64..127: each 16 values'
  // 8 bytes fill the first half of a 16-byte slot, the other half is never written ("..").
  const auto specs = write("s.jsonl",
                           R"({"dataType":"16U4_ALIGN16B","globalAddress":0,"globalDim":[256],)"
                           R"("boxDim":[128],"coords":[128]})"
                           "\n");
  const Result r =
      run("simulate --arch sm_100a --global " + path("g.bin") + " --jsonl " + specs);
  EXPECT_EQ(r.code, 0);
  std::string want;
  for (int slot = 0; slot < 8; ++slot) want += hex_run(64 + 8 * slot, 8) + std::string(16, '.');
  EXPECT_EQ(r.out, want + "\n");
  // Hopper has no packed types.
  EXPECT_EQ(run("simulate --arch sm_90a --global " + path("g.bin") + " --jsonl " + specs).code, 1);
}

TEST_F(SimulateCli, InterleavedLoadCountsSlices) {
  // FLOAT16, interleave 16B, globalDim [4, 2, 2] (4 slices of 16 bytes), strides [16, 48], box
  // [8, 2, 2], elementStrides [2, 1, 1] (docs/hardware.md H12): each row reads slices 0, 2 and
  // fills slices 4, 6 (past globalDim[0]); dimension 1 is not walked; row 1 is dimension 2 = 1
  // (byte 48). Rows are 64 bytes: 16 + 16 + 32 zero bytes.
  const std::string il =
      R"({"encode":"tiled","dataType":"FLOAT16","rank":3,"globalAddress":4096,)"
      R"("globalDim":[4,2,2],"globalStrides":[16,48],"boxDim":[8,2,2],)"
      R"("elementStrides":[2,1,1],"interleave":"16B","swizzle":"NONE","l2Promotion":"NONE",)"
      R"("oobFill":"NONE","coords":[0,0,0]})";
  const auto specs = write("s.jsonl", il + "\n");
  const Result r = run("simulate --global " + path("g.bin") + " --jsonl " + specs);
  EXPECT_EQ(r.code, 0) << r.out;
  const std::string zeros = repeat("00", 32);
  EXPECT_EQ(r.out, hex_run(0, 16) + hex_run(32, 16) + zeros + hex_run(48, 16) + hex_run(80, 16) +
                       zeros + "\n");
}

TEST_F(SimulateCli, SwizzledNarrowRowsShowUnwrittenBytes) {
  // 64B swizzle, 32-byte rows: rows 64 apart, rows 2 and 3 with their chunks swapped (O2, O5)
  const auto specs = write("s.jsonl", spec("[8,4]", "64B", "[0,0]") + "\n");
  const Result r = run("simulate --global " + path("g.bin") + " --jsonl " + specs);
  EXPECT_EQ(r.code, 0);
  const std::string gap = repeat("..", 32);
  EXPECT_EQ(r.out, hex_run(0, 32) + gap + hex_run(32, 32) + gap + hex_run(80, 16) +
                       hex_run(64, 16) + gap + hex_run(112, 16) + hex_run(96, 16) + gap + "\n");
}

TEST_F(SimulateCli, NanFillAndNegativeCoordinates) {
  const auto specs =
      write("s.jsonl", spec("[8,1]", "NONE", "[-4,3]", "NAN_REQUEST_ZERO_FMA") + "\n");
  const Result r = run("simulate --global " + path("g.bin") + " --jsonl " + specs);
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, repeat("f77f", 8) + hex_run(96, 16) + "\n");
}

TEST_F(SimulateCli, ErrorLinesKeepOneLinePerInput) {
  const auto specs =
      write("s.jsonl", spec("[7,2]", "NONE", "[0,0]") + "\n" +        // T7
                           spec("[4,2]", "NONE", "[0]") + "\n" +      // wrong coords length
                           "not json\n" +                             //
                           spec("[4,2]", "NONE", "[0,0]") + "\n" +    // fine
                           spec("[4,2]", "NONE", "[0,1e3]") + "\n");  // not an integer
  const Result r = run("simulate --global " + path("g.bin") + " --jsonl " + specs);
  EXPECT_EQ(r.code, 1);
  std::vector<std::string> lines;
  std::size_t at = 0;
  while (at < r.out.size()) {
    const std::size_t nl = r.out.find('\n', at);
    lines.push_back(r.out.substr(at, nl - at));
    at = nl + 1;
  }
  ASSERT_EQ(lines.size(), 5u) << r.out;
  EXPECT_EQ(lines[0].rfind("error: T7: ", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1].rfind("error: coords: expected an array of 2", 0), 0u) << lines[1];
  EXPECT_EQ(lines[2].rfind("error: ", 0), 0u) << lines[2];
  EXPECT_EQ(lines[3], hex_run(0, 16) + hex_run(32, 16));
  EXPECT_EQ(lines[4].rfind("error: coords[1]", 0), 0u) << lines[4];
}

TEST_F(SimulateCli, MissingGlobalByteIsAnErrorLine) {
  // rows 4.. of a 400-row tensor are not in the 128-byte file
  std::string s = spec("[8,2]", "NONE", "[0,100]");
  s.replace(s.find("[8,4]"), 5, "[8,400]");
  const auto specs = write("s.jsonl", s + "\n");
  const Result r = run("simulate --global " + path("g.bin") + " --jsonl " + specs);
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out.rfind("error: global byte at offset 3200 (address 0x1c80)", 0), 0u) << r.out;
}

TEST_F(SimulateCli, UnreadableFilesAndBadUsageExitTwo) {
  const auto specs = write("s.jsonl", spec("[4,2]", "NONE", "[0,0]") + "\n");
  EXPECT_EQ(run("simulate --global " + path("missing.bin") + " --jsonl " + specs).code, 2);
  EXPECT_EQ(run("simulate --global " + path("g.bin") + " --jsonl " + path("none")).code, 2);
  EXPECT_EQ(run("simulate --jsonl " + specs).code, 2);
  EXPECT_EQ(run("simulate --global " + path("g.bin") + " --jsonl " + specs +
                " --reduce mul "
                "--shared " +
                path("g.bin"))
                .code,
            2);
  EXPECT_EQ(run("simulate --global " + path("g.bin") + " --jsonl " + specs + " --store").code, 2);
}

TEST_F(SimulateCli, StoreMarksTheBytesItWrites) {
  // store box 4 x 2 at (4, 1) from a shared buffer holding 0xA0.. : global bytes 48..63, 80..95
  std::string smem;
  for (int i = 0; i < 32; ++i) smem += static_cast<char>(0xA0 + i);
  write("smem.bin", smem);
  const auto specs = write("s.jsonl", spec("[4,2]", "NONE", "[4,1]") + "\n");
  const Result r = run("simulate --global " + path("g.bin") + " --jsonl " + specs +
                       " --store --shared " + path("smem.bin"));
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, repeat("..", 48) + hex_run(0xA0, 16) + repeat("..", 16) + hex_run(0xB0, 16) +
                       repeat("..", 32) + "\n");
}

// Past globalDim[0], a store writes the rest of the last 16-byte chunk (H4): 5 floats of 8 in
// the box, so bytes 20..31 of each row take the shared bytes too, and are marked.
TEST_F(SimulateCli, StoreMarksTheLastChunksPadding) {
  const auto global = write("pad.bin", std::string(64, '\0'));
  write("aa.bin", std::string(64, '\xaa'));
  const auto specs = write(
      "p.jsonl",
      R"({"dataType":"FLOAT32","globalAddress":0,"globalDim":[5,2],"globalStrides":[32],)"
      R"("boxDim":[8,2],"coords":[0,0]})"
      "\n");
  const Result r = run("simulate --global " + global + " --jsonl " + specs +
                       " --store --shared " + path("aa.bin"));
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, repeat("aa", 64) + "\n");
}

// With interleave the rows are dense whatever the swizzle (the model's footprint): the picture
// was drawn span-wide, 1024 bytes of which 768 belonged to no buffer.
TEST_F(SimulateCli, InterleavedSwizzledRowsAreDense) {
  std::string big(1024, '\0');
  for (int i = 0; i < 1024; ++i) big[i] = static_cast<char>(i);
  const auto global = write("big.bin", big);
  const auto specs = write(
      "s.jsonl",
      R"({"dataType":"FLOAT64","globalAddress":0,"globalDim":[2,4,8],"globalStrides":[32,128],)"
      R"("boxDim":[2,1,8],"interleave":"16B","swizzle":"128B","coords":[0,0,0]})"
      "\n");
  const Result r = run("simulate --global " + global + " --jsonl " + specs + " --grid");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')), "# line 1: 256 bytes, 32 per row");
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 9);  // the header and 8 rows
  EXPECT_EQ(r.out.find(".."), std::string::npos);               // every byte written
}

// At most one input reads stdin: a second "-" would find it used up and judge nothing.
TEST_F(SimulateCli, OneInputAtMostReadsStdin) {
  const auto specs = write("s.jsonl", spec("[4,2]", "NONE", "[0,0]") + "\n");
  const std::string global = path("g.bin");
  auto r = tmakit::testing::run_cli("simulate --global - --jsonl - < " + specs, true);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out,
            "tmakit simulate: --global and --jsonl cannot both read stdin (-) or one stream; "
            "give one of them a file\n");
  r = tmakit::testing::run_cli(
      "simulate --global " + global + " --jsonl - --store --shared - < " + specs, true);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out,
            "tmakit simulate: --jsonl and --shared cannot both read stdin (-) or one stream; "
            "give one of them a file\n");
  // stdin from a pipe under another name: the same stream (it exited 0, judging no line)
  r = tmakit::testing::run_cli("simulate --global /dev/stdin --jsonl -", true, "cat " + specs +
                                                                                 " | ");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out,
            "tmakit simulate: --global and --jsonl cannot both read stdin (-) or one stream; "
            "give one of them a file\n");
  // one is fine
  r = tmakit::testing::run_cli("simulate --global - --jsonl " + specs + " < " + global);
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, hex_run(0, 16) + hex_run(32, 16) + "\n");
}

// Options that would do nothing are refused: --shared without a store or reduce, an empty
// --reduce (which read as "not given", a load).
TEST_F(SimulateCli, OptionsThatDoNothingAreRefused) {
  const auto specs = write("s.jsonl", spec("[4,2]", "NONE", "[0,0]") + "\n");
  auto r = tmakit::testing::run_cli(
      "simulate --global " + path("g.bin") + " --jsonl " + specs + " --shared /nonexistent", true);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out,
            "tmakit simulate: --shared /nonexistent is the buffer a store or reduce "
            "writes from: give --store or --reduce OP, or leave --shared out for loads\n");
  r = tmakit::testing::run_cli("simulate --global " + path("g.bin") + " --jsonl " + specs +
                                   " --reduce '' --shared " + path("g.bin"),
                               true);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "tmakit simulate: --reduce '': the value is empty\n");
}

// Each spec is judged for the copy simulated: the rules about one direction apply, and a
// "direction" naming another copy is an error line.
TEST_F(SimulateCli, SpecsAreJudgedForTheCopySimulated) {
  std::string smem(1024, '\x5a');
  write("smem.bin", smem);
  const std::string shared = " --shared " + path("smem.bin");
  const std::string flip =
      R"({"dataType":"UINT8","globalAddress":0,"globalDim":[128,1],"globalStrides":[128],)"
      R"("boxDim":[128,1],"swizzle":"128B_ATOM_32B_FLIP_8B","coords":[0,0]})";
  const auto flips = write("flip.jsonl", flip + "\n");
  const std::string sim = "simulate --arch sm_100a --global " + path("g.bin") + " --jsonl ";
  // a load takes the 8-byte flip; a store (S1) and a reduce do not
  EXPECT_EQ(run(sim + flips).code, 0);
  Result r = run(sim + flips + " --store" + shared);
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out,
            "error: as a store: S1: swizzle 128B_ATOM_32B_FLIP_8B for a store; the 8-byte "
            "flip is for loads only: use 128B_ATOM_32B\n");
  r = run(sim + flips + " --reduce add" + shared);
  EXPECT_EQ(
      r.out.rfind("error: as a reduction: S1: swizzle 128B_ATOM_32B_FLIP_8B for a reduction", 0),
      0u)
      << r.out;
  // a direction the line gives must be the copy's
  const std::string swizzle = R"("swizzle":"128B_ATOM_32B_FLIP_8B")";
  std::string load = flip;
  load.replace(load.find(swizzle), swizzle.size(), R"("direction":"load")");
  r = run(sim + write("load.jsonl", load + "\n") + " --store" + shared);
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out,
            "error: direction: the line says load, and this run simulates a store (a load "
            "without options, --store, --reduce OP)\n");
  std::string store = load;
  store.replace(store.find("\"load\""), 6, "\"store\"");
  r = run("simulate --global " + path("g.bin") + " --jsonl " + write("st.jsonl", store + "\n"));
  EXPECT_EQ(r.out.rfind("error: direction: the line says store, and this run simulates a load", 0),
            0u)
      << r.out;
  EXPECT_EQ(run("simulate --global " + path("g.bin") + " --jsonl " +
                write("st2.jsonl", store + "\n") + " --store" + shared)
                .code,
            0);
  // gather4 and scatter4 are not modelled: their four rows are not in the spec
  const std::string gather =
      R"({"dataType":"UINT8","globalAddress":0,"globalDim":[32,4],"globalStrides":[32],)"
      R"("boxDim":[16,1],"tileMode":"gather4","coords":[0,1]})";
  r = run(sim + write("g4.jsonl", gather + "\n"));
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out,
            "error: tileMode gather4: simulate does not model gather4/scatter4 (a spec has "
            "no place for the copy's four row coordinates)\n");
}

TEST_F(SimulateCli, BlankLinesAreSkipped) {
  const auto specs = write("s.jsonl", "\n" + spec("[4,2]", "NONE", "[0,0]") + "\n \n");
  Result r = run("simulate --global " + path("g.bin") + " --jsonl " + specs);
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, hex_run(0, 16) + hex_run(32, 16) + "\n");
  r = run("simulate --global " + path("g.bin") + " --jsonl " + specs + " --grid");
  EXPECT_EQ(r.out.rfind("# line 2: ", 0), 0u) << r.out;  // the line's number in the file
}

}  // namespace
