// One source's step in the CPU backend's wide engine (cpu_backend.cpp, which every MPI rank runs on
// its shard): the transition after a selection and the score of the new state, keyed by global
// ids so that a shard computes the bits one process computes for the same source.
//
// `id` is the source's id in the whole population (round robin and ties order by it; the draws
// are keyed by the global id pr.first_id + id); `n` is the whole population's size.
#pragma once

#include <cstdint>

#include "crawleval/model/grid_ceiling.hpp"
#include "crawleval/model/policy.hpp"
#include "crawleval/model/problem.hpp"

namespace crawleval::detail {

/// The deterministic Whittle engines' state word: bits 0-28 the age eta on the index grid (x =
/// x_eta; saturates at kEtaMax), bit 29 kGeneral (the state is off the grid: a given or full start
/// not crawled yet, scored by the general whittle_index). The wide engine keeps its class in bits
/// 30-31.
namespace det_word {
constexpr uint32_t kClassShift = 30;
constexpr uint32_t kStateMask = (1u << kClassShift) - 1;
constexpr uint32_t kGeneral = 1u << 29;
static_assert(kGeneral == kGridAgeBound, "grid_index_ceiling bounds the ages below kGeneral");
constexpr uint32_t kEtaMax = kGeneral - 16;

/// The word of an initial state from its grid position (GridTracker::init) and AgeState word.
inline uint32_t initial(uint32_t eta, uint32_t age) {
  return eta <= 1 && eta == age ? eta : kGeneral;
}
/// The next word (w without class bits): 1 after a crawl, one step older otherwise, but where
/// the passive step left the state as it was (`moved` false: a fixed point of fl(alpha x) + u,
/// which no later step leaves). There the age stays the one at which the state got there, so
/// L_eta(x) stays what it was, a function of the state as the reference's general index is: with
/// the age going on, eta ((1 - alpha) x - u) moved it by eta times that bracket's rounding residue,
/// and sources of equal constants that converged at different ages no longer tied.
inline uint32_t next(uint32_t w, bool crawled, bool moved) {
  const bool grows = !(w & kGeneral) & (w < kEtaMax) & moved;
  return crawled ? 1u : w + uint32_t(grows);
}
/// The index on the grid, L_eta(x) with u* (1 - alpha^eta) = x (the remark after Theorem 1),
/// for a word w without class bits; meaningless when w has kGeneral.
inline double grid_index(double x, uint32_t w, double alpha, double u, double inv_c) {
  return (x + double(w & (kGeneral - 1)) * ((1.0 - alpha) * x - u)) * inv_c;
}
}  // namespace det_word

/// The base model's transition (no expiry, full observation) of source `id` after epoch `prev`.
/// Stochastic: w0 is the epoch's first arrival word when the caller has it (arrival_words.hpp),
/// else nullptr. (Always inline: the engine's pass functions exceed GCC's inlining budget, and a
/// call per source cost the stochastic pass 9% more instructions.)
template <bool Det>
[[gnu::always_inline]] inline double base_next(double x, bool crawled, std::size_t i, uint64_t id,
                                               uint32_t prev, const Problem& pr,
                                               uint32_t replication, const uint32_t* w0 = nullptr) {
  const ParamColumns& c = pr.params();
  if constexpr (Det) {
    return crawled ? c.drift[i] : c.alpha[i] * x + c.drift[i];
  } else {
    const SourceParams p = c.at_base(i);
    const uint64_t seed = pr.config.seed, global = pr.first_id + id;
    const double arrivals = sample_arrivals_below(
        p, c.no_arrival[i], w0 ? *w0 : first_arrival_word(seed, replication, global, prev),
        pr.config.utility, seed, replication, global, prev);
    return crawled ? arrivals : passive_next(x, arrivals, p);
  }
}

/// The base model's score of the state x of local source i (global id `id`) for policy P, where
/// the engine does not track the grid (Det Whittle on the grid uses det_word::grid_index).
template <Policy P, bool Unit>
inline double base_score(double x, std::size_t i, uint64_t id, const ScoreContext& ctx,
                         const Problem& pr) {
  if constexpr (P == Policy::whittle) {
    return whittle_index(x, pr.params().at_base(i));
  } else if constexpr (P == Policy::greedy) {
    return Unit ? x : x * (1.0 / pr.population->cost_of(i));
  } else if constexpr (P == Policy::round_robin) {
    return round_robin_score(id, ctx.pointer, ctx.n);
  } else {
    return random_score(ctx.seed, ctx.replication, ctx.first_id + id, ctx.epoch);
  }
}

/// The general model's score (belief observation, expiry, the policies with prepared columns).
inline double general_score(double x, uint32_t w, std::size_t i, uint64_t id,
                            const ScoreContext& ctx, const Problem& pr) {
  const uint32_t* periods = pr.policy_periods(ctx.policy);
  const double* gains = pr.policy_gains(ctx.policy);
  return policy_score(ctx, id, x, w, pr.initial_state()[i], periods ? periods[i] : 0u,
                      gains ? gains[i] : 0.0, pr.params().at(i));
}

}  // namespace crawleval::detail
