// The plain add-constant kernel's entry (plain_elementwise.cu): views TMA cannot describe
// (tmakit/kernels/detail/plain_path.hpp) and types the TMA kernel is not built for.
#pragma once

#include <cuda_runtime.h>

#include "elementwise/elementwise_constant.hpp"
#include "tmakit/kernels/tensor_ref.hpp"

namespace tmakit::detail::elementwise {

// out = in + value on checked, non-empty views (value from make_constant/integer_constant).
void launch_plain(ConstTensorRef in, TensorRef out, const Constant& value, cudaStream_t stream);

}  // namespace tmakit::detail::elementwise
