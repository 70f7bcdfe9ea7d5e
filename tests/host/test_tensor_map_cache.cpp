// The host descriptor cache: one build per distinct spec, every spec field part of the key.
// The encoder is replaced by a counter, so these tests need neither driver nor GPU.
#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tmakit/core/error.hpp"
#include "tmakit/host/tensor_map_cache.hpp"

namespace tmakit {
namespace {

TensorMapSpec base_spec() {
  TensorMapSpec s;
  s.data_type = DataType::float32;
  s.rank = 2;
  s.global_address = 0x7f0000001000ull;
  s.global_dim = {1024, 512, 1, 1, 1};
  s.global_strides_bytes = {4096, 0, 0, 0};
  s.box_dim = {32, 16, 1, 1, 1};
  s.swizzle = Swizzle::bytes128;
  return s;
}

// Fake encoder: map.opaque[0] = build number, opaque[1] = the spec's address.
struct CountingEncoder {
  int* calls;
  CUtensorMap operator()(const TensorMapSpec& s) const {
    CUtensorMap m{};
    m.opaque[0] = static_cast<std::uint64_t>(++*calls);
    m.opaque[1] = s.global_address;
    return m;
  }
};

TEST(DeviceTensorMapArray, ACountPastTheAddressSpaceIsRefusedBeforeAnyCudaCall) {
  try {
    DeviceTensorMapArray maps(std::size_t{1} << 60);
    ADD_FAILURE() << "2^60 maps were allocated";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "DeviceTensorMapArray: 1152921504606846976 tensor maps do not fit an address "
                 "space");
  }
}

TEST(TensorMapCache, RepeatedGetsBuildOnce) {
  int calls = 0;
  TensorMapCache cache(CountingEncoder{&calls});
  const CUtensorMap first = cache.get(base_spec());
  for (int i = 0; i < 100; ++i) {
    const CUtensorMap again = cache.get(base_spec());
    ASSERT_EQ(again.opaque[0], first.opaque[0]) << "launch " << i << " got a rebuilt map";
  }
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(cache.builds(), 1u);
  EXPECT_EQ(cache.hits(), 100u);
  EXPECT_EQ(cache.size(), 1u);
}

// Every field reaches the encoded map, so changing any one must give a new entry.
TEST(TensorMapCache, EveryFieldIsPartOfTheKey) {
  const std::vector<std::pair<const char*, std::function<void(TensorMapSpec&)>>> changes = {
      {"kind", [](TensorMapSpec& s) { s.kind = EncodeKind::im2col; }},
      {"data_type", [](TensorMapSpec& s) { s.data_type = DataType::int32; }},
      {"rank", [](TensorMapSpec& s) { s.rank = 3; }},
      {"global_address", [](TensorMapSpec& s) { s.global_address += 16; }},
      {"global_dim[1]", [](TensorMapSpec& s) { s.global_dim[1] = 511; }},
      {"global_dim[4]", [](TensorMapSpec& s) { s.global_dim[4] = 2; }},
      {"global_strides[0]", [](TensorMapSpec& s) { s.global_strides_bytes[0] = 8192; }},
      {"global_strides[3]", [](TensorMapSpec& s) { s.global_strides_bytes[3] = 16; }},
      {"box_dim[0]", [](TensorMapSpec& s) { s.box_dim[0] = 16; }},
      {"box_dim[2]", [](TensorMapSpec& s) { s.box_dim[2] = 2; }},
      {"lower_corner", [](TensorMapSpec& s) { s.pixel_box_lower_corner[0] = -1; }},
      {"upper_corner", [](TensorMapSpec& s) { s.pixel_box_upper_corner[2] = 1; }},
      {"channels_per_pixel", [](TensorMapSpec& s) { s.channels_per_pixel = 8; }},
      {"pixels_per_column", [](TensorMapSpec& s) { s.pixels_per_column = 8; }},
      {"element_strides", [](TensorMapSpec& s) { s.element_strides[1] = 2; }},
      {"interleave", [](TensorMapSpec& s) { s.interleave = Interleave::bytes16; }},
      {"swizzle", [](TensorMapSpec& s) { s.swizzle = Swizzle::bytes64; }},
      {"l2_promotion", [](TensorMapSpec& s) { s.l2_promotion = L2Promotion::bytes256; }},
      {"oob_fill", [](TensorMapSpec& s) { s.oob_fill = OobFill::nan_request_zero_fma; }},
  };
  int calls = 0;
  TensorMapCache cache(CountingEncoder{&calls});
  const std::uint64_t base_build = cache.get(base_spec()).opaque[0];
  const TensorMapSpecHash hash;
  int distinct_hashes = 0;
  for (const auto& [field, change] : changes) {
    TensorMapSpec s = base_spec();
    change(s);
    ASSERT_NE(s, base_spec()) << field << ": the change did nothing";
    const int before = calls;
    EXPECT_NE(cache.get(s).opaque[0], base_build) << field << " was ignored by the key";
    EXPECT_EQ(calls, before + 1) << field;
    EXPECT_EQ(cache.get(s).opaque[0], static_cast<std::uint64_t>(before + 1)) << field;
    distinct_hashes += hash(s) != hash(base_spec());
  }
  EXPECT_EQ(cache.size(), changes.size() + 1);
  // NOTE: equality decides the key; the hash only has to spread. All should differ here.
  EXPECT_EQ(distinct_hashes, static_cast<int>(changes.size()));
}

TEST(TensorMapCache, FailedBuildIsNotCached) {
  int calls = 0;
  bool fail = true;
  TensorMapCache cache([&](const TensorMapSpec& s) {
    ++calls;
    if (fail) throw std::runtime_error("refused");
    CUtensorMap m{};
    m.opaque[1] = s.global_address;
    return m;
  });
  EXPECT_THROW(cache.get(base_spec()), std::runtime_error);
  EXPECT_EQ(cache.size(), 0u);
  fail = false;
  EXPECT_EQ(cache.get(base_spec()).opaque[1], base_spec().global_address);
  EXPECT_EQ(calls, 2);
}

TEST(TensorMapCache, EraseRangeDropsOnlyMapsInsideIt) {
  int calls = 0;
  TensorMapCache cache(CountingEncoder{&calls});
  TensorMapSpec a = base_spec();
  TensorMapSpec b = base_spec();
  b.global_address = a.global_address + 4096;  // last 16-byte slot in [a, a + 4112)
  TensorMapSpec c = base_spec();
  c.global_address = a.global_address + 8192;  // outside
  cache.get(a);
  cache.get(b);
  cache.get(c);
  const void* base = reinterpret_cast<const void*>(static_cast<std::uintptr_t>(a.global_address));
  EXPECT_EQ(cache.erase_range(base, 4097), 2u);
  EXPECT_EQ(cache.size(), 1u);
  cache.get(c);
  EXPECT_EQ(calls, 3) << "the map outside the range must still be cached";
  cache.get(a);
  EXPECT_EQ(calls, 4) << "an erased map must be rebuilt";
}

TEST(TensorMapCache, ConcurrentGetsOfOneSpecBuildOnce) {
  int calls = 0;
  TensorMapCache cache(CountingEncoder{&calls});
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) cache.get(base_spec());
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(cache.hits(), 8u * 1000u - 1u);
}

}  // namespace
}  // namespace tmakit
