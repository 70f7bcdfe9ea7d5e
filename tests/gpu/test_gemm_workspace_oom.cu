// The FP8 GEMM's split-K workspace when the device's memory is exhausted: a split-K call on a
// new stream whose workspace cannot be allocated throws tmakit::OutOfMemory naming the bytes
// and the ways out, leaves no CUDA error behind (cudaGetLastError() == cudaSuccess), writes
// nothing to D, and the same call is correct once memory is freed. And a workspace that
// cannot double grows to just what the call needs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "test_kernels_common.hpp"
#include "tmakit/core/error.hpp"
#include "tmakit/kernels/gemm.hpp"

namespace tmakit::test {
namespace {

constexpr std::uint64_t kK = 4096;
constexpr std::size_t kMiB = std::size_t{1} << 20;
// 128 x 128 tiles, K split 32 ways: 64 KiB of float partials per tile and split
const GemmTuning kSplit{1, 32};

// Device memory taken in chunks until about `leave_bytes` are free, given back on
// destruction. Failed cudaMallocs along the way are cleared from the runtime's last error.
class MemoryHog {
 public:
  explicit MemoryHog(std::size_t leave_bytes) {
    for (std::size_t chunk = std::size_t{1} << 30; chunk >= kMiB;) {
      std::size_t free_bytes = 0, total_bytes = 0;
      if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) break;
      void* p = nullptr;
      if (free_bytes < leave_bytes + chunk || cudaMalloc(&p, chunk) != cudaSuccess) {
        (void)cudaGetLastError();
        chunk /= 2;
        continue;
      }
      taken_.push_back(p);
    }
  }
  ~MemoryHog() { release(); }
  void release() {
    for (void* p : taken_) EXPECT_EQ(cudaFree(p), cudaSuccess);
    taken_.clear();
  }
  static std::size_t free_bytes() {
    std::size_t free_bytes = 0, total_bytes = 0;
    EXPECT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
    return free_bytes;
  }

 private:
  std::vector<void*> taken_;
};

// A (mn x K) and B (mn x K) of e4m3 1.0 (0x38), so every element of D is K = 4096, exact in
// bf16 (0x4580); D poisoned with 0xFFFF. On a new stream that holds no workspace.
struct Operands {
  std::uint64_t mn;
  void *a = nullptr, *b = nullptr, *d = nullptr;
  cudaStream_t stream = nullptr;

  explicit Operands(std::uint64_t n) : mn(n) {
    EXPECT_EQ(cudaMalloc(&a, mn * kK), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&b, mn * kK), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&d, mn * mn * 2), cudaSuccess);
    EXPECT_EQ(cudaMemset(a, 0x38, mn * kK), cudaSuccess);
    EXPECT_EQ(cudaMemset(b, 0x38, mn * kK), cudaSuccess);
    EXPECT_EQ(cudaMemset(d, 0xFF, mn * mn * 2), cudaSuccess);
    EXPECT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    // a new stream may be given a destroyed one's handle, and with it that one's workspace
    gemm_fp8_release_workspace(stream);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  ~Operands() {
    gemm_fp8_release_workspace(stream);
    EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
    EXPECT_EQ(cudaFree(a), cudaSuccess);
    EXPECT_EQ(cudaFree(b), cudaSuccess);
    EXPECT_EQ(cudaFree(d), cudaSuccess);
  }
  void call(std::uint64_t n) const {
    gemm_fp8(ConstTensorRef(a, DataType::uint8, n, kK), ConstTensorRef(b, DataType::uint8, n, kK),
             TensorRef(d, DataType::bfloat16, n, n), {}, stream, kSplit);
  }
  // the elements of D's first n x n that are not `expected`
  std::int64_t wrong(std::uint64_t n, std::uint16_t expected) const {
    std::vector<std::uint16_t> got(n * n);
    EXPECT_EQ(cudaMemcpy(got.data(), d, got.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
    return std::count_if(got.begin(), got.end(), [&](std::uint16_t v) { return v != expected; });
  }
};

// The bytes of partials a split-K call of mn x mn x K needs (the plan's split tiles).
std::size_t partial_bytes(std::uint64_t mn) {
  const GemmPlan plan = gemm_fp8_plan(mn, mn, kK, 1, kSplit);
  EXPECT_EQ(plan.config, 1);
  EXPECT_EQ(plan.splits, 32);
  return static_cast<std::size_t>(plan.split_tiles) * plan.splits * 128 * 128 * 4;
}

TEST(GemmWorkspaceOutOfMemory, TypedErrorNoStaleErrorNothingWrittenThenCorrect) {
  TMAKIT_SKIP_WITHOUT_GPU();
  const std::uint64_t mn = 1536;  // 144 tiles x 32 splits: 288 MiB of partials
  const std::size_t needed = partial_bytes(mn);
  ASSERT_EQ(needed, std::size_t{288} * kMiB);
  Operands ops(mn);
  {
    MemoryHog hog(64 * kMiB);
    ASSERT_LT(MemoryHog::free_bytes(), needed) << "the device's memory was not exhausted";
    ASSERT_EQ(cudaGetLastError(), cudaSuccess) << "the hog left an error behind";

    std::string message;
    std::size_t requested = 0;
    int code = 0;
    try {
      ops.call(mn);
    } catch (const OutOfMemory& e) {
      message = e.what();
      requested = e.requested_bytes();
      code = e.code();
    }
    ASSERT_FALSE(message.empty()) << "the call did not throw OutOfMemory";
    EXPECT_EQ(code, static_cast<int>(cudaErrorMemoryAllocation));
    EXPECT_EQ(requested, needed);
    // what needed how many bytes, for what, and what to do
    for (const std::string& part :
         {std::string("gemm_fp8: out of device memory"), std::to_string(needed) + " bytes",
          std::string("split-K workspace"), std::string("nothing was written"),
          std::string("gemm_fp8_release_workspace(stream)"),
          std::string("GemmTuning::splits = 1")}) {
      EXPECT_NE(message.find(part), std::string::npos) << "missing '" << part << "': " << message;
    }
    EXPECT_EQ(message.find(".cpp"), std::string::npos) << "names a source file: " << message;
    // no stale error: the caller's next check does not blame their own code
    EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(ops.stream), cudaSuccess);
    EXPECT_EQ(ops.wrong(mn, 0xFFFF), 0) << "D was written by a call that threw";
  }
  // memory back: the same call on the same stream is correct
  ops.call(mn);
  ASSERT_EQ(cudaStreamSynchronize(ops.stream), cudaSuccess);
  EXPECT_EQ(ops.wrong(mn, 0x4580), 0);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(GemmWorkspaceOutOfMemory, GrowsToWhatTheCallNeedsWhereDoublingDoesNotFit) {
  TMAKIT_SKIP_WITHOUT_GPU();
  const std::uint64_t small = 1024, large = 1280;  // 128 MiB, then 200 MiB of partials
  ASSERT_EQ(partial_bytes(small), std::size_t{128} * kMiB);
  ASSERT_EQ(partial_bytes(large), std::size_t{200} * kMiB);
  Operands ops(large);
  ops.call(small);  // the stream's workspace: 128 MiB
  ASSERT_EQ(cudaStreamSynchronize(ops.stream), cudaSuccess);
  EXPECT_EQ(ops.wrong(small, 0x4580), 0);
  ASSERT_EQ(cudaMemset(ops.d, 0xFF, large * large * 2), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  MemoryHog hog(228 * kMiB);  // room for 200 MiB, not for 256 (twice the workspace)
  const std::size_t room = MemoryHog::free_bytes();
  ASSERT_LT(room, std::size_t{256} * kMiB);
  ASSERT_GE(room, std::size_t{220} * kMiB);
  ops.call(large);
  ASSERT_EQ(cudaStreamSynchronize(ops.stream), cudaSuccess);
  EXPECT_EQ(ops.wrong(large, 0x4580), 0);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
}  // namespace tmakit::test
