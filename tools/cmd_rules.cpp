// tmakit rules: every tensor-map rule the validator applies, in order, with its id.
#include <iostream>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "tmakit/host/validate.hpp"

namespace {

int run_rules(bool json) {
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : tmakit::rules()) {
      out.push_back({{"id", std::string(r.id)}, {"summary", std::string(r.summary)}});
    }
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  for (const auto& r : tmakit::rules()) std::cout << r.id << "\t" << r.summary << "\n";
  std::cout << "\nT*: documented (tiled, and shared with im2col), I*: documented for im2col, X*: "
               "found by sweeping the real driver. docs/rules.md tells how.\n";
  return 0;
}

const tmakit::cli::Registrar kRules(
    "rules", "List the tensor-map rules tmakit checks (ids as in `tmakit check` verdicts)",
    [](CLI::App& app) {
      auto json = std::make_shared<bool>(false);
      app.add_flag("--json", *json, "Print a JSON array of {id, summary}");
      return [json] { return run_rules(*json); };
    });

}  // namespace
