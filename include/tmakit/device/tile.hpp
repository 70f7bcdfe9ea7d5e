// Tile<T, Swizzle, Box...>: one TMA box as a type. From the element type, the swizzle and the
// box (innermost dimension first) it derives, at compile time and for host and device:
//   tx_bytes      bytes one copy delivers, the barrier's expect_tx count (rule O3)
//   smem_bytes    shared-memory footprint of one box (rows x row pitch, O2)
//   align_bytes   alignment the buffer needs: 128 B (D1), the swizzle repeat with a swizzle (D2)
//   offset_bytes  where element (col, row) lies in the buffer, through swizzled_offset (swizzle.hpp)
// and builds the matching TensorMapSpec, so the map's box and the kernel's byte count come
// from one place and cannot disagree.
//
//   using ATile = tmakit::Tile<float, tmakit::Swizzle::bytes128, 32, 64>;   // 32 x 64 fp32
//   struct alignas(1024) SharedStorage { ATile::Buffer a[kStages]; tmakit::Barrier full[...]; };
//
// DynamicTile<T, Swizzle, Rank, CapacityBytes> is the same for a box whose extent is chosen at
// run time: the type carries what the copies check, the launcher the box and its bytes.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <array>
#include <cstdint>

#include "tmakit/core/dtype.hpp"
#include "tmakit/host/tensor_map_spec.hpp"
#include "tmakit/swizzle.hpp"

namespace tmakit {

// The tensor-map data type an element type travels as.
template <class T>
struct DataTypeOf {
  static_assert(sizeof(T) == 0,
                "no tensor-map data type for this element type: Tile takes std::uint8_t, "
                "std::int8_t, std::uint16_t, std::int16_t, std::uint32_t, std::int32_t, "
                "std::uint64_t, std::int64_t, __half, __nv_bfloat16, float or double (fp8 "
                "travels as std::uint8_t); for another type of one of those sizes, specialise "
                "tmakit::DataTypeOf<T> with a member static constexpr DataType value");
};
template <>
struct DataTypeOf<std::uint8_t> {
  static constexpr DataType value = DataType::uint8;
};
template <>
struct DataTypeOf<std::int8_t> {
  static constexpr DataType value = DataType::uint8;
};
template <>
struct DataTypeOf<std::uint16_t> {
  static constexpr DataType value = DataType::uint16;
};
template <>
struct DataTypeOf<std::int16_t> {
  static constexpr DataType value = DataType::uint16;
};
template <>
struct DataTypeOf<std::uint32_t> {
  static constexpr DataType value = DataType::uint32;
};
template <>
struct DataTypeOf<std::int32_t> {
  static constexpr DataType value = DataType::int32;
};
template <>
struct DataTypeOf<std::uint64_t> {
  static constexpr DataType value = DataType::uint64;
};
template <>
struct DataTypeOf<std::int64_t> {
  static constexpr DataType value = DataType::int64;
};
template <> struct DataTypeOf<__half> { static constexpr DataType value = DataType::float16; };
template <> struct DataTypeOf<__nv_bfloat16> {
  static constexpr DataType value = DataType::bfloat16;
};
template <> struct DataTypeOf<float> { static constexpr DataType value = DataType::float32; };
template <> struct DataTypeOf<double> { static constexpr DataType value = DataType::float64; };

template <class T, Swizzle S, std::uint32_t... Box>
struct Tile {
  using value_type = T;
  static constexpr DataType data_type = DataTypeOf<T>::value;
  static constexpr Swizzle swizzle = S;
  static constexpr int rank = static_cast<int>(sizeof...(Box));
  static constexpr std::array<std::uint32_t, sizeof...(Box)> box = {Box...};

  // --- the rules a box must obey, checked where the tile is declared -------------------
  static_assert(rank >= 1 && rank <= kMaxRank, "T3: a tile has rank 1..5 (one Box per dim)");
  static_assert(((Box >= 1 && Box <= 256) && ...), "T7: each box dimension must be in 1..256");
  static_assert(element_bytes(data_type) == static_cast<int>(sizeof(T)),
                "element type size differs from the tensor-map data type's size");

  static constexpr std::uint32_t elem_bytes = sizeof(T);
  // Bytes of one box row (dimension 0), and the number of rows (all other dimensions).
  static constexpr std::uint32_t row_bytes = box[0] * elem_bytes;
  // NOTE: five dimensions of up to 256 make up to 2^40 elements: the product in 64 bits, so
  // that the tx-count test below sees a box too large for 32 bits whole
  static constexpr std::uint64_t box_elements = (std::uint64_t{Box} * ...);
  static_assert(box_elements * sizeof(T) <= (1u << 20) - 1,
                "a box must stay under the mbarrier tx-count limit of 2^20 - 1 bytes");
  static constexpr std::uint32_t rows = static_cast<std::uint32_t>(box_elements / box[0]);
  static_assert(row_bytes % 16 == 0,
                "T7: box[0] * sizeof(T) must be a multiple of 16 bytes; widen box[0]");
  static_assert(S == Swizzle::none || row_bytes <= swizzle_span_bytes(S),
                "T9: with a swizzle, box[0] * sizeof(T) must not exceed the swizzle span "
                "(32, 64 or 128 bytes); narrow box[0] or pick a wider swizzle");

  // O2: with a swizzle every row occupies a full span in shared memory.
  static constexpr std::uint32_t row_pitch_bytes =
      S == Swizzle::none ? row_bytes : static_cast<std::uint32_t>(swizzle_span_bytes(S));
  // O3: the barrier counts the logical box bytes, not the padded footprint.
  static constexpr std::uint32_t tx_bytes = rows * row_bytes;
  static_assert(tx_bytes <= (1u << 20) - 1,
                "a box must stay under the mbarrier tx-count limit of 2^20 - 1 bytes");
  // D1 / D2: 128 B for any TMA destination, the swizzle repeat with a swizzle.
  static constexpr std::uint32_t align_bytes = swizzle_repeat_bytes(S);
  // Footprint rounded up to the alignment, so an array of Buffers keeps every box aligned.
  static constexpr std::uint32_t smem_bytes =
      (rows * row_pitch_bytes + align_bytes - 1) / align_bytes * align_bytes;

  // Storage for one box inside a SharedStorage struct. The copy helpers refuse, at compile
  // time, a Buffer smaller than the tile they copy (tile_capacity_bytes).
  struct alignas(align_bytes) Buffer {
    static constexpr std::uint32_t tile_capacity_bytes = smem_bytes;
    unsigned char bytes[smem_bytes];
  };
  static_assert(sizeof(Buffer) == smem_bytes, "Buffer must not be padded further");

  // Byte offset of element `col` (dimension 0) of row `row` (dimensions 1.. flattened,
  // row = i1 + box[1] * (i2 + box[2] * ...)) from an align_bytes-aligned buffer start.
  TMAKIT_HOST_DEVICE static constexpr std::uint32_t offset_bytes(std::uint32_t col,
                                                                 std::uint32_t row) {
    return swizzled_offset(S, row, col, row_pitch_bytes, elem_bytes);
  }

  // The element (col, row) of a buffer holding one box.
  TMAKIT_HOST_DEVICE static T& at(void* buffer, std::uint32_t col, std::uint32_t row) {
    return *reinterpret_cast<T*>(static_cast<unsigned char*>(buffer) + offset_bytes(col, row));
  }
  TMAKIT_HOST_DEVICE static const T& at(const void* buffer, std::uint32_t col,
                                        std::uint32_t row) {
    return *reinterpret_cast<const T*>(static_cast<const unsigned char*>(buffer) +
                                       offset_bytes(col, row));
  }

  // The tensor map this tile is loaded through: a dense-innermost tensor at `base` with
  // `dims` elements per dimension and byte `strides` of dimensions 1..rank-1.
  static TensorMapSpec spec(const void* base,
                            const std::array<std::uint64_t, sizeof...(Box)>& dims,
                            const std::array<std::uint64_t, kMaxRank - 1>& strides_bytes) {
    TensorMapSpec s;
    s.kind = EncodeKind::tiled;
    s.data_type = data_type;
    s.rank = static_cast<std::uint32_t>(rank);
    s.global_address = reinterpret_cast<std::uintptr_t>(base);
    constexpr std::size_t dims_count = sizeof...(Box);
    for (std::size_t d = 0; d < dims_count; ++d) {
      s.global_dim[d] = dims[d];
      s.box_dim[d] = box[d];
    }
    for (std::size_t d = 0; d + 1 < dims_count; ++d) {
      s.global_strides_bytes[d] = strides_bytes[d];
    }
    s.swizzle = S;
    return s;
  }
};

// A box whose extent is chosen at run time, copied into a buffer fixed at compile time: for a
// kernel whose box follows the tensor (the add-constant kernel makes its box narrower and
// taller for a narrow matrix). The type carries what the copies check, as a Tile does: the
// element size (O1), the swizzle and the buffer's alignment (D1/D2), the rank. The box and its
// byte count are values the launcher derives from one box shape (the map's box, the barrier's
// count); it must keep that box within `CapacityBytes` (rows x row pitch).
template <class T, Swizzle S, int Rank, std::uint32_t CapacityBytes>
struct DynamicTile {
  using value_type = T;
  static constexpr DataType data_type = DataTypeOf<T>::value;
  static constexpr Swizzle swizzle = S;
  static constexpr int rank = Rank;
  static_assert(rank >= 1 && rank <= kMaxRank, "T3: a tile has rank 1..5");
  static_assert(element_bytes(data_type) == static_cast<int>(sizeof(T)),
                "element type size differs from the tensor-map data type's size");

  static constexpr std::uint32_t elem_bytes = sizeof(T);
  // D1 / D2: 128 B for any TMA destination, the swizzle repeat with a swizzle.
  static constexpr std::uint32_t align_bytes = swizzle_repeat_bytes(S);
  static constexpr std::uint32_t smem_bytes = CapacityBytes;
  static_assert(smem_bytes > 0 && smem_bytes % align_bytes == 0,
                "the capacity must be a whole number of alignment units, so an array of "
                "Buffers keeps every box aligned");

  struct alignas(align_bytes) Buffer {
    static constexpr std::uint32_t tile_capacity_bytes = smem_bytes;
    unsigned char bytes[smem_bytes];
  };
};

}  // namespace tmakit
