// The benchmark suite behind `tmakit bench`: every workload with tmakit's kernel, the memcpy
// ceiling and the baselines side by side in one process, then the reports (table, JSON,
// SVG plot of the ratios).
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "harness.hpp"
#include "status.hpp"

namespace tmakit::bench {

struct SuiteOptions {
  std::string filter;     // a case filter (filter_selects); empty: all
  TimingOptions timing;
  bool quick = false;     // small shapes: a smoke run, not figures to quote
  bool tune = false;      // add tuning variants of tmakit's kernels (ids "...tmakit:<knob>")
  // GEMM shapes: the named sets (gemm_shape_sets(): "default", "deepseek") and the shapes
  // (M, N, K) to run, in that order, each shape once; both empty: the "default" set (or the
  // --quick shapes)
  std::vector<std::string> gemm_shape_sets;
  std::vector<std::array<std::uint64_t, 3>> gemm_shapes;
  std::ostream* progress = nullptr;
};

// One row of the reports: a case of a workload, as declared (cases.hpp) and as measured.
struct Result {
  std::string id;        // "transpose/fp32/32768x32768/tmakit"
  std::string workload;  // "transpose/fp32/32768x32768"
  std::string impl;      // "tmakit", "memcpy", "seed-batched", "cublas-geam", ...
  std::string kind;      // "ceiling", "tmakit", "seed", "vendor", "baseline", "probe"
  std::uint64_t bytes = 0;  // each input read once + each output written once
  std::uint64_t flops = 0;  // the work the case declares: 2 M N K for a GEMM; 0: memory-bound
  // impls of the same workload this row's time is compared with (the table's "vs baselines"),
  // and the one its speed-up is stated against in its note and the plot (empty: none)
  std::vector<std::string> baselines;
  std::string speedup_over;
  Status status;
  std::string note;      // e.g. the cuDNN algorithm, the library loaded
  Timing timing;
  double gbps = 0;
  double memcpy_gbps = 0;  // the ceiling: memcpy of the same buffers, timed in the same rounds
  bool ok() const { return status.is_ok(); }
  // A wrong result or an error; a missing baseline or a case that does not apply is not.
  bool failed() const { return status.failed(); }
};

// The case filter of `tmakit bench --filter`: alternatives separated by '|', each a glob
// (`*` any text, `?` any one character, every other character itself) found anywhere in the
// id: "transpose/fp32", "gemm*tmakit|add/int32". Matched in O(pattern x id) steps without
// recursion, so no pattern can blow the stack or backtrack without bound.
inline constexpr std::size_t kMaxFilterBytes = 1024;
bool filter_selects(std::string_view filter, std::string_view id);
// Why `filter` is not one (too long, a character of regular-expression syntax that the glob
// does not have), or nullopt.
std::optional<std::string> filter_error(std::string_view filter);

// The names of the GEMM shape sets (`tmakit bench --gemm-shapes NAME`), each with what it
// holds, one line: {"default", "..."}, {"deepseek", "..."}.
std::vector<std::pair<std::string, std::string>> gemm_shape_sets();

// Case ids in run order (no GPU needed).
std::vector<std::string> list_cases(const SuiteOptions& options);

// Runs the selected cases; needs a Hopper GPU (see gpu_unavailable_reason()).
std::vector<Result> run_suite(const SuiteOptions& options);

// Reports. Every one carries the device, driver and date.
void print_table(std::ostream& os, const DeviceInfo& device, const std::vector<Result>& results);
std::string to_json(const DeviceInfo& device, const SuiteOptions& options,
                    const std::vector<Result>& results);
std::string to_svg(const DeviceInfo& device, const std::vector<Result>& results);

}  // namespace tmakit::bench
