// Fences between the generic proxy (ordinary loads/stores), the async proxy (the bulk copy
// engine) and the tensormap proxy (descriptor reads), and for barrier initialisation
// (PTX ISA, "membar / fence", "Proxies").
#pragma once

#include <cstdint>

#include "tmakit/ptx/common.hpp"

namespace tmakit::ptx {

// fence.proxy.async.shared::cta;
// Orders this thread's ordinary shared-memory accesses with later async-proxy accesses (a
// TMA store/reduce reading the buffer) and earlier async writes with later ordinary reads.
__device__ __forceinline__ void fence_proxy_async_shared_cta() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// fence.proxy.async.global;  (the same for global memory)
__device__ __forceinline__ void fence_proxy_async_global() {
  asm volatile("fence.proxy.async.global;" ::: "memory");
}

// fence.proxy.async;  (all state spaces)
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async;" ::: "memory");
}

// fence.mbarrier_init.release.cluster;
// Makes mbarrier.init visible to the async proxy and to the other CTAs of the cluster. Issue
// after initialising barriers, before any TMA completes on them (without it: hangs or wrong data).
__device__ __forceinline__ void fence_mbarrier_init_release_cluster() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// fence.acq_rel.cluster;
__device__ __forceinline__ void fence_acq_rel_cluster() {
  asm volatile("fence.acq_rel.cluster;" ::: "memory");
}

// fence.proxy.tensormap::generic.release.gpu;
// Writer side: orders generic-proxy writes of a tensor map in global memory (ordinary
// stores or tensormap.replace) before later tensormap-proxy reads by any CTA of the GPU.
__device__ __forceinline__ void fence_proxy_tensormap_generic_release_gpu() {
  asm volatile("fence.proxy.tensormap::generic.release.gpu;" ::: "memory");
}

// fence.proxy.tensormap::generic.release.cta;
__device__ __forceinline__ void fence_proxy_tensormap_generic_release_cta() {
  asm volatile("fence.proxy.tensormap::generic.release.cta;" ::: "memory");
}

// fence.proxy.tensormap::generic.acquire.gpu [addr], 128;
// Reader side: before the first TMA through a tensor map at `map` (global memory) that was
// written in this kernel or since the last launch boundary.
__device__ __forceinline__ void fence_proxy_tensormap_generic_acquire_gpu(const void* map) {
  asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" ::"l"(
                   reinterpret_cast<std::uint64_t>(map))
               : "memory");
}

// fence.proxy.tensormap::generic.acquire.cta [addr], 128;
__device__ __forceinline__ void fence_proxy_tensormap_generic_acquire_cta(const void* map) {
  asm volatile("fence.proxy.tensormap::generic.acquire.cta [%0], 128;" ::"l"(
                   reinterpret_cast<std::uint64_t>(map))
               : "memory");
}

}  // namespace tmakit::ptx
