// Writer side of the global-memory tensor-map protocol (device/tensor_map.hpp): edit a map
// on the device and publish it for TMA use anywhere on the GPU. Needs sm_90a
// (tensormap.replace, tensormap.cp_fenceproxy).
#pragma once

#include <cstdint>

#include "tmakit/ptx/common.hpp"
#include "tmakit/ptx/sm90_tensormap.hpp"

namespace tmakit {

// One whole warp (all 32 lanes, converged): copy `src` into the 128-byte aligned shared
// staging map, replace its global address with `new_address`, and publish the result to
// `dst` in global memory with a release for the tensormap proxy. Readers then call
// acquire_tensor_map(dst) before using it.
__device__ __forceinline__ void publish_tensor_map_with_address(CUtensorMap* dst,
                                                                const CUtensorMap& src,
                                                                CUtensorMap* staging_smem,
                                                                const void* new_address) {
  // copy the 128-byte map, 4 bytes per lane
  const unsigned lane = threadIdx.x % 32u;
  reinterpret_cast<std::uint32_t*>(staging_smem)[lane] =
      reinterpret_cast<const std::uint32_t*>(&src)[lane];
  __syncwarp();
  // edit the field in shared memory (one lane)
  if (lane == 0) {
    ptx::tensormap_replace_global_address_shared(ptx::smem_u32(staging_smem),
                                                 reinterpret_cast<std::uint64_t>(new_address));
  }
  __syncwarp();
  // whole-warp copy to global memory fused with the tensormap-proxy release
  ptx::tensormap_cp_fenceproxy_global_shared_release_gpu(dst, ptx::smem_u32(staging_smem));
}

}  // namespace tmakit
