// The add-constant launcher's choices past the path rules, as pure functions of the tensor
// (tested on the host): whether a view the TMA kernel could take runs on the plain kernel,
// and the box the TMA kernel loads.
#pragma once

#include <algorithm>
#include <cstdint>

namespace tmakit::detail::elementwise {

// A view of one row (and one image), whatever its alignment, takes the plain kernel: that is
// what a dense tensor of any shape is to the Python op (`tmakit.add`).
// NOTE: the plain kernel spreads the row over the grid; the TMA kernel's boxes would each hold
// 1 KB of the row in a stage of 8 KB (0.24x memcpy), and read as rows of 1 KB it still ran
// 0.95-0.97x where the plain kernel ran 1.00-1.02x (kernels/elementwise/README.md).
constexpr bool one_row_takes_plain(std::uint64_t rows, std::uint64_t batch) {
  return rows == 1 && batch <= 1;
}

// A dense view (one run of `elements` elements from `in_address`) as the plain kernel's dense
// form walks it: `head` elements before in's first 16-byte boundary, `slots` whole 16-byte
// slots from there, `tail` elements after them.
struct DenseSplit {
  std::uint64_t head = 0;
  std::uint64_t slots = 0;
  std::uint64_t tail = 0;
};

constexpr DenseSplit dense_split(std::uint64_t in_address, std::uint64_t elements,
                                 std::uint32_t element_bytes) {
  const std::uint64_t per_slot = 16 / element_bytes;
  const std::uint64_t to_boundary = ((16 - in_address % 16) % 16) / element_bytes;
  DenseSplit d;
  d.head = std::min(to_boundary, elements);
  d.slots = (elements - d.head) / per_slot;
  d.tail = elements - d.head - d.slots * per_slot;
  return d;
}

// Whether the dense form takes a dense view: both addresses whole elements, out at in's offset
// within 16 bytes (each slot one 16-byte load and one store) and the slots within its 32-bit
// indices (`max_slots`: the last block's last slot index must not wrap).
constexpr bool dense_form_takes(std::uint64_t in_address, std::uint64_t out_address,
                                std::uint64_t elements, std::uint32_t element_bytes,
                                std::uint64_t max_slots) {
  return in_address % element_bytes == 0 && out_address % element_bytes == 0 &&
         in_address % 16 == out_address % 16 &&
         dense_split(in_address, elements, element_bytes).slots <= max_slots;
}

struct BoxPlan {
  std::uint32_t cols;  // elements per box row
  std::uint32_t rows;  // box rows
};

// A box of `stage_bytes` for rows of `cols` elements of `element_bytes`: rows of up to 1 KB
// (and at most 256 elements, rule T7), the row's width rounded up to 16 bytes when narrower,
// then as many rows (at most 256) as the stage holds.
// NOTE: walking a dense tensor as one run of 16 KB boxes measured slower on H200 than boxes of
// 16 rows x 1 KB (0.90 vs 0.93 of memcpy), so the box keeps the matrix's own shape.
constexpr BoxPlan plan_box(std::uint32_t element_bytes, std::uint64_t cols,
                           std::uint32_t stage_bytes) {
  const std::uint64_t run = std::min<std::uint64_t>(1024 / element_bytes, 256);
  const std::uint64_t aligned_cols = (cols * element_bytes + 15) / 16 * 16 / element_bytes;
  const auto box_cols = static_cast<std::uint32_t>(std::min<std::uint64_t>(aligned_cols, run));
  const std::uint32_t box_rows =
      std::min<std::uint32_t>(stage_bytes / (box_cols * element_bytes), 256);
  return {box_cols, box_rows};
}

}  // namespace tmakit::detail::elementwise
