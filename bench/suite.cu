#include "suite.hpp"

#include <chrono>
#include <functional>
#include <iomanip>
#include <iostream>
#include <memory>
#include <string_view>
#include <sstream>

#include "baselines.hpp"
#include "gemm_cases.hpp"
#include "tmakit/core/cuda_check.hpp"
#include "tmakit/kernels/elementwise.hpp"
#include "tmakit/kernels/stencil3x3.hpp"
#include "tmakit/kernels/transpose.hpp"
#include "tune/tuning.hpp"

namespace tmakit::bench {
namespace {

enum class Op { add, transpose, stencil };

struct Workload {
  Op op;
  DataType type;
  std::uint64_t batch;
  std::uint64_t rows;
  std::uint64_t cols;
  std::vector<std::string> impls;  // besides "memcpy", which every workload measures first

  std::string type_name() const {
    switch (type) {
      case DataType::int32: return "int32";
      case DataType::float32: return "fp32";
      case DataType::float64: return "fp64";
      case DataType::bfloat16: return "bf16";
      case DataType::float16: return "fp16";
      case DataType::uint8: return "u8";
      default: return std::string(tmakit::name(type));
    }
  }
  std::string name() const {
    const char* op_name = op == Op::add ? "add" : op == Op::transpose ? "transpose" : "stencil3x3";
    std::string shape = std::to_string(rows) + "x" + std::to_string(cols);
    if (batch > 1) shape = std::to_string(batch) + "x" + shape;
    return std::string(op_name) + "/" + type_name() + "/" + shape;
  }
  std::uint64_t elements() const { return batch * rows * cols; }
  std::uint64_t bytes_each() const { return elements() * element_bytes(type); }
};

std::vector<Workload> workloads(const SuiteOptions& o) {
  const std::uint64_t big = o.quick ? 4096 : 32768;    // add, transpose
  const std::uint64_t image = o.quick ? 2048 : 16384;  // stencil
  const std::uint64_t small = o.quick ? 512 : 4096;    // stencil batch images
  std::vector<std::string> tr = {"tmakit"};
  std::vector<std::string> tr32 = {"tmakit", "seed-naive", "seed-swizzled", "seed-batched",
                                   "cublas-geam"};
  std::vector<std::string> tr64 = {"tmakit", "cublas-geam"};
  std::vector<std::string> add = {"tmakit"};
  std::vector<std::string> st = {"tmakit", "cudnn"};
  std::vector<std::string> st64 = {"tmakit", "seed-padded-tma", "cudnn"};
  if (o.tune) {
    // layouts selectable at run time (each kernel's README names them), one run compares all
    // NOTE: "tmakit:v0" is the default measured again last: the spread between the two says
    // how much of a difference between layouts is drift within the run. Layouts walk their
    // tiles down the columns unless ":p" says otherwise; "tmakit:v0:p1" is the row-major walk
    // (the default until 2026-11-22 08:35Z) and "tmakit:v7:p1" the 1-byte default before it.
    for (const char* v : {"tmakit:v1", "tmakit:v2", "tmakit:v3", "tmakit:v4", "tmakit:v5",
                          "tmakit:v7", "tmakit:v8", "tmakit:v9", "tmakit:v10", "tmakit:v10:c2",
                          "tmakit:v11", "tmakit:v12", "tmakit:v0:p1", "tmakit:v7:p1",
                          "tmakit:v0:p32", "tmakit:v13", "tmakit:v14", "tmakit:v15",
                          "tmakit:v16", "tmakit:v13:p1", "tmakit:v14:p1", "tmakit:v0"}) {
      tr.push_back(v);
      tr32.push_back(v);
    }
    tr32.insert(tr32.begin() + 5, {"plain:t32", "plain:t64"});
    // NOTE: a transpose's access pattern alone (no transposing) for several tilings and both
    // walks: what the memory gives the pattern, against which the kernels' layouts stand
    for (const char* v :
         {"pattern:64x256", "pattern:64x256:i4", "pattern:128x256", "pattern:256x256",
          "pattern:128x512", "pattern:64x1024", "pattern:32x4096", "pattern:64x256:r",
          "pattern:128x256:r", "pattern:256x256:r"}) {
      tr.push_back(v);
      tr32.push_back(v);
      tr64.push_back(v);
    }
    for (const char* v : {"tmakit:v7", "tmakit:v10", "tmakit:v12", "tmakit:v13", "tmakit:v14",
                          "tmakit:v0:p1", "tmakit:v0"}) {
      tr64.push_back(v);
    }
    for (const char* v : {"tmakit:v1", "tmakit:v2", "tmakit:v3", "tmakit:v4", "tmakit:v5",
                          "tmakit:v6", "tmakit:v7", "tmakit:v8", "tmakit:v9", "tmakit:v10",
                          "tmakit:v0"}) {
      add.push_back(v);
    }
    // NOTE: CTAs per SM are forced only on named layouts: variant 0's layout (and how many
    // of it fit) depends on the device
    for (const char* v : {"tmakit:v1", "tmakit:v2", "tmakit:v3", "tmakit:v4", "tmakit:v4:c3",
                          "tmakit:v5", "tmakit:v6", "tmakit:v7", "tmakit:v7:c1", "tmakit:v8",
                          "tmakit:v9", "tmakit:v10", "tmakit:v11", "tmakit:v12", "tmakit:v13",
                          "tmakit:v14", "tmakit:v15", "tmakit:v16", "tmakit:v17", "tmakit:v18",
                          "tmakit:v19", "tmakit:v20", "tmakit:v21", "tmakit:v22", "tmakit:v8:p3",
                          "tmakit:v19:p1", "tmakit:v22:p1", "tmakit:v23", "tmakit:v24",
                          "tmakit:v25", "tmakit:v26", "tmakit:v27", "tmakit:v28",
                          "tmakit:v23:p3", "tmakit:v24:p3", "tmakit:v24:p1", "tmakit:v29",
                          "tmakit:v30", "tmakit:v31", "tmakit:v32", "tmakit:v33", "tmakit:v34",
                          "tmakit:v35", "tmakit:v36", "tmakit:v0"}) {
      st.push_back(v);
      st64.push_back(v);
    }
  }
  std::vector<std::string> add32 = add;
  add32.insert(add32.begin() + 1, "tmakit-inplace");
  add32.insert(add32.begin() + 2, "plain-ldg");
  add32.insert(add32.begin() + 3, "plain-chunk");
  std::vector<Workload> tuned;
  if (o.tune) {
    // rows 64 elements short of 2^15: the same work without power-of-two row pitches, to
    // tell DRAM channel conflicts of the 32768-wide rows from the kernel's own limits
    tuned.push_back({Op::transpose, DataType::float32, 1, big - 64, big - 64, tr32});
  }
  std::vector<Workload> all = {
      {Op::add, DataType::int32, 1, big, big, add32},
      {Op::add, DataType::float32, 1, big, big, add},
      {Op::add, DataType::bfloat16, 1, big, big, add},
      {Op::add, DataType::float16, 1, big, big, add},
      {Op::transpose, DataType::float32, 1, big, big, tr32},
      {Op::transpose, DataType::bfloat16, 1, big, big, tr},
      {Op::transpose, DataType::uint8, 1, big, big, tr},
      {Op::transpose, DataType::float64, 1, big, big, tr64},
      {Op::stencil, DataType::float32, 1, image, image, st},
      {Op::stencil, DataType::float64, 1, image, image, st64},
      {Op::stencil, DataType::float32, 16, small, small, st},
  };
  all.insert(all.end(), tuned.begin(), tuned.end());
  return all;
}

// "tmakit:c1" -> ctas_per_sm 1; "tmakit:p16" -> panel 16 tile rows; "tmakit:v2" -> layout 2.
int knob(const std::string& impl, char key) {
  const auto pos = impl.find(std::string(":") + key);
  return pos == std::string::npos ? 0 : std::stoi(impl.substr(pos + 2));
}

std::string kind_of(const std::string& impl) {
  if (impl == "memcpy") return "ceiling";
  if (impl.rfind("tmakit", 0) == 0) return "tmakit";
  if (impl.rfind("seed", 0) == 0) return "seed";
  if (impl.rfind("plain", 0) == 0) return "baseline";
  if (impl.rfind("pattern:", 0) == 0) return "probe";  // not a transpose: no ratio to it
  return "vendor";
}

class Session {
 public:
  explicit Session(const SuiteOptions& o) : options_(o) {
    TMAKIT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    timer_ = std::make_unique<Timer>(o.timing, stream_);
  }
  ~Session() {
    timer_.reset();
    cudaStreamDestroy(stream_);
  }

  bool selected(const std::string& id) const {
    return filter_selects(options_.filter, id);
  }
  cudaStream_t stream() const { return stream_; }
  CublasGeam& cublas() {
    if (!cublas_) cublas_ = std::make_unique<CublasGeam>();
    return *cublas_;
  }
  CudnnConv& cudnn() {
    if (!cudnn_) cudnn_ = std::make_unique<CudnnConv>();
    return *cudnn_;
  }
  void set_total(int n) { total_ = n; }

  // Checks once on a poisoned output, then times. `check` returns "" or what is wrong.
  // After the workload's memcpy, every implementation is timed in interleaved rounds with
  // that memcpy (Timer::time_interleaved) and its ratio taken to the memcpy of its own
  // rounds, so that clock and thermal drift during the suite does not enter the ratio.
  void measure(const Workload& w, const std::string& impl, const std::string& note,
               void* out, const std::function<void(cudaStream_t)>& run,
               const std::function<std::string()>& check) {
    Result r = start(w, impl);
    r.note = note;
    try {
      poison(out, w.bytes_each(), stream_);
      run(stream_);
      TMAKIT_CUDA_CHECK(cudaStreamSynchronize(stream_));
      const std::string wrong = check();
      if (!wrong.empty()) {
        r.status = "FAILED: " + wrong;
      } else {
        const auto gbps = [&](const Timing& t) {
          return static_cast<double>(r.bytes) / (t.median_ms * 1e-3) / 1e9;
        };
        if (impl == "memcpy" || !memcpy_run_) {
          r.timing = timer_->time(run);
        } else {
          const std::vector<Timing> t = timer_->time_interleaved({memcpy_run_, run});
          r.timing = t[1];
          r.memcpy_gbps = gbps(t[0]);
        }
        r.gbps = gbps(r.timing);
        r.status = "ok";
        if (impl == "memcpy") {
          memcpy_gbps_ = r.gbps;
          memcpy_run_ = run;
        }
      }
    } catch (const std::exception& e) {
      r.status = std::string("error: ") + e.what();
      cudaGetLastError();  // clear a sticky-free launch error so the next case runs
    }
    finish(std::move(r));
  }
  void unavailable(const Workload& w, const std::string& impl, const std::string& why) {
    Result r = start(w, impl);
    r.status = why;
    finish(std::move(r));
  }
  void begin_workload() {
    memcpy_gbps_ = 0;
    memcpy_run_ = nullptr;  // it refers to the last workload's buffers
  }
  std::vector<Result>& results() { return results_; }

 private:
  Result start(const Workload& w, const std::string& impl) {
    Result r;
    r.workload = w.name();
    r.impl = impl;
    r.id = r.workload + "/" + impl;
    r.kind = kind_of(impl);
    r.bytes = 2 * w.bytes_each();
    if (options_.progress != nullptr) {
      *options_.progress << "[" << ++done_ << "/" << total_ << "] " << r.id << " ... "
                         << std::flush;
    }
    return r;
  }
  void finish(Result r) {
    if (r.memcpy_gbps == 0) r.memcpy_gbps = memcpy_gbps_;  // else: its own rounds' memcpy
    if (options_.progress != nullptr) {
      if (r.ok()) {
        *options_.progress << std::fixed << std::setprecision(0) << r.gbps << " GB/s";
        if (r.memcpy_gbps > 0) {
          *options_.progress << std::setprecision(3) << " (" << r.gbps / r.memcpy_gbps
                             << "x memcpy)";
        }
        *options_.progress << "\n";
      } else {
        *options_.progress << r.status << "\n";
      }
    }
    results_.push_back(std::move(r));
  }

  const SuiteOptions& options_;
  cudaStream_t stream_{};
  std::unique_ptr<Timer> timer_;
  std::unique_ptr<CublasGeam> cublas_;
  std::unique_ptr<CudnnConv> cudnn_;
  std::vector<Result> results_;
  double memcpy_gbps_ = 0;
  std::function<void(cudaStream_t)> memcpy_run_;  // the current workload's memcpy
  int done_ = 0;
  int total_ = 0;
};

std::string errors_text(std::uint64_t n) {
  return n == 0 ? "" : std::to_string(n) + " wrong elements";
}

// ---- one workload: buffers, random input, memcpy, then each implementation ---------------

// Runs `fn` back to back for at least `seconds` (untimed).
void warm_up(const std::function<void(cudaStream_t)>& fn, cudaStream_t st, double seconds) {
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() <
         seconds) {
    for (int i = 0; i < 4; ++i) fn(st);
    TMAKIT_CUDA_CHECK(cudaStreamSynchronize(st));
  }
}

void run_workload(Session& s, const Workload& w, const std::vector<std::string>& impls) {
  s.begin_workload();
  const cudaStream_t st = s.stream();
  DeviceBuffer in(w.bytes_each());
  DeviceBuffer out(w.bytes_each());
  fill_random(in.get(), w.elements(), w.type, 0x5eed0000u + static_cast<unsigned>(w.op), st);
  TMAKIT_CUDA_CHECK(cudaStreamSynchronize(st));
  const int esize = element_bytes(w.type);

  // the ceiling on the same buffers: a device-to-device copy of the input
  const auto copy = [&](cudaStream_t stream) {
    TMAKIT_CUDA_CHECK(cudaMemcpyAsync(out.get(), in.get(), w.bytes_each(),
                                      cudaMemcpyDeviceToDevice, stream));
  };
  // NOTE: after the host-side set-up the first copies of a workload ran up to 10% slower
  // (H200: 3849 GB/s for the first, 4285 later in the same workload); keep the memory busy
  // for a while first, for every implementation alike
  warm_up(copy, st, 0.1);
  s.measure(w, "memcpy", "cudaMemcpyAsync device to device", out.get(), copy,
            [&] { return std::string(); });

  const ConstTensorRef vin(in.get(), w.type, w.rows, w.cols, 0, w.batch);
  const TensorRef vout(out.get(), w.type, w.op == Op::transpose ? w.cols : w.rows,
                       w.op == Op::transpose ? w.rows : w.cols, 0, w.batch);
  const Filter3x3 laplacian = Filter3x3::laplacian();
  constexpr double kAddValue = 1.0;

  for (const auto& impl : impls) {
    if (impl == "memcpy") continue;
    if (w.op == Op::add) {
      const tune::ElementwiseTuning tuning{knob(impl, 'c'), knob(impl, 'v')};
      if (impl == "tmakit-inplace") {
        // NOTE: in place turns the input into its own output; the check then compares with a
        // copy taken first.
        DeviceBuffer copy(w.bytes_each());
        TMAKIT_CUDA_CHECK(cudaMemcpyAsync(copy.get(), in.get(), w.bytes_each(),
                                          cudaMemcpyDeviceToDevice, st));
        const TensorRef self(in.get(), w.type, w.rows, w.cols);
        s.measure(
            w, impl, "in place", out.get(),
            [&](cudaStream_t stream) { tune::add_constant(self, self, kAddValue, stream, tuning); },
            [&] {
              return errors_text(
                  count_add_errors(copy.get(), in.get(), w.elements(), w.type, kAddValue, st));
            });
        continue;
      }
      if (impl.rfind("plain-", 0) == 0) {
        const bool chunks = impl == "plain-chunk";
        s.measure(
            w, impl,
            chunks ? "16-byte loads and stores, no TMA, a block per 16 KB"
                   : "16-byte loads and stores, no TMA",
            out.get(),
            [&](cudaStream_t stream) {
              (chunks ? plain_add_int32_chunks : plain_add_int32)(
                  static_cast<const std::int32_t*>(in.get()),
                  static_cast<std::int32_t*>(out.get()), w.elements(),
                  static_cast<std::int32_t>(kAddValue), stream);
            },
            [&] {
              return errors_text(
                  count_add_errors(in.get(), out.get(), w.elements(), w.type, kAddValue, st));
            });
        continue;
      }
      s.measure(
          w, impl, "", out.get(),
          [&](cudaStream_t stream) { tune::add_constant(vin, vout, kAddValue, stream, tuning); },
          [&] {
            return errors_text(
                count_add_errors(in.get(), out.get(), w.elements(), w.type, kAddValue, st));
          });
    } else if (w.op == Op::transpose) {
      const auto check = [&] {
        return errors_text(count_transpose_errors(in.get(), out.get(), w.rows, w.cols, esize, st));
      };
      if (impl.rfind("tmakit", 0) == 0) {
        const tune::TransposeTuning tuning{knob(impl, 'c'), knob(impl, 'p'), knob(impl, 'v')};
        s.measure(
            w, impl, "", out.get(),
            [&](cudaStream_t stream) { tune::transpose(vin, vout, stream, tuning); }, check);
      } else if (impl.rfind("seed-", 0) == 0) {
        const SeedTranspose v = impl == "seed-naive"      ? SeedTranspose::naive
                                : impl == "seed-swizzled" ? SeedTranspose::swizzled
                                                          : SeedTranspose::batched;
        s.measure(
            w, impl, "32x32 tile per block", out.get(),
            [&](cudaStream_t stream) {
              seed_transpose(v, static_cast<const float*>(in.get()),
                             static_cast<float*>(out.get()), w.rows, w.cols, stream);
            },
            check);
      } else if (impl.rfind("plain:t", 0) == 0) {
        const int tile = knob(impl, 't');
        s.measure(
            w, impl, "4-byte loads and stores through shared memory, no TMA", out.get(),
            [&](cudaStream_t stream) {
              plain_transpose_f32(tile, static_cast<const float*>(in.get()),
                                  static_cast<float*>(out.get()), w.rows, w.cols, stream);
            },
            check);
      } else if (impl.rfind("pattern:", 0) == 0) {
        // "pattern:RxW[:r][:iN]": tiles of R rows x W bytes, row-major walk, N chunks in flight
        TransposePattern t;
        t.tile_rows = std::stoi(impl.substr(8));
        t.tile_bytes = std::stoi(impl.substr(impl.find('x') + 1));
        t.row_major = impl.find(":r") != std::string::npos;
        t.ilp = impl.find(":i") != std::string::npos ? knob(impl, 'i') : 1;
        if (w.rows % t.tile_rows != 0 || w.cols * esize % t.tile_bytes != 0) {
          s.unavailable(w, impl, "n/a: the shape is not a whole number of these tiles");
          continue;
        }
        s.measure(
            w, impl,
            "not a transpose: its loads and stores alone, 16-byte chunks copied whole to where "
            "the tile's transpose puts them",
            out.get(),
            [t, &in, &out, &w, esize](cudaStream_t stream) {
              transpose_pattern(t, in.get(), out.get(), w.rows, w.cols, esize, stream);
            },
            [&] {
              return errors_text(count_transpose_pattern_errors(t, in.get(), out.get(), w.rows,
                                                                w.cols, esize, st));
            });
      } else if (impl == "cublas-geam") {
        CublasGeam& g = s.cublas();
        if (!g.unavailable().empty()) {
          s.unavailable(w, impl, g.unavailable());
          continue;
        }
        s.measure(
            w, impl, g.library(), out.get(),
            [&](cudaStream_t stream) {
              g.transpose(w.type, in.get(), out.get(), w.rows, w.cols, stream);
            },
            check);
      }
    } else {
      const double tol = w.type == DataType::float32 ? 1e-5 : 1e-12;
      const auto check = [&] {
        return errors_text(count_stencil_errors(in.get(), out.get(), w.batch, w.rows, w.cols,
                                                w.type, laplacian, tol, st));
      };
      if (impl.rfind("tmakit", 0) == 0) {
        const tune::StencilTuning tuning{knob(impl, 'c'), knob(impl, 'v'), knob(impl, 'p')};
        const int layout =
            tuning.variant != 0 ? tuning.variant : tune::stencil3x3_default_variant(w.type);
        s.measure(
            w, impl, "zero padding from TMA out-of-bounds fill, layout " + std::to_string(layout),
            out.get(),
            [&](cudaStream_t stream) { tune::stencil3x3(vin, vout, laplacian, stream, tuning); },
            check);
      } else if (impl == "seed-padded-tma") {
        DeviceBuffer padded((w.rows + 2) * (w.cols + 2) * 8);
        make_padded_copy(static_cast<const double*>(in.get()),
                         static_cast<double*>(padded.get()), w.rows, w.cols, st);
        s.measure(
            w, impl, "padded copy made before timing, not counted", out.get(),
            [&](cudaStream_t stream) {
              seed_conv3x3_padded(static_cast<const double*>(padded.get()),
                                  static_cast<double*>(out.get()), w.rows, w.cols, laplacian,
                                  stream);
            },
            check);
      } else if (impl == "cudnn") {
        CudnnConv& c = s.cudnn();
        const std::string why = c.plan(w.type, w.batch, w.rows, w.cols, laplacian, st);
        if (!why.empty()) {
          s.unavailable(w, impl, why);
          continue;
        }
        s.measure(
            w, impl, c.algorithm() + ", " + c.library(), out.get(),
            [&](cudaStream_t stream) { c.run(in.get(), out.get(), stream); }, check);
      }
    }
  }
}

// One glob (no '|') against the whole of `text`: the classic two-cursor match, which on a
// mismatch after a '*' only moves that star's start one character on (O(pattern x text)).
bool glob_matches(std::string_view glob, std::string_view text) {
  std::size_t g = 0, t = 0, star = std::string_view::npos, star_t = 0;
  while (t < text.size()) {
    if (g < glob.size() && (glob[g] == '?' || (glob[g] != '*' && glob[g] == text[t]))) {
      ++g;
      ++t;
    } else if (g < glob.size() && glob[g] == '*') {
      star = g++;
      star_t = t;
    } else if (star != std::string_view::npos) {
      g = star + 1;
      t = ++star_t;
    } else {
      return false;
    }
  }
  while (g < glob.size() && glob[g] == '*') ++g;
  return g == glob.size();
}

}  // namespace

bool filter_selects(std::string_view filter, std::string_view id) {
  if (filter.empty()) return true;
  for (std::size_t begin = 0;;) {
    const std::size_t bar = filter.find('|', begin);
    const std::string_view glob = filter.substr(begin, bar - begin);
    // NOTE: "found anywhere" is the glob with a '*' at either end.
    std::string anywhere;
    anywhere.reserve(glob.size() + 2);
    anywhere.append("*").append(glob).append("*");
    if (!glob.empty() && glob_matches(anywhere, id)) return true;
    if (bar == std::string_view::npos) return false;
    begin = bar + 1;
  }
}

std::optional<std::string> filter_error(std::string_view filter) {
  if (filter.size() > kMaxFilterBytes) {
    return "is " + std::to_string(filter.size()) + " characters long; the limit is " +
           std::to_string(kMaxFilterBytes);
  }
  for (char c : filter) {
    if (std::string_view("()[]{}^$+\\").find(c) != std::string_view::npos) {
      return std::string("holds '") + c +
             "': the filter is a glob ('*' any text, '?' one character, '|' between "
             "alternatives) found anywhere in the case id, not a regular expression";
    }
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      return "holds a byte that no case id has (ids are printable ASCII)";
    }
  }
  return std::nullopt;
}

std::vector<std::string> list_cases(const SuiteOptions& options) {
  std::vector<std::string> ids;
  for (const auto& w : workloads(options)) {
    std::vector<std::string> all = {"memcpy"};
    all.insert(all.end(), w.impls.begin(), w.impls.end());
    for (const auto& impl : all) {
      const std::string id = w.name() + "/" + impl;
      if (filter_selects(options.filter, id)) ids.push_back(id);
    }
  }
  const auto gemm = list_gemm_cases(options);
  ids.insert(ids.end(), gemm.begin(), gemm.end());
  return ids;
}

std::vector<Result> run_suite(const SuiteOptions& options) {
  Session s(options);
  int total = 0;
  std::vector<std::pair<Workload, std::vector<std::string>>> plan;
  for (const auto& w : workloads(options)) {
    std::vector<std::string> chosen;
    for (const auto& impl : w.impls) {
      if (s.selected(w.name() + "/" + impl)) chosen.push_back(impl);
    }
    if (chosen.empty() && !s.selected(w.name() + "/memcpy")) continue;
    total += 1 + static_cast<int>(chosen.size());
    plan.emplace_back(w, chosen);
  }
  s.set_total(total);
  for (const auto& [w, impls] : plan) run_workload(s, w, impls);
  std::vector<Result> results = std::move(s.results());
  // The FP8 GEMM cases (bench/gemm_cases.cu) after the memory-bound ones.
  auto gemm = run_gemm_cases(options);
  results.insert(results.end(), std::make_move_iterator(gemm.begin()),
                 std::make_move_iterator(gemm.end()));
  return results;
}

}  // namespace tmakit::bench
