// Editing tensor maps on the device (PTX ISA, "tensormap.replace", "tensormap.cp_fenceproxy";
// both need the architecture-specific target sm_90a). For maps kept in global memory by
// grouped kernels: edit a copy in shared memory (or in global memory), then publish it with
// a tensormap-proxy release; readers acquire before use (ptx/fence.hpp, rule D4).
#pragma once

#include <cstdint>

#include "tmakit/ptx/common.hpp"

// NOTE: the instructions need an architecture-specific target (sm_90a, Blackwell's sm_100a,
// sm_103a, sm_120a, or a family one such as sm_100f); plain sm_90, sm_100 or sm_120 lacks
// them: fail at compile time, not with a ptxas error.
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL) && \
    !defined(__CUDA_ARCH_FEAT_SM100_ALL) && !defined(__CUDA_ARCH_SPECIFIC__) && \
    !defined(__CUDA_ARCH_FAMILY_SPECIFIC__)
#error "tmakit/ptx/sm90_tensormap.hpp needs an architecture-specific target: in CMake set_target_properties(<target> PROPERTIES CUDA_ARCHITECTURES 90a) (or 100a, 103a, 120a); with nvcc -gencode=arch=compute_90a,code=sm_90a"
#endif

namespace tmakit::ptx {

// tensormap.replace.tile.global_address.shared::cta.b1024.b64 [addr], new_val;
__device__ __forceinline__ void tensormap_replace_global_address_shared(std::uint32_t map_smem,
                                                                        std::uint64_t address) {
  asm volatile("tensormap.replace.tile.global_address.shared::cta.b1024.b64 [%0], %1;" ::"r"(
                   map_smem),
               "l"(address)
               : "memory");
}

// tensormap.replace.tile.global_address.global.b1024.b64 [addr], new_val;
__device__ __forceinline__ void tensormap_replace_global_address_global(void* map_global,
                                                                        std::uint64_t address) {
  asm volatile("tensormap.replace.tile.global_address.global.b1024.b64 [%0], %1;" ::"l"(
                   reinterpret_cast<std::uint64_t>(map_global)),
               "l"(address)
               : "memory");
}

// tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [addr], ord, new_val;
template <int Ord>
__device__ __forceinline__ void tensormap_replace_global_dim_shared(std::uint32_t map_smem,
                                                                    std::uint32_t dim) {
  static_assert(Ord >= 0 && Ord < 5, "ordinal is the dimension 0..4");
  asm volatile("tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [%0], %1, %2;" ::"r"(
                   map_smem),
               "n"(Ord), "r"(dim)
               : "memory");
}

// tensormap.replace.tile.global_stride.shared::cta.b1024.b64 [addr], ord, new_val;
// Ord 0 is the stride of dimension 1 (dimension 0 is dense), as in cuTensorMapEncodeTiled.
template <int Ord>
__device__ __forceinline__ void tensormap_replace_global_stride_shared(
    std::uint32_t map_smem, std::uint64_t stride_bytes) {
  static_assert(Ord >= 0 && Ord < 4, "ordinal is the stride 0..3");
  asm volatile("tensormap.replace.tile.global_stride.shared::cta.b1024.b64 [%0], %1, %2;" ::"r"(
                   map_smem),
               "n"(Ord), "l"(stride_bytes)
               : "memory");
}

// tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned
//     [dst], [src], 128;
// Whole-warp copy of an edited map from shared to global memory with the release fence.
__device__ __forceinline__ void tensormap_cp_fenceproxy_global_shared_release_gpu(
    void* map_global, std::uint32_t map_smem) {
  asm volatile(
      "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned"
      " [%0], [%1], 128;" ::"l"(reinterpret_cast<std::uint64_t>(map_global)),
      "r"(map_smem)
      : "memory");
}

}  // namespace tmakit::ptx
