// The mbarrier family (PTX ISA, "Parallel Synchronization and Communication Instructions:
// mbarrier"): one wrapper per instruction. Barrier operands are 32-bit shared-space
// addresses (ptx::smem_u32) of an 8-byte aligned 64-bit barrier object (rule D1).
//
// A barrier's phase completes when its pending arrival count reaches zero and its pending
// transaction count (tx-count, bytes) is zero. Waiters name the phase by its parity.
#pragma once

#include <cstdint>

#include "tmakit/ptx/common.hpp"

namespace tmakit::ptx {

// mbarrier.init.shared::cta.b64 [addr], count;
__device__ __forceinline__ void mbarrier_init(std::uint32_t bar_smem, std::uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar_smem), "r"(count)
               : "memory");
}

// mbarrier.inval.shared::cta.b64 [addr];  (before the memory is reused for something else)
__device__ __forceinline__ void mbarrier_inval(std::uint32_t bar_smem) {
  asm volatile("mbarrier.inval.shared::cta.b64 [%0];" ::"r"(bar_smem) : "memory");
}

// mbarrier.arrive.shared::cta.b64 state, [addr];  (release.cta; returns the phase state)
__device__ __forceinline__ std::uint64_t mbarrier_arrive(std::uint32_t bar_smem) {
  std::uint64_t state;
  asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];"
               : "=l"(state)
               : "r"(bar_smem)
               : "memory");
  return state;
}

// mbarrier.arrive.shared::cta.b64 state, [addr], count;
__device__ __forceinline__ std::uint64_t mbarrier_arrive_count(std::uint32_t bar_smem,
                                                              std::uint32_t count) {
  std::uint64_t state;
  asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1], %2;"
               : "=l"(state)
               : "r"(bar_smem), "r"(count)
               : "memory");
  return state;
}

// mbarrier.arrive.expect_tx.shared::cta.b64 state, [addr], txCount;
// Raises the tx-count by tx_bytes, then arrives: the phase now also waits for those bytes.
__device__ __forceinline__ std::uint64_t mbarrier_arrive_expect_tx(std::uint32_t bar_smem,
                                                                  std::uint32_t tx_bytes) {
  std::uint64_t state;
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 %0, [%1], %2;"
               : "=l"(state)
               : "r"(bar_smem), "r"(tx_bytes)
               : "memory");
  return state;
}

// mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [addr], txCount;  (no arrival)
__device__ __forceinline__ void mbarrier_expect_tx(std::uint32_t bar_smem,
                                                   std::uint32_t tx_bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(bar_smem),
               "r"(tx_bytes)
               : "memory");
}

// mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [addr], txCount;
// Counts `tx_bytes` as delivered, as a copy's completion does (PTX ISA 8.0, sm_90). Tests
// use it to measure how many bytes a copy really delivered.
__device__ __forceinline__ void mbarrier_complete_tx(std::uint32_t bar_smem,
                                                     std::uint32_t tx_bytes) {
  asm volatile("mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(bar_smem),
               "r"(tx_bytes)
               : "memory");
}

// mbarrier.try_wait.parity.shared::cta.b64 waitComplete, [addr], phaseParity;
// True once the phase with this parity has completed (acquire.cta). The instruction may
// suspend the thread for a system-dependent time before answering false.
__device__ __forceinline__ bool mbarrier_try_wait_parity(std::uint32_t bar_smem,
                                                         std::uint32_t parity) {
  std::uint32_t done;
  asm volatile(
      "{\n"
      "  .reg .pred p;\n"
      "  mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "  selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done)
      : "r"(bar_smem), "r"(parity)
      : "memory");
  return done != 0;
}

// mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 waitComplete, [addr], parity;
// As above, with cluster scope: for phases completed by arrivals from other CTAs whose
// shared-memory writes this thread must then see.
__device__ __forceinline__ bool mbarrier_try_wait_parity_acquire_cluster(std::uint32_t bar_smem,
                                                                         std::uint32_t parity) {
  std::uint32_t done;
  asm volatile(
      "{\n"
      "  .reg .pred p;\n"
      "  mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
      "  selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done)
      : "r"(bar_smem), "r"(parity)
      : "memory");
  return done != 0;
}

// mbarrier.test_wait.parity.shared::cta.b64 waitComplete, [addr], phaseParity;
// Non-blocking probe: never suspends.
__device__ __forceinline__ bool mbarrier_test_wait_parity(std::uint32_t bar_smem,
                                                          std::uint32_t parity) {
  std::uint32_t done;
  asm volatile(
      "{\n"
      "  .reg .pred p;\n"
      "  mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "  selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done)
      : "r"(bar_smem), "r"(parity)
      : "memory");
  return done != 0;
}

// mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remAddr];
// Arrive on a barrier of another CTA of the cluster; remote_bar is a shared::cluster address
// from mapa (ptx/cluster.hpp: mapa_shared_cluster).
__device__ __forceinline__ void mbarrier_arrive_release_cluster_remote(std::uint32_t remote_bar) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(remote_bar)
               : "memory");
}

// mbarrier.arrive.shared::cluster.b64 _, [remAddr];  (the default semantics: release at CTA
// scope) Enough when what the arrival releases is this CTA's own reads of shared memory that
// already completed (e.g. a pipeline stage read by wgmma, waited for); the .cluster form is a
// cluster-wide fence and costs far more (measured on H200: an FP8 GEMM ran 2x slower).
__device__ __forceinline__ void mbarrier_arrive_remote(std::uint32_t remote_bar) {
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(remote_bar) : "memory");
}

// mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, [remAddr], txCount;
__device__ __forceinline__ void mbarrier_arrive_expect_tx_release_cluster_remote(
    std::uint32_t remote_bar, std::uint32_t tx_bytes) {
  asm volatile(
      "mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, [%0], %1;" ::"r"(
          remote_bar),
      "r"(tx_bytes)
      : "memory");
}

}  // namespace tmakit::ptx
