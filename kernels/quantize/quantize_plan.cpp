// The quantizer's plan and argument checks (host only; quantize_plan.hpp).
#include "quantize/quantize_plan.hpp"

#include <numeric>
#include <string>

#include "gemm/gemm_launch.hpp"
#include "tmakit/kernels/detail/launch_support.hpp"

namespace tmakit {

namespace {

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) {
  return a / b + (a % b != 0);  // (a + b - 1 would wrap near 2^64)
}

void check_operand(QuantizeOperand operand) {
  if (operand != QuantizeOperand::a && operand != QuantizeOperand::b) {
    throw ArgumentError("operand", std::to_string(static_cast<int>(operand)) +
                                       " is not a QuantizeOperand (a or b)");
  }
}

// The least power of two >= n (n >= 1), at most 2^31.
std::uint32_t pow2_at_least(std::uint64_t n) {
  std::uint32_t p = 1;
  while (p < n && p < (1u << 31)) p <<= 1;
  return p;
}

// The greatest power of two <= n (n >= 1).
std::uint32_t pow2_at_most(std::uint64_t n) {
  std::uint32_t p = 1;
  while (static_cast<std::uint64_t>(p) * 2 <= n && p < (1u << 31)) p <<= 1;
  return p;
}

// The row recipe's run length c: the greatest power of two <= kRowBoxCols dividing cols, if
// cols / c runs fit one box dimension (<= 256, rule T7); else 0.
std::uint32_t row_chunk_of(std::uint64_t cols) {
  std::uint32_t c = detail::quantize::kRowBoxCols;
  while (c > 1 && cols % c != 0) c /= 2;
  return cols / c <= 256 ? c : 0;
}

}  // namespace

QuantizeScaleShape quantize_scale_shape(std::uint64_t rows, std::uint64_t cols,
                                        GemmScaleRecipe recipe, QuantizeOperand operand) {
  detail::check_scale_recipe(recipe, "recipe");
  check_operand(operand);
  switch (recipe) {
    case GemmScaleRecipe::tensor: return {1, 1};
    case GemmScaleRecipe::row: return {rows, 1};
    case GemmScaleRecipe::block:
      return {operand == QuantizeOperand::a ? rows : ceil_div(rows, 128), ceil_div(cols, 128)};
  }
  return {0, 0};
}

namespace detail::quantize {

QuantizePlan plan_quantize(std::uint64_t rows, std::uint64_t cols, std::uint32_t element_bytes,
                           GemmScaleRecipe recipe, QuantizeOperand operand,
                           const GemmScaleStrides& strides, int sm_count) {
  QuantizePlan p;
  p.scales = quantize_scale_shape(rows, cols, recipe, operand);
  const std::uint32_t rows_pow2 = pow2_at_least(rows);
  const bool block_b = recipe == GemmScaleRecipe::block && operand == QuantizeOperand::b;
  p.rule = quantize_rule_index(recipe == GemmScaleRecipe::tensor ? "Q1"
                               : recipe == GemmScaleRecipe::row  ? "Q2"
                               : block_b                         ? "Q4"
                                                                 : "Q3");
  p.amax_pass = recipe == GemmScaleRecipe::tensor;
  p.fused_amax = !p.amax_pass;
  // the tile's shared memory: x's boxes (1024-aligned), x_fp8's, one amax word per group, the
  // barrier, alignment slack
  const auto smem_of = [&](std::uint32_t tile_rows) {
    const std::uint32_t in = tile_rows * p.boxes * p.box_cols * element_bytes;
    return out_buffer_offset(in) + tile_rows * p.boxes * p.box_cols + 4 * kThreads + 16 + 1024;
  };
  const auto tiles_of = [&](std::uint32_t tile_rows) {
    return p.tiles_x * static_cast<std::int64_t>(ceil_div(rows, tile_rows));
  };
  const auto resident = [&](std::uint32_t tile_rows) {
    return tiles_of(tile_rows) <=
           static_cast<std::int64_t>(sm_count) * tile_ctas_per_sm(smem_of(tile_rows));
  };
  // whole rows: as many as make about kRowTileTargetBytes of x, a power of two
  // NOTE: as one box where K allows (row_chunk): one TMA load and one store per tile, where
  // boxes of 256 columns took K / 256 of each
  const auto take_row_tiles = [&] {
    p.box_cols = kRowBoxCols;
    p.row_chunk = row_chunk_of(cols);
    if (p.row_chunk != 0) p.box_cols = static_cast<std::uint32_t>(cols);
    const std::uint64_t k_boxes = ceil_div(cols, p.box_cols);
    const std::uint64_t row_bytes = k_boxes * p.box_cols * element_bytes;
    p.boxes = static_cast<std::uint32_t>(k_boxes);
    p.tile_rows =
        row_bytes >= kRowTileTargetBytes ? 1u : pow2_at_most(kRowTileTargetBytes / row_bytes);
    if (p.tile_rows > kMaxTileRows) p.tile_rows = kMaxTileRows;
    if (p.tile_rows > rows_pow2) p.tile_rows = rows_pow2;
    p.tiles_x = static_cast<std::int64_t>(ceil_div(cols, k_boxes * p.box_cols));
  };
  // up to kMaxTileRows (operand b's block: 128) rows x one box of kBoxCols columns
  // NOTE: rows past the tensor are zero-filled and leave amax as it is, so a block of fewer
  // than 128 rows is loaded as the power of two that holds them
  static_assert(kMaxTileRows == 128, "operand b's group, a 128 x 128 block, is one tile");
  const auto take_block_tiles = [&] {
    p.box_cols = kBoxCols;
    p.row_chunk = 0;
    p.boxes = 1;
    p.tile_rows = kMaxTileRows < rows_pow2 ? kMaxTileRows : rows_pow2;
    p.tiles_x = static_cast<std::int64_t>(ceil_div(cols, kBoxCols));
  };
  if (recipe == GemmScaleRecipe::row) {
    take_row_tiles();
  } else {
    take_block_tiles();
  }
  // NOTE: where every tile's CTA fits the SMs at once, the tile kernel takes the tensor's
  // amax itself (a grid barrier), and x is read once instead of twice (rule Q6). Its tiles
  // are the row recipe's where K has one box of runs and they fill the SMs (contiguous
  // loads and stores: README.md, "The tensor recipe in one pass"), else the block tiles; they
  // are not halved below: each more CTA is one more arrival at the barrier
  // the tensor recipe in one pass (rules Q6 and Q7): every CTA resident, each taking its
  // part's amax, then x's at the grid barrier; x read once
  const auto take_grid_barrier = [&](const char* rule) {
    p.rule = quantize_rule_index(rule);
    p.resident = true;
    p.amax_pass = false;
    p.fused_amax = true;
    p.reverse_tiles = false;
  };
  if (recipe == GemmScaleRecipe::tensor) {
    take_row_tiles();
    const bool rows_fit = p.row_chunk != 0 && tiles_of(p.tile_rows) >= sm_count &&
                          resident(p.tile_rows);
    if (!rows_fit) take_block_tiles();
    if (rows_fit || resident(p.tile_rows)) take_grid_barrier("Q6");
  }
  // NOTE: fewer tiles than SMs leave SMs idle: rows per tile halve until every SM has one
  // (down to one row); a 128 x 128 block cannot be split
  if (!block_b && !p.resident) {
    while (p.tile_rows > 1 && tiles_of(p.tile_rows) < sm_count) p.tile_rows /= 2;
  }
  // NOTE: rule Q1's cast walks the tiles last to first: the amax pass read x first to last,
  // so the cast's first tiles are the ones still in the L2
  p.reverse_tiles = p.amax_pass;
  p.tiles_y = static_cast<std::int64_t>(ceil_div(rows, p.tile_rows));
  // groups within a tile: a row of it (row, block a), all of it (block b; the tensor recipe)
  p.group_rows = recipe == GemmScaleRecipe::tensor || block_b ? p.tile_rows : 1;
  p.group_boxes = p.boxes;
  p.in_bytes = p.tile_rows * p.boxes * p.box_cols * element_bytes;
  p.out_bytes = p.tile_rows * p.boxes * p.box_cols;
  p.smem_bytes = smem_of(p.tile_rows);
  // NOTE: a row of 512 bytes to 64 KiB goes through registers, one CTA per row, with no tile
  // in shared memory and no TMA round trips (rule Q7): the row recipe and operand a's blocks
  // at every size measured, the tensor recipe where x fits the SMs' registers at once (its
  // grid barrier). Operand b's 128 x 128 blocks span 128 rows and keep their tiles (README.md,
  // "Rows in registers")
  const std::uint64_t row_vectors = cols * element_bytes / 16;
  const bool block_a = recipe == GemmScaleRecipe::block && !block_b;
  const bool row_fits =
      row_vectors >= 32 &&
      row_vectors <= static_cast<std::uint64_t>(kMaxRowThreads) * kRowVectorsPerThread &&
      rows <= 0x7fffffffu;
  const auto take_rows = [&](std::uint32_t rows_per_cta, std::uint32_t vectors_per_thread,
                             std::uint32_t row_threads) {
    p.rule = quantize_rule_index("Q7");
    p.in_registers = true;
    p.row_blocks = block_a;
    p.rows_per_cta = rows_per_cta;
    p.vectors_per_thread = vectors_per_thread;
    p.row_threads = row_threads;
    p.row_segments = 1;
    if (recipe == GemmScaleRecipe::tensor) take_grid_barrier("Q7");
  };
  const std::uint64_t one_row_threads = ceil_div(row_vectors, kRowVectorsPerThread);
  // NOTE: operand a's blocks need no CTA-wide max: where the rows are few, a CTA per segment
  // of kSegmentVectors of a row's vectors, a vector a thread, puts more warps in flight than a
  // CTA per row holding four a thread (README.md, "Operand a in segments")
  const std::uint64_t segments = ceil_div(row_vectors, kSegmentVectors);
  const bool few_rows =
      rows * segments <= static_cast<std::uint64_t>(sm_count) * kMaxSegmentCtasPerSm;
  // NOTE: a row shorter than a warp's four vectors a thread: each thread holds the fewest
  // vectors that let one warp hold the row, and a CTA takes rows until it holds
  // kShortRowCtaVectors (a CTA of one 32-thread row left the SMs' 32-CTA limit holding too few
  // bytes in flight: README.md, "Short rows")
  const bool short_row = row_vectors < 32 * kRowVectorsPerThread;
  if (row_fits && block_a && !short_row && few_rows) {
    take_rows(1, 1, kSegmentVectors);
    p.row_segments = static_cast<std::uint32_t>(segments);
  } else if (row_fits && short_row && (recipe == GemmScaleRecipe::row || block_a)) {
    const std::uint32_t vectors = pow2_at_least(ceil_div(row_vectors, 32));
    take_rows(kShortRowCtaVectors / (32 * vectors), vectors, 32);
  } else if (row_fits && (recipe == GemmScaleRecipe::row || block_a ||
                          (recipe == GemmScaleRecipe::tensor &&
                           rows <= static_cast<std::uint64_t>(sm_count)))) {
    take_rows(1, kRowVectorsPerThread,
              pow2_at_least(one_row_threads < 32 ? 32 : one_row_threads));
  } else if (row_fits && recipe == GemmScaleRecipe::tensor) {
    // NOTE: the tensor recipe's rows past one an SM: R rows a CTA, the fewest that leave
    // at most kTensorRowCtasPerSm CTAs an SM (each more CTA is one more arrival at the
    // barrier), a CTA at least a warp
    const std::uint32_t threads =
        pow2_at_least(ceil_div(row_vectors, kTensorRowVectorsPerThread));
    const std::uint64_t most_ctas = static_cast<std::uint64_t>(sm_count) * kTensorRowCtasPerSm;
    std::uint64_t per_cta = threads >= 32 ? 1 : 32 / threads;
    while (ceil_div(rows, per_cta) > most_ctas && per_cta * threads <= kMaxTensorRowThreads) {
      per_cta *= 2;
    }
    if (per_cta * threads <= kMaxTensorRowThreads) {
      take_rows(static_cast<std::uint32_t>(per_cta), kTensorRowVectorsPerThread, threads);
    }
  }
  // NOTE: operand b's 128 x 128 blocks in registers, a CTA each, with plain loads and
  // stores (rule Q8): no tile in shared memory, no TMA round trips, as rule Q7's rows
  if (block_b && ceil_div(rows, 128) <= 65535) {
    p.rule = quantize_rule_index("Q8");
    p.in_registers = true;
    p.square_blocks = true;
    const std::uint32_t block_row_vectors = 128 * element_bytes / 16;  // 16-byte vectors
    p.row_threads = 128 * block_row_vectors / kBlockVectorsPerThread;
  }
  // the scale array's strides: the GEMM's defaults for -1 (gemm.hpp, GemmScaleStrides)
  const bool defaults = strides.mn == -1 && strides.k == -1;
  if (recipe == GemmScaleRecipe::block && defaults) {
    p.stride_mn = operand == QuantizeOperand::a ? 1 : static_cast<std::int64_t>(p.scales.k);
    p.stride_k = operand == QuantizeOperand::a ? static_cast<std::int64_t>(p.scales.mn) : 1;
  } else if (defaults || recipe == GemmScaleRecipe::tensor) {
    p.stride_mn = 1;
    p.stride_k = 1;
  } else {
    p.stride_mn = strides.mn;
    p.stride_k = recipe == GemmScaleRecipe::row ? 1 : strides.k;
  }
  return p;
}

QuantizePlan two_pass(QuantizePlan p) {
  if (!p.resident) return p;
  p.rule = quantize_rule_index("Q1");
  p.resident = false;
  p.in_registers = false;
  p.amax_pass = true;
  p.fused_amax = false;
  p.reverse_tiles = true;
  return p;
}

void check_shapes(ConstTensorRef x, TensorRef x_fp8, GemmScaleRecipe recipe,
                  QuantizeOperand operand, const GemmScaleStrides& strides) {
  detail::check_scale_recipe(recipe, "recipe");
  check_operand(operand);
  if (x.type != DataType::bfloat16 && x.type != DataType::float16 && x.type != DataType::float32) {
    // (a value past the enum by its number: name() has none for it)
    const std::string_view named = name(x.type);
    throw ArgumentError("x.type", (named != "?" ? std::string(named)
                                                : std::to_string(static_cast<int>(x.type))) +
                                      " is not BFLOAT16, FLOAT16 or FLOAT32, the types the "
                                      "quantizer reads");
  }
  if (x_fp8.type != DataType::uint8) {
    throw ArgumentError(
        "x_fp8.type", std::string(name(x_fp8.type)) + " is not UINT8 (e4m3 bits travel as UINT8)");
  }
  if (x.cols % 16 != 0) {
    throw ArgumentError("x.cols", "K = " + std::to_string(x.cols) +
                                      " is not a multiple of 16 (the FP8 GEMM's K: rows of "
                                      "whole 16-byte chunks of e4m3); pad K to " +
                                      (x.cols / 16 < UINT64_MAX / 16
                                           ? std::to_string(x.cols / 16 * 16 + 16)
                                           : std::string("a multiple of 16")) +
                                      " with zeros");
  }
  // NOTE: the views' own rules (extents >= 1, 16-byte row pitches, spans) with a stand-in
  // address: the addresses are check_addresses's
  auto x_shape = x;
  x_shape.data = reinterpret_cast<const void*>(std::uintptr_t{16});
  auto x_fp8_shape = x_fp8;
  x_fp8_shape.data = reinterpret_cast<void*>(std::uintptr_t{16});
  detail::check_view("x", x_shape, false);
  detail::check_view("x_fp8", x_fp8_shape, false);
  if (x_fp8.rows != x.rows || x_fp8.cols != x.cols) {
    throw ArgumentError("x_fp8", "shape " + std::to_string(x_fp8.rows) + "x" +
                                     std::to_string(x_fp8.cols) + " differs from x's " +
                                     std::to_string(x.rows) + "x" + std::to_string(x.cols));
  }
  const std::uint64_t esize = x.element_size();
  const std::uint64_t row_tile =
      (x.cols + kRowBoxCols - 1) / kRowBoxCols * kRowBoxCols * (esize + 1);
  if (recipe == GemmScaleRecipe::row && row_tile > kMaxRowTileBytes) {
    const std::uint64_t max_k = kMaxRowTileBytes / (esize + 1) / kRowBoxCols * kRowBoxCols;
    throw ArgumentError("x.cols", "K = " + std::to_string(x.cols) +
                                      " is too long for the row "
                                      "recipe (rule Q5): a row of x and of x_fp8 must fit in "
                                      "shared memory at once, K <= " +
                                      std::to_string(max_k) + " for " + std::string(name(x.type)) +
                                      "; use recipe block, or tensor");
  }
  if (recipe == GemmScaleRecipe::tensor) return;  // one float: strides do not apply
  const bool defaults = strides.mn == -1 && strides.k == -1;
  if (defaults) return;
  const QuantizeScaleShape s = quantize_scale_shape(x.rows, x.cols, recipe, operand);
  std::string given = "(";
  given += std::to_string(strides.mn);
  given += ", ";
  given += std::to_string(strides.k);
  given += ")";
  const std::int64_t k_stride = recipe == GemmScaleRecipe::row ? 1 : strides.k;
  if (strides.mn < 1 || k_stride < 1) {
    throw ArgumentError("scale_strides", given +
                                             ": strides must be >= 1 (each group writes a "
                                             "float of its own), or (-1, -1) for the GEMM's "
                                             "layout");
  }
  // NOTE: groups (i, j) and (i', j') share a float when (i - i') mn = (j' - j) k: its
  // smallest solution steps i by k / g and j by mn / g (g = gcd(mn, k)), so the groups are
  // separate when either step is past its dimension's groups (interleaved layouts included)
  __extension__ typedef unsigned __int128 Wide;  // (a GCC/Clang extension: -Wpedantic)
  const auto mn = static_cast<Wide>(strides.mn);
  const auto k = static_cast<Wide>(k_stride);
  const std::int64_t g = std::gcd(strides.mn, k_stride);
  const bool separate = s.mn == 1 || s.k == 1 ||
                        static_cast<std::uint64_t>(k_stride / g) > s.mn - 1 ||
                        static_cast<std::uint64_t>(strides.mn / g) > s.k - 1;
  if (!separate) {
    throw ArgumentError("scale_strides",
                        given + " puts two of the " + std::to_string(s.mn) + " x " +
                            std::to_string(s.k) + " " + detail::scale_recipe_name(recipe) +
                            " scales on one float; use (1, " + std::to_string(s.mn) +
                            ") (M-major) or (" + std::to_string(s.k) + ", 1) (row-major)");
  }
  if ((s.mn - 1) * mn + (s.k - 1) * k >= (static_cast<Wide>(1) << 40)) {
    throw ArgumentError("scale_strides", given + " spans 2^40 floats or more");
  }
}

void check_tile_count(ConstTensorRef x, const QuantizePlan& fewest) {
  if (fewest.tiles() > 0x7fffffff) {
    throw ArgumentError("x.rows", std::to_string(x.rows) + " rows make " +
                                      std::to_string(fewest.tiles()) +
                                      " tiles, more than a grid of 2^31 - 1 CTAs");
  }
}

void check_addresses(ConstTensorRef x, TensorRef x_fp8, const float* scale,
                     const QuantizePlan& plan) {
  // x's and x_fp8's data: non-null, 16-byte aligned (T4)
  detail::check_view("x", x, false);
  detail::check_view("x_fp8", x_fp8, false);
  if (detail::overlaps(x, x_fp8)) {
    throw ArgumentError("x_fp8.data",
                        "overlaps x; the quantizer writes x_fp8 while it reads x: "
                        "pass separate memory");
  }
  if (scale == nullptr) throw ArgumentError("scale", "is null; pass float32 device memory");
  if (reinterpret_cast<std::uintptr_t>(scale) % 4 != 0) {
    throw ArgumentError("scale",
                        detail::hex_address(scale) + " is not 4-byte aligned (a float32 array)");
  }
  const std::uint64_t last = (plan.scales.mn - 1) * static_cast<std::uint64_t>(plan.stride_mn) +
                             (plan.scales.k - 1) * static_cast<std::uint64_t>(plan.stride_k);
  const ConstTensorRef scale_span(scale, DataType::float32, 1, last + 1);
  if (detail::overlaps(scale_span, x) || detail::overlaps(scale_span, x_fp8)) {
    throw ArgumentError("scale", "its " + std::to_string(plan.scales.mn) + " x " +
                                     std::to_string(plan.scales.k) +
                                     " floats overlap x or x_fp8: pass separate memory");
  }
}

}  // namespace detail::quantize

void quantize_fp8_check_shapes(ConstTensorRef x, TensorRef x_fp8, GemmScaleRecipe recipe,
                               QuantizeOperand operand, const GemmScaleStrides& scale_strides) {
  using namespace detail::quantize;
  check_shapes(x, x_fp8, recipe, operand, scale_strides);
  check_tile_count(x, plan_quantize(x.rows, x.cols, static_cast<std::uint32_t>(x.element_size()),
                                    recipe, operand, scale_strides, 1));
}

}  // namespace tmakit
