#include "tmakit/host/spec_json.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tmakit/core/error.hpp"
#include "tmakit/host/validate.hpp"

namespace tmakit {
namespace {

using nlohmann::json;

// The first at most `max_bytes` bytes of `text`, cut before a UTF-8 sequence rather than
// inside one, so that a message quoting non-ASCII text stays valid UTF-8.
std::string utf8_prefix(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  std::size_t cut = max_bytes;
  // back over continuation bytes (10xxxxxx) to the start of the sequence the cut falls in
  for (int i = 0; i < 3 && cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80; ++i) {
    --cut;
  }
  return std::string(text.substr(0, cut));
}

// `text` cut to `max_bytes`, saying how much was left out.
std::string bounded(const std::string& text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  const std::string kept = utf8_prefix(text, max_bytes);
  return kept + "... (" + std::to_string(text.size() - kept.size()) + " more bytes)";
}

// NOTE: recursion bounded by kQuoteDepth and output by max_bytes, whatever the value holds.
constexpr int kQuoteDepth = 3;
template <class Json>
void quote_into(std::string& out, const Json& v, int depth, std::size_t max_bytes) {
  auto scalar = [&](const Json& x) {
    return x.dump(-1, ' ', false, json::error_handler_t::replace);
  };
  if (v.is_array() || v.is_object()) {
    const bool array = v.is_array();
    out += array ? '[' : '{';
    if (depth >= kQuoteDepth && !v.empty()) {
      out += "...";
    } else {
      bool first = true;
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (out.size() >= max_bytes) {
          out += "...";
          break;
        }
        if (!first) out += ',';
        first = false;
        if (!array) out += scalar(Json(utf8_prefix(it.key(), max_bytes))) + ':';
        quote_into(out, *it, depth + 1, max_bytes);
      }
    }
    out += array ? ']' : '}';
  } else if (v.is_string()) {
    const auto& text = v.template get_ref<const std::string&>();
    // past max_bytes even when the cut backs off a character (up to 3 bytes), so that
    // quote_json's final cut marks the text as cut
    out += scalar(Json(utf8_prefix(text, max_bytes + 4)));
  } else {
    out += scalar(v);
  }
}

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
  const auto range =
      " (expected an integer in " + std::to_string(lo) + ".." + std::to_string(hi) + ")";
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(hi))
      fail(key, std::to_string(u) + " is out of range" + range);
    return static_cast<T>(u);
  }
  if (v.is_number_integer()) {
    const auto s = v.get<std::int64_t>();
    if (s < 0 && !std::numeric_limits<T>::is_signed)
      fail(key, std::to_string(s) + " is negative" + range);
    if (std::numeric_limits<T>::is_signed &&
        (s < static_cast<std::int64_t>(lo) || s > static_cast<std::int64_t>(hi))) {
      fail(key, std::to_string(s) + " is out of range" + range);
    }
    return static_cast<T>(s);
  }
  if (v.is_number_float()) {
    // NOTE: an integer past 64 bits is held as a double too: named as the integer it was, not
    // as a fraction (its digits past the double's are lost to the parser)
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::trunc(d)) {
      if (d >= 0x1p64 || d < -0x1p63) {
        fail(key, "about " + quote_json(v) + ", past 64 bits, is out of range" + range);
      }
      // a whole number written as a float (4.0, 1e3; a float from Python or NumPy)
      const bool within = d >= static_cast<double>(lo) && d <= static_cast<double>(hi);
      if (!within) fail(key, quote_json(v) + " is out of range" + range);
      const std::string digits = d < 0 ? std::to_string(static_cast<std::int64_t>(d))
                                       : std::to_string(static_cast<std::uint64_t>(d));
      fail(key, quote_json(v) + " is a whole number written as a float; give it as the integer " +
                    digits);
    }
    fail(key, quote_json(v) + " is not an integer" + range);
  }
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
E enum_value(const json& o, const char* key, E fallback,
             std::optional<E> (*parse)(std::string_view), const char* choices) {
  const json* v = find(o, key);
  if (v == nullptr) return fallback;
  if (!v->is_string())
    fail(key, std::string("expected a string (") + choices + "), got " + type_name(*v));
  const auto& s = v->get_ref<const std::string&>();
  if (auto e = parse(s)) return *e;
  fail(key, "unknown value " + quote_json(*v) + " (expected one of " + choices + ")");
}

std::optional<DataType> parse_dtype(std::string_view s) {
  return parse_tensor_map_data_type(s);
}

// NOTE: every name parses on every architecture (the rules then refuse what the architecture
// lacks, naming it); the lists of an unknown value's message are the architecture's own, so
// that Hopper's messages stay as they were.
struct Choices {
  const char* encode;
  const char* data_type;
  const char* swizzle;
};
constexpr const char* kHopperTypes =
    "UINT8, UINT16, UINT32, INT32, UINT64, INT64, FLOAT16, FLOAT32, FLOAT64, BFLOAT16, "
    "FLOAT32_FTZ, TFLOAT32, TFLOAT32_FTZ";
Choices choices(Arch arch) {
  if (arch == Arch::sm_90a) return {"tiled, im2col", kHopperTypes, "NONE, 32B, 64B, 128B"};
  return {"tiled, im2col, im2col_wide",
          "UINT8, UINT16, UINT32, INT32, UINT64, INT64, FLOAT16, FLOAT32, FLOAT64, BFLOAT16, "
          "FLOAT32_FTZ, TFLOAT32, TFLOAT32_FTZ, 16U4_ALIGN8B, 16U4_ALIGN16B, 16U6_ALIGN16B",
          "NONE, 32B, 64B, 128B, 128B_ATOM_32B, 128B_ATOM_32B_FLIP_8B, 128B_ATOM_64B"};
}

}  // namespace

TensorMapSpec spec_from_json(const json& o, Arch arch) {
  if (!o.is_object()) throw ParseError("expected a JSON object, got " + type_name(o));
  const Choices names = choices(arch);
  TensorMapSpec s;
  s.kind = enum_value(o, "encode", EncodeKind::tiled, parse_encode_kind, names.encode);
  require(o, "dataType");
  s.data_type = enum_value<DataType>(o, "dataType", DataType::uint8, parse_dtype, names.data_type);
  const bool tiled = s.kind == EncodeKind::tiled;

  // The rank: given, or the length of globalDim.
  const json& dims = require(o, "globalDim");
  if (const json* r = find(o, "rank")) {
    s.rank = integer<std::uint32_t>(*r, "rank");
    // NOTE: named as the rank's disagreement, not as arrays of the wrong length
    if (dims.is_array() && dims.size() != s.rank) {
      // (an empty globalDim fits no rank: the dimensions are what is missing)
      fail("rank", std::to_string(s.rank) + ", but globalDim has " +
                       std::to_string(dims.size()) + " entries; " +
                       (dims.empty() ? "give globalDim " + std::to_string(s.rank) +
                                           " entries, one per dimension"
                                     : "give rank " + std::to_string(dims.size()) +
                                           " or leave it out (it is then globalDim's length)"));
    }
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
    s.tile_mode =
        enum_value(o, "tileMode", TileMode::tile, parse_tile_mode, "tile, gather4, scatter4");
  } else if (s.kind == EncodeKind::im2col_wide) {
    s.pixel_box_lower_corner_width = integer<std::int32_t>(
        require(o, "pixelBoxLowerCornerWidth", "for im2col_wide maps"), "pixelBoxLowerCornerWidth");
    s.pixel_box_upper_corner_width = integer<std::int32_t>(
        require(o, "pixelBoxUpperCornerWidth", "for im2col_wide maps"), "pixelBoxUpperCornerWidth");
    s.channels_per_pixel = integer<std::uint32_t>(
        require(o, "channelsPerPixel", "for im2col_wide maps"), "channelsPerPixel");
    s.pixels_per_column = integer<std::uint32_t>(
        require(o, "pixelsPerColumn", "for im2col_wide maps"), "pixelsPerColumn");
    s.wide_mode = enum_value(o, "mode", Im2colWideMode::w, parse_im2col_wide_mode, "W, W128");
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
  s.swizzle = enum_value(o, "swizzle", Swizzle::none, parse_swizzle, names.swizzle);
  s.l2_promotion =
      enum_value(o, "l2Promotion", L2Promotion::none, parse_l2_promotion, "NONE, 64B, 128B, 256B");
  s.oob_fill =
      enum_value(o, "oobFill", OobFill::zero, parse_oob_fill, "NONE, NAN_REQUEST_ZERO_FMA");
  s.direction =
      enum_value(o, "direction", Direction::any, parse_direction, "any, load, store, reduce");
  return s;
}

namespace {

// Builds a line's value from the parser's events, refusing nesting past kMaxJsonDepth as it
// goes and tracking where the parser is (the top-level key and, in an array under it, the
// entry), for naming the key of a number it cannot hold. `keys`, if given, gets the top-level
// keys in the order they appear (repeats included).
// NOTE: not Json::parse with a callback: nlohmann's callback parser scans the whole enclosing
// array each time an object in it closes, quadratic in a line of many objects (a 1 MiB line of
// "{}," took 16 s). These events build the value in one pass.
template <class Json>
class LineBuilder {
 public:
  explicit LineBuilder(std::vector<std::string>* keys) : keys_(keys) {}

  Json take() { return std::move(root_); }
  // "globalDim[1]", a key alone, or "the line"
  std::string where() const {
    if (key_.empty()) return "the line";
    return bounded(key_, 64) + (in_array_ ? "[" + std::to_string(entry_) + "]" : "");
  }

  bool null() { return put(nullptr); }
  bool boolean(bool v) { return put(v); }
  bool number_integer(typename Json::number_integer_t v) { return put(v); }
  bool number_unsigned(typename Json::number_unsigned_t v) { return put(v); }
  bool number_float(typename Json::number_float_t v, const typename Json::string_t&) {
    return put(v);
  }
  bool string(typename Json::string_t& v) { return put(std::move(v)); }
  bool binary(typename Json::binary_t& v) { return put(std::move(v)); }
  bool start_object(std::size_t) { return open(Json::object()); }
  bool start_array(std::size_t) {
    if (open_.size() == 1) in_array_ = true;
    return open(Json::array());
  }
  bool key(typename Json::string_t& k) {
    if (open_.size() == 1) {
      key_ = k;
      if (keys_ != nullptr) keys_->push_back(k);
      entry_ = 0;
      in_array_ = false;
    }
    slot_ = &(*open_.back())[k];
    return true;
  }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  template <class Exception>
  bool parse_error(std::size_t, const std::string&, const Exception& e) {
    throw e;
  }

 private:
  // Where a new value goes: the root, the end of the open array, or the slot of the last key.
  template <class V>
  Json* place(V&& v) {
    if (open_.empty()) {
      root_ = Json(std::forward<V>(v));
      return &root_;
    }
    Json& parent = *open_.back();
    if (parent.is_array()) {
      parent.emplace_back(std::forward<V>(v));
      return &parent.back();
    }
    *slot_ = Json(std::forward<V>(v));
    return slot_;
  }
  template <class V>
  bool put(V&& v) {
    place(std::forward<V>(v));
    if (open_.size() == 2) ++entry_;
    return true;
  }
  bool open(Json&& empty) {
    if (open_.size() >= static_cast<std::size_t>(kMaxJsonDepth)) {
      throw ParseError((key_.empty() ? std::string("the line") : bounded(key_, 64)) +
                       ": nested deeper than " + std::to_string(kMaxJsonDepth) +
                       " levels of arrays and objects");
    }
    // NOTE: a pointer into the parent stays valid while this value is open: nothing is added
    // to the parent until it closes.
    open_.push_back(place(std::move(empty)));
    return true;
  }
  bool close() {
    open_.pop_back();
    if (open_.size() == 2) ++entry_;
    return true;
  }

  std::vector<std::string>* keys_;
  Json root_;
  std::vector<Json*> open_;  // the arrays and objects open, outermost first
  Json* slot_ = nullptr;     // the value of the last key read
  std::string key_;
  std::size_t entry_ = 0;
  bool in_array_ = false;
};

// JSON's whitespace: a line of nothing else is empty.
bool blank(std::string_view line) {
  return line.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

// A line parsed with every guard of parse_json_line; `keys`, if given, gets its top-level
// keys in the order they appear (repeats included).
template <class Json>
Json parse_guarded(std::string_view line, std::vector<std::string>* keys = nullptr) {
  if (line.size() > kMaxLineBytes) {
    throw ParseError("the line is " + std::to_string(line.size()) + " bytes, more than the " +
                     std::to_string(kMaxLineBytes) + " a spec line may have");
  }
  // NOTE: the JSON lexer takes a NUL for the end of its input, so "{...}\0junk" would pass.
  // Bytes are counted from 1, as the parser's positions are.
  if (const auto nul = line.find('\0'); nul != std::string_view::npos) {
    throw ParseError("byte " + std::to_string(nul + 1) +
                     " of the line is NUL; a spec line is text");
  }
  if (blank(line)) throw ParseError("the line is empty; a spec line is one JSON object");
  LineBuilder<Json> builder(keys);
  try {
    Json::sax_parse(line.begin(), line.end(), &builder);
    return builder.take();
  } catch (const json::parse_error& e) {
    // nlohmann's message says "line 1" (it sees one line): name the byte in the line instead.
    std::string what = e.what();
    const auto column = what.find("column ");
    const auto colon = what.find(": ", column == std::string::npos ? 0 : column);
    const std::string detail = colon == std::string::npos ? what : what.substr(colon + 2);
    throw ParseError("invalid JSON at byte " + std::to_string(e.byte) + ": " +
                     bounded(detail, 160));
  } catch (const json::exception& e) {
    // A number past the range of a double (1e999, 400 digits): name where it stands.
    const std::string at = builder.where();
    std::string what = e.what();
    const auto quote = what.find('\'');
    std::string token = quote == std::string::npos ? std::string() : what.substr(quote + 1);
    if (!token.empty() && token.back() == '\'') token.pop_back();
    if (e.id == 406)
      throw ParseError(at + ": " + bounded(token, 32) + " is too large for any number");
    throw ParseError(at + ": " + bounded(what, 160));
  }
}

}  // namespace

nlohmann::json parse_json_line(std::string_view line) { return parse_guarded<json>(line); }

std::string quote_json(const nlohmann::json& value, std::size_t max_bytes) {
  std::string out;
  quote_into(out, value, 0, max_bytes);
  if (out.size() > max_bytes) out = utf8_prefix(out, max_bytes) + "...";
  return out;
}

TensorMapSpec parse_spec_json(std::string_view line, Arch arch) {
  return spec_from_json(parse_json_line(line), arch);
}

std::string rewrite_spec_json(std::string_view line, const TensorMapSpec& from,
                              const TensorMapSpec& to) {
  // NOTE: not nlohmann::ordered_json, which finds keys by linear search: a line of many keys
  // (1 MiB holds 100,000) took quadratic time, minutes. The keys' order comes from the parser
  // instead, and the object is written in it: each key where it first appears (with its last
  // value, as a JSON object keeps it), then keys added here in the order they are added.
  std::vector<std::string> order;
  json o = parse_guarded<json>(line, &order);
  auto set = [&](const char* key, json value) {
    if (!o.contains(key)) order.emplace_back(key);
    o[key] = std::move(value);
  };
  auto arr = [](const auto& a, std::size_t n) {
    json j = json::array();
    for (std::size_t i = 0; i < n; ++i) j.push_back(a[i]);
    return j;
  };
  auto differ = [](const auto& a, const auto& b, std::size_t n) {
    return !std::equal(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(n), b.begin());
  };
  const std::size_t rank = std::min<std::size_t>(to.rank, kMaxRank);
  const std::size_t strides = rank > 0 ? rank - 1 : 0, corners = rank > 2 ? rank - 2 : 0;
  // NOTE: a new rank changes the length of every array, and a new encode kind the keys it
  // reads: those are written whole, whether or not their entries differ, so that the line
  // parses to `to`. Keys the new kind does not read stay, as unknown keys do.
  const bool reshaped = from.rank != to.rank;
  const bool rekinded = from.kind != to.kind;
  const bool tiled = to.kind == EncodeKind::tiled, wide = to.kind == EncodeKind::im2col_wide;
  const bool im2col = to.kind == EncodeKind::im2col;
  if (rekinded) set("encode", std::string(name(to.kind)));
  if (from.data_type != to.data_type) set("dataType", std::string(name(to.data_type)));
  if (reshaped && o.contains("rank")) set("rank", to.rank);
  if (from.global_address != to.global_address) set("globalAddress", to.global_address);
  if (reshaped || differ(from.global_dim, to.global_dim, rank)) {
    set("globalDim", arr(to.global_dim, rank));
  }
  if (reshaped || differ(from.global_strides_bytes, to.global_strides_bytes, strides)) {
    set("globalStrides", arr(to.global_strides_bytes, strides));
  }
  if ((tiled && (reshaped || rekinded)) || differ(from.box_dim, to.box_dim, rank)) {
    set("boxDim", arr(to.box_dim, rank));
  }
  if ((reshaped && o.contains("elementStrides")) ||
      differ(from.element_strides, to.element_strides, rank)) {
    set("elementStrides", arr(to.element_strides, rank));
  }
  if ((im2col && (reshaped || rekinded)) ||
      differ(from.pixel_box_lower_corner, to.pixel_box_lower_corner, corners)) {
    set("pixelBoxLowerCorner", arr(to.pixel_box_lower_corner, corners));
  }
  if ((im2col && (reshaped || rekinded)) ||
      differ(from.pixel_box_upper_corner, to.pixel_box_upper_corner, corners)) {
    set("pixelBoxUpperCorner", arr(to.pixel_box_upper_corner, corners));
  }
  if ((!tiled && rekinded) || from.channels_per_pixel != to.channels_per_pixel)
    set("channelsPerPixel", to.channels_per_pixel);
  if ((!tiled && rekinded) || from.pixels_per_column != to.pixels_per_column)
    set("pixelsPerColumn", to.pixels_per_column);
  if ((wide && rekinded) || from.pixel_box_lower_corner_width != to.pixel_box_lower_corner_width)
    set("pixelBoxLowerCornerWidth", to.pixel_box_lower_corner_width);
  if ((wide && rekinded) || from.pixel_box_upper_corner_width != to.pixel_box_upper_corner_width)
    set("pixelBoxUpperCornerWidth", to.pixel_box_upper_corner_width);
  if (from.wide_mode != to.wide_mode) set("mode", std::string(name(to.wide_mode)));
  if (from.tile_mode != to.tile_mode) set("tileMode", std::string(name(to.tile_mode)));
  if (from.direction != to.direction) set("direction", std::string(name(to.direction)));
  if (from.interleave != to.interleave) set("interleave", std::string(name(to.interleave)));
  if (from.swizzle != to.swizzle) set("swizzle", std::string(name(to.swizzle)));
  if (from.l2_promotion != to.l2_promotion) set("l2Promotion", std::string(name(to.l2_promotion)));
  if (from.oob_fill != to.oob_fill) set("oobFill", std::string(name(to.oob_fill)));
  auto dump = [](const json& v) { return v.dump(-1, ' ', false, json::error_handler_t::replace); };
  std::string out = "{";
  std::set<std::string_view> written;
  for (const std::string& key : order) {
    if (!written.insert(key).second) continue;
    if (out.size() > 1) out += ',';
    out += dump(json(key)) + ':' + dump(o[key]);
  }
  return out + '}';
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
    if (s.tile_mode != TileMode::tile) o["tileMode"] = std::string(name(s.tile_mode));
  } else if (s.kind == EncodeKind::im2col_wide) {
    o["pixelBoxLowerCornerWidth"] = s.pixel_box_lower_corner_width;
    o["pixelBoxUpperCornerWidth"] = s.pixel_box_upper_corner_width;
    o["channelsPerPixel"] = s.channels_per_pixel;
    o["pixelsPerColumn"] = s.pixels_per_column;
    o["mode"] = std::string(name(s.wide_mode));
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
  if (s.direction != Direction::any) o["direction"] = std::string(name(s.direction));
  return o.dump();
}

std::string escape_unprintable(std::string_view text) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7f) {
      out += ch;
    } else {
      out += "\\x";
      out += kDigits[c >> 4];
      out += kDigits[c & 15];
    }
  }
  return out;
}

std::array<std::int32_t, kMaxRank> coords_from_json(const nlohmann::json& o,
                                                    std::uint32_t rank) {
  // NOTE: parse_spec_json returns ranks the validator refuses (7, say); the array holds 5.
  if (rank < 1 || rank > static_cast<std::uint32_t>(kMaxRank)) {
    throw ParseError("coords: rank " + std::to_string(rank) + " is outside 1.." +
                     std::to_string(kMaxRank) + "; validate the spec before reading its coords");
  }
  const auto it = o.is_object() ? o.find("coords") : o.end();
  if (!o.is_object() || it == o.end()) throw ParseError("coords: missing");
  if (!it->is_array() || it->size() != rank) {
    throw ParseError("coords: expected an array of " + std::to_string(rank) +
                             " integers (one per dimension), got " + quote_json(*it));
  }
  std::array<std::int32_t, kMaxRank> c{};
  for (std::uint32_t d = 0; d < rank; ++d) {
    const auto& v = (*it)[d];
    const bool fits = v.is_number_unsigned() ? v.get<std::uint64_t>() <= INT32_MAX
                      : v.is_number_integer()
                          ? v.get<std::int64_t>() >= INT32_MIN && v.get<std::int64_t>() <= INT32_MAX
                          : false;
    if (!fits) {
      throw ParseError("coords[" + std::to_string(d) + "]: " + quote_json(v) +
                               " is not a signed 32-bit integer");
    }
    c[d] = static_cast<std::int32_t>(v.get<std::int64_t>());
  }
  return c;
}

TensorMapSpec spec_for_simulated_copy(const nlohmann::json& object, Arch arch, Direction copy) {
  TensorMapSpec spec = spec_from_json(object, arch);
  if (spec.kind != EncodeKind::tiled) {
    throw ParseError("encode: simulate handles tiled specs only");
  }
  if (spec.tile_mode != TileMode::tile) {
    throw ParseError("tileMode " + std::string(name(spec.tile_mode)) +
                     ": simulate does not model gather4/scatter4 (a spec has no place for the "
                     "copy's four row coordinates)");
  }
  const std::string copy_name =
      copy == Direction::reduce ? "reduction" : std::string(name(copy));
  if (spec.direction != Direction::any && spec.direction != copy) {
    throw ParseError("direction: the line says " + std::string(name(spec.direction)) +
                     ", and this run simulates a " + copy_name +
                     " (a load without options, --store, --reduce OP)");
  }
  if (auto v = find_violation(spec, arch)) throw *v;
  // NOTE: a rule about one direction applies only where the spec names it; the copy is known
  const bool said = spec.direction == copy;
  spec.direction = copy;
  if (auto v = find_violation(spec, arch)) {
    if (said) throw *v;
    throw Error("as a " + copy_name + ": " + v->what());
  }
  return spec;
}

}  // namespace tmakit
