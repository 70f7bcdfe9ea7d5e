// FP8 GEMM benchmark cases: tmakit, cuBLASLt FP8 and cuBLAS FP16 side by side in one run,
// each checked before it is timed (see gemm_cases.hpp). In order: the shapes; the rows of the
// run as a whole (empty kernel, host overhead, memcpy); the device data, the floors' kernels
// and the checks; the vendor libraries; what a case's calls are given (GemmRun, once per
// run; ShapeRun, a shape's operands); the kinds of case, each a function that declares its
// CaseSpec beside the binder that gives its calls; and gemm_cases(), a shape's cases in the
// order they run.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <tuple>
#include <utility>

#include "gemm_cases.hpp"

#include "baselines.hpp"
#include "cases.hpp"
#include "stall_watch.hpp"
#include "tmakit/core/cluster_launch.hpp"
#include "tmakit/core/cuda_check.hpp"
#include "tmakit/kernels/gemm.hpp"
#include "tmakit/ptx/grid_dependency.hpp"
#include "vendor_library.hpp"

namespace tmakit::bench {
namespace {

struct Shape {
  std::uint64_t m, n, k;
};

// The built-in list (8192^3 is also a Llama projection).
void default_shapes(const std::function<void(std::uint64_t, std::uint64_t, std::uint64_t)>& add) {
  for (std::uint64_t m : {1, 16, 32, 64, 128, 256, 512, 1024, 4096}) add(m, 4096, 4096);
  add(8192, 8192, 8192);
  add(4096, 7168, 2048);
  add(128, 7168, 2048);
  add(128, 2112, 7168);
  // the projections of a Llama-3-70B layer (N x K: QKV, attention output, gate and up, down)
  // at a decode batch, a small prefill and a large one
  for (std::uint64_t m : {16, 128, 8192}) {
    for (const auto& [n, k] : {std::pair<std::uint64_t, std::uint64_t>{10240, 8192},
                               {8192, 8192}, {57344, 8192}, {8192, 28672}}) {
      add(m, n, k);
    }
  }
}

// DeepSeek-V3's projections (N x K) at a decode batch, a small prefill and a large one: the
// shapes of its 128-block FP8 recipe.
void deepseek_shapes(const std::function<void(std::uint64_t, std::uint64_t, std::uint64_t)>& add) {
  for (std::uint64_t m : {64, 128, 4096}) {
    for (const auto& [n, k] : {std::pair<std::uint64_t, std::uint64_t>{2112, 7168},
                               {24576, 1536}, {32768, 512}, {7168, 16384}, {4096, 7168},
                               {7168, 2048}}) {
      add(m, n, k);
    }
  }
}

// Each shape once, in the order first given: the named sets, then --gemm-shape's (a shape
// repeated, or in two sets, runs once).
std::vector<Shape> shapes(const SuiteOptions& o) {
  std::vector<Shape> s;
  const auto add = [&s](std::uint64_t m, std::uint64_t n, std::uint64_t k) {
    for (const Shape& x : s) {
      if (x.m == m && x.n == n && x.k == k) return;
    }
    s.push_back({m, n, k});
  };
  if (o.gemm_shape_sets.empty() && o.gemm_shapes.empty()) {
    if (o.quick) return {{1, 4096, 4096}, {128, 4096, 4096}, {1024, 1024, 1024}};
    default_shapes(add);
    return s;
  }
  for (const std::string& name : o.gemm_shape_sets) {
    if (name == "default") {
      default_shapes(add);
    } else if (name == "deepseek") {
      deepseek_shapes(add);
    } else {
      throw Error("no GEMM shape set is called '" + name + "' (tmakit bench --help lists them)");
    }
  }
  for (const auto& [m, n, k] : o.gemm_shapes) add(m, n, k);
  return s;
}

std::string workload_id(const Shape& s) {
  return "gemm/fp8/m" + std::to_string(s.m) + "n" + std::to_string(s.n) + "k" +
         std::to_string(s.k);
}

// The rows of the run as a whole, measured before any shape's: "gemm/<impl>".
constexpr const char* kRunRows[] = {"empty-kernel", "host-overhead", "memcpy"};
std::string run_row_id(const char* impl) { return std::string("gemm/") + impl; }

// The stream timing (Timer::time_streams_interleaved): at least this many calls per graph (a
// multiple of the sets), over operand sets that together hold at least twice the L2.
constexpr int kStreamCalls = 24;
int stream_sets(std::uint64_t set_bytes, std::size_t l2_bytes) {
  const std::uint64_t want = 2 * static_cast<std::uint64_t>(l2_bytes);
  // NOTE: up to 256 sets: 2 x a 60 MB L2 in sets of 0.5 MB (shapes below that are all
  // launch; --gemm-shape takes any)
  return static_cast<int>(std::clamp<std::uint64_t>((want + set_bytes - 1) / set_bytes, 1, 256));
}

// The tensor floor is declared from this many FLOPs on: timed call by call it carries the
// launch (~3 us, the empty kernel's row) and its own start (each CTA copies in 48 KB), which
// below this are more than a few percent of it (and smaller shapes measured faster than it:
// 1024 x 4096 x 4096 in 29.7 against 30.6 us, H100).
constexpr std::uint64_t kTensorFloorMinFlops = std::uint64_t{1} << 36;

// Shapes whose time is bound by memory (the larger operand streams once, little reuse): their
// rows carry the ratio to the memcpy ceiling (the target for M <= 128, kernels/gemm/README.md).
bool memory_bound(const Shape& s) { return std::min(s.m, s.n) <= 128; }

// One shape's e4m3 operands: `sets` copies of A and B, and of D (bf16). Set 0 is filled;
// copy_set0 copies it to the others.
struct Operands {
  std::vector<std::unique_ptr<DeviceBuffer>> a, b, d;
  Operands(const Shape& s, int sets) {
    for (int i = 0; i < sets; ++i) {
      a.push_back(std::make_unique<DeviceBuffer>(s.m * s.k));
      b.push_back(std::make_unique<DeviceBuffer>(s.n * s.k));
      d.push_back(std::make_unique<DeviceBuffer>(s.m * s.n * 2));
    }
  }
  void copy_set0(cudaStream_t stream) const {
    for (const auto* v : {&a, &b}) {
      for (std::size_t i = 1; i < v->size(); ++i) {
        TMAKIT_CUDA_CHECK(cudaMemcpyAsync((*v)[i]->get(), (*v)[0]->get(), (*v)[0]->bytes(),
                                          cudaMemcpyDeviceToDevice, stream));
      }
    }
  }
  const std::uint8_t* fp8_a(int set) const { return static_cast<const std::uint8_t*>(a[set]->get()); }
  const std::uint8_t* fp8_b(int set) const { return static_cast<const std::uint8_t*>(b[set]->get()); }
  __nv_bfloat16* fp8_d(int set) const { return static_cast<__nv_bfloat16*>(d[set]->get()); }
};

// ---- the e4m3 values on the device ------------------------------------------------------

// The e4m3 value of each of the 256 bytes, from the library's decode
// (reference::e4m3_to_float), on the device for the fill and check kernels, which stage it in
// shared memory (stage_e4m3).
class E4m3Table {
 public:
  E4m3Table() {
    float values[256];
    for (int i = 0; i < 256; ++i) {
      values[i] = reference::e4m3_to_float(static_cast<std::uint8_t>(i));
    }
    TMAKIT_CUDA_CHECK(cudaMemcpy(values_.get(), values, sizeof values, cudaMemcpyHostToDevice));
  }
  const float* get() const { return static_cast<const float*>(values_.get()); }

 private:
  DeviceBuffer values_{256 * sizeof(float)};
};

// Copies the table into `shared` (256 floats); every thread of the block must call it.
__device__ inline void stage_e4m3(const float* table, float* shared) {
  for (unsigned i = threadIdx.x; i < 256; i += blockDim.x) shared[i] = table[i];
  __syncthreads();
}

__device__ inline std::uint32_t hash32(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return static_cast<std::uint32_t>(x);
}

// ---- the rows of the run as a whole ------------------------------------------------------

// A row of the run as a whole ("gemm/<impl>", kRunRows), a ceiling of the table.
Result run_row(const char* impl) {
  Result r;
  r.id = run_row_id(impl);
  r.workload = "gemm";
  r.impl = impl;
  r.kind = "ceiling";
  return r;
}

// Does nothing: timed like the GEMMs, it shows the floor under every time in the table (the
// launch after the L2 flush, the events).
__global__ void empty_kernel() {}

Result empty_kernel_floor(Timer& timer) {
  Result r = run_row("empty-kernel");
  r.timing = timer.time([](cudaStream_t st) {
    empty_kernel<<<1, 32, 0, st>>>();
    TMAKIT_CUDA_CHECK(cudaGetLastError());
  });
  r.note = "an empty kernel timed the same way: the floor under every time below";
  return r;
}

// Host time per call, on the CPU: gemm_fp8 (validation, cached tensor maps, launch) against
// a plain launch of an empty kernel, each enqueued `kCalls` times without waiting (the GPU
// work of both is short enough that the launch queue never fills).
Result host_overhead(cudaStream_t stream) {
  constexpr int kCalls = 200;
  constexpr int kTrials = 20;
  constexpr std::uint64_t m = 64, n = 256, k = 128;  // tiny: the GPU keeps up
  DeviceBuffer a(m * k), b(n * k), d(m * n * 2);
  TMAKIT_CUDA_CHECK(cudaMemsetAsync(a.get(), 0x38, m * k, stream));  // e4m3 1.0
  TMAKIT_CUDA_CHECK(cudaMemsetAsync(b.get(), 0x38, n * k, stream));
  const ConstTensorRef ra(a.get(), DataType::uint8, m, k);
  const ConstTensorRef rb(b.get(), DataType::uint8, n, k);
  const TensorRef rd(d.get(), DataType::bfloat16, m, n);
  auto block_us = [&](const std::function<void()>& call) {
    TMAKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) call();
    const auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::micro>(t1 - t0).count() / kCalls;
  };
  gemm_fp8(ra, rb, rd, {}, stream);  // first call: kernel set-up and tensor maps cached
  // NOTE: blocks of the two alternate (best of kTrials each), so that the host's own clock
  // changes fall on both alike; measured one after the other, the plain launch alone moved
  // between 3.4 and 4.8 us per call across runs of the same day (H100 host)
  double gemm_us = 1e30, launch_us = 1e30;
  for (int trial = 0; trial < kTrials; ++trial) {
    gemm_us = std::min(gemm_us, block_us([&] { gemm_fp8(ra, rb, rd, {}, stream); }));
    launch_us = std::min(launch_us, block_us([&] {
                           empty_kernel<<<1, 32, 0, stream>>>();
                           TMAKIT_CUDA_CHECK(cudaGetLastError());
                         }));
  }
  TMAKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
  Result r = run_row("host-overhead");
  // the table's time columns carry the per-call host times (no GPU time here)
  r.timing.median_ms = r.timing.min_ms = r.timing.max_ms = gemm_us * 1e-3;
  r.timing.runs = kCalls;
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "host time per gemm_fp8 call %.2f us vs %.2f us per plain empty-kernel launch: "
                "%.2f us above (best of %d alternating blocks of %d calls, maps cached)",
                gemm_us, launch_us, gemm_us - launch_us, kTrials, kCalls);
  r.note = buf;
  return r;
}

// The memory ceiling for the memory-bound shapes: a device-to-device copy of 512 MiB (far
// past the L2), bytes read plus bytes written, timed like the GEMMs.
Result memcpy_ceiling(Timer& timer, cudaStream_t stream) {
  constexpr std::size_t kBytes = std::size_t{512} << 20;
  DeviceBuffer src(kBytes), dst(kBytes);
  TMAKIT_CUDA_CHECK(cudaMemsetAsync(src.get(), 0x5a, kBytes, stream));
  Result r = run_row("memcpy");
  r.bytes = 2 * kBytes;
  r.timing = timer.time([&](cudaStream_t st) {
    TMAKIT_CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), kBytes, cudaMemcpyDeviceToDevice, st));
  });
  r.gbps = static_cast<double>(r.bytes) / (r.timing.median_ms * 1e-3) * 1e-9;
  r.note = "cudaMemcpyAsync of 512 MiB device to device: the ceiling of the 'x memcpy' column "
           "for shapes with M or N <= 128";
  return r;
}

// The bytes a GEMM of the shape must move and nothing else: one block per 16 KB chunk of A,
// then of B (read with 16-byte loads, folded so that they stay), then of D (written zero).
// Sizes in bytes; a tail of under 16 bytes of any of them is left out.
constexpr std::uint64_t kChunk = 16384;
__global__ void __launch_bounds__(256) bytes_floor_kernel(const uint4* a, std::uint64_t a16,
                                                          const uint4* b, std::uint64_t b16,
                                                          uint4* d, std::uint64_t d16,
                                                          unsigned* sink) {
  constexpr std::uint64_t kPerBlock = kChunk / 16;
  // launched to overlap the kernel before it, as gemm_fp8 is (GemmTuning::overlap_launch)
  ptx::griddepcontrol_wait();
  ptx::griddepcontrol_launch_dependents();
  const std::uint64_t a_blocks = (a16 + kPerBlock - 1) / kPerBlock;
  const std::uint64_t b_blocks = (b16 + kPerBlock - 1) / kPerBlock;
  std::uint64_t block = blockIdx.x;
  const uint4* src = a;
  std::uint64_t n = a16;
  if (block >= a_blocks) {
    block -= a_blocks;
    src = b;
    n = b16;
    if (block >= b_blocks) {
      block -= b_blocks;
      const std::uint64_t end = min(d16, (block + 1) * kPerBlock);
      for (std::uint64_t i = block * kPerBlock + threadIdx.x; i < end; i += blockDim.x) {
        __stcs(d + i, make_uint4(0, 0, 0, 0));
      }
      return;
    }
  }
  uint4 x = make_uint4(0, 0, 0, 0);
  const std::uint64_t end = min(n, (block + 1) * kPerBlock);
#pragma unroll 4
  for (std::uint64_t i = block * kPerBlock + threadIdx.x; i < end; i += blockDim.x) {
    const uint4 v = __ldcs(src + i);
    x.x ^= v.x;
    x.y ^= v.y;
    x.z ^= v.z;
    x.w ^= v.w;
  }
  if ((x.x ^ x.y ^ x.z ^ x.w) == 0x9E3779B9u) atomicAdd(sink, 1u);  // keeps the loads
}

void bytes_floor(const void* a, std::uint64_t a_bytes, const void* b, std::uint64_t b_bytes,
                 void* d, std::uint64_t d_bytes, unsigned* sink, cudaStream_t stream) {
  const std::uint64_t blocks = (a_bytes + kChunk - 1) / kChunk + (b_bytes + kChunk - 1) / kChunk +
                               (d_bytes + kChunk - 1) / kChunk;
  KernelLaunch l(static_cast<unsigned>(blocks), 256, 0, stream);
  l.overlap_previous_kernel();
  TMAKIT_CUDA_CHECK(cudaLaunchKernelEx(&l.config, bytes_floor_kernel, static_cast<const uint4*>(a),
                                       a_bytes / 16, static_cast<const uint4*>(b), b_bytes / 16,
                                       static_cast<uint4*>(d), d_bytes / 16, sink));
}

__global__ void count_nonzero_kernel(const std::uint8_t* p, std::uint64_t n,
                                     unsigned long long* count) {
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x) {
    if (p[i] != 0) atomicAdd(count, 1ull);
  }
}

// Bytes of `p` that are not zero, past the 16-byte tail bytes_floor leaves out.
std::uint64_t count_nonzero_bytes(const void* p, std::uint64_t bytes) {
  ErrorCounter c;
  count_nonzero_kernel<<<256, 256>>>(static_cast<const std::uint8_t*>(p), bytes / 16 * 16,
                                     c.reset(nullptr));
  return c.read(nullptr);
}

// ---- operands and checks -----------------------------------------------------------------

// Random e4m3 with |v| <= 4 (never NaN, rarely zero).
__global__ void fill_e4m3_kernel(std::uint8_t* out, std::uint64_t n, std::uint64_t seed) {
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x) {
    const std::uint32_t h = hash32(i * 0x9E3779B97F4A7C15ull + seed);
    // exponent 1..8 (|v| in [2^-6, 4)), any mantissa, any sign
    out[i] = static_cast<std::uint8_t>(((h & 1) << 7) | ((1 + (h >> 1) % 8) << 3) |
                                       ((h >> 8) & 7));
  }
}

// Random scales in [0.5, 2), one of its own for each row or block: a scale applied to the wrong
// row or block moves the result far past the check's allowance.
__global__ void fill_scales_kernel(float* out, std::uint64_t n, std::uint64_t seed) {
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x) {
    const std::uint32_t h = hash32(i * 0x9E3779B97F4A7C15ull + seed);
    out[i] = 0.5f + 1.5f * static_cast<float>(h >> 8) * (1.0f / 16777216.0f);
  }
}

// The fp16 twin of e4m3 operands: the same values (every e4m3 value is exact in fp16).
__global__ void widen_e4m3_kernel(const std::uint8_t* in, __half* out, std::uint64_t n,
                                  const float* e4m3_table) {
  __shared__ float e4m3[256];
  stage_e4m3(e4m3_table, e4m3);
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x) {
    out[i] = __float2half(e4m3[in[i]]);
  }
}

// How the check scales the products: one float for the whole product (per-tensor scales, or
// none), or the scale arrays of a row-wise or 128-block recipe (GemmScales; strides in
// elements, as GemmScaleStrides once resolved).
struct CheckScales {
  GemmScaleRecipe recipe = GemmScaleRecipe::tensor;
  const float* a = nullptr;
  const float* b = nullptr;
  long long a_mn = 0, a_k = 0, b_mn = 0, b_k = 0;
};

// Sampled elements of D against a double dot product; counts those off by more than bf16
// rounding plus `slack` x sum |a b| (the accumulation's error, each product weighed by its
// scales), and adds each sample's squared error and squared reference value into sums[0],
// sums[1]. `scale` multiplies every element (per-tensor: alpha x scale_a x scale_b; a
// recipe's: alpha); a row-wise recipe's scales multiply the element's sum, a 128-block
// recipe's each 128-deep part of it (the last part what K leaves).
template <class In, class Out>
__global__ void check_kernel(const In* a, const In* b, const Out* d, std::uint64_t m,
                             std::uint64_t n, std::uint64_t k, float scale, CheckScales recipe,
                             double slack, int samples, const float* e4m3_table,
                             unsigned long long* wrong, double* sums) {
  __shared__ float e4m3[256];
  if (e4m3_table != nullptr) stage_e4m3(e4m3_table, e4m3);  // e4m3 inputs (null for fp16)
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= samples) return;
  const std::uint32_t h = hash32(static_cast<std::uint64_t>(s) * 7919u + 17u);
  // corners first, then random elements
  std::uint64_t i = s == 0 ? 0 : s == 1 ? m - 1 : h % m;
  std::uint64_t j = s == 0 ? 0 : s == 1 ? n - 1 : hash32(h) % n;
  const bool block = recipe.recipe == GemmScaleRecipe::block;
  double sum = 0, abs_sum = 0;
  for (std::uint64_t q = 0; q < k; ++q) {
    double x, y;
    if constexpr (sizeof(In) == 1) {
      x = e4m3[a[i * k + q]];
      y = e4m3[b[j * k + q]];
    } else {
      x = __half2float(a[i * k + q]);
      y = __half2float(b[j * k + q]);
    }
    double p = x * y;
    if (block) {
      const long long kb = static_cast<long long>(q / 128);
      p *= static_cast<double>(recipe.a[static_cast<long long>(i) * recipe.a_mn + kb * recipe.a_k]) *
           recipe.b[static_cast<long long>(j / 128) * recipe.b_mn + kb * recipe.b_k];
    }
    sum += p;
    abs_sum += fabs(p);
  }
  double factor = scale;
  if (recipe.recipe == GemmScaleRecipe::row) {
    factor *= static_cast<double>(recipe.a[static_cast<long long>(i) * recipe.a_mn]) *
              recipe.b[static_cast<long long>(j) * recipe.b_mn];
  }
  const double ref = sum * factor;
  double got;
  if constexpr (sizeof(Out) == 2 && std::is_same_v<Out, __half>) {
    got = __half2float(d[i * n + j]);
  } else {
    got = __bfloat162float(d[i * n + j]);
  }
  // one bf16 ulp plus the tensor cores' fp8 accumulation error (kernels/gemm/README.md)
  const double tol = fabs(ref) / 128.0 + abs_sum * fabs(factor) * slack + 1e-20;
  if (!(fabs(got - ref) <= tol)) atomicAdd(wrong, 1ull);
  atomicAdd(&sums[0], (got - ref) * (got - ref));
  atomicAdd(&sums[1], ref * ref);
}

// The accumulation slack of the check, as include/tmakit/kernels/gemm.hpp documents it: 2^-10
// of sum |a b| with promotion (256-deep partials at most); with fast accumulation 2^-13 per
// 32 of K, at least 2^-11 (tests/gpu/test_gemm.cu holds each configuration to its own).
double accumulation_slack(bool fast, std::uint64_t k) {
  return fast ? std::max(1.0 / 2048, std::ldexp(static_cast<double>((k + 31) / 32), -13))
              : 1.0 / 1024;
}

// The wrong elements of 2048 samples, and their relative Frobenius error (|D - ref| / |ref|
// over the samples) in `rel_error`.
template <class In, class Out>
std::uint64_t count_wrong(const In* a, const In* b, const Out* d, const Shape& s, float scale,
                          bool fast, const E4m3Table& e4m3, double* rel_error,
                          const CheckScales& recipe = {}) {
  ErrorCounter c;
  const int samples = 2048;
  DeviceBuffer sums(2 * sizeof(double));
  TMAKIT_CUDA_CHECK(cudaMemset(sums.get(), 0, sums.bytes()));
  check_kernel<In, Out><<<samples / 128, 128>>>(a, b, d, s.m, s.n, s.k, scale, recipe,
                                                accumulation_slack(fast, s.k), samples,
                                                sizeof(In) == 1 ? e4m3.get() : nullptr,
                                                c.reset(nullptr),
                                                static_cast<double*>(sums.get()));
  const std::uint64_t wrong = c.read(nullptr);
  double h[2] = {0, 0};
  TMAKIT_CUDA_CHECK(cudaMemcpy(h, sums.get(), sizeof h, cudaMemcpyDeviceToHost));
  *rel_error = h[1] > 0 ? std::sqrt(h[0] / h[1]) : std::sqrt(h[0]);
  return wrong;
}

// ---- cuBLASLt and cuBLAS, loaded at run time (vendor_library.hpp) -----------------------

struct Vendor {
  VendorLibrary lt_lib{"libcublasLt", "TMAKIT_CUBLASLT_LIBRARY",
                       {"libcublasLt.so.13", "libcublasLt.so.12"}, "cublas"};
  VendorLibrary blas_lib{"libcublas", "TMAKIT_CUBLAS_LIBRARY",
                         {"libcublas.so.13", "libcublas.so.12"}, "cublas"};
  std::string lt_why, blas_why;  // empty while usable; else why not (Status::unavailable)
  cublasLtHandle_t lt = nullptr;
  cublasHandle_t blas = nullptr;
  decltype(&cublasLtCreate) lt_create = nullptr;
  decltype(&cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) pref_create = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) pref_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) pref_set = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
  decltype(&cublasLtGetVersion) lt_version = nullptr;
  decltype(static_cast<cublasStatus_t (*)(cublasHandle_t*)>(&cublasCreate_v2)) blas_create = nullptr;
  decltype(&cublasSetStream_v2) blas_set_stream = nullptr;
  // cublasGemmEx (cublas_api.h; the header overloads it in C++, so spelled out)
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                            const void*, const void*, cudaDataType, int, const void*,
                            cudaDataType, int, const void*, void*, cudaDataType, int,
                            cublasComputeType_t, cublasGemmAlgo_t) = nullptr;

  Vendor() {
    VendorLibrary& l = lt_lib;
    if (!l.bind("cublasLtCreate", lt_create) || !l.bind("cublasLtMatmulDescCreate", desc_create) ||
        !l.bind("cublasLtMatmulDescDestroy", desc_destroy) ||
        !l.bind("cublasLtMatmulDescSetAttribute", desc_set) ||
        !l.bind("cublasLtMatrixLayoutCreate", layout_create) ||
        !l.bind("cublasLtMatrixLayoutDestroy", layout_destroy) ||
        !l.bind("cublasLtMatmulPreferenceCreate", pref_create) ||
        !l.bind("cublasLtMatmulPreferenceDestroy", pref_destroy) ||
        !l.bind("cublasLtMatmulPreferenceSetAttribute", pref_set) ||
        !l.bind("cublasLtMatmulAlgoGetHeuristic", heuristic) ||
        !l.bind("cublasLtMatmul", matmul) || !l.bind("cublasLtGetVersion", lt_version)) {
      lt_why = l.why();
    } else if (lt_create(&lt) != CUBLAS_STATUS_SUCCESS) {
      lt_why = "cublasLtCreate failed";
    }
    VendorLibrary& b = blas_lib;
    if (!b.bind("cublasCreate_v2", blas_create) || !b.bind("cublasSetStream_v2", blas_set_stream) ||
        !b.bind("cublasGemmEx", gemm_ex)) {
      blas_why = b.why();
    } else if (blas_create(&blas) != CUBLAS_STATUS_SUCCESS) {
      blas_why = "cublasCreate failed";
    }
  }
};

Vendor& vendor() {
  static Vendor v;
  return v;
}

// One cuBLASLt FP8 plan, its descriptors and workspace released with it: row-major D (M x N)
// = A (M x K) * B^T is column-major D^T (N x M) in the TN form FP8 requires: "A" = our B
// transposed (K x N, ld K), "B" = our A (K x M, ld K), D column-major N x M (ld N). So
// cuBLASLt's A scales are our scale_b and its B scales our scale_a, in every recipe.
struct LtPlan {
  explicit LtPlan(const Vendor& vendor) : v(vendor) {}
  ~LtPlan() {
    for (cublasLtMatrixLayout_t layout : {la, lb, ld}) {
      if (layout != nullptr) v.layout_destroy(layout);
    }
    if (desc) v.desc_destroy(desc);
  }
  LtPlan(const LtPlan&) = delete;
  LtPlan& operator=(const LtPlan&) = delete;

  const Vendor& v;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  cublasLtMatmulAlgo_t algo{};
  cublasLtMatmulAlgo_t candidates[8]{};  // the heuristic's answers, best first
  int candidate_count = 0;
  std::unique_ptr<DeviceBuffer> workspace;
  std::size_t workspace_bytes = 32u << 20;
  GemmScaleRecipe recipe = GemmScaleRecipe::tensor;
};

// "cuBLASLt 13.1.0 (<path>)": the library a refusal is stated for.
std::string lt_name(const Vendor& v) {
  const std::size_t version = v.lt_version();
  // NOTE: cublasLtGetVersion() is major * 10000 + minor * 100 + patch (CUBLAS_VERSION's form)
  return "cuBLASLt " + std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) +
         "." + std::to_string(version % 100) + " (" + v.lt_lib.path() + ")";
}

// "15 (CUBLAS_STATUS_NOT_SUPPORTED)": a status as a refusal states it (cublas_api.h's names).
std::string status_text(cublasStatus_t st) {
  const char* name = "";
  switch (st) {
    case CUBLAS_STATUS_SUCCESS: name = "CUBLAS_STATUS_SUCCESS"; break;
    case CUBLAS_STATUS_NOT_INITIALIZED: name = "CUBLAS_STATUS_NOT_INITIALIZED"; break;
    case CUBLAS_STATUS_ALLOC_FAILED: name = "CUBLAS_STATUS_ALLOC_FAILED"; break;
    case CUBLAS_STATUS_INVALID_VALUE: name = "CUBLAS_STATUS_INVALID_VALUE"; break;
    case CUBLAS_STATUS_ARCH_MISMATCH: name = "CUBLAS_STATUS_ARCH_MISMATCH"; break;
    case CUBLAS_STATUS_MAPPING_ERROR: name = "CUBLAS_STATUS_MAPPING_ERROR"; break;
    case CUBLAS_STATUS_EXECUTION_FAILED: name = "CUBLAS_STATUS_EXECUTION_FAILED"; break;
    case CUBLAS_STATUS_INTERNAL_ERROR: name = "CUBLAS_STATUS_INTERNAL_ERROR"; break;
    case CUBLAS_STATUS_NOT_SUPPORTED: name = "CUBLAS_STATUS_NOT_SUPPORTED"; break;
    case CUBLAS_STATUS_LICENSE_ERROR: name = "CUBLAS_STATUS_LICENSE_ERROR"; break;
  }
  const std::string number = std::to_string(static_cast<int>(st));
  return *name != '\0' ? number + " (" + name + ")" : number;
}

// cuBLASLt's scale modes for a recipe, its A (our B) and its B (our A), as cublasLt.h names
// them (cublasLtMatmulMatrixScale_t), and the names the rows print.
struct LtScaleModes {
  std::int32_t a = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
  std::int32_t b = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
  const char* a_name = "CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F";
  const char* b_name = "CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F";
};
LtScaleModes lt_scale_modes(GemmScaleRecipe recipe) {
  switch (recipe) {
    case GemmScaleRecipe::tensor: return {};
    case GemmScaleRecipe::row:
      // one float per row of its A (our N rows of B) and per column of its B (our M rows of A)
      return {CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F, CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F,
              "CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F",
              "CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F"};
    case GemmScaleRecipe::block:
      // 128 x 128 blocks on its A (our B, the weights), 1 x 128 on its B (our A)
      return {CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F, CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F,
              "CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F",
              "CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F"};
  }
  return {};
}

// Sets `p` up for the shape and recipe, its scale pointers those of operand set 0; returns ""
// or why cuBLASLt cannot (Status::unavailable): for a recipe's scale modes, that this
// cuBLASLt refuses them, saying which and how.
std::string make_lt_plan(LtPlan& p, const Shape& s, const float* d_scale_a,
                         const float* d_scale_b, bool fast,
                         GemmScaleRecipe recipe = GemmScaleRecipe::tensor) {
  const Vendor& v = p.v;
  p.recipe = recipe;
  if (v.desc_create(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS) {
    return "cublasLtMatmulDescCreate failed";
  }
  const cublasOperation_t t = CUBLAS_OP_T, nop = CUBLAS_OP_N;
  int bad = 0;
  bad |= v.desc_set(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t) != 0 ? 1 : 0;
  bad |= v.desc_set(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &nop, sizeof nop) != 0 ? 2 : 0;
  // cuBLASLt's A is our B: its scale is scale_b; its B is our A
  bad |= v.desc_set(p.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &d_scale_b,
                    sizeof d_scale_b) != 0 ? 4 : 0;
  bad |= v.desc_set(p.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &d_scale_a,
                    sizeof d_scale_a) != 0 ? 8 : 0;
  const std::int8_t fast_accum = fast ? 1 : 0;
  bad |= v.desc_set(p.desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast_accum,
                    sizeof fast_accum) != 0 ? 128 : 0;
  bad |= v.layout_create(&p.la, CUDA_R_8F_E4M3, s.k, s.n, static_cast<std::int64_t>(s.k)) != 0 ? 16 : 0;
  bad |= v.layout_create(&p.lb, CUDA_R_8F_E4M3, s.k, s.m, static_cast<std::int64_t>(s.k)) != 0 ? 32 : 0;
  bad |= v.layout_create(&p.ld, CUDA_R_16BF, s.n, s.m, static_cast<std::int64_t>(s.n)) != 0 ? 64 : 0;
  if (bad != 0) return "cuBLASLt descriptor setup failed (mask " + std::to_string(bad) + ")";
  // NOTE: the per-tensor plan leaves the scale modes unset (their default, SCALAR_32F), as
  // it did before the recipes: its rows time the very call they always timed
  const LtScaleModes modes = lt_scale_modes(recipe);
  if (recipe != GemmScaleRecipe::tensor) {
    for (const auto& [attribute, mode, name, which] :
         {std::tuple{CUBLASLT_MATMUL_DESC_A_SCALE_MODE, modes.a, modes.a_name, "A"},
          std::tuple{CUBLASLT_MATMUL_DESC_B_SCALE_MODE, modes.b, modes.b_name, "B"}}) {
      const cublasStatus_t st = v.desc_set(p.desc, attribute, &mode, sizeof mode);
      if (st != CUBLAS_STATUS_SUCCESS) {
        return lt_name(v) + " refuses CUBLASLT_MATMUL_DESC_" + which + "_SCALE_MODE = " + name +
               " (cublasLtMatmulDescSetAttribute status " + status_text(st) + ")";
      }
    }
  }
  cublasLtMatmulPreference_t pref = nullptr;
  v.pref_create(&pref);
  v.pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &p.workspace_bytes,
             sizeof p.workspace_bytes);
  cublasLtMatmulHeuristicResult_t results[8]{};
  int found = 0;
  const cublasStatus_t st =
      v.heuristic(v.lt, p.desc, p.la, p.lb, p.ld, p.ld, pref, 8, results, &found);
  v.pref_destroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS || found == 0) {
    if (recipe != GemmScaleRecipe::tensor) {
      return lt_name(v) + " has no algorithm for scale modes A = " + modes.a_name + ", B = " +
             modes.b_name + (fast ? " with CUBLASLT_MATMUL_DESC_FAST_ACCUM" : "") +
             " on this GPU at this shape (cublasLtMatmulAlgoGetHeuristic status " +
             status_text(st) + ", " + std::to_string(found) + " algorithms)";
    }
    return "cuBLASLt has no FP8 algorithm for this shape (status " +
           std::to_string(static_cast<int>(st)) + ")";
  }
  for (int i = 0; i < found; ++i) p.candidates[i] = results[i].algo;
  p.candidate_count = found;
  p.algo = results[0].algo;
  p.workspace = std::make_unique<DeviceBuffer>(p.workspace_bytes);
  return "";
}

// ---- what the cases' calls are given ------------------------------------------------------

// What every shape's cases share, made once per run: the device's facts, the vendor libraries,
// the e4m3 table, the scales (on the device too, where cuBLASLt reads them) and the floors'
// buffers.
struct GemmRun {
  explicit GemmRun(cudaStream_t s);
  GemmRun(const GemmRun&) = delete;
  GemmRun& operator=(const GemmRun&) = delete;

  static int device_attribute(cudaDeviceAttr attribute);
  const float* scale_a_device() const { return static_cast<const float*>(scale_buffer.get()); }
  const float* scale_b_device() const { return scale_a_device() + 4; }
  unsigned* floor_sink() const { return static_cast<unsigned*>(floor_sink_buffer.get()); }
  float* tensor_floor_sums() const { return static_cast<float*>(tensor_floor_buffer.get()); }

  cudaStream_t stream;
  const int sms = device_attribute(cudaDevAttrMultiProcessorCount);
  const std::size_t l2_bytes = static_cast<std::size_t>(device_attribute(cudaDevAttrL2CacheSize));
  Vendor& libraries = vendor();
  E4m3Table e4m3;
  const GemmScales sc{0.75f, 1.5f, 0.5f};
  // the product the checks and cuBLAS FP16 scale by
  const float scale = sc.alpha * sc.scale_a * sc.scale_b;
  static constexpr float kBeta = 0.0f;
  // NOTE: each scale on its own 16 bytes, in case cuBLASLt wants aligned scale pointers
  DeviceBuffer scale_buffer{8 * sizeof(float)};
  DeviceBuffer floor_sink_buffer{sizeof(unsigned)};  // bytes_floor's never-taken branch writes here
  DeviceBuffer tensor_floor_buffer{3 * sizeof(float) * static_cast<unsigned>(sms)};
  DeviceBuffer tensor_floor_operands{kTensorFloorImageBytes};
};

int GemmRun::device_attribute(cudaDeviceAttr attribute) {
  int device = 0;
  int value = 0;
  TMAKIT_CUDA_CHECK(cudaGetDevice(&device));
  TMAKIT_CUDA_CHECK(cudaDeviceGetAttribute(&value, attribute, device));
  return value;
}

GemmRun::GemmRun(cudaStream_t s) : stream(s) {
  const std::vector<std::uint8_t> image = tensor_floor_image();
  TMAKIT_CUDA_CHECK(cudaMemcpy(tensor_floor_operands.get(), image.data(), image.size(),
                               cudaMemcpyHostToDevice));
  TMAKIT_CUDA_CHECK(cudaMemcpy(scale_buffer.get(), &sc.scale_a, sizeof(float),
                               cudaMemcpyHostToDevice));
  TMAKIT_CUDA_CHECK(cudaMemcpy(static_cast<float*>(scale_buffer.get()) + 4, &sc.scale_b,
                               sizeof(float), cudaMemcpyHostToDevice));
}

// The scale arrays of the row-wise and 128-block recipes for one operand set, in the layouts
// cuBLASLt reads (cuBLAS documentation, "cublasLtMatmulMatrixScale_t" and the scaling
// factors' layouts), which tmakit reads too through GemmScaleStrides:
//   row:   scale_a M floats, scale_b N floats, contiguous (OUTER_VEC_32F; torch's (M, 1) and
//          (1, N));
//   block: scale_a[m][kb] at kb * a_k + m, a_k = M rounded up to 4 (VEC128_32F: M-major, each
//          k-block's column 16-byte aligned; torch's (M, ceil(K/128)) with strides (1, M) where
//          M is a multiple of 4), scale_b[nb][kb] at nb * b_mn + kb, b_mn = ceil(K/128)
//          rounded up to 4 (BLK128x128_32F: K-blocks consecutive; torch's (ceil(N/128),
//          ceil(K/128)) row-major where ceil(K/128) is a multiple of 4).
struct RecipeScales {
  explicit RecipeScales(const Shape& s)
      : k_blocks((s.k + 127) / 128),
        n_blocks((s.n + 127) / 128),
        block_a_k(static_cast<long long>((s.m + 3) / 4 * 4)),
        block_b_mn(static_cast<long long>((k_blocks + 3) / 4 * 4)),
        row_a(s.m * sizeof(float)),
        row_b(s.n * sizeof(float)),
        block_a(k_blocks * static_cast<std::uint64_t>(block_a_k) * sizeof(float)),
        block_b(n_blocks * static_cast<std::uint64_t>(block_b_mn) * sizeof(float)) {}

  std::uint64_t k_blocks, n_blocks;
  long long block_a_k, block_b_mn;
  DeviceBuffer row_a, row_b, block_a, block_b;

  const float* a(GemmScaleRecipe r) const {
    return static_cast<const float*>(r == GemmScaleRecipe::row ? row_a.get() : block_a.get());
  }
  const float* b(GemmScaleRecipe r) const {
    return static_cast<const float*>(r == GemmScaleRecipe::row ? row_b.get() : block_b.get());
  }
  // The strides gemm_fp8 is given: the row-wise recipe's are torch's (the default); the block
  // recipe's as laid out above, whatever M and K.
  GemmScaleStrides a_strides(GemmScaleRecipe r) const {
    return r == GemmScaleRecipe::row ? GemmScaleStrides{} : GemmScaleStrides{1, block_a_k};
  }
  GemmScaleStrides b_strides(GemmScaleRecipe r) const {
    return r == GemmScaleRecipe::row ? GemmScaleStrides{} : GemmScaleStrides{block_b_mn, 1};
  }
};

// One shape's operands, filled (set 0 random, the others copies of it), and the checks of
// its cases; what each case's binder is given.
struct ShapeRun {
  ShapeRun(const GemmRun& r, const Shape& shape, int operand_sets);

  const GemmRun& run;
  Shape s;
  int sets;
  Operands ops;
  std::uint64_t d_bytes = s.m * s.n * 2;
  // the recipes' scale arrays of each operand set (set 0 random, the others copies of it)
  std::vector<std::unique_ptr<RecipeScales>> scales;

  // A binding that writes D of set 0 (poisoned before its checked call).
  Binding writes_d() const;
  // 2048 sampled elements of D against a double-precision dot product, held to the
  // accumulation mode's error bound; with the recipe's scales of set 0 (tensor: the run's
  // per-tensor scales)
  Verdict check_fp8(bool fast, GemmScaleRecipe recipe = GemmScaleRecipe::tensor) const;
  // The GemmScales of a recipe's call on operand set `set` (tensor: the run's).
  GemmScales gemm_scales(GemmScaleRecipe recipe, int set) const;
};

ShapeRun::ShapeRun(const GemmRun& r, const Shape& shape, int operand_sets)
    : run(r), s(shape), sets(operand_sets), ops(shape, operand_sets) {
  fill_e4m3_kernel<<<1024, 256, 0, run.stream>>>(static_cast<std::uint8_t*>(ops.a[0]->get()),
                                                 s.m * s.k, 1);
  fill_e4m3_kernel<<<1024, 256, 0, run.stream>>>(static_cast<std::uint8_t*>(ops.b[0]->get()),
                                                 s.n * s.k, 2);
  for (int i = 0; i < sets; ++i) scales.push_back(std::make_unique<RecipeScales>(s));
  const RecipeScales& first = *scales[0];
  std::uint64_t seed = 3;
  for (const DeviceBuffer* buffer : {&first.row_a, &first.row_b, &first.block_a, &first.block_b}) {
    fill_scales_kernel<<<256, 256, 0, run.stream>>>(static_cast<float*>(buffer->get()),
                                                    buffer->bytes() / sizeof(float), seed++);
  }
  TMAKIT_CUDA_CHECK(cudaGetLastError());
  ops.copy_set0(run.stream);
  for (int i = 1; i < sets; ++i) {
    const RecipeScales& to = *scales[static_cast<std::size_t>(i)];
    const DeviceBuffer* from_buffers[] = {&first.row_a, &first.row_b, &first.block_a,
                                          &first.block_b};
    const DeviceBuffer* to_buffers[] = {&to.row_a, &to.row_b, &to.block_a, &to.block_b};
    for (int j = 0; j < 4; ++j) {
      TMAKIT_CUDA_CHECK(cudaMemcpyAsync(to_buffers[j]->get(), from_buffers[j]->get(),
                                        from_buffers[j]->bytes(), cudaMemcpyDeviceToDevice,
                                        run.stream));
    }
  }
  TMAKIT_CUDA_CHECK(cudaStreamSynchronize(run.stream));
}

GemmScales ShapeRun::gemm_scales(GemmScaleRecipe recipe, int set) const {
  if (recipe == GemmScaleRecipe::tensor) return run.sc;
  const RecipeScales& sc = *scales[static_cast<std::size_t>(set)];
  GemmScales g;
  g.alpha = run.sc.alpha;
  g.recipe = recipe;
  g.scale_a_device = sc.a(recipe);
  g.scale_b_device = sc.b(recipe);
  g.scale_a_strides = sc.a_strides(recipe);
  g.scale_b_strides = sc.b_strides(recipe);
  return g;
}

Binding ShapeRun::writes_d() const {
  Binding b;
  b.out = ops.fp8_d(0);
  b.out_bytes = d_bytes;
  return b;
}

Verdict sampled_verdict(std::uint64_t wrong, double rel) {
  char note[80];
  std::snprintf(note, sizeof note, "rel. error %.2e (2048 sampled elements)", rel);
  return Verdict{wrong == 0 ? "" : std::to_string(wrong) + " of 2048 sampled elements wrong", note};
}

Verdict ShapeRun::check_fp8(bool fast, GemmScaleRecipe recipe) const {
  double rel = 0;
  CheckScales check;
  float scale = run.scale;
  if (recipe != GemmScaleRecipe::tensor) {
    const GemmScales g = gemm_scales(recipe, 0);
    const RecipeScales& sc = *scales[0];
    check.recipe = recipe;
    check.a = g.scale_a_device;
    check.b = g.scale_b_device;
    // the strides as laid out (RecipeScales), the row-wise recipe's contiguous
    check.a_mn = 1;
    check.b_mn = recipe == GemmScaleRecipe::row ? 1 : sc.block_b_mn;
    check.a_k = recipe == GemmScaleRecipe::row ? 0 : sc.block_a_k;
    check.b_k = recipe == GemmScaleRecipe::row ? 0 : 1;
    scale = run.sc.alpha;
  }
  const std::uint64_t wrong = count_wrong(ops.fp8_a(0), ops.fp8_b(0), ops.fp8_d(0), s, scale,
                                          fast, run.e4m3, &rel, check);
  return sampled_verdict(wrong, rel);
}

// ---- the kinds of case, each declared with its binder ------------------------------------

// The implementations' names (the last part of their ids). "-fast": fast accumulation
// (GemmAccumulation::fast; cuBLASLt's CUBLASLT_MATMUL_DESC_FAST_ACCUM), each mode compared
// with the other library's row of the same mode.
constexpr const char* kLt = "cublaslt-fp8";
constexpr const char* kLtFast = "cublaslt-fp8-fast";
constexpr const char* kFp16 = "cublas-fp16";
constexpr const char* kSeed = "seed-tma";

// A case as declared, and its binder: the calls that run it on a shape's operands.
struct GemmCase {
  CaseSpec spec;
  std::function<Binding(const ShapeRun&)> bind;
};

// Every GEMM case moves A, B and D once in its own types, declares 2 M N K FLOPs, and is
// timed together with the others of its shape, call by call and as a stream of calls.
CaseSpec gemm_spec(const Shape& s, std::string impl, std::string kind, std::uint64_t bytes) {
  CaseSpec c;
  c.impl = std::move(impl);
  c.kind = std::move(kind);
  c.bytes = bytes;
  c.flops = 2 * s.m * s.n * s.k;
  c.timed_by = TimedBy::together;
  c.streamed = true;
  return c;
}
std::uint64_t fp8_bytes(const Shape& s) { return s.m * s.k + s.n * s.k + s.m * s.n * 2; }
std::uint64_t fp16_bytes(const Shape& s) { return 2 * (s.m * s.k + s.n * s.k + s.m * s.n); }

// -- cuBLASLt FP8, in either accumulation mode, per-tensor or in a scale recipe of its own

// One call of the plan on operand set `set` (a recipe's plan pointed at that set's scales).
cublasStatus_t lt_matmul(const ShapeRun& r, const LtPlan& p, int set, cudaStream_t st) {
  const Vendor& v = r.run.libraries;
  const Operands& o = r.ops;
  if (p.recipe != GemmScaleRecipe::tensor) {
    const GemmScales g = r.gemm_scales(p.recipe, set);
    // cuBLASLt's A is our B (see LtPlan)
    if (const cublasStatus_t e = v.desc_set(p.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                                            &g.scale_b_device, sizeof g.scale_b_device);
        e != CUBLAS_STATUS_SUCCESS) {
      return e;
    }
    if (const cublasStatus_t e = v.desc_set(p.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                                            &g.scale_a_device, sizeof g.scale_a_device);
        e != CUBLAS_STATUS_SUCCESS) {
      return e;
    }
  }
  return v.matmul(v.lt, p.desc, &r.run.sc.alpha, o.fp8_b(set), p.la, o.fp8_a(set), p.lb,
                  &GemmRun::kBeta, o.fp8_d(set), p.ld, o.fp8_d(set), p.ld, &p.algo,
                  p.workspace->get(), p.workspace_bytes, st);
}

// NOTE: the first algorithm the heuristic offers is not always accepted by cublasLtMatmul;
// the checked call takes the first that runs (kept for the timed calls), and says which failed.
// For a recipe's scale modes a refusal of all is this cuBLASLt refusing the mode
// (BaselineRefused: the row says so, as a baseline unavailable); per-tensor it is an error.
void lt_first_accepted(const ShapeRun& r, LtPlan& p, cudaStream_t st) {
  std::string refused;
  for (int i = 0; i < p.candidate_count; ++i) {
    p.algo = p.candidates[i];
    const cublasStatus_t e = lt_matmul(r, p, 0, st);
    if (e == CUBLAS_STATUS_SUCCESS) return;
    if (!refused.empty()) refused += ',';
    refused += p.recipe != GemmScaleRecipe::tensor ? status_text(e)
                                                   : std::to_string(static_cast<int>(e));
  }
  const std::string what = "cublasLtMatmul refused all " + std::to_string(p.candidate_count) +
                           " heuristic algorithms (statuses " + refused + ")";
  if (p.recipe != GemmScaleRecipe::tensor) {
    const LtScaleModes modes = lt_scale_modes(p.recipe);
    throw BaselineRefused(lt_name(r.run.libraries) + " refuses scale modes A = " + modes.a_name +
                          ", B = " + modes.b_name + ": " + what);
  }
  throw Error(what);
}

Binding bind_cublaslt(const ShapeRun& r, bool fast,
                      GemmScaleRecipe recipe = GemmScaleRecipe::tensor) {
  const Vendor& v = r.run.libraries;
  Binding b = r.writes_d();
  if (!v.lt_why.empty()) {
    b.status = Status::unavailable(v.lt_why);
    return b;
  }
  auto plan = std::make_shared<LtPlan>(v);
  const GemmScales first = r.gemm_scales(recipe, 0);
  const float* scale_a = recipe == GemmScaleRecipe::tensor ? r.run.scale_a_device()
                                                           : first.scale_a_device;
  const float* scale_b = recipe == GemmScaleRecipe::tensor ? r.run.scale_b_device()
                                                           : first.scale_b_device;
  if (std::string why = make_lt_plan(*plan, r.s, scale_a, scale_b, fast, recipe); !why.empty()) {
    b.status = Status::unavailable(std::move(why));
    return b;
  }
  b.note = v.lt_lib.path();
  if (recipe != GemmScaleRecipe::tensor) {
    const LtScaleModes modes = lt_scale_modes(recipe);
    b.note.insert(0, std::string("A_SCALE_MODE ") + modes.a_name + " (its A is our B), " +
                         "B_SCALE_MODE " + modes.b_name + "; ");
  }
  if (fast) b.note.insert(0, "CUBLASLT_MATMUL_DESC_FAST_ACCUM; ");
  b.run = [&r, plan](cudaStream_t st, int set) {
    const cublasStatus_t e = lt_matmul(r, *plan, set, st);
    if (e != CUBLAS_STATUS_SUCCESS) {
      throw Error("cublasLtMatmul returned " + std::to_string(static_cast<int>(e)));
    }
  };
  b.first = [&r, plan](cudaStream_t st) { lt_first_accepted(r, *plan, st); };
  b.check = [&r, fast, recipe] { return r.check_fp8(fast, recipe); };
  return b;
}

GemmCase cublaslt_case(const Shape& s, bool fast) {
  return {gemm_spec(s, fast ? kLtFast : kLt, "vendor", fp8_bytes(s)),
          [fast](const ShapeRun& r) { return bind_cublaslt(r, fast); }};
}

// The recipes' rows: "<library>-row" and "-row-fast" (row-wise scales, each accumulation
// mode), "<library>-block" (128-block scales, promoted only: cuBLASLt's block modes and
// tmakit's apply the scales at each promotion, and torch refuses fast accumulation with them).
struct RecipeRow {
  GemmScaleRecipe recipe;
  bool fast;
  const char* lt;      // cuBLASLt's row
  const char* tmakit;  // tmakit's row
  const char* tensor;  // tmakit's per-tensor row in the same mode
};
constexpr RecipeRow kRecipeRows[] = {
    {GemmScaleRecipe::row, false, "cublaslt-fp8-row", "tmakit-row", "tmakit"},
    {GemmScaleRecipe::row, true, "cublaslt-fp8-row-fast", "tmakit-row-fast", "tmakit-fast"},
    {GemmScaleRecipe::block, false, "cublaslt-fp8-block", "tmakit-block", "tmakit"},
};

// A recipe's operands: A, B and D, and each scale read once.
std::uint64_t recipe_bytes(const Shape& s, GemmScaleRecipe recipe) {
  const std::uint64_t k_blocks = (s.k + 127) / 128;
  return fp8_bytes(s) + (recipe == GemmScaleRecipe::row
                             ? (s.m + s.n) * sizeof(float)
                             : (s.m + (s.n + 127) / 128) * k_blocks * sizeof(float));
}

GemmCase cublaslt_recipe_case(const Shape& s, const RecipeRow& row) {
  return {gemm_spec(s, row.lt, "vendor", recipe_bytes(s, row.recipe)),
          [row](const ShapeRun& r) { return bind_cublaslt(r, row.fast, row.recipe); }};
}

// -- tmakit: the public entry gemm_fp8, with the plan's choice or a forced tuning

// The configuration the plan runs, its splits and CTAs.
std::string plan_note(const GemmPlan& p) {
  char note[160];
  if (p.splits > 1 && p.split_tiles < p.tiles) {  // a split tail
    std::snprintf(note, sizeof note, "%s, %d split(s) of the last %lld tiles, %u CTAs",
                  gemm_config_name(p.config), p.splits, static_cast<long long>(p.split_tiles),
                  p.grid);
  } else {
    std::snprintf(note, sizeof note, "%s, %d split(s), %u CTAs%s", gemm_config_name(p.config),
                  p.splits, p.grid,
                  std::strcmp(p.cluster_rule, "G1") == 0 ? " in clusters of 2" : "");
  }
  return note;
}

Binding bind_tmakit(const ShapeRun& r, const GemmTuning& tuning,
                    GemmScaleRecipe recipe = GemmScaleRecipe::tensor) {
  const Shape& s = r.s;
  Binding b = r.writes_d();
  GemmProblem problem;
  problem.m = s.m;
  problem.n = s.n;
  problem.k = s.k;
  problem.sm_count = r.run.sms;
  problem.tuning = tuning;
  problem.recipe = recipe;
  // (this bench's 128-block scale_a: M-major columns M rounded up to 4 floats apart, each
  // array 16-byte aligned, which TMA loads)
  problem.block_scale_a_tma = recipe == GemmScaleRecipe::block;
  b.note = plan_note(gemm_fp8_plan(problem));
  b.run = [&r, tuning, recipe](cudaStream_t st, int set) {
    const Shape& sh = r.s;
    gemm_fp8(ConstTensorRef(r.ops.fp8_a(set), DataType::uint8, sh.m, sh.k),
             ConstTensorRef(r.ops.fp8_b(set), DataType::uint8, sh.n, sh.k),
             TensorRef(r.ops.fp8_d(set), DataType::bfloat16, sh.m, sh.n),
             r.gemm_scales(recipe, set), st, tuning);
  };
  const bool fast = tuning.accumulation == GemmAccumulation::fast;
  b.check = [&r, fast, recipe] { return r.check_fp8(fast, recipe); };
  return b;
}

// tmakit's rows are compared with the vendors' and the write-up's GEMM, their speed-up stated
// over cuBLASLt FP8 in the same accumulation mode.
GemmCase tmakit_case(const Shape& s, std::string impl, const GemmTuning& tuning) {
  CaseSpec c = gemm_spec(s, std::move(impl), "tmakit", fp8_bytes(s));
  c.baselines = {kLt, kLtFast, kFp16, kSeed};
  c.speedup_over = tuning.accumulation == GemmAccumulation::fast ? kLtFast : kLt;
  return {c, [tuning](const ShapeRun& r) { return bind_tmakit(r, tuning); }};
}

GemmTuning fast_accumulation(int config = -1, int splits = 0) {
  GemmTuning t{config, splits};
  t.accumulation = GemmAccumulation::fast;
  return t;
}

// tmakit's rows in a recipe: its speed-up stated over cuBLASLt's row in the same recipe and
// mode, compared also with tmakit's per-tensor row in the same mode (what the recipe costs).
// `impl` names the row (the recipe's own, or a --tune variant of it with a forced tuning).
GemmCase tmakit_recipe_case(const Shape& s, const RecipeRow& row, std::string impl,
                            const GemmTuning& tuning) {
  CaseSpec c = gemm_spec(s, std::move(impl), "tmakit", recipe_bytes(s, row.recipe));
  c.baselines = {row.lt, row.tensor};
  c.speedup_over = row.lt;
  return {c, [tuning, row](const ShapeRun& r) { return bind_tmakit(r, tuning, row.recipe); }};
}

GemmCase tmakit_recipe_case(const Shape& s, const RecipeRow& row) {
  return tmakit_recipe_case(s, row, row.tmakit, row.fast ? fast_accumulation() : GemmTuning{});
}

// The K splits --tune tries for a configuration that splits: the small-M kernel over
// clusters of 1, 2, 4, 8; 64-row tiles at M <= 256 up to 4 ways; the square tiles of 128 rows
// 1-16 ways; none for the others (none where the shape has fewer k-blocks).
std::vector<int> splits_tried(const GemmConfigInfo& info, const Shape& s) {
  if (info.block_m == 0) return {1, 2, 4, 8};  // a cluster along K
  if (info.block_m == 64) return s.m <= 256 ? std::vector<int>{1, 2, 3, 4} : std::vector<int>{};
  if (info.block_n == info.block_m) return {1, 2, 3, 4, 8, 16};
  return {};
}

// With --tune: "tmakit:<configuration>", "tmakit-fast:<configuration>" and
// "tmakit:<configuration>:s<splits>" variants, each a forced GemmTuning, for every built
// configuration that takes the shape (gemm_config_info: its M, modes and splits), after
// "tmakit:no-overlap", the plan's choice launched the ordinary way; then the same forced
// variants of the 128-block recipe, "tmakit-block:<configuration>[:s<splits>]", for the
// configurations that apply block scales (this bench's scale_a is one TMA loads); then the
// row-wise recipe's, "tmakit-row:<configuration>" (promoted) and "tmakit-row-fast:
// <configuration>", as the per-tensor rows take them (every configuration applies row-wise
// scales), unsplit.
std::vector<GemmCase> tuned_cases(const SuiteOptions& o, const Shape& s) {
  std::vector<GemmCase> v;
  if (!o.tune) return v;
  GemmTuning serial;
  serial.overlap_launch = false;
  v.push_back(tmakit_case(s, "tmakit:no-overlap", serial));
  const std::uint64_t k_blocks = (s.k + 127) / 128;
  for (int c = 0; c < kGemmConfigs; ++c) {
    const GemmConfigInfo info = gemm_config_info(c);
    if (!info.built || (info.max_m != 0 && s.m > info.max_m)) continue;
    const std::string name = info.name;
    const bool small_m = info.block_m == 0;
    // the small-M kernel promotes only: one row, or one per split where it splits
    if (info.promotes && !small_m) v.push_back(tmakit_case(s, "tmakit:" + name, {c, 0}));
    if (!small_m) v.push_back(tmakit_case(s, "tmakit-fast:" + name, fast_accumulation(c)));
    if (!info.splits_k) {
      if (small_m) v.push_back(tmakit_case(s, "tmakit:" + name, {c, 0}));
      continue;
    }
    for (int splits : splits_tried(info, s)) {
      if (static_cast<std::uint64_t>(splits) > k_blocks) continue;
      v.push_back(tmakit_case(s, "tmakit:" + name + ":s" + std::to_string(splits), {c, splits}));
    }
  }
  const RecipeRow& block = kRecipeRows[2];
  static_assert(kRecipeRows[2].recipe == GemmScaleRecipe::block && !kRecipeRows[2].fast,
                "the third recipe row is the 128-block one");
  for (int c = 0; c < kGemmConfigs; ++c) {
    const GemmConfigInfo info = gemm_config_info(c);
    if (!info.built || !info.block_scales_tma || (info.max_m != 0 && s.m > info.max_m)) continue;
    const std::string name = "tmakit-block:" + std::string(info.name);
    v.push_back(tmakit_recipe_case(s, block, name, {c, 0}));
    if (!info.splits_k) continue;
    for (int splits : splits_tried(info, s)) {
      if (static_cast<std::uint64_t>(splits) > k_blocks) continue;
      v.push_back(tmakit_recipe_case(s, block, name + ":s" + std::to_string(splits), {c, splits}));
    }
  }
  const RecipeRow& row = kRecipeRows[0];
  const RecipeRow& row_fast = kRecipeRows[1];
  static_assert(kRecipeRows[0].recipe == GemmScaleRecipe::row && !kRecipeRows[0].fast &&
                    kRecipeRows[1].recipe == GemmScaleRecipe::row && kRecipeRows[1].fast,
                "the first two recipe rows are the row-wise ones, promoted then fast");
  for (int c = 0; c < kGemmConfigs; ++c) {
    const GemmConfigInfo info = gemm_config_info(c);
    if (!info.built || (info.max_m != 0 && s.m > info.max_m)) continue;
    const std::string name = info.name;
    if (info.promotes) v.push_back(tmakit_recipe_case(s, row, "tmakit-row:" + name, {c, 0}));
    if (info.block_m != 0) {  // (the small-M kernel: promoted only, as above)
      v.push_back(tmakit_recipe_case(s, row_fast, "tmakit-row-fast:" + name, fast_accumulation(c)));
    }
  }
  return v;
}

// -- cuBLAS FP16, the write-up's comparison, on fp16 twins of the operands

// The fp16 twins of a shape's operand sets (the same values) and their D, made when the case
// is bound.
struct Fp16Operands {
  std::vector<std::unique_ptr<DeviceBuffer>> a, b, d;
  explicit Fp16Operands(const ShapeRun& r);
  __half* fp16_a(int set) const { return static_cast<__half*>(a[set]->get()); }
  __half* fp16_b(int set) const { return static_cast<__half*>(b[set]->get()); }
  __half* fp16_d(int set) const { return static_cast<__half*>(d[set]->get()); }
};

Fp16Operands::Fp16Operands(const ShapeRun& r) {
  const Shape& s = r.s;
  for (int i = 0; i < r.sets; ++i) {
    a.push_back(std::make_unique<DeviceBuffer>(s.m * s.k * 2));
    b.push_back(std::make_unique<DeviceBuffer>(s.n * s.k * 2));
    d.push_back(std::make_unique<DeviceBuffer>(s.m * s.n * 2));
  }
  // each fp8 set is a copy of set 0 already; so is each twin
  const cudaStream_t st = r.run.stream;
  const float* e4m3 = r.run.e4m3.get();
  for (int i = 0; i < r.sets; ++i) {
    widen_e4m3_kernel<<<1024, 256, 0, st>>>(r.ops.fp8_a(i), fp16_a(i), s.m * s.k, e4m3);
    widen_e4m3_kernel<<<1024, 256, 0, st>>>(r.ops.fp8_b(i), fp16_b(i), s.n * s.k, e4m3);
  }
  TMAKIT_CUDA_CHECK(cudaGetLastError());
  TMAKIT_CUDA_CHECK(cudaStreamSynchronize(st));
}

Binding bind_cublas_fp16(const ShapeRun& r) {
  const Vendor& v = r.run.libraries;
  Binding b = r.writes_d();
  if (!v.blas_why.empty()) {
    b.status = Status::unavailable(v.blas_why);
    return b;
  }
  auto twins = std::make_shared<const Fp16Operands>(r);
  b.note = v.blas_lib.path();
  b.out = twins->fp16_d(0);
  const Shape& s = r.s;
  const int m = static_cast<int>(s.m), n = static_cast<int>(s.n), k = static_cast<int>(s.k);
  b.run = [&r, twins, m, n, k](cudaStream_t st, int set) {
    const Vendor& lib = r.run.libraries;
    lib.blas_set_stream(lib.blas, st);
    const cublasStatus_t e = lib.gemm_ex(
        lib.blas, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &r.run.scale, twins->fp16_b(set),
        CUDA_R_16F, k, twins->fp16_a(set), CUDA_R_16F, k, &GemmRun::kBeta, twins->fp16_d(set),
        CUDA_R_16F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (e != CUBLAS_STATUS_SUCCESS) {
      throw Error("cublasGemmEx returned " + std::to_string(static_cast<int>(e)));
    }
  };
  b.check = [&r, twins] {
    double rel = 0;
    const std::uint64_t wrong = count_wrong(twins->fp16_a(0), twins->fp16_b(0),
                                            twins->fp16_d(0), r.s, r.run.scale, false,
                                            r.run.e4m3, &rel);
    return sampled_verdict(wrong, rel);
  };
  return b;
}

GemmCase cublas_fp16_case(const Shape& s) {
  return {gemm_spec(s, kFp16, "vendor", fp16_bytes(s)), bind_cublas_fp16};
}

// -- the seed kernel: the write-up's simple TMA GEMM, the floor

Binding bind_seed(const ShapeRun& r) {
  Binding b = r.writes_d();
  b.note = "64 x 128 tile per CTA, 2 TMA stages";
  b.run = [&r](cudaStream_t st, int set) {
    const Shape& s = r.s;
    seed_gemm_fp8(r.ops.fp8_a(set), r.ops.fp8_b(set), r.ops.fp8_d(set), s.m, s.n, s.k,
                  r.run.scale, st);
  };
  b.check = [&r] { return r.check_fp8(false); };
  return b;
}

GemmCase seed_case(const Shape& s) {
  return {gemm_spec(s, kSeed, "seed", fp8_bytes(s)), bind_seed};
}

// -- the bytes floor: the bytes alone, the floor of the shapes bound by memory; D must come
// out all zeros (its check)

Binding bind_bytes_floor(const ShapeRun& r) {
  Binding b = r.writes_d();
  b.note = "no GEMM: a plain kernel reads A and B once and writes D once (zeros), one "
           "16 KB chunk per block: the bytes that must move, moved alone";
  b.run = [&r](cudaStream_t st, int set) {
    const Shape& s = r.s;
    bytes_floor(r.ops.fp8_a(set), s.m * s.k, r.ops.fp8_b(set), s.n * s.k, r.ops.fp8_d(set),
                r.d_bytes, r.run.floor_sink(), st);
  };
  b.check = [&r] {
    const std::uint64_t nonzero = count_nonzero_bytes(r.ops.fp8_d(0), r.d_bytes);
    return Verdict{nonzero == 0 ? "" : std::to_string(nonzero) + " bytes of D not zero", ""};
  };
  return b;
}

GemmCase bytes_floor_case(const Shape& s) {
  return {gemm_spec(s, "bytes-floor", "ceiling", fp8_bytes(s)), bind_bytes_floor};
}

// -- the tensor floor: the FLOPs alone, the floor of the large shapes; every CTA runs its
// share of k-blocks, its sums right (its check)

Binding bind_tensor_floor(const ShapeRun& r) {
  const GemmRun& run = r.run;
  const std::uint64_t flops = 2 * r.s.m * r.s.n * r.s.k;
  Binding b;
  char note[200];
  std::snprintf(note, sizeof note,
                "no GEMM: %llu k-blocks of m64n256k32 wgmmas (128 x 256 x 128 each) on "
                "random operands kept in shared memory, one CTA per SM: the tensor cores' "
                "time",
                static_cast<unsigned long long>(tensor_floor_k_blocks(flops)));
  b.note = note;
  b.out = run.tensor_floor_sums();
  b.out_bytes = run.tensor_floor_buffer.bytes();
  const auto grid = static_cast<unsigned>(run.sms);
  const void* image = run.tensor_floor_operands.get();
  float* const sums = run.tensor_floor_sums();
  b.run = [=](cudaStream_t st, int) { tensor_floor(image, flops, grid, sums, st); };
  b.check = [=] { return Verdict{check_tensor_floor(sums, flops, grid), ""}; };
  return b;
}

// It moves nothing, so one call is all a stream of them would time: not streamed.
GemmCase tensor_floor_case(const Shape& s) {
  CaseSpec c = gemm_spec(s, "tensor-floor", "ceiling", 0);
  c.streamed = false;
  return {c, bind_tensor_floor};
}

// ---- the cases of one shape, as declared -------------------------------------------------

// Every case of the shape, in the order they run and are reported.
std::vector<GemmCase> gemm_cases(const SuiteOptions& o, const Shape& s) {
  std::vector<GemmCase> out = {cublaslt_case(s, false), cublaslt_case(s, true),
                               tmakit_case(s, "tmakit", {}),
                               tmakit_case(s, "tmakit-fast", fast_accumulation())};
  for (const RecipeRow& row : kRecipeRows) out.push_back(cublaslt_recipe_case(s, row));
  for (const RecipeRow& row : kRecipeRows) out.push_back(tmakit_recipe_case(s, row));
  for (GemmCase& c : tuned_cases(o, s)) out.push_back(std::move(c));
  out.push_back(cublas_fp16_case(s));
  out.push_back(seed_case(s));
  if (memory_bound(s)) out.push_back(bytes_floor_case(s));
  if (!memory_bound(s) && 2 * s.m * s.n * s.k >= kTensorFloorMinFlops) {
    out.push_back(tensor_floor_case(s));
  }
  return out;
}

// Runs the shape's selected cases, each bound by its own binder.
void run_shape(const GemmRun& run, CaseRunner& runner, const SuiteOptions& o, const Shape& s,
               double memcpy_gbps) {
  const std::string w = workload_id(s);
  std::vector<GemmCase> cases;
  std::vector<CaseSpec> specs;
  for (GemmCase& c : gemm_cases(o, s)) {
    if (!case_selected(o.filter, w, c.spec)) continue;
    specs.push_back(c.spec);
    cases.push_back(std::move(c));
  }
  if (cases.empty()) return;
  if (o.progress) *o.progress << w << "\n";
  stall_watch_at("preparing the operands of " + w);
  // operand sets for the stream timing: together at least twice the L2 (set 0 is the one
  // checked and timed call by call; the others are copies of it)
  const int sets = stream_sets(fp8_bytes(s), run.l2_bytes);
  const int calls = sets * ((kStreamCalls + sets - 1) / sets);
  const ShapeRun shape(run, s, sets);
  const auto bind = [&](const CaseSpec& c) -> Binding {
    for (const GemmCase& g : cases) {
      if (g.spec.impl == c.impl) return g.bind(shape);
    }
    throw Error("no GEMM case is called " + c.impl);
  };
  runner.run(w, specs, bind, memory_bound(s) ? memcpy_gbps : 0.0, {sets, calls});
}

}  // namespace

std::vector<std::pair<std::string, std::string>> gemm_shape_sets() {
  return {{"default", "the built-in list: M = 1-4096 at 4096 x 4096, 8192^3, Llama-3-70B's "
                      "projections at M = 16, 128, 8192, and others"},
          {"deepseek", "DeepSeek-V3's projections, N x K = 2112x7168, 24576x1536, 32768x512, "
                       "7168x16384, 4096x7168, 7168x2048, at M = 64, 128, 4096"}};
}

std::vector<DeclaredWorkload> declared_gemm_workloads(const SuiteOptions& options) {
  std::vector<DeclaredWorkload> out;
  for (const Shape& s : shapes(options)) {
    DeclaredWorkload& w = out.emplace_back();
    w.workload = workload_id(s);
    for (const GemmCase& c : gemm_cases(options, s)) w.cases.push_back(c.spec);
  }
  return out;
}

std::vector<std::string> list_gemm_cases(const SuiteOptions& options) {
  std::vector<std::string> ids;
  for (const DeclaredWorkload& w : declared_gemm_workloads(options)) {
    // each implementation is timed call by call and as a stream of calls
    for (const bool stream : {false, true}) {
      for (const CaseSpec& c : w.cases) {
        if (!case_selected(options.filter, w.workload, c) || (stream && !c.streamed)) continue;
        ids.push_back(stream ? stream_case_id(w.workload, c) : case_id(w.workload, c));
      }
    }
  }
  // the rows of the run as a whole run whenever any GEMM case does, or when the filter names
  // one of them alone (e.g. --filter host-overhead)
  bool named = false;
  for (const char* impl : kRunRows) named |= filter_selects(options.filter, run_row_id(impl));
  if (!ids.empty() || named) {
    std::vector<std::string> run_ids;
    for (const char* impl : kRunRows) run_ids.push_back(run_row_id(impl));
    ids.insert(ids.begin(), run_ids.begin(), run_ids.end());
  }
  return ids;
}

std::vector<Result> run_gemm_cases(const SuiteOptions& options) {
  std::vector<Result> out;
  if (list_gemm_cases(options).empty()) return out;
  // NOTE: not a non-blocking stream: the checks run on the legacy default stream and rely on
  // its ordering with this one
  const Stream stream_owner(cudaStreamDefault);
  const cudaStream_t stream = stream_owner.get();
  Timer timer(options.timing, stream);
  stall_watch_at("timing the GEMM run's own rows (empty kernel, host overhead, memcpy)");
  out.push_back(empty_kernel_floor(timer));
  out.push_back(host_overhead(stream));
  out.push_back(memcpy_ceiling(timer, stream));
  const double memcpy_gbps = out.back().gbps;  // the ceiling of the memory-bound shapes

  const GemmRun run(stream);
  CaseRunner runner(stream, timer, nullptr);
  for (const Shape& s : shapes(options)) run_shape(run, runner, options, s, memcpy_gbps);
  std::vector<Result>& rows = runner.results();
  out.insert(out.end(), std::make_move_iterator(rows.begin()), std::make_move_iterator(rows.end()));
  return out;
}

}  // namespace tmakit::bench
