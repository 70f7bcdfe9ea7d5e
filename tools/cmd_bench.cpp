// tmakit bench: the memory-bound kernels against the memcpy ceiling and the baselines, side
// by side in one process (bench/suite.hpp). Thin: options, GPU check, reports.
#include <array>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "command.hpp"
#include "suite.hpp"

namespace {

struct Options {
  tmakit::bench::SuiteOptions suite;
  bool list = false;
  std::string json;
  std::string svg;
  std::vector<std::string> gemm_shapes;  // "MxNxK"
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
  std::ofstream f(path);
  f << text;
  if (!f) std::cerr << "tmakit bench: cannot write " << path << "\n";
  return static_cast<bool>(f);
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
  if (o.list) {
    for (const auto& id : tmakit::bench::list_cases(o.suite)) std::cout << id << "\n";
    return 0;
  }
  if (const auto why = tmakit::bench::gpu_unavailable_reason()) {
    std::cerr << "tmakit bench: cannot run: " << *why
              << ".\nThe benchmarks need an NVIDIA Hopper GPU (H100/H200) and its driver; "
                 "`tmakit bench --list` shows the cases.\n";
    return 1;
  }
  const auto device = tmakit::bench::device_info();
  std::cerr << "tmakit bench on " << device.name << ", " << device.driver << ", " << device.date
            << "\n";
  o.suite.progress = &std::cerr;
  const auto results = tmakit::bench::run_suite(o.suite);
  bool files_ok = true;
  if (!o.json.empty()) files_ok &= write_file(o.json, tmakit::bench::to_json(device, o.suite, results));
  if (!o.svg.empty()) files_ok &= write_file(o.svg, tmakit::bench::to_svg(device, results));
  tmakit::bench::print_table(std::cout, device, results);
  bool all_ok = true;
  for (const auto& r : results) {
    // NOTE: a missing baseline or a case that does not apply is reported, not a failure
    if (r.failed()) all_ok = false;
  }
  return all_ok && files_ok ? 0 : 1;
}

const tmakit::cli::Registrar reg(
    "bench", "Benchmark the memory-bound kernels against memcpy and baselines", [](CLI::App& app) {
      auto o = std::make_shared<Options>();
      app.add_flag("--list", o->list, "List the case ids and exit (no GPU needed)");
      app.add_option("--filter", o->suite.filter,
                     "Run only cases whose id matches this regex, e.g. 'transpose/fp32'");
      app.add_option("--json", o->json, "Write every result, device and method as JSON");
      app.add_option("--svg", o->svg, "Write a bar chart of the ratios to memcpy (SVG)");
      app.add_option("--runs", o->suite.timing.runs, "Timed runs per case (median reported)")
          ->check(CLI::Range(1, 100000));
      app.add_option("--warmup", o->suite.timing.warmup, "Untimed runs first")
          ->check(CLI::Range(0, 100000));
      app.add_flag("--no-flush", [o](std::int64_t) { o->suite.timing.flush_l2 = false; },
                   "Do not flush L2 before each timed run");
      app.add_flag("--quick", o->suite.quick, "Small shapes: a smoke run, not figures to quote");
      app.add_flag("--tune", o->suite.tune, "Add tuning variants of tmakit's kernels");
      app.add_option("--gemm-shape", o->gemm_shapes,
                     "GEMM shape MxNxK to run instead of the built-in list (repeatable), "
                     "e.g. --gemm-shape 4096x4096x8192 --filter gemm");
      return [o] { return run_bench(*o); };
    });

}  // namespace
