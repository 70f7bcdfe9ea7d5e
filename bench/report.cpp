// Reports of a suite run: the table printed last, JSON, and an SVG bar chart drawn by hand (no
// plotting library): memory-bound cases as a ratio to the memcpy ceiling, GEMMs as speed-up
// over cuBLASLt FP8 with TFLOP/s.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "suite.hpp"

namespace tmakit::bench {
namespace {

std::string fixed(double v, int digits) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << v;
  return os.str();
}

std::string header(const DeviceInfo& d) {
  return d.name + " (sm_" + std::to_string(d.cc_major) + std::to_string(d.cc_minor) + ", " +
         std::to_string(d.sm_count) + " SMs, " + std::to_string(d.l2_bytes >> 20) + " MB L2), " +
         d.driver + ", runtime " + d.runtime + ", " + d.date;
}

// "seed-batched 1.10x, cublas-geam 1.32x": a row against the baselines it declares, in the
// order the rows of its workload were reported.
std::string versus(const Result& r, const std::vector<Result>& all) {
  if (r.baselines.empty() || !r.ok()) return "";
  std::string out;
  for (const auto& b : all) {
    if (b.workload != r.workload || !b.ok() ||
        std::find(r.baselines.begin(), r.baselines.end(), b.impl) == r.baselines.end())
      continue;
    // NOTE: a ratio of times, not of GB/s: implementations of one workload may move
    // different bytes (fp8 against fp16 GEMM operands).
    out += (out.empty() ? "" : ", ") + b.impl + " " +
           fixed(b.timing.median_ms / r.timing.median_ms, 2) + "x";
  }
  return out;
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

void print_table(std::ostream& os, const DeviceInfo& device, const std::vector<Result>& results) {
  std::size_t width = 4;
  for (const auto& r : results) width = std::max(width, r.id.size());
  os << "\ntmakit bench on " << header(device) << "\n";
  os << "bytes = each input read once + each output written once; median of "
     << (results.empty() ? 0 : results.front().timing.runs)
     << " runs, L2 flushed before each; x memcpy = ratio to the device copy of the same "
        "buffers, timed in the same interleaved rounds (the memcpy row: timed alone); "
        "GEMM: '/stream/' rows time a CUDA graph of back-to-back calls over operand sets "
        "larger than the L2 (per call), and x memcpy (M or N <= 128) is to gemm/memcpy\n\n";
  os << std::left << std::setw(static_cast<int>(width)) << "case" << std::right << std::setw(10)
     << "GB" << std::setw(11) << "median" << std::setw(9) << "GB/s" << std::setw(10) << "x memcpy"
     << "  vs baselines / status\n";
  for (const auto& r : results) {
    os << std::left << std::setw(static_cast<int>(width)) << r.id << std::right;
    if (r.ok()) {
      // NOTE: times under 1 ms (the GEMMs) in microseconds, so they keep their digits
      const std::string median = r.timing.median_ms < 1.0
                                     ? fixed(r.timing.median_ms * 1e3, 1) + " us"
                                     : fixed(r.timing.median_ms, 3) + " ms";
      os << std::setw(10) << fixed(static_cast<double>(r.bytes) / 1e9, 3) << std::setw(11) << median
         << std::setw(9) << fixed(r.gbps, 0) << std::setw(10)
         << (r.memcpy_gbps > 0 ? fixed(r.gbps / r.memcpy_gbps, 3) : "-") << "  "
         << versus(r, results) << (r.note.empty() ? "" : "  [" + r.note + "]") << "\n";
    } else {
      os << std::setw(40) << ""
         << "  " << r.status.text() << "\n";
    }
  }
}

std::string to_json(const DeviceInfo& device, const SuiteOptions& options,
                    const std::vector<Result>& results) {
  nlohmann::json j;
  j["device"] = {{"name", device.name},
                 {"compute_capability",
                  std::to_string(device.cc_major) + "." + std::to_string(device.cc_minor)},
                 {"multiprocessors", device.sm_count},
                 {"l2_bytes", device.l2_bytes},
                 {"memory_bytes", device.memory_bytes},
                 {"driver", device.driver},
                 {"runtime", device.runtime},
                 {"clocks", device.clocks}};
  j["date"] = device.date;
  j["method"] = {
      {"warmup", options.timing.warmup},
      {"runs", options.timing.runs},
      {"statistic", "median of CUDA-event times"},
      {"pairing",
       "each implementation timed in interleaved rounds with the memcpy of its "
       "buffers (GEMM: with every implementation of its shape); ratios use those"},
      {"gemm_stream",
       "'/stream/' rows: 24 or more back-to-back calls captured in a CUDA graph, each on "
       "the next of several operand sets holding together twice the L2; replays "
       "timed like single calls; median replay time divided by the calls"},
      {"l2_flush", options.timing.flush_l2},
      {"bytes", "each input read once + each output written once"},
      {"quick", options.quick},
      {"gemm_shape_sets", options.gemm_shape_sets},
      {"filter", options.filter}};
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : results) {
    nlohmann::json row = {{"id", r.id},     {"workload", r.workload}, {"impl", r.impl},
                          {"kind", r.kind}, {"bytes", r.bytes},       {"status", r.status.text()},
                          {"note", r.note}};
    if (r.ok()) {
      row["median_ms"] = r.timing.median_ms;
      row["min_ms"] = r.timing.min_ms;
      row["max_ms"] = r.timing.max_ms;
      row["runs"] = r.timing.runs;
      row["gbps"] = r.gbps;
      row["memcpy_gbps"] = r.memcpy_gbps;
      if (r.memcpy_gbps > 0) row["ratio_to_memcpy"] = r.gbps / r.memcpy_gbps;
      if (r.flops > 0) {
        row["flops"] = r.flops;
        row["tflops"] = static_cast<double>(r.flops) / (r.timing.median_ms * 1e-3) * 1e-12;
      }
    }
    rows.push_back(row);
  }
  j["results"] = rows;
  return j.dump(2) + "\n";
}

namespace {

// One bar of a chart: a label, the bar's value on the chart's axis and the text beside it.
struct Bar {
  std::string label;
  double value;
  std::string text;
  const char* color;
};

// The row a GEMM row's speed-up is stated against (Result::speedup_over: cuBLASLt FP8 in the
// same accumulation mode), in the same workload (call by call, or the same stream of calls).
const Result* speedup_baseline(const Result& r, const std::vector<Result>& all) {
  for (const auto& b : all) {
    if (b.workload == r.workload && b.impl == r.speedup_over && b.ok()) return &b;
  }
  return nullptr;
}

// A panel of horizontal bars from 0 to `max_value`, grid lines every `step`, a red line at
// `reference`; returns the height drawn.
int draw_panel(std::ostringstream& s, int top, const std::string& title,
               const std::vector<Bar>& bars, double max_value, double step, double reference) {
  constexpr int kLabel = 430;  // label column, px
  constexpr int kPlot = 520;   // bar area
  constexpr int kRow = 20;
  const auto x_of = [&](double v) {
    return kLabel + static_cast<int>(std::clamp(v, 0.0, max_value) / max_value * kPlot);
  };
  const int rows_top = top + 24;
  const int axis_y = rows_top + kRow * static_cast<int>(bars.size()) + 4;
  s << "<text x=\"10\" y=\"" << top + 12 << "\" font-size=\"13\">" << xml_escape(title)
    << "</text>\n";
  for (double g = 0; g <= max_value + 1e-9; g += step) {
    const int x = x_of(g);
    s << "<line x1=\"" << x << "\" y1=\"" << rows_top - 4 << "\" x2=\"" << x << "\" y2=\"" << axis_y
      << "\" stroke=\"" << (std::abs(g - reference) < 1e-9 ? "#c00" : "#ddd") << "\"/>\n";
    s << "<text x=\"" << x - 10 << "\" y=\"" << axis_y + 14 << "\">" << fixed(g, 2) << "</text>\n";
  }
  int y = rows_top;
  for (const Bar& b : bars) {
    s << "<text x=\"10\" y=\"" << y + 13 << "\">" << xml_escape(b.label) << "</text>\n";
    s << "<rect x=\"" << kLabel << "\" y=\"" << y + 3 << "\" width=\"" << x_of(b.value) - kLabel
      << "\" height=\"" << kRow - 6 << "\" fill=\"" << b.color << "\"/>\n";
    s << "<text x=\"" << x_of(b.value) + 4 << "\" y=\"" << y + 13 << "\">" << xml_escape(b.text)
      << "</text>\n";
    y += kRow;
  }
  return axis_y + 24 - top;
}

}  // namespace

std::string to_svg(const DeviceInfo& device, const std::vector<Result>& results) {
  // Each family in its own unit: memory-bound workloads as a fraction of the device copy of
  // the same buffers; GEMMs (cases that declare FLOPs) as speed-up over cuBLASLt FP8 in the
  // same recipe and mode, with TFLOP/s beside the bar. Bytes alone would misjudge a GEMM: cuBLAS FP16
  // moves twice the bytes of an FP8 GEMM of the same shape.
  std::vector<Bar> memory;
  std::vector<Bar> gemm;
  double gemm_max = 1.5;
  for (const auto& r : results) {
    if (!r.ok() || r.kind == "ceiling") continue;
    if (r.flops == 0) {
      if (r.memcpy_gbps <= 0) continue;
      const double ratio = r.gbps / r.memcpy_gbps;
      memory.push_back({r.id, ratio, fixed(ratio, 3),
                        r.kind == "tmakit" ? "#2b6cb0"
                        : r.kind == "seed" ? "#999"
                                           : "#d69e2e"});
    } else if (r.kind == "tmakit") {
      const double tflops = static_cast<double>(r.flops) / (r.timing.median_ms * 1e-3) * 1e-12;
      const Result* base = speedup_baseline(r, results);
      if (base == nullptr) {
        const std::string missing = r.speedup_over.empty() ? "baseline" : r.speedup_over;
        gemm.push_back(
            {r.id, 0.0, "no " + missing + " row; " + fixed(tflops, 0) + " TFLOP/s", "#2b6cb0"});
        continue;
      }
      const double speedup = base->timing.median_ms / r.timing.median_ms;
      gemm_max = std::max(gemm_max, std::ceil(speedup * 4) / 4);
      gemm.push_back({r.id, speedup,
                      fixed(speedup, 2) + "x " + base->impl + ", " + fixed(tflops, 0) + " TFLOP/s",
                      speedup >= 1.0 ? "#2b6cb0" : "#90cdf4"});
    }
  }
  std::ostringstream body;
  int y = 50;
  if (!memory.empty()) {
    y += draw_panel(body, y,
                    "Memory-bound: GB/s as a fraction of device memcpy (same buffers, same run)",
                    memory, 1.2, 0.25, 1.0);
  }
  if (!gemm.empty()) {
    y += draw_panel(body, y,
                    "FP8 GEMM: speed-up over cuBLASLt FP8 in the same scale recipe and "
                    "accumulation mode (same run), TFLOP/s beside",
                    gemm, gemm_max, 0.25, 1.0);
  }
  const int width = 430 + 520 + 330;
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << y + 10
    << "\" font-family=\"monospace\" font-size=\"12\">\n";
  s << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s << "<text x=\"10\" y=\"20\" font-size=\"14\">tmakit bench</text>\n";
  s << "<text x=\"10\" y=\"38\">" << xml_escape(header(device)) << "</text>\n";
  s << body.str();
  s << "</svg>\n";
  return s.str();
}

}  // namespace tmakit::bench
