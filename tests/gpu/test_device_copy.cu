// Round trips of the tile helpers against a plain CPU reference: load (plain, with an L2
// hint, after a prefetch) for ranks 1..5, every swizzle and several element types, with boxes
// hanging over every edge; store (out-of-bounds part dropped); reduce with every operator.
// Shared memory is indexed only through Tile::at, so the swizzle index math is covered too.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tmakit/device/barrier.hpp"
#include "tmakit/device/copy.hpp"
#include "tmakit/device/tile.hpp"
#include "tmakit/host/encode.hpp"
#include "test_device_util.hpp"

namespace tmakit {
namespace {

using test::DeviceBuffer;

struct Coords {
  std::int32_t v[kMaxRank];
};

template <int N>
__device__ void to_array(const Coords& c, std::int32_t (&out)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) out[i] = c.v[i];
}

// The tile's buffer inside dynamic shared memory, aligned as the type demands.
template <class TileT>
__device__ unsigned char* aligned_dynamic_smem() {
  extern __shared__ unsigned char dynamic_smem[];
  const std::uint32_t base = ptx::smem_u32(dynamic_smem);
  const std::uint32_t pad = (TileT::align_bytes - base % TileT::align_bytes) % TileT::align_bytes;
  return dynamic_smem + pad;
}
template <class TileT>
constexpr std::size_t dynamic_smem_bytes() {
  return TileT::smem_bytes + TileT::align_bytes;
}

enum class LoadMode { plain, l2_hint, prefetch_first };

// Load one box, then copy it element by element, through Tile::at, to `out` (box order).
template <class TileT>
__global__ void load_kernel(const __grid_constant__ CUtensorMap map, Coords coords,
                            LoadMode mode, typename TileT::value_type* out) {
  __shared__ Barrier bar;
  unsigned char* buf = aligned_dynamic_smem<TileT>();
  // barrier init, visible to the async proxy
  if (threadIdx.x == 0) {
    bar.init(1);
    fence_barrier_init();
  }
  __syncthreads();
  // one thread issues the copy
  if (threadIdx.x == 0) {
    std::int32_t c[TileT::rank];
    to_array(coords, c);
    prefetch_tensor_map(&map);
    if (mode == LoadMode::prefetch_first) prefetch_tile<TileT>(&map, c);
    bar.arrive_expect_tx(TileT::tx_bytes);
    if (mode == LoadMode::l2_hint) {
      load_tile<TileT>(buf, &map, bar, c, ptx::createpolicy_fractional_l2_evict_first());
    } else {
      load_tile<TileT>(buf, &map, bar, c);
    }
  }
  bar.wait(0);
  // read back through the tile's index function
  for (std::uint32_t i = threadIdx.x; i < TileT::rows * TileT::box[0]; i += blockDim.x) {
    out[i] = TileT::at(buf, i % TileT::box[0], i / TileT::box[0]);
  }
}

// Fill the box from `in` (box order) through Tile::at, then store it at `coords` (with an L2
// evict-first policy when `l2_hint`).
template <class TileT>
__global__ void store_kernel(const __grid_constant__ CUtensorMap map, Coords coords,
                             const typename TileT::value_type* in, bool l2_hint) {
  unsigned char* buf = aligned_dynamic_smem<TileT>();
  for (std::uint32_t i = threadIdx.x; i < TileT::rows * TileT::box[0]; i += blockDim.x) {
    TileT::at(buf, i % TileT::box[0], i / TileT::box[0]) = in[i];
  }
  // ordinary writes -> async-proxy read: fence in every writer, then the CTA barrier
  fence_view_async_shared();
  __syncthreads();
  if (threadIdx.x == 0) {
    std::int32_t c[TileT::rank];
    to_array(coords, c);
    if (l2_hint) {
      store_tile<TileT>(&map, buf, c, ptx::createpolicy_fractional_l2_evict_first());
    } else {
      store_tile<TileT>(&map, buf, c);
    }
    store_commit();
    store_wait<0>();
  }
}

template <class TileT, ReduceOp Op>
__global__ void reduce_kernel(const __grid_constant__ CUtensorMap map, Coords coords,
                              const typename TileT::value_type* in) {
  unsigned char* buf = aligned_dynamic_smem<TileT>();
  for (std::uint32_t i = threadIdx.x; i < TileT::rows * TileT::box[0]; i += blockDim.x) {
    TileT::at(buf, i % TileT::box[0], i / TileT::box[0]) = in[i];
  }
  fence_view_async_shared();
  __syncthreads();
  if (threadIdx.x == 0) {
    std::int32_t c[TileT::rank];
    to_array(coords, c);
    reduce_tile<TileT, Op>(&map, buf, c);
    store_commit();
    store_wait<0>();
  }
}

// --- host side: a strided tensor and the CPU reference ---------------------------------

template <class TileT>
struct HostTensor {
  using T = typename TileT::value_type;
  static constexpr int rank = TileT::rank;
  std::array<std::uint64_t, rank> dims{};
  std::array<std::uint64_t, rank> pitch_elems{};  // element distance between neighbours
  std::vector<T> data;

  // Dimension 1 padded by 16 bytes, so the strides are not just the dense ones.
  explicit HostTensor(const std::array<std::uint64_t, rank>& d) : dims(d) {
    pitch_elems[0] = 1;
    for (int i = 1; i < rank; ++i) {
      std::uint64_t p = dims[i - 1] * pitch_elems[i - 1];
      if (i == 1) p = (p * sizeof(T) + 15) / 16 * 16 / sizeof(T) + 16 / sizeof(T);
      pitch_elems[i] = p;
    }
    data.resize(dims[rank - 1] * pitch_elems[rank - 1]);
  }
  std::array<std::uint64_t, kMaxRank - 1> strides_bytes() const {
    std::array<std::uint64_t, kMaxRank - 1> s{};
    for (int i = 1; i < rank; ++i) s[i - 1] = pitch_elems[i] * sizeof(T);
    return s;
  }
  // Index of box element (col, row) placed at `c`; -1 when it lies outside the tensor, or for
  // dimension 0 at or past `dim0_limit` elements (default: the tensor's own extent).
  std::int64_t index(const Coords& c, std::uint32_t col, std::uint32_t row,
                     std::uint64_t dim0_limit = 0) const {
    std::int64_t idx = 0;
    std::uint32_t rest = row;
    for (int d = 0; d < rank; ++d) {
      std::uint32_t i = col;
      if (d > 0) {
        i = rest % TileT::box[d];
        rest /= TileT::box[d];
      }
      const std::int64_t g = static_cast<std::int64_t>(c.v[d]) + i;
      const std::uint64_t limit = (d == 0 && dim0_limit != 0) ? dim0_limit : dims[d];
      if (g < 0 || g >= static_cast<std::int64_t>(limit)) return -1;
      idx += g * static_cast<std::int64_t>(pitch_elems[d]);
    }
    return idx;
  }
};

template <class T>
std::vector<T> random_values(std::size_t n, std::uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(n);
  for (auto& x : v) {
    const std::uint64_t r = rng();
    std::memcpy(static_cast<void*>(&x), &r, sizeof(T));  // raw bits of any T
  }
  return v;
}

constexpr std::uint32_t box_elems(std::uint32_t rows, std::uint32_t box0) { return rows * box0; }

template <class TileT>
void expect_load(const std::array<std::uint64_t, TileT::rank>& dims, const Coords& coords,
                 LoadMode mode) {
  using T = typename TileT::value_type;
  HostTensor<TileT> host(dims);
  host.data = random_values<T>(host.data.size(), 1234u + static_cast<std::uint32_t>(mode));
  DeviceBuffer<T> src(host.data);
  const std::uint32_t n = box_elems(TileT::rows, TileT::box[0]);
  DeviceBuffer<T> out(n);
  out.fill_bytes(0xCD);  // poison: every element must be written

  const CUtensorMap map = encode(TileT::spec(src.get(), dims, host.strides_bytes()));
  load_kernel<TileT><<<1, 128, dynamic_smem_bytes<TileT>()>>>(map, coords, mode, out.get());
  TMAKIT_CHECK_LAUNCH();

  // compare with the reference: in-bounds elements copied, the rest zero-filled (D3)
  const std::vector<T> got = out.download();
  int mismatches = 0;
  for (std::uint32_t i = 0; i < n && mismatches < 8; ++i) {
    const std::int64_t idx = host.index(coords, i % TileT::box[0], i / TileT::box[0]);
    const std::uint64_t want = idx < 0 ? 0 : test::bits(host.data[idx]);
    if (test::bits(got[i]) != want) {
      ++mismatches;
      ADD_FAILURE() << "box element " << i << " (col " << i % TileT::box[0] << ", row "
                    << i / TileT::box[0] << "): got 0x" << std::hex << test::bits(got[i])
                    << ", want 0x" << want << (idx < 0 ? " (out of bounds: zero fill)" : "");
    }
  }
}

template <class TileT>
void expect_load_all_modes(const std::array<std::uint64_t, TileT::rank>& dims,
                           std::initializer_list<Coords> corners) {
  for (const Coords& c : corners) {
    for (LoadMode mode : {LoadMode::plain, LoadMode::l2_hint, LoadMode::prefetch_first}) {
      SCOPED_TRACE("coords (" + std::to_string(c.v[0]) + ", " + std::to_string(c.v[1]) +
                   ", ...) mode " + std::to_string(static_cast<int>(mode)));
      expect_load<TileT>(dims, c, mode);
    }
  }
}

// NOTE: dimension-0 coordinates stay multiples of 16 bytes (O1).
TEST(DeviceCopy, Load2dFloatNoSwizzle) {
  TMAKIT_REQUIRE_GPU();
  using T = Tile<float, Swizzle::none, 32, 8>;
  expect_load_all_modes<T>({100, 37}, {{0, 0}, {64, 32}, {-16, -3}, {96, 36}});
}

TEST(DeviceCopy, Load2dHalfSwizzle128) {
  TMAKIT_REQUIRE_GPU();
  using T = Tile<__half, Swizzle::bytes128, 64, 16>;
  expect_load_all_modes<T>({200, 50}, {{0, 0}, {64, 8}, {160, 40}, {-8, -15}});
}

// A row narrower than the span: rows sit a full span apart (O2).
TEST(DeviceCopy, Load2dFloatNarrowRowsSwizzle128) {
  TMAKIT_REQUIRE_GPU();
  using T = Tile<float, Swizzle::bytes128, 16, 24>;
  expect_load_all_modes<T>({64, 40}, {{0, 0}, {52, 20}, {-4, -1}});
}

TEST(DeviceCopy, Load2dBfloatSwizzle32) {
  TMAKIT_REQUIRE_GPU();
  using T = Tile<__nv_bfloat16, Swizzle::bytes32, 16, 8>;
  expect_load_all_modes<T>({72, 19}, {{8, 3}, {64, 16}});
}

TEST(DeviceCopy, Load3dBytesSwizzle64) {
  TMAKIT_REQUIRE_GPU();
  using T = Tile<std::uint8_t, Swizzle::bytes64, 64, 4, 3>;
  expect_load_all_modes<T>({100, 9, 5}, {{0, 0, 0}, {32, 6, 3}, {-16, -2, -1}});
}

TEST(DeviceCopy, Load1dInt32) {
  TMAKIT_REQUIRE_GPU();
  using T = Tile<std::int32_t, Swizzle::none, 64>;
  expect_load_all_modes<T>({1000}, {{0}, {960}, {-32}});
}

TEST(DeviceCopy, Load4dUint16Swizzle64) {
  TMAKIT_REQUIRE_GPU();
  using T = Tile<std::uint16_t, Swizzle::bytes64, 32, 2, 3, 2>;
  expect_load_all_modes<T>({40, 5, 4, 3}, {{0, 0, 0, 0}, {24, 4, 2, 2}});
}

TEST(DeviceCopy, Load5dDouble) {
  TMAKIT_REQUIRE_GPU();
  using T = Tile<double, Swizzle::none, 4, 2, 2, 2, 3>;
  expect_load_all_modes<T>({10, 3, 3, 2, 4}, {{0, 0, 0, 0, 0}, {8, 2, 2, 1, 2}, {-2, -1, 0, 0, 0}});
}

// --- store ------------------------------------------------------------------------------

// Observed on H200 (driver 580.159): stores and reduces clip dimension 0 at 16-byte
// granularity. When globalDim[0] * elementSize is not a multiple of 16, the box's elements
// past the row's end up to the next 16-byte boundary ARE written (into the stride padding).
// The references below model that, so the tests fail if the hardware ever changes it.
template <class T>
std::uint64_t store_dim0_limit(std::uint64_t dim0) {
  return (dim0 * sizeof(T) + 15) / 16 * 16 / sizeof(T);
}
// NOTE: observed on the same machine: a store whose box starts at a negative coordinate ends
// the kernel with "illegal instruction" (loads accept negative corners). Stores and reduces
// here start at non-negative coordinates; debug mode reports negative ones (device/copy.hpp).

template <class TileT>
void expect_store(const std::array<std::uint64_t, TileT::rank>& dims, const Coords& coords,
                  bool l2_hint = false) {
  using T = typename TileT::value_type;
  HostTensor<TileT> host(dims);
  const std::uint32_t n = box_elems(TileT::rows, TileT::box[0]);
  const std::vector<T> in = random_values<T>(n, 99);
  DeviceBuffer<T> box_in(in);
  DeviceBuffer<T> dst(host.data.size());
  dst.fill_bytes(0xAB);  // poison: what the store must not touch stays 0xAB

  const CUtensorMap map = encode(TileT::spec(dst.get(), dims, host.strides_bytes()));
  store_kernel<TileT>
      <<<1, 128, dynamic_smem_bytes<TileT>()>>>(map, coords, box_in.get(), l2_hint);
  TMAKIT_CHECK_LAUNCH();

  // reference: the in-bounds part of the box written, everything else untouched
  std::vector<T> want(host.data.size());
  std::memset(static_cast<void*>(want.data()), 0xAB, want.size() * sizeof(T));
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::int64_t idx = host.index(coords, i % TileT::box[0], i / TileT::box[0],
                                        store_dim0_limit<T>(dims[0]));
    if (idx >= 0) want[idx] = in[i];
  }
  const std::vector<T> got = dst.download();
  int mismatches = 0;
  for (std::size_t i = 0; i < want.size() && mismatches < 8; ++i) {
    if (test::bits(got[i]) != test::bits(want[i])) {
      ++mismatches;
      ADD_FAILURE() << "global element " << i << ": got 0x" << std::hex << test::bits(got[i])
                    << ", want 0x" << test::bits(want[i]);
    }
  }
}

TEST(DeviceCopy, Store2dFloatDropsOutOfBounds) {
  TMAKIT_REQUIRE_GPU();
  using T = Tile<float, Swizzle::none, 32, 8>;
  for (Coords c : {Coords{0, 0}, Coords{80, 33}, Coords{64, 24}}) expect_store<T>({100, 37}, c);
}

TEST(DeviceCopy, Store2dFloatWithL2Policy) {
  TMAKIT_REQUIRE_GPU();
  using T = Tile<float, Swizzle::none, 32, 8>;
  for (Coords c : {Coords{0, 0}, Coords{80, 33}}) expect_store<T>({100, 37}, c, true);
}

TEST(DeviceCopy, Store2dHalfSwizzle128) {
  TMAKIT_REQUIRE_GPU();
  using T = Tile<__half, Swizzle::bytes128, 64, 16>;
  for (Coords c : {Coords{0, 0}, Coords{160, 40}}) expect_store<T>({200, 50}, c);
}

TEST(DeviceCopy, Store3dBytesSwizzle32) {
  TMAKIT_REQUIRE_GPU();
  using T = Tile<std::uint8_t, Swizzle::bytes32, 32, 4, 3>;
  for (Coords c : {Coords{0, 0, 0}, Coords{48, 7, 4}}) expect_store<T>({80, 9, 5}, c);
}

// --- reduce -----------------------------------------------------------------------------

template <ReduceOp Op, class T>
T reduce_reference(T a, T b) {
  if constexpr (Op == ReduceOp::add) return static_cast<T>(a + b);
  if constexpr (Op == ReduceOp::min) return b < a ? b : a;
  if constexpr (Op == ReduceOp::max) return b > a ? b : a;
  // PTX atom/red .inc and .dec on .u32 (a: memory, b: operand)
  if constexpr (Op == ReduceOp::inc) return a >= b ? T{0} : static_cast<T>(a + 1);
  if constexpr (Op == ReduceOp::dec) return (a == 0 || a > b) ? b : static_cast<T>(a - 1);
  if constexpr (Op == ReduceOp::bit_and) return a & b;
  if constexpr (Op == ReduceOp::bit_or) return a | b;
  if constexpr (Op == ReduceOp::bit_xor) return a ^ b;
}

template <class TileT, ReduceOp Op>
void expect_reduce(const std::array<std::uint64_t, TileT::rank>& dims, const Coords& coords,
                   std::int64_t lo, std::int64_t hi) {
  using T = typename TileT::value_type;
  HostTensor<TileT> host(dims);
  const std::uint32_t n = box_elems(TileT::rows, TileT::box[0]);
  // small ranges so inc/dec and min/max take both branches
  std::mt19937 rng(7 + static_cast<int>(Op));
  std::uniform_int_distribution<std::int64_t> dist(lo, hi);
  std::vector<T> in(n);
  for (auto& x : in) x = static_cast<T>(dist(rng));
  for (auto& x : host.data) x = static_cast<T>(dist(rng));
  DeviceBuffer<T> box_in(in);
  DeviceBuffer<T> dst(host.data);

  const CUtensorMap map = encode(TileT::spec(dst.get(), dims, host.strides_bytes()));
  reduce_kernel<TileT, Op><<<1, 128, dynamic_smem_bytes<TileT>()>>>(map, coords, box_in.get());
  TMAKIT_CHECK_LAUNCH();

  std::vector<T> want = host.data;
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::int64_t idx = host.index(coords, i % TileT::box[0], i / TileT::box[0],
                                        store_dim0_limit<T>(dims[0]));
    if (idx >= 0) want[idx] = reduce_reference<Op>(want[idx], in[i]);
  }
  const std::vector<T> got = dst.download();
  int mismatches = 0;
  for (std::size_t i = 0; i < want.size() && mismatches < 8; ++i) {
    if (test::bits(got[i]) != test::bits(want[i])) {
      ++mismatches;
      ADD_FAILURE() << "op " << static_cast<int>(Op) << " element " << i << ": got " << +got[i]
                    << ", want " << +want[i];
    }
  }
}

using U32Tile = Tile<std::uint32_t, Swizzle::bytes128, 32, 8>;
using S32Tile = Tile<std::int32_t, Swizzle::none, 16, 8>;
using F32Tile = Tile<float, Swizzle::bytes64, 16, 4, 2>;

// Rows of 70 bytes and 280 bytes: the store (and the reduce) also fills the rest of the
// row's last 16-byte chunk. NOTE: each box ends exactly at that chunk's end, so the case does
// not depend on whether anything past the chunk (up to the stride) would be written too.
TEST(DeviceCopy, StoreAndReduceClipRowEndAt16Bytes) {
  TMAKIT_REQUIRE_GPU();
  using T8 = Tile<std::uint8_t, Swizzle::bytes32, 32, 4, 3>;
  expect_store<T8>({70, 9, 5}, Coords{48, 7, 4});
  using T32 = Tile<std::uint32_t, Swizzle::none, 32, 8>;
  expect_store<T32>({70, 20}, Coords{40, 15});
  expect_reduce<T32, ReduceOp::add>({70, 20}, Coords{40, 15}, 0, 1 << 30);
}

TEST(DeviceCopy, ReduceEveryOperatorUint32) {
  TMAKIT_REQUIRE_GPU();
  const std::array<std::uint64_t, 2> dims = {72, 20};
  for (Coords c : {Coords{0, 0}, Coords{48, 15}, Coords{8, 2}}) {
    SCOPED_TRACE("coords " + std::to_string(c.v[0]) + ", " + std::to_string(c.v[1]));
    expect_reduce<U32Tile, ReduceOp::add>(dims, c, 0, 1 << 30);
    expect_reduce<U32Tile, ReduceOp::min>(dims, c, 0, 1000);
    expect_reduce<U32Tile, ReduceOp::max>(dims, c, 0, 1000);
    expect_reduce<U32Tile, ReduceOp::inc>(dims, c, 0, 12);
    expect_reduce<U32Tile, ReduceOp::dec>(dims, c, 0, 12);
    expect_reduce<U32Tile, ReduceOp::bit_and>(dims, c, 0, 0xffffffffll);
    expect_reduce<U32Tile, ReduceOp::bit_or>(dims, c, 0, 0xffffffffll);
    expect_reduce<U32Tile, ReduceOp::bit_xor>(dims, c, 0, 0xffffffffll);
  }
}

TEST(DeviceCopy, ReduceSignedInt32) {
  TMAKIT_REQUIRE_GPU();
  const std::array<std::uint64_t, 2> dims = {40, 11};
  for (Coords c : {Coords{0, 0}, Coords{32, 6}}) {
    expect_reduce<S32Tile, ReduceOp::add>(dims, c, -100000, 100000);
    expect_reduce<S32Tile, ReduceOp::min>(dims, c, -50, 50);
    expect_reduce<S32Tile, ReduceOp::max>(dims, c, -50, 50);
  }
}

// Small integers: every float sum is exact, so the comparison can be bitwise.
TEST(DeviceCopy, ReduceAddFloat3d) {
  TMAKIT_REQUIRE_GPU();
  expect_reduce<F32Tile, ReduceOp::add>({20, 6, 3}, Coords{8, 4, 2}, -1000, 1000);
  expect_reduce<F32Tile, ReduceOp::add>({20, 6, 3}, Coords{0, 0, 0}, -1000, 1000);
}

}  // namespace
}  // namespace tmakit
