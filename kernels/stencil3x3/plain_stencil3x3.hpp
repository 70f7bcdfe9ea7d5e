// The plain 3x3 stencil kernel's entries (plain_stencil3x3.cu): views TMA cannot describe
// (tmakit/kernels/detail/plain_path.hpp), and aligned ones where the plan picks it
// (stencil3x3_plan.hpp).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <optional>

#include "tmakit/kernels/stencil3x3.hpp"
#include "tmakit/kernels/tensor_ref.hpp"

namespace tmakit::detail::stencil3x3 {

// The strip shapes of a launch, as indices into kElementStrips and kVectorStrips
// (stencil3x3_plan.hpp): the plan picks them by image size where none are given (and may
// give an aligned image to the 1-element form alone); given, the launch runs the form called
// in those shapes (the GPU tests give each).
struct StripChoice {
  std::size_t element;
  std::size_t vector16;
};

// The stencil on checked, non-empty views of float32 or float64.
void launch_plain(ConstTensorRef in, TensorRef out, const Filter3x3& filter, cudaStream_t stream,
                  std::optional<StripChoice> strips = std::nullopt);

// The same with 16-byte loads and stores: views whose data, row pitches and image pitches
// are 16-byte aligned (what TMA takes, plain_path.hpp's rule P7). The columns right of the
// last whole warp span take the 1-element form (`strips->element`).
void launch_plain_vector(ConstTensorRef in, TensorRef out, const Filter3x3& filter,
                         cudaStream_t stream, std::optional<StripChoice> strips = std::nullopt);

}  // namespace tmakit::detail::stencil3x3
