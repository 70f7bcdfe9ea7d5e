// Pipelines and multicast on the GPU:
// - Pipeline stress: 1..8 stages, thousands of tiles per CTA, consumer warps that linger
//   unevenly; every consumer records which tile it saw at every step and checks every element,
//   so a lost, repeated or overwritten-early tile fails.
// - Multicast round trip: clusters of 2 and 4, the leader loads one box into every CTA, the
//   receivers armed first; each CTA's copy is compared with the CPU reference.
// - ClusterPipeline stress: the same as the pipeline stress, with multicast, clusters of 2, 4.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "tmakit/core/cluster_launch.hpp"
#include "tmakit/device/barrier.hpp"
#include "tmakit/device/copy.hpp"
#include "tmakit/device/pipeline.hpp"
#include "tmakit/device/tile.hpp"
#include "tmakit/host/encode.hpp"
#include "test_device_util.hpp"

namespace tmakit {
namespace {

using test::DeviceBuffer;

using PTile = Tile<std::uint32_t, Swizzle::bytes128, 32, 16>;  // 32 x 16 u32, 2 KiB
constexpr std::uint32_t kTileElems = PTile::rows * PTile::box[0];
constexpr std::uint32_t kNumTiles = 64;

// Tile t holds t * kTileElems + row * 32 + col: every element names its tile and position.
TMAKIT_HOST_DEVICE constexpr std::uint32_t expected_value(std::uint32_t tile, std::uint32_t i) {
  return tile * kTileElems + i;
}
// The tile a CTA (or cluster) loads at step k: a scrambled walk over all tiles.
TMAKIT_HOST_DEVICE constexpr std::uint32_t tile_at_step(std::uint32_t k, std::uint32_t who) {
  return (k * 7u + who * 13u) % kNumTiles;
}

// Check the whole stage against the expected tile; returns the tile id it actually holds.
__device__ std::uint32_t consume_stage(const void* buf, std::uint32_t tile, std::uint32_t lane,
                                       std::uint32_t* errors) {
  std::uint32_t bad = 0;
  for (std::uint32_t i = lane; i < kTileElems; i += 32) {
    bad += PTile::at(buf, i % PTile::box[0], i / PTile::box[0]) != expected_value(tile, i);
  }
  bad = __reduce_add_sync(0xffffffffu, bad);
  if (lane == 0 && bad != 0) atomicAdd(errors, bad);
  return PTile::at(buf, 0, 0) / kTileElems;
}

// TMAKIT_STRESS_SCALE (default 1) scales the step counts: scripts/gpu_check runs the stress
// tests under compute-sanitizer with a small scale. Every run still wraps the ring many times.
std::uint32_t scaled_steps(std::uint32_t steps, int stages) {
  const char* env = std::getenv("TMAKIT_STRESS_SCALE");
  const double scale = env != nullptr ? std::atof(env) : 1.0;
  const auto floor_steps = static_cast<std::uint32_t>(4 * stages + 3);
  return std::max(floor_steps, static_cast<std::uint32_t>(steps * scale));
}

// --- single-CTA pipeline ---------------------------------------------------------------

constexpr int kConsumerWarps = 4;

template <int Stages>
struct PipelineSmem {
  PTile::Buffer buf[Stages];
  PipelineBarriers<Stages> bars;
};

template <int Stages>
__global__ void __launch_bounds__(32 * (1 + kConsumerWarps))
    pipeline_kernel(const __grid_constant__ CUtensorMap map, std::uint32_t steps,
                    std::uint32_t* seen, std::uint32_t* errors) {
  __shared__ PipelineSmem<Stages> smem;
  Pipeline<Stages> pipe(smem.bars);
  const std::uint32_t warp = threadIdx.x / 32;
  const std::uint32_t lane = threadIdx.x % 32;
  // barrier init: one arrival per consumer warp frees a stage
  if (threadIdx.x == 0) {
    pipe.init(kConsumerWarps);
    fence_barrier_init();
  }
  __syncthreads();

  PipelineState<Stages> st;
  if (warp == 0) {
    // producer: one thread walks the ring, loading the next tile into each free stage
    if (lane == 0) {
      prefetch_tensor_map(&map);
      for (std::uint32_t k = 0; k < steps; ++k) {
        Barrier& full = pipe.producer_arm(st, PTile::tx_bytes);
        const auto y = static_cast<std::int32_t>(tile_at_step(k, blockIdx.x) * PTile::box[1]);
        load_tile<PTile>(smem.buf[st.stage].bytes, &map, full, {0, y});
        st.advance();
      }
    }
    return;
  }
  // consumers: check every stage, record the tile seen, release
  for (std::uint32_t k = 0; k < steps; ++k) {
    pipe.consumer_wait(st);
    const std::uint32_t want = tile_at_step(k, blockIdx.x);
    const std::uint32_t got = consume_stage(smem.buf[st.stage].bytes, want, lane, errors);
    // NOTE: uneven lingering makes the ring fill and drain at different rates per warp
    if ((k + warp) % 5 == 0) __nanosleep(500);
    __syncwarp();
    if (lane == 0) {
      seen[(blockIdx.x * steps + k) * kConsumerWarps + (warp - 1)] = got;
      pipe.consumer_release(st);
    }
    st.advance();
  }
}

struct TileSource {
  DeviceBuffer<std::uint32_t> data;
  CUtensorMap map;
  TileSource() : data(std::size_t{kNumTiles} * kTileElems) {
    std::vector<std::uint32_t> host(data.size());
    for (std::uint32_t t = 0; t < kNumTiles; ++t) {
      for (std::uint32_t i = 0; i < kTileElems; ++i) {
        host[t * kTileElems + i] = expected_value(t, i);
      }
    }
    data.upload(host);
    map = encode(PTile::spec(data.get(), {PTile::box[0], kNumTiles * PTile::box[1]},
                             {PTile::box[0] * sizeof(std::uint32_t)}));
  }
};

// Every (CTA, step, consumer) saw the tile it should have, and no element was wrong.
void expect_every_tile_once(const std::vector<std::uint32_t>& seen, std::uint32_t errors,
                            std::uint32_t ctas, std::uint32_t steps, std::uint32_t consumers,
                            std::uint32_t ctas_per_group) {
  EXPECT_EQ(errors, 0u) << "elements differed from the tile the step should hold";
  int reported = 0;
  for (std::uint32_t c = 0; c < ctas; ++c) {
    for (std::uint32_t k = 0; k < steps; ++k) {
      for (std::uint32_t w = 0; w < consumers; ++w) {
        const std::uint32_t got = seen[(c * steps + k) * consumers + w];
        const std::uint32_t want = tile_at_step(k, c / ctas_per_group);
        if (got != want && reported++ < 8) {
          ADD_FAILURE() << "CTA " << c << " step " << k << " consumer " << w << " saw tile "
                        << got << ", want " << want;
        }
      }
    }
  }
  EXPECT_EQ(reported, 0) << "steps with a lost or repeated tile";
}

template <int Stages>
void run_pipeline_stress(std::uint32_t ctas, std::uint32_t full_steps) {
  const std::uint32_t steps = scaled_steps(full_steps, Stages);
  SCOPED_TRACE(std::to_string(Stages) + " stages, " + std::to_string(steps) + " steps");
  TileSource src;
  DeviceBuffer<std::uint32_t> seen(std::size_t{ctas} * steps * kConsumerWarps);
  DeviceBuffer<std::uint32_t> errors(1);
  seen.fill_bytes(0xFF);
  errors.fill_bytes(0);
  pipeline_kernel<Stages><<<ctas, 32 * (1 + kConsumerWarps)>>>(src.map, steps, seen.get(),
                                                               errors.get());
  TMAKIT_CHECK_LAUNCH();
  expect_every_tile_once(seen.download(), errors.download()[0], ctas, steps, kConsumerWarps, 1);
}

// PipelineState's bookkeeping is host code too: advance walks the ring and flips the parity
// at each wrap; behind(n) is exactly the state n advances earlier (no GPU needed).
TEST(DevicePipeline, StateBehindIsTheStateNTripsBack) {
  constexpr int kStages = 3;
  std::vector<PipelineState<kStages>> history;
  PipelineState<kStages> st;
  for (int t = 0; t < 20; ++t) {
    history.push_back(st);
    // (several trips back too)
    for (std::uint32_t n = 0; n <= static_cast<std::uint32_t>(t); ++n) {
      const PipelineState<kStages> back = st.behind(n);
      EXPECT_EQ(back.stage, history[t - n].stage) << "trip " << t << " n " << n;
      EXPECT_EQ(back.parity, history[t - n].parity) << "trip " << t << " n " << n;
    }
    st.advance();
  }
  EXPECT_EQ(st.stage, 20u % kStages);
  EXPECT_EQ(st.parity, (20u / kStages) & 1u);
}

// advance_by(n) is n advances at once, from any state, across any number of trips (the
// ping-pong GEMM's math warpgroups step past each other's k-blocks with it).
TEST(DevicePipeline, StateAdvanceByIsNAdvances) {
  constexpr int kStages = 5;
  for (std::uint32_t start = 0; start < 2 * kStages; ++start) {
    for (std::uint32_t n : {0u, 1u, 4u, 5u, 6u, 9u, 10u, 11u, 127u, 1000u}) {
      PipelineState<kStages> stepped, jumped;
      for (std::uint32_t t = 0; t < start; ++t) stepped.advance();
      jumped = stepped;
      for (std::uint32_t t = 0; t < n; ++t) stepped.advance();
      jumped.advance_by(n);
      EXPECT_EQ(jumped.stage, stepped.stage) << "start " << start << " n " << n;
      EXPECT_EQ(jumped.parity, stepped.parity) << "start " << start << " n " << n;
    }
  }
}

TEST(DevicePipeline, StressOneToEightStages) {
  TMAKIT_REQUIRE_GPU();
  run_pipeline_stress<1>(4, 500);
  run_pipeline_stress<2>(8, 2000);
  run_pipeline_stress<3>(8, 2000);
  run_pipeline_stress<4>(16, 3000);
  run_pipeline_stress<8>(16, 3000);
}

// --- multicast round trip ---------------------------------------------------------------

using MTile = Tile<float, Swizzle::bytes64, 16, 12>;  // 16 x 12 fp32, rows a 64-byte span

__global__ void multicast_kernel(const __grid_constant__ CUtensorMap map, float* out) {
  __shared__ MTile::Buffer buf;
  __shared__ Barrier bar;
  const std::uint32_t cluster_size = ptx::cluster_nctarank();
  const std::uint32_t cluster_id = blockIdx.x / cluster_size;
  // every CTA's barrier initialised before any CTA can multicast into it
  if (threadIdx.x == 0) {
    bar.init(1);
    fence_barrier_init();
  }
  cluster_sync();
  // every receiver arms its own barrier for the whole box ...
  if (threadIdx.x == 0) bar.arrive_expect_tx(MTile::tx_bytes);
  // ... and only then does the leader issue (a multicast before the receivers armed: a hang)
  cluster_sync();
  if (threadIdx.x == 0 && ptx::cluster_ctarank() == 0) {
    const auto y = static_cast<std::int32_t>(cluster_id * 5);  // clusters overlap, go OOB
    load_tile_multicast<MTile>(buf.bytes, &map, bar, {4, y},
                               static_cast<std::uint16_t>((1u << cluster_size) - 1));
  }
  bar.wait(0);
  for (std::uint32_t i = threadIdx.x; i < MTile::rows * MTile::box[0]; i += blockDim.x) {
    out[blockIdx.x * MTile::rows * MTile::box[0] + i] =
        MTile::at(buf.bytes, i % MTile::box[0], i / MTile::box[0]);
  }
  // no CTA leaves while the cluster may still address its shared memory
  cluster_sync();
}

template <class Kernel, class... Args>
void launch_clustered(Kernel kernel, std::uint32_t ctas, std::uint32_t threads,
                      std::uint32_t cluster_size, Args... args) {
  ClusterLaunch l(ctas, threads, 0, nullptr, cluster_size);
  TMAKIT_CUDA_CHECK(cudaLaunchKernelEx(&l.config, kernel, args...));
  TMAKIT_CHECK_LAUNCH();
}

void run_multicast_round_trip(std::uint32_t cluster_size) {
  SCOPED_TRACE("cluster of " + std::to_string(cluster_size));
  constexpr std::uint32_t kW = 40, kH = 30, kClusters = 6;
  std::vector<float> host(kW * kH);
  for (std::uint32_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i) * 0.5f + 1.0f;
  DeviceBuffer<float> src(host);
  const std::uint32_t ctas = kClusters * cluster_size;
  constexpr std::uint32_t n = MTile::rows * MTile::box[0];
  DeviceBuffer<float> out(std::size_t{ctas} * n);
  out.fill_bytes(0xCD);
  const CUtensorMap map = encode(MTile::spec(src.get(), {kW, kH}, {kW * sizeof(float)}));
  launch_clustered(multicast_kernel, ctas, 128, cluster_size, map, out.get());

  // every CTA of cluster c holds the box at (4, 5c), zero-filled past the edges
  const std::vector<float> got = out.download();
  int bad = 0;
  for (std::uint32_t b = 0; b < ctas && bad < 8; ++b) {
    const std::uint32_t y0 = (b / cluster_size) * 5;
    for (std::uint32_t i = 0; i < n && bad < 8; ++i) {
      const std::uint32_t x = 4 + i % MTile::box[0];
      const std::uint32_t y = y0 + i / MTile::box[0];
      const float want = (x < kW && y < kH) ? host[y * kW + x] : 0.0f;
      if (test::bits(got[b * n + i]) != test::bits(want)) {
        ++bad;
        ADD_FAILURE() << "CTA " << b << " element " << i << ": got " << got[b * n + i]
                      << ", want " << want;
      }
    }
  }
}

TEST(DeviceMulticast, RoundTripClusterOf2) {
  TMAKIT_REQUIRE_GPU();
  run_multicast_round_trip(2);
}

TEST(DeviceMulticast, RoundTripClusterOf4) {
  TMAKIT_REQUIRE_GPU();
  run_multicast_round_trip(4);
}

// --- cluster pipeline with multicast ----------------------------------------------------

constexpr int kClusterConsumerWarps = 2;

template <int Stages>
struct ClusterSmem {
  PTile::Buffer buf[Stages];
  ClusterPipelineBarriers<Stages> bars;
};

template <int Stages>
__global__ void __launch_bounds__(32 * (1 + kClusterConsumerWarps))
    cluster_pipeline_kernel(const __grid_constant__ CUtensorMap map, std::uint32_t steps,
                            std::uint32_t* seen, std::uint32_t* errors) {
  __shared__ ClusterSmem<Stages> smem;
  const std::uint32_t cluster_size = ptx::cluster_nctarank();
  const std::uint32_t cluster_id = blockIdx.x / cluster_size;
  ClusterPipeline<Stages> pipe(smem.bars, cluster_size);
  const std::uint32_t warp = threadIdx.x / 32;
  const std::uint32_t lane = threadIdx.x % 32;
  // barriers of every CTA exist before any remote arrive or multicast
  if (threadIdx.x == 0) {
    pipe.init(kClusterConsumerWarps);
    fence_barrier_init();
  }
  cluster_sync();

  PipelineState<Stages> st;
  if (warp == 0) {
    // producer of every CTA arms; the leader's also issues once all have armed
    if (lane == 0) {
      for (std::uint32_t k = 0; k < steps; ++k) {
        Barrier& full = pipe.producer_arm(st, PTile::tx_bytes);
        if (pipe.is_leader()) {
          pipe.leader_wait_armed(st);
          const auto y = static_cast<std::int32_t>(tile_at_step(k, cluster_id) * PTile::box[1]);
          load_tile_multicast<PTile>(smem.buf[st.stage].bytes, &map, full, {0, y},
                                     pipe.cta_mask());
        }
        st.advance();
      }
    }
    __syncwarp();
  } else {
    for (std::uint32_t k = 0; k < steps; ++k) {
      pipe.consumer_wait(st);
      const std::uint32_t want = tile_at_step(k, cluster_id);
      const std::uint32_t got = consume_stage(smem.buf[st.stage].bytes, want, lane, errors);
      if ((k + warp + blockIdx.x) % 3 == 0) __nanosleep(300);
      __syncwarp();
      if (lane == 0) {
        seen[(blockIdx.x * steps + k) * kClusterConsumerWarps + (warp - 1)] = got;
        pipe.consumer_release(st);
      }
      st.advance();
    }
  }
  // no CTA leaves while copies into it or arrivals on it may be in flight
  cluster_sync();
}

template <int Stages>
void run_cluster_pipeline(std::uint32_t cluster_size, std::uint32_t clusters,
                          std::uint32_t full_steps) {
  const std::uint32_t steps = scaled_steps(full_steps, Stages);
  SCOPED_TRACE("cluster of " + std::to_string(cluster_size) + ", " + std::to_string(Stages) +
               " stages, " + std::to_string(steps) + " steps");
  TileSource src;
  const std::uint32_t ctas = clusters * cluster_size;
  DeviceBuffer<std::uint32_t> seen(std::size_t{ctas} * steps * kClusterConsumerWarps);
  DeviceBuffer<std::uint32_t> errors(1);
  seen.fill_bytes(0xFF);
  errors.fill_bytes(0);
  launch_clustered(cluster_pipeline_kernel<Stages>, ctas, 32 * (1 + kClusterConsumerWarps),
                   cluster_size, src.map, steps, seen.get(), errors.get());
  expect_every_tile_once(seen.download(), errors.download()[0], ctas, steps,
                         kClusterConsumerWarps, cluster_size);
}

TEST(DeviceMulticast, ClusterPipelineOf2) {
  TMAKIT_REQUIRE_GPU();
  run_cluster_pipeline<2>(2, 8, 1000);
  run_cluster_pipeline<4>(2, 16, 2000);
}

TEST(DeviceMulticast, ClusterPipelineOf4) {
  TMAKIT_REQUIRE_GPU();
  run_cluster_pipeline<3>(4, 8, 1000);
  run_cluster_pipeline<6>(4, 8, 2000);
}

}  // namespace
}  // namespace tmakit
