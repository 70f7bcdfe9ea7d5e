// Debug mode (compiled with TMAKIT_DEBUG_WAITS=1 and a 0.5 s wait bound): a broken kernel
// must end with a report, not hang. Each broken kernel runs in a child process (this binary
// again, running one DISABLED_ test), because the trap that ends it also ends the CUDA
// context; the parent checks the child's output, its error and that it ended in time.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <initializer_list>
#include <cstdio>
#include <cstdint>
#include <string>
#include <vector>

#include "tmakit/device/barrier.hpp"
#include "tmakit/device/copy.hpp"
#include "tmakit/device/pipeline.hpp"
#include "tmakit/device/tile.hpp"
#include "tmakit/host/encode.hpp"
#include "test_device_util.hpp"

#if !TMAKIT_DEBUG_WAITS
#error "test_device_debug must be compiled with TMAKIT_DEBUG_WAITS=1"
#endif

namespace tmakit {
namespace {

using test::DeviceBuffer;

using DTile = Tile<float, Swizzle::bytes128, 32, 8>;  // 1 KiB, needs 1024-byte alignment
constexpr std::uint32_t kTileElems = DTile::rows * DTile::box[0];

// --- kernels ----------------------------------------------------------------------------

// The barrier set up for one arrival (the copying thread's), seen by every thread.
__device__ void init_for_one_arrival(Barrier& bar) {
  if (threadIdx.x == 0) {
    bar.init(1);
    fence_barrier_init();
  }
  __syncthreads();
}

// Arms the barrier for `armed_bytes` and loads one DTile: a hang (D5) unless they agree.
__global__ void expect_tx_kernel(const __grid_constant__ CUtensorMap map,
                                 std::uint32_t armed_bytes, float* out) {
  __shared__ DTile::Buffer buf;
  __shared__ Barrier bar;
  init_for_one_arrival(bar);
  if (threadIdx.x == 0) {
    bar.arrive_expect_tx(armed_bytes);
    load_tile<DTile>(buf.bytes, &map, bar, {0, 0});
  }
  bar.wait(0);
  for (std::uint32_t i = threadIdx.x; i < kTileElems; i += blockDim.x) {
    out[i] = DTile::at(buf.bytes, i % DTile::box[0], i / DTile::box[0]);
  }
}

// Loads one DTile into dynamic shared memory `offset_bytes` past a 1024-byte boundary.
__global__ void misaligned_kernel(const __grid_constant__ CUtensorMap map,
                                  std::uint32_t offset_bytes, float* out) {
  extern __shared__ unsigned char dynamic_smem[];
  __shared__ Barrier bar;
  const std::uint32_t base = ptx::smem_u32(dynamic_smem);
  unsigned char* buf = dynamic_smem + (1024 - base % 1024) % 1024 + offset_bytes;
  init_for_one_arrival(bar);
  if (threadIdx.x == 0) arrive_and_load<DTile>(buf, &map, bar, {0, 0});
  bar.wait(0);
  for (std::uint32_t i = threadIdx.x; i < kTileElems; i += blockDim.x) {
    out[i] = DTile::at(buf, i % DTile::box[0], i / DTile::box[0]);
  }
}

// Stores one DTile at (x, y).
__global__ void store_kernel(const __grid_constant__ CUtensorMap map, std::int32_t x,
                             std::int32_t y) {
  __shared__ DTile::Buffer buf;
  for (std::uint32_t i = threadIdx.x; i < kTileElems; i += blockDim.x) {
    DTile::at(buf.bytes, i % DTile::box[0], i / DTile::box[0]) = static_cast<float>(i);
  }
  fence_view_async_shared();
  __syncthreads();
  if (threadIdx.x == 0) {
    store_tile<DTile>(&map, buf.bytes, {x, y});
    store_commit();
    store_wait<0>();
  }
}

// Loads one DTile through a map passed by value WITHOUT __grid_constant__: the kernel takes
// its address, so the map is copied to local memory, where TMA cannot read it (D4).
__global__ void local_map_kernel(const CUtensorMap map, float* out) {
  __shared__ DTile::Buffer buf;
  __shared__ Barrier bar;
  init_for_one_arrival(bar);
  if (threadIdx.x == 0) arrive_and_load<DTile>(&buf, &map, bar, {0, 0});
  bar.wait(0);
  if (threadIdx.x == 0) out[0] = DTile::at(buf.bytes, 0, 0);
}

// A multicast load with `cta_mask` from a launch without clusters (a cluster of one CTA).
__global__ void multicast_kernel(const __grid_constant__ CUtensorMap map, std::uint16_t cta_mask,
                                 float* out) {
  __shared__ DTile::Buffer buf;
  __shared__ Barrier bar;
  init_for_one_arrival(bar);
  if (threadIdx.x == 0) {
    bar.arrive_expect_tx(DTile::tx_bytes);
    load_tile_multicast<DTile>(&buf, &map, bar, {0, 0}, cta_mask);
  }
  bar.wait(0);
  if (threadIdx.x == 0) out[0] = DTile::at(buf.bytes, 0, 0);
}

// A ClusterPipeline told `cluster_size` CTAs in a launch without clusters.
__global__ void cluster_pipeline_kernel(std::uint32_t cluster_size) {
  __shared__ ClusterPipelineBarriers<2> bars;
  ClusterPipeline<2> pipe(bars, cluster_size);
  if (threadIdx.x == 0) pipe.init(1);
}

// Loads one DTile at unsigned coordinates, which TMA reads as signed (D3).
__global__ void unsigned_coords_kernel(const __grid_constant__ CUtensorMap map, std::uint32_t x,
                                       float* out) {
  __shared__ DTile::Buffer buf;
  __shared__ Barrier bar;
  init_for_one_arrival(bar);
  if (threadIdx.x == 0) arrive_and_load<DTile>(&buf, &map, bar, {x + blockIdx.x * 32, blockIdx.y});
  bar.wait(0);
  for (std::uint32_t i = threadIdx.x; i < kTileElems; i += blockDim.x) {
    out[i] = DTile::at(buf.bytes, i % DTile::box[0], i / DTile::box[0]);
  }
}

// Loads one DTile at a 64-bit coordinate (a 64-bit index that should have been 32-bit).
__global__ void wide_coords_kernel(const __grid_constant__ CUtensorMap map, std::int64_t x,
                                   float* out) {
  __shared__ DTile::Buffer buf;
  __shared__ Barrier bar;
  init_for_one_arrival(bar);
  if (threadIdx.x == 0) arrive_and_load<DTile>(&buf, &map, bar, {x, std::int64_t{0}});
  bar.wait(0);
  if (threadIdx.x == 0) out[0] = DTile::at(buf.bytes, 0, 0);
}

struct Source {
  std::vector<float> host;
  DeviceBuffer<float> dev;
  CUtensorMap map;
  Source() : host(make()), dev(host) {
    map = encode(DTile::spec(dev.get(), {32, 8}, {32 * sizeof(float)}));
  }
  static std::vector<float> make() {
    std::vector<float> v(kTileElems);
    for (std::uint32_t i = 0; i < kTileElems; ++i) v[i] = 3.0f * static_cast<float>(i) + 1.0f;
    return v;
  }
};

// --- children: run only when the parent asks for them --------------------------------------

// Prints what the CUDA runtime said, so the parent can check the kernel ended in an error.
void report_sync_result() {
  cudaGetLastError();
  const cudaError_t err = cudaDeviceSynchronize();
  std::printf("child: kernel ended with %s (%s)\n", cudaGetErrorName(err),
              err == cudaSuccess ? "no error" : "error");
  std::fflush(stdout);
}

TEST(DeviceDebugChild, DISABLED_WrongExpectTx) {
  Source src;
  DeviceBuffer<float> out(kTileElems);
  // 2 KiB armed, 1 KiB delivered: the phase can never complete
  expect_tx_kernel<<<1, 64>>>(src.map, 2 * DTile::tx_bytes, out.get());
  report_sync_result();
}

TEST(DeviceDebugChild, DISABLED_MisalignedSwizzledBuffer) {
  Source src;
  DeviceBuffer<float> out(kTileElems);
  // 128-byte aligned (rule D1 holds) but off the 1024-byte swizzle repeat (D2)
  misaligned_kernel<<<1, 64, DTile::smem_bytes + 2048>>>(src.map, 128, out.get());
  report_sync_result();
}

TEST(DeviceDebugChild, DISABLED_NegativeStoreCoordinate) {
  Source src;
  store_kernel<<<1, 64>>>(src.map, 0, -3);
  report_sync_result();
}

TEST(DeviceDebugChild, DISABLED_MapWithoutGridConstant) {
  Source src;
  DeviceBuffer<float> out(1);
  local_map_kernel<<<1, 64>>>(src.map, out.get());
  report_sync_result();
}

TEST(DeviceDebugChild, DISABLED_MulticastMaskOfNoCta) {
  Source src;
  DeviceBuffer<float> out(1);
  multicast_kernel<<<1, 64>>>(src.map, 0, out.get());
  report_sync_result();
}

TEST(DeviceDebugChild, DISABLED_MulticastMaskPastTheCluster) {
  Source src;
  DeviceBuffer<float> out(1);
  multicast_kernel<<<1, 64>>>(src.map, 0x3, out.get());
  report_sync_result();
}

TEST(DeviceDebugChild, DISABLED_ClusterPipelineWrongSize) {
  cluster_pipeline_kernel<<<1, 32>>>(2);
  report_sync_result();
}

TEST(DeviceDebugChild, DISABLED_CoordinatePast32Bits) {
  Source src;
  DeviceBuffer<float> out(1);
  wide_coords_kernel<<<1, 64>>>(src.map, std::int64_t{1} << 32, out.get());
  report_sync_result();
}

// --- parent side ------------------------------------------------------------------------

struct ChildResult {
  bool timed_out = false;
  int exit_status = -1;
  std::string output;  // stdout and stderr together (device printf goes to stdout)
};

// Runs this binary again with one disabled test selected, collecting its output.
ChildResult run_child(const std::string& test_name, int limit_s) {
  ChildResult r;
  int fds[2];
  if (pipe(fds) != 0) {
    r.output = "pipe() failed";
    return r;
  }
  const pid_t pid = fork();
  if (pid == 0) {
    // child: output into the pipe, then exec this binary on the one test
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    close(fds[1]);
    const std::string filter = "--gtest_filter=DeviceDebugChild.DISABLED_" + test_name;
    execl("/proc/self/exe", "test_device_debug", filter.c_str(),
          "--gtest_also_run_disabled_tests", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  // parent: read until EOF or the deadline
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(limit_s);
  char chunk[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    const ssize_t n = read(fds[0], chunk, sizeof chunk);
    if (n <= 0) break;
    r.output.append(chunk, static_cast<std::size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_status = status;
  return r;
}

void expect_contains(const std::string& out, const std::string& what) {
  EXPECT_NE(out.find(what), std::string::npos) << "missing \"" << what << "\" in:\n" << out;
}

TEST(DeviceDebug, WrongExpectTxReportsAndEnds) {
  TMAKIT_REQUIRE_GPU();
  const auto start = std::chrono::steady_clock::now();
  const ChildResult r = run_child("WrongExpectTx", 120);
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(r.timed_out) << "the broken kernel hung instead of reporting:\n" << r.output;
  std::printf("child ran %.1f s; its output:\n%s", secs, r.output.c_str());
  expect_contains(r.output, "tmakit: barrier wait timed out");
  expect_contains(r.output, "expected tx bytes " + std::to_string(2 * DTile::tx_bytes));
  expect_contains(r.output, "phase parity 0");
  expect_contains(r.output, "block (0,0,0)");
  expect_contains(r.output, "child: kernel ended with");
  EXPECT_EQ(r.output.find("(no error)"), std::string::npos) << "the kernel did not fail";
}

// Runs the broken kernel of DeviceDebugChild.DISABLED_<child>: it must end in time, with an
// error, its output holding every line of `want`.
void expect_reported(const char* child, std::initializer_list<const char*> want) {
  const ChildResult r = run_child(child, 120);
  ASSERT_FALSE(r.timed_out) << child << " hung instead of reporting:\n" << r.output;
  std::printf("child %s output:\n%s", child, r.output.c_str());
  for (const char* line : want) expect_contains(r.output, line);
  EXPECT_EQ(r.output.find("(no error)"), std::string::npos) << child << " did not fail";
}

TEST(DeviceDebug, MisalignedSwizzledBufferIsReported) {
  TMAKIT_REQUIRE_GPU();
  expect_reported("MisalignedSwizzledBuffer",
                  {"tmakit: misaligned shared-memory swizzled TMA buffer",
                   "needs 1024-byte alignment (swizzle pattern repeat, rule D2)",
                   "off by 128 bytes"});
}

TEST(DeviceDebug, NegativeStoreCoordinateIsReported) {
  TMAKIT_REQUIRE_GPU();
  expect_reported("NegativeStoreCoordinate",
                  {"tmakit: bad TMA coordinate for store_tile", "coordinate[1] = -3"});
}

TEST(DeviceDebug, MapWithoutGridConstantIsReported) {
  TMAKIT_REQUIRE_GPU();
  expect_reported("MapWithoutGridConstant",
                  {"tmakit: load_tile reads its tensor map at", "the map is in local memory",
                   "`const __grid_constant__ CUtensorMap`"});
}

TEST(DeviceDebug, MulticastMasksOutsideTheClusterAreReported) {
  TMAKIT_REQUIRE_GPU();
  for (const char* child : {"MulticastMaskOfNoCta", "MulticastMaskPastTheCluster"}) {
    expect_reported(child, {"tmakit: load_tile_multicast with CTA mask 0x",
                            "the cluster has 1 CTAs, so the mask must name at least one of "
                            "bits 0..0 and none above"});
  }
}

TEST(DeviceDebug, ClusterPipelineOfTheWrongSizeIsReported) {
  TMAKIT_REQUIRE_GPU();
  expect_reported("ClusterPipelineWrongSize",
                  {"tmakit: ClusterPipeline of 2 CTAs in a cluster of 1"});
}

TEST(DeviceDebug, CoordinatePast32BitsIsReported) {
  TMAKIT_REQUIRE_GPU();
  expect_reported("CoordinatePast32Bits",
                  {"tmakit: bad TMA coordinate for load_tile",
                   "coordinate[0] = 0: the value is neither a signed nor an unsigned 32-bit "
                   "integer"});
}

// The checks must not fire on a correct kernel: the same kernels, right count and alignment.
TEST(DeviceDebug, CorrectKernelsPassUnderDebugChecks) {
  TMAKIT_REQUIRE_GPU();
  Source src;
  DeviceBuffer<float> out(kTileElems);
  out.fill_bytes(0xCD);
  expect_tx_kernel<<<1, 64>>>(src.map, DTile::tx_bytes, out.get());
  TMAKIT_CHECK_LAUNCH();
  EXPECT_EQ(out.download(), src.host);
  out.fill_bytes(0xCD);
  misaligned_kernel<<<1, 64, DTile::smem_bytes + 2048>>>(src.map, 0, out.get());
  TMAKIT_CHECK_LAUNCH();
  EXPECT_EQ(out.download(), src.host);
  // unsigned coordinates, a multicast to the one CTA of a launch without clusters, a
  // ClusterPipeline of that one CTA (before the store below writes the source)
  out.fill_bytes(0xCD);
  unsigned_coords_kernel<<<1, 64>>>(src.map, 0u, out.get());
  TMAKIT_CHECK_LAUNCH();
  EXPECT_EQ(out.download(), src.host);
  // an unsigned coordinate that wraps below 0 is -16, where a load may start: 16 columns of
  // zeros, then the rows' first 16 elements
  out.fill_bytes(0xCD);
  unsigned_coords_kernel<<<1, 64>>>(src.map, 0u - 16u, out.get());
  TMAKIT_CHECK_LAUNCH();
  std::vector<float> shifted(kTileElems, 0.0f);
  for (std::uint32_t i = 0; i < kTileElems; ++i) {
    const std::uint32_t col = i % DTile::box[0];
    if (col >= 16) shifted[i] = src.host[i - 16];
  }
  EXPECT_EQ(out.download(), shifted);
  out.fill_bytes(0xCD);
  multicast_kernel<<<1, 64>>>(src.map, 0x1, out.get());
  TMAKIT_CHECK_LAUNCH();
  EXPECT_EQ(out.download()[0], src.host[0]);
  cluster_pipeline_kernel<<<1, 32>>>(1);
  TMAKIT_CHECK_LAUNCH();
  store_kernel<<<1, 64>>>(src.map, 0, 0);
  TMAKIT_CHECK_LAUNCH();
}

}  // namespace
}  // namespace tmakit
