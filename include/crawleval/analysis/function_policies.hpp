// Policies from the papers given as score functions (rollout.hpp's ScoreFn), run by the function
// engine (function_rollout) beside the built-in policies of policy.hpp. A native engine path for
// one of them needs its score written as a __host__ __device__ function of (state, age, params)
// in policy.hpp: the mixed policies a per-source observation flag beside the AgeState word, the
// adaptive policy per-source estimator sums (two doubles) updated in the transition pass.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "crawleval/engine/rollout.hpp"
#include "crawleval/model/problem.hpp"

namespace crawleval {

/// The learning paper's index for content expiry (its eqs. 4-5): Theorem 1's formula with
/// u_i = (1 - alpha_i)(1 - alpha_i^E_i) lambda_i xi_i / mu_i, i.e. with u* replaced by the
/// saturated expected state x_cap = u* (1 - alpha^E), applied to the observed state (under belief
/// the expected state, AgeState::value). crawleval's own expiry index (docs/model.md, model.hpp's
/// AgeState::index) keeps u* and saturates at age E instead. Without expiry both are Theorem 1's.
double expiry_paper_index(double x, const SourceParams& p);
ScoreFn expiry_paper_index_policy(const Problem& problem);

/// Which sources the policy sees fully (1) or as a belief (0): the population's observe column,
/// else every source as the run's --observe says.
std::vector<uint8_t> observed_fully(const Problem& problem);

/// The problem the function engine runs these policies on: the same one with full observation
/// and the observe column not applied (ScoreRequest::state is then the true state; each policy
/// reads only what its sources reveal: belief sources' states only when they are crawled).
/// Rewards do not depend on the setting. Every other score function (whittle_expiry_paper, a
/// user's) runs on the problem itself and is handed what each source's observation shows.
Problem function_engine_problem(const Problem& problem);

/// Mixed observation (research report, section 7: "some sources are observed and others are
/// not"): `base` (whittle or greedy) scores a fully observed source by its state, a belief source
/// by its expected state given the time since its last crawl, with the engines' own functions
/// (AgeState::value and index): with every source full (or belief) it is the built-in policy under
/// --observe full (belief), bit for bit. Run it on function_engine_problem(problem).
ScoreFn mixed_observation_policy(const Problem& problem, Policy base);

/// The adaptive Whittle policy (research report, section 9: "the adaptive version when some
/// parameters (e.g., the rate of new information arrival) need to be estimated online"). The
/// decay mu and the costs are known; lambda xi (all the index needs, through u* = lambda xi / mu)
/// is estimated per source from what the policy observes:
///   belief source: a crawl at age k collects X with E[X] = u* (1 - alpha^k), so
///     u*^ = sum X / sum (1 - alpha^k) over its crawls (a ratio estimator, unbiased in the limit);
///   full source: every epoch reveals U = X' - alpha X (X' after a crawl), E[U] = u, so
///     u*^ = mean(U) / (1 - alpha).
/// Before anything is seen every source scores +inf (crawled first, lower ids first); a source
/// whose observations are all empty so far gets the largest estimate of any source divided by
/// 1 + its observations' weight (optimism that fades; without it a source whose first crawls came
/// back empty, likely with rare arrivals, would never be crawled again). Then Theorem 1's index
/// with u*^ + b (belief: at the estimated expected state), where the exploration bonus
/// b = optimism * best * sqrt(log(2 + t) / (1 + n_i)), n_i the source's observations, keeps every
/// source crawled now and then (like UCB's): without it an estimate that came out low early can
/// starve its source of the crawls that would correct it. Measured on rare, large arrivals
/// (Lambda = 2.5, xi x 100, belief, M = 1, 40 replications of 10^4 epochs): without the bonus
/// 254.6 +- 7.6 against the known-parameter policy's 260.0 +- 0.5 (some replications stay far
/// below for good); with 0.05, 259.6 +- 0.5. On Table 1 it costs 0.1% (260.08 against 260.31).
/// Estimates restart with every replication. Run it on function_engine_problem(problem). Content
/// expiry: refused.
ScoreFn adaptive_whittle_policy(const Problem& problem, double optimism = 0.05);

/// The mean reward per epoch of a function policy over windows of `window` epochs, every epoch
/// from the start (burn-in included), with 95% CIs over replications (NaN where the replications
/// give none: one replication, or replications that are copies): a learning curve.
struct LearningCurve {
  std::vector<double> epoch;  ///< the window's first epoch
  std::vector<double> mean, ci_low, ci_high;
  std::vector<double> replication_reward;  ///< each replication's mean over every epoch
  /// Why the windows' intervals are NaN whatever their spread, and why an interval of the
  /// replications' means over every epoch would not be trusted ("" where it would): utilities too
  /// heavy-tailed for the draws a window, or a run, makes (stats.hpp, heavy_tail_reason).
  std::string window_no_interval, run_no_interval;
};
LearningCurve learning_curve(const Problem& problem, const ScoreFn& score, const std::string& label,
                             uint64_t window);

}  // namespace crawleval
