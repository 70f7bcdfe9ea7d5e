// On a machine with a GPU: the live driver against the validator and the recorded corpus.
// Every corpus spec gets the verdict the driver gave when the corpus was recorded, the
// validator's verdict is the driver's, and encode() succeeds for every spec validate()
// accepts. A new driver that changes a verdict fails here first.
#include <cuda.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "../corpus.hpp"
#include "tmakit/host/driver.hpp"
#include "tmakit/host/encode.hpp"
#include "tmakit/host/spec_json.hpp"
#include "tmakit/host/validate.hpp"

namespace tmakit {
namespace {

TEST(DriverAgreement, LiveDriverValidatorAndCorpusAgree) {
  if (!driver_available() || ensure_current_context() != CUDA_SUCCESS) {
    GTEST_SKIP() << "no GPU: the CUDA driver (libcuda.so.1) or a device is missing";
  }
  const auto lines = testing::read_driver_corpus();
  ASSERT_GT(lines.size(), 50000u) << "corpus missing: " << testing::driver_corpus_path();
  std::size_t accepted = 0, failures = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto object = nlohmann::json::parse(lines[i]);
    const TensorMapSpec spec = spec_from_json(object);
    CUtensorMap map{};
    const CUresult live = encode_unchecked(spec, &map);
    const bool recorded_ok = object.at("driver") == "ok";
    const bool valid = !find_violation(spec).has_value();
    if (live == CUDA_SUCCESS) {
      ++accepted;
      // encode() must build the same map without complaint.
      try {
        const CUtensorMap built = encode(spec);
        if (std::memcmp(&built, &map, sizeof map) != 0 && ++failures <= 5) {
          ADD_FAILURE() << "line " << i + 1 << ": encode() built a different map";
        }
      } catch (const Error& e) {
        if (++failures <= 5) ADD_FAILURE() << "line " << i + 1 << ": encode threw " << e.what();
      }
    }
    if ((live == CUDA_SUCCESS) != recorded_ok || (live == CUDA_SUCCESS) != valid) {
      if (++failures <= 10) {
        ADD_FAILURE() << "line " << i + 1 << ": live driver " << driver_error_name(live)
                      << ", recorded " << object.at("driver") << ", validator "
                      << (valid ? "accepts" : "refuses") << "\n  " << lines[i];
      }
    }
  }
  EXPECT_EQ(failures, 0u);
  EXPECT_GT(accepted, 10000u);
  std::printf("driver agreement: %zu specs, %zu accepted by the driver, %zu failures\n",
              lines.size(), accepted, failures);
}

// Every corpus spec the validator refuses and can mend: the nearest passing spec (what
// `tmakit check --fix` prints) is accepted by the live driver, so a suggested fix is never
// one that the driver refuses.
TEST(DriverAgreement, LiveDriverAcceptsEveryFixedSpec) {
  if (!driver_available() || ensure_current_context() != CUDA_SUCCESS) {
    GTEST_SKIP() << "no GPU: the CUDA driver (libcuda.so.1) or a device is missing";
  }
  const auto lines = testing::read_driver_corpus();
  ASSERT_GT(lines.size(), 50000u) << "corpus missing: " << testing::driver_corpus_path();
  std::size_t refused = 0, fixed = 0, failures = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const TensorMapSpec spec = spec_from_json(nlohmann::json::parse(lines[i]));
    if (!find_violation(spec)) continue;
    ++refused;
    const auto mended = nearest_passing_spec(spec);
    if (!mended) continue;
    ++fixed;
    CUtensorMap map{};
    const CUresult live = encode_unchecked(*mended, &map);
    if (live != CUDA_SUCCESS && ++failures <= 10) {
      ADD_FAILURE() << "line " << i + 1 << ": the driver refuses the fixed spec ("
                    << driver_error_name(live) << ")\n  " << spec_to_json(*mended) << "\n  from "
                    << lines[i];
    }
  }
  EXPECT_EQ(failures, 0u);
  EXPECT_GT(fixed, 10000u);
  std::printf("fixed specs: %zu refused, %zu mended, %zu refused by the driver\n", refused, fixed,
              failures);
}

}  // namespace
}  // namespace tmakit
