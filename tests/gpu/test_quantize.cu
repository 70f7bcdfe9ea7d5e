// FP8 quantizer against its CPU reference, bit for bit (x_fp8 and the scales): every recipe
// (tensor, row, block for operands a and b) and input type (bf16, fp16, fp32) on odd shapes
// (rows 1, 7, 129; K 16, 144, 7168), padded row strides, non-finite groups, scale strides, a
// CUDA graph replayed on new x, the tensor recipe's grid barrier (rule Q6) at the most tiles
// the SMs hold and on four streams at once, and a round trip through the FP8 GEMM. Outputs are
// poisoned first: row padding of x_fp8 and floats past the scale array must keep their poison.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "quantize/quantize_plan.hpp"
#include "test_kernels_common.hpp"
#include "tmakit/kernels/detail/launch_support.hpp"
#include "tmakit/kernels/gemm.hpp"
#include "tmakit/kernels/quantize.hpp"

namespace tmakit::test {
namespace {

using R = GemmScaleRecipe;
using O = QuantizeOperand;

struct Case {
  R recipe;
  O operand;
  DataType type;
  std::uint64_t rows, cols;
  std::uint64_t pad = 0;  // extra bytes per row of x and of x_fp8
};

std::string describe(const Case& c) {
  std::ostringstream os;
  os << (c.recipe == R::tensor ? "tensor"
         : c.recipe == R::row  ? "row"
                               : "block")
     << (c.operand == O::a ? "/a" : "/b") << " " << name(c.type) << " " << c.rows << "x" << c.cols
     << " pad=" << c.pad;
  return os.str();
}

void PrintTo(const Case& c, std::ostream* os) {
  *os << describe(c);
}

// Stores float v in x's element (r, c) (rounded to nearest for 16-bit types).
void put(Image& x, std::uint64_t r, std::uint64_t c, float v) {
  std::uint8_t* p = x.host.data() + r * x.row_stride + c * element_bytes(x.type);
  if (x.type == DataType::float32) {
    std::memcpy(p, &v, 4);
  } else if (x.type == DataType::bfloat16) {
    const __nv_bfloat16 h = __float2bfloat16_rn(v);
    std::memcpy(p, &h, 2);
  } else {
    const __half h = __float2half_rn(v);
    std::memcpy(p, &h, 2);
  }
}

// Values spread over many binades, a magnitude of their own per row and per 128 columns (so
// every group's scale differs), some exact zeros, within fp16's range.
void fill(Image& x, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::uniform_int_distribution<int> binade(-6, 6);
  for (std::uint64_t r = 0; r < x.rows; ++r) {
    for (std::uint64_t c = 0; c < x.cols; ++c) {
      const float group = std::ldexp(1.0f, static_cast<int>((r * 7 + c / 128 * 3) % 13) - 6);
      const float v = gen() % 17 == 0 ? 0.0f : unit(gen) * std::ldexp(1.0f, binade(gen)) * group;
      put(x, r, c, v);
    }
  }
  x.upload();
}

// The scale array of a case in device memory, with `spare` poisoned floats past its end.
struct Scales {
  std::uint64_t count;
  std::uint64_t spare = 16;
  float* device = nullptr;
  explicit Scales(std::uint64_t n) : count(n) {
    EXPECT_EQ(cudaMalloc(&device, (count + spare) * sizeof(float)), cudaSuccess);
    EXPECT_EQ(cudaMemset(device, kPoison, (count + spare) * sizeof(float)), cudaSuccess);
  }
  ~Scales() { cudaFree(device); }
  Scales(const Scales&) = delete;
  Scales& operator=(const Scales&) = delete;
  std::vector<float> download() const {
    std::vector<float> out(count + spare);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(out.data(), device, out.size() * sizeof(float), cudaMemcpyDeviceToHost),
              cudaSuccess);
    return out;
  }
};

// Same bits, or both NaN (the GPU's NaN is not the CPU's).
bool same_float(float a, float b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  return std::memcmp(&a, &b, 4) == 0;
}

// Runs the case on the GPU and its reference on the CPU; every byte of x_fp8 (padding
// included) and every float of the scale array (and past it) must agree.
void check_case(const Case& c, Image& x, const GemmScaleStrides& strides = {}) {
  SCOPED_TRACE(describe(c));
  const QuantizeScaleShape shape = quantize_scale_shape(c.rows, c.cols, c.recipe, c.operand);
  std::uint64_t span = 1;
  if (c.recipe != R::tensor) {
    const bool defaults = strides.mn == -1 && strides.k == -1;
    const std::uint64_t mn = defaults ? 0 : static_cast<std::uint64_t>(strides.mn);
    const std::uint64_t k =
        defaults || c.recipe == R::row ? 0 : static_cast<std::uint64_t>(strides.k);
    span = defaults ? shape.mn * shape.k : (shape.mn - 1) * mn + (shape.k - 1) * k + 1;
  }
  Image q(DataType::uint8, 1, c.rows, c.cols, c.pad);
  Scales scales(span);
  quantize_fp8(x.ref(), q.ref(), scales.device, c.recipe, c.operand, strides);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  const std::vector<std::uint8_t> got = q.download();
  const std::vector<float> got_scales = scales.download();

  std::vector<float> want_scales(span + scales.spare);
  std::memset(want_scales.data(), kPoison, want_scales.size() * sizeof(float));
  reference::quantize_fp8(x.host_ref(), q.host_ref(), want_scales.data(), c.recipe, c.operand,
                          strides);
  EXPECT_EQ(count_mismatches(q, q.host, got), 0u);
  int wrong = 0;
  for (std::size_t i = 0; i < want_scales.size(); ++i) {
    if (!same_float(want_scales[i], got_scales[i]) && ++wrong <= 5) {
      ADD_FAILURE() << "scale[" << i << "]: GPU " << got_scales[i] << ", reference "
                    << want_scales[i];
    }
  }
  EXPECT_EQ(wrong, 0);
}

// x_fp8 (q) and the scales on the device against the reference of x: every byte of q and
// every float of the scale array and its poisoned spares; `what` names the call in a failure.
void expect_reference(Image& x, Image& q, const Scales& scales, R recipe, O operand,
                      const std::string& what) {
  const std::vector<std::uint8_t> got = q.download();
  const std::vector<float> got_scales = scales.download();
  std::vector<float> want_scales(scales.count + scales.spare);
  std::memset(want_scales.data(), kPoison, want_scales.size() * sizeof(float));
  reference::quantize_fp8(x.host_ref(), q.host_ref(), want_scales.data(), recipe, operand);
  EXPECT_EQ(count_mismatches(q, q.host, got), 0u) << what;
  for (std::size_t i = 0; i < want_scales.size(); ++i) {
    EXPECT_TRUE(same_float(got_scales[i], want_scales[i])) << what << " scale " << i;
  }
}

// One quantize_fp8 call of operand a captured on `s` into a graph, instantiated; destroyed
// with the object.
struct CapturedCall {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  CapturedCall(Image& x, Image& q, const Scales& scales, R recipe, cudaStream_t s) {
    EXPECT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    quantize_fp8(x.ref(), q.ref(), scales.device, recipe, O::a, {}, s);
    EXPECT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
    EXPECT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  }
  ~CapturedCall() {
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  }
  CapturedCall(const CapturedCall&) = delete;
  CapturedCall& operator=(const CapturedCall&) = delete;
};

class QuantizeOddShapes : public ::testing::TestWithParam<Case> {};

TEST_P(QuantizeOddShapes, MatchesReferenceBitForBit) {
  TMAKIT_SKIP_WITHOUT_GPU();
  const Case c = GetParam();
  Image x(c.type, 1, c.rows, c.cols, c.pad);
  fill(x, static_cast<std::uint32_t>(c.rows * 131 + c.cols));
  check_case(c, x);
}

std::vector<Case> odd_cases() {
  std::vector<Case> out;
  for (const DataType t : {DataType::bfloat16, DataType::float16, DataType::float32}) {
    for (const std::uint64_t rows : {1, 7, 129}) {
      for (const std::uint64_t cols : {16, 144, 7168}) {
        out.push_back({R::tensor, O::a, t, rows, cols});
        out.push_back({R::row, O::a, t, rows, cols});
        out.push_back({R::block, O::a, t, rows, cols});
        out.push_back({R::block, O::b, t, rows, cols});
      }
    }
  }
  // padded rows (x no longer one dense run: the tensor recipe's amax walks rows)
  out.push_back({R::tensor, O::a, DataType::bfloat16, 129, 144, 32});
  out.push_back({R::row, O::a, DataType::float32, 129, 144, 48});
  out.push_back({R::block, O::a, DataType::float16, 129, 7168, 16});
  out.push_back({R::block, O::b, DataType::bfloat16, 300, 400, 64});
  // many tiles, and the bench's shapes
  out.push_back({R::row, O::a, DataType::bfloat16, 1000, 4096});
  out.push_back({R::block, O::b, DataType::float32, 513, 1040});
  out.push_back({R::row, O::a, DataType::bfloat16, 16, 7168});
  out.push_back({R::block, O::a, DataType::bfloat16, 16, 7168});
  // the row recipe's two tile forms (rule Q2, rows under 512 bytes or over 64 KiB): one box
  // of runs (144 bf16 above: 9 runs of 16; 40960 fp32 below: 160 of 256), and boxes of 256
  // columns where K has more runs than a box dimension takes (68096 below: 266 of 256)
  // the longest row the row recipe takes (one row per tile, 200 KiB of shared memory)
  out.push_back({R::row, O::a, DataType::bfloat16, 3, 68096});
  out.push_back({R::row, O::a, DataType::float32, 3, 40960});
  // the rows kernel (rule Q7) at its edges, for the row recipe and operand a's 1 x 128
  // blocks: 32 vectors a row (and 30, rule Q2), 4096 (and past it, 4100 and 4098: rule Q2);
  // rows with no run layout (4112: 257 runs of 16) on it too
  for (const R recipe : {R::row, R::block}) {
    out.push_back({recipe, O::a, DataType::bfloat16, 9, 256});
    out.push_back({recipe, O::a, DataType::bfloat16, 9, 240});
    out.push_back({recipe, O::a, DataType::float32, 5, 16384});
    out.push_back({recipe, O::a, DataType::float32, 5, 16400});
    out.push_back({recipe, O::a, DataType::bfloat16, 3, 32768, 16});
    out.push_back({recipe, O::a, DataType::float16, 3, 32784});
    out.push_back({recipe, O::a, DataType::bfloat16, 7, 4112});
    out.push_back({recipe, O::a, DataType::float32, 130, 4112});
  }
  out.push_back({R::tensor, O::a, DataType::float16, 100, 16384, 32});
  // the tensor recipe's rows kernel with R rows a CTA, the last CTA part full (300 = 37 x 8
  // + 4), and one row a CTA past one an SM
  out.push_back({R::tensor, O::a, DataType::bfloat16, 300, 256});
  out.push_back({R::tensor, O::a, DataType::float32, 200, 1040, 16});
  // operand a's last blocks of K's remainder (4112 above and 7184: 16 columns; fp32's a block
  // of 32 vectors, 16-bit's of 16)
  out.push_back({R::block, O::a, DataType::bfloat16, 1024, 7184, 48});
  out.push_back({R::block, O::a, DataType::float32, 33, 7184});
  return out;
}

INSTANTIATE_TEST_SUITE_P(All, QuantizeOddShapes, ::testing::ValuesIn(odd_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           // "row_a_BFLOAT16_129x144_pad0": the description, letters and digits
                           std::string id;
                           for (const char ch : describe(info.param)) {
                             const bool word = std::isalnum(static_cast<unsigned char>(ch)) != 0;
                             id += word ? ch : (ch == '=' ? '\0' : '_');
                           }
                           id.erase(std::remove(id.begin(), id.end(), '\0'), id.end());
                           return id;
                         });

TEST(Quantize, NonFiniteGroups) {
  TMAKIT_SKIP_WITHOUT_GPU();
  for (const DataType t : {DataType::bfloat16, DataType::float16, DataType::float32}) {
    Image x(t, 1, 5, 272);
    fill(x, 7);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    put(x, 0, 3, nan);     // row 0, k-block 0: NaN
    put(x, 1, 200, -inf);  // row 1, k-block 1: -inf
    put(x, 2, 5, -nan);    // a NaN with its sign bit
    put(x, 2, 140, inf);
    for (std::uint64_t c = 0; c < 272; ++c) put(x, 3, c, 0.0f);  // an all-zero row
    put(x, 3, 7, -0.0f);
    for (std::uint64_t c = 0; c < 272; ++c) {  // the least subnormal of x's type, one element
      put(x, 4, c, 0.0f);
    }
    std::uint8_t* tiny = x.host.data() + 4 * x.row_stride + 9 * element_bytes(t);
    tiny[0] = 1;  // the least positive subnormal, little-endian
    x.upload();
    for (const R r : {R::tensor, R::row, R::block}) {
      for (const O o : {O::a, O::b}) check_case({r, o, t, 5, 272}, x);
    }
  }
}

TEST(Quantize, ScaleStridesOtherThanTheGemms) {
  TMAKIT_SKIP_WITHOUT_GPU();
  Image x(DataType::bfloat16, 1, 129, 400);
  fill(x, 11);
  check_case({R::block, O::a, DataType::bfloat16, 129, 400}, x, {4, 1});    // row-major
  check_case({R::block, O::a, DataType::bfloat16, 129, 400}, x, {1, 130});  // M-major, padded
  check_case({R::block, O::b, DataType::bfloat16, 129, 400}, x, {1, 2});    // column-major
  check_case({R::row, O::a, DataType::bfloat16, 129, 400}, x, {3, -1});     // every third
}

TEST(Quantize, GraphReplayReadsTheCurrentX) {
  TMAKIT_SKIP_WITHOUT_GPU();
  for (const R recipe : {R::tensor, R::row, R::block}) {
    Image x(DataType::bfloat16, 1, 64, 512);
    fill(x, 1);
    Image q(DataType::uint8, 1, 64, 512);
    Scales scales(quantize_scale_shape(64, 512, recipe, O::a).mn *
                  quantize_scale_shape(64, 512, recipe, O::a).k);
    cudaStream_t s;
    ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    // NOTE: a first call outside the capture, as a user's warm-up would be (after the
    // uploads and memsets of the legacy stream, which a non-blocking stream does not wait for)
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    quantize_fp8(x.ref(), q.ref(), scales.device, recipe, O::a, {}, s);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    {
      const CapturedCall call(x, q, scales, recipe, s);
      for (std::uint32_t seed : {2u, 3u}) {
        fill(x, seed);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        ASSERT_EQ(cudaGraphLaunch(call.exec, s), cudaSuccess);
        ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
        expect_reference(x, q, scales, recipe, O::a, "seed " + std::to_string(seed));
      }
    }
    cudaStreamDestroy(s);
  }
}

TEST(Quantize, FourStreamsAtOnceMatchOneAtATime) {
  TMAKIT_SKIP_WITHOUT_GPU();
  // each stream its own x, x_fp8 and scales, every recipe in turn, queued without waiting
  constexpr int kStreams = 4;
  const R recipes[kStreams] = {R::tensor, R::row, R::block, R::block};
  const O operands[kStreams] = {O::a, O::a, O::a, O::b};
  std::vector<std::unique_ptr<Image>> xs, qs;
  std::vector<std::unique_ptr<Scales>> ss;
  cudaStream_t streams[kStreams];
  for (int i = 0; i < kStreams; ++i) {
    xs.push_back(std::make_unique<Image>(DataType::bfloat16, 1, 257, 1024));
    fill(*xs.back(), 40 + i);
    qs.push_back(std::make_unique<Image>(DataType::uint8, 1, 257, 1024));
    const QuantizeScaleShape shape = quantize_scale_shape(257, 1024, recipes[i], operands[i]);
    ss.push_back(std::make_unique<Scales>(shape.mn * shape.k));
    ASSERT_EQ(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking), cudaSuccess);
  }
  // NOTE: the uploads and poison memsets ran on the legacy stream, which the non-blocking
  // streams do not wait for
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < kStreams; ++i) {
      quantize_fp8(xs[i]->ref(), qs[i]->ref(), ss[i]->device, recipes[i], operands[i], {},
                   streams[i]);
    }
  }
  for (int i = 0; i < kStreams; ++i) {
    ASSERT_EQ(cudaStreamSynchronize(streams[i]), cudaSuccess);
    expect_reference(*xs[i], *qs[i], *ss[i], recipes[i], operands[i],
                     "stream " + std::to_string(i));
    cudaStreamDestroy(streams[i]);
  }
}

// The rule the tensor recipe's plan takes for `rows` x `cols` of `type` on this GPU.
std::string tensor_rule(DataType type, std::uint64_t rows, std::uint64_t cols) {
  return detail::quantize::plan_quantize(rows, cols,
                                         static_cast<std::uint32_t>(element_bytes(type)), R::tensor,
                                         O::a, {}, detail::multiprocessor_count())
      .id();
}

// Rule Q6 at the edges of what the SMs hold (on a 132-SM part: 528 tiles of bf16, 264 of
// fp32, every CTA waiting at the grid barrier for the last), and rule Q1 just past them.
TEST(Quantize, TensorRecipeWhereEveryTileIsResidentAndPast) {
  TMAKIT_SKIP_WITHOUT_GPU();
  const int sms = detail::multiprocessor_count();
  struct Edge {
    DataType type;
    std::uint64_t tiles_per_sm;  // 128 x 128 tiles an SM holds
  };
  for (const Edge e : {Edge{DataType::bfloat16, 4}, Edge{DataType::float32, 2}}) {
    const std::uint64_t resident = static_cast<std::uint64_t>(sms) * e.tiles_per_sm;
    // 1024 rows: 8 tiles down; columns for all the resident tiles, then one tile column more
    const std::uint64_t fits = resident / 8 * 128;
    for (const std::uint64_t cols : {fits, fits + 128}) {
      SCOPED_TRACE(std::string(name(e.type)) + " 1024x" + std::to_string(cols));
      EXPECT_EQ(tensor_rule(e.type, 1024, cols), cols == fits ? "Q6" : "Q1");
      Image x(e.type, 1, 1024, cols);
      fill(x, static_cast<std::uint32_t>(cols));
      check_case({R::tensor, O::a, e.type, 1024, cols}, x);
    }
  }
}

// Rule Q6 on the row recipe's tiles (one box of runs of whole rows) at their edges: as many
// as the SMs hold, one per SM, and just past each (where the plan takes the 128 x 128 tiles).
// Rows over 64 KiB: shorter ones are rule Q7's wherever these tiles would be resident.
TEST(Quantize, TensorRecipeOnRowTilesAtTheirEdges) {
  TMAKIT_SKIP_WITHOUT_GPU();
  const auto sms = static_cast<std::uint64_t>(detail::multiprocessor_count());
  struct Edge {
    DataType type;
    std::uint64_t cols;
    std::uint64_t tiles_per_sm;
  };
  // a row a tile (bf16 33024: 129 runs of 256, 66 KiB; fp32 16640: 65 runs), two tiles an
  // SM, from one tile an SM
  for (const Edge e : {Edge{DataType::bfloat16, 33024, 2}, Edge{DataType::bfloat16, 33024, 1},
                       Edge{DataType::float32, 16640, 2}}) {
    const std::uint64_t edge = sms * e.tiles_per_sm;
    // every tile resident (or one an SM), then one tile past (or short of) it
    const std::uint64_t past = e.tiles_per_sm == 1 ? edge - 1 : edge + 1;
    for (const std::uint64_t rows : {edge, past}) {
      SCOPED_TRACE(std::string(name(e.type)) + " " + std::to_string(rows) + "x" +
                   std::to_string(e.cols));
      const detail::quantize::QuantizePlan plan = detail::quantize::plan_quantize(
          rows, e.cols, static_cast<std::uint32_t>(element_bytes(e.type)), R::tensor, O::a, {},
          static_cast<int>(sms));
      EXPECT_EQ(plan.row_chunk != 0, rows == edge);
      if (rows == edge) EXPECT_STREQ(plan.id(), "Q6");
      Image x(e.type, 1, rows, e.cols);
      fill(x, static_cast<std::uint32_t>(rows + e.cols));
      check_case({R::tensor, O::a, e.type, rows, e.cols}, x);
    }
  }
}

// Rule Q7 for the tensor recipe at its edges: as many rows as SMs (a CTA each, four vectors a
// thread), one more (eight), then R rows a CTA up to two CTAs an SM, a last CTA part full, and
// one row past where R rows would take more than 512 threads (rule Q6 or Q1).
TEST(Quantize, TensorRecipeInRegistersAtItsEdges) {
  TMAKIT_SKIP_WITHOUT_GPU();
  const auto sms = static_cast<std::uint64_t>(detail::multiprocessor_count());
  struct Edge {
    DataType type;
    std::uint64_t rows, cols;
    std::uint32_t rows_per_cta;  // 0: not rule Q7
  };
  // bf16 rows of 7168: 128 threads a row (4 rows a CTA at most); fp32: 256 (2); fp16 rows of
  // 272: 8 threads a row (64 rows a CTA at most)
  for (const Edge e : {Edge{DataType::bfloat16, sms, 7168, 1},
                       Edge{DataType::bfloat16, sms + 1, 7168, 1},
                       Edge{DataType::bfloat16, 2 * sms + 1, 7168, 2},
                       Edge{DataType::bfloat16, 1025, 7168, 4},
                       Edge{DataType::bfloat16, 8 * sms, 7168, 4},
                       Edge{DataType::bfloat16, 8 * sms + 1, 7168, 0},
                       Edge{DataType::float32, sms + 1, 7168, 1},
                       Edge{DataType::float32, 4 * sms, 7168, 2},
                       Edge{DataType::float32, 4 * sms + 1, 7168, 0},
                       Edge{DataType::float16, 128 * sms - 3, 272, 64},
                       Edge{DataType::float16, 128 * sms + 1, 272, 0}}) {
    SCOPED_TRACE(std::string(name(e.type)) + " " + std::to_string(e.rows) + "x" +
                 std::to_string(e.cols));
    const detail::quantize::QuantizePlan plan = detail::quantize::plan_quantize(
        e.rows, e.cols, static_cast<std::uint32_t>(element_bytes(e.type)), R::tensor, O::a, {},
        static_cast<int>(sms));
    EXPECT_EQ(plan.in_registers, e.rows_per_cta != 0);
    EXPECT_EQ(plan.rows_per_cta, e.rows_per_cta);
    Image x(e.type, 1, e.rows, e.cols);
    fill(x, static_cast<std::uint32_t>(e.rows) + 7);
    check_case({R::tensor, O::a, e.type, e.rows, e.cols}, x);
  }
}

// Rule Q7's layouts for the row recipe and operand a's blocks at their edges, each checked
// against the plan: short rows (a warp a row, R rows a CTA, the last CTA part full or holding
// one row), and operand a's segments (a CTA per 128 vectors of a row, the segments on the
// grid's y, the last segment part full) up to as many CTAs as kMaxSegmentCtasPerSm an SM, and
// one row past it.
TEST(Quantize, RowAndBlockRecipesShortRowsAndSegmentsAtTheirEdges) {
  TMAKIT_SKIP_WITHOUT_GPU();
  const auto sms = static_cast<std::uint64_t>(detail::multiprocessor_count());
  const std::uint64_t most_segments = sms * detail::quantize::kMaxSegmentCtasPerSm;
  struct Edge {
    R recipe;
    DataType type;
    std::uint64_t rows, cols;
    std::uint32_t rows_per_cta, vectors_per_thread, row_segments;
  };
  for (const Edge e : {
           // short rows: 32 vectors (a vector a thread, 4 rows a CTA), 62 and 64 (2 and 2),
           // 36 of fp32 (2 and 2); rows not a multiple of R, and one row
           Edge{R::row, DataType::bfloat16, 4097, 256, 4, 1, 1},
           Edge{R::row, DataType::bfloat16, 1, 256, 4, 1, 1},
           Edge{R::row, DataType::float16, 4099, 496, 2, 2, 1},
           Edge{R::row, DataType::bfloat16, 3, 512, 2, 2, 1},
           Edge{R::row, DataType::float32, 1001, 144, 2, 2, 1},
           Edge{R::block, DataType::bfloat16, 4097, 256, 4, 1, 1},
           Edge{R::block, DataType::float16, 4099, 496, 2, 2, 1},
           Edge{R::block, DataType::float32, 1001, 144, 2, 2, 1},
           Edge{R::block, DataType::float32, 3, 128, 4, 1, 1},
           // a row of 128 vectors: one segment, a CTA a row (1-D grid)
           Edge{R::block, DataType::bfloat16, 777, 1024, 1, 1, 1},
           // segments: 7 of bf16 7168, the last of 898 vectors holding 2; fp32's 14; fp16's
           // 2 of 130 vectors; up to the most CTAs, and one row past (a CTA a row, 4 vectors a
           // thread)
           Edge{R::block, DataType::bfloat16, 16, 7168, 1, 1, 7},
           Edge{R::block, DataType::bfloat16, 33, 7184, 1, 1, 8},
           Edge{R::block, DataType::float32, 5, 7168, 1, 1, 14},
           Edge{R::block, DataType::float16, 301, 1040, 1, 1, 2},
           Edge{R::block, DataType::bfloat16, most_segments / 7, 7168, 1, 1, 7},
           Edge{R::block, DataType::bfloat16, most_segments / 7 + 1, 7168, 1, 4, 1},
           // the row recipe keeps a CTA a row there
           Edge{R::row, DataType::bfloat16, 16, 7168, 1, 4, 1}}) {
    const Case c{e.recipe, O::a, e.type, e.rows, e.cols};
    SCOPED_TRACE(describe(c));
    const detail::quantize::QuantizePlan plan = detail::quantize::plan_quantize(
        e.rows, e.cols, static_cast<std::uint32_t>(element_bytes(e.type)), e.recipe, O::a, {},
        static_cast<int>(sms));
    EXPECT_STREQ(plan.id(), "Q7");
    EXPECT_EQ(plan.rows_per_cta, e.rows_per_cta);
    EXPECT_EQ(plan.vectors_per_thread, e.vectors_per_thread);
    EXPECT_EQ(plan.row_segments, e.row_segments);
    Image x(e.type, 1, e.rows, e.cols);
    fill(x, static_cast<std::uint32_t>(e.rows * 3 + e.cols));
    check_case(c, x);
  }
}

// Four streams each quantizing with the tensor recipe at once, each grid as large as the SMs
// hold: the cooperative launches take turns (none waits at its barrier for CTAs that another
// grid's keep off the SMs), and each stream's counters are its own.
void four_streams_of_resident_tensor_recipe(std::uint64_t rows, std::uint64_t cols) {
  SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols) + ", rule " +
               tensor_rule(DataType::bfloat16, rows, cols));
  constexpr int kStreams = 4;
  std::vector<std::unique_ptr<Image>> xs, qs;
  std::vector<std::unique_ptr<Scales>> ss;
  cudaStream_t streams[kStreams];
  for (int i = 0; i < kStreams; ++i) {
    xs.push_back(std::make_unique<Image>(DataType::bfloat16, 1, rows, cols));
    fill(*xs.back(), 70 + i);
    qs.push_back(std::make_unique<Image>(DataType::uint8, 1, rows, cols));
    ss.push_back(std::make_unique<Scales>(1));
    ASSERT_EQ(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking), cudaSuccess);
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < kStreams; ++i) {
      quantize_fp8(xs[i]->ref(), qs[i]->ref(), ss[i]->device, R::tensor, O::a, {}, streams[i]);
    }
  }
  for (int i = 0; i < kStreams; ++i) {
    ASSERT_EQ(cudaStreamSynchronize(streams[i]), cudaSuccess);
    expect_reference(*xs[i], *qs[i], *ss[i], R::tensor, O::a, "stream " + std::to_string(i));
    cudaStreamDestroy(streams[i]);
  }
}

TEST(Quantize, FourStreamsOfResidentTensorRecipeAtOnce) {
  TMAKIT_SKIP_WITHOUT_GPU();
  const auto sms = static_cast<std::uint64_t>(detail::multiprocessor_count());
  // every 128 x 128 tile an SM holds (rule Q6); two CTAs of 4 rows an SM (Q7)
  const std::uint64_t cols = sms * 4 / 8 * 128;
  ASSERT_EQ(tensor_rule(DataType::bfloat16, 1024, cols), "Q6");
  four_streams_of_resident_tensor_recipe(1024, cols);
  ASSERT_EQ(tensor_rule(DataType::bfloat16, 8 * sms, 7168), "Q7");
  four_streams_of_resident_tensor_recipe(8 * sms, 7168);
}

// A tensor-recipe call captured into a graph on a new stream is right on every replay, and an
// uncaptured call on that stream after it too. (Whether the graph holds rule Q7, with counters
// of its own, or Q1 depends on whether an uncaptured Q6 or Q7 call on this device came first.)
TEST(Quantize, TensorRecipeCapturedOnANewStream) {
  TMAKIT_SKIP_WITHOUT_GPU();
  ASSERT_EQ(tensor_rule(DataType::bfloat16, 96, 1024), "Q7");
  Image x(DataType::bfloat16, 1, 96, 1024);
  Image q(DataType::uint8, 1, 96, 1024);
  Scales scales(1);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const CapturedCall call(x, q, scales, R::tensor, s);
  for (std::uint32_t seed : {5u, 6u}) {
    fill(x, seed);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(call.exec, s), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    expect_reference(x, q, scales, R::tensor, O::a, seed == 5u ? "replay 1" : "replay 2");
  }
  fill(x, 7);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  quantize_fp8(x.ref(), q.ref(), scales.device, R::tensor, O::a, {}, s);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  expect_reference(x, q, scales, R::tensor, O::a, "uncaptured call after the graph");
  cudaStreamDestroy(s);
}

// Two graphs captured on one stream (after an uncaptured call there, so both hold rule Q6 or
// Q7), replayed on two other streams while direct calls run on the capture stream, all at
// once: 64 tiles (or 40 rows, or 100 CTAs of 2 rows) each, so that the three grids fit the SMs
// together and run at the same time.
// Every captured call has counters of its own, so no grid counts another's CTAs at its
// barrier (with shared counters a grid would pass its barrier early, or never).
void graphs_replayed_beside_direct_calls(std::uint64_t rows, std::uint64_t cols) {
  SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols) + ", rule " +
               tensor_rule(DataType::bfloat16, rows, cols));
  constexpr int kCalls = 3;  // graph 1, graph 2, direct
  std::vector<std::unique_ptr<Image>> xs, qs;
  std::vector<std::unique_ptr<Scales>> ss;
  for (int i = 0; i < kCalls; ++i) {
    xs.push_back(std::make_unique<Image>(DataType::bfloat16, 1, rows, cols));
    fill(*xs.back(), 90 + i);
    qs.push_back(std::make_unique<Image>(DataType::uint8, 1, rows, cols));
    ss.push_back(std::make_unique<Scales>(1));
  }
  cudaStream_t capture, replay[2];
  ASSERT_EQ(cudaStreamCreateWithFlags(&capture, cudaStreamNonBlocking), cudaSuccess);
  for (cudaStream_t& r : replay) {
    ASSERT_EQ(cudaStreamCreateWithFlags(&r, cudaStreamNonBlocking), cudaSuccess);
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  quantize_fp8(xs[2]->ref(), qs[2]->ref(), ss[2]->device, R::tensor, O::a, {}, capture);
  ASSERT_EQ(cudaStreamSynchronize(capture), cudaSuccess);
  {
    const CapturedCall graphs[2] = {{*xs[0], *qs[0], *ss[0], R::tensor, capture},
                                    {*xs[1], *qs[1], *ss[1], R::tensor, capture}};
    // NOTE: many rounds: grids queued on three streams overlap only some of the time (with
    // counters shared between them, 8 rounds of 128-tile grids failed one run in three)
    for (int round = 0; round < 64; ++round) {
      for (int g = 0; g < 2; ++g) {
        ASSERT_EQ(cudaGraphLaunch(graphs[g].exec, replay[g]), cudaSuccess);
      }
      quantize_fp8(xs[2]->ref(), qs[2]->ref(), ss[2]->device, R::tensor, O::a, {}, capture);
    }
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  for (int i = 0; i < kCalls; ++i) {
    expect_reference(*xs[i], *qs[i], *ss[i], R::tensor, O::a, "call " + std::to_string(i));
  }
  for (cudaStream_t r : replay) cudaStreamDestroy(r);
  cudaStreamDestroy(capture);
}

TEST(Quantize, TensorRecipeGraphsReplayedBesideDirectCalls) {
  TMAKIT_SKIP_WITHOUT_GPU();
  ASSERT_EQ(tensor_rule(DataType::bfloat16, 4096, 240), "Q6");  // 64 tiles
  graphs_replayed_beside_direct_calls(4096, 240);
  ASSERT_EQ(tensor_rule(DataType::bfloat16, 40, 7168), "Q7");  // 40 rows, a CTA each
  graphs_replayed_beside_direct_calls(40, 7168);
  ASSERT_EQ(tensor_rule(DataType::bfloat16, 200, 1024), "Q7");  // 100 CTAs of 2 rows
  graphs_replayed_beside_direct_calls(200, 1024);
}

TEST(Quantize, MallocMemoryIsRefused) {
  TMAKIT_SKIP_WITHOUT_GPU();
  Image x(DataType::float32, 1, 8, 128);
  Image q(DataType::uint8, 1, 8, 128);
  Scales scales(8);
  MallocImage hx(x), hq(q);
  expect_pointer_refused([&] { quantize_fp8(hx.ref(), q.ref(), scales.device, R::row); }, "x.data");
  expect_pointer_refused([&] { quantize_fp8(x.ref(), hq.ref(), scales.device, R::row); },
                         "x_fp8.data");
  std::vector<float> host_scales(8);
  expect_pointer_refused([&] { quantize_fp8(x.ref(), q.ref(), host_scales.data(), R::row); },
                         "scale");
}

// ---- a round trip through the GEMM -----------------------------------------------------

// Whether this gemm_fp8 reads row and block scale arrays. NOTE: a GEMM that does refuses
// block scales with fast accumulation (they are applied at each promotion); one that accepts
// that call does not look at GemmScales::recipe, and would read each array's first float as a
// per-tensor scale.
bool gemm_takes_scale_arrays() {
  const TensorRef a(nullptr, DataType::uint8, 128, 256), b(nullptr, DataType::uint8, 128, 256);
  const TensorRef d(nullptr, DataType::bfloat16, 128, 128);
  GemmScales scales;
  scales.recipe = GemmScaleRecipe::block;
  scales.scale_a_device = reinterpret_cast<const float*>(std::uintptr_t{256});
  scales.scale_b_device = reinterpret_cast<const float*>(std::uintptr_t{512});
  GemmTuning fast;
  fast.accumulation = GemmAccumulation::fast;
  try {
    gemm_fp8_check_shapes(a, b, d, scales, fast);
  } catch (const ArgumentError&) {
    return true;
  }
  return false;
}

// D of gemm_fp8 on quantized x (M x K) and w (N x K) with `recipe`'s scales against the
// product of the dequantised operands summed in double: within 2^-7 of sum |a b| (bf16's
// rounding and the tensor cores' accumulation, kernels/gemm/README.md). Skipped where this
// GEMM refuses the recipe's scale arrays.
void round_trip(R recipe, std::uint64_t m, std::uint64_t n, std::uint64_t k) {
  SCOPED_TRACE(std::string("recipe ") + (recipe == R::tensor ? "tensor"
                                         : recipe == R::row  ? "row"
                                                             : "block"));
  if (recipe != R::tensor && !gemm_takes_scale_arrays()) {
    GTEST_SKIP() << "gemm_fp8 does not read row or block scale arrays yet (it accepts block "
                    "scales with fast accumulation, so it ignores GemmScales::recipe)";
  }
  Image x(DataType::bfloat16, 1, m, k), w(DataType::bfloat16, 1, n, k);
  fill(x, 21);
  fill(w, 22);
  Image qx(DataType::uint8, 1, m, k), qw(DataType::uint8, 1, n, k);
  const QuantizeScaleShape sa = quantize_scale_shape(m, k, recipe, O::a);
  const QuantizeScaleShape sb = quantize_scale_shape(n, k, recipe, O::b);
  Scales scale_a(sa.mn * sa.k), scale_b(sb.mn * sb.k);
  quantize_fp8(x.ref(), qx.ref(), scale_a.device, recipe, O::a);
  quantize_fp8(w.ref(), qw.ref(), scale_b.device, recipe, O::b);
  Image d(DataType::bfloat16, 1, m, n);
  GemmScales scales;
  scales.recipe = recipe;
  scales.scale_a_device = scale_a.device;
  scales.scale_b_device = scale_b.device;
  try {
    gemm_fp8(qx.ref(), qw.ref(), d.ref(), scales);
  } catch (const ArgumentError& e) {
    GTEST_SKIP() << "gemm_fp8 does not take these scales yet: " << e.what();
  }
  const std::vector<std::uint8_t> got = d.download();
  const std::vector<std::uint8_t> a8 = qx.download(), b8 = qw.download();
  const std::vector<float> as = scale_a.download(), bs = scale_b.download();
  // the scale of element (row, kb) of a (rows a) or b (rows 128 per block for block scales)
  const auto scale_of = [&](const std::vector<float>& s, const QuantizeScaleShape& shape, bool is_b,
                            std::uint64_t row, std::uint64_t kb) -> double {
    if (recipe == R::tensor) return s[0];
    if (recipe == R::row) return s[row];
    return is_b ? s[(row / 128) * shape.k + kb] : s[row + kb * shape.mn];
  };
  int wrong = 0;
  for (std::uint64_t i = 0; i < m; ++i) {
    for (std::uint64_t j = 0; j < n; ++j) {
      double sum = 0, magnitude = 0;
      for (std::uint64_t kk = 0; kk < k; ++kk) {
        const double av = reference::e4m3_to_float(a8[i * qx.row_stride + kk]) *
                          scale_of(as, sa, false, i, kk / 128);
        const double bv = reference::e4m3_to_float(b8[j * qw.row_stride + kk]) *
                          scale_of(bs, sb, true, j, kk / 128);
        sum += av * bv;
        magnitude += std::fabs(av * bv);
      }
      const std::uint8_t* p = got.data() + i * d.row_stride + j * 2;
      std::uint32_t bits = static_cast<std::uint32_t>(p[0] | (p[1] << 8)) << 16;
      float v;
      std::memcpy(&v, &bits, 4);
      if (std::fabs(v - sum) > std::ldexp(magnitude, -7) + 1e-30 && ++wrong <= 5) {
        ADD_FAILURE() << "D[" << i << "][" << j << "] = " << v << ", dequantised product " << sum;
      }
    }
  }
  EXPECT_EQ(wrong, 0);
}

TEST(QuantizeGemmRoundTrip, TensorScales) {
  TMAKIT_SKIP_WITHOUT_GPU();
  round_trip(R::tensor, 129, 200, 1024);
}

TEST(QuantizeGemmRoundTrip, RowScales) {
  TMAKIT_SKIP_WITHOUT_GPU();
  round_trip(R::row, 129, 200, 1024);
}

TEST(QuantizeGemmRoundTrip, BlockScales) {
  TMAKIT_SKIP_WITHOUT_GPU();
  round_trip(R::block, 129, 200, 1040);  // K's last block 16 deep
}

}  // namespace
}  // namespace tmakit::test
