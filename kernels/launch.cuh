// Launch geometry: grid sizes depend only on the problem size and the device, so grid-stride
// loops visit sources in the same order (and reduce rewards in the same order) run after run.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>

#include "cuda_check.cuh"

namespace crawleval::cuda::detail {

/// Number of SMs of the current device (queried once).
inline int sm_count() {
  static const int count = [] {
    int dev = 0, sms = 0;
    CE_CUDA_TRY(cudaGetDevice(&dev));
    CE_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    return sms;
  }();
  return count;
}

/// Blocks for a grid-stride loop over n items: enough to fill the device (32 blocks per SM), no
/// more than the items need.
inline int grid_for(std::size_t n, int threads) {
  const std::size_t needed = (n + std::size_t(threads) - 1) / std::size_t(threads);
  return int(std::max<std::size_t>(1, std::min<std::size_t>(needed, std::size_t(sm_count()) * 32)));
}

}  // namespace crawleval::cuda::detail
