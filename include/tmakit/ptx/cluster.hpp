// Thread-block cluster instructions the multicast path needs (PTX ISA, "mapa",
// "barrier.cluster", special registers %cluster_ctarank / %cluster_nctarank).
#pragma once

#include <cstdint>

#include "tmakit/ptx/common.hpp"

namespace tmakit::ptx {

// mov.u32 r, %cluster_ctarank;  (this CTA's rank in its cluster)
__device__ __forceinline__ std::uint32_t cluster_ctarank() {
  std::uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

// mov.u32 r, %cluster_nctarank;  (CTAs in the cluster)
__device__ __forceinline__ std::uint32_t cluster_nctarank() {
  std::uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
  return r;
}

// mapa.shared::cluster.u32 d, a, cta;
// The shared::cluster address of this CTA's shared address `smem` in cluster CTA `cta_rank`.
__device__ __forceinline__ std::uint32_t mapa_shared_cluster(std::uint32_t smem,
                                                             std::uint32_t cta_rank) {
  std::uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem), "r"(cta_rank));
  return remote;
}

// barrier.cluster.arrive.release.aligned;
__device__ __forceinline__ void barrier_cluster_arrive_release() {
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}

// barrier.cluster.arrive.relaxed.aligned;  (orders nothing: "this CTA has started")
__device__ __forceinline__ void barrier_cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}

// barrier.cluster.wait.acquire.aligned;
__device__ __forceinline__ void barrier_cluster_wait_acquire() {
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// ld.shared::cluster.u32 v, [addr];  (read another CTA's shared memory)
__device__ __forceinline__ std::uint32_t ld_shared_cluster_u32(std::uint32_t cluster_addr) {
  std::uint32_t v;
  asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(cluster_addr) : "memory");
  return v;
}

// st.shared::cluster.u32 [addr], v;  (write another CTA's shared memory; no reply awaited)
__device__ __forceinline__ void st_shared_cluster_u32(std::uint32_t cluster_addr, std::uint32_t v) {
  asm volatile("st.shared::cluster.u32 [%0], %1;" ::"r"(cluster_addr), "r"(v) : "memory");
}

// st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [addr], {x, y, z, w}, [mbar];
// 16 bytes into another CTA's shared memory; their arrival counts 16 bytes off that CTA's
// mbarrier (`cluster_mbar`, also a shared::cluster address), which is what the receiver waits
// on: no cluster-wide fence on either side.
__device__ __forceinline__ void st_async_v4_f32(std::uint32_t cluster_addr, float4 v,
                                                std::uint32_t cluster_mbar) {
  asm volatile(
      "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, "
      "[%5];" ::"r"(cluster_addr),
      "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w), "r"(cluster_mbar)
      : "memory");
}

// elect.sync _|p, membermask;  (one lane of the warp answers true)
__device__ __forceinline__ bool elect_sync(std::uint32_t member_mask = 0xffffffffu) {
  std::uint32_t elected;
  asm volatile(
      "{\n"
      "  .reg .pred p;\n"
      "  elect.sync _|p, %1;\n"
      "  selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(elected)
      : "r"(member_mask));
  return elected != 0;
}

}  // namespace tmakit::ptx
