// Multi-stage producer/consumer pipelines over a ring of shared-memory buffers, for warp
// specialisation: one producer thread issues TMA loads, consumer warps compute.
//
//   full[s]   completes when stage s holds data: 1 arrival (the producer's arm) + tx bytes
//   empty[s]  completes when the consumers are done with stage s: `consumer_arrivals`
//
// Both sides walk the ring with a PipelineState (stage, parity). The producer waits for
// empty with the opposite parity, so its first trip finds every stage free: a freshly
// initialised barrier reports the phase "before" phase 0 (parity 1) as complete.
//
//   Producer (one thread)                      Consumers
//   for (t...) {                               for (t...) {
//     Barrier& full = pipe.producer_arm(st, Tile::tx_bytes);   pipe.consumer_wait(st);
//     load_tile<Tile>(&buf[st.stage], &map, full, {..});       use buf[st.stage];
//     st.advance();                                            pipe.consumer_release(st);
//   }                                                          st.advance();  }
//
// ClusterPipeline adds TMA multicast: the cluster's leader CTA loads each tile once into
// every CTA, and only after every CTA armed its own full barrier for that phase.
#pragma once

#include <cstdint>

#include "tmakit/device/barrier.hpp"
#include "tmakit/device/copy.hpp"
#include "tmakit/ptx/cluster.hpp"

namespace tmakit {

template <int Stages>
struct PipelineBarriers {
  static_assert(Stages >= 1, "a pipeline needs at least one stage");
  Barrier full[Stages];
  Barrier empty[Stages];
};

template <int Stages>
class Pipeline {
 public:
  using State = PipelineState<Stages>;
  static constexpr int stages = Stages;

  __device__ explicit Pipeline(PipelineBarriers<Stages>& bars) : bars_(bars) {}

  // One thread, once; then fence_barrier_init() and __syncthreads() before any other use.
  // `consumer_arrivals`: arrivals that free a stage (e.g. one per consumer warp).
  // `producer_arrivals`: arrivals that fill one: the producer's arm, plus one per thread of
  // a second producer that adds data to the stage (producer_wait_free).
  // NOTE: unrolled, so that ptxas fences the async proxy once before all the inits; a loop
  // fences at every stage, which made a 16-stage init 3x longer (docs/device.md, "Barrier
  // init in a loop").
  __device__ void init(std::uint32_t consumer_arrivals, std::uint32_t producer_arrivals = 1) {
#pragma unroll
    for (int s = 0; s < Stages; ++s) {
      bars_.full[s].init(producer_arrivals);
      bars_.empty[s].init(consumer_arrivals);
    }
  }

  // A second producer (init's producer_arrivals): wait until stage st is free; then each of
  // its threads arrives on producer_full(st) once its part of the stage is written.
  __device__ void producer_wait_free(const State& st) {
    bars_.empty[st.stage].wait(st.parity ^ 1u);
  }
  __device__ Barrier& producer_full(const State& st) { return bars_.full[st.stage]; }

  // Producer: wait until stage st is free, arm its full barrier for `tx_bytes`, return it
  // for the loads of this stage (which must deliver exactly tx_bytes, rule D5).
  __device__ Barrier& producer_arm(const State& st, std::uint32_t tx_bytes) {
    bars_.empty[st.stage].wait(st.parity ^ 1u);
    bars_.full[st.stage].arrive_expect_tx(tx_bytes);
    return bars_.full[st.stage];
  }

  // Consumer: wait until stage st holds its data.
  __device__ void consumer_wait(const State& st) { bars_.full[st.stage].wait(st.parity); }

  // Consumer: done reading stage st (each of the `consumer_arrivals` arrives once).
  __device__ void consumer_release(const State& st) { bars_.empty[st.stage].arrive(); }

 private:
  PipelineBarriers<Stages>& bars_;
};

template <int Stages>
struct ClusterPipelineBarriers {
  static_assert(Stages >= 1, "a pipeline needs at least one stage");
  Barrier full[Stages];
  Barrier empty[Stages];
  // Used in the leader CTA only: completes when every CTA armed stage s for this phase.
  Barrier armed[Stages];
};

// Leader-issued multicast over a 1-D cluster of `cluster_size` CTAs (cluster rank 0 leads).
// Per stage and trip, the producer thread of EVERY CTA calls producer_arm (wait for its
// consumers, arm its full barrier, tell the leader); the leader's producer then calls
// leader_wait_armed and issues the multicast load with cta_mask().
// Start: init in one thread per CTA, fence_barrier_init(), cluster_sync() in all threads.
// End: cluster_sync() in all threads, so no CTA exits while copies into it are in flight.
template <int Stages>
class ClusterPipeline {
 public:
  using State = PipelineState<Stages>;
  static constexpr int stages = Stages;
  static constexpr std::uint32_t kLeaderRank = 0;

  // `cluster_size` must be the cluster's CTA count (1-D cluster); debug mode reports another.
  __device__ ClusterPipeline(ClusterPipelineBarriers<Stages>& bars, std::uint32_t cluster_size)
      : bars_(bars), cluster_size_(cluster_size) {
    if constexpr (kDebugWaits) {
      const std::uint32_t ctas = ptx::cluster_nctarank();
      if (cluster_size == 0 || cluster_size > 16 || cluster_size != ctas) {
        detail::report_bad_cluster_size(cluster_size, ctas);
      }
    }
  }

  __device__ void init(std::uint32_t consumer_arrivals) {  // (unrolled: Pipeline::init)
#pragma unroll
    for (int s = 0; s < Stages; ++s) {
      bars_.full[s].init(1);
      bars_.empty[s].init(consumer_arrivals);
      bars_.armed[s].init(cluster_size_);
    }
  }

  __device__ bool is_leader() const { return cluster_rank() == kLeaderRank; }
  __device__ std::uint16_t cta_mask() const {
    return static_cast<std::uint16_t>((1u << cluster_size_) - 1u);
  }

  // Every CTA's producer: wait for the local consumers, arm the local full barrier, then
  // tell the leader this CTA is ready to receive the stage.
  __device__ Barrier& producer_arm(const State& st, std::uint32_t tx_bytes) {
    bars_.empty[st.stage].wait(st.parity ^ 1u);
    bars_.full[st.stage].arrive_expect_tx(tx_bytes);
    // NOTE: release.cluster orders the arm before the leader's acquire of `armed`, so the
    // multicast's complete_tx can never reach a barrier still in the previous phase.
    bars_.armed[st.stage].arrive_remote(kLeaderRank);
    return bars_.full[st.stage];
  }

  // Leader's producer, after its own producer_arm: wait until every CTA has armed.
  __device__ void leader_wait_armed(const State& st) {
    bars_.armed[st.stage].wait_cluster(st.parity);
  }

  __device__ void consumer_wait(const State& st) { bars_.full[st.stage].wait(st.parity); }
  __device__ void consumer_release(const State& st) { bars_.empty[st.stage].arrive(); }

 private:
  ClusterPipelineBarriers<Stages>& bars_;
  std::uint32_t cluster_size_;
};

}  // namespace tmakit
