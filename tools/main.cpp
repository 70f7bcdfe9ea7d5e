// tmakit: the command-line tool. Thin: every command's logic lives in include/ or kernels/.
#include <algorithm>
#include <exception>
#include <iostream>

#include "command.hpp"
#include "tmakit/core/error.hpp"

int main(int argc, char** argv) {
  CLI::App app{"tmakit: checked, simulated and benchmarked TMA for NVIDIA Hopper (sm_90a)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tmakit 0.1.0");

  auto& commands = tmakit::cli::registry();
  std::sort(commands.begin(), commands.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  std::vector<std::pair<CLI::App*, tmakit::cli::Runner>> runners;
  for (const auto& c : commands) {
    CLI::App* sub = app.add_subcommand(c.name, c.description);
    runners.emplace_back(sub, c.setup(*sub));
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }

  for (auto& [sub, run] : runners) {
    if (!sub->parsed()) continue;
    try {
      return run();
    } catch (const std::exception& e) {
      std::cerr << "tmakit " << sub->get_name() << ": " << e.what() << "\n";
      return 2;
    }
  }
  return 2;
}
