// Elementwise add-constant through TMA (the seed's "add one", any size, four types): the
// device template and the host steps that launch one layout. A tile stream
// (include/tmakit/kernels/detail/sm90_tile_stream.cuh): the producer loads a box, consumer warps
// add the constant in place in shared memory with 16-byte accesses, one thread stores the box back.
// See README.md beside this file.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "elementwise/elementwise_constant.hpp"
#include "elementwise/elementwise_plan.hpp"
#include "tmakit/device/copy.hpp"
#include "tmakit/device/tile.hpp"
#include "common/grid_cap.hpp"
#include "tmakit/kernels/detail/launch_support.hpp"
#include "tmakit/kernels/detail/sm90_tile_stream.cuh"
#include "tmakit/kernels/elementwise.hpp"
#include "tmakit/ptx/tma.hpp"

namespace tmakit::detail::elementwise {

using stream::RowTail;
using stream::run_tile_stream;
using stream::StreamBarriers;
using stream::TileOrder;

constexpr int kConsumerWarps = 4;

// A pipeline shape, a template argument of the kernel (the launcher runs OneTile8K; bench/tune/
// compiles more to compare). Boxes are rows of up to 1 KB, StageKB KB in all.
template <int Stages, int StageKB, int Lag, int CtasPerSm, bool EvictFirst, int Run = 0>
struct Layout {
  static constexpr int kStages = Stages;
  // tiles per CTA, in one run (grid = runs); 0: persistent (grid = CTAs that fit). A single
  // stage always means one tile per CTA.
  static constexpr int kRun = Stages == 1 ? 1 : Run;
  static constexpr std::uint32_t kStageBytes = StageKB * 1024u;
  static constexpr int kReleaseLag = Lag;  // a stage is freed once the store this many tiles
                                           // later has been issued and its own was read
  static constexpr int kCtasPerSm = CtasPerSm;
  static constexpr bool kEvictFirst = EvictFirst;  // L2 evict-first hint on loads and stores
};
// The layout the launcher runs: one 8 KB tile per CTA (a single stage, grid = tiles), as
// many CTAs per SM as fit. NOTE: it measured 0.994-0.996 of memcpy for every type on H100 and
// H200, against 0.93-0.96 for every persistent ring (README.md beside this file).
using OneTile8K = Layout<1, 8, 0, 1, false>;

// The constant in the element type's bits, widened so one parameter serves every type.
struct Params {
  CUtensorMap in_map;
  CUtensorMap out_map;
  TileOrder order;
  RowTail tail;
  std::int32_t box_cols;
  std::int32_t box_rows;
  std::uint32_t box_bytes;
  Constant value;
};

// 16 bytes of elements plus the constant, per type.
template <class T>
__device__ __forceinline__ uint4 add16(uint4 v, const Params& p);

template <>
__device__ __forceinline__ uint4 add16<std::int32_t>(uint4 v, const Params& p) {
  // NOTE: unsigned arithmetic: int32 addition wraps, as the reference's does.
  const auto c = static_cast<std::uint32_t>(p.value.i32);
  return make_uint4(v.x + c, v.y + c, v.z + c, v.w + c);
}

template <>
__device__ __forceinline__ uint4 add16<float>(uint4 v, const Params& p) {
  const float c = p.value.f32;
  return make_uint4(
      __float_as_uint(__uint_as_float(v.x) + c), __float_as_uint(__uint_as_float(v.y) + c),
      __float_as_uint(__uint_as_float(v.z) + c), __float_as_uint(__uint_as_float(v.w) + c));
}

// Two 16-bit elements in a word: widen to float, add, round to nearest even once.
template <class H>
__device__ __forceinline__ std::uint32_t add_pair(std::uint32_t w, float c);

template <>
__device__ __forceinline__ std::uint32_t add_pair<__nv_bfloat16>(std::uint32_t w, float c) {
  const float lo = __uint_as_float(w << 16) + c;
  const float hi = __uint_as_float(w & 0xffff0000u) + c;
  const __nv_bfloat162 r = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const std::uint32_t*>(&r);
}

template <>
__device__ __forceinline__ std::uint32_t add_pair<__half>(std::uint32_t w, float c) {
  const __half2 h = *reinterpret_cast<const __half2*>(&w);
  const float2 f = __half22float2(h);
  const __half2 r = __floats2half2_rn(f.x + c, f.y + c);
  return *reinterpret_cast<const std::uint32_t*>(&r);
}

template <>
__device__ __forceinline__ uint4 add16<__nv_bfloat16>(uint4 v, const Params& p) {
  const float c = p.value.f32;
  return make_uint4(add_pair<__nv_bfloat16>(v.x, c), add_pair<__nv_bfloat16>(v.y, c),
                    add_pair<__nv_bfloat16>(v.z, c), add_pair<__nv_bfloat16>(v.w, c));
}

template <>
__device__ __forceinline__ uint4 add16<__half>(uint4 v, const Params& p) {
  const float c = p.value.f32;
  return make_uint4(add_pair<__half>(v.x, c), add_pair<__half>(v.y, c), add_pair<__half>(v.z, c),
                    add_pair<__half>(v.w, c));
}

template <class T, class L>
struct AddOp {
  using Params = elementwise::Params;
  static constexpr int kStages = L::kStages;
  static constexpr int kReleaseLag = L::kReleaseLag;
  static constexpr int kRun = L::kRun;
  static constexpr int kConsumerWarps = elementwise::kConsumerWarps;
  static constexpr std::uint32_t kInBytes = L::kStageBytes;
  static constexpr std::uint32_t kOutBytes = 0;  // in place in shared memory
  static constexpr int kOutStages = 0;
  // A stage holds one dense box whose shape the launcher picks per tensor (plan_box: rows of
  // up to 1 KB, narrower and taller for a narrow matrix), so its extent and byte count are
  // Params values; the type gives the copies their checks.
  using StageTile = DynamicTile<T, Swizzle::none, 2, L::kStageBytes>;

  __device__ static std::int64_t tile_count(const Params& p) {
    return static_cast<std::int64_t>(p.order.tiles_x) * p.order.tiles_y;
  }
  // NOTE: box_bytes is box_cols x box_rows x the element size, the box the maps were built with
  __device__ static std::uint32_t tx_bytes(const Params& p) { return p.box_bytes; }
  __device__ static void prefetch(const Params& p) {
    prefetch_tensor_map(&p.in_map);
    prefetch_tensor_map(&p.out_map);
  }
  __device__ static void load(const Params& p, std::int64_t tile, std::uint8_t* dst,
                              Barrier& full) {
    std::int32_t tx, ty, image;
    p.order.coords(tile, tx, ty, image);
    const std::int32_t c[2] = {tx * p.box_cols, ty * p.box_rows};
    if constexpr (L::kEvictFirst) {
      // NOTE: every byte is read once: evict-first keeps streamed data from crowding L2
      load_tile<StageTile>(dst, &p.in_map, full, c, ptx::createpolicy_fractional_l2_evict_first());
    } else {
      load_tile<StageTile>(dst, &p.in_map, full, c);
    }
  }
  __device__ static void compute(const Params& p, std::int64_t, std::uint8_t* in, std::uint8_t*,
                                 std::uint32_t tid) {
    // NOTE: the box is dense in shared memory (no swizzle), so 16-byte vector v covers bytes
    // [16v, 16v + 16) whatever the box shape; out-of-bounds parts are computed and dropped.
    auto* v = reinterpret_cast<uint4*>(in);
    const std::uint32_t vectors = p.box_bytes / 16;
#pragma unroll 4
    for (std::uint32_t i = tid; i < vectors; i += 32 * kConsumerWarps) v[i] = add16<T>(v[i], p);
  }
  __device__ static void store(const Params& p, std::int64_t tile, const std::uint8_t* src) {
    std::int32_t tx, ty, image;
    p.order.coords(tile, tx, ty, image);
    const std::int32_t c[2] = {tx * p.box_cols, ty * p.box_rows};
    // NOTE: a box wholly past the output map's columns (the row's last few elements, which
    // store_tail writes; or rows under 16 bytes, all tail) is not issued: docs/hardware.md H5
    if (c[0] >= p.tail.main_cols) return;
    if constexpr (L::kEvictFirst) {
      store_tile<StageTile>(&p.out_map, src, c, ptx::createpolicy_fractional_l2_evict_first());
    } else {
      store_tile<StageTile>(&p.out_map, src, c);
    }
  }
  __device__ static void store_tail(const Params& p, std::int64_t tile, const std::uint8_t* out,
                                    std::uint32_t tid, std::uint32_t threads) {
    if (p.tail.main_cols == p.tail.cols) return;
    std::int32_t tx, ty, image;
    p.order.coords(tile, tx, ty, image);
    const std::int32_t box_cols = p.box_cols;
    stream::store_row_tail<sizeof(T)>(
        p.tail, tx * box_cols, ty * p.box_rows, 0, box_cols, p.box_rows, out,
        [box_cols](std::int32_t r, std::int32_t c) {
          return static_cast<std::uint32_t>((r * box_cols + c) * static_cast<int>(sizeof(T)));
        },
        tid, threads);
  }
};

template <class L>
struct alignas(1024) SharedStorage {
  std::uint8_t stages[L::kStages][L::kStageBytes];  // boxes, 1024-aligned (rule D1)
  StreamBarriers<L::kStages> bars;
};
template <class L>
constexpr std::size_t kSmemBytes = sizeof(SharedStorage<L>) + 1024;  // + alignment slack
// CTAs of this layout that fit in one SM's 228 KB (1 KB of it reserved per CTA)
template <class L>
constexpr int kMaxCtasPerSm = static_cast<int>(228 * 1024 / (kSmemBytes<L> + 1024));

template <class T, class L>
__global__ void __launch_bounds__(32 * (1 + kConsumerWarps))
    sm90_add_constant_kernel(const __grid_constant__ Params p) {
  static_assert(L::kStageBytes % 1024 == 0, "stages must keep 1024-byte alignment");
  static_assert(L::kStages > L::kReleaseLag, "the stream frees a stage kReleaseLag stores later");
  static_assert(L::kStages > 1 || L::kReleaseLag == 0, "one stage: one tile per CTA");
  static_assert(kMaxCtasPerSm<L> >= L::kCtasPerSm, "the default CTAs per SM must fit");
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900)
  extern __shared__ std::uint8_t smem_raw[];
  auto* storage = reinterpret_cast<SharedStorage<L>*>(
      (reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t{1023});
  run_tile_stream<AddOp<T, L>>(p, &storage->stages[0][0], storage->bars);
#else
  // NOTE: built for another target; fail loudly rather than return garbage.
  if (threadIdx.x == 0) printf("sm90_add_constant_kernel needs sm_90a\n");
  __trap();
#endif
}

template <class T, class L>
void launch(const Params& p, unsigned grid, cudaStream_t stream) {
  allow_dynamic_smem<sm90_add_constant_kernel<T, L>>(kSmemBytes<L>);
  sm90_add_constant_kernel<T, L><<<grid, 32 * (1 + kConsumerWarps), kSmemBytes<L>, stream>>>(p);
  check_launch("sm90_add_constant_kernel");
}

// What the host steps need of a layout.
struct LayoutFacts {
  std::uint32_t stage_bytes;
  int run;  // tiles per CTA (grid = runs); 0: persistent
  int ctas_per_sm;
  int max_ctas_per_sm;
};
template <class L>
constexpr LayoutFacts facts() {
  return {L::kStageBytes, L::kRun, L::kCtasPerSm, kMaxCtasPerSm<L>};
}

// Steps 2-4 of a launch of `layout` on checked arguments (`value` from make_constant): the
// box, the maps, the grid, then `launch_kernel(params, grid, stream)` (launch<T, L> for the
// layout and element type).
template <class LaunchKernel>
void launch_with(const LayoutFacts& layout, LaunchKernel&& launch_kernel, ConstTensorRef in,
                 TensorRef out, const Constant& value, int ctas_per_sm, cudaStream_t stream) {
  const DataType t = in.type;
  Params p{};
  p.value = value;
  // step 2: box shape: rows of up to 1 KB (256 elements at most), the stage's bytes in all.
  // NOTE: walking a dense tensor as one run of 16 KB boxes measured slower on H200 than
  // boxes of 16 rows x 1 KB (0.90 vs 0.93 of memcpy), so the matrix keeps its own shape.
  const std::uint32_t esize = element_bytes(t);
  const ConstTensorRef& src = in;
  const TensorRef& dst = out;
  const BoxPlan box = plan_box(esize, src.cols, layout.stage_bytes);
  const std::uint32_t box_cols = box.cols;
  const std::uint32_t box_rows = box.rows;
  p.box_cols = static_cast<std::int32_t>(box_cols);
  p.box_rows = static_cast<std::int32_t>(box_rows);
  p.box_bytes = box_cols * box_rows * esize;
  p.order = {static_cast<std::int32_t>((src.cols + box_cols - 1) / box_cols),
             static_cast<std::int32_t>((src.rows + box_rows - 1) / box_rows), 1};

  // step 3: tensor maps (cached); the output map stops at the row's last full 16 bytes
  const std::uint64_t main_cols = tma_store_cols(dst.cols, esize);
  p.tail = {static_cast<std::uint8_t*>(dst.data),
            dst.row_pitch(),
            0,
            static_cast<std::int32_t>(dst.rows),
            static_cast<std::int32_t>(dst.cols),
            static_cast<std::int32_t>(main_cols)};
  p.in_map = cached_tensor_map(view_spec(src, t, {box_cols, box_rows, 1}, Swizzle::none));
  if (main_cols > 0) {
    TensorMapSpec out_spec = view_spec(dst, t, {box_cols, box_rows, 1}, Swizzle::none);
    out_spec.global_dim[0] = main_cols;
    p.out_map = cached_tensor_map(out_spec);
  }

  // step 4: launch
  const std::int64_t tiles = static_cast<std::int64_t>(p.order.tiles_x) * p.order.tiles_y;
  const unsigned grid = layout.run > 0 ? tile_grid(tiles, layout.run, grid_cap())
                                       : persistent_grid(tiles, ctas_per_sm);
  launch_kernel(p, grid, stream);
}

// The checks of the arguments that need no driver (types, shapes, overlap unless in place);
// throws ArgumentError naming the argument. The launchers then check the pointers
// (detail::require_device_pointer); make_constant checks the value and converts it once.
// check_operands: what either path takes (any alignment, empty views); check_arguments:
// what this TMA kernel takes (16-byte rules, its four types), for callers that launch it
// directly (bench/tune).
void check_operands(ConstTensorRef in, TensorRef out);
void check_arguments(ConstTensorRef in, TensorRef out);

}  // namespace tmakit::detail::elementwise
