// tmakit simulate --global FILE --jsonl SPECS [--grid] [--store SMEM | --reduce OP --shared SMEM]
// For each SPECS line (a `tmakit check` tiled spec plus "coords":[rank ints]) prints one line:
// the shared-memory footprint of that load, as it lands in a buffer aligned to 1024 bytes, in
// lowercase hex with `..` for every byte the load does not write. The footprint is
// (box bytes / inner-row bytes) rows x max(inner-row bytes, swizzle span) bytes.
// FILE holds the global tensor's bytes, byte 0 at the spec's globalAddress.
// --store / --reduce OP: print the global bytes the store (or reduce) of the shared buffer in
// SMEM writes instead, `..` for bytes it leaves alone, over the whole of FILE.
// An invalid spec or a missing byte of FILE gives an `error: ...` line. Exit 0 when every line
// is ok, 1 when any line is an error, 2 for unreadable files or bad usage.
#include <algorithm>
#include <climits>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "command.hpp"
#include "text.hpp"
#include "tmakit/host/spec_json.hpp"
#include "tmakit/host/validate.hpp"
#include "tmakit/model/tma_model.hpp"

namespace {

namespace model = tmakit::model;

struct Options {
  std::string global_file;
  std::string specs_file;
  std::string shared_file;
  bool grid = false;
  bool store = false;
  std::string reduce;
};

std::optional<std::vector<std::uint8_t>> read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(f)),
                                  std::istreambuf_iterator<char>());
  if (f.bad()) return std::nullopt;
  return bytes;
}

using tmakit::cli::printable;

// The "coords" key: exactly `rank` signed 32-bit integers.
model::Coords parse_coords(const std::string& line, std::uint32_t rank) {
  const auto o = nlohmann::json::parse(line, nullptr, false);
  const auto it = o.is_object() ? o.find("coords") : o.end();
  if (!o.is_object() || it == o.end()) throw tmakit::ParseError("coords: missing");
  if (!it->is_array() || it->size() != rank) {
    throw tmakit::ParseError("coords: expected an array of " + std::to_string(rank) +
                             " integers (one per dimension), got " + it->dump());
  }
  model::Coords c{};
  for (std::uint32_t d = 0; d < rank; ++d) {
    const auto& v = (*it)[d];
    const bool fits = v.is_number_unsigned() ? v.get<std::uint64_t>() <= INT32_MAX
                      : v.is_number_integer()
                          ? v.get<std::int64_t>() >= INT32_MIN && v.get<std::int64_t>() <= INT32_MAX
                          : false;
    if (!fits) {
      throw tmakit::ParseError("coords[" + std::to_string(d) + "]: " + v.dump() +
                               " is not a signed 32-bit integer");
    }
    c[d] = static_cast<std::int32_t>(v.get<std::int64_t>());
  }
  return c;
}

void append_hex(std::string& out, std::uint8_t b, bool written) {
  static const char* digits = "0123456789abcdef";
  if (!written) {
    out += "..";
    return;
  }
  out += digits[b >> 4];
  out += digits[b & 15];
}

// One result: the bytes and which of them were written, cut into rows for --grid.
struct Picture {
  std::vector<std::uint8_t> bytes;
  std::vector<std::uint8_t> written;
  std::size_t row_bytes = 0;
};

// The load's footprint window as the format defines it.
Picture simulate_load(const tmakit::TensorMapSpec& spec, const std::vector<std::uint8_t>& global,
                      const model::Coords& coords) {
  const model::SharedBytes s = model::load_tiled(spec, global, coords, 0);
  // NOTE: a row's data bytes; with interleave dimension 0 counts 16/32-byte slices (H12)
  const std::uint64_t inner = model::footprint(spec).row_bytes;
  const std::uint64_t rows = tmakit::box_bytes(spec) / inner;
  const std::uint64_t width =
      std::max<std::uint64_t>(inner, tmakit::swizzle_span_bytes(spec.swizzle));
  Picture p;
  p.row_bytes = width;
  p.bytes.assign(rows * width, 0);
  p.written.assign(rows * width, 0);
  // NOTE: the model's buffer and the window both start at the 1024-aligned buffer start
  const std::size_t n = std::min<std::size_t>(p.bytes.size(), s.bytes.size());
  std::copy_n(s.bytes.begin(), n, p.bytes.begin());
  std::copy_n(s.written.begin(), n, p.written.begin());
  return p;
}

// A store or reduce: the whole global buffer, written bytes marked.
Picture simulate_store(const tmakit::TensorMapSpec& spec, const std::vector<std::uint8_t>& global,
                       const std::vector<std::uint8_t>& smem, const model::Coords& coords,
                       std::optional<model::ReduceOp> op) {
  Picture p;
  p.bytes = global;
  p.row_bytes = 64;
  if (op) {
    model::reduce_tiled(spec, *op, p.bytes, smem, coords, 0);
  } else {
    model::store_tiled(spec, p.bytes, smem, coords, 0);
  }
  // the bytes written are exactly the in-bounds elements of the box
  p.written.assign(p.bytes.size(), 0);
  for (const auto& r : model::prefetch_tiled(spec, coords)) {
    for (std::uint64_t i = r.begin; i < r.end && i < p.written.size(); ++i) p.written[i] = 1;
  }
  return p;
}

int run_simulate(const Options& opt) {
  std::optional<model::ReduceOp> op;
  if (!opt.reduce.empty()) {
    op = model::parse_reduce_op(opt.reduce);
    if (!op) {
      std::cerr << "tmakit simulate: --reduce " << opt.reduce
                << " is not one of add, min, max, inc, dec, and, or, xor\n";
      return 2;
    }
  }
  const bool to_global = opt.store || op.has_value();
  if (to_global && opt.shared_file.empty()) {
    std::cerr << "tmakit simulate: --store and --reduce need --shared FILE (the shared buffer)\n";
    return 2;
  }
  if (opt.store && op) {
    std::cerr << "tmakit simulate: give --store or --reduce, not both\n";
    return 2;
  }
  const auto global = read_all(opt.global_file);
  if (!global) {
    std::cerr << "tmakit simulate: cannot read --global " << opt.global_file << "\n";
    return 2;
  }
  std::vector<std::uint8_t> smem;
  if (to_global) {
    const auto s = read_all(opt.shared_file);
    if (!s) {
      std::cerr << "tmakit simulate: cannot read --shared " << opt.shared_file << "\n";
      return 2;
    }
    smem = *s;
  }
  std::ifstream file;
  std::istream* in = &std::cin;
  if (opt.specs_file != "-") {
    file.open(opt.specs_file, std::ios::binary);
    if (!file) {
      std::cerr << "tmakit simulate: cannot read --jsonl " << opt.specs_file << "\n";
      return 2;
    }
    in = &file;
  }

  bool all_ok = true;
  std::string line;
  std::size_t number = 0;
  while (std::getline(*in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::string out;
    try {
      // parse, validate, then simulate; any failure is this line's error
      const tmakit::TensorMapSpec spec = tmakit::parse_spec_json(line);
      if (spec.kind != tmakit::EncodeKind::tiled) {
        throw tmakit::ParseError("encode: simulate handles tiled specs only");
      }
      if (auto v = tmakit::find_violation(spec)) throw *v;
      const model::Coords coords = parse_coords(line, spec.rank);
      const Picture p = to_global ? simulate_store(spec, *global, smem, coords, op)
                                  : simulate_load(spec, *global, coords);
      if (opt.grid) {
        out += "# line " + std::to_string(number) + ": " + std::to_string(p.bytes.size()) +
               " bytes, " + std::to_string(p.row_bytes) + " per row\n";
        for (std::size_t i = 0; i < p.bytes.size(); ++i) {
          if (i % p.row_bytes == 0) {
            char head[24];
            std::snprintf(head, sizeof head, "%6zx:", i);
            out += head;
          }
          out += ' ';
          append_hex(out, p.bytes[i], p.written[i] != 0);
          if ((i + 1) % p.row_bytes == 0 || i + 1 == p.bytes.size()) out += '\n';
        }
      } else {
        out.reserve(p.bytes.size() * 2 + 1);
        for (std::size_t i = 0; i < p.bytes.size(); ++i) {
          append_hex(out, p.bytes[i], p.written[i] != 0);
        }
        out += '\n';
      }
    } catch (const tmakit::Error& e) {
      all_ok = false;
      out = (opt.grid ? "# line " + std::to_string(number) + ": " : std::string()) +
            "error: " + printable(e.what()) + "\n";
    }
    std::cout << out;
  }
  if (in->bad()) {
    std::cerr << "tmakit simulate: read error on " << opt.specs_file << "\n";
    return 2;
  }
  std::cout.flush();
  return all_ok ? 0 : 1;
}

const tmakit::cli::Registrar kSimulate(
    "simulate", "Print what tiled TMA loads (or stores, reduces) write, from the CPU model",
    [](CLI::App& app) {
      auto opt = std::make_shared<Options>();
      app.add_option("--global", opt->global_file,
                     "File of the global tensor's bytes (byte 0 at globalAddress)")
          ->required();
      app.add_option("--jsonl", opt->specs_file,
                     "Specs, one JSON object per line with \"coords\" (- = stdin)")
          ->required();
      app.add_flag("--grid", opt->grid, "Readable view: one row of bytes per line, offsets first");
      app.add_flag("--store", opt->store, "Simulate a store of --shared into global memory");
      app.add_option("--reduce", opt->reduce,
                     "Simulate a reduce of --shared into global memory: add, min, max, inc, "
                     "dec, and, or, xor");
      app.add_option("--shared", opt->shared_file,
                     "File of the shared buffer (at a 1024-aligned address) for --store/--reduce");
      return [opt] { return run_simulate(*opt); };
    });

}  // namespace
