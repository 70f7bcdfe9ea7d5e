// The benchmark report's table on hand-made results (no GPU): units, ratios, failures.
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
  r.status = "ok";
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
  r.status = "n/a: the shape is not a whole number of these tiles";
  EXPECT_FALSE(r.failed());
  r.status = "baseline unavailable: libcublas not found";
  EXPECT_FALSE(r.failed());
  r.status = "FAILED: 3 wrong";
  EXPECT_TRUE(r.failed());
  r.status = "error: launch failed";
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

TEST(BenchReport, RatiosToBaselinesAreRatiosOfTimes) {
  const std::string t = table({made("gemm/fp8/m1", "cublaslt-fp8", "vendor", 0.010, 1600, 0),
                               made("gemm/fp8/m1", "seed-tma", "seed", 0.020, 800, 0),
                               made("gemm/fp8/m1", "tmakit", "tmakit", 0.008, 2000, 0)});
  EXPECT_NE(t.find("cublaslt-fp8 1.25x, seed-tma 2.50x"), std::string::npos) << t;
}

TEST(BenchReport, AFailedCaseShowsItsStatusInsteadOfFigures) {
  Result bad = made("add/int32/8x8", "tmakit", "tmakit", 0, 0, 0);
  bad.status = "FAILED: 3 wrong elements";
  const std::string t = table({bad});
  EXPECT_NE(t.find("FAILED: 3 wrong elements"), std::string::npos) << t;
  EXPECT_EQ(t.find(" ms"), std::string::npos) << t;
}

}  // namespace
}  // namespace tmakit::bench
