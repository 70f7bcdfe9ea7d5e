// CPU reference of transpose: element by element over host memory, bits moved unchanged.
#include <cstring>

#include "tmakit/kernels/transpose.hpp"

namespace tmakit::reference {

void transpose(ConstTensorRef in, TensorRef out) {
  if (in.data == nullptr) throw ArgumentError("in.data", "is null");
  if (out.data == nullptr) throw ArgumentError("out.data", "is null");
  if (in.element_size() != out.element_size()) {
    throw ArgumentError("out.type", "differs in size from in.type");
  }
  if (out.rows != in.cols || out.cols != in.rows) {
    throw ArgumentError("out", "shape is not in's transposed");
  }
  const std::uint64_t esize = in.element_size();
  for (std::uint64_t r = 0; r < in.rows; ++r) {
    const auto* src = static_cast<const std::uint8_t*>(in.data) + r * in.row_pitch();
    for (std::uint64_t c = 0; c < in.cols; ++c) {
      auto* dst = static_cast<std::uint8_t*>(out.data) + c * out.row_pitch() + r * esize;
      std::memcpy(dst, src + c * esize, esize);
    }
  }
}

}  // namespace tmakit::reference
