// CPU reference of add_constant: the kernel's arithmetic, element by element, on host memory.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstring>

#include "elementwise_constant.hpp"
#include "tmakit/kernels/elementwise.hpp"

namespace tmakit::reference {

void add_constant(ConstTensorRef in, TensorRef out, double value) {
  if (in.data == nullptr) throw ArgumentError("in.data", "is null");
  if (out.data == nullptr) throw ArgumentError("out.data", "is null");
  if (in.type != out.type) throw ArgumentError("out.type", "differs from in.type");
  if (in.rows != out.rows || in.cols != out.cols) throw ArgumentError("out", "shape differs");
  const auto c = detail::elementwise::make_constant(in.type, value);
  const std::uint64_t esize = in.element_size();
  for (std::uint64_t r = 0; r < in.rows; ++r) {
    const auto* src = static_cast<const std::uint8_t*>(in.data) + r * in.row_pitch();
    auto* dst = static_cast<std::uint8_t*>(out.data) + r * out.row_pitch();
    for (std::uint64_t col = 0; col < in.cols; ++col) {
      const std::uint8_t* s = src + col * esize;
      std::uint8_t* d = dst + col * esize;
      switch (in.type) {
        case DataType::int32: {
          std::uint32_t v;
          std::memcpy(&v, s, 4);
          v += static_cast<std::uint32_t>(c.i32);  // wraps, as the kernel's does
          std::memcpy(d, &v, 4);
          break;
        }
        case DataType::float32: {
          float v;
          std::memcpy(&v, s, 4);
          v += c.f32;
          std::memcpy(d, &v, 4);
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

}  // namespace tmakit::reference
