// The benchmark harness: device facts for every report, CUDA-event timing (warm-up, median
// of many runs, L2 flushed before each), random inputs and on-device result checks.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tmakit/core/dtype.hpp"
#include "tmakit/kernels/stencil3x3.hpp"

namespace tmakit::bench {

// Why no benchmark can run here (no driver, no device, not a Hopper), or nullopt.
std::optional<std::string> gpu_unavailable_reason();

struct DeviceInfo {
  std::string name;
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  std::size_t l2_bytes = 0;
  std::size_t memory_bytes = 0;
  std::string driver;   // "13.0 (580.159.04)" when nvidia-smi's version file is readable
  std::string runtime;  // the CUDA runtime linked in
  std::string date;     // UTC, ISO 8601
  std::string clocks;   // a note: clocks are the card's own, never changed by the harness
};
DeviceInfo device_info();

// Device memory, freed on every way out of its scope (an exception's included): every device
// buffer of the benchmark is one of these.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// A CUDA stream, destroyed with its owner. `flags`: cudaStreamDefault (ordered with the
// legacy default stream) or cudaStreamNonBlocking.
class Stream {
 public:
  explicit Stream(unsigned flags);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

struct TimingOptions {
  int warmup = 3;
  int runs = 20;
  bool flush_l2 = true;
};

struct Timing {
  double median_ms = 0;
  double min_ms = 0;
  double max_ms = 0;
  int runs = 0;
};

// Times `fn` on `stream` with CUDA events: warm-up calls, then `runs` timed calls, each after
// an L2 flush (a read of a buffer twice the L2's size, outside the timed region, leaving
// L2 clean: see read_flush_kernel).
class Timer {
 public:
  Timer(TimingOptions options, cudaStream_t stream);
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;
  Timing time(const std::function<void(cudaStream_t)>& fn);
  // Times several functions in rounds (warm-up calls of each first, then each round times
  // every fn once, each call after its own L2 flush), so that clock and thermal drift over
  // the measurement falls on all of them alike: for ratios between implementations. Each
  // round takes the fns in its own shuffled order (fixed seed), so each fn follows each
  // other one about equally often: what one call leaves behind does not always fall on the
  // same neighbour.
  std::vector<Timing> time_interleaved(const std::vector<std::function<void(cudaStream_t)>>& fns);

  // A stream of calls: fn(stream, set) on operand set `set` (0 .. sets - 1).
  using SetCall = std::function<void(cudaStream_t, int)>;
  struct StreamTiming {
    Timing per_call;    // a replay's times divided by `calls`
    std::string error;  // why this fn could not be captured; empty when timed
  };
  // Times each fn as a stream of `calls` back-to-back calls, call i on set i % sets (`calls`
  // a multiple of `sets`): each fn's calls are captured into one CUDA graph, and the graphs
  // are replayed in interleaved rounds as time_interleaved times fns (L2 flushed before each
  // replay). Graph replays leave out the launch gaps between calls that timing one call
  // includes (METHOD: "for many small launches, capture a graph and time its replays"); the
  // rotation over sets that together exceed the L2 keeps each call's operands out of it.
  std::vector<StreamTiming> time_streams_interleaved(const std::vector<SetCall>& fns, int sets,
                                                     int calls);

 private:
  TimingOptions options_;
  cudaStream_t stream_;
  std::unique_ptr<DeviceBuffer> flush_;  // twice the L2, and a sink word; null: no flush
  std::size_t flush_bytes_ = 0;
  cudaEvent_t start_{};
  cudaEvent_t stop_{};
};

// Random elements (floats uniform in [-1, 1), integers and raw bits uniform), never zeros.
void fill_random(void* data, std::uint64_t elements, DataType type, std::uint64_t seed,
                 cudaStream_t stream);
// Every byte set to 0xA5, so an unwritten output fails its check.
void poison(void* data, std::uint64_t bytes, cudaStream_t stream);

// A device counter for on-device checks: reset() zeroes it on `s` and returns it for a
// kernel's atomicAdds; read() waits for `s` and returns the count (a launch error throws).
class ErrorCounter {
 public:
  unsigned long long* reset(cudaStream_t s);
  std::uint64_t read(cudaStream_t s);

 private:
  DeviceBuffer count_{sizeof(unsigned long long)};
};

// On-device checks of dense outputs; each returns the number of wrong elements.
std::uint64_t count_transpose_errors(const void* in, const void* out, std::uint64_t rows,
                                     std::uint64_t cols, int element_bytes, cudaStream_t stream);
std::uint64_t count_add_errors(const void* in, const void* out, std::uint64_t elements,
                               DataType type, double value, cudaStream_t stream);
// Compares with a direct evaluation; an element is wrong when it differs by more than
// `tolerance` (absolute) or either side is NaN.
std::uint64_t count_stencil_errors(const void* in, const void* out, std::uint64_t batch,
                                   std::uint64_t rows, std::uint64_t cols, DataType type,
                                   const Filter3x3& filter, double tolerance,
                                   cudaStream_t stream);

}  // namespace tmakit::bench
