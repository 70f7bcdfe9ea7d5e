// The plain transpose kernel's entry (plain_transpose.cu): views TMA cannot describe
// (tmakit/kernels/detail/plain_path.hpp).
#pragma once

#include <cuda_runtime.h>

#include "tmakit/kernels/tensor_ref.hpp"

namespace tmakit::detail::transpose {

// out = in transposed on checked, non-empty views.
void launch_plain(ConstTensorRef in, TensorRef out, cudaStream_t stream);

}  // namespace tmakit::detail::transpose
