// The transpose's tuning lab: every layout measured so far (kernels/transpose/README.md), for
// every element size, selectable at run time by number so that layouts compare in one
// benchmark run. Compiled into the benchmark only; the library ships the layouts its plan
// picks (variants 14 and 16).
#include <type_traits>

#include "transpose/sm90_transpose.cuh"
#include "transpose/transpose_plan.hpp"
#include "tune/tuning.hpp"

namespace tmakit::detail::transpose {

// NOTE: 128-row x 256-byte tiles in three paired stages (layout 6) measured best for every
// element size once the tiles walk down the columns (README, 2026-11-22 08:29-08:31Z:
// H100 fp32 0.931, bf16 0.930, u8 0.917; H200 0.905 / 0.920 / 0.915 of memcpy). With the
// row-major walk 1-byte elements had preferred 256 x 256 B in place (layout 7): there each
// tile's 128-byte output pieces stood alone in DRAM; down the columns, the tiles in flight
// write adjacent pieces of the same output rows. More tiles in flight measured worse.
using Layout1 = Layout<3, 3, 1, 2, 128>;     // the earlier default (fp32 0.79-0.80)
using Layout2 = Layout<4, 2, 1, 1, 128>;     // one CTA, 4 input boxes, 2 output buffers (0.83)
using Layout3 = Layout<3, 2, 1, 1, 256>;     // one CTA, 256-row tiles, separate outputs
using Layout4 = Layout<2, 0, 1, 1, 256>;     // one CTA, two paired 256-row stages
using Layout5 = Layout<6, 0, 2, 1, 128>;     // one CTA, paired stages, two stores in flight
using Layout6 = Layout<3, 0, 1, 1, 128, 2>;  // paired 32 + 32 KB, 128 rows x 256 B (2 boxes)
using Layout7 = Layout<3, 0, 1, 1, 256, 2, true>;   // in place, 256 rows x 256 B, 3 x 64 KB
using Layout8 = Layout<6, 0, 2, 1, 256, 1, true>;   // in place, 256 rows x 128 B, 6 x 32 KB
using Layout9 = Layout<6, 0, 2, 1, 128, 2, true>;   // in place, 128 rows x 256 B, 6 x 32 KB
using Layout10 = Layout<3, 0, 1, 1, 128, 2, true>;  // in place, 128 rows x 256 B, 3 x 32 KB
using Layout11 = Layout<4, 2, 1, 1, 128, 2>;        // separate, 128 rows x 256 B, 4 in + 2 out
using Layout12 = Layout<3, 0, 1, 1, 256>;  // paired 32 + 32 KB, 256 rows x 128 B (variant 0
                                           // until 2026-11-22, for 1-byte elements until 07:40Z)
// One tile per CTA (a single stage, grid = tiles): as many CTAs per SM as fit; CtasPerSm
// is then the residency the registers must allow (__launch_bounds__'s minimum).
using Layout13 = Layout<1, 0, 0, 3, 128, 2>;        // paired 32 + 32 KB
using Layout14 = Layout<1, 0, 0, 3, 128, 2, true>;  // in place, 32 KB
using Layout15 = Layout<1, 0, 0, 4, 128, 1>;        // paired 16 + 16 KB, 128 rows x 128 B
using Layout16 = Layout<1, 0, 0, 4, 128, 1, true>;  // in place, 16 KB
constexpr int kVariants = tune::kTransposeVariants;
static_assert(std::is_same_v<Layout14, OneTileInPlace128x256> &&
                  std::is_same_v<Layout16, OneTileInPlace128x128>,
              "variants 14 and 16 are the layouts the library's plan picks");
// variant 0: the measured best layout per element size (see the NOTE above)
// NOTE: one tile per CTA (layouts 13-16) measured 2-5% faster than every persistent ring on
// H100 and H200 (README, 2026-11-22 10:07Z-10:08Z): the hardware hands tiles out in order as CTAs
// finish, so the tiles in flight stay in one narrow band. Layouts 13-16 reserve registers for
// three (13, 14) or four (15, 16) CTAs per SM through __launch_bounds__; the registers, not
// shared memory, then set how many share an SM (fp32 layout 14: 64 registers, three CTAs).
constexpr int default_variant(std::uint32_t esize) {
  return plan_layout(esize) == PlannedLayout::one_tile_in_place_128x128 ? 16 : 14;
}

template <class L>
void launch_size(std::uint32_t esize, const Params& p, unsigned grid, cudaStream_t stream) {
  switch (esize) {
    case 1: launch<1, L>(p, grid, stream); break;
    case 2: launch<2, L>(p, grid, stream); break;
    case 4: launch<4, L>(p, grid, stream); break;
    default: launch<8, L>(p, grid, stream); break;
  }
}

struct LabLayout {
  LayoutFacts facts;
  void (*launch)(std::uint32_t, const Params&, unsigned, cudaStream_t);
};
template <class L>
constexpr LabLayout lab() {
  return {facts<L>(), &launch_size<L>};
}
// NOTE: entry 0 is never read: variant 0 is resolved per element size first.
constexpr LabLayout kLayouts[kVariants] = {
    lab<Layout12>(), lab<Layout1>(),  lab<Layout2>(),  lab<Layout3>(),  lab<Layout4>(),
    lab<Layout5>(),  lab<Layout6>(),  lab<Layout7>(),  lab<Layout8>(),  lab<Layout9>(),
    lab<Layout10>(), lab<Layout11>(), lab<Layout12>(), lab<Layout13>(), lab<Layout14>(),
    lab<Layout15>(), lab<Layout16>()};

}  // namespace tmakit::detail::transpose

namespace tmakit::tune {

void transpose(ConstTensorRef in, TensorRef out, cudaStream_t stream,
               const TransposeTuning& tuning) {
  using namespace detail::transpose;
  check_arguments(in, out);
  check_variant(tuning.variant, kVariants);
  tune::check_knob("tuning.ctas_per_sm", tuning.ctas_per_sm);
  tune::check_knob("tuning.panel_tiles", tuning.panel_tiles);
  const auto esize = static_cast<std::uint32_t>(in.element_size());
  const LabLayout& layout = kLayouts[tuning.variant == 0 ? default_variant(esize) : tuning.variant];
  const int ctas_per_sm =
      tune::ctas_per_sm_for(tuning.ctas_per_sm, tuning.variant, layout.facts.run,
                              layout.facts.ctas_per_sm, layout.facts.max_ctas_per_sm);

  detail::require_device_pointer(in.data, "in.data");
  detail::require_device_pointer(out.data, "out.data");
  launch_with(
      layout.facts,
      [&](const Params& p, unsigned grid, cudaStream_t s) { layout.launch(esize, p, grid, s); }, in,
      out, esize, ctas_per_sm, tuning.panel_tiles, stream);
}

int transpose_default_variant(std::uint32_t element_bytes) {
  return detail::transpose::default_variant(element_bytes);
}

}  // namespace tmakit::tune
