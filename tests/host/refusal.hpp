// What the host tests of the launchers share: stand-in addresses the launchers never
// dereference, and the argument an ArgumentError names.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "tmakit/kernels/tensor_ref.hpp"

namespace tmakit::test {

// A stand-in device address (never dereferenced: the launchers refuse before any CUDA call).
inline void* fake(std::uintptr_t address) { return reinterpret_cast<void*>(address); }

// The argument an ArgumentError names ("" when nothing was thrown, "<other exception>" for
// anything else); its whole text in *message when asked.
inline std::string refused(const std::function<void()>& call, std::string* message = nullptr) {
  try {
    call();
  } catch (const ArgumentError& e) {
    if (message != nullptr) *message = e.what();
    return e.argument();
  } catch (...) {
    return "<other exception>";
  }
  return "";
}

}  // namespace tmakit::test
