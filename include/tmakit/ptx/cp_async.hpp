// The non-bulk asynchronous copies (PTX ISA, "Data Movement and Conversion Instructions:
// cp.async"; sm_80+): small global -> shared copies a thread issues without waiting, whose
// completion the thread waits for by groups. One wrapper per instruction.
#pragma once

#include <cstdint>

#include "tmakit/ptx/common.hpp"

namespace tmakit::ptx {

// cp.async.ca.shared.global [dst], [src], 4, src_size;
// Copies 4 bytes from global `src` to shared `dst_smem` (4-byte aligned both); src_size 0
// writes 4 zero bytes and reads nothing (`src` is then not dereferenced).
__device__ __forceinline__ void cp_async_ca_4(std::uint32_t dst_smem, const void* src,
                                              std::uint32_t src_size) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(dst_smem), "l"(src),
               "r"(src_size)
               : "memory");
}

// cp.async.commit_group;
// Closes this thread's cp.asyncs issued since the last commit into one group.
__device__ __forceinline__ void cp_async_commit_group() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}

// cp.async.wait_group N;
// Waits until at most N of this thread's committed groups are pending (the older ones have
// completed, their writes visible to it).
template <int N>
__device__ __forceinline__ void cp_async_wait_group() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

}  // namespace tmakit::ptx
