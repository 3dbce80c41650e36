// The GPU's reference selection: cub::DeviceRadixSort of every (key, id) pair, then the budget
// walk. Slow and allocating; the windowed select (window_select.cuh) is tested against it.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "crawleval/model/selection.hpp"

namespace crawleval::cuda::detail {

/// The selection of selection.hpp over device keys and fixed-point weights (nullptr: unit costs)
/// with a fixed-point limit. Synchronises the stream.
Selection select_by_full_sort(const uint64_t* keys, const unsigned long long* weight, std::size_t n,
                              unsigned long long limit, cudaStream_t stream);

}  // namespace crawleval::cuda::detail
