// The CPU model against the hardware, byte for byte: real TMA loads into poisoned shared
// memory, stores and reduces into global memory, over a seeded random sweep of data type x
// rank x box x swizzle x element strides x OOB fill x coordinates (negative too) x shared
// buffer offset. Prints the first mismatches with their coordinates.
//
// Loads run twice with two poison bytes: a byte the copy writes reads the same both times, a
// byte it leaves alone reads the poison, so the written-mask is exact whatever the data.
// With TMAKIT_MODEL_DUMP_DIR set, the global bytes and every mismatching load (plus the first
// few) are written there as `tmakit simulate` input with the hardware's bytes beside it.
#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "model_sweep_common.hpp"
#include "tmakit/host/driver.hpp"
#include "tmakit/host/encode.hpp"
#include "tmakit/host/spec_json.hpp"
#include "tmakit/host/validate.hpp"
#include "tmakit/model/tma_model.hpp"
#include "tmakit/ptx/fence.hpp"
#include "tmakit/ptx/mbarrier.hpp"
#include "tmakit/ptx/tma.hpp"
#include "tmakit/swizzle.hpp"

namespace {

using namespace tmakit::testing;  // NOLINT: the shared sweep helpers

using tmakit::DataType;
using tmakit::Interleave;
using tmakit::Swizzle;
using tmakit::TensorMapSpec;
namespace model = tmakit::model;
namespace ptx = tmakit::ptx;

// --- sweep parameters (kept in the test so a failure can be replayed) ------------------------
constexpr std::uint64_t kSeed = 20261122;
constexpr int kLoadCases = 1500;
constexpr int kInterleaveCases = 300;
constexpr int kInterleaveStoreCases = 200;
constexpr int kStoreCases = 500;
constexpr int kReduceCases = 600;
constexpr int kDimZeroStrideCases = 100;
constexpr std::size_t kGlobalBytes = std::size_t{4} << 20;
constexpr std::uint32_t kMaxFootprintBytes = 48 * 1024;
constexpr std::uint32_t kDumpSlackBytes = 256;  // checked past the footprint: must stay untouched
constexpr std::uint8_t kPoisonA = 0x5A;
constexpr std::uint8_t kPoisonB = 0xA5;
constexpr int kThreads = 256;

// --- device side ---------------------------------------------------------------------------

struct LoadArgs {
  std::int32_t rank;
  std::int32_t c[5];
  std::uint32_t offset;      // buffer offset from a 1024-aligned shared address
  std::uint32_t dump_bytes;  // bytes copied out (footprint + slack)
  std::uint32_t tx_bytes;    // expected transaction bytes (O3)
  std::uint8_t poison;
};

// Aligned shared buffer: 1024-aligned start of the dynamic shared memory.
__device__ __forceinline__ std::uint8_t* aligned_smem(std::uint8_t* raw) {
  const std::uint32_t a = ptx::smem_u32(raw);
  return raw + (((a + 1023u) & ~1023u) - a);
}

template <int R>
__device__ __forceinline__ void issue_load(const CUtensorMap* map, const std::int32_t* c,
                                           std::uint32_t dst, std::uint32_t bar) {
  std::int32_t cc[R];
#pragma unroll
  for (int i = 0; i < R; ++i) cc[i] = c[i];
  ptx::cp_async_bulk_tensor_shared_global_tile<R>(dst, map, cc, bar);
}

__global__ void load_kernel(const __grid_constant__ CUtensorMap map, LoadArgs a,
                            std::uint8_t* out) {
  extern __shared__ std::uint8_t smem_raw[];
  __shared__ alignas(8) std::uint64_t bar_storage;
  std::uint8_t* buf = aligned_smem(smem_raw) + a.offset;
  const std::uint32_t bar = ptx::smem_u32(&bar_storage);

  // poison the buffer, init the barrier
  for (std::uint32_t i = threadIdx.x; i < a.dump_bytes; i += blockDim.x) buf[i] = a.poison;
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(bar, 1);
    ptx::fence_mbarrier_init_release_cluster();
  }
  // NOTE: the poison stores must be ordered before the async proxy's writes
  ptx::fence_proxy_async_shared_cta();
  __syncthreads();

  // one thread issues the copy
  if (threadIdx.x == 0) {
    ptx::mbarrier_arrive_expect_tx(bar, a.tx_bytes);
    const std::uint32_t dst = ptx::smem_u32(buf);
    switch (a.rank) {
      case 1: issue_load<1>(&map, a.c, dst, bar); break;
      case 2: issue_load<2>(&map, a.c, dst, bar); break;
      case 3: issue_load<3>(&map, a.c, dst, bar); break;
      case 4: issue_load<4>(&map, a.c, dst, bar); break;
      default: issue_load<5>(&map, a.c, dst, bar); break;
    }
  }

  // bounded wait: a wrong tx count reports a timeout instead of hanging (D5)
  bool done = false;
  const long long start = clock64();
  while (!done && clock64() - start < 200000000LL) done = ptx::mbarrier_try_wait_parity(bar, 0);
  if (threadIdx.x == 0) out[a.dump_bytes] = done ? 0 : 1;
  __syncthreads();
  for (std::uint32_t i = threadIdx.x; i < a.dump_bytes; i += blockDim.x) out[i] = buf[i];
}

struct StoreArgs {
  std::int32_t rank;
  std::int32_t c[5];
  std::uint32_t offset;
  std::uint32_t bytes;  // shared bytes filled from `src`
  std::int32_t op;      // -1 store, else model::ReduceOp
};

template <int R>
__device__ __forceinline__ void issue_store(const CUtensorMap* map, const std::int32_t* c,
                                            std::uint32_t src, int op) {
  std::int32_t cc[R];
#pragma unroll
  for (int i = 0; i < R; ++i) cc[i] = c[i];
  switch (op) {
    case -1: ptx::cp_async_bulk_tensor_global_shared_tile<R>(map, cc, src); break;
    case 0: ptx::cp_reduce_async_bulk_tensor_global_shared_add_tile<R>(map, cc, src); break;
    case 1: ptx::cp_reduce_async_bulk_tensor_global_shared_min_tile<R>(map, cc, src); break;
    case 2: ptx::cp_reduce_async_bulk_tensor_global_shared_max_tile<R>(map, cc, src); break;
    case 3: ptx::cp_reduce_async_bulk_tensor_global_shared_inc_tile<R>(map, cc, src); break;
    case 4: ptx::cp_reduce_async_bulk_tensor_global_shared_dec_tile<R>(map, cc, src); break;
    case 5: ptx::cp_reduce_async_bulk_tensor_global_shared_and_tile<R>(map, cc, src); break;
    case 6: ptx::cp_reduce_async_bulk_tensor_global_shared_or_tile<R>(map, cc, src); break;
    default: ptx::cp_reduce_async_bulk_tensor_global_shared_xor_tile<R>(map, cc, src); break;
  }
}

__global__ void store_kernel(const __grid_constant__ CUtensorMap map, StoreArgs a,
                             const std::uint8_t* src) {
  extern __shared__ std::uint8_t smem_raw[];
  std::uint8_t* buf = aligned_smem(smem_raw) + a.offset;
  for (std::uint32_t i = threadIdx.x; i < a.bytes; i += blockDim.x) buf[i] = src[i];
  // NOTE: every writing thread fences its shared stores before the async proxy reads them
  ptx::fence_proxy_async_shared_cta();
  __syncthreads();
  if (threadIdx.x == 0) {
    const std::uint32_t s = ptx::smem_u32(buf);
    switch (a.rank) {
      case 1: issue_store<1>(&map, a.c, s, a.op); break;
      case 2: issue_store<2>(&map, a.c, s, a.op); break;
      case 3: issue_store<3>(&map, a.c, s, a.op); break;
      case 4: issue_store<4>(&map, a.c, s, a.op); break;
      default: issue_store<5>(&map, a.c, s, a.op); break;
    }
    ptx::cp_async_bulk_commit_group();
    ptx::cp_async_bulk_wait_group<0>();
  }
}

// Layout probe: the load's buffer sits `front_bytes` into a poisoned region that fills the
// shared memory, so writes before it, past it or much larger than expected are all seen; the
// barrier is armed with far more bytes than any box, and once the copy has surely finished the
// bytes still missing are counted down one at a time, which measures what the copy delivered.
constexpr std::uint32_t kProbeRegionBytes = 224 * 1024;
constexpr std::uint32_t kProbeFrontBytes = 64 * 1024;
constexpr std::uint32_t kProbeArmedTx = 1u << 18;

struct ProbeArgs {
  std::int32_t rank;
  std::int32_t c[5];
  std::uint32_t offset;  // buffer offset past region + front_bytes (a 1024 multiple)
  std::uint8_t poison;
};

__global__ void probe_kernel(const __grid_constant__ CUtensorMap map, ProbeArgs a,
                             std::uint8_t* out, std::uint32_t* delivered) {
  extern __shared__ std::uint8_t smem_raw[];
  __shared__ alignas(8) std::uint64_t bar_storage;
  std::uint8_t* region = aligned_smem(smem_raw);
  const std::uint32_t bar = ptx::smem_u32(&bar_storage);
  for (std::uint32_t i = threadIdx.x; i < kProbeRegionBytes; i += blockDim.x) region[i] = a.poison;
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(bar, 1);
    ptx::fence_mbarrier_init_release_cluster();
  }
  ptx::fence_proxy_async_shared_cta();
  __syncthreads();
  if (threadIdx.x == 0) {
    ptx::mbarrier_arrive_expect_tx(bar, kProbeArmedTx);
    const std::uint32_t dst = ptx::smem_u32(region + kProbeFrontBytes + a.offset);
    switch (a.rank) {
      case 3: issue_load<3>(&map, a.c, dst, bar); break;
      case 4: issue_load<4>(&map, a.c, dst, bar); break;
      default: issue_load<5>(&map, a.c, dst, bar); break;
    }
    // wait ~2 ms (far longer than a box of a few KiB takes), then count down the rest
    const long long start = clock64();
    while (clock64() - start < 4000000LL) {
    }
    std::uint32_t missing = 0;
    while (missing < kProbeArmedTx && !ptx::mbarrier_test_wait_parity(bar, 0)) {
      ptx::mbarrier_complete_tx(bar, 1);
      ++missing;
    }
    *delivered = ptx::mbarrier_test_wait_parity(bar, 0) ? kProbeArmedTx - missing : 0xFFFFFFFFu;
  }
  __syncthreads();
  for (std::uint32_t i = threadIdx.x; i < kProbeRegionBytes; i += blockDim.x) out[i] = region[i];
}

// --- host helpers --------------------------------------------------------------------------




// Global buffer shared by every case: random bytes, on the device and on the host.
struct Global {
  std::vector<std::uint8_t> host;
  std::uint8_t* device = nullptr;
};

Global& global_buffer() {
  static Global g = [] {
    Global x;
    x.host.resize(kGlobalBytes);
    Rng rng(kSeed ^ 0x9E3779B97F4A7C15ull);
    for (auto& b : x.host) b = static_cast<std::uint8_t>(rng());
    if (cudaMalloc(&x.device, kGlobalBytes) != cudaSuccess ||
        cudaMemcpy(x.device, x.host.data(), kGlobalBytes, cudaMemcpyHostToDevice) != cudaSuccess) {
      x.device = nullptr;
    }
    return x;
  }();
  return g;
}

struct Case {
  TensorMapSpec spec;
  model::Coords coords{};
  std::uint32_t smem_offset = 0;
};


// One past the last byte of the tensor (offset from the global address).

struct SweepOptions {
  bool interleave = false;    // interleaved layouts (rank 3..5)
  bool dim0_stride = false;   // elementStrides[0] > 1 with no interleave (PTX: "must be 1")
  bool unit_strides = false;  // every elementStride 1
};

// TMAKIT_MODEL_SEED_OFFSET varies the seed to collect more cases (with TMAKIT_MODEL_TRACE=1,
// see model_sweep_common.hpp, each is named before it runs).
std::uint64_t seed_offset() {
  const char* v = std::getenv("TMAKIT_MODEL_SEED_OFFSET");
  return v != nullptr ? std::strtoull(v, nullptr, 10) * 1000 : 0;
}

// A random tiled case: boxes hang over every edge, dimension-0 coordinates stay on a 16-byte
// multiple (O1: anything else kills the kernel).
Case random_case(Rng& rng, const SweepOptions& o, std::uint64_t base) {
  for (;;) {
    Case c;
    TensorMapSpec& s = c.spec;
    s.data_type = static_cast<DataType>(uniform(rng, 0, tmakit::kDataTypeCount - 1));
    const int esize = element_bytes(s.data_type);
    s.rank = static_cast<std::uint32_t>(o.interleave ? uniform(rng, 3, 5) : uniform(rng, 1, 5));
    s.global_address = base;
    s.interleave = o.interleave ? (chance(rng, 0.5) ? Interleave::bytes16 : Interleave::bytes32)
                                : Interleave::none;
    s.swizzle = static_cast<Swizzle>(uniform(rng, 0, 3));
    // T10 pairs interleave 32B with swizzle 32B; the driver takes any swizzle (H2)
    if (s.interleave == Interleave::bytes32 && chance(rng, 0.5)) s.swizzle = Swizzle::bytes32;
    if (tmakit::is_floating(s.data_type) && chance(rng, 0.5)) {
      s.oob_fill = tmakit::OobFill::nan_request_zero_fma;
    }
    // dimension 0: box bytes a multiple of 16 within the span; with interleave boxDim[0] and
    // globalDim[0] count 16/32-byte slices (H12), boxDim[0] x elementSize still a multiple of
    // 16 (T7, the driver checks it in elements)
    if (o.interleave) {
      const int unit = std::max(1, 16 / esize);
      s.box_dim[0] = static_cast<std::uint32_t>(std::min(256, unit * uniform(rng, 1, 4)));
      s.global_dim[0] =
          static_cast<std::uint64_t>(uniform(rng, 1, 2 * static_cast<int>(s.box_dim[0]) + 4));
    } else {
      const int span = s.swizzle == Swizzle::none ? 256 : tmakit::swizzle_span_bytes(s.swizzle);
      const int bytes = 16 * uniform(rng, 1, span / 16);
      s.box_dim[0] = static_cast<std::uint32_t>(std::min(256, bytes / esize));
      s.global_dim[0] =
          static_cast<std::uint64_t>(uniform(rng, 1, 2 * static_cast<int>(s.box_dim[0]) + 8));
    }
    s.element_strides = {1, 1, 1, 1, 1};
    if (o.dim0_stride) s.element_strides[0] = static_cast<std::uint32_t>(uniform(rng, 2, 8));
    if (o.interleave && chance(rng, 0.25))
      s.element_strides[0] = static_cast<std::uint32_t>(uniform(rng, 2, 4));
    // outer dimensions: small boxes, strides, dims a little larger than the box's reach
    for (std::uint32_t d = 1; d < s.rank; ++d) {
      s.box_dim[d] =
          static_cast<std::uint32_t>(chance(rng, 0.8) ? uniform(rng, 1, 8) : uniform(rng, 9, 64));
      if (!o.unit_strides && chance(rng, 0.4))
        s.element_strides[d] = static_cast<std::uint32_t>(uniform(rng, 2, 8));
      const int reach = static_cast<int>(s.box_dim[d]);
      s.global_dim[d] = static_cast<std::uint64_t>(uniform(rng, 1, reach + 6));
    }
    const std::uint64_t align = s.interleave == Interleave::bytes32 ? 32 : 16;
    // NOTE: an interleaved tensor's dimension 0 spans globalDim[0] slices; strides that make
    // dimension 1 overlap it are legal too (the driver does not check nesting) and drawn
    const int dim0_unit = o.interleave && chance(rng, 0.7) ? tmakit::interleave_bytes(s.interleave)
                                                           : esize;
    std::uint64_t stride = round_up(s.global_dim[0] * dim0_unit, align);
    for (std::uint32_t d = 1; d < s.rank; ++d) {
      if (chance(rng, 0.3)) stride += align * static_cast<std::uint64_t>(uniform(rng, 1, 3));
      s.global_strides_bytes[d - 1] = stride;
      stride *= s.global_dim[d];
    }
    // keep the footprint in shared memory and the tensor in the buffer
    std::uint64_t fp_bytes = 0;
    try {
      fp_bytes = model::footprint(s).total_bytes;
    } catch (const model::ModelError&) {
      continue;
    }
    if (fp_bytes > kMaxFootprintBytes || tensor_extent(s) > kGlobalBytes) continue;
    // coordinates: anywhere from a box before the start to past the end
    for (std::uint32_t d = 1; d < s.rank; ++d) {
      const int reach = static_cast<int>(s.box_dim[d]);
      c.coords[d] = uniform(rng, -reach - 2, static_cast<int>(s.global_dim[d]) + 1);
    }
    const int unit = std::max(1, 16 / esize);  // elements per 16 bytes
    const int lo = -(static_cast<int>(s.box_dim[0]) + unit) / unit;
    const int hi = (static_cast<int>(s.global_dim[0]) + unit) / unit;
    c.coords[0] = o.interleave && chance(rng, 0.4) ? 0 : unit * uniform(rng, lo, hi);
    c.smem_offset = chance(rng, 0.35) ? 128u * static_cast<std::uint32_t>(uniform(rng, 1, 7)) : 0u;
    return c;
  }
}

std::string coords_text(const Case& c) {
  std::ostringstream os;
  os << '[';
  for (std::uint32_t d = 0; d < c.spec.rank; ++d) os << (d ? "," : "") << c.coords[d];
  os << ']';
  return os.str();
}

// Which element of the box the model puts at buffer byte `at`: "row r (coords ...) col k".
std::string where(const Case& c, std::uint32_t at) {
  const model::Footprint fp = model::footprint(c.spec);
  const std::uint32_t addr = c.smem_offset + at;
  const std::uint32_t logical = tmakit::swizzle_address(c.spec.swizzle, addr) - c.smem_offset;
  if (fp.pitch_bytes == 0) return "?";
  const std::uint32_t row = logical / fp.pitch_bytes;
  const std::uint32_t inrow = logical % fp.pitch_bytes;
  const int esize = element_bytes(c.spec.data_type);
  std::ostringstream os;
  os << "row " << row << " col " << inrow / esize << " byte " << inrow % esize << " (coords ";
  std::uint32_t r = row;
  os << "[" << c.coords[0] + static_cast<std::int64_t>(inrow / esize) * c.spec.element_strides[0];
  for (std::uint32_t d = 1; d < c.spec.rank; ++d) {
    const std::uint64_t n = tmakit::box_elements(c.spec, static_cast<int>(d));
    os << "," << c.coords[d] + static_cast<std::int64_t>(r % n) * c.spec.element_strides[d];
    r = static_cast<std::uint32_t>(r / n);
  }
  os << "])";
  if (inrow >= fp.row_bytes) os << " [past the row's data]";
  return os.str();
}


struct Dumper {
  std::string dir;
  std::ofstream lines;
  explicit Dumper(const std::string& name) {
    const char* d = std::getenv("TMAKIT_MODEL_DUMP_DIR");
    if (d == nullptr || *d == '\0') return;
    dir = d;
    lines.open(dir + "/" + name + ".jsonl");
    std::ofstream(dir + "/global.bin", std::ios::binary)
        .write(reinterpret_cast<const char*>(global_buffer().host.data()),
               static_cast<std::streamsize>(kGlobalBytes));
  }
  void write(const Case& c, const std::string& hw, const std::string& mod, bool mismatch) {
    if (!lines.is_open()) return;
    auto o = nlohmann::json::parse(tmakit::spec_to_json(c.spec));
    o["coords"] = std::vector<std::int32_t>(c.coords.begin(), c.coords.begin() + c.spec.rank);
    o["smemOffset"] = c.smem_offset;
    o["mismatch"] = mismatch;
    o["hw"] = hw;
    o["model"] = mod;
    lines << o.dump() << "\n";
  }
};

struct Tally {
  int run = 0, matched = 0, mismatched = 0, timeouts = 0, rule_rejected = 0, driver_refused = 0,
      model_refused = 0;
  std::string summary(const char* what) const {
    std::ostringstream os;
    os << what << ": " << run << " run, " << matched << " matched byte for byte, " << mismatched
       << " mismatched (" << timeouts << " barrier timeouts); skipped: " << rule_rejected
       << " broke a tmakit rule, " << driver_refused << " refused by the driver, " << model_refused
       << " refused by the model (would kill the kernel)";
    return os.str();
  }
};

// Encodes a case; false (and counted) when a rule or the driver refuses it.
bool encode_case(const Case& c, CUtensorMap* map, Tally& t) {
  if (tmakit::find_violation(c.spec)) {
    ++t.rule_rejected;
    return false;
  }
  if (tmakit::encode_unchecked(c.spec, map) != CUDA_SUCCESS) {
    ++t.driver_refused;
    return false;
  }
  return true;
}

void run_load_sweep(const char* name, int cases, const SweepOptions& o, std::uint64_t seed) {
  Global& g = global_buffer();
  ASSERT_NE(g.device, nullptr) << "cudaMalloc/cudaMemcpy of the global buffer failed";
  CK(cudaFuncSetAttribute(load_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          kMaxFootprintBytes + 2048 + kDumpSlackBytes));
  std::uint8_t* d_out = nullptr;
  CK(cudaMalloc(&d_out, kMaxFootprintBytes + kDumpSlackBytes + 1));
  std::vector<std::uint8_t> a(kMaxFootprintBytes + kDumpSlackBytes + 1);
  std::vector<std::uint8_t> b(a.size());
  Dumper dump(name);
  Rng rng(seed);
  Tally t;
  int printed = 0;
  int dumped_mismatches = 0;
  for (int i = 0; i < cases; ++i) {
    const Case c = random_case(rng, o, reinterpret_cast<std::uint64_t>(g.device));
    CUtensorMap map{};
    if (!encode_case(c, &map, t)) continue;
    ++t.run;
    // the model's answer
    model::SharedBytes want;
    try {
      want = model::load_tiled(c.spec, g.host, c.coords, c.smem_offset);
    } catch (const tmakit::Error& e) {
      ADD_FAILURE() << "model failed on " << tmakit::describe(c.spec) << ": " << e.what();
      continue;
    }
    if (trace()) {
      std::printf("[%s] case %d: %s coords %s smem offset %u\n", name, i,
                  tmakit::describe(c.spec).c_str(), coords_text(c).c_str(), c.smem_offset);
      std::fflush(stdout);
    }
    // the hardware's, twice with two poisons
    LoadArgs args{};
    args.rank = static_cast<std::int32_t>(c.spec.rank);
    for (int d = 0; d < 5; ++d) args.c[d] = c.coords[d];
    args.offset = c.smem_offset;
    args.dump_bytes = static_cast<std::uint32_t>(want.bytes.size()) + kDumpSlackBytes;
    args.tx_bytes = static_cast<std::uint32_t>(want.tx_bytes);
    const std::size_t smem = args.dump_bytes + args.offset + 1024;
    bool timeout = false;
    for (int pass = 0; pass < 2; ++pass) {
      args.poison = pass == 0 ? kPoisonA : kPoisonB;
      load_kernel<<<1, kThreads, smem>>>(map, args, d_out);
      CK(cudaGetLastError());
      CK(cudaDeviceSynchronize());
      auto& dst = pass == 0 ? a : b;
      CK(cudaMemcpy(dst.data(), d_out, args.dump_bytes + 1, cudaMemcpyDeviceToHost));
      timeout = timeout || dst[args.dump_bytes] != 0;
    }
    // compare: written where both passes agree, poison where they show the two poisons
    std::vector<std::uint8_t> hw_written(args.dump_bytes), hw_bytes(args.dump_bytes);
    std::vector<std::uint8_t> model_bytes(args.dump_bytes, 0), model_written(args.dump_bytes, 0);
    std::copy(want.bytes.begin(), want.bytes.end(), model_bytes.begin());
    std::copy(want.written.begin(), want.written.end(), model_written.begin());
    std::ostringstream detail;
    int bad = 0;
    for (std::uint32_t k = 0; k < args.dump_bytes; ++k) {
      hw_written[k] = a[k] == b[k];
      hw_bytes[k] = a[k];
      const bool ok =
          hw_written[k] == model_written[k] && (!hw_written[k] || hw_bytes[k] == model_bytes[k]);
      if (ok) continue;
      if (bad++ < 8) {
        detail << "\n    byte " << k << ": model " << (model_written[k] ? "" : "unwritten ")
               << static_cast<int>(model_bytes[k]) << ", hardware "
               << (hw_written[k] ? "" : "unwritten ") << static_cast<int>(hw_bytes[k]) << " -- "
               << where(c, k);
      }
    }
    const bool mismatch = bad > 0 || timeout;
    if (mismatch) {
      ++t.mismatched;
      t.timeouts += timeout ? 1 : 0;
      if (printed++ < 10) {
        std::printf("[%s] MISMATCH case %d: %s coords %s smem offset %u: %d bytes differ%s%s\n",
                    name, i, tmakit::describe(c.spec).c_str(), coords_text(c).c_str(),
                    c.smem_offset, bad, timeout ? " (barrier timeout)" : "", detail.str().c_str());
      }
    } else {
      ++t.matched;
    }
    // NOTE: dumps are capped so the files stay small enough to copy back from the GPU host
    if ((mismatch && dumped_mismatches++ < 40) || i < 20) {
      dump.write(c, hex_dump(hw_bytes, hw_written), hex_dump(model_bytes, model_written), mismatch);
    }
  }
  cudaFree(d_out);
  std::printf("%s\n", t.summary(name).c_str());
  EXPECT_EQ(t.mismatched, 0) << t.summary(name);
  EXPECT_GT(t.run, cases / 4) << "too few cases reached the hardware: " << t.summary(name);
}

// Random values for reduce operands: floating types get finite values in [-4, 4] so the
// comparison is about rounding, not NaN conventions.
void fill_values(Rng& rng, DataType t, std::uint8_t* p, std::size_t bytes) {
  const int esize = element_bytes(t);
  for (std::size_t i = 0; i + esize <= bytes; i += esize) {
    const float f = std::uniform_real_distribution<float>(-4.f, 4.f)(rng);
    std::uint32_t bits = 0;
    std::memcpy(&bits, &f, 4);
    if (t == DataType::float32 || t == DataType::float32_ftz) {
      std::memcpy(p + i, &bits, 4);
    } else if (t == DataType::bfloat16) {
      const std::uint16_t h = static_cast<std::uint16_t>(bits >> 16);
      std::memcpy(p + i, &h, 2);
    } else if (t == DataType::float16) {
      const __half h = __float2half_rn(f);
      std::memcpy(p + i, &h, 2);
    } else {
      for (int j = 0; j < esize; ++j) p[i + j] = static_cast<std::uint8_t>(rng());
      // inc/dec and min/max see small values as often as huge ones
      if (esize == 4 && chance(rng, 0.5)) {
        const std::uint32_t small = static_cast<std::uint32_t>(uniform(rng, 0, 20));
        std::memcpy(p + i, &small, 4);
      }
    }
  }
}

void run_store_sweep(const char* name, int cases, bool reduce, const SweepOptions& o,
                     std::uint64_t seed) {
  Global& g = global_buffer();
  ASSERT_NE(g.device, nullptr);
  CK(cudaFuncSetAttribute(store_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          kMaxFootprintBytes + 2048));
  std::uint8_t* d_src = nullptr;
  CK(cudaMalloc(&d_src, kMaxFootprintBytes));
  Rng rng(seed);
  Tally t;
  int printed = 0;
  std::vector<std::uint8_t> before, after;
  for (int i = 0; i < cases; ++i) {
    Case c = random_case(rng, o, reinterpret_cast<std::uint64_t>(g.device));
    // NOTE: a store or reduce starting at a negative coordinate kills the kernel (the model
    // refuses it); keep one case in ten so, and start the rest at 0 in that dimension.
    for (std::uint32_t d = 0; d < c.spec.rank; ++d) {
      if (c.coords[d] < 0 && !chance(rng, 0.1)) c.coords[d] = 0;
    }
    model::ReduceOp op = model::ReduceOp::add;
    if (reduce) {
      // a defined (op, type) pair
      for (;;) {
        op = static_cast<model::ReduceOp>(uniform(rng, 0, 7));
        if (model::reduce_unsupported_reason(op, c.spec.data_type).empty()) break;
        c.spec.data_type = static_cast<DataType>(uniform(rng, 0, tmakit::kDataTypeCount - 1));
      }
      // the data type changed: redo the box for its element size
      const int esize = element_bytes(c.spec.data_type);
      const int span =
          c.spec.swizzle == Swizzle::none ? 256 : tmakit::swizzle_span_bytes(c.spec.swizzle);
      c.spec.box_dim[0] =
          static_cast<std::uint32_t>(std::min(256, 16 * uniform(rng, 1, span / 16) / esize));
      c.spec.global_dim[0] = std::max<std::uint64_t>(1, c.spec.global_dim[0]);
      std::uint64_t stride = round_up(
          c.spec.global_dim[0] * (c.spec.interleave == Interleave::none
                                      ? esize
                                      : tmakit::interleave_bytes(c.spec.interleave)),
          c.spec.interleave == Interleave::bytes32 ? 32 : 16);
      for (std::uint32_t d = 1; d < c.spec.rank; ++d) {
        c.spec.global_strides_bytes[d - 1] = stride;
        stride *= c.spec.global_dim[d];
      }
      const int unit = std::max(1, 16 / esize);
      c.coords[0] = unit * (c.coords[0] / unit);
      if (!tmakit::is_floating(c.spec.data_type)) c.spec.oob_fill = tmakit::OobFill::zero;
      if (tensor_extent(c.spec) > kGlobalBytes) continue;
    }
    CUtensorMap map{};
    if (!encode_case(c, &map, t)) continue;
    std::uint32_t fp_bytes = 0;
    try {
      fp_bytes = model::footprint(c.spec).total_bytes;
    } catch (const model::ModelError&) {
      continue;
    }
    if (fp_bytes > kMaxFootprintBytes) continue;
    ++t.run;
    // NOTE: + 16: stores write the last row's dimension-0 chunk whole (past globalDim[0])
    const std::uint64_t extent = std::min<std::uint64_t>(tensor_extent(c.spec) + 16, kGlobalBytes);
    // shared source and global destination contents
    std::vector<std::uint8_t> src(fp_bytes);
    before.assign(g.host.begin(), g.host.begin() + static_cast<std::ptrdiff_t>(extent));
    if (reduce) {
      fill_values(rng, c.spec.data_type, src.data(), src.size());
      fill_values(rng, c.spec.data_type, before.data(), before.size());
    } else {
      for (auto& x : src) x = static_cast<std::uint8_t>(rng());
    }
    // the model's answer
    std::vector<std::uint8_t> want = before;
    try {
      if (reduce) {
        model::reduce_tiled(c.spec, op, want, src, c.coords, c.smem_offset);
      } else {
        model::store_tiled(c.spec, want, src, c.coords, c.smem_offset);
      }
    } catch (const model::ModelError&) {
      // NOTE: what the model refuses (a box wholly outside, a negative start) kills the kernel
      // on H200: never launched
      ++t.model_refused;
      --t.run;
      continue;
    }
    if (trace()) {
      std::printf("[%s] case %d: %s%s %s coords %s smem offset %u\n", name, i,
                  reduce ? "reduce " : "store", reduce ? std::string(model::name(op)).c_str() : "",
                  tmakit::describe(c.spec).c_str(), coords_text(c).c_str(), c.smem_offset);
      std::fflush(stdout);
    }
    CK(cudaMemcpy(d_src, src.data(), src.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(g.device, before.data(), extent, cudaMemcpyHostToDevice));
    StoreArgs args{};
    args.rank = static_cast<std::int32_t>(c.spec.rank);
    for (int d = 0; d < 5; ++d) args.c[d] = c.coords[d];
    args.offset = c.smem_offset;
    args.bytes = fp_bytes;
    args.op = reduce ? static_cast<std::int32_t>(op) : -1;
    store_kernel<<<1, kThreads, fp_bytes + c.smem_offset + 1024>>>(map, args, d_src);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    after.resize(extent);
    CK(cudaMemcpy(after.data(), g.device, extent, cudaMemcpyDeviceToHost));
    int bad = 0;
    std::ostringstream detail;
    for (std::uint64_t k = 0; k < extent; ++k) {
      if (want[k] == after[k]) continue;
      if (bad++ < 8) {
        detail << "\n    global byte " << k << ": before " << static_cast<int>(before[k])
               << ", model " << static_cast<int>(want[k]) << ", hardware "
               << static_cast<int>(after[k]);
      }
    }
    if (bad > 0) {
      ++t.mismatched;
      if (printed++ < 10) {
        std::printf("[%s] MISMATCH case %d: %s%s%s coords %s smem offset %u: %d bytes differ%s\n",
                    name, i, reduce ? "reduce " : "",
                    reduce ? std::string(model::name(op)).c_str() : "",
                    (" " + tmakit::describe(c.spec)).c_str(), coords_text(c).c_str(), c.smem_offset,
                    bad, detail.str().c_str());
      }
    } else {
      ++t.matched;
    }
  }
  // restore the shared global buffer for later tests
  CK(cudaMemcpy(g.device, g.host.data(), kGlobalBytes, cudaMemcpyHostToDevice));
  cudaFree(d_src);
  std::printf("%s\n", t.summary(name).c_str());
  EXPECT_EQ(t.mismatched, 0) << t.summary(name);
  EXPECT_GT(t.run, cases / 4) << t.summary(name);
}

// --- interleave layout probe ------------------------------------------------------------

// Global bytes for the probe: 32-bit word w holds 0x40000000 + w, so every aligned word a load
// delivers names its global offset (4 w); zero and NaN fill and the poisons read differently.
struct ProbeGlobal {
  std::vector<std::uint8_t> host;
  std::uint8_t* device = nullptr;
};
ProbeGlobal& probe_global() {
  static ProbeGlobal g = [] {
    ProbeGlobal x;
    x.host.resize(kGlobalBytes);
    for (std::size_t w = 0; w < kGlobalBytes / 4; ++w) {
      const std::uint32_t v = 0x40000000u + static_cast<std::uint32_t>(w);
      std::memcpy(x.host.data() + 4 * w, &v, 4);
    }
    if (cudaMalloc(&x.device, kGlobalBytes) != cudaSuccess ||
        cudaMemcpy(x.device, x.host.data(), kGlobalBytes, cudaMemcpyHostToDevice) != cudaSuccess) {
      x.device = nullptr;
    }
    return x;
  }();
  return g;
}

// A hand-picked interleaved case: dense nested strides (dimension 1 padded by `pad1` bytes).
Case probe_case(DataType t, Interleave il, Swizzle sw, std::vector<std::uint64_t> dims,
                std::vector<std::uint32_t> box, std::vector<std::int32_t> coords,
                std::vector<std::uint32_t> estrides = {}, std::uint32_t offset = 0,
                bool nan_fill = false, std::uint64_t pad1 = 0) {
  Case c;
  TensorMapSpec& s = c.spec;
  s.data_type = t;
  s.rank = static_cast<std::uint32_t>(dims.size());
  s.interleave = il;
  s.swizzle = sw;
  if (nan_fill) s.oob_fill = tmakit::OobFill::nan_request_zero_fma;
  const std::uint64_t align = il == Interleave::bytes32 ? 32 : 16;
  std::uint64_t stride = round_up(dims[0] * element_bytes(t), align) + pad1;
  for (std::uint32_t d = 0; d < s.rank; ++d) {
    s.global_dim[d] = dims[d];
    s.box_dim[d] = box[d];
    s.element_strides[d] = d < estrides.size() ? estrides[d] : 1;
    c.coords[d] = coords[d];
    if (d >= 1) {
      s.global_strides_bytes[d - 1] = stride;
      stride *= dims[d];
    }
  }
  c.smem_offset = offset;
  return c;
}

std::vector<std::pair<std::string, Case>> probe_cases(std::uint64_t base) {
  using D = DataType;
  using I = Interleave;
  using S = Swizzle;
  std::vector<std::pair<std::string, Case>> v;
  auto add = [&](const char* label, Case c) { v.emplace_back(label, c); };
  add("u8_i16_plain", probe_case(D::uint8, I::bytes16, S::none, {16, 4, 3}, {16, 2, 2}, {0, 0, 0}));
  add("u8_i16_whole", probe_case(D::uint8, I::bytes16, S::none, {16, 4, 3}, {16, 4, 3}, {0, 0, 0}));
  add("f32_i16_plain", probe_case(D::float32, I::bytes16, S::none, {4, 8, 4}, {4, 8, 2}, {0, 0, 0}));
  add("u8_i32_sw32", probe_case(D::uint8, I::bytes32, S::bytes32, {32, 4, 3}, {32, 2, 2}, {0, 0, 0}));
  add("u8_i32_plain", probe_case(D::uint8, I::bytes32, S::none, {32, 4, 3}, {32, 2, 2}, {0, 0, 0}));
  add("u8_i32_sw64", probe_case(D::uint8, I::bytes32, S::bytes64, {32, 4, 3}, {32, 2, 2}, {0, 0, 0}));
  add("u8_i32_sw128",
      probe_case(D::uint8, I::bytes32, S::bytes128, {32, 4, 3}, {32, 2, 2}, {0, 0, 0}));
  add("u8_i16_sw32", probe_case(D::uint8, I::bytes16, S::bytes32, {16, 8, 3}, {16, 8, 2}, {0, 0, 0}));
  add("u8_i16_sw64", probe_case(D::uint8, I::bytes16, S::bytes64, {16, 8, 3}, {16, 8, 2}, {0, 0, 0}));
  add("u8_i16_sw128",
      probe_case(D::uint8, I::bytes16, S::bytes128, {16, 8, 3}, {16, 8, 2}, {0, 0, 0}));
  add("u8_i32_sw32_box16",
      probe_case(D::uint8, I::bytes32, S::bytes32, {32, 4, 3}, {16, 2, 2}, {0, 0, 0}));
  add("u8_i16_dim64_c16",
      probe_case(D::uint8, I::bytes16, S::none, {64, 4, 3}, {16, 2, 2}, {16, 0, 0}));
  add("u8_i16_dim64_box32",
      probe_case(D::uint8, I::bytes16, S::none, {64, 4, 3}, {32, 2, 2}, {0, 0, 0}));
  add("f16_i16_es2_dim0",
      probe_case(D::float16, I::bytes16, S::none, {8, 4, 3}, {8, 2, 2}, {0, 0, 0}, {2, 1, 1}));
  add("f16_i16_es2_dim1",
      probe_case(D::float16, I::bytes16, S::none, {8, 4, 3}, {8, 2, 2}, {0, 0, 0}, {1, 2, 1}));
  add("f32_i16_oob_outer_nan", probe_case(D::float32, I::bytes16, S::none, {4, 4, 3}, {4, 4, 3},
                                          {0, -1, -1}, {}, 0, true));
  add("u8_i16_c16_past", probe_case(D::uint8, I::bytes16, S::none, {16, 4, 3}, {16, 2, 2},
                                    {16, 0, 0}));
  add("u8_i16_cneg16", probe_case(D::uint8, I::bytes16, S::none, {16, 4, 3}, {16, 2, 2},
                                  {-16, 0, 0}));
  add("u8_i16_dim12", probe_case(D::uint8, I::bytes16, S::none, {12, 4, 3}, {16, 2, 2}, {0, 0, 0}));
  add("u8_i32_sw32_case4",
      probe_case(D::uint8, I::bytes32, S::bytes32, {32, 1, 5}, {32, 2, 4}, {0, 0, 0}));
  add("u8_i32_sw32_off128",
      probe_case(D::uint8, I::bytes32, S::bytes32, {32, 4, 3}, {32, 2, 2}, {0, 0, 0}, {}, 128));
  add("u8_i16_sw128_off256", probe_case(D::uint8, I::bytes16, S::bytes128, {16, 8, 3}, {16, 8, 2},
                                        {0, 0, 0}, {}, 256));
  add("f16_i16_rank4",
      probe_case(D::float16, I::bytes16, S::none, {8, 3, 2, 2}, {8, 2, 2, 2}, {0, 0, 0, 0}));
  add("u16_i32_sw32_rank5", probe_case(D::uint16, I::bytes32, S::bytes32, {16, 2, 2, 2, 2},
                                       {16, 2, 2, 2, 2}, {0, 0, 0, 0, 0}));
  add("i64_i16_plain", probe_case(D::int64, I::bytes16, S::none, {2, 4, 3}, {2, 2, 2}, {0, 0, 0}));
  add("u8_i32_sw32_es2",
      probe_case(D::uint8, I::bytes32, S::bytes32, {32, 4, 3}, {32, 2, 2}, {0, 0, 0}, {2, 1, 1}));
  add("u8_i16_pad16", probe_case(D::uint8, I::bytes16, S::none, {16, 4, 3}, {16, 2, 2}, {0, 1, 1},
                                 {}, 0, false, 32));
  add("f32_i32_sw32_oob_hi",
      probe_case(D::float32, I::bytes32, S::bytes32, {8, 4, 3}, {8, 4, 2}, {0, 2, 1}));
  add("u8_i16_rows40", probe_case(D::uint8, I::bytes16, S::none, {16, 40, 2}, {16, 40, 1},
                                  {0, 0, 0}));
  add("u8_i16_es4_dim0",
      probe_case(D::uint8, I::bytes16, S::none, {16, 4, 3}, {16, 2, 2}, {0, 0, 0}, {4, 1, 1}));
  add("u8_i32_sw32_rows8",
      probe_case(D::uint8, I::bytes32, S::bytes32, {32, 8, 1}, {32, 8, 1}, {0, 0, 0}));
  add("u8_i16_sw32_rows16",
      probe_case(D::uint8, I::bytes16, S::bytes32, {16, 16, 1}, {16, 16, 1}, {0, 0, 0}));
  add("u8_i16_box1row",
      probe_case(D::uint8, I::bytes16, S::none, {16, 4, 3}, {16, 1, 1}, {0, 1, 1}));
  add("u8_i32_sw32_c32", probe_case(D::uint8, I::bytes32, S::bytes32, {64, 4, 3}, {32, 2, 2},
                                    {32, 0, 0}));
  add("f32_i16_es3_dim1",
      probe_case(D::float32, I::bytes16, S::none, {4, 8, 3}, {4, 7, 1}, {0, 0, 0}, {1, 3, 1}));
  for (auto& [label, c] : v) c.spec.global_address = base;
  // then the random interleaved cases the old probe drew (its fifth killed the kernel)
  SweepOptions o;
  o.interleave = true;
  Rng rng(kSeed + 1);
  for (int i = 0; i < 120; ++i) {
    v.emplace_back("random_" + std::to_string(i), random_case(rng, o, base));
  }
  return v;
}

// Runs each case into a poisoned 224 KiB region and writes, per case, one JSON line to
// $TMAKIT_MODEL_DUMP_DIR/interleave_probe.jsonl: the spec, the bytes delivered (tx) and the
// written bytes as hex from `lo` (offset from the buffer; negative is before it) with `..` for
// untouched bytes. TMAKIT_INTERLEAVE_FIRST skips to a case (after one killed the kernel).
TEST(ModelVsHardwareProbe, DISABLED_InterleaveLayout) {
  SKIP_WITHOUT_HOPPER();
  ProbeGlobal& g = probe_global();
  ASSERT_NE(g.device, nullptr);
  CK(cudaFuncSetAttribute(probe_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          kProbeRegionBytes + 1024));
  std::uint8_t* d_out = nullptr;
  std::uint32_t* d_tx = nullptr;
  CK(cudaMalloc(&d_out, kProbeRegionBytes));
  CK(cudaMalloc(&d_tx, 4));
  std::vector<std::uint8_t> a(kProbeRegionBytes), b(kProbeRegionBytes);
  const char* dir = std::getenv("TMAKIT_MODEL_DUMP_DIR");
  std::ofstream lines;
  if (dir != nullptr) lines.open(std::string(dir) + "/interleave_probe.jsonl", std::ios::app);
  const char* first_env = std::getenv("TMAKIT_INTERLEAVE_FIRST");
  const int first = first_env != nullptr ? std::atoi(first_env) : 0;
  const auto cases = probe_cases(reinterpret_cast<std::uint64_t>(g.device));
  for (int i = first; i < static_cast<int>(cases.size()); ++i) {
    const auto& [label, c] = cases[i];
    auto o = nlohmann::json::parse(tmakit::spec_to_json(c.spec));
    o["case"] = i;
    o["label"] = label;
    o["coords"] = std::vector<std::int32_t>(c.coords.begin(), c.coords.begin() + c.spec.rank);
    o["smemOffset"] = c.smem_offset;
    o["boxBytes"] = tmakit::box_bytes(c.spec);
    CUtensorMap map{};
    if (const auto v = tmakit::find_violation(c.spec)) o["rule"] = v->rule_id();
    const CUresult r = tmakit::encode_unchecked(c.spec, &map);
    if (r != CUDA_SUCCESS) {
      o["driver"] = static_cast<int>(r);
      std::printf("[probe] case %d %s: driver refused (%d)\n", i, label.c_str(), int(r));
    } else {
      std::printf("[probe] case %d %s: %s coords %s off %u\n", i, label.c_str(),
                  tmakit::describe(c.spec).c_str(), coords_text(c).c_str(), c.smem_offset);
      std::fflush(stdout);
      ProbeArgs args{};
      args.rank = static_cast<std::int32_t>(c.spec.rank);
      for (int d = 0; d < 5; ++d) args.c[d] = c.coords[d];
      args.offset = c.smem_offset;
      std::uint32_t tx[2] = {0, 0};
      for (int pass = 0; pass < 2; ++pass) {
        args.poison = pass == 0 ? kPoisonA : kPoisonB;
        probe_kernel<<<1, kThreads, kProbeRegionBytes + 1024>>>(map, args, d_out, d_tx);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy((pass == 0 ? a : b).data(), d_out, kProbeRegionBytes,
                      cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(&tx[pass], d_tx, 4, cudaMemcpyDeviceToHost));
      }
      std::int64_t lo = -1, hi = -1, n = 0;
      for (std::int64_t k = 0; k < kProbeRegionBytes; ++k) {
        if (a[k] != b[k]) continue;
        if (lo < 0) lo = k;
        hi = k + 1;
        ++n;
      }
      const std::int64_t origin = kProbeFrontBytes + c.smem_offset;
      o["tx"] = tx[0];
      o["txB"] = tx[1];
      o["written"] = n;
      if (n > 0) {
        std::vector<std::uint8_t> bytes(a.begin() + lo, a.begin() + hi);
        std::vector<std::uint8_t> mask(bytes.size());
        for (std::int64_t k = lo; k < hi; ++k) mask[k - lo] = a[k] == b[k];
        o["lo"] = lo - origin;
        o["hi"] = hi - origin;
        o["hex"] = hex_dump(bytes, mask);
      }
      std::printf("[probe]   tx %u/%u (box_bytes %llu), %lld bytes written in [%lld, %lld)\n",
                  tx[0], tx[1], static_cast<unsigned long long>(tmakit::box_bytes(c.spec)),
                  static_cast<long long>(n), static_cast<long long>(n ? lo - origin : 0),
                  static_cast<long long>(n ? hi - origin : 0));
    }
    if (lines.is_open()) lines << o.dump() << "\n" << std::flush;
  }
  std::printf("[probe] done\n");
  cudaFree(d_out);
  cudaFree(d_tx);
}

// --- O1: the dimension-0 coordinate on 16 bytes --------------------------------------------
// An INT32 tensor of 8 rows of 1024 elements, a 32 x 8 box at column x: a load (store = false)
// or a store of the box at (x, 0), in a child process (a killed kernel ends its process's CUDA
// context). Exit code 0 when the copy completed and moved the box at x itself (a load's rows
// in shared memory; a store's rows read back from the tensor, the rest untouched), 4 when it
// completed with other bytes, 3 with the CUDA error on stderr when it did not.
constexpr std::uint32_t kO1Cols = 1024, kO1Rows = 8, kO1BoxCols = 32;

TensorMapSpec o1_spec(std::uint64_t address) {
  TensorMapSpec s;
  s.data_type = DataType::int32;
  s.rank = 2;
  s.global_address = address;
  s.global_dim = {kO1Cols, kO1Rows, 1, 1, 1};
  s.global_strides_bytes = {kO1Cols * 4, 0, 0, 0};
  s.box_dim = {kO1BoxCols, kO1Rows, 1, 1, 1};
  return s;
}

[[noreturn]] void o1_copy_and_exit(int x, bool store) {
  std::string failed = "setup failed";
  int code = 3;
  const std::size_t bytes = std::size_t{kO1Cols} * kO1Rows * 4;
  std::vector<std::uint8_t> host(bytes);
  for (std::size_t i = 0; i < bytes; ++i) host[i] = static_cast<std::uint8_t>(i * 7 + (i >> 8));
  std::uint8_t *gdev = nullptr, *d_out = nullptr, *d_src = nullptr;
  const std::uint32_t box_bytes = kO1BoxCols * kO1Rows * 4;
  if (cudaMalloc(&gdev, bytes) == cudaSuccess &&
      cudaMemcpy(gdev, host.data(), bytes, cudaMemcpyHostToDevice) == cudaSuccess &&
      cudaMalloc(&d_out, box_bytes + kDumpSlackBytes + 1) == cudaSuccess &&
      cudaMalloc(&d_src, box_bytes) == cudaSuccess) {
    const TensorMapSpec s = o1_spec(reinterpret_cast<std::uint64_t>(gdev));
    CUtensorMap map{};
    std::vector<std::uint8_t> got, want;
    if (tmakit::encode_unchecked(s, &map) != CUDA_SUCCESS) {
      failed = "encode refused";
    } else if (!store) {
      LoadArgs a{};
      a.rank = 2;
      a.c[0] = x;
      a.dump_bytes = box_bytes + kDumpSlackBytes;
      a.tx_bytes = box_bytes;
      a.poison = kPoisonA;
      load_kernel<<<1, kThreads, a.dump_bytes + 1024>>>(map, a, d_out);
      got.resize(a.dump_bytes + 1);
      const cudaError_t e = cudaDeviceSynchronize();
      failed = e != cudaSuccess ? cudaGetErrorString(e) : "";
      if (failed.empty() &&
          cudaMemcpy(got.data(), d_out, got.size(), cudaMemcpyDeviceToHost) != cudaSuccess) {
        failed = "copy back failed";
      }
      if (failed.empty()) {
        got.resize(box_bytes);
        // (columns left of the tensor are filled with zeros)
        for (std::uint32_t r = 0; r < kO1Rows; ++r) {
          for (int col = x; col < x + static_cast<int>(kO1BoxCols); ++col) {
            for (int b = 0; b < 4; ++b) {
              want.push_back(col < 0 ? 0 : host[(std::size_t{r} * kO1Cols + col) * 4 + b]);
            }
          }
        }
      }
    } else {
      std::vector<std::uint8_t> src(box_bytes);
      for (std::uint32_t i = 0; i < box_bytes; ++i) src[i] = static_cast<std::uint8_t>(255 - i);
      StoreArgs a{};
      a.rank = 2;
      a.c[0] = x;
      a.bytes = box_bytes;
      a.op = -1;
      cudaError_t e = cudaMemcpy(d_src, src.data(), box_bytes, cudaMemcpyHostToDevice);
      if (e == cudaSuccess) {
        store_kernel<<<1, kThreads, box_bytes + 1024>>>(map, a, d_src);
        e = cudaDeviceSynchronize();
      }
      failed = e != cudaSuccess ? cudaGetErrorString(e) : "";
      got.resize(bytes);
      if (failed.empty() &&
          cudaMemcpy(got.data(), gdev, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) {
        failed = "copy back failed";
      }
      if (failed.empty()) {
        want = host;
        for (std::uint32_t r = 0; r < kO1Rows; ++r) {
          std::memcpy(want.data() + (std::size_t{r} * kO1Cols + x) * 4,
                      src.data() + std::size_t{r} * kO1BoxCols * 4, kO1BoxCols * 4);
        }
      }
    }
    if (failed.empty()) code = got == want ? 0 : 4;
  }
  std::fprintf(stderr, "o1 %s at x %d: %s\n", store ? "store" : "load", x,
               failed.empty() ? (code == 0 ? "ran, the box's bytes" : "ran, other bytes")
                              : failed.c_str());
  std::fflush(stderr);
  std::_Exit(code);
}

// O1 on the hardware: a copy whose dimension-0 coordinate times the element size is a multiple
// of 16 bytes moves the box; one that is not (INT32 at x = 290, 1160 bytes) kills the kernel
// ("illegal instruction"), load or store, with the box wholly inside the tensor. The model
// refuses exactly those.
TEST(ModelVsHardware, O1InnerCoordinateOn16Bytes) {
  SKIP_WITHOUT_HOPPER();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  for (const bool store : {false, true}) {
    for (const int x : {0, 4, 288, 992}) {
      EXPECT_EXIT(o1_copy_and_exit(x, store), ::testing::ExitedWithCode(0), "the box's bytes")
          << (store ? "store" : "load") << " at x " << x;
    }
    for (const int x : {1, 2, 3, 290, 991}) {
      EXPECT_EXIT(o1_copy_and_exit(x, store), ::testing::ExitedWithCode(3),
                  "illegal instruction")
          << (store ? "store" : "load") << " at x " << x;
    }
  }
  // left of the tensor (loads only: a store there is killed by its negative start, H5)
  EXPECT_EXIT(o1_copy_and_exit(-4, false), ::testing::ExitedWithCode(0), "the box's bytes");
  EXPECT_EXIT(o1_copy_and_exit(-1, false), ::testing::ExitedWithCode(3), "illegal instruction");
  // the model refuses exactly the copies killed
  const TensorMapSpec s = o1_spec(0);
  for (const int x : {0, 4, 288, 992, -4}) EXPECT_EQ(model::tiled_coords_refused_reason(s, {x}), "");
  for (const int x : {1, 2, 3, 290, 991, -1}) {
    EXPECT_NE(model::tiled_coords_refused_reason(s, {x}), "") << x;
  }
}

TEST(ModelVsHardware, TiledLoads) {
  SKIP_WITHOUT_HOPPER();
  run_load_sweep("tiled_loads", kLoadCases, SweepOptions{}, kSeed + seed_offset());
}

// NOTE: the PTX ISA says the dimension-0 traversal stride "must always be 1" without
// interleave, the driver's documentation that it is ignored; the model follows the hardware.
TEST(ModelVsHardware, DimZeroElementStrideIgnored) {
  SKIP_WITHOUT_HOPPER();
  SweepOptions o;
  o.dim0_stride = true;
  run_load_sweep("dim0_stride_loads", kDimZeroStrideCases, o, kSeed + 4 + seed_offset());
}

TEST(ModelVsHardware, StoresUnitStrides) {
  SKIP_WITHOUT_HOPPER();
  SweepOptions o;
  o.unit_strides = true;
  run_store_sweep("stores_unit", kStoreCases, false, o, kSeed + 2 + seed_offset());
}

TEST(ModelVsHardware, StoresElementStrides) {
  SKIP_WITHOUT_HOPPER();
  run_store_sweep("stores_strided", kStoreCases, false, SweepOptions{}, kSeed + 5 + seed_offset());
}

TEST(ModelVsHardware, ReducesUnitStrides) {
  SKIP_WITHOUT_HOPPER();
  SweepOptions o;
  o.unit_strides = true;
  run_store_sweep("reduces_unit", kReduceCases, true, o, kSeed + 3 + seed_offset());
}

TEST(ModelVsHardware, ReducesElementStrides) {
  SKIP_WITHOUT_HOPPER();
  run_store_sweep("reduces_strided", kReduceCases, true, SweepOptions{}, kSeed + 6 + seed_offset());
}

// Interleave 16B/32B (H12): dimension 0 in slices, dimension rank-2 not walked, dense rows.
// NOTE: the old probe of these loads ended in "illegal memory access": its buffer was sized
// from box_bytes() (elements), while the copy writes whole slices, up to 32x more.
TEST(ModelVsHardware, InterleavedLoads) {
  SKIP_WITHOUT_HOPPER();
  SweepOptions o;
  o.interleave = true;
  run_load_sweep("interleaved_loads", kInterleaveCases, o, kSeed + 1 + seed_offset());
}

TEST(ModelVsHardware, InterleavedStores) {
  SKIP_WITHOUT_HOPPER();
  SweepOptions o;
  o.interleave = true;
  run_store_sweep("interleaved_stores", kInterleaveStoreCases, false, o,
                  kSeed + 7 + seed_offset());
}

TEST(ModelVsHardware, InterleavedReduces) {
  SKIP_WITHOUT_HOPPER();
  SweepOptions o;
  o.interleave = true;
  run_store_sweep("interleaved_reduces", kInterleaveStoreCases, true, o,
                  kSeed + 8 + seed_offset());
}

}  // namespace
