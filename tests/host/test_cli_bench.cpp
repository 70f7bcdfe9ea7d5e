// `tmakit bench` without a GPU: --list names the cases (the built-in GEMM shapes, or the ones
// given with --gemm-shape), and a malformed shape is refused with exit code 2 before anything
// runs.
#include <gtest/gtest.h>

#include <string>

#include "../cli_runner.hpp"

namespace tmakit {
namespace {

using testing::run_cli;

TEST(BenchCli, ListNamesTheBuiltInCases) {
  const auto r = run_cli("bench --list");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("add/int32/32768x32768/tmakit\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gemm/fp8/m4096n4096k4096/cublaslt-fp8\n"), std::string::npos);
  EXPECT_NE(r.out.find("gemm/fp8/m128n2112k7168/tmakit\n"), std::string::npos);
}

// --list runs no case: an output file beside it would be left unwritten, so it is refused;
// an unknown argument is named before a missing required option (check, simulate).
TEST(BenchCli, ListWithAnOutputFileAndUnknownArgumentsAreRefused) {
  testing::ScratchDir dir("bench_list");
  const auto listed = run_cli("bench --list --json " + dir.path("never_written.json"), true);
  EXPECT_EQ(listed.code, 2);
  EXPECT_EQ(listed.out,
            "tmakit bench: --list prints the cases' names and runs none, so --json would write "
            "nothing; leave it out\n");
  EXPECT_FALSE(std::filesystem::exists(dir.path("never_written.json")));
  // an unknown argument, with or without a required option missing, in one form
  const auto with_file = run_cli("check --bogus --jsonl " + dir.path("none.jsonl"), true);
  EXPECT_EQ(with_file.code, 2);
  EXPECT_EQ(with_file.out,
            "tmakit check: unknown argument '--bogus' (tmakit check --help lists the options)\n");
  const auto rules = run_cli("rules extra", true);
  EXPECT_EQ(rules.code, 2);
  EXPECT_EQ(rules.out,
            "tmakit rules: unknown argument 'extra' (tmakit rules --help lists the options)\n");
  const auto check = run_cli("check --bogus", true);
  EXPECT_EQ(check.code, 2);
  EXPECT_EQ(check.out,
            "tmakit check: unknown argument '--bogus' (tmakit check --help lists the options)\n");
  const auto simulate = run_cli("simulate --grid --bogus x", true);
  EXPECT_EQ(simulate.code, 2);
  EXPECT_EQ(simulate.out, "tmakit simulate: unknown arguments '--bogus' 'x' (tmakit simulate "
                          "--help lists the options)\n");
  const auto missing = run_cli("check", true);
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.out.find("--jsonl is required"), std::string::npos) << missing.out;
  EXPECT_NE(run_cli("bench --help").out.find("--runs INT:NUMBER=20"), std::string::npos);
}

TEST(BenchCli, GemmShapesReplaceTheList) {
  const auto r =
      run_cli("bench --gemm-shape 4096x4096x16384 --gemm-shape 3X5x16 --filter gemm/fp8 --list");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("gemm/fp8/m4096n4096k16384/tmakit\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gemm/fp8/m3n5k16/cublaslt-fp8\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("gemm/fp8/m4096n4096k4096/"), std::string::npos) << r.out;
}

// --gemm-shapes names sets of shapes (comma-separated or repeated), --gemm-shape's shapes run
// after them; each shape has the recipes' rows (row-wise, both modes; 128-block).
TEST(BenchCli, GemmShapeSetsReplaceTheList) {
  const auto r = run_cli("bench --gemm-shapes deepseek --gemm-shape 3x5x16 --filter gemm/fp8 --list");
  EXPECT_EQ(r.code, 0) << r.out;
  for (const char* id : {"gemm/fp8/m64n2112k7168/tmakit-block\n",
                         "gemm/fp8/m4096n7168k16384/cublaslt-fp8-row-fast\n",
                         "gemm/fp8/m128n32768k512/stream/tmakit-row\n",
                         "gemm/fp8/m3n5k16/cublaslt-fp8-block\n"}) {
    EXPECT_NE(r.out.find(id), std::string::npos) << id << r.out;
  }
  EXPECT_EQ(r.out.find("gemm/fp8/m4096n4096k4096/"), std::string::npos) << r.out;
  EXPECT_LT(r.out.find("gemm/fp8/m4096n7168k2048/"), r.out.find("gemm/fp8/m3n5k16/"));
  const auto both = run_cli("bench --gemm-shapes default,deepseek --filter gemm/fp8 --list");
  EXPECT_EQ(both.code, 0);
  EXPECT_NE(both.out.find("gemm/fp8/m4096n4096k4096/tmakit\n"), std::string::npos);
  EXPECT_NE(both.out.find("gemm/fp8/m64n32768k512/tmakit\n"), std::string::npos);
}

TEST(BenchCli, UnknownGemmShapeSetIsRefused) {
  const auto r = run_cli("bench --gemm-shapes deepseek,llama --list", true);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--gemm-shapes 'llama' is not a shape set; the sets are default, deepseek"),
            std::string::npos)
      << r.out;
}

TEST(BenchCli, MalformedGemmShapeIsRefused) {
  for (const char* bad : {"64x64x100", "0x64x64", "64x64", "64x64x64x64", "axbxc", "64x64x-16",
                          "4294967296x16x16", "64x64x16 "}) {
    const auto r = run_cli(std::string("bench --gemm-shape '") + bad + "' --list", true);
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_NE(r.out.find("is not MxNxK"), std::string::npos) << bad << ": " << r.out;
  }
}

TEST(BenchCli, StallSecondsMustBeAWholeNumberOfSeconds) {
  for (const char* bad : {"-3", "1.5", "ten", "86401"}) {
    const auto r = run_cli(std::string("bench --stall-seconds ") + bad + " --list", true);
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_NE(r.out.find("--stall-seconds"), std::string::npos) << bad << ": " << r.out;
  }
  EXPECT_EQ(run_cli("bench --stall-seconds 0 --list --filter 'add/'", true).code, 0);
}

// A filter that selects no case (a typo) would run nothing and report success: refused, with
// --list and without, before any GPU is looked for.
TEST(BenchCli, FilterThatSelectsNoCaseIsRefused) {
  for (const char* args : {"bench --list --filter nomatch-xyz", "bench --filter nomatch-xyz"}) {
    const auto r = run_cli(args, true);
    EXPECT_EQ(r.code, 2) << args;
    EXPECT_EQ(r.out,
              "tmakit bench: --filter 'nomatch-xyz' matches no case; `tmakit bench --list` shows "
              "them\n")
        << args;
  }
  // one alternative that selects cases is enough
  EXPECT_EQ(run_cli("bench --list --filter 'nomatch|add/int32'").code, 0);
}

// Numbers are whole and in range, each message saying which of the two it is not.
TEST(BenchCli, CountsNameTheirRange) {
  auto r = run_cli("bench --runs 1000000000 --list", true);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--runs: '1000000000' is outside 1..100000"), std::string::npos) << r.out;
  r = run_cli("bench --runs 99999999999999999999999 --list", true);
  EXPECT_NE(r.out.find("is outside 1..100000"), std::string::npos) << r.out;
  r = run_cli("bench --warmup 0000 --runs 0 --list", true);
  EXPECT_NE(r.out.find("--runs: '0' is outside 1..100000"), std::string::npos) << r.out;
  r = run_cli("bench --runs 1e3 --list", true);
  EXPECT_NE(r.out.find("--runs: '1e3' is not a whole number such as 1000"), std::string::npos)
      << r.out;
  // leading zeros are decimal, not octal (CLI11 reads "010" as 8)
  EXPECT_EQ(run_cli("bench --runs 010 --warmup 0000 --list --filter add/", true).code, 0);
}

}  // namespace
}  // namespace tmakit
