// The FP8 GEMM's launch header: what its launcher (sm90_gemm_fp8.cu, the one public entry
// gemm_fp8) shares with the small-M kernel's launch (sm90_gemm_fp8_small_m.cu, configuration 3
// of kernels/gemm/README.md): the small-M plan (pure functions, tested on the host), the
// scales (gemm_launch.cpp; the CPU reference applies the same one), the per-thread memo of the
// last call's launch (GemmCallKey, LastCall), and the small-M launch itself, called once
// gemm_fp8 has checked every argument.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "tmakit/kernels/gemm.hpp"
#include "tmakit/kernels/tensor_ref.hpp"

namespace tmakit::detail {

// Rows of B (columns of D) per small-M CTA: wgmma's M (configuration 3), or two waves of it
// (configuration 8: M <= 64, one CTA per tile).
inline constexpr int kSmallMRowsB = 64;
inline constexpr int kSmallMWideRowsB = 128;

// M rounded up to the kernel's widths 8, 16, 32, 64, 128; 0 when M > 128.
int small_m_padded(std::uint64_t m);
// The cluster size (K splits: 8, 4, 2 or 1): the largest that keeps CTAs to half the SMs.
int small_m_splits(std::uint64_t n, std::uint64_t k_blocks, int sm_count);
// k-blocks of B each CTA asks the L2 for before it waits for the kernel before it (0: none),
// at M rows, `rank_k_blocks` k-blocks per cluster rank, `splits` ranks, `rows_b` rows of B
// per CTA, on a device of this peak DRAM bandwidth (bytes/s): 4 in clusters; at one CTA per
// tile of 64 rows 4 for 16 < M <= 64 and 2 above on H100-class memory, else none; 2 for
// tiles of 128 rows on both. Measured per memory system, like the stencil's layouts. (The
// launcher takes it only for a dependent launch whose CTAs are no more than the SMs; a forced
// cluster of 4 or 8 may still need two rounds, docs/bench.md.)
int small_m_prefetch(std::uint64_t m, std::uint64_t rank_k_blocks, int splits, int rows_b,
                     double dram_bytes_per_second);
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
struct GemmKernelScale {
  float host = 1.0f;
  double host_wide = 1.0;    // alpha * scale_a * scale_b in double (host values only)
  const float* a = nullptr;  // GemmScales::scale_a_device
  const float* b = nullptr;  // GemmScales::scale_b_device
};
GemmKernelScale gemm_kernel_scale(const GemmScales& scales);

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

// D = scale * A B^T for M <= 128, `rows_b` rows of B per CTA (kSmallMRowsB; or
// kSmallMWideRowsB for M <= 64 with splits 1), K split over clusters of `splits` (1, 2, 4 or
// 8, at most the k-blocks of 128). Arguments already validated; `key` describes them
// (LastCall); `overlap`: GemmTuning::overlap_launch; `promote`: GemmAccumulation::promoted.
void launch_gemm_fp8_small_m(ConstTensorRef a, ConstTensorRef b, TensorRef d,
                             const GemmKernelScale& scale, int rows_b, int splits,
                             cudaStream_t stream, const GemmCallKey& key, bool overlap,
                             bool promote);

}  // namespace tmakit::detail
