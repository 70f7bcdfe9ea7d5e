// The quantizer's launcher: validate -> plan (quantize_plan.hpp) -> maps -> launch of the
// tile kernel (sm90_quantize.cuh): cooperative for the tensor recipe's rule Q6, after the
// amax and scale kernels for its rule Q1.
#include <mutex>

#include "gemm/gemm_workspace.hpp"
#include "quantize/quantize_plan.hpp"
#include "quantize/sm90_quantize.cuh"
#include "tmakit/core/cluster_launch.hpp"

namespace tmakit::detail::quantize {
namespace {

constexpr std::size_t kMaxSmemBytes = 227 * 1024;  // an sm_90 CTA's most dynamic shared memory

std::uint32_t log2_of(std::uint32_t pow2) {
  std::uint32_t l = 0;
  while ((1u << l) < pow2) ++l;
  return l;
}

// The tensor recipe's first steps: scale[0] = 0, the amax of x into it as bits, then the
// scale from that amax in place.
template <class T>
void launch_amax_and_scale(ConstTensorRef x, float* scale, cudaStream_t stream) {
  TMAKIT_CUDA_CHECK(cudaMemsetAsync(scale, 0, sizeof(float), stream));
  const std::uint64_t esize = x.element_size();
  const bool dense = x.rows == 1 || x.row_pitch() == x.cols * esize;
  // NOTE: a dense x is one run of rows * K elements, so short rows still fill the grid
  const std::uint64_t segments = dense ? 1 : x.rows;
  const std::uint64_t vectors = (dense ? x.rows * x.cols : x.cols) * esize / 16;
  const std::uint64_t total = segments * vectors;
  // about four vectors per thread (loaded at once), at most eight CTAs per SM
  const std::uint64_t want = (total + 4 * kThreads - 1) / (4 * kThreads);
  const std::uint64_t most = static_cast<std::uint64_t>(multiprocessor_count()) * 8;
  const std::uint64_t ctas = want < most ? want : most;
  const std::uint64_t grid_y = segments < ctas ? segments : ctas;
  const std::uint64_t grid_x = ctas / grid_y;
  const dim3 grid(static_cast<unsigned>(grid_x),
                  static_cast<unsigned>(grid_y < 65535 ? grid_y : 65535));
  sm90_quantize_amax_kernel<T>
      <<<grid, kThreads, 0, stream>>>(static_cast<const std::uint8_t*>(x.data), x.row_pitch(),
                                      segments, vectors, reinterpret_cast<std::uint32_t*>(scale));
  check_launch("sm90_quantize_amax_kernel");
  sm90_quantize_scale_kernel<T><<<1, 1, 0, stream>>>(scale);
  check_launch("sm90_quantize_scale_kernel");
}

// Whether the current device holds the CTAs tile_ctas_per_sm counts (rule Q6): the shared
// memory an SM has and keeps per CTA, asked once per device.
bool device_holds_planned_ctas() {
  static PerDevice<int> holds;  // 1 yes, 2 no (0: not asked yet)
  return holds.get([](int device) {
    int per_sm = 0, reserved = 0;
    TMAKIT_CUDA_CHECK(
        cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
    TMAKIT_CUDA_CHECK(
        cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device));
    return per_sm >= static_cast<int>(kSmemPerSmBytes) &&
                   reserved <= static_cast<int>(kSmemReservedPerCtaBytes)
               ? 1
               : 2;
  }) == 1;
}

// Rule Q6's counters for an uncaptured call: in `stream`'s workspace (shared with the GEMM's
// split-K counters, which are zero between calls as these are), so that calls on one stream
// take turns with them as the stream orders the calls, and calls on different streams have
// their own. Null where the stream has none and cannot get them (no device memory): the
// launcher then takes rule Q1, which needs none.
std::uint32_t* stream_counters_or_null(cudaStream_t stream) {
  try {
    return gemm::stream_workspace(0, kGridCounters, stream).counters;
  } catch (const OutOfMemory&) {
    return nullptr;
  }
}

// Rule Q6's counters for calls captured into CUDA graphs: a slot of its own for each captured
// call, never handed out again, so that no graph shares its counters with a stream's calls or
// with another graph (launches of one graph exec are serialised by CUDA). The slots of a
// device are allocated by its first uncaptured Q6 call (nothing may be allocated during a
// capture); a call captured before that, or after the last slot is taken, takes rule Q1.
struct CapturedSlots {
  static constexpr std::size_t kSlots = 4096;
  static constexpr int kDevices = 64;
  std::mutex mutex;
  std::uint32_t* counters = nullptr;  // kSlots x kGridCounters words, zero
  std::size_t taken = 0;
};
CapturedSlots* captured_slots(int device) {
  // NOTE: never destroyed: nothing may call cudaFree once the runtime is shutting down
  static auto* all = new CapturedSlots[CapturedSlots::kDevices];
  return device >= 0 && device < CapturedSlots::kDevices ? &all[device] : nullptr;
}

// Allocates the current device's slots once, zeroed before any graph can use them.
void prepare_captured_slots(cudaStream_t stream) {
  int device = 0;
  TMAKIT_CUDA_CHECK(cudaGetDevice(&device));
  CapturedSlots* c = captured_slots(device);
  if (c == nullptr) return;
  std::lock_guard<std::mutex> lock(c->mutex);
  if (c->counters != nullptr) return;
  const std::size_t bytes = CapturedSlots::kSlots * kGridCounters * sizeof(std::uint32_t);
  void* p = nullptr;
  if (cudaMalloc(&p, bytes) != cudaSuccess) {
    (void)cudaGetLastError();  // NOTE: no slots: captured calls take rule Q1
    return;
  }
  // NOTE: waited for: a graph captured later may be launched on a stream that does not follow
  // this one
  TMAKIT_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, stream));
  TMAKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
  c->counters = static_cast<std::uint32_t*>(p);
}

std::uint32_t* captured_counters_or_null() {
  int device = 0;
  TMAKIT_CUDA_CHECK(cudaGetDevice(&device));
  CapturedSlots* c = captured_slots(device);
  if (c == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(c->mutex);
  if (c->counters == nullptr || c->taken == CapturedSlots::kSlots) return nullptr;
  return c->counters + kGridCounters * c->taken++;
}

// Rule Q6's counters for a call on `stream`, or null (the call then takes rule Q1).
std::uint32_t* grid_counters_or_null(cudaStream_t stream) {
  if (!device_holds_planned_ctas()) return nullptr;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  TMAKIT_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  if (capture != cudaStreamCaptureStatusNone) return captured_counters_or_null();
  prepare_captured_slots(stream);
  return stream_counters_or_null(stream);
}

template <class T>
void launch_planned(ConstTensorRef x, TensorRef x_fp8, float* scale, QuantizePlan plan,
                    cudaStream_t stream) {
  std::uint32_t* grid_counters = nullptr;
  if (plan.resident) {
    grid_counters = grid_counters_or_null(stream);
    if (grid_counters == nullptr) plan = two_pass(plan);
  }
  if (plan.amax_pass) launch_amax_and_scale<T>(x, scale, stream);
  Params p{};
  // step 3: maps: boxes of box_cols columns x tile_rows rows, dense in shared memory (or
  // whole rows as one box: row_chunk)
  if (plan.row_chunk != 0) {
    p.in_map = cached_tensor_map(row_runs_spec(x, x.type, plan.row_chunk, plan.tile_rows));
    p.out_map =
        cached_tensor_map(row_runs_spec(x_fp8, DataType::uint8, plan.row_chunk, plan.tile_rows));
  } else {
    p.in_map =
        cached_tensor_map(view_spec(x, x.type, {plan.box_cols, plan.tile_rows, 1}, Swizzle::none));
    p.out_map = cached_tensor_map(
        view_spec(x_fp8, DataType::uint8, {plan.box_cols, plan.tile_rows, 1}, Swizzle::none));
  }
  p.scale = scale;
  p.stride_mn = plan.stride_mn;
  p.stride_k = plan.stride_k;
  p.scales_mn = plan.scales.mn;
  p.scales_k = plan.scales.k;
  p.tiles_x = static_cast<std::int32_t>(plan.tiles_x);
  p.tile_rows = plan.tile_rows;
  p.box_cols_log2 = plan.row_chunk != 0 ? 0 : log2_of(plan.box_cols);
  p.row_cols = plan.row_chunk != 0 ? plan.box_cols : 0;
  p.boxes = plan.boxes;
  p.group_rows_log2 = log2_of(plan.group_rows);
  p.threads_per_group_log2 = log2_of(plan.threads_per_group());
  p.in_bytes = plan.in_bytes;
  p.out_bytes = plan.out_bytes;
  p.fused_amax = plan.fused_amax;
  p.grid_counters = grid_counters;
  p.reverse_tiles = plan.reverse_tiles;
  // step 4: one CTA per tile
  const auto grid = static_cast<unsigned>(plan.tiles());
  if (plan.resident) {
    // NOTE: cooperative: the CTAs wait for each other at the grid barrier, so all must be
    // resident at once. Where the driver refuses (an SM count below the plan's: a GPU shared
    // out in partitions), nothing has been queued and the call takes rule Q1
    KernelLaunch l(grid, kThreads, plan.smem_bytes, stream);
    l.cooperative();
    try {
      launch_kernel_ex(l, prepared_kernel<sm90_quantize_kernel<T, false>>(kMaxSmemBytes),
                       "sm90_quantize_kernel (cooperative)", p);
      return;
    } catch (const CudaError& e) {
      if (e.code() != static_cast<int>(cudaErrorCooperativeLaunchTooLarge)) throw;
    }
    return launch_planned<T>(x, x_fp8, scale, two_pass(plan), stream);
  }
  if (plan.row_chunk != 0) {
    allow_dynamic_smem<sm90_quantize_kernel<T, true>>(kMaxSmemBytes);
    sm90_quantize_kernel<T, true><<<grid, kThreads, plan.smem_bytes, stream>>>(p);
  } else {
    allow_dynamic_smem<sm90_quantize_kernel<T, false>>(kMaxSmemBytes);
    sm90_quantize_kernel<T, false><<<grid, kThreads, plan.smem_bytes, stream>>>(p);
  }
  check_launch("sm90_quantize_kernel");
}

}  // namespace
}  // namespace tmakit::detail::quantize

namespace tmakit {

void quantize_fp8(ConstTensorRef x, TensorRef x_fp8, float* scale, GemmScaleRecipe recipe,
                  QuantizeOperand operand, const GemmScaleStrides& scale_strides,
                  cudaStream_t stream) {
  using namespace detail::quantize;
  // step 1: every argument checked before anything is written
  check_shapes(x, x_fp8, recipe, operand, scale_strides);
  const auto esize = static_cast<std::uint32_t>(x.element_size());
  // NOTE: planned for one SM first: the scale array's extents and the fewest tiles, which
  // the checks need, without asking the driver anything
  const QuantizePlan fewest =
      plan_quantize(x.rows, x.cols, esize, recipe, operand, scale_strides, 1);
  check_addresses(x, x_fp8, scale, fewest);
  if (fewest.tiles() > 0x7fffffff) {
    throw ArgumentError("x.rows", std::to_string(x.rows) + " rows make " +
                                      std::to_string(fewest.tiles()) +
                                      " tiles, more than a grid of 2^31 - 1 CTAs");
  }
  detail::require_device_pointer(x.data, "x.data");
  detail::require_device_pointer(x_fp8.data, "x_fp8.data");
  detail::require_device_pointer(scale, "scale");
  // step 2: the plan (the SM count halves short shapes' tiles: more tiles, never fewer)
  const QuantizePlan plan = plan_quantize(x.rows, x.cols, esize, recipe, operand, scale_strides,
                                          detail::multiprocessor_count());
  switch (x.type) {
    case DataType::bfloat16: return launch_planned<__nv_bfloat16>(x, x_fp8, scale, plan, stream);
    case DataType::float16: return launch_planned<__half>(x, x_fp8, scale, plan, stream);
    default: return launch_planned<float>(x, x_fp8, scale, plan, stream);
  }
}

}  // namespace tmakit
