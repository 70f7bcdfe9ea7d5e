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
// Who loads a run's boxes where TMA loads scale_a (a_tma), in a ring of `stages` stages:
// - the producer thread, where TMA loads scale_b too (b_tma) and a run fits in the ring
//   (stages >= kScaleRun): onto the full barrier of the run's first k-block, before that
//   k-block's A and B (load_units' run_boxes), so that every full barrier waits for the
//   producer alone;
// - else the scale thread (load_block_scales_tma), which writes the stages' scale_b where TMA
//   does not load it, waits for each k-block's stage to be free and arrives on its full
//   barrier (the barrier's second arrival): the consumers then cannot take a stage before it,
//   nor can it get a round ahead of them.
// NOTE: a scale thread that waited for every stage without arriving deadlocked: the consumers,
// who need nothing of it at most k-blocks, may free a stage before it gets there, and its
// parity wait then waits for a phase that needs the thread itself (kernels/gemm/EXPERIMENTS.md,
// "A deadlock of the scale thread"). The host test GemmScaleRuns.RingNeverDeadlocks plays the
// ring's parties out.
TMAKIT_HOST_DEVICE constexpr bool producer_loads_scale_runs(bool b_tma, int stages) {
  return b_tma && stages >= kScaleRun;
}
// The full barriers' arrivals with 128-block scales: the producer's, and the scale thread's
// (or the tiled kernel's scale warp's, where TMA does not load scale_a) unless the producer
// loads the run boxes itself.
TMAKIT_HOST_DEVICE constexpr unsigned block_scale_full_arrivals(bool b_tma, int stages) {
  return producer_loads_scale_runs(b_tma, stages) ? 1u : 2u;
}
// The k-block a run's boxes start at: the multiple of kScaleRun at or below its first.
TMAKIT_HOST_DEVICE constexpr std::int32_t scale_run_origin(std::int32_t kb) {
  return kb / kScaleRun * kScaleRun;
}

// Which of a tile's 128-row blocks of B (0: the one holding its first column) holds its
// 64-column piece `piece`, where the tile starts `offset` columns into that block (tiles of a
// multiple of 64 columns: offset 0 or 64). The tiled kernel scales piece c's columns of a
// partial by that block's scale_b (tests/host/test_gemm_launcher.cpp plays every column).
TMAKIT_HOST_DEVICE constexpr int piece_scale_block(int piece, bool offset64) {
  return piece / 2 + (piece % 2 == 1 && offset64 ? 1 : 0);
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

// The run slot a consumer or the run boxes' loader is in: Stages slots in turn, one per run.
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
  // The slot of k-block kb + 1, formed while kb's scales are read (the two-wave kernel forms
  // a k-block's addresses one ahead): the slot at(kb + 1, kb_begin) takes, moved to only
  // within the unit (kb + 1 < kb_end), since the next unit starts with at(kb_begin, kb_begin).
  TMAKIT_HOST_DEVICE std::uint32_t ahead(std::int32_t kb, std::int32_t kb_begin,
                                         std::int32_t kb_end) {
    ScaleRunSlot next = *this;
    next.at(kb + 1, kb_begin);
    if (kb + 1 < kb_end) slot = next.slot;
    return next.slot;
  }
};

}  // namespace tmakit::detail::gemm
