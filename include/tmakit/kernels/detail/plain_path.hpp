// Which path a memory-bound launcher (add_constant, transpose, stencil3x3) takes for a view
// that may be anything a framework holds: TMA over whole rows where TMA can describe the rows,
// plain vectorised loads and stores where it cannot, nothing for an empty view. The plan is a
// pure function of the views (tested on the host, tests/host/test_kernels_launchers.cpp);
// the checks of a view that either path can run come first (check_any_view in
// plain_view_check.hpp).
#pragma once

#include <cstdint>
#include <string>

#include "tmakit/kernels/tensor_ref.hpp"

namespace tmakit::detail {

// The largest extent (rows, columns, images) the TMA kernels take: TMA's coordinates are
// signed 32-bit (rule D3), and the kernels add a tile's width (at most 256 elements) to a
// tile's coordinate in 32 bits. The plain kernels index in 64 bits: a view past it takes them
// (rule P6 below).
inline constexpr std::uint64_t kMaxExtent = (1ull << 31) - 4096;

enum class Path : std::uint8_t {
  nothing,      // no element: nothing is launched
  tma_rows,     // the op's TMA kernel (kernels/<op>/sm90_*.cu)
  plain_loads,  // the op's plain kernel (kernels/<op>/plain_*.cu): no tensor map
};

// The rules, in the order they are tried; the first that applies decides.
struct PathRule {
  const char* id;
  Path path;
  const char* when;
};
inline constexpr PathRule kPathRules[] = {
    {"P1", Path::nothing, "a view has no element (a zero extent)"},
    {"P2", Path::plain_loads, "the element type has no TMA kernel for this op"},
    {"P3", Path::plain_loads, "in's or out's data is not 16-byte aligned (TMA rule T4)"},
    {"P4", Path::plain_loads,
     "more than one row and a row pitch of in or out not a multiple of 16 bytes (TMA rule T6)"},
    {"P5", Path::plain_loads,
     "more than one image and an image pitch of in or out not a multiple of 16 bytes (T6)"},
    {"P6", Path::plain_loads,
     "an extent of in or out (rows, columns or images) past 2^31 - 4096, the most TMA's "
     "signed 32-bit coordinates take with a tile's width to spare"},
    {"P7", Path::tma_rows, "otherwise: TMA describes every row"},
};
inline constexpr int kPathRuleCount = static_cast<int>(sizeof kPathRules / sizeof kPathRules[0]);

struct PathPlan {
  Path path;
  int rule;  // index into kPathRules
  const char* id() const { return kPathRules[rule].id; }
};

template <class P>
constexpr bool has_no_element(const BasicTensorRef<P>& v) {
  return v.rows == 0 || v.cols == 0 || v.batch == 0;
}

template <class P>
constexpr bool past_tma_extents(const BasicTensorRef<P>& v) {
  return v.rows > kMaxExtent || v.cols > kMaxExtent || v.batch > kMaxExtent;
}

template <class P>
bool rows_tma_aligned(const BasicTensorRef<P>& v) {
  return reinterpret_cast<std::uintptr_t>(v.data) % 16 == 0;
}

// `tma_type`: whether the op's TMA kernel is built for the views' element type.
template <class A, class B>
PathPlan plan_path(const BasicTensorRef<A>& in, const BasicTensorRef<B>& out, bool tma_type) {
  const auto pick = [](int rule) { return PathPlan{kPathRules[rule].path, rule}; };
  if (has_no_element(in) || has_no_element(out)) return pick(0);
  if (!tma_type) return pick(1);
  if (!rows_tma_aligned(in) || !rows_tma_aligned(out)) return pick(2);
  if ((in.rows > 1 && in.row_pitch() % 16 != 0) || (out.rows > 1 && out.row_pitch() % 16 != 0)) {
    return pick(3);
  }
  if ((in.batch > 1 && in.image_pitch() % 16 != 0) ||
      (out.batch > 1 && out.image_pitch() % 16 != 0)) {
    return pick(4);
  }
  if (past_tma_extents(in) || past_tma_extents(out)) return pick(5);
  return pick(6);
}

// A view of one row (or one image of one row) needs no stride: rows of a dense view follow
// each other, so a dense view is one long row. The plain kernels then spread one row over
// the whole grid instead of a block per short row.
template <class P>
bool dense_rows(const BasicTensorRef<P>& v) {
  return v.rows <= 1 || v.row_pitch() == v.cols * v.element_size();
}

}  // namespace tmakit::detail
