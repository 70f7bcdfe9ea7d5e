// The benchmark's declared cases and statuses, without a GPU: the text each status renders to
// (the table's and the JSON's), which ids a case reports and when the filter selects it, and
// what the built-in cases declare (bytes, FLOPs, baselines, timing).
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cases.hpp"
#include "status.hpp"
#include "suite.hpp"
#include "tmakit/kernels/gemm.hpp"

namespace tmakit::bench {
namespace {

TEST(BenchStatus, RendersTheTextTheReportsCarry) {
  EXPECT_EQ(Status().text(), "ok");
  EXPECT_EQ(Status::ok().text(), "ok");
  EXPECT_EQ(Status::wrong("3 wrong elements").text(), "FAILED: 3 wrong elements");
  EXPECT_EQ(Status::error("launch failed").text(), "error: launch failed");
  EXPECT_EQ(Status::timing_error("x").text(), "error while timing: x");
  EXPECT_EQ(Status::capture_error("x").text(), "error while capturing: x");
  EXPECT_EQ(Status::unavailable("libcudnn.so.9 not found (no such file)").text(),
            "baseline unavailable: libcudnn.so.9 not found (no such file)");
  EXPECT_EQ(Status::not_applicable("the shape is not a whole number of these tiles").text(),
            "n/a: the shape is not a whole number of these tiles");
  EXPECT_EQ(Status::error("").text(), "error");  // no dangling ": "
}

TEST(BenchStatus, KeepsItsOutcomeAndDetailApart) {
  const Status s = Status::unavailable("cublasLtCreate failed");
  EXPECT_EQ(s.outcome(), Outcome::unavailable);
  EXPECT_EQ(s.detail(), "cublasLtCreate failed");
  EXPECT_FALSE(s.is_ok());
  EXPECT_FALSE(s.failed());
  EXPECT_TRUE(Status::ok().is_ok());
  EXPECT_FALSE(Status::ok().failed());
  EXPECT_EQ(Status::wrong("a"), Status::wrong("a"));
  EXPECT_NE(Status::wrong("a"), Status::error("a"));
}

TEST(BenchStatus, TheJsonAndTheTableCarryTheRenderedText) {
  Result r;
  r.workload = "stencil3x3/fp32/16384x16384";
  r.impl = "cudnn";
  r.id = r.workload + "/cudnn";
  r.kind = "vendor";
  r.status = Status::unavailable("libcudnn.so.9 not found (no such file)");
  DeviceInfo d;
  d.name = "Test GPU";
  const auto j = nlohmann::json::parse(to_json(d, SuiteOptions{}, {r}));
  EXPECT_EQ(j["results"][0]["status"],
            "baseline unavailable: libcudnn.so.9 not found (no such file)");
  std::ostringstream table;
  print_table(table, d, {r});
  EXPECT_NE(table.str().find("baseline unavailable: libcudnn.so.9 not found (no such file)"),
            std::string::npos)
      << table.str();
}

TEST(BenchCases, AStreamedCaseReportsTwoIdsAndIsSelectedByEither) {
  CaseSpec c;
  c.impl = "tmakit";
  c.timed_by = TimedBy::together;
  c.streamed = true;
  const std::string w = "gemm/fp8/m1n4096k4096";
  EXPECT_EQ(case_id(w, c), "gemm/fp8/m1n4096k4096/tmakit");
  EXPECT_EQ(stream_case_id(w, c), "gemm/fp8/m1n4096k4096/stream/tmakit");
  EXPECT_TRUE(case_selected("", w, c));
  EXPECT_TRUE(case_selected("m1n*/tmakit", w, c));
  EXPECT_TRUE(case_selected("stream/tmakit", w, c));  // the stream row alone runs the case
  EXPECT_FALSE(case_selected("cublaslt", w, c));
  c.streamed = false;
  EXPECT_FALSE(case_selected("stream/tmakit", w, c));
}

Result timed(const std::string& workload, const std::string& impl, double median_ms) {
  Result r;
  r.workload = workload;
  r.impl = impl;
  r.id = workload + "/" + impl;
  r.bytes = 16'777'216 + 16'777'216 + 2 * 4096 * 4096;  // 4096^3 FP8 operands, bf16 D
  r.flops = 2ull * 4096 * 4096 * 4096;
  r.timing.median_ms = median_ms;
  return r;
}

// A GEMM row's note: TFLOP/s, the plan, the speed-up over its baseline timed in the same
// mode, the check's relative error, then (stream rows) the graph, as the table has shown them.
TEST(BenchCases, AFinishedRowCarriesItsRatesAndNoteInOrder) {
  const std::string w = "gemm/fp8/m4096n4096k4096";
  const Result lt = timed(w, "cublaslt-fp8", 0.125);
  Result ours = timed(w, "tmakit", 0.100);
  ours.speedup_over = "cublaslt-fp8";
  ours.note = "m128n128, 1 split(s), 132 CTAs";
  finish_row(ours, "rel. error 1.00e-03 (2048 sampled elements)", {&lt, &ours},
             "graph of 24 calls over 4 operand sets");
  EXPECT_EQ(ours.note,
            "1374.4 TFLOP/s; m128n128, 1 split(s), 132 CTAs; 1.25x cublaslt-fp8; rel. error "
            "1.00e-03 (2048 sampled elements); graph of 24 calls over 4 operand sets");
  EXPECT_NEAR(ours.gbps, static_cast<double>(ours.bytes) / 1e-4 / 1e9, 1e-6);
}

// No FLOPs, no baseline row, nothing noted: the note stays as the binding gave it; a row that
// did not pass its check keeps its note and gets no rate.
TEST(BenchCases, AFinishedRowLeavesOutWhatItDoesNotHave) {
  Result copy = timed("add/int32/8x8", "memcpy", 2.0);
  copy.flops = 0;
  copy.note = "cudaMemcpyAsync device to device";
  finish_row(copy, "", {&copy}, "");
  EXPECT_EQ(copy.note, "cudaMemcpyAsync device to device");
  Result ours = timed("gemm/fp8/m1n4096k4096", "tmakit-fast", 0.01);
  ours.speedup_over = "cublaslt-fp8-fast";  // not among the peers: no ratio
  Result lt = timed("gemm/fp8/m1n4096k4096", "cublaslt-fp8-fast", 0.012);
  lt.status = Status::unavailable("libcublasLt not found");
  finish_row(ours, "", {&lt, &ours}, "");
  EXPECT_EQ(ours.note.find("cublaslt"), std::string::npos) << ours.note;
  Result bad = timed("add/int32/8x8", "tmakit", 0);
  bad.status = Status::wrong("3 wrong elements");
  bad.note = "layout 3";
  finish_row(bad, "rel. error", {&bad}, "");
  EXPECT_EQ(bad.note, "layout 3");
  EXPECT_EQ(bad.gbps, 0);
}

const DeclaredWorkload* find(const std::vector<DeclaredWorkload>& all, const std::string& id) {
  for (const auto& w : all) {
    if (w.workload == id) return &w;
  }
  return nullptr;
}

const CaseSpec* find(const DeclaredWorkload& w, const std::string& impl) {
  for (const auto& c : w.cases) {
    if (c.impl == impl) return &c;
  }
  return nullptr;
}

// Each memory-bound workload's ceiling is its memcpy, timed alone and first; every other case
// is timed in rounds with it and moves the same bytes; tmakit's are compared with the seed,
// plain and vendor implementations of the workload, never with a probe.
TEST(BenchCases, MemoryBoundCasesPairWithTheirMemcpy) {
  SuiteOptions o;
  o.tune = true;
  const auto all = declared_workloads(o);
  const DeclaredWorkload* w = find(all, "transpose/fp32/32768x32768");
  ASSERT_NE(w, nullptr);
  ASSERT_FALSE(w->cases.empty());
  EXPECT_EQ(w->cases.front().impl, "memcpy");
  EXPECT_EQ(w->cases.front().timed_by, TimedBy::alone);
  const std::uint64_t bytes = 2ull * 32768 * 32768 * 4;
  for (const auto& c : w->cases) {
    EXPECT_EQ(c.bytes, bytes) << c.impl;
    EXPECT_EQ(c.flops, 0u) << c.impl;
    EXPECT_FALSE(c.streamed) << c.impl;
    if (&c != &w->cases.front()) {
      EXPECT_EQ(c.timed_by, TimedBy::with_ceiling) << c.impl;
    }
  }
  const CaseSpec* ours = find(*w, "tmakit");
  ASSERT_NE(ours, nullptr);
  EXPECT_EQ(ours->baselines,
            (std::vector<std::string>{"seed-naive", "seed-swizzled", "seed-batched", "cublas-geam",
                                      "plain:t32", "plain:t64"}));
  EXPECT_TRUE(find(*w, "pattern:64x256")->baselines.empty());
  EXPECT_TRUE(find(*w, "cublas-geam")->baselines.empty());
}

// A GEMM case declares 2 M N K FLOPs and the bytes of its own operand types, is timed with
// the other cases of its shape and as a stream of calls; tmakit's rows state their speed-up
// over cuBLASLt FP8 in their own accumulation mode.
TEST(BenchCases, GemmCasesDeclareTheirWorkAndBaselines) {
  SuiteOptions o;
  o.gemm_shapes = {{64, 4096, 8192}, {4096, 4096, 4096}, {1024, 4096, 4096}, {4096, 7168, 2048}};
  const auto all = declared_workloads(o);
  const DeclaredWorkload* small = find(all, "gemm/fp8/m64n4096k8192");
  ASSERT_NE(small, nullptr);
  const std::uint64_t m = 64, n = 4096, k = 8192;
  for (const auto& c : small->cases) {
    EXPECT_EQ(c.flops, 2 * m * n * k) << c.impl;
    EXPECT_EQ(c.timed_by, TimedBy::together) << c.impl;
    EXPECT_TRUE(c.streamed) << c.impl;
    const std::uint64_t fp8 = m * k + n * k + 2 * m * n;
    EXPECT_EQ(c.bytes, c.impl == "cublas-fp16" ? 2 * (m * k + n * k + m * n) : fp8) << c.impl;
  }
  EXPECT_EQ(find(*small, "tmakit")->speedup_over, "cublaslt-fp8");
  EXPECT_EQ(find(*small, "tmakit-fast")->speedup_over, "cublaslt-fp8-fast");
  EXPECT_EQ(
      find(*small, "tmakit")->baselines,
      (std::vector<std::string>{"cublaslt-fp8", "cublaslt-fp8-fast", "cublas-fp16", "seed-tma"}));
  EXPECT_TRUE(find(*small, "cublaslt-fp8")->speedup_over.empty());
  // the bytes floor only where the shape is bound by memory (M or N <= 128)
  EXPECT_NE(find(*small, "bytes-floor"), nullptr);
  const DeclaredWorkload* big = find(all, "gemm/fp8/m4096n4096k4096");
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(find(*big, "bytes-floor"), nullptr);
  // the tensor floor where it is not, from 2^36 FLOPs on: the shape's FLOPs alone, timed
  // with the others but not as a stream (it reads no operands)
  EXPECT_EQ(find(*small, "tensor-floor"), nullptr);
  const DeclaredWorkload* mid = find(all, "gemm/fp8/m1024n4096k4096");
  ASSERT_NE(mid, nullptr);
  EXPECT_EQ(find(*mid, "tensor-floor"), nullptr);
  EXPECT_NE(find(*find(all, "gemm/fp8/m4096n7168k2048"), "tensor-floor"), nullptr);
  const CaseSpec* tensor = find(*big, "tensor-floor");
  ASSERT_NE(tensor, nullptr);
  EXPECT_EQ(tensor->kind, "ceiling");
  EXPECT_EQ(tensor->flops, 2ull * 4096 * 4096 * 4096);
  EXPECT_EQ(tensor->bytes, 0u);
  EXPECT_FALSE(tensor->streamed);
}

// --tune's forced GEMM configurations are cases like the others, each compared with cuBLASLt
// in its own accumulation mode.
TEST(BenchCases, TunedGemmVariantsAreDeclaredCases) {
  SuiteOptions o;
  o.tune = true;
  o.gemm_shapes = {{128, 4096, 4096}};
  const auto all = declared_workloads(o);
  const DeclaredWorkload* w = find(all, "gemm/fp8/m128n4096k4096");
  ASSERT_NE(w, nullptr);
  int tuned = 0;
  for (const auto& c : w->cases) {
    if (c.impl.rfind("tmakit:", 0) == 0 || c.impl.rfind("tmakit-fast:", 0) == 0) {
      ++tuned;
      EXPECT_EQ(c.kind, "tmakit");
      const bool fast = c.impl.rfind("tmakit-fast", 0) == 0;
      EXPECT_EQ(c.speedup_over, fast ? "cublaslt-fp8-fast" : "cublaslt-fp8") << c.impl;
    }
  }
  EXPECT_GT(tuned, 4);
}

// --tune's GEMM variants are named from the configurations' table (gemm_config_info): each
// "tmakit:<name>", "tmakit-fast:<name>" or "tmakit:<name>:s<splits>" names a built
// configuration that takes the shape's M, a promoted one only a configuration that promotes,
// a split one only one that splits K, never more ways than the shape has k-blocks; every
// configuration that takes the shape has a row.
TEST(BenchCases, TunedGemmVariantsNameTheTablesConfigurations) {
  struct Shape {
    std::uint64_t m, n, k;
  };
  const Shape shapes[] = {{16, 4096, 4096}, {128, 4096, 256}, {200, 4096, 4096}, {4096, 4096, 4096}};
  SuiteOptions o;
  o.tune = true;
  for (const Shape& s : shapes) o.gemm_shapes.push_back({s.m, s.n, s.k});
  const auto all = declared_workloads(o);
  int split_rows = 0;
  for (const Shape& s : shapes) {
    const std::string id = "gemm/fp8/m" + std::to_string(s.m) + "n" + std::to_string(s.n) + "k" +
                           std::to_string(s.k);
    const DeclaredWorkload* w = find(all, id);
    ASSERT_NE(w, nullptr) << id;
    std::vector<bool> has_row(kGemmConfigs, false);
    for (const auto& c : w->cases) {
      const bool fast = c.impl.rfind("tmakit-fast:", 0) == 0;
      if (!fast && (c.impl.rfind("tmakit:", 0) != 0 || c.impl == "tmakit:no-overlap")) continue;
      std::string name = c.impl.substr(c.impl.find(':') + 1);
      const std::size_t colon = name.find(':');
      const int splits = colon == std::string::npos ? 0 : std::stoi(name.substr(colon + 2));
      name = name.substr(0, colon);
      const int config = gemm_config_id(name);
      ASSERT_GE(config, 0) << id << " " << c.impl;
      const GemmConfigInfo info = gemm_config_info(config);
      has_row[static_cast<std::size_t>(config)] = true;
      EXPECT_TRUE(info.built) << c.impl;
      EXPECT_TRUE(info.max_m == 0 || s.m <= info.max_m) << id << " " << c.impl;
      if (!fast) {
        EXPECT_TRUE(info.promotes) << c.impl;
      }
      if (splits > 0) {
        ++split_rows;
        EXPECT_TRUE(info.splits_k) << c.impl;
        EXPECT_LE(static_cast<std::uint64_t>(splits), (s.k + 127) / 128) << id << " " << c.impl;
      }
    }
    for (int config = 0; config < kGemmConfigs; ++config) {
      const GemmConfigInfo info = gemm_config_info(config);
      const bool takes = info.built && (info.max_m == 0 || s.m <= info.max_m);
      EXPECT_EQ(has_row[static_cast<std::size_t>(config)], takes) << id << " " << info.name;
    }
  }
  EXPECT_GT(split_rows, 0);
}

// --list names exactly the declared cases: each memory-bound case once, each GEMM case call
// by call and as a stream, the GEMM preamble (empty kernel, host overhead, memcpy) first.
TEST(BenchCases, TheListIsTheDeclaredCases) {
  SuiteOptions o;
  o.quick = true;
  const auto ids = list_cases(o);
  std::size_t expected = 3;  // gemm/empty-kernel, gemm/host-overhead, gemm/memcpy
  for (const auto& w : declared_workloads(o)) {
    for (const auto& c : w.cases) {
      expected += c.streamed ? 2 : 1;
      EXPECT_NE(std::find(ids.begin(), ids.end(), case_id(w.workload, c)), ids.end())
          << case_id(w.workload, c);
      if (c.streamed) {
        EXPECT_NE(std::find(ids.begin(), ids.end(), stream_case_id(w.workload, c)), ids.end());
      }
    }
  }
  EXPECT_EQ(ids.size(), expected);
  // every id once: the full list (8192^3 is also a Llama projection) and repeated shapes
  SuiteOptions full;
  for (const auto& list : {list_cases(full), [] {
         SuiteOptions twice;
         twice.gemm_shapes = {{64, 256, 512}, {64, 256, 512}};
         return list_cases(twice);
       }()}) {
    std::vector<std::string> sorted = list;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end())
        << *std::adjacent_find(sorted.begin(), sorted.end());
  }
  o.filter = "add/int32";
  for (const auto& id : list_cases(o)) EXPECT_NE(id.find("add/int32"), std::string::npos) << id;
}

// The quantizer's workloads, one per shape and recipe: its memcpy first and alone, then
// tmakit's call in rounds with it, both moving x (bf16) once, x_fp8 and the scales once.
TEST(BenchCases, QuantizeCasesPairWithAMemcpyOfTheirBytes) {
  const auto all = declared_workloads(SuiteOptions{});
  const struct {
    const char* id;
    std::uint64_t scales;
  } expected[] = {{"quantize/bf16/8192x8192/row", 8192},
                  {"quantize/bf16/8192x8192/block-a", 8192 * 64},
                  {"quantize/bf16/8192x8192/block-b", 64 * 64},
                  {"quantize/bf16/8192x8192/tensor", 1},
                  {"quantize/bf16/16x7168/row", 16},
                  {"quantize/bf16/16x7168/block-a", 16 * 56},
                  {"quantize/bf16/16x7168/block-b", 56},
                  {"quantize/bf16/16x7168/tensor", 1}};
  for (const auto& e : expected) {
    const DeclaredWorkload* w = find(all, e.id);
    ASSERT_NE(w, nullptr) << e.id;
    ASSERT_EQ(w->cases.size(), 2u) << e.id;
    const std::uint64_t rows = std::string(e.id).find("8192x8192") != std::string::npos ? 8192 : 16;
    const std::uint64_t cols = rows == 8192 ? 8192 : 7168;
    const std::uint64_t bytes = rows * cols * 3 + 4 * e.scales;
    EXPECT_EQ(w->cases[0].impl, "memcpy");
    EXPECT_EQ(w->cases[0].timed_by, TimedBy::alone);
    EXPECT_EQ(w->cases[1].impl, "tmakit");
    EXPECT_EQ(w->cases[1].timed_by, TimedBy::with_ceiling);
    for (const auto& c : w->cases) EXPECT_EQ(c.bytes, bytes) << e.id << " " << c.impl;
  }
}

}  // namespace
}  // namespace tmakit::bench
