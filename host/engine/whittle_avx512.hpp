// The stochastic model with AVX-512: the general Whittle index (model.hpp's whittle_index,
// Theorem 1) of eight sources of the base model at once, and the wide engine's whole pass built on
// it (for the Whittle policy, and for greedy, whose score is the state). The engines score every
// source's continuous state every epoch, and one log1p and one expm1 per source were most of the
// epoch's arithmetic.
//
// The same IEEE operations in the same order as the scalar code (no fused multiply-add), and
// SLEEF's deterministic log1p and expm1, which return the same bits eight wide as one at a time
// (model.hpp's index_log1p): the scores are the scalar index's bit for bit, and the pass's states,
// classes and rewards the scalar pass's (tests/test_cpu_backend.cpp:
// WhittleIndexEightWideEqualsScalar, StochasticVectorPassEqualsScalarPass). Compiled for AVX-512
// by function attribute; call it only where avx512_pass_available().
//
// Bytes per source and epoch of the pass: x (8 + 8), class (1 + 1), and the columns no_arrival,
// alpha, u*, mu T, 1 - alpha and 1/C (48): 66 B; lambda T and xi only where the epoch has an
// arrival.
#pragma once

#include <algorithm>
#include <cstddef>

#include "crawleval/problem.hpp"
#include "crawleval/rng.hpp"
#include "det_whittle_avx512.hpp"

namespace crawleval::detail {

/// Most sources whittle_index_block takes at once.
inline constexpr std::size_t kIndexBlock = 256;

/// out[j] = whittle_index(x[j], c.at_base(first + j)) for j < count <= kIndexBlock: eight at a
/// time, the last count % 8 one at a time.
void whittle_index_block(const double* x, const ParamColumns& c, std::size_t first,
                         std::size_t count, double* out);

/// The same for any count: with AVX-512 where `vector`, else one at a time.
inline void whittle_index_run(const double* x, const ParamColumns& c, std::size_t first,
                              std::size_t count, bool vector, double* out) {
  if (!vector) {
    for (std::size_t j = 0; j < count; ++j) out[j] = whittle_index(x[j], c.at_base(first + j));
    return;
  }
  for (std::size_t j = 0; j < count; j += kIndexBlock)
    whittle_index_block(x + j, c, first + j, std::min(kIndexBlock, count - j), out + j);
}

/// One pass of the stochastic base model with unit costs over part of a chunk: the Whittle policy,
/// or greedy (the state is the score).
struct StochasticPass {
  double* x;
  uint8_t* cls;  // the class of every source (window_select.hpp)
  const ParamColumns* c;
  ApplyRule rule;
  window::Plan plan;
  UtilityDist utility;
  uint64_t seed;
  uint32_t replication, prev;  // the draws' replication; the epoch whose arrivals are drawn
  bool apply, score;           // apply the previous selection; score and classify the new state
  bool greedy;                 // score x (greedy with unit costs) instead of the Whittle index
  uint64_t first_id = 0;       // Problem::first_id: source i draws as first_id + i
};

/// The wide engine's pass for the stochastic model, Whittle or greedy policy, unit costs, over
/// blocks of up to kIndexBlock sources of [lo, hi), eight at a time: apply the previous selection
/// (rewards added in source order), draw the arrivals (the first Philox word of eight sources at
/// once; the logarithms only where the first uniform says the epoch has an arrival), move the
/// states, score them with whittle_index_block (greedy: the score is the state), classify them and
/// record them in the thread's pass of `sel`. The scalar pass's numbers bit for bit. Stops where
/// fewer than eight sources remain and returns that position, for the scalar pass to go on from.
/// Only where avx512_pass_available().
std::size_t stochastic_whittle_avx512(const StochasticPass& p, std::size_t lo, std::size_t hi,
                                      WindowSelector& sel, WindowSelector::Pass& ps, double* reward,
                                      double* spent);

}  // namespace crawleval::detail
