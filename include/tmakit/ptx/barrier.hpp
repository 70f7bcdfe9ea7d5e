// Named barriers: synchronise a subset of a CTA's warps (PTX ISA, "bar.sync").
#pragma once

#include <cstdint>

#include "tmakit/ptx/common.hpp"

namespace tmakit::ptx {

// bar.sync id, threads;  a named barrier among `threads` threads (a multiple of 32), id 1..15
// (0 is __syncthreads').
__device__ __forceinline__ void bar_sync(std::uint32_t id, std::uint32_t threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// bar.arrive id, threads;  arrive on a named barrier without waiting (the threads that wait
// use bar.sync; together `threads` arrivals complete it)
__device__ __forceinline__ void bar_arrive(std::uint32_t id, std::uint32_t threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

}  // namespace tmakit::ptx
