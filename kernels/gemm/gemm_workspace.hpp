// The FP8 GEMM's split-K workspaces, one per stream (per device and stream handle, and per
// host thread for cudaStreamPerThread): calls on different streams share nothing; calls on
// one stream take turns, as the stream orders them (include/tmakit/kernels/gemm.hpp).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace tmakit::detail::gemm {

// A stream's split-K workspace: partial tiles and tile counters.
struct Workspace {
  float* partials = nullptr;
  std::size_t partial_bytes = 0;
  std::uint32_t* counters = nullptr;
  std::size_t counter_count = 0;
};

// The workspace of `stream` on the current device with at least these sizes, grown if needed.
// NOTE: a CUDA graph that captured a call keeps that call's buffers: a workspace outgrown
// later stays allocated (until gemm_fp8_release_workspace) so that replaying such a graph
// stays safe, and it grows to at least twice its size so that few are left. Growing needs
// cudaMalloc, which a stream capture forbids (it would invalidate the capture): a call
// captured on `stream` whose workspace must grow is refused, naming the stream, before any
// allocation. New counters are zeroed on `stream` itself (cudaMemsetAsync), so they are
// zero before the call's kernel reads them without any device-wide synchronisation; the
// kernel leaves them zero.
// Growing asks for twice the old size, and for just what the call needs where that fails.
// Where even that finds no device memory: tmakit::OutOfMemory (a CudaError of code
// cudaErrorMemoryAllocation) naming the bytes needed, for what, and the ways out (free
// memory, gemm_fp8_release_workspace, GemmTuning::splits = 1), with the runtime's last error
// cleared and the workspace as it was (or with its partials grown), so the same call succeeds
// once memory is back. It is thrown before the call launches anything: nothing is written.
Workspace stream_workspace(std::size_t partial_bytes, std::size_t counters, cudaStream_t stream);
// Whether `stream` is capturing a CUDA graph while its workspace on the current device holds
// less than these sizes, so that stream_workspace would refuse the call (gemm_fp8 then plans
// it without a split of K, where the plan chose the split).
bool capture_outgrows_workspace(std::size_t partial_bytes, std::size_t counters,
                                cudaStream_t stream);
// Frees the workspace `stream` holds on the current device (gemm_fp8_release_workspace).
void release_stream_workspace(cudaStream_t stream);

}  // namespace tmakit::detail::gemm
