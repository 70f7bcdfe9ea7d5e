// Add one to every element of an int32 matrix through TMA, written with tmakit:
//   host:   Tile::spec -> tmakit::validate (names the rule a spec breaks) -> tmakit::encode
//   device: arrive_and_load (the barrier's byte count comes from the tile type) -> add in shared
//           memory -> fence_view_async_shared -> store_tile.
// Without a GPU it runs the host part only (the validator) and says so.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "tmakit/device/barrier.hpp"
#include "tmakit/device/copy.hpp"
#include "tmakit/device/tile.hpp"
#include "tmakit/host/encode.hpp"
#include "tmakit/host/validate.hpp"

using Box = tmakit::Tile<std::int32_t, tmakit::Swizzle::none, 64, 16>;  // 64 x 16 int32, 4 KiB

struct alignas(1024) SharedStorage {
  Box::Buffer tile;
  tmakit::Barrier full;
};

__global__ void add_one(const __grid_constant__ CUtensorMap in,
                        const __grid_constant__ CUtensorMap out) {
  __shared__ SharedStorage smem;
  const std::int32_t coords[2] = {static_cast<std::int32_t>(blockIdx.x * 64),
                                  static_cast<std::int32_t>(blockIdx.y * 16)};
  // one thread arms the barrier and issues the load; everyone waits for phase 0
  if (threadIdx.x == 0) {
    smem.full.init(1);
    tmakit::fence_barrier_init();
  }
  __syncthreads();
  if (threadIdx.x == 0) tmakit::arrive_and_load<Box>(&smem.tile, &in, smem.full, coords);
  smem.full.wait(0);

  // the box is plain row-major (no swizzle): element i of the buffer is (i % 64, i / 64)
  auto* v = reinterpret_cast<std::int32_t*>(&smem.tile);
  for (unsigned i = threadIdx.x; i < Box::tx_bytes / sizeof(std::int32_t); i += blockDim.x) {
    v[i] += 1;
  }

  // NOTE: ordinary shared-memory writes become visible to TMA only after this fence.
  tmakit::fence_view_async_shared();
  __syncthreads();
  if (threadIdx.x == 0) {
    tmakit::store_tile<Box>(&out, &smem.tile, coords);  // rows and columns past the edge dropped
    tmakit::store_commit();
    tmakit::store_wait<0>();
  }
}

namespace {

int check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) std::fprintf(stderr, "add_one: %s: %s\n", what, cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}

}  // namespace

int main() {
  constexpr std::uint64_t cols = 1000, rows = 300;  // not multiples of the box: edges clipped

  // --- host part: the validator names the broken rule and a fix, before any driver call ----
  tmakit::TensorMapSpec bad = Box::spec(reinterpret_cast<void*>(0x10000), {cols, rows},
                                        {cols * 4 + 4});  // a row stride of 4004 bytes
  if (auto violation = tmakit::find_violation(bad)) {
    std::printf("validator: %s\n", violation->what());
  } else {
    std::fprintf(stderr, "add_one: the validator accepted a 4004-byte row stride\n");
    return 1;
  }

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("add_one: no CUDA device here; the kernel needs a Hopper GPU (sm_90a): skipped\n");
    return 0;
  }

  // --- device part ------------------------------------------------------------------------
  std::vector<std::int32_t> host(cols * rows);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<std::int32_t>(i * 7 - 5);
  const std::size_t bytes = host.size() * sizeof(std::int32_t);
  std::int32_t* in = nullptr;
  std::int32_t* out = nullptr;
  if (check_cuda(cudaMalloc(&in, bytes), "cudaMalloc") ||
      check_cuda(cudaMalloc(&out, bytes), "cudaMalloc") ||
      check_cuda(cudaMemcpy(in, host.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy")) {
    return 1;
  }
  // encode() validates first and throws tmakit::RuleViolation naming the rule
  const CUtensorMap in_map = tmakit::encode(Box::spec(in, {cols, rows}, {cols * 4}));
  const CUtensorMap out_map = tmakit::encode(Box::spec(out, {cols, rows}, {cols * 4}));

  const dim3 grid((cols + 63) / 64, (rows + 15) / 16);
  add_one<<<grid, 128>>>(in_map, out_map);
  if (check_cuda(cudaGetLastError(), "launch") || check_cuda(cudaDeviceSynchronize(), "kernel")) {
    return 1;
  }
  std::vector<std::int32_t> result(host.size());
  if (check_cuda(cudaMemcpy(result.data(), out, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy")) {
    return 1;
  }
  cudaFree(in);
  cudaFree(out);
  for (std::size_t i = 0; i < host.size(); ++i) {
    if (result[i] != host[i] + 1) {
      std::fprintf(stderr, "add_one: element %zu is %d, expected %d\n", i, result[i], host[i] + 1);
      return 1;
    }
  }
  std::printf("add_one: %llu x %llu int32 elements, each one larger: ok\n",
              static_cast<unsigned long long>(cols), static_cast<unsigned long long>(rows));
  return 0;
}
