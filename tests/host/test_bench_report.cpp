// The benchmark report on hand-made results (no GPU): the table's units, ratios and failures,
// the plot's families and units.
#include <gtest/gtest.h>

#include <sstream>

#include "suite.hpp"

namespace tmakit::bench {
namespace {

Result made(const std::string& workload, const std::string& impl, const std::string& kind,
            double median_ms, double gbps, double memcpy_gbps) {
  Result r;
  r.workload = workload;
  r.impl = impl;
  r.id = workload + "/" + impl;
  r.kind = kind;
  r.status = Status::ok();
  r.bytes = 2'000'000'000;
  r.timing.median_ms = median_ms;
  r.timing.runs = 20;
  r.gbps = gbps;
  r.memcpy_gbps = memcpy_gbps;
  return r;
}

std::string table(const std::vector<Result>& results) {
  DeviceInfo d;
  d.name = "Test GPU";
  d.cc_major = 9;
  d.sm_count = 132;
  std::ostringstream os;
  print_table(os, d, results);
  return os.str();
}

// What makes `tmakit bench` exit 1: wrong results and errors, not a missing library or a case
// that does not apply to a shape.
TEST(BenchReport, OnlyWrongResultsAndErrorsAreFailures) {
  Result r = made("transpose/fp32/64x64", "pattern:128x256", "probe", 1, 1, 1);
  EXPECT_FALSE(r.failed());
  r.status = Status::not_applicable("the shape is not a whole number of these tiles");
  EXPECT_FALSE(r.failed());
  r.status = Status::unavailable("libcublas not found");
  EXPECT_FALSE(r.failed());
  r.status = Status::wrong("3 wrong");
  EXPECT_TRUE(r.failed());
  r.status = Status::error("launch failed");
  EXPECT_TRUE(r.failed());
  r.status = Status::timing_error("launch failed");
  EXPECT_TRUE(r.failed());
  r.status = Status::capture_error("operation not permitted when stream is capturing");
  EXPECT_TRUE(r.failed());
}

TEST(BenchReport, LongTimesInMillisecondsShortOnesInMicroseconds) {
  const std::string t = table({made("add/int32/8x8", "memcpy", "ceiling", 2.0, 4000, 4000),
                               made("add/int32/8x8", "tmakit", "tmakit", 2.153, 3716, 4000),
                               made("gemm/fp8/m1", "tmakit", "tmakit", 0.00962, 1700, 0)});
  EXPECT_NE(t.find("2.153 ms"), std::string::npos) << t;
  EXPECT_NE(t.find("9.6 us"), std::string::npos) << t;
  EXPECT_NE(t.find("0.929"), std::string::npos) << t;  // 3716 / 4000 of memcpy
  EXPECT_NE(t.find("runs, L2 flushed"), std::string::npos) << t;
}

// Each implementation is timed interleaved with its own memcpy rounds: its ratio is to that
// paired memcpy, not to the memcpy row measured alone (which may have run at other clocks).
TEST(BenchReport, EachRowsRatioIsToItsOwnPairedMemcpy) {
  const std::string t = table({made("add/int32/8x8", "memcpy", "ceiling", 2.2, 3800, 3800),
                               made("add/int32/8x8", "tmakit", "tmakit", 2.3, 3700, 4300)});
  EXPECT_NE(t.find("0.860"), std::string::npos) << t;  // 3700 / 4300
  EXPECT_EQ(t.find("0.974"), std::string::npos) << t;  // not 3700 / 3800
  EXPECT_NE(t.find("interleaved rounds"), std::string::npos) << t;
}

// A row is compared with the baselines it declares, in the order the rows were reported;
// other rows of the workload (a probe, the bytes floor) are not baselines.
TEST(BenchReport, RatiosToBaselinesAreRatiosOfTimes) {
  Result ours = made("gemm/fp8/m1", "tmakit", "tmakit", 0.008, 2000, 0);
  ours.baselines = {"seed-tma", "cublaslt-fp8"};
  const std::string t = table({made("gemm/fp8/m1", "cublaslt-fp8", "vendor", 0.010, 1600, 0),
                               made("gemm/fp8/m1", "seed-tma", "seed", 0.020, 800, 0),
                               made("gemm/fp8/m1", "bytes-floor", "ceiling", 0.004, 4000, 0),
                               ours});
  EXPECT_NE(t.find("cublaslt-fp8 1.25x, seed-tma 2.50x\n"), std::string::npos) << t;
  EXPECT_EQ(t.find("bytes-floor 0.50x"), std::string::npos) << t;
}

TEST(BenchReport, AFailedCaseShowsItsStatusInsteadOfFigures) {
  Result bad = made("add/int32/8x8", "tmakit", "tmakit", 0, 0, 0);
  bad.status = Status::wrong("3 wrong elements");
  const std::string t = table({bad});
  EXPECT_NE(t.find("FAILED: 3 wrong elements"), std::string::npos) << t;
  EXPECT_EQ(t.find(" ms"), std::string::npos) << t;
}


std::string svg(const std::vector<Result>& results) {
  DeviceInfo d;
  d.name = "Test GPU";
  return to_svg(d, results);
}

Result gemm_row(const std::string& workload, const std::string& impl, const std::string& kind,
                double median_ms, const std::string& speedup_over = "") {
  Result r = made(workload, impl, kind, median_ms, 100, 0);
  r.flops = 2ull * 4096 * 4096 * 4096;  // 137.4 GFLOP
  r.speedup_over = speedup_over;
  return r;
}

// Each family in its own unit: a memory-bound row as its fraction of memcpy; a GEMM row of
// tmakit as its speed-up over cuBLASLt FP8 of the same mode and workload, with TFLOP/s; vendor
// GEMM rows (cuBLAS FP16 moves twice the bytes) get no bar of their own.
TEST(BenchReport, PlotShowsEachFamilyInItsOwnUnit) {
  const std::string w = "gemm/fp8/m4096n4096k4096";
  const std::string plot =
      svg({made("add/int32/8x8", "memcpy", "ceiling", 2.0, 4000, 4000),
           made("add/int32/8x8", "tmakit", "tmakit", 2.153, 3716, 4000),
           gemm_row(w, "tmakit", "tmakit", 0.100, "cublaslt-fp8"),
           gemm_row(w, "cublaslt-fp8", "vendor", 0.125),
           gemm_row(w, "tmakit-fast", "tmakit", 0.100, "cublaslt-fp8-fast"),
           gemm_row(w, "cublaslt-fp8-fast", "vendor", 0.095),
           gemm_row(w, "cublas-fp16", "vendor", 0.200),
           gemm_row(w + "/stream", "tmakit", "tmakit", 0.110, "cublaslt-fp8"),
           gemm_row(w + "/stream", "cublaslt-fp8", "vendor", 0.121)});
  EXPECT_NE(plot.find("Memory-bound: GB/s as a fraction of device memcpy"), std::string::npos);
  EXPECT_NE(plot.find(">0.929<"), std::string::npos) << plot;  // 3716 / 4000
  EXPECT_NE(plot.find("speed-up over cuBLASLt FP8"), std::string::npos);
  // 0.125 / 0.100 against the promoted baseline, 1374 TFLOP/s at 0.1 ms
  EXPECT_NE(plot.find("1.25x cublaslt-fp8, 1374 TFLOP/s"), std::string::npos) << plot;
  // the fast mode against cuBLASLt's fast mode, not the promoted one
  EXPECT_NE(plot.find("0.95x cublaslt-fp8-fast, 1374 TFLOP/s"), std::string::npos) << plot;
  // the stream row against the stream row of cuBLASLt
  EXPECT_NE(plot.find("1.10x cublaslt-fp8, 1249 TFLOP/s"), std::string::npos) << plot;
  EXPECT_EQ(plot.find(">" + w + "/cublas-fp16<"), std::string::npos) << plot;
  EXPECT_EQ(plot.find(">" + w + "/cublaslt-fp8<"), std::string::npos) << plot;
}

// A GEMM row whose baseline did not run says so instead of drawing a ratio.
TEST(BenchReport, PlotNamesAMissingGemmBaseline) {
  const std::string plot =
      svg({gemm_row("gemm/fp8/m1n4096k4096", "tmakit", "tmakit", 0.01, "cublaslt-fp8")});
  EXPECT_NE(plot.find("no cublaslt-fp8 row"), std::string::npos) << plot;
  EXPECT_EQ(plot.find("Memory-bound"), std::string::npos) << plot;
}

}  // namespace
}  // namespace tmakit::bench
