// The FP8 GEMM's per-stream split-K workspaces (gemm_workspace.hpp): host code on the CUDA
// runtime.
#include "gemm_workspace.hpp"

#include <algorithm>
#include <compare>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tmakit/core/cuda_check.hpp"
#include "tmakit/kernels/tensor_ref.hpp"

namespace tmakit::detail::gemm {

namespace {

// Which stream a workspace belongs to: the device, the stream's handle, and for the
// per-thread default stream (one handle, one stream per host thread) the calling thread.
// NOTE: not cudaStreamGetId: it is refused while the stream captures a graph, and the refusal
// breaks the capture. A handle names one stream at a time: cudaStreamDestroy releases it
// only once the stream's work is done, so a new stream given an old handle takes over a
// workspace no kernel still uses. The null stream is the legacy default stream here (the
// library is built without per-thread default streams), as is cudaStreamLegacy.
struct StreamKey {
  int device;
  std::uintptr_t handle;
  std::thread::id thread;  // cudaStreamPerThread only
  auto operator<=>(const StreamKey&) const = default;
};
StreamKey stream_key(cudaStream_t stream) {
  StreamKey k{0, reinterpret_cast<std::uintptr_t>(stream), {}};
  TMAKIT_CUDA_CHECK(cudaGetDevice(&k.device));
  if (stream == nullptr) k.handle = reinterpret_cast<std::uintptr_t>(cudaStreamLegacy);
  if (stream == cudaStreamPerThread) k.thread = std::this_thread::get_id();
  return k;
}

// The workspace of each stream that has made a split-K call. A workspace is never shared
// between two streams, so calls on different streams run concurrently without any ordering
// of the caller's; within a stream, calls are ordered on the GPU and take turns with one
// workspace.
struct StreamWorkspaces {
  struct Entry {
    Workspace live;
    // buffers this stream outgrew: a CUDA graph that captured a call may still use them
    std::vector<void*> retired;
  };
  std::mutex mutex;
  std::map<StreamKey, Entry> entries;
};
StreamWorkspaces& stream_workspaces() {
  // NOTE: never destroyed: nothing may call cudaFree once the runtime is shutting down
  static StreamWorkspaces* w = new StreamWorkspaces;
  return *w;
}

}  // namespace

Workspace stream_workspace(std::size_t partial_bytes, std::size_t counters, cudaStream_t stream) {
  const StreamKey key = stream_key(stream);
  StreamWorkspaces& all = stream_workspaces();
  std::lock_guard<std::mutex> lock(all.mutex);
  StreamWorkspaces::Entry& e = all.entries[key];
  Workspace& w = e.live;
  if (w.partial_bytes >= partial_bytes && w.counter_count >= counters) return w;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  TMAKIT_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  if (capture != cudaStreamCaptureStatusNone) {
    throw ArgumentError("stream", "is capturing a CUDA graph, and this split-K call needs " +
                                      std::to_string(partial_bytes) + " bytes of partials and " +
                                      std::to_string(counters) +
                                      " tile counters, more than this stream's workspace "
                                      "holds (" +
                                      std::to_string(w.partial_bytes) + ", " +
                                      std::to_string(w.counter_count) +
                                      "); make the same call on this stream once before "
                                      "capturing");
  }
  if (w.partial_bytes < partial_bytes) {
    const std::size_t bytes = std::max(partial_bytes, 2 * w.partial_bytes);
    float* grown = nullptr;
    TMAKIT_CUDA_CHECK(cudaMalloc(&grown, bytes));
    if (w.partials != nullptr) e.retired.push_back(w.partials);
    w.partials = grown;
    w.partial_bytes = bytes;
  }
  if (w.counter_count < counters) {
    const std::size_t count = std::max(counters, 2 * w.counter_count);
    std::uint32_t* grown = nullptr;
    TMAKIT_CUDA_CHECK(cudaMalloc(&grown, count * sizeof(std::uint32_t)));
    TMAKIT_CUDA_CHECK(cudaMemsetAsync(grown, 0, count * sizeof(std::uint32_t), stream));
    if (w.counters != nullptr) e.retired.push_back(w.counters);
    w.counters = grown;
    w.counter_count = count;
  }
  return w;
}

void release_stream_workspace(cudaStream_t stream) {
  const StreamKey key = stream_key(stream);
  StreamWorkspaces& all = stream_workspaces();
  std::lock_guard<std::mutex> lock(all.mutex);
  const auto it = all.entries.find(key);
  if (it == all.entries.end()) return;
  // the stream's last split-K call may still be running
  TMAKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
  StreamWorkspaces::Entry& e = it->second;
  e.retired.push_back(e.live.partials);
  e.retired.push_back(e.live.counters);
  for (void* p : e.retired) {
    if (p != nullptr) TMAKIT_CUDA_CHECK(cudaFree(p));
  }
  all.entries.erase(it);
}

}  // namespace tmakit::detail::gemm
