// tmakit swizzle --type T --swizzle S --box COLSxROWS [--base ADDR] [--text] [--svg F] [--png F]
// Pictures of a box in shared memory: which element lands where, and in which bank, before
// and after the swizzle, with the index formula. The layout comes from the model's footprint
// rule (rows span bytes apart, O2 in docs/hardware.md) and the shared swizzle function (swizzle.hpp).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "command.hpp"
#include "files.hpp"
#include "tmakit/core/dtype.hpp"
#include "tmakit/core/error.hpp"
#include "tmakit/host/spec_json.hpp"
#include "tmakit/host/tensor_map_spec.hpp"
#include "tmakit/swizzle.hpp"

namespace {

struct Options {
  std::string type = "FLOAT16";
  std::string swizzle = "128B";
  std::string box = "64x8";
  std::uint32_t base = 0;
  bool text = false;
  std::string svg;
  std::string png;
};

// The picture's geometry, checked. It maps a row's bytes, not its elements: a byte holds part
// of an element (16- to 64-bit types), a whole one (8-bit types), two 4-bit values
// (16U4_ALIGN8B), or a padded slot's data or padding (16U4_ALIGN16B, 16U6_ALIGN16B: each 16
// values' 8 or 12 bytes, then padding, in a 16-byte slot).
struct Layout {
  tmakit::DataType type{};
  tmakit::Swizzle swizzle{};
  std::uint32_t cols = 0, rows = 0, row_bytes = 0, pitch = 0, base = 0;
  std::uint32_t value_bits = 0;  // bits of one value (4 or 6 for the packed types)
  std::uint32_t unit_bytes = 0;  // bytes of the SVG's cells: one element, or one byte (packed)
  std::uint32_t slot_data_bytes = 0;  // padded types: data bytes of each 16-byte slot, else 0

  // Buffer offset where byte `byte` of row `row` is stored; before: without the swizzle.
  std::uint32_t offset(std::uint32_t row, std::uint32_t byte, bool after) const {
    const std::uint32_t logical = row * pitch + byte;
    if (!after) return logical;
    return tmakit::swizzle_address(swizzle, base + logical) - base;
  }
  // Shared-memory bank (32 banks of 4 bytes) of buffer offset `off`.
  std::uint32_t bank(std::uint32_t off) const { return ((base + off) / 4) % 32; }

  // The columns byte `byte` of a row holds (first, last), or false for a padded slot's padding.
  bool columns_of(std::uint32_t byte, std::uint32_t& first, std::uint32_t& last) const {
    std::uint32_t bit = byte * 8;
    if (slot_data_bytes != 0) {
      const std::uint32_t in_slot = byte % 16;
      if (in_slot >= slot_data_bytes) return false;
      bit = byte / 16 * slot_data_bytes * 8 + in_slot * 8;
    }
    first = bit / value_bits;
    last = (bit + 7) / value_bits;
    return true;
  }
};

// An option's value in a message: unprintable bytes escaped (a terminal's escape sequences
// are not echoed), at most 64 bytes of it.
std::string shown(const std::string& value) {
  const std::string escaped = tmakit::escape_unprintable(value.substr(0, 64));
  return value.size() > 64 ? escaped + "..." : escaped;
}

// Throws tmakit::ParseError with a message naming the option and the fix.
Layout make_layout(const Options& o) {
  Layout l;
  const auto t = tmakit::parse_tensor_map_data_type(o.type);
  if (!t) {
    throw tmakit::ParseError("--type " + shown(o.type) +
                             " is not a tensor-map data type (UINT8, UINT16, UINT32, INT32, "
                             "UINT64, INT64, FLOAT16, FLOAT32, FLOAT64, BFLOAT16, FLOAT32_FTZ, "
                             "TFLOAT32, TFLOAT32_FTZ; sm_100a and later: 16U4_ALIGN8B, "
                             "16U4_ALIGN16B, 16U6_ALIGN16B)");
  }
  const auto s = tmakit::parse_swizzle(o.swizzle);
  if (!s) {
    throw tmakit::ParseError("--swizzle " + shown(o.swizzle) +
                             " is not NONE, 32B, 64B or 128B (or, sm_100a and later, "
                             "128B_ATOM_32B, 128B_ATOM_32B_FLIP_8B, 128B_ATOM_64B)");
  }
  l.type = *t;
  l.swizzle = *s;
  l.value_bits = static_cast<std::uint32_t>(tmakit::value_bits(*t));
  const bool padded = tmakit::is_padded(*t);
  l.slot_data_bytes = padded ? 16 * l.value_bits / 8 : 0;
  l.unit_bytes = tmakit::is_packed(*t) ? 1 : static_cast<std::uint32_t>(tmakit::element_bytes(*t));
  // NOTE: digits only (sscanf's %lu took a sign and white space, and wrapped a negative
  // extent modulo 2^64: -18446744073709551600 read as 16); a minus is an extent outside 1..256
  std::smatch m;
  static const std::regex kBox(R"((-?)([0-9]+)x(-?)([0-9]+))");
  if (!std::regex_match(o.box, m, kBox)) {
    throw tmakit::ParseError("--box " + shown(o.box) +
                             " is not COLSxROWS (elements of dimension 0 x rows), e.g. 64x8");
  }
  auto extent = [&](int sign, int digits) -> unsigned long {
    if (m[sign].length() > 0) return 0;           // negative: below 1
    // (leading zeros dropped first: 0064 is 64)
    const std::string d = m[digits].str();
    const auto first = d.find_first_not_of('0');
    const std::string kept = first == std::string::npos ? "0" : d.substr(first);
    if (kept.size() > 9) return ULONG_MAX;  // past 256
    return std::stoul(kept);
  };
  const unsigned long cols = extent(1, 2), rows = extent(3, 4);
  if (cols < 1 || rows < 1 || cols > 256 || rows > 256) {
    throw tmakit::ParseError("--box " + shown(o.box) + ": each box dimension is 1..256 (rule T7)");
  }
  l.cols = static_cast<std::uint32_t>(cols);
  l.rows = static_cast<std::uint32_t>(rows);
  const std::string type_name(tmakit::name(*t));
  if (padded) {
    // NOTE: the padded types' boxDim[0] is exactly 128 values (rule P3): 128 bytes of shared
    // memory, 64 or 96 of them data; their swizzles are listed by rule P5
    if (l.cols != tmakit::kPaddedRowValues) {
      throw tmakit::ParseError("--box " + o.box + ": a " + type_name +
                               " box row is exactly 128 values (rule P3); use --box 128x" +
                               std::to_string(l.rows));
    }
    const bool u6 = *t == tmakit::DataType::packed_u6_align16;
    if (!tmakit::padded_type_takes_swizzle(*t, *s)) {
      throw tmakit::ParseError("--swizzle " + shown(o.swizzle) + ": " + type_name +
                               " takes NONE, 128B or 128B_ATOM_32B" +
                               (u6 ? " (and 128B_ATOM_64B for stores)" : "") + " (rule P5)");
    }
    l.row_bytes = tmakit::kPaddedRowValues * tmakit::shared_value_bits(*t) / 8;  // 128
  } else if (tmakit::is_packed(*t)) {
    l.row_bytes = (l.cols * l.value_bits + 7) / 8;
  } else {
    l.row_bytes = l.cols * l.unit_bytes;
  }
  const std::uint32_t span = static_cast<std::uint32_t>(tmakit::swizzle_span_bytes(l.swizzle));
  // (columns that fill whole 16 bytes: 16 bytes of values, rounded up)
  const std::uint32_t values_per_16 = 128 / l.value_bits;
  // (the whole-16-byte column counts on either side, as the validator's T7 names them)
  const std::uint32_t below = l.cols / values_per_16 * values_per_16;
  const std::string column_hint =
      (below > 0 ? std::to_string(below) + " or " : std::string()) +
      std::to_string(below + values_per_16);
  if (l.row_bytes % 16 != 0 || l.cols * l.value_bits % 8 != 0) {
    throw tmakit::ParseError("--box " + o.box + ": a row is " +
                             std::to_string(l.cols * l.value_bits / 8) +
                             (l.cols * l.value_bits % 8 != 0 ? ".5" : "") +
                             " bytes, not a multiple of 16 (rule T7); use " + column_hint +
                             " columns");
  }
  if (span != 0 && l.row_bytes > span) {
    throw tmakit::ParseError("--box " + o.box + ": a row is " + std::to_string(l.row_bytes) +
                             " bytes, wider than the " + o.swizzle +
                             " span (rule T9); use at "
                             "most " +
                             std::to_string(span * 8 / l.value_bits) + " columns");
  }
  // (as the validator's X1: one copy fills at most 228 KiB of shared memory)
  const std::uint64_t box_data_bytes = std::uint64_t{l.cols} * l.value_bits / 8 * l.rows;
  constexpr std::uint64_t kMaxBoxBytes = 233472;
  if (box_data_bytes > kMaxBoxBytes) {
    throw tmakit::ParseError("--box " + o.box + ": the box is " +
                             std::to_string(box_data_bytes) + " bytes, more than the " +
                             std::to_string(kMaxBoxBytes) +
                             " (228 KiB) one copy can fill (rule X1); use at most " +
                             std::to_string(kMaxBoxBytes / (box_data_bytes / l.rows)) + " rows");
  }
  if (o.base % 128 != 0) {
    throw tmakit::ParseError("--base " + std::to_string(o.base) +
                             " is not 128-byte aligned (rule D1)");
  }
  l.base = o.base;
  // NOTE: O2: a swizzled row narrower than the span still takes the whole span
  l.pitch = span != 0 ? span : l.row_bytes;
  return l;
}

std::string formula(const Layout& l) {
  const std::uint32_t mask = tmakit::swizzle_chunk_mask(l.swizzle);
  std::ostringstream os;
  os << "off = row * " << l.pitch << " + ";
  if (l.slot_data_bytes != 0) {
    os << "(col / 16) * 16 + (col % 16) * " << l.value_bits << " / 8 (each 16 values' "
       << l.slot_data_bytes << " bytes, then " << 16 - l.slot_data_bytes
       << " of padding, in a 16-byte slot)";
  } else if (tmakit::is_packed(l.type)) {
    os << "col / 2 (two 4-bit values a byte, col 2k in the low half)";
  } else {
    os << "col * " << l.unit_bytes;
  }
  if (l.swizzle == tmakit::Swizzle::bytes128_atom32 ||
      l.swizzle == tmakit::Swizzle::bytes128_atom32_flip8) {
    os << "; stored = off ^ (((base + off) >> 7) & 3) << 5"
       << "  (32-byte unit p of 128-byte line r goes to unit p ^ (r & 3))";
    if (l.swizzle == tmakit::Swizzle::bytes128_atom32_flip8) {
      os << " ^ (((base + off) >> 7) & 1) << 3  (odd lines swap the 8-byte halves of each 16)";
    }
  } else if (l.swizzle == tmakit::Swizzle::bytes128_atom64) {
    os << "; stored = off ^ (((base + off) >> 7) & 1) << 6"
       << "  (64-byte half h of 128-byte line r goes to half h ^ (r & 1))";
  } else if (mask == 0) {
    os << "; stored = off (no swizzle)";
  } else {
    os << "; stored = off ^ (((base + off) >> 7) & " << mask << ") << 4"
       << "  (16-byte chunk j of 128-byte line r goes to chunk j ^ (r & " << mask << "))";
  }
  os << "; bank = ((base + stored) / 4) % 32";
  return os.str();
}

std::string header(const Layout& l) {
  std::ostringstream os;
  os << tmakit::name(l.type) << " box " << l.cols << " x " << l.rows << ", swizzle "
     << tmakit::name(l.swizzle) << ", rows " << l.pitch << " bytes apart (";
  if (l.slot_data_bytes != 0) {
    os << l.row_bytes << " bytes: " << l.row_bytes / 16 * l.slot_data_bytes << " of data, "
       << l.row_bytes / 16 * (16 - l.slot_data_bytes) << " of padding)";
  } else {
    os << l.row_bytes << " bytes of data)";
  }
  os << ", buffer at shared address " << l.base;
  if (l.base % tmakit::swizzle_repeat_bytes(l.swizzle) != 0) {
    os << " -- NOT on the " << tmakit::swizzle_repeat_bytes(l.swizzle)
       << "-byte repeat: the pattern shifts (D2)";
  }
  return os.str();
}

// Terminal grid, one cell per 16-byte chunk: the columns it holds (or the padding of a padded
// type's slots) and their banks.
std::string text_picture(const Layout& l) {
  std::ostringstream os;
  os << header(l) << "\n" << formula(l) << "\n";
  // NOTE: the 8-byte flip moves 8-byte halves, and a padded type's slot holds its padding in
  // its second half: their cells are 8 bytes, the others' 16.
  const std::uint32_t cell_bytes =
      (l.swizzle == tmakit::Swizzle::bytes128_atom32_flip8 && l.unit_bytes <= 8) ||
              l.slot_data_bytes != 0
          ? 8
          : 16;
  const std::uint32_t cells = l.pitch / cell_bytes;
  for (int pass = 0; pass < 2; ++pass) {
    os << (pass == 0 ? "\nbefore the swizzle" : "\nafter the swizzle (as stored)")
       << ": each cell is one " << cell_bytes << "-byte chunk, columns cF-L, banks bF-L\n";
    for (std::uint32_t r = 0; r < l.rows; ++r) {
      // the columns of the bytes stored in each cell of this row, and whether padding is there
      std::vector<long> first(cells, -1), last(cells, -1);
      std::vector<bool> padding(cells, false);
      for (std::uint32_t b = 0; b < l.row_bytes; ++b) {
        const std::uint32_t j = (l.offset(r, b, pass == 1) - r * l.pitch) / cell_bytes;
        std::uint32_t c0 = 0, c1 = 0;
        if (!l.columns_of(b, c0, c1)) {
          padding[j] = true;
          continue;
        }
        if (first[j] < 0 || c0 < first[j]) first[j] = c0;
        if (c1 > last[j]) last[j] = c1;
      }
      char head[24];
      std::snprintf(head, sizeof head, "row %3u |", r);
      os << head;
      for (std::uint32_t j = 0; j < cells; ++j) {
        const std::uint32_t b0 = l.bank(r * l.pitch + j * cell_bytes);
        const std::uint32_t b1 = b0 + cell_bytes / 4 - 1;
        char cell[96];
        if (first[j] < 0) {
          std::snprintf(cell, sizeof cell, " %-9s b%02u-%02u |",
                        padding[j] ? "(padding)" : "(unused)", b0, b1);
        } else {
          std::snprintf(cell, sizeof cell, " c%3ld-%-4ld b%02u-%02u |", first[j], last[j], b0, b1);
        }
        os << cell;
      }
      os << "\n";
    }
  }
  return os.str();
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

// SVG: two panels of one cell per element (per byte for the packed types), coloured by the
// element's original 16-byte chunk so the permutation shows; bank numbers over each 4-byte
// column; a padded type's padding grey.
std::string svg_picture(const Layout& l) {
  const std::uint32_t u = l.unit_bytes;
  const int cell_w = static_cast<int>(std::max<std::uint32_t>(10, 6 * u));
  const int cell_h = 18;
  const std::uint32_t slots = l.pitch / u;  // cells per row, data or not
  const int grid_w = static_cast<int>(slots) * cell_w;
  const int left = 60, top = 70, gap = 50;
  const int panel_h = 20 + static_cast<int>(l.rows) * cell_h;
  const int width = left + grid_w + 20;
  const int height = top + 2 * panel_h + gap + 40;
  std::ostringstream os;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
     << "\" font-family=\"monospace\" font-size=\"10\">\n"
     << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
     << "<text x=\"10\" y=\"20\" font-size=\"13\">" << xml_escape(header(l)) << "</text>\n"
     << "<text x=\"10\" y=\"40\">" << xml_escape(formula(l)) << "</text>\n";
  for (int pass = 0; pass < 2; ++pass) {
    const int y0 = top + pass * (panel_h + gap);
    os << "<text x=\"10\" y=\"" << y0 - 6 << "\" font-size=\"12\">"
       << (pass == 0 ? "before the swizzle" : "after the swizzle (as stored)")
       << " -- cell: column; colour: source 16-byte chunk; top: bank</text>\n";
    // bank of each 4-byte word of row 0's positions
    for (std::uint32_t w = 0; w < l.pitch / 4; ++w) {
      const int x = left + static_cast<int>(w * 4 / u) * cell_w;
      if (u < 4 || w * 4 % u == 0) {
        os << "<text x=\"" << x + 1 << "\" y=\"" << y0 + 12 << "\" fill=\"#555\">b" << l.bank(w * 4)
           << "</text>\n";
      }
    }
    for (std::uint32_t r = 0; r < l.rows; ++r) {
      const int y = y0 + 20 + static_cast<int>(r) * cell_h;
      os << "<text x=\"10\" y=\"" << y + 13 << "\">row " << r << "</text>\n";
      for (std::uint32_t b = 0; b < l.row_bytes; b += u) {
        const std::uint32_t at = l.offset(r, b, pass == 1) - r * l.pitch;
        const int x = left + static_cast<int>(at / u) * cell_w;
        std::uint32_t c0 = 0, c1 = 0;
        const bool data = l.columns_of(b, c0, c1);
        std::string what, label;
        if (!data) {
          what = "padding of slot " + std::to_string(b / 16);
          label = "p";
        } else if (c0 == c1 || !tmakit::is_packed(l.type)) {
          what = "col " + std::to_string(c0);
          label = std::to_string(c0);
        } else {
          what = "cols " + std::to_string(c0) + "-" + std::to_string(c1);
          label = std::to_string(c0);
        }
        const int hue = static_cast<int>(b / 16 * 45 % 360);
        os << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << cell_w << "\" height=\""
           << cell_h << "\" fill=\"";
        if (data) {
          os << "hsl(" << hue << ",70%,80%)";
        } else {
          os << "#ddd";
        }
        os << "\" stroke=\"#333\" stroke-width=\"0.5\"><title>row " << r << " " << what
           << " at byte " << r * l.pitch + at << " bank " << l.bank(r * l.pitch + at)
           << "</title></rect>\n";
        if (cell_w >= 18) {
          os << "<text x=\"" << x + 2 << "\" y=\"" << y + 13 << "\">" << label << "</text>\n";
        }
      }
    }
  }
  os << "</svg>\n";
  return os.str();
}

int run_swizzle(const Options& o) {
  Layout l;
  try {
    l = make_layout(o);
  } catch (const tmakit::Error& e) {
    std::cerr << "tmakit swizzle: " << e.what() << "\n";
    return 2;
  }
  // NOTE: every file is checked, and the converter found, before anything is written or
  // printed, so that a refusal leaves no partial output behind
  if (const auto why = tmakit::cli::outputs_unwritable("--svg", o.svg, "--png", o.png)) {
    std::cerr << "tmakit swizzle: " << *why << "\n";
    return 2;
  }
  if (!o.png.empty() &&
      (o.svg.find('\'') != std::string::npos || o.png.find('\'') != std::string::npos)) {
    std::cerr << "tmakit swizzle: file names with a single quote are not supported\n";
    return 2;
  }
  // NOTE: PNG needs an external converter; rsvg-convert or ImageMagick, whichever exists
  const bool rsvg =
      !o.png.empty() && std::system("command -v rsvg-convert >/dev/null 2>&1") == 0;
  const bool magick =
      !o.png.empty() && !rsvg && std::system("command -v convert >/dev/null 2>&1") == 0;
  if (!o.png.empty() && !rsvg && !magick) {
    std::cerr << "tmakit swizzle: no SVG-to-PNG converter (rsvg-convert or ImageMagick "
                 "convert) found; --svg FILE writes the SVG itself\n";
    return 2;
  }
  if (!o.svg.empty()) {
    if (const auto why = tmakit::cli::write_whole(o.svg, svg_picture(l))) {
      std::cerr << "tmakit swizzle: cannot write " << o.svg << ": " << *why << "\n";
      return 2;
    }
  }
  if (!o.png.empty()) {
    // NOTE: the SVG a PNG is made from: --svg's file, or a temporary one of its own (never a
    // name beside the PNG, which might be someone's file)
    std::string svg_path = o.svg;
    if (svg_path.empty()) {
      // (a TMPDIR with a single quote would break the converter's quoted command: /tmp then)
      const char* dir = std::getenv("TMPDIR");
      svg_path = dir != nullptr && *dir != '\0' && std::strchr(dir, '\'') == nullptr ? dir : "/tmp";
      if (svg_path.back() != '/') svg_path += '/';
      svg_path += "tmakit-swizzle-XXXXXX.svg";
      const int fd = ::mkstemps(svg_path.data(), 4);
      if (fd < 0) {
        std::cerr << "tmakit swizzle: cannot make a temporary SVG: " << std::strerror(errno)
                  << "\n";
        return 2;
      }
      ::close(fd);
      if (const auto why = tmakit::cli::write_whole(svg_path, svg_picture(l))) {
        std::remove(svg_path.c_str());
        std::cerr << "tmakit swizzle: cannot write a temporary SVG: " << *why << "\n";
        return 2;
      }
    }
    // NOTE: a name starting with '-' would reach the converter as an option: "./-o.png".
    auto operand = [](const std::string& path) {
      return "'" + (path.rfind('-', 0) == 0 ? "./" + path : path) + "'";
    };
    const std::string quoted_svg = operand(svg_path), quoted_png = operand(o.png);
    const std::string cmd = rsvg ? "rsvg-convert -o " + quoted_png + " " + quoted_svg
                                 : "convert " + quoted_svg + " " + quoted_png;
    const int status = std::system(cmd.c_str());
    if (o.svg.empty()) std::remove(svg_path.c_str());
    if (status != 0) {
      std::cerr << "tmakit swizzle: the converter failed: " << cmd << "\n";
      return 2;
    }
  }
  if (o.text || (o.svg.empty() && o.png.empty())) std::cout << text_picture(l);
  return 0;
}

const tmakit::cli::Registrar kSwizzle(
    "swizzle", "Draw where each element of a box lands in shared memory, before/after swizzle",
    [](CLI::App& app) {
      auto o = std::make_shared<Options>();
      app.add_option("--type", o->type,
                     "Tensor-map data type (FLOAT16, UINT8, ..., or Blackwell's 16U4_ALIGN8B, "
                     "16U4_ALIGN16B, 16U6_ALIGN16B; default FLOAT16)");
      app.add_option("--swizzle", o->swizzle,
                     "NONE, 32B, 64B or 128B, or Blackwell's 128B_ATOM_32B, "
                     "128B_ATOM_32B_FLIP_8B, 128B_ATOM_64B (default 128B)");
      app.add_option("--box", o->box,
                     "COLSxROWS: elements of dimension 0 x rows (default 64x8)");
      app.add_option("--base", o->base,
                     "Shared address of the buffer (128-aligned, at most 2^24; default 0)")
          ->transform(tmakit::cli::whole_number(0, 1 << 24));
      app.add_flag("--text", o->text, "Terminal grid (the default when no file is asked for)");
      app.add_option("--svg", o->svg, "Write the picture as SVG to this file");
      app.add_option("--png", o->png,
                     "Write it as PNG (through the SVG, kept only where --svg names it; needs "
                     "rsvg-convert or ImageMagick's convert)");
      return [o] { return run_swizzle(*o); };
    });

}  // namespace
