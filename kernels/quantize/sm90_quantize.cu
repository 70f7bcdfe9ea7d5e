// The quantizer's launcher: validate -> plan (quantize_plan.hpp) -> maps -> launch of the
// tile kernel (sm90_quantize.cuh): cooperative for the tensor recipe's rule Q6, after the
// amax and scale kernels for its rule Q1; or of the rows kernel (sm90_quantize_rows.cuh,
// rule Q7).
#include "quantize/quantize_grid_counters.hpp"
#include "quantize/quantize_plan.hpp"
#include "quantize/sm90_quantize.cuh"
#include "quantize/sm90_quantize_rows.cuh"
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

// A cooperative launch of `kernel` (rules Q6 and Q7 for the tensor recipe): its CTAs wait for
// each other at the grid barrier, so all must be resident at once. False where the driver
// refuses it (an SM count below the plan's: a GPU shared out in partitions): nothing has been
// queued, and the call takes rule Q1.
template <class P>
bool launch_cooperative(void (*kernel)(P), unsigned grid, unsigned threads,
                        std::size_t smem_bytes, cudaStream_t stream, const char* name,
                        const P& p) {
  KernelLaunch l(grid, threads, smem_bytes, stream);
  l.cooperative();
  try {
    launch_kernel_ex(l, kernel, name, p);
    return true;
  } catch (const CudaError& e) {
    if (e.code() != static_cast<int>(cudaErrorCooperativeLaunchTooLarge)) throw;
  }
  return false;
}

// The arguments of the kernels that hold x in registers (rules Q7 and Q8), but the rows
// kernel's threads a row and grid counters.
RowParams register_params(ConstTensorRef x, TensorRef x_fp8, float* scale,
                          const QuantizePlan& plan) {
  RowParams p{};
  p.x = static_cast<const std::uint8_t*>(x.data);
  p.x_pitch = x.row_pitch();
  p.out = static_cast<std::uint8_t*>(x_fp8.data);
  p.out_pitch = x_fp8.row_pitch();
  p.scale = scale;
  p.stride_mn = plan.stride_mn;
  p.stride_k = plan.stride_k;
  p.rows = static_cast<std::uint32_t>(x.rows);
  p.row_vectors = static_cast<std::uint32_t>(x.cols * x.element_size() / 16);
  return p;
}

// Rule Q7: the rows kernel, R rows a CTA (one but for the tensor recipe's many rows); false
// where the driver refuses the tensor recipe's cooperative launch (nothing queued).
template <class T>
bool launch_rows(ConstTensorRef x, TensorRef x_fp8, float* scale, const QuantizePlan& plan,
                 std::uint32_t* grid_counters, cudaStream_t stream) {
  RowParams p = register_params(x, x_fp8, scale, plan);
  p.row_threads_log2 = log2_of(plan.row_threads);
  p.grid_counters = grid_counters;
  const auto ctas = static_cast<unsigned>((x.rows + plan.rows_per_cta - 1) / plan.rows_per_cta);
  const unsigned threads = plan.rows_per_cta * plan.row_threads;
  if (!plan.resident) {
    using Kernel = void (*)(RowParams);
    // [vectors a thread: 1, 2, 4][operand a's blocks]
    constexpr Kernel kKernels[3][2] = {
        {sm90_quantize_rows_kernel<T, 1, false>, sm90_quantize_rows_kernel<T, 1, true>},
        {sm90_quantize_rows_kernel<T, 2, false>, sm90_quantize_rows_kernel<T, 2, true>},
        {sm90_quantize_rows_kernel<T, 4, false>, sm90_quantize_rows_kernel<T, 4, true>}};
    static_assert(kRowVectorsPerThread == 4, "kKernels' last row holds kRowVectorsPerThread");
    const Kernel kernel = kKernels[log2_of(plan.vectors_per_thread)][plan.row_blocks ? 1 : 0];
    // operand a's segments on the grid's y
    const dim3 grid(ctas, plan.row_segments);
    kernel<<<grid, threads, 0, stream>>>(p);
    check_launch("sm90_quantize_rows_kernel");
    return true;
  }
  auto* kernel = plan.vectors_per_thread == kTensorRowVectorsPerThread
                     ? sm90_quantize_rows_kernel<T, kTensorRowVectorsPerThread, false>
                     : sm90_quantize_rows_kernel<T, kRowVectorsPerThread, false>;
  return launch_cooperative(kernel, ctas, threads, 0, stream,
                            "sm90_quantize_rows_kernel (cooperative)", p);
}

// Rule Q8: the blocks kernel, a CTA per 128 x 128 block of operand b.
template <class T>
void launch_square_blocks(ConstTensorRef x, TensorRef x_fp8, float* scale,
                          const QuantizePlan& plan, cudaStream_t stream) {
  const RowParams p = register_params(x, x_fp8, scale, plan);
  const dim3 grid(static_cast<unsigned>(plan.scales.k), static_cast<unsigned>(plan.scales.mn));
  sm90_quantize_block_kernel<T><<<grid, plan.row_threads, 0, stream>>>(p);
  check_launch("sm90_quantize_block_kernel");
}

template <class T>
void launch_planned(ConstTensorRef x, TensorRef x_fp8, float* scale, QuantizePlan plan,
                    cudaStream_t stream) {
  std::uint32_t* grid_counters = nullptr;
  if (plan.resident) {
    grid_counters = grid_counters_or_null(stream);
    if (grid_counters == nullptr) plan = two_pass(plan);
  }
  if (plan.square_blocks) return launch_square_blocks<T>(x, x_fp8, scale, plan, stream);
  if (plan.in_registers) {
    if (launch_rows<T>(x, x_fp8, scale, plan, grid_counters, stream)) return;
    return launch_planned<T>(x, x_fp8, scale, two_pass(plan), stream);
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
  // step 4: one CTA per tile; the row recipe's tiles (one box of runs: rules Q2 and Q6) on
  // the kernel that takes them
  const auto grid = static_cast<unsigned>(plan.tiles());
  auto* kernel = plan.row_chunk != 0 ? prepared_kernel<sm90_quantize_kernel<T, true>>(kMaxSmemBytes)
                                     : prepared_kernel<sm90_quantize_kernel<T, false>>(kMaxSmemBytes);
  if (plan.resident) {
    if (launch_cooperative(kernel, grid, kThreads, plan.smem_bytes, stream,
                           "sm90_quantize_kernel (cooperative)", p)) {
      return;
    }
    return launch_planned<T>(x, x_fp8, scale, two_pass(plan), stream);
  }
  kernel<<<grid, kThreads, plan.smem_bytes, stream>>>(p);
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
  check_tile_count(x, fewest);
  check_addresses(x, x_fp8, scale, fewest);
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
