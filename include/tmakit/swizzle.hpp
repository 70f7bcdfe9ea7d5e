// The TMA swizzle, one function for host and device: the CPU model, the kernels and the
// pictures all index shared memory through it, so host tests cover the device's index math.
//
// PTX ISA, "Tensor swizzling modes": within each span-sized row of a swizzled tile, 16-byte
// chunk j of row r is stored at chunk j ^ ((r * span / 128) mod (span / 16)): for the 128B
// span j ^ (r mod 8), for 64B j ^ ((r / 2) mod 4), for 32B j ^ ((r / 4) mod 2), the XOR taken
// from the address's 128-byte line, not from the row. Expressed on the byte address (the
// hardware uses shared-memory address bits, so a buffer off the pattern's repeat gets the
// pattern of its absolute address):
//
//   swizzled(addr) = addr ^ (((addr >> 7) & mask) << 4),  mask = span/16 - 1  (7, 3, 1)
//
// i.e. bits [4, 4+log2(span/16)) are XOR-ed with bits [7, 7+log2(span/16)).
// The pattern repeats every 1024 / 512 / 256 bytes (swizzle_repeat_bytes).
//
// Blackwell's 128-byte modes with a swizzle atomicity (sm_100a and later; PTX ISA, "Tensor
// swizzling modes", the 128B mode's atomicity sub-modes and their tables) move 32- or 64-byte
// units instead of 16-byte chunks, within the same 128-byte rows:
//
//   128B_ATOM_32B:  32-byte unit p of row r is stored at unit p ^ (r mod 4)
//                   swizzled(addr) = addr ^ (((addr >> 7) & 3) << 5)
//   128B_ATOM_64B:  64-byte half h of row r is stored at half h ^ (r mod 2)
//                   swizzled(addr) = addr ^ (((addr >> 7) & 1) << 6)
//   128B_ATOM_32B_FLIP_8B: as 128B_ATOM_32B, and on every alternate row the two 8-byte halves
//                   of each 16 bytes trade places: swizzled(addr) ^= ((addr >> 7) & 1) << 3
//
// NOTE: which rows flip (odd or even) the PTX ISA shows only in a figure, not in its text;
// tmakit flips the odd rows (row bit 7 set) and docs/swizzle.md says this awaits hardware.
// As for the Hopper modes, the row is taken from the address bits, so the patterns follow the
// absolute shared-memory address (a buffer on a 1024-byte boundary starts at row 0).
#pragma once

#include <cstdint>

#include "tmakit/core/host_device.hpp"
#include "tmakit/host/tensor_map_spec.hpp"


namespace tmakit {

// XOR mask applied to the 16-byte chunk index: 7 (128B), 3 (64B), 1 (32B), 0 (none and the
// 128B_ATOM_* modes, which move larger units: swizzle_address).
TMAKIT_HOST_DEVICE constexpr std::uint32_t swizzle_chunk_mask(Swizzle s) {
  return s == Swizzle::bytes128 ? 7u : s == Swizzle::bytes64 ? 3u : s == Swizzle::bytes32 ? 1u : 0u;
}

// The unit a swizzle keeps whole: 16 bytes (the Hopper modes), 32 or 64 (the atomicity of the
// 128B_ATOM_* modes; the 8-byte flip still keeps 8-byte halves whole).
TMAKIT_HOST_DEVICE constexpr std::uint32_t swizzle_atom_bytes(Swizzle s) {
  return s == Swizzle::bytes128_atom64                                          ? 64u
         : s == Swizzle::bytes128_atom32 || s == Swizzle::bytes128_atom32_flip8 ? 32u
                                                                                : 16u;
}

// Alignment a swizzled buffer needs so offsets from its start follow the pattern (D2).
// NOTE: the 128B_ATOM_* patterns repeat every 4 or 2 rows, but the PTX ISA gives the 128-byte
// mode's 1024-byte boundary for its base offset and no other for the sub-modes: 1024 here.
TMAKIT_HOST_DEVICE constexpr std::uint32_t swizzle_repeat_bytes(Swizzle s) {
  return s == Swizzle::bytes128 || s == Swizzle::bytes128_atom32 ||
                 s == Swizzle::bytes128_atom32_flip8 || s == Swizzle::bytes128_atom64
             ? 1024u
         : s == Swizzle::bytes64 ? 512u
         : s == Swizzle::bytes32 ? 256u
                                 : 128u;
}

// Where the byte at unswizzled shared-memory address (or aligned offset) `addr` is stored.
// An involution: swizzle_address(s, swizzle_address(s, a)) == a.
TMAKIT_HOST_DEVICE constexpr std::uint32_t swizzle_address(Swizzle s, std::uint32_t addr) {
  switch (s) {
    case Swizzle::bytes128_atom32: return addr ^ (((addr >> 7) & 3u) << 5);
    case Swizzle::bytes128_atom32_flip8:
      return addr ^ (((addr >> 7) & 3u) << 5) ^ (((addr >> 7) & 1u) << 3);
    case Swizzle::bytes128_atom64: return addr ^ (((addr >> 7) & 1u) << 6);
    default: return addr ^ (((addr >> 7) & swizzle_chunk_mask(s)) << 4);
  }
}

// Compile-time form for kernels: Swizzled<Swizzle::bytes128>::apply(offset).
template <Swizzle S>
struct Swizzled {
  static constexpr std::uint32_t mask = swizzle_chunk_mask(S);
  static constexpr std::uint32_t repeat_bytes = swizzle_repeat_bytes(S);
  TMAKIT_HOST_DEVICE static constexpr std::uint32_t apply(std::uint32_t offset) {
    return swizzle_address(S, offset);
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
// Row 1 of 128B_ATOM_32B stores the pairs 23|01|67|45; row 3 of 128B_ATOM_64B its halves swapped.
static_assert(swizzle_address(Swizzle::bytes128_atom32, 128 + 0) == 128 + 32);
static_assert(swizzle_address(Swizzle::bytes128_atom64, 3 * 128 + 64) == 3 * 128 + 0);

}  // namespace tmakit
