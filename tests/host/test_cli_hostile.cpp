// The tmakit CLI against hostile input: every class of failure a hostile user found ends with a
// clear message and the right exit status while the other lines keep their verdicts; and
// every line of the exit-code contract in README.md ("The tool"), one test each.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "../cli_runner.hpp"
#include "tmakit/host/driver.hpp"

namespace tmakit {
namespace {

using testing::run_cli;
using testing::ScratchDir;

const std::string kGood =
    R"({"dataType":"FLOAT32","rank":2,"globalAddress":4096,"globalDim":[1024,512],)"
    R"("globalStrides":[4096],"boxDim":[32,32]})";
const std::string kRejected =
    R"({"dataType":"FLOAT32","rank":2,"globalAddress":4096,"globalDim":[1024,512],)"
    R"("globalStrides":[4096],"boxDim":[25,32]})";
// A load for `simulate`: 8 x 4 FLOAT32 box of an 8 x 4 tensor at (0, 0).
const std::string kLoad =
    R"({"dataType":"FLOAT32","rank":2,"globalAddress":4096,"globalDim":[8,4],)"
    R"("globalStrides":[32],"boxDim":[8,4],"coords":[0,0]})";

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A shell command line in which $T is the tmakit binary; stdout captured, stderr as the line
// says.
testing::CliResult run_shell(const std::string& line) {
  setenv("T", TMAKIT_CLI, 1);
  testing::CliResult r;
  FILE* p = popen(line.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// `tmakit` with the stand-in driver of stand_in_libcuda.cpp (accepts every tensor map).
testing::CliResult run_with_stand_in_driver(const std::string& args) {
  return run_shell("LD_LIBRARY_PATH=" TMAKIT_STAND_IN_DRIVER_DIR " \"$T\" " + args + " 2>&1");
}

// ---- the exit-code contract: 0 ------------------------------------------------------------

TEST(ExitCodes, ZeroWhenEveryLineIsOkSimulatedOrMended) {
  ScratchDir dir("exit0");
  EXPECT_EQ(run_cli("check --jsonl " + dir.write("a.jsonl", kGood + "\n" + kGood + "\n")).code, 0);
  std::string global(128, '\0');
  const auto g = dir.write("g.bin", global);
  EXPECT_EQ(
      run_cli("simulate --global " + g + " --jsonl " + dir.write("l.jsonl", kLoad + "\n")).code, 0);
  const auto r =
      run_cli("check --fix --jsonl " + dir.write("f.jsonl", kGood + "\n" + kRejected + "\n"));
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(lines(r.out).size(), 2u) << r.out;
}

TEST(ExitCodes, ZeroWhenTheDriverAgreesOnEveryLine) {
  ScratchDir dir("exit0_driver");
  const auto r =
      run_with_stand_in_driver("check --driver --jsonl " + dir.write("a.jsonl", kGood + "\n"));
  EXPECT_EQ(r.code, 0) << r.out;
}

TEST(ExitCodes, ZeroForListingsPicturesHelpAndVersion) {
  EXPECT_EQ(run_cli("rules").code, 0);
  EXPECT_EQ(run_cli("bench --list").code, 0);
  EXPECT_EQ(run_cli("swizzle --type FLOAT16 --swizzle 128B --box 64x8").code, 0);
  EXPECT_EQ(run_cli("--help").code, 0);
  EXPECT_EQ(run_cli("check --help").code, 0);
  EXPECT_EQ(run_cli("--version").code, 0);
}

// ---- 1 --------------------------------------------------------------------------------------

TEST(ExitCodes, OneWhenALineIsRejectedOrMalformedAndTheOthersStillJudged) {
  ScratchDir dir("exit1");
  auto r = run_cli("check --jsonl " + dir.write("a.jsonl", kRejected + "\n" + kGood + "\n"));
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(lines(r.out).size(), 2u);
  r = run_cli("check --jsonl " + dir.write("b.jsonl", "{\n" + kGood + "\n"));
  EXPECT_EQ(r.code, 1);
  ASSERT_EQ(lines(r.out).size(), 2u);
  EXPECT_EQ(lines(r.out)[1], "ok");
  const auto g = dir.write("g.bin", std::string(128, '\0'));
  r = run_cli("simulate --global " + g + " --jsonl " + dir.write("l.jsonl", "[]\n" + kLoad + "\n"));
  EXPECT_EQ(r.code, 1);
  ASSERT_EQ(lines(r.out).size(), 2u);
  EXPECT_EQ(lines(r.out)[0].rfind("error: ", 0), 0u);
}

TEST(ExitCodes, OneWhenTheDriverJudgesALineOtherwiseOrALineIsMalformed) {
  ScratchDir dir("exit1_driver");
  // the stand-in accepts what the validator rejects: they disagree
  auto r =
      run_with_stand_in_driver("check --driver --jsonl " + dir.write("a.jsonl", kRejected + "\n"));
  EXPECT_EQ(r.code, 1) << r.out;
  r = run_with_stand_in_driver("check --driver --jsonl " +
                               dir.write("b.jsonl", kGood + "\nnot json\n" + kGood + "\n"));
  EXPECT_EQ(r.code, 1) << r.out;  // a malformed line agrees with nothing
  EXPECT_EQ(lines(r.out).size(), 3u) << r.out;
}

TEST(ExitCodes, OneWhenNoPassingSpecIsNear) {
  ScratchDir dir("exit1_fix");
  std::string rank7 = kGood;
  rank7.replace(rank7.find("\"rank\":2"), 8, "\"rank\":7");
  const auto r =
      run_cli("check --fix --jsonl " + dir.write("a.jsonl", kGood + "\n" + rank7 + "\n"));
  EXPECT_EQ(r.code, 1);
  ASSERT_EQ(lines(r.out).size(), 2u);
  EXPECT_EQ(lines(r.out)[0], kGood);
  EXPECT_EQ(lines(r.out)[1].rfind("error: ", 0), 0u);
}

// ---- 2 --------------------------------------------------------------------------------------

TEST(ExitCodes, TwoForBadUsage) {
  auto r = run_cli("nonsense", true);
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.out, "'nonsense' is not a command")) << r.out;
  EXPECT_EQ(run_cli("check --jsonl x --no-such-option").code, 2);
  EXPECT_EQ(run_cli("check").code, 2);  // a required option missing
  r = run_cli("bench --list --runs 1e3", true);
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.out, "'1e3' is not a whole number")) << r.out;
  EXPECT_FALSE(has(r.out, "range")) << r.out;
  EXPECT_EQ(run_cli("bench --list --runs 0").code, 2);  // out of range
  EXPECT_EQ(run_cli("check --fix --json --jsonl x").code, 2);
  // an unknown option before the command is named
  r = run_cli("-x", true);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out.rfind("tmakit: '-x' is not an option of tmakit itself; options follow the "
                        "command (tmakit COMMAND --help), and the commands are bench check",
                        0),
            0u)
      << r.out;
  // a bench filter that selects no case; two inputs on stdin; --shared with nothing to write
  EXPECT_EQ(run_cli("bench --list --filter 'no-such-case'").code, 2);
  EXPECT_EQ(run_cli("simulate --global - --jsonl - < /dev/null").code, 2);
  EXPECT_EQ(run_cli("simulate --global /dev/null --jsonl - --shared /dev/null < /dev/null").code,
            2);
  // an empty value is refused, naming the option, where it would have meant "not given"
  for (const auto& [args, who] :
       {std::pair{"rules --arch ''", "tmakit rules: --arch"},
        std::pair{"swizzle --type FLOAT16 --swizzle 128B --box 64x8 --svg ''",
                  "tmakit swizzle: --svg"},
        std::pair{"bench --list --json ''", "tmakit bench: --json"},
        std::pair{"check --jsonl ''", "tmakit check: --jsonl"}}) {
    r = run_cli(args, true);
    EXPECT_EQ(r.code, 2) << args;
    EXPECT_EQ(r.out, std::string(who) + " '': the value is empty\n") << args;
  }
}

TEST(ExitCodes, TwoForInputThatCannotBeRead) {
  ScratchDir dir("exit2_in");
  auto r = run_cli("check --jsonl " + dir.path("missing.jsonl"), true);
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.out, "cannot read --jsonl")) << r.out;
  r = run_cli("check --jsonl - < " + dir.path(""), true);  // a directory as stdin
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.out, "is a directory")) << r.out;
  EXPECT_EQ(r.out.find("ok"), std::string::npos);
  r = run_cli("check --jsonl - <&-", true);  // stdin closed
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.out, "cannot read --jsonl -")) << r.out;
  if (std::filesystem::exists("/proc/self/mem")) {  // opens, then every read fails (EIO)
    r = run_cli("check --jsonl /proc/self/mem", true);
    EXPECT_EQ(r.code, 2);
    EXPECT_TRUE(has(r.out, "cannot read --jsonl /proc/self/mem: Input/output error")) << r.out;
  }
  r = run_cli("simulate --global " + dir.path("") + " --jsonl -", true);
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.out, "cannot read --global")) << r.out;
  EXPECT_TRUE(has(r.out, "is a directory")) << r.out;
  EXPECT_FALSE(has(r.out, "underflow")) << r.out;
}

TEST(ExitCodes, TwoForOutputThatCannotBeWritten) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full here";
  ScratchDir dir("exit2_out");
  const auto specs = dir.write("a.jsonl", kGood + "\n");
  const auto g = dir.write("g.bin", std::string(128, '\0'));
  const auto l = dir.write("l.jsonl", kLoad + "\n");
  const std::vector<std::string> commands = {"check --jsonl " + specs,
                                             "check --fix --jsonl " + specs,
                                             "rules",
                                             "rules --json",
                                             "simulate --global " + g + " --jsonl " + l,
                                             "bench --list",
                                             "swizzle --type FLOAT16 --swizzle 128B --box 64x8",
                                             "--help"};
  for (const std::string& args : commands) {
    const auto r = run_shell("\"$T\" " + args + " 2>&1 >/dev/full");
    EXPECT_EQ(r.code, 2) << args;
    EXPECT_TRUE(has(r.out, "cannot write the output")) << args << ": " << r.out;
  }
  const auto r = run_cli("swizzle --type FLOAT16 --swizzle 128B --box 64x8 --svg /dev/full", true);
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.out, "cannot write /dev/full")) << r.out;
}

TEST(ExitCodes, TwoWhenADriverOrGpuTheCommandNeedsIsMissing) {
  if (driver_available()) GTEST_SKIP() << "a CUDA driver is present here";
  ScratchDir dir("exit2_gpu");
  auto r = run_cli("check --driver --jsonl " + dir.write("a.jsonl", kGood + "\n"), true);
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.out, "libcuda.so.1")) << r.out;
  r = run_cli("bench --filter add/int32", true);
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.out, "libcuda.so.1")) << r.out;  // not "driver version is insufficient"
  EXPECT_FALSE(has(r.out, "insufficient")) << r.out;
}

// ---- the classes of hostile input ------------------------------------------------------------

TEST(HostileInput, DeepNestingIsRefusedWithoutQuotingItWhole) {
  ScratchDir dir("nesting");
  const auto g = dir.write("g.bin", std::string(128, '\0'));
  std::string deep = kLoad;
  deep.replace(deep.find("[0,0]"), 5, std::string(100000, '[') + std::string(100000, ']'));
  std::string arrays = kGood;
  arrays.replace(arrays.find("[32,32]"), 7,
                 "[32," + std::string(40, '[') + std::string(40, ']') + "]");
  const auto specs = dir.write("a.jsonl", deep + "\n" + kLoad + "\n");
  auto r = run_cli("simulate --global " + g + " --jsonl " + specs);
  EXPECT_EQ(r.code, 1);
  ASSERT_EQ(lines(r.out).size(), 2u);
  EXPECT_EQ(lines(r.out)[0], "error: coords: nested deeper than 16 levels of arrays and objects");
  EXPECT_EQ(lines(r.out)[1].size(), 256u);  // 128 bytes in hex
  r = run_cli("check --jsonl " + dir.write("b.jsonl", arrays + "\n"));
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "error: boxDim: nested deeper than 16 levels of arrays and objects\n");
  // a value quoted back is bounded: a 3-deep, 10,000-entry coords array
  std::string wide = kLoad;
  std::string entries = "[[[";
  for (int i = 0; i < 10000; ++i) entries += "1,";
  entries += "1]]]";
  wide.replace(wide.find("[0,0]"), 5, "[0," + entries + "]");
  r = run_cli("simulate --global " + g + " --jsonl " + dir.write("c.jsonl", wide + "\n"));
  EXPECT_EQ(r.code, 1);
  EXPECT_LT(r.out.size(), 200u) << r.out;
  EXPECT_EQ(r.out.rfind("error: coords[1]: [[[1,1,1,", 0), 0u) << r.out;
  EXPECT_TRUE(has(r.out, ",1... is not a signed 32-bit integer")) << r.out;
}

TEST(HostileInput, LinesPastTheLimitAreErrorsAndTheOthersAreJudged) {
  ScratchDir dir("long");
  std::string huge_array = kGood;
  std::string ones = "[";
  for (int i = 0; i < 600000; ++i) ones += "1,";
  ones += "1]";
  huge_array.replace(huge_array.size() - 1, 1, ",\"ignored\":" + ones + "}");
  const std::string brackets(2 << 20, '[');
  const auto r =
      run_cli("check --jsonl " + dir.write("a.jsonl", kGood + "\n" + huge_array + "\n" + brackets +
                                                          "\n" + kGood + "\n"));
  EXPECT_EQ(r.code, 1);
  const auto out = lines(r.out);
  ASSERT_EQ(out.size(), 4u) << r.out.substr(0, 500);
  EXPECT_EQ(out[0], "ok");
  EXPECT_EQ(out[1], "error: the line is " + std::to_string(huge_array.size()) +
                        " bytes, more than the 1048576 a spec line may have");
  EXPECT_EQ(out[2], "error: the line is 2097152 bytes, more than the 1048576 a spec line may have");
  EXPECT_EQ(out[3], "ok");
  // a "\r\n" line end is no part of the line's length, kept or not
  const auto crlf = run_cli(
      "check --jsonl " + dir.write("b.jsonl", std::string(1048577, 'x') + "\r\n" + kGood + "\r\n"));
  EXPECT_EQ(crlf.out,
            "error: the line is 1048577 bytes, more than the 1048576 a spec line may have\nok\n");
}

TEST(HostileInput, ALineOfManyObjectsIsJudgedInLinearTime) {
  ScratchDir dir("objects");
  // 1 MiB of "{}," in one array: the parse was quadratic in them, 16 s (--fix: 33 s)
  const std::string tail = R"(],"dataType":"FLOAT32","globalAddress":4096,"globalDim":[16],)"
                           R"("boxDim":[5]})";
  std::string line = R"({"x":[)";
  while (line.size() + 3 + tail.size() <= (1u << 20)) line += "{},";
  line += "{}" + tail;
  const auto file = dir.write("a.jsonl", line + "\n" + line + "\n");
  const auto started = std::chrono::steady_clock::now();
  const auto r = run_cli("check --fix --jsonl " + file);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(lines(r.out).size(), 2u);
  EXPECT_NE(r.out.find(R"("boxDim":[4]})"), std::string::npos);
  EXPECT_LT(seconds, 4.0);
}

TEST(HostileInput, GlobalFilesPastTheLimitAreRefusedBeforeReading) {
  ScratchDir dir("big_global");
  const auto g = dir.write("g.bin", "");
  std::filesystem::resize_file(g, (std::uint64_t{256} << 20) + 1);  // sparse: no disk used
  const auto r =
      run_cli("simulate --global " + g + " --jsonl " + dir.write("a.jsonl", kLoad + "\n"), true);
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.out, "holds 268435457 bytes; simulate reads at most 268435456 (256 MiB)"))
      << r.out;
}

TEST(HostileInput, NumbersPastADoubleAreErrorsNamingTheKey) {
  ScratchDir dir("numbers");
  std::string inf = kGood, digits = kGood, nested = kGood;
  inf.replace(inf.size() - 1, 1, ",\"junk\":1e999}");
  digits.replace(digits.find("[4096]"), 6, "[" + std::string(400, '9') + "]");
  nested.replace(nested.find("[1024,512]"), 10, "[1024,-1e400]");
  const auto r =
      run_cli("check --jsonl " + dir.write("a.jsonl", kGood + "\n" + inf + "\n" + digits + "\n" +
                                                          nested + "\n" + kGood + "\n"));
  EXPECT_EQ(r.code, 1);
  const auto out = lines(r.out);
  ASSERT_EQ(out.size(), 5u) << r.out;
  EXPECT_EQ(out[0], "ok");
  EXPECT_EQ(out[1], "error: junk: 1e999 is too large for any number");
  EXPECT_EQ(out[2], "error: globalStrides[0]: " + std::string(32, '9') +
                        "... (368 more bytes) is too large for any number");
  EXPECT_EQ(out[3], "error: globalDim[1]: -1e400 is too large for any number");
  EXPECT_EQ(out[4], "ok");
}

TEST(HostileInput, ABoxPastSharedMemoryIsRefusedBySimulateBeforeAllocating) {
  ScratchDir dir("box");
  // UINT8 [256,256,256,64,7] with elementStrides [1,1,1,1,8]: the driver counts floor(7/8) = 0
  // for the last dimension (X1) and accepts it; the copy would write 1 GiB.
  const std::string spec =
      R"({"dataType":"UINT8","rank":5,"globalAddress":0,"globalDim":[256,256,256,64,7],)"
      R"("globalStrides":[256,65536,16777216,1073741824],"boxDim":[256,256,256,64,7],)"
      R"("elementStrides":[1,1,1,1,8],"coords":[0,0,0,0,0]})";
  const auto specs = dir.write("a.jsonl", spec + "\n");
  EXPECT_EQ(run_cli("check --jsonl " + specs).out, "ok\n");
  const auto g = dir.write("g.bin", std::string(64, '\0'));
  // under 4 GiB of address space, less than the footprint's copies would need
  const auto r =
      run_shell("ulimit -v 4194304; \"$T\" simulate --global " + g + " --jsonl " + specs);
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out.rfind("error: the box's shared-memory footprint is ", 0), 0u) << r.out;
  EXPECT_TRUE(has(r.out, "(228 KiB) a CTA's shared memory holds")) << r.out;
}

TEST(HostileInput, NulBytesAreErrors) {
  ScratchDir dir("nul");
  std::string in_string = kGood;
  in_string.replace(in_string.find("FLOAT32"), 7, std::string("FLO\0AT32", 8));
  const auto r =
      run_cli("check --jsonl " + dir.write("a.jsonl", kGood + std::string("\0junk", 5) + "\n" +
                                                          in_string + "\n" + kGood + "\n"));
  EXPECT_EQ(r.code, 1);
  const auto out = lines(r.out);
  ASSERT_EQ(out.size(), 3u) << r.out;
  // bytes counted from 1, as the JSON errors count them
  EXPECT_EQ(out[0], "error: byte " + std::to_string(kGood.size() + 1) +
                        " of the line is NUL; a spec line is text");
  EXPECT_EQ(out[1], "error: byte 17 of the line is NUL; a spec line is text");
  EXPECT_EQ(out[2], "ok");
}

TEST(HostileInput, ParseErrorsNameTheByteNotLineOne) {
  ScratchDir dir("where");
  const auto r =
      run_cli("check --jsonl " + dir.write("a.jsonl", kGood + "\n" + kGood + "\n{\"a\":tru}\n"));
  const auto out = lines(r.out);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[2].rfind("error: invalid JSON at byte 9: ", 0), 0u) << out[2];
  EXPECT_FALSE(has(r.out, "line 1")) << r.out;
}

TEST(HostileInput, TheBenchFilterIsAGlobThatCannotRecurseOrBacktrack) {
  const std::string nested = std::string(16000, '(') + "a" + std::string(16000, ')');
  auto r = run_cli("bench --list --filter '" + nested + "'", true);
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.out, "--filter is 32001 characters long; the limit is 1024"))
      << r.out.substr(0, 300);
  r = run_cli("bench --list --filter '(.*.*)*X'", true);
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.out, "--filter holds '(': the filter is a glob")) << r.out;
  // stars that a backtracking matcher would take exponentially long over: linear here
  r = run_cli("bench --list --filter '" + std::string(500, '*') + "a" + std::string(400, '*') +
              "X'");
  EXPECT_EQ(r.code, 2);  // it selects no case
  EXPECT_EQ(r.out, "");
  r = run_cli("bench --list --filter 'transpose/fp32/*/tmakit|add/int32/*/memcpy'");
  EXPECT_EQ(r.code, 0);
  for (const auto& id : lines(r.out)) {
    EXPECT_TRUE((id.rfind("transpose/fp32/", 0) == 0 && id.size() > 7 &&
                 id.substr(id.size() - 7) == "/tmakit") ||
                (id.rfind("add/int32/", 0) == 0 && id.substr(id.size() - 7) == "/memcpy"))
        << id;
  }
  EXPECT_GE(lines(r.out).size(), 2u) << r.out;
  // GEMM ids go through the same glob
  r = run_cli("bench --list --filter 'gemm/fp8/m4096n4096k4096/tmakit'");
  EXPECT_TRUE(has(r.out, "gemm/fp8/m4096n4096k4096/tmakit\n")) << r.out;
  EXPECT_FALSE(has(r.out, "m128n2112k7168")) << r.out;
  r = run_cli("bench --list --filter 'gemm/fp8/m409?n4096k4096/cublas*'");
  EXPECT_TRUE(has(r.out, "gemm/fp8/m4096n4096k4096/cublaslt-fp8\n")) << r.out;
}

TEST(HostileInput, BenchReportPathsAreCheckedBeforeTheRun) {
  ScratchDir dir("bench_paths");
  auto r = run_cli("bench --filter add --json " + dir.path("no/such/folder/r.json"), true);
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.out, "--json " + dir.path("no/such/folder/r.json") + " cannot be written"))
      << r.out;
  r = run_cli("bench --filter add --svg " + dir.path(""), true);
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.out, "is a directory")) << r.out;
  EXPECT_FALSE(std::filesystem::exists(dir.path("no")));
}

TEST(HostileInput, SwizzlePngPathsNeverReachTheConverterAsOptions) {
  ScratchDir dir("png");
  // a converter that records its arguments
  const auto fake = dir.write("rsvg-convert", "#!/bin/sh\nprintf '%s\\n' \"$@\" > args.txt\n");
  std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
  // (a file beside the PNG named as a temporary SVG might be: someone's, left alone)
  dir.write("-o.png.svg", "keep");
  const auto r = run_shell("cd " + dir.path("") + " && TMPDIR=" + dir.path("") + " PATH=" +
                           dir.path("") +
                           ":$PATH \"$T\" swizzle --type FLOAT16 --swizzle 128B --box 64x8 "
                           "--png -o.png");
  EXPECT_EQ(r.code, 0);
  std::ifstream f(dir.path("args.txt"));
  std::vector<std::string> args;
  for (std::string a; std::getline(f, a);) args.push_back(a);
  ASSERT_EQ(args.size(), 3u);
  EXPECT_EQ(args[0], "-o");
  EXPECT_EQ(args[1], "./-o.png");
  // the SVG: a temporary file of its own in TMPDIR, removed after
  EXPECT_EQ(args[2].rfind(dir.path("tmakit-swizzle-"), 0), 0u) << args[2];
  EXPECT_FALSE(std::filesystem::exists(args[2])) << args[2];
  std::ifstream kept(dir.path("-o.png.svg"));
  std::string text((std::istreambuf_iterator<char>(kept)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "keep");
}

TEST(HostileInput, OutputFilesAreCheckedFirstAndWrittenWholeOrNotAtAll) {
  ScratchDir dir("out");
  // stdout captured; stderr to a file, read after
  std::string err;
  auto run = [&](const std::string& line) {
    const auto r = run_shell(line + " 2>" + dir.path("err.txt"));
    std::ifstream f(dir.path("err.txt"));
    err.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    return r;
  };
  // an SVG path that is a folder: refused before the text picture is printed
  std::filesystem::create_directory(dir.path("folder"));
  auto r = run("\"$T\" swizzle --text --svg " + dir.path("folder"));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(err.find("--svg " + dir.path("folder") + " cannot be written: is a directory"),
            std::string::npos) << err;
  // a full device: refused with the reason, nothing printed
  r = run("\"$T\" swizzle --text --svg /dev/full");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(err.find("cannot write /dev/full: No space left on device"), std::string::npos)
      << err;
  // --base in digits only (0200 is 200, not octal 128)
  r = run("\"$T\" swizzle --base 0200");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(err.find("--base 200 is not 128-byte aligned"), std::string::npos) << err;
  EXPECT_EQ(run("\"$T\" swizzle --base 0x80").code, 2);
  // bench's two reports in one file, however the paths are spelled
  r = run("cd " + dir.path("") + " && \"$T\" bench --list --json r --svg ./r");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(err.find("--json and --svg name one file"), std::string::npos) << err;
  // a link is written through, not replaced by a file
  dir.write("target.svg", "old");
  std::filesystem::create_symlink(dir.path("target.svg"), dir.path("link.svg"));
  EXPECT_EQ(run("\"$T\" swizzle --svg " + dir.path("link.svg")).code, 0);
  EXPECT_TRUE(std::filesystem::is_symlink(dir.path("link.svg")));
  std::ifstream drawn(dir.path("target.svg"));
  const std::string svg((std::istreambuf_iterator<char>(drawn)), std::istreambuf_iterator<char>());
  EXPECT_EQ(svg.rfind("<svg", 0), 0u) << svg.substr(0, 40);
  // an input that is also the output would be read back forever
  const auto specs = dir.write("loop.jsonl", R"({"dataType":"FLOAT32","globalAddress":4096,)"
                                             R"("globalDim":[64,8],"globalStrides":[256],)"
                                             R"("boxDim":[8,4]})"
                                             "\n");
  r = run("\"$T\" check --jsonl " + specs + " >> " + specs);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(err.find("it is also the output (stdout)"), std::string::npos) << err;
  std::ifstream f(specs);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
}

}  // namespace
}  // namespace tmakit
