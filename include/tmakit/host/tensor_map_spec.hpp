// TensorMapSpec: a plain value describing one tiled or im2col tensor map, exactly the
// arguments of cuTensorMapEncodeTiled / cuTensorMapEncodeIm2col. It may hold values the
// driver refuses; validate() (host/validate.hpp) says which rule they break.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "tmakit/core/dtype.hpp"

namespace tmakit {

inline constexpr int kMaxRank = 5;

enum class EncodeKind : std::uint8_t { tiled, im2col };

// Enum values equal the driver's (CUtensorMapInterleave, ...), so a cast converts.
enum class Interleave : std::uint8_t { none = 0, bytes16 = 1, bytes32 = 2 };
enum class Swizzle : std::uint8_t { none = 0, bytes32 = 1, bytes64 = 2, bytes128 = 3 };
enum class L2Promotion : std::uint8_t { none = 0, bytes64 = 1, bytes128 = 2, bytes256 = 3 };
// `zero` is the driver's CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: out-of-bounds elements read 0.
enum class OobFill : std::uint8_t { zero = 0, nan_request_zero_fma = 1 };

// Swizzle span in bytes (0 for none): the inner box row limit of rule T9.
constexpr int swizzle_span_bytes(Swizzle s) {
  switch (s) {
    case Swizzle::bytes32: return 32;
    case Swizzle::bytes64: return 64;
    case Swizzle::bytes128: return 128;
    default: return 0;
  }
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
  std::uint32_t channels_per_pixel = 0;
  std::uint32_t pixels_per_column = 0;
  std::array<std::uint32_t, kMaxRank> element_strides{1, 1, 1, 1, 1};
  Interleave interleave = Interleave::none;
  Swizzle swizzle = Swizzle::none;
  L2Promotion l2_promotion = L2Promotion::none;
  OobFill oob_fill = OobFill::zero;

  friend bool operator==(const TensorMapSpec&, const TensorMapSpec&) = default;
};

// Names as the driver spells them without prefix ("128B", "NAN_REQUEST_ZERO_FMA"),
// the spelling of `tmakit check`'s JSON lines.
std::string_view name(EncodeKind v);
std::string_view name(Interleave v);
std::string_view name(Swizzle v);
std::string_view name(L2Promotion v);
std::string_view name(OobFill v);
std::optional<EncodeKind> parse_encode_kind(std::string_view s);
std::optional<Interleave> parse_interleave(std::string_view s);
std::optional<Swizzle> parse_swizzle(std::string_view s);
std::optional<L2Promotion> parse_l2_promotion(std::string_view s);
std::optional<OobFill> parse_oob_fill(std::string_view s);

// Elements one box delivers along dimension d: ceil(boxDim / elementStride) (T8), except
// dimension 0 without interleave, where the hardware ignores the element stride.
// With interleave 16B/32B (tiled, measured on H200, docs/hardware.md H12) dimension 0 counts
// slices of 16/32 bytes, not elements, and dimension rank-2 delivers 1 whatever its box.
// For im2col, dimension 0 delivers channelsPerPixel and dimension 1 pixelsPerColumn.
std::uint64_t box_elements(const TensorMapSpec& spec, int d);
// Bytes one copy delivers (O3): element size (the slice size with interleave) x product of
// box_elements.
std::uint64_t box_bytes(const TensorMapSpec& spec);

}  // namespace tmakit
