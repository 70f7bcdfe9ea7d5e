// Grid sizes of the plain kernels (kernels/<op>/plain_*.cu): each walks its work with a
// grid-stride loop, so a grid only has to be large enough to fill the device.
#pragma once

#include <algorithm>
#include <cstdint>

namespace tmakit::detail::plain {

// Blocks for `units` units of work, `per_block` a block: at most `max_blocks` (grid limits:
// 2^31 - 1 in x, 65535 in y and z); the kernel's loop takes the rest.
constexpr unsigned blocks_for(std::uint64_t units, std::uint64_t per_block,
                              std::uint64_t max_blocks) {
  const std::uint64_t blocks = (units + per_block - 1) / per_block;
  return static_cast<unsigned>(std::max<std::uint64_t>(1, std::min(blocks, max_blocks)));
}

inline constexpr std::uint64_t kMaxGridX = 0x7fffffff;
inline constexpr std::uint64_t kMaxGridYZ = 65535;

}  // namespace tmakit::detail::plain
