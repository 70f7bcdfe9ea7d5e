#include "tmakit/host/encode.hpp"

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "tmakit/host/driver.hpp"
#include "tmakit/host/validate.hpp"

namespace tmakit {
namespace {

// NOTE: the spec's enums are the driver's values (a cast converts), Blackwell's included.
static_assert(static_cast<int>(DataType::packed_u6_align16) == CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B);
static_assert(static_cast<int>(DataType::packed_u4_align8) == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B);
static_assert(static_cast<int>(Swizzle::bytes128_atom64) == CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B);
static_assert(static_cast<int>(Swizzle::bytes128_atom32_flip8) ==
              CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B_FLIP_8B);
static_assert(static_cast<int>(Im2colWideMode::w128) == CU_TENSOR_MAP_IM2COL_WIDE_MODE_W128);

template <class T, std::size_t N>
void list(std::ostringstream& os, const std::array<T, N>& a, std::size_t n) {
  os << '[';
  for (std::size_t i = 0; i < n && i < N; ++i) os << (i ? ", " : "") << +a[i];
  os << ']';
}

bool log_maps() {
  static const bool on = [] {
    const char* v = std::getenv("TMAKIT_LOG_TENSOR_MAPS");
    return v != nullptr && *v != '\0' && std::string_view(v) != "0";
  }();
  return on;
}

}  // namespace

std::string describe(const TensorMapSpec& s) {
  std::ostringstream os;
  const std::size_t r = s.rank;
  os << name(s.kind) << ' ' << name(s.data_type) << " rank " << s.rank << " @0x" << std::hex
     << s.global_address << std::dec << " dim ";
  list(os, s.global_dim, r);
  os << " strides ";
  list(os, s.global_strides_bytes, r > 0 ? r - 1 : 0);
  if (s.kind == EncodeKind::tiled) {
    os << " box ";
    list(os, s.box_dim, r);
    if (s.tile_mode != TileMode::tile) os << ' ' << name(s.tile_mode);
  } else if (s.kind == EncodeKind::im2col_wide) {
    os << " mode " << name(s.wide_mode) << " width corners " << s.pixel_box_lower_corner_width
       << ".." << s.pixel_box_upper_corner_width << " channels " << s.channels_per_pixel
       << " pixels " << s.pixels_per_column;
  } else {
    os << " corners ";
    list(os, s.pixel_box_lower_corner, r > 2 ? r - 2 : 0);
    os << "..";
    list(os, s.pixel_box_upper_corner, r > 2 ? r - 2 : 0);
    os << " channels " << s.channels_per_pixel << " pixels " << s.pixels_per_column;
  }
  os << " elementStrides ";
  list(os, s.element_strides, r);
  os << " interleave " << name(s.interleave) << " swizzle " << name(s.swizzle) << " l2 "
     << name(s.l2_promotion) << " oobFill " << name(s.oob_fill);
  if (s.direction != Direction::any) os << " direction " << name(s.direction);
  return os.str();
}

std::string describe(const CUtensorMap& map) {
  std::string out;
  char word[20];
  for (int i = 0; i < 16; ++i) {
    std::snprintf(word, sizeof word, "%s%016llx", i ? " " : "",
                  static_cast<unsigned long long>(map.opaque[i]));
    out += word;
  }
  return out;
}

CUresult encode_unchecked(const TensorMapSpec& s, CUtensorMap* out) noexcept {
  const DriverApi* api = nullptr;
  try {
    api = &driver();
  } catch (...) {
    return CUDA_ERROR_NOT_FOUND;
  }
  if (const CUresult r = ensure_current_context(); r != CUDA_SUCCESS) return r;
  // NOTE: ranks past 5 still reach the driver (it must refuse them); the arrays passed are
  // sized for the largest rank the driver reads.
  cuuint64_t dims[kMaxRank]{};
  cuuint64_t strides[kMaxRank]{};
  cuuint32_t box[kMaxRank]{};
  cuuint32_t estrides[kMaxRank]{};
  int lower[kMaxRank]{};
  int upper[kMaxRank]{};
  for (int d = 0; d < kMaxRank; ++d) {
    dims[d] = s.global_dim[d];
    box[d] = s.box_dim[d];
    estrides[d] = s.element_strides[d];
    if (d < kMaxRank - 1) strides[d] = s.global_strides_bytes[d];
    if (d < kMaxRank - 2) {
      lower[d] = s.pixel_box_lower_corner[d];
      upper[d] = s.pixel_box_upper_corner[d];
    }
  }
  const auto dtype = static_cast<CUtensorMapDataType>(s.data_type);
  const auto interleave = static_cast<CUtensorMapInterleave>(s.interleave);
  const auto swizzle = static_cast<CUtensorMapSwizzle>(s.swizzle);
  const auto l2 = static_cast<CUtensorMapL2promotion>(s.l2_promotion);
  const auto oob = static_cast<CUtensorMapFloatOOBfill>(s.oob_fill);
  void* address = reinterpret_cast<void*>(static_cast<std::uintptr_t>(s.global_address));
  if (s.kind == EncodeKind::im2col_wide) {
    if (api->cuTensorMapEncodeIm2colWide == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
    return api->cuTensorMapEncodeIm2colWide(
        out, dtype, s.rank, address, dims, strides, s.pixel_box_lower_corner_width,
        s.pixel_box_upper_corner_width, s.channels_per_pixel, s.pixels_per_column, estrides,
        interleave, static_cast<CUtensorMapIm2ColWideMode>(s.wide_mode), swizzle, l2, oob);
  }
  if (s.kind == EncodeKind::tiled) {
    return api->cuTensorMapEncodeTiled(out, dtype, s.rank, address, dims, strides, box,
                                       estrides, interleave, swizzle, l2, oob);
  }
  return api->cuTensorMapEncodeIm2col(out, dtype, s.rank, address, dims, strides, lower, upper,
                                      s.channels_per_pixel, s.pixels_per_column, estrides,
                                      interleave, swizzle, l2, oob);
}

CUtensorMap encode(const TensorMapSpec& spec) {
  // NOTE: judged for the GPU the driver encodes for (sm_90a when it reports none tmakit knows).
  const ComputeCapability cc = device_compute_capability();
  validate(spec, arch_of_compute_capability(cc.major, cc.minor).value_or(Arch::sm_90a));
  driver();  // a missing driver is reported as such, not as a refused spec
  TMAKIT_DRIVER_CHECK(ensure_current_context());
  CUtensorMap map{};
  const CUresult r = encode_unchecked(spec, &map);
  if (r != CUDA_SUCCESS) {
    throw CudaError(static_cast<int>(r),
                    std::string("the driver refused a tensor map that passed every tmakit rule: ") +
                        driver_error_name(r) + "; arguments: " + describe(spec) +
                        " (please report this spec: it means a rule is missing)");
  }
  if (log_maps()) {
    std::cerr << "tmakit: encoded " << describe(spec) << "\n  map " << describe(map) << "\n";
  }
  return map;
}

}  // namespace tmakit
