// TMAKIT_CUDA_CHECK: throw tmakit::CudaError with the call's text,
// the error's name and file:line. Header-only so kernels, tests and tools share one form.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "tmakit/core/error.hpp"

namespace tmakit::detail {

[[noreturn]] inline void throw_cuda_error(int code, const char* name, const char* description,
                                          const char* call, const char* file, int line) {
  throw CudaError(code, std::string(file) + ":" + std::to_string(line) + ": " + call +
                            " failed with " + name + " (" + std::to_string(code) +
                            "): " + description);
}

inline void check_runtime(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess) {
    throw_cuda_error(static_cast<int>(status), cudaGetErrorName(status),
                     cudaGetErrorString(status), call, file, line);
  }
}

}  // namespace tmakit::detail

#define TMAKIT_CUDA_CHECK(call) ::tmakit::detail::check_runtime((call), #call, __FILE__, __LINE__)

// TMAKIT_DRIVER_CHECK lives in host/driver.hpp: driver entry points are fetched at run time.
