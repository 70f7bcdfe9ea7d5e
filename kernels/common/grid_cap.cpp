// The GPU tests' grid cap (grid_cap.hpp).
#include "common/grid_cap.hpp"

namespace tmakit::detail {

std::atomic<std::int64_t>& grid_cap_for_tests() {
  static std::atomic<std::int64_t> cap{0};
  return cap;
}

}  // namespace tmakit::detail
