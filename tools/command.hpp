// Subcommand registry of the tmakit CLI. Each tools/cmd_<name>.cpp registers itself:
//
//   static const tmakit::cli::Registrar reg("check", "Check tensor-map specs", [](CLI::App& app) {
//     auto opts = std::make_shared<Options>();
//     app.add_option("--jsonl", opts->file)->required();
//     return [opts] { return run_check(*opts); };   // exit code
//   });
//
// Exit codes shared by every command (README.md, "The tool"): 0 success, 1 the input was judged
// and something failed, 2 usage error, unreadable input, unwritable output (main() flushes and
// checks stdout after every runner) or a missing driver or GPU. An exception escaping a
// runner prints and exits 2.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace tmakit::cli {

using Runner = std::function<int()>;
using Setup = std::function<Runner(CLI::App&)>;

struct Command {
  std::string name;
  std::string description;
  Setup setup;
};

inline std::vector<Command>& registry() {
  static std::vector<Command> commands;
  return commands;
}

// A whole number in [lo, hi], written in digits; leading zeros are dropped.
// NOTE: checked before CLI11 converts the text, which would call "1e3" out of range, a number
// past the type's range not a number, and read "010" as octal.
inline CLI::Validator whole_number(long lo, long hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
          return "'" + text + "' is not a whole number such as 1000";
        const auto first = text.find_first_not_of('0');
        const std::string digits = first == std::string::npos ? "0" : text.substr(first);
        // NOTE: 10 digits are past every limit here, and past a long's range at 20
        const long v = digits.size() > 9 ? hi + 1 : std::stol(digits);
        if (v < lo || v > hi)
          return "'" + text + "' is outside " + std::to_string(lo) + ".." + std::to_string(hi);
        text = digits;
        return std::string();
      },
      "NUMBER");
}

struct Registrar {
  Registrar(std::string name, std::string description, Setup setup) {
    registry().push_back({std::move(name), std::move(description), std::move(setup)});
  }
};

}  // namespace tmakit::cli
