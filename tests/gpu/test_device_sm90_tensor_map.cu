// Descriptors on the GPU: the host cache across repeated launches, maps kept in a global
// array (grouped kernels), and maps rewritten on the device with tensormap.replace and the
// tensormap-proxy fence protocol (sm_90a).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <vector>

#include "tmakit/device/barrier.hpp"
#include "tmakit/device/copy.hpp"
#include "tmakit/device/sm90_tensor_map_update.hpp"
#include "tmakit/device/tensor_map.hpp"
#include "tmakit/device/tile.hpp"
#include "tmakit/host/tensor_map_cache.hpp"
#include "test_device_util.hpp"

namespace tmakit {
namespace {

using test::DeviceBuffer;

using GTile = Tile<float, Swizzle::bytes128, 32, 8>;  // 32 x 8 fp32
constexpr std::uint32_t kTileElems = GTile::rows * GTile::box[0];

// Load the box at (x, y) through `map` and write it to `out` in box order.
__device__ void load_box_to(const CUtensorMap* map, std::int32_t x, std::int32_t y, float* out) {
  __shared__ GTile::Buffer buf;
  __shared__ Barrier bar;
  if (threadIdx.x == 0) {
    bar.init(1);
    fence_barrier_init();
  }
  __syncthreads();
  if (threadIdx.x == 0) arrive_and_load<GTile>(buf.bytes, map, bar, {x, y});
  bar.wait(0);
  for (std::uint32_t i = threadIdx.x; i < kTileElems; i += blockDim.x) {
    out[i] = GTile::at(buf.bytes, i % GTile::box[0], i / GTile::box[0]);
  }
}

__global__ void by_value_kernel(const __grid_constant__ CUtensorMap map, float* out) {
  load_box_to(&map, 0, 8, out);
}

// Grouped: block b uses maps[b] from global memory.
__global__ void grouped_kernel(const CUtensorMap* maps, float* out) {
  if (threadIdx.x == 0) acquire_tensor_map(&maps[blockIdx.x]);
  load_box_to(&maps[blockIdx.x], 0, 0, out + blockIdx.x * kTileElems);
}

struct Sources {
  const float* ptr[4];
};

// Block b: warp 0 rewrites the address of maps[0] to sources[b] into slot maps[1 + b] and
// publishes it; thread 0 acquires it, then the block loads through it.
__global__ void rewrite_kernel(CUtensorMap* maps, Sources sources, float* out) {
  __shared__ alignas(128) CUtensorMap staging;
  if (threadIdx.x < 32) {
    publish_tensor_map_with_address(&maps[1 + blockIdx.x], maps[0], &staging,
                                    sources.ptr[blockIdx.x]);
  }
  if (threadIdx.x == 0) acquire_tensor_map(&maps[1 + blockIdx.x]);
  load_box_to(&maps[1 + blockIdx.x], 0, 0, out + blockIdx.x * kTileElems);
}

std::vector<float> pattern(std::uint32_t w, std::uint32_t h, float base) {
  std::vector<float> v(std::size_t{w} * h);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = base + static_cast<float>(i);
  return v;
}

// The box at (x0, y0) of a w x h row-major tensor, zero past the edges.
std::vector<float> box_of(const std::vector<float>& src, std::uint32_t w, std::uint32_t h,
                          std::uint32_t x0, std::uint32_t y0) {
  std::vector<float> box(kTileElems);
  for (std::uint32_t i = 0; i < kTileElems; ++i) {
    const std::uint32_t x = x0 + i % GTile::box[0];
    const std::uint32_t y = y0 + i / GTile::box[0];
    box[i] = (x < w && y < h) ? src[std::size_t{y} * w + x] : 0.0f;
  }
  return box;
}

TEST(DeviceTensorMap, CacheBuildsOnceAcrossLaunches) {
  TMAKIT_REQUIRE_GPU();
  constexpr std::uint32_t kW = 64, kH = 20;
  const std::vector<float> a = pattern(kW, kH, 0.0f);
  const std::vector<float> b = pattern(kW, kH, 10000.0f);
  DeviceBuffer<float> dev_a(a), dev_b(b), out(kTileElems);
  TensorMapCache cache;
  // alternate two tensors over many launches: two builds, the rest hits
  for (int launch = 0; launch < 40; ++launch) {
    const bool use_a = launch % 2 == 0;
    const float* src = use_a ? dev_a.get() : dev_b.get();
    const CUtensorMap map = cache.get(GTile::spec(src, {kW, kH}, {kW * sizeof(float)}));
    out.fill_bytes(0xCD);
    by_value_kernel<<<1, 128>>>(map, out.get());
    TMAKIT_CHECK_LAUNCH();
    ASSERT_EQ(out.download(), box_of(use_a ? a : b, kW, kH, 0, 8)) << "launch " << launch;
  }
  EXPECT_EQ(cache.builds(), 2u);
  EXPECT_EQ(cache.hits(), 38u);
}

TEST(DeviceTensorMap, GroupedKernelReadsMapsFromGlobalArray) {
  TMAKIT_REQUIRE_GPU();
  // three groups of different shapes
  const std::uint32_t w[3] = {32, 48, 100};
  const std::uint32_t h[3] = {8, 5, 17};
  std::vector<std::vector<float>> host;
  std::deque<DeviceBuffer<float>> dev;  // deque: elements never move
  std::vector<CUtensorMap> maps;
  for (int g = 0; g < 3; ++g) {
    host.push_back(pattern(w[g], h[g], 1000.0f * static_cast<float>(g)));
    dev.emplace_back(host.back());
    maps.push_back(
        default_tensor_map_cache().get(GTile::spec(dev.back().get(), {w[g], h[g]},
                                                   {w[g] * sizeof(float)})));
  }
  DeviceTensorMapArray array;
  array.upload(maps);
  DeviceBuffer<float> out(3 * kTileElems);
  out.fill_bytes(0xCD);
  grouped_kernel<<<3, 128>>>(array.data(), out.get());
  TMAKIT_CHECK_LAUNCH();
  const std::vector<float> got = out.download();
  for (int g = 0; g < 3; ++g) {
    const std::vector<float> want = box_of(host[g], w[g], h[g], 0, 0);
    EXPECT_TRUE(std::equal(want.begin(), want.end(), got.begin() + g * kTileElems))
        << "group " << g;
  }
}

TEST(DeviceTensorMap, DeviceRewrittenAddressIsSeenAfterFences) {
  TMAKIT_REQUIRE_GPU();
  constexpr std::uint32_t kW = 32, kH = 8, kBlocks = 4;
  std::vector<std::vector<float>> host;
  std::deque<DeviceBuffer<float>> dev;  // deque: elements never move
  Sources sources{};
  for (std::uint32_t b = 0; b < kBlocks; ++b) {
    host.push_back(pattern(kW, kH, 500.0f * static_cast<float>(b + 1)));
    dev.emplace_back(host.back());
    sources.ptr[b] = dev.back().get();
  }
  // slot 0: a map of a decoy buffer of the same shape; slots 1..4 are written on the device
  DeviceBuffer<float> decoy(pattern(kW, kH, -1.0f));
  std::vector<CUtensorMap> maps(1 + kBlocks);
  maps[0] = default_tensor_map_cache().get(GTile::spec(decoy.get(), {kW, kH}, {kW * 4}));
  DeviceTensorMapArray array;
  array.upload(maps);
  DeviceBuffer<float> out(kBlocks * kTileElems);
  out.fill_bytes(0xCD);
  rewrite_kernel<<<kBlocks, 128>>>(array.data(), sources, out.get());
  TMAKIT_CHECK_LAUNCH();
  const std::vector<float> got = out.download();
  for (std::uint32_t b = 0; b < kBlocks; ++b) {
    const std::vector<float> want = box_of(host[b], kW, kH, 0, 0);
    EXPECT_TRUE(std::equal(want.begin(), want.end(), got.begin() + b * kTileElems))
        << "block " << b << " did not read its own buffer through the rewritten map (first "
        << "value " << got[b * kTileElems] << ", want " << want[0] << ")";
  }
}

}  // namespace
}  // namespace tmakit
