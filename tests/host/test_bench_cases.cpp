// The benchmark's declared cases and statuses, without a GPU: the text each status renders to
// (the table's and the JSON's), which ids a case reports and when the filter selects it, and
// what the built-in cases declare (bytes, FLOPs, baselines, timing).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
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
// The memcpy ceiling copies whole 4 KiB: never fewer bytes than the workload's, at most
// 4,095 more (docs/bench.md, "The memcpy copies whole 4 KiB").
TEST(BenchCases, TheMemcpyCeilingCopiesWhole4KiB) {
  EXPECT_EQ(ceiling_copy_bytes(0), 0u);
  EXPECT_EQ(ceiling_copy_bytes(1), 4096u);
  EXPECT_EQ(ceiling_copy_bytes(4096), 4096u);
  EXPECT_EQ(ceiling_copy_bytes(4097), 8192u);
  EXPECT_EQ(ceiling_copy_bytes(8191ull * 8193), 8192ull * 8192);
  EXPECT_EQ(ceiling_copy_bytes(11012096), 11014144u);  // a quantizer ceiling at 1024 x 7168
  EXPECT_EQ(ceiling_copy_bytes((1ull << 40) + 1), (1ull << 40) + 4096);
}

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
    // the recipes' rows read their scales too (GemmCasesInARecipeReadTheirScales)
    if (c.impl.find("-row") != std::string::npos || c.impl.find("-block") != std::string::npos) {
      continue;
    }
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

// Every GEMM shape has cuBLASLt's and tmakit's rows in the row-wise recipe (both accumulation
// modes) and the 128-block one (promoted only): each declares A, B, D and every scale read
// once, tmakit's states its speed-up over cuBLASLt's row of the same recipe and mode and is
// compared with tmakit's per-tensor row of the same mode.
TEST(BenchCases, GemmCasesInARecipeReadTheirScales) {
  SuiteOptions o;
  o.gemm_shapes = {{200, 2112, 7168}, {64, 4096, 4112}};
  const auto all = declared_workloads(o);
  struct Expected {
    const char* impl;
    const char* speedup_over;
    std::vector<std::string> baselines;
    bool block;
  };
  const Expected rows[] = {
      {"cublaslt-fp8-row", "", {}, false},
      {"cublaslt-fp8-row-fast", "", {}, false},
      {"cublaslt-fp8-block", "", {}, true},
      {"tmakit-row", "cublaslt-fp8-row", {"cublaslt-fp8-row", "tmakit"}, false},
      {"tmakit-row-fast", "cublaslt-fp8-row-fast", {"cublaslt-fp8-row-fast", "tmakit-fast"}, false},
      {"tmakit-block", "cublaslt-fp8-block", {"cublaslt-fp8-block", "tmakit"}, true},
  };
  for (const auto& [m, n, k] : o.gemm_shapes) {
    const std::string id = "gemm/fp8/m" + std::to_string(m) + "n" + std::to_string(n) + "k" +
                           std::to_string(k);
    const DeclaredWorkload* w = find(all, id);
    ASSERT_NE(w, nullptr) << id;
    const std::uint64_t fp8 = m * k + n * k + 2 * m * n;
    const std::uint64_t k_blocks = (k + 127) / 128;  // 56; 33 with K = 4112 (a last part of 16)
    for (const Expected& e : rows) {
      const CaseSpec* c = find(*w, e.impl);
      ASSERT_NE(c, nullptr) << id << " " << e.impl;
      const std::uint64_t scales =
          e.block ? (m + (n + 127) / 128) * k_blocks * 4 : (m + n) * 4;
      EXPECT_EQ(c->bytes, fp8 + scales) << id << " " << e.impl;
      EXPECT_EQ(c->flops, 2 * m * n * k) << e.impl;
      EXPECT_EQ(c->timed_by, TimedBy::together) << e.impl;
      EXPECT_TRUE(c->streamed) << e.impl;
      EXPECT_EQ(c->speedup_over, e.speedup_over) << e.impl;
      EXPECT_EQ(c->baselines, e.baselines) << e.impl;
      EXPECT_EQ(c->kind, e.speedup_over[0] == '\0' ? "vendor" : "tmakit") << e.impl;
    }
    // no fast accumulation with 128-block scales
    EXPECT_EQ(find(*w, "tmakit-block-fast"), nullptr);
    EXPECT_EQ(find(*w, "cublaslt-fp8-block-fast"), nullptr);
  }
}

// tmakit's recipe rows state the plan's choice (bind_tmakit plans each call's problem): the
// plan takes every shape of both sets in each recipe and mode the rows run, block scales on
// the configurations that apply them with the bench's scale_a (M-major, loaded by TMA:
// m64n64, m64n128, m128n128 and the two-wave ones), on an H100's and an H200's 132 SMs.
TEST(BenchCases, EveryShapeOfTheSetsHasAPlanInEachRecipe) {
  SuiteOptions o;
  o.gemm_shape_sets = {"default", "deepseek"};
  int shapes = 0;
  for (const auto& w : declared_workloads(o)) {
    unsigned long long m = 0, n = 0, k = 0;
    if (std::sscanf(w.workload.c_str(), "gemm/fp8/m%llun%lluk%llu", &m, &n, &k) != 3) continue;
    ++shapes;
    for (const auto& [recipe, fast] : {std::pair{GemmScaleRecipe::row, false},
                                       std::pair{GemmScaleRecipe::row, true},
                                       std::pair{GemmScaleRecipe::block, false}}) {
      GemmProblem p;
      p.m = m;
      p.n = n;
      p.k = k;
      p.sm_count = 132;
      p.tuning.accumulation = fast ? GemmAccumulation::fast : GemmAccumulation::promoted;
      p.recipe = recipe;
      p.block_scale_a_tma = recipe == GemmScaleRecipe::block;  // (as bind_tmakit says)
      GemmPlan plan;
      ASSERT_NO_THROW(plan = gemm_fp8_plan(p)) << w.workload;
      if (recipe == GemmScaleRecipe::block) {
        EXPECT_TRUE(gemm_config_info(plan.config).block_scales_tma)
            << w.workload << ": " << gemm_config_name(plan.config);
      }
    }
  }
  EXPECT_EQ(shapes, 24 + 18 - 3);
}

// The named shape sets: "deepseek" is DeepSeek-V3's six projections at M = 64, 128 and 4096;
// sets and --gemm-shape's shapes run in the order given, each shape once; an unknown name is
// refused; with neither, the built-in list runs, as with "default".
TEST(BenchCases, GemmShapeSetsNameTheirShapes) {
  const auto ids = [](const SuiteOptions& o) {
    std::vector<std::string> out;
    for (const auto& w : declared_workloads(o)) {
      if (w.workload.rfind("gemm/", 0) == 0) out.push_back(w.workload);
    }
    return out;
  };
  SuiteOptions deepseek;
  deepseek.gemm_shape_sets = {"deepseek"};
  std::vector<std::string> want;
  for (const char* m : {"64", "128", "4096"}) {
    for (const char* nk : {"n2112k7168", "n24576k1536", "n32768k512", "n7168k16384",
                           "n4096k7168", "n7168k2048"}) {
      want.push_back(std::string("gemm/fp8/m") + m + nk);
    }
  }
  EXPECT_EQ(ids(deepseek), want);
  SuiteOptions builtin;
  SuiteOptions named_default;
  named_default.gemm_shape_sets = {"default"};
  EXPECT_EQ(ids(builtin), ids(named_default));
  // three of DeepSeek's shapes are in the built-in list: both sets hold each once
  SuiteOptions both;
  both.gemm_shape_sets = {"default", "deepseek"};
  both.gemm_shapes = {{4096, 7168, 2048}, {3, 5, 16}};
  const std::vector<std::string> all = ids(both);
  EXPECT_EQ(all.size(), ids(builtin).size() + want.size() - 3 + 1);
  EXPECT_EQ(all.back(), "gemm/fp8/m3n5k16");
  EXPECT_EQ(all.front(), ids(builtin).front());
  std::vector<std::string> sorted = all;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
  SuiteOptions unknown;
  unknown.gemm_shape_sets = {"llama"};
  try {
    declared_workloads(unknown);
    ADD_FAILURE() << "an unknown shape set was taken";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("no GEMM shape set is called 'llama'"), std::string::npos)
        << e.what();
  }
  const auto sets = gemm_shape_sets();
  ASSERT_EQ(sets.size(), 2u);
  EXPECT_EQ(sets[0].first, "default");
  EXPECT_EQ(sets[1].first, "deepseek");
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

// --tune's row-wise variants: "tmakit-row:<name>" for every built configuration that takes the
// shape and promotes, "tmakit-row-fast:<name>" for every one but the small-M kernel, each
// compared with cuBLASLt's row-wise mode in its accumulation mode.
TEST(BenchCases, TunedGemmVariantsTakeTheRowWiseRecipe) {
  struct Shape {
    std::uint64_t m, n, k;
  };
  const Shape shapes[] = {{16, 4096, 4096}, {4096, 32768, 512}};
  SuiteOptions o;
  o.tune = true;
  for (const Shape& s : shapes) o.gemm_shapes.push_back({s.m, s.n, s.k});
  const auto all = declared_workloads(o);
  for (const Shape& s : shapes) {
    const std::string id = "gemm/fp8/m" + std::to_string(s.m) + "n" + std::to_string(s.n) + "k" +
                           std::to_string(s.k);
    const DeclaredWorkload* w = find(all, id);
    ASSERT_NE(w, nullptr) << id;
    std::vector<int> promoted(kGemmConfigs, 0), fast(kGemmConfigs, 0);
    for (const auto& c : w->cases) {
      const bool is_fast = c.impl.rfind("tmakit-row-fast:", 0) == 0;
      if (!is_fast && c.impl.rfind("tmakit-row:", 0) != 0) continue;
      const int config = gemm_config_id(c.impl.substr(c.impl.find(':') + 1));
      ASSERT_GE(config, 0) << id << " " << c.impl;
      ++(is_fast ? fast : promoted)[static_cast<std::size_t>(config)];
      EXPECT_EQ(c.kind, "tmakit") << c.impl;
      EXPECT_EQ(c.speedup_over, is_fast ? "cublaslt-fp8-row-fast" : "cublaslt-fp8-row") << c.impl;
    }
    for (int config = 0; config < kGemmConfigs; ++config) {
      const GemmConfigInfo info = gemm_config_info(config);
      const bool takes = info.built && (info.max_m == 0 || s.m <= info.max_m);
      EXPECT_EQ(promoted[static_cast<std::size_t>(config)], takes && info.promotes ? 1 : 0)
          << id << " " << info.name;
      EXPECT_EQ(fast[static_cast<std::size_t>(config)], takes && info.block_m != 0 ? 1 : 0)
          << id << " " << info.name;
    }
  }
  // the 4096-row shape's rows include the two-wave configurations, and the 16-row one's the
  // small-M kernel (promoted only)
  const DeclaredWorkload* big = find(all, "gemm/fp8/m4096n32768k512");
  const DeclaredWorkload* small = find(all, "gemm/fp8/m16n4096k4096");
  ASSERT_NE(big, nullptr);
  ASSERT_NE(small, nullptr);
  const auto has = [](const DeclaredWorkload* w, const std::string& impl) {
    for (const auto& c : w->cases) {
      if (c.impl == impl) return true;
    }
    return false;
  };
  EXPECT_TRUE(has(big, "tmakit-row:m192n128"));
  EXPECT_TRUE(has(big, "tmakit-row-fast:m128n256w"));
  EXPECT_TRUE(has(small, "tmakit-row:smallm"));
  EXPECT_FALSE(has(small, "tmakit-row-fast:smallm"));
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
