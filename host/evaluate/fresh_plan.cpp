// What every freshness engine runs on (make_fresh_plan: constants, the rate-based policies' rates,
// the steady start's periods, the budget's fixed point, the caps' hosts), and the engines run on it
// with the analyses they need around them: the learning variant's rates re-solved, the rate-based
// policies' closed-form costs.
#include "base/chunked_sum.hpp"
#include "crawleval/analysis/fresh_rates.hpp"
#include "crawleval/base/comm.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/engine/cuda_backend.hpp"
#include "crawleval/evaluate/fresh_evaluate.hpp"
#include "crawleval/model/selection.hpp"

namespace crawleval {

FreshPlan make_fresh_plan(const FreshPopulation& pop, const FreshConfig& cfg, FreshPolicy policy,
                          const std::vector<double>* steady_period, Comm* processes) {
  Comm& comm = processes ? *processes : solo_comm();
  FreshPlan plan;
  const std::size_t m = pop.size();
  plan.first = std::size_t(fresh_shard(pop, comm).first);
  plan.params.resize(m);
  plan.quiet.resize(m);
  for (std::size_t i = 0; i < m; ++i) {
    plan.params[i] =
        derive_fresh_params(pop.rate[i], pop.importance[i], pop.cost[i], cfg.epoch_length);
    plan.quiet[i] = fresh_quiet_words(plan.params[i]);
  }
  if (rate_based(policy)) plan.rates = fresh_rates(FreshColumns::of(pop, 0, m), cfg, policy, comm);
  if (cfg.start == FreshStart::steady) {
    // The bound's periods of these rows (fresh_bound over the ranks).
    if (steady_period) {
      CE_EXPECTS(steady_period->size() == m, "internal: steady periods of other sources");
      plan.steady_period = *steady_period;
    } else {
      plan.steady_period = fresh_bound(pop, cfg, processes).period;
    }
  }
  // The total importance and the budget's cost sum: kFoldChunk chunks folded in the run's order
  // (thread and rank count independent).
  const double total_w =
      detail::chunked_sum(comm, m, cfg.threads, [&](std::size_t i) { return pop.importance[i]; });
  plan.norm = total_w > 0.0 ? 1.0 / total_w : 0.0;
  plan.unit_costs = comm.all(pop.unit_costs());
  const double limit = budget_limit_finite(cfg.budget);
  const double clamped = plan.unit_costs || !(limit > 0.0)
                             ? 0.0
                             : detail::chunked_sum(comm, m, cfg.threads, [&](std::size_t i) {
                                 return clamped_cost_term(pop.cost[i], limit);
                               });
  plan.budget = fixed_budget(cfg.budget, clamped, plan.unit_costs);
  plan.weight.resize(m);
  for (std::size_t i = 0; i < m; ++i) plan.weight[i] = fixed_weight(pop.cost[i], plan.budget);
  plan.hosts = crowded_hosts(pop, cfg.host_cap, processes);
  return plan;
}

FreshRolloutOutput fresh_rollout(const FreshPopulation& pop, const FreshConfig& cfg,
                                 FreshPolicy policy, bool reference, const FreshObserver* observer,
                                 const std::vector<double>* steady_period, Comm* processes,
                                 const FreshScoreFn* user) {
  validate_fresh_config(pop, cfg, processes);
  Comm& comm = processes ? *processes : solo_comm();
  const FreshPlan plan = make_fresh_plan(pop, cfg, policy, steady_period, processes);
  const FreshColumns columns = FreshColumns::of(pop, 0, pop.size());
  std::optional<RateCosts> closed_form;
  if (rate_based(policy)) closed_form = rate_costs(columns, plan.rates, policy, comm);
  const FreshReplan replan = [&](const FreshColumns& believed) {
    return fresh_rates(believed, cfg, policy, comm);
  };
  CE_EXPECTS(!reference || comm.size() == 1,
             "internal: the freshness reference runs in one process");
  FreshRolloutOutput out =
      reference ? fresh_reference(pop, cfg, policy, plan, replan, observer, user)
                : fresh_epochs(pop, cfg, policy, plan, replan, observer, processes, user);
  out.closed_form = closed_form;
  return out;
}

FreshPassMaker device_fresh_pass() {
  return [](const FreshPopulation& pop, const FreshConfig& cfg, FreshPolicy policy,
            const FreshPlan& plan, bool function) {
    return cuda::fresh_keyed_pass(detail::fresh_keyed_columns(pop, cfg, policy, plan, function),
                                  pop.size());
  };
}

FreshRolloutOutput fresh_rollout_keyed(const FreshPopulation& pop, const FreshConfig& cfg,
                                       FreshPolicy policy, const FreshPassMaker& make,
                                       const FreshObserver* observer,
                                       const std::vector<double>* steady_period, Comm* processes,
                                       const FreshScoreFn* user) {
  validate_fresh_config(pop, cfg, processes);
  Comm& comm = processes ? *processes : solo_comm();
  collectively(comm, [&] {
    if (const std::string why = fresh_keyed_refusal(pop, cfg); !why.empty())
      throw InputError("--backend cuda: " + why);
  });
  const FreshPlan plan = make_fresh_plan(pop, cfg, policy, steady_period, processes);
  std::optional<RateCosts> closed_form;
  if (rate_based(policy))
    closed_form = rate_costs(FreshColumns::of(pop, 0, pop.size()), plan.rates, policy, comm);
  std::unique_ptr<detail::FreshKeyedPass> pass;
  collectively(comm, [&] { pass = make(pop, cfg, policy, plan, user != nullptr); });
  FreshRolloutOutput out =
      fresh_keyed_epochs(pop, cfg, policy, plan, *pass, observer, processes, user);
  out.closed_form = closed_form;
  return out;
}

FreshRolloutOutput fresh_rollout_cuda(const FreshPopulation& pop, const FreshConfig& cfg,
                                      FreshPolicy policy, const FreshObserver* observer,
                                      const std::vector<double>* steady_period,
                                      const cuda::DeviceFreshScoreFn* user) {
  CE_EXPECTS(cuda::fresh_policy_refusal(policy).empty(), cuda::fresh_policy_refusal(policy));
  validate_fresh_config(pop, cfg);
  const FreshPlan plan = make_fresh_plan(pop, cfg, policy, steady_period);
  FreshRolloutOutput out = cuda::fresh_epochs(pop, cfg, policy, plan, observer, user);
  if (rate_based(policy)) out.closed_form = rate_costs(pop, plan.rates, policy);
  return out;
}

}  // namespace crawleval
