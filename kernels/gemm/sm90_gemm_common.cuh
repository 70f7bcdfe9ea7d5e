// What the FP8 GEMM kernels (sm90_gemm_fp8.cu, sm90_gemm_fp8_small_m.cu,
// sm90_gemm_fp8_waves.cuh) share: the k-block size, the start of a dependent launch, output
// rounding, and the software pipeline that overlaps one k-block's wgmmas with the promotion
// of the previous one.
#pragma once

#include <cstdint>

#include "gemm_launch.hpp"
#include "tmakit/device/copy.hpp"
#include "tmakit/device/sm90_wgmma.hpp"

namespace tmakit::detail::gemm_common {

constexpr int kBlockK = kWgmmaKBlockBytes;  // K bytes per k-block: one 128B swizzle span
constexpr int kWgmmaK = kWgmmaKBytes;       // K per wgmma (fp8)

// A tiled kernel's start once its barriers are initialised and visible: thread 0 warms the
// tensor maps (kernel parameters, which the kernel before does not write), then every thread
// waits for the kernel before it (griddepcontrol.wait: complete, its writes visible; the
// kernel is launched to overlap it, GemmTuning::overlap_launch) before any global access, and
// lets the next kernel start setting up the same way.
template <class... Maps>
__device__ __forceinline__ void warm_maps_and_wait_for_previous_kernel(const Maps*... maps) {
  if (threadIdx.x == 0) (prefetch_tensor_map(maps), ...);
  wait_for_previous_kernel();
  allow_next_kernel();
}

// The scale of this call (GemmKernelScale). Call it after griddepcontrol.wait: a device-side
// scale may be written by the kernel before this one. Read through the L2 (ld.global.cg),
// never from a line of L1 that may predate that kernel's writes.
__device__ __forceinline__ float kernel_scale(const GemmKernelScale& s) {
  if (s.a == nullptr && s.b == nullptr) return s.host;
  double v = s.host_wide;
  if (s.a != nullptr) v *= static_cast<double>(__ldcg(s.a));
  if (s.b != nullptr) v *= static_cast<double>(__ldcg(s.b));
  return static_cast<float>(v);
}

// Output rounding (the device layer's): one value of D, or two as one 32-bit word.
using tmakit::round_pair;
using tmakit::round_to;

// A consumer warpgroup's walk over `count` (>= 1) k-blocks of the ring, from `st`:
// issue(part, state) waits for the stage and commits its wgmmas into `part` (a fresh partial
// product); retire(part, state) runs once they are done (free the stage, add the partial
// into the fp32 sums). Two partials alternate by name, so both stay in registers, and
// k-block k + 1's wgmmas run while k-block k's partial is added (wgmma.wait_group 1).
// NOTE: retiring k first whenever k + 1's data was not there yet (mbarrier.test_wait), to
// hand its stage back sooner, measured slower (M = 16-64 and 4096^3, one run on H200).
template <class State, int N, class Issue, class Retire>
__device__ __forceinline__ void pipelined_k_blocks(std::int32_t count, State& st, float (&part0)[N],
                                                   float (&part1)[N], Issue&& issue,
                                                   Retire&& retire) {
  // k-block j + 1 into `next` while `last` (k-block j, at `prev`) is retired
  auto step = [&](float(&next)[N], float(&last)[N], State& prev) {
    const State cur = st;
    issue(next, st);
    st.advance();
    wgmma_wait<1>();
    retire(last, prev);
    prev = cur;
  };
  State prev = st;
  issue(part0, st);
  st.advance();
  for (std::int32_t j = 1;; j += 2) {
    if (j >= count) {
      wgmma_wait<0>();
      retire(part0, prev);
      return;
    }
    step(part1, part0, prev);
    if (j + 1 >= count) {
      wgmma_wait<0>();
      retire(part1, prev);
      return;
    }
    step(part0, part1, prev);
  }
}

// The same walk without promotion (GemmAccumulation::fast): every k-block's wgmmas add into
// the one accumulator the caller zeroed, issue(state) waiting for the stage and committing
// them as one group; k-block j's stage is freed (release(state)) once k-block j + 1's wgmmas
// are issued and j's are done (wgmma.wait_group 1), so one k-block's loads are always
// overlapped by the next one's wgmmas.
template <class State, class Issue, class Release>
__device__ __forceinline__ void accumulated_k_blocks(std::int32_t count, State& st, Issue&& issue,
                                                     Release&& release) {
  State prev = st;
  issue(st);
  st.advance();
  for (std::int32_t j = 1; j < count; ++j) {
    const State cur = st;
    issue(st);
    st.advance();
    wgmma_wait<1>();
    release(prev);
    prev = cur;
  }
  wgmma_wait<0>();
  release(prev);
}

}  // namespace tmakit::detail::gemm_common
