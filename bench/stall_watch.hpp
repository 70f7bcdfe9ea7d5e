// A bench run that stops making progress ends with a message naming where it stopped, instead
// of waiting forever. A GPU kernel that never finishes (a barrier that never completes: the
// "silent hang" of a wrong byte count or arrival) leaves the host in a synchronize that does
// not return; the CUDA runtime reports nothing.
//
// The runner names each step (`stall_watch_at`: "checking <case>", "timing <workload>") and
// the timer reports each call it has waited for (`stall_watch_beat`). A background thread of
// the watch calls `on_stall` once no beat has come for `limit`; `tmakit bench` then prints the
// step and ends the process (kStalledExit).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace tmakit::bench {

// The exit status of `tmakit bench` after a stall.
inline constexpr int kStalledExit = 3;

class StallWatch {
 public:
  using OnStall = std::function<void(const std::string& where, std::chrono::milliseconds waited)>;
  // Watches from now on; `on_stall` runs on the watch's thread, at most once.
  StallWatch(std::chrono::milliseconds limit, OnStall on_stall);
  ~StallWatch();
  StallWatch(const StallWatch&) = delete;
  StallWatch& operator=(const StallWatch&) = delete;

  void at(std::string where);  // a new step, and a beat
  void beat();                 // progress within the step

 private:
  void watch();

  std::chrono::milliseconds limit_;
  OnStall on_stall_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::string where_ = "starting";
  std::chrono::steady_clock::time_point last_;
  bool stop_ = false;
  std::thread thread_;
};

// The process's watch, which the bench's runner and timer report to (nothing happens while
// none is set). `tmakit bench` sets one for its run; null clears it.
void set_stall_watch(StallWatch* watch);
void stall_watch_at(const std::string& where);
void stall_watch_beat();

}  // namespace tmakit::bench
