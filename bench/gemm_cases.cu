// FP8 GEMM benchmark cases: tmakit, cuBLASLt FP8 and cuBLAS FP16 side by side in one run,
// each checked before it is timed (see gemm_cases.hpp).
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>

#include "gemm_cases.hpp"

#include "baselines.hpp"
#include "tmakit/core/cluster_launch.hpp"
#include "tmakit/core/cuda_check.hpp"
#include "tmakit/kernels/gemm.hpp"
#include "tmakit/ptx/grid_dependency.hpp"

namespace tmakit::bench {
namespace {

struct Shape {
  std::uint64_t m, n, k;
};

std::vector<Shape> shapes(const SuiteOptions& o) {
  std::vector<Shape> s;
  if (!o.gemm_shapes.empty()) {
    for (const auto& [m, n, k] : o.gemm_shapes) s.push_back({m, n, k});
    return s;
  }
  if (o.quick) return {{1, 4096, 4096}, {128, 4096, 4096}, {1024, 1024, 1024}};
  for (std::uint64_t m : {1, 16, 32, 64, 128, 256, 512, 1024, 4096}) s.push_back({m, 4096, 4096});
  s.push_back({8192, 8192, 8192});
  s.push_back({4096, 7168, 2048});
  s.push_back({128, 7168, 2048});
  s.push_back({128, 2112, 7168});
  // the projections of a Llama-3-70B layer (N x K: QKV, attention output, gate and up, down)
  // at a decode batch, a small prefill and a large one
  for (std::uint64_t m : {16, 128, 8192}) {
    for (const auto& [n, k] : {std::pair<std::uint64_t, std::uint64_t>{10240, 8192},
                               {8192, 8192}, {57344, 8192}, {8192, 28672}}) {
      s.push_back({m, n, k});
    }
  }
  return s;
}

std::string workload_id(const Shape& s) {
  return "gemm/fp8/m" + std::to_string(s.m) + "n" + std::to_string(s.n) + "k" +
         std::to_string(s.k);
}

// "-fast": fast accumulation (GemmAccumulation::fast; cuBLASLt's
// CUBLASLT_MATMUL_DESC_FAST_ACCUM), each mode compared with the other library's same mode
const char* kImpls[] = {"tmakit",      "cublaslt-fp8",      "cublas-fp16", "seed-tma",
                        "bytes-floor", "cublaslt-fp8-fast", "tmakit-fast"};
constexpr int kImplCount = 7;
constexpr int kFloorImpl = 4;  // "bytes-floor": memory-bound shapes only
constexpr int kLtFastImpl = 5;
constexpr int kFastImpl = 6;
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

// With --tune: "tmakit:c<config>" and "tmakit:c<config>:s<splits>" variants, each a forced
// GemmTuning (configurations that do not split K only with splits chosen).
std::vector<std::pair<std::string, GemmTuning>> tuned_variants(const SuiteOptions& o,
                                                               const Shape& s) {
  std::vector<std::pair<std::string, GemmTuning>> v;
  if (!o.tune) return v;
  // the chosen plan launched the ordinary way (no overlap with the kernel before it)
  GemmTuning serial;
  serial.overlap_launch = false;
  v.push_back({"tmakit:no-overlap", serial});
  for (int c = 0; c < kGemmConfigs; ++c) {
    const std::string name = gemm_config_name(c);
    if (name == "smallm") continue;  // its cluster sizes below
    if (name == "m128n256") {        // fast accumulation only
      GemmTuning fast{c, 0};
      fast.accumulation = GemmAccumulation::fast;
      v.push_back({"tmakit-fast:c" + std::to_string(c), fast});
      continue;
    }
    v.push_back({"tmakit:c" + std::to_string(c), {c, 0}});
  }
  const std::uint64_t k_blocks = (s.k + 127) / 128;
  if (s.m <= 128) {  // configuration 3, small M: clusters of 1, 2, 4, 8 along K
    for (int splits : {1, 2, 4, 8}) {
      if (static_cast<std::uint64_t>(splits) > k_blocks) continue;
      v.push_back({"tmakit:c3:s" + std::to_string(splits), {3, splits}});
    }
  }
  for (int splits : {1, 2, 8, 16}) {
    if (static_cast<std::uint64_t>(splits) > k_blocks) continue;
    v.push_back({"tmakit:c1:s" + std::to_string(splits), {1, splits}});
  }
  if (s.m <= 256) {  // the 64-row tiles (configurations 0 and 5) with few splits
    for (int splits : {1, 2, 3, 4}) {
      if (static_cast<std::uint64_t>(splits) > k_blocks) continue;
      for (int c : {0, 5}) {
        v.push_back({"tmakit:c" + std::to_string(c) + ":s" + std::to_string(splits), {c, splits}});
      }
    }
  }
  return v;
}

bool selected(const SuiteOptions& o, const std::string& id) {
  return filter_selects(o.filter, id);
}
// An implementation of a workload runs when the filter selects either of its rows.
bool case_selected(const SuiteOptions& o, const std::string& workload, const std::string& impl) {
  return selected(o, workload + "/" + impl) || selected(o, workload + "/stream/" + impl);
}

// ---- device data and checks ------------------------------------------------------------

__device__ __host__ inline float e4m3_value(std::uint8_t bits) {
  const int e = (bits >> 3) & 0xF;
  const int m = bits & 7;
  const float mag = e == 0 ? ldexpf(static_cast<float>(m) / 8.0f, -6)
                           : ldexpf(1.0f + static_cast<float>(m) / 8.0f, e - 7);
  return (bits & 0x80) ? -mag : mag;
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
  r.status = "ok";
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
  r.status = "ok";
  r.gbps = static_cast<double>(r.bytes) / (r.timing.median_ms * 1e-3) * 1e-9;
  r.note = "cudaMemcpyAsync of 512 MiB device to device: the ceiling of the 'x memcpy' column "
           "for shapes with M or N <= 128";
  return r;
}

__global__ void fill_e4m3_kernel(std::uint8_t* out, __half* twin, std::uint64_t n,
                                 std::uint64_t seed) {
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x) {
    const std::uint32_t h = hash32(i * 0x9E3779B97F4A7C15ull + seed);
    // exponent 1..8 (|v| in [2^-6, 4)), any mantissa, any sign
    const std::uint8_t bits = static_cast<std::uint8_t>(((h & 1) << 7) | ((1 + (h >> 1) % 8) << 3) |
                                                        ((h >> 8) & 7));
    out[i] = bits;
    if (twin != nullptr) twin[i] = __float2half(e4m3_value(bits));
  }
}

// Sampled elements of D against a double dot product; counts those off by more than bf16
// rounding plus `slack` x sum |a b| (the accumulation's error), and adds each sample's
// squared error and squared reference value into sums[0], sums[1].
template <class In, class Out>
__global__ void check_kernel(const In* a, const In* b, const Out* d, std::uint64_t m,
                             std::uint64_t n, std::uint64_t k, float scale, double slack,
                             int samples, unsigned long long* wrong, double* sums) {
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
      x = e4m3_value(a[i * k + q]);
      y = e4m3_value(b[j * k + q]);
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

// The accumulation slack of the check: 2^-11 of sum |a b| with promotion; with fast
// accumulation 2^-13 per 32 of K, at least that (the GPU tests' bound, tests/gpu/test_gemm.cu).
double accumulation_slack(bool fast, std::uint64_t k) {
  return fast ? std::max(1.0 / 2048, std::ldexp(static_cast<double>((k + 31) / 32), -13))
              : 1.0 / 2048;
}

// The wrong elements of 2048 samples, and their relative Frobenius error (|D - ref| / |ref|
// over the samples) in `rel_error`.
template <class In, class Out>
std::uint64_t count_wrong(const In* a, const In* b, const Out* d, const Shape& s, float scale,
                          bool fast, double* rel_error) {
  ErrorCounter c;
  const int samples = 2048;
  DeviceBuffer sums(2 * sizeof(double));
  TMAKIT_CUDA_CHECK(cudaMemset(sums.get(), 0, sums.bytes()));
  check_kernel<In, Out><<<samples / 128, 128>>>(a, b, d, s.m, s.n, s.k, scale,
                                                accumulation_slack(fast, s.k), samples,
                                                c.reset(nullptr),
                                                static_cast<double*>(sums.get()));
  const std::uint64_t wrong = c.read(nullptr);
  double h[2] = {0, 0};
  TMAKIT_CUDA_CHECK(cudaMemcpy(h, sums.get(), sizeof h, cudaMemcpyDeviceToHost));
  *rel_error = h[1] > 0 ? std::sqrt(h[0] / h[1]) : std::sqrt(h[0]);
  return wrong;
}

// ---- vendor libraries through dlopen ----------------------------------------------------

void* open_library(const char* env, const char* soname, std::string& path, std::string& why) {
  std::vector<std::string> c;
  if (const char* e = std::getenv(env); e != nullptr && *e != '\0') c.emplace_back(e);
  c.emplace_back(soname);
  c.push_back(std::string("/usr/local/cuda/lib64/") + soname);
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const char* root : {"/opt/torch/.venv/lib", "/usr/local/lib", "/usr/lib"}) {
    if (!fs::is_directory(root, ec)) continue;
    for (const auto& py : fs::directory_iterator(root, ec)) {
      if (py.path().filename().string().rfind("python3", 0) != 0) continue;
      for (const char* dir : {"cu13", "cublas"}) {
        const fs::path p = py.path() / "site-packages" / "nvidia" / dir / "lib" / soname;
        if (fs::exists(p, ec)) c.push_back(p.string());
      }
    }
  }
  for (const auto& p : c) {
    if (void* h = dlopen(p.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
      path = p;
      return h;
    }
    if (why.size() < 300) why += (why.empty() ? "" : "; ") + std::string(dlerror());
  }
  return nullptr;
}

template <class F>
bool bind(void* h, const char* name, F& fn, std::string& why) {
  fn = reinterpret_cast<F>(dlsym(h, name));
  if (fn == nullptr) why = std::string("symbol ") + name + " missing";
  return fn != nullptr;
}

struct Vendor {
  std::string lt_why, blas_why, lt_path, blas_path;
  void* lt_lib = nullptr;
  void* blas_lib = nullptr;
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
    std::string miss;
    lt_lib = open_library("TMAKIT_CUBLASLT_LIBRARY", "libcublasLt.so.13", lt_path, lt_why);
    if (lt_lib == nullptr) {
      lt_lib = open_library("TMAKIT_CUBLASLT_LIBRARY", "libcublasLt.so.12", lt_path, lt_why);
    }
    if (lt_lib == nullptr) {
      lt_why = "baseline unavailable: libcublasLt not found (" + lt_why + ")";
    } else if (!bind(lt_lib, "cublasLtCreate", lt_create, miss) ||
               !bind(lt_lib, "cublasLtMatmulDescCreate", desc_create, miss) ||
               !bind(lt_lib, "cublasLtMatmulDescDestroy", desc_destroy, miss) ||
               !bind(lt_lib, "cublasLtMatmulDescSetAttribute", desc_set, miss) ||
               !bind(lt_lib, "cublasLtMatrixLayoutCreate", layout_create, miss) ||
               !bind(lt_lib, "cublasLtMatrixLayoutDestroy", layout_destroy, miss) ||
               !bind(lt_lib, "cublasLtMatmulPreferenceCreate", pref_create, miss) ||
               !bind(lt_lib, "cublasLtMatmulPreferenceDestroy", pref_destroy, miss) ||
               !bind(lt_lib, "cublasLtMatmulPreferenceSetAttribute", pref_set, miss) ||
               !bind(lt_lib, "cublasLtMatmulAlgoGetHeuristic", heuristic, miss) ||
               !bind(lt_lib, "cublasLtMatmul", matmul, miss)) {
      lt_why = "baseline unavailable: " + lt_path + ": " + miss;
    } else if (lt_create(&lt) != CUBLAS_STATUS_SUCCESS) {
      lt_why = "baseline unavailable: cublasLtCreate failed";
    } else {
      lt_why.clear();
    }
    blas_lib = open_library("TMAKIT_CUBLAS_LIBRARY", "libcublas.so.13", blas_path, blas_why);
    if (blas_lib == nullptr) {
      blas_lib = open_library("TMAKIT_CUBLAS_LIBRARY", "libcublas.so.12", blas_path, blas_why);
    }
    miss.clear();
    if (blas_lib == nullptr) {
      blas_why = "baseline unavailable: libcublas not found (" + blas_why + ")";
    } else if (!bind(blas_lib, "cublasCreate_v2", blas_create, miss) ||
               !bind(blas_lib, "cublasSetStream_v2", blas_set_stream, miss) ||
               !bind(blas_lib, "cublasGemmEx", gemm_ex, miss)) {
      blas_why = "baseline unavailable: " + blas_path + ": " + miss;
    } else if (blas_create(&blas) != CUBLAS_STATUS_SUCCESS) {
      blas_why = "baseline unavailable: cublasCreate failed";
    } else {
      blas_why.clear();
    }
  }
};

// One cuBLASLt FP8 plan: row-major D (M x N) = A (M x K) * B^T is column-major
// D^T (N x M) = op(B)^T... i.e. the TN form FP8 requires: "A" = our B transposed (K x N, ld K),
// "B" = our A (K x M, ld K), D column-major N x M (ld N).
struct LtPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  cublasLtMatmulAlgo_t algo{};
  cublasLtMatmulAlgo_t candidates[8]{};  // the heuristic's answers, best first
  int candidate_count = 0;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 32u << 20;
  std::string error;
};

std::string make_lt_plan(Vendor& v, LtPlan& p, const Shape& s, const float* d_scale_a,
                         const float* d_scale_b, bool fast) {
  if (v.desc_create(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS) {
    return "baseline unavailable: cublasLtMatmulDescCreate failed";
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
  if (bad != 0) {
    return "baseline unavailable: cuBLASLt descriptor setup failed (mask " +
           std::to_string(bad) + ")";
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
    return "baseline unavailable: cuBLASLt has no FP8 algorithm for this shape (status " +
           std::to_string(static_cast<int>(st)) + ")";
  }
  for (int i = 0; i < found; ++i) p.candidates[i] = results[i].algo;
  p.candidate_count = found;
  p.algo = results[0].algo;
  TMAKIT_CUDA_CHECK(cudaMalloc(&p.workspace, p.workspace_bytes));
  return "";
}

void free_lt_plan(Vendor& v, LtPlan& p) {
  if (p.la) v.layout_destroy(p.la);
  if (p.lb) v.layout_destroy(p.lb);
  if (p.ld) v.layout_destroy(p.ld);
  if (p.desc) v.desc_destroy(p.desc);
  if (p.workspace) cudaFree(p.workspace);
}

Vendor& vendor() {
  static Vendor v;
  return v;
}

void finish(Result& r, const Shape& s, double flops_note) {
  (void)flops_note;
  if (!r.ok()) return;
  const double sec = r.timing.median_ms * 1e-3;
  r.gbps = static_cast<double>(r.bytes) / sec * 1e-9;
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.1f TFLOP/s",
                2.0 * static_cast<double>(s.m) * s.n * s.k / sec * 1e-12);
  r.note = buf + (r.note.empty() ? std::string() : "; " + r.note);
}

}  // namespace

std::vector<std::string> list_gemm_cases(const SuiteOptions& options) {
  std::vector<std::string> ids;
  for (const Shape& s : shapes(options)) {
    std::vector<std::string> impls(std::begin(kImpls), std::end(kImpls));
    if (!memory_bound(s)) impls.erase(impls.begin() + kFloorImpl);
    for (const auto& variant : tuned_variants(options, s)) impls.push_back(variant.first);
    // each implementation is timed call by call and as a stream of calls
    for (const char* mode : {"/", "/stream/"}) {
      for (const std::string& impl : impls) {
        if (case_selected(options, workload_id(s), impl)) ids.push_back(workload_id(s) + mode + impl);
      }
    }
  }
  // the empty kernel, the host overhead and the memcpy ceiling run whenever any GEMM case
  // does, or when the filter names them alone (e.g. --filter host-overhead)
  if (!ids.empty() || selected(options, kFloorId) || selected(options, "gemm/host-overhead") ||
      selected(options, kMemcpyId)) {
    ids.insert(ids.begin(), {kFloorId, "gemm/host-overhead", kMemcpyId});
  }
  return ids;
}

std::vector<Result> run_gemm_cases(const SuiteOptions& options) {
  std::vector<Result> out;
  cudaStream_t stream = nullptr;
  TMAKIT_CUDA_CHECK(cudaStreamCreate(&stream));
  // destroyed on every way out, an exception's included
  const std::unique_ptr<CUstream_st, decltype(&cudaStreamDestroy)> stream_owner(
      stream, cudaStreamDestroy);
  Timer timer(options.timing, stream);
  double memcpy_gbps = 0;  // the device's copy rate: the ceiling of memory-bound shapes
  int device = 0;
  int l2 = 0;
  TMAKIT_CUDA_CHECK(cudaGetDevice(&device));
  TMAKIT_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  const auto l2_bytes = static_cast<std::size_t>(l2);
  if (!list_gemm_cases(options).empty()) {
    Result floor;
    floor.id = kFloorId;
    floor.workload = "gemm";
    floor.impl = "empty-kernel";
    floor.kind = "ceiling";
    floor.timing = timer.time([](cudaStream_t st) {
      empty_kernel<<<1, 32, 0, st>>>();
      TMAKIT_CUDA_CHECK(cudaGetLastError());
    });
    floor.status = "ok";
    floor.note = "an empty kernel timed the same way: the floor under every time below";
    out.push_back(floor);
    out.push_back(host_overhead(stream));
    out.push_back(memcpy_ceiling(timer, stream));
    memcpy_gbps = out.back().gbps;
  }
  Vendor& v = vendor();
  // device: scale_a, scale_b (cuBLASLt reads them from there)
  // NOTE: each scale on its own 16 bytes, in case cuBLASLt wants aligned scale pointers
  const DeviceBuffer scale_buffer(8 * sizeof(float));
  auto* const scales = static_cast<float*>(scale_buffer.get());
  const GemmScales sc{0.75f, 1.5f, 0.5f};
  const DeviceBuffer floor_sink_buffer(sizeof(unsigned));  // bytes_floor's never-taken branch
  auto* const floor_sink = static_cast<unsigned*>(floor_sink_buffer.get());  // writes here
  TMAKIT_CUDA_CHECK(cudaMemcpy(scales, &sc.scale_a, sizeof(float), cudaMemcpyHostToDevice));
  TMAKIT_CUDA_CHECK(cudaMemcpy(scales + 4, &sc.scale_b, sizeof(float), cudaMemcpyHostToDevice));
  const float scale = sc.alpha * sc.scale_a * sc.scale_b;

  for (const Shape& s : shapes(options)) {
    const std::string w = workload_id(s);
    bool want[kImplCount];
    bool any = false;
    for (int i = 0; i < kImplCount; ++i) any |= want[i] = case_selected(options, w, kImpls[i]);
    if (!memory_bound(s)) want[kFloorImpl] = false;
    for (const auto& variant : tuned_variants(options, s)) {
      any |= case_selected(options, w, variant.first);
    }
    if (!any) continue;
    if (options.progress) *options.progress << w << "\n";
    const bool fp16 = want[2] && v.blas_why.empty();
    const std::uint64_t fp8_bytes = s.m * s.k + s.n * s.k + s.m * s.n * 2;
    // operand sets for the stream timing: together at least twice the L2 (set 0 is the one
    // checked and timed call by call; the others are copies of it)
    const int sets = stream_sets(fp8_bytes, l2_bytes);
    const int calls = sets * ((kStreamCalls + sets - 1) / sets);
    Operands ops(s, sets, fp16);
    fill_e4m3_kernel<<<1024, 256, 0, stream>>>(static_cast<std::uint8_t*>(ops.a[0]->get()),
                                               fp16 ? static_cast<__half*>(ops.a16[0]->get()) : nullptr,
                                               s.m * s.k, 1);
    fill_e4m3_kernel<<<1024, 256, 0, stream>>>(static_cast<std::uint8_t*>(ops.b[0]->get()),
                                               fp16 ? static_cast<__half*>(ops.b16[0]->get()) : nullptr,
                                               s.n * s.k, 2);
    TMAKIT_CUDA_CHECK(cudaGetLastError());
    ops.copy_set0(stream);
    TMAKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
    const auto* pa = ops.fp8_a(0);
    const auto* pb = ops.fp8_b(0);
    auto* pd = ops.fp8_d(0);

    Result rt, rl, rh, rs, rf, rlf, rtf;
    Result* const rows[kImplCount] = {&rt, &rl, &rh, &rs, &rf, &rlf, &rtf};
    for (int i = 0; i < kImplCount; ++i) {
      Result& r = *rows[i];
      r.workload = w;
      r.impl = kImpls[i];
      r.id = w + "/" + kImpls[i];
      r.kind = i == 0 || i == kFastImpl ? "tmakit"
               : i == 3                 ? "seed"
               : i == kFloorImpl        ? "ceiling"
                                        : "vendor";
      r.bytes = i == 2 ? 2 * (s.m * s.k + s.n * s.k + s.m * s.n) : fp8_bytes;
      r.flops = 2 * s.m * s.n * s.k;
    }
    // Every implementation is checked first: D poisoned, `first` run once, 2048 sampled
    // elements of D compared (the status says what went wrong; `first` may differ from `run`:
    // cuBLASLt picks its algorithm there). Those that pass are then timed together, in
    // rounds (Timer::time_interleaved), so that the ratios between them do not carry clock or
    // thermal drift from one implementation's runs to the next.
    // `run` takes the operand set (0 for the check and the call-by-call timing).
    using Run = Timer::SetCall;
    std::vector<Result*> timed;
    std::vector<Run> runs;
    auto check = [&](Result& r, void* out, const std::function<void(cudaStream_t)>& first,
                     const Run& run, const std::function<std::uint64_t()>& wrong) {
      try {
        poison(out, s.m * s.n * 2, stream);
        first(stream);
        TMAKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
        const std::uint64_t n_wrong = wrong();
        if (n_wrong != 0) {
          r.status = "FAILED: " + std::to_string(n_wrong) + " of 2048 sampled elements wrong";
        } else {
          r.status = "ok";
          timed.push_back(&r);
          runs.push_back(run);
        }
      } catch (const Error& e) {
        r.status = std::string("error: ") + e.what();
      }
    };
    // the check of an FP8 row, which also records its sampled relative error by impl
    std::map<std::string, double> rel_errors;
    auto fp8_wrong = [&](const std::string& impl, bool fast) {
      return [&, impl, fast] {
        double rel = 0;
        const std::uint64_t wrong = count_wrong(pa, pb, pd, s, scale, fast, &rel);
        rel_errors[impl] = rel;
        return wrong;
      };
    };

    // cuBLASLt FP8, promoted and with fast accumulation (the plans live until the timing is
    // done)
    LtPlan plans[2];
    const float beta = 0.0f;
    for (const bool fast : {false, true}) {
      Result& rl_mode = fast ? rlf : rl;
      LtPlan& plan = plans[fast ? 1 : 0];
      if (!want[fast ? kLtFastImpl : 1]) continue;
      if (!v.lt_why.empty()) {
        rl_mode.status = v.lt_why;
      } else {
        rl_mode.status = make_lt_plan(v, plan, s, scales, scales + 4, fast);
        if (rl_mode.status.empty()) {
          auto run = [&](cudaStream_t st, int set) {
            const cublasStatus_t e =
                v.matmul(v.lt, plan.desc, &sc.alpha, ops.fp8_b(set), plan.la, ops.fp8_a(set),
                         plan.lb, &beta, ops.fp8_d(set), plan.ld, ops.fp8_d(set), plan.ld,
                         &plan.algo, plan.workspace, plan.workspace_bytes, st);
            if (e != CUBLAS_STATUS_SUCCESS) {
              throw Error("cublasLtMatmul returned " + std::to_string(static_cast<int>(e)));
            }
          };
          // NOTE: the first algorithm the heuristic offers is not always accepted by
          // cublasLtMatmul; take the first that runs, and say which failed
          auto first = [&](cudaStream_t st) {
            std::string refused;
            for (int c = 0; c < plan.candidate_count; ++c) {
              plan.algo = plan.candidates[c];
              const cublasStatus_t e = v.matmul(v.lt, plan.desc, &sc.alpha, pb, plan.la, pa,
                                                plan.lb, &beta, pd, plan.ld, pd, plan.ld,
                                                &plan.algo, plan.workspace, plan.workspace_bytes,
                                                st);
              if (e == CUBLAS_STATUS_SUCCESS) return;
              refused += (refused.empty() ? "" : ",") + std::to_string(static_cast<int>(e));
            }
            throw Error("cublasLtMatmul refused all " + std::to_string(plan.candidate_count) +
                        " heuristic algorithms (statuses " + refused + ")");
          };
          check(rl_mode, pd, first, run, fp8_wrong(rl_mode.impl, fast));
        }
      }
    }
    // tmakit: the chosen plan, then (with --tune) forced configurations and splits
    const ConstTensorRef ra(pa, DataType::uint8, s.m, s.k);
    const ConstTensorRef rb(pb, DataType::uint8, s.n, s.k);
    const TensorRef rd(pd, DataType::bfloat16, s.m, s.n);
    std::vector<std::pair<Result, GemmTuning>> tmakit_runs;  // rt, rtf, the variants, in order
    if (want[0]) tmakit_runs.emplace_back(rt, GemmTuning{});
    if (want[kFastImpl]) {
      GemmTuning fast;
      fast.accumulation = GemmAccumulation::fast;
      tmakit_runs.emplace_back(rtf, fast);
    }
    for (const auto& [name, tuning] : tuned_variants(options, s)) {
      const std::string id = w + "/" + name;
      if (!case_selected(options, w, name)) continue;
      Result r = rt;
      r.impl = name;
      r.id = id;
      tmakit_runs.emplace_back(r, tuning);
    }
    for (auto& [r, tuning] : tmakit_runs) {
      auto run = [&ops, &s, &sc, tuning = tuning](cudaStream_t st, int set) {
        gemm_fp8(ConstTensorRef(ops.fp8_a(set), DataType::uint8, s.m, s.k),
                 ConstTensorRef(ops.fp8_b(set), DataType::uint8, s.n, s.k),
                 TensorRef(ops.fp8_d(set), DataType::bfloat16, s.m, s.n), sc, st, tuning);
      };
      check(r, pd, [&run](cudaStream_t st) { run(st, 0); }, run,
            fp8_wrong(r.impl, tuning.accumulation == GemmAccumulation::fast));
    }
    // cuBLAS FP16, the write-up's comparison
    const __half* ha = fp16 ? ops.fp16_a(0) : nullptr;
    const __half* hb = fp16 ? ops.fp16_b(0) : nullptr;
    __half* hd = fp16 ? ops.fp16_d(0) : nullptr;
    if (want[2]) {
      if (!v.blas_why.empty()) {
        rh.status = v.blas_why;
      } else {
        const int m = static_cast<int>(s.m), n = static_cast<int>(s.n), k = static_cast<int>(s.k);
        auto run = [&, m, n, k](cudaStream_t st, int set) {
          v.blas_set_stream(v.blas, st);
          const cublasStatus_t e = v.gemm_ex(
              v.blas, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &scale, ops.fp16_b(set), CUDA_R_16F, k,
              ops.fp16_a(set), CUDA_R_16F, k, &beta, ops.fp16_d(set), CUDA_R_16F, n,
              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
          if (e != CUBLAS_STATUS_SUCCESS) {
            throw Error("cublasGemmEx returned " + std::to_string(static_cast<int>(e)));
          }
        };
        check(rh, hd, [&run](cudaStream_t st) { run(st, 0); }, run, [&] {
          double rel = 0;
          const std::uint64_t wrong = count_wrong(ha, hb, hd, s, scale, false, &rel);
          rel_errors[rh.impl] = rel;
          return wrong;
        });
      }
    }
    // the write-up's simple TMA GEMM, the floor
    if (want[3]) {
      auto run = [&](cudaStream_t st, int set) {
        seed_gemm_fp8(ops.fp8_a(set), ops.fp8_b(set), ops.fp8_d(set), s.m, s.n, s.k, scale, st);
      };
      check(rs, pd, [&run](cudaStream_t st) { run(st, 0); }, run, fp8_wrong(rs.impl, false));
    }
    // the bytes alone: D must come out all zeros (its check)
    if (want[kFloorImpl]) {
      auto run = [&](cudaStream_t st, int set) {
        bytes_floor(ops.fp8_a(set), s.m * s.k, ops.fp8_b(set), s.n * s.k, ops.fp8_d(set),
                    s.m * s.n * 2, floor_sink, st);
      };
      check(rf, pd, [&run](cudaStream_t st) { run(st, 0); }, run,
            [&] { return count_nonzero_bytes(pd, s.m * s.n * 2); });
    }

    // time every checked implementation together: call by call, then as streams of calls
    // (the same implementations, rows under the workload's "/stream" twin)
    std::vector<Result> streamed;
    for (Result* r : timed) {
      Result t = *r;
      t.workload = w + "/stream";
      t.id = t.workload + "/" + r->impl;
      streamed.push_back(t);
    }
    try {
      std::vector<std::function<void(cudaStream_t)>> single;
      for (const Run& run : runs) single.push_back([run](cudaStream_t st) { run(st, 0); });
      const std::vector<Timing> t = timer.time_interleaved(single);
      for (std::size_t i = 0; i < timed.size(); ++i) timed[i]->timing = t[i];
    } catch (const Error& e) {
      for (Result* r : timed) r->status = std::string("error while timing: ") + e.what();
    }
    try {
      const std::vector<Timer::StreamTiming> st = timer.time_streams_interleaved(runs, sets, calls);
      for (std::size_t i = 0; i < streamed.size(); ++i) {
        if (st[i].error.empty()) {
          streamed[i].timing = st[i].per_call;
        } else {
          streamed[i].status = "error while capturing: " + st[i].error;
        }
      }
    } catch (const Error& e) {
      for (Result& r : streamed) r.status = std::string("error while timing: ") + e.what();
    }
    const double mem_gbps = memory_bound(s) ? memcpy_gbps : 0.0;
    for (Result* r : timed) r->memcpy_gbps = mem_gbps;
    for (Result& r : streamed) r.memcpy_gbps = mem_gbps;
    if (v.lt_why.empty()) {
      for (LtPlan& plan : plans) free_lt_plan(v, plan);
    }

    // notes, in the order of the table: cuBLASLt, tmakit (with its ratio to cuBLASLt), the
    // variants, cuBLAS FP16, the floor; then the same for the stream rows
    int sms = 0;
    TMAKIT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    // `lt`: the cuBLASLt row of the same accumulation mode (tmakit rows only)
    auto annotate = [&](Result& r, const Result* lt) {
      if (r.ok()) {
        if (r.impl == "cublaslt-fp8") {
          r.note = v.lt_path;
        } else if (r.impl == "cublaslt-fp8-fast") {
          r.note = "CUBLASLT_MATMUL_DESC_FAST_ACCUM; " + v.lt_path;
        } else if (r.impl == "cublas-fp16") {
          r.note = v.blas_path;
        } else if (r.impl == "seed-tma") {
          r.note = "64 x 128 tile per CTA, 2 TMA stages";
        } else if (r.impl == "bytes-floor") {
          r.note = "no GEMM: a plain kernel reads A and B once and writes D once (zeros), one "
                   "16 KB chunk per block: the bytes that must move, moved alone";
        } else {
          for (const auto& [tr, tuning] : tmakit_runs) {
            if (tr.impl != r.impl) continue;
            const GemmPlan p = gemm_fp8_plan(s.m, s.n, s.k, sms, tuning);
            char buf[160];
            std::snprintf(buf, sizeof buf, "%s, %d split(s), %u CTAs", gemm_config_name(p.config),
                          p.splits, p.grid);
            r.note = buf;
            if (lt != nullptr && lt->ok()) {
              std::snprintf(buf, sizeof buf, "; %.2fx %s",
                            lt->timing.median_ms / r.timing.median_ms, lt->impl.c_str());
              r.note += buf;
            }
          }
        }
        if (const auto e = rel_errors.find(r.impl); e != rel_errors.end()) {
          char buf[80];
          std::snprintf(buf, sizeof buf, "; rel. error %.2e (2048 sampled elements)", e->second);
          r.note += buf;
        }
      }
      finish(r, s, 0);
    };
    const auto is_fast = [](const GemmTuning& t) {
      return t.accumulation == GemmAccumulation::fast;
    };
    for (const int i : {1, kLtFastImpl}) {
      if (!want[i]) continue;
      annotate(*rows[i], nullptr);
      out.push_back(*rows[i]);
    }
    for (auto& [r, tuning] : tmakit_runs) {
      annotate(r, is_fast(tuning) ? &rlf : &rl);
      out.push_back(r);
    }
    if (want[2]) {
      annotate(rh, nullptr);
      out.push_back(rh);
    }
    if (want[3]) {
      annotate(rs, nullptr);
      out.push_back(rs);
    }
    if (want[kFloorImpl]) {
      annotate(rf, nullptr);
      out.push_back(rf);
    }
    const Result* stream_lt[2] = {nullptr, nullptr};  // promoted, fast
    for (const Result& r : streamed) {
      if (r.impl == kImpls[1]) stream_lt[0] = &r;
      if (r.impl == kImpls[kLtFastImpl]) stream_lt[1] = &r;
    }
    for (Result& r : streamed) {
      const Result* lt = nullptr;
      for (const auto& [tr, tuning] : tmakit_runs) {
        if (tr.impl == r.impl) lt = stream_lt[is_fast(tuning) ? 1 : 0];
      }
      annotate(r, lt);
      char buf[96];
      std::snprintf(buf, sizeof buf, "; graph of %d calls over %d operand sets", calls, sets);
      if (r.ok()) r.note += buf;
      out.push_back(r);
    }
  }
  return out;
}

}  // namespace tmakit::bench
