// Barrier: one mbarrier in shared memory with the operations a TMA kernel needs, and the
// phase/parity bookkeeping. Waits are bounded and reported in debug mode (device/debug.hpp).
//
//   __shared__ tmakit::Barrier bar;
//   if (threadIdx.x == 0) { bar.init(1); tmakit::fence_barrier_init(); }
//   __syncthreads();
//   if (threadIdx.x == 0) { bar.arrive_expect_tx(Tile::tx_bytes); load_tile<Tile>(...); }
//   bar.wait(0);                                          // phase 0 complete: data is there
#pragma once

#include <cstdint>

#include "tmakit/device/debug.hpp"
#include "tmakit/ptx/barrier.hpp"
#include "tmakit/ptx/cluster.hpp"
#include "tmakit/ptx/fence.hpp"
#include "tmakit/ptx/mbarrier.hpp"

namespace tmakit {

// The mbarrier tx-count range is +-(2^20 - 1) bytes per phase (PTX ISA, "mbarrier").
inline constexpr std::uint32_t kMaxTxBytesPerPhase = (1u << 20) - 1;

class alignas(8) Barrier {
 public:
  // One thread; `arrivals` is the arrival count each phase waits for.
  __device__ void init(std::uint32_t arrivals) {
    debug_check_smem_alignment(this, 8, "mbarrier", "8-byte mbarrier, rule D1");
    ptx::mbarrier_init(smem(), arrivals);
#if TMAKIT_DEBUG_WAITS
    debug_expected_tx_bytes_ = 0;
#endif
  }

  __device__ void arrive() { ptx::mbarrier_arrive(smem()); }

  // Arm the phase for `tx_bytes` of incoming copies and arrive (the producer's one call).
  __device__ void arrive_expect_tx(std::uint32_t tx_bytes) {
#if TMAKIT_DEBUG_WAITS
    if (tx_bytes > kMaxTxBytesPerPhase) {
      detail::report_tx_past_limit("arrive.expect_tx", smem(), tx_bytes);
    }
    debug_expected_tx_bytes_ = tx_bytes;
#endif
    ptx::mbarrier_arrive_expect_tx(smem(), tx_bytes);
  }

  // Add `tx_bytes` to the phase without arriving (several copies on one barrier).
  __device__ void expect_tx(std::uint32_t tx_bytes) {
#if TMAKIT_DEBUG_WAITS
    if (tx_bytes > kMaxTxBytesPerPhase) detail::report_tx_past_limit("expect_tx", smem(), tx_bytes);
    debug_expected_tx_bytes_ += tx_bytes;
#endif
    ptx::mbarrier_expect_tx(smem(), tx_bytes);
  }

  // Arrive on the barrier at this one's offset in cluster CTA `cta_rank` (release.cluster).
  __device__ void arrive_remote(std::uint32_t cta_rank) {
    ptx::mbarrier_arrive_release_cluster_remote(ptx::mapa_shared_cluster(smem(), cta_rank));
  }

  // As arrive_remote, releasing at CTA scope only: for a consumer freeing a stage it read
  // (and waited for) in its own shared memory, so a peer's multicast may overwrite it.
  __device__ void arrive_remote_cta_scope(std::uint32_t cta_rank) {
    ptx::mbarrier_arrive_remote(ptx::mapa_shared_cluster(smem(), cta_rank));
  }

  __device__ bool try_wait(std::uint32_t parity) {
    return ptx::mbarrier_try_wait_parity(smem(), parity);
  }

  // Block until the phase of this parity completes (acquire.cta).
  __device__ void wait(std::uint32_t parity) { wait_impl<false>(parity); }

  // As wait(), with cluster-scope acquire: for phases completed by other CTAs' arrivals.
  __device__ void wait_cluster(std::uint32_t parity) { wait_impl<true>(parity); }

  // 32-bit shared-state-space address, the operand form of the ptx/ wrappers.
  __device__ std::uint32_t smem() const { return ptx::smem_u32(this); }

 private:
  template <bool ClusterScope>
  __device__ void wait_impl(std::uint32_t parity) {
    auto try_once = [&] {
      return ClusterScope ? ptx::mbarrier_try_wait_parity_acquire_cluster(smem(), parity)
                          : ptx::mbarrier_try_wait_parity(smem(), parity);
    };
#if TMAKIT_DEBUG_WAITS
    // bounded: report and trap instead of hanging the GPU (D5)
    const std::uint64_t start_ns = ptx::globaltimer_ns();
    while (!try_once()) {
      const std::uint64_t waited_ns = ptx::globaltimer_ns() - start_ns;
      if (waited_ns > kDebugWaitTimeoutNs) {
        const volatile std::uint32_t* expected = &debug_expected_tx_bytes_;
        detail::report_wait_timeout(smem(), parity, *expected, waited_ns);
      }
    }
#else
    // NOTE: try_wait suspends the thread in hardware for a while before answering false,
    // so this loop does not spin hot.
    while (!try_once()) {
    }
#endif
  }

  std::uint64_t state_;
#if TMAKIT_DEBUG_WAITS
  // Last armed byte count, for the time-out report only (debug builds).
  std::uint32_t debug_expected_tx_bytes_;
  std::uint32_t debug_pad_;
#endif
};

// After one thread initialised barriers, before any other thread or a TMA uses them:
// makes the init visible to the async proxy and to the cluster (without it: a hang or lost data).
// Follow with __syncthreads() (one CTA) or cluster_sync() (a cluster).
__device__ __forceinline__ void fence_barrier_init() {
  ptx::fence_mbarrier_init_release_cluster();
}

// A named barrier among `threads` threads of this CTA (a multiple of 32; id 1..15, 0 being
// __syncthreads'): e.g. the consumer warps of a warp-specialised kernel, without the producer.
__device__ __forceinline__ void named_barrier_sync(std::uint32_t id, std::uint32_t threads) {
  ptx::bar_sync(id, threads);
}
// Arrive on named barrier `id` without waiting: with named_barrier_sync in other warps, one
// group of warps signals another (e.g. whose turn it is to issue tensor-core work).
__device__ __forceinline__ void named_barrier_arrive(std::uint32_t id, std::uint32_t threads) {
  ptx::bar_arrive(id, threads);
}

// This CTA's rank in its cluster and the cluster's CTA count (0 and 1 in a launch without
// clusters).
__device__ __forceinline__ std::uint32_t cluster_rank() { return ptx::cluster_ctarank(); }
__device__ __forceinline__ std::uint32_t cluster_size() { return ptx::cluster_nctarank(); }

// All threads of all CTAs of the cluster: barrier.cluster arrive (release) + wait (acquire).
__device__ __forceinline__ void cluster_sync() {
  ptx::barrier_cluster_arrive_release();
  ptx::barrier_cluster_wait_acquire();
}

// cluster_sync in two halves, for a CTA that must only know that its peers have started (their
// barriers initialised) before it writes their shared memory: every thread arrives early,
// ordering nothing (relaxed, so no memory barrier), and a thread waits only before its first
// remote write, the work between hiding the wait. A thread that writes no peer may skip the
// wait. NOTE: barrier.cluster has no try-wait form, so debug mode cannot bound this wait.
__device__ __forceinline__ void cluster_arrive_relaxed() {
  ptx::barrier_cluster_arrive_relaxed();
}
__device__ __forceinline__ void cluster_wait() { ptx::barrier_cluster_wait_acquire(); }

// Distributed shared memory push: the 16 bytes `v` to `dst`'s offset in cluster CTA
// `cta_rank`, counted off (complete_tx) the barrier at `bar`'s offset there. No reply is
// awaited, so pushes stream; the receiver arms its barrier for every byte its peers owe it
// (arrive_expect_tx) and waits on it (wait_cluster): no cluster barrier or fence on either side.
__device__ __forceinline__ void store_async_remote(float4* dst, const float4& v, Barrier& bar,
                                                   std::uint32_t cta_rank) {
  debug_check_smem_alignment(dst, 16, "st.async destination", "a 16-byte vector store");
  ptx::st_async_v4_f32(ptx::mapa_shared_cluster(ptx::smem_u32(dst), cta_rank), v,
                       ptx::mapa_shared_cluster(bar.smem(), cta_rank));
}

// Position in a ring of `Stages` buffers: which stage, and the parity of its current phase.
// Every full trip around the ring flips the parity.
template <int Stages>
struct PipelineState {
  static_assert(Stages >= 1, "a pipeline needs at least one stage");
  std::uint32_t stage = 0;
  std::uint32_t parity = 0;

  __device__ __host__ void advance() {
    if (++stage == Stages) {
      stage = 0;
      parity ^= 1u;
    }
  }

  // `n` stages on at once (any n >= 0): e.g. past the stages another consumer reads.
  __device__ __host__ void advance_by(std::uint32_t n) {
    const std::uint32_t to = stage + n;
    stage = to % Stages;
    parity ^= (to / Stages) & 1u;
  }

  // The state `n` advances back (any n >= 0; the parity flips at each wrap): e.g. the stage a
  // consumer frees n tiles late.
  __device__ __host__ PipelineState behind(std::uint32_t n) const {
    PipelineState s = *this;
    // NOTE: whole trips first (each flips the parity), then the part of one; for a constant
    // n < Stages the first two lines fold away
    s.parity ^= (n / Stages) & 1u;
    const std::uint32_t part = n % Stages;
    if (stage >= part) {
      s.stage = stage - part;
    } else {
      s.stage = stage + Stages - part;
      s.parity ^= 1u;
    }
    return s;
  }
};

}  // namespace tmakit
