#include "suite.hpp"

#include <chrono>
#include <functional>
#include <iomanip>
#include <iostream>
#include <memory>
#include <string_view>
#include <sstream>

#include "baselines.hpp"
#include "cases.hpp"
#include "gemm_cases.hpp"
#include "quantize_cases.hpp"
#include "stall_watch.hpp"
#include "stencil3x3/stencil3x3_plan.hpp"
#include "transpose/row_class_plan.hpp"
#include "transpose/sm90_transpose_row_classes.hpp"
#include "tmakit/core/cuda_check.hpp"
#include "tmakit/kernels/detail/launch_support.hpp"
#include "tmakit/kernels/detail/plain_path.hpp"
#include "tmakit/kernels/elementwise.hpp"
#include "tmakit/kernels/stencil3x3.hpp"
#include "tmakit/kernels/transpose.hpp"
#include "tune/tuning.hpp"

namespace tmakit::bench {
namespace {

enum class Op { add, transpose, stencil };

// A layout of tmakit's kernel forced with --tune (the tuning lab, bench/tune/): named
// "tmakit:v<variant>", then ":c<n>" for n CTAs per SM and ":p<n>" for panels of n tile rows
// when they are set; written v(10).c(2) for "tmakit:v10:c2".
struct Layout {
  int variant = 0;
  int ctas_per_sm = 0;  // 0: the layout's own
  int panel_tiles = 0;  // 0: the layout's own walk
  Layout c(int n) const {
    Layout l = *this;
    l.ctas_per_sm = n;
    return l;
  }
  Layout p(int n) const {
    Layout l = *this;
    l.panel_tiles = n;
    return l;
  }
  std::string name() const {
    std::string out = "tmakit:v" + std::to_string(variant);
    if (ctas_per_sm != 0) out += ":c" + std::to_string(ctas_per_sm);
    if (panel_tiles != 0) out += ":p" + std::to_string(panel_tiles);
    return out;
  }
};
Layout v(int variant) {
  Layout l;
  l.variant = variant;
  return l;
}

// An implementation of a workload: its name (the last part of its case id), its kind, and what
// its call is given besides the workload's buffers.
struct Impl {
  std::string name;
  std::string kind;          // "tmakit", "seed", "baseline", "vendor", "probe"
  Layout layout;             // tmakit's: all zero is the library's own choice
  int tile = 0;              // the plain transpose's tile
  TransposePattern pattern;  // the probe's tiling
};
Impl named(std::string name, std::string kind) {
  Impl i;
  i.name = std::move(name);
  i.kind = std::move(kind);
  return i;
}
Impl tuned(const Layout& l) {
  Impl i = named(l.name(), "tmakit");
  i.layout = l;
  return i;
}
Impl plain_transpose(int tile) {
  Impl i = named("plain:t" + std::to_string(tile), "baseline");
  i.tile = tile;
  return i;
}
// "pattern:<rows>x<bytes>", then ":r" for the row-major walk, ":i<n>" for n chunks in flight
Impl probe(const TransposePattern& t) {
  std::string name = "pattern:" + std::to_string(t.tile_rows) + "x" + std::to_string(t.tile_bytes);
  if (t.row_major) name += ":r";
  if (t.ilp > 1) name += ":i" + std::to_string(t.ilp);
  Impl i = named(name, "probe");  // not a transpose: no ratio to it
  i.pattern = t;
  return i;
}

struct Workload {
  Op op;
  DataType type;
  std::uint64_t batch;
  std::uint64_t rows;
  std::uint64_t cols;
  std::vector<Impl> impls;  // besides "memcpy", which every workload measures first

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
  const Impl& impl(const std::string& impl_name) const {
    for (const Impl& i : impls) {
      if (i.name == impl_name) return i;
    }
    throw Error(name() + " has no implementation called " + impl_name);
  }
};

std::vector<Workload> workloads(const SuiteOptions& o) {
  const std::uint64_t big = o.quick ? 4096 : 32768;    // add, transpose
  const std::uint64_t image = o.quick ? 2048 : 16384;  // stencil
  const std::uint64_t small = o.quick ? 512 : 4096;    // stencil batch images
  const Impl tmakit = named("tmakit", "tmakit");
  const Impl geam = named("cublas-geam", "vendor");
  const Impl cudnn = named("cudnn", "vendor");
  std::vector<Impl> tr = {tmakit};
  std::vector<Impl> tr32 = {tmakit, named("seed-naive", "seed"), named("seed-swizzled", "seed"),
                            named("seed-batched", "seed"), geam};
  std::vector<Impl> tr64 = {tmakit, geam};
  std::vector<Impl> add = {tmakit};
  std::vector<Impl> st = {tmakit, cudnn};
  std::vector<Impl> st64 = {tmakit, named("seed-padded-tma", "seed"), cudnn};
  if (o.tune) {
    // layouts selectable at run time (each kernel's README names them), one run compares all
    // NOTE: "tmakit:v0" is the default measured again last: the spread between the two says
    // how much of a difference between layouts is drift within the run. Layouts walk their
    // tiles down the columns unless ":p" says otherwise; "tmakit:v0:p1" is the row-major walk
    // (the default until 2026-11-22 08:35Z) and "tmakit:v7:p1" the 1-byte default before it.
    for (const Layout& l : {v(1), v(2), v(3), v(4), v(5), v(7), v(8), v(9), v(10), v(10).c(2),
                            v(11), v(12), v(0).p(1), v(7).p(1), v(0).p(32), v(13), v(14), v(15),
                            v(16), v(13).p(1), v(14).p(1), v(0)}) {
      tr.push_back(tuned(l));
      tr32.push_back(tuned(l));
    }
    tr32.insert(tr32.begin() + 5, {plain_transpose(32), plain_transpose(64)});
    // NOTE: a transpose's access pattern alone (no transposing) for several tilings and both
    // walks: what the memory gives the pattern, against which the kernels' layouts stand
    const TransposePattern patterns[] = {
        {64, 256, false, 1},  {64, 256, false, 4},  {128, 256, false, 1}, {256, 256, false, 1},
        {128, 512, false, 1}, {64, 1024, false, 1}, {32, 4096, false, 1}, {64, 256, true, 1},
        {128, 256, true, 1},  {256, 256, true, 1}};  // rows, bytes, row-major walk, in flight
    for (const TransposePattern& t : patterns) {
      tr.push_back(probe(t));
      tr32.push_back(probe(t));
      tr64.push_back(probe(t));
    }
    for (const Layout& l : {v(7), v(10), v(12), v(13), v(14), v(0).p(1), v(0)}) {
      tr64.push_back(tuned(l));
    }
    for (const Layout& l : {v(1), v(2), v(3), v(4), v(5), v(6), v(7), v(8), v(9), v(10), v(0)}) {
      add.push_back(tuned(l));
    }
    // NOTE: CTAs per SM are forced only on named layouts: variant 0's layout (and how many
    // of it fit) depends on the device
    for (const Layout& l :
         {v(1),  v(2),  v(3),  v(4),  v(4).c(3), v(5),  v(6),  v(7),  v(7).c(1), v(8),
          v(9),  v(10), v(11), v(12), v(13),     v(14), v(15), v(16), v(17),     v(18),
          v(19), v(20), v(21), v(22), v(8).p(3), v(19).p(1), v(22).p(1), v(23),  v(24),
          v(25), v(26), v(27), v(28), v(23).p(3), v(24).p(3), v(24).p(1), v(29), v(30),
          v(31), v(32), v(33), v(34), v(35),     v(36), v(0)}) {
      st.push_back(tuned(l));
      st64.push_back(tuned(l));
    }
  }
  std::vector<Impl> add32 = add;
  add32.insert(add32.begin() + 1, named("tmakit-inplace", "tmakit"));
  add32.insert(add32.begin() + 2, named("plain-ldg", "baseline"));
  add32.insert(add32.begin() + 3, named("plain-chunk", "baseline"));
  std::vector<Workload> tuned_shapes;
  if (o.tune) {
    // rows 64 elements short of 2^15: the same work without power-of-two row pitches, to
    // tell DRAM channel conflicts of the 32768-wide rows from the kernel's own limits
    tuned_shapes.push_back({Op::transpose, DataType::float32, 1, big - 64, big - 64, tr32});
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
  // NOTE: odd shapes: rows of 8193 elements are not a multiple of 16 bytes apart for any
  // element size, so TMA cannot describe them and the public launchers take their plain
  // kernels (tmakit/kernels/detail/plain_path.hpp); the transposed rows (8191) neither
  const std::uint64_t odd_rows = o.quick ? 1023 : 8191;
  const std::uint64_t odd_cols = o.quick ? 1025 : 8193;
  const std::vector<Impl> odd = {tmakit};
  const std::vector<Impl> odd_geam = {tmakit, geam};
  const std::vector<Impl> odd_cudnn = {tmakit, cudnn};
  for (const DataType t : {DataType::int32, DataType::float32, DataType::float64}) {
    all.push_back({Op::add, t, 1, odd_rows, odd_cols, odd});
  }
  for (const DataType t : {DataType::float32, DataType::bfloat16, DataType::uint8,
                           DataType::float64}) {
    const bool blas = t == DataType::float32 || t == DataType::float64;
    all.push_back({Op::transpose, t, 1, odd_rows, odd_cols, blas ? odd_geam : odd});
  }
  for (const DataType t : {DataType::float32, DataType::float64}) {
    all.push_back({Op::stencil, t, 1, odd_rows, odd_cols, odd_cudnn});
  }
  all.insert(all.end(), tuned_shapes.begin(), tuned_shapes.end());
  return all;
}

// The workload's cases as declared: "memcpy" first, timed alone (the ceiling), then each
// implementation, timed in rounds with it. Every case moves the same bytes (the input read
// once, the output written once); tmakit's are compared with every seed, plain and vendor
// implementation of the workload.
std::vector<CaseSpec> case_specs(const Workload& w) {
  std::vector<std::string> baselines;
  for (const Impl& i : w.impls) {
    if (i.kind == "seed" || i.kind == "vendor" || i.kind == "baseline") baselines.push_back(i.name);
  }
  std::vector<CaseSpec> out(1);
  out[0].impl = "memcpy";
  out[0].kind = "ceiling";
  out[0].bytes = 2 * w.bytes_each();
  out[0].timed_by = TimedBy::alone;
  for (const Impl& i : w.impls) {
    CaseSpec& c = out.emplace_back();
    c.impl = i.name;
    c.kind = i.kind;
    c.bytes = 2 * w.bytes_each();
    if (c.kind == "tmakit") c.baselines = baselines;
    c.timed_by = TimedBy::with_ceiling;
  }
  return out;
}

// One stream, timer and runner for the memory-bound suite, and the vendor baselines, each
// loaded when a case first asks for it.
class Session {
 public:
  explicit Session(const SuiteOptions& o)
      : stream_(cudaStreamNonBlocking),
        timer_(o.timing, stream_.get()),
        runner_(stream_.get(), timer_, o.progress) {}

  cudaStream_t stream() const { return stream_.get(); }
  CaseRunner& runner() { return runner_; }
  CublasGeam& cublas() {
    if (!cublas_) cublas_ = std::make_unique<CublasGeam>();
    return *cublas_;
  }
  CudnnConv& cudnn() {
    if (!cudnn_) cudnn_ = std::make_unique<CudnnConv>();
    return *cudnn_;
  }

 private:
  Stream stream_;
  Timer timer_;
  CaseRunner runner_;
  std::unique_ptr<CublasGeam> cublas_;
  std::unique_ptr<CudnnConv> cudnn_;
};

// What a check of every element found: nothing wrong, or how many elements are.
Verdict errors_verdict(std::uint64_t n) {
  return {n == 0 ? "" : std::to_string(n) + " wrong elements", ""};
}

constexpr double kAddValue = 1.0;  // what the add cases add

bool add_has_tma(DataType t) {
  return t == DataType::int32 || t == DataType::float32 || t == DataType::bfloat16 ||
         t == DataType::float16;
}

// What the public launcher runs for these views: "TMA rows" or "plain kernel (P4: ...)".
std::string path_note(const detail::PathPlan& p) {
  if (p.path == detail::Path::tma_rows) return "TMA rows";
  return std::string("plain kernel, no TMA (") + p.id() + ": " + detail::kPathRules[p.rule].when +
         ")";
}
std::string path_note(ConstTensorRef in, TensorRef out, bool tma_type) {
  return path_note(detail::plan_path(in, out, tma_type));
}

// ---- one workload: buffers, random input, then its cases -------------------------------

// Runs `fn` back to back for at least `seconds` (untimed).
void warm_up(const std::function<void(cudaStream_t)>& fn, cudaStream_t st, double seconds) {
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() <
         seconds) {
    for (int i = 0; i < 4; ++i) fn(st);
    TMAKIT_CUDA_CHECK(cudaStreamSynchronize(st));
  }
}

void run_workload(Session& s, const Workload& w, const std::vector<CaseSpec>& cases) {
  stall_watch_at("preparing the operands of " + w.name());
  const cudaStream_t st = s.stream();
  // NOTE: both buffers hold the ceiling's whole 4 KiB (ceiling_copy_bytes)
  const std::uint64_t copy_bytes = ceiling_copy_bytes(w.bytes_each());
  DeviceBuffer in(copy_bytes);
  DeviceBuffer out(copy_bytes);
  fill_random(in.get(), w.elements(), w.type, 0x5eed0000u + static_cast<unsigned>(w.op), st);
  TMAKIT_CUDA_CHECK(cudaStreamSynchronize(st));
  const int esize = element_bytes(w.type);

  // the ceiling on the same buffers: a device-to-device copy of the input
  const auto copy = [&](cudaStream_t stream) {
    TMAKIT_CUDA_CHECK(
        cudaMemcpyAsync(out.get(), in.get(), copy_bytes, cudaMemcpyDeviceToDevice, stream));
  };
  // NOTE: after the host-side set-up the first copies of a workload ran up to 10% slower
  // (H200: 3849 GB/s for the first, 4285 later in the same workload); keep the memory busy
  // for a while first, for every implementation alike
  warm_up(copy, st, 0.1);

  const ConstTensorRef vin(in.get(), w.type, w.rows, w.cols, 0, w.batch);
  const TensorRef vout(out.get(), w.type, w.op == Op::transpose ? w.cols : w.rows,
                       w.op == Op::transpose ? w.rows : w.cols, 0, w.batch);
  const Filter3x3 laplacian = Filter3x3::laplacian();
  const auto add_check = [&] {
    return errors_verdict(
        count_add_errors(in.get(), out.get(), w.elements(), w.type, kAddValue, st));
  };
  const auto transpose_check = [&] {
    return errors_verdict(count_transpose_errors(in.get(), out.get(), w.rows, w.cols, esize, st));
  };
  const double stencil_tolerance = w.type == DataType::float32 ? 1e-5 : 1e-12;
  const auto stencil_check = [&] {
    return errors_verdict(count_stencil_errors(in.get(), out.get(), w.batch, w.rows, w.cols,
                                               w.type, laplacian, stencil_tolerance, st));
  };

  // The calls of each case, on this workload's buffers (every case writes `out`).
  const auto bind = [&](const CaseSpec& c) -> Binding {
    Binding b;
    b.out = out.get();
    b.out_bytes = w.bytes_each();
    if (c.impl == "memcpy") {
      b.note = "cudaMemcpyAsync device to device, whole 4 KiB";
      b.run = [copy](cudaStream_t stream, int) { copy(stream); };
      return b;
    }
    const Impl& im = w.impl(c.impl);
    const std::string& impl = im.name;
    const Layout& layout = im.layout;
    if (w.op == Op::add) {
      const tune::ElementwiseTuning tuning{layout.ctas_per_sm, layout.variant};
      b.check = add_check;
      if (impl == "tmakit-inplace") {
        // NOTE: in place turns the input into its own output; the check then compares with a
        // copy taken first.
        auto before = std::make_shared<DeviceBuffer>(w.bytes_each());
        TMAKIT_CUDA_CHECK(cudaMemcpyAsync(before->get(), in.get(), w.bytes_each(),
                                          cudaMemcpyDeviceToDevice, st));
        const TensorRef self(in.get(), w.type, w.rows, w.cols);
        b.note = "in place, tmakit::add_constant";
        b.run = [self](cudaStream_t stream, int) {
          tmakit::add_constant(self, self, kAddValue, stream);
        };
        b.check = [&, before] {
          return errors_verdict(
              count_add_errors(before->get(), in.get(), w.elements(), w.type, kAddValue, st));
        };
      } else if (im.kind == "baseline") {
        const bool chunks = impl == "plain-chunk";
        b.note = chunks ? "16-byte loads and stores, no TMA, a block per 16 KB"
                        : "16-byte loads and stores, no TMA";
        b.run = [&, chunks](cudaStream_t stream, int) {
          (chunks ? plain_add_int32_chunks : plain_add_int32)(
              static_cast<const std::int32_t*>(in.get()), static_cast<std::int32_t*>(out.get()),
              w.elements(), static_cast<std::int32_t>(kAddValue), stream);
        };
      } else if (impl == "tmakit") {
        // NOTE: the library's own row is the public launcher: its path (TMA rows or the plain
        // kernel) is what a user gets
        b.note = path_note(vin, vout, add_has_tma(w.type));
        b.run = [vin, vout](cudaStream_t stream, int) {
          tmakit::add_constant(vin, vout, kAddValue, stream);
        };
      } else {
        b.run = [vin, vout, tuning](cudaStream_t stream, int) {
          tune::add_constant(vin, vout, kAddValue, stream, tuning);
        };
      }
    } else if (w.op == Op::transpose) {
      b.check = transpose_check;
      if (impl == "tmakit") {
        const detail::PathPlan path = detail::plan_path(vin, vout, true);
        b.note = path_note(path);
        if (path.path == detail::Path::plain_loads && detail::transpose::takes_row_classes(vin, vout)) {
          // (the transpose's own pick on that path: kernels/transpose/README.md, "Row classes")
          const std::uint32_t classes =
              detail::transpose::row_classes::classes_of(vin.row_pitch());
          b.note = "TMA over " + std::to_string(classes) +
                   (classes == 1 ? " row class (" : " row classes (") + path.id() + ": " +
                   detail::kPathRules[path.rule].when + ")";
        }
        b.run = [vin, vout](cudaStream_t stream, int) { tmakit::transpose(vin, vout, stream); };
      } else if (im.kind == "tmakit") {
        const tune::TransposeTuning tuning{layout.ctas_per_sm, layout.panel_tiles,
                                           layout.variant};
        b.run = [vin, vout, tuning](cudaStream_t stream, int) {
          tune::transpose(vin, vout, stream, tuning);
        };
      } else if (im.kind == "seed") {
        const SeedTranspose seed = impl == "seed-naive"      ? SeedTranspose::naive
                                   : impl == "seed-swizzled" ? SeedTranspose::swizzled
                                                             : SeedTranspose::batched;
        b.note = "32x32 tile per block";
        b.run = [&, seed](cudaStream_t stream, int) {
          seed_transpose(seed, static_cast<const float*>(in.get()), static_cast<float*>(out.get()),
                         w.rows, w.cols, stream);
        };
      } else if (im.kind == "baseline") {
        const int tile = im.tile;
        b.note = "4-byte loads and stores through shared memory, no TMA";
        b.run = [&, tile](cudaStream_t stream, int) {
          plain_transpose_f32(tile, static_cast<const float*>(in.get()),
                              static_cast<float*>(out.get()), w.rows, w.cols, stream);
        };
      } else if (im.kind == "probe") {
        const TransposePattern t = im.pattern;
        if (w.rows % t.tile_rows != 0 || w.cols * esize % t.tile_bytes != 0) {
          b.status = Status::not_applicable("the shape is not a whole number of these tiles");
          return b;
        }
        b.note =
            "not a transpose: its loads and stores alone, 16-byte chunks copied whole to where "
            "the tile's transpose puts them";
        b.run = [t, &in, &out, &w, esize](cudaStream_t stream, int) {
          transpose_pattern(t, in.get(), out.get(), w.rows, w.cols, esize, stream);
        };
        b.check = [&, t] {
          return errors_verdict(count_transpose_pattern_errors(t, in.get(), out.get(), w.rows,
                                                               w.cols, esize, st));
        };
      } else if (impl == "cublas-geam") {
        CublasGeam& g = s.cublas();
        if (!g.unavailable().empty()) {
          b.status = Status::unavailable(g.unavailable());
          return b;
        }
        b.note = g.library();
        b.run = [&](cudaStream_t stream, int) {
          g.transpose(w.type, in.get(), out.get(), w.rows, w.cols, stream);
        };
      } else {
        throw Error("no transpose implementation is called " + impl);
      }
    } else {
      b.check = stencil_check;
      if (impl == "tmakit") {
        const detail::PathPlan path = detail::plan_path(vin, vout, true);
        const bool aligned = path.path == detail::Path::tma_rows;
        const bool vector =
            aligned && detail::stencil3x3::plan_layout(detail::peak_dram_bytes_per_second()) ==
                           detail::stencil3x3::PlannedLayout::plain_vector16;
        b.note = vector    ? "plain kernel, 16-byte runs, no TMA (the plan's pick on this "
                             "memory system; the TMA layouts: --tune)"
                 : aligned ? "zero padding from TMA out-of-bounds fill, layout " +
                                 std::to_string(tune::stencil3x3_default_variant(w.type))
                           : path_note(path);
        b.run = [vin, vout, laplacian](cudaStream_t stream, int) {
          tmakit::stencil3x3(vin, vout, laplacian, stream);
        };
      } else if (im.kind == "tmakit") {
        const tune::StencilTuning tuning{layout.ctas_per_sm, layout.variant, layout.panel_tiles};
        const int layout =
            tuning.variant != 0 ? tuning.variant : tune::stencil3x3_default_variant(w.type);
        b.note = "zero padding from TMA out-of-bounds fill, layout " + std::to_string(layout);
        b.run = [vin, vout, laplacian, tuning](cudaStream_t stream, int) {
          tune::stencil3x3(vin, vout, laplacian, stream, tuning);
        };
      } else if (impl == "seed-padded-tma") {
        auto padded = std::make_shared<DeviceBuffer>((w.rows + 2) * (w.cols + 2) * 8);
        make_padded_copy(static_cast<const double*>(in.get()),
                         static_cast<double*>(padded->get()), w.rows, w.cols, st);
        b.note = "padded copy made before timing, not counted";
        b.run = [&, padded, laplacian](cudaStream_t stream, int) {
          seed_conv3x3_padded(static_cast<const double*>(padded->get()),
                              static_cast<double*>(out.get()), w.rows, w.cols, laplacian,
                              stream);
        };
      } else if (impl == "cudnn") {
        CudnnConv& c = s.cudnn();
        if (const std::string why = c.plan(w.type, w.batch, w.rows, w.cols, laplacian, st);
            !why.empty()) {
          b.status = Status::unavailable(why);
          return b;
        }
        b.note = c.algorithm() + ", " + c.library();
        b.run = [&](cudaStream_t stream, int) { c.run(in.get(), out.get(), stream); };
      } else {
        throw Error("no stencil implementation is called " + impl);
      }
    }
    return b;
  };
  s.runner().run(w.name(), cases, bind);
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

std::vector<DeclaredWorkload> declared_workloads(const SuiteOptions& options) {
  std::vector<DeclaredWorkload> out;
  for (const auto& w : workloads(options)) out.push_back({w.name(), case_specs(w)});
  for (auto& w : declared_quantize_workloads(options)) out.push_back(std::move(w));
  for (auto& w : declared_gemm_workloads(options)) out.push_back(std::move(w));
  return out;
}

std::vector<std::string> list_cases(const SuiteOptions& options) {
  std::vector<std::string> ids;
  for (const auto& w : workloads(options)) {
    for (const auto& c : case_specs(w)) {
      if (case_selected(options.filter, w.name(), c)) ids.push_back(case_id(w.name(), c));
    }
  }
  const auto quantize = list_quantize_cases(options);
  ids.insert(ids.end(), quantize.begin(), quantize.end());
  const auto gemm = list_gemm_cases(options);
  ids.insert(ids.end(), gemm.begin(), gemm.end());
  return ids;
}

std::vector<Result> run_suite(const SuiteOptions& options) {
  std::vector<Result> results;
  {
    Session s(options);
    int total = 0;
    std::vector<std::pair<Workload, std::vector<CaseSpec>>> plan;
    for (const auto& w : workloads(options)) {
      // the ceiling runs whenever any case of its workload does
      std::vector<CaseSpec> chosen;
      for (const auto& c : case_specs(w)) {
        if (c.timed_by == TimedBy::alone || case_selected(options.filter, w.name(), c)) {
          chosen.push_back(c);
        }
      }
      if (chosen.size() == 1 && !case_selected(options.filter, w.name(), chosen.front())) continue;
      total += static_cast<int>(chosen.size());
      plan.emplace_back(w, std::move(chosen));
    }
    s.runner().set_progress_total(total);
    for (const auto& [w, cases] : plan) run_workload(s, w, cases);
    results = std::move(s.runner().results());
  }
  // The FP8 quantizer's cases (bench/quantize_cases.cu), then the FP8 GEMM's
  // (bench/gemm_cases.cu), after the memory-bound ones.
  auto quantize = run_quantize_cases(options);
  results.insert(results.end(), std::make_move_iterator(quantize.begin()),
                 std::make_move_iterator(quantize.end()));
  auto gemm = run_gemm_cases(options);
  results.insert(results.end(), std::make_move_iterator(gemm.begin()),
                 std::make_move_iterator(gemm.end()));
  return results;
}

}  // namespace tmakit::bench
