// Shared by the device-layer GPU tests: the skip check, device buffers, launch checks.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "tmakit/core/cuda_check.hpp"
#include "tmakit/host/driver.hpp"

namespace tmakit::test {

// Empty when a Hopper GPU and driver are usable; otherwise why not (the skip message).
inline std::string gpu_unavailable_reason() {
  if (!driver_available()) return "no usable CUDA driver (libcuda.so.1 / cuInit failed)";
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    return "no CUDA GPU visible";
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return "cudaGetDeviceProperties failed";
  if (prop.major < 9) {
    return std::string("GPU ") + prop.name + " is sm_" +
           std::to_string(prop.major * 10 + prop.minor) + "; TMA needs sm_90";
  }
  return {};
}

#define TMAKIT_REQUIRE_GPU()                                                     \
  do {                                                                           \
    const std::string tmakit_why = ::tmakit::test::gpu_unavailable_reason();     \
    if (!tmakit_why.empty()) GTEST_SKIP() << "GPU test skipped: " << tmakit_why; \
  } while (0)

// Launch error, then execution error, each with its call site.
#define TMAKIT_CHECK_LAUNCH()                    \
  do {                                           \
    TMAKIT_CUDA_CHECK(cudaGetLastError());       \
    TMAKIT_CUDA_CHECK(cudaDeviceSynchronize());  \
  } while (0)

// Owning device buffer of T.
template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    TMAKIT_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&ptr_), bytes()));
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) { upload(host); }
  ~DeviceBuffer() { cudaFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void upload(const std::vector<T>& host) {
    TMAKIT_CUDA_CHECK(cudaMemcpy(ptr_, host.data(), bytes(), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    std::vector<T> host(count_);
    TMAKIT_CUDA_CHECK(cudaMemcpy(host.data(), ptr_, bytes(), cudaMemcpyDeviceToHost));
    return host;
  }
  // Every byte set to `byte` (poison before a kernel writes).
  void fill_bytes(unsigned char byte) { TMAKIT_CUDA_CHECK(cudaMemset(ptr_, byte, bytes())); }

  T* get() const { return ptr_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

 private:
  T* ptr_ = nullptr;
  std::size_t count_ = 0;
};

// Raw bit pattern, for byte-exact comparisons of any element type.
template <class T>
std::uint64_t bits(const T& v) {
  std::uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}

}  // namespace tmakit::test
