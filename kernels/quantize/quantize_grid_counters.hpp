// Rule Q6's grid counters (README.md beside this file, "The tensor recipe's amax"): the words
// where a cooperative tile kernel's CTAs meet for the tensor's amax. An uncaptured call uses
// its stream's, in the per-stream workspace the GEMM's split-K calls keep; a call captured
// into a CUDA graph takes a slot of its own. Host code on the CUDA runtime.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace tmakit::detail::quantize {

// kGridCounters zeroed words for a rule-Q6 call on `stream` on the current device, or null
// where none can be had, and the call takes rule Q1: a device whose SMs hold fewer CTAs than
// the plan counts, a call captured before any uncaptured rule-Q6 call on its device (or after
// the device's last captured-call slot is taken), no device memory.
std::uint32_t* grid_counters_or_null(cudaStream_t stream);

}  // namespace tmakit::detail::quantize
