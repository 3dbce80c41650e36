// The freshness model's analyses: the papers' crawl-rate schedulers (their rates and closed-form
// costs) and the Lagrangian bound.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "crawleval/model/fresh_config.hpp"

namespace crawleval {

/// R = M / T crawl cost per unit time. lambda_crawl: the harmonic-penalty optimum (NeurIPS 2019,
/// Algorithms 1-3) with one multiplier for IO and CO: mu D / (rho (rho + D)) = lambda C and
/// p = min(1, mu / (lambda C D)); lambda_crawl_approx: IO rates proportional to importance (Prop.
/// 9), CO probabilities as lambda_crawl's, the split of R between them by a golden-section search
/// on the harmonic penalty; binary_lambda_crawl: Azar et al.'s binary-freshness optimum rho =
/// max(epsilon R / sum C, sqrt(mu D / (lambda C)) - D), every source treated as IO; uniform: R /
/// sum C; proportional: rho proportional to D. Costs generalise the papers' unit-cost formulas.
FreshRates fresh_rates(const FreshPopulation& pop, const FreshConfig& cfg, FreshPolicy policy);

/// fresh_rates over every rank's columns: each rank passes its shard (which starts on a
/// kFoldChunk boundary, as shard_of's do) and gets its shard's rates; the sums are folded over the
/// ranks in global order, so that every rank count gives one process's rates to the bit. A
/// collective.
FreshRates fresh_rates(const FreshColumns& columns, const FreshConfig& cfg, FreshPolicy policy,
                       Comm& comm);
namespace detail {
/// LambdaCrawlApprox's split by golden section on the harmonic penalty (the original solver, about
/// 40 penalty evaluations each re-solving LambdaCrawl's CO multiplier): fresh_rates uses it where
/// the split is degenerate; the tests compare fresh_rates' faster solve with it. R = M / T; fills
/// out->rho and out->p (sized to the population).
void lambda_crawl_approx_golden(const FreshPopulation& pop, double R, FreshRates* out);
}  // namespace detail

RateCosts rate_costs(const FreshPopulation& pop, const FreshRates& rates, FreshPolicy policy);
/// rate_costs over every rank's columns and rates (as fresh_rates' collective form).
RateCosts rate_costs(const FreshColumns& columns, const FreshRates& rates, FreshPolicy policy,
                     Comm& comm);

/// The Lagrangian bound on the objective per epoch (normalised like the rollout): the best
/// average of the relaxed problem, min over lambda >= 0 of lambda M + sum_i v_i(lambda), with the
/// politeness caps dropped (they only restrict the crawler). v_i is exact for IO sources (both
/// objectives) and for CO sources under the binary objective; under the harmonic objective a CO
/// source enters with its least possible penalty and free crawls (valid, looser; `note` says so).
/// For the harmonic objective the bound is a lower bound on the penalty.
struct FreshBound {
  std::optional<double> value;  ///< freshness upper bound, or penalty lower bound
  std::string why_absent;       ///< when there is no value
  std::string note;             ///< how the bound was relaxed beyond the budget, if it was
  double multiplier = 0.0;
  /// Each source's crawl period in the relaxed optimum (epochs; 0: never crawled; 1 for CO
  /// sources, crawled at their first epoch after a change): the steady start's ages. Of sources
  /// first .. first + period.size() - 1: every source in one process, the rank's shard over MPI.
  std::vector<double> period;
  std::size_t first = 0;
  uint64_t evaluations = 0;  ///< of the dual: passes over the population
};
/// `comm`: the MPI ranks (every rank passes its part, fresh_shard, and the same settings; null: one
/// process). Each rank evaluates the relaxed problem of its part and of a block of the crowded
/// hosts, whose members on other ranks send it their columns once (exchange_items, comm.hpp); the
/// dual's sums are folded over the ranks in one process's order, so every rank gets one process's
/// value and multiplier to the bit, and its own part's periods. A collective.
FreshBound fresh_bound(const FreshPopulation& pop, const FreshConfig& cfg, Comm* comm = nullptr);

}  // namespace crawleval
