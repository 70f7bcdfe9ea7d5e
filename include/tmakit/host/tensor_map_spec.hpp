// TensorMapSpec: a plain value describing one tiled, im2col or im2col-wide tensor map, exactly
// the arguments of cuTensorMapEncodeTiled / cuTensorMapEncodeIm2col /
// cuTensorMapEncodeIm2colWide, plus how the map will be used where the rules depend on it (the
// copy direction, gather4/scatter4). It may hold values the driver refuses; validate()
// (host/validate.hpp) says which rule they break, on which architecture.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "tmakit/core/dtype.hpp"

namespace tmakit {

inline constexpr int kMaxRank = 5;

// The GPU architecture whose rules apply: Hopper (sm_90a), Blackwell B200/GB200 (sm_100a),
// B300 (sm_103a), RTX 50 / GB10 (sm_120a).
enum class Arch : std::uint8_t { sm_90a, sm_100a, sm_103a, sm_120a };
inline constexpr Arch kArchs[] = {Arch::sm_90a, Arch::sm_100a, Arch::sm_103a, Arch::sm_120a};

enum class EncodeKind : std::uint8_t { tiled, im2col, im2col_wide };

// Enum values equal the driver's (CUtensorMapInterleave, ...), so a cast converts.
enum class Interleave : std::uint8_t { none = 0, bytes16 = 1, bytes32 = 2 };
// The 128B_ATOM_* modes (sm_100a and later) swizzle 32- or 64-byte units within the 128-byte
// span instead of 16-byte ones; FLIP_8B also swaps the 8-byte halves of each 16 bytes on
// alternate rows (PTX ISA, "Tensor swizzling modes").
enum class Swizzle : std::uint8_t {
  none = 0,
  bytes32 = 1,
  bytes64 = 2,
  bytes128 = 3,
  bytes128_atom32 = 4,
  bytes128_atom32_flip8 = 5,
  bytes128_atom64 = 6,
};
// CUtensorMapIm2ColWideMode: `.im2col::w` and `.im2col::w::128`.
enum class Im2colWideMode : std::uint8_t { w = 0, w128 = 1 };
// Which copy of a tiled map the map is for: the plain tile, or `.tile::gather4` /
// `.tile::scatter4` (four rows of dimension 1 in one copy, sm_100a and later). Not a driver
// argument: the rules for gather4/scatter4 constrain the map's rank, box and interleave.
enum class TileMode : std::uint8_t { tile, gather4, scatter4 };
// The copies the map is for, where rules depend on it (some packed types and swizzles are
// load- or store-only): `any` (not said: only the rules of every direction apply), a load
// (global -> shared), a store (shared -> global) or a reduction (cp.reduce.async.bulk.tensor).
enum class Direction : std::uint8_t { any, load, store, reduce };
enum class L2Promotion : std::uint8_t { none = 0, bytes64 = 1, bytes128 = 2, bytes256 = 3 };
// `zero` is the driver's CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: out-of-bounds elements read 0.
enum class OobFill : std::uint8_t { zero = 0, nan_request_zero_fma = 1 };

// Swizzle span in bytes (0 for none): the inner box row limit of rule T9.
constexpr int swizzle_span_bytes(Swizzle s) {
  switch (s) {
    case Swizzle::bytes32: return 32;
    case Swizzle::bytes64: return 64;
    case Swizzle::bytes128:
    case Swizzle::bytes128_atom32:
    case Swizzle::bytes128_atom32_flip8:
    case Swizzle::bytes128_atom64: return 128;
    default: return 0;
  }
}
// The padded packed types (16U4_ALIGN16B, 16U6_ALIGN16B): 16 values a 16-byte slot in shared
// memory. A copy's row is exactly kPaddedRowValues of them (rule P3), and they take the
// swizzles of padded_type_takes_swizzle (rule P5: the driver reference's NONE, 128B,
// 128B_ATOM_32B, and 128B_ATOM_64B for stores of the 6-bit type). The validator and `tmakit
// swizzle` read both from here.
constexpr bool is_padded(DataType t) {
  return t == DataType::packed_u4_align16 || t == DataType::packed_u6_align16;
}
inline constexpr std::uint32_t kPaddedRowValues = 128;
constexpr bool padded_type_takes_swizzle(DataType t, Swizzle w) {
  return w == Swizzle::none || w == Swizzle::bytes128 || w == Swizzle::bytes128_atom32 ||
         (t == DataType::packed_u6_align16 && w == Swizzle::bytes128_atom64);
}

constexpr int interleave_bytes(Interleave i) {
  return i == Interleave::bytes16 ? 16 : i == Interleave::bytes32 ? 32 : 0;
}

struct TensorMapSpec {
  EncodeKind kind = EncodeKind::tiled;
  DataType data_type = DataType::float32;
  // Kept wide so an out-of-range rank reaches the validator (rule T3 / I1).
  std::uint32_t rank = 2;
  std::uint64_t global_address = 0;
  std::array<std::uint64_t, kMaxRank> global_dim{};
  // Byte strides of dimensions 1..rank-1 (dimension 0 is dense): rank-1 entries.
  std::array<std::uint64_t, kMaxRank - 1> global_strides_bytes{};
  // Tiled only.
  std::array<std::uint32_t, kMaxRank> box_dim{};
  // Im2col only: corners of the pixel box over dimensions 1..rank-2, and its size.
  std::array<std::int32_t, kMaxRank - 2> pixel_box_lower_corner{};
  std::array<std::int32_t, kMaxRank - 2> pixel_box_upper_corner{};
  // Im2col and im2col-wide.
  std::uint32_t channels_per_pixel = 0;
  std::uint32_t pixels_per_column = 0;
  // Im2col-wide only: the box's corners along W (the box is one pixel along D and H).
  std::int32_t pixel_box_lower_corner_width = 0;
  std::int32_t pixel_box_upper_corner_width = 0;
  Im2colWideMode wide_mode = Im2colWideMode::w;
  std::array<std::uint32_t, kMaxRank> element_strides{1, 1, 1, 1, 1};
  Interleave interleave = Interleave::none;
  Swizzle swizzle = Swizzle::none;
  L2Promotion l2_promotion = L2Promotion::none;
  OobFill oob_fill = OobFill::zero;
  // How the map will be used (not driver arguments; tile_mode for tiled maps only).
  TileMode tile_mode = TileMode::tile;
  Direction direction = Direction::any;

  friend bool operator==(const TensorMapSpec&, const TensorMapSpec&) = default;
};

// Names as the driver spells them without prefix ("128B", "NAN_REQUEST_ZERO_FMA"),
// the spelling of `tmakit check`'s JSON lines.
std::string_view name(Arch v);
std::string_view name(EncodeKind v);
std::string_view name(Im2colWideMode v);
std::string_view name(TileMode v);
std::string_view name(Direction v);
std::string_view name(Interleave v);
std::string_view name(Swizzle v);
std::string_view name(L2Promotion v);
std::string_view name(OobFill v);
std::optional<Arch> parse_arch(std::string_view s);
// "sm_90a, sm_100a, sm_103a, sm_120a": for messages that refuse an unknown name.
std::string_view arch_names();
// The architecture of a compute capability (9.0 -> sm_90a, 10.0 -> sm_100a, 10.3 -> sm_103a,
// 12.x -> sm_120a); nullopt for one tmakit has no rules for.
std::optional<Arch> arch_of_compute_capability(int major, int minor);
std::optional<EncodeKind> parse_encode_kind(std::string_view s);
std::optional<Im2colWideMode> parse_im2col_wide_mode(std::string_view s);
std::optional<TileMode> parse_tile_mode(std::string_view s);
std::optional<Direction> parse_direction(std::string_view s);
std::optional<Interleave> parse_interleave(std::string_view s);
std::optional<Swizzle> parse_swizzle(std::string_view s);
std::optional<L2Promotion> parse_l2_promotion(std::string_view s);
std::optional<OobFill> parse_oob_fill(std::string_view s);

// Elements one box delivers along dimension d: ceil(boxDim / elementStride) (T8), except
// dimension 0 without interleave, where the hardware ignores the element stride.
// With interleave 16B/32B (tiled, measured on H200, docs/hardware.md H12) dimension 0 counts
// slices of 16/32 bytes, not elements, and dimension rank-2 delivers 1 whatever its box.
// For im2col, dimension 0 delivers channelsPerPixel and dimension 1 pixelsPerColumn.
// For im2col-wide, dimension 1 delivers pixelsPerColumn in mode W and 128 in mode W128.
// gather4/scatter4 deliver 4 rows of boxDim[0] (dimension 1 counts 4).
// Throws Error for d outside 0..kMaxRank-1.
std::uint64_t box_elements(const TensorMapSpec& spec, int d);
// Bytes one copy delivers (O3): element size (the slice size with interleave) x product of
// box_elements. For the packed types, the packed global bytes (values x value_bits / 8): the
// byte count an mbarrier expects (docs/model.md), not the padded shared footprint.
// 0 for a rank outside 1..kMaxRank, which no copy has; 2^64 - 1 for a box of more bytes (one
// the rules refuse: a box that passes them is at most 256^5 elements).
std::uint64_t box_bytes(const TensorMapSpec& spec);

}  // namespace tmakit
