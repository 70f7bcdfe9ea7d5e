#include <algorithm>
#include <cstring>
#include <iostream>
#include <memory>

#include "quantize_cases.hpp"
#include "tmakit/core/cuda_check.hpp"
#include "tmakit/kernels/quantize.hpp"

namespace tmakit::bench {
namespace {

struct QuantizeWorkload {
  std::uint64_t rows, cols;
  GemmScaleRecipe recipe;
  QuantizeOperand operand;

  std::string recipe_name() const {
    switch (recipe) {
      case GemmScaleRecipe::tensor: return "tensor";
      case GemmScaleRecipe::row: return "row";
      default: return operand == QuantizeOperand::a ? "block-a" : "block-b";
    }
  }
  std::string name() const {
    return "quantize/bf16/" + std::to_string(rows) + "x" + std::to_string(cols) + "/" +
           recipe_name();
  }
  std::uint64_t x_bytes() const { return rows * cols * 2; }
  std::uint64_t x_fp8_bytes() const { return rows * cols; }
  std::uint64_t scale_count() const {
    const QuantizeScaleShape s = quantize_scale_shape(rows, cols, recipe, operand);
    return s.mn * s.k;
  }
  // x read once, x_fp8 and the scales written once (the tensor recipe's rule Q1 reads x
  // twice: its amax pass, then the cast; the declared bytes count one read, so its ratio
  // shows the cost)
  std::uint64_t bytes() const { return x_bytes() + x_fp8_bytes() + 4 * scale_count(); }
};

std::vector<QuantizeWorkload> workloads(const SuiteOptions& o) {
  const std::uint64_t big = o.quick ? 1024 : 8192;
  std::vector<QuantizeWorkload> out;
  // NOTE: 1024 x 7168 is a prefill's activations, and the tensor recipe's tiles there fit the
  // SMs at once (rule Q6: x read once); at 8192 x 8192 they do not (Q1: read twice)
  for (const auto& [rows, cols] :
       {std::pair<std::uint64_t, std::uint64_t>{big, big}, {1024, 7168}, {16, 7168}}) {
    out.push_back({rows, cols, GemmScaleRecipe::row, QuantizeOperand::a});
    out.push_back({rows, cols, GemmScaleRecipe::block, QuantizeOperand::a});
    out.push_back({rows, cols, GemmScaleRecipe::block, QuantizeOperand::b});
    out.push_back({rows, cols, GemmScaleRecipe::tensor, QuantizeOperand::a});
  }
  return out;
}

// "memcpy" first, timed alone: a device-to-device copy of half the bytes (that many read, as
// many written); then tmakit's call, timed in rounds with it.
std::vector<CaseSpec> case_specs(const QuantizeWorkload& w) {
  std::vector<CaseSpec> out(2);
  out[0].impl = "memcpy";
  out[0].kind = "ceiling";
  out[0].bytes = w.bytes();
  out[0].timed_by = TimedBy::alone;
  out[1].impl = "tmakit";
  out[1].kind = "tmakit";
  out[1].bytes = w.bytes();
  out[1].timed_by = TimedBy::with_ceiling;
  return out;
}

// Same bits, or both NaN.
bool same_float(float a, float b) {
  if (a != a && b != b) return true;
  return std::memcmp(&a, &b, 4) == 0;
}

void run_workload(CaseRunner& runner, const QuantizeWorkload& w, const std::vector<CaseSpec>& cases,
                  cudaStream_t st) {
  // the ceiling copies half the bytes, whole 4 KiB (ceiling_copy_bytes), from x's buffer
  const std::uint64_t copy_bytes = ceiling_copy_bytes(w.bytes() / 2);
  DeviceBuffer x(std::max(w.x_bytes(), copy_bytes)), q(w.x_fp8_bytes()), scale(4 * w.scale_count());
  DeviceBuffer copy_dst(copy_bytes);
  fill_random(x.get(), w.rows * w.cols, DataType::bfloat16, 0x9a4e0000u, st);
  TMAKIT_CUDA_CHECK(cudaStreamSynchronize(st));
  const ConstTensorRef vx(x.get(), DataType::bfloat16, w.rows, w.cols);
  const TensorRef vq(q.get(), DataType::uint8, w.rows, w.cols);
  auto* s = static_cast<float*>(scale.get());
  const auto bind = [&](const CaseSpec& c) -> Binding {
    Binding b;
    if (c.impl == "memcpy") {
      b.note = "cudaMemcpyAsync device to device of half the bytes, whole 4 KiB";
      b.out = copy_dst.get();
      b.out_bytes = copy_bytes;
      b.run = [&](cudaStream_t stream, int) {
        TMAKIT_CUDA_CHECK(cudaMemcpyAsync(copy_dst.get(), x.get(), copy_bytes,
                                          cudaMemcpyDeviceToDevice, stream));
      };
      return b;
    }
    b.note = w.recipe == GemmScaleRecipe::tensor
                 ? "one pass where x's rows (rule Q7) or tiles (Q6) fit the SMs at once, else x "
                   "read twice (amax pass, then the cast); the bytes count one read"
             : w.recipe == GemmScaleRecipe::row
                 ? "one pass, a CTA per row in registers (rule Q7), each row's amax and cast fused"
             : w.operand == QuantizeOperand::a
                 ? "one pass, a CTA per row or per 128 vectors of a row in registers (rule Q7), "
                   "each 1 x 128 block's amax by shuffles"
                 : "one pass, a CTA per 128 x 128 block in registers (rule Q8), its amax and "
                   "cast fused";
    b.out = q.get();
    b.out_bytes = w.x_fp8_bytes();
    const GemmScaleRecipe recipe = w.recipe;
    const QuantizeOperand operand = w.operand;
    b.run = [vx, vq, s, recipe, operand](cudaStream_t stream, int) {
      quantize_fp8(vx, vq, s, recipe, operand, {}, stream);
    };
    b.first = [&, vx, vq, s, recipe, operand](cudaStream_t stream) {
      poison(s, 4 * w.scale_count(), stream);
      quantize_fp8(vx, vq, s, recipe, operand, {}, stream);
    };
    b.check = [&]() -> Verdict {
      std::vector<std::uint8_t> hx(w.x_bytes()), hq(w.x_fp8_bytes()), want(w.x_fp8_bytes());
      std::vector<float> hs(w.scale_count()), want_s(w.scale_count());
      TMAKIT_CUDA_CHECK(cudaMemcpy(hx.data(), x.get(), hx.size(), cudaMemcpyDeviceToHost));
      TMAKIT_CUDA_CHECK(cudaMemcpy(hq.data(), q.get(), hq.size(), cudaMemcpyDeviceToHost));
      TMAKIT_CUDA_CHECK(cudaMemcpy(hs.data(), s, 4 * hs.size(), cudaMemcpyDeviceToHost));
      reference::quantize_fp8(ConstTensorRef(hx.data(), DataType::bfloat16, w.rows, w.cols),
                              TensorRef(want.data(), DataType::uint8, w.rows, w.cols),
                              want_s.data(), w.recipe, w.operand);
      std::uint64_t bytes_wrong = 0, scales_wrong = 0;
      for (std::size_t i = 0; i < hq.size(); ++i) bytes_wrong += hq[i] != want[i] ? 1 : 0;
      for (std::size_t i = 0; i < hs.size(); ++i)
        scales_wrong += same_float(hs[i], want_s[i]) ? 0 : 1;
      if (bytes_wrong + scales_wrong == 0) return {"", "bit-exact against the CPU reference"};
      return {std::to_string(bytes_wrong) + " wrong bytes of x_fp8, " +
                  std::to_string(scales_wrong) + " wrong scales",
              ""};
    };
    return b;
  };
  runner.run(w.name(), cases, bind);
}

}  // namespace

std::vector<DeclaredWorkload> declared_quantize_workloads(const SuiteOptions& options) {
  std::vector<DeclaredWorkload> out;
  for (const QuantizeWorkload& w : workloads(options)) out.push_back({w.name(), case_specs(w)});
  return out;
}

std::vector<std::string> list_quantize_cases(const SuiteOptions& options) {
  std::vector<std::string> ids;
  for (const DeclaredWorkload& w : declared_quantize_workloads(options)) {
    for (const CaseSpec& c : w.cases) {
      if (case_selected(options.filter, w.workload, c)) ids.push_back(case_id(w.workload, c));
    }
  }
  return ids;
}

std::vector<Result> run_quantize_cases(const SuiteOptions& options) {
  if (list_quantize_cases(options).empty()) return {};
  const Stream stream(cudaStreamNonBlocking);
  Timer timer(options.timing, stream.get());
  CaseRunner runner(stream.get(), timer, options.progress);
  std::vector<std::pair<QuantizeWorkload, std::vector<CaseSpec>>> plan;
  int total = 0;
  for (const QuantizeWorkload& w : workloads(options)) {
    // the ceiling runs whenever its workload's tmakit case does
    std::vector<CaseSpec> chosen;
    bool any = false;
    for (const CaseSpec& c : case_specs(w)) {
      const bool selected = case_selected(options.filter, w.name(), c);
      any = any || selected;
      if (selected || c.timed_by == TimedBy::alone) chosen.push_back(c);
    }
    if (!any) continue;
    total += static_cast<int>(chosen.size());
    plan.emplace_back(w, std::move(chosen));
  }
  runner.set_progress_total(total);
  for (const auto& [w, cases] : plan) run_workload(runner, w, cases, stream.get());
  return std::move(runner.results());
}

}  // namespace tmakit::bench
