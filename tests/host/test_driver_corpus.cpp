// The validator against the real driver's recorded verdicts (docs/rules.md): every spec of
// tests/data/driver_corpus.jsonl.gz must get the driver's verdict, accepted or refused.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <utility>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../corpus.hpp"
#include "tmakit/host/spec_json.hpp"
#include "tmakit/host/validate.hpp"

namespace tmakit {
namespace {

TEST(DriverCorpus, ValidatorGivesTheDriversVerdictOnEverySpec) {
  const auto lines = testing::read_driver_corpus();
  ASSERT_GT(lines.size(), 50000u) << "corpus missing or truncated: "
                                  << testing::driver_corpus_path();
  std::size_t accepted = 0, refused = 0, disagreements = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto object = nlohmann::json::parse(lines[i]);
    const bool driver_ok = object.at("driver") == "ok";
    const auto violation = find_violation(spec_from_json(object));
    (driver_ok ? accepted : refused)++;
    if (driver_ok == !violation.has_value()) continue;
    if (++disagreements <= 10) {
      ADD_FAILURE() << "line " << i + 1 << ": driver " << (driver_ok ? "accepts" : "refuses")
                    << ", tmakit " << (violation ? violation->what() : "accepts") << "\n  "
                    << lines[i];
    }
  }
  EXPECT_EQ(disagreements, 0u);
  // Both verdicts are well represented, so agreement is not agreement with a constant.
  EXPECT_GT(accepted, 10000u);
  EXPECT_GT(refused, 10000u);
}

// The fix property over the whole corpus: for every spec the validator refuses, the fix of its
// first broken rule mends that rule (the first violation moves on) and keeps every rule that
// passed passing; and nearest_passing_spec (what `tmakit check --fix` prints) passes every rule.
// A spec without a fix is one whose broken rule no single field mends (a rank, a data type).
TEST(DriverCorpus, EveryFixMendsItsRuleAndTheFixedSpecPasses) {
  const auto lines = testing::read_driver_corpus();
  ASSERT_GT(lines.size(), 50000u) << "corpus missing or truncated: "
                                  << testing::driver_corpus_path();
  // Which rules pass, judged one by one in table order; past a broken rank or type rule the
  // others are not judged (they may index by the rank), as validate() would not reach them.
  auto passing = [](const TensorMapSpec& s) {
    std::vector<bool> ok;
    for (const Rule& r : rules()) {
      bool passed = true;
      try {
        r.check(s);
      } catch (const RuleViolation&) {
        passed = false;
      }
      ok.push_back(passed);
      if (!passed && (r.id == "T2" || r.id == "T12" || r.id == "T3" || r.id == "I1")) break;
    }
    ok.resize(rules().size(), false);
    return ok;
  };
  std::size_t refused = 0, with_fix = 0, mended = 0, failures = 0;
  std::map<std::string, std::size_t> unfixable;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const TensorMapSpec spec = spec_from_json(nlohmann::json::parse(lines[i]));
    const auto finding = diagnose(spec);
    if (!finding) continue;
    ++refused;
    auto fail = [&](const std::string& what) {
      if (++failures <= 10) ADD_FAILURE() << "line " << i + 1 << ": " << what << "\n  " << lines[i];
    };
    if (finding->fix) {
      ++with_fix;
      // Mended: the rule passes, or its first violation (and so its fix) is elsewhere.
      auto mended_by = [&](const TensorMapSpec& t) {
        const auto left = diagnose(t);
        return !left || left->violation.rule_id() != finding->violation.rule_id() || !left->fix ||
               left->fix->field != finding->fix->field || left->fix->index != finding->fix->index;
      };
      const TensorMapSpec fixed = tmakit::with_fix(spec, *finding->fix);
      if (!mended_by(fixed)) fail("the fix leaves the violation where it was");
      const auto before_ok = passing(spec);
      // Whether `t` keeps every rule that passed on `spec` passing.
      auto keeps = [&](const TensorMapSpec& t) {
        const auto after_ok = passing(t);
        for (std::size_t r = 0; r < before_ok.size(); ++r) {
          if (before_ok[r] && !after_ok[r]) return false;
        }
        return true;
      };
      if (!keeps(fixed)) {
        // allowed only where no value of the field mends the rule and keeps the others: every
        // value of the small fields is tried
        const std::string& field = finding->fix->field;
        const std::pair<std::int64_t, std::int64_t> range =
            field == "boxDim" || field == "channelsPerPixel" ? std::pair{1, 256}
            : field == "elementStrides"                      ? std::pair{1, 8}
            : field == "pixelsPerColumn"                     ? std::pair{1, 1024}
                                                             : std::pair{0, -1};
        if (range.second < range.first)
          fail("the fix of " + finding->violation.rule_id() + " breaks a rule");
        for (std::int64_t v = range.first; v <= range.second; ++v) {
          SpecFix other = *finding->fix;
          other.value = static_cast<std::uint64_t>(v);
          const TensorMapSpec t = tmakit::with_fix(spec, other);
          if (mended_by(t) && keeps(t)) {
            fail("the fix of " + finding->violation.rule_id() + " breaks a rule, though " +
                 field + " = " + std::to_string(v) + " would not");
            break;
          }
        }
      }
    } else {
      ++unfixable[finding->violation.rule_id()];
    }
    std::string why;
    if (const auto passing_spec = nearest_passing_spec(spec, &why)) {
      ++mended;
      if (const auto v = find_violation(*passing_spec))
        fail(std::string("the mended spec breaks ") + v->what());
    } else if (finding->fix) {
      // a later rule without a fix stopped it: that rule must be one no field mends
      const std::string rule = why.substr(0, why.find(':'));
      if (rule != "T2" && rule != "T3" && rule != "I1") fail("no passing spec: " + why);
    }
  }
  EXPECT_EQ(failures, 0u);
  for (const auto& [rule, n] : unfixable) {
    EXPECT_TRUE(rule == "T2" || rule == "T3" || rule == "I1") << n << " specs broken by " << rule
                                                              << " have no fix";
  }
  EXPECT_GT(refused, 10000u);
  EXPECT_GT(with_fix, refused * 9 / 10);  // only ranks (and types) lack a fix
  std::printf("fixes: %zu refused specs, %zu with a fix, %zu mended to a passing spec\n", refused,
              with_fix, mended);
}

}  // namespace
}  // namespace tmakit
