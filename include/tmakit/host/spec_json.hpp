// TensorMapSpec <-> one JSON object per line, the format of `tmakit check --jsonl`:
//   {"encode":"tiled", "dataType":"FLOAT32", "rank":2, "globalAddress":0, "globalDim":[..],
//    "globalStrides":[..], "boxDim":[..], "elementStrides":[..], "interleave":"NONE",
//    "swizzle":"128B", "l2Promotion":"NONE", "oobFill":"NONE"}
// im2col lines carry "pixelBoxLowerCorner", "pixelBoxUpperCorner", "channelsPerPixel" and
// "pixelsPerColumn" instead of "boxDim". Unknown keys are ignored.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "tmakit/host/tensor_map_spec.hpp"

namespace tmakit {

// Parses one line. Throws ParseError naming the key and the problem for malformed JSON,
// a missing required key, a wrong type, a wrong array length, or a number outside the
// range of the driver's argument type. Values the driver refuses but can be given (rank 7,
// boxDim 300) parse fine: validate() judges them.
TensorMapSpec parse_spec_json(std::string_view line);
TensorMapSpec spec_from_json(const nlohmann::json& object);

// One line, keys in the order above. Only the entries the rank (and the encode kind) uses
// are written, so parse_spec_json(spec_to_json(s)) equals s in every field the driver reads
// (rank 1-5); entries past the rank come back at their defaults.
std::string spec_to_json(const TensorMapSpec& spec);

}  // namespace tmakit
