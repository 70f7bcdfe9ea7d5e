// Benchmark cases as declarations, and the runner that measures them. A case declares what
// it moves and computes, what it is compared with and how it is timed (CaseSpec); when its
// workload's buffers exist, a binder gives the calls that run it (Binding); the runner does
// the rest: the check on a poisoned output, the timing the case asked for, the rates, the
// notes and the rows of the reports. Both families are built this way: the memory-bound
// suite (suite.cu) and the FP8 GEMMs (gemm_cases.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.hpp"
#include "status.hpp"
#include "suite.hpp"

namespace tmakit::bench {

// How a case is timed, once its check passed.
enum class TimedBy {
  // In rounds of its own. Such a case is its workload's ceiling: the `with_ceiling` cases
  // after it are timed in rounds with it.
  alone,
  // In interleaved rounds with the workload's ceiling (Timer::time_interleaved), straight
  // after its check; its "x memcpy" is to the ceiling of those rounds, so that clock and
  // thermal drift over the suite does not enter the ratio.
  with_ceiling,
  // In interleaved rounds with every other `together` case of the workload, after all of
  // them are checked: the ratios between them carry no drift.
  together,
};

// A case as declared: everything but the calls (no GPU needed; --list reads these).
struct CaseSpec {
  std::string impl;                    // the last part of its id: "<workload>/<impl>"
  std::string kind;                    // "ceiling", "tmakit", "seed", "vendor", "baseline", "probe"
  std::uint64_t bytes = 0;             // each input read once + each output written once
  std::uint64_t flops = 0;             // 0: memory-bound
  std::vector<std::string> baselines;  // Result::baselines
  std::string speedup_over;            // Result::speedup_over
  TimedBy timed_by = TimedBy::with_ceiling;
  // Also timed as a stream of calls (Timer::time_streams_interleaved, `together` cases only):
  // a second row "<workload>/stream/<impl>".
  bool streamed = false;
};

// A workload and its cases as declared, in run order.
struct DeclaredWorkload {
  std::string workload;  // "transpose/fp32/32768x32768", "gemm/fp8/m1n4096k4096"
  std::vector<CaseSpec> cases;
};
// Every workload of the suite for `options` (its shapes, --tune's variants, --gemm-shape),
// memory-bound ones first, then the GEMM shapes; the filter is not applied. No GPU needed.
std::vector<DeclaredWorkload> declared_workloads(const SuiteOptions& options);

// The ids a case reports, in the order the runner reports them: "<workload>/<impl>", and for
// a streamed case "<workload>/stream/<impl>".
std::string case_id(const std::string& workload, const CaseSpec& c);
std::string stream_case_id(const std::string& workload, const CaseSpec& c);
// Whether `filter` (filter_selects) selects either of the case's rows.
bool case_selected(const std::string& filter, const std::string& workload, const CaseSpec& c);

// The bytes a workload's memcpy ceiling copies for `bytes` of data: `bytes` rounded up to a
// whole 4 KiB. NOTE: cudaMemcpyAsync of a count off 4 KiB runs slower than the memory allows
// (up to 1.6x at a few MB; docs/bench.md, "The memcpy copies whole 4 KiB"), so a ceiling of
// the exact count would flatter odd shapes; 4,095 bytes more leave the rate as it is.
std::uint64_t ceiling_copy_bytes(std::uint64_t bytes);

// What a check found: `wrong` is empty when the result is right, else what is wrong ("3 wrong
// elements"); `note` is added to the row's note (e.g. the sampled relative error).
struct Verdict {
  std::string wrong;
  std::string note;
};

// The rate and the note of a row once it is timed (nothing for a row that is not ok): GB/s from
// its bytes; the note becomes, "; " between the parts present: TFLOP/s when it declares FLOPs,
// its binding's note, "1.25x cublaslt-fp8" over its `speedup_over` among `peers` (the rows
// timed in the same mode) when that row is ok, what its check noted, then `extra`.
void finish_row(Result& r, const std::string& check_note, const std::vector<const Result*>& peers,
                const std::string& extra);

// Thrown by a binding's calls when a baseline's library refuses the case at run time (e.g.
// cuBLASLt accepts a scale mode's plan, then refuses every algorithm for it): the row is
// reported as Status::unavailable with the message, not as an error.
struct BaselineRefused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A case bound to its workload's buffers.
struct Binding {
  // Not ok: the case is reported with this status and never run (a missing library, a
  // shape the case does not take).
  Status status;
  std::string note;     // the row's note: the library, the layout or plan chosen, ...
  void* out = nullptr;  // poisoned (every byte 0xA5) before the checked call; null: none
  std::uint64_t out_bytes = 0;
  // The call timed, on operand set `set` (0 except in streams of calls).
  Timer::SetCall run;
  // The checked call, when it is not run(stream, 0) (cuBLASLt picks its algorithm there).
  std::function<void(cudaStream_t)> first;
  // The check of the checked call's output; empty: nothing to check (a ceiling).
  std::function<Verdict()> check;
};

// The stream of calls a workload's streamed cases are timed in: `calls` back-to-back calls
// over `sets` operand sets (calls a multiple of sets).
struct StreamCalls {
  int sets = 0;
  int calls = 0;
};

// Runs workloads' cases on one stream and timer, and collects their rows.
class CaseRunner {
 public:
  CaseRunner(cudaStream_t stream, Timer& timer, std::ostream* progress)
      : stream_(stream), timer_(timer), progress_(progress) {}

  using Bind = std::function<Binding(const CaseSpec&)>;

  // Runs `cases` (those selected, in their declared order) of `workload`: each is bound just
  // before its check (`bind` may allocate, plan or find a library missing), checked once on
  // a poisoned output, then timed as it declares. `copy_gbps` is the "x memcpy" reference
  // of the `together` cases (0: none). Rows go to results(): each case's, then the stream
  // rows of those that passed their check.
  void run(const std::string& workload, const std::vector<CaseSpec>& cases, const Bind& bind,
           double copy_gbps = 0, StreamCalls streams = {});

  // Progress lines "[i/n] id ... 3970 GB/s (0.95x memcpy)" for the cases timed as they come
  // (`alone`, `with_ceiling`); `n` is set here.
  void set_progress_total(int total) { total_ = total; }

  std::vector<Result>& results() { return results_; }

 private:
  cudaStream_t stream_;
  Timer& timer_;
  std::ostream* progress_;
  std::vector<Result> results_;
  int done_ = 0;
  int total_ = 0;
};

}  // namespace tmakit::bench
