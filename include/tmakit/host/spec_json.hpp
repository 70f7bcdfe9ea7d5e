// TensorMapSpec <-> one JSON object per line, the format of `tmakit check --jsonl`:
//   {"encode":"tiled", "dataType":"FLOAT32", "rank":2, "globalAddress":0, "globalDim":[..],
//    "globalStrides":[..], "boxDim":[..], "elementStrides":[..], "interleave":"NONE",
//    "swizzle":"128B", "l2Promotion":"NONE", "oobFill":"NONE"}
// im2col lines carry "pixelBoxLowerCorner", "pixelBoxUpperCorner", "channelsPerPixel" and
// "pixelsPerColumn" instead of "boxDim"; "encode":"im2col_wide" lines carry
// "pixelBoxLowerCornerWidth", "pixelBoxUpperCornerWidth", "channelsPerPixel", "pixelsPerColumn"
// and "mode" ("W" or "W128", default W). Optional: "tileMode" (tiled: "tile", "gather4",
// "scatter4") and "direction" ("any", "load", "store", "reduce"), how the map will be used.
// Blackwell's names (16U4_ALIGN8B, 128B_ATOM_32B, ...) parse on every architecture; the rules
// refuse them where the architecture lacks them. Unknown keys are ignored.
#pragma once

#include <cstddef>
#include <nlohmann/json_fwd.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "tmakit/host/tensor_map_spec.hpp"

namespace tmakit {

// The longest line the parsers take (a spec line is a few hundred bytes) and the deepest
// nesting of arrays and objects (a spec needs 2): past either a line is refused whole, so
// that no line can make the parser or a message that quotes it exhaust memory or the stack.
inline constexpr std::size_t kMaxLineBytes = std::size_t{1} << 20;
inline constexpr int kMaxJsonDepth = 16;

// One line as a JSON value, in time linear in its length. Throws ParseError for a line past
// kMaxLineBytes or kMaxJsonDepth, a NUL byte anywhere (the line is text), an empty line (or
// one of whitespace only), malformed JSON (naming the byte of the line, the first being byte
// 1) and a number too large for a double (naming the key it stands under).
nlohmann::json parse_json_line(std::string_view line);

// `text` with every byte outside printable ASCII written as \xNN: a verdict that quotes a
// garbage input line stays one printable line (`tmakit check` and the Python package alike).
std::string escape_unprintable(std::string_view text);

// At most about `max_bytes` bytes of a JSON value, for messages that quote a bad value:
// nesting past a few levels and text past the bound are elided as "...".
std::string quote_json(const nlohmann::json& value, std::size_t max_bytes = 64);

// Parses one line. Throws ParseError naming the key and the problem for malformed JSON,
// a missing required key, a wrong type, a wrong array length, or a number outside the
// range of the driver's argument type. Values the driver refuses but can be given (rank 7,
// boxDim 300) parse fine: validate() judges them.
// `arch` only chooses the lists of known names an unknown value's message gives.
TensorMapSpec parse_spec_json(std::string_view line, Arch arch = Arch::sm_90a);
TensorMapSpec spec_from_json(const nlohmann::json& object, Arch arch = Arch::sm_90a);

// `line` (a spec that parses to `from`) with every field in which `to` differs from `from`
// rewritten: the other keys, unknown ones included, stay as they were and in their order.
// A new rank rewrites every array whole, and a new encode kind every key that kind reads, so
// that parse_spec_json of the result equals `to` (for ranks 1..5).
std::string rewrite_spec_json(std::string_view line, const TensorMapSpec& from,
                              const TensorMapSpec& to);

// One line, keys in alphabetical order (a JSON object is unordered). Only the entries the
// rank (and the encode kind) uses are written, so parse_spec_json(spec_to_json(s)) equals s in
// every field the driver reads (rank 1-5); entries past the rank come back at their defaults.
std::string spec_to_json(const TensorMapSpec& spec);

// A tiled spec judged for the one copy a simulation makes (`tmakit simulate`, and
// tmakit.simulate in Python): ParseError for another encode kind, a gather4/scatter4 map (a
// spec has no place for the copy's four rows) or a "direction" naming another copy; else the
// first rule it breaks on `arch`, for that copy too (a rule about one direction applies to the
// copy simulated), thrown as the validator's RuleViolation, or as an Error prefixed "as a load:
// ", "as a store: " or "as a reduction: " where the line did not name the copy. Returns the spec
// with its direction the copy's.
TensorMapSpec spec_for_simulated_copy(const nlohmann::json& object, Arch arch, Direction copy);

// The "coords" key of a JSON object (a load's coordinates, `tmakit simulate`): exactly `rank`
// signed 32-bit integers, the rest of the array 0. Throws ParseError naming "coords" or
// "coords[i]" and what it holds, and for a rank outside 1..kMaxRank (validate the spec first).
std::array<std::int32_t, kMaxRank> coords_from_json(const nlohmann::json& object,
                                                    std::uint32_t rank);

}  // namespace tmakit
