#include "tmakit/model/tma_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <sstream>

#include "tmakit/swizzle.hpp"

namespace tmakit::model {
namespace {

// NOTE: the largest buffer the model builds: what one CTA's shared memory can hold (228 KiB on
// sm_90, the driver's box limit X1 too). The driver accepts boxes whose footprint is larger
// (X1 counts boxDim / elementStride rounded down, and ignores the swizzle's padded rows); no
// copy can write them, so the model refuses them before allocating anything.
constexpr std::uint64_t kMaxFootprintBytes = 228 * 1024;

std::string hex(std::uint64_t v) {
  std::ostringstream os;
  os << "0x" << std::hex << v;
  return os.str();
}

// One element of a box: where it sits in shared memory before the swizzle, and where it comes
// from in global memory (nullopt when out of bounds, or when the offset overflows 64 bits).
struct Element {
  std::uint64_t smem_offset = 0;
  bool in_bounds = false;
  std::uint64_t global_offset = 0;  // from global_address, valid when in_bounds
  std::array<std::int64_t, kMaxRank> coord{};
};

// Bytes one step of dimension 0 moves: an element, or with interleave one whole 16- or 32-byte
// slice (measured on H200, docs/hardware.md H12).
std::uint32_t dim0_unit_bytes(const TensorMapSpec& spec) {
  return spec.interleave == Interleave::none
             ? static_cast<std::uint32_t>(element_bytes(spec.data_type))
             : static_cast<std::uint32_t>(interleave_bytes(spec.interleave));
}

// Byte offset of an in-bounds element (or slice); false on 64-bit overflow (strides < 2^40
// times coordinates < 2^32 can exceed it).
bool global_offset_of(const TensorMapSpec& spec, const std::array<std::int64_t, kMaxRank>& x,
                      std::uint64_t* out) {
  std::uint64_t off = static_cast<std::uint64_t>(x[0]) * dim0_unit_bytes(spec);
  for (std::uint32_t d = 1; d < spec.rank; ++d) {
    std::uint64_t term = 0;
    if (__builtin_mul_overflow(static_cast<std::uint64_t>(x[d]), spec.global_strides_bytes[d - 1],
                               &term) ||
        __builtin_add_overflow(off, term, &off)) {
      return false;
    }
  }
  *out = off;
  return true;
}

bool in_tensor(const TensorMapSpec& spec, const std::array<std::int64_t, kMaxRank>& x) {
  for (std::uint32_t d = 0; d < spec.rank; ++d) {
    if (x[d] < 0 || static_cast<std::uint64_t>(x[d]) >= spec.global_dim[d]) return false;
  }
  return true;
}

// Elements dimension 0 delivers: box_elements() already ignores elementStrides[0] without
// interleave, as the hardware does (measured on H200; the driver documentation says "the
// first element of this array is ignored").
std::uint64_t dim0_elements(const TensorMapSpec& spec) { return box_elements(spec, 0); }
std::uint32_t dim0_stride(const TensorMapSpec& spec) {
  return spec.interleave == Interleave::none ? 1u : spec.element_strides[0];
}

// `byte_in_unit`: with interleave, the element's byte offset inside its dimension-0 slice.
Element make_element(const TensorMapSpec& spec, const std::array<std::int64_t, kMaxRank>& x,
                     std::uint64_t smem_offset, std::uint32_t byte_in_unit = 0) {
  Element e;
  e.smem_offset = smem_offset;
  e.coord = x;
  e.in_bounds = in_tensor(spec, x);
  if (e.in_bounds && (!global_offset_of(spec, x, &e.global_offset) ||
                      __builtin_add_overflow(e.global_offset, byte_in_unit, &e.global_offset))) {
    throw ModelError("element at dimension-0 coordinate " + std::to_string(x[0]) +
                     " has a global byte offset past 2^64");
  }
  return e;
}

// Tiled box walk: dimension 0 fastest; row r holds the elements of one combination of the outer
// indices (dimension 1 fastest). Element k of a dimension sits at coordinate c + k * stride.
// NOTE: measured on H200 (docs/hardware.md H12): with interleave, step k of dimension 0 is the
// whole slice at global byte (c[0] + k * elementStrides[0]) * slice bytes, bounded by
// globalDim[0] slices, filled or read whole; dimension rank-2 stays at c[rank-2]
// (box_elements() = 1 there).
template <class F>
void walk_tiled(const TensorMapSpec& spec, const Coords& coords, F&& visit) {
  const Footprint fp = footprint(spec);
  const std::uint32_t esize = static_cast<std::uint32_t>(element_bytes(spec.data_type));
  std::array<std::uint64_t, kMaxRank> n{1, 1, 1, 1, 1};
  for (std::uint32_t d = 1; d < spec.rank; ++d) n[d] = box_elements(spec, d);
  n[0] = dim0_elements(spec);
  std::array<std::uint64_t, kMaxRank> idx{};  // outer indices, dimensions 1..rank-1
  for (std::uint64_t row = 0; row < fp.rows; ++row) {
    std::array<std::int64_t, kMaxRank> x{};
    for (std::uint32_t d = 1; d < spec.rank; ++d) {
      x[d] = std::int64_t{coords[d]} + static_cast<std::int64_t>(idx[d] * spec.element_strides[d]);
    }
    for (std::uint64_t k = 0; k < n[0]; ++k) {
      x[0] = std::int64_t{coords[0]} + static_cast<std::int64_t>(k * dim0_stride(spec));
      if (spec.interleave == Interleave::none) {
        visit(make_element(spec, x, row * fp.pitch_bytes + k * esize));
        continue;
      }
      // one slice: its elements, in order
      const std::uint32_t unit = dim0_unit_bytes(spec);
      for (std::uint32_t j = 0; j < unit; j += esize) {
        visit(make_element(spec, x, row * fp.pitch_bytes + k * unit + j, j));
      }
    }
    // next outer index, dimension 1 fastest
    for (std::uint32_t d = 1; d < spec.rank; ++d) {
      if (++idx[d] < n[d]) break;
      idx[d] = 0;
    }
  }
}

// Im2col walk (PTX ISA "im2col mode"): pixelsPerColumn pixels, each channelsPerPixel elements
// of dimension 0. The pixel position starts at the filter base given by the coordinates and
// steps through the pixel box (lower corner .. dim - 1 + upper corner) W first, each spatial
// dimension by its traversal stride; past the box's last row it moves on by the N dimension's
// traversal stride to a later image. The element read is at the pixel position plus the im2col
// offsets.
template <class F>
void walk_im2col(const TensorMapSpec& spec, const Coords& coords,
                 const std::array<std::uint16_t, 3>& offsets, F&& visit) {
  const Footprint fp = footprint(spec);
  const std::uint32_t esize = static_cast<std::uint32_t>(element_bytes(spec.data_type));
  const std::uint32_t spatial = spec.rank - 2;  // W, H, D
  const std::uint32_t n_dim = spec.rank - 1;
  std::array<std::int64_t, kMaxRank> pos{};
  for (std::uint32_t d = 1; d < spec.rank; ++d) pos[d] = coords[d];
  for (std::uint64_t p = 0; p < spec.pixels_per_column; ++p) {
    std::array<std::int64_t, kMaxRank> x{};
    for (std::uint32_t i = 0; i < spatial; ++i) x[1 + i] = pos[1 + i] + offsets[i];
    x[n_dim] = pos[n_dim];
    for (std::uint64_t k = 0; k < spec.channels_per_pixel; ++k) {
      x[0] = std::int64_t{coords[0]} + static_cast<std::int64_t>(k);
      visit(make_element(spec, x, p * fp.pitch_bytes + k * esize));
    }
    // next pixel: W first, wrapping to the lower corner, then H, D, then the next image
    bool carry = true;
    for (std::uint32_t i = 0; i < spatial && carry; ++i) {
      const std::uint32_t d = 1 + i;
      const std::int64_t hi =
          static_cast<std::int64_t>(spec.global_dim[d]) - 1 + spec.pixel_box_upper_corner[i];
      pos[d] += spec.element_strides[d];
      carry = pos[d] > hi;
      if (carry) pos[d] = spec.pixel_box_lower_corner[i];
    }
    // NOTE: measured on H200: the image steps by elementStrides[N] too, not by one
    if (carry) pos[n_dim] += spec.element_strides[n_dim];
  }
}

const std::uint8_t& global_byte(std::span<const std::uint8_t> global, const TensorMapSpec& spec,
                                std::uint64_t offset) {
  if (offset >= global.size()) {
    throw ModelError("global byte at offset " + std::to_string(offset) + " (address " +
                     hex(spec.global_address + offset) + ") is outside the " +
                     std::to_string(global.size()) + " bytes given (addresses " +
                     hex(spec.global_address) + ".." + hex(spec.global_address + global.size()) +
                     ")");
  }
  return global[offset];
}

std::uint8_t& global_byte(std::span<std::uint8_t> global, const TensorMapSpec& spec,
                          std::uint64_t offset) {
  return const_cast<std::uint8_t&>(
      global_byte(std::span<const std::uint8_t>(global.data(), global.size()), spec, offset));
}

// D1: TMA's shared-memory operand is 128-byte aligned. NOTE: off that alignment the 16-byte
// chunks a swizzle moves leave the buffer's 128-byte rows, past its footprint.
void check_smem_address(std::uint32_t smem_address) {
  if (smem_address % 128 != 0) {
    throw ModelError("smem_address " + hex(smem_address) +
                     " is not 128-byte aligned; TMA's shared-memory operand is (D1): use " +
                     hex(smem_address / 128 * 128) + " or " +
                         hex((std::uint64_t{smem_address} / 128 + 1) * 128));
  }
}

// Buffer offset of the byte at logical (unswizzled) offset `logical` of a buffer at
// `smem_address`: the swizzle acts on the absolute shared-memory address (O5).
std::uint64_t physical(const TensorMapSpec& spec, std::uint32_t smem_address,
                       std::uint64_t logical) {
  // footprints stay within 228 KiB (check_walkable), so the address fits 32 bits
  const std::uint32_t addr = smem_address + static_cast<std::uint32_t>(logical);
  return std::uint32_t{swizzle_address(spec.swizzle, addr) - smem_address};
}

bool is_tf32(DataType t) {
  return t == DataType::tfloat32 || t == DataType::tfloat32_ftz;
}

// NOTE: measured on H200: TFLOAT32 / TFLOAT32_FTZ loads round each element to tf32 (10
// mantissa bits, nearest even, the PTX ISA's rounding for tensor element types), subnormals
// kept, and turn every NaN into the canonical 0x7FFFE000. Out-of-bounds fill is not rounded.
// Stores write the shared-memory bits unchanged (a TFLOAT32 store matched only that way).
std::uint32_t to_tf32(std::uint32_t v) {
  const bool nan = (v & 0x7F800000u) == 0x7F800000u && (v & 0x007FFFFFu) != 0;
  if (nan) return 0x7FFFE000u;
  return (v + 0xFFFu + ((v >> 13) & 1u)) & ~0x1FFFu;  // a carry into the exponent is right
}

// One element's bytes as a load delivers them (little-endian).
void convert_element(DataType t, std::uint8_t* p) {
  if (!is_tf32(t)) return;
  std::uint32_t v = 0;
  std::memcpy(&v, p, 4);
  v = to_tf32(v);
  std::memcpy(p, &v, 4);
}

template <class Walk>
SharedBytes load_with(const TensorMapSpec& spec, std::span<const std::uint8_t> global,
                      std::uint32_t smem_address, Walk&& walk) {
  check_smem_address(smem_address);
  const Footprint fp = footprint(spec);
  const std::uint32_t esize = static_cast<std::uint32_t>(element_bytes(spec.data_type));
  const auto fill = oob_fill_bytes(spec);
  SharedBytes out;
  out.bytes.assign(fp.total_bytes, 0);
  out.written.assign(fp.total_bytes, 0);
  out.tx_bytes = std::uint64_t{fp.rows} * fp.row_bytes;
  walk([&](const Element& e) {
    std::array<std::uint8_t, 8> value = fill;
    if (e.in_bounds) {
      for (std::uint32_t j = 0; j < esize; ++j) {
        value[j] = global_byte(global, spec, e.global_offset + j);
      }
      convert_element(spec.data_type, value.data());
    }
    for (std::uint32_t j = 0; j < esize; ++j) {
      const std::uint64_t at = physical(spec, smem_address, e.smem_offset + j);
      // NOTE: the swizzle only permutes 16-byte chunks inside one span-wide row, so `at` stays
      // inside the footprint; checked anyway so a wrong layout cannot write out of range.
      if (at >= out.bytes.size()) throw ModelError("internal: swizzled offset past footprint");
      out.bytes[at] = value[j];
      out.written[at] = 1;
    }
  });
  return out;
}

void check_smem(const TensorMapSpec& spec, std::span<const std::uint8_t> smem) {
  const Footprint fp = footprint(spec);
  if (smem.size() < fp.total_bytes) {
    throw ModelError("shared-memory buffer holds " + std::to_string(smem.size()) +
                     " bytes; the box needs " + std::to_string(fp.total_bytes) + " (" +
                     std::to_string(fp.rows) + " rows x " + std::to_string(fp.pitch_bytes) +
                     " bytes)");
  }
}

// --- element arithmetic for reduce ----------------------------------------------------------

template <class T>
T load_le(const std::uint8_t* p) {
  T v{};
  std::memcpy(&v, p, sizeof v);  // host is little-endian, like the GPU
  return v;
}
template <class T>
void store_le(std::uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

// IEEE binary format with `exp_bits` exponent and `man_bits` mantissa bits, as double (exact).
double decode_float(std::uint32_t bits, int exp_bits, int man_bits) {
  const std::uint32_t man_mask = (1u << man_bits) - 1;
  const std::uint32_t exp_max = (1u << exp_bits) - 1;
  const int bias = static_cast<int>(exp_max >> 1);
  const bool negative = (bits >> (exp_bits + man_bits)) & 1u;
  const std::uint32_t exponent = (bits >> man_bits) & exp_max;
  const std::uint32_t mantissa = bits & man_mask;
  double v = 0;
  if (exponent == exp_max) {
    v = mantissa ? std::numeric_limits<double>::quiet_NaN()
                 : std::numeric_limits<double>::infinity();
  } else if (exponent == 0) {
    v = std::ldexp(static_cast<double>(mantissa), 1 - bias - man_bits);
  } else {
    v = std::ldexp(static_cast<double>(mantissa | (1u << man_bits)),
                   static_cast<int>(exponent) - bias - man_bits);
  }
  return negative ? -v : v;
}

// Rounds to nearest even. NOTE: rounding a double sum again is exact for formats of at most 24
// mantissa bits (53 >= 2p + 2), so float16, bfloat16 and float32 sums come out as the hardware's
// single rounding. NaN becomes the canonical NaN (all exponent and mantissa bits set, PTX).
std::uint32_t encode_float(double v, int exp_bits, int man_bits) {
  const std::uint32_t exp_max = (1u << exp_bits) - 1;
  const int bias = static_cast<int>(exp_max >> 1);
  const std::uint32_t sign = std::signbit(v) ? 1u << (exp_bits + man_bits) : 0u;
  if (std::isnan(v)) return (exp_max << man_bits) | ((1u << man_bits) - 1);
  const double a = std::fabs(v);
  if (std::isinf(a)) return sign | (exp_max << man_bits);
  if (a == 0) return sign;
  int e2 = 0;
  std::frexp(a, &e2);
  int e = e2 - 1;  // a = 1.f x 2^e
  if (e < 1 - bias) {
    // subnormal: units of 2^(1 - bias - man_bits); a carry into the exponent field is correct
    const double q = std::nearbyint(std::ldexp(a, -(1 - bias - man_bits)));
    return sign | static_cast<std::uint32_t>(q);
  }
  double q = std::nearbyint(std::ldexp(a, man_bits - e));
  if (q >= std::ldexp(1.0, man_bits + 1)) {
    q /= 2;
    ++e;
  }
  if (e + bias >= static_cast<int>(exp_max)) return sign | (exp_max << man_bits);
  return sign | (static_cast<std::uint32_t>(e + bias) << man_bits) |
         (static_cast<std::uint32_t>(q) & ((1u << man_bits) - 1));
}

struct FloatFormat {
  int exp_bits;
  int man_bits;
  bool ftz;  // flush subnormal inputs and results to sign-preserving zero
};

std::optional<FloatFormat> float_format(DataType t) {
  switch (t) {
    case DataType::float16: return FloatFormat{5, 10, false};
    case DataType::bfloat16: return FloatFormat{8, 7, false};
    // NOTE: PTX ISA, cp.reduce.async.bulk: "add.f32 flushes subnormal inputs and results to
    // sign-preserving zero"; add.f16 / add.bf16 are .noftz.
    case DataType::float32:
    case DataType::float32_ftz: return FloatFormat{8, 23, true};
    default: return std::nullopt;
  }
}

double flush(double v, const FloatFormat& f) {
  const double min_normal = std::ldexp(1.0, 2 - (1 << (f.exp_bits - 1)));
  if (f.ftz && v != 0 && std::fabs(v) < min_normal) return std::copysign(0.0, v);
  return v;
}

void reduce_float(ReduceOp op, const FloatFormat& f, int bytes, std::uint8_t* dst,
                  const std::uint8_t* src) {
  const int bits = 1 + f.exp_bits + f.man_bits;
  auto read = [&](const std::uint8_t* p) {
    const std::uint32_t raw = bytes == 2 ? load_le<std::uint16_t>(p) : load_le<std::uint32_t>(p);
    return flush(decode_float(raw, f.exp_bits, f.man_bits), f);
  };
  const double a = read(dst);
  const double b = read(src);
  double r = 0;
  if (op == ReduceOp::add) {
    r = flush(a + b, f);
  } else {
    // min/max: a NaN operand yields the other one (PTX min/max); -0 orders below +0
    const bool want_min = op == ReduceOp::min;
    if (std::isnan(a) || std::isnan(b)) {
      r = std::isnan(a) ? b : a;
    } else if (a == b) {
      r = (std::signbit(a) == want_min) ? a : b;
    } else {
      r = (a < b) == want_min ? a : b;
    }
  }
  // rounding to the format after flushing: a flushed result is zero already
  std::uint32_t out = encode_float(r, f.exp_bits, f.man_bits);
  if (f.ftz) {
    const std::uint32_t exponent = (out >> f.man_bits) & ((1u << f.exp_bits) - 1);
    if (exponent == 0) out &= 1u << (bits - 1);  // a result that rounded into the subnormals
  }
  if (bytes == 2) {
    store_le<std::uint16_t>(dst, static_cast<std::uint16_t>(out));
  } else {
    store_le<std::uint32_t>(dst, out);
  }
}

template <class T>
void reduce_integer(ReduceOp op, std::uint8_t* dst, const std::uint8_t* src) {
  const T a = load_le<T>(dst);
  const T b = load_le<T>(src);
  T r{};
  switch (op) {
    // NOTE: add wraps (two's complement); done unsigned so signed types do not overflow in C++
    case ReduceOp::add: {
      using U = std::make_unsigned_t<T>;
      r = static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
      break;
    }
    case ReduceOp::min: r = std::min(a, b); break;
    case ReduceOp::max: r = std::max(a, b); break;
    // PTX atom.inc / atom.dec: results stay in [0, src]
    case ReduceOp::inc: r = a >= b ? T{0} : static_cast<T>(a + 1); break;
    case ReduceOp::dec: r = (a == 0 || a > b) ? b : static_cast<T>(a - 1); break;
    case ReduceOp::bit_and: r = static_cast<T>(a & b); break;
    case ReduceOp::bit_or: r = static_cast<T>(a | b); break;
    case ReduceOp::bit_xor: r = static_cast<T>(a ^ b); break;
  }
  store_le<T>(dst, r);
}

}  // namespace

namespace {

// --- the packed types (sm_100a and later) -------------------------------------------------
// NOTE: PTX ISA, "Padding and alignment of the sub-byte types": the values lie packed in
// global memory (value i of a row at bits [i*b, i*b + b), b = 4 or 6, little-endian); in
// shared memory 16U4_ALIGN8B stays packed, 16U4_ALIGN16B puts each 16 values' 8 bytes in a
// 16-byte slot and 16U6_ALIGN16B their 12 bytes, the rest of the slot "un-initialized": the
// model never writes those bytes (written = 0), so no value is invented for them.

bool packed_padded(DataType t) {
  return t == DataType::packed_u4_align16 || t == DataType::packed_u6_align16;
}

// Shared-memory bytes of one box row of `values` values.
std::uint64_t packed_row_bytes(DataType t, std::uint64_t values) {
  return (values * static_cast<std::uint64_t>(shared_value_bits(t)) + 7) / 8;
}

void check_packed_walkable(const TensorMapSpec& spec, const Coords& coords) {
  if (spec.kind != EncodeKind::tiled) {
    throw ModelError("packed types are modelled for tiled loads only");
  }
  if (spec.rank < 1 || spec.rank > kMaxRank) {
    throw ModelError("rank " + std::to_string(spec.rank) + " is outside 1.." +
                     std::to_string(kMaxRank));
  }
  if (spec.interleave != Interleave::none) {
    throw ModelError("packed types take no interleave in the model");
  }
  for (std::uint32_t d = 0; d < spec.rank; ++d) {
    if (spec.global_dim[d] == 0) throw ModelError("globalDim[" + std::to_string(d) + "] = 0");
    if (spec.box_dim[d] < 1 || spec.box_dim[d] > 256) {
      throw ModelError("boxDim[" + std::to_string(d) + "] = " + std::to_string(spec.box_dim[d]) +
                       " is outside 1..256");
    }
    if (spec.element_strides[d] != 1) {
      throw ModelError("elementStrides[" + std::to_string(d) +
                       "] != 1: strided packed copies are not modelled");
    }
  }
  if (spec.box_dim[0] * static_cast<std::uint64_t>(value_bits(spec.data_type)) % 128 != 0) {
    throw ModelError("boxDim[0] = " + std::to_string(spec.box_dim[0]) +
                     " values is not a whole number of 16-byte chunks (rule T7)");
  }
  // NOTE: PTX ISA, "Restriction on Tensor Copy instructions": for the padded types the first
  // tensor coordinate must be a multiple of 128; the copy is illegal otherwise.
  if (packed_padded(spec.data_type) && coords[0] % 128 != 0) {
    throw ModelError("coords[0] = " + std::to_string(coords[0]) + " with " +
                     std::string(name(spec.data_type)) +
                     ": the first coordinate must be a multiple of 128 (the copy is illegal "
                     "otherwise)");
  }
}

Footprint packed_footprint(const TensorMapSpec& spec) {
  Footprint fp;
  fp.row_bytes = static_cast<std::uint32_t>(packed_row_bytes(spec.data_type, spec.box_dim[0]));
  std::uint64_t rows = 1;
  for (std::uint32_t d = 1; d < spec.rank; ++d) rows *= spec.box_dim[d];
  fp.rows = static_cast<std::uint32_t>(rows);
  fp.pitch_bytes = std::max<std::uint32_t>(
      fp.row_bytes, static_cast<std::uint32_t>(swizzle_span_bytes(spec.swizzle)));
  if (std::uint64_t{fp.pitch_bytes} * fp.rows > kMaxFootprintBytes) {
    throw ModelError("the box's shared-memory footprint is more than 228 KiB; shrink boxDim");
  }
  fp.total_bytes = fp.rows * fp.pitch_bytes;
  return fp;
}

std::uint32_t read_bits(std::span<const std::uint8_t> global, const TensorMapSpec& spec,
                        std::uint64_t bit, int count) {
  std::uint32_t v = 0;
  for (int k = 0; k < count; ++k) {
    const std::uint64_t b = bit + static_cast<std::uint64_t>(k);
    v |= static_cast<std::uint32_t>((global_byte(global, spec, b / 8) >> (b % 8)) & 1u) << k;
  }
  return v;
}

SharedBytes load_tiled_packed(const TensorMapSpec& spec, std::span<const std::uint8_t> global,
                              const Coords& coords, std::uint32_t smem_address) {
  check_smem_address(smem_address);
  check_packed_walkable(spec, coords);
  const Footprint fp = packed_footprint(spec);
  SharedBytes out;
  out.bytes.assign(fp.total_bytes, 0);
  out.written.assign(fp.total_bytes, 0);
  out.tx_bytes = box_bytes(spec);
  const int bits = value_bits(spec.data_type);
  const bool padded = packed_padded(spec.data_type);
  auto shared_bit = [&](std::uint32_t i) -> std::uint64_t {
    return padded ? std::uint64_t{i / 16} * 128 + std::uint64_t{i % 16} * bits
                  : std::uint64_t{i} * bits;
  };
  for (std::uint32_t r = 0; r < fp.rows; ++r) {
    // The row's coordinates in dimensions 1..rank-1 and whether it lies in the tensor.
    std::uint32_t rest = r;
    bool row_in = true;
    std::uint64_t row_offset = 0;
    bool wraps = false;  // the row's offset past 64 bits: outside any bytes given
    for (std::uint32_t d = 1; d < spec.rank; ++d) {
      const std::int64_t c = std::int64_t{coords[d]} + rest % spec.box_dim[d];
      rest /= spec.box_dim[d];
      if (c < 0 || c >= static_cast<std::int64_t>(spec.global_dim[d])) {
        row_in = false;
      } else {
        std::uint64_t term = 0;
        wraps = wraps ||
                __builtin_mul_overflow(static_cast<std::uint64_t>(c),
                                       spec.global_strides_bytes[d - 1], &term) ||
                __builtin_add_overflow(row_offset, term, &row_offset);
      }
    }
    const std::uint64_t row_base = std::uint64_t{r} * fp.pitch_bytes;
    for (std::uint32_t i = 0; i < spec.box_dim[0]; ++i) {
      const std::int64_t c = std::int64_t{coords[0]} + i;
      std::uint32_t v = 0;  // out-of-bounds values read 0 (P7: no NaN fill)
      if (row_in && c >= 0 && c < static_cast<std::int64_t>(spec.global_dim[0])) {
        std::uint64_t bit = 0;
        if (wraps || __builtin_mul_overflow(row_offset, std::uint64_t{8}, &bit) ||
            __builtin_add_overflow(bit, static_cast<std::uint64_t>(c) * bits, &bit)) {
          throw ModelError("the element at coordinate " + std::to_string(c) + " of box row " +
                           std::to_string(r) + " lies more than 2^64 bits past globalAddress, "
                           "outside the " + std::to_string(global.size()) + " bytes given");
        }
        v = read_bits(global, spec, bit, bits);
      }
      const std::uint64_t at = shared_bit(i);
      for (int k = 0; k < bits; ++k) {
        const std::uint64_t logical = row_base + (at + static_cast<std::uint64_t>(k)) / 8;
        const std::uint64_t phys = physical(spec, smem_address, logical);
        if (phys >= out.bytes.size()) throw ModelError("internal: packed byte past footprint");
        const auto bit = static_cast<std::uint8_t>(1u << ((at + k) % 8));
        out.bytes[phys] = static_cast<std::uint8_t>(((v >> k) & 1u) ? out.bytes[phys] | bit
                                                                    : out.bytes[phys] & ~bit);
        out.written[phys] = 1;
      }
    }
  }
  return out;
}

}  // namespace

// --- public ---------------------------------------------------------------------------------

void check_walkable(const TensorMapSpec& spec) {
  const bool im2col = spec.kind == EncodeKind::im2col;
  const std::uint32_t min_rank = im2col ? 3 : 1;
  if (spec.rank < min_rank || spec.rank > kMaxRank) {
    throw ModelError("rank " + std::to_string(spec.rank) + " is outside " +
                     std::to_string(min_rank) + ".." + std::to_string(kMaxRank));
  }
  if (is_packed(spec.data_type)) {
    throw ModelError(std::string(name(spec.data_type)) +
                     ": only tiled loads of the packed types are modelled");
  }
  if (element_bytes(spec.data_type) == 0) throw ModelError("unknown data type");
  // NOTE: tiled interleaved copies are measured (docs/hardware.md H12); im2col ones are not.
  if (im2col && spec.interleave != Interleave::none) {
    throw ModelError(std::string("im2col with interleave ") + std::string(name(spec.interleave)) +
                     " is not modelled: its layout is not yet measured on hardware");
  }
  for (std::uint32_t d = 0; d < spec.rank; ++d) {
    std::string at = "[";
    at += std::to_string(d) + "] = ";
    if (spec.global_dim[d] == 0) throw ModelError("globalDim" + at + "0");
    if (spec.element_strides[d] < 1 || spec.element_strides[d] > 8) {
      throw ModelError("elementStrides" + at + std::to_string(spec.element_strides[d]) +
                       " is outside 1..8");
    }
    if (!im2col && (spec.box_dim[d] < 1 || spec.box_dim[d] > 256)) {
      throw ModelError("boxDim" + at + std::to_string(spec.box_dim[d]) + " is outside 1..256");
    }
  }
  if (im2col && (spec.channels_per_pixel < 1 || spec.channels_per_pixel > 256 ||
                 spec.pixels_per_column < 1 || spec.pixels_per_column > 1024)) {
    throw ModelError("channelsPerPixel " + std::to_string(spec.channels_per_pixel) +
                     " / pixelsPerColumn " + std::to_string(spec.pixels_per_column) +
                     " outside 1..256 / 1..1024");
  }
  std::uint64_t rows = 1;
  const int outer = im2col ? 2 : static_cast<int>(spec.rank);
  for (int d = 1; d < outer; ++d) rows *= box_elements(spec, d);
  const std::uint64_t row = dim0_elements(spec) * dim0_unit_bytes(spec);
  const std::uint64_t pitch = std::max<std::uint64_t>(row, swizzle_span_bytes(spec.swizzle));
  if (rows * pitch > kMaxFootprintBytes) {
    throw ModelError("the box's shared-memory footprint is " + std::to_string(rows * pitch) +
                     " bytes, more than the " + std::to_string(kMaxFootprintBytes) +
                     " (228 KiB) a CTA's shared memory holds; shrink boxDim");
  }
}

Footprint footprint(const TensorMapSpec& spec) {
  if (is_packed(spec.data_type)) {
    Coords origin{};
    check_packed_walkable(spec, origin);
    return packed_footprint(spec);
  }
  check_walkable(spec);
  Footprint fp;
  fp.row_bytes = static_cast<std::uint32_t>(dim0_elements(spec) * dim0_unit_bytes(spec));
  std::uint64_t rows = 1;
  const int outer = spec.kind == EncodeKind::im2col ? 2 : static_cast<int>(spec.rank);
  for (int d = 1; d < outer; ++d) rows *= box_elements(spec, d);
  fp.rows = static_cast<std::uint32_t>(rows);
  // NOTE: O2: with a swizzle a row narrower than the span still takes the whole span.
  // With interleave the rows are dense (row_bytes apart) whatever the swizzle (H12).
  const bool span_rows = spec.swizzle != Swizzle::none && spec.interleave == Interleave::none;
  fp.pitch_bytes =
      span_rows ? std::max<std::uint32_t>(
                      fp.row_bytes, static_cast<std::uint32_t>(swizzle_span_bytes(spec.swizzle)))
                : fp.row_bytes;
  fp.total_bytes = fp.rows * fp.pitch_bytes;
  // NOTE: dense interleaved rows may be narrower than the span; the swizzle then moves 16-byte
  // chunks anywhere inside their 128-byte line, so the buffer covers whole lines.
  if (!span_rows && spec.swizzle != Swizzle::none)
    fp.total_bytes = (fp.total_bytes + 127) / 128 * 128;
  return fp;
}

std::array<std::uint8_t, 8> oob_fill_bytes(const TensorMapSpec& spec) {
  std::array<std::uint8_t, 8> fill{};
  if (spec.oob_fill == OobFill::nan_request_zero_fma) {
    if (!is_floating(spec.data_type)) {
      throw ModelError(std::string("NaN out-of-bounds fill on ") +
                       std::string(name(spec.data_type)) +
                       ", which is not a floating type (rule T13)");
    }
    // O4: the 16-bit pattern 0x7FF7 repeated over the element, little-endian
    for (std::size_t i = 0; i < fill.size(); i += 2) {
      fill[i] = 0xF7;
      fill[i + 1] = 0x7F;
    }
  }
  return fill;
}

std::string tiled_coords_refused_reason(const TensorMapSpec& spec, const Coords& coords,
                                        Direction copy) {
  // NOTE: interleaved maps count dimension 0 in whole 16- or 32-byte slices (H12), and the
  // packed types have the PTX ISA's own rule (load_tiled_packed); neither is O1's.
  const std::uint64_t esize = element_bytes(spec.data_type);
  if (spec.kind != EncodeKind::tiled || spec.interleave != Interleave::none ||
      is_packed(spec.data_type) || esize == 0 || esize >= 16) {
    return {};
  }
  const std::int64_t step = static_cast<std::int64_t>(16 / esize);  // elements per 16 bytes
  const std::int64_t x = coords[0];
  if (x % step == 0) return {};
  // the multiples of `step` around x (x is a 32-bit value: no overflow in 64 bits)
  const std::int64_t below = x >= 0 ? x / step * step : -((-x + step - 1) / step * step);
  const std::int64_t above = below + step;
  const bool load = copy == Direction::load || copy == Direction::any;
  std::ostringstream os;
  os << "coords[0] = " << x << ": " << x << " x " << esize << " bytes is not a multiple of 16; "
     << "on H200 such a " << (load ? "load" : "store")
     << " ends the kernel with 'illegal instruction' (docs/hardware.md O1"
     << (copy == Direction::reduce ? "; a reduce is refused with it, not measured" : "")
     << "); start the box at ";
  if (load) {
    os << below << " (a multiple of " << step << " elements), " << x - below
       << (x - below == 1 ? " column" : " columns") << " wider, and skip its first " << x - below;
  } else {
    // NOTE: a store or reduce writes every column of its box: starting it left of x would
    // overwrite columns it does not own, so the suggestion starts it right of x
    os << std::max<std::int64_t>(above, 0) << " (a multiple of " << step << " elements)";
    if (x >= 0) {
      os << " and write " << (x == above - 1 ? "column " : "columns ") << x
         << (x == above - 1 ? "" : ".." + std::to_string(above - 1)) << " with ordinary stores";
    }
  }
  return os.str();
}

SharedBytes load_tiled(const TensorMapSpec& spec, std::span<const std::uint8_t> global,
                       const Coords& coords, std::uint32_t smem_address) {
  if (spec.kind != EncodeKind::tiled) throw ModelError("load_tiled needs a tiled spec");
  if (is_packed(spec.data_type)) return load_tiled_packed(spec, global, coords, smem_address);
  check_walkable(spec);
  // NOTE: O1: the hardware kills the kernel; refuse rather than answer with bytes it never
  // delivers.
  if (const std::string why = tiled_coords_refused_reason(spec, coords, Direction::load);
      !why.empty())
    throw ModelError(why);
  return load_with(spec, global, smem_address,
                   [&](auto&& visit) { walk_tiled(spec, coords, visit); });
}

std::string im2col_coords_refused_reason(const TensorMapSpec& spec, const Coords& coords) {
  static constexpr const char* kNames[3] = {"W", "H", "D"};
  // a rank outside 3..5 is check_walkable's to report
  if (spec.rank < 3 || spec.rank > static_cast<std::uint32_t>(kMaxRank)) return {};
  const std::uint32_t spatial = spec.rank - 2;
  for (std::uint32_t i = 0; i < spatial; ++i) {
    const std::uint32_t d = 1 + i;
    const std::int64_t lo = spec.pixel_box_lower_corner[i];
    const std::int64_t hi =
        static_cast<std::int64_t>(spec.global_dim[d]) - 1 + spec.pixel_box_upper_corner[i];
    const std::int64_t c = coords[d];
    if (c >= lo && c <= hi) continue;
    // W, H, D count from dimension 1 whatever the rank: rank 3 has W, rank 4 W and H
    std::ostringstream os;
    os << "im2col pixel coordinate " << kNames[i] << " (coords[" << d << "]) = " << c
       << " is outside the pixel box " << lo << ".." << hi << " (pixelBoxLowerCorner[" << i
       << "] .. globalDim[" << d << "] - 1 + pixelBoxUpperCorner[" << i
       << "]): on H200 such a load kills the kernel (docs/hardware.md H10); start the column "
          "at a pixel inside the box";
    return os.str();
  }
  return {};
}

SharedBytes load_im2col(const TensorMapSpec& spec, std::span<const std::uint8_t> global,
                        const Coords& coords, const std::array<std::uint16_t, 3>& offsets,
                        std::uint32_t smem_address) {
  if (spec.kind != EncodeKind::im2col) throw ModelError("load_im2col needs an im2col spec");
  check_walkable(spec);
  // NOTE: H10: a pixel coordinate outside the pixel box kills the kernel on H200; refuse
  // rather than answer with bytes no hardware delivers.
  if (const std::string why = im2col_coords_refused_reason(spec, coords); !why.empty())
    throw ModelError(why);
  return load_with(spec, global, smem_address,
                   [&](auto&& visit) { walk_im2col(spec, coords, offsets, visit); });
}

std::vector<std::optional<SharedBytes>> load_multicast(const TensorMapSpec& spec,
                                                       std::span<const std::uint8_t> global,
                                                       const Coords& coords, std::uint16_t cta_mask,
                                                       std::uint32_t cluster_size,
                                                       std::uint32_t smem_address) {
  if (cluster_size < 1 || cluster_size > 16) {
    throw ModelError("cluster size " + std::to_string(cluster_size) + " is outside 1..16");
  }
  if (cluster_size < 16 && (cta_mask >> cluster_size) != 0) {
    throw ModelError("ctaMask " + hex(cta_mask) + " names CTAs past the cluster's " +
                     std::to_string(cluster_size));
  }
  // every receiver gets the same bytes at the same offset of its own shared memory
  const SharedBytes box = load_tiled(spec, global, coords, smem_address);
  std::vector<std::optional<SharedBytes>> out(cluster_size);
  for (std::uint32_t cta = 0; cta < cluster_size; ++cta) {
    if ((cta_mask >> cta) & 1u) out[cta] = box;
  }
  return out;
}

std::vector<ByteRange> prefetch_tiled(const TensorMapSpec& spec, const Coords& coords) {
  if (spec.kind != EncodeKind::tiled) throw ModelError("prefetch_tiled needs a tiled spec");
  check_walkable(spec);
  const std::uint32_t esize = static_cast<std::uint32_t>(element_bytes(spec.data_type));
  std::vector<ByteRange> ranges;
  walk_tiled(spec, coords, [&](const Element& e) {
    if (!e.in_bounds) return;
    if (!ranges.empty() && ranges.back().end == e.global_offset) {
      ranges.back().end += esize;  // contiguous with the previous element
    } else {
      ranges.push_back({e.global_offset, e.global_offset + esize});
    }
  });
  return ranges;
}

namespace {

// Where a store or reduce writes an element, or nullopt where it drops it.
// NOTE: measured on H200: stores and reduces work on whole 16-byte chunks of dimension 0, so
// the elements past globalDim[0] that share the last chunk with in-bounds data are written
// too (into the row's padding; 2 of 2 cases); other dimensions drop exactly (D3).
std::optional<std::uint64_t> store_target(const TensorMapSpec& spec, const Element& e) {
  if (e.in_bounds) return e.global_offset;
  // with interleave, dimension 0 steps by whole slices: nothing shares a slice with the tensor
  if (spec.interleave != Interleave::none) return std::nullopt;
  const std::uint64_t esize = element_bytes(spec.data_type);
  const std::uint64_t dim0_chunk_end = (spec.global_dim[0] * esize + 15) / 16 * 16;
  if (e.coord[0] < 0 || static_cast<std::uint64_t>(e.coord[0]) * esize >= dim0_chunk_end) {
    return std::nullopt;
  }
  for (std::uint32_t d = 1; d < spec.rank; ++d) {
    if (e.coord[d] < 0 || static_cast<std::uint64_t>(e.coord[d]) >= spec.global_dim[d]) {
      return std::nullopt;
    }
  }
  std::uint64_t off = 0;
  if (!global_offset_of(spec, e.coord, &off)) throw ModelError("global offset past 2^64");
  return off;
}

// NOTE: measured on H200: a store or reduce whose box lies wholly outside the tensor kills the
// kernel with "illegal instruction" (6 of 6 cases), and so does one that starts at a negative
// coordinate (device tests; which dimensions matter is not pinned down, so any counts); the
// model refuses both instead of guessing.
void check_store_reaches_tensor(const TensorMapSpec& spec, const Coords& coords,
                                Direction copy) {
  if (const std::string why = tiled_coords_refused_reason(spec, coords, copy); !why.empty())
    throw ModelError(why);
  for (std::uint32_t d = 0; d < spec.rank; ++d) {
    if (coords[d] < 0) {
      throw ModelError("coordinate " + std::to_string(d) + " is " + std::to_string(coords[d]) +
                       ": on H200 a store or reduce starting at a negative coordinate ends the "
                       "kernel with 'illegal instruction'; start at 0 and shrink the box");
    }
  }
  bool any = false;
  walk_tiled(spec, coords, [&](const Element& e) { any = any || store_target(spec, e); });
  if (!any) {
    throw ModelError(
        "the box lies wholly outside the tensor: on H200 such a store or reduce "
        "ends the kernel with 'illegal instruction'; skip it instead");
  }
}

}  // namespace

void store_tiled(const TensorMapSpec& spec, std::span<std::uint8_t> global,
                 std::span<const std::uint8_t> smem, const Coords& coords,
                 std::uint32_t smem_address) {
  if (spec.kind != EncodeKind::tiled) throw ModelError("store_tiled needs a tiled spec");
  check_walkable(spec);  // (the packed types: loads only)
  check_smem_address(smem_address);
  check_smem(spec, smem);
  const std::uint32_t esize = static_cast<std::uint32_t>(element_bytes(spec.data_type));
  check_store_reaches_tensor(spec, coords, Direction::store);
  walk_tiled(spec, coords, [&](const Element& e) {
    const auto target = store_target(spec, e);
    if (!target) return;  // D3: the out-of-bounds part of a store is dropped
    std::array<std::uint8_t, 8> value{};
    for (std::uint32_t j = 0; j < esize; ++j) {
      value[j] = smem[physical(spec, smem_address, e.smem_offset + j)];
    }
    for (std::uint32_t j = 0; j < esize; ++j) global_byte(global, spec, *target + j) = value[j];
  });
}

std::vector<ByteRange> store_tiled_ranges(const TensorMapSpec& spec, const Coords& coords) {
  if (spec.kind != EncodeKind::tiled) throw ModelError("store_tiled_ranges needs a tiled spec");
  check_walkable(spec);
  check_store_reaches_tensor(spec, coords, Direction::store);
  const std::uint64_t esize = element_bytes(spec.data_type);
  std::vector<ByteRange> ranges;
  // (the same targets as store_tiled's: one walk, one rule)
  walk_tiled(spec, coords, [&](const Element& e) {
    const auto target = store_target(spec, e);
    if (!target) return;
    if (!ranges.empty() && ranges.back().end == *target) {
      ranges.back().end += esize;  // contiguous with the previous element
    } else {
      ranges.push_back({*target, *target + esize});
    }
  });
  return ranges;
}

std::optional<ReduceOp> parse_reduce_op(std::string_view s) {
  for (int i = 0; i < kReduceOpCount; ++i) {
    if (name(static_cast<ReduceOp>(i)) == s) return static_cast<ReduceOp>(i);
  }
  return std::nullopt;
}

std::string reduce_unsupported_reason(ReduceOp op, DataType type) {
  if (static_cast<int>(op) >= kReduceOpCount) {
    return "reduce op " + std::to_string(static_cast<int>(op)) +
           " is not a ReduceOp (add, min, max, inc, dec, and, or, xor)";
  }
  if (reduce_defined_on(op, type)) return {};
  return "reduce " + std::string(name(op)) + " is not defined on " + std::string(name(type)) +
         " (PTX ISA cp.reduce.async.bulk.tensor: add u32/s32/u64/f32/f16/bf16, min/max "
         "u32/s32/u64/s64/f16/bf16, inc/dec u32, and/or/xor b32/b64; add on UINT8 or INT64 and "
         "`and` on INT64 ended the kernel with 'illegal instruction' on H200, and or/xor on "
         "INT64, not measured, are refused with them)";
}

void reduce_element(ReduceOp op, DataType type, std::uint8_t* dst, const std::uint8_t* src) {
  const std::string why = reduce_unsupported_reason(op, type);
  if (!why.empty()) throw ModelError(why);
  if (const auto f = float_format(type)) {
    reduce_float(op, *f, element_bytes(type), dst, src);
    return;
  }
  switch (type) {
    case DataType::uint32: reduce_integer<std::uint32_t>(op, dst, src); break;
    case DataType::int32: reduce_integer<std::int32_t>(op, dst, src); break;
    case DataType::uint64: reduce_integer<std::uint64_t>(op, dst, src); break;
    case DataType::int64: reduce_integer<std::int64_t>(op, dst, src); break;
    default: throw ModelError("internal: reduce on " + std::string(name(type)));
  }
}

void reduce_tiled(const TensorMapSpec& spec, ReduceOp op, std::span<std::uint8_t> global,
                  std::span<const std::uint8_t> smem, const Coords& coords,
                  std::uint32_t smem_address) {
  if (spec.kind != EncodeKind::tiled) throw ModelError("reduce_tiled needs a tiled spec");
  const std::string why = reduce_unsupported_reason(op, spec.data_type);
  if (!why.empty()) throw ModelError(why);
  check_smem_address(smem_address);
  check_smem(spec, smem);
  const std::uint32_t esize = static_cast<std::uint32_t>(element_bytes(spec.data_type));
  check_store_reaches_tensor(spec, coords, Direction::reduce);
  walk_tiled(spec, coords, [&](const Element& e) {
    const auto target = store_target(spec, e);
    if (!target) return;
    std::array<std::uint8_t, 8> src{};
    std::array<std::uint8_t, 8> dst{};
    for (std::uint32_t j = 0; j < esize; ++j) {
      src[j] = smem[physical(spec, smem_address, e.smem_offset + j)];
      dst[j] = global_byte(global, spec, *target + j);
    }
    reduce_element(op, spec.data_type, dst.data(), src.data());
    for (std::uint32_t j = 0; j < esize; ++j) {
      global_byte(global, spec, *target + j) = dst[j];
    }
  });
}

}  // namespace tmakit::model
