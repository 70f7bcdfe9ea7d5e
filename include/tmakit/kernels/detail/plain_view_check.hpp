// The checks of a view that the TMA path or the plain path can run (plain_path.hpp picks
// which): ArgumentError naming the argument before anything is written.
#pragma once

#include <cstdint>
#include <string>

#include "tmakit/kernels/detail/launch_support.hpp"
#include "tmakit/kernels/detail/plain_path.hpp"
#include "tmakit/kernels/tensor_ref.hpp"

namespace tmakit::detail {

// Checks one view for either path: pointer, element alignment, strides, and a span any memory
// can hold (check_span); extents of any size (0: an empty view). `name` is "in" or "out". The
// TMA rules (16-byte alignment, extents within kMaxExtent) are not checked: plan_path routes a
// view that breaks them to the plain kernel, which indexes in 64 bits.
template <class P>
void check_any_view(const char* name, const BasicTensorRef<P>& v, bool batch_allowed) {
  const std::string n(name);
  require_whole_byte_type(n, v.type);
  if (!batch_allowed && v.batch != 1) {
    throw ArgumentError(n + ".batch",
                        std::to_string(v.batch) + " images given; this kernel takes one matrix");
  }
  if (has_no_element(v)) return;  // nothing is read or written through it
  if (v.data == nullptr) throw ArgumentError(n + ".data", "is null; pass a device pointer");
  const std::uint64_t esize = v.element_size();
  if (reinterpret_cast<std::uintptr_t>(v.data) % esize != 0) {
    throw ArgumentError(n + ".data", hex_address(v.data) + " is not aligned to its " +
                                         std::to_string(esize) + "-byte elements");
  }
  const std::uint64_t row_bytes = v.cols * esize;
  // NOTE: one row of one image: its stride is never followed (a (1, N) view's stride is
  // whatever its framework kept), so it is not judged here
  if (v.row_stride_bytes != 0 && v.row_stride_bytes < row_bytes && (v.rows > 1 || v.batch > 1)) {
    throw ArgumentError(n + ".row_stride_bytes", std::to_string(v.row_stride_bytes) +
                                                     " is less than a row's " +
                                                     std::to_string(row_bytes) + " bytes");
  }
  if (v.rows > 1 && v.row_stride_bytes % esize != 0) {
    throw ArgumentError(n + ".row_stride_bytes",
                        std::to_string(v.row_stride_bytes) + " is not a multiple of the " +
                            std::to_string(esize) + "-byte element");
  }
  check_span(name, v);
  if (v.batch > 1 && v.image_stride_bytes != 0 && v.image_stride_bytes < v.rows * v.row_pitch()) {
    throw ArgumentError(n + ".image_stride_bytes",
                        std::to_string(v.image_stride_bytes) + " is less than an image's " +
                            std::to_string(v.rows * v.row_pitch()) + " bytes");
  }
  if (v.batch > 1 && v.image_pitch() >= (1ull << 40)) {
    throw ArgumentError(n + ".image_stride_bytes", std::to_string(v.image_pitch()) +
                                                       " bytes between images is 2^40 or more "
                                                       "(TMA rule T6)");
  }
  if (v.batch > 1 && v.image_stride_bytes % esize != 0) {
    throw ArgumentError(n + ".image_stride_bytes",
                        std::to_string(v.image_stride_bytes) + " is not a multiple of the " +
                            std::to_string(esize) + "-byte element");
  }
  // NOTE: with no image stride given, images lie rows row pitches apart: a single row's pitch
  // (whose own test above is skipped, one row needing none) then places every image
  if (v.batch > 1 && v.image_pitch() % esize != 0) {
    throw ArgumentError(n + ".row_stride_bytes",
                        std::to_string(v.row_stride_bytes) + " is not a multiple of the " +
                            std::to_string(esize) +
                            "-byte element, and the images lie rows row pitches apart (no "
                            "image_stride_bytes given)");
  }
}

}  // namespace tmakit::detail
