// tmakit bench: the memory-bound kernels against the memcpy ceiling and the baselines, side
// by side in one process (bench/suite.hpp). Thin: options, GPU check, reports.
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "command.hpp"
#include "files.hpp"
#include "stall_watch.hpp"
#include "suite.hpp"
#include "tmakit/core/error.hpp"
#include "tmakit/host/driver.hpp"

namespace {

struct Options {
  tmakit::bench::SuiteOptions suite;
  bool list = false;
  std::string json;
  std::string svg;
  std::vector<std::string> gemm_shapes;  // "MxNxK"
  std::vector<std::string> gemm_shape_sets;  // names of tmakit::bench::gemm_shape_sets()
  int stall_seconds = 300;  // 0: no watch
};

// "MxNxK" with M, N >= 1 and K a positive multiple of 16 (the GEMM's rule), each < 2^31;
// nothing on a bad shape, which the caller reports.
std::optional<std::array<std::uint64_t, 3>> parse_shape(const std::string& text) {
  std::array<std::uint64_t, 3> v{};
  std::size_t pos = 0;
  for (int i = 0; i < 3; ++i) {
    if (pos >= text.size() || text[pos] < '0' || text[pos] > '9') return std::nullopt;
    std::uint64_t x = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      x = x * 10 + static_cast<std::uint64_t>(text[pos++] - '0');
      if (x >= (1ull << 31)) return std::nullopt;
    }
    v[i] = x;
    if (i < 2) {
      if (pos >= text.size() || (text[pos] != 'x' && text[pos] != 'X')) return std::nullopt;
      ++pos;
    }
  }
  if (pos != text.size() || v[0] == 0 || v[1] == 0 || v[2] == 0 || v[2] % 16 != 0) {
    return std::nullopt;
  }
  return v;
}

bool write_file(const std::string& path, const std::string& text) {
  if (const auto why = tmakit::cli::write_whole(path, text)) {
    std::cerr << "tmakit bench: cannot write " << path << ": " << *why << "\n";
    return false;
  }
  return true;
}

int run_bench(Options& o) {
  for (const auto& text : o.gemm_shapes) {
    const auto shape = parse_shape(text);
    if (!shape) {
      std::cerr << "tmakit bench: --gemm-shape '" << text
                << "' is not MxNxK with M, N >= 1 and K a multiple of 16 (each below 2^31), "
                   "e.g. 4096x4096x8192\n";
      return 2;
    }
    o.suite.gemm_shapes.push_back(*shape);
  }
  for (const auto& name : o.gemm_shape_sets) {
    std::string names;
    bool known = false;
    for (const auto& [set, what] : tmakit::bench::gemm_shape_sets()) {
      known |= set == name;
      names += (names.empty() ? "" : ", ") + set;
    }
    if (!known) {
      std::cerr << "tmakit bench: --gemm-shapes '" << name << "' is not a shape set; the sets are "
                << names << " (comma-separated or repeated)\n";
      return 2;
    }
    o.suite.gemm_shape_sets.push_back(name);
  }
  if (const auto why = tmakit::bench::filter_error(o.suite.filter)) {
    std::cerr << "tmakit bench: --filter " << *why << "\n";
    return 2;
  }
  // NOTE: checked before the run, which takes minutes (one file for both: the chart would
  // overwrite the results)
  if (const auto why = tmakit::cli::outputs_unwritable("--json", o.json, "--svg", o.svg)) {
    std::cerr << "tmakit bench: " << *why << "\n";
    return 2;
  }
  if (o.list && (!o.json.empty() || !o.svg.empty())) {
    const bool both = !o.json.empty() && !o.svg.empty();
    std::cerr << "tmakit bench: --list prints the cases' names and runs none, so "
              << (both ? "--json and --svg" : o.json.empty() ? "--svg" : "--json")
              << " would write nothing; leave " << (both ? "them" : "it") << " out\n";
    return 2;
  }
  // NOTE: a filter that selects nothing (a typo) would run no case and report success
  const auto ids = tmakit::bench::list_cases(o.suite);
  if (ids.empty()) {
    std::cerr << "tmakit bench: --filter '" << o.suite.filter
              << "' matches no case; `tmakit bench --list` shows them\n";
    return 2;
  }
  if (o.list) {
    for (const auto& id : ids) std::cout << id << "\n";
    return 0;
  }
  // NOTE: without libcuda the runtime says "CUDA driver version is insufficient"; the
  // driver loader names the missing library instead.
  std::optional<std::string> why;
  if (!tmakit::driver_available()) {
    try {
      tmakit::driver();
    } catch (const tmakit::Error& e) {
      why = e.what();
    }
  }
  if (!why) why = tmakit::bench::gpu_unavailable_reason();
  if (why) {
    std::cerr << "tmakit bench: cannot run: " << *why
              << ".\nThe benchmarks need an NVIDIA Hopper GPU (H100/H200) and its driver; "
                 "`tmakit bench --list` shows the cases.\n";
    return 2;
  }
  const auto device = tmakit::bench::device_info();
  std::cerr << "tmakit bench on " << device.name << ", " << device.driver << ", " << device.date
            << "\n";
  o.suite.progress = &std::cerr;
  // NOTE: a kernel that never finishes leaves the run waiting in a synchronize forever, and
  // the runtime says nothing: the watch names the step and ends the run
  std::unique_ptr<tmakit::bench::StallWatch> watch;
  if (o.stall_seconds > 0) {
    watch = std::make_unique<tmakit::bench::StallWatch>(
        std::chrono::seconds(o.stall_seconds),
        [](const std::string& where, std::chrono::milliseconds waited) {
          std::cerr << "\ntmakit bench: no progress for " << waited.count() / 1000 << " s while "
                    << where
                    << ": a GPU kernel there does not finish. Run that case alone (--filter) "
                       "with a build configured with -DTMAKIT_DEBUG_WAITS=ON, which names the "
                       "barrier wait that never completes; stopping."
                    << std::endl;
          std::_Exit(tmakit::bench::kStalledExit);
        });
    tmakit::bench::set_stall_watch(watch.get());
  }
  // (cleared before the watch goes, whether the run returns or throws)
  const struct Unset {
    ~Unset() { tmakit::bench::set_stall_watch(nullptr); }
  } unset;
  const auto results = tmakit::bench::run_suite(o.suite);
  bool files_ok = true;
  if (!o.json.empty())
    files_ok &= write_file(o.json, tmakit::bench::to_json(device, o.suite, results));
  if (!o.svg.empty()) files_ok &= write_file(o.svg, tmakit::bench::to_svg(device, results));
  tmakit::bench::print_table(std::cout, device, results);
  bool all_ok = true;
  for (const auto& r : results) {
    // NOTE: a missing baseline or a case that does not apply is reported, not a failure
    if (r.failed()) all_ok = false;
  }
  // (a report that cannot be written is output that cannot be written: 2, as for stdout)
  return !files_ok ? 2 : all_ok ? 0 : 1;
}

const tmakit::cli::Registrar reg(
    "bench", "Benchmark the memory-bound kernels against memcpy and baselines, and the FP8 GEMM "
             "(per-tensor, row-wise and 128-block scales) against cuBLASLt", [](CLI::App& app) {
      auto o = std::make_shared<Options>();
      app.add_flag("--list", o->list, "List the case ids and exit (no GPU needed)");
      app.add_option("--filter", o->suite.filter,
                     "Run only the cases whose id contains this glob ('*' any text, '?' one "
                     "character; '|' between alternatives), e.g. 'transpose/fp32' or "
                     "'gemm*tmakit|add/'");
      app.add_option("--json", o->json, "Write every result, device and method as JSON");
      app.add_option("--svg", o->svg, "Write a bar chart of the ratios to memcpy (SVG)");
      app.add_option("--runs", o->suite.timing.runs, "Timed runs per case (median reported)")
          ->capture_default_str()
          ->transform(tmakit::cli::whole_number(1, 100000));
      app.add_option("--warmup", o->suite.timing.warmup, "Untimed runs first")
          ->capture_default_str()
          ->transform(tmakit::cli::whole_number(0, 100000));
      app.add_flag("--no-flush", [o](std::int64_t) { o->suite.timing.flush_l2 = false; },
                   "Do not flush L2 before each timed run");
      app.add_flag("--quick", o->suite.quick, "Small shapes: a smoke run, not figures to quote");
      app.add_flag("--tune", o->suite.tune, "Add tuning variants of tmakit's kernels");
      app.add_option("--stall-seconds", o->stall_seconds,
                     "End the run, naming the step, when no timed call has finished for this "
                     "many seconds (a kernel that never finishes), exit status 3; default "
                     "300, 0: wait forever")
          ->transform(tmakit::cli::whole_number(0, 86400));
      app.add_option("--gemm-shape", o->gemm_shapes,
                     "GEMM shape MxNxK to run instead of the built-in list (repeatable; after "
                     "the sets of --gemm-shapes when both are given), e.g. --gemm-shape "
                     "4096x4096x8192 --filter gemm");
      std::string sets;
      for (const auto& [name, what] : tmakit::bench::gemm_shape_sets()) {
        sets += "; " + name + ": " + what;
      }
      app.add_option("--gemm-shapes", o->gemm_shape_sets,
                     "Named GEMM shape sets to run instead of the built-in list (comma-separated "
                     "or repeated), e.g. --gemm-shapes deepseek --filter gemm" + sets)
          ->delimiter(',');
      return [o] { return run_bench(*o); };
    });

}  // namespace
