// A kernel launch configuration with a 1-D cluster, for cudaLaunchKernelEx and
// cudaOccupancyMaxActiveClusters. Host-only; used by the kernels' launchers and the GPU tests.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace tmakit {

// A launch configuration with a 1-D cluster of `cluster_x` CTAs, for cudaLaunchKernelEx and
// cudaOccupancyMaxActiveClusters. Not copyable: `config.attrs` points at `attr`.
struct ClusterLaunch {
  cudaLaunchConfig_t config{};
  cudaLaunchAttribute attr{};
  ClusterLaunch(unsigned grid, unsigned threads, std::size_t smem_bytes, cudaStream_t stream,
                unsigned cluster_x) {
    config.gridDim = dim3(grid);
    config.blockDim = dim3(threads);
    config.dynamicSmemBytes = smem_bytes;
    config.stream = stream;
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = cluster_x;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    config.attrs = &attr;
    config.numAttrs = 1;
  }
  ClusterLaunch(const ClusterLaunch&) = delete;
  ClusterLaunch& operator=(const ClusterLaunch&) = delete;
};

}  // namespace tmakit
