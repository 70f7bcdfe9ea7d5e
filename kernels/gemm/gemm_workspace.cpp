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

// `bytes` of device memory for the workspace's `what`: `wanted_bytes` (room to grow) if the
// device has it, else `needed_bytes` (what this call needs). When even that fails for want of
// memory: OutOfMemory saying so and what to do, with the runtime's last error cleared (the
// failed cudaMalloc sets it, and the caller's next cudaGetLastError() would blame their own
// code). Any other failure: CudaError, as from any CUDA call.
struct Allocation {
  void* data = nullptr;
  std::size_t bytes = 0;
};
Allocation allocate(std::size_t wanted_bytes, std::size_t needed_bytes, const char* what) {
  Allocation a{nullptr, wanted_bytes};
  cudaError_t status = cudaMalloc(&a.data, wanted_bytes);
  if (status == cudaErrorMemoryAllocation && needed_bytes < wanted_bytes) {
    (void)cudaGetLastError();
    a.bytes = needed_bytes;
    status = cudaMalloc(&a.data, needed_bytes);
  }
  if (status == cudaSuccess) return a;
  if (status != cudaErrorMemoryAllocation) {
    tmakit::detail::check_runtime(status, "cudaMalloc (split-K workspace)", __FILE__, __LINE__);
  }
  (void)cudaGetLastError();
  int device = 0;
  std::size_t free_bytes = 0, total_bytes = 0;
  std::string room;
  if (cudaGetDevice(&device) == cudaSuccess &&
      cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
    room = " (" + std::to_string(free_bytes) + " of " + std::to_string(total_bytes) +
           " bytes free on device " + std::to_string(device) + ")";
  }
  (void)cudaGetLastError();
  throw OutOfMemory(
      static_cast<int>(cudaErrorMemoryAllocation), needed_bytes,
      "gemm_fp8: out of device memory: this call splits K, and its stream's split-K workspace "
      "needs a buffer of " + std::to_string(needed_bytes) + " bytes for " + what +
      ", which cudaMalloc could not get" + room +
      "; nothing was written. Free device memory, call gemm_fp8_release_workspace(stream) for "
      "streams that no longer make split-K calls, or give a plan without a split of K "
      "(GemmTuning::splits = 1), then call again");
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
  // NOTE: each buffer is installed only once it is allocated (and zeroed), so a failure
  // leaves the workspace as it was, or grown by the partials alone: consistent either way.
  if (w.partial_bytes < partial_bytes) {
    const Allocation grown = allocate(std::max(partial_bytes, 2 * w.partial_bytes),
                                      partial_bytes, "the partial tiles of its split");
    if (w.partials != nullptr) e.retired.push_back(w.partials);
    w.partials = static_cast<float*>(grown.data);
    w.partial_bytes = grown.bytes;
  }
  if (w.counter_count < counters) {
    constexpr std::size_t kCounterBytes = sizeof(std::uint32_t);
    const Allocation grown = allocate(std::max(counters, 2 * w.counter_count) * kCounterBytes,
                                      counters * kCounterBytes, "its tile counters");
    const cudaError_t zeroed = cudaMemsetAsync(grown.data, 0, grown.bytes, stream);
    if (zeroed != cudaSuccess) {
      (void)cudaFree(grown.data);
      TMAKIT_CUDA_CHECK(zeroed);
    }
    if (w.counters != nullptr) e.retired.push_back(w.counters);
    w.counters = static_cast<std::uint32_t*>(grown.data);
    w.counter_count = grown.bytes / kCounterBytes;
  }
  return w;
}

bool capture_outgrows_workspace(std::size_t partial_bytes, std::size_t counters,
                                cudaStream_t stream) {
  const StreamKey key = stream_key(stream);
  StreamWorkspaces& all = stream_workspaces();
  {
    std::lock_guard<std::mutex> lock(all.mutex);
    const auto found = all.entries.find(key);
    if (found != all.entries.end() && found->second.live.partial_bytes >= partial_bytes &&
        found->second.live.counter_count >= counters) {
      return false;
    }
  }
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  TMAKIT_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  return capture != cudaStreamCaptureStatusNone;
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
