// tmakit._tmakit: the library's host side (validator, describe, encode, CPU model) and the
// kernel launchers, for the Python package. The module links cudart statically and loads the
// driver at run time (src/host/driver.cpp), so it imports on a machine without a GPU.
//
// The kernel entry points take raw device addresses, extents and byte strides rather than
// framework tensors: the Python layer reads them from the tensor (data_ptr(), shape, stride())
// and passes torch's current stream. NOTE: a DLPack export of a PyTorch CUDA tensor without a
// consumer stream makes the legacy default stream wait on the current one, which breaks CUDA
// graph capture and costs microseconds per tensor; plain integers cost neither.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "tmakit/core/dtype.hpp"
#include "tmakit/core/error.hpp"
#include "tmakit/host/driver.hpp"
#include "tmakit/host/encode.hpp"
#include "tmakit/host/spec_json.hpp"
#include "tmakit/host/validate.hpp"
#include "tmakit/kernels/elementwise.hpp"
#include "tmakit/kernels/gemm.hpp"
#include "tmakit/kernels/quantize.hpp"
#include "tmakit/kernels/stencil3x3.hpp"
#include "tmakit/kernels/tensor_ref.hpp"
#include "tmakit/kernels/transpose.hpp"
#include "tmakit/model/tma_model.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

// --- errors -------------------------------------------------------------------------------

// Sets the Python error `type` with `text`, whatever bytes it holds (never a
// UnicodeDecodeError in its place).
void set_python_error(PyObject* type, const std::string& text) {
  PyObject* message =
      PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "backslashreplace");
  if (message == nullptr) {  // no memory even for the message
    PyErr_Clear();
    PyErr_SetNone(type);
    return;
  }
  PyErr_SetObject(type, message);
  Py_DECREF(message);
}

// torch.OutOfMemoryError where torch is already imported (never imported here), else
// MemoryError. A borrowed reference: the class lives as long as torch stays imported, which
// is until the interpreter exits.
PyObject* out_of_memory_type() {
  PyObject* torch = PyImport_GetModule(nb::str("torch").ptr());
  if (torch == nullptr) {
    PyErr_Clear();
    return PyExc_MemoryError;
  }
  // torch.OutOfMemoryError, or torch.cuda.OutOfMemoryError (the same class) before torch 2.5
  PyObject* type = PyObject_GetAttrString(torch, "OutOfMemoryError");
  if (type == nullptr) {
    PyErr_Clear();
    if (PyObject* cuda = PyObject_GetAttrString(torch, "cuda")) {
      type = PyObject_GetAttrString(cuda, "OutOfMemoryError");
      Py_DECREF(cuda);
    }
  }
  Py_DECREF(torch);
  if (type == nullptr || !PyExceptionClass_Check(type)) {
    PyErr_Clear();
    Py_XDECREF(type);
    return PyExc_MemoryError;
  }
  Py_DECREF(type);  // torch's module keeps it alive
  return type;
}

// --- tensor maps ------------------------------------------------------------------------

// A line past the parsers' bound is refused unread, in the CLI's words.
std::optional<std::string> too_long(const std::string& line) {
  if (line.size() <= tmakit::kMaxLineBytes) return std::nullopt;
  return "the line is " + std::to_string(line.size()) + " bytes, more than the " +
         std::to_string(tmakit::kMaxLineBytes) + " a spec line may have";
}

// The fix validate's diagnose() proposes, as Python data: {"field", "index" (or None),
// "value"}.
nb::object fix_object(const std::optional<tmakit::SpecFix>& fix) {
  if (!fix) return nb::none();
  nb::dict d;
  d["field"] = fix->field;
  d["index"] = fix->index ? nb::cast(*fix->index) : nb::none();
  std::visit([&](const auto& v) { d["value"] = nb::cast(v); }, fix->value);
  return d;
}

// The architecture whose rules apply: the name given, or (empty) the GPU's when the driver
// reports one tmakit knows, else sm_90a, as `tmakit check --arch`. ValueError for an unknown name.
tmakit::Arch arch_arg(const std::string& name) {
  if (name.empty()) {
    const auto cc = tmakit::device_compute_capability();
    return tmakit::arch_of_compute_capability(cc.major, cc.minor).value_or(tmakit::Arch::sm_90a);
  }
  if (auto a = tmakit::parse_arch(name)) return *a;
  // NOTE: the name cut before it is escaped, so that no escape is cut in half
  throw tmakit::Error("arch: unknown architecture " +
                      tmakit::escape_unprintable(name.substr(0, 48)) +
                      (name.size() > 48 ? "..." : "") + " (known: " +
                      std::string(tmakit::arch_names()) + ")");
}

// One line judged as `tmakit check --jsonl` judges it (tools/cmd_check.cpp): ("ok" |
// "rejected" | "error", rule id or "", message, fix or None). The message of a rejected spec
// starts with its rule id ("T7: ...").
std::tuple<std::string, std::string, std::string, nb::object> check_line(
    const std::string& line, const std::string& arch_name) {
  const tmakit::Arch arch = arch_arg(arch_name);
  if (auto why = too_long(line)) return {"error", "", *why, nb::none()};
  tmakit::TensorMapSpec spec;
  try {
    spec = tmakit::parse_spec_json(line, arch);
  } catch (const tmakit::ParseError& e) {
    return {"error", "", tmakit::escape_unprintable(e.what()), nb::none()};
  } catch (const std::exception& e) {
    // NOTE: the parser reports malformed input as ParseError; anything else it lets through
    // (a JSON library error) is still a verdict on the line, never an exception.
    return {"error", "", tmakit::escape_unprintable(e.what()), nb::none()};
  }
  if (auto f = tmakit::diagnose(spec, arch)) {
    return {"rejected", f->violation.rule_id(), f->violation.what(), fix_object(f->fix)};
  }
  return {"ok", "", "", nb::none()};
}

// `tmakit check --fix` for one line: (true, the nearest spec that passes every rule, as a
// JSON line keeping the line's other keys) or (false, "error: ...").
std::pair<bool, std::string> fix_line(const std::string& line, const std::string& arch_name) {
  const tmakit::Arch arch = arch_arg(arch_name);
  if (auto why = too_long(line)) return {false, "error: " + *why};
  tmakit::TensorMapSpec spec;
  try {
    spec = tmakit::parse_spec_json(line, arch);
  } catch (const std::exception& e) {
    return {false, "error: " + tmakit::escape_unprintable(e.what())};
  }
  if (!tmakit::find_violation(spec, arch)) return {true, line};
  std::string why;
  const auto mended = tmakit::nearest_passing_spec(spec, arch, &why);
  if (!mended) {
    return {false, "error: no passing spec near this one: " + tmakit::escape_unprintable(why)};
  }
  return {true, tmakit::rewrite_spec_json(line, spec, *mended)};
}

// `tmakit rules [--arch NAME]`: the rules that can refuse a spec on the architecture named, or
// (empty) every rule of every architecture, as the CLI without --arch (not the GPU's, which
// check_line's empty name means). ValueError for an unknown name.
std::vector<std::tuple<std::string, std::string, std::string>> rule_list(
    const std::string& arch_name) {
  std::vector<tmakit::Rule> list(tmakit::rules().begin(), tmakit::rules().end());
  if (!arch_name.empty()) list = tmakit::rules(arch_arg(arch_name));
  std::vector<std::tuple<std::string, std::string, std::string>> out;
  for (const auto& r : list) {
    out.emplace_back(std::string(r.id), std::string(r.summary), std::string(r.im2col_id));
  }
  return out;
}

std::string describe_line(const std::string& line, const std::string& arch_name) {
  return tmakit::describe(tmakit::parse_spec_json(line, arch_arg(arch_name)));
}

std::string normalize_line(const std::string& line) {
  return tmakit::spec_to_json(tmakit::parse_spec_json(line));
}

// The 128 bytes of the encoded CUtensorMap (validated first, by the rules of the GPU it is
// encoded for; needs the driver and a GPU).
nb::bytes encode_line(const std::string& line) {
  const tmakit::Arch arch = arch_arg("");
  const tmakit::TensorMapSpec spec = tmakit::parse_spec_json(line, arch);
  tmakit::validate(spec, arch);
  tmakit::driver();  // a clear error naming libcuda.so.1 where there is no driver
  TMAKIT_DRIVER_CHECK(tmakit::ensure_current_context());
  const CUtensorMap map = tmakit::encode(spec);
  return nb::bytes(reinterpret_cast<const char*>(&map), sizeof map);
}

// --- the CPU model ----------------------------------------------------------------------

using ByteArray = nb::ndarray<nb::numpy, std::uint8_t, nb::ndim<2>>;

ByteArray to_numpy(std::vector<std::uint8_t>&& bytes, std::size_t rows, std::size_t cols) {
  auto* owned = new std::vector<std::uint8_t>(std::move(bytes));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<std::uint8_t>*>(p); });
  return ByteArray(owned->data(), {rows, cols}, owner);
}


// What one tiled load at `coords` writes, cut as `tmakit simulate` cuts it (tools/
// cmd_simulate.cpp): (box bytes / inner-row bytes) rows of max(inner-row bytes, swizzle span)
// bytes from a 1024-aligned buffer, the spec judged as a load on `arch_name` (arch_arg).
// Returns (bytes, written) as rows x row-bytes arrays.
// `coords` absent: the line's "coords" key, else zeros. NOTE: the spec is validated before
// its rank sizes anything (the coords, the picture), so no input can make this allocate more
// than a valid box needs.
std::pair<ByteArray, ByteArray> simulate_load(
    const std::string& line, nb::ndarray<const std::uint8_t, nb::ndim<1>, nb::c_contig, nb::device::cpu> global,
    const std::optional<std::vector<std::int64_t>>& coords, const std::string& arch_name) {
  const nlohmann::json object = tmakit::parse_json_line(line);
  const tmakit::TensorMapSpec spec =
      tmakit::spec_for_simulated_copy(object, arch_arg(arch_name), tmakit::Direction::load);
  tmakit::model::Coords c{};
  if (coords) {
    if (coords->size() != spec.rank) {
      throw tmakit::ParseError("coords: expected " + std::to_string(spec.rank) +
                               " integers (one per dimension), got " +
                               std::to_string(coords->size()));
    }
    for (std::size_t d = 0; d < coords->size(); ++d) {
      const std::int64_t x = (*coords)[d];
      if (x < INT32_MIN || x > INT32_MAX) {
        throw tmakit::ParseError("coords[" + std::to_string(d) + "]: " + std::to_string(x) +
                                 " is not a signed 32-bit integer");
      }
      c[d] = static_cast<std::int32_t>(x);
    }
  } else if (object.contains("coords")) {
    c = tmakit::coords_from_json(object, spec.rank);
  }
  const std::span<const std::uint8_t> bytes(global.data(), global.shape(0));
  tmakit::model::SharedBytes s;
  {
    nb::gil_scoped_release release;
    s = tmakit::model::load_tiled(spec, bytes, c, 0);
  }
  const std::uint64_t inner = tmakit::model::footprint(spec).row_bytes;
  const std::uint64_t rows = tmakit::box_bytes(spec) / inner;
  const std::uint64_t width =
      std::max<std::uint64_t>(inner, static_cast<std::uint64_t>(tmakit::swizzle_span_bytes(spec.swizzle)));
  std::vector<std::uint8_t> out(rows * width, 0), written(rows * width, 0);
  const std::size_t n = std::min<std::size_t>(out.size(), s.bytes.size());
  std::copy_n(s.bytes.begin(), n, out.begin());
  std::copy_n(s.written.begin(), n, written.begin());
  return {to_numpy(std::move(out), rows, width), to_numpy(std::move(written), rows, width)};
}

// The element size of a TMA data type named as in a spec line ("TFLOAT32": 4; 0 for
// Blackwell's packed types, whose values are 4 or 6 bits), or None for a name the library
// does not know.
std::optional<int> data_type_bytes(const std::string& name) {
  if (auto t = tmakit::parse_tensor_map_data_type(name)) return tmakit::element_bytes(*t);
  return std::nullopt;
}

// --- kernels ----------------------------------------------------------------------------

tmakit::DataType data_type(const std::string& name, const char* argument) {
  if (auto t = tmakit::parse_data_type(name)) return *t;
  throw tmakit::ArgumentError(argument, "unknown data type '" + name + "'");
}

// A view: (address, type name, rows, cols, row stride bytes, batch, image stride bytes).
template <class Ref>
Ref view(std::uintptr_t address, const std::string& type, std::uint64_t rows, std::uint64_t cols,
         std::uint64_t row_stride_bytes, std::uint64_t batch, std::uint64_t image_stride_bytes,
         const char* argument) {
  using Pointer = decltype(Ref{}.data);
  return Ref(reinterpret_cast<Pointer>(address), data_type(type, argument), rows, cols,
             row_stride_bytes, batch, image_stride_bytes);
}

cudaStream_t stream_of(std::uintptr_t s) { return reinterpret_cast<cudaStream_t>(s); }

void add_constant(std::uintptr_t in, std::uintptr_t out, const std::string& type,
                  std::uint64_t rows, std::uint64_t cols, std::uint64_t in_row_stride_bytes,
                  std::uint64_t out_row_stride_bytes, double value, std::uintptr_t stream) {
  const auto i = view<tmakit::ConstTensorRef>(in, type, rows, cols, in_row_stride_bytes, 1, 0, "in.type");
  const auto o = view<tmakit::TensorRef>(out, type, rows, cols, out_row_stride_bytes, 1, 0, "out.type");
  tmakit::add_constant(i, o, value, stream_of(stream));
}

void add_integer(std::uintptr_t in, std::uintptr_t out, const std::string& type,
                 std::uint64_t rows, std::uint64_t cols, std::uint64_t in_row_stride_bytes,
                 std::uint64_t out_row_stride_bytes, std::int64_t value, std::uintptr_t stream) {
  const auto i = view<tmakit::ConstTensorRef>(in, type, rows, cols, in_row_stride_bytes, 1, 0, "in.type");
  const auto o = view<tmakit::TensorRef>(out, type, rows, cols, out_row_stride_bytes, 1, 0, "out.type");
  tmakit::add_integer(i, o, value, stream_of(stream));
}

void transpose(std::uintptr_t in, std::uintptr_t out, const std::string& type, std::uint64_t rows,
               std::uint64_t cols, std::uint64_t in_row_stride_bytes,
               std::uint64_t out_row_stride_bytes, std::uintptr_t stream) {
  const auto i = view<tmakit::ConstTensorRef>(in, type, rows, cols, in_row_stride_bytes, 1, 0, "in.type");
  const auto o = view<tmakit::TensorRef>(out, type, cols, rows, out_row_stride_bytes, 1, 0, "out.type");
  tmakit::transpose(i, o, stream_of(stream));
}

void stencil3x3(std::uintptr_t in, std::uintptr_t out, const std::string& type,
                std::uint64_t batch, std::uint64_t rows, std::uint64_t cols,
                std::uint64_t in_row_stride_bytes, std::uint64_t in_image_stride_bytes,
                std::uint64_t out_row_stride_bytes, std::uint64_t out_image_stride_bytes,
                const std::array<double, 9>& taps, std::uintptr_t stream) {
  const auto i = view<tmakit::ConstTensorRef>(in, type, rows, cols, in_row_stride_bytes, batch,
                                              in_image_stride_bytes, "in.type");
  const auto o = view<tmakit::TensorRef>(out, type, rows, cols, out_row_stride_bytes, batch,
                                         out_image_stride_bytes, "out.type");
  tmakit::stencil3x3(i, o, tmakit::Filter3x3{taps}, stream_of(stream));
}

// The GEMM's arguments as the op passes them: addresses (all 0 for a traced call, whose memory
// is not there yet), extents, row pitches in bytes, D's type and the accumulation as enums.
struct GemmArgs {
  tmakit::ConstTensorRef a, b;
  tmakit::TensorRef d;
  tmakit::GemmScales scales;
  tmakit::GemmTuning tuning;
};

GemmArgs gemm_args(std::uintptr_t a, std::uintptr_t b, std::uintptr_t d, tmakit::DataType d_type,
                   std::uint64_t m, std::uint64_t n, std::uint64_t k_a, std::uint64_t k_b,
                   std::uint64_t d_rows, std::uint64_t d_cols, std::uint64_t a_pitch,
                   std::uint64_t b_pitch, std::uint64_t d_pitch, double alpha, double scale_a,
                   double scale_b, std::uintptr_t scale_a_device, std::uintptr_t scale_b_device,
                   tmakit::GemmScaleRecipe recipe, const std::array<std::int64_t, 4>& strides,
                   tmakit::GemmAccumulation accumulation) {
  GemmArgs r{tmakit::ConstTensorRef(reinterpret_cast<const void*>(a), tmakit::DataType::uint8, m,
                                    k_a, a_pitch),
             tmakit::ConstTensorRef(reinterpret_cast<const void*>(b), tmakit::DataType::uint8, n,
                                    k_b, b_pitch),
             tmakit::TensorRef(reinterpret_cast<void*>(d), d_type, d_rows, d_cols, d_pitch),
             {}, {}};
  r.scales.alpha = static_cast<float>(alpha);
  r.scales.scale_a = static_cast<float>(scale_a);
  r.scales.scale_b = static_cast<float>(scale_b);
  r.scales.scale_a_device = reinterpret_cast<const float*>(scale_a_device);
  r.scales.scale_b_device = reinterpret_cast<const float*>(scale_b_device);
  r.scales.recipe = recipe;
  r.scales.scale_a_strides = {strides[0], strides[1]};
  r.scales.scale_b_strides = {strides[2], strides[3]};
  r.tuning.accumulation = accumulation;
  return r;
}

// The library's argument names as the Python op calls them: "d.row_stride_bytes" -> "out:
// row_stride_bytes ...", "a.cols" -> "a: ...", "tuning.accumulation" -> "accumulate: ...".
[[noreturn]] void rethrow_gemm_error(const tmakit::ArgumentError& e) {
  const std::string& arg = e.argument();
  const std::string what = e.what();
  const std::string message = what.substr(std::min(what.size(), arg.size() + 2));
  const std::size_t dot = arg.find('.');
  const std::string head = arg.substr(0, dot);
  std::string field = dot == std::string::npos ? "" : arg.substr(dot + 1);
  std::string py = head == "d"        ? "out"
                   : head == "tuning" ? (field == "accumulation" ? "accumulate" : arg)
                   : head == "scales" ? (field.rfind("scale_a", 0) == 0   ? "scale_a"
                                         : field.rfind("scale_b", 0) == 0 ? "scale_b"
                                         : field == "alpha"               ? "alpha"
                                                                          : "alpha, scale_a, scale_b")
                                      : head;
  if (head == "scales" || head == "tuning" || field == "data" || field == "cols" ||
      field == "type") {
    field.clear();
  }
  throw tmakit::ArgumentError(py, field.empty() ? message : field + " " + message);
}

// The checks of a traced call (torch.compile's fake tensors): everything but the addresses.
void gemm_fp8_check(tmakit::DataType d_type, std::uint64_t m, std::uint64_t n, std::uint64_t k_a,
                    std::uint64_t k_b, std::uint64_t d_rows, std::uint64_t d_cols,
                    std::uint64_t a_pitch, std::uint64_t b_pitch, std::uint64_t d_pitch,
                    double alpha, double scale_a, double scale_b, bool scale_a_device,
                    bool scale_b_device, tmakit::GemmScaleRecipe recipe,
                    const std::array<std::int64_t, 4>& strides,
                    tmakit::GemmAccumulation accumulation) {
  // (a device scale's address is not known either: an aligned stand-in)
  const GemmArgs g = gemm_args(0, 0, 0, d_type, m, n, k_a, k_b, d_rows, d_cols, a_pitch, b_pitch,
                               d_pitch, alpha, scale_a, scale_b, scale_a_device ? 16 : 0,
                               scale_b_device ? 16 : 0, recipe, strides, accumulation);
  try {
    tmakit::gemm_fp8_check_shapes(g.a, g.b, g.d, g.scales, g.tuning);
  } catch (const tmakit::ArgumentError& e) {
    rethrow_gemm_error(e);
  }
}

void gemm_fp8(std::uintptr_t a, std::uintptr_t b, std::uintptr_t d, tmakit::DataType d_type,
              std::uint64_t m, std::uint64_t n, std::uint64_t k_a, std::uint64_t k_b,
              std::uint64_t d_rows, std::uint64_t d_cols, std::uint64_t a_pitch,
              std::uint64_t b_pitch, std::uint64_t d_pitch, double alpha, double scale_a,
              double scale_b, std::uintptr_t scale_a_device, std::uintptr_t scale_b_device,
              tmakit::GemmScaleRecipe recipe, const std::array<std::int64_t, 4>& strides,
              tmakit::GemmAccumulation accumulation, std::uintptr_t stream) {
  const GemmArgs g = gemm_args(a, b, d, d_type, m, n, k_a, k_b, d_rows, d_cols, a_pitch, b_pitch,
                               d_pitch, alpha, scale_a, scale_b, scale_a_device, scale_b_device,
                               recipe, strides, accumulation);
  try {
    tmakit::gemm_fp8(g.a, g.b, g.d, g.scales, stream_of(stream), g.tuning);
  } catch (const tmakit::ArgumentError& e) {
    rethrow_gemm_error(e);
  }
}


// --- the FP8 quantizer ------------------------------------------------------------------

tmakit::GemmScaleRecipe quantize_recipe(const std::string& recipe) {
  if (recipe == "tensor") return tmakit::GemmScaleRecipe::tensor;
  if (recipe == "row") return tmakit::GemmScaleRecipe::row;
  if (recipe == "block") return tmakit::GemmScaleRecipe::block;
  throw tmakit::ArgumentError("recipe", "'" + recipe + "' is not 'tensor', 'row' or 'block'");
}

tmakit::QuantizeOperand quantize_operand(const std::string& operand) {
  if (operand == "a") return tmakit::QuantizeOperand::a;
  if (operand == "b") return tmakit::QuantizeOperand::b;
  throw tmakit::ArgumentError("operand", "'" + operand + "' is not 'a' or 'b'");
}

// x (rows x cols of `type`) and x_fp8 (UINT8, the same shape) as the op passes them: addresses
// (0 for a traced call), extents and row pitches in bytes.
std::pair<tmakit::ConstTensorRef, tmakit::TensorRef> quantize_views(
    std::uintptr_t x, std::uintptr_t x_fp8, const std::string& type, std::uint64_t rows,
    std::uint64_t cols, std::uint64_t x_pitch, std::uint64_t x_fp8_pitch) {
  return {view<tmakit::ConstTensorRef>(x, type, rows, cols, x_pitch, 1, 0, "x.type"),
          tmakit::TensorRef(reinterpret_cast<void*>(x_fp8), tmakit::DataType::uint8, rows, cols,
                            x_fp8_pitch)};
}

void quantize_fp8(std::uintptr_t x, std::uintptr_t x_fp8, std::uintptr_t scale,
                  const std::string& type, std::uint64_t rows, std::uint64_t cols,
                  std::uint64_t x_pitch, std::uint64_t x_fp8_pitch, const std::string& recipe,
                  const std::string& operand, std::uintptr_t stream) {
  const auto [xv, qv] = quantize_views(x, x_fp8, type, rows, cols, x_pitch, x_fp8_pitch);
  tmakit::quantize_fp8(xv, qv, reinterpret_cast<float*>(scale), quantize_recipe(recipe),
                       quantize_operand(operand), {}, stream_of(stream));
}

// The checks of a traced call (torch.compile's fake tensors): everything but the addresses.
void quantize_fp8_check(const std::string& type, std::uint64_t rows, std::uint64_t cols,
                        std::uint64_t x_pitch, std::uint64_t x_fp8_pitch,
                        const std::string& recipe, const std::string& operand) {
  const auto [xv, qv] = quantize_views(0, 0, type, rows, cols, x_pitch, x_fp8_pitch);
  tmakit::quantize_fp8_check_shapes(xv, qv, quantize_recipe(recipe), quantize_operand(operand));
}

}  // namespace

NB_MODULE(_tmakit, m) {
  m.doc() = "tmakit's C++ library: the tensor-map validator, the CPU model of TMA, the kernels";

  // NOTE: bad input (a broken rule, a malformed spec, a launcher's ArgumentError) is the
  // caller's to fix and maps to ValueError; a failed CUDA call (no driver, a launch error) to
  // RuntimeError. The argument name leads an ArgumentError's message ("out.data: ...").
  // A spec's ParseError may quote the line's bytes: escaped as `tmakit check` prints them, so
  // describe, simulate and encode say what check says. No message can fail to become a str
  // (a UnicodeDecodeError in place of the error): bytes that are not UTF-8 come out escaped.
  // OutOfMemory (device memory exhausted) becomes the exception a torch user catches for
  // that, torch.OutOfMemoryError, where torch is loaded (the ops' outputs come from torch's
  // allocator, which raises it): one except clause covers both. Without torch, MemoryError.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const tmakit::OutOfMemory& e) {
      set_python_error(out_of_memory_type(), e.what());
    } catch (const tmakit::CudaError& e) {
      set_python_error(PyExc_RuntimeError, e.what());
    } catch (const tmakit::ParseError& e) {
      set_python_error(PyExc_ValueError, tmakit::escape_unprintable(e.what()));
    } catch (const tmakit::Error& e) {
      set_python_error(PyExc_ValueError, e.what());
    }
  });

  m.def("check_line", &check_line, "line"_a, "arch"_a = "sm_90a",
        "Judge one JSON spec line as `tmakit check --jsonl` does: (verdict, rule, message).");
  m.def("fix_line", &fix_line, "line"_a, "arch"_a = "sm_90a",
        "`tmakit check --fix` for one line: (passed, the nearest passing spec or 'error: ...').");
  m.def("rules", &rule_list, "arch"_a = "",
        "The rules the validator applies on an architecture ('': every rule), in order: "
        "[(id, summary, im2col id or '')].");
  m.def("describe_line", &describe_line, "line"_a, "arch"_a = "sm_90a",
        "The one-line description of a spec.");
  m.def("normalize_line", &normalize_line, "line"_a,
        "The spec as the library writes it back (keys in order, defaults filled in).");
  m.def("encode_line", &encode_line, "line"_a,
        "Validate and encode a spec through the driver: the 128 bytes of the CUtensorMap.");
  m.def("driver_available", &tmakit::driver_available,
        "True when libcuda.so.1 loads and cuInit succeeds.");
  m.def("simulate_load", &simulate_load, "line"_a, "global_bytes"_a, "coords"_a.none(),
        "arch"_a = "",
        "What one tiled load writes to a 1024-aligned shared buffer: (bytes, written); "
        "coords None: the line's \"coords\" key, else zeros; the spec judged as a load on "
        "arch ('': the GPU's, else sm_90a).");
  m.def("data_type_bytes", &data_type_bytes, "name"_a,
        "The element size of a TMA data type name ('TFLOAT32': 4; 0: a packed type), None for an "
        "unknown name.");
  // The parsers' bounds (include/tmakit/host/spec_json.hpp), for the Python side's own.
  m.attr("MAX_LINE_BYTES") = tmakit::kMaxLineBytes;
  m.attr("MAX_JSON_DEPTH") = tmakit::kMaxJsonDepth;

  m.def("add_constant", &add_constant, "in_"_a, "out"_a, "type"_a, "rows"_a, "cols"_a,
        "in_row_stride_bytes"_a, "out_row_stride_bytes"_a, "value"_a, "stream"_a);
  m.def("add_integer", &add_integer, "in_"_a, "out"_a, "type"_a, "rows"_a, "cols"_a,
        "in_row_stride_bytes"_a, "out_row_stride_bytes"_a, "value"_a, "stream"_a);
  m.def("transpose", &transpose, "in_"_a, "out"_a, "type"_a, "rows"_a, "cols"_a,
        "in_row_stride_bytes"_a, "out_row_stride_bytes"_a, "stream"_a);
  m.def("stencil3x3", &stencil3x3, "in_"_a, "out"_a, "type"_a, "batch"_a, "rows"_a, "cols"_a,
        "in_row_stride_bytes"_a, "in_image_stride_bytes"_a, "out_row_stride_bytes"_a,
        "out_image_stride_bytes"_a, "taps"_a, "stream"_a);
  nb::enum_<tmakit::DataType>(m, "DataType")
      .value("bfloat16", tmakit::DataType::bfloat16)
      .value("float16", tmakit::DataType::float16);
  nb::enum_<tmakit::GemmAccumulation>(m, "GemmAccumulation")
      .value("promoted", tmakit::GemmAccumulation::promoted)
      .value("fast", tmakit::GemmAccumulation::fast);
  nb::enum_<tmakit::GemmScaleRecipe>(m, "GemmScaleRecipe")
      .value("tensor", tmakit::GemmScaleRecipe::tensor)
      .value("row", tmakit::GemmScaleRecipe::row)
      .value("block", tmakit::GemmScaleRecipe::block);
  m.def("gemm_fp8", &gemm_fp8, "a"_a, "b"_a, "d"_a, "d_type"_a, "m"_a, "n"_a, "k_a"_a, "k_b"_a,
        "d_rows"_a, "d_cols"_a, "a_row_stride_bytes"_a, "b_row_stride_bytes"_a,
        "d_row_stride_bytes"_a, "alpha"_a, "scale_a"_a, "scale_b"_a, "scale_a_device"_a,
        "scale_b_device"_a, "recipe"_a, "scale_strides"_a, "accumulation"_a, "stream"_a);
  m.def("gemm_fp8_check", &gemm_fp8_check, "d_type"_a, "m"_a, "n"_a, "k_a"_a, "k_b"_a,
        "d_rows"_a, "d_cols"_a, "a_row_stride_bytes"_a, "b_row_stride_bytes"_a,
        "d_row_stride_bytes"_a, "alpha"_a, "scale_a"_a, "scale_b"_a, "scale_a_device"_a,
        "scale_b_device"_a, "recipe"_a, "scale_strides"_a, "accumulation"_a,
        "gemm_fp8's checks of a traced call: every rule but those of the addresses.");

  // the FP8 quantizer (tmakit.quantize_fp8)
  m.def("quantize_fp8", &quantize_fp8, "x"_a, "x_fp8"_a, "scale"_a, "type"_a, "rows"_a, "cols"_a,
        "x_row_stride_bytes"_a, "x_fp8_row_stride_bytes"_a, "recipe"_a, "operand"_a, "stream"_a);
  m.def("quantize_fp8_check", &quantize_fp8_check, "type"_a, "rows"_a, "cols"_a,
        "x_row_stride_bytes"_a, "x_fp8_row_stride_bytes"_a, "recipe"_a, "operand"_a,
        "quantize_fp8's checks of a traced call: every rule but those of the addresses.");
}
