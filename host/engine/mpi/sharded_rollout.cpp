// The rollout contract of rollout.hpp over the ranks of an MPI run, each rank holding a
// contiguous range of global ids: MPI as a layer over the CPU backend's wide engine, which runs on
// every rank with its selection and reward folds shared through the epoch layer
// (epoch_collective.hpp, window_select.hpp): the same additions, in the same order, as one
// process, at every population size. Also the sharded problem's set-up (its global facts).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <limits>

#include "crawleval/base/error.hpp"
#include "crawleval/engine/epoch_collective.hpp"
#include "crawleval/engine/sharded.hpp"
#include "crawleval/model/policy.hpp"
#include "crawleval/select/window_select.hpp"

namespace crawleval {

Problem make_sharded_problem(const Population& local, const RunConfig& cfg, const Shard& shard,
                             Comm& comm, ColumnSet columns) {
  collectively(comm, [&] {
    CE_EXPECTS(local.size() == shard.count, "internal: a shard of " + std::to_string(shard.count) +
                                                " sources holds " + std::to_string(local.size()));
    CE_EXPECTS(shard.total > 0, local.origin + ": the population is empty");
    if (shard.count > kMaxLocalSources)
      throw InputError(local_limit_error(local.origin, shard.count));
    CE_EXPECTS(shard.total < kMaxGlobalId, local.origin + ": at most 2^63 sources are supported");
    validate_sources(local, cfg);
  });
  // The global facts: total cost (kFoldChunk chunks folded in id order), unit costs, expiry.
  const std::size_t chunks = (local.size() + kFoldChunk - 1) / kFoldChunk;
  // Beside it, the clamped total S of the selection's integer costs (selection.hpp), folded the
  // same way, so every process count finds the same weights.
  const double cost_limit = budget_limit_finite(cfg.budget);
  // And the effective draws per epoch (the statistics' heavy-tail check), from sums of lambda T
  // xi and lambda T xi^2 with xi scaled by the largest.
  double xi_scale = 0.0;
  for (double v : local.xi) xi_scale = std::max(xi_scale, v);
  xi_scale = comm.max(xi_scale);
  std::vector<double> part(4 * chunks, 0.0);
  for (std::size_t i = 0; i < local.size(); ++i) {
    part[i / kFoldChunk] += local.cost_of(i);
    if (cost_limit > 0.0)
      part[chunks + i / kFoldChunk] += clamped_cost_term(local.cost_of(i), cost_limit);
    draws_terms(local.lambda[i] * cfg.epoch_length, local.xi[i], xi_scale,
                &part[2 * chunks + i / kFoldChunk], &part[3 * chunks + i / kFoldChunk]);
  }
  const std::vector<double> folded = fold_in_order(comm, part, 4, chunks);
  const double total_cost = folded[0], clamped_sum = folded[1];
  bool has_expiry = false;
  for (uint32_t e : local.expiry) has_expiry = has_expiry || e > 0;
  has_expiry = comm.any(has_expiry);
  // Checks that need the global facts, as validate() makes them (the same messages).
  collectively(comm, [&] {
    validate_budget(cfg, total_cost, shard.total, local.origin);
    if (!has_expiry) return;
    CE_EXPECTS(cfg.start != Start::given,
               local.origin +
                   ": content expiry needs --start empty, fresh or full (an initial state from "
                   "the x0 column has no age to expire from)");
    CE_EXPECTS(cfg.model == Model::deterministic || cfg.start == Start::empty,
               "content expiry in the stochastic model needs --start empty (the initial content "
               "must come from the simulated arrivals to expire)");
  });
  Problem pr;
  collectively(comm,
               [&] { pr = derive_problem(local, cfg, columns); });  // out of memory on one rank
  pr.unit_costs = comm.all(local.unit_costs());
  pr.has_expiry = has_expiry;
  pr.total_cost = total_cost;
  double local_min = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < local.size(); ++i) local_min = std::min(local_min, local.cost_of(i));
  pr.min_cost = -comm.max(-local_min);
  pr.arrivals_per_epoch = effective_draws(folded[2], folded[3]);
  pr.weights = fixed_budget(cfg.budget, clamped_sum, pr.unit_costs);
  pr.shard = shard;
  return pr;
}

RolloutOutput sharded_rollout(const Problem& pr, Policy policy, Comm& comm,
                              const EpochObserver* observer) {
  return cpu_rollout(pr, policy, observer, &comm);
}

}  // namespace crawleval
