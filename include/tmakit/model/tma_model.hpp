// A bit-exact CPU model of what one TMA operation does: which shared-memory bytes a load
// writes (box walk, element strides, out-of-bounds fill, interleave, swizzle by address), what
// a store or a reduce does to global memory, im2col loads, multicast and prefetch.
//
// Global memory is a byte span whose byte 0 sits at spec.global_address. Reading or writing a
// byte outside it throws ModelError; nothing here indexes out of range. Shared memory is a
// buffer starting at shared-memory address `smem_address`, a multiple of 128 as TMA's operand
// is (docs/hardware.md D1; another throws ModelError; only its low 10 bits matter: the
// swizzle is a function of the address, D2, O5), reported as SharedBytes.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tmakit/core/error.hpp"
#include "tmakit/core/reduce.hpp"
#include "tmakit/host/tensor_map_spec.hpp"

namespace tmakit::model {

// The model was asked for something it cannot answer: a global byte outside the given span,
// a spec it cannot walk (rank 9, box 0), a reduce the hardware does not define.
class ModelError : public Error {
 public:
  using Error::Error;
};

// Signed 32-bit tensor coordinates, dimension 0 first (D3).
using Coords = std::array<std::int32_t, kMaxRank>;

// Shared-memory layout of one box (docs/hardware.md O2): `rows` rows of `row_bytes` data bytes each,
// `pitch_bytes` apart. With a swizzle (and no interleave) a row narrower than the span still
// takes a full span; the bytes past the data are never written. With interleave 16B/32B a row
// is ceil(boxDim[0] / elementStrides[0]) slices of 16/32 bytes and dimension rank-2 adds no
// rows (docs/hardware.md H12).
struct Footprint {
  std::uint32_t rows = 0;
  std::uint32_t row_bytes = 0;    // elements of dimension 0 x element size
  std::uint32_t pitch_bytes = 0;  // distance between rows
  std::uint32_t total_bytes = 0;  // rows x pitch
};
Footprint footprint(const TensorMapSpec& spec);

// What a load leaves in a shared-memory buffer of `bytes.size()` bytes.
struct SharedBytes {
  std::vector<std::uint8_t> bytes;    // the value of each written byte; 0 where unwritten
  std::vector<std::uint8_t> written;  // 1 where the copy wrote the byte, 0 where untouched
  std::uint64_t tx_bytes = 0;         // bytes counted on the mbarrier (O3)
};

// --- loads ----------------------------------------------------------------------------------

// cp.async.bulk.tensor.Nd.shared.global.tile: the box at `coords` into a buffer at shared
// address `smem_address`. The result covers footprint(spec).total_bytes bytes. A coords[0]
// off 16 bytes throws ModelError (tiled_coords_refused_reason).
SharedBytes load_tiled(const TensorMapSpec& spec, std::span<const std::uint8_t> global,
                       const Coords& coords, std::uint32_t smem_address = 0);

// Why a tiled copy (`copy`: load, store or reduce) at `coords` kills the kernel, or empty:
// without interleave, coords[0] times the element size must be a multiple of 16 bytes,
// negative coordinates too (docs/hardware.md O1; measured on H200 for loads and stores, INT32
// at x = 1, 2, 3, 290, 991 killed and 0, 4, 288, 992 moved the box; loads at -1 killed, at -4
// ran; reduces refused with stores, not measured). The message says where the box may start:
// a load left of x, a wider box; a store or reduce right of x (its box writes every column).
// Interleaved maps (dimension 0 in 16- or 32-byte slices) and the packed types (their own
// rule) are not judged here.
std::string tiled_coords_refused_reason(const TensorMapSpec& spec, const Coords& coords,
                                        Direction copy = Direction::load);

// cp.async.bulk.tensor.Nd.shared.global.im2col: `coords` are (c, w, h, d, n) in dimension
// order, `offsets` the rank-2 im2col offsets (w first). The result covers pixelsPerColumn
// rows of channelsPerPixel elements (footprint(spec)). Pixels step by the traversal strides
// (elementStrides[1..rank-1], the image dimension's included). A pixel coordinate outside the
// pixel box throws ModelError: on H200 that load kills the kernel (docs/hardware.md H10).
SharedBytes load_im2col(const TensorMapSpec& spec, std::span<const std::uint8_t> global,
                        const Coords& coords, const std::array<std::uint16_t, 3>& offsets,
                        std::uint32_t smem_address = 0);

// Why an im2col load at `coords` kills the kernel, or empty: each pixel coordinate
// (coords[1..rank-2], W H D) must lie in its pixel box, lowerCorner[i] ..
// globalDim[i+1] - 1 + upperCorner[i], both ends included (H10). The channel and image
// coordinates may lie anywhere (their out-of-bounds elements are filled).
std::string im2col_coords_refused_reason(const TensorMapSpec& spec, const Coords& coords);

// .multicast::cluster: every CTA whose bit is set in `cta_mask` receives the same box at the
// same shared-memory offset (and the complete_tx on its own barrier). Entry i of the result
// belongs to CTA rank i of a cluster of `cluster_size` CTAs; nullopt for CTAs not in the mask.
std::vector<std::optional<SharedBytes>> load_multicast(const TensorMapSpec& spec,
                                                       std::span<const std::uint8_t> global,
                                                       const Coords& coords, std::uint16_t cta_mask,
                                                       std::uint32_t cluster_size,
                                                       std::uint32_t smem_address = 0);

// cp.async.bulk.prefetch.tensor: warms L2 only, never touches shared memory. Returns the
// global byte ranges [begin, end) (offsets from global_address) the box covers in bounds, so
// a caller can see what would be fetched; needs no global bytes.
struct ByteRange {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};
std::vector<ByteRange> prefetch_tiled(const TensorMapSpec& spec, const Coords& coords);

// --- stores and reduces -----------------------------------------------------------------------

// cp.async.bulk.tensor.Nd.global.shared::cta.tile: writes the in-bounds part of the box from
// `smem` (a buffer at `smem_address`, at least footprint(spec).total_bytes long) into
// `global`; the out-of-bounds part is dropped (D3), except that dimension 0 is written in whole
// 16-byte chunks: elements past globalDim[0] sharing the last chunk are written into the row's
// padding (measured on H200). A box wholly outside the tensor, one that starts at a negative
// coordinate, or a coords[0] off 16 bytes (tiled_coords_refused_reason) throws ModelError: on
// H200 such a store kills the kernel ("illegal instruction").
void store_tiled(const TensorMapSpec& spec, std::span<std::uint8_t> global,
                 std::span<const std::uint8_t> smem, const Coords& coords,
                 std::uint32_t smem_address = 0);

// The global byte ranges [begin, end) (offsets from global_address) store_tiled and
// reduce_tiled write for a box at `coords`: its in-bounds elements and, along dimension 0, the
// rest of the last 16-byte chunk (the padding above). Throws as store_tiled does for a box it
// refuses; needs no bytes.
std::vector<ByteRange> store_tiled_ranges(const TensorMapSpec& spec, const Coords& coords);

using ReduceOp = ::tmakit::ReduceOp;  // core/reduce.hpp, with name(ReduceOp): "add", "and", ...
using ::tmakit::name;
std::optional<ReduceOp> parse_reduce_op(std::string_view s);  // inverse of name()

// Whether the model (and the hardware) defines `op` on `type`, by reduce_defined_on
// (core/reduce.hpp): add on u32/s32/u64/f32/f16/bf16, min/max on u32/s32/u64/s64/f16/bf16,
// inc/dec on u32, and/or/xor on u32/s32/u64. Add on UINT8 (fp8's carrier) or INT64 and `and`
// on INT64 killed the kernel on H200 (or/xor on INT64, not measured, are refused with them).
// Empty when supported, else why.
std::string reduce_unsupported_reason(ReduceOp op, DataType type);

// cp.reduce.async.bulk.tensor.Nd.global.shared::cta.OP.tile: global = global OP smem for
// every element store_tiled would write. Throws ModelError for unsupported pairs.
void reduce_tiled(const TensorMapSpec& spec, ReduceOp op, std::span<std::uint8_t> global,
                  std::span<const std::uint8_t> smem, const Coords& coords,
                  std::uint32_t smem_address = 0);

// One element of `type` reduced: `dst` = `dst` OP `src`, both element_bytes(type) long,
// little-endian. Exposed so tests check the arithmetic alone.
void reduce_element(ReduceOp op, DataType type, std::uint8_t* dst, const std::uint8_t* src);

// --- helpers ----------------------------------------------------------------------------------

// The bytes an out-of-bounds element is filled with (zero, or 0x7FF7 repeated, O4).
std::array<std::uint8_t, 8> oob_fill_bytes(const TensorMapSpec& spec);

// Throws ModelError when the spec is outside what the model can walk (rank, dims, box,
// strides, sizes). Not the validator: it accepts specs the driver refuses if they are walkable.
void check_walkable(const TensorMapSpec& spec);

}  // namespace tmakit::model
