// Policy scores, written once for every backend. A policy is a score per source; the selection
// (selection.hpp) crawls the budgeted prefix of the (score desc, id asc) order.
#pragma once

#include <cstdint>

#include "crawleval/base/hd.hpp"
#include "crawleval/model/lip.hpp"
#include "crawleval/model/model.hpp"
#include "crawleval/model/problem.hpp"
#include "crawleval/model/rng.hpp"

namespace crawleval {

/// Round robin as a score: sources pointer, pointer+1, ... (cyclically) come first.
/// (pointer < n and id < n: one comparison instead of a modulo.)
CE_HD_INLINE double round_robin_score(uint64_t id, uint64_t pointer, uint64_t n) {
  return -double(id >= pointer ? id - pointer : id + n - pointer);
}

/// What a score may depend on besides the source: the epoch, the round-robin pointer, the draws.
struct ScoreContext {
  Policy policy;
  Observe observe;
  uint64_t seed;
  uint32_t replication;
  uint32_t epoch;
  uint64_t pointer;
  uint64_t n;
  /// The global id of the population's source 0 (Population::first_id): source i draws as
  /// first_id + i; ties and round robin order by i, the same order.
  uint64_t first_id = 0;
  /// The Lagrangian index's multiplier lambda* (Problem::lip_multiplier).
  double multiplier = 0.0;
};

/// The score of source i in the general model (any observation, expiry, every policy):
///   x: its true state; w: its AgeState word (age since the last crawl, or off-grid);
///   x0: its initial state (used off the grid); period, gain: its relaxed period (0 = never) and
///   gain (Problem::policy_periods, policy_gains: the static policy's periods, the Lagrangian
///   index's periods and gains).
/// Under belief the policy sees AgeState::value(w, epoch, x0) instead of x: the expected state
/// given the time since the last crawl. The slides' greedy baseline, "crawl the largest
/// lambda xi / mu (1 - exp(-mu T_lastcrawl))", is greedy under belief.
CE_HD_INLINE double policy_score(const ScoreContext& c, uint64_t i, double x, uint32_t w, double x0,
                                 uint32_t period, double gain, const SourceParams& p) {
  switch (c.policy) {
    case Policy::whittle:
    case Policy::greedy: {
      double seen = x, om_eta = 0.0;
      if (c.observe == Observe::belief) seen = AgeState::value(w, c.epoch, x0, p, &om_eta);
      if (c.policy == Policy::greedy) return seen * p.inv_cost;
      return c.observe == Observe::belief ? AgeState::index(w, seen, om_eta, p)
                                          : whittle_index(x, p);
    }
    case Policy::round_robin:
      return round_robin_score(i, c.pointer, c.n);
    case Policy::random:
      return random_score(c.seed, c.replication, c.first_id + i, c.epoch);
    case Policy::static_rate:
      return period ? AgeState::age(w, c.epoch) / double(period) : 0.0;
    case Policy::lip: {
      const LipSource q{gain, period};
      // On the index grid where the relaxed source's state is its age: under belief, and with
      // content expiry (whose relaxation is in ages; in the deterministic model the state is x_k
      // exactly); else from the state seen.
      if (!(w & AgeState::kOffGrid) && (c.observe == Observe::belief || p.expiry))
        return lip_index_grid(w, p, q, c.multiplier);
      double seen = x, om_eta;
      if (c.observe == Observe::belief) seen = AgeState::value(w, c.epoch, x0, p, &om_eta);
      return lip_index(seen, p, q, c.multiplier);
    }
  }
  return 0.0;
}

/// The content that leaves a passive source this epoch under expiry: the arrivals of epoch
/// `epoch - E`, once the state holds E epochs of content (age >= E); 0 otherwise.
CE_HD_INLINE double expiring_arrivals(uint32_t w, uint32_t epoch, bool deterministic,
                                      UtilityDist utility, uint64_t seed, uint32_t replication,
                                      uint64_t source, const SourceParams& p) {
  if (!p.expiry || (w & AgeState::kOffGrid) || w < p.expiry) return 0.0;
  return deterministic ? drift(p)
                       : sample_arrivals(p, utility, seed, replication, source, epoch - p.expiry);
}

/// One source's transition in the general model (eq. 2-3 / 19, with expiry): X' = U if crawled,
/// else alpha X + U minus the content that expires; the AgeState word follows. The arrivals are
/// those of `epoch`, keyed like every draw. Shared by the reference, the CPU backend's general
/// path and the GPU tall kernel.
CE_HD_INLINE void general_transition(double* x, uint32_t* w, bool crawled, uint32_t epoch,
                                     bool deterministic, UtilityDist utility, uint64_t seed,
                                     uint32_t replication, uint64_t source, const SourceParams& p) {
  const double arrivals =
      deterministic ? drift(p) : sample_arrivals(p, utility, seed, replication, source, epoch);
  if (crawled) {
    *x = arrivals;
  } else {
    const double expired =
        expiring_arrivals(*w, epoch, deterministic, utility, seed, replication, source, p);
    *x = passive_next_expiring(*x, arrivals, expired, p);
  }
  *w = AgeState::next(*w, crawled);
  // Deterministic expiry: from age E on the state is x_cap = u* (1 - alpha^E) exactly. The
  // recursion lands a few ulps off it, and a state just below x_cap would be scored as one that
  // still grows (whittle_index's saturation test), unlike the same source under belief.
  if (deterministic && p.expiry && !(*w & AgeState::kOffGrid) && *w >= p.expiry) *x = p.x_cap;
}

}  // namespace crawleval
