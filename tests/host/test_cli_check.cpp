// `tmakit check` end to end: one verdict line per input line, exit codes 0 / 1 / 2, and no
// crash or hang on truncated, garbage, random-byte, huge or negative input.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../cli_runner.hpp"
#include "tmakit/host/validate.hpp"

namespace tmakit {
namespace {

using testing::run_cli;
using testing::ScratchDir;

const std::string kGood =
    R"({"encode":"tiled","dataType":"FLOAT32","rank":2,"globalAddress":4096,)"
    R"("globalDim":[1024,512],"globalStrides":[4096],"boxDim":[32,32],)"
    R"("elementStrides":[1,1],"interleave":"NONE","swizzle":"128B","l2Promotion":"256B",)"
    R"("oobFill":"NONE"})";

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::string with(const std::string& key_and_value, const std::string& replacing) {
  std::string s = kGood;
  const auto at = s.find(replacing);
  EXPECT_NE(at, std::string::npos) << replacing;
  return s.replace(at, replacing.size(), key_and_value);
}

TEST(CheckCli, GoodSpecIsOkAndExitsZero) {
  ScratchDir dir("check_good");
  const auto r = run_cli("check --jsonl " + dir.write("a.jsonl", kGood + "\n"));
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "ok\n");
}

TEST(CheckCli, OneVerdictPerLineInOrder) {
  ScratchDir dir("check_mixed");
  const std::string input = kGood + "\n" + with(R"("boxDim":[25,32])", R"("boxDim":[32,32])") +
                            "\n" + "not json\n" + "]\n" + kGood;  // last line: no newline
  const auto r = run_cli("check --jsonl " + dir.write("a.jsonl", input));
  EXPECT_EQ(r.code, 1);
  const auto out = lines(r.out);
  ASSERT_EQ(out.size(), 5u) << r.out;
  EXPECT_EQ(out[0], "ok");
  EXPECT_EQ(out[1], "rejected T7: boxDim[0]*4 = 100 bytes is not a multiple of 16; use 24 or 28");
  // the byte of the line, never "line 1" (the parser sees one line at a time)
  EXPECT_EQ(out[2], "error: invalid JSON at byte 2: syntax error while parsing value - invalid "
                    "literal; last read: 'no'");
  EXPECT_EQ(out[3].rfind("error: invalid JSON at byte 1: ", 0), 0u) << out[3];
  EXPECT_EQ(out[4], "ok");
}

// Blank lines (an editor's trailing newline, spaces, tabs, CRLF) get no verdict, as JSONL
// readers skip them; --json's line numbers still count every line of the file.
TEST(CheckCli, BlankLinesAreSkipped) {
  ScratchDir dir("check_blank");
  const auto file = dir.write("a.jsonl", kGood + "\n\n  \t\r\n\r\n" + kGood + "\n\n");
  auto r = run_cli("check --jsonl " + file);
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "ok\nok\n");
  r = run_cli("check --json --jsonl " + file);
  EXPECT_EQ(r.out, "{\"line\":1,\"verdict\":\"ok\"}\n{\"line\":5,\"verdict\":\"ok\"}\n");
  r = run_cli("check --fix --jsonl " + file);
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, kGood + "\n" + kGood + "\n");
}

TEST(CheckCli, ValueErrorsNameTheKey) {
  ScratchDir dir("check_values");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {with(R"("globalAddress":-16)", R"("globalAddress":4096)"),
       "error: globalAddress: -16 is negative (expected an integer in 0..18446744073709551615)"},
      {with(R"("globalDim":[1024,18446744073709551616])", R"("globalDim":[1024,512])"),
       "error: globalDim[1]: about 1.8446744073709552e+19, past 64 bits, is out of range "
       "(expected an integer in 0..18446744073709551615)"},
      {with(R"("boxDim":[32,4294967296])", R"("boxDim":[32,32])"),
       "error: boxDim[1]: 4294967296 is out of range (expected an integer in 0..4294967295)"},
      {with(R"("boxDim":[32])", R"("boxDim":[32,32])"), "error: boxDim: has 1 entries; expected 2"},
      {with(R"("boxDim":"32")", R"("boxDim":[32,32])"),
       "error: boxDim: expected an array, got a string"},
      {with(R"("globalAddress":1e19)", R"("globalAddress":4096)"),
       "error: globalAddress: 1e+19 is a whole number written as a float; give it as the integer "
       "10000000000000000000"},
      {with(R"("boxDim":[32,1e10])", R"("boxDim":[32,32])"),
       "error: boxDim[1]: 10000000000.0 is out of range (expected an integer in 0..4294967295)"},
      {with(R"("boxDim":[32,3.5])", R"("boxDim":[32,32])"),
       "error: boxDim[1]: 3.5 is not an integer (expected an integer in 0..4294967295)"},
      {with(R"("swizzle":"256B")", R"("swizzle":"128B")"),
       "error: swizzle: unknown value \"256B\" (expected one of NONE, 32B, 64B, 128B)"},
      {with(R"("dataType":7)", R"("dataType":"FLOAT32")"),
       "error: dataType: expected a string (UINT8, UINT16, UINT32, INT32, UINT64, INT64, FLOAT16, "
       "FLOAT32, FLOAT64, BFLOAT16, FLOAT32_FTZ, TFLOAT32, TFLOAT32_FTZ), got a number"},
      {R"({"dataType":"FLOAT32","globalDim":[16],"boxDim":[4]})", "error: globalAddress: missing"},
      {"[1,2,3]", "error: expected a JSON object, got an array"},
  };
  std::string input;
  for (const auto& c : cases) input += c.first + "\n";
  const auto r = run_cli("check --jsonl " + dir.write("a.jsonl", input));
  EXPECT_EQ(r.code, 1);
  const auto out = lines(r.out);
  ASSERT_EQ(out.size(), cases.size()) << r.out;
  for (std::size_t i = 0; i < cases.size(); ++i) EXPECT_EQ(out[i], cases[i].second) << i;
}

TEST(CheckCli, BigNumbersAreFull64Bit) {
  ScratchDir dir("check_big");
  // A 2^56-byte stride fits the type (and breaks T6); 2^64-16 as an address breaks X2.
  const auto a = with(R"("globalStrides":[72057594037927936])", R"("globalStrides":[4096])");
  const auto b = with(R"("globalAddress":18446744073709551600)", R"("globalAddress":4096)");
  const auto r = run_cli("check --jsonl " + dir.write("a.jsonl", a + "\n" + b + "\n"));
  EXPECT_EQ(r.code, 1);
  const auto out = lines(r.out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].rfind("rejected T6: globalStrides[0] = 72057594037927936 bytes", 0), 0u)
      << out[0];
  EXPECT_EQ(out[1].rfind("rejected X2: globalAddress = 0xfffffffffffffff0", 0), 0u) << out[1];
}

TEST(CheckCli, RandomBytesGiveOneErrorLinePerLine) {
  ScratchDir dir("check_random");
  std::mt19937 rng(7);
  std::string input;
  for (int i = 0; i < 20000; ++i) input += static_cast<char>(rng() & 0xff);
  input += '\n';
  // one verdict per line that is not blank
  std::size_t judged = 0;
  for (std::size_t at = 0; at < input.size();) {
    const std::size_t nl = input.find('\n', at);
    judged += input.substr(at, nl - at).find_first_not_of(" \t\r") != std::string::npos;
    at = nl + 1;
  }
  const auto r = run_cli("check --jsonl " + dir.write("a.bin", input));
  EXPECT_EQ(r.code, 1);
  const auto out = lines(r.out);
  EXPECT_EQ(out.size(), judged);
  for (const auto& l : out) {
    EXPECT_EQ(l.rfind("error: ", 0), 0u) << l;
    for (unsigned char ch : l) EXPECT_TRUE(ch >= 0x20 && ch < 0x7f) << "unprintable byte";
  }
}

TEST(CheckCli, TruncatedLinesAreErrors) {
  ScratchDir dir("check_trunc");
  std::string input;
  for (std::size_t n = 1; n < kGood.size(); n += 7) input += kGood.substr(0, n) + "\n";
  const auto r = run_cli("check --jsonl " + dir.write("a.jsonl", input));
  EXPECT_EQ(r.code, 1);
  for (const auto& l : lines(r.out)) EXPECT_EQ(l.rfind("error: ", 0), 0u) << l;
}

TEST(CheckCli, StdinAndJsonOutput) {
  ScratchDir dir("check_stdin");
  const auto file = dir.write("a.jsonl", with(R"("rank":7)", R"("rank":2)") + "\n");
  // rank 7 disagrees with the arrays' length 2
  auto r = run_cli("check --jsonl - < " + file);
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out,
            "error: rank: 7, but globalDim has 2 entries; give rank 2 or leave it out (it is "
            "then globalDim's length)\n");
  r = run_cli("check --json --jsonl " + dir.write("b.jsonl", kGood + "\n"));
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "{\"line\":1,\"verdict\":\"ok\"}\n");
}

TEST(CheckCli, UsageAndUnreadableFilesExitTwo) {
  EXPECT_EQ(run_cli("check").code, 2);
  EXPECT_EQ(run_cli("check --jsonl /nonexistent/specs.jsonl").code, 2);
  EXPECT_EQ(run_cli("check --jsonl /").code, 2);  // a directory
  EXPECT_EQ(run_cli("nonsense").code, 2);
  EXPECT_EQ(run_cli("").code, 2);
}

TEST(RulesCli, ListsEveryRuleInOrder) {
  const auto r = run_cli("rules");
  EXPECT_EQ(r.code, 0);
  const auto out = lines(r.out);
  ASSERT_GT(out.size(), rules().size());
  for (std::size_t i = 0; i < rules().size(); ++i) {
    const Rule& rule = rules()[i];
    const std::string ids =
        std::string(rule.id) + (rule.im2col_id.empty() ? "" : " / " + std::string(rule.im2col_id));
    EXPECT_EQ(out[i], ids + "\t" + std::string(rule.summary));
  }
  const auto j = run_cli("rules --json");
  EXPECT_EQ(j.code, 0);
  EXPECT_NE(j.out.find("\"id\": \"X4\""), std::string::npos) << j.out;
}

// Every id `check` gives can be looked up: T8's and T9's im2col verdicts say I6 and I7.
TEST(RulesCli, ListsTheIm2colIdsCheckGives) {
  const auto text = run_cli("rules");
  EXPECT_NE(text.out.find("\nT8 / I6\telementStrides in 1..8\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("\nT9 / I7\twith a swizzle and no interleave, the inner box row fits "
                          "the swizzle span\n"),
            std::string::npos)
      << text.out;
  const auto j = run_cli("rules --json");
  EXPECT_NE(j.out.find("\"id\": \"T8\",\n    \"im2colId\": \"I6\""), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"id\": \"T9\",\n    \"im2colId\": \"I7\""), std::string::npos) << j.out;
}

TEST(RulesCli, PerArchitecture) {
  const auto hopper = lines(run_cli("rules --arch sm_90a").out);
  const auto blackwell = lines(run_cli("rules --arch sm_100a").out);
  ASSERT_GT(hopper.size(), rules(Arch::sm_90a).size());
  for (std::size_t i = 0; i < rules(Arch::sm_90a).size(); ++i) {
    EXPECT_EQ(hopper[i].substr(0, hopper[i].find_first_of(" \t")), rules(Arch::sm_90a)[i].id);
  }
  ASSERT_GT(blackwell.size(), rules(Arch::sm_100a).size());
  for (std::size_t i = 0; i < rules(Arch::sm_100a).size(); ++i) {
    EXPECT_EQ(blackwell[i].substr(0, blackwell[i].find_first_of(" \t")),
              rules(Arch::sm_100a)[i].id);
  }
  EXPECT_EQ(blackwell[7].substr(0, 3), "P1\t");
  // each list holds only the rules that can refuse a spec there: A1 has nothing to refuse on
  // sm_100a and sm_103a; T2 names the architecture's types
  auto has = [](const std::vector<std::string>& list, const std::string& line) {
    return std::find(list.begin(), list.end(), line) != list.end();
  };
  const std::string a1 =
      "A1\tim2col_wide, gather4 and scatter4 need sm_100a or later; not W128 or scatter4 on "
      "sm_120a";
  const auto b300 = lines(run_cli("rules --arch sm_103a").out);
  const auto rtx = lines(run_cli("rules --arch sm_120a").out);
  EXPECT_TRUE(has(hopper, a1));
  EXPECT_FALSE(has(blackwell, a1));
  EXPECT_FALSE(has(b300, a1));
  EXPECT_TRUE(has(rtx, a1));
  EXPECT_EQ(hopper[0], "T2\tdata type is one of the 13 Hopper tensor-map types");
  for (const auto* list : {&blackwell, &b300, &rtx}) {
    EXPECT_EQ((*list)[0],
              "T2\tdata type is one of the 16 tensor-map types (Hopper's 13 and 16U4_ALIGN8B, "
              "16U4_ALIGN16B, 16U6_ALIGN16B)");
    EXPECT_TRUE(has(*list,
                    "I8\tim2col stores and reductions: pixel-box lower corners >= 0, "
                    "upper corners <= 0"));
  }
  EXPECT_FALSE(has(hopper,
                   "I8\tim2col stores and reductions: pixel-box lower corners >= 0, "
                   "upper corners <= 0"));
  const auto bad = run_cli("rules --arch sm_89", /*with_stderr=*/true);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("--arch sm_89: unknown architecture (known: sm_90a, sm_100a, sm_103a, "
                         "sm_120a)"),
            std::string::npos)
      << bad.out;
}

TEST(CheckCli, ArchChoosesTheRules) {
  ScratchDir dir("check_arch");
  const std::string file = dir.path("specs.jsonl");
  std::ofstream(file) << R"({"dataType":"16U4_ALIGN16B","globalAddress":4096,)"
                         R"("globalDim":[1000,64],"globalStrides":[512],"boxDim":[128,16]})"
                      << "\n";
  auto r = run_cli("check --arch sm_100a --jsonl " + file);
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out,
            "rejected P2: globalDim[0] = 1000 values of 16U4_ALIGN16B is not a multiple of 128; "
            "pad the rows to 1024 values or use 896\n");
  r = run_cli("check --arch sm_100a --fix --jsonl " + file);
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("\"globalDim\":[1024,64]"), std::string::npos) << r.out;
  r = run_cli("check --arch sm_90a --jsonl " + file);
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out.rfind("rejected T2: data type 16U4_ALIGN16B is not a Hopper tensor-map type", 0), 0u)
      << r.out;
  // a padded type with interleave 32B: T10's fix is the interleave (P5 refuses swizzle 32B),
  // not a cycle of swizzles
  const std::string padded = dir.write(
      "padded.jsonl", R"({"dataType":"16U4_ALIGN16B","globalAddress":0,"globalDim":[128,4,4],)"
                      R"("globalStrides":[128,512],"boxDim":[128,2,2],"interleave":"32B"})"
                      "\n");
  r = run_cli("check --arch sm_100a --fix --jsonl " + padded);
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, R"({"dataType":"16U4_ALIGN16B","globalAddress":0,"globalDim":[128,4,4],)"
                   R"("globalStrides":[128,512],"boxDim":[128,2,2],"interleave":"NONE"})"
                   "\n");
  const auto bad = run_cli("check --arch sm_91a --jsonl " + file, /*with_stderr=*/true);
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.out,
            "tmakit check: --arch sm_91a: unknown architecture (known: sm_90a, sm_100a, sm_103a, "
            "sm_120a)\n");
}

}  // namespace
}  // namespace tmakit
