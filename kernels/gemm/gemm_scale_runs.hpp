// 128-block scales that TMA loads travel in runs of kScaleRun k-blocks (host and device, so
// the launcher's maps, the kernels and the host tests share one set of rules): a box of
// scale_a is the tile's rows of four k-blocks' columns, a box of scale_b a 16-byte run of four
// k-blocks (TMA's least, and its coordinates step by 16 bytes: O1) per 128-row block of B. A
// run starts at every k-block that is a multiple of four and at a unit's first; its boxes are
// loaded onto that k-block's stage barrier, and the consumers, who wait for the stages in
// order, read the run's later k-blocks from the same boxes.
// NOTE: one box per stage for each of scale_a and scale_b ran 1-2 us slower per box at
// 64-128 x 4096 x 7168 than the same kernel with neither (H200; kernels/gemm/README.md,
// "128-block scales"): the boxes, not their bytes, cost.
#pragma once

#include <array>
#include <cstdint>

#include "tmakit/swizzle.hpp"  // TMAKIT_HOST_DEVICE

namespace tmakit::detail::gemm {

inline constexpr std::int32_t kScaleRun = 4;

// Whether k-block kb of a unit whose first is kb_begin starts a run (its stage carries the
// run's boxes).
TMAKIT_HOST_DEVICE constexpr bool starts_scale_run(std::int32_t kb, std::int32_t kb_begin) {
  return kb == kb_begin || kb % kScaleRun == 0;
}
// How the scale thread of load_block_scales_tma (one thread; TMA loads scale_a) takes part in
// a ring of `stages` stages: whether it arrives on every k-block's full barrier (the
// barrier's second arrival), and whether it waits for a k-block's stage to be free.
// - It arrives, and waits, at every k-block where it writes the stage's scale_b itself (not
//   b_tma), and where runs are longer than the ring (stages < kScaleRun): the consumers then
//   cannot take a stage before it, nor can it get a round ahead of them.
// - Else (TMA loads both scales into run slots) it waits only at a run's first k-block, and
//   never arrives. NOTE: at the other k-blocks the consumers need nothing of it and may free
//   the stage before it gets there; a parity wait there would then wait for the stage's next
//   phase, which comes only after the next run, which waits for this thread: a deadlock
//   (kernels/gemm/EXPERIMENTS.md, "A deadlock of the scale thread"). At a run's first
//   k-block the consumers cannot have freed the stage (they wait for its boxes), and runs
//   start at most kScaleRun <= stages k-blocks apart, so the stage cannot be a phase further
//   on either. The host test GemmScaleRuns.RingNeverDeadlocks plays the ring's parties out.
TMAKIT_HOST_DEVICE constexpr bool scale_thread_arrives(bool b_tma, int stages) {
  return !b_tma || stages < kScaleRun;
}
TMAKIT_HOST_DEVICE constexpr bool scale_thread_waits_for_stage(bool b_tma, int stages,
                                                               bool run_start) {
  return scale_thread_arrives(b_tma, stages) || run_start;
}
// The k-block a run's boxes start at: the multiple of kScaleRun at or below its first.
TMAKIT_HOST_DEVICE constexpr std::int32_t scale_run_origin(std::int32_t kb) {
  return kb / kScaleRun * kScaleRun;
}

// The launcher's boxes (elements): scale_a's, the tile's block_m rows x kScaleRun k-blocks
// (M-major: rows are dimension 0); scale_b's, kScaleRun k-blocks x the tile's 128-row blocks of
// B (K-major).
constexpr std::array<std::uint32_t, 2> scale_a_run_box(int block_m) {
  return {static_cast<std::uint32_t>(block_m), static_cast<std::uint32_t>(kScaleRun)};
}
constexpr std::array<std::uint32_t, 2> scale_b_run_box(int block_n) {
  return {static_cast<std::uint32_t>(kScaleRun), static_cast<std::uint32_t>((block_n + 127) / 128)};
}

// The run slot a consumer or the scale thread is in: Stages slots in turn, one per run.
// NOTE: Stages slots are enough: a run's boxes are loaded once its first k-block's stage is
// free, that is once the consumers have read the scales of the k-block Stages before it, and
// the run that last used the slot ended at least Stages k-blocks earlier (every run holds one
// k-block or more), so its scales have all been read (tests/host/test_gemm_launcher.cpp walks
// it).
template <int Stages>
struct ScaleRunSlot {
  std::uint32_t slot = Stages - 1;  // (the first run takes slot 0)
  // At k-block kb of a unit starting at kb_begin, before its scales are read or loaded.
  TMAKIT_HOST_DEVICE void at(std::int32_t kb, std::int32_t kb_begin) {
    if (starts_scale_run(kb, kb_begin)) slot = slot + 1 == Stages ? 0 : slot + 1;
  }
};

}  // namespace tmakit::detail::gemm
