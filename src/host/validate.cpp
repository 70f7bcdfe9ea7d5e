// The tensor-map rules. Each is one function that throws RuleViolation(id, message) with the
// offending values and a fix. Ids follow TMA_FACTS.md: T* tiled (and shared with im2col),
// I* im2col only, X* found by sweeping the real driver (docs/rules.md lists them all).
#include "tmakit/host/validate.hpp"

#include <cstdio>
#include <string>

namespace tmakit {
namespace {

using std::to_string;

[[noreturn]] void broken(const char* id, const std::string& message) {
  throw RuleViolation(id, message);
}

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

constexpr std::uint64_t kTwo32 = std::uint64_t{1} << 32;
constexpr std::uint64_t kTwo40 = std::uint64_t{1} << 40;

bool tiled(const TensorMapSpec& s) { return s.kind == EncodeKind::tiled; }
int esize(const TensorMapSpec& s) { return element_bytes(s.data_type); }
std::string dt(const TensorMapSpec& s) { return std::string(name(s.data_type)); }
std::string idx(const char* array, std::size_t i) {
  return std::string(array) + "[" + to_string(i) + "]";
}

// --- T2: the data type is one of Hopper's 13 -------------------------------------------
void t2_data_type(const TensorMapSpec& s) {
  const int t = static_cast<int>(s.data_type);
  if (t < 0 || t >= kDataTypeCount) {
    broken("T2", "data type " + to_string(t) +
                     " is not a Hopper tensor-map type; fp8 travels as UINT8, packed 4/6-bit "
                     "types need Blackwell");
  }
}

// --- T3 / I1: rank --------------------------------------------------------------------
void t3_rank(const TensorMapSpec& s) {
  if (s.rank < 1 || s.rank > 5) {
    broken("T3", "rank = " + to_string(s.rank) +
                     " is outside 1..5; fold the extra dimensions into ones whose byte strides "
                     "allow it");
  }
  if (s.interleave != Interleave::none && s.rank < 3) {
    broken("T3", "rank = " + to_string(s.rank) + " with interleave " +
                     std::string(name(s.interleave)) +
                     "; interleaved maps need rank >= 3: use interleave NONE or add a dimension");
  }
}
void i1_rank(const TensorMapSpec& s) {
  if (s.rank < 3 || s.rank > 5) {
    broken("I1", "rank = " + to_string(s.rank) +
                     " is outside 3..5; im2col maps are NWC (3), NHWC (4) or NDHWC (5) with "
                     "channels innermost");
  }
}

// --- T4: global address alignment ----------------------------------------------------
void t4_address(const TensorMapSpec& s) {
  const std::uint64_t align = s.interleave == Interleave::bytes32 ? 32 : 16;
  if (s.global_address % align != 0) {
    broken("T4", "globalAddress = " + hex(s.global_address) + " is not " + to_string(align) +
                     "-byte aligned (address % " + to_string(align) + " = " +
                     to_string(s.global_address % align) + "); use " +
                     hex(s.global_address - s.global_address % align) +
                     " and offset the coordinates, or allocate with cudaMalloc");
  }
}

// --- T5: global dims --------------------------------------------------------------------
void t5_global_dims(const TensorMapSpec& s) {
  for (std::size_t d = 0; d < s.rank; ++d) {
    const auto v = s.global_dim[d];
    if (v == 0 || v > kTwo32) {
      broken("T5", idx("globalDim", d) + " = " + to_string(v) +
                       " is outside 1..2^32 (4294967296); " +
                       (v == 0 ? "an empty tensor needs no copy" : "split the dimension in two"));
    }
  }
}

// --- T6: global strides -----------------------------------------------------------------
void t6_global_strides(const TensorMapSpec& s) {
  const std::uint64_t align = s.interleave == Interleave::bytes32 ? 32 : 16;
  for (std::size_t i = 0; i + 1 < s.rank; ++i) {
    const auto v = s.global_strides_bytes[i];
    if (v % align != 0) {
      const auto up = (v / align + 1) * align;
      broken("T6", idx("globalStrides", i) + " = " + to_string(v) + " bytes (dimension " +
                       to_string(i + 1) + ") is not a multiple of " + to_string(align) +
                       "; pad to " + to_string(up) + " bytes");
    }
    if (v >= kTwo40) {
      broken("T6", idx("globalStrides", i) + " = " + to_string(v) +
                       " bytes is not below 2^40 (1099511627776); no tensor that large is "
                       "addressable by TMA");
    }
  }
}

// --- T7: box dims -----------------------------------------------------------------------
void t7_box_dims(const TensorMapSpec& s) {
  for (std::size_t d = 0; d < s.rank; ++d) {
    const auto v = s.box_dim[d];
    if (v == 0 || v > 256) {
      broken("T7", idx("boxDim", d) + " = " + to_string(v) +
                       " is outside 1..256; cover larger tiles with several copies");
    }
  }
  // NOTE: documented for interleave NONE only; the driver enforces it for every interleave.
  {
    const std::uint64_t bytes = std::uint64_t{s.box_dim[0]} * esize(s);
    if (bytes % 16 != 0) {
      // Nearest box widths whose rows are whole 16-byte chunks.
      const std::uint64_t per16 = 16 / std::uint64_t(esize(s));
      const std::uint64_t lo = s.box_dim[0] / per16 * per16, hi = lo + per16;
      std::string fix = "use ";
      if (lo > 0) fix += to_string(lo) + (hi <= 256 ? " or " : "");
      if (hi <= 256) fix += to_string(hi);
      broken("T7", "boxDim[0]*" + to_string(esize(s)) + " = " + to_string(bytes) +
                       " bytes is not a multiple of 16; " + fix);
    }
  }
}

// --- T8 / I6: element strides -----------------------------------------------------------
void t8_element_strides(const TensorMapSpec& s) {
  for (std::size_t d = 0; d < s.rank; ++d) {
    const auto v = s.element_strides[d];
    if (v == 0 || v > 8) {
      broken(tiled(s) ? "T8" : "I6", idx("elementStrides", d) + " = " + to_string(v) +
                                         " is outside 1..8; use 1 for a dense box");
    }
  }
}

// --- T9 / I7: inner row within the swizzle span ----------------------------------------
void t9_swizzle_span(const TensorMapSpec& s) {
  if (s.interleave != Interleave::none || s.swizzle == Swizzle::none) return;
  const std::uint64_t span = swizzle_span_bytes(s.swizzle);
  const std::uint64_t inner = tiled(s) ? s.box_dim[0] : s.channels_per_pixel;
  const std::uint64_t bytes = inner * esize(s);
  if (bytes > span) {
    const char* what = tiled(s) ? "boxDim[0]" : "channelsPerPixel";
    broken(tiled(s) ? "T9" : "I7",
           std::string(what) + "*" + to_string(esize(s)) + " = " + to_string(bytes) +
               " bytes exceeds the swizzle " + std::string(name(s.swizzle)) + " span of " +
               to_string(span) + " bytes; use " + what + " <= " + to_string(span / esize(s)) +
               (s.swizzle != Swizzle::bytes128 ? " or a wider swizzle" : "") +
               " and several copies along dimension 0");
  }
}

// --- T12: L2 promotion, and the enums' ranges -------------------------------------------
void t12_enums(const TensorMapSpec& s) {
  if (static_cast<int>(s.l2_promotion) > 3) broken("T12", "l2Promotion is not NONE/64B/128B/256B");
  if (static_cast<int>(s.interleave) > 2) broken("T12", "interleave is not NONE/16B/32B");
  if (static_cast<int>(s.swizzle) > 3) broken("T12", "swizzle is not NONE/32B/64B/128B");
  if (static_cast<int>(s.oob_fill) > 1) broken("T12", "oobFill is not NONE/NAN_REQUEST_ZERO_FMA");
}

// --- T13: NaN fill only for floating types ----------------------------------------------
void t13_nan_fill(const TensorMapSpec& s) {
  if (s.oob_fill == OobFill::nan_request_zero_fma && !is_floating(s.data_type)) {
    broken("T13", "oobFill NAN_REQUEST_ZERO_FMA with integer type " + dt(s) +
                      "; use oobFill NONE (zero fill) or a floating-point type");
  }
}

// --- I3: pixel-box corners --------------------------------------------------------------
void i3_corners(const TensorMapSpec& s) {
  const int spatial = static_cast<int>(s.rank) - 2;
  const int limit = spatial == 1 ? 32768 : spatial == 2 ? 128 : 16;
  for (int i = 0; i < spatial; ++i) {
    for (auto [array, v] : {std::pair{"pixelBoxLowerCorner", s.pixel_box_lower_corner[i]},
                            std::pair{"pixelBoxUpperCorner", s.pixel_box_upper_corner[i]}}) {
      if (v < -limit || v > limit - 1) {
        broken("I3", idx(array, i) + " = " + to_string(v) + " is outside [" + to_string(-limit) +
                         ", " + to_string(limit - 1) + "] for rank " + to_string(s.rank));
      }
    }
  }
}

// --- I4 / I5: channels and pixels -------------------------------------------------------
void i4_channels(const TensorMapSpec& s) {
  if (s.channels_per_pixel == 0 || s.channels_per_pixel > 256) {
    broken("I4", "channelsPerPixel = " + to_string(s.channels_per_pixel) + " is outside 1..256");
  }
}
void i5_pixels(const TensorMapSpec& s) {
  if (s.pixels_per_column == 0 || s.pixels_per_column > 1024) {
    broken("I5", "pixelsPerColumn = " + to_string(s.pixels_per_column) + " is outside 1..1024");
  }
}

// ===== Rules found by sweeping the real driver (docs/rules.md: how, and the corpus) =====

// --- X1: the box fits the largest shared-memory allocation ------------------------------
// NOTE: the driver sizes the box as elementSize x prod(boxDim / elementStride) with the
// division rounded DOWN (so a dimension whose box is smaller than its stride counts 0),
// not as the ceil() the copy actually delivers (T8), and refuses more than 228 KiB.
constexpr std::uint64_t kMaxBoxBytes = 228 * 1024;
std::uint64_t driver_box_bytes(const TensorMapSpec& s) {
  std::uint64_t n = static_cast<std::uint64_t>(esize(s));
  for (std::size_t d = 0; d < s.rank; ++d) n *= s.box_dim[d] / s.element_strides[d];
  return n;
}
void x1_box_bytes(const TensorMapSpec& s) {
  const auto bytes = driver_box_bytes(s);
  if (bytes > kMaxBoxBytes) {
    broken("X1", "the box is " + to_string(bytes) + " bytes (elementSize " + to_string(esize(s)) +
                     " x prod(boxDim / elementStrides)); the driver allows at most " +
                     to_string(kMaxBoxBytes) + " (228 KiB): shrink boxDim or split the copy");
  }
}

// --- X3: im2col rows are whole 16-byte chunks and fit 228 KiB ----------------------------
void x3_im2col_box(const TensorMapSpec& s) {
  const std::uint64_t row = std::uint64_t{s.channels_per_pixel} * esize(s);
  if (row % 16 != 0) {
    const std::uint64_t per16 = 16 / std::uint64_t(esize(s));
    const std::uint64_t lo = s.channels_per_pixel / per16 * per16, hi = lo + per16;
    broken("X3", "channelsPerPixel*" + to_string(esize(s)) + " = " + to_string(row) +
                     " bytes is not a multiple of 16; use " +
                     (lo > 0 ? to_string(lo) + " or " : std::string()) + to_string(hi));
  }
  const std::uint64_t bytes = row * s.pixels_per_column;
  if (bytes > kMaxBoxBytes) {
    broken("X3", "the im2col box is " + to_string(bytes) + " bytes (channelsPerPixel " +
                     to_string(s.channels_per_pixel) + " x pixelsPerColumn " +
                     to_string(s.pixels_per_column) + " x " + to_string(esize(s)) +
                     "); the driver allows at most " + to_string(kMaxBoxBytes) +
                     " (228 KiB): lower pixelsPerColumn");
  }
}

// --- X4: each spatial dimension keeps at least one pixel --------------------------------
// NOTE: the documentation asks for a box of "non-zero area". The driver checks each spatial
// dimension separately, in this exact arithmetic: (int32)(globalDim + upperCorner) -
// lowerCorner > 0, the first sum wrapping to 32-bit signed (so a dimension of 2^31 or more
// can wrap negative). With interleave 16B or 32B it pairs corner i with globalDim[i] instead
// of globalDim[i + 1]. We check what the driver checks, since that decides the encode.
void x4_im2col_extent(const TensorMapSpec& s) {
  const std::size_t first = s.interleave == Interleave::none ? 1 : 0;
  for (std::size_t i = 0; i + 2 < s.rank; ++i) {
    const std::size_t d = i + first;
    const std::uint64_t dim = s.global_dim[d];
    const std::int64_t lo = s.pixel_box_lower_corner[i], up = s.pixel_box_upper_corner[i];
    const auto high = static_cast<std::int32_t>(
        static_cast<std::uint32_t>((dim + static_cast<std::uint64_t>(up)) & 0xffffffffu));
    const std::int64_t pixels = std::int64_t{high} - lo;
    if (pixels <= 0) {
      const bool wrapped = static_cast<std::int64_t>(dim) + up != high;
      broken("X4", "spatial dimension " + to_string(i + 1) + ": globalDim[" + to_string(d) +
                       "] + pixelBoxUpperCorner[" + to_string(i) + "] - pixelBoxLowerCorner[" +
                       to_string(i) + "] = " + to_string(dim) + " + " + to_string(up) + " - " +
                       to_string(lo) + " leaves no pixel" +
                       (wrapped ? " (the driver wraps globalDim + upper to 32-bit signed: " +
                                      to_string(high) + ")"
                                : std::string()) +
                       "; raise pixelBoxUpperCorner[" + to_string(i) +
                       "], lower pixelBoxLowerCorner[" + to_string(i) + "]" +
                       (wrapped ? ", or keep the dimension below 2^31" : std::string()));
    }
  }
}

// --- X2: the global address is a valid virtual address ----------------------------------
constexpr std::uint64_t kMaxAddress = std::uint64_t{1} << 57;
void x2_address_range(const TensorMapSpec& s) {
  if (s.global_address >= kMaxAddress) {
    broken("X2", "globalAddress = " + hex(s.global_address) +
                     " is at or above 2^57, outside the GPU's virtual address space; pass a "
                     "device pointer");
  }
}

// Rules that hold for both kinds run on both; the im2col ones skip tiled specs and v.v.
template <void (*F)(const TensorMapSpec&)>
void tiled_only(const TensorMapSpec& s) {
  if (tiled(s)) F(s);
}
template <void (*F)(const TensorMapSpec&)>
void im2col_only(const TensorMapSpec& s) {
  if (!tiled(s)) F(s);
}

constexpr Rule kRules[] = {
    {"T2", "data type is one of the 13 Hopper tensor-map types", t2_data_type},
    {"T12", "interleave, swizzle, L2 promotion and OOB fill are known values", t12_enums},
    {"T3", "tiled rank 1..5; rank >= 3 with interleave", tiled_only<t3_rank>},
    {"I1", "im2col rank 3..5", im2col_only<i1_rank>},
    {"T4", "global address 16-byte aligned (32 with interleave 32B)", t4_address},
    {"T5", "each globalDim in 1..2^32", t5_global_dims},
    {"T6", "byte strides multiples of 16 (32 with interleave 32B) and < 2^40", t6_global_strides},
    {"T7", "boxDim in 1..256; boxDim[0] * element size a multiple of 16 (any interleave)",
     tiled_only<t7_box_dims>},
    {"T8", "elementStrides in 1..8", t8_element_strides},
    {"I3", "pixel-box corners in the rank's range", im2col_only<i3_corners>},
    {"I4", "channelsPerPixel in 1..256", im2col_only<i4_channels>},
    {"I5", "pixelsPerColumn in 1..1024", im2col_only<i5_pixels>},
    {"T9", "with a swizzle, the inner box row fits the swizzle span", t9_swizzle_span},
    {"T13", "NaN OOB fill only for floating-point types", t13_nan_fill},
    {"X1", "box bytes (elementSize x prod(boxDim / elementStrides), rounded down) <= 228 KiB",
     tiled_only<x1_box_bytes>},
    {"X2", "global address below 2^57", x2_address_range},
    {"X3", "im2col: channelsPerPixel * elementSize a multiple of 16, box <= 228 KiB",
     im2col_only<x3_im2col_box>},
    {"X4", "im2col: (int32)(globalDim + upper corner) - lower corner > 0 per spatial dim",
     im2col_only<x4_im2col_extent>},
};

}  // namespace

std::span<const Rule> rules() { return kRules; }

void validate(const TensorMapSpec& spec) {
  for (const Rule& r : kRules) r.check(spec);
}

std::optional<RuleViolation> find_violation(const TensorMapSpec& spec) {
  try {
    validate(spec);
  } catch (const RuleViolation& v) {
    return v;
  }
  return std::nullopt;
}

}  // namespace tmakit
