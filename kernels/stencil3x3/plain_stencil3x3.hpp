// The plain 3x3 stencil kernel's entry (plain_stencil3x3.cu): views TMA cannot describe
// (tmakit/kernels/detail/plain_path.hpp).
#pragma once

#include <cuda_runtime.h>

#include "tmakit/kernels/stencil3x3.hpp"
#include "tmakit/kernels/tensor_ref.hpp"

namespace tmakit::detail::stencil3x3 {

// The stencil on checked, non-empty views of float32 or float64.
void launch_plain(ConstTensorRef in, TensorRef out, const Filter3x3& filter, cudaStream_t stream);

}  // namespace tmakit::detail::stencil3x3
