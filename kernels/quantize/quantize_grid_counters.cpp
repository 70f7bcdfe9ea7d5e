// Rule Q6's grid counters (quantize_grid_counters.hpp).
#include "quantize/quantize_grid_counters.hpp"

#include <cstddef>
#include <mutex>

#include "gemm/gemm_workspace.hpp"
#include "quantize/quantize_plan.hpp"
#include "tmakit/core/cuda_check.hpp"
#include "tmakit/core/error.hpp"

namespace tmakit::detail::quantize {
namespace {

// Whether the current device holds the CTAs tile_ctas_per_sm counts (rule Q6): the shared
// memory an SM has and keeps per CTA, asked once per device.
bool device_holds_planned_ctas() {
  static PerDevice<int> holds;  // 1 yes, 2 no (0: not asked yet)
  return holds.get([](int device) {
    int per_sm = 0, reserved = 0;
    TMAKIT_CUDA_CHECK(
        cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
    TMAKIT_CUDA_CHECK(
        cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device));
    return per_sm >= static_cast<int>(kSmemPerSmBytes) &&
                   reserved <= static_cast<int>(kSmemReservedPerCtaBytes)
               ? 1
               : 2;
  }) == 1;
}

// Rule Q6's counters for an uncaptured call: in `stream`'s workspace (shared with the GEMM's
// split-K counters, which are zero between calls as these are), so that calls on one stream
// take turns with them as the stream orders the calls, and calls on different streams have
// their own. Null where the stream has none and cannot get them (no device memory): the
// launcher then takes rule Q1, which needs none.
std::uint32_t* stream_counters_or_null(cudaStream_t stream) {
  try {
    return gemm::stream_workspace(0, kGridCounters, stream).counters;
  } catch (const OutOfMemory&) {
    return nullptr;
  }
}

// Rule Q6's counters for calls captured into CUDA graphs: a slot of its own for each captured
// call, never handed out again, so that no graph shares its counters with a stream's calls or
// with another graph (launches of one graph exec are serialised by CUDA). The slots of a
// device are allocated by its first uncaptured Q6 call (nothing may be allocated during a
// capture); a call captured before that, or after the last slot is taken, takes rule Q1.
struct CapturedSlots {
  static constexpr std::size_t kSlots = 4096;
  static constexpr int kDevices = 64;
  std::mutex mutex;
  std::uint32_t* counters = nullptr;  // kSlots x kGridCounters words, zero
  std::size_t taken = 0;
};
CapturedSlots* captured_slots(int device) {
  // NOTE: never destroyed: nothing may call cudaFree once the runtime is shutting down
  static auto* all = new CapturedSlots[CapturedSlots::kDevices];
  return device >= 0 && device < CapturedSlots::kDevices ? &all[device] : nullptr;
}

// Allocates the current device's slots once, zeroed before any graph can use them.
void prepare_captured_slots(cudaStream_t stream) {
  int device = 0;
  TMAKIT_CUDA_CHECK(cudaGetDevice(&device));
  CapturedSlots* c = captured_slots(device);
  if (c == nullptr) return;
  std::lock_guard<std::mutex> lock(c->mutex);
  if (c->counters != nullptr) return;
  const std::size_t bytes = CapturedSlots::kSlots * kGridCounters * sizeof(std::uint32_t);
  void* p = nullptr;
  if (cudaMalloc(&p, bytes) != cudaSuccess) {
    (void)cudaGetLastError();  // NOTE: no slots: captured calls take rule Q1
    return;
  }
  // NOTE: waited for: a graph captured later may be launched on a stream that does not follow
  // this one
  TMAKIT_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, stream));
  TMAKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
  c->counters = static_cast<std::uint32_t*>(p);
}

std::uint32_t* captured_counters_or_null() {
  int device = 0;
  TMAKIT_CUDA_CHECK(cudaGetDevice(&device));
  CapturedSlots* c = captured_slots(device);
  if (c == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(c->mutex);
  if (c->counters == nullptr || c->taken == CapturedSlots::kSlots) return nullptr;
  return c->counters + kGridCounters * c->taken++;
}

}  // namespace

std::uint32_t* grid_counters_or_null(cudaStream_t stream) {
  if (!device_holds_planned_ctas()) return nullptr;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  TMAKIT_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  if (capture != cudaStreamCaptureStatusNone) return captured_counters_or_null();
  prepare_captured_slots(stream);
  return stream_counters_or_null(stream);
}

}  // namespace tmakit::detail::quantize
