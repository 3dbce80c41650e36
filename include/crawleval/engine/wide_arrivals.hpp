// The stochastic wide pass's arrivals, drawn by a kernel of their own before the scoring pass
// (kernels/epoch_kernels.cu, arrivals_kernel): which sources have arrivals in an epoch, and where
// each one's sum lies. The scoring pass then reads them instead of drawing, so its registers go to
// the index. __host__ __device__: the kernels and the host twin (tests/test_gpu_arrivals_twin.cpp)
// share it.
//
// Layout: one 32-bit word of flags per 32 consecutive sources (word i / 32, bit i % 32), and the
// sums of a word's flagged sources packed at the start of its 32 slots in lane order (slot
// 32 (i / 32) + the flagged sources below i in its word), so a warp reads its word's sums in one
// contiguous run.
#pragma once

#include <cstdint>

#include "crawleval/base/hd.hpp"
#include "crawleval/model/rng.hpp"

namespace crawleval::wide {

CE_HD_INLINE uint32_t popcount32(uint32_t v) {
#if defined(__CUDA_ARCH__)
  return uint32_t(__popc(v));
#else
  return uint32_t(__builtin_popcount(v));
#endif
}

/// Whether `source` may draw arrivals in `epoch` (its flag): it has a rate and sample_arrivals'
/// first uniform shows an arrival. A flag is a maybe: no_arrival_threshold is conservative, and a
/// source without utility (xi <= 0) is flagged alike; sample_arrivals then returns +0, the sum of
/// an unflagged source.
CE_HD_INLINE bool has_arrivals(double lambda_t, uint64_t seed, uint32_t replication,
                               uint64_t source, uint32_t epoch) {
  return lambda_t > 0.0 && !(uniform(first_arrival_word(seed, replication, source, epoch)) <=
                             no_arrival_threshold(lambda_t));
}

/// The slot of source i's sum, given its word of flags (bit i % 32 set).
CE_HD_INLINE uint64_t arrival_slot(uint64_t i, uint32_t flags) {
  const uint32_t below = (1u << (i & 31u)) - 1u;
  return (i & ~uint64_t(31)) + popcount32(flags & below);
}

}  // namespace crawleval::wide
