// Small text helpers shared by the CLI commands.
#pragma once

#include <string>

#include "tmakit/host/spec_json.hpp"

namespace tmakit::cli {

// Messages may quote bytes of a garbage input line: everything outside printable ASCII is
// written as \xNN so each verdict stays one printable line (the library's escaping, which the
// Python package uses too).
inline std::string printable(const std::string& s) { return escape_unprintable(s); }

}  // namespace tmakit::cli
