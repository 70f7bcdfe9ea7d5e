// Errors: one exception family and one family of check macros.
#pragma once

#if __cplusplus < 202002L
#error "tmakit needs C++20: in CMake set_target_properties(<target> PROPERTIES CXX_STANDARD 20 CUDA_STANDARD 20) (or leave CUDA_STANDARD unset); with nvcc -std=c++20"
#endif

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tmakit {

// Base of every exception tmakit throws for bad input or a failed CUDA call.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A tensor-map spec broke one of the rules of host/validate.hpp.
// `rule_id()` is the rule's id in docs/rules.md ("T7", "I3", "X2", ...); `what()` reads
// "T7: boxDim[0]*4 = 100 bytes is not a multiple of 16; use 24 or 28".
class RuleViolation : public Error {
 public:
  RuleViolation(std::string rule_id, const std::string& message)
      : Error(rule_id + ": " + message), rule_id_(std::move(rule_id)) {}
  const std::string& rule_id() const noexcept { return rule_id_; }

 private:
  std::string rule_id_;
};

// Malformed input to a parser (JSON spec lines, CLI arguments).
class ParseError : public Error {
 public:
  using Error::Error;
};

// A CUDA runtime or driver call failed.
class CudaError : public Error {
 public:
  CudaError(int code, const std::string& message) : Error(message), code_(code) {}
  int code() const noexcept { return code_; }

 private:
  int code_;
};

// Device memory ran out: an allocation of `requested_bytes()` failed (code() is
// cudaErrorMemoryAllocation's). The message says what needed the memory and what to do; the
// runtime's last error is cleared and nothing was written, so the caller may free memory and
// make the same call again.
class OutOfMemory : public CudaError {
 public:
  OutOfMemory(int code, std::size_t requested_bytes, const std::string& message)
      : CudaError(code, message), requested_bytes_(requested_bytes) {}
  std::size_t requested_bytes() const noexcept { return requested_bytes_; }

 private:
  std::size_t requested_bytes_;
};

}  // namespace tmakit
