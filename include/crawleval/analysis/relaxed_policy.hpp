// The relaxed problem's own policies (research report, eqs. 4-5; the slides' "online dual descent
// type method for the relaxed control problem").
//
// The relaxation replaces the per-epoch budget sum_i C_i v_i(t) <= M by its long-run average
// (eq. 5) and prices it with a multiplier lambda (bound.hpp). At the multiplier lambda* that
// gives the bound every source is on its own: it crawls at age k when its index at x_k reaches
// lambda*, i.e. with its relaxed period k_i(lambda*) (model.hpp, relaxed_gain). No top-M
// selection couples the sources, so these policies are simulated source by source here, in the
// analysis layer, without the engines (whose epochs select a budgeted prefix).
//
// The average-budget policy. Periods jump at the multiplier: just below lambda* (lambda_lo) the
// crawl rate sum_i C_i / k_i exceeds M, just above (lambda_hi) it does not. A source whose period
// differs between the two ("tied": its index at some age equals lambda*) crawls surely from age
// k_i(lambda_hi) on, with probability p at the ages in [k_i(lambda_lo), k_i(lambda_hi)) (every age
// from k_i(lambda_lo) on when it never crawls above lambda*), never before; the others crawl at
// their period. p is the one probability (for every tied source) at which the long-run spend,
// sum_i C_i / E[K_i] over the renewal cycles K_i, is M exactly. Every cycle length used is
// optimal in source i's relaxed problem at lambda*, so the long-run reward, sum_i E[x_K_i] /
// E[K_i], equals the bound: it meets the budget on average, not every epoch (its worst epoch is
// reported). Worked example: the 4-source example with M = 1 has lambda* = u*_4 / C = 95.24 (the
// dual is flat below it; bound.hpp) with periods 2, 2, never, never above it: spend 1/2 + 1/2 = 1
// = M with p = 0, reward (x_2 of source 1 + x_2 of source 2) / 2 = 260.39 = the bound.
//
// The online dual descent. The slides give the method in one line, without its step size; this
// design is crawleval's: every epoch each source crawls when its index at its current age exceeds
// lambda_t (strictly), and then
//     lambda_(t+1) = lambda_t exp(s (t + 1)^(-1/2) clip((S_t - M) / M, -1, 1)),
// S_t the epoch's spend, s the step scale (1), lambda_0 half the largest x_cap / C (the top of the
// multiplier's range) unless given. It is a stochastic subgradient step on the dual D (D' = M -
// rate) taken in log lambda: the multiplier's scale is the rewards' and spans decades over a
// population, where additive steps sized for the largest index overshot lambda* by a hundred
// times (a synthetic population's); the clip keeps an epoch that crawls everything from throwing
// lambda decades away. The 1 / sqrt(t) steps make lambda_t converge to lambda*.
//
// Ages: a source crawled in epoch t is at age 1 in epoch t + 1 (state u = x_1); its start age is
// its initial state's grid age (Start::empty: 0; fresh: 1). Rewards are the deterministic model's
// x_k = u* (1 - alpha^min(k, E)), which is also the expected reward of a crawl at age k under
// belief observation of the stochastic model (where the bound holds).
#pragma once

#include <cstdint>
#include <vector>

#include "crawleval/model/problem.hpp"

namespace crawleval {

struct AverageBudgetPolicy {
  double lambda = 0.0;                      ///< lambda*: the bound's multiplier
  double lambda_lo = 0.0, lambda_hi = 0.0;  ///< the bracket lambda_lo < lambda* <= lambda_hi
  double bound = 0.0;                       ///< the Lagrangian bound at lambda*
  double budget = 0.0;                      ///< M
  double tie_probability = 1.0;             ///< p
  /// Relaxed periods at lambda_lo and lambda_hi (0: never crawled).
  std::vector<uint32_t> period_lo, period_hi;
  std::size_t tied = 0;  ///< sources whose period differs between them
  double reward = 0.0;   ///< the exact long-run reward per epoch (renewal-reward)
  double spend = 0.0;    ///< the exact long-run spend per epoch (M, or sum C where that is less)
};

/// The policy of the header comment, with its exact long-run reward and spend. Needs a problem the
/// bound applies to (the deterministic model, or belief observation; InputError otherwise).
AverageBudgetPolicy average_budget_policy(const Problem& problem);

/// A simulation of the average-budget policy: problem.config's replications of burn_in + epochs
/// epochs (the tie coins keyed by seed, replication, source and epoch), every source on its own.
struct AverageBudgetRun {
  /// Per epoch, 95% CI over replications (the mean itself when the replications are copies).
  double mean_reward = 0.0, ci_low = 0.0, ci_high = 0.0;
  double mean_spend = 0.0;   ///< per epoch, over every measured epoch
  double worst_spend = 0.0;  ///< the largest spend of any measured epoch
  double over_budget = 0.0;  ///< the fraction of measured epochs that spend more than M
  std::vector<double> replication_reward, replication_spend;
};
AverageBudgetRun simulate_average_budget(const Problem& problem, const AverageBudgetPolicy& policy);

struct DualDescentConfig {
  uint64_t epochs = 10000;
  double step = 1.0;     ///< s
  double lambda0 = 0.0;  ///< lambda_0 (0: half the largest x_cap / C)
  uint64_t every = 1;    ///< record every `every` epochs
};
struct DualDescentRun {
  std::vector<double> epoch, lambda, lambda_average, spend_average, reward_average;
  double lambda_star = 0.0;  ///< the offline multiplier (bound.hpp)
  double bound = 0.0;
  double final_lambda = 0.0;
  /// Over the second half of the run: the mean multiplier, the mean reward and spend per epoch,
  /// the largest epoch spend.
  double late_lambda_average = 0.0, late_reward = 0.0, late_spend = 0.0, late_worst_spend = 0.0;
};
/// The online dual descent of the header comment (deterministic: no draws).
DualDescentRun dual_descent(const Problem& problem, const DualDescentConfig& cfg);

}  // namespace crawleval
