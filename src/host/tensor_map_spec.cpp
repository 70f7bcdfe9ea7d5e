#include "tmakit/host/tensor_map_spec.hpp"

#include <algorithm>
#include <iterator>

namespace tmakit {
namespace {

template <class Enum, std::size_t N>
std::optional<Enum> parse_from(const std::string_view (&names)[N], std::string_view s) {
  const auto it = std::find(std::begin(names), std::end(names), s);
  if (it == std::end(names)) return std::nullopt;
  return static_cast<Enum>(it - std::begin(names));
}

constexpr std::string_view kEncodeKindNames[] = {"tiled", "im2col"};
constexpr std::string_view kInterleaveNames[] = {"NONE", "16B", "32B"};
constexpr std::string_view kSwizzleNames[] = {"NONE", "32B", "64B", "128B"};
constexpr std::string_view kL2PromotionNames[] = {"NONE", "64B", "128B", "256B"};
constexpr std::string_view kOobFillNames[] = {"NONE", "NAN_REQUEST_ZERO_FMA"};

}  // namespace

std::string_view name(EncodeKind v) { return kEncodeKindNames[static_cast<int>(v)]; }
std::string_view name(Interleave v) { return kInterleaveNames[static_cast<int>(v)]; }
std::string_view name(Swizzle v) { return kSwizzleNames[static_cast<int>(v)]; }
std::string_view name(L2Promotion v) { return kL2PromotionNames[static_cast<int>(v)]; }
std::string_view name(OobFill v) { return kOobFillNames[static_cast<int>(v)]; }

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
  // NOTE: H12: with interleave each dimension-0 step is one whole 16- or 32-byte slice
  std::uint64_t n = spec.kind == EncodeKind::tiled && spec.interleave != Interleave::none
                        ? static_cast<std::uint64_t>(interleave_bytes(spec.interleave))
                        : static_cast<std::uint64_t>(element_bytes(spec.data_type));
  const int dims = spec.kind == EncodeKind::im2col ? 2 : static_cast<int>(spec.rank);
  for (int d = 0; d < dims && d < kMaxRank; ++d) n *= box_elements(spec, d);
  return n;
}

}  // namespace tmakit
