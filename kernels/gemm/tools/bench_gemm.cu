// bench_gemm: the FP8 GEMM cases of bench/gemm_cases.hpp on their own, one table.
//   bench_gemm [--quick] [--tune] [--filter REGEX] [--runs N]
// --tune adds forced configurations and K splits ("tmakit:c1:s8").
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>

#include "gemm_cases.hpp"

int main(int argc, char** argv) {
  using namespace tmakit::bench;
  SuiteOptions o;
  o.timing.warmup = 5;
  o.timing.runs = 50;
  constexpr const char* kUsage = "usage: bench_gemm [--quick] [--tune] [--filter REGEX] [--runs N]\n";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) {
      o.quick = true;
    } else if (!std::strcmp(argv[i], "--tune")) {
      o.tune = true;
    } else if (!std::strcmp(argv[i], "--filter") && i + 1 < argc) {
      o.filter = argv[++i];
    } else if (!std::strcmp(argv[i], "--runs") && i + 1 < argc) {
      char* end = nullptr;
      const long runs = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || runs < 1 || runs > 100000) {
        std::fprintf(stderr, "bench_gemm: --runs %s is not a count in 1..100000\n%s", argv[i], kUsage);
        return 2;
      }
      o.timing.runs = static_cast<int>(runs);
    } else {
      std::fprintf(stderr, "bench_gemm: unknown argument '%s'\n%s", argv[i], kUsage);
      return 2;
    }
  }
  if (const auto why = gpu_unavailable_reason()) {
    std::printf("bench_gemm: %s\n", why->c_str());
    return 1;
  }
  const DeviceInfo dev = device_info();
  std::printf("device %s, driver %s, runtime %s, %s\n", dev.name.c_str(), dev.driver.c_str(),
              dev.runtime.c_str(), dev.date.c_str());
  try {
    const auto results = run_gemm_cases(o);
    std::printf("%-42s %10s %9s %9s  %s\n", "case", "median us", "GB/s", "min us", "status / note");
    for (const Result& r : results) {
      std::printf("%-42s %10.2f %9.0f %9.2f  %s%s%s\n", r.id.c_str(), r.timing.median_ms * 1e3,
                  r.gbps, r.timing.min_ms * 1e3, r.status.c_str(), r.note.empty() ? "" : " | ",
                  r.note.c_str());
    }
  } catch (const std::exception& e) {
    std::printf("bench_gemm: %s\n", e.what());
    return 1;
  }
  return 0;
}
