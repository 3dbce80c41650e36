// `crawleval fresh run --json`'s document (output.hpp), from fresh_evaluate's results.
#include <cmath>

#include "crawleval/engine/cuda_backend.hpp"
#include "crawleval/io/output.hpp"

namespace crawleval {

namespace {

nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

/// One policy's entry: the shared fields (policy_json) and the freshness model's metrics.
nlohmann::json fresh_policy_json(const FreshPolicyRun& run, const FreshConfig& cfg,
                                 const FreshRunOptions& a, const FreshRunResults& results) {
  const PolicyResult& r = run.result;
  nlohmann::json closed = nullptr;
  if (run.closed_form) {
    const RateCosts& rc = *run.closed_form;
    closed = {{"harmonic_penalty", number(rc.harmonic)},
              {"binary_staleness", number(rc.binary)},
              {"note",
               "Poisson crawling at the rates, continuous time (the papers' objective); the "
               "simulation schedules them in epochs"}};
  }
  return policy_json(r, cfg.epochs, a.with_bound ? &results.as_reward : nullptr,
                     "not computed (--no-bound)",
                     {{"freshness", summary_json(run.freshness)},
                      {"harmonic_penalty", summary_json(run.penalty)},
                      {"crawl_cost", summary_json(r.cost)},
                      {"closed_form", closed},
                      {"threads", run.threads}});
}

}  // namespace

nlohmann::json fresh_run_json(const FreshPopulation& pop, const FreshConfig& cfg,
                              const FreshRunOptions& a, const FreshRunResults& results,
                              double total_seconds) {
  const bool automatic = a.automatic_burn_in;
  nlohmann::json parameters = {
      {"budget", cfg.budget},
      {"epoch_length", cfg.epoch_length},
      {"host_cap", cfg.host_cap},
      {"objective", to_string(cfg.objective)},
      {"epochs", cfg.epochs},
      {"burn_in", automatic ? nlohmann::json("auto") : nlohmann::json(cfg.burn_in)},
      {"max_burn_in", automatic ? nlohmann::json(a.warm_up.max_burn_in) : nlohmann::json()},
      {"replications", cfg.replications},
      {"target_ci", a.target_ci > 0 ? nlohmann::json(a.target_ci) : nlohmann::json()},
      {"max_replications", a.target_ci > 0 ? nlohmann::json(a.max_replications) : nlohmann::json()},
      {"epsilon", cfg.epsilon},
      {"start", to_string(cfg.start)},
      {"learn", cfg.learn},
      {"relearn", cfg.relearn},
      {"prior", cfg.prior},
      {"nutch_start", cfg.nutch_start},
      {"nutch_max", cfg.nutch_max},
      {"seed", cfg.seed}};
  std::vector<PolicyResult> summaries;
  nlohmann::json policies = nlohmann::json::array();
  for (const FreshPolicyRun& run : results.runs) {
    summaries.push_back(run.result);
    policies.push_back(fresh_policy_json(run, cfg, a, results));
  }
  const bool gpu = a.backend == Backend::cuda;
  return report_json("fresh run",
                     {{"origin", pop.origin},
                      {"sources", results.counts.sources},
                      {"first_id", pop.first},
                      {"complete", results.counts.complete},
                      {"on_constrained_hosts", results.counts.constrained}},
                     std::move(parameters), to_string(a.backend),
                     gpu ? cuda::device_description() : "", a.comm ? a.comm->size() : 1, policies,
                     a.with_bound ? &results.as_reward : nullptr, "not computed (--no-bound)",
                     summaries, total_seconds);
}

}  // namespace crawleval
