// tmakit: the command-line tool. Thin: every command's logic lives in include/ or kernels/.
// Exit codes (README.md, "The tool"): 0 success, 1 the input was judged and something failed,
// 2 bad usage, unreadable input, unwritable output, or a GPU the command needs is missing.
#include <algorithm>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>

#include "command.hpp"
#include "io.hpp"
#include "tmakit/core/error.hpp"
#include "tmakit/host/spec_json.hpp"

namespace {

// `code`, unless what was written to stdout did not all arrive: then 2, with a message.
int finish(int code, const std::string& who) {
  if (const auto failure = tmakit::cli::output_failure()) {
    std::cerr << who << ": " << *failure << "\n";
    return 2;
  }
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tmakit: checked, simulated and benchmarked TMA for NVIDIA Hopper (sm_90a)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tmakit " TMAKIT_VERSION);

  auto& commands = tmakit::cli::registry();
  std::sort(commands.begin(), commands.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  std::vector<std::pair<CLI::App*, tmakit::cli::Runner>> runners;
  for (const auto& c : commands) {
    CLI::App* sub = app.add_subcommand(c.name, c.description);
    runners.emplace_back(sub, c.setup(*sub));
  }

  // NOTE: CLI11 answers an unknown first word, or an unknown option before the command, with
  // "A subcommand is required"; name it.
  auto list_commands = [&] {
    for (const auto& c : commands) std::cerr << ' ' << c.name;
    std::cerr << " (tmakit --help)\n";
  };
  if (argc > 1 && argv[1][0] != '-' &&
      std::none_of(commands.begin(), commands.end(),
                   [&](const auto& c) { return c.name == argv[1]; })) {
    std::cerr << "tmakit: '" << argv[1] << "' is not a command; the commands are";
    list_commands();
    return 2;
  }
  if (argc > 1 && argv[1][0] == '-') {
    const std::string given = argv[1];
    if (app.get_option_no_throw(given.substr(0, given.find('='))) == nullptr) {
      std::cerr << "tmakit: '" << given
                << "' is not an option of tmakit itself; options follow the command "
                   "(tmakit COMMAND --help), and the commands are";
      list_commands();
      return 2;
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return finish(app.exit(e), "tmakit");
  } catch (const CLI::CallForAllHelp& e) {
    return finish(app.exit(e), "tmakit");
  } catch (const CLI::CallForVersion& e) {
    return finish(app.exit(e), "tmakit");
  } catch (const CLI::ParseError& e) {
    // NOTE: CLI11 checks required options before it looks at arguments it does not know, so
    // `check --bogus` would be told "--jsonl is required"; an unknown argument is named first,
    // in one form whatever else is wrong
    const bool unknown_or_missing = dynamic_cast<const CLI::RequiredError*>(&e) != nullptr ||
                                    dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr;
    for (auto& [sub, run] : runners) {
      if (!unknown_or_missing || !sub->parsed() || sub->remaining().empty()) continue;
      const auto extra = sub->remaining();
      std::cerr << "tmakit " << sub->get_name() << ": unknown argument"
                << (extra.size() > 1 ? "s" : "");
      for (const auto& a : extra) std::cerr << " '" << tmakit::escape_unprintable(a) << "'";
      std::cerr << " (tmakit " << sub->get_name() << " --help lists the options)\n";
      return 2;
    }
    app.exit(e);
    return 2;
  }

  for (auto& [sub, run] : runners) {
    if (!sub->parsed()) continue;
    const std::string who = "tmakit " + sub->get_name();
    // NOTE: every command reads an empty value as "not given" (rules --arch '' would list every
    // architecture's rules, bench --json '' write no report): refuse it, naming the option.
    for (const CLI::Option* o : sub->get_options()) {
      if (o->get_expected_min() == 0 || o->count() == 0) continue;
      const auto& values = o->results();
      if (std::any_of(values.begin(), values.end(), [](const auto& v) { return v.empty(); })) {
        std::cerr << who << ": " << o->get_name() << " '': the value is empty\n";
        return 2;
      }
    }
    try {
      return finish(run(), who);
    } catch (const std::bad_alloc&) {
      std::cerr << who << ": out of memory\n";
      return 2;
    } catch (const std::exception& e) {
      std::cerr << who << ": " << e.what() << "\n";
      finish(2, who);
      return 2;
    }
  }
  return 2;
}
