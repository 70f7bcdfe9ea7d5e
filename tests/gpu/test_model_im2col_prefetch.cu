// The CPU model against the hardware, byte for byte, for the TMA forms no other GPU test
// covers: cp.async.bulk.prefetch.tensor + prefetch.tensormap followed by a load of the same
// box, the .L2::cache_hint load forms, .multicast::cluster loads in a cluster of 2, and im2col
// loads (ranks 3-5; a pixel coordinate outside the pixel box kills the kernel, H10, so the
// sweeps keep inside it and a death test checks the rule; bisect probes at the end).
//
// Every load runs twice into shared memory poisoned with two different bytes: a byte the copy
// writes reads the same both times, a byte it leaves alone reads the poison, so the
// written-mask is exact whatever the data. Waits are bounded (a wrong transaction count
// reports a timeout instead of hanging); dimension-0 coordinates stay on 16-byte multiples
// (O1: anything else kills the kernel).
//
// Im2col mismatches are printed with the pixel each shared-memory row came from (decoded from
// the random global bytes), for the hardware and for the model. With TMAKIT_IM2COL_DUMP_DIR
// set, mismatching (and the first few) im2col loads are written there as JSON lines with the
// hardware's bytes; TMAKIT_IM2COL_REPLAY=<that file> replays them against the model on a
// machine without a GPU (test Im2colReplay.FromDump).
#include <cuda.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "model_sweep_common.hpp"
#include "tmakit/core/cluster_launch.hpp"
#include "tmakit/host/driver.hpp"
#include "tmakit/host/encode.hpp"
#include "tmakit/host/spec_json.hpp"
#include "tmakit/host/validate.hpp"
#include "tmakit/model/tma_model.hpp"
#include "tmakit/ptx/cluster.hpp"
#include "tmakit/ptx/fence.hpp"
#include "tmakit/ptx/mbarrier.hpp"
#include "tmakit/ptx/tma.hpp"
#include "tmakit/swizzle.hpp"

namespace {

using namespace tmakit::testing;  // NOLINT: the shared sweep helpers

using tmakit::ClusterLaunch;
using tmakit::DataType;
using tmakit::EncodeKind;
using tmakit::Swizzle;
using tmakit::TensorMapSpec;
namespace model = tmakit::model;
namespace ptx = tmakit::ptx;

// --- sweep parameters (kept in the test so a failure can be replayed) ------------------------
constexpr std::uint64_t kSeed = 20261123;
constexpr int kIm2colCases = 1200;
constexpr int kIm2colEdgeCases = 400;
constexpr int kPrefetchCases = 300;
constexpr int kHintCases = 200;
constexpr int kMulticastCases = 200;
constexpr std::size_t kGlobalBytes = std::size_t{4} << 20;
constexpr std::uint32_t kMaxFootprintBytes = 48 * 1024;
constexpr std::uint32_t kDumpSlackBytes = 256;  // checked past the footprint: must stay untouched
constexpr std::uint8_t kPoisonA = 0x5A;
constexpr std::uint8_t kPoisonB = 0xA5;
constexpr int kThreads = 256;
constexpr long long kWaitCycles = 20000000LL;  // ~10 ms: then the load is reported as timed out

// --- device side ---------------------------------------------------------------------------

struct LoadArgs {
  std::int32_t rank;
  std::int32_t c[5];
  std::uint16_t off[3];      // im2col offsets
  std::int32_t im2col;       // 1: im2col load, else tile
  std::int32_t prefetch;     // 1: prefetch.tensormap + cp.async.bulk.prefetch.tensor first
  std::int32_t hint;         // 1: the .L2::cache_hint form
  std::int32_t policy;       // 0 evict_first, 1 evict_last, 2 evict_normal
  std::uint32_t offset;      // buffer offset from a 1024-aligned shared address
  std::uint32_t dump_bytes;  // bytes copied out (footprint + slack)
  std::uint32_t tx_bytes;    // expected transaction bytes (O3)
  std::uint8_t poison;
  // multicast only
  std::uint32_t mask;    // ctaMask
  std::uint32_t issuer;  // the CTA rank that issues
};

__device__ __forceinline__ std::uint8_t* aligned_smem(std::uint8_t* raw) {
  const std::uint32_t a = ptx::smem_u32(raw);
  return raw + (((a + 1023u) & ~1023u) - a);
}

__device__ __forceinline__ std::uint64_t make_policy(int p) {
  if (p == 0) return ptx::createpolicy_fractional_l2_evict_first();
  if (p == 1) return ptx::createpolicy_fractional_l2_evict_last();
  return ptx::createpolicy_fractional_l2_evict_normal();
}

template <int R>
__device__ __forceinline__ void issue(const CUtensorMap* map, const LoadArgs& a,
                                      std::uint32_t dst, std::uint32_t bar) {
  std::int32_t cc[R];
#pragma unroll
  for (int i = 0; i < R; ++i) cc[i] = a.c[i];
  if constexpr (R >= 3) {
    if (a.im2col) {
      std::uint16_t off[R - 2];
#pragma unroll
      for (int i = 0; i < R - 2; ++i) off[i] = a.off[i];
      if (a.prefetch) {
        ptx::prefetch_tensormap(map);
        ptx::cp_async_bulk_prefetch_tensor_im2col(map, cc, off);
      }
      if (a.hint) {
        ptx::cp_async_bulk_tensor_shared_global_im2col_hint(dst, map, cc, bar, off,
                                                            make_policy(a.policy));
      } else {
        ptx::cp_async_bulk_tensor_shared_global_im2col(dst, map, cc, bar, off);
      }
      return;
    }
  }
  if (a.prefetch) {
    ptx::prefetch_tensormap(map);
    ptx::cp_async_bulk_prefetch_tensor_tile(map, cc);
  }
  if (a.hint) {
    ptx::cp_async_bulk_tensor_shared_global_tile_hint(dst, map, cc, bar, make_policy(a.policy));
  } else {
    ptx::cp_async_bulk_tensor_shared_global_tile(dst, map, cc, bar);
  }
}

__device__ __forceinline__ bool bounded_wait(std::uint32_t bar) {
  bool done = false;
  const long long start = clock64();
  while (!done && clock64() - start < kWaitCycles) done = ptx::mbarrier_try_wait_parity(bar, 0);
  return done;
}

__global__ void load_kernel(const __grid_constant__ CUtensorMap map, LoadArgs a,
                            std::uint8_t* out) {
  extern __shared__ std::uint8_t smem_raw[];
  __shared__ alignas(8) std::uint64_t bar_storage;
  std::uint8_t* buf = aligned_smem(smem_raw) + a.offset;
  const std::uint32_t bar = ptx::smem_u32(&bar_storage);
  for (std::uint32_t i = threadIdx.x; i < a.dump_bytes; i += blockDim.x) buf[i] = a.poison;
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(bar, 1);
    ptx::fence_mbarrier_init_release_cluster();
  }
  // NOTE: the poison stores must be ordered before the async proxy's writes
  ptx::fence_proxy_async_shared_cta();
  __syncthreads();
  if (threadIdx.x == 0) {
    ptx::mbarrier_arrive_expect_tx(bar, a.tx_bytes);
    const std::uint32_t dst = ptx::smem_u32(buf);
    switch (a.rank) {
      case 1: issue<1>(&map, a, dst, bar); break;
      case 2: issue<2>(&map, a, dst, bar); break;
      case 3: issue<3>(&map, a, dst, bar); break;
      case 4: issue<4>(&map, a, dst, bar); break;
      default: issue<5>(&map, a, dst, bar); break;
    }
  }
  const bool done = bounded_wait(bar);
  if (threadIdx.x == 0) out[a.dump_bytes] = done ? 0 : 1;
  __syncthreads();
  for (std::uint32_t i = threadIdx.x; i < a.dump_bytes; i += blockDim.x) out[i] = buf[i];
}

template <int R>
__device__ __forceinline__ void issue_multicast(const CUtensorMap* map, const LoadArgs& a,
                                                std::uint32_t dst, std::uint32_t bar) {
  std::int32_t cc[R];
#pragma unroll
  for (int i = 0; i < R; ++i) cc[i] = a.c[i];
  const auto mask = static_cast<std::uint16_t>(a.mask);
  if (a.hint) {
    ptx::cp_async_bulk_tensor_shared_global_tile_multicast_hint(dst, map, cc, bar, mask,
                                                                make_policy(a.policy));
  } else {
    ptx::cp_async_bulk_tensor_shared_global_tile_multicast(dst, map, cc, bar, mask);
  }
}

__device__ __forceinline__ void cluster_sync() {
  ptx::barrier_cluster_arrive_release();
  ptx::barrier_cluster_wait_acquire();
}

// A cluster of 2 CTAs: CTA `issuer` multicasts the box to the CTAs of `mask`; each CTA dumps
// its own buffer to out + rank * (dump_bytes + 1).
__global__ void multicast_kernel(const __grid_constant__ CUtensorMap map, LoadArgs a,
                                 std::uint8_t* out) {
  extern __shared__ std::uint8_t smem_raw[];
  __shared__ alignas(8) std::uint64_t bar_storage;
  std::uint8_t* buf = aligned_smem(smem_raw) + a.offset;
  const std::uint32_t bar = ptx::smem_u32(&bar_storage);
  const std::uint32_t rank = ptx::cluster_ctarank();
  const bool receiver = ((a.mask >> rank) & 1u) != 0;
  for (std::uint32_t i = threadIdx.x; i < a.dump_bytes; i += blockDim.x) buf[i] = a.poison;
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(bar, 1);
    ptx::fence_mbarrier_init_release_cluster();
  }
  ptx::fence_proxy_async_shared_cta();
  __syncthreads();
  // every CTA's barrier initialised before any CTA can multicast into it
  cluster_sync();
  if (threadIdx.x == 0 && receiver) ptx::mbarrier_arrive_expect_tx(bar, a.tx_bytes);
  // every receiver armed before the issuer issues
  cluster_sync();
  if (threadIdx.x == 0 && rank == a.issuer) {
    const std::uint32_t dst = ptx::smem_u32(buf);
    switch (a.rank) {
      case 1: issue_multicast<1>(&map, a, dst, bar); break;
      case 2: issue_multicast<2>(&map, a, dst, bar); break;
      case 3: issue_multicast<3>(&map, a, dst, bar); break;
      case 4: issue_multicast<4>(&map, a, dst, bar); break;
      default: issue_multicast<5>(&map, a, dst, bar); break;
    }
  }
  const bool done = receiver ? bounded_wait(bar) : true;
  std::uint8_t* o = out + rank * (a.dump_bytes + 1);
  if (threadIdx.x == 0) o[a.dump_bytes] = done ? 0 : 1;
  // non-receivers: give a stray write (there should be none) time to land before dumping
  cluster_sync();
  for (std::uint32_t i = threadIdx.x; i < a.dump_bytes; i += blockDim.x) o[i] = buf[i];
  // no CTA leaves while the cluster may still address its shared memory
  cluster_sync();
}

// --- host helpers --------------------------------------------------------------------------




// The random global bytes every case reads; the same on every machine (replay needs no GPU).
const std::vector<std::uint8_t>& host_global() {
  static const std::vector<std::uint8_t> g = [] {
    std::vector<std::uint8_t> v(kGlobalBytes);
    Rng rng(kSeed ^ 0x9E3779B97F4A7C15ull);
    for (auto& b : v) b = static_cast<std::uint8_t>(rng());
    return v;
  }();
  return g;
}

std::uint8_t* device_global() {
  static std::uint8_t* d = [] {
    std::uint8_t* p = nullptr;
    const auto& h = host_global();
    if (cudaMalloc(&p, kGlobalBytes) != cudaSuccess ||
        cudaMemcpy(p, h.data(), kGlobalBytes, cudaMemcpyHostToDevice) != cudaSuccess) {
      return static_cast<std::uint8_t*>(nullptr);
    }
    return p;
  }();
  return d;
}



struct Case {
  TensorMapSpec spec;
  model::Coords coords{};
  std::array<std::uint16_t, 3> offsets{};
  std::uint32_t smem_offset = 0;
};

std::string coords_text(const Case& c) {
  std::ostringstream os;
  os << '[';
  for (std::uint32_t d = 0; d < c.spec.rank; ++d) os << (d ? "," : "") << c.coords[d];
  os << ']';
  if (c.spec.kind == EncodeKind::im2col) {
    os << " offsets [";
    for (std::uint32_t i = 0; i + 2 < c.spec.rank; ++i) os << (i ? "," : "") << c.offsets[i];
    os << ']';
  }
  return os.str();
}

// Strides of dimensions 1.. : rows padded to 16 bytes, sometimes more.
void set_strides(Rng& rng, TensorMapSpec& s) {
  const int esize = element_bytes(s.data_type);
  std::uint64_t stride = round_up(s.global_dim[0] * esize, 16);
  for (std::uint32_t d = 1; d < s.rank; ++d) {
    if (chance(rng, 0.3)) stride += 16 * static_cast<std::uint64_t>(uniform(rng, 1, 3));
    s.global_strides_bytes[d - 1] = stride;
    stride *= s.global_dim[d];
  }
}

// The pixel box of spatial dimension i (dimension 1 + i): lower corner .. dim - 1 + upper.
int pixel_lo(const TensorMapSpec& s, std::uint32_t i) { return s.pixel_box_lower_corner[i]; }
int pixel_hi(const TensorMapSpec& s, std::uint32_t i) {
  return static_cast<int>(s.global_dim[1 + i]) - 1 + s.pixel_box_upper_corner[i];
}

// A random im2col case: pixel coordinates inside the pixel box (H10), often at its ends,
// traversal strides, offsets 0..3. `edge`: also negative channel coordinates, images outside
// 0..N-1, offsets up to 7.
// `plain`: unit traversal strides, pixels inside the pixel box, images in 0..N-1, offsets 0,
// channel coordinate inside the tensor.
// `as_recorded`: pixel coordinates as the first sweeps drew them, around the box (some kill
// the kernel: for the bisect probes only).
Case random_im2col_case(Rng& rng, bool edge, std::uint64_t base, bool plain = false,
                        bool as_recorded = false) {
  for (;;) {
    Case c;
    TensorMapSpec& s = c.spec;
    s.kind = EncodeKind::im2col;
    s.data_type = static_cast<DataType>(uniform(rng, 0, tmakit::kDataTypeCount - 1));
    const int esize = element_bytes(s.data_type);
    s.rank = static_cast<std::uint32_t>(uniform(rng, 3, 5));
    s.global_address = base;
    s.swizzle = static_cast<Swizzle>(uniform(rng, 0, 3));
    if (tmakit::is_floating(s.data_type) && chance(rng, 0.5)) {
      s.oob_fill = tmakit::OobFill::nan_request_zero_fma;
    }
    // channels: rows of whole 16-byte chunks that fit the swizzle span (X3, T9)
    const int span = s.swizzle == Swizzle::none ? 256 : tmakit::swizzle_span_bytes(s.swizzle);
    const int row_bytes = 16 * uniform(rng, 1, span / 16);
    s.channels_per_pixel = static_cast<std::uint32_t>(std::min(256, row_bytes / esize));
    s.global_dim[0] = static_cast<std::uint64_t>(
        uniform(rng, 1, 2 * static_cast<int>(s.channels_per_pixel) + 8));
    const std::uint32_t spatial = s.rank - 2;
    for (std::uint32_t i = 0; i < spatial; ++i) {
      s.global_dim[1 + i] = static_cast<std::uint64_t>(uniform(rng, 1, 10));
      s.pixel_box_lower_corner[i] = uniform(rng, -3, 2);
      s.pixel_box_upper_corner[i] = uniform(rng, -4, 3);
      if (!plain && chance(rng, 0.35))
        s.element_strides[1 + i] = static_cast<std::uint32_t>(uniform(rng, 2, 4));
    }
    s.global_dim[s.rank - 1] = static_cast<std::uint64_t>(uniform(rng, 1, 4));
    if (!plain && chance(rng, 0.15))
      s.element_strides[s.rank - 1] = static_cast<std::uint32_t>(uniform(rng, 2, 3));
    s.pixels_per_column = static_cast<std::uint32_t>(chance(rng, 0.8) ? uniform(rng, 1, 64)
                                                                      : uniform(rng, 65, 256));
    set_strides(rng, s);
    std::uint32_t fp_bytes = 0;
    try {
      fp_bytes = model::footprint(s).total_bytes;
    } catch (const model::ModelError&) {
      continue;
    }
    if (fp_bytes > kMaxFootprintBytes || tensor_extent(s) > kGlobalBytes) continue;
    // coordinates: channel on a 16-byte multiple (O1), pixels around the pixel box
    const int unit = std::max(1, 16 / esize);
    const int cmax = (static_cast<int>(s.global_dim[0]) + unit) / unit;
    c.coords[0] = unit * (edge && chance(rng, 0.4) ? uniform(rng, -2, -1) : uniform(rng, 0, cmax));
    for (std::uint32_t i = 0; i < spatial; ++i) {
      const int lo = s.pixel_box_lower_corner[i];
      const int hi = static_cast<int>(s.global_dim[1 + i]) - 1 + s.pixel_box_upper_corner[i];
      // H10: a pixel coordinate outside the pixel box kills the kernel. Drawn around the box as
      // before (the same random numbers), then clamped into it: its two ends come up often.
      c.coords[1 + i] = edge && chance(rng, 0.3) ? uniform(rng, lo - 12, hi + 12)
                                                  : uniform(rng, lo - 1, std::max(lo, hi) + 1);
      if (!as_recorded) c.coords[1 + i] = std::clamp(c.coords[1 + i], lo, std::max(lo, hi));
      c.offsets[i] = static_cast<std::uint16_t>(uniform(rng, 0, edge ? 7 : 3));
      if (plain) {
        c.coords[1 + i] = uniform(rng, lo, std::max(lo, hi));
        c.offsets[i] = 0;
      }
    }
    if (plain) c.coords[0] = unit * uniform(rng, 0, (static_cast<int>(s.global_dim[0]) - 1) / unit);
    const int n = static_cast<int>(s.global_dim[s.rank - 1]);
    c.coords[s.rank - 1] = edge ? uniform(rng, -2, n + 1) : uniform(rng, 0, n - 1);
    c.smem_offset = chance(rng, 0.35) ? 128u * static_cast<std::uint32_t>(uniform(rng, 1, 7)) : 0u;
    return c;
  }
}

// A random tiled case, ranks 1-5, boxes over every edge (as test_model_vs_hw.cu draws them).
Case random_tiled_case(Rng& rng, std::uint64_t base) {
  for (;;) {
    Case c;
    TensorMapSpec& s = c.spec;
    s.data_type = static_cast<DataType>(uniform(rng, 0, tmakit::kDataTypeCount - 1));
    const int esize = element_bytes(s.data_type);
    s.rank = static_cast<std::uint32_t>(uniform(rng, 1, 5));
    s.global_address = base;
    s.swizzle = static_cast<Swizzle>(uniform(rng, 0, 3));
    if (tmakit::is_floating(s.data_type) && chance(rng, 0.5)) {
      s.oob_fill = tmakit::OobFill::nan_request_zero_fma;
    }
    const int span = s.swizzle == Swizzle::none ? 256 : tmakit::swizzle_span_bytes(s.swizzle);
    s.box_dim[0] = static_cast<std::uint32_t>(std::min(256, 16 * uniform(rng, 1, span / 16) / esize));
    s.global_dim[0] = static_cast<std::uint64_t>(uniform(rng, 1, 2 * static_cast<int>(s.box_dim[0]) + 8));
    for (std::uint32_t d = 1; d < s.rank; ++d) {
      s.box_dim[d] =
          static_cast<std::uint32_t>(chance(rng, 0.8) ? uniform(rng, 1, 8) : uniform(rng, 9, 48));
      if (chance(rng, 0.3)) s.element_strides[d] = static_cast<std::uint32_t>(uniform(rng, 2, 4));
      s.global_dim[d] = static_cast<std::uint64_t>(uniform(rng, 1, static_cast<int>(s.box_dim[d]) + 6));
    }
    set_strides(rng, s);
    std::uint32_t fp_bytes = 0;
    try {
      fp_bytes = model::footprint(s).total_bytes;
    } catch (const model::ModelError&) {
      continue;
    }
    if (fp_bytes > kMaxFootprintBytes || tensor_extent(s) > kGlobalBytes) continue;
    for (std::uint32_t d = 1; d < s.rank; ++d) {
      const int reach = static_cast<int>(s.box_dim[d]);
      c.coords[d] = uniform(rng, -reach - 2, static_cast<int>(s.global_dim[d]) + 1);
    }
    const int unit = std::max(1, 16 / esize);
    const int lo = -(static_cast<int>(s.box_dim[0]) + unit) / unit;
    const int hi = (static_cast<int>(s.global_dim[0]) + unit) / unit;
    c.coords[0] = unit * uniform(rng, lo, hi);
    c.smem_offset = chance(rng, 0.35) ? 128u * static_cast<std::uint32_t>(uniform(rng, 1, 7)) : 0u;
    return c;
  }
}

struct Tally {
  int run = 0, matched = 0, mismatched = 0, timeouts = 0, rule_rejected = 0, driver_refused = 0;
  std::map<std::string, int> rules;  // which rules refused how many
  std::string summary(const char* what) const {
    std::ostringstream os;
    os << what << ": " << run << " run, " << matched << " matched byte for byte, " << mismatched
       << " mismatched (" << timeouts << " barrier timeouts); skipped: " << rule_rejected
       << " broke a tmakit rule";
    if (!rules.empty()) {
      os << " (";
      bool first = true;
      for (const auto& [id, n] : rules) {
        os << (first ? "" : ", ") << id << " " << n;
        first = false;
      }
      os << ")";
    }
    os << ", " << driver_refused << " refused by the driver";
    return os.str();
  }
};

bool encode_case(const Case& c, CUtensorMap* map, Tally& t) {
  if (const auto v = tmakit::find_violation(c.spec)) {
    ++t.rule_rejected;
    ++t.rules[v->rule_id()];
    return false;
  }
  if (tmakit::encode_unchecked(c.spec, map) != CUDA_SUCCESS) {
    ++t.driver_refused;
    return false;
  }
  return true;
}


// One element of the box at buffer byte `at`, in words.
std::string where(const Case& c, std::uint32_t at) {
  const model::Footprint fp = model::footprint(c.spec);
  const std::uint32_t addr = c.smem_offset + at;
  const std::uint32_t logical = tmakit::swizzle_address(c.spec.swizzle, addr) - c.smem_offset;
  if (fp.pitch_bytes == 0) return "?";
  const std::uint32_t row = logical / fp.pitch_bytes;
  const std::uint32_t inrow = logical % fp.pitch_bytes;
  const int esize = element_bytes(c.spec.data_type);
  std::ostringstream os;
  os << (c.spec.kind == EncodeKind::im2col ? "pixel " : "row ") << row << " element "
     << inrow / esize << " byte " << inrow % esize;
  if (inrow >= fp.row_bytes) os << " [past the row's data]";
  return os.str();
}

// Im2col diagnosis: which pixel each shared-memory row holds, found by looking its first
// in-bounds channel bytes up in the tensor ("fill", "--" unwritten, "?" not found).
struct PixelDecoder {
  const Case& c;
  std::map<std::string, std::string> by_key;
  std::uint32_t key_bytes = 0;
  explicit PixelDecoder(const Case& cc) : c(cc) {
    const TensorMapSpec& s = c.spec;
    const std::int64_t c0 = c.coords[0];
    const int esize = element_bytes(s.data_type);
    if (c0 < 0 || static_cast<std::uint64_t>(c0) >= s.global_dim[0] ||
        s.data_type == DataType::tfloat32 || s.data_type == DataType::tfloat32_ftz)
      return;
    const std::uint64_t in = std::min<std::uint64_t>(s.global_dim[0] - c0, s.channels_per_pixel);
    key_bytes = static_cast<std::uint32_t>(std::min<std::uint64_t>(8, in * esize));
    const auto& g = host_global();
    std::array<std::uint64_t, 5> x{};
    for (;;) {
      std::uint64_t off = static_cast<std::uint64_t>(c0) * esize;
      for (std::uint32_t d = 1; d < s.rank; ++d) off += x[d] * s.global_strides_bytes[d - 1];
      std::ostringstream name;
      name << '(';
      for (std::uint32_t d = 1; d < s.rank; ++d) name << (d > 1 ? "," : "") << x[d];
      name << ')';
      const std::string key(reinterpret_cast<const char*>(g.data() + off), key_bytes);
      auto [it, fresh] = by_key.emplace(key, name.str());
      if (!fresh) it->second = "ambiguous";
      std::uint32_t d = 1;
      for (; d < s.rank; ++d) {
        if (++x[d] < s.global_dim[d]) break;
        x[d] = 0;
      }
      if (d == s.rank) break;
    }
  }
  // Pixel p of a buffer (bytes + written mask, at c.smem_offset).
  std::string pixel(const std::vector<std::uint8_t>& bytes, const std::vector<std::uint8_t>& w,
                    std::uint32_t p) const {
    const model::Footprint fp = model::footprint(c.spec);
    std::string key;
    bool any = false, all = true;
    for (std::uint32_t k = 0; k < fp.row_bytes; ++k) {
      const std::uint32_t logical = p * fp.pitch_bytes + k;
      const std::uint32_t at =
          tmakit::swizzle_address(c.spec.swizzle, c.smem_offset + logical) - c.smem_offset;
      if (at >= bytes.size()) return "?";
      any = any || w[at];
      all = all && w[at];
      if (k < key_bytes) key += static_cast<char>(bytes[at]);
    }
    if (!any) return "--";
    if (!all) return "partial";
    if (key_bytes == 0) return "?";
    const auto fill = model::oob_fill_bytes(c.spec);
    if (std::equal(key.begin(), key.end(), fill.begin(),
                   fill.begin() + static_cast<std::ptrdiff_t>(key_bytes)))
      return "fill";
    const auto it = by_key.find(key);
    return it == by_key.end() ? "?" : it->second;
  }
};

struct Compared {
  int bad = 0;
  std::string detail;
};

// Model bytes against the two poisoned passes `a`, `b` (each dump_bytes long).
Compared compare(const Case& c, const model::SharedBytes& want, const std::uint8_t* a,
                 const std::uint8_t* b, std::uint32_t dump_bytes, std::vector<std::uint8_t>* hw,
                 std::vector<std::uint8_t>* hw_written) {
  Compared r;
  std::ostringstream os;
  hw->assign(dump_bytes, 0);
  hw_written->assign(dump_bytes, 0);
  for (std::uint32_t k = 0; k < dump_bytes; ++k) {
    const bool w = a[k] == b[k];
    (*hw)[k] = a[k];
    (*hw_written)[k] = w;
    const bool mw = k < want.written.size() && want.written[k];
    const std::uint8_t mb = k < want.bytes.size() ? want.bytes[k] : 0;
    if (w == mw && (!w || a[k] == mb)) continue;
    if (r.bad++ < 6) {
      os << "\n    byte " << k << ": model " << (mw ? "" : "unwritten ") << static_cast<int>(mb)
         << ", hardware " << (w ? "" : "unwritten ") << static_cast<int>(a[k]) << " -- "
         << where(c, k);
    }
  }
  r.detail = os.str();
  return r;
}

// The pixels the hardware and the model put in the first rows, where they differ.
std::string pixel_story(const Case& c, const model::SharedBytes& want,
                        const std::vector<std::uint8_t>& hw,
                        const std::vector<std::uint8_t>& hw_written) {
  const PixelDecoder dec(c);
  const std::uint32_t rows = model::footprint(c.spec).rows;
  std::ostringstream os;
  std::vector<std::uint8_t> mb(hw.size(), 0), mw(hw.size(), 0);
  std::copy(want.bytes.begin(), want.bytes.end(), mb.begin());
  std::copy(want.written.begin(), want.written.end(), mw.begin());
  int first_diff = -1;
  std::string h_line, m_line;
  for (std::uint32_t p = 0; p < rows; ++p) {
    const std::string h = dec.pixel(hw, hw_written, p), m = dec.pixel(mb, mw, p);
    if (h != m && first_diff < 0) first_diff = static_cast<int>(p);
    if (p < 24) {
      h_line += " " + h;
      m_line += " " + m;
    }
  }
  os << "\n    pixels (first 24 of " << rows << ", first differing pixel " << first_diff << ")"
     << "\n      hardware:" << h_line << "\n      model:   " << m_line;
  return os.str();
}

struct Dumper {
  std::ofstream lines;
  explicit Dumper(const std::string& name) {
    const char* d = std::getenv("TMAKIT_IM2COL_DUMP_DIR");
    // NOTE: appends, so a sweep resumed past a killed load (TMAKIT_IM2COL_FIRST) keeps both parts
    if (d != nullptr && *d != '\0')
      lines.open(std::string(d) + "/" + name + ".jsonl", std::ios::app);
  }
  void write(const Case& c, const std::string& hw) {
    if (!lines.is_open()) return;
    auto o = nlohmann::json::parse(tmakit::spec_to_json(c.spec));
    o["coords"] = std::vector<std::int32_t>(c.coords.begin(), c.coords.begin() + c.spec.rank);
    o["offsets"] = std::vector<int>(c.offsets.begin(), c.offsets.begin() + (c.spec.rank - 2));
    o["smemOffset"] = c.smem_offset;
    o["hw"] = hw;
    lines << o.dump() << "\n";
    lines.flush();
  }
};


enum class Form { im2col, im2col_edge, im2col_plain, prefetch, hint };

// Runs one load twice, into shared memory poisoned with kPoisonA, then kPoisonB; the dumps
// (args.dump_bytes + the timeout flag) land in a and b. Empty, or the failing CUDA call and
// its error ("cudaDeviceSynchronize(): an illegal instruction was encountered").
std::string launch_twice(const CUtensorMap& map, LoadArgs args, std::uint8_t* d_out,
                         std::vector<std::uint8_t>& a, std::vector<std::uint8_t>& b,
                         bool* timeout) {
  const std::size_t smem = args.dump_bytes + args.offset + 1024;
  for (int pass = 0; pass < 2; ++pass) {
    args.poison = pass == 0 ? kPoisonA : kPoisonB;
    load_kernel<<<1, kThreads, smem>>>(map, args, d_out);
    auto& dst = pass == 0 ? a : b;
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return std::string("launch: ") + cudaGetErrorString(e);
    e = cudaDeviceSynchronize();
    if (e != cudaSuccess) return std::string("cudaDeviceSynchronize(): ") + cudaGetErrorString(e);
    e = cudaMemcpy(dst.data(), d_out, args.dump_bytes + 1, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) return std::string("cudaMemcpy(): ") + cudaGetErrorString(e);
    *timeout = *timeout || dst[args.dump_bytes] != 0;
  }
  return {};
}

// The kernel arguments of one load (model bytes `want` give the size and transaction count).
LoadArgs load_args(const Case& c, const model::SharedBytes& want, int prefetch, int hint,
                   int policy) {
  LoadArgs args{};
  args.im2col = c.spec.kind == EncodeKind::im2col ? 1 : 0;
  args.prefetch = prefetch;
  args.hint = hint;
  args.policy = policy;
  args.rank = static_cast<std::int32_t>(c.spec.rank);
  for (int d = 0; d < 5; ++d) args.c[d] = c.coords[d];
  for (int d = 0; d < 3; ++d) args.off[d] = c.offsets[d];
  args.offset = c.smem_offset;
  args.dump_bytes = static_cast<std::uint32_t>(want.bytes.size()) + kDumpSlackBytes;
  args.tx_bytes = static_cast<std::uint32_t>(want.tx_bytes);
  return args;
}

bool is_im2col(Form form) {
  return form == Form::im2col || form == Form::im2col_edge || form == Form::im2col_plain;
}

// One drawn load: the case and the instruction form. `skip`: a mutator rejected the draw.
struct Drawn {
  Case c;
  int prefetch = 0;
  int hint = 0;
  int policy = 0;
  bool skip = false;
};

// NOTE: the draw order is that of the recorded sweeps (case, prefetch, hint, policy), so a seed
// names the same loads as before.
Drawn draw_load(Rng& rng, Form form, std::uint64_t base, bool as_recorded = false) {
  Drawn d;
  const bool im2col = is_im2col(form);
  d.c = im2col ? random_im2col_case(rng, form == Form::im2col_edge, base,
                                    form == Form::im2col_plain, as_recorded)
               : random_tiled_case(rng, base);
  d.prefetch = form == Form::prefetch || (form == Form::hint && chance(rng, 0.3)) ||
                       (im2col && chance(rng, 0.2) && form != Form::im2col_plain)
                   ? 1
                   : 0;
  d.hint =
      form == Form::hint || (im2col && chance(rng, 0.2) && form != Form::im2col_plain) ? 1 : 0;
  d.policy = uniform(rng, 0, 2);
  return d;
}

struct SweepOptions {
  std::function<void(Rng&, Drawn&)> mutate;  // changes every drawn load (bisect probes)
  int max_run = 0;  // stop once this many loads reached the hardware (0: all cases)
  // Probes only: launch an im2col load the model refuses under H10 (pixel coordinate outside
  // the pixel box), sized as the same load with its pixel coordinates moved into the box. It
  // is expected to kill the kernel; one that runs is reported as a mismatch.
  bool launch_refused = false;
  bool as_recorded = false;  // pixel coordinates as first drawn (random_im2col_case)
};

// TMAKIT_IM2COL_FIRST=<i>: cases before index i are drawn but not launched, so a sweep can
// go on past a load that killed the previous process (the seed still names the same loads).
int first_case_index() {
  const char* v = std::getenv("TMAKIT_IM2COL_FIRST");
  return v == nullptr || *v == '\0' ? 0 : std::atoi(v);
}

void run_load_sweep(const char* name, Form form, int cases, std::uint64_t seed,
                    const SweepOptions& opt = {}) {
  std::uint8_t* gdev = device_global();
  ASSERT_NE(gdev, nullptr) << "cudaMalloc/cudaMemcpy of the global buffer failed";
  const auto& g = host_global();
  CK(cudaFuncSetAttribute(load_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          kMaxFootprintBytes + 2048 + kDumpSlackBytes));
  std::uint8_t* d_out = nullptr;
  CK(cudaMalloc(&d_out, kMaxFootprintBytes + kDumpSlackBytes + 1));
  std::vector<std::uint8_t> a(kMaxFootprintBytes + kDumpSlackBytes + 1), b(a.size());
  std::vector<std::uint8_t> hw, hw_written;
  Dumper dump(name);
  Rng rng(seed);
  Tally t;
  int printed = 0, dumped = 0;
  const bool im2col = is_im2col(form);
  const int first = first_case_index();
  int considered = 0;  // draws past `first` that no mutator skipped
  for (int i = 0; i < cases && (opt.max_run == 0 || t.run < opt.max_run); ++i) {
    const auto base = reinterpret_cast<std::uint64_t>(gdev);
    Drawn drawn = draw_load(rng, form, base, opt.as_recorded);
    if (opt.mutate) opt.mutate(rng, drawn);
    if (drawn.skip || i < first) continue;
    ++considered;
    const Case& c = drawn.c;
    CUtensorMap map{};
    if (!encode_case(c, &map, t)) continue;
    model::SharedBytes want;
    bool expect_kill = false;
    try {
      if (im2col && opt.launch_refused &&
          !model::im2col_coords_refused_reason(c.spec, c.coords).empty()) {
        Case inside = c;
        for (std::uint32_t k = 0; k + 2 < c.spec.rank; ++k) {
          const int lo = pixel_lo(c.spec, k);
          inside.coords[1 + k] = std::clamp(c.coords[1 + k], lo, std::max(lo, pixel_hi(c.spec, k)));
        }
        want = model::load_im2col(c.spec, g, inside.coords, c.offsets, c.smem_offset);
        expect_kill = true;
      } else
      {
        want = im2col ? model::load_im2col(c.spec, g, c.coords, c.offsets, c.smem_offset)
                      : model::load_tiled(c.spec, g, c.coords, c.smem_offset);
      }
      if (form == Form::prefetch) {
        // the model's view of the prefetch: in-bounds byte ranges inside the tensor
        for (const auto& r : model::prefetch_tiled(c.spec, c.coords)) {
          if (r.begin >= r.end || r.end > tensor_extent(c.spec)) {
            ADD_FAILURE() << "prefetch_tiled range [" << r.begin << ", " << r.end
                          << ") outside the tensor: " << tmakit::describe(c.spec);
          }
        }
      }
    } catch (const tmakit::Error& e) {
      ADD_FAILURE() << "model failed on " << tmakit::describe(c.spec) << ": " << e.what();
      continue;
    }
    ++t.run;
    const LoadArgs args = load_args(c, want, drawn.prefetch, drawn.hint, drawn.policy);
    if (trace()) {
      std::printf("[%s] case %d: %s coords %s smem offset %u prefetch %d hint %d%s\n", name, i,
                  tmakit::describe(c.spec).c_str(), coords_text(c).c_str(), c.smem_offset,
                  args.prefetch, args.hint, expect_kill ? " (H10: expected to kill)" : "");
      std::fflush(stdout);
    }
    bool timeout = false;
    // NOTE: a killed load ends this process's CUDA context: nothing more can run
    const std::string failed = launch_twice(map, args, d_out, a, b, &timeout);
    ASSERT_EQ(failed, "") << "case " << i << ": " << tmakit::describe(c.spec) << " coords "
                          << coords_text(c) << (expect_kill ? " (H10: expected to kill)" : "");
    const Compared r = expect_kill ? Compared{1, "\n    H10 load ran to completion"}
                                   : compare(c, want, a.data(), b.data(), args.dump_bytes, &hw,
                                             &hw_written);
    const bool mismatch = r.bad > 0 || timeout;
    if (mismatch) {
      ++t.mismatched;
      t.timeouts += timeout ? 1 : 0;
      if (printed++ < 10) {
        std::printf("[%s] MISMATCH case %d: %s coords %s smem offset %u prefetch %d hint %d: %d "
                    "bytes differ%s%s%s\n",
                    name, i, tmakit::describe(c.spec).c_str(), coords_text(c).c_str(),
                    c.smem_offset, args.prefetch, args.hint, r.bad,
                    timeout ? " (barrier timeout)" : "", r.detail.c_str(),
                    im2col && !expect_kill ? pixel_story(c, want, hw, hw_written).c_str() : "");
      }
    } else {
      ++t.matched;
    }
    if (im2col && !expect_kill && ((mismatch && dumped++ < 120) || i < 20))
      dump.write(c, hex_dump(hw, hw_written));
  }
  cudaFree(d_out);
  std::printf("%s\n", t.summary(name).c_str());
  EXPECT_EQ(t.mismatched, 0) << t.summary(name);
  if (opt.max_run > 0) {
    EXPECT_EQ(t.run, opt.max_run) << "too few cases reached the hardware: " << t.summary(name);
  } else {
    EXPECT_GT(t.run, considered / 4) << "too few cases reached the hardware: " << t.summary(name)
                                     << " of " << considered << " drawn";
  }
}

void run_multicast_sweep(const char* name, int cases, std::uint64_t seed) {
  std::uint8_t* gdev = device_global();
  ASSERT_NE(gdev, nullptr) << "cudaMalloc/cudaMemcpy of the global buffer failed";
  const auto& g = host_global();
  constexpr std::uint32_t kCluster = 2;
  CK(cudaFuncSetAttribute(multicast_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          kMaxFootprintBytes + 2048 + kDumpSlackBytes));
  const std::size_t per_cta = kMaxFootprintBytes + kDumpSlackBytes + 1;
  std::uint8_t* d_out = nullptr;
  CK(cudaMalloc(&d_out, per_cta * kCluster));
  std::vector<std::uint8_t> a(per_cta * kCluster), b(a.size());
  std::vector<std::uint8_t> hw, hw_written;
  Rng rng(seed);
  Tally t;
  int printed = 0;
  for (int i = 0; i < cases; ++i) {
    const Case c = random_tiled_case(rng, reinterpret_cast<std::uint64_t>(gdev));
    LoadArgs args{};
    args.mask = static_cast<std::uint32_t>(chance(rng, 0.7) ? 3 : uniform(rng, 1, 2));
    args.issuer = static_cast<std::uint32_t>(uniform(rng, 0, 1));
    args.hint = chance(rng, 0.5) ? 1 : 0;
    args.policy = uniform(rng, 0, 2);
    CUtensorMap map{};
    if (!encode_case(c, &map, t)) continue;
    std::vector<std::optional<model::SharedBytes>> want;
    try {
      want = model::load_multicast(c.spec, g, c.coords, static_cast<std::uint16_t>(args.mask),
                                   kCluster, c.smem_offset);
    } catch (const tmakit::Error& e) {
      ADD_FAILURE() << "model failed on " << tmakit::describe(c.spec) << ": " << e.what();
      continue;
    }
    ++t.run;
    const model::SharedBytes& box = want[0] ? *want[0] : *want[1];
    if (trace()) {
      std::printf("[%s] case %d: %s coords %s smem offset %u mask %u issuer %u hint %d\n", name,
                  i, tmakit::describe(c.spec).c_str(), coords_text(c).c_str(), c.smem_offset,
                  args.mask, args.issuer, args.hint);
      std::fflush(stdout);
    }
    args.rank = static_cast<std::int32_t>(c.spec.rank);
    for (int d = 0; d < 5; ++d) args.c[d] = c.coords[d];
    args.offset = c.smem_offset;
    args.dump_bytes = static_cast<std::uint32_t>(box.bytes.size()) + kDumpSlackBytes;
    args.tx_bytes = static_cast<std::uint32_t>(box.tx_bytes);
    const ClusterLaunch launch(kCluster, kThreads, args.dump_bytes + args.offset + 1024, nullptr,
                              kCluster);
    bool timeout = false;
    for (int pass = 0; pass < 2; ++pass) {
      args.poison = pass == 0 ? kPoisonA : kPoisonB;
      CK(cudaLaunchKernelEx(&launch.config, multicast_kernel, map, args, d_out));
      CK(cudaDeviceSynchronize());
      auto& dst = pass == 0 ? a : b;
      CK(cudaMemcpy(dst.data(), d_out, (args.dump_bytes + 1) * kCluster, cudaMemcpyDeviceToHost));
      for (std::uint32_t r = 0; r < kCluster; ++r)
        timeout = timeout || dst[r * (args.dump_bytes + 1) + args.dump_bytes] != 0;
    }
    int bad = 0;
    std::string detail;
    for (std::uint32_t r = 0; r < kCluster; ++r) {
      // a CTA outside the mask must be left untouched: an all-unwritten answer
      model::SharedBytes none;
      none.bytes.assign(box.bytes.size(), 0);
      none.written.assign(box.bytes.size(), 0);
      const model::SharedBytes& w = want[r] ? *want[r] : none;
      const std::size_t at = r * (args.dump_bytes + 1);
      const Compared cr = compare(c, w, a.data() + at, b.data() + at, args.dump_bytes, &hw,
                                  &hw_written);
      if (cr.bad > 0) detail += "\n  CTA " + std::to_string(r) + ":" + cr.detail;
      bad += cr.bad;
    }
    if (bad > 0 || timeout) {
      ++t.mismatched;
      t.timeouts += timeout ? 1 : 0;
      if (printed++ < 10) {
        std::printf("[%s] MISMATCH case %d: %s coords %s smem offset %u mask %u issuer %u hint "
                    "%d: %d bytes differ%s%s\n",
                    name, i, tmakit::describe(c.spec).c_str(), coords_text(c).c_str(),
                    c.smem_offset, args.mask, args.issuer, args.hint, bad,
                    timeout ? " (barrier timeout)" : "", detail.c_str());
      }
    } else {
      ++t.matched;
    }
  }
  cudaFree(d_out);
  std::printf("%s\n", t.summary(name).c_str());
  EXPECT_EQ(t.mismatched, 0) << t.summary(name);
  EXPECT_GT(t.run, cases / 4) << "too few cases reached the hardware: " << t.summary(name);
}

// prefetch.tensormap + cp.async.bulk.prefetch.tensor (tile, ranks 1-5), then a load of the
// same box: the prefetch must not change what the load delivers.
TEST(ModelVsHardwarePrefetch, PrefetchThenLoad) {
  SKIP_WITHOUT_HOPPER();
  run_load_sweep("prefetch_then_load", Form::prefetch, kPrefetchCases, kSeed + 2);
}

// The .L2::cache_hint load form with evict_first / evict_last / evict_normal policies.
TEST(ModelVsHardwarePrefetch, CacheHintLoads) {
  SKIP_WITHOUT_HOPPER();
  run_load_sweep("cache_hint_loads", Form::hint, kHintCases, kSeed + 3);
}

// .multicast::cluster (plain and with a cache hint) in a cluster of 2: each CTA of the mask
// holds model::load_multicast's bytes, a CTA outside it is left untouched.
TEST(ModelVsHardwareMulticast, ClusterOf2) {
  SKIP_WITHOUT_HOPPER();
  run_multicast_sweep("multicast_loads", kMulticastCases, kSeed + 4);
}

// --- im2col ----------------------------------------------------------------------------------
// NOTE: the first im2col sweeps (H200, driver 580.159.04, 2026-11-22) drew pixel coordinates
// around the pixel box, and their first loads killed the kernel ("illegal instruction"). The
// bisect probes at the end of this section found why: a pixel coordinate outside the pixel box
// kills the load, nothing else does (docs/hardware.md H10: 34 of 34 such loads killed, 880 of
// 880 others ran); the same run showed the image stepping by its own traversal stride (H11).
// The sweeps now draw pixel coordinates inside the box, often at its ends; everything else
// (traversal strides, offsets, channels and images outside the tensor, prefetch, cache hint,
// swizzle into offset buffers) is compared byte for byte with the model.

// Ranks 3-5, channels on 16-byte rows within the swizzle span, pixel-box corners, traversal
// strides (N too), offsets 0..3, zero and NaN fill, 20 % after an im2col prefetch, 20 % with
// a cache hint, buffers 0..896 bytes past the swizzle repeat.
TEST(ModelVsHardwareIm2col, Loads) {
  SKIP_WITHOUT_HOPPER();
  run_load_sweep("im2col_loads", Form::im2col, kIm2colCases, kSeed);
}

// The same with negative channel coordinates (16-byte multiples), images outside 0..N-1, pixel
// coordinates at the ends of the box more often and offsets up to 7.
TEST(ModelVsHardwareIm2col, LoadsEdges) {
  SKIP_WITHOUT_HOPPER();
  run_load_sweep("im2col_edges", Form::im2col_edge, kIm2colEdgeCases, kSeed + 1);
}

// Unit traversal strides, pixels inside the pixel box, offsets 0, no prefetch or hint.
TEST(ModelVsHardwareIm2col, LoadsPlain) {
  SKIP_WITHOUT_HOPPER();
  run_load_sweep("im2col_plain", Form::im2col_plain, kIm2colCases, kSeed + 5);
}

// One NHWC load for H10: UINT8, C = 32, W = 6, H = 5, N = 2, pixel box W -1..3, H -1..2 (a
// 3x3 filter with padding 1), 16 pixels; pixel coordinates (w, h).
Case h10_case(std::uint64_t base, int w, int h) {
  Case c;
  TensorMapSpec& s = c.spec;
  s.kind = EncodeKind::im2col;
  s.data_type = DataType::uint8;
  s.rank = 4;
  s.global_address = base;
  s.global_dim = {32, 6, 5, 2, 1};
  s.global_strides_bytes = {32, 192, 960, 0};
  s.pixel_box_lower_corner = {-1, -1, 0};
  s.pixel_box_upper_corner = {-2, -2, 0};
  s.channels_per_pixel = 32;
  s.pixels_per_column = 16;
  c.coords = {0, w, h, 0, 0};
  c.offsets = {2, 1, 0};
  return c;
}

// Runs the H10 load at (w, h) and leaves the process: exit code 0 when the kernel completed,
// 3 with the CUDA error on stderr when it did not. For a death test: a killed kernel ends its
// process's CUDA context, so the load runs in a child process.
[[noreturn]] void h10_load_and_exit(int w, int h) {
  std::string failed = "no global buffer";
  if (std::uint8_t* gdev = device_global()) {
    const Case c = h10_case(reinterpret_cast<std::uint64_t>(gdev), w, h);
    CUtensorMap map{};
    std::uint8_t* d_out = nullptr;
    if (tmakit::encode_unchecked(c.spec, &map) != CUDA_SUCCESS) {
      failed = "encode refused";
    } else if (cudaFuncSetAttribute(load_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    kMaxFootprintBytes + 2048 + kDumpSlackBytes) != cudaSuccess ||
               cudaMalloc(&d_out, kMaxFootprintBytes + kDumpSlackBytes + 1) != cudaSuccess) {
      failed = "setup failed";
    } else {
      // sized as the same load at the box's corner, which the model answers
      const model::SharedBytes want =
          model::load_im2col(h10_case(0, -1, -1).spec, host_global(), {0, -1, -1, 0, 0},
                             c.offsets, 0);
      std::vector<std::uint8_t> a(want.bytes.size() + kDumpSlackBytes + 1), b(a.size());
      bool timeout = false;
      failed = launch_twice(map, load_args(c, want, 0, 0, 0), d_out, a, b, &timeout);
    }
  }
  std::fprintf(stderr, "h10 load at w %d h %d: %s\n", w, h,
               failed.empty() ? "ran" : failed.c_str());
  std::fflush(stderr);
  std::_Exit(failed.empty() ? 0 : 3);
}

// H10 on the hardware: the load runs with its pixel coordinates at the box's four corners and
// is killed one step outside the box on either side of W or H (the sweeps compare the bytes).
TEST(ModelVsHardwareIm2col, H10PixelOutsideTheBoxKillsTheKernel) {
  SKIP_WITHOUT_HOPPER();
  // NOTE: "threadsafe" re-executes this binary for each death test, so the child starts with
  // a fresh CUDA context whatever this process did before
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  for (const auto& [w, h] : {std::pair{-1, -1}, std::pair{3, -1}, std::pair{-1, 2},
                             std::pair{3, 2}}) {
    EXPECT_EXIT(h10_load_and_exit(w, h), ::testing::ExitedWithCode(0), "ran")
        << "inside the box at w " << w << " h " << h;
  }
  for (const auto& [w, h] : {std::pair{-2, 0}, std::pair{4, 0}, std::pair{0, -2},
                             std::pair{0, 3}}) {
    EXPECT_EXIT(h10_load_and_exit(w, h), ::testing::ExitedWithCode(3), "illegal instruction")
        << "outside the box at w " << w << " h " << h;
  }
  // the model refuses exactly the loads the hardware kills
  const TensorMapSpec s = h10_case(0, 0, 0).spec;
  EXPECT_EQ(model::im2col_coords_refused_reason(s, {0, 3, 2, 0, 0}), "");
  EXPECT_NE(model::im2col_coords_refused_reason(s, {0, 4, 0, 0, 0}), "");
  EXPECT_NE(model::im2col_coords_refused_reason(s, {0, 0, -2, 0, 0}), "");
}

// --- im2col: features one at a time, and the bisect probes ----------------------------------
// Im2colFeature/<F>: plain loads (as LoadsPlain draws them) with exactly one feature F forced
// onto every load, compared byte for byte. The probes, run on request only (they kill the
// kernel by design: --gtest_also_run_disabled_tests, one process each, as
// tests/gpu/im2col_bisect.sh runs them, resuming past killed loads):
//  - Im2colKillProbe/<F>: the same for F = BelowBox, AboveBox (pixel coordinate outside);
//  - Im2colAblate/<L>_without_<F>: the first load of the first Loads (L = Loads) or LoadsEdges
//    (L = Edges) sweep, as recorded, with feature F taken away (F = None: the load itself).

// The features of an im2col load that LoadsPlain leaves out.
enum class Feature {
  none,
  strides,         // traversal strides 2..4 on the spatial dimensions (sometimes N too)
  strides_on_grid, // the same, with each pixel coordinate on lower corner + k * stride
  below_box,       // one pixel coordinate below the pixel box's lower corner
  above_box,       // one pixel coordinate above the pixel box's upper end (dim - 1 + upper)
  outside_box,     // below or above (ablation: every pixel coordinate moved into the box)
  offsets,         // im2col offsets 0..3, at least one non-zero
  prefetch,        // prefetch.tensormap + cp.async.bulk.prefetch.tensor.im2col first
  hint,            // the .L2::cache_hint form
  swizzle128_offset,  // 128B swizzle into a buffer 128..896 bytes past the 1024-byte repeat
  channel_outside,    // the channel coordinate outside 0..C-1 (on 16-byte multiples)
  image_outside,      // the image coordinate outside 0..N-1
};

const char* feature_name(Feature f) {
  switch (f) {
    case Feature::none: return "None";
    case Feature::strides: return "Strides";
    case Feature::strides_on_grid: return "StridesOnGrid";
    case Feature::below_box: return "BelowBox";
    case Feature::above_box: return "AboveBox";
    case Feature::outside_box: return "OutsideBox";
    case Feature::offsets: return "Offsets";
    case Feature::prefetch: return "Prefetch";
    case Feature::hint: return "Hint";
    case Feature::swizzle128_offset: return "Swizzle128Offset";
    case Feature::channel_outside: return "ChannelOutside";
    case Feature::image_outside: return "ImageOutside";
  }
  return "?";
}

// Forces feature `f` onto a plain load.
void add_feature(Rng& rng, Feature f, Drawn& d) {
  TensorMapSpec& s = d.c.spec;
  const std::uint32_t spatial = s.rank - 2;
  const int esize = element_bytes(s.data_type);
  const int unit = std::max(1, 16 / esize);
  const auto pick = static_cast<std::uint32_t>(uniform(rng, 0, static_cast<int>(spatial) - 1));
  switch (f) {
    case Feature::none: break;
    case Feature::strides:
    case Feature::strides_on_grid:
      for (std::uint32_t i = 0; i < spatial; ++i) {
        if (i == pick || chance(rng, 0.4))
          s.element_strides[1 + i] = static_cast<std::uint32_t>(uniform(rng, 2, 4));
        if (f == Feature::strides_on_grid) {
          const int lo = pixel_lo(s, i), hi = std::max(lo, pixel_hi(s, i));
          const int st = static_cast<int>(s.element_strides[1 + i]);
          d.c.coords[1 + i] = lo + st * uniform(rng, 0, (hi - lo) / st);
        }
      }
      if (chance(rng, 0.3))
        s.element_strides[s.rank - 1] = static_cast<std::uint32_t>(uniform(rng, 2, 3));
      break;
    case Feature::below_box: d.c.coords[1 + pick] = pixel_lo(s, pick) - uniform(rng, 1, 3); break;
    case Feature::above_box:
      d.c.coords[1 + pick] = std::max(pixel_lo(s, pick), pixel_hi(s, pick)) + uniform(rng, 1, 3);
      break;
    case Feature::outside_box:
      add_feature(rng, chance(rng, 0.5) ? Feature::below_box : Feature::above_box, d);
      break;
    case Feature::offsets:
      for (std::uint32_t i = 0; i < spatial; ++i)
        d.c.offsets[i] =
            static_cast<std::uint16_t>(i == pick ? uniform(rng, 1, 3) : uniform(rng, 0, 3));
      break;
    case Feature::prefetch: d.prefetch = 1; break;
    case Feature::hint: d.hint = 1; break;
    case Feature::swizzle128_offset:
      d.skip = s.swizzle != Swizzle::bytes128;
      d.c.smem_offset = 128u * static_cast<std::uint32_t>(uniform(rng, 1, 7));
      break;
    case Feature::channel_outside: {
      const int past = (static_cast<int>(s.global_dim[0]) + unit - 1) / unit;
      d.c.coords[0] =
          unit * (chance(rng, 0.5) ? uniform(rng, -2, -1) : uniform(rng, past, past + 1));
      break;
    }
    case Feature::image_outside: {
      const int n = static_cast<int>(s.global_dim[s.rank - 1]);
      d.c.coords[s.rank - 1] = chance(rng, 0.5) ? uniform(rng, -2, -1) : uniform(rng, n, n + 1);
      break;
    }
  }
}

// Takes feature `f` away from a load of the Loads / LoadsEdges sweeps.
void remove_feature(Feature f, Drawn& d) {
  TensorMapSpec& s = d.c.spec;
  const std::uint32_t spatial = s.rank - 2;
  const int unit = std::max(1, 16 / element_bytes(s.data_type));
  switch (f) {
    case Feature::none: break;
    case Feature::strides:
    case Feature::strides_on_grid:
      for (std::uint32_t d1 = 1; d1 < s.rank; ++d1) s.element_strides[d1] = 1;
      break;
    case Feature::below_box:
    case Feature::above_box:
    case Feature::outside_box:
      for (std::uint32_t i = 0; i < spatial; ++i) {
        const int lo = pixel_lo(s, i), hi = std::max(lo, pixel_hi(s, i));
        d.c.coords[1 + i] = std::clamp(d.c.coords[1 + i], lo, hi);
      }
      break;
    case Feature::offsets: d.c.offsets = {}; break;
    case Feature::prefetch: d.prefetch = 0; break;
    case Feature::hint: d.hint = 0; break;
    case Feature::swizzle128_offset: d.c.smem_offset = 0; break;
    case Feature::channel_outside: {
      const int last = (static_cast<int>(s.global_dim[0]) - 1) / unit;
      d.c.coords[0] = unit * std::clamp(d.c.coords[0] / unit, 0, last);
      break;
    }
    case Feature::image_outside:
      d.c.coords[s.rank - 1] =
          std::clamp(d.c.coords[s.rank - 1], 0, static_cast<int>(s.global_dim[s.rank - 1]) - 1);
      break;
  }
}

constexpr int kFeatureCases = 150;
// NOTE: 3 draws in 4 are not 128B-swizzled and skipped
constexpr int kSwizzle128OffsetCases = 600;

void run_feature_sweep(Feature f, bool launch_refused) {
  const std::string name = std::string("feature_") + feature_name(f);
  SweepOptions opt;
  opt.mutate = [f](Rng& rng, Drawn& d) { add_feature(rng, f, d); };
  opt.launch_refused = launch_refused;
  const int cases = f == Feature::swizzle128_offset ? kSwizzle128OffsetCases : kFeatureCases;
  run_load_sweep(name.c_str(), Form::im2col_plain, cases,
                 kSeed + 100 + static_cast<std::uint64_t>(f), opt);
}

class Im2colFeature : public ::testing::TestWithParam<Feature> {};

TEST_P(Im2colFeature, PlainPlusOne) {
  SKIP_WITHOUT_HOPPER();
  run_feature_sweep(GetParam(), false);
}

std::string feature_param_name(const ::testing::TestParamInfo<Feature>& i) {
  return feature_name(i.param);
}

INSTANTIATE_TEST_SUITE_P(ModelVsHardwareIm2col, Im2colFeature,
                         ::testing::Values(Feature::strides, Feature::strides_on_grid,
                                           Feature::offsets, Feature::prefetch, Feature::hint,
                                           Feature::swizzle128_offset, Feature::channel_outside,
                                           Feature::image_outside),
                         feature_param_name);

class Im2colKillProbe : public ::testing::TestWithParam<Feature> {};

TEST_P(Im2colKillProbe, DISABLED_PlainPlusOne) {
  SKIP_WITHOUT_HOPPER();
  run_feature_sweep(GetParam(), true);
}

INSTANTIATE_TEST_SUITE_P(ModelVsHardwareIm2colBisect, Im2colKillProbe,
                         ::testing::Values(Feature::below_box, Feature::above_box),
                         feature_param_name);

struct Ablation {
  Form form;
  Feature without;
};

class Im2colAblate : public ::testing::TestWithParam<Ablation> {};

TEST_P(Im2colAblate, DISABLED_FirstLoad) {
  SKIP_WITHOUT_HOPPER();
  const Ablation a = GetParam();
  const bool edges = a.form == Form::im2col_edge;
  const std::string name = std::string(edges ? "ablate_edges_without_" : "ablate_loads_without_") +
                           feature_name(a.without);
  SweepOptions opt;
  opt.mutate = [a](Rng&, Drawn& d) { remove_feature(a.without, d); };
  opt.max_run = 1;
  opt.as_recorded = true;
  opt.launch_refused = true;
  run_load_sweep(name.c_str(), a.form, kIm2colCases, edges ? kSeed + 1 : kSeed, opt);
}

std::vector<Ablation> ablations() {
  std::vector<Ablation> v;
  for (Form form : {Form::im2col, Form::im2col_edge}) {
    for (Feature f : {Feature::none, Feature::strides, Feature::outside_box, Feature::offsets,
                      Feature::prefetch, Feature::hint, Feature::swizzle128_offset,
                      Feature::channel_outside, Feature::image_outside}) {
      v.push_back({form, f});
    }
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(ModelVsHardwareIm2colBisect, Im2colAblate,
                         ::testing::ValuesIn(ablations()),
                         [](const ::testing::TestParamInfo<Ablation>& i) {
                           return std::string(i.param.form == Form::im2col_edge ? "Edges"
                                                                                : "Loads") +
                                  "_without_" + feature_name(i.param.without);
                         });

// Replays a dump (TMAKIT_IM2COL_REPLAY=<dir>/im2col_loads.jsonl) against the model, no GPU
// needed: for checking a model change against what the hardware wrote.
TEST(Im2colReplay, FromDump) {
  const char* path = std::getenv("TMAKIT_IM2COL_REPLAY");
  if (path == nullptr || *path == '\0') GTEST_SKIP() << "set TMAKIT_IM2COL_REPLAY to a dump file";
  std::ifstream in(path);
  ASSERT_TRUE(in) << "cannot open " << path;
  const auto& g = host_global();
  std::string line;
  int n = 0, bad = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto o = nlohmann::json::parse(line);
    const std::string hw = o["hw"];
    Case c;
    for (std::size_t d = 0; d < o["coords"].size(); ++d) c.coords[d] = o["coords"][d];
    for (std::size_t d = 0; d < o["offsets"].size(); ++d)
      c.offsets[d] = static_cast<std::uint16_t>(o["offsets"][d].get<int>());
    c.smem_offset = o["smemOffset"];
    for (const char* k : {"coords", "offsets", "smemOffset", "hw"}) o.erase(k);
    c.spec = tmakit::parse_spec_json(o.dump());
    // NOTE: the dump holds device addresses; the replay reads the same bytes at offset 0
    const model::SharedBytes want = model::load_im2col(c.spec, g, c.coords, c.offsets, c.smem_offset);
    std::vector<std::uint8_t> mb(hw.size() / 2, 0), mw(hw.size() / 2, 0);
    std::copy(want.bytes.begin(), want.bytes.end(), mb.begin());
    std::copy(want.written.begin(), want.written.end(), mw.begin());
    ++n;
    if (hex_dump(mb, mw) != hw) {
      if (bad++ < 10) {
        std::vector<std::uint8_t> hb(hw.size() / 2, 0), hwr(hw.size() / 2, 0);
        for (std::size_t k = 0; k < hb.size(); ++k) {
          if (hw[2 * k] == '.') continue;
          hwr[k] = 1;
          hb[k] = static_cast<std::uint8_t>(std::stoi(hw.substr(2 * k, 2), nullptr, 16));
        }
        std::printf("REPLAY MISMATCH %s coords %s%s\n", tmakit::describe(c.spec).c_str(),
                    coords_text(c).c_str(), pixel_story(c, want, hb, hwr).c_str());
      }
    }
  }
  std::printf("replay: %d cases, %d mismatch the model\n", n, bad);
  EXPECT_EQ(bad, 0);
}

}  // namespace
