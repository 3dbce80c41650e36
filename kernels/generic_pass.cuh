// The generic pass of the wide regime: every built-in policy on the general model (belief
// observation, content expiry, the static policy, lip, every utility law but the empirical one)
// at any N, one source per item from the shared model functions (generic_step.hpp), feeding the
// same windowed selection as the fused passes (epoch_kernels.cu), which stay the fast path of the
// base model. See generic_pass.cu.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "epoch_kernels.cuh"

namespace crawleval::cuda::detail {

/// `from_array`: the scoring launch of a score function's epoch (scores read from
/// EpochLaunch::user_scores; no transition), else the pass that moves every source (and scores it
/// with policy_score when EpochLaunch::score is set).
/// Blocks of the generic pass (every SM busy, at most one per tile).
uint32_t generic_blocks(bool unit, bool from_array, uint64_t tiles);
/// Steps 1-2 and the transitions of one epoch (a.generic set): one launch per epoch, two for a
/// score function (from_array false, then true).
void launch_generic_epoch(bool unit, bool from_array, const EpochLaunch& a, uint32_t blocks,
                          cudaStream_t stream);
/// Step 2's fallback pass over the stored states or the function's scores (returns at once
/// unless the window missed).
void launch_generic_fallback(bool unit, bool from_array, const EpochLaunch& a, uint32_t blocks,
                             cudaStream_t stream);
/// Step 4's tie tile (returns at once unless the stop lies in the tie group).
void launch_generic_tie_tile(bool unit, bool from_array, const EpochLaunch& a, cudaStream_t stream);

}  // namespace crawleval::cuda::detail
