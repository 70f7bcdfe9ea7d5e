// A bounded, seeded fuzz of hostile spec lines (deep nesting, numbers past any type, NUL bytes,
// invalid UTF-8, huge arrays, random bytes, lines past the size limit, mutated and random
// specs) through the code paths of `check` and `simulate`: in one process, and through the
// CLI binary, both under a 4 GiB address-space limit. Fails on any crash, hang (a timeout)
// or lost verdict (the CLI must print exactly one line per input line). About 10 s of CI.
// TMAKIT_FUZZ_SEED=<n> replays another sequence.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "../cli_runner.hpp"
#include "tmakit/host/spec_json.hpp"
#include "tmakit/host/validate.hpp"
#include "tmakit/model/tma_model.hpp"

namespace tmakit {
namespace {

constexpr rlim_t kAddressSpaceBytes = rlim_t{4} << 30;
constexpr int kLines = 1000;

const char* const kKeys[] = {"encode",
                             "dataType",
                             "rank",
                             "globalAddress",
                             "globalDim",
                             "globalStrides",
                             "boxDim",
                             "elementStrides",
                             "interleave",
                             "swizzle",
                             "l2Promotion",
                             "oobFill",
                             "pixelBoxLowerCorner",
                             "pixelBoxUpperCorner",
                             "channelsPerPixel",
                             "pixelsPerColumn",
                             "coords",
                             "unknown"};

class Hostile {
 public:
  explicit Hostile(std::uint64_t seed) : rng_(seed) {}

  std::string line() {
    switch (pick(10)) {
      case 0: return mutated(spec());
      case 1: return nested();
      case 2: return with_value(big_number());
      case 3: return with_nul();
      case 4: return with_value("\"" + bad_utf8() + "\"");
      case 5: return huge_array();
      case 6: return random_bytes(pick(2000));
      case 7:
        return std::string(pick(3) == 0 ? (1u << 20) + 1 + pick(1 << 20) : pick(1 << 20),
                           "[{\"1 "[pick(5)]);
      case 8: return random_spec();
      default: return spec();
    }
  }

 private:
  std::uint64_t pick(std::uint64_t n) { return n == 0 ? 0 : rng_() % n; }

  std::string number() {
    switch (pick(8)) {
      case 0: return std::to_string(pick(9));
      case 1: return std::to_string(pick(300));
      case 2: return "-" + std::to_string(rng_() >> pick(64));
      case 3: return std::to_string(rng_() >> pick(64));
      case 4: return std::to_string(std::uint64_t{1} << pick(64));
      case 5: return std::to_string((std::uint64_t{1} << pick(64)) - 1);
      case 6: return std::to_string(pick(64) * 16);
      default: return std::to_string(pick(5) + 1);
    }
  }
  std::string array(int n) {
    std::string a = "[";
    for (int i = 0; i < n; ++i) a += (i ? "," : "") + number();
    return a + "]";
  }
  // A tiled or im2col spec with every field drawn near its edges, coords included.
  std::string random_spec() {
    const int rank = static_cast<int>(pick(7));
    static const char* types[] = {"UINT8", "FLOAT16", "FLOAT32", "FLOAT64", "INT32", "BFLOAT16"};
    static const char* swizzles[] = {"NONE", "32B", "64B", "128B"};
    static const char* interleaves[] = {"NONE", "NONE", "16B", "32B"};
    std::string s = "{\"dataType\":\"" + std::string(types[pick(6)]) +
                    "\",\"rank\":" + std::to_string(rank) + ",\"globalAddress\":" + number() +
                    ",\"globalDim\":" + array(rank) +
                    ",\"globalStrides\":" + array(rank > 0 ? rank - 1 : 0) +
                    ",\"elementStrides\":" + array(rank) + ",\"swizzle\":\"" + swizzles[pick(4)] +
                    "\",\"interleave\":\"" + interleaves[pick(4)] + "\",\"coords\":" + array(rank);
    if (pick(4) == 0) {
      s += ",\"encode\":\"im2col\",\"pixelBoxLowerCorner\":" + array(rank > 2 ? rank - 2 : 0) +
           ",\"pixelBoxUpperCorner\":" + array(rank > 2 ? rank - 2 : 0) +
           ",\"channelsPerPixel\":" + number() + ",\"pixelsPerColumn\":" + number();
    } else {
      s += ",\"boxDim\":" + array(rank);
    }
    return s + "}";
  }
  std::string spec() {
    return R"({"dataType":"FLOAT32","rank":2,"globalAddress":0,"globalDim":[8,4],)"
           R"("globalStrides":[32],"boxDim":[8,4],"swizzle":"NONE","coords":[)" +
           std::to_string(static_cast<int>(pick(20)) - 10) + "," +
           std::to_string(static_cast<int>(pick(20)) - 10) + "]}";
  }
  std::string mutated(std::string s) {
    for (std::uint64_t k = pick(6) + 1; k > 0; --k) {
      const auto at = pick(s.size());
      switch (pick(3)) {
        case 0: s[at] = static_cast<char>(pick(255) + 1); break;
        case 1: s.erase(at, 1); break;
        default: s.insert(at, 1, "0123456789[]{},:\"-e."[pick(20)]);
      }
    }
    for (char& c : s) c = c == '\n' ? ' ' : c;
    return s;
  }
  std::string nested() {
    const auto depth = pick(3) == 0 ? pick(200000) : pick(40);
    const char* open = pick(2) ? "[" : "{\"k\":";
    std::string v;
    for (std::uint64_t i = 0; i < depth; ++i) v += open;
    v += "1";
    for (std::uint64_t i = 0; i < depth; ++i) v += open[0] == '[' ? "]" : "}";
    return with_value(v);
  }
  std::string big_number() {
    switch (pick(4)) {
      case 0: return "1e" + std::to_string(pick(2000));
      case 1: return "-1e" + std::to_string(pick(2000));
      case 2: return std::string(pick(100000) + 1, '9');
      default: return "[" + std::string(pick(500) + 20, '7') + "]";
    }
  }
  std::string with_value(const std::string& value) {
    std::string s = spec();
    const std::string key = kKeys[pick(std::size(kKeys))];
    s.pop_back();
    return s + ",\"" + key + "\":" + value + "}";
  }
  std::string with_nul() {
    std::string s = spec();
    s.insert(pick(s.size() + 1), 1, '\0');
    return s;
  }
  std::string bad_utf8() {
    static const char* bad[] = {"\xff", "\xc0\xaf", "\xed\xa0\x80", "\xe2\x82",
                                "\xf8\x88\x80\x80\x80"};
    std::string s;
    for (std::uint64_t k = pick(5) + 1; k > 0; --k) s += std::string("ok") + bad[pick(5)];
    return s;
  }
  std::string huge_array() {
    const auto n = pick(3) == 0 ? 200000 + pick(400000) : pick(2000);
    std::string a = "[";
    for (std::uint64_t i = 0; i < n; ++i) a += i ? ",1" : "1";
    return with_value(a + "]");
  }
  std::string random_bytes(std::uint64_t n) {
    std::string s;
    for (std::uint64_t i = 0; i < n; ++i) {
      char c = static_cast<char>(rng_());
      s += c == '\n' ? ' ' : c;
    }
    return s;
  }

  std::mt19937_64 rng_;
};

std::uint64_t seed() {
  const char* s = std::getenv("TMAKIT_FUZZ_SEED");
  return s ? std::strtoull(s, nullptr, 10) : 20241124;
}

std::vector<std::string> hostile_lines() {
  Hostile h(seed());
  std::vector<std::string> lines;
  for (int i = 0; i < kLines; ++i) lines.push_back(h.line());
  return lines;
}

// What `check` and `simulate` do with one line, in this process; tmakit::Error is a verdict.
void judge_and_simulate(const std::string& line, const std::vector<std::uint8_t>& global) {
  try {
    const nlohmann::json object = parse_json_line(line);
    const TensorMapSpec spec = spec_from_json(object);
    (void)diagnose(spec);
    (void)nearest_passing_spec(spec);
    if (find_violation(spec) || spec.kind != EncodeKind::tiled) return;
    model::Coords coords{};
    const auto it = object.find("coords");
    if (it != object.end() && it->is_array()) {
      for (std::size_t d = 0; d < it->size() && d < coords.size(); ++d) {
        if ((*it)[d].is_number_integer())
          coords[d] = static_cast<std::int32_t>((*it)[d].get<std::int64_t>());
      }
    }
    (void)model::load_tiled(spec, global, coords, 0);
    (void)model::prefetch_tiled(spec, coords);
  } catch (const Error&) {
  }
}

TEST(FuzzHostile, InProcessUnderAnAddressSpaceLimit) {
  const auto lines = hostile_lines();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const rlimit limit{kAddressSpaceBytes, kAddressSpaceBytes};
    setrlimit(RLIMIT_AS, &limit);
    alarm(120);  // a hang ends in SIGALRM
    const std::vector<std::uint8_t> global(4096, 0x5a);
    try {
      for (const auto& line : lines) judge_and_simulate(line, global);
    } catch (...) {
      _exit(3);  // anything but tmakit::Error escaped
    }
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status)
                                 << " (SIGALRM: a hang); seed " << seed();
  EXPECT_EQ(WEXITSTATUS(status), 0) << "an exception other than tmakit::Error; seed " << seed();
}

TEST(FuzzHostile, ThroughTheCliOneVerdictPerLine) {
  testing::ScratchDir dir("fuzz");
  const auto lines = hostile_lines();
  std::string text;
  long judged = 0;  // blank lines get no verdict, unless they are too long to read
  for (const auto& l : lines) {
    text += l + "\n";
    judged += l.size() > kMaxLineBytes || l.find_first_not_of(" \t\r") != std::string::npos;
  }
  const auto specs = dir.write("hostile.jsonl", text);
  const auto global = dir.write("g.bin", std::string(4096, 'Z'));
  const auto out = dir.path("out.txt");
  for (const std::string& args :
       {"check --jsonl " + specs, "check --json --jsonl " + specs, "check --fix --jsonl " + specs,
        "simulate --global " + global + " --jsonl " + specs,
        "simulate --grid --global " + global + " --jsonl " + specs}) {
    // the grid view writes several lines per load: its verdicts are the lines that start one
    const bool grid = args.rfind("simulate --grid", 0) == 0;
    const std::string count = grid ? "grep -c '^# line' " + out : "wc -l < " + out;
    const std::string cmd = "ulimit -v " + std::to_string(kAddressSpaceBytes >> 10) +
                            "; timeout 120 " + TMAKIT_CLI + " " + args + " > " + out +
                            " 2>/dev/null; echo $?; " + count;
    FILE* p = popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    int code = -1;
    long printed = -1;
    ASSERT_EQ(std::fscanf(p, "%d %ld", &code, &printed), 2) << args;
    pclose(p);
    EXPECT_NE(code, 124) << args << ": hung (timeout); seed " << seed();
    EXPECT_TRUE(code == 0 || code == 1) << args << ": exit " << code << "; seed " << seed();
    EXPECT_EQ(printed, judged) << args << ": lost or extra verdicts; seed " << seed();
  }
}

}  // namespace
}  // namespace tmakit
