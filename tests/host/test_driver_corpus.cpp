// The validator against the real driver's recorded verdicts (docs/rules.md): every spec of
// tests/data/driver_corpus.jsonl.gz must get the driver's verdict, accepted or refused.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../corpus.hpp"
#include "tmakit/host/spec_json.hpp"
#include "tmakit/host/validate.hpp"

namespace tmakit {
namespace {

TEST(DriverCorpus, ValidatorGivesTheDriversVerdictOnEverySpec) {
  const auto lines = testing::read_driver_corpus();
  ASSERT_GT(lines.size(), 50000u) << "corpus missing or truncated: " << testing::driver_corpus_path();
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

}  // namespace
}  // namespace tmakit
