// The plain 3x3 stencil kernel's entries (plain_stencil3x3.cu): views TMA cannot describe
// (tmakit/kernels/detail/plain_path.hpp), and aligned ones where the plan picks it
// (stencil3x3_plan.hpp).
#pragma once

#include <cuda_runtime.h>

#include "tmakit/kernels/stencil3x3.hpp"
#include "tmakit/kernels/tensor_ref.hpp"

namespace tmakit::detail::stencil3x3 {

// The stencil on checked, non-empty views of float32 or float64.
void launch_plain(ConstTensorRef in, TensorRef out, const Filter3x3& filter, cudaStream_t stream);

// The same with 16-byte loads and stores: views whose data, row pitches and image pitches
// are 16-byte aligned (what TMA takes, plain_path.hpp's rule P6).
void launch_plain_vector(ConstTensorRef in, TensorRef out, const Filter3x3& filter,
                         cudaStream_t stream);

}  // namespace tmakit::detail::stencil3x3
