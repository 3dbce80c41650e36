// The learners' and the relaxed policies' results as JSON (include/crawleval/io/learn_output.hpp).
#include "crawleval/io/learn_output.hpp"

#include <cmath>

#include "crawleval/evaluate/driver.hpp"

namespace crawleval {

namespace {
nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nullptr; }
}  // namespace

nlohmann::json lspe_report(const Population& pop, const LspeConfig& cfg, LspeExperiment* out) {
  RunConfig rc;
  rc.budget = 1.0;
  rc.epochs = 1000;
  rc.burn_in = 100;
  const Problem pr = make_problem(pop, rc);
  const LspeExperiment ex = lspe_experiment(pr, cfg);
  // The Lagrangian bound at the learner's own crawl rate: the best any policy crawling that many
  // sources per step on average can earn (the randomised rule's budget holds only on average).
  double matched_bound = 0.0;
  if (ex.mean_crawls > 0.0 && ex.mean_crawls <= pop.total_cost()) {
    RunConfig bc = rc;
    bc.budget = ex.mean_crawls;
    matched_bound = compute_bound(make_problem(pop, bc), Backend::cpu).bound;
  }
  const double whittle = evaluate(pr, Policy::whittle, Backend::cpu).reward.mean;
  // The top-N0 policy is compared with the Whittle policy at the same budget N0.
  const uint32_t n0 = cfg.operating == LspeOperating::top ? cfg.top : 1;
  double whittle_n0 = whittle;
  if (n0 != 1) {
    RunConfig wc = rc;
    wc.budget = double(n0);
    whittle_n0 = evaluate(make_problem(pop, wc), Policy::whittle, Backend::cpu).reward.mean;
  }
  nlohmann::json j = {
      {"origin", pop.origin},
      {"steps", cfg.steps},
      {"kappa", cfg.kappa},
      {"gamma", cfg.gamma},
      {"replications", cfg.replications},
      {"seed", cfg.seed},
      {"operating", to_string(cfg.operating)},
      {"top", cfg.top},
      {"critic", to_string(cfg.critic)},
      {"start_thresholds", cfg.start},
      {"mean_reward", ex.mean_reward},
      {"ci95", {number_or_null(ex.ci_low), number_or_null(ex.ci_high)}},
      {"mean_reward_second_half", ex.mean_reward_last},
      {"ci95_second_half", {number_or_null(ex.last_ci_low), number_or_null(ex.last_ci_high)}},
      {"mean_crawls_per_step", ex.mean_crawls},
      {"crawls_ci95", {number_or_null(ex.crawls_ci_low), number_or_null(ex.crawls_ci_high)}},
      {"finite", ex.finite},
      {"replication_rewards", ex.reward},
      {"replication_crawls", ex.crawls},
      {"whittle_known_parameters_m1", whittle},
      {"whittle_known_parameters_top", whittle_n0},
      {"untrained_mean_reward", ex.untrained_mean},
      {"untrained_ci95",
       {number_or_null(ex.untrained_ci_low), number_or_null(ex.untrained_ci_high)}},
      {"untrained_replication_rewards", ex.untrained_reward},
      {"budget_matched_bound", matched_bound},
      {"threshold_gap", ex.mean_threshold_gap}};
  if (out) *out = ex;
  return j;
}

nlohmann::json relaxed_report(const Population& pop, const RunConfig& cfg,
                              const DualDescentConfig* dual, DualDescentRun* curve) {
  const Problem pr = make_problem(pop, cfg);
  const AverageBudgetPolicy pol = average_budget_policy(pr);
  const AverageBudgetRun sim = simulate_average_budget(pr, pol);
  nlohmann::json j = {{"origin", pop.origin},
                      {"sources", pr.size()},
                      {"budget", cfg.budget},
                      {"lambda", pol.lambda},
                      {"lambda_bracket", {pol.lambda_lo, pol.lambda_hi}},
                      {"bound", pol.bound},
                      {"tied", pol.tied},
                      {"tie_probability", pol.tie_probability},
                      {"reward", pol.reward},
                      {"spend", pol.spend},
                      {"period_lo", pol.period_lo},
                      {"period_hi", pol.period_hi},
                      {"epochs", cfg.epochs},
                      {"burn_in", cfg.burn_in},
                      {"replications", cfg.replications},
                      {"seed", cfg.seed},
                      {"simulated_reward", sim.mean_reward},
                      {"simulated_ci95", {sim.ci_low, sim.ci_high}},
                      {"simulated_spend", sim.mean_spend},
                      {"worst_epoch_spend", sim.worst_spend},
                      {"over_budget_fraction", sim.over_budget},
                      {"replication_rewards", sim.replication_reward},
                      {"replication_spends", sim.replication_spend}};
  if (dual) {
    DualDescentConfig dc = *dual;
    dc.epochs = cfg.epochs;
    const DualDescentRun dd = dual_descent(pr, dc);
    j["dual_descent"] = {{"epochs", dc.epochs},
                         {"step", dc.step},
                         {"lambda0", dc.lambda0},
                         {"final_lambda", dd.final_lambda},
                         {"late_lambda_average", dd.late_lambda_average},
                         {"late_reward", dd.late_reward},
                         {"late_spend", dd.late_spend},
                         {"late_worst_spend", dd.late_worst_spend}};
    if (curve) *curve = dd;
  }
  return j;
}

}  // namespace crawleval
