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

struct Registrar {
  Registrar(std::string name, std::string description, Setup setup) {
    registry().push_back({std::move(name), std::move(description), std::move(setup)});
  }
};

}  // namespace tmakit::cli
