// Tensor maps kept in global memory (grouped kernels: one map per group, chosen at run
// time). Passing maps by value as `const __grid_constant__ CUtensorMap` costs nothing and is
// the default; a global array is for when the set of maps is only known on the device.
//
// Fence protocol (PTX ISA "Proxies"; D4): a map written in global memory through
// the generic proxy (host upload, ordinary stores, tensormap.replace) becomes visible to the
// tensormap proxy that TMA reads it through only after
//   writer:  fence.proxy.tensormap::generic.release.gpu   (or tensormap.cp_fenceproxy)
//   reader:  fence.proxy.tensormap::generic.acquire.gpu [map], 128
// The writer side for device edits is in device/sm90_tensor_map_update.hpp (sm_90a).
#pragma once

#include "tmakit/ptx/fence.hpp"
#include "tmakit/ptx/tma.hpp"

namespace tmakit {

// Reader side, one thread, before the first TMA through `map` (global memory): acquire the
// map for the tensormap proxy and warm it. Cheap; do it once per map per CTA.
__device__ __forceinline__ const CUtensorMap* acquire_tensor_map(const CUtensorMap* map) {
  ptx::fence_proxy_tensormap_generic_acquire_gpu(map);
  ptx::prefetch_tensormap(map);
  return map;
}

}  // namespace tmakit
