// Special registers read by the device layer (PTX ISA, "Special Registers").
#pragma once

#include <cstdint>

#include "tmakit/ptx/common.hpp"

namespace tmakit::ptx {

// mov.u64 r, %globaltimer;  (nanoseconds, GPU-wide; for bounded waits, not for timing)
__device__ __forceinline__ std::uint64_t globaltimer_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// mov.u32 r, %smid;
__device__ __forceinline__ std::uint32_t smid() {
  std::uint32_t r;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
  return r;
}

}  // namespace tmakit::ptx
