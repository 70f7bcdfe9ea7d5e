// Shared pieces of the ptx/ headers: the architecture guard, shared-memory addresses and the
// operand layout every bulk-tensor wrapper uses.
//
// Every wrapper in ptx/ is `__device__ __forceinline__`, named after its PTX instruction
// (dots and "::" become underscores), and carries the PTX form in a comment above it.
#pragma once

#include <cuda.h>  // CUtensorMap

#include <cstdint>

#if __cplusplus < 202002L
#error "tmakit needs C++20: in CMake set_target_properties(<target> PROPERTIES CXX_STANDARD 20 CUDA_STANDARD 20) (or leave CUDA_STANDARD unset); with nvcc -std=c++20"
#endif

#if !defined(__CUDACC__)
#error "tmakit/ptx headers are device code: include them from .cu files compiled by nvcc"
#endif

// NOTE: the bulk tensor copy engine and mbarrier transaction counts exist from sm_90 on; an
// older device pass would otherwise fail with an unreadable ptxas message per instruction.
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ < 900)
#error "tmakit device code needs sm_90a: in CMake set_target_properties(<target> PROPERTIES CUDA_ARCHITECTURES 90a); with nvcc -gencode=arch=compute_90a,code=sm_90a"
#endif

namespace tmakit::ptx {

// 32-bit shared-state-space address of a generic pointer into this CTA's shared memory.
// PTX: cvta.to.shared.u32 (through the compiler intrinsic).
__device__ __forceinline__ std::uint32_t smem_u32(const void* ptr) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(ptr));
}

// ld.shared.f32 v, [addr];  (a float of this CTA's shared memory by its shared address: an
// access the compiler would otherwise issue as a generic LD where it cannot tell the state
// space of a pointer)
__device__ __forceinline__ float ld_shared_f32(std::uint32_t addr) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(addr) : "memory");
  return v;
}

// ld.shared.u8 v, [addr];  /  ld.shared.u16 v, [addr];  (2-byte aligned)
// One element zero-extended into a 32-bit register, for kernels that gather elements from
// shared memory one by one. NOTE: no "memory" clobber: their data is made visible by a
// barrier wait (itself volatile asm that clobbers memory, which these do not pass), and
// without it the compiler may place the surrounding global stores among them.
__device__ __forceinline__ std::uint32_t ld_shared_u8(std::uint32_t addr) {
  std::uint32_t v;
  asm volatile("ld.shared.u8 %0, [%1];" : "=r"(v) : "r"(addr));
  return v;
}
__device__ __forceinline__ std::uint32_t ld_shared_u16(std::uint32_t addr) {
  std::uint32_t v;
  asm volatile("ld.shared.u16 %0, [%1];" : "=r"(v) : "r"(addr));
  return v;
}

// ld.shared.v2.f32 {x, y}, [addr];  (8-byte aligned)
__device__ __forceinline__ float2 ld_shared_v2_f32(std::uint32_t addr) {
  float2 v;
  asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];" : "=f"(v.x), "=f"(v.y) : "r"(addr) : "memory");
  return v;
}

// st.shared.f32 [addr], v;
__device__ __forceinline__ void st_shared_f32(std::uint32_t addr, float v) {
  asm volatile("st.shared.f32 [%0], %1;" ::"r"(addr), "f"(v) : "memory");
}

// Generic 64-bit address of a tensor map (kernel parameter, constant or global memory), the
// form every cp.async.bulk.tensor operand [tensorMap, ...] takes (PTX ISA "Tensor-map").
__device__ __forceinline__ std::uint64_t tensormap_u64(const CUtensorMap* map) {
  return reinterpret_cast<std::uint64_t>(map);
}

namespace detail {

// Coordinates padded to five, so every bulk-tensor asm statement below can list the same
// operands %0..%4 whatever its rank; the unused ones are dead and ptxas drops them.
struct Coords5 {
  std::int32_t v[5];
  template <int N>
  __device__ __forceinline__ explicit Coords5(const std::int32_t (&c)[N]) : v{0, 0, 0, 0, 0} {
    static_assert(N >= 1 && N <= 5, "a tensor map has rank 1..5 (rule T3)");
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = c[i];
  }
};

// Im2col offsets padded to three (%5..%7): rank 3 uses one, rank 4 two, rank 5 three.
struct Offsets3 {
  std::uint16_t v[3];
  template <int N>
  __device__ __forceinline__ explicit Offsets3(const std::uint16_t (&o)[N]) : v{0, 0, 0} {
    static_assert(N >= 1 && N <= 3, "im2col takes rank-2 offsets for ranks 3..5 (rule I1)");
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = o[i];
  }
};

}  // namespace detail
}  // namespace tmakit::ptx

// Operand layout of every bulk-tensor asm statement in ptx/tma.hpp:
//   %0..%4  tensor coordinates (padded)      %5..%7  im2col offsets (padded, "h")
//   %8..    the instruction's own operands (destination, map, barrier, mask, policy).
#define TMAKIT_PTX_COORD_OPERANDS(p) \
  "r"(p.v[0]), "r"(p.v[1]), "r"(p.v[2]), "r"(p.v[3]), "r"(p.v[4])
#define TMAKIT_PTX_OFFSET_OPERANDS(o) "h"(o.v[0]), "h"(o.v[1]), "h"(o.v[2])
#define TMAKIT_PTX_NO_OFFSETS "h"(std::uint16_t{0}), "h"(std::uint16_t{0}), "h"(std::uint16_t{0})

// Expands EMIT(dim, coords) for the rank N known at compile time.
#define TMAKIT_PTX_FOR_RANK(N, EMIT)                     \
  if constexpr ((N) == 1) {                              \
    EMIT(".1d", "{%0}")                                  \
  } else if constexpr ((N) == 2) {                       \
    EMIT(".2d", "{%0, %1}")                              \
  } else if constexpr ((N) == 3) {                       \
    EMIT(".3d", "{%0, %1, %2}")                          \
  } else if constexpr ((N) == 4) {                       \
    EMIT(".4d", "{%0, %1, %2, %3}")                      \
  } else {                                               \
    EMIT(".5d", "{%0, %1, %2, %3, %4}")                  \
  }

// Expands EMIT(dim, coords, offsets) for an im2col rank N (3..5).
#define TMAKIT_PTX_FOR_IM2COL_RANK(N, EMIT)                          \
  if constexpr ((N) == 3) {                                          \
    EMIT(".3d", "{%0, %1, %2}", "{%5}")                              \
  } else if constexpr ((N) == 4) {                                   \
    EMIT(".4d", "{%0, %1, %2, %3}", "{%5, %6}")                      \
  } else {                                                           \
    EMIT(".5d", "{%0, %1, %2, %3, %4}", "{%5, %6, %7}")              \
  }
