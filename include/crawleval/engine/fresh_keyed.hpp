// One GPU per MPI rank for the freshness model: the contract of fresh_engine.hpp over the ranks of
// an MPI run, each rank stepping and scoring its part of the URLs on a device, the selection under
// the host caps and the sums taken by the CPU engine's agent (FreshRun, fresh_rollout.cpp) and
// its epoch layer, as on the CPU. Every number of ranks gives one process's crawled sets and
// numbers, bit for bit: a URL's state and key do not depend on the rank that holds it, and the
// sums are the CPU engine's chunk sums (kFoldChunk URLs, left to right), folded in global order.
// Against the CPU backend the crawled sets are the same in every test (the device's log, exp and
// expm1 differ from glibc's in the last bits, so a near-tie could in principle go the other way)
// and the numbers agree within rounding, as one GPU's do; the host twin, on the host's functions,
// gives the CPU engine's bits.
//
// How. Every epoch, one launch over the rank's URLs (a FreshKeyedPass) applies the previous
// epoch's crawled flags (1 B per URL up the bus), steps every URL (fresh_step), writes its key for
// the new epoch (fresh_score, or nutch-adaptive's due flag and key) and sums the freshness,
// penalty and cost per chunk. The keys come to the host (8 B per URL down the bus), where the
// agent's selection (the crowded hosts' top m, then the budgeted prefix by the epoch layer's radix
// select) finds the crawled flags over every rank. With a score function the launch writes what
// the function sees (the ages and the missed changes of the completely observed URLs, 8 B per URL)
// and the function scores on the rank's host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "crawleval/base/hd.hpp"
#include "crawleval/engine/fresh_engine.hpp"
#include "crawleval/model/freshness.hpp"
#include "crawleval/model/nutch.hpp"
#include "crawleval/model/selection.hpp"

namespace crawleval {

/// One launch of a freshness pass: with `apply`, epoch prev_epoch's crawled flags applied and every
/// URL stepped through it; with `score`, every URL's key for `epoch`; with `observe`, what a score
/// function sees at `epoch`.
struct FreshKeyedEpoch {
  uint32_t replication = 0;  ///< the draws' replication index
  uint32_t prev_epoch = 0, epoch = 0;
  bool apply = false, score = false, observe = false;
};

/// What the per-URL step reads and writes, for one rank's rows (host or device pointers): the
/// plan's constants, the policy's rates, the run's settings and the URLs' state.
struct FreshKeyedColumns {
  const FreshParams* params = nullptr;
  const uint8_t* complete = nullptr;
  const double* cost = nullptr;
  const double* rho = nullptr;     ///< a rate-based policy's crawl rates (null otherwise)
  const double* coin_p = nullptr;  ///< a coin policy's probabilities (null otherwise)
  const double* period = nullptr;  ///< the steady start's periods (null: a fresh start)
  FreshPolicy policy = FreshPolicy::index;
  Objective objective = Objective::binary;
  double epoch_length = 1.0;
  double nutch_start = 30.0, nutch_max = 365.0;
  uint64_t seed = 0;
  uint64_t first = 0;     ///< the draws' id of row 0 (FreshPopulation::first)
  bool coins = false;     ///< coin_policy(policy)
  bool nutch = false;     ///< nutch-adaptive: `schedule` is its per-URL state
  bool function = false;  ///< a score function's run: launches observe instead of scoring
  uint32_t* age = nullptr;
  uint32_t* changes = nullptr;
  uint8_t* want = nullptr;
  NutchState* schedule = nullptr;
};

/// One URL's part of one launch's sums.
struct FreshKeyedSums {
  double fresh, penalty, cost;
  bool saturated;
};

/// Row j's state at a replication's start, as the CPU engine's: age and missed changes 0, or drawn
/// by the steady start; no coin won; nutch-adaptive's schedule fresh. True where the steady start
/// had to be cut (fresh_steady_start).
CE_HD_INLINE bool fresh_keyed_start(const FreshKeyedColumns& c, std::size_t j,
                                    uint32_t replication) {
  uint32_t a = 0, n = 0;
  bool cut = false;
  if (c.period && !c.complete[j])
    cut = !fresh_steady_start(c.period[j], c.params[j], c.seed, replication, c.first + j, &a, &n);
  c.age[j] = a, c.changes[j] = n, c.want[j] = 0;
  if (c.nutch) c.schedule[j] = nutch_start_state(c.nutch_start, c.seed, replication, c.first + j);
  return cut;
}

/// Row j's part of one launch (FreshKeyedEpoch), the CPU engine's step and score for it: what the
/// crawl found (nutch-adaptive's schedule) and its cost, the sampled epoch, then the key (and
/// nutch-adaptive's due flag) or what a score function sees. `Custom::score(view, params,
/// epoch_length)` is `--policy custom`'s score (the header CRAWLEVAL_FRESH_POLICY, which only the
/// files built with it can name: custom_fresh_policy.hpp).
template <class Custom>
CE_HD_INLINE FreshKeyedSums fresh_keyed_step(const FreshKeyedColumns& c, std::size_t j,
                                             const FreshKeyedEpoch& e, bool crawled, uint64_t* key,
                                             uint8_t* due, uint32_t* seen_age,
                                             uint32_t* seen_changes) {
  FreshKeyedSums s{0.0, 0.0, 0.0, false};
  const bool complete = c.complete[j] != 0;
  const uint64_t id = c.first + j;
  if (e.apply) {
    if (crawled) {
      if (c.nutch) nutch_crawled(c.changes[j] > 0, e.prev_epoch, c.nutch_max, &c.schedule[j]);
      s.cost = c.cost[j];
    }
    const FreshEpoch f =
        fresh_step(crawled, complete, c.coins, c.coin_p ? c.coin_p[j] : 0.0, c.params[j], c.seed,
                   e.replication, id, e.prev_epoch, &c.age[j], &c.changes[j], &c.want[j]);
    s.fresh = f.fresh, s.penalty = f.penalty, s.saturated = f.saturated;
  }
  if (e.score) {
    if (c.nutch) {
      due[j] = nutch_due(c.schedule[j], e.epoch);
      key[j] = score_key(nutch_score(c.schedule[j], e.epoch, c.params[j]));
    } else {
      const FreshView v{complete, c.age[j], c.changes[j], c.want[j] != 0, c.rho ? c.rho[j] : 0.0};
      key[j] = score_key(c.policy == FreshPolicy::custom
                             ? Custom::score(v, c.params[j], c.epoch_length)
                             : fresh_score(c.policy, c.objective, v, c.params[j], c.epoch_length,
                                           c.seed, e.replication, id, e.epoch));
    }
  }
  if (e.observe) seen_age[j] = c.age[j], seen_changes[j] = complete ? c.changes[j] : 0u;
  return s;
}

namespace detail {

/// The device side of one rank's freshness epochs (kernels/fresh_keyed_pass.cu) or its host twin.
class FreshKeyedPass {
 public:
  virtual ~FreshKeyedPass() = default;
  /// A replication's start (fresh_keyed_start for every row); returns the steady starts cut.
  virtual uint64_t start(uint32_t replication) = 0;
  /// One launch (fresh_keyed_step for every row). With e.apply: `crawled` (n flags, host memory)
  /// are prev_epoch's, and chunk c's sums (rows c kFoldChunk .., left to right from 0.0) go to
  /// sums[c] (freshness), sums[chunks + c] (penalty) and sums[2 chunks + c] (cost); with e.score,
  /// every row's key into keys and (nutch-adaptive) its due flag into due; with e.observe, the
  /// ages and seen changes. Returns the URL-epochs saturated (FreshRolloutOutput::saturated).
  virtual uint64_t run(const FreshKeyedEpoch& e, const uint8_t* crawled, double* sums,
                       uint64_t* keys, uint8_t* due, uint32_t* age, uint32_t* seen) = 0;
};

/// The pass's settings for `plan`'s rows of pop, pointing at plan's and pop's host columns (a
/// device pass uploads them and points its copy at the device's); the state pointers are null.
/// `function`: a score function's run (the policy's scores are not computed).
FreshKeyedColumns fresh_keyed_columns(const FreshPopulation& pop, const FreshConfig& cfg,
                                      FreshPolicy policy, const FreshPlan& plan, bool function);

/// The host twin: fresh_keyed_step row by row, the chunk sums left to right.
std::unique_ptr<FreshKeyedPass> host_fresh_keyed_pass(const FreshPopulation& pop,
                                                      const FreshConfig& cfg, FreshPolicy policy,
                                                      const FreshPlan& plan, bool function);

}  // namespace detail

/// Why a freshness pass cannot run with these settings ("" where it can): the learning
/// variant (its estimates are the CPU engine's), more than 2^32 - 2 URLs on a rank. (A device pass
/// also refuses `--policy custom` where the build leaves it out of the GPU engines:
/// cuda::fresh_policy_refusal.)
std::string fresh_keyed_refusal(const FreshPopulation& pop, const FreshConfig& cfg);

/// fresh_epochs (fresh_engine.hpp) with `pass` doing the rank's per-URL work: the same agent,
/// selection, observer and score-function calls, the same output. `user`: a score function on
/// the host (then `policy` is FreshPolicy::index and the pass was made with `function`).
FreshRolloutOutput fresh_keyed_epochs(const FreshPopulation& pop, const FreshConfig& cfg,
                                      FreshPolicy policy, const FreshPlan& plan,
                                      detail::FreshKeyedPass& pass,
                                      const FreshObserver* observer = nullptr, Comm* comm = nullptr,
                                      const FreshScoreFn* user = nullptr);

}  // namespace crawleval
