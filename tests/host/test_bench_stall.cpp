// The bench's stall watch (bench/stall_watch.hpp): quiet while beats come, and once they stop,
// one call naming the last step.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>

#include "stall_watch.hpp"

namespace tmakit::bench {
namespace {

using std::chrono::milliseconds;

struct Seen {
  std::mutex mutex;
  std::string where;
  milliseconds waited{0};
  std::atomic<int> calls{0};
};

TEST(StallWatch, QuietWhileBeatingThenNamesTheStep) {
  Seen seen;
  {
    StallWatch watch(milliseconds(400), [&](const std::string& where, milliseconds waited) {
      const std::lock_guard<std::mutex> lock(seen.mutex);
      seen.where = where;
      seen.waited = waited;
      ++seen.calls;
    });
    set_stall_watch(&watch);
    stall_watch_at("checking gemm/fp8/m64n32768k512/tmakit-block");
    // beats 10x faster than the limit, for three limits' time: no stall
    for (int i = 0; i < 30; ++i) {
      std::this_thread::sleep_for(milliseconds(40));
      stall_watch_beat();
    }
    EXPECT_EQ(seen.calls.load(), 0);
    stall_watch_at("timing gemm/fp8/m64n32768k512/stream: 2 cases as CUDA graphs of 24 calls");
    // then nothing: the watch calls once (waits up to 10 s for a busy host)
    for (int i = 0; i < 500 && seen.calls.load() == 0; ++i) {
      std::this_thread::sleep_for(milliseconds(20));
    }
    set_stall_watch(nullptr);
  }
  ASSERT_EQ(seen.calls.load(), 1);
  EXPECT_EQ(seen.where, "timing gemm/fp8/m64n32768k512/stream: 2 cases as CUDA graphs of 24 calls");
  EXPECT_GE(seen.waited.count(), 400);
}

TEST(StallWatch, NothingWithoutAWatchAndNothingAfterItStops) {
  // no watch set: the runner's reports do nothing
  stall_watch_at("checking a case");
  stall_watch_beat();
  std::atomic<int> calls{0};
  {
    StallWatch watch(milliseconds(60000), [&](const std::string&, milliseconds) { ++calls; });
    watch.at("a step");
  }  // stops at once, long before the limit
  EXPECT_EQ(calls.load(), 0);
}

}  // namespace
}  // namespace tmakit::bench
