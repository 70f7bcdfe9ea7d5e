// FP8 GEMM benchmark cases: tmakit, cuBLASLt FP8 and cuBLAS FP16 side by side in one run,
// each checked before it is timed (see gemm_cases.hpp).
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>

#include "gemm_cases.hpp"

#include "baselines.hpp"
#include "cases.hpp"
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

// Each shape once, in the order first given (8192^3 is also a Llama projection; a shape
// repeated on the command line runs once).
std::vector<Shape> shapes(const SuiteOptions& o) {
  std::vector<Shape> s;
  const auto add = [&s](std::uint64_t m, std::uint64_t n, std::uint64_t k) {
    for (const Shape& x : s) {
      if (x.m == m && x.n == n && x.k == k) return;
    }
    s.push_back({m, n, k});
  };
  if (!o.gemm_shapes.empty()) {
    for (const auto& [m, n, k] : o.gemm_shapes) add(m, n, k);
    return s;
  }
  if (o.quick) return {{1, 4096, 4096}, {128, 4096, 4096}, {1024, 1024, 1024}};
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
  return s;
}

std::string workload_id(const Shape& s) {
  return "gemm/fp8/m" + std::to_string(s.m) + "n" + std::to_string(s.n) + "k" +
         std::to_string(s.k);
}

const char* kFloorId = "gemm/empty-kernel";
const char* kMemcpyId = "gemm/memcpy";

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

// One shape's operands: `sets` copies of A and B (e4m3) and D (bf16), and the fp16 twins
// for cuBLAS FP16 when `fp16`. Set 0 is filled; copy_set0 copies it to the others.
struct Operands {
  std::vector<std::unique_ptr<DeviceBuffer>> a, b, d, a16, b16, d16;
  Operands(const Shape& s, int sets, bool fp16) {
    for (int i = 0; i < sets; ++i) {
      a.push_back(std::make_unique<DeviceBuffer>(s.m * s.k));
      b.push_back(std::make_unique<DeviceBuffer>(s.n * s.k));
      d.push_back(std::make_unique<DeviceBuffer>(s.m * s.n * 2));
      if (!fp16) continue;
      a16.push_back(std::make_unique<DeviceBuffer>(s.m * s.k * 2));
      b16.push_back(std::make_unique<DeviceBuffer>(s.n * s.k * 2));
      d16.push_back(std::make_unique<DeviceBuffer>(s.m * s.n * 2));
    }
  }
  void copy_set0(cudaStream_t stream) const {
    for (const auto* v : {&a, &b, &a16, &b16}) {
      for (std::size_t i = 1; i < v->size(); ++i) {
        TMAKIT_CUDA_CHECK(cudaMemcpyAsync((*v)[i]->get(), (*v)[0]->get(), (*v)[0]->bytes(),
                                          cudaMemcpyDeviceToDevice, stream));
      }
    }
  }
  const std::uint8_t* fp8_a(int set) const { return static_cast<const std::uint8_t*>(a[set]->get()); }
  const std::uint8_t* fp8_b(int set) const { return static_cast<const std::uint8_t*>(b[set]->get()); }
  __nv_bfloat16* fp8_d(int set) const { return static_cast<__nv_bfloat16*>(d[set]->get()); }
  const __half* fp16_a(int set) const { return static_cast<const __half*>(a16[set]->get()); }
  const __half* fp16_b(int set) const { return static_cast<const __half*>(b16[set]->get()); }
  __half* fp16_d(int set) const { return static_cast<__half*>(d16[set]->get()); }
};

// With --tune: "tmakit:<configuration>", "tmakit-fast:<configuration>" and
// "tmakit:<configuration>:s<splits>" variants, each a forced GemmTuning, for every built
// configuration that takes the shape (gemm_config_info: its M, modes and splits); K split
// 1-16 ways where a configuration splits (the small-M one over clusters of 1, 2, 4, 8; the
// 64-row tiles, m64n128 and m64n64, at M <= 256 with up to 4).
std::vector<std::pair<std::string, GemmTuning>> tuned_variants(const SuiteOptions& o,
                                                               const Shape& s) {
  std::vector<std::pair<std::string, GemmTuning>> v;
  if (!o.tune) return v;
  // the chosen plan launched the ordinary way (no overlap with the kernel before it)
  GemmTuning serial;
  serial.overlap_launch = false;
  v.push_back({"tmakit:no-overlap", serial});
  const std::uint64_t k_blocks = (s.k + 127) / 128;
  for (int c = 0; c < kGemmConfigs; ++c) {
    const GemmConfigInfo info = gemm_config_info(c);
    if (!info.built || (info.max_m != 0 && s.m > info.max_m)) continue;
    const std::string name = info.name;
    const bool small_m = info.block_m == 0;
    if (info.promotes && !small_m) v.push_back({"tmakit:" + name, {c, 0}});
    GemmTuning fast{c, 0};
    fast.accumulation = GemmAccumulation::fast;
    if (!small_m) v.push_back({"tmakit-fast:" + name, fast});
    if (!info.splits_k) {
      if (small_m) v.push_back({"tmakit:" + name, {c, 0}});
      continue;
    }
    std::vector<int> splits_tried = {1, 2, 3, 4, 8, 16};
    if (small_m) {
      splits_tried = {1, 2, 4, 8};  // a cluster along K
    } else if (info.block_m == 64) {
      if (s.m > 256) continue;
      splits_tried = {1, 2, 3, 4};
    } else if (name != "m128n128") {
      continue;
    }
    for (int splits : splits_tried) {
      if (static_cast<std::uint64_t>(splits) > k_blocks) continue;
      v.push_back({"tmakit:" + name + ":s" + std::to_string(splits), {c, splits}});
    }
  }
  return v;
}

// ---- device data and checks ------------------------------------------------------------

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

// Random e4m3 with |v| <= 4 (never NaN, rarely zero); fp16 twin with the same values.
// Host time per call, on the CPU: gemm_fp8 (validation, cached tensor maps, launch) against
// a plain launch of an empty kernel, each enqueued `kCalls` times without waiting (the GPU
// work of both is short enough that the launch queue never fills).
Result host_overhead(cudaStream_t stream);

// Does nothing: timed like the GEMMs, it shows the floor under every time in the table (the
// launch after the L2 flush, the events).
__global__ void empty_kernel() {}

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
  Result r;
  r.id = "gemm/host-overhead";
  r.workload = "gemm";
  r.impl = "host-overhead";
  r.kind = "ceiling";
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

// The memory ceiling for the memory-bound shapes: a device-to-device copy of 512 MiB (far
// past the L2), bytes read plus bytes written, timed like the GEMMs.
Result memcpy_ceiling(Timer& timer, cudaStream_t stream) {
  constexpr std::size_t kBytes = std::size_t{512} << 20;
  DeviceBuffer src(kBytes), dst(kBytes);
  TMAKIT_CUDA_CHECK(cudaMemsetAsync(src.get(), 0x5a, kBytes, stream));
  Result r;
  r.id = kMemcpyId;
  r.workload = "gemm";
  r.impl = "memcpy";
  r.kind = "ceiling";
  r.bytes = 2 * kBytes;
  r.timing = timer.time([&](cudaStream_t st) {
    TMAKIT_CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), kBytes, cudaMemcpyDeviceToDevice, st));
  });
  r.gbps = static_cast<double>(r.bytes) / (r.timing.median_ms * 1e-3) * 1e-9;
  r.note = "cudaMemcpyAsync of 512 MiB device to device: the ceiling of the 'x memcpy' column "
           "for shapes with M or N <= 128";
  return r;
}

__global__ void fill_e4m3_kernel(std::uint8_t* out, __half* twin, std::uint64_t n,
                                 std::uint64_t seed, const float* e4m3_table) {
  __shared__ float e4m3[256];
  stage_e4m3(e4m3_table, e4m3);
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x) {
    const std::uint32_t h = hash32(i * 0x9E3779B97F4A7C15ull + seed);
    // exponent 1..8 (|v| in [2^-6, 4)), any mantissa, any sign
    const std::uint8_t bits = static_cast<std::uint8_t>(((h & 1) << 7) | ((1 + (h >> 1) % 8) << 3) |
                                                        ((h >> 8) & 7));
    out[i] = bits;
    if (twin != nullptr) twin[i] = __float2half(e4m3[bits]);
  }
}

// Sampled elements of D against a double dot product; counts those off by more than bf16
// rounding plus `slack` x sum |a b| (the accumulation's error), and adds each sample's
// squared error and squared reference value into sums[0], sums[1].
template <class In, class Out>
__global__ void check_kernel(const In* a, const In* b, const Out* d, std::uint64_t m,
                             std::uint64_t n, std::uint64_t k, float scale, double slack,
                             int samples, const float* e4m3_table, unsigned long long* wrong,
                             double* sums) {
  __shared__ float e4m3[256];
  if (e4m3_table != nullptr) stage_e4m3(e4m3_table, e4m3);  // e4m3 inputs (null for fp16)
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= samples) return;
  const std::uint32_t h = hash32(static_cast<std::uint64_t>(s) * 7919u + 17u);
  // corners first, then random elements
  std::uint64_t i = s == 0 ? 0 : s == 1 ? m - 1 : h % m;
  std::uint64_t j = s == 0 ? 0 : s == 1 ? n - 1 : hash32(h) % n;
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
    sum += x * y;
    abs_sum += fabs(x * y);
  }
  const double ref = sum * scale;
  double got;
  if constexpr (sizeof(Out) == 2 && std::is_same_v<Out, __half>) {
    got = __half2float(d[i * n + j]);
  } else {
    got = __bfloat162float(d[i * n + j]);
  }
  // one bf16 ulp plus the tensor cores' fp8 accumulation error (kernels/gemm/README.md)
  const double tol = fabs(ref) / 128.0 + abs_sum * scale * slack + 1e-20;
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
                          bool fast, const E4m3Table& e4m3, double* rel_error) {
  ErrorCounter c;
  const int samples = 2048;
  DeviceBuffer sums(2 * sizeof(double));
  TMAKIT_CUDA_CHECK(cudaMemset(sums.get(), 0, sums.bytes()));
  check_kernel<In, Out><<<samples / 128, 128>>>(a, b, d, s.m, s.n, s.k, scale,
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
        !l.bind("cublasLtMatmul", matmul)) {
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
// transposed (K x N, ld K), "B" = our A (K x M, ld K), D column-major N x M (ld N).
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
};

// Sets `p` up for the shape; returns "" or why cuBLASLt cannot (Status::unavailable).
std::string make_lt_plan(LtPlan& p, const Shape& s, const float* d_scale_a,
                         const float* d_scale_b, bool fast) {
  const Vendor& v = p.v;
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
    return "cuBLASLt has no FP8 algorithm for this shape (status " +
           std::to_string(static_cast<int>(st)) + ")";
  }
  for (int i = 0; i < found; ++i) p.candidates[i] = results[i].algo;
  p.candidate_count = found;
  p.algo = results[0].algo;
  p.workspace = std::make_unique<DeviceBuffer>(p.workspace_bytes);
  return "";
}

// ---- the cases of one shape, as declared ------------------------------------------------

// The implementations, in the order they run and are reported. "-fast": fast accumulation
// (GemmAccumulation::fast; cuBLASLt's CUBLASLT_MATMUL_DESC_FAST_ACCUM), each mode compared
// with the other library's row of the same mode.
constexpr const char* kLt = "cublaslt-fp8";
constexpr const char* kLtFast = "cublaslt-fp8-fast";
constexpr const char* kFp16 = "cublas-fp16";
constexpr const char* kSeed = "seed-tma";
constexpr const char* kBytesFloor = "bytes-floor";
constexpr const char* kTensorFloor = "tensor-floor";

// A case, with the tuning its call passes when it is one of tmakit's.
struct GemmCase {
  CaseSpec spec;
  GemmTuning tuning;
};

// Every case of the shape: each moves A, B and D once in its own types, declares 2 M N K
// FLOPs, and is timed together with the others of its shape, call by call and as a stream
// of calls. tmakit's rows are compared with the vendors' and the write-up's GEMM, their
// speed-up stated over cuBLASLt FP8 in the same accumulation mode.
std::vector<GemmCase> gemm_cases(const SuiteOptions& o, const Shape& s) {
  const std::uint64_t fp8_bytes = s.m * s.k + s.n * s.k + s.m * s.n * 2;
  const std::uint64_t fp16_bytes = 2 * (s.m * s.k + s.n * s.k + s.m * s.n);
  const std::uint64_t flops = 2 * s.m * s.n * s.k;
  const auto declare = [&](const std::string& impl, const char* kind, std::uint64_t bytes) {
    CaseSpec c;
    c.impl = impl;
    c.kind = kind;
    c.bytes = bytes;
    c.flops = flops;
    c.timed_by = TimedBy::together;
    c.streamed = true;
    return c;
  };
  const auto tmakit = [&](const std::string& impl, const GemmTuning& tuning) {
    CaseSpec c = declare(impl, "tmakit", fp8_bytes);
    c.baselines = {kLt, kLtFast, kFp16, kSeed};
    c.speedup_over = tuning.accumulation == GemmAccumulation::fast ? kLtFast : kLt;
    return GemmCase{c, tuning};
  };
  GemmTuning fast;
  fast.accumulation = GemmAccumulation::fast;
  std::vector<GemmCase> out = {{declare(kLt, "vendor", fp8_bytes), {}},
                               {declare(kLtFast, "vendor", fp8_bytes), {}},
                               tmakit("tmakit", {}),
                               tmakit("tmakit-fast", fast)};
  for (const auto& [name, tuning] : tuned_variants(o, s)) out.push_back(tmakit(name, tuning));
  out.push_back({declare(kFp16, "vendor", fp16_bytes), {}});
  out.push_back({declare(kSeed, "seed", fp8_bytes), {}});
  // the bytes alone: the floor of the shapes bound by memory
  if (memory_bound(s)) out.push_back({declare(kBytesFloor, "ceiling", fp8_bytes), {}});
  // the FLOPs alone: the floor of the large shapes (it moves nothing, so one call is all a
  // stream of them would time)
  if (!memory_bound(s) && flops >= kTensorFloorMinFlops) {
    CaseSpec c = declare(kTensorFloor, "ceiling", 0);
    c.streamed = false;
    out.push_back({c, {}});
  }
  return out;
}

}  // namespace

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
  // the empty kernel, the host overhead and the memcpy ceiling run whenever any GEMM case
  // does, or when the filter names them alone (e.g. --filter host-overhead)
  if (!ids.empty() || filter_selects(options.filter, kFloorId) ||
      filter_selects(options.filter, "gemm/host-overhead") ||
      filter_selects(options.filter, kMemcpyId)) {
    ids.insert(ids.begin(), {kFloorId, "gemm/host-overhead", kMemcpyId});
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
  int device = 0;
  int l2 = 0;
  int sms = 0;
  TMAKIT_CUDA_CHECK(cudaGetDevice(&device));
  TMAKIT_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  TMAKIT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const auto l2_bytes = static_cast<std::size_t>(l2);
  {
    Result floor;
    floor.id = kFloorId;
    floor.workload = "gemm";
    floor.impl = "empty-kernel";
    floor.kind = "ceiling";
    floor.timing = timer.time([](cudaStream_t st) {
      empty_kernel<<<1, 32, 0, st>>>();
      TMAKIT_CUDA_CHECK(cudaGetLastError());
    });
    floor.note = "an empty kernel timed the same way: the floor under every time below";
    out.push_back(floor);
  }
  out.push_back(host_overhead(stream));
  out.push_back(memcpy_ceiling(timer, stream));
  const double memcpy_gbps = out.back().gbps;  // the ceiling of the memory-bound shapes

  Vendor& v = vendor();
  const E4m3Table e4m3;
  // device: scale_a, scale_b (cuBLASLt reads them from there)
  // NOTE: each scale on its own 16 bytes, in case cuBLASLt wants aligned scale pointers
  const DeviceBuffer scale_buffer(8 * sizeof(float));
  auto* const scales = static_cast<float*>(scale_buffer.get());
  const GemmScales sc{0.75f, 1.5f, 0.5f};
  const DeviceBuffer floor_sink_buffer(sizeof(unsigned));  // bytes_floor's never-taken branch
  auto* const floor_sink = static_cast<unsigned*>(floor_sink_buffer.get());  // writes here
  const DeviceBuffer tensor_floor_buffer(3 * sizeof(float) * static_cast<unsigned>(sms));
  auto* const tensor_floor_sums = static_cast<float*>(tensor_floor_buffer.get());
  const DeviceBuffer tensor_floor_operands(kTensorFloorImageBytes);
  {
    const std::vector<std::uint8_t> image = tensor_floor_image();
    TMAKIT_CUDA_CHECK(cudaMemcpy(tensor_floor_operands.get(), image.data(), image.size(),
                                 cudaMemcpyHostToDevice));
  }
  TMAKIT_CUDA_CHECK(cudaMemcpy(scales, &sc.scale_a, sizeof(float), cudaMemcpyHostToDevice));
  TMAKIT_CUDA_CHECK(cudaMemcpy(scales + 4, &sc.scale_b, sizeof(float), cudaMemcpyHostToDevice));
  const float scale = sc.alpha * sc.scale_a * sc.scale_b;
  const float beta = 0.0f;
  CaseRunner runner(stream, timer, nullptr);

  for (const Shape& s : shapes(options)) {
    const std::string w = workload_id(s);
    std::vector<CaseSpec> cases;
    std::map<std::string, GemmTuning> tunings;  // tmakit's cases
    bool fp16 = false;
    for (const GemmCase& c : gemm_cases(options, s)) {
      if (!case_selected(options.filter, w, c.spec)) continue;
      cases.push_back(c.spec);
      if (c.spec.kind == "tmakit") tunings[c.spec.impl] = c.tuning;
      fp16 |= c.spec.impl == kFp16 && v.blas_why.empty();
    }
    if (cases.empty()) continue;
    if (options.progress) *options.progress << w << "\n";
    // operand sets for the stream timing: together at least twice the L2 (set 0 is the one
    // checked and timed call by call; the others are copies of it)
    const std::uint64_t fp8_bytes = s.m * s.k + s.n * s.k + s.m * s.n * 2;
    const int sets = stream_sets(fp8_bytes, l2_bytes);
    const int calls = sets * ((kStreamCalls + sets - 1) / sets);
    Operands ops(s, sets, fp16);
    fill_e4m3_kernel<<<1024, 256, 0, stream>>>(
        static_cast<std::uint8_t*>(ops.a[0]->get()),
        fp16 ? static_cast<__half*>(ops.a16[0]->get()) : nullptr, s.m * s.k, 1, e4m3.get());
    fill_e4m3_kernel<<<1024, 256, 0, stream>>>(
        static_cast<std::uint8_t*>(ops.b[0]->get()),
        fp16 ? static_cast<__half*>(ops.b16[0]->get()) : nullptr, s.n * s.k, 2, e4m3.get());
    TMAKIT_CUDA_CHECK(cudaGetLastError());
    ops.copy_set0(stream);
    TMAKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
    const auto* pa = ops.fp8_a(0);
    const auto* pb = ops.fp8_b(0);
    auto* pd = ops.fp8_d(0);
    const std::uint64_t d_bytes = s.m * s.n * 2;

    // 2048 sampled elements of D against a double-precision dot product
    const auto sampled = [&s](std::uint64_t wrong, double rel) {
      char note[80];
      std::snprintf(note, sizeof note, "rel. error %.2e (2048 sampled elements)", rel);
      return Verdict{wrong == 0 ? "" : std::to_string(wrong) + " of 2048 sampled elements wrong",
                     note};
    };
    const auto fp8_check = [&, sampled](bool fast) {
      return [&, sampled, fast] {
        double rel = 0;
        const std::uint64_t wrong = count_wrong(pa, pb, pd, s, scale, fast, e4m3, &rel);
        return sampled(wrong, rel);
      };
    };

    // Each case's calls on operand set `set` (0 for the check and the call-by-call timing).
    const auto bind = [&](const CaseSpec& c) -> Binding {
      Binding b;
      b.out = pd;
      b.out_bytes = d_bytes;
      if (c.impl == kLt || c.impl == kLtFast) {
        const bool fast = c.impl == kLtFast;
        if (!v.lt_why.empty()) {
          b.status = Status::unavailable(v.lt_why);
          return b;
        }
        auto plan = std::make_shared<LtPlan>(v);
        if (std::string why = make_lt_plan(*plan, s, scales, scales + 4, fast); !why.empty()) {
          b.status = Status::unavailable(std::move(why));
          return b;
        }
        b.note = v.lt_lib.path();
        if (fast) b.note.insert(0, "CUBLASLT_MATMUL_DESC_FAST_ACCUM; ");
        b.run = [&, plan](cudaStream_t st, int set) {
          const cublasStatus_t e =
              v.matmul(v.lt, plan->desc, &sc.alpha, ops.fp8_b(set), plan->la, ops.fp8_a(set),
                       plan->lb, &beta, ops.fp8_d(set), plan->ld, ops.fp8_d(set), plan->ld,
                       &plan->algo, plan->workspace->get(), plan->workspace_bytes, st);
          if (e != CUBLAS_STATUS_SUCCESS) {
            throw Error("cublasLtMatmul returned " + std::to_string(static_cast<int>(e)));
          }
        };
        // NOTE: the first algorithm the heuristic offers is not always accepted by
        // cublasLtMatmul; take the first that runs, and say which failed
        b.first = [&, plan](cudaStream_t st) {
          std::string refused;
          for (int i = 0; i < plan->candidate_count; ++i) {
            plan->algo = plan->candidates[i];
            const cublasStatus_t e =
                v.matmul(v.lt, plan->desc, &sc.alpha, pb, plan->la, pa, plan->lb, &beta, pd,
                         plan->ld, pd, plan->ld, &plan->algo, plan->workspace->get(),
                         plan->workspace_bytes, st);
            if (e == CUBLAS_STATUS_SUCCESS) return;
            if (!refused.empty()) refused += ',';
            refused += std::to_string(static_cast<int>(e));
          }
          throw Error("cublasLtMatmul refused all " + std::to_string(plan->candidate_count) +
                      " heuristic algorithms (statuses " + refused + ")");
        };
        b.check = fp8_check(fast);
      } else if (c.kind == "tmakit") {
        const GemmTuning tuning = tunings.at(c.impl);
        const GemmPlan p = gemm_fp8_plan(s.m, s.n, s.k, sms, tuning);
        char note[160];
        if (p.splits > 1 && p.split_tiles < p.tiles) {  // a split tail
          std::snprintf(note, sizeof note, "%s, %d split(s) of the last %lld tiles, %u CTAs",
                        gemm_config_name(p.config), p.splits, static_cast<long long>(p.split_tiles),
                        p.grid);
        } else {
          std::snprintf(note, sizeof note, "%s, %d split(s), %u CTAs", gemm_config_name(p.config),
                        p.splits, p.grid);
        }
        b.note = note;
        b.run = [&, tuning](cudaStream_t st, int set) {
          gemm_fp8(ConstTensorRef(ops.fp8_a(set), DataType::uint8, s.m, s.k),
                   ConstTensorRef(ops.fp8_b(set), DataType::uint8, s.n, s.k),
                   TensorRef(ops.fp8_d(set), DataType::bfloat16, s.m, s.n), sc, st, tuning);
        };
        b.check = fp8_check(tuning.accumulation == GemmAccumulation::fast);
      } else if (c.impl == kFp16) {
        // cuBLAS FP16, the write-up's comparison
        if (!v.blas_why.empty()) {
          b.status = Status::unavailable(v.blas_why);
          return b;
        }
        b.note = v.blas_lib.path();
        b.out = ops.fp16_d(0);
        const int m = static_cast<int>(s.m), n = static_cast<int>(s.n), k = static_cast<int>(s.k);
        b.run = [&, m, n, k](cudaStream_t st, int set) {
          v.blas_set_stream(v.blas, st);
          const cublasStatus_t e = v.gemm_ex(
              v.blas, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &scale, ops.fp16_b(set), CUDA_R_16F, k,
              ops.fp16_a(set), CUDA_R_16F, k, &beta, ops.fp16_d(set), CUDA_R_16F, n,
              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
          if (e != CUBLAS_STATUS_SUCCESS) {
            throw Error("cublasGemmEx returned " + std::to_string(static_cast<int>(e)));
          }
        };
        b.check = [&, sampled] {
          double rel = 0;
          const std::uint64_t wrong = count_wrong(ops.fp16_a(0), ops.fp16_b(0), ops.fp16_d(0), s,
                                                  scale, false, e4m3, &rel);
          return sampled(wrong, rel);
        };
      } else if (c.impl == kSeed) {
        // the write-up's simple TMA GEMM, the floor
        b.note = "64 x 128 tile per CTA, 2 TMA stages";
        b.run = [&](cudaStream_t st, int set) {
          seed_gemm_fp8(ops.fp8_a(set), ops.fp8_b(set), ops.fp8_d(set), s.m, s.n, s.k, scale, st);
        };
        b.check = fp8_check(false);
      } else if (c.impl == kBytesFloor) {
        // the bytes alone: D must come out all zeros (its check)
        b.note = "no GEMM: a plain kernel reads A and B once and writes D once (zeros), one "
                 "16 KB chunk per block: the bytes that must move, moved alone";
        b.run = [&](cudaStream_t st, int set) {
          bytes_floor(ops.fp8_a(set), s.m * s.k, ops.fp8_b(set), s.n * s.k, ops.fp8_d(set),
                      d_bytes, floor_sink, st);
        };
        b.check = [&] {
          const std::uint64_t nonzero = count_nonzero_bytes(pd, d_bytes);
          return Verdict{nonzero == 0 ? "" : std::to_string(nonzero) + " bytes of D not zero", ""};
        };
      } else if (c.impl == kTensorFloor) {
        // the FLOPs alone: every CTA runs its share of k-blocks, its sums right (its check)
        const std::uint64_t flops = 2 * s.m * s.n * s.k;
        char note[200];
        std::snprintf(note, sizeof note,
                      "no GEMM: %llu k-blocks of m64n256k32 wgmmas (128 x 256 x 128 each) on "
                      "random operands kept in shared memory, one CTA per SM: the tensor cores' "
                      "time",
                      static_cast<unsigned long long>(tensor_floor_k_blocks(flops)));
        b.note = note;
        b.out = tensor_floor_sums;
        b.out_bytes = tensor_floor_buffer.bytes();
        const auto grid = static_cast<unsigned>(sms);
        const void* image = tensor_floor_operands.get();
        b.run = [=](cudaStream_t st, int) {
          tensor_floor(image, flops, grid, tensor_floor_sums, st);
        };
        b.check = [=] { return Verdict{check_tensor_floor(tensor_floor_sums, flops, grid), ""}; };
      } else {
        throw Error("no GEMM implementation is called " + c.impl);
      }
      return b;
    };
    runner.run(w, cases, bind, memory_bound(s) ? memcpy_gbps : 0.0, {sets, calls});
  }
  std::vector<Result>& rows = runner.results();
  out.insert(out.end(), std::make_move_iterator(rows.begin()), std::make_move_iterator(rows.end()));
  return out;
}

}  // namespace tmakit::bench
