#include "tmakit/host/tensor_map_cache.hpp"

#include <cuda_runtime_api.h>

#include <limits>
#include <string>
#include <utility>

#include "tmakit/core/cuda_check.hpp"
#include "tmakit/core/error.hpp"
#include "tmakit/host/encode.hpp"

namespace tmakit {
namespace {

// boost-style combine: good enough spread for a few hundred keys.
void mix(std::size_t& seed, std::uint64_t v) {
  seed ^= std::hash<std::uint64_t>{}(v) + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2);
}

}  // namespace

std::size_t TensorMapSpecHash::operator()(const TensorMapSpec& s) const noexcept {
  std::size_t seed = 0;
  // every field: a field left out would make two different maps share an entry
  mix(seed, static_cast<std::uint64_t>(s.kind));
  mix(seed, static_cast<std::uint64_t>(s.data_type));
  mix(seed, s.rank);
  mix(seed, s.global_address);
  for (auto v : s.global_dim) mix(seed, v);
  for (auto v : s.global_strides_bytes) mix(seed, v);
  for (auto v : s.box_dim) mix(seed, v);
  for (auto v : s.pixel_box_lower_corner) mix(seed, static_cast<std::uint32_t>(v));
  for (auto v : s.pixel_box_upper_corner) mix(seed, static_cast<std::uint32_t>(v));
  mix(seed, s.channels_per_pixel);
  mix(seed, s.pixels_per_column);
  mix(seed, static_cast<std::uint32_t>(s.pixel_box_lower_corner_width));
  mix(seed, static_cast<std::uint32_t>(s.pixel_box_upper_corner_width));
  mix(seed, static_cast<std::uint64_t>(s.wide_mode));
  for (auto v : s.element_strides) mix(seed, v);
  mix(seed, static_cast<std::uint64_t>(s.interleave));
  mix(seed, static_cast<std::uint64_t>(s.swizzle));
  mix(seed, static_cast<std::uint64_t>(s.l2_promotion));
  mix(seed, static_cast<std::uint64_t>(s.oob_fill));
  mix(seed, static_cast<std::uint64_t>(s.tile_mode));
  mix(seed, static_cast<std::uint64_t>(s.direction));
  return seed;
}

TensorMapCache::TensorMapCache() : encoder_([](const TensorMapSpec& s) { return encode(s); }) {}

TensorMapCache::TensorMapCache(Encoder encoder) : encoder_(std::move(encoder)) {}

CUtensorMap TensorMapCache::get(const TensorMapSpec& spec) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (const auto it = maps_.find(spec); it != maps_.end()) {
    ++hits_;
    return it->second;
  }
  // NOTE: built under the lock: a build is microseconds and happens once per spec, and
  // two threads racing on one spec must not both pay for it.
  const CUtensorMap map = encoder_(spec);
  ++builds_;
  maps_.emplace(spec, map);
  return map;
}

std::size_t TensorMapCache::erase_range(const void* base, std::size_t bytes) {
  const auto lo = reinterpret_cast<std::uintptr_t>(base);
  std::lock_guard<std::mutex> lock(mutex_);
  return std::erase_if(maps_, [&](const auto& entry) {
    return entry.first.global_address >= lo && entry.first.global_address - lo < bytes;
  });
}

void TensorMapCache::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  maps_.clear();
}

std::size_t TensorMapCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return maps_.size();
}

std::uint64_t TensorMapCache::hits() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return hits_;
}

std::uint64_t TensorMapCache::builds() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return builds_;
}

TensorMapCache& default_tensor_map_cache() {
  static TensorMapCache cache;
  return cache;
}

// --- DeviceTensorMapArray -------------------------------------------------------------

namespace {

// Bytes of `count` maps; Error where the size would wrap.
std::size_t maps_bytes(std::size_t count) {
  if (count > std::numeric_limits<std::size_t>::max() / sizeof(CUtensorMap)) {
    throw Error("DeviceTensorMapArray: " + std::to_string(count) +
                " tensor maps do not fit an address space");
  }
  return count * sizeof(CUtensorMap);
}

}  // namespace

DeviceTensorMapArray::DeviceTensorMapArray(std::size_t count) {
  // NOTE: cudaMalloc returns 256-byte aligned memory, more than rule T1 asks.
  TMAKIT_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&maps_), maps_bytes(count)));
  count_ = count;
  capacity_ = count;
}

DeviceTensorMapArray::~DeviceTensorMapArray() {
  if (maps_ != nullptr) cudaFree(maps_);  // no throw from a destructor
}

DeviceTensorMapArray::DeviceTensorMapArray(DeviceTensorMapArray&& other) noexcept
    : maps_(std::exchange(other.maps_, nullptr)),
      count_(std::exchange(other.count_, 0)),
      capacity_(std::exchange(other.capacity_, 0)) {}

DeviceTensorMapArray& DeviceTensorMapArray::operator=(DeviceTensorMapArray&& other) noexcept {
  if (this != &other) {
    if (maps_ != nullptr) cudaFree(maps_);
    maps_ = std::exchange(other.maps_, nullptr);
    count_ = std::exchange(other.count_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

void DeviceTensorMapArray::upload(std::span<const CUtensorMap> maps, cudaStream_t stream) {
  // grow when needed (the old contents are replaced anyway)
  if (maps.size() > capacity_) {
    const std::size_t bytes = maps_bytes(maps.size());
    // NOTE: the old memory is given up before the calls that may throw, so that no failure
    // leaves a freed pointer here (for the destructor to free again) or a count without memory
    void* old = std::exchange(maps_, nullptr);
    capacity_ = count_ = 0;
    if (old != nullptr) TMAKIT_CUDA_CHECK(cudaFree(old));
    TMAKIT_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&maps_), bytes));
    capacity_ = maps.size();
  }
  count_ = maps.size();
  if (count_ == 0) return;
  TMAKIT_CUDA_CHECK(cudaMemcpyAsync(maps_, maps.data(), count_ * sizeof(CUtensorMap),
                                    cudaMemcpyHostToDevice, stream));
}

}  // namespace tmakit
