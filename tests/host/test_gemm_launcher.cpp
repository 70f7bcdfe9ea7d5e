// FP8 GEMM without a GPU: the launcher refuses bad input naming the argument (before any CUDA
// call; the pointers are never dereferenced), the e4m3 decoder, the CPU reference on a
// hand-checked case, and the per-shape plan.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "gemm/gemm_launch.hpp"
#include "gemm/gemm_plan.hpp"
#include "gemm/gemm_scale_runs.hpp"
#include "tmakit/core/cluster_launch.hpp"
#include "tmakit/kernels/gemm.hpp"
#include "refusal.hpp"

namespace tmakit {
namespace {

using test::fake;
using test::refused;

constexpr std::uintptr_t kA = 0x10000000, kB = 0x20000000, kD = 0x30000000;

struct Operands {
  TensorRef a{fake(kA), DataType::uint8, 64, 256};
  TensorRef b{fake(kB), DataType::uint8, 96, 256};
  TensorRef d{fake(kD), DataType::bfloat16, 64, 96};
};

TEST(GemmLauncher, NamesTheArgument) {
  Operands o;
  std::string msg;
  EXPECT_EQ(refused([&] { auto a = o.a; a.data = nullptr; gemm_fp8(a, o.b, o.d); }), "a.data");
  EXPECT_EQ(refused([&] { auto b = o.b; b.data = nullptr; gemm_fp8(o.a, b, o.d); }), "b.data");
  EXPECT_EQ(refused([&] { auto d = o.d; d.data = nullptr; gemm_fp8(o.a, o.b, d); }), "d.data");
  EXPECT_EQ(refused([&] { auto a = o.a; a.data = fake(kA + 8); gemm_fp8(a, o.b, o.d); }),
            "a.data");
  EXPECT_EQ(refused([&] { auto d = o.d; d.data = fake(kD + 2); gemm_fp8(o.a, o.b, d); }),
            "d.data");
  EXPECT_EQ(refused([&] { auto a = o.a; a.type = DataType::float16; gemm_fp8(a, o.b, o.d); }),
            "a.type");
  EXPECT_EQ(refused([&] { auto d = o.d; d.type = DataType::float32; gemm_fp8(o.a, o.b, d); }),
            "d.type");
  EXPECT_EQ(refused([&] { auto b = o.b; b.cols = 128; gemm_fp8(o.a, b, o.d); }), "b.cols");
  EXPECT_EQ(refused([&] { auto d = o.d; d.cols = 95; gemm_fp8(o.a, o.b, d); }), "d");
  EXPECT_EQ(refused([&] { auto d = o.d; d.rows = 0; gemm_fp8(o.a, o.b, d); }), "d");
  EXPECT_EQ(refused([&] { auto a = o.a; a.rows = 0; gemm_fp8(a, o.b, o.d); }), "a.rows");
  EXPECT_EQ(refused([&] { auto b = o.b; b.rows = 0; gemm_fp8(o.a, b, o.d); }), "b.rows");
  EXPECT_EQ(refused([&] { auto d = o.d; d.row_stride_bytes = 100; gemm_fp8(o.a, o.b, d); }),
            "d.row_stride_bytes");
  EXPECT_EQ(refused([&] { auto d = o.d; d.data = fake(kB); gemm_fp8(o.a, o.b, d); }), "d.data");
  EXPECT_EQ(refused([&] { gemm_fp8(o.a, o.b, o.d, {}, nullptr, {kGemmConfigs, 0}); }), "tuning.config");
  EXPECT_EQ(refused([&] { gemm_fp8(o.a, o.b, o.d, {}, nullptr, {-1, 3}); }), "tuning.splits");
  GemmTuning bad_mode;
  bad_mode.accumulation = static_cast<GemmAccumulation>(7);
  EXPECT_EQ(refused([&] { gemm_fp8(o.a, o.b, o.d, {}, nullptr, bad_mode); }),
            "tuning.accumulation");
  EXPECT_EQ(refused([&] { gemm_fp8_plan(64, 96, 256, 132, bad_mode); }), "tuning.accumulation");
  GemmTuning fast;
  fast.accumulation = GemmAccumulation::fast;
  EXPECT_NE(refused([&] { gemm_fp8(o.a, o.b, o.d, {}, nullptr, fast); }), "tuning.accumulation");
  // configuration 6 (128 x 256) accumulates fast only, and does not split K
  EXPECT_EQ(refused([&] { gemm_fp8(o.a, o.b, o.d, {}, nullptr, {6, 0}); }, &msg),
            "tuning.accumulation");
  EXPECT_NE(msg.find("fast"), std::string::npos) << msg;
  EXPECT_EQ(refused([&] { gemm_fp8_plan(4096, 4096, 4096, 132, {6, 0}); }), "tuning.accumulation");
  GemmTuning wide = fast;
  wide.config = 6;
  EXPECT_NE(refused([&] { gemm_fp8(o.a, o.b, o.d, {}, nullptr, wide); }), "tuning.accumulation");
  EXPECT_EQ(gemm_fp8_plan(4096, 4096, 4096, 132, wide).tiles, 32 * 16);
  // chosen for fast accumulation where its tiles fill 3/4 of the SMs, never for promotion
  // the ping-pong tiles: fast accumulation only, refused for promotion by name
  for (const char* name : {"m128n128pp", "m128n128ppd"}) {
    const std::string pingpong_refusal = [&] {
      try {
        gemm_fp8_plan(4096, 4096, 4096, 132, {gemm_config_id(name), 0});
      } catch (const ArgumentError& e) {
        EXPECT_EQ(e.argument(), "tuning.accumulation");
        return std::string(e.what());
      }
      return std::string("not refused");
    }();
    EXPECT_NE(pingpong_refusal.find(std::string(name) +
                                    " holds 128 fp32 sums per thread and has no registers to "
                                    "promote into"),
              std::string::npos)
        << pingpong_refusal;
  }
  EXPECT_EQ(gemm_fp8_plan(4096, 4096, 8192, 132, fast).config, 6);
  EXPECT_EQ(gemm_fp8_plan(1024, 4096, 4096, 132, fast).config, 6);   // 128 tiles
  // (at K <= 4096 with at least two 128 x 128 tiles per SM, the ping-pong tiles: C25)
  EXPECT_EQ(gemm_fp8_plan(4096, 4096, 4096, 132, fast).config, gemm_config_id("m128n128pp"));
  EXPECT_EQ(gemm_fp8_plan(128, 57344, 8192, 132, fast).config, 6);   // 224 tiles
  EXPECT_EQ(gemm_fp8_plan(512, 4096, 4096, 132, fast).config, 1);    // 64 tiles
  EXPECT_EQ(gemm_fp8_plan(16, 57344, 8192, 132, fast).config, 8);    // small M, 128-row tiles
  EXPECT_EQ(gemm_fp8_plan(16, 8192, 8192, 132, fast).config, 3);     // small M
  EXPECT_EQ(gemm_fp8_plan(4096, 4096, 4096, 132).config, 7);  // promoted: two-wave 256 x 128 tiles
  // tiles of twice 128 x 128 (configurations 6 and 7) only where their rounds on the SMs are
  // no longer than 128 x 128 tiles' (two of theirs against up to 33/32 of one)
  EXPECT_EQ(gemm_fp8_plan(768, 8192, 4096, 132).config, 1);        // 2 rounds of 192 vs 3 of 384
  EXPECT_EQ(gemm_fp8_plan(768, 8192, 8192, 132, fast).config, 1);  // the same for 128 x 256
  EXPECT_EQ(gemm_fp8_plan(768, 8192, 4096, 132, fast).config, gemm_config_id("m128n128pp"));  // C25
  EXPECT_EQ(gemm_fp8_plan(1024, 4096, 4096, 132).config, 7);       // 1 round of 128 vs 2 of 256
  EXPECT_EQ(gemm_fp8_plan(8192, 8192, 8192, 132).config, 7);       // 16 rounds vs 32
  EXPECT_EQ(gemm_fp8_plan(8192, 10240, 8192, 132).config, 7);      // 20 rounds vs 39
  EXPECT_EQ(gemm_fp8_plan(8192, 10240, 8192, 132, fast).config, 6);
  EXPECT_EQ(gemm_fp8_plan(4096, 7168, 2048, 132).config, 7);  // 7 rounds vs 14
  EXPECT_EQ(gemm_fp8_plan(2304, 8192, 4096, 132).config, 1);  // 5 rounds of 576 vs 9 of 1152
  wide.splits = 2;
  EXPECT_EQ(refused([&] { gemm_fp8(o.a, o.b, o.d, {}, nullptr, wide); }), "tuning.splits");
  EXPECT_EQ(refused([&] { gemm_fp8_plan(4096, 4096, 4096, 132, wide); }), "tuning.splits");
  // configuration 7 (256 x 128, two waves) runs both modes, does not split K, and stores D
  // with TMA only (D's rows whole 16-byte chunks)
  EXPECT_STREQ(gemm_config_name(7), "m256n128");
  GemmTuning waves_fast = fast;
  waves_fast.config = 7;
  EXPECT_EQ(gemm_fp8_plan(4096, 4096, 4096, 132, waves_fast).config, 7);
  EXPECT_EQ(refused([&] { gemm_fp8_plan(4096, 4096, 4096, 132, {7, 2}); }), "tuning.splits");
  EXPECT_EQ(gemm_fp8_plan(300, 200, 512, 132, {7, 0}).grid, 4u);  // 2 x 2 tiles
  EXPECT_EQ(gemm_fp8_plan(4096, 4096, 4096, 132, {7, 0}).tiles, 16 * 32);
  EXPECT_EQ(gemm_fp8_plan(4096, 4096, 4096, 132, {7, 1}).splits, 1);
  auto odd_d = o.d;  // N = 96 here: whole chunks; a pitch of 200 bytes is not
  odd_d.row_stride_bytes = 200;
  EXPECT_EQ(refused([&] { gemm_fp8(o.a, o.b, odd_d, {}, nullptr, {7, 0}); }, &msg),
            "tuning.config");
  EXPECT_NE(msg.find("16-byte chunks"), std::string::npos) << msg;
  EXPECT_NE(refused([&] { gemm_fp8(o.a, o.b, odd_d, {}, nullptr, {-1, 0}); }), "tuning.config");
  // configuration 10 (128 x 256, two waves along N) the same
  EXPECT_STREQ(gemm_config_name(10), "m128n256w");
  EXPECT_EQ(refused(
                [&] {
                  gemm_fp8(o.a, o.b, odd_d, {}, nullptr, {10, 0});
                },
                &msg),
            "tuning.config");
  EXPECT_NE(msg.find("16-byte chunks"), std::string::npos) << msg;
  EXPECT_EQ(gemm_fp8_plan(300, 600, 512, 132, {10, 0}).grid, 9u);  // 3 x 3 tiles
}

// The small-M configuration's own rules (M <= 128; clusters of 1, 2, 4 or 8 along K) are
// checked before any CUDA call too: forced, and for M <= 64, which always runs it.
TEST(GemmLauncher, SmallMTuningRefusedWithoutAGpu) {
  Operands o;
  auto a = o.a, b = o.b;
  a.cols = b.cols = 1024;  // 8 k-blocks: 3 splits pass the general rule
  auto d = o.d;
  std::string msg;
  EXPECT_EQ(refused([&] { gemm_fp8(a, b, d, {}, nullptr, {3, 3}); }, &msg), "tuning.splits");
  EXPECT_NE(msg.find("1, 2, 4 or 8"), std::string::npos) << msg;
  EXPECT_EQ(refused([&] { gemm_fp8(a, b, d, {}, nullptr, {-1, 3}); }, &msg), "tuning.splits");
  EXPECT_NE(msg.find("(tuning.config -1: the plan takes smallm for M <= 64)"), std::string::npos)
      << msg;
  EXPECT_EQ(refused([&] { gemm_fp8(a, b, d, {}, nullptr, {3, 16}); }), "tuning.splits");
  a.rows = d.rows = 200;
  EXPECT_EQ(refused([&] { gemm_fp8(a, b, d, {}, nullptr, {3, 0}); }, &msg), "tuning.config");
  EXPECT_NE(msg.find("M <= 128"), std::string::npos) << msg;
}

TEST(GemmLauncher, KMustBeAMultipleOf16) {
  Operands o;
  for (std::uint64_t k : {1u, 8u, 15u, 17u, 40u, 4095u}) {
    auto a = o.a;
    auto b = o.b;
    a.cols = b.cols = k;
    a.row_stride_bytes = b.row_stride_bytes = (k + 15) / 16 * 16;  // legal pitch
    std::string msg;
    EXPECT_EQ(refused([&] { gemm_fp8(a, b, o.d); }, &msg), "a.cols") << "K = " << k;
    EXPECT_NE(msg.find("multiple of 16"), std::string::npos) << msg;
  }
}

// A dense K of 24 also gives rows of 24 bytes, which TMA cannot stride: the error must be
// about K (padding K is the fix), not the stride, and likewise with M = 1.
TEST(GemmLauncher, UnalignedKIsNamedBeforeTheStride) {
  Operands o;
  for (std::uint64_t m : {64u, 1u}) {
    auto a = o.a;
    auto b = o.b;
    auto d = o.d;
    a.rows = d.rows = m;
    a.cols = b.cols = 24;
    std::string msg;
    EXPECT_EQ(refused([&] { gemm_fp8(a, b, d); }, &msg), "a.cols") << "M = " << m;
    EXPECT_NE(msg.find("pad K"), std::string::npos) << msg;
  }
  // K of B differing is named before B's own stride is judged
  auto b = o.b;
  b.cols = 40;
  EXPECT_EQ(refused([&] { gemm_fp8(o.a, b, o.d); }), "b.cols");
}

// D is not a TMA operand of every call, but its stride and span are still bounded: a stride
// of 2^40 or more is refused by name, and a span that would wrap 64 bits cannot hide an
// overlap with A.
TEST(GemmLauncher, DStrideAndSpanAreBounded) {
  Operands o;
  for (std::uint64_t stride : {1ull << 40, 1ull << 62}) {
    auto d = o.d;
    d.row_stride_bytes = stride;
    EXPECT_EQ(refused([&] { gemm_fp8(o.a, o.b, d); }), "d.row_stride_bytes") << stride;
  }
  // 5 rows of D 2^39 bytes apart span 2^41 bytes: fine alone, but A sits inside row 1
  auto d = o.d;
  d.rows = 5;
  d.row_stride_bytes = 1ull << 39;
  auto a = o.a;
  a.rows = 5;
  a.data = fake(kD + (1ull << 39) + 4096);
  EXPECT_EQ(refused([&] { gemm_fp8(a, o.b, d); }), "d.data");
  // a type is named as such, before K's rule (FLOAT16 with 8 columns is 16 bytes a row)
  auto f16 = o.a;
  f16.type = DataType::float16;
  f16.cols = 8;
  auto b8 = o.b;
  b8.cols = 8;
  EXPECT_EQ(refused([&] { gemm_fp8(f16, b8, o.d); }), "a.type");
}

TEST(GemmLauncher, ThePlanRefusesExtentsPastWhatGemmTakes) {
  std::string msg;
  EXPECT_EQ(refused([] { gemm_fp8_plan(2147483648u, 4096, 4096, 132); }, &msg), "m");
  EXPECT_EQ(msg, "m: 2147483648 exceeds 2^31 - 4096, the largest extent gemm_fp8 takes");
  EXPECT_EQ(refused([] { gemm_fp8_plan(64, ~std::uint64_t{0}, 64, 132); }), "n");
  EXPECT_EQ(refused([] { gemm_fp8_plan(~std::uint64_t{0}, 64, 64, 132); }), "m");
  EXPECT_EQ(refused([] { gemm_fp8_plan(64, 64, std::uint64_t{1} << 40, 132); }), "k");
  EXPECT_GT(gemm_fp8_plan((1u << 31) - 4096, 64, 64, 132).tiles, 0);
}

TEST(GemmLauncher, ScalesMustGiveAFiniteFloat) {
  Operands o;
  std::string msg;
  // 1e30 * 1e30 overflows float on its way; the product is formed in double, and it is the
  // result, 1e60, that no float holds
  EXPECT_EQ(refused([&] { gemm_fp8(o.a, o.b, o.d, {1e30f, 1e30f, 1.0f}); }, &msg), "scales");
  EXPECT_NE(msg.find("float"), std::string::npos) << msg;
  EXPECT_EQ(refused([&] { gemm_fp8(o.a, o.b, o.d, {1e-30f, 1e-30f, 1e-30f}); }), "scales");
  EXPECT_EQ(refused([&] { gemm_fp8(o.a, o.b, o.d, {std::nanf(""), 1.0f, 1.0f}); }), "scales");
  // a zero alpha is a legitimate request (D = 0), and 1e30 * 1e30 * 1e-30 is 1e30 in float:
  // both get past validation, to the first CUDA call (no GPU here)
  EXPECT_NE(refused([&] { gemm_fp8(o.a, o.b, o.d, {0.0f, 1.0f, 1.0f}); }), "scales");
  EXPECT_NE(refused([&] { gemm_fp8(o.a, o.b, o.d, {1e30f, 1e30f, 1e-30f}); }), "scales");
}

// Device-side scales: a pointer the kernel could not read as a float, or one given beside a
// host value it would silently replace, is refused by name before any CUDA call; good ones
// get past validation (to the first CUDA call: no GPU here).
TEST(GemmLauncher, DeviceSideScalesAreChecked) {
  Operands o;
  const auto* scale = static_cast<const float*>(fake(0x40000000));
  const auto* misaligned = static_cast<const float*>(fake(0x40000002));
  std::string msg;
  EXPECT_EQ(refused([&] { gemm_fp8(o.a, o.b, o.d, {1.0f, 1.0f, 1.0f, misaligned, nullptr}); },
                    &msg),
            "scales.scale_a_device");
  EXPECT_NE(msg.find("4-byte aligned"), std::string::npos) << msg;
  EXPECT_EQ(refused([&] { gemm_fp8(o.a, o.b, o.d, {1.0f, 1.0f, 1.0f, nullptr, misaligned}); }),
            "scales.scale_b_device");
  EXPECT_EQ(refused([&] { gemm_fp8(o.a, o.b, o.d, {1.0f, 2.0f, 1.0f, scale, nullptr}); }, &msg),
            "scales.scale_a");
  EXPECT_NE(msg.find("replaces"), std::string::npos) << msg;
  EXPECT_EQ(refused([&] { gemm_fp8(o.a, o.b, o.d, {1.0f, 1.0f, 0.5f, scale, scale}); }),
            "scales.scale_b");
  // the host part is still checked: alpha alone must be a usable float
  EXPECT_EQ(refused([&] { gemm_fp8(o.a, o.b, o.d, {std::nanf(""), 1.0f, 1.0f, scale, scale}); }),
            "scales");
  // a host scale beside the other's device pointer is fine
  for (const GemmScales& ok : {GemmScales{0.5f, 1.0f, 1.0f, scale, scale},
                               GemmScales{0.5f, 3.0f, 1.0f, nullptr, scale},
                               GemmScales{0.5f, 1.0f, 3.0f, scale, nullptr}}) {
    const std::string argument = refused([&] { gemm_fp8(o.a, o.b, o.d, ok); });
    EXPECT_EQ(argument.rfind("scales", 0), std::string::npos) << argument;
  }
}

// Row-wise and 128-block scales: the arrays, their strides, the accumulation and a forced
// configuration are checked by name before any CUDA call; good ones get past validation.
TEST(GemmLauncher, ScaleRecipesAreChecked) {
  Operands o;
  const auto* sa = static_cast<const float*>(fake(0x40000000));
  const auto* sb = static_cast<const float*>(fake(0x50000000));
  const auto recipe_scales = [&](GemmScaleRecipe r) {
    GemmScales s;
    s.recipe = r;
    s.scale_a_device = sa;
    s.scale_b_device = sb;
    return s;
  };
  std::string msg;
  for (GemmScaleRecipe r : {GemmScaleRecipe::row, GemmScaleRecipe::block}) {
    GemmScales s = recipe_scales(r);
    s.scale_a_device = nullptr;
    EXPECT_EQ(refused([&] { gemm_fp8(o.a, o.b, o.d, s); }, &msg), "scales.scale_a_device");
    EXPECT_NE(msg.find("is null"), std::string::npos) << msg;
    s = recipe_scales(r);
    s.scale_b_device = nullptr;
    EXPECT_EQ(refused([&] { gemm_fp8(o.a, o.b, o.d, s); }), "scales.scale_b_device");
    s = recipe_scales(r);
    s.scale_a = 2.0f;  // replaced by the array: refused rather than ignored
    EXPECT_EQ(refused([&] { gemm_fp8(o.a, o.b, o.d, s); }), "scales.scale_a");
    s = recipe_scales(r);
    s.scale_b_strides = {-2, 1};
    EXPECT_EQ(refused([&] { gemm_fp8(o.a, o.b, o.d, s); }, &msg), "scales.scale_b_strides");
    EXPECT_NE(msg.find("{-2, 1}"), std::string::npos) << msg;
    s = recipe_scales(r);
    s.scale_a_strides = {std::int64_t{1} << 47, 1};
    EXPECT_EQ(refused([&] { gemm_fp8(o.a, o.b, o.d, s); }, &msg), "scales.scale_a_strides");
    EXPECT_NE(msg.find("2^46 floats"), std::string::npos) << msg;
    s = recipe_scales(r);
    s.alpha = std::nanf("");
    EXPECT_EQ(refused([&] { gemm_fp8(o.a, o.b, o.d, s); }), "scales.alpha");
    // good arrays (any strides >= 0, 0 repeating a value) reach the first CUDA call
    s = recipe_scales(r);
    s.scale_a_strides = {0, 0};
    const std::string argument = refused([&] { gemm_fp8(o.a, o.b, o.d, s); });
    EXPECT_EQ(argument.rfind("scales", 0), std::string::npos) << argument;
    // {mn, -1}: row scales' k is never followed (the quantizer's row layout); block scales'
    // is, and -1 alone there is refused
    s = recipe_scales(r);
    s.scale_a_strides = {1, -1};
    s.scale_b_strides = {1, -1};
    const std::string row_layout = refused([&] { gemm_fp8(o.a, o.b, o.d, s); });
    if (r == GemmScaleRecipe::row) {
      EXPECT_EQ(row_layout.rfind("scales", 0), std::string::npos) << row_layout;
    } else {
      EXPECT_EQ(row_layout, "scales.scale_a_strides");
    }
  }
  GemmScales block = recipe_scales(GemmScaleRecipe::block);
  GemmTuning fast;
  fast.accumulation = GemmAccumulation::fast;
  EXPECT_EQ(refused([&] { gemm_fp8(o.a, o.b, o.d, block, nullptr, fast); }, &msg),
            "tuning.accumulation");
  EXPECT_NE(msg.find("promoted"), std::string::npos) << msg;
  for (const char* name : {"m128n144", "m128n80", "smallm"}) {
    GemmTuning forced;
    forced.config = gemm_config_id(name);
    EXPECT_EQ(refused([&] { gemm_fp8(o.a, o.b, o.d, block, nullptr, forced); }, &msg),
              "tuning.config")
        << name;
    EXPECT_NE(msg.find("m64n32, m64n64, m64n128, m128n128 or m128n192"), std::string::npos) << msg;
  }
  // the two-wave kernel's configurations: where TMA loads scale_a (torch's M-major layout, M a
  // multiple of 4, aligned) they reach the first CUDA call; row-major, they are refused
  GemmScales block_rows = block;
  block_rows.scale_a_strides = {static_cast<std::int64_t>((o.a.cols + 127) / 128), 1};
  for (const char* name : {"m256n128", "m128n256w", "m192n128"}) {
    GemmTuning forced;
    forced.config = gemm_config_id(name);
    const std::string argument =
        refused([&] { gemm_fp8(o.a, o.b, o.d, block, nullptr, forced); });
    EXPECT_EQ(argument.rfind("tuning", 0), std::string::npos) << name << ": " << argument;
    EXPECT_EQ(refused([&] { gemm_fp8(o.a, o.b, o.d, block_rows, nullptr, forced); }, &msg),
              "tuning.config")
        << name;
    EXPECT_NE(msg.find("only where TMA loads scale_a"), std::string::npos) << msg;
  }
  GemmScales bad = block;
  bad.recipe = static_cast<GemmScaleRecipe>(7);
  EXPECT_EQ(refused([&] { gemm_fp8(o.a, o.b, o.d, bad); }), "scales.recipe");
  // row-wise scales run in every configuration, fast accumulation too
  GemmTuning wide;
  wide.config = gemm_config_id("m128n256");
  wide.accumulation = GemmAccumulation::fast;
  const std::string argument =
      refused([&] { gemm_fp8(o.a, o.b, o.d, recipe_scales(GemmScaleRecipe::row), nullptr, wide); });
  EXPECT_EQ(argument.rfind("scales", 0), std::string::npos) << argument;
  EXPECT_NE(argument, "tuning.config");
}

// D is written while the device scales are read: scales inside D's span are refused, named,
// for every recipe (a race that would give timing-dependent D); beside it they are taken.
TEST(GemmLauncher, DeviceScalesMustNotOverlapD) {
  Operands o;  // D: 64 x 96 bf16 at kD, 12288 bytes
  const auto* inside = static_cast<const float*>(fake(kD + 4096));
  const auto* last_bytes = static_cast<const float*>(fake(kD + 64 * 96 * 2 - 4));
  const auto* apart = static_cast<const float*>(fake(0x40000000));
  const auto* just_past = static_cast<const float*>(fake(kD + 64 * 96 * 2));
  std::string msg;
  EXPECT_EQ(refused([&] { gemm_fp8(o.a, o.b, o.d, {1.0f, 1.0f, 1.0f, inside, nullptr}); }, &msg),
            "scales.scale_a_device");
  EXPECT_NE(msg.find("overlaps d"), std::string::npos) << msg;
  EXPECT_EQ(refused([&] { gemm_fp8(o.a, o.b, o.d, {1.0f, 1.0f, 1.0f, nullptr, last_bytes}); }),
            "scales.scale_b_device");
  for (GemmScaleRecipe r : {GemmScaleRecipe::row, GemmScaleRecipe::block}) {
    SCOPED_TRACE(static_cast<int>(r));
    GemmScales s;
    s.recipe = r;
    s.scale_a_device = inside;
    s.scale_b_device = apart;
    EXPECT_EQ(refused([&] { gemm_fp8(o.a, o.b, o.d, s); }), "scales.scale_a_device");
    s.scale_a_device = apart;
    s.scale_b_device = inside;
    EXPECT_EQ(refused([&] { gemm_fp8(o.a, o.b, o.d, s); }), "scales.scale_b_device");
    // an array that starts before D and reaches into it (scale_a's M rows 4 KB apart)
    s.scale_b_device = apart;
    s.scale_a_device = static_cast<const float*>(fake(kD - 8192));
    s.scale_a_strides = {1024, 1};
    EXPECT_EQ(refused([&] { gemm_fp8(o.a, o.b, o.d, s); }), "scales.scale_a_device");
    // right after D's last byte: apart (past the checks; no GPU here)
    s.scale_a_strides = {-1, -1};
    s.scale_a_device = just_past;
    const std::string argument = refused([&] { gemm_fp8(o.a, o.b, o.d, s); });
    EXPECT_EQ(argument.rfind("scales", 0), std::string::npos) << argument;
  }
}

// The kernels number units in 32 bits: a D of more tiles (past any device's memory, within
// check_span's 2^48 bytes) is refused by the plan, named, rather than wrapped.
TEST(GemmPlan, UnitsPast32BitsAreRefused) {
  GemmProblem q;
  q.m = (1ull << 31) - 4096;
  q.n = 1ull << 20;
  q.k = 128;
  q.sm_count = 132;
  std::string msg;
  EXPECT_EQ(refused([&] { (void)gemm_fp8_plan(q); }, &msg), "n");
  EXPECT_NE(msg.find("32 bits"), std::string::npos) << msg;
  q.n = 4096;  // 2^24 tiles of 128 x 128 at most: planned
  EXPECT_GT(gemm_fp8_plan(q).tiles, 0);
  // the same with 8 splits asked for: the splits are what to change, and named so
  q.k = 16384;
  q.tuning.splits = 8;
  EXPECT_EQ(refused([&] { (void)gemm_fp8_plan(q); }, &msg), "tuning.splits");
  EXPECT_NE(msg.find("ask for fewer splits, or none (0)"), std::string::npos) << msg;
  // tiles x splits past 2^63 (2^46 tiles, 2^18 splits) are refused, not wrapped to 0 units
  q.m = q.n = 1ull << 30;
  q.k = 1ull << 25;
  q.tuning = GemmTuning{gemm_config_id("m128n128"), 1 << 18};
  EXPECT_EQ(refused([&] { (void)gemm_fp8_plan(q); }), "n");
  GemmPlan wide{};
  wide.tiles = wide.split_tiles = std::int64_t{1} << 46;
  wide.splits = 1 << 18;
  EXPECT_EQ(detail::gemm::plan_units(wide), INT64_MAX);
}

// The check without addresses (what the Python binding's fake implementation runs) refuses,
// before any CUDA call, what every plan would: the fewest tiles any configuration makes of
// D, or those of the configuration asked for in the splits asked for, past 32 bits.
TEST(GemmLauncher, TheCheckWithoutAddressesRefusesUnitsPast32Bits) {
  Operands o;
  auto a = o.a, b = o.b, d = o.d;
  a.rows = d.rows = b.rows = d.cols = 1ull << 23;  // 2^46 outputs: 2^31 tiles of the largest
  a.cols = b.cols = 16;
  a.data = b.data = d.data = nullptr;
  std::string msg;
  EXPECT_EQ(refused([&] { gemm_fp8_check_shapes(a, b, d); }, &msg), "n");
  EXPECT_EQ(msg, "n: M x N = 8388608 x 8388608 makes 2147483648 tiles of configuration "
                 "m128n256 (the fewest of any configuration), more than the kernels number in "
                 "32 bits (2^31 - 1)");
  a.data = fake(std::uintptr_t{1} << 49);
  b.data = fake(std::uintptr_t{2} << 49);
  d.data = fake(std::uintptr_t{3} << 49);
  EXPECT_EQ(refused([&] { gemm_fp8(a, b, d); }), "n");  // (the same, before any CUDA call)
  a.rows = d.rows = b.rows = d.cols = 83072;
  a.cols = b.cols = 83072;
  const GemmTuning many{gemm_config_id("m64n32"), 649};
  EXPECT_EQ(refused([&] { gemm_fp8_check_shapes(a, b, d, GemmScales{}, many); }, &msg),
            "tuning.splits");
  EXPECT_NE(msg.find("3369608 tiles of configuration m64n32, each in 649 splits"),
            std::string::npos) << msg;
}

TEST(GemmLauncher, ExtentsBeyondTileCoordinatesAreRefused) {
  Operands o;
  auto a = o.a;
  auto d = o.d;
  a.rows = d.rows = (1ull << 31) - 1;  // a legal TMA extent, past the kernels' tile walk
  std::string msg;
  EXPECT_EQ(refused([&] { gemm_fp8(a, o.b, d); }, &msg), "a.rows");
  EXPECT_NE(msg.find("32-bit"), std::string::npos) << msg;
}

// The small-M kernel's plan (gemm_plan.hpp): pure functions of the shape and the device.
TEST(GemmPlan, SmallMPaddingSplitsAndPrefetch) {
  using namespace detail::gemm;
  EXPECT_EQ(small_m_padded(1), 8);
  EXPECT_EQ(small_m_padded(8), 8);
  EXPECT_EQ(small_m_padded(9), 16);
  EXPECT_EQ(small_m_padded(37), 64);
  EXPECT_EQ(small_m_padded(128), 128);
  EXPECT_EQ(small_m_padded(129), 0);  // not the small-M kernel's
  // clusters only while the CTAs stay within half of the SMs (132 here): N = 4096 is 64
  // tiles of 64 rows, so one CTA per tile; N = 1024 (16 tiles) takes clusters of 4 (64 CTAs)
  EXPECT_EQ(small_m_splits(4096, 32, 132), 1);
  EXPECT_EQ(small_m_splits(1024, 32, 132), 4);
  EXPECT_EQ(small_m_splits(512, 32, 132), 8);
  EXPECT_EQ(small_m_splits(512, 2, 132), 2);  // never more splits than k-blocks
  EXPECT_EQ(small_m_splits(64, 1, 132), 1);
  // prefetch depth: 4 k-blocks in clusters; at one CTA per tile on H100-class memory 4 for
  // 16 < M <= 64 and 2 above, none at M <= 16 or on H200-class memory; at most half a rank's
  constexpr double h100 = 3.35e12, h200 = 4.8e12;
  constexpr int rows = row(config::smallm).block_n;
  EXPECT_EQ(small_m_prefetch(16, 32, 4, rows, h200), 4);
  EXPECT_EQ(small_m_prefetch(16, 6, 4, rows, h100), 3);
  EXPECT_EQ(small_m_prefetch(16, 32, 1, rows, h100), 0);
  EXPECT_EQ(small_m_prefetch(32, 32, 1, rows, h100), 4);
  EXPECT_EQ(small_m_prefetch(128, 32, 1, rows, h100), 2);
  EXPECT_EQ(small_m_prefetch(64, 32, 1, rows, h200), 0);
}

// Splits asked for with no configuration forced (rule K1): the plan keeps to the
// configurations that take that many, where its rules would otherwise pick tiles that refuse
// them (the two-wave kernels split no K; the small-M kernel only in clusters of 1, 2, 4, 8).
TEST(GemmPlan, SplitsAskedForChooseTilesThatTakeThem) {
  struct Case {
    std::uint64_t m, n, k;
    int splits;
  };
  for (const Case c : {Case{4096, 4096, 4096, 2}, Case{4096, 7168, 16384, 8},
                       Case{4096, 24576, 1536, 2}, Case{128, 7168, 7168, 3},
                       Case{128, 7168, 7168, 2}, Case{100, 4096, 4096, 3}}) {
    for (const auto acc : {GemmAccumulation::promoted, GemmAccumulation::fast}) {
      GemmTuning t;
      t.splits = c.splits;
      t.accumulation = acc;
      const GemmPlan p = gemm_fp8_plan(c.m, c.n, c.k, 132, t);
      const std::string at = std::to_string(c.m) + " x " + std::to_string(c.n) + " x " +
                             std::to_string(c.k) + ", splits " + std::to_string(c.splits);
      EXPECT_EQ(p.splits, c.splits) << at;
      EXPECT_TRUE(gemm_config_info(p.config).splits_k) << at << ": " << gemm_config_name(p.config);
      EXPECT_STREQ(p.splits_rule, "K1") << at;
    }
  }
  // 128-block scales at M <= 64 never run the small-M kernel, so its rule for the splits
  // (clusters of 1, 2, 4 or 8) does not apply: 3 splits are planned on tiles that take them
  for (const std::uint64_t m : {1ull, 37ull, 64ull}) {
    GemmProblem q;
    q.m = m;
    q.n = 4096;
    q.k = 4096;
    q.sm_count = 132;
    q.tuning.splits = 3;
    q.recipe = GemmScaleRecipe::block;
    const GemmPlan p = gemm_fp8_plan(q);
    EXPECT_EQ(p.splits, 3) << m;
    EXPECT_TRUE(gemm_config_info(p.config).splits_k) << m << ": " << gemm_config_name(p.config);
    q.recipe = GemmScaleRecipe::tensor;  // (the small-M kernel's rule, named)
    EXPECT_EQ(refused([&] { gemm_fp8_plan(q); }), "tuning.splits") << m;
  }
  // 4096^3 takes the two-wave m256n128 when nothing is asked for; forced, it still refuses
  EXPECT_STREQ(gemm_config_name(gemm_fp8_plan(4096, 4096, 4096, 132).config), "m256n128");
  EXPECT_EQ(refused([] {
              gemm_fp8_plan(4096, 4096, 4096, 132, {gemm_config_id("m256n128"), 2});
            }),
            "tuning.splits");
}

TEST(GemmPlan, RefusesEmptyShapesAndBadKnobs) {
  EXPECT_EQ(refused([] { gemm_fp8_plan(0, 4096, 4096, 132); }), "m");
  EXPECT_EQ(refused([] { gemm_fp8_plan(64, 0, 4096, 132); }), "n");
  EXPECT_EQ(refused([] { gemm_fp8_plan(64, 4096, 0, 132); }), "k");
  EXPECT_EQ(refused([] { gemm_fp8_plan(64, 4096, 4096, 0); }), "sm_count");
  EXPECT_EQ(refused([] { gemm_fp8_plan(64, 4096, 4096, 132, {-1, -7}); }), "tuning.splits");
  EXPECT_EQ(refused([] { gemm_fp8_plan(64, 4096, 4096, 132, {-1, 33}); }), "tuning.splits");
  EXPECT_EQ(refused([] { gemm_fp8_plan(1024, 4096, 4096, 132, {1, 32}); }), "");
}

TEST(GemmReference, RefusesWhatTheKernelRefuses) {
  std::vector<std::uint8_t> a(4 * 32, 0x38), b(4 * 32, 0x38);
  std::vector<float> d(16);
  const ConstTensorRef ra(a.data(), DataType::uint8, 4, 32);
  const ConstTensorRef rb16(b.data(), DataType::uint8, 4, 16);
  const ConstTensorRef rb(b.data(), DataType::uint8, 4, 32);
  EXPECT_EQ(refused([&] { reference::gemm_fp8(ra, rb16, d.data(), {}); }), "b.cols");
  EXPECT_EQ(refused([&] { reference::gemm_fp8(ra, rb, nullptr, {}); }), "d_out");
  EXPECT_EQ(refused([&] {
              reference::gemm_fp8(ConstTensorRef(nullptr, DataType::uint8, 4, 32), rb, d.data(),
                                  {});
            }),
            "a.data");
  EXPECT_EQ(refused([&] {
              reference::gemm_fp8(ConstTensorRef(a.data(), DataType::float16, 4, 16), rb,
                                  d.data(), {});
            }),
            "a.type");
  EXPECT_EQ(refused([&] {
              reference::gemm_fp8(ConstTensorRef(a.data(), DataType::uint8, 4, 32, 16), rb,
                                  d.data(), {});
            }),
            "a.row_stride_bytes");
  EXPECT_EQ(refused([&] { reference::gemm_fp8(ra, rb, d.data(), {1e30f, 1e30f, 1.0f}); }),
            "scales");
  // device-side scales: the reference reads host memory only
  const float one = 1.0f;
  EXPECT_EQ(refused([&] { reference::gemm_fp8(ra, rb, d.data(), {1.0f, 1.0f, 1.0f, &one}); }),
            "scales.scale_a_device");
  EXPECT_EQ(refused([&] {
              reference::gemm_fp8(ra, rb, d.data(), {1.0f, 1.0f, 1.0f, nullptr, &one});
            }),
            "scales.scale_b_device");
  // and computes when all is well: 32 products of 1 x 1
  EXPECT_EQ(refused([&] { reference::gemm_fp8(ra, rb, d.data(), {}); }), "");
  EXPECT_EQ(d[0], 32.0f);
}

TEST(GemmReference, E4m3Decode) {
  EXPECT_EQ(reference::e4m3_to_float(0x00), 0.0f);
  EXPECT_EQ(reference::e4m3_to_float(0x38), 1.0f);          // exponent 7 = bias
  EXPECT_EQ(reference::e4m3_to_float(0xB8), -1.0f);
  EXPECT_EQ(reference::e4m3_to_float(0x7E), 448.0f);        // largest finite
  EXPECT_EQ(reference::e4m3_to_float(0x01), 0.001953125f);  // smallest subnormal 2^-9
  EXPECT_EQ(reference::e4m3_to_float(0x08), 0.015625f);     // smallest normal 2^-6
  EXPECT_TRUE(std::isnan(reference::e4m3_to_float(0x7F)));
  EXPECT_TRUE(std::isnan(reference::e4m3_to_float(0xFF)));
}

// Row-wise and 128-block scales in the reference: hand-checked. A = [[1, 2], [-0.5, 448]] and
// B = [[1, 1], [2, -1]] in the first 2 of K = 256 (so A B^T = [[3, 0], [447.5, -449]]), and
// for the block case a second k-block with A[0][128] = 1, B[0][128] = 2, B[1][128] = 1.
TEST(GemmReference, RowAndBlockScales) {
  std::vector<std::uint8_t> a(2 * 256, 0), b(2 * 256, 0);
  a[0] = 0x38; a[1] = 0x40;        // 1, 2
  a[256] = 0xB0; a[257] = 0x7E;    // -0.5, 448
  b[0] = 0x38; b[1] = 0x38;        // 1, 1
  b[256] = 0x40; b[257] = 0xB8;    // 2, -1
  const ConstTensorRef av(a.data(), DataType::uint8, 2, 256), bv(b.data(), DataType::uint8, 2, 256);
  float d[4];
  GemmScales row;
  row.recipe = GemmScaleRecipe::row;
  row.alpha = 2.0f;
  const float row_a[2] = {1.0f, 0.25f}, row_b[2] = {0.5f, 4.0f};
  row.scale_a_device = row_a;
  row.scale_b_device = row_b;
  reference::gemm_fp8(av, bv, d, row);
  EXPECT_EQ(d[0], 3.0f * 2.0f * 1.0f * 0.5f);
  EXPECT_EQ(d[1], 0.0f);
  EXPECT_EQ(d[2], 447.5f * 2.0f * 0.25f * 0.5f);
  EXPECT_EQ(d[3], -449.0f * 2.0f * 0.25f * 4.0f);

  a[128] = 0x38;   // A[0][128] = 1
  b[128] = 0x40;   // B[0][128] = 2
  b[384] = 0x38;   // B[1][128] = 1
  // scale_a M x 2 (torch's M-major layout: [m + 2 kb]), scale_b 1 x 2 (row-major)
  const float block_a[4] = {1.0f, 0.5f, 8.0f, 2.0f}, block_b[2] = {0.25f, 4.0f};
  GemmScales block;
  block.recipe = GemmScaleRecipe::block;
  block.alpha = 0.5f;
  block.scale_a_device = block_a;
  block.scale_b_device = block_b;
  reference::gemm_fp8(av, bv, d, block);
  // D[m][n] = alpha * sum over kb of part[kb] * a[m][kb] * b[0][kb]
  EXPECT_EQ(d[0], 0.5f * (3.0f * 1.0f * 0.25f + 2.0f * 8.0f * 4.0f));
  EXPECT_EQ(d[1], 0.5f * (0.0f + 1.0f * 8.0f * 4.0f));
  EXPECT_EQ(d[2], 0.5f * (447.5f * 0.5f * 0.25f));
  EXPECT_EQ(d[3], 0.5f * (-449.0f * 0.5f * 0.25f));
  // the same arrays through explicit strides: scale_a row-major (mn = 2, k = 1)
  const float block_a_rows[4] = {1.0f, 8.0f, 0.5f, 2.0f};
  block.scale_a_device = block_a_rows;
  block.scale_a_strides = {2, 1};
  float e[4];
  reference::gemm_fp8(av, bv, e, block);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(e[i], d[i]) << i;
}

TEST(GemmReference, HandCheckedProduct) {
  // A = [[1, 2], [-0.5, 448]] (2 x 16, rest zeros), B = [[1, 1], [2, -1]] -> D = A B^T
  std::vector<std::uint8_t> a(2 * 16, 0), b(2 * 16, 0);
  a[0] = 0x38; a[1] = 0x40;      // 1, 2
  a[16] = 0xB0; a[17] = 0x7E;    // -0.5, 448
  b[0] = 0x38; b[1] = 0x38;      // 1, 1
  b[16] = 0x40; b[17] = 0xB8;    // 2, -1
  float d[4];
  reference::gemm_fp8(ConstTensorRef(a.data(), DataType::uint8, 2, 16),
                      ConstTensorRef(b.data(), DataType::uint8, 2, 16), d, {2.0f, 0.5f, 1.0f});
  EXPECT_EQ(d[0], 3.0f);
  EXPECT_EQ(d[1], 0.0f);
  EXPECT_EQ(d[2], 447.5f);
  EXPECT_EQ(d[3], -449.0f);
}

TEST(GemmPlan, SmallMSplitsKToFillTheGpu) {
  // M <= 128, N = K = 4096 on 132 SMs: one CTA per 64 rows of B, half the SMs, no split
  // M <= 64: the small-M kernel, 64 rows of B per CTA (64 tiles: half the SMs, no split)
  const GemmPlan p1 = gemm_fp8_plan(1, 4096, 4096, 132);
  EXPECT_STREQ(gemm_config_name(p1.config), "smallm");
  EXPECT_EQ(p1.tiles, 64);
  EXPECT_EQ(p1.splits, 1);
  EXPECT_EQ(p1.grid, 64u);
  // fewer tiles: K split over a cluster, the CTAs kept to half the SMs
  const GemmPlan p64 = gemm_fp8_plan(64, 2112, 7168, 132);
  EXPECT_EQ(p64.tiles, 33);
  EXPECT_EQ(p64.splits, 2);
  EXPECT_EQ(gemm_fp8_plan(16, 1000, 4096, 132).splits, 4);
  // 64 < M <= 128 and K <= 4096: the small-M kernel where its tiles of 64 rows of B fill 3/4
  // of the SMs
  const GemmPlan p7168 = gemm_fp8_plan(128, 7168, 2048, 132);
  EXPECT_STREQ(gemm_config_name(p7168.config), "smallm");
  EXPECT_EQ(p7168.tiles, 112);
  EXPECT_EQ(p7168.splits, 1);
  EXPECT_EQ(gemm_fp8_plan(65, 6336, 4096, 132).config, 3);                              // 99 tiles
  EXPECT_EQ(gemm_fp8_plan(65, 6272, 4096, 132).config, 0);                    // 98 < 99 tiles
  EXPECT_EQ(gemm_fp8_plan(128, 8448, 4096, 132).config, 3);                   // 132: one round
  // 133: two rounds (134 of 64 x 128); 67 of 128 x 128 (under 3/4), 107 of 128 x 80
  EXPECT_EQ(gemm_fp8_plan(128, 8512, 4096, 132).config, 9);
  EXPECT_EQ(gemm_fp8_plan(100, 7168, 4112, 132).config, 0);  // K > 4096
  // ... up to K = 24576 where M = 128 (no row of A zero-filled), in both modes
  GemmTuning fast_mode;
  fast_mode.accumulation = GemmAccumulation::fast;
  EXPECT_EQ(gemm_fp8_plan(128, 8192, 8192, 132).config, 3);
  EXPECT_EQ(gemm_fp8_plan(128, 7168, 8320, 132).config, 3);
  EXPECT_EQ(gemm_fp8_plan(128, 7168, 8320, 132, fast_mode).config, 3);
  EXPECT_EQ(gemm_fp8_plan(128, 7168, 24576, 132).config, 3);
  EXPECT_EQ(gemm_fp8_plan(128, 7168, 24576, 132, fast_mode).config, 3);
  EXPECT_EQ(gemm_fp8_plan(128, 7168, 24704, 132).config, 0);  // K > 24576
  EXPECT_EQ(gemm_fp8_plan(128, 7168, 24704, 132, fast_mode).config, 0);
  EXPECT_EQ(gemm_fp8_plan(127, 8192, 8192, 132).config, 0);
  EXPECT_STREQ(gemm_config_name(gemm_fp8_plan(100, 7168, 7168, 132).config), "m64n128");  // K
  // 64 < M <= 256 otherwise: 64 x 128 tiles where they fill 3/4 of the SMs, else 64 x 64
  // tiles (split K when those are still too few); at 224 < M <= 256 128-row tiles once 64 x
  // 128 ones take several rounds (here 256 x 128: one round of 128 against four of 512)
  EXPECT_STREQ(gemm_config_name(gemm_fp8_plan(192, 16384, 2048, 132).config), "m64n128");
  EXPECT_EQ(gemm_fp8_plan(192, 16384, 2048, 132).splits, 1);  // 384 tiles
  EXPECT_STREQ(gemm_config_name(gemm_fp8_plan(256, 16384, 2048, 132).config), "m256n128");
  // ... and 128 x 128 tiles where 64 x 128 need two rounds and they need one
  EXPECT_STREQ(gemm_config_name(gemm_fp8_plan(129, 7168, 2048, 132).config), "m128n128");
  const GemmPlan p128 = gemm_fp8_plan(128, 4096, 4096, 132);  // 64 tiles of 64 x 128
  EXPECT_STREQ(gemm_config_name(p128.config), "m64n64");
  EXPECT_EQ(p128.tiles, 128);
  EXPECT_EQ(p128.splits, 1);
  EXPECT_EQ(p128.grid, 128u);
  const GemmPlan p2112 = gemm_fp8_plan(128, 2112, 7168, 132);
  EXPECT_STREQ(gemm_config_name(p2112.config), "m64n64");
  EXPECT_EQ(p2112.tiles, 66);
  EXPECT_EQ(p2112.splits, 2);
  EXPECT_EQ(p2112.grid, 132u);
  EXPECT_EQ(gemm_fp8_plan(65, 8192, 8192, 132).config, 0);   // 128 tiles of 64 x 128
  EXPECT_EQ(gemm_fp8_plan(65, 6400, 8192, 132).config, 0);   // 100 >= 3/4 of 132
  EXPECT_EQ(gemm_fp8_plan(65, 6272, 8192, 132).config, 0);   // 98 < 99, but 196 of 64 x 64
  EXPECT_EQ(gemm_fp8_plan(65, 4096, 8192, 132).config, 5);   // 64 < 99: 128 of 64 x 64
  EXPECT_EQ(gemm_fp8_plan(192, 4096, 4096, 132).config, 0);  // 96 < 99, but 192 of 64 x 64
  EXPECT_EQ(gemm_fp8_plan(192, 2112, 7168, 132).config, 5);  // 51 < 99: 99 of 64 x 64
  EXPECT_EQ(gemm_fp8_plan(192, 7168, 2048, 132).config, 1);  // 168 > 132, 112 of 128 x 128
  EXPECT_EQ(gemm_fp8_plan(200, 1024, 4096, 132).config, 5);  // 32 tiles of 64 x 128
  // 96 < M <= 128: 128 x 128 tiles where their rounds are at most (33/32 of) half the 64 x 128
  // tiles' (the two-wave rules may then take their place)
  EXPECT_EQ(gemm_fp8_plan(128, 28672, 2048, 132).config, 1);   // 2 rounds against 4
  EXPECT_EQ(gemm_fp8_plan(128, 65536, 2048, 132).config, 1);   // 4 against 8
  EXPECT_EQ(gemm_fp8_plan(112, 49152, 4096, 132).config, 1);   // 3 against 6
  EXPECT_EQ(gemm_fp8_plan(128, 57344, 2048, 132).config, 0);   // 4 against 7
  EXPECT_EQ(gemm_fp8_plan(128, 36864, 4096, 132).config, 0);   // 3 against 5
  EXPECT_EQ(gemm_fp8_plan(96, 28672, 2048, 132).config, 0);    // 96: 3/4 of the rows, not more
  EXPECT_EQ(gemm_fp8_plan(128, 28672, 4096, 132).config, 10);  // K >= 4096: configuration 10
  // 224 < M <= 256: 128-row tiles wherever 64 x 128 ones take several rounds
  EXPECT_EQ(gemm_fp8_plan(256, 57344, 8192, 132).config, 1);  // 7 rounds against 14
  EXPECT_EQ(gemm_fp8_plan(240, 40960, 4096, 132).config, 1);
  EXPECT_EQ(gemm_fp8_plan(256, 28672, 8192, 132).config, 7);  // 256 x 128: 2 rounds against 4
  EXPECT_EQ(gemm_fp8_plan(256, 65536, 4096, 132).config, 7);
  EXPECT_EQ(gemm_fp8_plan(224, 57344, 8192, 132).config, 0);  // 224: not more than 3/4
  EXPECT_EQ(gemm_fp8_plan(192, 57344, 8192, 132).config, 0);
  EXPECT_EQ(gemm_fp8_plan(256, 4096, 4096, 132).config, 0);  // one round of 64 x 128
  // 128 x 128 tiles in one round under 3/4 of the SMs: 128 x 80 ones where they fill the SMs
  // in one round and M fills 3/4 of their 128 rows
  const GemmPlan narrow = gemm_fp8_plan(128, 10240, 8192, 132);
  EXPECT_STREQ(gemm_config_name(narrow.config), "m128n80");
  EXPECT_EQ(narrow.tiles, 128);
  EXPECT_EQ(narrow.splits, 1);
  EXPECT_EQ(narrow.grid, 128u);
  GemmTuning fast;
  fast.accumulation = GemmAccumulation::fast;
  EXPECT_EQ(gemm_fp8_plan(128, 10240, 8192, 132, fast).config, 9);  // 40 of 128 x 256
  EXPECT_EQ(gemm_fp8_plan(256, 5120, 8192, 132).config, 9);         // 80 of 128 x 128, 128 of 80
  // two rounds of 128 x 128 tiles where 128 x 80 ones also take two (M filling their rows)
  EXPECT_EQ(gemm_fp8_plan(640, 4096, 4096, 132).config, 9);  // 160 tiles, 260 of 80
  EXPECT_EQ(gemm_fp8_plan(640, 4096, 4096, 132, fast).config, 9);
  EXPECT_EQ(gemm_fp8_plan(1280, 2048, 4096, 132).config, 9);        // 160 tiles, 260 of 80
  EXPECT_EQ(gemm_fp8_plan(1664, 2048, 4096, 132).config, 10);       // 338 of 80: 3 rounds
  EXPECT_EQ(gemm_fp8_plan(768, 4096, 4096, 132).config, 7);  // 192 tiles, 312 of 80; 96 of 256
  EXPECT_EQ(gemm_fp8_plan(660, 4096, 4096, 132).config, 7);  // 660 mod 128 = 20 rows; 96 of 256
  EXPECT_EQ(gemm_fp8_plan(97, 10240, 8192, 132).config, 9);         // 97 of 128 rows
  EXPECT_EQ(gemm_fp8_plan(96, 10240, 8192, 132).config, 1);         // 96: 3/4 of 128 rows, not more
  EXPECT_EQ(gemm_fp8_plan(200, 10240, 8192, 132).config, 0);        // 160 of 128 x 128: two rounds
  // above M = 256, tiles of twice 128 x 128 in one round where 128 x 128 ones take two, under
  // 3/4 of the SMs too
  EXPECT_EQ(gemm_fp8_plan(768, 4096, 14336, 132).config, 7);        // 96 of 256 x 128, 192
  EXPECT_EQ(gemm_fp8_plan(768, 4096, 14336, 132, fast).config, 6);  // 96 of 128 x 256
  EXPECT_EQ(gemm_fp8_plan(2048, 1536, 7168, 132).config, 7);
  EXPECT_EQ(gemm_fp8_plan(2048, 1536, 7168, 132, fast).config, 6);
  EXPECT_EQ(gemm_fp8_plan(1024, 1536, 7168, 132).config, 1);  // 96 of 128 x 128: 1 round
  EXPECT_EQ(gemm_fp8_plan(1536, 1536, 4096, 132).config, 4);  // 132 of 128 x 144: 1 round
  EXPECT_EQ(gemm_fp8_plan(768, 8192, 4096, 132).config, 1);   // 2 rounds of them: no
  // 256-row tiles only where M fills more than half of the last one; else 128 x 256 ones in
  // two waves along N in place of 128 x 128 tiles, where they pay
  EXPECT_EQ(gemm_fp8_plan(384, 8192, 8192, 132).config, 10);       // 96 of 128 x 256, 192
  EXPECT_EQ(gemm_fp8_plan(384, 8192, 8192, 132, fast).config, 6);  // 96 of 128 x 256
  EXPECT_EQ(gemm_fp8_plan(320, 8192, 8192, 132).config, 10);
  EXPECT_EQ(gemm_fp8_plan(384, 7168, 2048, 132).config, 10);   // 84 of 128 x 256, 168
  EXPECT_EQ(gemm_fp8_plan(384, 28672, 4096, 132).config, 10);  // 3 rounds against 6
  EXPECT_EQ(gemm_fp8_plan(384, 4096, 4096, 132).config, 1);    // 96 of 128 x 128: 1 round
  EXPECT_EQ(gemm_fp8_plan(384, 8196, 8192, 132).config, 1);    // N not a multiple of 8
  EXPECT_EQ(gemm_fp8_plan(448, 8192, 8192, 132).config, 7);    // 192 of 256 rows
  EXPECT_EQ(gemm_fp8_plan(480, 8192, 8192, 132).config, 7);
  EXPECT_EQ(gemm_fp8_plan(1664, 2048, 4096, 132).config, 10);  // 1664 mod 256 = 128
  EXPECT_EQ(gemm_fp8_plan(1792, 2048, 4096, 132).config, 7);
  // a split tail: past one round, a last round of 128 x 128 tiles on at most a quarter of the
  // SMs, at K >= 6144, splits K four ways; the rounds before run whole tiles
  for (const GemmTuning& t : {GemmTuning{}, fast}) {
    const GemmPlan tail = gemm_fp8_plan(1152, 2112, 7168, 132, t);  // 153 tiles: 132 + 21
    EXPECT_EQ(tail.config, 1);
    EXPECT_EQ(tail.tiles, 153);
    EXPECT_EQ(tail.splits, 4);
    EXPECT_EQ(tail.split_tiles, 21);
    EXPECT_EQ(tail.grid, 132u);                                          // 132 + 4 * 21 units
    EXPECT_EQ(gemm_fp8_plan(1280, 2048, 7168, 132, t).split_tiles, 28);  // 160: 132 + 28
    EXPECT_EQ(gemm_fp8_plan(1536, 7168, 7168, 132, t).split_tiles, 12);  // 672: 660 + 12
    EXPECT_EQ(gemm_fp8_plan(1152, 2112, 6128, 132, t).split_tiles, 0);   // K < 6144
    EXPECT_EQ(gemm_fp8_plan(1152, 2112, 6144, 132, t).split_tiles, 21);
    EXPECT_EQ(gemm_fp8_plan(2048, 1536, 7168, 132, t).split_tiles, 0);  // 60 > 132 / 4
    EXPECT_EQ(gemm_fp8_plan(256, 33792, 8192, 132, t).split_tiles, 0);  // M <= 256
    EXPECT_EQ(gemm_fp8_plan(1152, 2112, 7168, 132, {1, 0, true, t.accumulation}).split_tiles,
              0);  // a forced configuration: no split tail
  }
  // 128 x 144 tiles above M = 256 at K >= 4096 in place of 128 x 128 (or 128 x 80) tiles
  // where their rounds are at most 4/5 of those (both modes)
  for (const GemmTuning& t : {GemmTuning{}, fast}) {
    const GemmPlan p144 = gemm_fp8_plan(1024, 2112, 7168, 132, t);  // 120 tiles against 136
    EXPECT_STREQ(gemm_config_name(p144.config), "m128n144");
    EXPECT_EQ(p144.tiles, 120);
    EXPECT_EQ(p144.splits, 1);
    EXPECT_EQ(p144.split_tiles, 0);
    EXPECT_EQ(p144.grid, 120u);
    EXPECT_EQ(gemm_fp8_plan(1536, 1536, 7168, 132, t).config, 4);  // 132: 1 round against 2
    EXPECT_EQ(gemm_fp8_plan(2048, 2112, 7168, 132, t).config, 4);  // 240: 2 against 3
    EXPECT_EQ(gemm_fp8_plan(3072, 1536, 7168, 132, t).config, 4);  // 264: 2 against 3
    EXPECT_EQ(gemm_fp8_plan(4096, 2112, 7168, 132, t).config, 4);  // 480: 4 against 5
    EXPECT_EQ(gemm_fp8_plan(1024, 2112, 4096, 132, t).config, 4);  // in place of 128 x 80
    EXPECT_EQ(gemm_fp8_plan(1536, 1536, 4096, 132, t).config, 4);
    EXPECT_EQ(gemm_fp8_plan(1024, 2112, 2048, 132, t).config, 9);  // K < 4096
    EXPECT_EQ(gemm_fp8_plan(6144, 2112, 7168, 132, t).config, 1);  // 6 rounds against 7
    EXPECT_EQ(gemm_fp8_plan(6144, 3072, 7168, 132, t).config, 1);  // 8 against 9
    EXPECT_EQ(gemm_fp8_plan(1024, 1536, 7168, 132, t).config, 1);  // 1 round either way
    EXPECT_NE(gemm_fp8_plan(256, 2112, 7168, 132, t).config, 4);   // M <= 256
  }
  EXPECT_EQ(gemm_fp8_plan(1024, 2112, 7168, 132, {4, 0}).splits, 1);  // forced, one round
  // where tiles of twice 128 x 128 pay against the quarter round, they stay
  EXPECT_EQ(gemm_fp8_plan(8192, 8192, 8192, 132).config, 7);  // 4096 tiles: 31 rounds + 4
  EXPECT_EQ(gemm_fp8_plan(8192, 8192, 8192, 132).split_tiles, 0);
  EXPECT_EQ(gemm_fp8_plan(8192, 57344, 8192, 132).config, 7);  // 217 rounds + 28
  EXPECT_EQ(gemm_fp8_plan(8192, 8192, 8192, 132, fast).config, 6);
  // a split asked for: every tile splits
  const GemmPlan asked = gemm_fp8_plan(512, 4096, 4096, 132, {1, 2});
  EXPECT_EQ(asked.split_tiles, asked.tiles);
  // 256 < M <= 512 where 128 x 128 tiles would split K: 64 x 128 tiles, unsplit, in one round
  // over half the SMs or more
  for (const GemmTuning& t : {GemmTuning{}, fast}) {
    const GemmPlan p384 = gemm_fp8_plan(384, 1536, 7168, 132, t);
    EXPECT_EQ(p384.config, 0);
    EXPECT_EQ(p384.tiles, 72);
    EXPECT_EQ(p384.splits, 1);
    EXPECT_EQ(gemm_fp8_plan(384, 2112, 7168, 132, t).config, 0);  // 102 tiles
    EXPECT_EQ(gemm_fp8_plan(512, 1536, 7168, 132, t).config, 0);  // 96 tiles
    EXPECT_EQ(gemm_fp8_plan(512, 2112, 7168, 132, t).config, 9);  // 136 of 64 x 128: 2 rounds
    EXPECT_EQ(gemm_fp8_plan(384, 512, 7168, 132, t).config, 1);   // 24 of 64 x 128: split
    EXPECT_EQ(gemm_fp8_plan(768, 1024, 7168, 132, t).config, 1);  // M > 512
    EXPECT_EQ(gemm_fp8_plan(768, 1024, 7168, 132, t).splits, 2);
  }
  EXPECT_EQ(gemm_fp8_plan(128, 10880, 8192, 132).config, 1);        // 136 of 128 x 80: two rounds
  // M <= 128 with many columns: 128 x 256 tiles in two waves along N (promotion) where they
  // fill 3/4 of the SMs, M fills more than 3/4 of their rows, N is a multiple of 8 and K at
  // least 4096
  const GemmPlan waves_n = gemm_fp8_plan(128, 28672, 8192, 132);
  EXPECT_STREQ(gemm_config_name(waves_n.config), "m128n256w");
  EXPECT_EQ(waves_n.tiles, 112);
  EXPECT_EQ(waves_n.splits, 1);
  EXPECT_EQ(waves_n.grid, 112u);
  EXPECT_EQ(gemm_fp8_plan(128, 57344, 8192, 132).config, 10);  // 224 tiles: two rounds
  EXPECT_EQ(gemm_fp8_plan(128, 57344, 8192, 132).grid, 112u);  // two tiles per CTA
  EXPECT_EQ(gemm_fp8_plan(97, 27648, 4096, 132).config, 10);        // 108 tiles, 97 of 128 rows
  EXPECT_EQ(gemm_fp8_plan(128, 25088, 4096, 132).config, 13);  // 98 < 99 tiles; one round of
                                                               // 128 x 192 (C24)
  EXPECT_EQ(gemm_fp8_plan(96, 57344, 8192, 132).config, 0);         // 96: 3/4 of the rows, not more
  EXPECT_EQ(gemm_fp8_plan(128, 57340, 8192, 132).config, 0);        // N not a multiple of 8
  EXPECT_EQ(gemm_fp8_plan(129, 57344, 8192, 132).config, 0);        // two tile rows
  EXPECT_EQ(gemm_fp8_plan(128, 8192, 28672, 132).config, 0);        // 32 tiles
  EXPECT_EQ(gemm_fp8_plan(128, 57344, 3968, 132).config, 0);        // 31 k-blocks
  EXPECT_EQ(gemm_fp8_plan(128, 57344, 3969, 132).config, 10);       // 32, the last one partial
  EXPECT_EQ(gemm_fp8_plan(128, 40960, 8192, 132).config, 0);        // 2 rounds, 3 of 128 x 128
  EXPECT_EQ(gemm_fp8_plan(128, 57344, 8192, 132, fast).config, 6);  // fast: one wave of 256
  EXPECT_EQ(gemm_fp8_plan(64, 57344, 8192, 132).config, 8);         // M <= 64: the small-M kernel
  GemmTuning forced_fast{10, 0};
  forced_fast.accumulation = GemmAccumulation::fast;
  EXPECT_EQ(gemm_fp8_plan(128, 4096, 4096, 132, forced_fast).config, 10);  // both modes
  EXPECT_EQ(gemm_fp8_plan(128, 4096, 4096, 132, {10, 0}).tiles, 16);
  EXPECT_EQ(refused([&] { gemm_fp8_plan(128, 57344, 8192, 132, {10, 2}); }), "tuning.splits");
  EXPECT_EQ(gemm_fp8_plan(128, 10240, 8192, 132, {1, 0}).config, 1);  // forced
  // M <= 64 with more 64-row tiles of B than SMs: 128 rows of B per CTA (configuration 8),
  // never split
  const GemmPlan wide = gemm_fp8_plan(16, 10240, 8192, 132);
  EXPECT_STREQ(gemm_config_name(wide.config), "smallm128");
  EXPECT_EQ(wide.tiles, 80);
  EXPECT_EQ(wide.splits, 1);
  EXPECT_EQ(wide.grid, 80u);
  EXPECT_EQ(gemm_fp8_plan(64, 8449, 4096, 132).config, 8);    // 133 tiles of 64 rows, 67 of 128
  EXPECT_EQ(gemm_fp8_plan(64, 8448, 4096, 132).config, 3);    // 132: one round already
  EXPECT_EQ(gemm_fp8_plan(1, 16896, 4096, 132).config, 8);    // 132 of 128 rows
  EXPECT_EQ(gemm_fp8_plan(1, 16897, 4096, 132).config, 8);    // 133 of 128 rows: two rounds
  EXPECT_EQ(gemm_fp8_plan(16, 57344, 8192, 132).grid, 448u);  // 448 of 128 rows, not 896 of 64
  EXPECT_EQ(gemm_fp8_plan(65, 10240, 4096, 132).config, 1);   // M > 64: two waves do not fit
  // C18: 64 x 128 tiles in place of smallm128 from 330 tiles of 64 rows (2.5 x 132) at K <= 1536
  EXPECT_EQ(gemm_fp8_plan(64, 21120, 1536, 132).config, 0);  // 330 tiles
  EXPECT_EQ(gemm_fp8_plan(64, 21056, 1536, 132).config, 8);  // 329
  EXPECT_EQ(gemm_fp8_plan(16, 32768, 1664, 132).config, 8);  // K past 1536
  EXPECT_EQ(gemm_fp8_plan(1, 24576, 512, 132).config, 0);
  EXPECT_EQ(gemm_fp8_plan(64, 32768, 512, 132, {-1, 0, true, GemmAccumulation::fast}).config, 0);
  EXPECT_EQ(gemm_fp8_plan(16, 10240, 8192, 132, {-1, 2}).config, 3);  // a split asked for
  EXPECT_EQ(gemm_fp8_plan(16, 10240, 8192, 132, {-1, 2}).splits, 2);
  EXPECT_EQ(gemm_fp8_plan(16, 1000, 4096, 132, {8, 0}).grid, 8u);  // forced: 8 tiles
  EXPECT_EQ(refused([&] { gemm_fp8_plan(65, 1000, 4096, 132, {8, 0}); }), "tuning.config");
  EXPECT_EQ(refused([&] { gemm_fp8_plan(16, 1000, 4096, 132, {8, 2}); }), "tuning.splits");
  EXPECT_THROW(gemm_fp8_plan(129, 64, 4096, 132, {3, 0}), ArgumentError);
  EXPECT_THROW(gemm_fp8_plan(64, 64, 4096, 132, {3, 3}), ArgumentError);
  EXPECT_THROW(gemm_fp8_plan(64, 64, 256, 132, {3, 4}), ArgumentError);  // 2 k-blocks
  // M <= 256: 64-row tiles, K split to fill the GPU
  const GemmPlan p256 = gemm_fp8_plan(256, 4096, 4096, 132);
  EXPECT_EQ(p256.config, 0);
  EXPECT_EQ(p256.splits, 1);
  EXPECT_EQ(p256.grid, 128u);
  EXPECT_EQ(gemm_fp8_plan(512, 4096, 4096, 132).config, 1);
  // large shapes: one split, a persistent grid of at most one CTA per SM, as few as take
  // the same rounds: 2048 tiles of 256 x 128 take 16 rounds on 132 SMs, and on 128
  const GemmPlan big = gemm_fp8_plan(8192, 8192, 8192, 132);
  EXPECT_EQ(big.splits, 1);
  EXPECT_EQ(big.tiles, 2048);
  EXPECT_EQ(big.grid, 128u);
  EXPECT_EQ(gemm_fp8_plan(8192, 8192, 8192, 128).grid, 128u);
  EXPECT_EQ(gemm_fp8_plan(8192, 57344, 8192, 132).grid, 132u);  // 14336 tiles: 109 rounds
  EXPECT_EQ(gemm_fp8_plan(4096, 7168, 2048, 132).grid, 128u);   // 896 tiles: 7 rounds
  EXPECT_EQ(gemm_fp8_plan(2048, 4096, 4096, 132).grid, 128u);   // 256 tiles: 2 rounds
  EXPECT_EQ(gemm_fp8_plan(2048, 4224, 4096, 132).grid, 132u);   // 264 tiles: 2 whole rounds
  // ... but a split tail keeps every SM: its last round is the idle SMs' share
  const GemmPlan tail = gemm_fp8_plan(1152, 2112, 7168, 132);
  EXPECT_GT(tail.split_tiles, 0);
  EXPECT_EQ(tail.grid, 132u);
  EXPECT_STREQ(gemm_config_name(big.config), "m256n128");
  EXPECT_STREQ(gemm_config_name(gemm_fp8_plan(4096, 7168, 2048, 132).config), "m256n128");
  EXPECT_STREQ(gemm_config_name(gemm_fp8_plan(1024, 4096, 4096, 132).config), "m256n128");
  // 3 tile rows of 128 x 8 tile columns: 24 units, one CTA each
  const GemmPlan odd = gemm_fp8_plan(333, 1000, 4096, 132, {1, 1});
  EXPECT_EQ(odd.tiles, 24);
  EXPECT_EQ(odd.grid, 24u);
  // a retired configuration (2: clusters sharing B) is refused by name
  for (int retired : {2}) {
    EXPECT_FALSE(gemm_config_built(retired));
    std::string msg;
    EXPECT_EQ(refused([&] { gemm_fp8_plan(4096, 4096, 4096, 132, {retired, 0}); }, &msg),
              "tuning.config");
    EXPECT_NE(msg.find("no longer built"), std::string::npos) << msg;
    EXPECT_NE(msg.find(gemm_config_name(retired)), std::string::npos) << msg;
  }
  for (int built : {0, 1, 3, 4, 5, 6, 7, 8, 9, 10}) EXPECT_TRUE(gemm_config_built(built)) << built;
  EXPECT_FALSE(gemm_config_built(-1));
  EXPECT_FALSE(gemm_config_built(kGemmConfigs));
  // K = 16: one k-block, nothing to split
  EXPECT_EQ(gemm_fp8_plan(7, 200, 16, 132).splits, 1);
  EXPECT_EQ(gemm_fp8_plan(300, 200, 16, 132).splits, 1);
  // forced
  EXPECT_EQ(gemm_fp8_plan(7, 200, 4096, 132, {1, 3}).splits, 3);
  EXPECT_EQ(gemm_fp8_plan(7, 200, 4096, 132, {1, 3}).config, 1);
  EXPECT_THROW(gemm_fp8_plan(7, 200, 4096, 132, {7, 3}), ArgumentError);  // 7 does not split
}

// The small-M kernel's L2 prefetch of B before the wait, per memory system (measured, see
// small_m_prefetch): 4 k-blocks in clusters on both parts; at one CTA per tile of 64 rows on
// H100-class memory none up to M = 16, 4 up to 64, 2 above, on H200-class memory none; 2 for
// tiles of 128 rows on both; never more than half of a rank's k-blocks.
TEST(GemmPlan, SmallMPrefetchFollowsTheMemorySystem) {
  constexpr double kH100 = 3.35e12, kH200 = 4.8e12;
  constexpr int kRows = detail::gemm::row(detail::gemm::config::smallm).block_n;
  constexpr int kWide = detail::gemm::row(detail::gemm::config::smallm128).block_n;
  struct Case {
    std::uint64_t m, rank_k_blocks;
    int splits, rows_b;
    double dram;
    int depth;
  };
  for (const Case& c : {
           // one CTA per tile of 64 rows on H100: none up to M = 16, 4 up to 64, 2 above
           Case{1, 32, 1, kRows, kH100, 0},
           Case{16, 32, 1, kRows, kH100, 0},
           Case{17, 32, 1, kRows, kH100, 4},
           Case{64, 32, 1, kRows, kH100, 4},
           Case{65, 16, 1, kRows, kH100, 2},
           Case{128, 16, 1, kRows, kH100, 2},
           Case{64, 3, 1, kRows, kH100, 1},
           Case{64, 1, 1, kRows, kH100, 0},
           // clusters: 4 on both parts
           Case{1, 8, 4, kRows, kH100, 4},  // 1 x 1024 x 4096, clusters of 4
           Case{64, 28, 2, kRows, kH100, 4},
           Case{64, 8, 4, kRows, kH200, 4},
           Case{1, 2, 8, kRows, kH200, 1},
           // one CTA per tile of 64 rows on H200: none
           Case{1, 32, 1, kRows, kH200, 0},
           Case{128, 16, 1, kRows, kH200, 0},
           // 128 rows of B per CTA (configuration 8): 2 on both parts, at any M it takes
           Case{1, 64, 1, kWide, kH100, 2},
           Case{64, 32, 1, kWide, kH100, 2},
           Case{16, 64, 1, kWide, kH200, 2},
           Case{16, 3, 1, kWide, kH200, 1},
       }) {
    EXPECT_EQ(detail::gemm::small_m_prefetch(c.m, c.rank_k_blocks, c.splits, c.rows_b, c.dram), c.depth)
        << "M " << c.m << ", " << c.rank_k_blocks << " k-blocks, " << c.splits << " splits, "
        << c.rows_b << " rows";
  }
}

}  // namespace
}  // namespace tmakit

// The launch configuration the kernels' launchers fill (no GPU needed): each attribute once,
// in the order set, and config.attrs pointing at them.
TEST(KernelLaunch, EachAttributeOnce) {
  tmakit::KernelLaunch l(10, 128, 1024, nullptr);
  EXPECT_EQ(l.config.numAttrs, 0u);
  EXPECT_EQ(l.config.gridDim.x, 10u);
  EXPECT_EQ(l.config.blockDim.x, 128u);
  EXPECT_EQ(l.config.dynamicSmemBytes, 1024u);
  l.cluster(2).overlap_previous_kernel();
  ASSERT_EQ(l.config.numAttrs, 2u);
  EXPECT_EQ(l.config.attrs, l.attrs);
  EXPECT_EQ(l.attrs[0].id, cudaLaunchAttributeClusterDimension);
  EXPECT_EQ(l.attrs[0].val.clusterDim.x, 2u);
  EXPECT_EQ(l.attrs[0].val.clusterDim.y, 1u);
  EXPECT_EQ(l.attrs[1].id, cudaLaunchAttributeProgrammaticStreamSerialization);
  EXPECT_EQ(l.attrs[1].val.programmaticStreamSerializationAllowed, 1);
  EXPECT_THROW(l.cluster(4), std::logic_error);
  EXPECT_THROW(l.overlap_previous_kernel(), std::logic_error);
  tmakit::ClusterLaunch c(8, 64, 0, nullptr, 4);
  EXPECT_EQ(c.config.numAttrs, 1u);
  EXPECT_THROW(c.cluster(2), std::logic_error);
}

namespace tmakit {
namespace {

// Each rule of the plan (gemm_plan.cpp's table, kernels/gemm/README.md "The plan's rules") on
// a shape it decides, on 132 SMs: the configuration and the splits, and the rule's id.
TEST(GemmPlanRules, EachRuleByIdOnAShapeItDecides) {
  struct Case {
    std::uint64_t m, n, k;
    int config;
    bool fast;
    std::uint64_t d_pitch;
    const char* want_config;
    const char* config_rule;
    const char* splits_rule;
  };
  const Case cases[] = {
      {4096, 4096, 4096, 1, false, 0, "m128n128", "C1", "K6"},
      {16, 57344, 8192, -1, false, 0, "smallm128", "C2", "K3"},
      {16, 1024, 4096, -1, false, 0, "smallm", "C3", "K2"},
      {64, 32768, 512, -1, false, 0, "m64n128", "C18", "K6"},
      {65, 6272, 4096, -1, false, 0, "m64n128", "C4", "K6"},
      {96, 12288, 1024, -1, false, 0, "m128n128", "C5", "K6"},
      {128, 4096, 4096, -1, false, 0, "m64n64", "C6", "K6"},
      {96, 1024, 1024, -1, false, 0, "m64n64", "C6", "K5"},
      {512, 4096, 4096, -1, false, 0, "m128n128", "C7", "K6"},
      {640, 4096, 8192, -1, false, 0, "m128n128", "C7", "K4"},
      {128, 10240, 8192, -1, false, 0, "m128n80", "C8", "K6"},
      {300, 2048, 1024, -1, false, 0, "m64n128", "C9", "K6"},
      {4096, 4096, 8192, -1, true, 0, "m128n256", "C10", "K3"},
      {1024, 4096, 4096, -1, true, 0, "m128n256", "C10", "K3"},  // 256 tiles of 128 x 128
      {4096, 4096, 4096, -1, true, 0, "m128n128pp", "C25", "K3"},
      {2048, 7168, 4096, -1, true, 0, "m128n128pp", "C25", "K3"},  // (C7's 128 x 128 before)
      {4096, 32768, 512, -1, true, 0, "m128n128ppd", "C26", "K3"},
      {8192, 8192, 640, -1, true, 0, "m128n128pp", "C25", "K3"},  // 5 k-blocks
      // D's rows 8200 bytes apart: not the ping-pong tiles (measured with TMA stores only)
      {4096, 4096, 4096, -1, true, 8200, "m128n256", "C10", "K3"},
      {128, 32768, 512, -1, true, 0, "m128n128", "C22", "K6"},
      {4096, 4096, 4096, -1, false, 0, "m256n128", "C11", "K3"},
      {128, 28672, 8192, -1, false, 0, "m128n256w", "C12", "K3"},
      {320, 8192, 8192, -1, false, 0, "m128n256w", "C13", "K3"},
      {1024, 2112, 7168, -1, false, 0, "m128n144", "C14", "K6"},
      {128, 24576, 1536, -1, false, 0, "m128n192", "C24", "K3"},
      // D's rows 8200 bytes apart (not whole 16-byte chunks): not the two-wave tiles of C11
      {4096, 4096, 4096, -1, false, 8200, "m128n128", "C15", "K6"},
  };
  for (const Case& c : cases) {
    GemmProblem q;
    q.m = c.m;
    q.n = c.n;
    q.k = c.k;
    q.d_row_pitch_bytes = c.d_pitch;
    q.sm_count = 132;
    q.tuning.config = c.config;
    if (c.fast) q.tuning.accumulation = GemmAccumulation::fast;
    const GemmPlan p = gemm_fp8_plan(q);
    SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k));
    EXPECT_STREQ(gemm_config_name(p.config), c.want_config);
    EXPECT_STREQ(p.config_rule, c.config_rule);
    EXPECT_STREQ(p.splits_rule, c.splits_rule);
  }
  // K1: forced splits; a split tail's tiles are the last round's few
  const GemmPlan forced = gemm_fp8_plan(64, 4096, 4096, 132, {-1, 4});
  EXPECT_STREQ(forced.splits_rule, "K1");
  EXPECT_EQ(forced.splits, 4);
  const GemmPlan tail = gemm_fp8_plan(640, 4096, 8192, 132);
  EXPECT_EQ(tail.splits, 4);
  EXPECT_EQ(tail.tiles, 160);
  EXPECT_EQ(tail.split_tiles, 160 - 132);
  // plain stores where D's rows are not whole chunks; the small-M prefetch for a dependent
  // launch on H100-class memory, none for an ordinary launch
  EXPECT_FALSE(gemm_fp8_plan({4096, 4096, 4096, 8200, 132, 0, {}}).d_tma_store);
  EXPECT_TRUE(gemm_fp8_plan({4096, 4096, 4096, 0, 132, 0, {}}).d_tma_store);
  GemmTuning serial;
  serial.overlap_launch = false;
  EXPECT_EQ(gemm_fp8_plan({32, 4096, 4096, 0, 132, 3.35e12, {}}).prefetch_k_blocks, 4);
  EXPECT_EQ(gemm_fp8_plan({32, 4096, 4096, 0, 132, 3.35e12, serial}).prefetch_k_blocks, 0);
  EXPECT_EQ(gemm_fp8_plan({32, 4096, 4096, 0, 132, 4.8e12, {}}).prefetch_k_blocks, 0);
}

// 128-block scales: C16, C17 and C20 replace what cannot apply them, C19 takes narrower
// tiles at M <= 64, and every plan for them takes a configuration that can (over shapes where
// each other rule decides).
// C22 and C3's promoted reach at M = 128, at their edges: fast accumulation keeps 128 x 128
// tiles at 96 <= M <= 128 with 4-8 k-blocks where C10 took 128 x 256 ones, and the small-M
// kernel runs promoted calls of M = 128 up to K = 24576.
TEST(GemmPlanRules, ShortAndLongKAtM128) {
  GemmTuning fast;
  fast.accumulation = GemmAccumulation::fast;
  const auto rule = [&](std::uint64_t m, std::uint64_t n, std::uint64_t k, bool is_fast) {
    return std::string(gemm_fp8_plan(m, n, k, 132, is_fast ? fast : GemmTuning{}).config_rule);
  };
  const auto config = [&](std::uint64_t m, std::uint64_t n, std::uint64_t k, bool is_fast) {
    return std::string(
        gemm_config_name(gemm_fp8_plan(m, n, k, 132, is_fast ? fast : GemmTuning{}).config));
  };
  // 4 and 8 k-blocks (K = 385 .. 1024) at M = 96 and 128: C22; 3 and 9 k-blocks, M = 95:
  // C10's 128 x 256 tiles
  for (const std::uint64_t m : {96u, 128u}) {
    for (const std::uint64_t k : {400u, 512u, 1024u}) {
      EXPECT_EQ(rule(m, 32768, k, true), "C22") << m << " " << k;
      EXPECT_EQ(config(m, 32768, k, true), "m128n128") << m << " " << k;
    }
    EXPECT_EQ(rule(m, 32768, 384, true), "C10") << m;
    EXPECT_EQ(rule(m, 32768, 1040, true), "C10") << m;
  }
  EXPECT_EQ(rule(95, 32768, 512, true), "C10");
  // promoted calls there are not C10's nor C22's
  EXPECT_NE(rule(128, 32768, 512, false), "C22");
  // the small-M kernel at M = 128 to K = 24576 in both modes; not at M = 127 past K = 4096
  for (const bool is_fast : {false, true}) {
    EXPECT_EQ(config(128, 7168, 24576, is_fast), "smallm") << is_fast;
    EXPECT_EQ(rule(128, 7168, 24576, is_fast), "C3") << is_fast;
    EXPECT_EQ(config(128, 7168, 12288, is_fast), "smallm") << is_fast;
    EXPECT_NE(config(128, 7168, 24592, is_fast), "smallm") << is_fast;
    EXPECT_NE(config(127, 7168, 4112, is_fast), "smallm") << is_fast;
  }
}

// C24: promoted, at 96 < M <= 128 with 8 k-blocks or more, one round of 128 x 192 tiles
// filling 3/4 of the SMs takes them, in every recipe (128-block scales with scale_a in any
// layout), unless splits are asked for; fast accumulation keeps its own rules; at its edges
// the rules before it decide.
TEST(GemmPlanRules, OneRoundOf128x192Tiles) {
  const auto plan = [](std::uint64_t m, std::uint64_t n, std::uint64_t k, GemmScaleRecipe recipe,
                       bool fast, bool a_tma = false, int splits = 0) {
    GemmTuning t{-1, splits};
    if (fast) t.accumulation = GemmAccumulation::fast;
    return gemm_fp8_plan({m, n, k, 0, 132, 0, t, recipe, a_tma});
  };
  const int id = gemm_config_id("m128n192");
  for (const GemmScaleRecipe recipe :
       {GemmScaleRecipe::tensor, GemmScaleRecipe::row, GemmScaleRecipe::block}) {
    for (const bool a_tma : {false, true}) {
      const GemmPlan p = plan(128, 24576, 1536, recipe, false, a_tma);  // 128 tiles
      EXPECT_EQ(p.config, id) << static_cast<int>(recipe) << a_tma;
      EXPECT_STREQ(p.config_rule, "C24");
      EXPECT_EQ(p.splits, 1);
      EXPECT_EQ(p.grid, 128u);
    }
    const auto rule = [&](std::uint64_t m, std::uint64_t n, std::uint64_t k, int splits = 0) {
      return std::string(plan(m, n, k, recipe, false, false, splits).config_rule);
    };
    EXPECT_EQ(rule(97, 24576, 1536), "C24");
    EXPECT_NE(rule(96, 24576, 1536), "C24");   // M: more than 3/4 of the tile's rows
    EXPECT_NE(rule(129, 24576, 1536), "C24");  // two rows of tiles
    EXPECT_EQ(rule(128, 25344, 4096), "C24");  // 132 tiles: the SMs
    EXPECT_NE(rule(128, 25345, 4096), "C24");  // 133: two rounds
    EXPECT_EQ(rule(128, 19008, 1536), "C24");  // 99 tiles: 3/4 of 132
    EXPECT_NE(rule(128, 18816, 1536), "C24");  // 98
    EXPECT_EQ(rule(128, 24576, 1024), "C24");  // 8 k-blocks
    EXPECT_NE(rule(128, 24576, 896), "C24");   // 7
    EXPECT_NE(rule(128, 24576, 1536, 2), "C24");  // splits asked for
    EXPECT_EQ(rule(128, 24576, 1536, 1), "C24");  // no split asked for
    if (recipe != GemmScaleRecipe::block) {     // fast accumulation: not C24
      EXPECT_NE(plan(128, 24576, 1536, recipe, true).config, id);
    }
  }
}

TEST(GemmPlanRules, BlockScalesTakeConfigurationsThatApplyThem) {
  const auto plan = [](std::uint64_t m, std::uint64_t n, std::uint64_t k) {
    GemmProblem q;
    q.m = m;
    q.n = n;
    q.k = k;
    q.sm_count = 132;
    q.recipe = GemmScaleRecipe::block;
    return gemm_fp8_plan(q);
  };
  // M <= 64, K of 4 k-blocks: C16's 64 x 128 tiles
  const GemmPlan short_k = plan(16, 1024, 512);
  EXPECT_STREQ(gemm_config_name(short_k.config), "m64n128");
  EXPECT_STREQ(short_k.config_rule, "C16");
  EXPECT_STREQ(gemm_config_name(plan(64, 32768, 512).config), "m64n128");
  // more than 4 k-blocks: 64 x 64 tiles (C19); where they number at most half the SMs, 64 x
  // 32 tiles (C23), K still split where they are few (K5)
  const GemmPlan small = plan(16, 1024, 4096);
  EXPECT_STREQ(gemm_config_name(small.config), "m64n32");
  EXPECT_STREQ(small.config_rule, "C23");
  EXPECT_EQ(small.tiles, 32);
  EXPECT_GT(small.splits, 1);  // 32 tiles on 132 SMs: K split (K5)
  for (const std::uint64_t n : {2112u, 4096u}) {  // 33 and 64 tiles of 64 x 64
    const GemmPlan narrow = plan(64, n, 7168);
    EXPECT_STREQ(gemm_config_name(narrow.config), "m64n32") << n;
    EXPECT_STREQ(narrow.config_rule, "C23") << n;
  }
  EXPECT_STREQ(plan(64, 4224, 7168).config_rule, "C23");  // 66 tiles: half of 132
  EXPECT_STREQ(plan(64, 4288, 7168).config_rule, "C19");  // 67 tiles: more than half
  GemmProblem per_tensor;  // the per-tensor and row-wise recipes keep the small-M kernel
  per_tensor.m = 64;
  per_tensor.n = 2112;
  per_tensor.k = 7168;
  per_tensor.sm_count = 132;
  EXPECT_STREQ(gemm_config_name(gemm_fp8_plan(per_tensor).config), "smallm");
  per_tensor.recipe = GemmScaleRecipe::row;
  EXPECT_STREQ(gemm_config_name(gemm_fp8_plan(per_tensor).config), "smallm");
  const GemmPlan one_round = plan(64, 7168, 2048);
  EXPECT_STREQ(gemm_config_name(one_round.config), "m64n64");
  EXPECT_STREQ(one_round.config_rule, "C19");
  EXPECT_EQ(one_round.splits, 1);  // 112 tiles
  EXPECT_STREQ(gemm_config_name(plan(64, 7168, 640).config), "m64n64");  // 5 k-blocks
  // where the per-tensor plan takes 64 x 128 tiles itself (C18), too
  EXPECT_STREQ(gemm_fp8_plan(64, 24576, 1536, 132).config_rule, "C18");
  EXPECT_STREQ(gemm_config_name(plan(64, 24576, 1536).config), "m64n64");
  // above M = 64 where the per-tensor plan takes the small-M kernel: 64 x 128 tiles (C20),
  // as many CTAs, in one round, unsplit
  const GemmPlan mid = plan(128, 7168, 2048);
  EXPECT_STREQ(gemm_config_name(gemm_fp8_plan(128, 7168, 2048, 132).config), "smallm");
  EXPECT_STREQ(gemm_config_name(mid.config), "m64n128");
  EXPECT_STREQ(mid.config_rule, "C20");
  EXPECT_EQ(mid.splits, 1);
  EXPECT_EQ(mid.tiles, 112);
  const GemmPlan big = plan(4096, 4096, 4096);
  EXPECT_STREQ(gemm_config_name(big.config), "m128n128");
  EXPECT_STREQ(big.config_rule, "C17");
  EXPECT_STREQ(plan(128, 4096, 4096).config_rule, "C6");  // m64n64 applies them: kept
  for (std::uint64_t m : {1u, 64u, 65u, 128u, 200u, 300u, 640u, 4096u}) {
    for (std::uint64_t n : {96u, 2112u, 7168u, 24576u}) {
      for (std::uint64_t k : {512u, 1552u, 7168u}) {
        const GemmPlan p = plan(m, n, k);
        EXPECT_TRUE(detail::gemm::takes_block_scales(p.config))
            << m << "x" << n << "x" << k << ": " << gemm_config_name(p.config);
        // above M = 64 the per-tensor plan is unchanged where it already applies them (at
        // M <= 64 C19 may take 64 x 64 tiles where C18 took 64 x 128 ones)
        const GemmPlan t = gemm_fp8_plan(m, n, k, 132);
        if (m > 64 && detail::gemm::takes_block_scales(t.config) &&
            std::string(t.config_rule) != "C21") {
          EXPECT_EQ(p.config, t.config);
        }
        // scale_a that TMA loads: the two-wave configurations apply them too
        // (C21 may take 192 x 128 tiles where the per-tensor plan took 256 x 128 or 128 x 128
        // ones)
        GemmProblem q{m, n, k, 0, 132, 0, {}, GemmScaleRecipe::block, true};
        const GemmPlan tma = gemm_fp8_plan(q);
        EXPECT_TRUE(detail::gemm::takes_block_scales(tma.config, true));
        if (m > 64 && detail::gemm::takes_block_scales(t.config, true)) {
          if (std::string(tma.config_rule) == "C21" || std::string(t.config_rule) == "C21") {
            EXPECT_TRUE(t.config == gemm_config_id("m256n128") ||
                        t.config == gemm_config_id("m128n128") || t.config == tma.config)
                << m << "x" << n << "x" << k << ": " << gemm_config_name(t.config);
          } else {
            EXPECT_EQ(tma.config, t.config);
          }
        }
      }
    }
  }
  // at DeepSeek-V3's M = 4096 shapes the per-tensor plan's 256-row tiles are kept where
  // 192-row ones take 25/18 of their rounds or more (10 against 7 here)
  GemmProblem q{4096, 7168, 16384, 0, 132, 0, {}, GemmScaleRecipe::block, true};
  EXPECT_STREQ(gemm_config_name(gemm_fp8_plan(q).config),
               gemm_config_name(gemm_fp8_plan(4096, 7168, 16384, 132).config));
  EXPECT_TRUE(detail::gemm::two_waves(gemm_fp8_plan(q).config));
}

// C21: 128-block scales (scale_a by TMA), per-tensor scales promoted at K <= 2048 and
// row-wise ones at K <= 512, where the plan took 256 x 128 tiles and 192 x 128 ones take
// under 25/18 of their rounds: 192 x 128 tiles.
TEST(GemmPlanRules, BlockScalesTakeThreeWarpgroupsWhereTheirRoundsPay) {
  struct Shape {
    std::uint64_t m, n, k;
    const char* block;  // the 128-block plan's configuration
  };
  // rounds on 132 SMs, 192-row tiles against 256-row ones: 21 / 16, 32 / 24, 43 / 32, 27 /
  // 20 (under 25/18: C21); 10 / 7, 6 / 4 (kept)
  for (const Shape& s : {Shape{8192, 8192, 8192, "m192n128"}, Shape{4096, 24576, 1536, "m192n128"},
                         Shape{4096, 32768, 512, "m192n128"}, Shape{8192, 10240, 8192, "m192n128"},
                         Shape{4096, 7168, 16384, "m256n128"},
                         Shape{4096, 4096, 7168, "m256n128"}}) {
    SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k));
    GemmProblem q{s.m, s.n, s.k, 0, 132, 0, {}, GemmScaleRecipe::block, true};
    const GemmPlan block = gemm_fp8_plan(q);
    EXPECT_STREQ(gemm_config_name(block.config), s.block);
    EXPECT_STREQ(block.config_rule, std::string(s.block) == "m192n128" ? "C21" : "C11");
    EXPECT_EQ(block.splits, 1);
    // per-tensor scales: the same where K <= 2048 (C21), else 256 x 128 tiles; row-wise
    // scales where K <= 512
    q.recipe = GemmScaleRecipe::tensor;
    EXPECT_STREQ(gemm_config_name(gemm_fp8_plan(q).config), s.k <= 2048 ? s.block : "m256n128");
    q.recipe = GemmScaleRecipe::row;
    const GemmPlan row = gemm_fp8_plan(q);
    EXPECT_STREQ(gemm_config_name(row.config), s.k <= 512 ? s.block : "m256n128");
    EXPECT_STREQ(row.config_rule, s.k <= 512 ? "C21" : "C11");
    // fast row-wise scales: 128 x 256 tiles (C10), ping-pong 128 x 128 ones at K <= 4096
    // (C25), with both halves of D staged at K <= 512 (C26)
    const char* fast = s.k <= 512 ? "m128n128ppd" : s.k <= 4096 ? "m128n128pp" : "m128n256";
    q.tuning.accumulation = GemmAccumulation::fast;
    EXPECT_STREQ(gemm_config_name(gemm_fp8_plan(q).config), fast);
    q.tuning.accumulation = GemmAccumulation::promoted;
    // fast accumulation: the same
    q.recipe = GemmScaleRecipe::tensor;
    q.tuning.accumulation = GemmAccumulation::fast;
    EXPECT_STREQ(gemm_config_name(gemm_fp8_plan(q).config), fast);
    q.tuning.accumulation = GemmAccumulation::promoted;
    // scale_a that TMA cannot load: 128 x 128 tiles (C17), as before
    q.recipe = GemmScaleRecipe::block;
    q.block_scale_a_tma = false;
    EXPECT_STREQ(gemm_fp8_plan(q).config_rule, "C17");
  }
  // where C17 took 128 x 128 tiles (with a split tail: 4 rounds and a quarter) and 192 x 128
  // ones take 3 rounds (under 18/25 of 4.25): C21, unsplit; not at 512 x 4096 x 4096 (one
  // round each), nor where D's rows are not whole 16-byte chunks
  GemmProblem tail{4096, 2112, 7168, 0, 132, 0, {}, GemmScaleRecipe::block, true};
  const GemmPlan c21 = gemm_fp8_plan(tail);
  EXPECT_STREQ(gemm_config_name(c21.config), "m192n128");
  EXPECT_STREQ(c21.config_rule, "C21");
  EXPECT_EQ(c21.splits, 1);
  EXPECT_EQ(c21.split_tiles, 0);
  tail.recipe = GemmScaleRecipe::tensor;
  EXPECT_STREQ(gemm_config_name(gemm_fp8_plan(tail).config), "m128n144");
  GemmProblem one_round{512, 4096, 4096, 0, 132, 0, {}, GemmScaleRecipe::block, true};
  EXPECT_STREQ(gemm_config_name(gemm_fp8_plan(one_round).config), "m128n128");
  GemmProblem padded{8192, 8192, 8192, 8192 * 2 + 2, 132, 0, {}, GemmScaleRecipe::block, true};
  EXPECT_STREQ(gemm_fp8_plan(padded).config_rule, "C15");
  // forced, it runs whatever the recipe
  GemmProblem forced{4096, 4096, 4096, 0, 132, 0, {gemm_config_id("m192n128")}};
  EXPECT_STREQ(gemm_fp8_plan(forced).config_rule, "C1");
}

// A forced two-wave configuration takes 128-block scales only where TMA loads scale_a; the
// refusal says so and names the configurations that take any layout.
TEST(GemmPlanRules, TwoWaveBlockScalesNeedScaleATma) {
  GemmProblem q{4096, 4096, 4096, 0, 132, 0, {}, GemmScaleRecipe::block, false};
  q.tuning.config = gemm_config_id("m256n128");
  std::string message;
  EXPECT_EQ(test::refused([&] { gemm_fp8_plan(q); }, &message), "tuning.config");
  EXPECT_NE(message.find("configuration m256n128 takes 128-block scales only where TMA loads "
                         "scale_a: M-major columns, 16-byte aligned, a multiple of 4 floats "
                         "apart (at least M); use m64n32, m64n64, m64n128, m128n128 or "
                         "m128n192, or -1"),
            std::string::npos)
      << message;
  q.block_scale_a_tma = true;
  EXPECT_EQ(gemm_fp8_plan(q).config, gemm_config_id("m256n128"));
  q.tuning.config = gemm_config_id("m128n256");  // (fast accumulation only)
  EXPECT_EQ(test::refused([&] { gemm_fp8_plan(q); }, &message), "tuning.config");
  EXPECT_NE(message.find("configuration m128n256 does not take 128-block scales"),
            std::string::npos)
      << message;
}

// Which 128-block scale_a TMA loads (the launcher's fact for the plan): M-major columns a
// whole number of 16-byte chunks apart, at least M, from a 16-byte aligned address.
// Which 128-block scale layouts TMA loads (block_scale_a_tma, block_scale_b_tma): a case is
// the recipe, the array's strides (mn, k), the rows (M or N), K, whether its address is
// 16-byte aligned, and the answer.
struct ScaleTmaCase {
  GemmScaleRecipe recipe;
  std::int64_t mn, k;
  std::uint64_t rows, k_elems;
  bool aligned, tma;
  const char* why;
};
template <class Check>
void expect_scale_tma(std::initializer_list<ScaleTmaCase> cases, Check&& check) {
  for (const ScaleTmaCase& c : cases) {
    detail::GemmKernelScale s;
    s.recipe = c.recipe;
    s.a_mn = s.b_mn = c.mn;
    s.a_k = s.b_k = c.k;
    EXPECT_EQ(check(s, c.rows, c.k_elems, c.aligned), c.tma) << c.why;
  }
}

TEST(GemmScaleRecipes, BlockScaleATma) {
  constexpr auto B = GemmScaleRecipe::block;
  expect_scale_tma({{B, 1, 300, 300, 1040, true, true, "M-major, columns 16 bytes apart"},
                    {B, 1, 300, 300, 1040, false, false, "misaligned address"},
                    {B, 1, 300, 301, 1040, true, false, "columns overlap"},
                    {B, 1, 301, 301, 1040, true, false, "not whole 16-byte chunks"},
                    {B, 1, 301, 301, 128, true, true, "one column: no stride"},
                    {B, 1, 304, 301, 1040, true, true, "DeepGEMM's: M rounded to 4"},
                    {B, 9, 1, 301, 1040, true, false, "row-major"},
                    {GemmScaleRecipe::row, 1, 304, 301, 1040, true, false, "row-wise"}},
                   detail::block_scale_a_tma);
}

TEST(GemmScaleRecipes, BlockScaleBTma) {
  constexpr auto B = GemmScaleRecipe::block;
  expect_scale_tma({{B, 8, 1, 4000, 1024, true, true, "torch's layout at K = 1024: rows of 8"},
                    {B, 8, 1, 4000, 1024, false, false, "misaligned address"},
                    {B, 8, 1, 4000, 1152, true, false, "9 k-blocks: rows overlap"},
                    {B, 9, 1, 4000, 1152, true, false, "not whole 16-byte runs"},
                    {B, 9, 1, 128, 1152, true, true, "one row: no stride"},
                    {B, 12, 1, 4000, 1152, true, true, "rows padded to 4 k-blocks"},
                    {B, 1, 32, 4000, 4096, true, false, "column-major"},
                    {GemmScaleRecipe::row, 8, 1, 4000, 1024, true, false, "row-wise"}},
                   detail::block_scale_b_tma);
}

// The 128-block scale runs (gemm_scale_runs.hpp) over one CTA's k-blocks as the kernels walk
// them, for rings of Stages stages: the scale thread and the consumers take the same run slot
// at every k-block, those of the tiled kernel moving to it at the k-block (at) and those of
// the two-wave kernel one k-block ahead (ahead); the slot's boxes hold that k-block's column;
// and a slot is loaded again only once every k-block that read it is Stages or more k-blocks
// back, so that its stage has been freed, which the consumers do after reading its scales.
template <int Stages>
void walk_scale_runs(const std::vector<std::pair<std::int32_t, std::int32_t>>& units) {
  using detail::gemm::kScaleRun;
  using detail::gemm::scale_run_origin;
  using detail::gemm::starts_scale_run;
  detail::gemm::ScaleRunSlot<Stages> loader, consumer, consumer_ahead;
  std::vector<std::int64_t> last_read(Stages, -(std::int64_t{1} << 40));
  std::vector<std::int32_t> origin(Stages, -1);
  std::int64_t n = 0;  // the CTA's k-blocks in order (the ring's)
  for (const auto& [kb_begin, kb_end] : units) {
    consumer_ahead.at(kb_begin, kb_begin);  // (the unit's first k-block, formed at its start)
    std::uint32_t slot_ahead = consumer_ahead.slot;
    for (std::int32_t kb = kb_begin; kb < kb_end; ++kb, ++n) {
      if (starts_scale_run(kb, kb_begin)) {  // the scale thread, once the stage is free
        loader.at(kb, kb_begin);
        EXPECT_LE(last_read[loader.slot], n - Stages) << "slot " << loader.slot << " at " << n;
        origin[loader.slot] = scale_run_origin(kb);
      }
      consumer.at(kb, kb_begin);
      ASSERT_EQ(consumer.slot, loader.slot) << n;
      ASSERT_EQ(slot_ahead, loader.slot) << n;
      slot_ahead = consumer_ahead.ahead(kb, kb_begin, kb_end);
      EXPECT_GE(kb, origin[consumer.slot]) << n;
      EXPECT_LT(kb, origin[consumer.slot] + kScaleRun) << n;
      last_read[consumer.slot] = n;
    }
  }
}

// One CTA's units as split K gives them: 1..`most` units of 1..`longest` k-blocks, each
// starting at any k-block below 40.
std::vector<std::pair<std::int32_t, std::int32_t>> random_units(std::mt19937& rng, int most,
                                                                int longest) {
  std::vector<std::pair<std::int32_t, std::int32_t>> units;
  const int count = 1 + static_cast<int>(rng() % static_cast<unsigned>(most));
  for (int u = 0; u < count; ++u) {
    const auto begin = static_cast<std::int32_t>(rng() % 40);
    const auto length = 1 + static_cast<std::int32_t>(rng() % static_cast<unsigned>(longest));
    units.push_back({begin, begin + length});
  }
  return units;
}

TEST(GemmScaleRuns, SlotsHoldTheirKBlocksAndAreFreeWhenReloaded) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const auto units = random_units(rng, 12, 9);
    walk_scale_runs<3>(units);
    walk_scale_runs<5>(units);
    walk_scale_runs<8>(units);
    walk_scale_runs<12>(units);
  }
  // the launcher's boxes: the tile's rows x a run; a run x the tile's 128-row blocks of B
  EXPECT_EQ(detail::gemm::scale_a_run_box(64), (std::array<std::uint32_t, 2>{64, 4}));
  EXPECT_EQ(detail::gemm::scale_b_run_box(256), (std::array<std::uint32_t, 2>{4, 2}));
  EXPECT_EQ(detail::gemm::scale_b_run_box(64), (std::array<std::uint32_t, 2>{4, 1}));
}

// One CTA's ring with 128-block scales that TMA loads (scale_a and scale_b), played out on the
// host in random orders: the producer thread (waits for a free stage, arms its full barrier
// for A, B and, at a run's first k-block, the scale boxes, issues those boxes where it loads
// them itself, then A and B), the scale thread of load_block_scales_tma where the producer
// does not load the boxes (waits for the stage where it is told to, issues the run's boxes at
// a run's first k-block, arrives on the full barrier where it is told to), the consumers
// (wait for a full stage,
// free it later, at most two k-blocks held, as the promotion pipelines them) and the TMA
// (completes an issued copy on its stage's full barrier at any time after). mbarriers as the
// PTX ISA has them: a phase completes once its arrivals are in and its transaction count is
// back at zero; a wait for a parity returns once the barrier's current phase has the other.
// Returns false where every party still has work and none can move (a deadlock), or where a
// phase of a full barrier completed with bytes of another k-block's copies (the stage's data
// taken for the wrong k-block).
namespace ring_model {

struct Copy {
  int stage;
  std::int64_t k_block;  // the CTA's k-block (ring order) it belongs to
  long bytes;
};

struct Bar {
  int arrivals = 1, pending = 1;
  long tx = 0;
  long completed = 0;                 // phases completed
  std::vector<std::int64_t> counted;  // full barriers: the k-blocks whose bytes landed this phase
  bool mixed = false;                 // a phase completed with another k-block's bytes
  bool ready(unsigned parity) const { return (static_cast<unsigned>(completed) & 1u) != parity; }
  void settle(int stages, int stage, bool full) {
    if (pending != 0 || tx != 0) return;
    if (full) {
      const std::int64_t k_block = stage + completed * stages;
      for (std::int64_t k : counted) mixed = mixed || k != k_block;
    }
    counted.clear();
    ++completed;
    pending = arrivals;
  }
};

// How the scale thread takes part: waits(run_start) and whether it arrives; or none, the
// producer loading the run boxes (by_producer).
struct ScaleThread {
  std::function<bool(bool)> waits;
  bool arrives;
  bool by_producer = false;
};

bool play(int stages, const std::vector<std::pair<std::int32_t, std::int32_t>>& units,
          std::uint32_t seed, const ScaleThread& scale_thread) {
  using detail::gemm::starts_scale_run;
  constexpr long kAB = 24576, kScales = 1040;
  std::vector<bool> run_start;
  for (const auto& [b, e] : units) {
    for (std::int32_t kb = b; kb < e; ++kb) run_start.push_back(starts_scale_run(kb, b));
  }
  const auto n = static_cast<std::int64_t>(run_start.size());
  std::vector<Bar> full(stages), empty(stages);
  for (Bar& b : full) b.arrivals = b.pending = scale_thread.arrives ? 2 : 1;
  std::vector<Copy> in_flight;
  std::int64_t producer = 0, scaler = scale_thread.by_producer ? n : 0, taken = 0, freed = 0;
  std::mt19937 rng(seed);
  const auto stage_of = [&](std::int64_t j) { return static_cast<int>(j % stages); };
  const auto parity_of = [&](std::int64_t j) { return static_cast<unsigned>((j / stages) & 1); };
  for (;;) {
    std::vector<std::function<void()>> moves;
    if (producer < n && empty[stage_of(producer)].ready(parity_of(producer) ^ 1u)) {
      moves.push_back([&] {
        const int st = stage_of(producer);
        full[st].tx += kAB + (run_start[producer] ? kScales : 0);  // arrive.expect_tx
        --full[st].pending;
        if (scale_thread.by_producer && run_start[producer]) {
          in_flight.push_back({st, producer, kScales});
        }
        in_flight.push_back({st, producer, kAB});
        full[st].settle(stages, st, true);
        ++producer;
      });
    }
    if (scaler < n) {
      const bool waits = scale_thread.waits(run_start[scaler]);
      if (!waits || empty[stage_of(scaler)].ready(parity_of(scaler) ^ 1u)) {
        moves.push_back([&] {
          const int st = stage_of(scaler);
          if (run_start[scaler]) in_flight.push_back({st, scaler, kScales});
          if (scale_thread.arrives) {
            --full[st].pending;
            full[st].settle(stages, st, true);
          }
          ++scaler;
        });
      }
    }
    if (taken < n && taken - freed < 2 && full[stage_of(taken)].ready(parity_of(taken))) {
      moves.push_back([&] { ++taken; });
    }
    if (freed < taken) {
      moves.push_back([&] {
        const int st = stage_of(freed);
        --empty[st].pending;
        empty[st].settle(stages, st, false);
        ++freed;
      });
    }
    for (std::size_t c = 0; c < in_flight.size(); ++c) {
      moves.push_back([&, c] {
        const Copy copy = in_flight[c];
        in_flight.erase(in_flight.begin() + static_cast<std::ptrdiff_t>(c));
        full[copy.stage].tx -= copy.bytes;  // complete_tx
        full[copy.stage].counted.push_back(copy.k_block);
        full[copy.stage].settle(stages, copy.stage, true);
      });
    }
    if (moves.empty()) {
      for (const Bar& b : full) {
        if (b.mixed) return false;
      }
      return producer == n && scaler == n && freed == n && in_flight.empty();
    }
    moves[rng() % moves.size()]();
  }
}

}  // namespace ring_model

// The tiled kernel's 128-block scale_b per 64-column piece (piece_scale_block): for tiles of
// 64 to 192 columns that start on multiples of their width, every column's 128-row block of B
// is the tile's first block plus its piece's, and the tile's columns span at most two blocks
// (the kernel reads two).
TEST(GemmScaleRuns, PiecesTakeTheirColumnsBlock) {
  using detail::gemm::piece_scale_block;
  for (const int block_n : {64, 128, 192}) {
    for (int tn = 0; tn < 12; ++tn) {
      const int col0 = tn * block_n;
      const bool offset64 = col0 % 128 != 0;
      for (int c = 0; c < block_n; ++c) {
        const int piece = c / 64;
        const int block = (col0 + c) / 128 - col0 / 128;
        EXPECT_EQ(piece_scale_block(piece, offset64), block)
            << block_n << " " << tn << " " << c;
        EXPECT_LE(block, 1) << block_n << " " << tn << " " << c;
      }
    }
  }
}

TEST(GemmScaleRuns, RingNeverDeadlocks) {
  using detail::gemm::block_scale_full_arrivals;
  using detail::gemm::producer_loads_scale_runs;
  // the kernels where TMA loads both scales, in a ring of `stages`: the producer loads the
  // run boxes, or the scale thread does, waiting for every stage and arriving on it
  const auto kernel = [](int stages) {
    const bool by_producer = producer_loads_scale_runs(true, stages);
    EXPECT_EQ(block_scale_full_arrivals(true, stages), by_producer ? 1u : 2u);
    return ring_model::ScaleThread{[](bool) { return true; }, !by_producer, by_producer};
  };
  // the scale thread of 2026-11-29 that loaded both scales' boxes in rings of four stages
  // or more: a wait at a run's first k-block alone, no arrival
  const ring_model::ScaleThread runs_only{[](bool run_start) { return run_start; }, false};
  // the scale thread before 2026-11-29: a wait at every k-block, no arrival
  const ring_model::ScaleThread every_stage{[](bool) { return true; }, false};
  // 64 x 32768 x 512 with 128-block scales on 128 CTAs: two units of four k-blocks, 8 stages
  const std::vector<std::pair<std::int32_t, std::int32_t>> two_short = {{0, 4}, {0, 4}};
  int old_deadlocks = 0;
  for (std::uint32_t seed = 0; seed < 2000; ++seed) {
    EXPECT_TRUE(ring_model::play(8, two_short, seed, kernel(8))) << "seed " << seed;
    EXPECT_TRUE(ring_model::play(8, two_short, seed, runs_only)) << "seed " << seed;
    if (!ring_model::play(8, two_short, seed, every_stage)) ++old_deadlocks;
  }
  // the model finds the deadlock the GPU showed, so the orders it plays reach it
  EXPECT_GT(old_deadlocks, 0);
  // waits at runs' first k-blocks alone are not enough where runs are longer than the ring
  // (the two-wave kernels' 3 stages): there the thread arrives at every k-block
  int short_ring_failures = 0;
  for (std::uint32_t seed = 0; seed < 2000; ++seed) {
    if (!ring_model::play(3, {{0, 12}, {2, 9}}, seed, runs_only)) ++short_ring_failures;
  }
  EXPECT_GT(short_ring_failures, 0);
  EXPECT_FALSE(producer_loads_scale_runs(true, 3));
  EXPECT_TRUE(producer_loads_scale_runs(true, 4));
  EXPECT_FALSE(producer_loads_scale_runs(false, 8));  // scale_b written by the scale thread
  EXPECT_EQ(block_scale_full_arrivals(false, 8), 2u);
  // split K and several units per CTA, rings of 3 to 16 stages (m64n32 runs 16 with block scales)
  std::mt19937 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    const auto units = random_units(rng, 6, 14);
    for (int stages : {3, 4, 5, 8, 12, 15, 16}) {
      EXPECT_TRUE(ring_model::play(stages, units, static_cast<std::uint32_t>(trial), kernel(stages)))
          << "trial " << trial << ", " << stages << " stages";
    }
  }
}

// The table's rows: every id is listed once in the plan's rules, every configuration has a
// name and an id that round-trips, and the retired one is not built.
// The cluster rules by id: G1 where the tiled kernel's neighbouring CTAs share tiles of B
// (K unsplit or split in every tile, tile rows and grid even), G2 the small-M kernel's
// cluster of its splits, G3 every other plan.
TEST(GemmPlanRules, ClusterRulesById) {
  struct Case {
    std::uint64_t m, n, k;
    const char* config;  // forced, or nullptr: the plan's
    bool fast;
    int cluster;
    const char* rule;
  };
  const Case cases[] = {
      {128, 4096, 7168, nullptr, false, 2, "G1"},   // m64n64, 128 CTAs of one tile each
      {128, 4224, 4096, "m64n64", false, 2, "G1"},  // 132 units, 132 CTAs
      {4096, 4096, 8192, nullptr, true, 2, "G1"},   // m128n256: 512 tiles, 128 CTAs
      {4096, 4096, 4096, nullptr, true, 1, "G3"},   // m128n128pp: the ping-pong kernel
      {128, 4288, 4096, "m64n64", false, 1, "G3"},  // 134 units in two rounds: 67 CTAs
      {192, 4096, 4096, "m64n64", false, 1, "G3"},  // three rows of tiles
      {128, 2112, 7168, nullptr, false, 2, "G1"},   // K split in two in every tile: pairs
      {512, 4864, 8192, nullptr, false, 1, "G3"},   // a split tail (K4)
      {64, 32768, 512, nullptr, false, 1, "G3"},    // one row of tiles
      {4096, 4096, 4096, nullptr, false, 1, "G3"},  // m256n128: the two-wave kernel
  };
  for (const Case& c : cases) {
    GemmProblem q;
    q.m = c.m;
    q.n = c.n;
    q.k = c.k;
    q.sm_count = 132;
    if (c.config != nullptr) q.tuning.config = gemm_config_id(c.config);
    if (c.fast) q.tuning.accumulation = GemmAccumulation::fast;
    const GemmPlan p = gemm_fp8_plan(q);
    SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) +
                 " " + gemm_config_name(p.config));
    EXPECT_EQ(p.cluster, c.cluster);
    EXPECT_STREQ(p.cluster_rule, c.rule);
  }
  const GemmPlan tail = gemm_fp8_plan(512, 4864, 8192, 132);
  EXPECT_STREQ(tail.splits_rule, "K4");  // (the case above: its last round's tiles split)
  EXPECT_LT(tail.split_tiles, tail.tiles);
  const GemmPlan small = gemm_fp8_plan(16, 1024, 4096, 132);
  EXPECT_STREQ(small.splits_rule, "K2");
  EXPECT_STREQ(small.cluster_rule, "G2");
  EXPECT_EQ(small.cluster, small.splits);
  EXPECT_GT(small.cluster, 1);
}

// The rules as the docs list them: every rule's row in kernels/gemm/README.md's table ("| C1
// |"), and the experiment it names the start of a heading in kernels/gemm/EXPERIMENTS.md or
// README.md (headings' "×" read as "x").
TEST(GemmPlanRules, EveryRuleInTheDocs) {
  const auto read = [](const char* path) {
    std::ifstream in(std::string(TMAKIT_SOURCE_DIR) + "/" + path);
    EXPECT_TRUE(in.good()) << path;
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) {
      for (std::size_t at; (at = line.find("\xc3\x97")) != std::string::npos;) {
        line.replace(at, 2, "x");
      }
      lines.push_back(line);
    }
    return lines;
  };
  const std::vector<std::string> readme = read("kernels/gemm/README.md");
  std::vector<std::string> headings;
  for (const char* path : {"kernels/gemm/README.md", "kernels/gemm/EXPERIMENTS.md"}) {
    for (const std::string& line : read(path)) {
      if (line.rfind("#", 0) == 0) headings.push_back(line.substr(line.find_first_not_of("# ")));
    }
  }
  std::size_t count = 0;
  const detail::gemm::PlanRule* rules = detail::gemm::plan_rules(&count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::string row = std::string("| ") + rules[i].id + " |";
    EXPECT_TRUE(std::any_of(readme.begin(), readme.end(),
                            [&](const std::string& l) { return l.rfind(row, 0) == 0; }))
        << rules[i].id << ": no row in kernels/gemm/README.md's table";
    const std::string experiment = rules[i].experiment;
    if (experiment.empty()) continue;
    EXPECT_TRUE(std::any_of(headings.begin(), headings.end(),
                            [&](const std::string& h) { return h.rfind(experiment, 0) == 0; }))
        << rules[i].id << ": no heading starts with \"" << experiment << "\"";
  }
}

TEST(GemmPlanRules, TheTableAndTheRuleList) {
  std::size_t count = 0;
  const detail::gemm::PlanRule* rules = detail::gemm::plan_rules(&count);
  ASSERT_EQ(count, 26u + 6u + 3u);
  for (std::size_t i = 0; i < count; ++i) {
    const std::string id = rules[i].id;
    const std::string want = i < 26   ? "C" + std::to_string(i + 1)
                             : i < 32 ? "K" + std::to_string(i - 25)
                                      : "G" + std::to_string(i - 31);
    EXPECT_EQ(id, want);
    EXPECT_GT(std::string(rules[i].says).size(), 20u) << id;
  }
  std::string block_scales;
  for (int id = 0; id < kGemmConfigs; ++id) {
    const GemmConfigInfo info = gemm_config_info(id);
    EXPECT_EQ(gemm_config_id(info.name), id);
    EXPECT_EQ(info.built, gemm_config_built(id));
    if (info.block_scales) block_scales += std::string(block_scales.empty() ? "" : " ") + info.name;
  }
  EXPECT_EQ(block_scales, "m64n128 m128n128 m64n64 m64n32 m128n192");
  std::string block_scales_tma;
  for (int id = 0; id < kGemmConfigs; ++id) {
    const GemmConfigInfo info = gemm_config_info(id);
    if (info.block_scales_tma) {
      block_scales_tma += std::string(block_scales_tma.empty() ? "" : " ") + info.name;
    }
  }
  EXPECT_EQ(block_scales_tma,
            "m64n128 m128n128 m64n64 m256n128 m128n256w m192n128 m64n32 m128n192");
  EXPECT_FALSE(gemm_config_built(gemm_config_id("m128n128c2")));
  EXPECT_EQ(gemm_config_id("m128x128"), -1);
  EXPECT_STREQ(gemm_config_info(kGemmConfigs).name, "?");
}

}  // namespace
}  // namespace tmakit
