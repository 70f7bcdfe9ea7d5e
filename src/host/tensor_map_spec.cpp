#include "tmakit/host/tensor_map_spec.hpp"

#include <algorithm>
#include <iterator>
#include <string>

#include "tmakit/core/error.hpp"

namespace tmakit {
namespace {

template <class Enum, std::size_t N>
std::optional<Enum> parse_from(const std::string_view (&names)[N], std::string_view s) {
  const auto it = std::find(std::begin(names), std::end(names), s);
  if (it == std::end(names)) return std::nullopt;
  return static_cast<Enum>(it - std::begin(names));
}

constexpr std::string_view kArchNames[] = {"sm_90a", "sm_100a", "sm_103a", "sm_120a"};
constexpr std::string_view kEncodeKindNames[] = {"tiled", "im2col", "im2col_wide"};
constexpr std::string_view kInterleaveNames[] = {"NONE", "16B", "32B"};
constexpr std::string_view kSwizzleNames[] = {
    "NONE", "32B", "64B", "128B", "128B_ATOM_32B", "128B_ATOM_32B_FLIP_8B", "128B_ATOM_64B"};
constexpr std::string_view kIm2colWideModeNames[] = {"W", "W128"};
constexpr std::string_view kTileModeNames[] = {"tile", "gather4", "scatter4"};
constexpr std::string_view kDirectionNames[] = {"any", "load", "store", "reduce"};
constexpr std::string_view kL2PromotionNames[] = {"NONE", "64B", "128B", "256B"};
constexpr std::string_view kOobFillNames[] = {"NONE", "NAN_REQUEST_ZERO_FMA"};

}  // namespace

// NOTE: a value past its enum (a cast from the driver's integer) names itself "?", never
// reads past the table.
template <std::size_t N>
std::string_view name_in(const std::string_view (&names)[N], int v) {
  return v >= 0 && static_cast<std::size_t>(v) < N ? names[v] : std::string_view("?");
}

std::string_view name(Arch v) {
  return name_in(kArchNames, static_cast<int>(v));
}
std::string_view name(EncodeKind v) {
  return name_in(kEncodeKindNames, static_cast<int>(v));
}
std::string_view name(Im2colWideMode v) {
  return name_in(kIm2colWideModeNames, static_cast<int>(v));
}
std::string_view name(TileMode v) {
  return name_in(kTileModeNames, static_cast<int>(v));
}
std::string_view name(Direction v) {
  return name_in(kDirectionNames, static_cast<int>(v));
}
std::string_view name(Interleave v) {
  return name_in(kInterleaveNames, static_cast<int>(v));
}
std::string_view name(Swizzle v) {
  return name_in(kSwizzleNames, static_cast<int>(v));
}
std::string_view name(L2Promotion v) {
  return name_in(kL2PromotionNames, static_cast<int>(v));
}
std::string_view name(OobFill v) {
  return name_in(kOobFillNames, static_cast<int>(v));
}

std::optional<Arch> parse_arch(std::string_view s) {
  return parse_from<Arch>(kArchNames, s);
}
std::string_view arch_names() {
  return "sm_90a, sm_100a, sm_103a, sm_120a";
}
std::optional<Arch> arch_of_compute_capability(int major, int minor) {
  if (major == 9 && minor == 0) return Arch::sm_90a;
  if (major == 10 && minor == 0) return Arch::sm_100a;
  if (major == 10 && minor == 3) return Arch::sm_103a;
  if (major == 12) return Arch::sm_120a;
  return std::nullopt;
}
std::optional<Im2colWideMode> parse_im2col_wide_mode(std::string_view s) {
  return parse_from<Im2colWideMode>(kIm2colWideModeNames, s);
}
std::optional<TileMode> parse_tile_mode(std::string_view s) {
  return parse_from<TileMode>(kTileModeNames, s);
}
std::optional<Direction> parse_direction(std::string_view s) {
  return parse_from<Direction>(kDirectionNames, s);
}
std::optional<EncodeKind> parse_encode_kind(std::string_view s) {
  return parse_from<EncodeKind>(kEncodeKindNames, s);
}
std::optional<Interleave> parse_interleave(std::string_view s) {
  return parse_from<Interleave>(kInterleaveNames, s);
}
std::optional<Swizzle> parse_swizzle(std::string_view s) {
  return parse_from<Swizzle>(kSwizzleNames, s);
}
std::optional<L2Promotion> parse_l2_promotion(std::string_view s) {
  return parse_from<L2Promotion>(kL2PromotionNames, s);
}
std::optional<OobFill> parse_oob_fill(std::string_view s) {
  return parse_from<OobFill>(kOobFillNames, s);
}

std::uint64_t box_elements(const TensorMapSpec& spec, int d) {
  if (d < 0 || d >= kMaxRank) {
    throw Error("box_elements: dimension d = " + std::to_string(d) + " is outside 0.." +
                std::to_string(kMaxRank - 1) + " (a tensor map has at most " +
                std::to_string(kMaxRank) + " dimensions)");
  }
  if (spec.kind == EncodeKind::im2col_wide) {
    // NOTE: the halo pixels (the copy's wHalo operand) come on top; counted here without them.
    if (d == 0) return spec.channels_per_pixel;
    if (d == 1) return spec.wide_mode == Im2colWideMode::w128 ? 128 : spec.pixels_per_column;
    return 1;
  }
  if (spec.kind == EncodeKind::tiled && spec.tile_mode != TileMode::tile && d == 1) return 4;
  if (spec.kind == EncodeKind::im2col) {
    if (d == 0) return spec.channels_per_pixel;
    if (d == 1) return spec.pixels_per_column;
    return 1;
  }
  // NOTE: without interleave the hardware ignores elementStrides[0] and delivers boxDim[0]
  // consecutive elements (measured on H200: a barrier armed with ceil(boxDim[0] / stride)
  // never completes). Other dimensions deliver ceil(boxDim / elementStride).
  if (d == 0 && spec.interleave == Interleave::none) return spec.box_dim[0];
  // NOTE: measured on H200 (docs/hardware.md H12): with interleave the copy does not walk
  // dimension rank-2; it reads only the coordinate's own index there, whatever its boxDim.
  if (spec.interleave != Interleave::none && spec.rank >= 3 &&
      static_cast<std::uint32_t>(d) == spec.rank - 2) {
    return 1;
  }
  const std::uint64_t stride = std::max<std::uint32_t>(spec.element_strides[d], 1);
  return (spec.box_dim[d] + stride - 1) / stride;
}

std::uint64_t box_bytes(const TensorMapSpec& spec) {
  if (spec.rank < 1 || spec.rank > static_cast<std::uint32_t>(kMaxRank)) return 0;
  // NOTE: H12: with interleave each dimension-0 step is one whole 16- or 32-byte slice
  const int dims = spec.kind == EncodeKind::tiled ? static_cast<int>(spec.rank) : 2;
  constexpr std::uint64_t kSaturated = ~std::uint64_t{0};
  // (a box no spec passing the rules has, e.g. 65536^4 bytes, saturates rather than wraps)
  auto times = [](std::uint64_t a, std::uint64_t b) {
    std::uint64_t product = 0;
    return __builtin_mul_overflow(a, b, &product) ? kSaturated : product;
  };
  if (is_packed(spec.data_type)) {
    // NOTE: packed bytes, as CUTLASS and tilelang arm the barrier (docs/model.md, "Blackwell").
    std::uint64_t values = 1;
    for (int d = 0; d < dims && d < kMaxRank; ++d) values = times(values, box_elements(spec, d));
    const auto bits = static_cast<std::uint64_t>(value_bits(spec.data_type));
    return values == kSaturated || values > kSaturated / bits ? kSaturated : values * bits / 8;
  }
  std::uint64_t n = spec.kind == EncodeKind::tiled && spec.interleave != Interleave::none
                        ? static_cast<std::uint64_t>(interleave_bytes(spec.interleave))
                        : static_cast<std::uint64_t>(element_bytes(spec.data_type));
  for (int d = 0; d < dims && d < kMaxRank; ++d) n = times(n, box_elements(spec, d));
  return n;
}

}  // namespace tmakit
