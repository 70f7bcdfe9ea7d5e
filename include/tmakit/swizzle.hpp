// The TMA swizzle, one function for host and device: the CPU model, the kernels and the
// pictures all index shared memory through it, so host tests cover the device's index math.
//
// PTX ISA, "Tensor swizzling modes": within each span-sized row of a swizzled tile, 16-byte
// chunk j of row r is stored at chunk j ^ (r mod (span / 16)). Expressed on the byte address
// (the hardware uses shared-memory address bits, so a buffer off the pattern's repeat gets
// the pattern of its absolute address):
//
//   swizzled(addr) = addr ^ (((addr >> 7) & mask) << 4),  mask = span/16 - 1  (7, 3, 1)
//
// i.e. bits [4, 4+log2(span/16)) are XOR-ed with bits [7, 7+log2(span/16)).
// The pattern repeats every 1024 / 512 / 256 bytes (swizzle_repeat_bytes).
#pragma once

#include <cstdint>

#include "tmakit/host/tensor_map_spec.hpp"

#if defined(__CUDACC__)
#define TMAKIT_HOST_DEVICE __host__ __device__
#else
#define TMAKIT_HOST_DEVICE
#endif

namespace tmakit {

// XOR mask applied to the 16-byte chunk index: 7 (128B), 3 (64B), 1 (32B), 0 (none).
TMAKIT_HOST_DEVICE constexpr std::uint32_t swizzle_chunk_mask(Swizzle s) {
  return s == Swizzle::bytes128 ? 7u : s == Swizzle::bytes64 ? 3u : s == Swizzle::bytes32 ? 1u : 0u;
}

// Alignment a swizzled buffer needs so offsets from its start follow the pattern (D2).
TMAKIT_HOST_DEVICE constexpr std::uint32_t swizzle_repeat_bytes(Swizzle s) {
  return s == Swizzle::bytes128 ? 1024u
         : s == Swizzle::bytes64 ? 512u
         : s == Swizzle::bytes32 ? 256u
                                 : 128u;
}

// Where the byte at unswizzled shared-memory address (or aligned offset) `addr` is stored.
// An involution: swizzle_address(s, swizzle_address(s, a)) == a.
TMAKIT_HOST_DEVICE constexpr std::uint32_t swizzle_address(Swizzle s, std::uint32_t addr) {
  return addr ^ (((addr >> 7) & swizzle_chunk_mask(s)) << 4);
}

// Compile-time form for kernels: Swizzled<Swizzle::bytes128>::apply(offset).
template <Swizzle S>
struct Swizzled {
  static constexpr std::uint32_t mask = swizzle_chunk_mask(S);
  static constexpr std::uint32_t repeat_bytes = swizzle_repeat_bytes(S);
  TMAKIT_HOST_DEVICE static constexpr std::uint32_t apply(std::uint32_t offset) {
    return offset ^ (((offset >> 7) & mask) << 4);
  }
};

// Byte offset of element (row, col) of a tile whose rows are `row_bytes` apart (the span for
// a swizzled tile, O2), element size `elem_bytes`, stored with swizzle `s` at an aligned base.
TMAKIT_HOST_DEVICE constexpr std::uint32_t swizzled_offset(Swizzle s, std::uint32_t row,
                                                           std::uint32_t col,
                                                           std::uint32_t row_bytes,
                                                           std::uint32_t elem_bytes) {
  return swizzle_address(s, row * row_bytes + col * elem_bytes);
}

static_assert(swizzle_address(Swizzle::bytes128, 128 + 16) == 128 + 0);
static_assert(swizzle_address(Swizzle::bytes128, 7 * 128) == 7 * 128 + 7 * 16);
static_assert(swizzle_address(Swizzle::bytes64, 4 * 128 + 16) == 4 * 128 + 16);
static_assert(swizzle_address(Swizzle::bytes32, 128) == 128 + 16);
static_assert(swizzle_address(Swizzle::none, 12345) == 12345);

}  // namespace tmakit
