// tmakit check --jsonl FILE [--arch NAME] [--json | --fix] [--driver]
// One verdict line per input line: `ok`, `rejected <rule>: <message>` or `error: <message>`;
// blank lines (nothing but spaces and tabs) are skipped, though --json's "line" counts them.
// Exit 0 when every line is ok, 1 when any is rejected or malformed, 2 for an unreadable
// input, an unwritable output or bad usage. With --driver each spec also goes to the real
// driver and the exit code says whether the two agreed on every line (the differential check
// of docs/rules.md); a malformed line agrees with nothing. With --fix each line becomes the
// nearest spec that passes every rule (the line itself when it passes) or `error: ...`; exit
// 0 when every line gave a passing spec. --arch names the architecture whose rules apply
// (sm_90a, sm_100a, sm_103a, sm_120a); without it, the GPU's when the driver reports one, else
// sm_90a.
#include <cuda.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "command.hpp"
#include "io.hpp"
#include "tmakit/host/driver.hpp"
#include "tmakit/host/encode.hpp"
#include "tmakit/host/spec_json.hpp"
#include "tmakit/host/validate.hpp"

namespace {

struct Options {
  std::string file;
  std::string arch;
  tmakit::Arch resolved = tmakit::Arch::sm_90a;
  bool json = false;
  bool driver = false;
  bool fix = false;
};

struct Verdict {
  enum Kind { ok, rejected, error } kind = ok;
  std::string rule;
  std::string message;
  std::optional<tmakit::SpecFix> fix;
};

Verdict judge(const std::string& line, tmakit::Arch arch, tmakit::TensorMapSpec* spec) {
  try {
    *spec = tmakit::parse_spec_json(line, arch);
  } catch (const tmakit::ParseError& e) {
    return {Verdict::error, "", tmakit::escape_unprintable(e.what()), std::nullopt};
  }
  if (auto f = tmakit::diagnose(*spec, arch)) {
    return {Verdict::rejected, f->violation.rule_id(), f->violation.what(), f->fix};
  }
  return {};
}

nlohmann::json fix_json(const tmakit::SpecFix& fix) {
  nlohmann::json o{{"field", fix.field}};
  if (fix.index) o["index"] = *fix.index;
  std::visit([&](const auto& v) { o["value"] = v; }, fix.value);
  return o;
}

// The --fix answer for one line: the nearest passing spec, or "error: ...".
std::string fixed_line(const std::string& line, tmakit::Arch arch, bool* passed) {
  tmakit::TensorMapSpec spec;
  const Verdict v = judge(line, arch, &spec);
  *passed = false;
  if (v.kind == Verdict::error) return "error: " + v.message;
  if (v.kind == Verdict::ok) {
    *passed = true;
    return line;
  }
  std::string why;
  const auto mended = tmakit::nearest_passing_spec(spec, arch, &why);
  if (!mended) return "error: no passing spec near this one: " + tmakit::escape_unprintable(why);
  *passed = true;
  return tmakit::rewrite_spec_json(line, spec, *mended);
}

int run_check(Options opt) {
  std::string arch_error;
  const auto arch = tmakit::cli::resolve_arch(opt.arch, &arch_error);
  if (!arch) {
    std::cerr << "tmakit check: " << arch_error << "\n";
    return 2;
  }
  opt.resolved = *arch;
  if (opt.driver && !opt.arch.empty()) {
    // NOTE: the driver judges for its own GPU; another architecture's verdicts would not compare.
    const auto cc = tmakit::device_compute_capability();
    const auto present = tmakit::arch_of_compute_capability(cc.major, cc.minor);
    if (present && *present != *arch) {
      std::cerr << "tmakit check: --driver judges for the GPU present (" << tmakit::name(*present)
                << "), not --arch " << opt.arch << "\n";
      return 2;
    }
  }
  tmakit::cli::Input input(opt.file, "--jsonl " + opt.file);
  if (!input.ok()) {
    std::cerr << "tmakit check: " << input.error() << "\n";
    return 2;
  }
  if (opt.driver) {
    tmakit::driver();  // throws with a clear message when there is none
    TMAKIT_DRIVER_CHECK(tmakit::ensure_current_context());
  }

  bool all_ok = true, all_agree = true;
  tmakit::cli::LineReader reader(input, tmakit::kMaxLineBytes);
  std::string line;
  std::size_t length = 0, number = 0;
  for (;;) {
    const auto got = reader.next(line, length);
    if (got == tmakit::cli::LineReader::Got::end || got == tmakit::cli::LineReader::Got::failed) {
      if (got == tmakit::cli::LineReader::Got::failed) {
        std::cerr << "tmakit check: " << input.error() << " (after line " << number << ")\n";
        return 2;
      }
      break;
    }
    ++number;
    if (!std::cout) break;  // the output failed: main() reports it
    if (got == tmakit::cli::LineReader::Got::line && tmakit::cli::blank_line(line)) continue;

    const bool too_long = got == tmakit::cli::LineReader::Got::too_long;
    const std::string too_long_message =
        too_long ? "the line is " + std::to_string(length) + " bytes, more than the " +
                       std::to_string(tmakit::kMaxLineBytes) + " a spec line may have"
                 : std::string();
    if (opt.fix) {
      bool passed = false;
      std::cout << (too_long ? "error: " + too_long_message
                             : fixed_line(line, opt.resolved, &passed))
                << '\n';
      all_ok = all_ok && passed;
      continue;
    }
    tmakit::TensorMapSpec spec;
    const Verdict v = too_long ? Verdict{Verdict::error, "", too_long_message, std::nullopt}
                               : judge(line, opt.resolved, &spec);
    all_ok = all_ok && v.kind == Verdict::ok;

    // The driver's verdict on the same arguments, when asked for; a malformed line has none
    // and counts as a disagreement.
    std::string driver_verdict;
    if (opt.driver && v.kind != Verdict::error) {
      CUtensorMap map{};
      const CUresult r = tmakit::encode_unchecked(spec, &map);
      driver_verdict = r == CUDA_SUCCESS ? "ok" : tmakit::driver_error_name(r);
      const bool agree = (r == CUDA_SUCCESS) == (v.kind == Verdict::ok);
      all_agree = all_agree && agree;
    } else if (opt.driver) {
      all_agree = false;
    }

    if (opt.json) {
      nlohmann::json o{{"line", number},
                       {"verdict", v.kind == Verdict::ok         ? "ok"
                                   : v.kind == Verdict::rejected ? "rejected"
                                                                 : "error"}};
      if (!v.rule.empty()) o["rule"] = v.rule;
      if (!v.message.empty()) o["message"] = v.message;
      if (v.fix) o["fix"] = fix_json(*v.fix);
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
  if (opt.driver) return all_agree ? 0 : 1;
  return all_ok ? 0 : 1;
}

const tmakit::cli::Registrar kCheck(
    "check", "Judge tensor-map specs (one JSON object per line) against every rule",
    [](CLI::App& app) {
      auto opt = std::make_shared<Options>();
      app.add_option("--jsonl", opt->file,
                     "File of specs, one JSON object per line (- = stdin; blank lines skipped)")
          ->required();
      app.add_option("--arch", opt->arch,
                     "Architecture whose rules apply: sm_90a, sm_100a, sm_103a or sm_120a "
                     "(default: the GPU's when the driver reports one, else sm_90a)");
      auto* json = app.add_flag(
          "--json", opt->json,
          "Print one JSON object per line with rule, message and the fix as data "
          "({field, index, value})");
      auto* driver = app.add_flag("--driver", opt->driver,
                                  "Also ask the real driver (needs a GPU); exit 0 only if both "
                                  "agree on every line");
      app.add_flag("--fix", opt->fix,
                   "Print, per line, the nearest spec that passes every rule (the line itself "
                   "when it passes; the other keys kept) or `error: ...`")
          ->excludes(json)
          ->excludes(driver);
      return [opt] { return run_check(*opt); };
    });

}  // namespace
