// CPU reference of stencil3x3: the kernel's arithmetic (fused multiply-adds in tap order,
// zero outside the image), element by element over host memory.
#include <cmath>
#include <cstring>

#include "tmakit/kernels/stencil3x3.hpp"

namespace tmakit::reference {
namespace {

template <class T>
void run(ConstTensorRef in, TensorRef out, const Filter3x3& filter) {
  T taps[9];
  for (int i = 0; i < 9; ++i) taps[i] = static_cast<T>(filter.taps[i]);
  const auto rows = static_cast<std::int64_t>(in.rows);
  const auto cols = static_cast<std::int64_t>(in.cols);
  for (std::uint64_t b = 0; b < in.batch; ++b) {
    const auto* image = static_cast<const std::uint8_t*>(in.data) + b * in.image_pitch();
    auto* result = static_cast<std::uint8_t*>(out.data) + b * out.image_pitch();
    const auto at = [&](std::int64_t y, std::int64_t x) {
      if (y < 0 || y >= rows || x < 0 || x >= cols) return T(0);
      T v;
      std::memcpy(&v, image + y * in.row_pitch() + x * sizeof(T), sizeof(T));
      return v;
    };
    for (std::int64_t y = 0; y < rows; ++y) {
      for (std::int64_t x = 0; x < cols; ++x) {
        T acc = T(0);
        for (int dy = 0; dy < 3; ++dy) {
          for (int dx = 0; dx < 3; ++dx) acc = std::fma(taps[3 * dy + dx], at(y + dy - 1, x + dx - 1), acc);
        }
        std::memcpy(result + y * out.row_pitch() + x * sizeof(T), &acc, sizeof(T));
      }
    }
  }
}

}  // namespace

void stencil3x3(ConstTensorRef in, TensorRef out, const Filter3x3& filter) {
  if (in.data == nullptr) throw ArgumentError("in.data", "is null");
  if (out.data == nullptr) throw ArgumentError("out.data", "is null");
  if (in.type != out.type) throw ArgumentError("out.type", "differs from in.type");
  if (in.rows != out.rows || in.cols != out.cols || in.batch != out.batch) {
    throw ArgumentError("out", "shape differs from in's");
  }
  if (in.type == DataType::float32) {
    run<float>(in, out, filter);
  } else if (in.type == DataType::float64) {
    run<double>(in, out, filter);
  } else {
    throw ArgumentError("in.type", std::string(name(in.type)) + " is not supported");
  }
}

}  // namespace tmakit::reference
