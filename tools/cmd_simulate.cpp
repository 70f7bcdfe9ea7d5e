// tmakit simulate --global FILE --jsonl SPECS [--grid] [--store | --reduce OP] [--shared SMEM]
// For each SPECS line (a `tmakit check` tiled spec plus "coords":[rank ints]) prints one line:
// the shared-memory footprint of that load, as it lands in a buffer aligned to 1024 bytes, in
// lowercase hex with `..` for every byte the load does not write. The footprint is
// the model's (model::footprint): box rows x their pitch, the pitch max(inner-row bytes,
// swizzle span), or the inner-row bytes with interleave (dense rows; whole 128-byte lines when
// interleaved rows are swizzled).
// FILE holds the global tensor's bytes, byte 0 at the spec's globalAddress.
// --store / --reduce OP: print the global bytes the store (or reduce) of the shared buffer in
// SMEM writes instead, `..` for bytes it leaves alone, over the whole of FILE.
// Each spec is judged for the copy simulated: its "direction" is load, store or reduce as the
// options say (a line whose "direction" names another copy is an error line), so the rules
// about one direction apply (docs/rules.md: S1, G4, P6). gather4/scatter4 maps are error lines
// (a spec has no place for their four row coordinates). Blank lines are skipped.
// An invalid spec or a missing byte of FILE gives an `error: ...` line. Exit 0 when every line
// is ok, 1 when any line is an error, 2 for unreadable files, unwritable output or bad usage
// (at most one of FILE, SPECS and SMEM may be "-", stdin; --shared needs --store or --reduce).
// FILE may hold at most kMaxGlobalBytes (256 MiB) and SMEM kMaxSharedFileBytes; a box whose
// shared-memory footprint is past 228 KiB is an error line (the model refuses it).
#include <algorithm>
#include <climits>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <sys/stat.h>

#include "command.hpp"
#include "io.hpp"
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
  std::string arch;
  bool shared_given = false;
};

// NOTE: --store prints the whole of FILE (twice its size in hex) and keeps three copies of
// it, so FILE is bounded; a load needs only the bytes its box reaches.
constexpr std::uint64_t kMaxGlobalBytes = std::uint64_t{256} << 20;
constexpr std::uint64_t kMaxSharedFileBytes = std::uint64_t{1} << 20;

// The bytes of `path`, or the reason they cannot be had (a directory, a read error, more than
// `limit` bytes: checked before reading where the size is known, else while reading).
std::vector<std::uint8_t> read_bounded(const std::string& path, const std::string& what,
                                       std::uint64_t limit, std::string* why) {
  tmakit::cli::Input in(path, what);
  std::vector<std::uint8_t> bytes;
  if (!in.ok()) {
    *why = in.error();
    return bytes;
  }
  auto too_large = [&](const std::string& size) {
    *why = what + " holds " + size + " bytes; simulate reads at most " + std::to_string(limit) +
           " (" + std::to_string(limit >> 20) + " MiB): give only the bytes the boxes reach";
  };
  const auto size = in.regular_file_bytes();
  if (size > 0 && static_cast<std::uint64_t>(size) > limit) {
    too_large(std::to_string(size));
    return {};
  }
  if (size > 0) bytes.reserve(static_cast<std::size_t>(size));
  std::uint8_t chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(in.fd(), chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      in.failed(errno);
      *why = in.error();
      return {};
    }
    if (n == 0) break;
    if (bytes.size() + static_cast<std::size_t>(n) > limit) {
      too_large("more than " + std::to_string(limit));
      return {};
    }
    bytes.insert(bytes.end(), chunk, chunk + n);
  }
  why->clear();
  return bytes;
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

// The load's footprint window, in the format the output documents (docs/model.md).
Picture simulate_load(const tmakit::TensorMapSpec& spec, const std::vector<std::uint8_t>& global,
                      const model::Coords& coords) {
  const model::SharedBytes s = model::load_tiled(spec, global, coords, 0);
  // NOTE: the model's own rows and pitch: with interleave the rows are dense whatever the
  // swizzle (H12), and a packed box's shared bytes are more than its barrier bytes
  const model::Footprint fp = model::footprint(spec);
  Picture p;
  p.row_bytes = fp.pitch_bytes;
  p.bytes.assign(fp.total_bytes, 0);
  p.written.assign(fp.total_bytes, 0);
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
  // the bytes written: the box's in-bounds elements and dimension 0's last 16-byte chunk (H4)
  p.written.assign(p.bytes.size(), 0);
  for (const auto& r : model::store_tiled_ranges(spec, coords)) {
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
  if (to_global && !opt.shared_given) {
    std::cerr << "tmakit simulate: --store and --reduce need --shared FILE (the shared buffer)\n";
    return 2;
  }
  if (!to_global && opt.shared_given) {
    std::cerr << "tmakit simulate: --shared " << opt.shared_file
              << " is the buffer a store or reduce writes from: give --store or --reduce OP, "
                 "or leave --shared out for loads\n";
    return 2;
  }
  // NOTE: each "-" reads stdin to its end; a second would read nothing and judge no line. So
  // would a second read of one stream under another name (/dev/stdin, /proc/self/fd/0, a FIFO
  // named twice): stdin, and any input that is not a regular file, is read by one input only.
  std::vector<std::pair<const char*, struct stat>> streams;
  for (const auto& [flag, file] :
       {std::pair{"--global", &opt.global_file}, std::pair{"--jsonl", &opt.specs_file},
        std::pair{"--shared", &opt.shared_file}}) {
    if (file->empty()) continue;
    struct stat st {};
    const bool dash = *file == "-";
    const int rc = dash ? ::fstat(0, &st) : ::stat(file->c_str(), &st);
    // (a file that cannot be read is refused when it is read)
    if (rc != 0 || (!dash && S_ISREG(st.st_mode))) continue;
    for (const auto& [other, seen] : streams) {
      if (seen.st_dev == st.st_dev && seen.st_ino == st.st_ino) {
        std::cerr << "tmakit simulate: " << other << " and " << flag
                  << " cannot both read stdin (-) or one stream; give one of them a file\n";
        return 2;
      }
    }
    streams.emplace_back(flag, st);
  }
  if (opt.store && op) {
    std::cerr << "tmakit simulate: give --store or --reduce, not both\n";
    return 2;
  }
  std::string arch_error;
  const auto arch = tmakit::cli::resolve_arch(opt.arch, &arch_error);
  if (!arch) {
    std::cerr << "tmakit simulate: " << arch_error << "\n";
    return 2;
  }
  std::string why;
  const std::vector<std::uint8_t> global =
      read_bounded(opt.global_file, "--global " + opt.global_file, kMaxGlobalBytes, &why);
  if (!why.empty()) {
    std::cerr << "tmakit simulate: " << why << "\n";
    return 2;
  }
  std::vector<std::uint8_t> smem;
  if (to_global) {
    smem = read_bounded(opt.shared_file, "--shared " + opt.shared_file, kMaxSharedFileBytes, &why);
    if (!why.empty()) {
      std::cerr << "tmakit simulate: " << why << "\n";
      return 2;
    }
  }
  tmakit::cli::Input input(opt.specs_file, "--jsonl " + opt.specs_file);
  if (!input.ok()) {
    std::cerr << "tmakit simulate: " << input.error() << "\n";
    return 2;
  }

  const tmakit::Direction copy = op          ? tmakit::Direction::reduce
                                 : opt.store ? tmakit::Direction::store
                                             : tmakit::Direction::load;
  bool all_ok = true;
  tmakit::cli::LineReader reader(input, tmakit::kMaxLineBytes);
  std::string line;
  std::size_t length = 0, number = 0;
  for (;;) {
    const auto got = reader.next(line, length);
    if (got == tmakit::cli::LineReader::Got::failed) {
      std::cerr << "tmakit simulate: " << input.error() << " (after line " << number << ")\n";
      return 2;
    }
    if (got == tmakit::cli::LineReader::Got::end || !std::cout) break;
    ++number;
    if (got == tmakit::cli::LineReader::Got::line && tmakit::cli::blank_line(line)) continue;
    std::string out;
    try {
      if (got == tmakit::cli::LineReader::Got::too_long) {
        throw tmakit::ParseError("the line is " + std::to_string(length) +
                                 " bytes, more than the " + std::to_string(tmakit::kMaxLineBytes) +
                                 " a spec line may have");
      }
      // parse, validate, then simulate; any failure is this line's error
      const nlohmann::json object = tmakit::parse_json_line(line);
      const tmakit::TensorMapSpec spec = tmakit::spec_for_simulated_copy(object, *arch, copy);
      const model::Coords coords = tmakit::coords_from_json(object, spec.rank);
      const Picture p = to_global ? simulate_store(spec, global, smem, coords, op)
                                  : simulate_load(spec, global, coords);
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
            "error: " + tmakit::escape_unprintable(e.what()) + "\n";
    }
    std::cout << out;
  }
  return all_ok ? 0 : 1;
}

const tmakit::cli::Registrar kSimulate(
    "simulate", "Print what tiled TMA loads (or stores, reduces) write, from the CPU model",
    [](CLI::App& app) {
      auto opt = std::make_shared<Options>();
      app.add_option("--global", opt->global_file,
                     "File of the global tensor's bytes (byte 0 at globalAddress; - = stdin)")
          ->required();
      app.add_option("--jsonl", opt->specs_file,
                     "Specs, one JSON object per line with \"coords\" (- = stdin; blank lines "
                     "skipped)")
          ->required();
      app.add_option("--arch", opt->arch,
                     "Architecture whose rules the specs must pass: sm_90a, sm_100a, sm_103a, "
                     "sm_120a (default: the GPU's when the driver reports one, else sm_90a)");
      app.add_flag("--grid", opt->grid, "Readable view: one row of bytes per line, offsets first");
      app.add_flag("--store", opt->store, "Simulate a store of --shared into global memory");
      app.add_option("--reduce", opt->reduce,
                     "Simulate a reduce of --shared into global memory: add, min, max, inc, "
                     "dec, and, or, xor");
      auto* shared = app.add_option(
          "--shared", opt->shared_file,
          "File of the shared buffer (at a 1024-aligned address) for --store/--reduce (- = stdin)");
      return [opt, shared] {
        opt->shared_given = shared->count() > 0;
        return run_simulate(*opt);
      };
    });

}  // namespace
