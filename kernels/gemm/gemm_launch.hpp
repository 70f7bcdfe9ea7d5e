// What the FP8 GEMM's entry (sm90_gemm_fp8.cu, gemm_fp8) hands the kernels' launches: the
// call (operands, scale, stream, mode) and its plan. Each kernel family's file launches the
// configurations of its family (sm90_gemm_fp8_tiled.cu: the tiled and two-wave kernels;
// sm90_gemm_fp8_small_m.cu: the small-M kernel). Also the scales (gemm_launch.cpp; the CPU
// reference applies the same one) and the per-thread memo of the last call's launch.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "tmakit/kernels/gemm.hpp"
#include "tmakit/kernels/tensor_ref.hpp"

namespace tmakit::detail {

// alpha * scale_a * scale_b formed in double and rounded once to float: the scale the kernel
// and the CPU reference apply. Throws ArgumentError("scales") when no float holds it (not
// finite, or a nonzero product that rounds to 0).
float gemm_scale(const GemmScales& scales);
// Refuses device-side scales the kernels cannot read: misaligned, or given beside a host
// value other than 1 (ArgumentError "scales.scale_a_device", "scales.scale_a", ...).
void check_device_scales(const GemmScales& scales);

// The scale a kernel applies to its fp32 sums. Without device-side scales, `host`:
// alpha * scale_a * scale_b rounded once (gemm_scale). With them, the kernel reads each given
// float once, after it waits for the kernel before it, and rounds host_wide * *a * *b
// (formed in double, in that order, as gemm_scale does) once to float.
//
// Row-wise and 128-block recipes (GemmScaleRecipe::row, block): `host` is alpha, a and b the
// scale arrays, read with the strides below (elements, torch's layouts already resolved);
// the kernel applies them in its epilogue (row) or at each promotion (block).
struct GemmKernelScale {
  // (the flags a kernel's first instructions read come first: see Params in
  // sm90_gemm_common.cuh)
  GemmScaleRecipe recipe = GemmScaleRecipe::tensor;
  // 128-block scale_a whose k-blocks TMA can load as boxes (block_scale_a_tma): runs of
  // four k-blocks (Params::scale_a_map), loaded by the scale thread unless the producer
  // thread loads them (below)
  std::int32_t a_tma = 0;
  // and scale_b too (a_tma and block_scale_b_tma; Params::scale_b_map): every scale of a stage
  // is then TMA's, and where a run fits in the ring the producer thread loads both beside A
  // and B, its full barrier waiting for the producer alone (producer_loads_scale_runs)
  std::int32_t b_tma = 0;
  float host = 1.0f;
  double host_wide = 1.0;    // alpha * scale_a * scale_b in double (host values only)
  const float* a = nullptr;  // GemmScales::scale_a_device
  const float* b = nullptr;  // GemmScales::scale_b_device
  std::int64_t a_mn = 0, a_k = 0;  // scale_a[m * a_mn + kb * a_k]
  std::int64_t b_mn = 0, b_k = 0;  // scale_b[n * b_mn] (row), [nb * b_mn + kb * b_k] (block)
};
// A GemmScaleRecipe's name ("tensor", "row", "block"), and the check that a value is one:
// ArgumentError naming `field` otherwise (the GEMM's and the quantizer's launchers).
const char* scale_recipe_name(GemmScaleRecipe r);
void check_scale_recipe(GemmScaleRecipe r, const char* field);

// The scales' recipe and arrays for a call of M x N x K: torch's layouts for strides of -1,
// each given stride >= 0, a pointer for each array; throws ArgumentError naming the field
// ("scales.scale_a_device", "scales.scale_a_strides", "scales.recipe", ...) otherwise.
GemmKernelScale gemm_kernel_scale(const GemmScales& scales, std::uint64_t m, std::uint64_t n,
                                  std::uint64_t k);
// Whether 128-block scale_a (resolved strides, `aligned`: its address is 16-byte aligned)
// can be loaded by TMA, one box of a tile's rows per k-block: M-major columns (a_mn 1), each
// k-block's column a whole number of 16-byte chunks from the last (a_k a multiple of 4, at
// least M), as torch's layout is where M is a multiple of 4 and DeepGEMM's always is.
bool block_scale_a_tma(const GemmKernelScale& s, std::uint64_t m, std::uint64_t k,
                       bool aligned);
// Whether 128-block scale_b (`aligned`: 16-byte aligned address) can be loaded by TMA, a box
// of four k-blocks' floats per stage: K-major rows (b_k 1), each row of N's 128-row blocks a
// whole number of 16-byte chunks from the last (b_mn a multiple of 4, at least ceil(K/128)),
// as torch's layout is where ceil(K/128) is a multiple of 4 (K a multiple of 512).
bool block_scale_b_tma(const GemmKernelScale& s, std::uint64_t n, std::uint64_t k,
                       bool aligned);

// What a gemm_fp8 call's launch depends on besides the scale and the stream (the operands'
// addresses, shapes and pitches, D's type, the tuning, the device).
struct GemmCallKey {
  const void* a;
  const void* b;
  const void* d;
  std::uint64_t m, n, k;
  std::uint64_t a_pitch, b_pitch, d_pitch;
  DataType d_type;
  int config, splits, device;
  GemmAccumulation accumulation;
  GemmScaleRecipe recipe;
  bool block_scale_a_tma;  // (GemmProblem::block_scale_a_tma: the plan depends on it)
  bool overlap;
  bool operator==(const GemmCallKey&) const = default;
};

// The launch prepared for the last call on this thread (one entry per use, thread_local):
// a call with an equal key reuses its plan and tensor maps instead of building them again
// (the host time per call). A map stays right for as long as memory at its address has its
// shape, as in the descriptor cache. Nothing is remembered when `make` throws.
template <class Prepared>
struct LastCall {
  bool valid = false;
  GemmCallKey key{};
  Prepared prepared{};

  template <class Make>
  const Prepared& get(const GemmCallKey& k, Make&& make) {
    if (!valid || !(key == k)) {
      valid = false;
      prepared = make();
      key = k;
      valid = true;
    }
    return prepared;
  }
};

// One checked call and its plan, as the kernels' launches take it.
struct GemmCall {
  ConstTensorRef a, b;
  TensorRef d;
  GemmKernelScale scale;
  cudaStream_t stream;
  GemmCallKey key;
  GemmPlan plan;
};

namespace gemm {
// The tiled and two-wave configurations (sm90_gemm_fp8_tiled.cu) and the small-M ones
// (sm90_gemm_fp8_small_m.cu): tensor maps for the plan's tiles (memoised per key), then the
// one kernel instantiation of the plan's configuration, D's type and mode.
void launch_tiled(const GemmCall& call);
void launch_small_m(const GemmCall& call);

// The stream workspace a tiled plan that splits K (plan.splits > 1) needs: a partial tile
// per split unit, and a counter per split tile.
struct SplitWorkspaceNeed {
  std::size_t partial_bytes = 0;
  std::size_t counters = 0;
};
SplitWorkspaceNeed split_workspace_need(const GemmPlan& plan);

// Tests only: the configuration whose kernel instantiation this thread launched last, as
// that instantiation names it (-1: none yet).
int& launched_config();
}  // namespace gemm

}  // namespace tmakit::detail
