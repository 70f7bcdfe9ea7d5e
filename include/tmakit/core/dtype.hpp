// The tensor-map data types: Hopper's 13, and Blackwell's three packed 4/6-bit types (sm_100a
// and later), their sizes and names.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "tmakit/core/host_device.hpp"

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
  // Blackwell's packed types: groups of 16 values of 4 or 6 bits. Dims, boxes and coordinates
  // count values; element_bytes() is 0 for them (a value is not a whole byte): see
  // value_bits() and shared_value_bits().
  packed_u4_align8 = 13,   // 16U4_ALIGN8B: packed in global and shared memory
  packed_u4_align16 = 14,  // 16U4_ALIGN16B: 8 data bytes + 8 pad bytes per 16 values in shared
  packed_u6_align16 = 15,  // 16U6_ALIGN16B: 12 data bytes + 4 pad bytes per 16 values in shared
};

// Hopper's types: 0..kDataTypeCount-1. Every type a tensor map may name, Blackwell's included:
// 0..kTensorMapDataTypeCount-1.
inline constexpr int kDataTypeCount = 13;
inline constexpr int kTensorMapDataTypeCount = 16;

TMAKIT_HOST_DEVICE constexpr bool is_packed(DataType t) {
  return t == DataType::packed_u4_align8 || t == DataType::packed_u4_align16 ||
         t == DataType::packed_u6_align16;
}

TMAKIT_HOST_DEVICE constexpr int element_bytes(DataType t) {
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
    default: return 0;  // the packed types (value_bits) and values past the enum
  }
}

// Bits one value takes in global memory: 8 x element_bytes, or 4 / 4 / 6 for the packed types.
TMAKIT_HOST_DEVICE constexpr int value_bits(DataType t) {
  switch (t) {
    case DataType::packed_u4_align8:
    case DataType::packed_u4_align16: return 4;
    case DataType::packed_u6_align16: return 6;
    default: return 8 * element_bytes(t);
  }
}

// Bits one value takes in shared memory after a load: the padded types spend 16 bytes on 16
// values (PTX ISA, "Padding and alignment of the sub-byte types").
TMAKIT_HOST_DEVICE constexpr int shared_value_bits(DataType t) {
  return t == DataType::packed_u4_align16 || t == DataType::packed_u6_align16 ? 8 : value_bits(t);
}

// Floating types may ask for the NaN out-of-bounds fill (rule T13).
TMAKIT_HOST_DEVICE constexpr bool is_floating(DataType t) {
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
  constexpr std::string_view names[kTensorMapDataTypeCount] = {
      "UINT8",        "UINT16",       "UINT32",        "INT32",        "UINT64",      "INT64",
      "FLOAT16",      "FLOAT32",      "FLOAT64",       "BFLOAT16",     "FLOAT32_FTZ", "TFLOAT32",
      "TFLOAT32_FTZ", "16U4_ALIGN8B", "16U4_ALIGN16B", "16U6_ALIGN16B"};
  const auto i = static_cast<int>(t);
  return i >= 0 && i < kTensorMapDataTypeCount ? names[i] : std::string_view("?");
}

// Hopper's 13 names only (element types of arrays and kernels).
constexpr std::optional<DataType> parse_data_type(std::string_view s) {
  for (int i = 0; i < kDataTypeCount; ++i) {
    if (name(static_cast<DataType>(i)) == s) return static_cast<DataType>(i);
  }
  return std::nullopt;
}

// Every tensor-map type's name, Blackwell's packed types included.
constexpr std::optional<DataType> parse_tensor_map_data_type(std::string_view s) {
  for (int i = 0; i < kTensorMapDataTypeCount; ++i) {
    if (name(static_cast<DataType>(i)) == s) return static_cast<DataType>(i);
  }
  return std::nullopt;
}

}  // namespace tmakit
