// The reduction operators of cp.reduce.async.bulk.tensor and the tensor-map data types each
// is defined on (rule H8, docs/hardware.md): one table for the CPU model, which refuses the
// other pairs with a message, and for the device layer, whose reduce_tile refuses them at
// compile time. Host and device, no CUDA headers.
#pragma once

#include <cstdint>
#include <string_view>

#include "tmakit/core/dtype.hpp"

namespace tmakit {

enum class ReduceOp : std::uint8_t { add, min, max, inc, dec, bit_and, bit_or, bit_xor };
inline constexpr int kReduceOpCount = 8;

// The operator's PTX name: "add", "min", ..., "and", "or", "xor"; "(not a ReduceOp)" for a
// value past the enum.
constexpr std::string_view name(ReduceOp op) {
  constexpr std::string_view names[kReduceOpCount] = {"add", "min", "max", "inc",
                                                      "dec", "and", "or",  "xor"};
  const auto i = static_cast<unsigned>(op);
  return i < kReduceOpCount ? names[i] : std::string_view("(not a ReduceOp)");
}

// PTX ISA, cp.reduce.async.bulk.tensor: add on u32 / s32 / u64 / f32 / f16 / bf16, min and
// max on u32 / s32 / u64 / s64 / f16 / bf16, inc and dec on u32, and / or / xor on .b32 /
// .b64.
// NOTE: measured on H200 (H8): add on UINT8 (fp8's carrier) and on INT64, and `and` on INT64,
// end the kernel with "illegal instruction"; or / xor on INT64 are kept out with `and` (not
// measured), and UINT64 is the data type taken for the .b64 bit operators.
constexpr bool reduce_defined_on(ReduceOp op, DataType type) {
  const bool u32 = type == DataType::uint32, s32 = type == DataType::int32;
  const bool u64 = type == DataType::uint64, s64 = type == DataType::int64;
  const bool f16 = type == DataType::float16 || type == DataType::bfloat16;
  const bool f32 = type == DataType::float32 || type == DataType::float32_ftz;
  switch (op) {
    case ReduceOp::add: return u32 || s32 || u64 || f32 || f16;
    case ReduceOp::min:
    case ReduceOp::max: return u32 || s32 || u64 || s64 || f16;
    case ReduceOp::inc:
    case ReduceOp::dec: return u32;
    case ReduceOp::bit_and:
    case ReduceOp::bit_or:
    case ReduceOp::bit_xor: return u32 || s32 || u64;
  }
  return false;  // a value past the enum
}

}  // namespace tmakit
