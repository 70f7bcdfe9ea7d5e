// The 13 tensor-map data types of Hopper, their sizes and names.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tmakit {

// Values equal CUtensorMapDataType's, so a cast gives the driver's enum.
enum class DataType : std::uint8_t {
  uint8 = 0,
  uint16 = 1,
  uint32 = 2,
  int32 = 3,
  uint64 = 4,
  int64 = 5,
  float16 = 6,
  float32 = 7,
  float64 = 8,
  bfloat16 = 9,
  float32_ftz = 10,
  tfloat32 = 11,
  tfloat32_ftz = 12,
};

inline constexpr int kDataTypeCount = 13;

constexpr int element_bytes(DataType t) {
  switch (t) {
    case DataType::uint8: return 1;
    case DataType::uint16:
    case DataType::float16:
    case DataType::bfloat16: return 2;
    case DataType::uint32:
    case DataType::int32:
    case DataType::float32:
    case DataType::float32_ftz:
    case DataType::tfloat32:
    case DataType::tfloat32_ftz: return 4;
    case DataType::uint64:
    case DataType::int64:
    case DataType::float64: return 8;
  }
  return 0;
}

// Floating types may ask for the NaN out-of-bounds fill (rule T13).
constexpr bool is_floating(DataType t) {
  switch (t) {
    case DataType::float16:
    case DataType::float32:
    case DataType::float64:
    case DataType::bfloat16:
    case DataType::float32_ftz:
    case DataType::tfloat32:
    case DataType::tfloat32_ftz: return true;
    default: return false;
  }
}

// The driver's spelling without the CU_TENSOR_MAP_DATA_TYPE_ prefix: "FLOAT32".
constexpr std::string_view name(DataType t) {
  constexpr std::string_view names[kDataTypeCount] = {
      "UINT8",   "UINT16",  "UINT32",   "INT32",       "UINT64",   "INT64",       "FLOAT16",
      "FLOAT32", "FLOAT64", "BFLOAT16", "FLOAT32_FTZ", "TFLOAT32", "TFLOAT32_FTZ"};
  const auto i = static_cast<int>(t);
  return i >= 0 && i < kDataTypeCount ? names[i] : std::string_view("?");
}

constexpr std::optional<DataType> parse_data_type(std::string_view s) {
  for (int i = 0; i < kDataTypeCount; ++i) {
    if (name(static_cast<DataType>(i)) == s) return static_cast<DataType>(i);
  }
  return std::nullopt;
}

}  // namespace tmakit
