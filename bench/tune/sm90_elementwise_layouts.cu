// The add-constant's tuning lab: every pipeline shape measured so far
// (kernels/elementwise/README.md), selectable at run time by number so that shapes compare in
// one benchmark run. Compiled into the benchmark only; the library runs variant 9.
#include <type_traits>

#include "elementwise/sm90_elementwise.cuh"
#include "tune/tuning.hpp"

namespace tmakit::detail::elementwise {

// NOTE: one 8 KB tile per CTA (Layout9, variant 0) measured 0.994-0.996 of memcpy for every
// type on H100 and H200 (README, 2026-11-22 10:03Z and 10:05Z), against 0.93-0.96 for every
// persistent ring below: with one tile per CTA the hardware hands tiles out in order as CTAs
// finish, so all SMs work on one narrow band of the tensor at a time, while persistent CTAs
// drift apart. Nine CTAs share an SM (40 registers per thread; shared memory would take
// twelve); the overlap of one tile's load with another's store comes from those CTAs.
using Layout1 = Layout<6, 16, 1, 2, false>;   // the default until 2026-11-22 ~01:00Z
using Layout2 = Layout<6, 16, 2, 2, false>;   // two stores in flight per CTA
using Layout3 = Layout<6, 32, 2, 1, false>;   // one CTA, 32 KB boxes, two stores in flight
using Layout4 = Layout<12, 16, 3, 1, false>;  // one CTA, 16 KB boxes, three stores in flight
using Layout5 = Layout<3, 32, 1, 2, true>;    // variant 10 with evict-first hints
using Layout6 = Layout<3, 64, 1, 1, false>;   // one CTA, 64 KB boxes
// One tile per CTA (a single stage, grid = tiles): as many CTAs per SM as fit.
using Layout7 = Layout<1, 32, 0, 1, false>;   // 32 KB
using Layout8 = Layout<1, 16, 0, 1, false>;   // 16 KB
using Layout9 = Layout<1, 8, 0, 1, false>;    // 8 KB (variant 0)
using Layout10 = Layout<3, 32, 1, 2, false>;  // 3 x 32 KB, the default until 2026-11-22 10:13Z
constexpr int kVariants = tune::kElementwiseVariants;
static_assert(std::is_same_v<Layout9, OneTile8K>, "variant 9 is the layout the library runs");

template <class L>
void launch_type(DataType t, const Params& p, unsigned grid, cudaStream_t stream) {
  switch (t) {
    case DataType::int32: launch<std::int32_t, L>(p, grid, stream); break;
    case DataType::float32: launch<float, L>(p, grid, stream); break;
    case DataType::bfloat16: launch<__nv_bfloat16, L>(p, grid, stream); break;
    default: launch<__half, L>(p, grid, stream); break;
  }
}

struct LabLayout {
  LayoutFacts facts;
  void (*launch)(DataType, const Params&, unsigned, cudaStream_t);
};
template <class L>
constexpr LabLayout lab() {
  return {facts<L>(), &launch_type<L>};
}
constexpr LabLayout kLayouts[kVariants] = {
    lab<Layout9>(), lab<Layout1>(), lab<Layout2>(), lab<Layout3>(), lab<Layout4>(), lab<Layout5>(),
    lab<Layout6>(), lab<Layout7>(), lab<Layout8>(), lab<Layout9>(), lab<Layout10>()};

}  // namespace tmakit::detail::elementwise

namespace tmakit::tune {

void add_constant(ConstTensorRef in, TensorRef out, double value, cudaStream_t stream,
                  const ElementwiseTuning& tuning) {
  using namespace detail::elementwise;
  check_arguments(in, out);
  check_variant(tuning.variant, kVariants);
  tune::check_knob("tuning.ctas_per_sm", tuning.ctas_per_sm);
  const LabLayout& layout = kLayouts[tuning.variant];
  const Constant constant = make_constant(in.type, value);
  const int ctas_per_sm =
      tune::ctas_per_sm_for(tuning.ctas_per_sm, tuning.variant, layout.facts.run,
                              layout.facts.ctas_per_sm, layout.facts.max_ctas_per_sm);

  detail::require_device_pointer(in.data, "in.data");
  detail::require_device_pointer(out.data, "out.data");
  launch_with(
      layout.facts,
      [&](const Params& p, unsigned grid, cudaStream_t s) { layout.launch(in.type, p, grid, s); },
      in, out, constant, ctas_per_sm, stream);
}

}  // namespace tmakit::tune
