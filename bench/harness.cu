#include "harness.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <numeric>
#include <random>
#include <vector>

#include "stall_watch.hpp"
#include "tmakit/core/cuda_check.hpp"

namespace tmakit::bench {

std::optional<std::string> gpu_unavailable_reason() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    return std::string("no usable CUDA driver or GPU (cudaGetDeviceCount: ") +
           cudaGetErrorName(e) + ": " + cudaGetErrorString(e) + ")";
  }
  if (count == 0) return std::string("no CUDA GPU on this machine");
  cudaDeviceProp prop{};
  TMAKIT_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  if (prop.major != 9) {
    return std::string("GPU 0 is ") + prop.name + " (sm_" + std::to_string(prop.major) +
           std::to_string(prop.minor) + "); these kernels are built for Hopper, sm_90a";
  }
  return std::nullopt;
}

DeviceInfo device_info() {
  DeviceInfo d;
  cudaDeviceProp prop{};
  TMAKIT_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  d.name = prop.name;
  d.cc_major = prop.major;
  d.cc_minor = prop.minor;
  d.sm_count = prop.multiProcessorCount;
  d.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
  d.memory_bytes = prop.totalGlobalMem;
  int driver = 0;
  int runtime = 0;
  TMAKIT_CUDA_CHECK(cudaDriverGetVersion(&driver));
  TMAKIT_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  d.driver = "CUDA " + std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10);
  // NOTE: the kernel module's version ("580.159.04") is only in /proc; absent in containers.
  std::ifstream version("/proc/driver/nvidia/version");
  std::string word;
  // the first word shaped like 580.159.04 on the "NVRM version" line
  for (int i = 0; i < 40 && version >> word; ++i) {
    if (word.find('.') != std::string::npos && word.find_first_not_of("0123456789.") ==
                                                    std::string::npos) {
      d.driver += ", driver " + word;
      break;
    }
  }
  d.runtime = std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10);
  const std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  d.date = buf;
  d.clocks = "clocks as found (default application clocks; the harness never changes them)";
  return d;
}

// ---- timing -------------------------------------------------------------------------------

namespace {
// Reads `n` 16-byte words through L2 and keeps nothing: afterwards L2 holds only clean lines
// of the flush buffer. NOTE: a write-based flush (memset) leaves L2 full of dirty lines, and
// the timed kernel then pays for writing them back to DRAM as it evicts them: up to the L2's
// size of extra write traffic, most of a small kernel's time.
__global__ void read_flush_kernel(const uint4* p, std::size_t n, unsigned* sink) {
  unsigned x = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const uint4 v = __ldcg(p + i);
    x ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  // never true for the buffer's contents (all bytes equal: the four words cancel), but the
  // compiler cannot know it, so every load happens
  if (x == 0x9e3779b9u) *sink = x;
}
}  // namespace

Timer::Timer(TimingOptions options, cudaStream_t stream) : options_(options), stream_(stream) {
  TMAKIT_CUDA_CHECK(cudaEventCreate(&start_));
  TMAKIT_CUDA_CHECK(cudaEventCreate(&stop_));
  if (options_.flush_l2) {
    int device = 0;
    int l2 = 0;
    TMAKIT_CUDA_CHECK(cudaGetDevice(&device));
    TMAKIT_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
    flush_bytes_ = 2 * static_cast<std::size_t>(l2);
    // + 16 bytes: the sink word read_flush_kernel never writes in practice
    flush_ = std::make_unique<DeviceBuffer>(flush_bytes_ + 16);
    TMAKIT_CUDA_CHECK(cudaMemset(flush_->get(), 0x5a, flush_bytes_ + 16));
    TMAKIT_CUDA_CHECK(cudaDeviceSynchronize());
  }
}

Timer::~Timer() {
  cudaEventDestroy(start_);
  cudaEventDestroy(stop_);
}

Timing Timer::time(const std::function<void(cudaStream_t)>& fn) {
  return time_interleaved({fn}).front();
}

std::vector<Timing> Timer::time_interleaved(
    const std::vector<std::function<void(cudaStream_t)>>& fns) {
  for (const auto& fn : fns) {
    for (int i = 0; i < options_.warmup; ++i) fn(stream_);
  }
  std::vector<std::vector<double>> ms(fns.size());
  for (auto& v : ms) v.reserve(static_cast<std::size_t>(options_.runs));
  // NOTE: shuffled order: with a fixed one, the first tmakit GEMM (always timed right after
  // cuBLASLt) measured ~0.8 us slower than the same configuration forced and timed later
  // (M = 128-256 on H100, five runs)
  std::mt19937 rng(20261122u);
  std::vector<std::size_t> order(fns.size());
  for (int i = 0; i < options_.runs; ++i) {
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::shuffle(order.begin(), order.end(), rng);
    for (const std::size_t f : order) {
      if (flush_ != nullptr) {
        auto* words = static_cast<const uint4*>(flush_->get());
        read_flush_kernel<<<1024, 256, 0, stream_>>>(
            words, flush_bytes_ / 16,
            reinterpret_cast<unsigned*>(static_cast<char*>(flush_->get()) + flush_bytes_));
        TMAKIT_CUDA_CHECK(cudaGetLastError());
      }
      TMAKIT_CUDA_CHECK(cudaEventRecord(start_, stream_));
      fns[f](stream_);
      TMAKIT_CUDA_CHECK(cudaEventRecord(stop_, stream_));
      TMAKIT_CUDA_CHECK(cudaEventSynchronize(stop_));
      stall_watch_beat();
      float elapsed = 0;
      TMAKIT_CUDA_CHECK(cudaEventElapsedTime(&elapsed, start_, stop_));
      ms[f].push_back(elapsed);
    }
  }
  std::vector<Timing> out;
  for (auto& v : ms) {
    std::sort(v.begin(), v.end());
    Timing t;
    t.runs = options_.runs;
    t.min_ms = v.front();
    t.max_ms = v.back();
    const std::size_t n = v.size();
    t.median_ms = n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    out.push_back(t);
  }
  return out;
}

namespace {
// An instantiated graph, destroyed with its owner.
struct GraphExec {
  cudaGraphExec_t exec = nullptr;
  GraphExec() = default;
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;
  ~GraphExec() {
    if (exec != nullptr) cudaGraphExecDestroy(exec);
  }
};

// Captures `calls` calls of fn on `stream` into `out`; returns why not, or "".
std::string capture_calls(const Timer::SetCall& fn, int sets, int calls, cudaStream_t stream,
                          GraphExec& out) {
  // NOTE: relaxed mode: a library may allocate (its first call on a handle) while another
  // thread's stream is being captured; every call here ran uncaptured before (its check)
  if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed) != cudaSuccess) {
    return "cudaStreamBeginCapture: " + std::string(cudaGetErrorString(cudaGetLastError()));
  }
  std::string why;
  try {
    for (int i = 0; i < calls; ++i) fn(stream, i % sets);
  } catch (const std::exception& e) {
    why = e.what();
  } catch (...) {
    why = "a call threw a non-standard exception";
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t end = cudaStreamEndCapture(stream, &graph);
  if (why.empty() && end != cudaSuccess) why = "capture failed: " + std::string(cudaGetErrorString(end));
  if (why.empty() && cudaGraphInstantiate(&out.exec, graph, 0) != cudaSuccess) {
    why = "cudaGraphInstantiate: " + std::string(cudaGetErrorString(cudaGetLastError()));
    out.exec = nullptr;
  }
  if (graph != nullptr) cudaGraphDestroy(graph);
  (void)cudaGetLastError();  // a failed capture's error is reported through `why`
  return why;
}
}  // namespace

std::vector<Timer::StreamTiming> Timer::time_streams_interleaved(const std::vector<SetCall>& fns,
                                                                 int sets, int calls) {
  if (sets < 1 || calls < sets || calls % sets != 0) {
    throw Error("time_streams_interleaved: calls (" + std::to_string(calls) +
                ") must be a positive multiple of sets (" + std::to_string(sets) + ")");
  }
  std::vector<StreamTiming> out(fns.size());
  std::vector<GraphExec> graphs(fns.size());
  std::vector<std::function<void(cudaStream_t)>> replays;
  std::vector<std::size_t> replayed;  // which fn each replay times
  for (std::size_t f = 0; f < fns.size(); ++f) {
    out[f].error = capture_calls(fns[f], sets, calls, stream_, graphs[f]);
    if (!out[f].error.empty()) continue;
    cudaGraphExec_t exec = graphs[f].exec;
    replays.push_back([exec](cudaStream_t st) { TMAKIT_CUDA_CHECK(cudaGraphLaunch(exec, st)); });
    replayed.push_back(f);
  }
  const std::vector<Timing> t = time_interleaved(replays);
  for (std::size_t i = 0; i < t.size(); ++i) {
    Timing& pc = out[replayed[i]].per_call;
    pc = t[i];
    pc.median_ms /= calls;
    pc.min_ms /= calls;
    pc.max_ms /= calls;
  }
  return out;
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  TMAKIT_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
}
DeviceBuffer::~DeviceBuffer() {
  if (ptr_ != nullptr) cudaFree(ptr_);
}

Stream::Stream(unsigned flags) { TMAKIT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, flags)); }
Stream::~Stream() {
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

// ---- inputs -----------------------------------------------------------------------------

namespace {

__device__ __forceinline__ std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform in [-1, 1) from 24 random bits; never exactly zero.
__device__ __forceinline__ float unit(std::uint64_t r) {
  const float f = static_cast<float>(r >> 40) * (2.0f / 16777216.0f) - 1.0f;
  return f == 0.0f ? 0.5f : f;
}

__global__ void fill_kernel(void* data, std::uint64_t n, int type, std::uint64_t seed) {
  const auto t = static_cast<DataType>(type);
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    const std::uint64_t r = splitmix64(seed ^ (i * 0x2545f4914f6cdd1dull));
    switch (t) {
      case DataType::float32: static_cast<float*>(data)[i] = unit(r); break;
      case DataType::float64:
        static_cast<double*>(data)[i] =
            static_cast<double>(r >> 11) * (2.0 / 9007199254740992.0) - 1.0 + 1e-300;
        break;
      case DataType::bfloat16:
        static_cast<__nv_bfloat16*>(data)[i] = __float2bfloat16_rn(unit(r));
        break;
      case DataType::float16: static_cast<__half*>(data)[i] = __float2half_rn(unit(r)); break;
      case DataType::uint8: static_cast<std::uint8_t*>(data)[i] = static_cast<std::uint8_t>(r); break;
      case DataType::uint16:
        static_cast<std::uint16_t*>(data)[i] = static_cast<std::uint16_t>(r);
        break;
      case DataType::uint64:
      case DataType::int64: static_cast<std::uint64_t*>(data)[i] = r; break;
      default: static_cast<std::uint32_t*>(data)[i] = static_cast<std::uint32_t>(r); break;
    }
  }
}

constexpr unsigned kGrid = 132 * 16;

}  // namespace

void fill_random(void* data, std::uint64_t elements, DataType type, std::uint64_t seed,
                 cudaStream_t stream) {
  fill_kernel<<<kGrid, 256, 0, stream>>>(data, elements, static_cast<int>(type), seed);
  TMAKIT_CUDA_CHECK(cudaGetLastError());
}

void poison(void* data, std::uint64_t bytes, cudaStream_t stream) {
  TMAKIT_CUDA_CHECK(cudaMemsetAsync(data, 0xA5, bytes, stream));
}

// ---- checks -----------------------------------------------------------------------------

namespace {

__global__ void transpose_check_kernel(const std::uint8_t* in, const std::uint8_t* out,
                                       std::uint64_t rows, std::uint64_t cols, int esize,
                                       unsigned long long* errors) {
  unsigned long long local = 0;
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < rows * cols;
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    const std::uint64_t r = i / cols;
    const std::uint64_t c = i % cols;
    const std::uint8_t* a = in + i * esize;
    const std::uint8_t* b = out + (c * rows + r) * esize;
    bool same = true;
    for (int k = 0; k < esize; ++k) same = same && a[k] == b[k];
    local += same ? 0 : 1;
  }
  if (local != 0) atomicAdd(errors, local);
}

__global__ void add_check_kernel(const void* in, const void* out, std::uint64_t n, int type,
                                 std::int32_t ci, float cf, double cd,
                                 unsigned long long* errors) {
  unsigned long long local = 0;
  const auto t = static_cast<DataType>(type);
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    bool ok = true;
    if (t == DataType::int32) {
      ok = static_cast<const std::uint32_t*>(out)[i] ==
           static_cast<const std::uint32_t*>(in)[i] + static_cast<std::uint32_t>(ci);
    } else if (t == DataType::float32) {
      ok = __float_as_uint(static_cast<const float*>(in)[i] + cf) ==
           static_cast<const std::uint32_t*>(out)[i];
    } else if (t == DataType::float64) {
      ok = __double_as_longlong(static_cast<const double*>(in)[i] + cd) ==
           static_cast<const long long*>(out)[i];
    } else if (t == DataType::bfloat16) {
      const __nv_bfloat16 e =
          __float2bfloat16_rn(__bfloat162float(static_cast<const __nv_bfloat16*>(in)[i]) + cf);
      ok = __bfloat16_as_ushort(e) == static_cast<const std::uint16_t*>(out)[i];
    } else {
      const __half e = __float2half_rn(__half2float(static_cast<const __half*>(in)[i]) + cf);
      ok = __half_as_ushort(e) == static_cast<const std::uint16_t*>(out)[i];
    }
    local += ok ? 0 : 1;
  }
  if (local != 0) atomicAdd(errors, local);
}

template <class T>
__global__ void stencil_check_kernel(const T* in, const T* out, std::uint64_t batch,
                                     std::int64_t rows, std::int64_t cols, Filter3x3 filter,
                                     double tolerance, unsigned long long* errors) {
  unsigned long long local = 0;
  const std::uint64_t n = batch * rows * cols;
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    const std::uint64_t b = i / (rows * cols);
    const auto y = static_cast<std::int64_t>(i / cols % rows);
    const auto x = static_cast<std::int64_t>(i % cols);
    const T* image = in + b * rows * cols;
    double acc = 0;
    for (int dy = 0; dy < 3; ++dy) {
      for (int dx = 0; dx < 3; ++dx) {
        const std::int64_t yy = y + dy - 1;
        const std::int64_t xx = x + dx - 1;
        if (yy >= 0 && yy < rows && xx >= 0 && xx < cols) {
          acc += static_cast<double>(static_cast<T>(filter.taps[3 * dy + dx])) *
                 static_cast<double>(image[yy * cols + xx]);
        }
      }
    }
    const double got = static_cast<double>(out[i]);
    local += (fabs(got - acc) <= tolerance) ? 0 : 1;  // NaN fails
  }
  if (local != 0) atomicAdd(errors, local);
}


}  // namespace

unsigned long long* ErrorCounter::reset(cudaStream_t s) {
  TMAKIT_CUDA_CHECK(cudaMemsetAsync(count_.get(), 0, count_.bytes(), s));
  return static_cast<unsigned long long*>(count_.get());
}
std::uint64_t ErrorCounter::read(cudaStream_t s) {
  TMAKIT_CUDA_CHECK(cudaGetLastError());
  unsigned long long h = 0;
  TMAKIT_CUDA_CHECK(cudaMemcpyAsync(&h, count_.get(), sizeof h, cudaMemcpyDeviceToHost, s));
  TMAKIT_CUDA_CHECK(cudaStreamSynchronize(s));
  return h;
}

std::uint64_t count_transpose_errors(const void* in, const void* out, std::uint64_t rows,
                                     std::uint64_t cols, int element_bytes, cudaStream_t stream) {
  ErrorCounter c;
  transpose_check_kernel<<<kGrid, 256, 0, stream>>>(static_cast<const std::uint8_t*>(in),
                                                    static_cast<const std::uint8_t*>(out), rows,
                                                    cols, element_bytes, c.reset(stream));
  return c.read(stream);
}

std::uint64_t count_add_errors(const void* in, const void* out, std::uint64_t elements,
                               DataType type, double value, cudaStream_t stream) {
  ErrorCounter c;
  const float cf = type == DataType::bfloat16  ? __bfloat162float(__double2bfloat16(value))
                   : type == DataType::float16 ? __half2float(__double2half(value))
                                               : static_cast<float>(value);
  add_check_kernel<<<kGrid, 256, 0, stream>>>(in, out, elements, static_cast<int>(type),
                                              static_cast<std::int32_t>(value), cf, value,
                                              c.reset(stream));
  return c.read(stream);
}

std::uint64_t count_stencil_errors(const void* in, const void* out, std::uint64_t batch,
                                   std::uint64_t rows, std::uint64_t cols, DataType type,
                                   const Filter3x3& filter, double tolerance,
                                   cudaStream_t stream) {
  ErrorCounter c;
  const auto r = static_cast<std::int64_t>(rows);
  const auto w = static_cast<std::int64_t>(cols);
  if (type == DataType::float32) {
    stencil_check_kernel<float><<<kGrid, 256, 0, stream>>>(static_cast<const float*>(in),
                                                           static_cast<const float*>(out), batch,
                                                           r, w, filter, tolerance,
                                                           c.reset(stream));
  } else {
    stencil_check_kernel<double><<<kGrid, 256, 0, stream>>>(
        static_cast<const double*>(in), static_cast<const double*>(out), batch, r, w, filter,
        tolerance, c.reset(stream));
  }
  return c.read(stream);
}

}  // namespace tmakit::bench
