// Host descriptor cache: a tensor map is built once per distinct spec (pointer, shape,
// strides, box, element strides, data type, swizzle, interleave, L2 promotion, OOB fill,
// im2col geometry) and then copied out, so repeated launches call neither the validator nor
// the driver. And DeviceTensorMapArray: maps uploaded to global memory for grouped kernels
// (device side: device/tensor_map.hpp).
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <unordered_map>

#include "tmakit/host/tensor_map_spec.hpp"

namespace tmakit {

// Hash over every field of the spec (all of them reach the encoded map).
struct TensorMapSpecHash {
  std::size_t operator()(const TensorMapSpec& spec) const noexcept;
};

class TensorMapCache {
 public:
  using Encoder = std::function<CUtensorMap(const TensorMapSpec&)>;

  // `encoder` builds a map on a miss; the default is tmakit::encode (validate + driver).
  TensorMapCache();
  explicit TensorMapCache(Encoder encoder);

  // The map for `spec`: from the cache, or built once and remembered. Thread-safe.
  // Throws whatever the encoder throws (RuleViolation, CudaError); nothing is cached then.
  CUtensorMap get(const TensorMapSpec& spec);

  // Forget every map whose global address lies in [base, base + bytes): call it when
  // freeing a buffer if the cache must not grow with dead entries.
  // NOTE: a stale entry is never wrong, only unused: a map holds the address and geometry
  // it was built from, and a later buffer at the same address with the same spec gets the
  // same map.
  std::size_t erase_range(const void* base, std::size_t bytes);
  void clear();

  std::size_t size() const;
  std::uint64_t hits() const;
  std::uint64_t builds() const;

 private:
  Encoder encoder_;
  mutable std::mutex mutex_;
  std::unordered_map<TensorMapSpec, CUtensorMap, TensorMapSpecHash> maps_;
  std::uint64_t hits_ = 0;
  std::uint64_t builds_ = 0;
};

// The process-wide cache launchers use.
TensorMapCache& default_tensor_map_cache();

// Tensor maps in global memory, e.g. one per group of a grouped GEMM. Upload from the
// host, pass data() to the kernel, and call acquire_tensor_map(&maps[i]) on the device
// before the first TMA through maps[i]. Not copyable; frees its memory.
class DeviceTensorMapArray {
 public:
  DeviceTensorMapArray() = default;
  explicit DeviceTensorMapArray(std::size_t count);
  ~DeviceTensorMapArray();
  DeviceTensorMapArray(const DeviceTensorMapArray&) = delete;
  DeviceTensorMapArray& operator=(const DeviceTensorMapArray&) = delete;
  DeviceTensorMapArray(DeviceTensorMapArray&& other) noexcept;
  DeviceTensorMapArray& operator=(DeviceTensorMapArray&& other) noexcept;

  // Copy `maps` to the device (stream-ordered on `stream`); grows the array if needed. A
  // count past the address space throws Error (as the constructor does); a CUDA failure
  // while growing throws CudaError and leaves the array empty.
  // NOTE: a launch after this copy in stream order sees the maps; the device-side acquire
  // fence covers maps that kernels themselves rewrite.
  void upload(std::span<const CUtensorMap> maps, cudaStream_t stream = nullptr);

  CUtensorMap* data() const { return maps_; }
  std::size_t size() const { return count_; }

 private:
  CUtensorMap* maps_ = nullptr;
  std::size_t count_ = 0;
  std::size_t capacity_ = 0;
};

}  // namespace tmakit
