// One source's step in the generic pass of the CUDA wide engine (kernels/generic_pass.cu): the
// general model (belief observation, content expiry, every utility law but the empirical one) and
// every built-in policy (the static policy and lip included), from the shared model functions
// general_transition and policy_score, as the reference computes them. The device runs these
// functions; tests/test_generic_pass.cpp runs them on the host in the kernel's order (the pass
// applies epoch t-1's selection, then scores epoch t) against the reference engine.
#pragma once

#include <cstdint>

#include "crawleval/base/hd.hpp"
#include "crawleval/model/policy.hpp"
#include "crawleval/model/selection.hpp"

namespace crawleval {

/// The run's columns (device pointers on the GPU, host pointers in the host twin) and settings.
/// period and gain are nullptr unless the policy reads them (Problem::policy_periods,
/// policy_gains).
struct GenericPass {
  const SourceParams* params = nullptr;  ///< every source's constants (80 B)
  const double* x0 = nullptr;            ///< initial states (scored off the grid)
  const uint32_t* period = nullptr;
  const double* gain = nullptr;
  Policy policy = Policy::whittle;
  Observe observe = Observe::full;
  bool deterministic = true;
  UtilityDist utility = UtilityDist::exponential;  ///< never the empirical law (host table)
  uint64_t seed = 0;
  uint64_t first_id = 0;  ///< source i draws as first_id + i
  /// Source i's position in the run (ties, round robin): base + i. Nonzero for one process's
  /// shard of a run over several (keyed_rollout.hpp), whose source i draws as first_id + i too.
  uint64_t base = 0;
  uint64_t n = 0;           ///< the run's sources (every shard's)
  double multiplier = 0.0;  ///< lip's lambda*
  /// A score function's observation column (Problem::observe_column_applies: 1 = the source is
  /// fully observed), or nullptr: every source as `observe` says.
  const uint8_t* observed = nullptr;
};

/// The state of source i after epoch `epoch`'s selection (crawled or not): general_transition
/// with that epoch's draws.
struct GenericState {
  double x;
  uint32_t w;
};
CE_HD_INLINE GenericState generic_next(const GenericPass& g, uint64_t i, bool crawled,
                                       uint32_t replication, uint32_t epoch, double x, uint32_t w) {
  GenericState s{x, w};
  general_transition(&s.x, &s.w, crawled, epoch, g.deterministic, g.utility, g.seed, replication,
                     g.first_id + i, g.params[i]);
  return s;
}

/// The score of source i in state (x, w) at `epoch`; `pointer` is round robin's (the sources
/// crawled so far, modulo n).
CE_HD_INLINE double generic_score(const GenericPass& g, uint64_t i, uint32_t replication,
                                  uint32_t epoch, uint64_t pointer, double x, uint32_t w) {
  ScoreContext ctx{g.policy, g.observe, g.seed, replication, epoch, pointer, g.n};
  ctx.first_id = g.first_id - g.base;  // (policy_score draws for position p as first_id + p)
  ctx.multiplier = g.multiplier;
  return policy_score(ctx, g.base + i, x, w, g.x0[i], g.period ? g.period[i] : 0u,
                      g.gain ? g.gain[i] : 0.0, g.params[i]);
}

/// What a score function observes of source i in state (x, w) at `epoch`: the state itself where
/// the source is fully observed, else its expected value given the age (AgeState::value), as the
/// CPU function engine hands it (ScoreRequest::state).
CE_HD_INLINE double generic_seen(const GenericPass& g, uint64_t i, uint32_t epoch, double x,
                                 uint32_t w) {
  const bool full = g.observed ? g.observed[i] != 0 : g.observe == Observe::full;
  if (full) return x;
  double om_eta;
  return AgeState::value(w, epoch, g.x0[i], g.params[i], &om_eta);
}

/// One launch of the keyed pass (keyed_rollout.hpp): apply epoch `prev_epoch`'s selection `prev`
/// (when `apply`) and score epoch `epoch` (when `score`), or write what a score function observes
/// of it (when `observe`).
struct KeyedEpoch {
  Selection prev;
  uint64_t pointer = 0;  ///< round robin's (the last selection's stop, as window::finalize keeps)
  uint32_t replication = 0, prev_epoch = 0, epoch = 0;
  bool apply = false, score = false, observe = false;
};

/// generic_next and generic_score, as generic_keyed_step calls them (a kernel may give its
/// out-of-line copies of the same functions instead).
struct GenericSteps {
  CE_HD_INLINE static GenericState next(const GenericPass& g, uint64_t i, bool crawled,
                                        uint32_t replication, uint32_t epoch, double x,
                                        uint32_t w) {
    return generic_next(g, i, crawled, replication, epoch, x, w);
  }
  CE_HD_INLINE static double score(const GenericPass& g, uint64_t i, uint32_t replication,
                                   uint32_t epoch, uint64_t pointer, double x, uint32_t w) {
    return generic_score(g, i, replication, epoch, pointer, x, w);
  }
  CE_HD_INLINE static double seen(const GenericPass& g, uint64_t i, uint32_t epoch, double x,
                                  uint32_t w) {
    return generic_seen(g, i, epoch, x, w);
  }
};

/// Source i's part of a keyed launch, the same on the device and in its host twin: whether the
/// selection `e.prev` crawled it (by the key it was scored with, key[i], and its position), its
/// move, and its key for epoch e.epoch, written over the old one (or, with e.observe, what a score
/// function observes of it: seen[i], age[i], as the CPU function engine hands them). Returns the
/// reward it collects: its state before the move if crawled, else 0.0 (*crawled says which).
template <class Steps = GenericSteps>
CE_HD_INLINE double generic_keyed_step(const GenericPass& g, uint64_t i, const KeyedEpoch& e,
                                       double* x, uint32_t* w, uint64_t* key, double* seen,
                                       double* age, bool* crawled) {
  double xi = x[i];
  uint32_t wi = w[i];
  const bool c = e.apply && is_selected(key[i], g.base + i, e.prev);
  const double collected = c ? xi : 0.0;
  if (e.apply) {
    const GenericState s = Steps::next(g, i, c, e.replication, e.prev_epoch, xi, wi);
    xi = s.x, wi = s.w;
    x[i] = xi, w[i] = wi;
  }
  if (e.score) key[i] = score_key(Steps::score(g, i, e.replication, e.epoch, e.pointer, xi, wi));
  if (e.observe) {
    seen[i] = Steps::seen(g, i, e.epoch, xi, wi);
    age[i] = AgeState::age(wi, e.epoch);
  }
  *crawled = c;
  return collected;
}

}  // namespace crawleval
