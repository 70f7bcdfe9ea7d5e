#include "tmakit/host/spec_json.hpp"

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "tmakit/core/error.hpp"

namespace tmakit {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& key, const std::string& what) {
  throw ParseError(key + ": " + what);
}

std::string type_name(const json& v) {
  if (v.is_number_float()) return "a fractional or out-of-range number";
  const std::string t = v.type_name();
  return (t[0] == 'a' || t[0] == 'o' ? "an " : "a ") + t;
}

// An integer in [lo, hi]. nlohmann stores integers that fit as int64/uint64 and anything
// else (fractions, values past 2^64) as double, which is rejected as out of range.
template <class T>
T integer(const json& v, const std::string& key) {
  constexpr auto lo = std::numeric_limits<T>::min();
  constexpr auto hi = std::numeric_limits<T>::max();
  const auto range = " (expected an integer in " + std::to_string(lo) + ".." + std::to_string(hi) + ")";
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(hi)) fail(key, std::to_string(u) + " is out of range" + range);
    return static_cast<T>(u);
  }
  if (v.is_number_integer()) {
    const auto s = v.get<std::int64_t>();
    if (s < 0 && !std::numeric_limits<T>::is_signed) fail(key, std::to_string(s) + " is negative" + range);
    if (std::numeric_limits<T>::is_signed &&
        (s < static_cast<std::int64_t>(lo) || s > static_cast<std::int64_t>(hi))) {
      fail(key, std::to_string(s) + " is out of range" + range);
    }
    return static_cast<T>(s);
  }
  if (v.is_number_float()) fail(key, v.dump() + " is not an integer or is out of range" + range);
  fail(key, "expected an integer, got " + type_name(v));
}

const json* find(const json& o, const char* key) {
  const auto it = o.find(key);
  return it == o.end() ? nullptr : &*it;
}

const json& require(const json& o, const char* key, const char* when = nullptr) {
  const json* v = find(o, key);
  if (v == nullptr) fail(key, when ? std::string("missing (required ") + when + ")" : "missing");
  return *v;
}

// Fills out[0..n) from a JSON array of exactly n integers; entries past kMaxRank are
// range-checked and dropped (their rank is refused by the validator anyway).
template <class T, std::size_t N>
void integer_array(const json& v, const char* key, std::size_t n, std::array<T, N>& out) {
  if (!v.is_array()) fail(key, "expected an array, got " + type_name(v));
  if (v.size() != n) {
    fail(key, "has " + std::to_string(v.size()) + " entries; expected " + std::to_string(n));
  }
  for (std::size_t i = 0; i < n; ++i) {
    const T x = integer<T>(v[i], std::string(key) + "[" + std::to_string(i) + "]");
    if (i < N) out[i] = x;
  }
}

template <class E>
E enum_value(const json& o, const char* key, E fallback, std::optional<E> (*parse)(std::string_view),
             const char* choices) {
  const json* v = find(o, key);
  if (v == nullptr) return fallback;
  if (!v->is_string()) fail(key, std::string("expected a string (") + choices + "), got " + type_name(*v));
  const auto& s = v->get_ref<const std::string&>();
  if (auto e = parse(s)) return *e;
  fail(key, "unknown value \"" + s + "\" (expected one of " + choices + ")");
}

std::optional<DataType> parse_dtype(std::string_view s) { return parse_data_type(s); }

}  // namespace

TensorMapSpec spec_from_json(const json& o) {
  if (!o.is_object()) throw ParseError("expected a JSON object, got " + type_name(o));
  TensorMapSpec s;
  s.kind = enum_value(o, "encode", EncodeKind::tiled, parse_encode_kind, "tiled, im2col");
  require(o, "dataType");
  s.data_type = enum_value<DataType>(
      o, "dataType", DataType::uint8, parse_dtype,
      "UINT8, UINT16, UINT32, INT32, UINT64, INT64, FLOAT16, FLOAT32, FLOAT64, BFLOAT16, "
      "FLOAT32_FTZ, TFLOAT32, TFLOAT32_FTZ");
  const bool tiled = s.kind == EncodeKind::tiled;

  // The rank: given, or the length of globalDim.
  const json& dims = require(o, "globalDim");
  if (const json* r = find(o, "rank")) {
    s.rank = integer<std::uint32_t>(*r, "rank");
  } else if (dims.is_array()) {
    s.rank = static_cast<std::uint32_t>(dims.size());
  }
  const std::size_t rank = s.rank;

  s.global_address = integer<std::uint64_t>(require(o, "globalAddress"), "globalAddress");
  integer_array(dims, "globalDim", rank, s.global_dim);
  if (const json* strides = find(o, "globalStrides")) {
    integer_array(*strides, "globalStrides", rank > 0 ? rank - 1 : 0, s.global_strides_bytes);
  } else if (rank > 1) {
    fail("globalStrides", "missing (required for rank " + std::to_string(rank) + ")");
  }
  if (const json* es = find(o, "elementStrides")) {
    integer_array(*es, "elementStrides", rank, s.element_strides);
  }

  if (tiled) {
    integer_array(require(o, "boxDim", "for tiled maps"), "boxDim", rank, s.box_dim);
  } else {
    const std::size_t corners = rank > 2 ? rank - 2 : 0;
    integer_array(require(o, "pixelBoxLowerCorner", "for im2col maps"), "pixelBoxLowerCorner",
                  corners, s.pixel_box_lower_corner);
    integer_array(require(o, "pixelBoxUpperCorner", "for im2col maps"), "pixelBoxUpperCorner",
                  corners, s.pixel_box_upper_corner);
    s.channels_per_pixel = integer<std::uint32_t>(
        require(o, "channelsPerPixel", "for im2col maps"), "channelsPerPixel");
    s.pixels_per_column = integer<std::uint32_t>(
        require(o, "pixelsPerColumn", "for im2col maps"), "pixelsPerColumn");
  }

  s.interleave = enum_value(o, "interleave", Interleave::none, parse_interleave, "NONE, 16B, 32B");
  s.swizzle = enum_value(o, "swizzle", Swizzle::none, parse_swizzle, "NONE, 32B, 64B, 128B");
  s.l2_promotion =
      enum_value(o, "l2Promotion", L2Promotion::none, parse_l2_promotion, "NONE, 64B, 128B, 256B");
  s.oob_fill = enum_value(o, "oobFill", OobFill::zero, parse_oob_fill, "NONE, NAN_REQUEST_ZERO_FMA");
  return s;
}

TensorMapSpec parse_spec_json(std::string_view line) {
  json o;
  try {
    o = json::parse(line.begin(), line.end());
  } catch (const json::parse_error& e) {
    // nlohmann's message names the byte offset and what it expected.
    std::string what = e.what();
    const auto pos = what.find("parse error");
    throw ParseError("invalid JSON: " + (pos == std::string::npos ? what : what.substr(pos)));
  }
  return spec_from_json(o);
}

std::string spec_to_json(const TensorMapSpec& s) {
  json o = json::object();
  const std::size_t rank = std::min<std::size_t>(s.rank, kMaxRank);
  auto arr = [](const auto& a, std::size_t n) {
    json j = json::array();
    for (std::size_t i = 0; i < n; ++i) j.push_back(a[i]);
    return j;
  };
  o["encode"] = std::string(name(s.kind));
  o["dataType"] = std::string(name(s.data_type));
  o["rank"] = s.rank;
  o["globalAddress"] = s.global_address;
  o["globalDim"] = arr(s.global_dim, rank);
  o["globalStrides"] = arr(s.global_strides_bytes, rank > 0 ? rank - 1 : 0);
  if (s.kind == EncodeKind::tiled) {
    o["boxDim"] = arr(s.box_dim, rank);
  } else {
    o["pixelBoxLowerCorner"] = arr(s.pixel_box_lower_corner, rank > 2 ? rank - 2 : 0);
    o["pixelBoxUpperCorner"] = arr(s.pixel_box_upper_corner, rank > 2 ? rank - 2 : 0);
    o["channelsPerPixel"] = s.channels_per_pixel;
    o["pixelsPerColumn"] = s.pixels_per_column;
  }
  o["elementStrides"] = arr(s.element_strides, rank);
  o["interleave"] = std::string(name(s.interleave));
  o["swizzle"] = std::string(name(s.swizzle));
  o["l2Promotion"] = std::string(name(s.l2_promotion));
  o["oobFill"] = std::string(name(s.oob_fill));
  return o.dump();
}

}  // namespace tmakit
