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

}  // namespace
}  // namespace tmakit
