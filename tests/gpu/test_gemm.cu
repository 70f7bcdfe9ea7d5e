// FP8 GEMM against its CPU reference (fp32 products of the dequantised inputs, summed in
// double) on odd shapes: M = 1, 7, 65, 129, N off the tile grid, K = 16, 48, 4096; every
// configuration, forced K splits, bf16 and fp16 output, padded strides. Outputs are
// poisoned first; row padding of D must keep its poison.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gemm/gemm_configs.hpp"
#include "gemm/gemm_launch.hpp"
#include "test_kernels_common.hpp"
#include "tmakit/core/cluster_launch.hpp"
#include "tmakit/kernels/gemm.hpp"
#include "tmakit/ptx/grid_dependency.hpp"
#include "tmakit/ptx/sreg.hpp"

namespace tmakit::test {
namespace {

struct Case {
  std::uint64_t m, n, k;
  int config = -1;
  int splits = 0;
  DataType out = DataType::bfloat16;
  std::uint64_t pad = 0;  // extra bytes per row of A, B and D
  bool overlap = true;    // GemmTuning::overlap_launch
  GemmAccumulation accumulation = GemmAccumulation::promoted;
  GemmScaleRecipe recipe = GemmScaleRecipe::tensor;
  bool scale_a_rows = false;  // block scales: scale_a row-major (explicit strides), not M-major
  int launches = 1;           // calls in a row into the same D before it is checked
};

std::string describe(const Case& c) {
  std::ostringstream os;
  os << "M=" << c.m << " N=" << c.n << " K=" << c.k << " config=" << c.config
     << " splits=" << c.splits << " out=" << name(c.out) << " pad=" << c.pad
     << " overlap=" << c.overlap
     << (c.accumulation == GemmAccumulation::fast ? " accumulation=fast" : "")
     << (c.recipe == GemmScaleRecipe::row     ? " recipe=row"
         : c.recipe == GemmScaleRecipe::block ? " recipe=block"
                                              : "")
     << (c.scale_a_rows ? " scale_a=row-major" : "");
  return os.str();
}

// Random finite e4m3 bytes with |v| <= 4 (no NaN), so fp16 outputs stay in range.
void random_e4m3(std::vector<std::uint8_t>& bytes, std::uint64_t rows, std::uint64_t cols,
                 std::uint64_t pitch, std::mt19937& gen) {
  for (std::uint64_t r = 0; r < rows; ++r) {
    for (std::uint64_t c = 0; c < cols; ++c) {
      std::uint8_t v;
      do {
        v = static_cast<std::uint8_t>(gen());
      } while (std::isnan(reference::e4m3_to_float(v)) ||
               std::fabs(reference::e4m3_to_float(v)) > 4.0f);
      bytes[r * pitch + c] = v;
    }
  }
}

float out_to_float(DataType t, const std::uint8_t* p) {
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  if (t == DataType::bfloat16) {
    const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  __half_raw raw;
  raw.x = h;
  return __half2float(__half(raw));
}

// This GPU's SM count, as the launcher plans with it.
int device_sm_count() {
  int device = 0, sms = 0;
  EXPECT_EQ(cudaGetDevice(&device), cudaSuccess);
  EXPECT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), cudaSuccess);
  return sms;
}

// A (rows_a x k) and B (rows_b x k) of e4m3 1.0 (0x38), so that every element of D = A B^T
// is K exactly, and D's d_bytes, in device memory for one test.
struct OnesOperands {
  void* a = nullptr;
  void* b = nullptr;
  void* d = nullptr;
  OnesOperands(std::uint64_t rows_a, std::uint64_t rows_b, std::uint64_t k,
               std::uint64_t d_bytes) {
    EXPECT_EQ(cudaMalloc(&a, rows_a * k), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&b, rows_b * k), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&d, d_bytes), cudaSuccess);
    EXPECT_EQ(cudaMemset(a, 0x38, rows_a * k), cudaSuccess);
    EXPECT_EQ(cudaMemset(b, 0x38, rows_b * k), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  ~OnesOperands() {
    EXPECT_EQ(cudaFree(a), cudaSuccess);
    EXPECT_EQ(cudaFree(b), cudaSuccess);
    EXPECT_EQ(cudaFree(d), cudaSuccess);
  }
  OnesOperands(const OnesOperands&) = delete;
  OnesOperands& operator=(const OnesOperands&) = delete;
};

// fn(r0, r1) for rows [r0, r1) of [0, rows), in contiguous chunks, one thread each over the
// host's cores (16 at most, and at most max_chunks).
template <class Fn>
void over_row_chunks(std::uint64_t rows, std::uint64_t max_chunks, Fn&& fn) {
  const std::uint64_t workers = std::max<std::uint64_t>(
      1, std::min<std::uint64_t>({16, std::thread::hardware_concurrency(), max_chunks}));
  const std::uint64_t chunk = (rows + workers - 1) / workers;
  std::vector<std::thread> pool;
  for (std::uint64_t r0 = 0; r0 < rows; r0 += chunk) {
    pool.emplace_back([&fn, r0, r1 = std::min(rows, r0 + chunk)] { fn(r0, r1); });
  }
  for (auto& t : pool) t.join();
}

// Runs one case; returns the relative Frobenius error (or a failure).
void run_case(const Case& c, std::uint32_t seed, double* rel_error = nullptr,
              std::vector<std::uint8_t>* out_bytes = nullptr) {
  SCOPED_TRACE(describe(c));
  std::mt19937 gen(seed);
  const std::uint64_t ap = c.k + c.pad, bp = c.k + c.pad;
  const std::uint64_t dp = (c.n * 2 + 15) / 16 * 16 + c.pad;
  std::vector<std::uint8_t> a(c.m * ap, 0x7F), b(c.n * bp, 0x7F);  // padding: NaN bytes
  random_e4m3(a, c.m, c.k, ap, gen);
  random_e4m3(b, c.n, c.k, bp, gen);
  GemmScales scales{0.75f, 1.5f, 0.5f};
  // row-wise / 128-block scales: random in [1/4, 4), on the host for the reference and on the
  // device for the kernel; block scale_a M-major (torch's layout) or row-major
  const std::uint64_t kbs = (c.k + 127) / 128, nbs = (c.n + 127) / 128;
  const bool block = c.recipe == GemmScaleRecipe::block;
  std::vector<float> sa, sb;
  float *dsa = nullptr, *dsb = nullptr;
  if (c.recipe != GemmScaleRecipe::tensor) {
    std::uniform_real_distribution<float> pick(0.25f, 4.0f);
    sa.resize(block ? c.m * kbs : c.m);
    sb.resize(block ? nbs * kbs : c.n);
    for (float& v : sa) v = pick(gen);
    for (float& v : sb) v = pick(gen);
    ASSERT_EQ(cudaMalloc(&dsa, sa.size() * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&dsb, sb.size() * 4), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(dsa, sa.data(), sa.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(dsb, sb.data(), sb.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
    scales = GemmScales{};
    scales.alpha = 0.75f;
    scales.recipe = c.recipe;
    scales.scale_a_device = dsa;
    scales.scale_b_device = dsb;
    if (c.scale_a_rows) {
      scales.scale_a_strides = {static_cast<std::int64_t>(kbs), 1};
    }
  }
  // scale_a[i][kb] as the kernel reads it, for the tolerance below
  const auto scale_a_at = [&](std::uint64_t i, std::uint64_t kb) -> double {
    if (!block) return sa[i];
    return c.scale_a_rows ? sa[i * kbs + kb] : sa[i + kb * c.m];
  };

  void *da = nullptr, *db = nullptr, *dd = nullptr;
  ASSERT_EQ(cudaMalloc(&da, a.size()), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&db, b.size()), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dd, c.m * dp), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(da, a.data(), a.size(), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(db, b.data(), b.size(), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(dd, kPoison, c.m * dp), cudaSuccess);

  const ConstTensorRef ra(da, DataType::uint8, c.m, c.k, ap);
  const ConstTensorRef rb(db, DataType::uint8, c.n, c.k, bp);
  const TensorRef rd(dd, c.out, c.m, c.n, dp);
  const GemmTuning tuning{c.config, c.splits, c.overlap, c.accumulation};
  detail::gemm::launched_config() = -1;
  for (int i = 0; i < c.launches; ++i) gemm_fp8(ra, rb, rd, scales, nullptr, tuning);
  // the configuration whose kernel ran is the plan's for this call (D's pitch included)
  // (128-block scale_a M-major, cudaMalloc'd: TMA loads it where M is a multiple of 4)
  const bool scale_a_tma = block && !c.scale_a_rows && (c.m % 4 == 0 || kbs == 1);
  const GemmPlan plan = gemm_fp8_plan(
      {c.m, c.n, c.k, dp, device_sm_count(), 0, tuning, c.recipe, scale_a_tma});
  EXPECT_EQ(detail::gemm::launched_config(), plan.config);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<std::uint8_t> got(c.m * dp);
  ASSERT_EQ(cudaMemcpy(got.data(), dd, got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dd);
  cudaFree(dsa);
  cudaFree(dsb);
  // the reference reads the same arrays from host memory
  if (c.recipe != GemmScaleRecipe::tensor) {
    scales.scale_a_device = sa.data();
    scales.scale_b_device = sb.data();
  }

  // the reference's rows in chunks over the host's cores (each chunk dequantises all of B,
  // n * k floats: at most 2 GB of them in all)
  std::vector<float> ref(c.m * c.n);
  over_row_chunks(
      c.m, (std::uint64_t{1} << 31) / (c.n * c.k * 4 + 1), [&](std::uint64_t r0, std::uint64_t r1) {
        // (a chunk of rows: its scale_a rows, the layout's strides kept)
        GemmScales chunk = scales;
        if (c.recipe != GemmScaleRecipe::tensor) {
          const bool m_major = block && !c.scale_a_rows;
          chunk.scale_a_device = sa.data() + (m_major ? r0 : r0 * (block ? kbs : 1));
          if (m_major) chunk.scale_a_strides = {1, static_cast<std::int64_t>(c.m)};
        }
        reference::gemm_fp8(ConstTensorRef(a.data() + r0 * ap, DataType::uint8, r1 - r0, c.k, ap),
                            ConstTensorRef(b.data(), DataType::uint8, c.n, c.k, bp),
                            ref.data() + r0 * c.n, chunk);
      });
  // |sum| of |a||b| per element bounds the accumulation error
  // (row-wise and 128-block scales: alpha here, their arrays weigh each sum below)
  const double scale = c.recipe == GemmScaleRecipe::tensor ? 0.75 * 1.5 * 0.5 : 0.75;
  // NOTE: one unit in the last place of the output type, plus the tensor cores' own fp8
  // accumulation error: they sum the products of each wgmma with about 14 bits kept (seen on
  // H200, 2026-11-22: element errors up to 2^-12.4 of sum |a b|, clustered near 2^-13, at
  // K = 48 as at K = 4096, with 128-deep partials), up to 2^-13 of sum |a b| per wgmma (32
  // of K) of a partial: 2^-11 for 128-deep partials, 2^-10 for the two-wave kernel's
  // 256-deep ones (7, 10 and 11; 2^-10.4 seen at K = 256, fp16 output, Gemm.TwoWaveAxesAgree's
  // first case). A wrong product or tile is of the order of sum |a b| / sqrt(K) or more, and
  // the aggregate check below stays tight.
  // NOTE: GemmAccumulation::fast keeps the running sum in the tensor cores' accumulator, each
  // wgmma (32 of K) adding with about 14 bits kept: up to 2^-13 of sum |a b| per 32 of K
  // (bounds the truncation of every addition by the whole sum's magnitude; measured errors
  // stay far below it, kernels/gemm/README.md), never less than the promoted slack.
  const int config = plan.config;
  const double slack =
      c.accumulation == GemmAccumulation::fast
          ? std::max(1.0 / 2048, std::ldexp(static_cast<double>((c.k + 31) / 32), -13))
      : detail::gemm::waves_kernel(config) ? 1.0 / 1024
                                           : 1.0 / 2048;
  const double rounding = c.out == DataType::bfloat16 ? 1.0 / 128 : 1.0 / 1024;
  // sum |a b| per element, rows spread over the host's cores (the GPU tests' slowest part)
  std::vector<float> abs_a(c.m * c.k), abs_b(c.n * c.k);
  for (std::uint64_t i = 0; i < c.m; ++i) {
    for (std::uint64_t q = 0; q < c.k; ++q) {
      abs_a[i * c.k + q] = std::fabs(reference::e4m3_to_float(a[i * ap + q]));
    }
  }
  for (std::uint64_t j = 0; j < c.n; ++j) {
    for (std::uint64_t q = 0; q < c.k; ++q) {
      abs_b[j * c.k + q] = std::fabs(reference::e4m3_to_float(b[j * bp + q]));
    }
  }
  std::vector<double> abs_sums(c.m * c.n);
  over_row_chunks(c.m, c.m, [&](std::uint64_t r0, std::uint64_t r1) {
    for (std::uint64_t i = r0; i < r1; ++i) {
      for (std::uint64_t j = 0; j < c.n; ++j) {
        double sum = 0;  // products of e4m3 magnitudes are exact in float
        if (block) {  // each k-block's sum weighed by its scales
          for (std::uint64_t kb = 0; kb < kbs; ++kb) {
            double part = 0;
            for (std::uint64_t q = kb * 128; q < std::min(c.k, kb * 128 + 128); ++q) {
              part += abs_a[i * c.k + q] * abs_b[j * c.k + q];
            }
            sum += part * scale_a_at(i, kb) * sb[(j / 128) * kbs + kb];
          }
        } else {
          for (std::uint64_t q = 0; q < c.k; ++q) sum += abs_a[i * c.k + q] * abs_b[j * c.k + q];
          if (c.recipe == GemmScaleRecipe::row) sum *= scale_a_at(i, 0) * sb[j];
        }
        abs_sums[i * c.n + j] = sum;
      }
    }
  });
  double err2 = 0, ref2 = 0;
  std::uint64_t wrong = 0, padding_written = 0;
  for (std::uint64_t i = 0; i < c.m; ++i) {
    for (std::uint64_t j = 0; j < c.n; ++j) {
      const double abs_sum = abs_sums[i * c.n + j];
      const double r = ref[i * c.n + j];
      const double g = out_to_float(c.out, &got[i * dp + j * 2]);
      const double tol = rounding * std::fabs(r) + abs_sum * scale * slack + 1e-30;
      err2 += (g - r) * (g - r);
      ref2 += r * r;
      if (!(std::fabs(g - r) <= tol)) {
        if (wrong < 5) {
          ADD_FAILURE() << "D[" << i << "][" << j << "] = " << g << ", reference " << r
                        << " (tolerance " << tol << ")";
        }
        ++wrong;
      }
    }
    for (std::uint64_t q = c.n * 2; q < dp; ++q) padding_written += got[i * dp + q] != kPoison;
  }
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(padding_written, 0u) << "bytes of D's row padding were written";
  const double rel = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  // fast: the relative Frobenius error of cuBLASLt with fast accumulation at K = 4096 is
  // about 2e-3 with bf16 output (kernels/gemm/README.md); 1e-2 leaves room at K = 16384
  EXPECT_LT(rel, c.accumulation == GemmAccumulation::fast ? 1e-2
                 : c.out == DataType::bfloat16            ? 6e-3
                                                          : 3e-3);
  std::printf("gemm case %s: relative error %.3g\n", describe(c).c_str(), rel);
  if (rel_error) *rel_error = rel;
  if (out_bytes) *out_bytes = std::move(got);
}

class GemmOddShapes : public ::testing::TestWithParam<std::tuple<int, int, int>> {};

TEST_P(GemmOddShapes, MatchesReference) {
  TMAKIT_SKIP_WITHOUT_GPU();
  const std::uint64_t ms[] = {1, 7, 65, 129};
  const std::uint64_t ns[] = {1, 200, 333};
  const std::uint64_t ks[] = {16, 48, 4096};
  const auto [mi, ni, ki] = GetParam();
  Case c{ms[mi], ns[ni], ks[ki]};
  double rel = 0;
  run_case(c, static_cast<std::uint32_t>(mi * 100 + ni * 10 + ki), &rel);
  RecordProperty("relative_error", std::to_string(rel));
}

INSTANTIATE_TEST_SUITE_P(Shapes, GemmOddShapes,
                         ::testing::Combine(::testing::Range(0, 4), ::testing::Range(0, 3),
                                            ::testing::Range(0, 3)));

// Row-wise and 128-block scales against the reference: odd shapes (M, N off the tile grid; K
// 16, 144 -- a last partial k-block of 16 -- and 4096), both output types, both accumulation
// modes for row-wise scales, split K, and every configuration forced that takes them.
class GemmRecipes : public ::testing::TestWithParam<std::tuple<int, int, int, int>> {};

TEST_P(GemmRecipes, MatchReference) {
  TMAKIT_SKIP_WITHOUT_GPU();
  const std::uint64_t ms[] = {1, 7, 65, 129, 300};
  const std::uint64_t ns[] = {1, 200, 333};
  const std::uint64_t ks[] = {16, 144, 4096};
  const auto [mi, ni, ki, mode] = GetParam();
  Case c{ms[mi], ns[ni], ks[ki]};
  c.recipe = mode == 2 ? GemmScaleRecipe::block : GemmScaleRecipe::row;
  if (mode == 1) c.accumulation = GemmAccumulation::fast;
  if ((mi + ni) % 2 == 1) c.out = DataType::float16;
  run_case(c, static_cast<std::uint32_t>(1000 + mi * 100 + ni * 10 + ki + 7 * mode));
}

INSTANTIATE_TEST_SUITE_P(Shapes, GemmRecipes,
                         ::testing::Combine(::testing::Range(0, 5), ::testing::Range(0, 3),
                                            ::testing::Range(0, 3), ::testing::Range(0, 3)));

TEST(GemmRecipes, RowWiseEveryConfigurationForced) {
  TMAKIT_SKIP_WITHOUT_GPU();
  for (int id = 0; id < kGemmConfigs; ++id) {
    if (!gemm_config_built(id)) continue;
    const GemmConfigInfo info = gemm_config_info(id);
    // every configuration, in a mode it runs; two rounds of tiles where M allows (the scale
    // slots handed over per tile)
    Case row{info.max_m != 0 ? 37u : 300u, 336, 1040, id};  // (N * 2 whole 16-byte chunks)
    row.recipe = GemmScaleRecipe::row;
    row.accumulation = info.promotes ? GemmAccumulation::promoted : GemmAccumulation::fast;
    run_case(row, 2000 + id);
  }
}

// 128-block scales where every CTA takes two units of four k-blocks (one run each): the scale
// thread, the producer and the consumers of the m64n128 ring at their closest, 4,000 calls in
// a row. Its scale thread once waited there for a stage the consumers had already freed: a
// deadlock that stalled `tmakit bench` in 3 of 11 runs at M = 64 (kernels/gemm/EXPERIMENTS.md,
// "A deadlock of the scale thread"); a hang here is that.
TEST(GemmRecipes, BlockScalesShortUnitsManyCalls) {
  TMAKIT_SKIP_WITHOUT_GPU();
  const int sms = device_sm_count();
  Case c{64, 256 * static_cast<std::uint64_t>(sms), 512};
  c.recipe = GemmScaleRecipe::block;
  c.launches = 4000;
  const GemmPlan plan = gemm_fp8_plan({c.m, c.n, c.k, 0, sms, 0, {}, c.recipe, true});
  EXPECT_STREQ(gemm_config_name(plan.config), "m64n128");
  EXPECT_EQ(plan.tiles, 2 * static_cast<std::int64_t>(plan.grid));  // two units per CTA
  run_case(c, 3100);
}

// 128-block scales at M <= 128 as the plan takes them: 64 x 64 tiles at M <= 64 (C19, split
// where they are few, K with a last partial k-block) and 64 x 128 tiles above M = 64 where
// the per-tensor plan takes the small-M kernel (C20).
TEST(GemmRecipes, BlockScalesPlanAtSmallM) {
  TMAKIT_SKIP_WITHOUT_GPU();
  const int sms = device_sm_count();
  struct Shape {
    std::uint64_t m, n, k;
    const char* config;
    const char* rule;
  };
  const std::uint64_t wide = 64 * static_cast<std::uint64_t>(sms - 4);  // smallm's CTAs fill
  const Shape shapes[] = {{64, wide, 2048, "m64n64", "C19"},
                          {48, 2112, 1552, "m64n32", "C23"},  // 33 tiles of 64 x 64
                          {100, wide, 1040, "m64n128", "C20"},
                          {128, wide + 72, 2048, "m64n128", "C20"}};
  for (const Shape& sh : shapes) {
    SCOPED_TRACE(std::to_string(sh.m) + "x" + std::to_string(sh.n) + "x" + std::to_string(sh.k));
    Case c{sh.m, sh.n, sh.k};
    c.recipe = GemmScaleRecipe::block;
    const GemmPlan plan = gemm_fp8_plan({c.m, c.n, c.k, 0, sms, 0, {}, c.recipe, sh.m % 4 == 0});
    EXPECT_STREQ(gemm_config_name(plan.config), sh.config);
    EXPECT_STREQ(plan.config_rule, sh.rule);
    run_case(c, 3050 + static_cast<std::uint32_t>(sh.m));
  }
}

TEST(GemmRecipes, BlockScalesEveryConfigurationForced) {
  TMAKIT_SKIP_WITHOUT_GPU();
  for (int id = 0; id < kGemmConfigs; ++id) {
    if (!gemm_config_built(id)) continue;
    const GemmConfigInfo info = gemm_config_info(id);
    if (info.block_scales) {
      // unsplit and split (where it splits), scale_a M-major (M a multiple of 4: loaded by
      // TMA) and row-major (copied by the scale warp)
      for (int splits : {1, 3}) {
        if (splits > 1 && !info.splits_k) continue;
        Case block{300, 333, 1040, id, splits};
        block.recipe = GemmScaleRecipe::block;
        block.scale_a_rows = splits == 3;
        run_case(block, 3000 + id * 10 + splits);
      }
      // M-major where M is not a multiple of 4: the scale warp's copies
      Case odd{301, 336, 272, id};
      odd.recipe = GemmScaleRecipe::block;
      run_case(odd, 3100 + id);
    }
    if (info.block_scales_tma) {
      // scale_a by TMA, every CTA taking two or more tiles (a unit's last k-block reads the
      // next unit's scale_b ahead), a last partial k-block of 16; then scale_b by TMA too
      // (8 k-blocks: its rows whole 16-byte runs), the units' k-blocks in runs of 4 across
      // tiles
      Case rounds{1100, 4000, 272, id};
      rounds.recipe = GemmScaleRecipe::block;
      run_case(rounds, 3200 + id);
      Case rounds_b{1100, 4000, 1008, id};
      rounds_b.recipe = GemmScaleRecipe::block;
      run_case(rounds_b, 3300 + id);
    }
  }
}

// 128-block scales whose scale_a TMA loads (M-major, M a multiple of 4) on small shapes:
// the plan's choice and the tiled configurations forced (racecheck runs these:
// scripts/gpu_check), then the two-wave ones; scale_b from the scale warp (K = 1040: rows of
// 9 k-blocks) and by TMA (K = 496: rows of 4, the last k-block 112 deep; N = 336 is three
// 128-row blocks, the last partly past N).
void block_scale_a_tma_cases(bool two_waves) {
  int ran = 0;
  for (int id = -1; id < kGemmConfigs; ++id) {
    if (id >= 0 && (!gemm_config_built(id) || !gemm_config_info(id).block_scales_tma ||
                    detail::gemm::waves_kernel(id) != two_waves)) {
      continue;
    }
    // (m128n192's four stages: Gemm.Tiles192Small*, whose note says why racecheck runs
    // them apart)
    if (id == gemm_config_id("m128n192")) continue;
    if (id < 0 && two_waves) continue;
    for (const std::uint64_t k : {1040, 496}) {
      Case c{300, 336, k, id};
      c.recipe = GemmScaleRecipe::block;
      run_case(c, static_cast<std::uint32_t>(3400 + id + k));
    }
    ++ran;
  }
  EXPECT_EQ(ran, two_waves ? 3 : 5)
      << "m256n128, m128n256w and m192n128; or the plan's choice and four";
}

TEST(GemmRecipes, BlockScaleATmaSmall) {
  TMAKIT_SKIP_WITHOUT_GPU();
  block_scale_a_tma_cases(false);
}

TEST(GemmRecipes, BlockScaleATmaTwoWaveSmall) {
  TMAKIT_SKIP_WITHOUT_GPU();
  block_scale_a_tma_cases(true);
}

// The two-wave configurations take 128-block scales only where TMA loads scale_a; forced
// with a row-major scale_a, the call is refused naming the rule, and D is not written.
TEST(GemmRecipes, TwoWaveBlockScalesNeedScaleATma) {
  TMAKIT_SKIP_WITHOUT_GPU();
  constexpr std::uint64_t m = 300, n = 336, k = 1040, kbs = (k + 127) / 128;
  void *a = nullptr, *b = nullptr, *d = nullptr, *sa = nullptr, *sb = nullptr;
  ASSERT_EQ(cudaMalloc(&a, m * k), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&b, n * k), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d, m * n * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&sa, m * kbs * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&sb, (n + 127) / 128 * kbs * 4), cudaSuccess);
  ASSERT_EQ(cudaMemset(d, kPoison, m * n * 2), cudaSuccess);
  GemmScales scales;
  scales.recipe = GemmScaleRecipe::block;
  scales.scale_a_device = static_cast<const float*>(sa);
  scales.scale_b_device = static_cast<const float*>(sb);
  scales.scale_a_strides = {static_cast<std::int64_t>(kbs), 1};  // row-major
  int forced = 0;
  for (int id = 0; id < kGemmConfigs; ++id) {
    const GemmConfigInfo info = gemm_config_info(id);
    if (!info.built || info.block_scales || !info.block_scales_tma) continue;
    ++forced;
    std::string what;
    try {
      gemm_fp8(ConstTensorRef(a, DataType::uint8, m, k), ConstTensorRef(b, DataType::uint8, n, k),
               TensorRef(d, DataType::bfloat16, m, n), scales, nullptr, GemmTuning{id});
    } catch (const ArgumentError& e) {
      what = e.what();
    }
    EXPECT_NE(what.find("takes 128-block scales only where TMA loads scale_a"), std::string::npos)
        << info.name << ": " << what;
  }
  EXPECT_EQ(forced, 3) << "m256n128, m128n256w and m192n128";
  std::vector<std::uint8_t> got(m * n * 2);
  ASSERT_EQ(cudaMemcpy(got.data(), d, got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(std::count(got.begin(), got.end(), kPoison), static_cast<std::ptrdiff_t>(got.size()));
  for (void* p : {a, b, d, sa, sb}) cudaFree(p);
}

// What runs is what the plan says, at every bench shape (`tmakit bench --filter gemm`'s list)
// in both modes and for every configuration forced on it that takes it: the kernel
// instantiation launched names its configuration (detail::gemm::launched_config), compared
// with gemm_fp8_plan for the same problem. (The results: the tests above and below.)
TEST(GemmPlanIsWhatRuns, BenchShapesChosenAndForced) {
  TMAKIT_SKIP_WITHOUT_GPU();
  struct Shape {
    std::uint64_t m, n, k;
  };
  std::vector<Shape> shapes;
  for (std::uint64_t m : {1, 16, 32, 64, 128, 256, 512, 1024, 4096}) shapes.push_back({m, 4096, 4096});
  for (const Shape& s : {Shape{8192, 8192, 8192}, Shape{4096, 7168, 2048}, Shape{128, 7168, 2048},
                         Shape{128, 2112, 7168}}) {
    shapes.push_back(s);
  }
  for (std::uint64_t m : {16, 128, 8192}) {
    for (const auto& [n, k] : {std::pair<std::uint64_t, std::uint64_t>{10240, 8192},
                               {8192, 8192}, {57344, 8192}, {8192, 28672}}) {
      shapes.push_back({m, n, k});
    }
  }
  std::uint64_t max_a = 0, max_b = 0, max_d = 0;
  for (const Shape& s : shapes) {
    max_a = std::max(max_a, s.m * s.k);
    max_b = std::max(max_b, s.n * s.k);
    max_d = std::max(max_d, s.m * s.n * 2);
  }
  void *a = nullptr, *b = nullptr, *d = nullptr;
  ASSERT_EQ(cudaMalloc(&a, max_a), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&b, max_b), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d, max_d), cudaSuccess);
  ASSERT_EQ(cudaMemset(a, 0x38, max_a), cudaSuccess);  // e4m3 1.0
  ASSERT_EQ(cudaMemset(b, 0x38, max_b), cudaSuccess);
  const int sms = device_sm_count();
  int launches = 0;
  for (const Shape& s : shapes) {
    std::vector<GemmTuning> tunings;
    for (GemmAccumulation mode : {GemmAccumulation::promoted, GemmAccumulation::fast}) {
      GemmTuning chosen;
      chosen.accumulation = mode;
      tunings.push_back(chosen);
      for (int config = 0; config < kGemmConfigs; ++config) {
        const GemmConfigInfo info = gemm_config_info(config);
        if (!info.built || (info.max_m != 0 && s.m > info.max_m)) continue;
        if (mode == GemmAccumulation::promoted && !info.promotes) continue;
        GemmTuning forced = chosen;
        forced.config = config;
        tunings.push_back(forced);
      }
    }
    for (const GemmTuning& t : tunings) {
      SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) +
                   " config " + std::to_string(t.config) +
                   (t.accumulation == GemmAccumulation::fast ? " fast" : " promoted"));
      detail::gemm::launched_config() = -1;
      gemm_fp8(ConstTensorRef(a, DataType::uint8, s.m, s.k),
               ConstTensorRef(b, DataType::uint8, s.n, s.k),
               TensorRef(d, DataType::bfloat16, s.m, s.n), {}, nullptr, t);
      const GemmPlan plan = gemm_fp8_plan({s.m, s.n, s.k, 0, sms, 0, t});
      EXPECT_EQ(detail::gemm::launched_config(), plan.config)
          << "plan " << gemm_config_name(plan.config) << " (rule " << plan.config_rule << ")";
      if (t.config >= 0) EXPECT_EQ(plan.config, t.config);
      ++launches;
    }
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  RecordProperty("launches", launches);
  cudaFree(a);
  cudaFree(b);
  cudaFree(d);
}

TEST(Gemm, EveryConfigurationAndSplit) {
  TMAKIT_SKIP_WITHOUT_GPU();
  for (int config = 0; config < kGemmConfigs; ++config) {
    if (!gemm_config_built(config)) continue;  // retired: GemmLauncher's host tests
    const std::string name = gemm_config_name(config);
    if (name == "smallm") continue;  // M <= 128 only: GemmSmallM below
    if (name == "smallm128") continue;  // M <= 64 only: GemmSmallM.TwoWavesOfB
    if (name == "m128n256") continue;  // fast accumulation only: GemmFastAccumulation below
    if (name == "m256n128") continue;  // N a multiple of 8 only: Gemm.TwoWaveTiles
    if (name == "m192n128") continue;  // N a multiple of 8 only: Gemm.ThreeWarpgroupTiles
    if (name == "m128n256w") continue;  // N a multiple of 8 only: Gemm.TwoWavesAlongN
    if (name == "m128n128pp" || name == "m128n128ppd") continue;  // fast only: Gemm.PingpongTiles
    // (m128n192 does not split K: forcing splits is refused, GemmLauncher's host tests)
    const bool unsplit = !gemm_config_info(config).splits_k;
    for (int splits : {1, 3, 0, 32}) {
      if (unsplit && splits > 1) continue;
      run_case({129, 300, 4096, config, splits}, 7u + config * 10 + splits);
      run_case({200, 520, 1024, config, splits == 32 ? 8 : splits}, 99u + config + splits);
    }
    // an ordinary launch (no overlap with the kernel before)
    run_case({129, 300, 4096, config, 0, DataType::bfloat16, 0, false}, 5u + config);
  }
}

// GemmAccumulation::fast: every configuration (the small-M kernel's: GemmSmallM), split K
// and not, both output types, within the fast bound of run_case.
TEST(GemmFastAccumulation, EveryConfigurationAndSplit) {
  TMAKIT_SKIP_WITHOUT_GPU();
  constexpr auto kFast = GemmAccumulation::fast;
  for (int config = 0; config < kGemmConfigs; ++config) {
    if (!gemm_config_built(config)) continue;  // retired: GemmLauncher's host tests
    const std::string name = gemm_config_name(config);
    // the 128 x 256 and 128 x 192 tiles do not split K
    const bool unsplit = !gemm_config_info(config).splits_k;
    if (name == "smallm") {
      run_case({100, 336, 1040, config, 2, DataType::bfloat16, 0, true, kFast}, 301u);
      continue;
    }
    if (name == "smallm128") {
      run_case({40, 333, 1040, config, 1, DataType::bfloat16, 0, true, kFast}, 302u);
      continue;
    }
    // Gemm.TwoWaveTiles, ...AlongN, Gemm.ThreeWarpgroupTiles
    if (name == "m256n128" || name == "m128n256w" || name == "m192n128") continue;
    for (int splits : {1, 3, 0}) {
      if (unsplit && splits > 1) continue;
      run_case({129, 300, 4096, config, splits, DataType::bfloat16, 0, true, kFast},
               311u + config * 10 + splits);
      run_case({200, 520, 1024, config, splits, DataType::float16, 16, true, kFast},
               411u + config * 10 + splits);
    }
  }
  run_case({1000, 1032, 512, 1, 0, DataType::float16, 32, true, kFast}, 501u);  // TMA stores
  run_case({1100, 1500, 256, -1, 0, DataType::bfloat16, 0, true, kFast}, 502u);
  // 128 x 256 tiles: D through TMA as four 64-column boxes in two buffers (a last tile 8
  // columns wide, rows past M, padded rows), with plain stores (odd N), more tiles than SMs
  // (143: a buffer per box, and a CTA's next tile reuses the buffers its last stores read),
  // K = 16
  run_case({1000, 1032, 512, 6, 0, DataType::float16, 32, true, kFast}, 503u);
  run_case({333, 777, 4096, 6, 1, DataType::bfloat16, 0, true, kFast}, 504u);
  run_case({1100, 2600, 256, 6, 0, DataType::bfloat16, 0, true, kFast}, 505u);
  run_case({7, 300, 16, 6, 0, DataType::float16, 0, false, kFast}, 506u);
  run_case({1400, 3300, 256, 6, 0, DataType::bfloat16, 0, true, kFast}, 508u);
  run_case({1024, 4096, 256, -1, 0, DataType::bfloat16, 0, true, kFast}, 507u);  // chosen
}

// Small enough for compute-sanitizer: the 128 x 256 tiles' epilogue (four 64-column boxes
// through two buffers, each reused once the store two boxes back has read it; a partial and
// a skipped box; padded rows) and their plain-store path, and a fast 128 x 128 tile beside;
// then more tiles than SMs, where the kernel has a buffer per box and three stages (a CTA's
// next tile writes the buffers its last tile's stores read).
TEST(GemmFastAccumulation, WideTilesSmall) {
  TMAKIT_SKIP_WITHOUT_GPU();
  constexpr auto kFast = GemmAccumulation::fast;
  run_case({130, 200, 256, 6, 0, DataType::float16, 32, true, kFast}, 701u);
  run_case({70, 333, 384, 6, 0, DataType::bfloat16, 0, true, kFast}, 702u);
  run_case({130, 200, 256, 1, 0, DataType::bfloat16, 32, true, kFast}, 703u);
  run_case({520, 8500, 384, 6, 0, DataType::bfloat16, 0, true, kFast}, 704u);  // 170 tiles
}

// The two accumulation modes on the same inputs against the fp32 reference, K up to 16384,
// fp16 output (its rounding, 2^-11, hides less of the accumulation error than bf16's): the
// relative Frobenius errors of both are printed and recorded; fast stays within its bound.
TEST(GemmFastAccumulation, ErrorAgainstPromotedOnTheSameInputs) {
  TMAKIT_SKIP_WITHOUT_GPU();
  for (std::uint64_t k : {1024u, 4096u, 16384u}) {
    double promoted = 0, fast = 0;
    const std::uint32_t seed = 600u + static_cast<std::uint32_t>(k / 1024);
    run_case({256, 256, k, 1, 1, DataType::float16}, seed, &promoted);
    run_case({256, 256, k, 1, 1, DataType::float16, 0, true, GemmAccumulation::fast}, seed, &fast);
    std::printf("K = %llu: relative Frobenius error promoted %.3g, fast %.3g (fp16 output)\n",
                static_cast<unsigned long long>(k), promoted, fast);
    RecordProperty("promoted_k" + std::to_string(k), std::to_string(promoted));
    RecordProperty("fast_k" + std::to_string(k), std::to_string(fast));
  }
}

// The small-M kernel: every width (M up to 8, 16, 32, 64, 128), every cluster size along K,
// N not a multiple of its 64-row tiles, K not a multiple of 128; D's rows stored element by
// element (N = 333: an odd row pitch) and 16 bytes at a time (N = 336).
TEST(GemmSmallM, EveryWidthAndClusterSize) {
  TMAKIT_SKIP_WITHOUT_GPU();
  std::uint32_t seed = 40;
  for (std::uint64_t m : {1, 8, 13, 16, 31, 64, 100, 128}) {
    for (int splits : {1, 2, 4, 8}) {
      run_case({m, 333, 1040, 3, splits}, ++seed);
      run_case({m, 336, 1040, 3, splits}, ++seed);
    }
  }
  run_case({128, 1024, 4096, 3, 0}, ++seed);  // cluster size chosen
  run_case({5, 64, 16, 3, 0}, ++seed);        // one k-block, one tile
  run_case({77, 1, 4096, 3, 0, DataType::float16, 32}, ++seed);  // N = 1, padded D rows
  run_case({13, 333, 1040, 3, 2, DataType::bfloat16, 0, false}, ++seed);  // ordinary launch
  run_case({64, 333, 1040, 3, 1, DataType::bfloat16, 0, false}, ++seed);
}

// Configuration 8, the small-M kernel on 128 rows of B per CTA (two 64-row waves): every
// width up to M = 64, N not a multiple of 128 (a last tile of one wave and a part, and one
// of under a wave), N = 333 (D's rows element by element), K not a multiple of 128, both
// output types, an ordinary launch, and the shapes the plan takes it for (one round of CTAs
// and two).
// The small-M kernel with fast accumulation (its sums take every k-block's wgmmas): every
// width, clusters along K (the reduction then sums the sums), 128 rows of B per CTA, fp16.
TEST(GemmSmallM, FastAccumulation) {
  TMAKIT_SKIP_WITHOUT_GPU();
  constexpr auto kFast = GemmAccumulation::fast;
  std::uint32_t seed = 240;
  for (std::uint64_t m : {1, 8, 16, 31, 64, 100, 128}) {
    for (int splits : {1, 2, 8}) {
      run_case({m, 333, 1040, 3, splits, DataType::bfloat16, 0, true, kFast}, ++seed);
    }
    run_case({m, 336, 2048, 3, 0, DataType::float16, 16, true, kFast}, ++seed);
    if (m <= 64) run_case({m, 1000, 1040, 8, 0, DataType::bfloat16, 0, true, kFast}, ++seed);
  }
  run_case({5, 64, 16, 3, 0, DataType::bfloat16, 0, true, kFast}, ++seed);         // one k-block
  run_case({128, 7168, 2048, -1, 0, DataType::bfloat16, 0, true, kFast}, ++seed);  // chosen
}

TEST(GemmSmallM, TwoWavesOfB) {
  TMAKIT_SKIP_WITHOUT_GPU();
  std::uint32_t seed = 140;
  for (std::uint64_t m : {1, 8, 13, 16, 31, 64}) {
    run_case({m, 333, 1040, 8, 0}, ++seed);
    run_case({m, 336, 1040, 8, 1}, ++seed);
    run_case({m, 1000, 1040, 8, 0, DataType::float16, 16}, ++seed);
  }
  run_case({5, 128, 16, 8, 0}, ++seed);                                   // one k-block, one tile
  run_case({40, 300, 4096, 8, 0, DataType::bfloat16, 0, false}, ++seed);  // ordinary launch
  run_case({16, 10240, 1024, -1, 0}, ++seed);  // chosen where N has 160 tiles of 64 rows
  run_case({8, 17000, 256, -1, 0}, ++seed);    // chosen: 133 tiles of 128 rows, two rounds
}

// Rule C18: at M <= 64 with at least 2.5 x the SMs in 64-row tiles of B and K <= 1536 the plan
// takes 64 x 128 tiles in place of smallm128; every recipe it takes there, both modes, N off
// the tile grid.
// M = 128 at long K: the plan takes the small-M kernel up to K = 24576 in both modes (rule
// C3; a fast-accumulation call then promotes) and 64 x 128 tiles past it; the small-M kernel's
// calls against the reference, both recipes and both modes.
TEST(GemmSmallM, LongKAtM128FollowsThePlan) {
  TMAKIT_SKIP_WITHOUT_GPU();
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  // one CTA per 64 rows of B on 3/4 of the SMs or more, one round
  const std::uint64_t n = 64 * static_cast<std::uint64_t>((3 * sms + 3) / 4) + 40;
  GemmTuning fast;
  fast.accumulation = GemmAccumulation::fast;
  EXPECT_STREQ(gemm_config_name(gemm_fp8_plan(128, n, 8320, sms).config), "smallm");
  EXPECT_STREQ(gemm_config_name(gemm_fp8_plan(128, n, 8320, sms, fast).config), "smallm");
  EXPECT_STREQ(gemm_config_name(gemm_fp8_plan(128, n, 24704, sms).config), "m64n128");
  EXPECT_STREQ(gemm_config_name(gemm_fp8_plan(128, n, 24704, sms, fast).config), "m64n128");
  // NOTE: the runs just past K = 8192 (the rule's reach before), not at 24576: the CPU
  // reference there took 19 s a case
  std::uint32_t seed = 740;
  for (const GemmScaleRecipe recipe : {GemmScaleRecipe::tensor, GemmScaleRecipe::row}) {
    Case c{128, n, 8320};
    c.recipe = recipe;
    run_case(c, ++seed);
  }
  Case f{128, n, 8320};
  f.accumulation = GemmAccumulation::fast;
  run_case(f, ++seed);
}

TEST(GemmSmallM, WideNShortKTakes64x128Tiles) {
  TMAKIT_SKIP_WITHOUT_GPU();
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  const std::uint64_t n = 64 * ((5 * static_cast<std::uint64_t>(sms) + 1) / 2) + 40;
  EXPECT_STREQ(gemm_config_name(gemm_fp8_plan(16, n, 512, sms).config), "m64n128");
  std::uint32_t seed = 700;
  for (const GemmScaleRecipe recipe : {GemmScaleRecipe::tensor, GemmScaleRecipe::row}) {
    for (const GemmAccumulation mode : {GemmAccumulation::promoted, GemmAccumulation::fast}) {
      Case c{16, n, 512};
      c.recipe = recipe;
      c.accumulation = mode;
      run_case(c, ++seed);
    }
  }
  Case wide{64, n, 1536};
  wide.recipe = GemmScaleRecipe::row;
  run_case(wide, ++seed);
}

// Launch set-up is per device (shared-memory limits, the split-K workspace): after device 0,
// the tiled kernel with split K, the two-wave kernel and the small-M kernel still run, and
// match, on device 1.
TEST(Gemm, SecondDeviceAfterTheFirst) {
  TMAKIT_SKIP_WITHOUT_TWO_GPUS();
  on_devices_0_1_0([](int device) {
    run_case({129, 300, 4096, 1, 3}, 61u + device);
    run_case({333, 1000, 4096, 7, 0}, 63u + device);
    run_case({13, 333, 1040, 3, 2}, 65u + device);
  });
}

// The split-K workspace under CUDA graphs: a captured call asking for a split (GemmTuning)
// whose workspace would have to grow is refused (naming the stream) and leaves the capture
// usable; once grown outside, the call captures; a graph keeps working after a later call has
// outgrown the buffers it holds.
TEST(Gemm, SplitKWorkspaceUnderGraphCapture) {
  TMAKIT_SKIP_WITHOUT_GPU();
  // 128 x 128 tiles, 32 splits: 144 tiles need 288 MB of partials, 256 tiles 512 MB; the
  // stream is new, so the first capture below finds it holds no workspace
  const std::uint64_t k = 4096;
  const GemmTuning split{1, 32};
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  // a new stream may be given a destroyed one's handle, and with it that one's workspace
  gemm_fp8_release_workspace(stream);
  const std::uint64_t big = 2048;
  const OnesOperands ones(big, big, k, big * big * 2);  // D = K = 4096, exact
  void* const a = ones.a;
  void* const b = ones.b;
  void* const d = ones.d;
  auto call = [&](std::uint64_t mn) {
    gemm_fp8(ConstTensorRef(a, DataType::uint8, mn, k), ConstTensorRef(b, DataType::uint8, mn, k),
             TensorRef(d, DataType::bfloat16, mn, mn), {}, stream, split);
  };
  // every element of D's first mn x mn is 4096 (bf16 0x4580)
  auto expect_d = [&](std::uint64_t mn, const char* what) {
    std::vector<std::uint16_t> got(mn * mn);
    ASSERT_EQ(cudaMemcpy(got.data(), d, got.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
    const auto wrong =
        std::count_if(got.begin(), got.end(), [](std::uint16_t v) { return v != 0x4580; });
    EXPECT_EQ(wrong, 0) << what;
  };
  const std::uint64_t mn = 1536;
  ASSERT_EQ(gemm_fp8_plan(mn, mn, k, 1, split).splits, 32);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
  std::string argument;
  try {
    call(mn);
  } catch (const ArgumentError& e) {
    argument = e.argument();
  }
  EXPECT_EQ(argument, "stream") << "a capture that needs the workspace grown is refused";
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess) << "and the capture survives";
  ASSERT_EQ(cudaGraphDestroy(graph), cudaSuccess);

  call(mn);  // grows the workspace outside any capture
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  expect_d(mn, "the call that grew the workspace");

  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
  call(mn);
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaMemset(d, 0xFF, big * big * 2), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  expect_d(mn, "the captured call");

  call(big);  // outgrows the buffers the graph holds; they stay allocated
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  expect_d(big, "the larger call");
  ASSERT_EQ(cudaMemset(d, 0xFF, big * big * 2), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  expect_d(mn, "the graph replayed after the workspace grew");

  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  gemm_fp8_release_workspace(stream);  // 1 GB: no later test needs it
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

// A split the plan chose (GemmTuning::splits 0), captured on a stream whose workspace is too
// small (as torch.cuda.graph's own capture stream is when the calls before it ran on another),
// is not refused and is right on every replay (it runs unsplit: gemm_fp8); so are an
// uncaptured call on the stream after it, which grows the workspace, and a capture after
// that. (Which plan a graph holds is not read back here.)
TEST(Gemm, PlannedSplitCapturedWithoutWorkspaceRunsUnsplit) {
  TMAKIT_SKIP_WITHOUT_GPU();
  const std::uint64_t m = 128, n = 2112, k = 7168;
  const GemmPlan plan = gemm_fp8_plan(m, n, k, device_sm_count());
  ASSERT_GT(plan.splits, 1) << "the plan splits K here (" << plan.splits_rule << ")";
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  gemm_fp8_release_workspace(stream);  // (a destroyed stream's handle, and its workspace)
  const OnesOperands ones(m, n, k, m * n * 2);  // D = K = 7168, exact
  void* const a = ones.a;
  void* const b = ones.b;
  void* const d = ones.d;
  auto call = [&] {
    gemm_fp8(ConstTensorRef(a, DataType::uint8, m, k), ConstTensorRef(b, DataType::uint8, n, k),
             TensorRef(d, DataType::bfloat16, m, n), {}, stream);
  };
  auto expect_d = [&](const char* what) {
    std::vector<std::uint16_t> got(m * n);
    ASSERT_EQ(cudaMemcpy(got.data(), d, got.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
    const auto wrong =
        std::count_if(got.begin(), got.end(), [](std::uint16_t v) { return v != 0x45E0; });
    EXPECT_EQ(wrong, 0) << what << ": elements other than 7168 (bf16 0x45E0)";
  };
  auto replay = [&](cudaGraphExec_t exec, const char* what) {
    ASSERT_EQ(cudaMemset(d, 0xFF, m * n * 2), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    expect_d(what);
  };
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
  EXPECT_NO_THROW(call()) << "a planned split captured without workspace runs unsplit";
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  replay(exec, "replay 1 of the unsplit capture");
  replay(exec, "replay 2 of the unsplit capture");

  ASSERT_EQ(cudaMemset(d, 0xFF, m * n * 2), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  call();  // uncaptured: splits, growing the workspace
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  expect_d("the uncaptured call after the graph");

  cudaGraph_t graph2 = nullptr;
  cudaGraphExec_t exec2 = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
  call();  // the workspace holds the split now
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph2), cudaSuccess);
  ASSERT_EQ(cudaGraphInstantiate(&exec2, graph2, 0), cudaSuccess);
  replay(exec2, "the capture with the workspace grown");
  replay(exec, "the first graph again");

  EXPECT_EQ(cudaGraphExecDestroy(exec2), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph2), cudaSuccess);
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  gemm_fp8_release_workspace(stream);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

// Split-K calls on four streams at once, many rounds: every stream has its own workspace, so
// each D equals, bit for bit, the D of the same call made alone on one stream. The calls are
// small (4 output tiles x 8 splits, or 8 x 4: 32 CTAs each), so the four streams' kernels
// share the GPU and, with one workspace between them, would write each other's partial tiles
// and counters. Then two host threads on their per-thread default streams (one handle, two
// streams), and a stream whose workspace was released.
TEST(Gemm, SplitKOnFourStreamsMatchesOneStream) {
  TMAKIT_SKIP_WITHOUT_GPU();
  struct Call {
    std::uint64_t m, n, k;
    GemmTuning tuning;
  };
  const Call calls[] = {{256, 256, 4096, {1, 8}}, {128, 512, 2048, {0, 4}},
                        {200, 130, 4096, {5, 8}}};
  constexpr int kStreams = 4;
  constexpr int kRounds = 40;
  for (const Call& c : calls) {
    SCOPED_TRACE("M=" + std::to_string(c.m) + " N=" + std::to_string(c.n) + " K=" +
                 std::to_string(c.k) + " config=" + std::to_string(c.tuning.config));
    ASSERT_GT(gemm_fp8_plan(c.m, c.n, c.k, 132, c.tuning).splits, 1);
    const std::uint64_t d_bytes = c.m * c.n * 2;
    // each stream its own operands (a workspace shared by mistake mixes different sums)
    std::vector<void*> a(kStreams), b(kStreams), d(kStreams), want(kStreams);
    std::mt19937 gen(static_cast<std::uint32_t>(c.m + c.n));
    for (int i = 0; i < kStreams; ++i) {
      std::vector<std::uint8_t> ha(c.m * c.k), hb(c.n * c.k);
      random_e4m3(ha, c.m, c.k, c.k, gen);
      random_e4m3(hb, c.n, c.k, c.k, gen);
      ASSERT_EQ(cudaMalloc(&a[i], ha.size()), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&b[i], hb.size()), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&d[i], d_bytes), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&want[i], d_bytes), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(a[i], ha.data(), ha.size(), cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(b[i], hb.data(), hb.size(), cudaMemcpyHostToDevice), cudaSuccess);
    }
    auto call = [&](int i, void* out, cudaStream_t stream) {
      gemm_fp8(ConstTensorRef(a[i], DataType::uint8, c.m, c.k),
               ConstTensorRef(b[i], DataType::uint8, c.n, c.k),
               TensorRef(out, DataType::bfloat16, c.m, c.n), {0.5f, 1.0f, 2.0f}, stream,
               c.tuning);
    };
    // the one-stream results: one call at a time
    for (int i = 0; i < kStreams; ++i) {
      call(i, want[i], nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    }
    std::vector<std::vector<std::uint8_t>> expected(kStreams, std::vector<std::uint8_t>(d_bytes));
    for (int i = 0; i < kStreams; ++i) {
      ASSERT_EQ(cudaMemcpy(expected[i].data(), want[i], d_bytes, cudaMemcpyDeviceToHost),
                cudaSuccess);
    }
    const auto check = [&](int i, const std::string& what) {
      std::vector<std::uint8_t> got(d_bytes);
      ASSERT_EQ(cudaMemcpy(got.data(), d[i], d_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
      EXPECT_EQ(got, expected[i]) << what << ": D of stream " << i
                                  << " differs from the one-stream result";
    };
    std::vector<cudaStream_t> streams(kStreams);
    for (auto& st : streams) {
      ASSERT_EQ(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), cudaSuccess);
    }
    // every round: D poisoned on its own stream, then three calls back to back into it
    // (the last one's D is checked; the earlier ones keep the streams' kernels overlapping)
    int mismatched_rounds = 0;
    for (int round = 0; round < kRounds; ++round) {
      for (int i = 0; i < kStreams; ++i) {
        ASSERT_EQ(cudaMemsetAsync(d[i], kPoison, d_bytes, streams[i]), cudaSuccess);
      }
      for (int rep = 0; rep < 3; ++rep) {
        for (int i = 0; i < kStreams; ++i) call(i, d[i], streams[i]);
      }
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      for (int i = 0; i < kStreams; ++i) {
        std::vector<std::uint8_t> got(d_bytes);
        ASSERT_EQ(cudaMemcpy(got.data(), d[i], d_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
        if (got != expected[i]) ++mismatched_rounds;
      }
    }
    EXPECT_EQ(mismatched_rounds, 0) << "(stream, round) pairs of " << kStreams * kRounds
                                    << " whose D differs from the one-stream result";
    // two host threads, each on its per-thread default stream: one handle, two streams
    for (int i = 0; i < 2; ++i) {
      ASSERT_EQ(cudaMemset(d[i], kPoison, d_bytes), cudaSuccess);
    }
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::string thread_error[2];
    {
      std::vector<std::thread> threads;
      for (int i = 0; i < 2; ++i) {
        threads.emplace_back([&, i] {
          try {
            for (int rep = 0; rep < 20; ++rep) call(i, d[i], cudaStreamPerThread);
            if (cudaStreamSynchronize(cudaStreamPerThread) != cudaSuccess) {
              thread_error[i] = "cudaStreamSynchronize failed";
            }
          } catch (const std::exception& e) {
            thread_error[i] = e.what();
          }
        });
      }
      for (auto& t : threads) t.join();
    }
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(thread_error[i], "");
      check(i, "per-thread default stream");
    }
    // a released workspace is allocated anew by the stream's next call
    gemm_fp8_release_workspace(streams[0]);
    gemm_fp8_release_workspace(streams[0]);  // holds none now: nothing to do
    ASSERT_EQ(cudaMemset(d[0], kPoison, d_bytes), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    call(0, d[0], streams[0]);
    ASSERT_EQ(cudaStreamSynchronize(streams[0]), cudaSuccess);
    check(0, "after gemm_fp8_release_workspace");
    for (auto& st : streams) {
      gemm_fp8_release_workspace(st);
      EXPECT_EQ(cudaStreamDestroy(st), cudaSuccess);
    }
    for (int i = 0; i < kStreams; ++i) {
      for (void* p : {a[i], b[i], d[i], want[i]}) cudaFree(p);
    }
  }
}

// gemm_fp8 reuses the last call's plan and tensor maps when the operands are the same: the
// scale, the rows, the tuning and the operands of each call must still be its own.
TEST(Gemm, RepeatedCallsFollowTheirArguments) {
  TMAKIT_SKIP_WITHOUT_GPU();
  for (std::uint64_t m : {37u, 200u}) {  // the small-M kernel and the tiled one
    SCOPED_TRACE("M = " + std::to_string(m));
    const std::uint64_t n = 96, k = 256;
    void *da = nullptr, *db = nullptr, *da2 = nullptr, *dd = nullptr;
    ASSERT_EQ(cudaMalloc(&da, m * k), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&da2, m * k), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&db, n * k), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&dd, m * n * 2), cudaSuccess);
    ASSERT_EQ(cudaMemset(da, 0x38, m * k), cudaSuccess);   // e4m3 1.0
    ASSERT_EQ(cudaMemset(da2, 0x40, m * k), cudaSuccess);  // e4m3 2.0
    ASSERT_EQ(cudaMemset(db, 0x38, n * k), cudaSuccess);
    const ConstTensorRef a(da, DataType::uint8, m, k), a2(da2, DataType::uint8, m, k);
    const ConstTensorRef b(db, DataType::uint8, n, k);
    // every element of D (bf16, exact here) or kPoison bytes where nothing may be written
    const auto expect_all = [&](float value, std::uint64_t rows, const char* what) {
      std::vector<std::uint8_t> got(m * n * 2);
      ASSERT_EQ(cudaMemcpy(got.data(), dd, got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
      std::uint64_t wrong = 0;
      for (std::uint64_t i = 0; i < m * n; ++i) {
        const bool written = i / n < rows;
        const float g = out_to_float(DataType::bfloat16, &got[2 * i]);
        wrong += written ? g != value : (got[2 * i] != kPoison || got[2 * i + 1] != kPoison);
      }
      EXPECT_EQ(wrong, 0u) << what;
    };
    const TensorRef d(dd, DataType::bfloat16, m, n);
    gemm_fp8(a, b, d, {1.0f, 1.0f, 1.0f});
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    expect_all(256.0f, m, "first call");
    gemm_fp8(a, b, d, {0.5f, 1.0f, 0.25f});
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    expect_all(32.0f, m, "same operands, another scale");
    gemm_fp8(a2, b, d, {0.5f, 1.0f, 0.25f});
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    expect_all(64.0f, m, "another A");
    ASSERT_EQ(cudaMemset(dd, kPoison, m * n * 2), cudaSuccess);
    gemm_fp8(ConstTensorRef(da, DataType::uint8, m - 1, k), b,
             TensorRef(dd, DataType::bfloat16, m - 1, n), {1.0f, 1.0f, 1.0f});
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    expect_all(256.0f, m - 1, "one row fewer, same pointers");
    gemm_fp8(a, b, d, {1.0f, 1.0f, 2.0f}, nullptr, {0, 2});
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    expect_all(512.0f, m, "another configuration and split");
    // the tuning is part of what is reused: a split the small-M kernel cannot take, or its
    // configuration past M = 128, must still be refused after a good call on these operands
    gemm_fp8(a, b, d);
    EXPECT_THROW(gemm_fp8(a, b, d, {}, nullptr, {-1, 3}), ArgumentError);
    if (m > 128) EXPECT_THROW(gemm_fp8(a, b, d, {}, nullptr, {3, 0}), ArgumentError);
    // so is D's pitch: after a call with dense rows, the same pointers and shape with padded
    // rows of D (2n elements: n of D, n of padding) leave the padding alone
    const std::uint64_t half_rows = m / 2;
    const ConstTensorRef a_half(da, DataType::uint8, half_rows, k);
    gemm_fp8(a_half, b, TensorRef(dd, DataType::bfloat16, half_rows, n), {1.0f, 1.0f, 1.0f});
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    ASSERT_EQ(cudaMemset(dd, kPoison, m * n * 2), cudaSuccess);
    gemm_fp8(a_half, b, TensorRef(dd, DataType::bfloat16, half_rows, n, 4 * n),
             {1.0f, 1.0f, 1.0f});
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<std::uint8_t> got(m * n * 2);
    ASSERT_EQ(cudaMemcpy(got.data(), dd, got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    std::uint64_t wrong = 0;
    for (std::uint64_t r = 0; r < half_rows; ++r) {
      for (std::uint64_t c = 0; c < 2 * n; ++c) {
        const std::uint8_t* e = &got[(r * 2 * n + c) * 2];
        wrong += c < n ? out_to_float(DataType::bfloat16, e) != 256.0f
                       : (e[0] != kPoison || e[1] != kPoison);
      }
    }
    EXPECT_EQ(wrong, 0u) << "same pointers and shape, D rows padded";
    cudaFree(da);
    cudaFree(da2);
    cudaFree(db);
    cudaFree(dd);
  }
}

TEST(Gemm, Fp16OutputAndPaddedStrides) {
  TMAKIT_SKIP_WITHOUT_GPU();
  run_case({65, 333, 4096, -1, 0, DataType::float16}, 5);
  run_case({130, 131, 272, -1, 0, DataType::float16, 48}, 6);
  run_case({7, 1000, 4096, -1, 0, DataType::bfloat16, 32}, 8);
  // 64 x 64 tiles: a last tile 8 columns wide, rows past M, padded rows, split K
  run_case({100, 200, 272, 5, 2, DataType::float16, 48}, 9);
}

TEST(Gemm, LargerShapeSeveralTilesPerCta) {
  TMAKIT_SKIP_WITHOUT_GPU();
  // more tiles than SMs: the persistent loop and the producer's ring wrap many times
  run_case({1100, 1500, 256}, 11);
  run_case({300, 4100, 512, 0, 1}, 12);
  // rows of whole 16-byte chunks: the epilogue stores through TMA, here with padded rows
  // (never written), a last tile 8 columns wide and row tiles past M
  run_case({1000, 1032, 512, 1, 0, DataType::float16, 32}, 13);
  run_case({72, 2056, 256, 1, 1}, 14);
  // several tiles per CTA with split K
  run_case({300, 4100, 1024, 1, 2}, 16);
}

// Splits asked for with configuration -1 (rule K1): at 1024 x 4096 the plan's rules take the
// two-wave m256n128 (promoted) and m128n256 (fast), neither of which splits K; with splits the
// plan keeps to tiles that take them.
TEST(Gemm, SplitsAskedForWithThePlansChoice) {
  TMAKIT_SKIP_WITHOUT_GPU();
  std::uint32_t seed = 1700;
  for (const auto acc : {GemmAccumulation::promoted, GemmAccumulation::fast}) {
    for (const int splits : {2, 3}) {
      Case c{1024, 4096, 512, -1, splits};
      c.accumulation = acc;
      GemmTuning t;
      t.splits = splits;
      t.accumulation = acc;
      const GemmPlan plan = gemm_fp8_plan(c.m, c.n, c.k, device_sm_count(), t);
      EXPECT_EQ(plan.splits, splits);
      EXPECT_TRUE(gemm_config_info(plan.config).splits_k) << gemm_config_name(plan.config);
      run_case(c, seed++);
    }
  }
  // 128-block scales at M <= 64, which never run the small-M kernel: any split count
  for (const std::uint64_t m : {37ull, 64ull}) {
    Case c{m, 1000, 1024, -1, 3};
    c.recipe = GemmScaleRecipe::block;
    GemmProblem q{};
    q.m = c.m;
    q.n = c.n;
    q.k = c.k;
    q.sm_count = device_sm_count();
    q.tuning.splits = 3;
    q.recipe = c.recipe;
    q.block_scale_a_tma = c.m % 4 == 0;
    EXPECT_EQ(gemm_fp8_plan(q).splits, 3) << m;
    run_case(c, seed++);
  }
}

// Small enough for compute-sanitizer (scripts/gpu_check): the tiled kernel's TMA-store
// epilogue with promotion (two 64-column boxes per warpgroup, a partial last box, padded
// rows), its split-K reduction, and its plain stores (odd N).
TEST(Gemm, TiledEpilogueSmall) {
  TMAKIT_SKIP_WITHOUT_GPU();
  run_case({130, 200, 256, 1, 0, DataType::float16, 32}, 18);
  run_case({70, 300, 384, 0, 2}, 19);
  run_case({130, 333, 256, 1, 0, DataType::bfloat16, 32}, 20);
}

// Row-wise scales where every CTA takes two or three tiles, so that the producer warpgroup's
// scale warp hands each slot over again (load_row_scales: it copies a unit's scales once the
// consumers released the previous unit's), in the tiled kernel (64 x 64 and 128 x 128 tiles,
// one and two consumer warpgroups) and the two-wave kernel (two and three math warpgroups),
// at a size the sanitizers finish (scripts/gpu_check runs memcheck and synccheck on it;
// racecheck's reports there: docs/hardware.md, H15).
TEST(GemmRecipes, RowWiseSlotsReusedSmall) {
  TMAKIT_SKIP_WITHOUT_GPU();
  const int sms = device_sm_count();
  std::uint32_t seed = 1650;
  for (const char* name : {"m64n64", "m128n128", "m256n128", "m192n128"}) {
    const int id = gemm_config_id(name);
    const GemmConfigInfo info = gemm_config_info(id);
    // 2.5 tiles per SM: rows of tiles x 16 columns of 128 (64 for m64n64)
    const std::uint64_t n = 16 * static_cast<std::uint64_t>(info.block_n);
    const std::uint64_t rows = (5 * static_cast<std::uint64_t>(sms) / 2 + 15) / 16;
    Case c{rows * static_cast<std::uint64_t>(info.block_m) - 8, n, 256, id};
    c.recipe = GemmScaleRecipe::row;
    const GemmPlan plan = gemm_fp8_plan({c.m, c.n, c.k, 0, sms, 0, {id}, c.recipe});
    EXPECT_GT(plan.tiles, static_cast<std::int64_t>(plan.grid)) << name;
    run_case(c, seed++);
  }
}

// Rule G1: the tiled kernel's CTAs in clusters of 2 (each pair reads the same tiles of B):
// one round and several, K split in every tile, partial tiles, padded rows, each recipe,
// both modes, and calls in a row into the same D as programmatic dependents (a call's
// clusters placed while the call before it finishes).
TEST(Gemm, ClusteredPairsSmall) {
  TMAKIT_SKIP_WITHOUT_GPU();
  const int m64n64 = gemm_config_id("m64n64"), m128n128 = gemm_config_id("m128n128");
  constexpr auto kPromoted = GemmAccumulation::promoted;
  std::uint32_t seed = 1700;
  for (const Case& c :
       {Case{128, 1024, 512, m64n64, 0}, Case{256, 600, 384, m128n128, 0, DataType::float16},
        Case{512, 4224, 256, m64n64, 0, DataType::bfloat16, 16},
        Case{128, 1000, 640, m64n64, 0, DataType::bfloat16, 0, true, kPromoted,
             GemmScaleRecipe::block},
        Case{256, 640, 512, m128n128, 0, DataType::bfloat16, 0, true, kPromoted,
             GemmScaleRecipe::row, false, 3},
        Case{256, 640, 512, m128n128, 0, DataType::float16, 0, true, GemmAccumulation::fast},
        // K split in every tile (rule K5): the units of tiles 2p and 2p + 1 alternating
        Case{128, 1024, 2048, m64n64, 0, DataType::bfloat16, 0, true, kPromoted,
             GemmScaleRecipe::tensor, false, 3},
        Case{128, 1000, 1936, m64n64, 0, DataType::float16, 16, true, kPromoted,
             GemmScaleRecipe::block},
        Case{256, 640, 2048, m128n128, 2, DataType::bfloat16, 0, true, kPromoted,
             GemmScaleRecipe::row}}) {
    const std::uint64_t dp = (c.n * 2 + 15) / 16 * 16 + c.pad;
    const GemmTuning tuning{c.config, c.splits, c.overlap, c.accumulation};
    const bool scale_a_tma = c.recipe == GemmScaleRecipe::block && c.m % 4 == 0;
    const GemmPlan plan = gemm_fp8_plan(
        {c.m, c.n, c.k, dp, device_sm_count(), 0, tuning, c.recipe, scale_a_tma});
    ASSERT_STREQ(plan.cluster_rule, "G1") << describe(c);
    ASSERT_EQ(plan.cluster, 2) << describe(c);
    run_case(c, seed++);
  }
}

// Configuration 7, both modes: 256 x 128 tiles as two 64-row waves per math warpgroup. Shapes with
// partial tiles in M and N (a second warpgroup wholly past M at M = 100 and 300, waves past
// M, boxes past N at N = 200), K not a multiple of 128, padded rows, fp16 output, one k-block,
// and more tiles than SMs (each CTA walks several tiles of one, two or three k-blocks through one
// ring).
TEST(Gemm, TwoWaveTiles) {
  TMAKIT_SKIP_WITHOUT_GPU();
  std::uint32_t seed = 800;
  for (const Case& c :
       {Case{100, 200, 512, 7, 0}, Case{300, 136, 1040, 7, 0, DataType::float16},
        Case{513, 264, 384, 7, 0, DataType::bfloat16, 32}, Case{256, 128, 128, 7, 0},
        Case{4096, 2048, 256, 7, 0}, Case{4096, 2048, 128, 7, 0, DataType::float16},
        Case{4000, 2000, 384, 7, 0, DataType::bfloat16, 16},
        Case{1000, 1000, 4096, 7, 0, DataType::float16}}) {
    run_case(c, seed++);
  }
  // fast accumulation: the sums of each wave accumulate in the tensor cores across all of K
  constexpr auto kFast = GemmAccumulation::fast;
  for (const Case& c : {Case{300, 136, 1040, 7, 0, DataType::float16, 0, true, kFast},
                        Case{4096, 2048, 768, 7, 0, DataType::bfloat16, 0, true, kFast},
                        Case{513, 264, 1040, 7, 0, DataType::float16, 32, true, kFast}}) {
    run_case(c, seed++);
  }
}

// Configuration 11 (m192n128): three math warpgroups of one 64-row wave each. Rows past M
// (M = 100: the third warpgroup wholly past it), columns past N, K not a multiple of 128 and
// one k-block, fp16 and padded D, more tiles than SMs; both modes and both scale recipes.
TEST(Gemm, ThreeWarpgroupTiles) {
  TMAKIT_SKIP_WITHOUT_GPU();
  constexpr int kThree = detail::gemm::config::m192n128;
  ASSERT_STREQ(gemm_config_name(kThree), "m192n128");
  std::uint32_t seed = 900;
  for (const Case& c :
       {Case{100, 264, 512, kThree, 0}, Case{300, 136, 1040, kThree, 0, DataType::float16},
        Case{513, 264, 384, kThree, 0, DataType::bfloat16, 32}, Case{192, 128, 128, kThree, 0},
        Case{4096, 2048, 256, kThree, 0}, Case{4000, 2000, 384, kThree, 0, DataType::bfloat16, 16},
        Case{1000, 1000, 4096, kThree, 0, DataType::float16}}) {
    run_case(c, seed++);
  }
  constexpr auto kFast = GemmAccumulation::fast;
  for (const Case& c : {Case{300, 264, 1040, kThree, 0, DataType::float16, 0, true, kFast},
                        Case{4096, 2048, 768, kThree, 0, DataType::bfloat16, 0, true, kFast}}) {
    run_case(c, seed++);
  }
  for (const GemmScaleRecipe recipe : {GemmScaleRecipe::row, GemmScaleRecipe::block}) {
    // (block: scale_a by TMA, M a multiple of 4; K = 1008: scale_b by TMA too, 1040: not)
    for (const Case& shape : {Case{1100, 4000, 1008, kThree}, Case{300, 264, 1040, kThree},
                              Case{4096, 1536, 2048, kThree}}) {
      Case c = shape;
      c.recipe = recipe;
      run_case(c, seed++);
    }
  }
}

// The ping-pong tiles (m128n128pp, and m128n128ppd with both halves of D staged; fast
// accumulation only): a CTA's units alternate between its two math warpgroups, each walking
// the ring past the other's k-blocks. One unit per CTA (the second warpgroup idle), CTAs of
// two, three and more units (an odd count: the first warpgroup takes one more), rows past M
// (M = 300 and 513: the last row of tiles' bottom halves wholly past it) and columns past N,
// K not a multiple of 128 and one k-block, fp16, padded D and D whose rows TMA cannot store;
// both scale recipes it takes.
constexpr int kPingpongConfigs[] = {detail::gemm::config::m128n128pp,
                                    detail::gemm::config::m128n128ppd};
TEST(Gemm, PingpongTiles) {
  TMAKIT_SKIP_WITHOUT_GPU();
  ASSERT_STREQ(gemm_config_name(kPingpongConfigs[0]), "m128n128pp");
  ASSERT_STREQ(gemm_config_name(kPingpongConfigs[1]), "m128n128ppd");
  constexpr auto kFast = GemmAccumulation::fast;
  std::uint32_t seed = 950;
  for (const int config : kPingpongConfigs) {
    for (const GemmScaleRecipe recipe : {GemmScaleRecipe::tensor, GemmScaleRecipe::row}) {
      for (const Case& shape :
           {Case{100, 200, 512, config, 0, DataType::bfloat16},
            Case{300, 264, 1040, config, 0, DataType::float16},
            Case{1100, 4000, 272, config, 0, DataType::bfloat16},
            Case{2000, 3000, 1040, config, 0, DataType::float16, 16},
            Case{4096, 4224, 128, config, 0, DataType::bfloat16},
            Case{513, 1001, 384, config, 0, DataType::bfloat16},  // plain stores (N odd)
            Case{4096, 2048, 768, config, 0, DataType::bfloat16, 32}}) {
        Case c = shape;
        c.accumulation = kFast;
        c.recipe = recipe;
        run_case(c, seed++);
      }
    }
  }
  // many calls in a row into one D: the turns and the scale slots' hand-over at every call
  for (const int config : kPingpongConfigs) {
    Case repeated{1100, 4000, 272, config, 0, DataType::bfloat16, 0, true, kFast,
                  GemmScaleRecipe::row};
    repeated.launches = 200;
    run_case(repeated, seed++);
  }
}

// The ping-pong tiles at a size the sanitizers finish (scripts/gpu_check): 288 tiles on the
// device's SMs, so that every CTA's two math warpgroups take turns (two or three units a CTA);
// both configurations, both recipes (row-wise: each warpgroup's scale slots), TMA and plain
// stores.
TEST(Gemm, PingpongTilesSmall) {
  TMAKIT_SKIP_WITHOUT_GPU();
  constexpr auto kFast = GemmAccumulation::fast;
  std::uint32_t seed = 970;
  for (const int config : kPingpongConfigs) {
    Case c{2304, 2048, 256, config, 0, DataType::bfloat16, 0, true, kFast};
    run_case(c, seed++);
    c.recipe = GemmScaleRecipe::row;
    run_case(c, seed++);
    // M = 2300: the last row of tiles' bottom halves store 60 rows; (N odd: plain stores)
    Case plain{2300, 2047, 272, config, 0, DataType::float16, 0, true, kFast,
               GemmScaleRecipe::row};
    run_case(plain, seed++);
    // M = 2240: the last row's bottom halves wholly past M (an empty store group)
    Case short_rows{2240, 2048, 256, config, 0, DataType::bfloat16, 0, true, kFast,
                    GemmScaleRecipe::row};
    run_case(short_rows, seed++);
  }
}

// Configuration 11 at a size the sanitizers finish (scripts/gpu_check): one tile, and CTAs of
// two tiles (2304 x 2000: 12 x 16 tiles); row-wise scales.
TEST(Gemm, ThreeWarpgroupTilesSmall) {
  TMAKIT_SKIP_WITHOUT_GPU();
  constexpr int kThree = detail::gemm::config::m192n128;
  run_case({300, 136, 1040, kThree, 0, DataType::float16}, 930u);
  run_case({300, 264, 1040, kThree, 0, DataType::bfloat16, 0, true, GemmAccumulation::fast}, 931u);
  run_case({2304, 2000, 384, kThree, 0, DataType::bfloat16}, 932u);
  Case row{300, 264, 1040, kThree};
  row.recipe = GemmScaleRecipe::row;
  run_case(row, 933u);
}

// Configuration 7 at a size the sanitizers finish (scripts/gpu_check): one tile per CTA in
// both modes, partial tiles in M and N, an odd k-block count; and 144 tiles, more than the SMs
// (CTAs of two tiles: a tile's D staged while the next tile's first stages land).
TEST(Gemm, TwoWaveTilesSmall) {
  TMAKIT_SKIP_WITHOUT_GPU();
  run_case({300, 136, 1040, 7, 0, DataType::float16}, 830u);
  run_case({300, 136, 1040, 7, 0, DataType::bfloat16, 0, true, GemmAccumulation::fast}, 831u);
  run_case({2304, 2000, 384, 7, 0, DataType::bfloat16}, 832u);
}

// Configuration 10, both modes: 128 x 256 tiles as two 128-column waves per math warpgroup
// (the shapes the plan gives it: GemmPlan's host tests). Rows past M (M = 100; at M = 60 the
// second warpgroup wholly past it), a second wave partly past N (N = 136, 200) and wholly
// past it (N = 128), K not a multiple of 128 and a single k-block, padded rows, fp16 output,
// and more tiles than SMs (153).
TEST(Gemm, TwoWavesAlongN) {
  TMAKIT_SKIP_WITHOUT_GPU();
  std::uint32_t seed = 870;
  for (const Case& c :
       {Case{128, 25344, 512, 10, 0}, Case{100, 200, 1040, 10, 0, DataType::float16},
        Case{60, 136, 384, 10, 0}, Case{128, 128, 128, 10, 0},
        Case{300, 600, 384, 10, 0, DataType::bfloat16, 32},
        Case{1100, 4352, 256, 10, 0, DataType::float16}}) {
    run_case(c, seed++);
  }
  constexpr auto kFast = GemmAccumulation::fast;
  for (const Case& c : {Case{300, 136, 1040, 10, 0, DataType::float16, 0, true, kFast},
                        Case{1100, 4352, 768, 10, 0, DataType::bfloat16, 0, false, kFast}}) {
    run_case(c, seed++);
  }
}

// Configurations 7 and 10 run each output's wgmmas and promotions in the same order (waves
// down M or along N only place the tile): D bit-identical on the same inputs, both modes.
TEST(Gemm, TwoWaveAxesAgree) {
  TMAKIT_SKIP_WITHOUT_GPU();
  for (const Case& c :
       {Case{1100, 4352, 256, 7, 0, DataType::float16},
        Case{300, 600, 1040, 7, 0, DataType::bfloat16, 32},
        Case{300, 600, 1040, 7, 0, DataType::float16, 0, true, GemmAccumulation::fast}}) {
    std::vector<std::uint8_t> down_m, along_n;
    run_case(c, 875u, nullptr, &down_m);
    Case n = c;
    n.config = 10;
    run_case(n, 875u, nullptr, &along_n);
    ASSERT_EQ(down_m.size(), along_n.size());
    EXPECT_TRUE(down_m == along_n) << describe(c) << ": D differs between configurations 7 and 10";
  }
}

// Configuration 10 at a size the sanitizers finish (scripts/gpu_check): a partial tile in M,
// a second wave partly past N, an odd k-block count, both modes.
TEST(Gemm, TwoWavesAlongNSmall) {
  TMAKIT_SKIP_WITHOUT_GPU();
  run_case({130, 200, 1040, 10, 0, DataType::float16}, 880u);
  run_case({100, 136, 384, 10, 0, DataType::bfloat16, 0, true, GemmAccumulation::fast}, 881u);
}

// Configuration 9 (128 x 80 tiles, D in two 40-column boxes): taken by the plan (asserted on
// a 132-SM plan; the call itself uses this GPU's count), a last tile of one box (N = 10200),
// an odd k-block count (promotion every k-block), both modes and output types, an ordinary
// launch, and more tiles than SMs (1100 x 1500: 171 of them).
TEST(Gemm, NarrowTiles) {
  TMAKIT_SKIP_WITHOUT_GPU();
  ASSERT_STREQ(gemm_config_name(gemm_fp8_plan(128, 10200, 640, 132).config), "m128n80");
  constexpr auto kFast = GemmAccumulation::fast;
  std::uint32_t seed = 850;
  for (const Case& c : {Case{128, 10200, 640, -1, 0},
                        Case{128, 10200, 640, 9, 0, DataType::float16, 0, true, kFast},
                        Case{1100, 1500, 256, 9, 0, DataType::bfloat16, 0, false, kFast}}) {
    run_case(c, seed++);
  }
}

// Configuration 9 at a size the sanitizers finish (scripts/gpu_check): a second tile row
// mostly past M, a box wholly past N (N = 520), padded rows and plain stores (N = 330), both
// modes.
TEST(Gemm, NarrowTilesSmall) {
  TMAKIT_SKIP_WITHOUT_GPU();
  run_case({129, 520, 1040, 9, 1, DataType::float16, 32}, 860u);
  run_case({70, 330, 384, 9, 0, DataType::bfloat16, 0, true, GemmAccumulation::fast}, 861u);
}

// 128 x 144 tiles (configuration 4), small enough for compute-sanitizer: D in three 48-column
// boxes through one buffer per warpgroup (a last tile 16 columns wide, rows past M, padded
// rows), plain stores (odd N), both modes, split K.
TEST(Gemm, Tiles144Small) {
  TMAKIT_SKIP_WITHOUT_GPU();
  run_case({200, 304, 1040, 4, 1, DataType::float16, 32}, 870u);
  run_case({130, 333, 512, 4, 1, DataType::bfloat16, 0, true, GemmAccumulation::fast}, 871u);
  run_case({129, 300, 1024, 4, 2}, 872u);
}

// 128 x 192 tiles, which promote through one partial and whose tiles past the first start 64
// columns into a 128-row block of B (their odd 64-column pieces take the next block's
// scale_b), small enough for compute-sanitizer (scripts/gpu_check): both modes with padded
// and odd-width D (plain stores), row-wise scales, and 128-block scales that TMA loads
// (scale_a and scale_b in runs, from the producer thread), over more tiles than SMs too.
TEST(Gemm, Tiles192Small) {
  TMAKIT_SKIP_WITHOUT_GPU();
  const int id = gemm_config_id("m128n192");
  ASSERT_GE(id, 0);
  run_case({200, 400, 1040, id, 1, DataType::float16, 32}, 880u);
  run_case({130, 333, 512, id, 1, DataType::bfloat16, 0, true, GemmAccumulation::fast}, 881u);
  Case row{130, 336, 1040, id};
  row.recipe = GemmScaleRecipe::row;
  run_case(row, 882u);
  Case block{300, 520, 1008, id};  // 8 k-blocks: scale_b's rows whole 16-byte runs
  block.recipe = GemmScaleRecipe::block;
  run_case(block, 883u);
  Case many{128, 192 * 140 + 64, 512, id};  // 141 tiles: CTAs that take two
  many.recipe = GemmScaleRecipe::block;
  run_case(many, 886u);
}

// The same tiles with 128-block scales that a thread of the producer warpgroup writes into the
// stages: scale_b by the scale thread (K = 1040: rows of 9 k-blocks), scale_a too by the scale
// warp (row-major; a last 128-row block of B partly past N).
// NOTE: racecheck reports potential WAR hazards here between lane 31 of a consumer warp
// reading a stage's scale_b and the scale thread's next write of that slot, in rings of 3-4
// stages (these tiles and the two-wave ones alike), not in deeper ones; the reads come before
// the warp's __syncwarp and its leader's release of the stage (docs/hardware.md, H13), and
// every result is checked. scripts/gpu_check runs memcheck and synccheck on it.
TEST(Gemm, Tiles192SmallScaleWarps) {
  TMAKIT_SKIP_WITHOUT_GPU();
  const int id = gemm_config_id("m128n192");
  ASSERT_GE(id, 0);
  Case block{300, 520, 1040, id};
  block.recipe = GemmScaleRecipe::block;
  run_case(block, 884u);
  Case rows{301, 333, 1040, id};
  rows.recipe = GemmScaleRecipe::block;
  rows.scale_a_rows = true;
  run_case(rows, 885u);
}

// The plan's 128 x 144 tiles where they save a round (1024 x 2112: 120 tiles against 136 of
// 128 x 128), checked against the reference in both modes.
TEST(Gemm, Tiles144Chosen) {
  TMAKIT_SKIP_WITHOUT_GPU();
  run_case({1024, 2112, 4096, -1, 0}, 873u);
  run_case({1000, 2100, 4096, -1, 0, DataType::float16, 0, true, GemmAccumulation::fast}, 874u);
}

// A split tail: the plan runs whole 128 x 128 tiles for a round, then splits K four ways for
// the few tiles of the last round (17 tiles across N; M just past one round of the SMs).
TEST(Gemm, SplitTailMatchesReference) {
  TMAKIT_SKIP_WITHOUT_GPU();
  const int sms = device_sm_count();
  // 17 tiles of 128 x 128 per tile row, a few more rows of them than fill the SMs once (the
  // plan's 128 x 144 tiles, 15 per row, take as many rounds there)
  const std::uint64_t m = 128 * static_cast<std::uint64_t>(sms / 17 + 2), n = 17 * 128 - 64;
  const std::uint64_t k = 6144;
  for (const GemmAccumulation mode : {GemmAccumulation::promoted, GemmAccumulation::fast}) {
    const GemmPlan plan = gemm_fp8_plan(m, n, k, sms, {-1, 0, true, mode});
    ASSERT_EQ(plan.config, 1) << "M=" << m << " on " << sms << " SMs";
    ASSERT_EQ(plan.splits, 4);
    ASSERT_GT(plan.split_tiles, 0);
    ASSERT_LT(plan.split_tiles, plan.tiles);
    Case c{m, n, k};
    c.accumulation = mode;
    std::vector<std::uint8_t> first, second;
    run_case(c, 31, nullptr, &first);
    if (mode == GemmAccumulation::fast) continue;  // the same split path: one run
    run_case(c, 31, nullptr, &second);
    EXPECT_EQ(first, second) << "the split tiles' sum depends on timing";
  }
}

TEST(Gemm, SplitKIsDeterministicAcrossCalls) {
  TMAKIT_SKIP_WITHOUT_GPU();
  // the tile counters reset themselves: a second call gives the same bits
  std::vector<std::uint8_t> first, second;
  run_case({64, 1024, 4096, -1, 0}, 21, nullptr, &first);
  run_case({64, 1024, 4096, -1, 0}, 21, nullptr, &second);
  EXPECT_EQ(first, second);
}

// ---- programmatic dependent launch (GemmTuning::overlap_launch) --------------------------

// Lets a dependent launch start at once, then spins for `spin_ns` and only then copies `src`
// into `dst`: a dependent that read `dst` before this kernel completed would see its old
// bytes.
__global__ void late_writer(std::uint8_t* dst, const std::uint8_t* src, std::uint64_t bytes,
                            std::uint64_t spin_ns) {
  ptx::griddepcontrol_launch_dependents();
  const std::uint64_t t0 = ptx::globaltimer_ns();
  while (ptx::globaltimer_ns() - t0 < spin_ns) {
  }
  for (std::uint64_t i = threadIdx.x; i < bytes; i += blockDim.x) dst[i] = src[i];
}

// Reads `bytes` of `src` without waiting for the kernel before it, and records whether any
// byte was still 0.
__global__ void eager_reader(const std::uint8_t* src, std::uint64_t bytes, int* saw_zero) {
  for (std::uint64_t i = threadIdx.x; i < bytes; i += blockDim.x) {
    if (src[i] == 0) *saw_zero = 1;
  }
}

constexpr std::uint64_t kSpinNs = 2'000'000;  // 2 ms: far longer than a launch

// The premise of the test below: on this device and driver, a kernel launched as a dependent
// does start before the kernel it follows has finished (a reader that skips
// griddepcontrol.wait sees the bytes before they are written). Without it the test below
// could not fail.
TEST(GemmOverlapLaunch, DependentsStartEarlyOnThisDevice) {
  TMAKIT_SKIP_WITHOUT_GPU();
  const std::uint64_t bytes = 4096;
  std::uint8_t *dst = nullptr, *src = nullptr;
  int* flag = nullptr;
  ASSERT_EQ(cudaMalloc(&dst, bytes), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&src, bytes), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&flag, sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaMemset(src, 0x38, bytes), cudaSuccess);
  ASSERT_EQ(cudaMemset(dst, 0, bytes), cudaSuccess);
  ASSERT_EQ(cudaMemset(flag, 0, sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the stream below is not ordered after it
  // NOTE: a stream of its own: the legacy default stream launches no dependent early
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  // NOTE: each kernel launched once first: a kernel's first launch loads its module (lazy
  // loading), and that launch then waits for the kernels before it
  late_writer<<<1, 256, 0, stream>>>(dst, src, 0, 0);
  eager_reader<<<1, 256, 0, stream>>>(dst, 0, flag);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  late_writer<<<1, 256, 0, stream>>>(dst, src, bytes, kSpinNs);
  KernelLaunch l(1, 256, 0, stream);
  l.overlap_previous_kernel();
  ASSERT_EQ(cudaLaunchKernelEx(&l.config, eager_reader, static_cast<const std::uint8_t*>(dst),
                               bytes, flag),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  int saw_zero = 0;
  ASSERT_EQ(cudaMemcpy(&saw_zero, flag, sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(saw_zero, 1) << "the dependent did not start early: the overlap test below "
                            "cannot tell a missing wait";
  cudaStreamDestroy(stream);
  cudaFree(dst);
  cudaFree(src);
  cudaFree(flag);
}

// gemm_fp8 launched to overlap a kernel that writes A, then one that writes B, late: the GEMM
// must wait for that kernel before reading them. D must equal, bit for bit, an ordinary
// call's D on the finished operands: the small-M kernel (with its L2 prefetch of B), the tiled
// kernel, split K and the two-wave kernel.
TEST(GemmOverlapLaunch, WaitsForTheKernelBeforeIt) {
  TMAKIT_SKIP_WITHOUT_GPU();
  struct Shape {
    std::uint64_t m, n, k;
    int config, splits;
  };
  cudaStream_t stream = nullptr;  // not the legacy default stream (see above)
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  // (the small-M kernel prefetches B at M = 48 on H100-class memory, and in clusters and on
  // 128 rows of B per CTA on both)
  for (const Shape& sh :
       {Shape{16, 256, 512, 3, 1}, Shape{48, 256, 512, 3, 1}, Shape{40, 192, 1024, 3, 4},
        Shape{16, 384, 512, 8, 1}, Shape{256, 512, 1024, 1, 1}, Shape{128, 256, 2048, 5, 2},
        Shape{300, 512, 512, 7, 0}}) {
    SCOPED_TRACE("M=" + std::to_string(sh.m) + " N=" + std::to_string(sh.n) +
                 " K=" + std::to_string(sh.k) + " config=" + std::to_string(sh.config));
    std::mt19937 gen(static_cast<std::uint32_t>(sh.m + sh.n));
    std::vector<std::uint8_t> a(sh.m * sh.k), b(sh.n * sh.k);
    random_e4m3(a, sh.m, sh.k, sh.k, gen);
    random_e4m3(b, sh.n, sh.k, sh.k, gen);
    std::uint8_t *da = nullptr, *db = nullptr, *sa = nullptr, *sb = nullptr;
    void *d1 = nullptr, *d2 = nullptr;
    ASSERT_EQ(cudaMalloc(&da, a.size()), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&db, b.size()), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&sa, a.size()), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&sb, b.size()), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d1, sh.m * sh.n * 2), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d2, sh.m * sh.n * 2), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(sa, a.data(), a.size(), cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(sb, b.data(), b.size(), cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemset(da, 0, a.size()), cudaSuccess);  // e4m3 zeros until written
    ASSERT_EQ(cudaMemset(db, 0, b.size()), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // `stream` is not ordered after these
    const ConstTensorRef ra(da, DataType::uint8, sh.m, sh.k);
    const ConstTensorRef rb(db, DataType::uint8, sh.n, sh.k);
    // the GEMM's kernel loaded (its first launch waits for the kernels before it, see
    // above) and its plan made, on the zero operands
    gemm_fp8(ra, rb, TensorRef(d1, DataType::bfloat16, sh.m, sh.n), {}, stream,
             {sh.config, sh.splits, true});
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    // NOTE: B late too: the small-M kernel asks the L2 for B before it waits
    for (const bool b_late : {false, true}) {
      SCOPED_TRACE(b_late ? "B written late" : "A written late");
      ASSERT_EQ(cudaMemsetAsync(da, 0, a.size(), stream), cudaSuccess);
      ASSERT_EQ(cudaMemsetAsync(db, 0, b.size(), stream), cudaSuccess);
      ASSERT_EQ(cudaMemsetAsync(d1, kPoison, sh.m * sh.n * 2, stream), cudaSuccess);
      ASSERT_EQ(cudaMemsetAsync(d2, kPoison, sh.m * sh.n * 2, stream), cudaSuccess);
      // one operand written before, the other by a kernel the GEMM follows directly
      ASSERT_EQ(cudaMemcpyAsync(b_late ? da : db, b_late ? sa : sb, b_late ? a.size() : b.size(),
                                cudaMemcpyDeviceToDevice, stream),
                cudaSuccess);
      late_writer<<<1, 256, 0, stream>>>(b_late ? db : da, b_late ? sb : sa,
                                         b_late ? b.size() : a.size(), kSpinNs);
      ASSERT_EQ(cudaGetLastError(), cudaSuccess);
      gemm_fp8(ra, rb, TensorRef(d1, DataType::bfloat16, sh.m, sh.n), {}, stream,
               {sh.config, sh.splits, true});
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      gemm_fp8(ra, rb, TensorRef(d2, DataType::bfloat16, sh.m, sh.n), {}, stream,
               {sh.config, sh.splits, false});
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      std::vector<std::uint8_t> got(sh.m * sh.n * 2), want(sh.m * sh.n * 2);
      ASSERT_EQ(cudaMemcpy(got.data(), d1, got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(want.data(), d2, want.size(), cudaMemcpyDeviceToHost), cudaSuccess);
      std::uint64_t nonzero = 0;
      for (std::uint64_t i = 0; i + 1 < want.size(); i += 2) {
        nonzero += (want[i] | (want[i + 1] & 0x7F)) != 0;  // bf16 +-0 are zero
      }
      EXPECT_GT(nonzero, want.size() / 4) << "the reference D is mostly zero";
      EXPECT_EQ(got, want) << "D of the overlapped launch differs from the ordinary launch's";
    }
    for (void* p : {static_cast<void*>(da), static_cast<void*>(db), static_cast<void*>(sa),
                    static_cast<void*>(sb), d1, d2}) {
      cudaFree(p);
    }
  }
  cudaStreamDestroy(stream);
}

// gemm_fp8 captured into a CUDA graph after a kernel that writes the first call's A late,
// several calls back to back on different operands, replayed twice: each call is a
// programmatic dependent of the node before it (the graph's edges say so), and every D
// equals, bit for bit, an ordinary call's D on the same operands. The small-M kernel, the
// tiled kernel, split K.
TEST(GemmOverlapLaunch, GraphOfCallsMatchesSingleCalls) {
  TMAKIT_SKIP_WITHOUT_GPU();
  struct Shape {
    std::uint64_t m, n, k;
    int config, splits;
  };
  constexpr int kSets = 3;
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  for (const Shape& sh : {Shape{16, 320, 1024, -1, 0}, Shape{256, 512, 1024, 1, 1},
                          Shape{128, 256, 2048, 5, 2}}) {
    SCOPED_TRACE("M=" + std::to_string(sh.m) + " config=" + std::to_string(sh.config));
    std::mt19937 gen(static_cast<std::uint32_t>(sh.m * 7 + sh.k));
    std::vector<void*> a(kSets), b(kSets), d(kSets), want(kSets);
    void* a0_src = nullptr;  // A of the first call, copied in late by the graph's first node
    for (int i = 0; i < kSets; ++i) {
      std::vector<std::uint8_t> ha(sh.m * sh.k), hb(sh.n * sh.k);
      random_e4m3(ha, sh.m, sh.k, sh.k, gen);
      random_e4m3(hb, sh.n, sh.k, sh.k, gen);
      ASSERT_EQ(cudaMalloc(&a[i], ha.size()), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&b[i], hb.size()), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&d[i], sh.m * sh.n * 2), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&want[i], sh.m * sh.n * 2), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(a[i], ha.data(), ha.size(), cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(b[i], hb.data(), hb.size(), cudaMemcpyHostToDevice), cudaSuccess);
      if (i == 0) {
        ASSERT_EQ(cudaMalloc(&a0_src, ha.size()), cudaSuccess);
        ASSERT_EQ(cudaMemcpy(a0_src, ha.data(), ha.size(), cudaMemcpyHostToDevice), cudaSuccess);
      }
    }
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // `stream` is not ordered after these
    auto call = [&](int i, void* out, bool overlap) {
      gemm_fp8(ConstTensorRef(a[i], DataType::uint8, sh.m, sh.k),
               ConstTensorRef(b[i], DataType::uint8, sh.n, sh.k),
               TensorRef(out, DataType::bfloat16, sh.m, sh.n), {0.5f, 1.0f, 2.0f}, stream,
               {sh.config, sh.splits, overlap});
    };
    for (int i = 0; i < kSets; ++i) call(i, want[i], false);  // also loads the kernels
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    late_writer<<<1, 256, 0, stream>>>(static_cast<std::uint8_t*>(a[0]),
                                       static_cast<const std::uint8_t*>(a0_src), 0, 0);  // loaded
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed), cudaSuccess);
    late_writer<<<1, 256, 0, stream>>>(static_cast<std::uint8_t*>(a[0]),
                                       static_cast<const std::uint8_t*>(a0_src), sh.m * sh.k,
                                       kSpinNs);
    for (int i = 0; i < kSets; ++i) call(i, d[i], true);
    cudaGraph_t graph = nullptr;
    ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
    std::size_t edges = 0;
    ASSERT_EQ(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &edges), cudaSuccess);
    std::vector<cudaGraphNode_t> from(edges), to(edges);
    std::vector<cudaGraphEdgeData> data(edges);
    ASSERT_EQ(cudaGraphGetEdges(graph, from.data(), to.data(), data.data(), &edges), cudaSuccess);
    int programmatic = 0;
    for (const cudaGraphEdgeData& e : data) programmatic += e.type == cudaGraphDependencyTypeProgrammatic;
    EXPECT_EQ(programmatic, kSets) << "each GEMM a programmatic dependent of the node before it";
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    for (int replay = 0; replay < 2; ++replay) {
      // the first call's A is zero until the graph's first node writes it
      ASSERT_EQ(cudaMemsetAsync(a[0], 0, sh.m * sh.k, stream), cudaSuccess);
      for (int i = 0; i < kSets; ++i) {
        ASSERT_EQ(cudaMemsetAsync(d[i], kPoison, sh.m * sh.n * 2, stream), cudaSuccess);
      }
      ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
      for (int i = 0; i < kSets; ++i) {
        std::vector<std::uint8_t> got(sh.m * sh.n * 2), ref(sh.m * sh.n * 2);
        ASSERT_EQ(cudaMemcpy(got.data(), d[i], got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
        ASSERT_EQ(cudaMemcpy(ref.data(), want[i], ref.size(), cudaMemcpyDeviceToHost), cudaSuccess);
        EXPECT_EQ(got, ref) << "call " << i << " of replay " << replay;
      }
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    for (int i = 0; i < kSets; ++i) {
      for (void* p : {a[i], b[i], d[i], want[i]}) cudaFree(p);
    }
    cudaFree(a0_src);
  }
  cudaStreamDestroy(stream);
}

// Host memory the GPU cannot reach (malloc'd) as an operand, D or a device-side scale is
// refused with ArgumentError naming the argument, nothing launched, and the process's CUDA
// state left working: the next call on device memory gives the right D. The small-M kernel
// and the tiled one; a pointer refused once is refused again (refusals are not remembered).
TEST(Gemm, HostPointersAreRefusedByName) {
  TMAKIT_SKIP_WITHOUT_GPU();
  for (const std::uint64_t m : {16u, 256u}) {
    SCOPED_TRACE("M = " + std::to_string(m));
    const std::uint64_t n = 128, k = 256;
    void *da = nullptr, *db = nullptr, *dd = nullptr;
    ASSERT_EQ(cudaMalloc(&da, m * k), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&db, n * k), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&dd, m * n * 2), cudaSuccess);
    ASSERT_EQ(cudaMemset(da, 0x38, m * k), cudaSuccess);  // e4m3 1.0
    ASSERT_EQ(cudaMemset(db, 0x38, n * k), cudaSuccess);
    ASSERT_EQ(cudaMemset(dd, 0, m * n * 2), cudaSuccess);
    std::vector<std::uint8_t> host_a(m * k + 16, 0x38), host_d(m * n * 2 + 16);
    // 16-byte aligned inside the vectors, so only the kind of memory is wrong
    const auto aligned = [](std::uint8_t* p) {
      return reinterpret_cast<std::uint8_t*>((reinterpret_cast<std::uintptr_t>(p) + 15) & ~std::uintptr_t{15});
    };
    const ConstTensorRef a(da, DataType::uint8, m, k), b(db, DataType::uint8, n, k);
    const TensorRef d(dd, DataType::bfloat16, m, n);
    const ConstTensorRef host_ar(aligned(host_a.data()), DataType::uint8, m, k);
    const TensorRef host_dr(aligned(host_d.data()), DataType::bfloat16, m, n);
    const float host_scale = 2.0f;
    const auto argument = [](const std::function<void()>& call) -> std::string {
      try {
        call();
      } catch (const ArgumentError& e) {
        return e.argument();
      } catch (const std::exception& e) {
        return std::string("other exception: ") + e.what();
      }
      return "";
    };
    for (int twice = 0; twice < 2; ++twice) {
      EXPECT_EQ(argument([&] { gemm_fp8(host_ar, b, d); }), "a.data");
      EXPECT_EQ(argument([&] { gemm_fp8(a, ConstTensorRef(host_ar.data, DataType::uint8, n, k), d); }),
                "b.data");
      EXPECT_EQ(argument([&] { gemm_fp8(a, b, host_dr); }), "d.data");
      EXPECT_EQ(argument([&] { gemm_fp8(a, b, d, {1.0f, 1.0f, 1.0f, &host_scale}); }),
                "scales.scale_a_device");
      EXPECT_EQ(argument([&] { gemm_fp8(a, b, d, {1.0f, 1.0f, 1.0f, nullptr, &host_scale}); }),
                "scales.scale_b_device");
    }
    EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "a refusal leaves no CUDA error behind";
    gemm_fp8(a, b, d, {0.5f, 1.0f, 1.0f});
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<std::uint8_t> got(m * n * 2);
    ASSERT_EQ(cudaMemcpy(got.data(), dd, got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    std::uint64_t wrong = 0;
    for (std::uint64_t i = 0; i < m * n; ++i) wrong += out_to_float(DataType::bfloat16, &got[2 * i]) != 128.0f;
    EXPECT_EQ(wrong, 0u) << "the call after the refusals";
    cudaFree(da);
    cudaFree(db);
    cudaFree(dd);
  }
}

// Device-side scales (GemmScales::scale_a_device / scale_b_device): D equals, bit for bit,
// the D of the same call with the values passed as host scales; for the small-M kernel, the
// tiled kernel, split K and clusters. The scale written late by the kernel the GEMM follows
// as a dependent (it must read the scale after waiting), and a captured graph replayed with
// the scale changed between replays (each replay reads the value current then).
TEST(Gemm, DeviceSideScales) {
  TMAKIT_SKIP_WITHOUT_GPU();
  struct Shape {
    std::uint64_t m, n, k;
    int config, splits;
  };
  cudaStream_t stream = nullptr;  // not the legacy default stream (see GemmOverlapLaunch)
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  float* scales = nullptr;  // scale_a at [0], scale_b at [4]
  float* scales_src = nullptr;
  ASSERT_EQ(cudaMalloc(&scales, 8 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&scales_src, 8 * sizeof(float)), cudaSuccess);
  for (const Shape& sh : {Shape{16, 320, 1024, -1, 0}, Shape{100, 336, 1040, 3, 2},
                          Shape{256, 512, 1024, 1, 1}, Shape{128, 256, 2048, 5, 2},
                          Shape{300, 200, 512, 0, 0}, Shape{600, 256, 1024, 7, 0}}) {
    SCOPED_TRACE("M=" + std::to_string(sh.m) + " N=" + std::to_string(sh.n) +
                 " K=" + std::to_string(sh.k) + " config=" + std::to_string(sh.config));
    std::mt19937 gen(static_cast<std::uint32_t>(sh.m * 3 + sh.n));
    std::vector<std::uint8_t> ha(sh.m * sh.k), hb(sh.n * sh.k);
    random_e4m3(ha, sh.m, sh.k, sh.k, gen);
    random_e4m3(hb, sh.n, sh.k, sh.k, gen);
    void *da = nullptr, *db = nullptr, *dd = nullptr, *dw = nullptr;
    const std::uint64_t d_bytes = sh.m * sh.n * 2;
    ASSERT_EQ(cudaMalloc(&da, ha.size()), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&db, hb.size()), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&dd, d_bytes), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&dw, d_bytes), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(da, ha.data(), ha.size(), cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(db, hb.data(), hb.size(), cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const ConstTensorRef a(da, DataType::uint8, sh.m, sh.k), b(db, DataType::uint8, sh.n, sh.k);
    const TensorRef d(dd, DataType::bfloat16, sh.m, sh.n), want(dw, DataType::bfloat16, sh.m, sh.n);
    const GemmTuning tuning{sh.config, sh.splits};
    const auto set_scales = [&](float sa, float sb) {
      ASSERT_EQ(cudaMemcpyAsync(scales, &sa, 4, cudaMemcpyHostToDevice, stream), cudaSuccess);
      ASSERT_EQ(cudaMemcpyAsync(scales + 4, &sb, 4, cudaMemcpyHostToDevice, stream), cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);  // the host floats are locals
    };
    // D of the host-scaled call into `want`, then D (poisoned first) equal to it bit for bit
    const auto expect_same = [&](float sa, float sb, const std::string& what) {
      ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
      gemm_fp8(a, b, want, {0.5f, sa, sb}, stream, tuning);
      ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
      std::vector<std::uint8_t> got(d_bytes), ref(d_bytes);
      ASSERT_EQ(cudaMemcpy(got.data(), dd, d_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(ref.data(), dw, d_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
      std::uint64_t nonzero = 0;
      for (std::uint64_t i = 0; i + 1 < ref.size(); i += 2) nonzero += (ref[i] | (ref[i + 1] & 0x7F)) != 0;
      EXPECT_GT(nonzero, ref.size() / 4) << what << ": the reference D is mostly zero";
      EXPECT_EQ(got, ref) << what << ": D with device-side scales differs from host scales";
    };
    const auto poison_d = [&] {
      ASSERT_EQ(cudaMemsetAsync(dd, kPoison, d_bytes, stream), cudaSuccess);
    };
    // both on the device, then one of them
    set_scales(1.5f, 2.0f);
    poison_d();
    gemm_fp8(a, b, d, {0.5f, 1.0f, 1.0f, scales, scales + 4}, stream, tuning);
    expect_same(1.5f, 2.0f, "both device-side");
    poison_d();
    gemm_fp8(a, b, d, {0.5f, 1.0f, 2.0f, scales, nullptr}, stream, tuning);
    expect_same(1.5f, 2.0f, "scale_a device-side");
    poison_d();
    gemm_fp8(a, b, d, {0.5f, 1.5f, 1.0f, nullptr, scales + 4}, stream, tuning);
    expect_same(1.5f, 2.0f, "scale_b device-side");
    // written late by the kernel the GEMM overlaps: it must wait before reading the scale
    const float late[2] = {-0.75f, 0.0f};
    ASSERT_EQ(cudaMemcpy(scales_src, late, sizeof late, cudaMemcpyHostToDevice), cudaSuccess);
    set_scales(1.0f, 2.0f);
    poison_d();
    late_writer<<<1, 256, 0, stream>>>(reinterpret_cast<std::uint8_t*>(scales),
                                       reinterpret_cast<const std::uint8_t*>(scales_src), 4,
                                       kSpinNs);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    gemm_fp8(a, b, d, {0.5f, 1.0f, 1.0f, scales, scales + 4}, stream,
             {sh.config, sh.splits, true});
    expect_same(-0.75f, 2.0f, "scale_a written late by the kernel before");
    // captured once, replayed with the scale changed between replays
    cudaGraph_t graph = nullptr;
    ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
    gemm_fp8(a, b, d, {0.5f, 1.0f, 1.0f, scales, scales + 4}, stream, tuning);
    ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    for (const float sa : {1.5f, 3.0f, -0.25f}) {
      set_scales(sa, 0.5f);
      poison_d();
      ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
      expect_same(sa, 0.5f, "graph replay with scale_a = " + std::to_string(sa));
    }
    EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
    EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
    for (void* p : {da, db, dd, dw}) cudaFree(p);
  }
  cudaFree(scales);
  cudaFree(scales_src);
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace tmakit::test
