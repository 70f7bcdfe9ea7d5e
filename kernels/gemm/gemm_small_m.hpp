// The small-M FP8 GEMM (sm90_gemm_fp8_small_m.cu), called by gemm_fp8 once it has checked
// every argument: configuration 3 of kernels/gemm/README.md.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "tmakit/kernels/tensor_ref.hpp"

namespace tmakit::detail {

// M rounded up to the kernel's widths 8, 16, 32, 64, 128; 0 when M > 128.
int small_m_padded(std::uint64_t m);
// The cluster size (K splits: 8, 4, 2 or 1): the largest that keeps CTAs to half the SMs.
int small_m_splits(std::uint64_t n, std::uint64_t k_blocks, int sm_count);
// D = scale * A B^T for M <= 128, K split over clusters of `splits` (1, 2, 4 or 8, at most
// the k-blocks of 128). Arguments already validated.
void launch_gemm_fp8_small_m(ConstTensorRef a, ConstTensorRef b, TensorRef d, float scale,
                             int splits, cudaStream_t stream);

}  // namespace tmakit::detail
