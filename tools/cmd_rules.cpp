// tmakit rules: every tensor-map rule the validator applies, in order, with its id (and the id
// its im2col verdicts carry where that differs: "T8 / I6").
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "command.hpp"
#include "tmakit/host/validate.hpp"

namespace {

int run_rules(bool json, const std::string& arch_name) {
  std::vector<tmakit::Rule> list(tmakit::rules().begin(), tmakit::rules().end());
  if (!arch_name.empty()) {
    const auto arch = tmakit::parse_arch(arch_name);
    if (!arch) {
      std::cerr << "tmakit rules: --arch " << arch_name
                << ": unknown architecture (known: " << tmakit::arch_names() << ")\n";
      return 2;
    }
    list = tmakit::rules(*arch);
  }
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : list) {
      nlohmann::json o{{"id", std::string(r.id)}, {"summary", std::string(r.summary)}};
      if (!r.im2col_id.empty()) o["im2colId"] = std::string(r.im2col_id);
      out.push_back(std::move(o));
    }
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  for (const auto& r : list) {
    std::cout << r.id << (r.im2col_id.empty() ? "" : " / " + std::string(r.im2col_id)) << "\t"
              << r.summary << "\n";
  }
  std::cout << "\nT*: documented (tiled, and shared with im2col), I*: documented for im2col, X*: "
               "found by sweeping the real driver; A1, P*, S1, W*, G*: Blackwell's encodings "
               "(sm_100a and later); I8 judges im2col stores on sm_100a and later. "
               "docs/rules.md tells how.\n";
  return 0;
}

const tmakit::cli::Registrar kRules(
    "rules", "List the tensor-map rules tmakit checks (ids as in `tmakit check` verdicts)",
    [](CLI::App& app) {
      auto json = std::make_shared<bool>(false);
      auto arch = std::make_shared<std::string>();
      app.add_flag("--json", *json,
                   "Print a JSON array of {id, summary} (and im2colId where im2col verdicts "
                   "carry another id)");
      app.add_option("--arch", *arch,
                     "Only the rules that can refuse a spec on this architecture (sm_90a, "
                     "sm_100a, sm_103a, sm_120a)");
      return [json, arch] { return run_rules(*json, *arch); };
    });

}  // namespace
