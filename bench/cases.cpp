#include "cases.hpp"

#include <cstdio>
#include <exception>
#include <initializer_list>
#include <iomanip>
#include <ostream>
#include <utility>

#include "stall_watch.hpp"
#include "tmakit/core/cuda_check.hpp"
#include "tmakit/core/error.hpp"

namespace tmakit::bench {
namespace {

double gbps_of(std::uint64_t bytes, const Timing& t) {
  return static_cast<double>(bytes) / (t.median_ms * 1e-3) / 1e9;
}

// The non-empty parts, separated by "; ".
std::string join(std::initializer_list<std::string> parts) {
  std::string out;
  for (const auto& p : parts) {
    if (p.empty()) continue;
    out += (out.empty() ? "" : "; ") + p;
  }
  return out;
}

template <class... Args>
std::string format(const char* fmt, Args... args) {
  char buf[160];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

// A row in the making: the result, the binding that runs it and what its check noted.
struct Row {
  Result result;
  Binding binding;
  std::string check_note;
  const CaseSpec* spec = nullptr;
};

}  // namespace

void finish_row(Result& r, const std::string& check_note, const std::vector<const Result*>& peers,
                const std::string& extra) {
  if (!r.ok()) return;
  r.gbps = gbps_of(r.bytes, r.timing);
  std::string tflops;
  if (r.flops > 0) {
    tflops =
        format("%.1f TFLOP/s", static_cast<double>(r.flops) / (r.timing.median_ms * 1e-3) * 1e-12);
  }
  std::string speedup;
  for (const Result* p : peers) {
    if (!r.speedup_over.empty() && p->impl == r.speedup_over && p->ok()) {
      speedup = format("%.2fx %s", p->timing.median_ms / r.timing.median_ms, p->impl.c_str());
    }
  }
  r.note = join({tflops, r.note, speedup, check_note, extra});
}

std::uint64_t ceiling_copy_bytes(std::uint64_t bytes) {
  constexpr std::uint64_t kGranule = 4096;
  return (bytes + kGranule - 1) / kGranule * kGranule;
}

std::string case_id(const std::string& workload, const CaseSpec& c) {
  return workload + "/" + c.impl;
}

std::string stream_case_id(const std::string& workload, const CaseSpec& c) {
  return workload + "/stream/" + c.impl;
}

bool case_selected(const std::string& filter, const std::string& workload, const CaseSpec& c) {
  return filter_selects(filter, case_id(workload, c)) ||
         (c.streamed && filter_selects(filter, stream_case_id(workload, c)));
}

void CaseRunner::run(const std::string& workload, const std::vector<CaseSpec>& cases,
                     const Bind& bind, double copy_gbps, StreamCalls streams) {
  std::vector<Row> rows;
  rows.reserve(cases.size());
  // the case timed alone, which the `with_ceiling` cases after it are timed with
  std::function<void(cudaStream_t)> ceiling;
  std::uint64_t ceiling_bytes = 0;

  for (const CaseSpec& c : cases) {
    if (c.streamed && (c.timed_by != TimedBy::together || streams.calls <= 0)) {
      throw Error("bench case " + case_id(workload, c) +
                  " is declared streamed: it must be timed together, and its workload run "
                  "with a stream of calls (StreamCalls)");
    }
    Row& row = rows.emplace_back();
    row.spec = &c;
    Result& r = row.result;
    r.workload = workload;
    r.impl = c.impl;
    r.id = case_id(workload, c);
    r.kind = c.kind;
    r.bytes = c.bytes;
    r.flops = c.flops;
    r.baselines = c.baselines;
    r.speedup_over = c.speedup_over;
    const bool timed_now = c.timed_by != TimedBy::together;
    if (timed_now && progress_ != nullptr) {
      *progress_ << "[" << ++done_ << "/" << total_ << "] " << r.id << " ... " << std::flush;
    }

    // bind, then check once on a poisoned output
    stall_watch_at("checking " + r.id);
    try {
      row.binding = bind(c);
      const Binding& b = row.binding;
      r.note = b.note;
      r.status = b.status;
      if (r.ok()) {
        if (b.out != nullptr) poison(b.out, b.out_bytes, stream_);
        if (b.first) {
          b.first(stream_);
        } else {
          b.run(stream_, 0);
        }
        TMAKIT_CUDA_CHECK(cudaStreamSynchronize(stream_));
        if (b.check) {
          Verdict v = b.check();
          if (!v.wrong.empty()) {
            r.status = Status::wrong(std::move(v.wrong));
          } else {
            row.check_note = std::move(v.note);
          }
        }
      }
    } catch (const BaselineRefused& e) {
      r.status = Status::unavailable(e.what());
      (void)cudaGetLastError();
    } catch (const std::exception& e) {
      r.status = Status::error(e.what());
      (void)cudaGetLastError();  // clear a launch error that is not sticky: the next case runs
    }

    // time the cases that are timed as they come
    if (r.ok() && timed_now) {
      const Timer::SetCall& run = row.binding.run;
      const std::function<void(cudaStream_t)> once = [run](cudaStream_t st) { run(st, 0); };
      stall_watch_at("timing " + r.id);
      try {
        if (c.timed_by == TimedBy::alone) {
          r.timing = timer_.time(once);
          r.memcpy_gbps = gbps_of(r.bytes, r.timing);
          ceiling = once;
          ceiling_bytes = r.bytes;
        } else if (ceiling) {
          const std::vector<Timing> t = timer_.time_interleaved({ceiling, once});
          r.timing = t[1];
          r.memcpy_gbps = gbps_of(ceiling_bytes, t[0]);
        } else {
          r.timing = timer_.time(once);  // no ceiling ran (filtered out or failed)
        }
        r.gbps = gbps_of(r.bytes, r.timing);
      } catch (const std::exception& e) {
        r.status = Status::timing_error(e.what());
        (void)cudaGetLastError();
      }
    }
    // NOTE: done with it: what it holds (an input's copy, a padded input) is freed before the
    // next case runs
    if (timed_now) row.binding = Binding{};
    if (timed_now && progress_ != nullptr) {
      if (r.ok()) {
        *progress_ << std::fixed << std::setprecision(0) << r.gbps << " GB/s";
        if (r.memcpy_gbps > 0) {
          *progress_ << std::setprecision(3) << " (" << r.gbps / r.memcpy_gbps << "x memcpy)";
        }
        *progress_ << "\n";
      } else {
        *progress_ << r.status.text() << "\n";
      }
    }
  }

  // the `together` cases that passed their check: call by call in interleaved rounds, then
  // (streamed ones) as streams of calls, rows under the workload's "/stream" twin
  std::vector<Row*> together;
  for (Row& row : rows) {
    if (row.spec->timed_by == TimedBy::together && row.result.ok()) together.push_back(&row);
  }
  std::vector<Result> stream_rows;
  std::vector<Timer::SetCall> stream_runs;
  std::vector<const Row*> stream_of;  // the row each stream row repeats
  for (Row* row : together) {
    if (!row->spec->streamed) continue;
    Result s = row->result;
    s.workload = workload + "/stream";
    s.id = stream_case_id(workload, *row->spec);
    stream_rows.push_back(std::move(s));
    stream_runs.push_back(row->binding.run);
    stream_of.push_back(row);
  }
  if (!together.empty()) {
    std::vector<std::function<void(cudaStream_t)>> once;
    for (const Row* row : together) {
      once.push_back([run = row->binding.run](cudaStream_t st) { run(st, 0); });
    }
    stall_watch_at(format("timing %s: %zu cases call by call, in interleaved rounds",
                          workload.c_str(), together.size()));
    try {
      const std::vector<Timing> t = timer_.time_interleaved(once);
      for (std::size_t i = 0; i < together.size(); ++i) together[i]->result.timing = t[i];
    } catch (const std::exception& e) {
      for (Row* row : together) row->result.status = Status::timing_error(e.what());
      (void)cudaGetLastError();
    }
    for (Row* row : together) row->result.memcpy_gbps = copy_gbps;
  }
  if (!stream_rows.empty()) {
    stall_watch_at(format("timing %s/stream: %zu cases as CUDA graphs of %d calls",
                          workload.c_str(), stream_rows.size(), streams.calls));
    try {
      const std::vector<Timer::StreamTiming> t =
          timer_.time_streams_interleaved(stream_runs, streams.sets, streams.calls);
      for (std::size_t i = 0; i < stream_rows.size(); ++i) {
        if (t[i].error.empty()) {
          stream_rows[i].timing = t[i].per_call;
        } else {
          stream_rows[i].status = Status::capture_error(t[i].error);
        }
      }
    } catch (const std::exception& e) {
      for (Result& s : stream_rows) s.status = Status::timing_error(e.what());
      (void)cudaGetLastError();
    }
    for (Result& s : stream_rows) s.memcpy_gbps = copy_gbps;
  }

  // rates and notes, each speed-up against the baseline timed in the same mode
  std::vector<const Result*> peers;
  for (const Row& row : rows) peers.push_back(&row.result);
  for (Row& row : rows) finish_row(row.result, row.check_note, peers, "");
  std::vector<const Result*> stream_peers;
  for (const Result& s : stream_rows) stream_peers.push_back(&s);
  const std::string graph =
      format("graph of %d calls over %d operand sets", streams.calls, streams.sets);
  for (std::size_t i = 0; i < stream_rows.size(); ++i) {
    finish_row(stream_rows[i], stream_of[i]->check_note, stream_peers, graph);
  }
  for (Row& row : rows) results_.push_back(std::move(row.result));
  for (Result& s : stream_rows) results_.push_back(std::move(s));
}

}  // namespace tmakit::bench
