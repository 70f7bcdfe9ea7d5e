#include "stall_watch.hpp"

#include <atomic>
#include <utility>

namespace tmakit::bench {

StallWatch::StallWatch(std::chrono::milliseconds limit, OnStall on_stall)
    : limit_(limit), on_stall_(std::move(on_stall)), last_(std::chrono::steady_clock::now()) {
  thread_ = std::thread([this] { watch(); });
}

StallWatch::~StallWatch() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void StallWatch::at(std::string where) {
  const std::lock_guard<std::mutex> lock(mutex_);
  where_ = std::move(where);
  last_ = std::chrono::steady_clock::now();
}

void StallWatch::beat() {
  const std::lock_guard<std::mutex> lock(mutex_);
  last_ = std::chrono::steady_clock::now();
}

void StallWatch::watch() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    // NOTE: wakes at the deadline of the last beat (later beats move it), or to stop
    const auto deadline = last_ + limit_;
    if (wake_.wait_until(lock, deadline, [this] { return stop_; })) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < limit_) continue;
    const std::string where = where_;
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - last_);
    lock.unlock();
    on_stall_(where, waited);
    return;
  }
}

namespace {
std::atomic<StallWatch*> g_watch{nullptr};
}  // namespace

void set_stall_watch(StallWatch* watch) { g_watch.store(watch); }

void stall_watch_at(const std::string& where) {
  if (StallWatch* w = g_watch.load()) w->at(where);
}

void stall_watch_beat() {
  if (StallWatch* w = g_watch.load()) w->beat();
}

}  // namespace tmakit::bench
