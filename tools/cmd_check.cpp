// tmakit check --jsonl FILE [--json] [--driver]
// One verdict line per input line: `ok`, `rejected <rule>: <message>` or `error: <message>`.
// Exit 0 when every line is ok, 1 when any is rejected or malformed, 2 for an unreadable
// file or bad usage. With --driver each spec also goes to the real driver and the exit code
// says whether the two agreed on every line (the differential check of docs/rules.md).
#include <cuda.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "command.hpp"
#include "text.hpp"
#include "tmakit/host/driver.hpp"
#include "tmakit/host/encode.hpp"
#include "tmakit/host/spec_json.hpp"
#include "tmakit/host/validate.hpp"

namespace {

struct Options {
  std::string file;
  bool json = false;
  bool driver = false;
};

struct Verdict {
  enum Kind { ok, rejected, error } kind = ok;
  std::string rule;
  std::string message;
};

using tmakit::cli::printable;

Verdict judge(const std::string& line, tmakit::TensorMapSpec* spec) {
  try {
    *spec = tmakit::parse_spec_json(line);
  } catch (const tmakit::ParseError& e) {
    return {Verdict::error, "", printable(e.what())};
  }
  if (auto v = tmakit::find_violation(*spec)) {
    return {Verdict::rejected, v->rule_id(), v->what()};
  }
  return {};
}

int run_check(const Options& opt) {
  std::ifstream file;
  std::istream* in = &std::cin;
  if (opt.file != "-") {
    file.open(opt.file, std::ios::binary);
    if (!file) {
      std::cerr << "tmakit check: cannot read " << opt.file << "\n";
      return 2;
    }
    in = &file;
  }
  if (opt.driver) {
    tmakit::driver();  // throws with a clear message when there is none
    TMAKIT_DRIVER_CHECK(tmakit::ensure_current_context());
  }

  bool all_ok = true, all_agree = true;
  std::string line;
  std::size_t number = 0;
  while (std::getline(*in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    tmakit::TensorMapSpec spec;
    const Verdict v = judge(line, &spec);
    all_ok = all_ok && v.kind == Verdict::ok;

    // The driver's verdict on the same arguments, when asked for.
    std::string driver_verdict;
    if (opt.driver && v.kind != Verdict::error) {
      CUtensorMap map{};
      const CUresult r = tmakit::encode_unchecked(spec, &map);
      driver_verdict = r == CUDA_SUCCESS ? "ok" : tmakit::driver_error_name(r);
      const bool agree = (r == CUDA_SUCCESS) == (v.kind == Verdict::ok);
      all_agree = all_agree && agree;
    }

    if (opt.json) {
      nlohmann::json o{{"line", number},
                       {"verdict", v.kind == Verdict::ok         ? "ok"
                                   : v.kind == Verdict::rejected ? "rejected"
                                                                 : "error"}};
      if (!v.rule.empty()) o["rule"] = v.rule;
      if (!v.message.empty()) o["message"] = v.message;
      if (!driver_verdict.empty()) o["driver"] = driver_verdict;
      std::cout << o.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    } else if (v.kind == Verdict::ok) {
      std::cout << "ok\n";
    } else if (v.kind == Verdict::rejected) {
      std::cout << "rejected " << v.message << '\n';
    } else {
      std::cout << "error: " << v.message << '\n';
    }
  }
  if (in->bad()) {
    std::cerr << "tmakit check: read error on " << opt.file << "\n";
    return 2;
  }
  std::cout.flush();
  if (opt.driver) return all_agree ? 0 : 1;
  return all_ok ? 0 : 1;
}

const tmakit::cli::Registrar kCheck(
    "check", "Judge tensor-map specs (one JSON object per line) against every rule",
    [](CLI::App& app) {
      auto opt = std::make_shared<Options>();
      app.add_option("--jsonl", opt->file, "File of specs, one JSON object per line (- = stdin)")
          ->required();
      app.add_flag("--json", opt->json, "Print one JSON object per line with rule and message");
      app.add_flag("--driver", opt->driver,
                   "Also ask the real driver (needs a GPU); exit 0 only if both agree on "
                   "every line");
      return [opt] { return run_check(*opt); };
    });

}  // namespace
