// Programmatic dependent launch, the device side (PTX ISA, "griddepcontrol"; sm_90). A kernel
// launched with KernelLaunch::overlap_previous_kernel may start while the kernel before it
// in the stream is still running.
#pragma once

#include "tmakit/ptx/common.hpp"

namespace tmakit::ptx {

// griddepcontrol.wait;
// Waits until every grid this one depends on has completed and its memory operations are
// visible. Issue it before the first global access that may touch what those grids read or
// write (every thread that makes such accesses). Returns at once when the kernel was not
// launched as a dependent. An L2 prefetch (cp.async.bulk.prefetch) may go before it: it only
// fills the L2, through which every later load reads, whatever those grids write.
__device__ __forceinline__ void griddepcontrol_wait() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
}

// griddepcontrol.launch_dependents;
// Lets the next kernel in the stream, if launched as a dependent, start once every CTA of
// this grid has issued this or exited (one thread of a CTA issuing it is enough; later ones
// change nothing). It says nothing about this grid's memory: the dependent still waits
// (griddepcontrol_wait) for this grid to complete.
__device__ __forceinline__ void griddepcontrol_launch_dependents() {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

}  // namespace tmakit::ptx
