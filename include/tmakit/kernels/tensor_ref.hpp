// Views of device (or, for the CPU references, host) tensors that the kernels take, and the
// typed error every launcher throws for bad input.
//
// A view is row-major: `rows` x `cols` elements of `type`, rows `row_stride_bytes` apart, and
// `batch` such images `image_stride_bytes` apart. A stride of 0 means dense. Launchers read
// views, never own memory, and validate every field before anything is written.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "tmakit/core/dtype.hpp"
#include "tmakit/core/error.hpp"

namespace tmakit {

// Bad input to a kernel launcher: `argument()` names the offending argument ("in.data",
// "out.row_stride_bytes", "value"); `what()` says what is wrong with the values and a fix.
class ArgumentError : public Error {
 public:
  ArgumentError(std::string argument, const std::string& message)
      : Error(argument + ": " + message), argument_(std::move(argument)) {}
  const std::string& argument() const noexcept { return argument_; }

 private:
  std::string argument_;
};

template <class Pointer>
struct BasicTensorRef {
  Pointer data = nullptr;
  DataType type = DataType::float32;
  std::uint64_t rows = 0;
  std::uint64_t cols = 0;
  std::uint64_t row_stride_bytes = 0;    // 0: dense, cols * element size
  std::uint64_t batch = 1;               // images; only stencil3x3 takes more than one
  std::uint64_t image_stride_bytes = 0;  // 0: dense, rows * row stride

  BasicTensorRef() = default;
  BasicTensorRef(Pointer data_, DataType type_, std::uint64_t rows_, std::uint64_t cols_,
                 std::uint64_t row_stride_bytes_ = 0, std::uint64_t batch_ = 1,
                 std::uint64_t image_stride_bytes_ = 0)
      : data(data_),
        type(type_),
        rows(rows_),
        cols(cols_),
        row_stride_bytes(row_stride_bytes_),
        batch(batch_),
        image_stride_bytes(image_stride_bytes_) {}
  // A mutable view converts to a read-only one.
  template <class Other>
    requires(std::is_convertible_v<Other, Pointer> && !std::is_same_v<Other, Pointer>)
  BasicTensorRef(const BasicTensorRef<Other>& o)  // NOLINT(google-explicit-constructor)
      : BasicTensorRef(o.data, o.type, o.rows, o.cols, o.row_stride_bytes, o.batch,
                       o.image_stride_bytes) {}

  std::uint64_t element_size() const { return static_cast<std::uint64_t>(element_bytes(type)); }
  // Strides with the dense defaults filled in.
  std::uint64_t row_pitch() const {
    return row_stride_bytes != 0 ? row_stride_bytes : cols * element_size();
  }
  std::uint64_t image_pitch() const {
    return image_stride_bytes != 0 ? image_stride_bytes : rows * row_pitch();
  }
  // Bytes from the first to one past the last element (0 for an empty view).
  std::uint64_t span_bytes() const {
    if (rows == 0 || cols == 0 || batch == 0) return 0;
    return (batch - 1) * image_pitch() + (rows - 1) * row_pitch() + cols * element_size();
  }
};

using TensorRef = BasicTensorRef<void*>;
using ConstTensorRef = BasicTensorRef<const void*>;

}  // namespace tmakit
