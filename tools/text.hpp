// Small text helpers shared by the CLI commands.
#pragma once

#include <string>

namespace tmakit::cli {

// Messages may quote bytes of a garbage input line: escape everything outside printable
// ASCII as \xNN so each verdict stays one printable line.
inline std::string printable(const std::string& s) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kDigits[c >> 4];
      out += kDigits[c & 15];
    }
  }
  return out;
}

}  // namespace tmakit::cli
