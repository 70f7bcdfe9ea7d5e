// Compile-only: Blackwell's copy wrappers (ptx/sm100_tma.hpp, device/sm100_copy.hpp) and the
// Hopper ones they sit beside build for sm_100a, sm_103a and sm_120a, with and without debug
// mode (TMAKIT_DEBUG_WAITS). Nothing runs: there is no Blackwell GPU to run them on; ptxas
// checking every instruction for each target is the test.
#include <cuda.h>

#include "tmakit/device/barrier.hpp"
#include "tmakit/device/copy.hpp"
#include "tmakit/device/sm100_copy.hpp"

using tmakit::DataType;
using tmakit::Swizzle;

__global__ void every_blackwell_copy(const __grid_constant__ CUtensorMap packed_u4,
                                     const __grid_constant__ CUtensorMap packed_u6,
                                     const __grid_constant__ CUtensorMap rows,
                                     const __grid_constant__ CUtensorMap wide, int at) {
  __shared__ alignas(1024) unsigned char buf[8192];
  __shared__ tmakit::Barrier bar;
  if (threadIdx.x != 0) return;
  const std::int32_t tile[2] = {128 * at, at};
  bar.arrive_expect_tx(tmakit::packed_tx_bytes(DataType::packed_u4_align16, 128) +
                       static_cast<std::uint32_t>(tmakit::value_bits(DataType::float32)));
  tmakit::load_packed_tile<DataType::packed_u4_align16, Swizzle::bytes128_atom32>(buf, &packed_u4,
                                                                                  bar, tile);
  tmakit::load_packed_tile<DataType::packed_u6_align16, Swizzle::bytes128>(buf, &packed_u6, bar,
                                                                           tile);
  tmakit::load_packed_tile<DataType::packed_u4_align8, Swizzle::bytes128_atom32_flip8>(
      buf, &packed_u4, bar, tile);
  const std::int32_t four[4] = {at, at + 1, at + 2, at + 3};
  tmakit::load_rows_gather4(buf, &rows, bar, 0, four);
#if TMAKIT_PTX_SCATTER4_W128
  tmakit::store_rows_scatter4(&rows, buf, 0, four);
#endif
  const std::int32_t nhwc[4] = {0, at, at, 0};
  tmakit::load_im2col_wide<false>(buf, &wide, bar, nhwc, 2, 0);
#if TMAKIT_PTX_SCATTER4_W128
  tmakit::load_im2col_wide<true>(buf, &wide, bar, nhwc, 2, 0);
#endif
}
