// Debug mode (build option TMAKIT_DEBUG_WAITS, which defines TMAKIT_DEBUG_WAITS=1): every
// barrier wait is bounded and every shared-memory buffer handed to a TMA helper is checked
// for its alignment; the copies check their coordinates, their tensor map's memory space and
// a multicast's CTA mask, and ClusterPipeline its cluster size. A broken rule prints one line naming the block, thread, barrier,
// phase and expected bytes (or the buffer and the alignment it needs), then traps: the
// kernel ends with an error instead of hanging the GPU.
//
// Without the option the checks compile to nothing.
#pragma once

#include <cstdint>
#include <cstdio>

#include "tmakit/ptx/common.hpp"
#include "tmakit/ptx/sreg.hpp"

#ifndef TMAKIT_DEBUG_WAITS
#define TMAKIT_DEBUG_WAITS 0
#endif

// How long a debug-mode wait may take before it is reported (nanoseconds, default 4 s).
// NOTE: generous on purpose: compute-sanitizer slows kernels by orders of magnitude.
#ifndef TMAKIT_DEBUG_WAIT_TIMEOUT_NS
#define TMAKIT_DEBUG_WAIT_TIMEOUT_NS 4000000000ull
#endif

namespace tmakit {

inline constexpr bool kDebugWaits = TMAKIT_DEBUG_WAITS != 0;
inline constexpr std::uint64_t kDebugWaitTimeoutNs = TMAKIT_DEBUG_WAIT_TIMEOUT_NS;

namespace detail {

// Printed, then trapped: the message names every value needed to find the broken count.
__device__ __noinline__ inline void report_wait_timeout(std::uint32_t bar_smem,
                                                        std::uint32_t parity,
                                                        std::uint32_t expected_tx_bytes,
                                                        std::uint64_t waited_ns) {
  printf(
      "tmakit: barrier wait timed out after %llu ms: block (%u,%u,%u) thread (%u,%u,%u) "
      "barrier smem 0x%x phase parity %u expected tx bytes %u "
      "(check arrive counts and expect_tx bytes, rule D5)\n",
      static_cast<unsigned long long>(waited_ns / 1000000u), blockIdx.x, blockIdx.y, blockIdx.z,
      threadIdx.x, threadIdx.y, threadIdx.z, bar_smem, parity, expected_tx_bytes);
  __trap();
}

__device__ __noinline__ inline void report_misaligned(const char* what, std::uint32_t smem_addr,
                                                      std::uint32_t align_bytes,
                                                      const char* why) {
  printf(
      "tmakit: misaligned shared-memory %s at smem 0x%x: block (%u,%u,%u) thread (%u,%u,%u) "
      "needs %u-byte alignment (%s); it is off by %u bytes\n",
      what, smem_addr, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y,
      threadIdx.z, align_bytes, why, smem_addr % align_bytes);
  __trap();
}

__device__ __noinline__ inline void report_bad_coordinate(const char* op, int dim, int value,
                                                          const char* why) {
  printf("tmakit: bad TMA coordinate for %s: block (%u,%u,%u) thread (%u,%u,%u) coordinate[%d] = "
         "%d: %s\n",
         op, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z, dim,
         value, why);
  __trap();
}

__device__ __noinline__ inline void report_tx_past_limit(const char* op, std::uint32_t bar_smem,
                                                          std::uint32_t tx_bytes) {
  printf("tmakit: %s of %u bytes on barrier smem 0x%x: block (%u,%u,%u) thread (%u,%u,%u) "
         "passes the mbarrier tx-count limit of 2^20 - 1 bytes a phase; split the copies over "
         "more barriers or phases\n",
         op, tx_bytes, bar_smem, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y,
         threadIdx.z);
  __trap();
}

__device__ __noinline__ inline void report_tensor_map_space(const char* op,
                                                             std::uintptr_t map_address,
                                                             bool local) {
  printf("tmakit: %s reads its tensor map at 0x%llx: block (%u,%u,%u) thread (%u,%u,%u): %s; "
         "TMA reads a map from kernel-parameter, constant or global memory only (D4)\n",
         op, static_cast<unsigned long long>(map_address), blockIdx.x, blockIdx.y, blockIdx.z,
         threadIdx.x, threadIdx.y, threadIdx.z,
         local ? "the map is in local memory (a kernel parameter without __grid_constant__ is "
                 "copied there when its address is taken): declare the kernel parameter `const "
                 "__grid_constant__ CUtensorMap`"
               : "the map is in shared memory or another space TMA does not read: pass the "
                 "kernel parameter's address, or a copy in global memory (acquire_tensor_map)");
  __trap();
}

__device__ __noinline__ inline void report_bad_cta_mask(const char* op, std::uint32_t cta_mask,
                                                         std::uint32_t cluster_ctas) {
  printf("tmakit: %s with CTA mask 0x%x: block (%u,%u,%u) thread (%u,%u,%u): the cluster has "
         "%u CTAs, so the mask must name at least one of bits 0..%u and none above (a mask of "
         "no CTA delivers nothing and the barrier waits forever)\n",
         op, cta_mask, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y,
         threadIdx.z, cluster_ctas, cluster_ctas - 1);
  __trap();
}

__device__ __noinline__ inline void report_bad_cluster_size(std::uint32_t cluster_size,
                                                             std::uint32_t cluster_ctas) {
  printf("tmakit: ClusterPipeline of %u CTAs in a cluster of %u: block (%u,%u,%u) thread "
         "(%u,%u,%u): give the cluster's own CTA count (1..16, cluster_nctarank()), or every "
         "stage's armed barrier waits for arrivals that never come\n",
         cluster_size, cluster_ctas, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x,
         threadIdx.y, threadIdx.z);
  __trap();
}

// Debug mode: the tensor map must be read from kernel-parameter, constant or global memory
// (D4). A CUtensorMap kernel parameter without `__grid_constant__` is copied to local memory
// when its address is taken, and TMA cannot read it there.
__device__ __forceinline__ void debug_check_tensor_map(const char* op, const void* map) {
  if constexpr (kDebugWaits) {
    if (!(__isGridConstant(map) || __isConstant(map) || __isGlobal(map))) {
      report_tensor_map_space(op, reinterpret_cast<std::uintptr_t>(map), __isLocal(map) != 0);
    }
  } else {
    (void)op, (void)map;
  }
}

}  // namespace detail

// Debug mode: trap with a report when `ptr` (shared memory) is not `align_bytes`-aligned.
// `why` names the rule ("128 B TMA destination, rule D1", "swizzle 128B repeat, rule D2").
__device__ __forceinline__ void debug_check_smem_alignment(const void* ptr,
                                                           std::uint32_t align_bytes,
                                                           const char* what, const char* why) {
  if constexpr (kDebugWaits) {
    const std::uint32_t addr = ptx::smem_u32(ptr);
    if (addr % align_bytes != 0) detail::report_misaligned(what, addr, align_bytes, why);
  } else {
    (void)ptr, (void)align_bytes, (void)what, (void)why;
  }
}

}  // namespace tmakit
