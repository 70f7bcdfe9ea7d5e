// CPU reference of add_constant: the kernel's arithmetic, element by element, on host memory.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstring>

#include "elementwise_constant.hpp"
#include "tmakit/kernels/elementwise.hpp"

namespace tmakit::reference {

namespace {

template <class T>
void add_integers(const std::uint8_t* s, std::uint8_t* d, std::uint64_t bits) {
  T v;
  std::memcpy(&v, s, sizeof(T));
  v = static_cast<T>(v + static_cast<T>(bits));  // wraps, as the kernels' does
  std::memcpy(d, &v, sizeof(T));
}

void run(ConstTensorRef in, TensorRef out, const detail::elementwise::Constant& c) {
  const std::uint64_t esize = in.element_size();
  for (std::uint64_t r = 0; r < in.rows; ++r) {
    const auto* src = static_cast<const std::uint8_t*>(in.data) + r * in.row_pitch();
    auto* dst = static_cast<std::uint8_t*>(out.data) + r * out.row_pitch();
    for (std::uint64_t col = 0; col < in.cols; ++col) {
      const std::uint8_t* s = src + col * esize;
      std::uint8_t* d = dst + col * esize;
      switch (in.type) {
        case DataType::uint8: add_integers<std::uint8_t>(s, d, c.bits); break;
        case DataType::uint16: add_integers<std::uint16_t>(s, d, c.bits); break;
        case DataType::uint32:
        case DataType::int32: add_integers<std::uint32_t>(s, d, c.bits); break;
        case DataType::uint64:
        case DataType::int64: add_integers<std::uint64_t>(s, d, c.bits); break;
        case DataType::float32: {
          float v;
          std::memcpy(&v, s, 4);
          v += c.f32;
          std::memcpy(d, &v, 4);
          break;
        }
        case DataType::float64: {
          double v;
          std::memcpy(&v, s, 8);
          v += c.f64;
          std::memcpy(d, &v, 8);
          break;
        }
        case DataType::bfloat16: {
          __nv_bfloat16 v;
          std::memcpy(&v, s, 2);
          v = __float2bfloat16_rn(__bfloat162float(v) + c.f32);
          std::memcpy(d, &v, 2);
          break;
        }
        case DataType::float16: {
          __half v;
          std::memcpy(&v, s, 2);
          v = __float2half_rn(__half2float(v) + c.f32);
          std::memcpy(d, &v, 2);
          break;
        }
        default: throw ArgumentError("in.type", std::string(name(in.type)) + " is not supported");
      }
    }
  }
}

void check(ConstTensorRef in, TensorRef out) {
  if (in.type != out.type) throw ArgumentError("out.type", "differs from in.type");
  if (in.rows != out.rows || in.cols != out.cols) throw ArgumentError("out", "shape differs");
  if (in.rows == 0 || in.cols == 0) return;
  if (in.data == nullptr) throw ArgumentError("in.data", "is null");
  if (out.data == nullptr) throw ArgumentError("out.data", "is null");
}

}  // namespace

void add_constant(ConstTensorRef in, TensorRef out, double value) {
  check(in, out);
  if (!detail::elementwise::add_type(in.type)) {
    throw ArgumentError("in.type", std::string(name(in.type)) + " is not supported");
  }
  run(in, out, detail::elementwise::make_constant(in.type, value));
}

void add_integer(ConstTensorRef in, TensorRef out, std::int64_t value) {
  check(in, out);
  if (!detail::elementwise::is_integer(in.type)) {
    throw ArgumentError("in.type", std::string(name(in.type)) + " is not an integer type");
  }
  run(in, out, detail::elementwise::integer_constant(value));
}

}  // namespace tmakit::reference
