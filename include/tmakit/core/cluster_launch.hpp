// Kernel launch configurations for cudaLaunchKernelEx (and cudaOccupancyMaxActiveClusters):
// a 1-D cluster, programmatic dependent launch, and a cooperative launch. Host-only; used by
// the kernels' launchers and the GPU tests.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>

namespace tmakit {

// A launch configuration with up to two attributes (each set at most once). Not copyable:
// `config.attrs` points at `attrs`.
struct KernelLaunch {
  static constexpr unsigned kMaxAttrs = 2;
  cudaLaunchConfig_t config{};
  cudaLaunchAttribute attrs[kMaxAttrs]{};
  KernelLaunch(unsigned grid, unsigned threads, std::size_t smem_bytes, cudaStream_t stream) {
    config.gridDim = dim3(grid);
    config.blockDim = dim3(threads);
    config.dynamicSmemBytes = smem_bytes;
    config.stream = stream;
    config.attrs = attrs;
    config.numAttrs = 0;
  }
  KernelLaunch(const KernelLaunch&) = delete;
  KernelLaunch& operator=(const KernelLaunch&) = delete;

  // Clusters of `cluster_x` CTAs along x.
  KernelLaunch& cluster(unsigned cluster_x) {
    cudaLaunchAttribute& a = next(cudaLaunchAttributeClusterDimension);
    a.val.clusterDim.x = cluster_x;
    a.val.clusterDim.y = 1;
    a.val.clusterDim.z = 1;
    return *this;
  }
  // Programmatic dependent launch: the kernel may start before the previous kernel in the
  // stream has finished (once that kernel's CTAs have all run `griddepcontrol.
  // launch_dependents` or exited). The kernel must run `griddepcontrol.wait`
  // (ptx::griddepcontrol_wait) before it touches global memory: that waits for the previous
  // grid to complete and its writes to be visible. With no kernel before it, nothing changes.
  KernelLaunch& overlap_previous_kernel() {
    cudaLaunchAttribute& a = next(cudaLaunchAttributeProgrammaticStreamSerialization);
    a.val.programmaticStreamSerializationAllowed = 1;
    return *this;
  }
  // A cooperative launch: every CTA of the grid is resident at once, or the launch is
  // refused (cudaErrorCooperativeLaunchTooLarge), so that the CTAs may wait for each other
  // (a grid-wide barrier) without waiting on CTAs that have no SM to run on.
  KernelLaunch& cooperative() {
    cudaLaunchAttribute& a = next(cudaLaunchAttributeCooperative);
    a.val.cooperative = 1;
    return *this;
  }

 private:
  // The next free attribute, given `id`; each attribute once (std::logic_error otherwise:
  // a programming error in a launcher, not a user's input).
  cudaLaunchAttribute& next(cudaLaunchAttributeID id) {
    for (unsigned i = 0; i < config.numAttrs; ++i) {
      if (attrs[i].id == id) throw std::logic_error("KernelLaunch: attribute set twice");
    }
    if (config.numAttrs >= kMaxAttrs) throw std::logic_error("KernelLaunch: too many attributes");
    cudaLaunchAttribute& a = attrs[config.numAttrs++];
    a.id = id;
    return a;
  }
};

// A launch configuration with a 1-D cluster of `cluster_x` CTAs.
struct ClusterLaunch : KernelLaunch {
  ClusterLaunch(unsigned grid, unsigned threads, std::size_t smem_bytes, cudaStream_t stream,
                unsigned cluster_x)
      : KernelLaunch(grid, threads, smem_bytes, stream) {
    cluster(cluster_x);
  }
};

}  // namespace tmakit
