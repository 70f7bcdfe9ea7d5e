// FP8 GEMM for small M (M <= 128), where the problem is one stream of B: the operands trade
// places. wgmma's 64-row side takes 64 rows of B and its N side the whole of A (M rounded up
// to 8, 16, 32, 64 or 128), so A costs a few registers and B streams through a deep ring.
// K is split over a cluster of S CTAs (S in 1, 2, 4, 8); the partial tiles are summed
// through distributed shared memory, in rank order, with no trip through global memory.
// A CTA takes 64 rows of B (configuration smallm), or 128 as two 64-row waves of wgmmas in one
// group (configuration smallm128, M <= 64, no cluster): where N has more 64-row tiles than the GPU
// has SMs, half the CTAs each stream twice the rows (one round instead of two, or fewer).
// See README.md beside this file ("small M").
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <type_traits>

#include "gemm_configs.hpp"
#include "gemm_launch.hpp"
#include "gemm_plan.hpp"
#include "sm90_gemm_common.cuh"
#include "tmakit/device/barrier.hpp"
#include "tmakit/device/copy.hpp"
#include "tmakit/device/pipeline.hpp"
#include "tmakit/device/tile.hpp"
#include "tmakit/kernels/detail/launch_support.hpp"
#include "tmakit/device/sm90_wgmma.hpp"

namespace tmakit::detail::gemm_small_m {

using gemm::launched_config;
using gemm::row;
using gemm_common::kBlockK;
using gemm_common::round_to;
namespace config = gemm::config;
constexpr int kWaveRows = 64;  // rows of B per wave of wgmmas: wgmma's M
constexpr int kThreads = 256;  // warpgroup 0: producer (one thread); warpgroup 1: wgmma

// MP: M rounded up (wgmma's N); RowsB: rows of B per CTA (the table's block_n: 64 for
// smallm, 128 for smallm128).
template <int MP, int RowsB>
struct Config {
  static constexpr int kWaves = RowsB / kWaveRows;
  static constexpr int kWaveAccum = MP / 2;           // per wave: a 64 x MP tile
  static constexpr int kAccum = kWaves * kWaveAccum;  // fp32 accumulators per thread
  // The TMA boxes (128B swizzle): RowsB rows of B and the MP rows of A (rows past M read as
  // zeros), 128 bytes of K (kBlockK e4m3) each. A stage holds one of each.
  using BTile = Tile<std::uint8_t, Swizzle::bytes128, kBlockK, RowsB>;
  using ATile = Tile<std::uint8_t, Swizzle::bytes128, kBlockK, MP>;
  static constexpr std::uint32_t kStageBytes = BTile::tx_bytes + ATile::tx_bytes;
  // The epilogue stages D's tile in shared memory: MP rows (m) of RowsB 2-byte elements (n),
  // at a pitch 16 bytes over a row, so that the fragment's writes hit distinct banks.
  static constexpr std::uint32_t kStagePitch = RowsB * 2 + 16;
  // the reduction moves registers in quads (16 bytes): rank r owns quads [r Q / S, (r + 1) Q
  // / S) of the Q = kAccum / 4, and holds S slots of ceil(Q / S) quads per consumer thread.
  // Two waves run without a cluster: the slots only hold the staging tile.
  static constexpr int kQuads = kAccum / 4;
  static constexpr std::uint32_t kReduceBytes =
      kWaves == 1 ? std::max(kQuads, 8) * 128 * 16 : (MP * kStagePitch + 15) / 16 * 16;
  // as deep as 200 KB allows (16 at most): a CTA's whole share of B is often in flight
  static constexpr int kStages =
      std::min<int>(16, static_cast<int>((200u * 1024u - kReduceBytes) / kStageBytes));
};

struct Params {
  CUtensorMap a_map;  // M x K bytes, box 128 x MP, 128B swizzle (rows past M read as zeros)
  CUtensorMap b_map;  // N x K bytes, box 128 x 64, 128B swizzle
  void* d;
  std::uint64_t d_row_elems;
  std::int32_t m, n;
  std::int32_t k_blocks;
  GemmKernelScale scale;
  std::int32_t d_vec;  // 1: D's rows start 16-byte aligned (8-element chunks stored whole)
  // k-blocks of its B each CTA asks the L2 for before waiting for the kernel before it
  // (GemmPlan::prefetch_k_blocks); with any, the next kernel may start once the producer has issued its
  // last load, else at once
  std::int32_t prefetch_kblocks;
};

template <int MP, int RowsB>
struct alignas(1024) SharedStorage {
  using C = Config<MP, RowsB>;
  typename C::BTile::Buffer b[C::kStages];
  typename C::ATile::Buffer a[C::kStages];
  // the reduction: slot q of this CTA's slice of registers, written by cluster rank q
  float4 partial[C::kReduceBytes / 16];
  // row-wise scales (GemmScaleRecipe::row) of the tile's MP rows of A and RowsB rows of B,
  // 0 past M or N: loaded by the producer warpgroup's idle warps while B streams in
  float row_scale_a[MP];
  float row_scale_b[RowsB];
  PipelineBarriers<C::kStages> bars;
  Barrier reduced;  // the peers' quads of this rank's slice have all arrived
};
// Named barriers: 1 the consumer warpgroup's own; 2 the row-wise scales' hand-over (the
// producer warpgroup's warps 1-3 arrive once they are in shared memory, the consumers sync).
constexpr std::uint32_t kScalesBarrier = 2;
constexpr std::uint32_t kScaleLoaders = 96;
template <int MP, int RowsB>
constexpr std::size_t kSmemBytes = sizeof(SharedStorage<MP, RowsB>) + 1024;  // + slack

// Register i = w * kWaveAccum + r of thread t holds D^T(row, col) of wave w's 64 x MP tile
// (PTX ISA, wgmma .m64nNk32 fragments): row = 64 * w + 16 * warp + lane / 4 + 8 * h (a row
// of B: n), col = 8 * j + 2 * (lane % 4) + e (a row of A: m), with r = 4j + 2h + e. Written
// scaled and rounded into the staging tile.
template <class C, class T>
__device__ __forceinline__ void stage_element(std::uint8_t* stage, int i, std::uint32_t tid,
                                              float v) {
  const auto warp = static_cast<std::uint32_t>(tid / 32),
             lane = static_cast<std::uint32_t>(tid % 32);
  const int w = i / C::kWaveAccum, r = i % C::kWaveAccum;
  const std::uint32_t n = static_cast<std::uint32_t>(kWaveRows * w) + 16 * warp + lane / 4 +
                          8 * static_cast<std::uint32_t>((r / 2) % 2);
  const std::uint32_t m =
      8 * static_cast<std::uint32_t>(r / 4) + 2 * (lane % 4) + static_cast<std::uint32_t>(r % 2);
  *reinterpret_cast<T*>(stage + m * C::kStagePitch + n * sizeof(T)) = round_to<T>(v);
}

// The factors the thread's registers are scaled by before they are staged: the call's
// `scale`, or with row-wise scales (GemmScaleRecipe::row) (alpha * scale_a[m]) * scale_b[n]
// for register i's element (m, n) (stage_element's), 0 past M or N (not stored), from the
// scales the producer warpgroup put in shared memory (load_row_scales; the consumer
// warpgroup waits for them here).
template <class C, class Storage>
__device__ __forceinline__ void element_factors(const Params& p, const Storage& s, float scale,
                                                std::uint32_t tid, float (&f)[C::kAccum]) {
  if (p.scale.recipe != GemmScaleRecipe::row) {
#pragma unroll
    for (int i = 0; i < C::kAccum; ++i) f[i] = scale;
    return;
  }
  named_barrier_sync(kScalesBarrier, 128 + kScaleLoaders);
  const auto warp = static_cast<std::int32_t>(tid / 32), lane = static_cast<std::int32_t>(tid % 32);
#pragma unroll
  for (int i = 0; i < C::kAccum; ++i) {
    const int w = i / C::kWaveAccum, r = i % C::kWaveAccum;
    const std::int32_t m = 8 * (r / 4) + 2 * (lane % 4) + r % 2;
    const std::int32_t n = kWaveRows * w + 16 * warp + lane / 4 + 8 * ((r / 2) % 2);
    f[i] = (scale * s.row_scale_a[m]) * s.row_scale_b[n];
  }
}

// Row-wise scales to shared memory, by the producer warpgroup's warps 1-3 (the ones the
// producer thread leaves idle), right after the wait for the kernel before: their loads
// then land while B streams in, not after the last wgmma (read in the epilogue, their DRAM
// round trip came after the main loop: kernels/gemm/README.md, "Scale recipes").
template <int MP, int RowsB, class Storage>
__device__ __forceinline__ void load_row_scales(const Params& p, Storage& s, std::int32_t n0) {
  for (int i = static_cast<int>(threadIdx.x) - 32; i < MP + RowsB;
       i += static_cast<int>(kScaleLoaders)) {
    if (i < MP) {
      s.row_scale_a[i] = i < p.m ? __ldcg(p.scale.a + i * p.scale.a_mn) : 0.0f;
    } else {
      const std::int32_t n = n0 + i - MP;
      s.row_scale_b[i - MP] = n < p.n ? __ldcg(p.scale.b + n * p.scale.b_mn) : 0.0f;
    }
  }
  __syncwarp();
  named_barrier_arrive(kScalesBarrier, 128 + kScaleLoaders);
}

// Rows [m_begin, m_end) of the staged tile to D, by the consumer warpgroup once every row is
// staged: 16 bytes (8 elements) per thread and store, so that every store fills whole 32-byte
// sectors (2-byte stores straight from the fragment left sectors half written, and the L2
// completed them from DRAM: 1.2 us at M = 64, H100, kernels/gemm/EXPERIMENTS.md).
template <class C, class T>
__device__ __forceinline__ void store_rows(const Params& p, const std::uint8_t* stage,
                                           std::int32_t m_begin, std::int32_t m_end,
                                           std::uint32_t tid, std::int32_t n0) {
  constexpr std::int32_t kChunks = C::kWaves * kWaveRows / 8;  // 8-element chunks of a row
  const std::int32_t chunk = static_cast<std::int32_t>(tid) % kChunks;
  const std::int32_t n = n0 + 8 * chunk;
  for (std::int32_t m = m_begin + static_cast<std::int32_t>(tid) / kChunks; m < min(m_end, p.m);
       m += 128 / kChunks) {
    const uint4 v =
        *reinterpret_cast<const uint4*>(stage + static_cast<std::uint32_t>(m) * C::kStagePitch +
                                        static_cast<std::uint32_t>(chunk) * 16);
    T* row = static_cast<T*>(p.d) + static_cast<std::uint64_t>(m) * p.d_row_elems;
    if (p.d_vec && n + 8 <= p.n) {
      *reinterpret_cast<uint4*>(row + n) = v;
    } else {
      const T* e = reinterpret_cast<const T*>(&v);
      for (std::int32_t q = 0; q < 8 && n + q < p.n; ++q) row[n + q] = e[q];
    }
  }
}

// Promote: GemmAccumulation::promoted (true) or fast (false: the wgmmas add into the sums
// across all of K, no partial products).
template <int MP, int RowsB, class T, bool Promote>
__global__ void __launch_bounds__(kThreads, 1)
    sm90_gemm_fp8_small_m_kernel(const __grid_constant__ Params p) {
  using C = Config<MP, RowsB>;
  using Storage = SharedStorage<MP, RowsB>;
  static_assert(MP % 8 == 0 && MP <= 256, "wgmma N: 8..256, step 8");
  static_assert(RowsB % kWaveRows == 0 && C::kWaves <= 2, "one or two 64-row waves of B");
  static_assert(C::kWaves == 1 || C::kAccum <= 64,
                "two waves hold 3 x kAccum registers per thread (sums, two partials)");
  // (each Buffer starts on the 128B swizzle's 1024-byte repeat, rule D2)
  static_assert(C::ATile::smem_bytes == C::ATile::tx_bytes &&
                    C::BTile::smem_bytes == C::BTile::tx_bytes,
                "wgmma reads A and B as dense 128-byte rows: a box must be whole 8-row groups");
  static_assert(C::kStages >= 4, "the ring needs depth");
  static_assert(
      MP * C::kStagePitch <= sizeof(Storage::b) && MP * C::kStagePitch <= sizeof(Storage::partial),
      "the ring and the reduction's slots each hold the staging tile");
  static_assert(kSmemBytes<MP, RowsB> <= 227 * 1024, "shared memory: 227 KB per CTA at most");
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ std::uint8_t smem_raw[];
  auto& s = *reinterpret_cast<Storage*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) &
                                        ~std::uintptr_t{1023});
  Pipeline<C::kStages> pipe(s.bars);
  using State = typename Pipeline<C::kStages>::State;
  // a cluster of S CTAs shares one tile of RowsB rows of B; rank r takes the r-th share of K
  const std::uint32_t rank = cluster_rank();
  const std::uint32_t ranks = cluster_size();
  const std::int32_t n0 = static_cast<std::int32_t>(blockIdx.x / ranks) * RowsB;
  const auto kb_begin = static_cast<std::int32_t>(static_cast<std::int64_t>(rank) * p.k_blocks / ranks);
  const auto kb_end = static_cast<std::int32_t>(static_cast<std::int64_t>(rank + 1) * p.k_blocks / ranks);

  // this rank's slice of the cluster's reduction: register quads [qb, qe) of the tile
  const int qb = static_cast<int>(rank * C::kQuads / ranks);
  const int qe = static_cast<int>((rank + 1) * C::kQuads / ranks);
  const std::uint32_t slot_quads = (C::kQuads + ranks - 1) / ranks;  // per sender's slot
  if (threadIdx.x == 0) {
    pipe.init(4);  // one arrival per consumer warp
    s.reduced.init(1);
    // every peer sends 16 bytes per quad of the slice and consumer thread
    if (ranks > 1)
      s.reduced.arrive_expect_tx((ranks - 1) * static_cast<std::uint32_t>(qe - qb) * 128 * 16);
    fence_barrier_init();
  }
  __syncthreads();
  // NOTE: launched to overlap the kernel before it (GemmTuning::overlap_launch), everything
  // above touched shared memory only: warm the descriptors (kernel parameters, not written
  // by that kernel) and ask the L2 for this CTA's first k-blocks of B, then wait for that
  // kernel's writes before any load into shared memory. The L2 prefetch is safe whatever
  // that kernel writes: it only fills the L2, through which every later load reads (GPU test
  // GemmOverlapLaunch writes B late). It pays only if the next kernel starts late, once our
  // loads are all issued (kernels/gemm/EXPERIMENTS.md); without a prefetch the next kernel
  // may start at once.
  if (threadIdx.x == 0) {
    prefetch_tensor_map(&p.a_map);
    prefetch_tensor_map(&p.b_map);
    const std::int32_t prefetch_end = min(kb_end, kb_begin + p.prefetch_kblocks);
    for (std::int32_t kb = kb_begin; kb < prefetch_end; ++kb) {
      const std::int32_t cb[2] = {kb * kBlockK, n0};
      prefetch_tile<typename C::BTile>(&p.b_map, cb);
    }
  }
  wait_for_previous_kernel();
  if (p.prefetch_kblocks == 0) allow_next_kernel();
  // past the wait: a device-side scale written by the kernel before is visible (read by the
  // consumer warpgroup only, where the epilogue uses it)
  const float scale = threadIdx.x < 128 ? 1.0f : gemm_common::kernel_scale(p.scale);
  // NOTE: a CTA may write a peer's shared memory only once the peer has started (and its
  // `reduced` barrier is initialised): every thread arrives here, and the consumers wait
  // before the reduction's first remote store (long satisfied by then; compute-sanitizer's
  // racecheck flags the stores otherwise)
  if (ranks > 1) cluster_arrive_relaxed();

  float acc[C::kAccum];
#pragma unroll
  for (int i = 0; i < C::kAccum; ++i) acc[i] = 0.0f;
  const std::uint32_t tid = threadIdx.x % 128;

  // NOTE: the role read through lane 0, so that ptxas knows the branch is warp-uniform and
  // keeps the consumer's ring state and wgmma descriptors in uniform registers
  if (__shfl_sync(0xffffffffu, threadIdx.x, 0) < 128) {
    // ---- producer: one lane streams this CTA's share of B, and A beside it -------------
    if (threadIdx.x >= 32 && p.scale.recipe == GemmScaleRecipe::row) {
      load_row_scales<MP, RowsB>(p, s, n0);
    }
    // (elect_one: the copies' operands stay in uniform registers)
    if (__shfl_sync(0xffffffffu, threadIdx.x, 0) < 32 && elect_one()) {
      State st;
      for (std::int32_t kb = kb_begin; kb < kb_end; ++kb) {
        Barrier& full = pipe.producer_arm(st, C::kStageBytes);  // OOB rows of A count too
        const std::int32_t cb[2] = {kb * kBlockK, n0};
        load_tile<typename C::BTile>(&s.b[st.stage], &p.b_map, full, cb);
        const std::int32_t ca[2] = {kb * kBlockK, 0};
        load_tile<typename C::ATile>(&s.a[st.stage], &p.a_map, full, ca);
        st.advance();
      }
      // a CTA's trigger is this lane's (the others never give one)
      if (p.prefetch_kblocks != 0) allow_next_kernel();
    }
  } else {
    // ---- consumer warpgroup: 64 x MP sums, promoted from partial products, or fast --------
    const bool warp_leader = (threadIdx.x % 32) == 0;
    State st;
    // k-block `at`'s wgmmas into `part`: a fresh partial product (fresh), or added to it
    auto issue = [&](float(&part)[C::kAccum], const State& at, auto fresh) {
      constexpr bool kFresh = decltype(fresh)::value;
      pipe.consumer_wait(at);
      wgmma_fence_registers(part);
      wgmma_fence();
      const std::uint64_t desc_b = wgmma_operand_sw128(smem_address(&s.b[at.stage]));
      const std::uint64_t desc_a = wgmma_operand_sw128(smem_address(&s.a[at.stage]));
#pragma unroll
      for (int w = 0; w < C::kWaves; ++w) {
        // wave w: rows [64 w, 64 w + 64) of B's box (whole 1024-byte swizzle repeats further
        // on) into registers [w kWaveAccum, (w + 1) kWaveAccum) of the partial. B is wgmma's
        // A operand (64 rows), A its B operand (MP rows)
        auto& wave = *reinterpret_cast<float(*)[C::kWaveAccum]>(&part[w * C::kWaveAccum]);
        wgmma_k_block_e4m3<MP, kFresh>(
            wave, wgmma_operand_advance(desc_b, w * kWaveRows * kBlockK), desc_a);
      }
      wgmma_commit();
    };
    auto retire = [&](float (&part)[C::kAccum], const State& done, auto /*which*/) {
      if (warp_leader) pipe.consumer_release(done);
      wgmma_fence_registers(part);
#pragma unroll
      for (int i = 0; i < C::kAccum; ++i) acc[i] += part[i];
    };
    if constexpr (Promote) {
      float part0[C::kAccum];
      float part1[C::kAccum];
      gemm_common::pipelined_k_blocks(
          kb_end - kb_begin, st, part0, part1,
          [&](float(&part)[C::kAccum], const State& at, auto /*which*/) {
            issue(part, at, std::true_type{});
          },
          retire);
    } else {
      // NOTE: fast accumulation: the sums (zeroed above) take every k-block's wgmmas
      gemm_common::accumulated_k_blocks(
          kb_end - kb_begin, st, [&](const State& at) { issue(acc, at, std::false_type{}); },
          [&](const State& done) {
            if (warp_leader) pipe.consumer_release(done);
          });
      wgmma_fence_registers(acc);
    }
    if (ranks == 1) {
      // the staging tile in the reduction's slots, unused without a cluster
      // NOTE: not in the ring: wgmma.wait_group waits for this warp only, so another warp's
      // share of the last wgmmas may still be reading the ring
      auto* const staging = reinterpret_cast<std::uint8_t*>(s.partial);
      float factor[C::kAccum];
      element_factors<C>(p, s, scale, tid, factor);
#pragma unroll
      for (int i = 0; i < C::kAccum; ++i) stage_element<C, T>(staging, i, tid, acc[i] * factor[i]);
      named_barrier_sync(1, 128);
      store_rows<C, T>(p, staging, 0, MP, tid, n0);
    } else if constexpr (C::kWaves == 1) {  // (two waves never run in a cluster: the launcher)
      cluster_wait();  // every peer has started (the arrive above)
      // push each slice of registers to the rank that owns it, into slot `rank` there, 16
      // bytes per store, counted off that rank's `reduced` barrier
      // NOTE: remote stores need no reply, so they stream; remote loads (a round trip each),
      // 4-byte pushes, and a cluster barrier after the pushes (its release compiles to a
      // GPU-wide memory barrier) all measured slower (kernels/gemm/EXPERIMENTS.md).
      for (std::uint32_t r = 0; r < ranks; ++r) {
        const int rb = static_cast<int>(r * C::kQuads / ranks);
        const int re = static_cast<int>((r + 1) * C::kQuads / ranks);
#pragma unroll
        for (int u = 0; u < C::kQuads; ++u) {
          if (u < rb || u >= re) continue;
          const float4 v = make_float4(acc[4 * u], acc[4 * u + 1], acc[4 * u + 2], acc[4 * u + 3]);
          float4& slot =
              s.partial[(rank * slot_quads + static_cast<std::uint32_t>(u - rb)) * 128 + tid];
          if (r == rank) {
            slot = v;
          } else {
            store_async_remote(&slot, v, s.reduced, r);
          }
        }
      }
    }
  }
  // NOTE: every thread arrived on the cluster barrier at the start; a producer thread need
  // not wait for it. No CTA exits while a peer writes into it: each waits for its peers'
  // bytes before it goes on.
  if (ranks == 1 || threadIdx.x < 128) return;
  if constexpr (C::kWaves == 1) {
    // ---- the cluster's reduction: rank r owns register quads [r Q / S, (r + 1) Q / S) of the
    // tile and sums the S partials of them in rank order (the same sum whatever the timing)
    // every consumer warp is past its last wgmma (the ring is idle: it holds the staging tile)
    // and this rank's own slot is written; then every peer's
    named_barrier_sync(1, 128);
    s.reduced.wait_cluster(0);
    auto* const staging = reinterpret_cast<std::uint8_t*>(s.b);
    float factor[C::kAccum];
    element_factors<C>(p, s, scale, tid, factor);
    // NOTE: unrolled over every quad (this rank's range checked at run time), so that the
    // factors stay in registers
#pragma unroll
    for (int u = 0; u < C::kQuads; ++u) {
      if (u < qb || u >= qe) continue;
      float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      for (std::uint32_t q = 0; q < ranks; ++q) {
        const float4 v =
            s.partial[(q * slot_quads + static_cast<std::uint32_t>(u - qb)) * 128 + tid];
        sum.x += v.x;
        sum.y += v.y;
        sum.z += v.z;
        sum.w += v.w;
      }
      stage_element<C, T>(staging, 4 * u, tid, sum.x * factor[4 * u]);
      stage_element<C, T>(staging, 4 * u + 1, tid, sum.y * factor[4 * u + 1]);
      stage_element<C, T>(staging, 4 * u + 2, tid, sum.z * factor[4 * u + 2]);
      stage_element<C, T>(staging, 4 * u + 3, tid, sum.w * factor[4 * u + 3]);
    }
    // quad u holds rows [8u, 8u + 8) of D's tile: this rank stores the rows it summed
    named_barrier_sync(1, 128);
    store_rows<C, T>(p, staging, 8 * qb, 8 * qe, tid, n0);
  }
#else
  // NOTE: built for another target; fail loudly rather than return garbage.
  if (threadIdx.x == 0) printf("sm90_gemm_fp8_small_m_kernel needs sm_90a\n");
  __trap();
#endif
}

template <int MP, int RowsB, class T>
void launch_mp(const Params& p, unsigned tiles, unsigned ranks, cudaStream_t stream, bool overlap,
               bool promote) {
  constexpr std::size_t kBytes = kSmemBytes<MP, RowsB>;
  auto* kernel = promote
                     ? prepared_kernel<&sm90_gemm_fp8_small_m_kernel<MP, RowsB, T, true>>(kBytes)
                     : prepared_kernel<&sm90_gemm_fp8_small_m_kernel<MP, RowsB, T, false>>(kBytes);
  // NOTE: clusters of 8 are the portable maximum; nothing larger is asked for
  // NOTE: no cluster attribute for one CTA per tile (the kernel reads rank 0 of a cluster
  // of one): a cluster launch places CTAs differently (kernels/gemm/EXPERIMENTS.md)
  KernelLaunch l(tiles * ranks, kThreads, kSmemBytes<MP, RowsB>, stream);
  if (ranks > 1) l.cluster(ranks);
  if (overlap) l.overlap_previous_kernel();
  launch_kernel_ex(l, kernel, "sm90_gemm_fp8_small_m_kernel", p);
}

// The instantiation of M rounded up (MP) and D's type for a configuration of `rows_b` rows
// of B per CTA (smallm: 64, any MP; smallm128: 128, MP <= 64, the plan checked).
template <class T>
void launch_type(int mp, int rows_b, const Params& p, unsigned tiles, unsigned ranks,
                 cudaStream_t stream, bool overlap, bool promote) {
  constexpr int kWide = row(config::smallm128).block_n;
  constexpr int kNarrow = row(config::smallm).block_n;
  if (rows_b == kWide) {
    switch (mp) {
      case 8: launch_mp<8, kWide, T>(p, tiles, ranks, stream, overlap, promote); break;
      case 16: launch_mp<16, kWide, T>(p, tiles, ranks, stream, overlap, promote); break;
      case 32: launch_mp<32, kWide, T>(p, tiles, ranks, stream, overlap, promote); break;
      default: launch_mp<64, kWide, T>(p, tiles, ranks, stream, overlap, promote); break;
    }
    launched_config() = config::smallm128;
    return;
  }
  switch (mp) {
    case 8: launch_mp<8, kNarrow, T>(p, tiles, ranks, stream, overlap, promote); break;
    case 16: launch_mp<16, kNarrow, T>(p, tiles, ranks, stream, overlap, promote); break;
    case 32: launch_mp<32, kNarrow, T>(p, tiles, ranks, stream, overlap, promote); break;
    case 64: launch_mp<64, kNarrow, T>(p, tiles, ranks, stream, overlap, promote); break;
    default: launch_mp<128, kNarrow, T>(p, tiles, ranks, stream, overlap, promote); break;
  }
  launched_config() = config::smallm;
}

}  // namespace tmakit::detail::gemm_small_m

namespace tmakit::detail::gemm {

void launch_small_m(const GemmCall& call) {
  using namespace gemm_small_m;
  const GemmPlan& plan = call.plan;
  const int rows_b = row(plan.config).block_n;
  const int mp = small_m_padded(call.a.rows);
  const auto tiles = static_cast<unsigned>(plan.tiles);
  thread_local LastCall<gemm_small_m::Params> last;
  gemm_small_m::Params p = last.get(call.key, [&] {
    gemm_small_m::Params q{};
    q.a_map = cached_tensor_map(view_spec(call.a, DataType::uint8,
                                          {static_cast<std::uint32_t>(kBlockK),
                                           static_cast<std::uint32_t>(mp), 1},
                                          Swizzle::bytes128));
    q.b_map = cached_tensor_map(
        view_spec(call.b, DataType::uint8,
                  {static_cast<std::uint32_t>(kBlockK), static_cast<std::uint32_t>(rows_b), 1},
                  Swizzle::bytes128));
    q.d = call.d.data;
    q.d_row_elems = call.d.row_pitch() / 2;
    // (d.data is 16-byte aligned: check_arguments)
    q.d_vec = call.d.row_pitch() % 16 == 0 ? 1 : 0;
    q.m = static_cast<std::int32_t>(call.a.rows);
    q.n = static_cast<std::int32_t>(call.b.rows);
    q.k_blocks = static_cast<std::int32_t>((call.a.cols + kBlockK - 1) / kBlockK);
    q.prefetch_kblocks = plan.prefetch_k_blocks;
    return q;
  });
  p.scale = call.scale;
  const bool promote = call.key.accumulation == GemmAccumulation::promoted;
  const auto ranks = static_cast<unsigned>(plan.splits);
  if (call.d.type == DataType::bfloat16) {
    launch_type<__nv_bfloat16>(mp, rows_b, p, tiles, ranks, call.stream, call.key.overlap,
                               promote);
  } else {
    launch_type<__half>(mp, rows_b, p, tiles, ranks, call.stream, call.key.overlap, promote);
  }
}

}  // namespace tmakit::detail::gemm
