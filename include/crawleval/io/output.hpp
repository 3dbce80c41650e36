// Human-readable tables, JSON results and per-epoch traces.
//
// One JSON schema for `run` and `fresh run` (and the Python package's Result):
//   {"tool", "version", "command", "context", "population", "parameters", "backend", "processes",
//    "policies": [{"name", "backend", "mean_reward", "ci95_low", "ci95_high", "ci95_half_width",
//                  "std_error", "ci_method", "ci_samples", "ci_batch_epochs",
//                  "ci_lag1_correlation", "replications", "target_ci_reached", "epochs",
//                  "burn_in", "warm_up", "mean_cost_per_epoch", "gap_to_bound",
//                  "relative_gap_to_bound", "seconds", "warm_up_seconds", "loop_seconds",
//                  "comm_seconds", "source_epochs_per_second", "replication_rewards",
//                  "reward_series", "metrics", "absent"}],
//    "bound", "warnings", "timings", "absent"}
// and, where a policy reported it, "stochastic_index" (add_policy_notes). Every other key is
// always there; a value that cannot exist is null with the reason under the
// object's "absent" (JSON has no inf or NaN). "population", "parameters" and "metrics" hold the
// model's own fields; everything else means the same in both models ("mean_reward" of the
// freshness model is its objective as a reward: the freshness, or minus the harmonic penalty).
// "source_epochs_per_second" counts the measured epochs only where the backend times them
// (PolicyResult::rate_of_measured_epochs), else every epoch of "loop_seconds".
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "crawleval/analysis/bound.hpp"
#include "crawleval/analysis/optimal.hpp"
#include "crawleval/evaluate/driver.hpp"
#include "crawleval/evaluate/fresh_evaluate.hpp"
#include "crawleval/evaluate/policy_registry.hpp"

namespace crawleval {

/// One row per policy: mean reward, 95% CI, burn-in, crawl cost per epoch, time, throughput, and
/// the gap to the bound when there is one (bound may be nullptr); then how the intervals were
/// made and every warning.
void print_results_table(std::ostream& os, const Problem& problem,
                         const std::vector<PolicyResult>& results, const BoundResult* bound,
                         const EvaluateOptions& options = {});

/// A footer line for every policy whose mean lies beyond the bound (a negative gap), which no
/// policy passes in the long run: within its 95% interval of the bound it is sampling noise
/// around a policy at the bound; with the whole interval beyond, the measured epochs are not
/// the long run. `beyond`: how the table names the better side ("above" for a reward, "below"
/// for a penalty). Nothing when no gap is negative or there is no bound.
void print_gap_notes(std::ostream& os, const std::vector<PolicyResult>& results,
                     const BoundResult* bound, const char* beyond = "above");

/// The footer lines that say how each policy's interval was made ("CI: ...") and why one is
/// missing, and the warnings ("warning: POLICY: ..."), shared by the run and fresh-run tables;
/// `epochs`: the measured epochs per replication.
void print_interval_notes(std::ostream& os, const std::vector<PolicyResult>& results,
                          uint64_t epochs);

/// Like Google Benchmark's context: version, commit, build type, compiler, date (UTC), host name,
/// CPU model and count, load average, backend and device (null when not a GPU).
nlohmann::json context_json(const std::string& backend, const std::string& device = "");

/// Adds "version" and "context" to a JSON object (every JSON the command line writes has them).
void add_context(nlohmann::json& j, const std::string& backend, const std::string& device = "");

/// `run`'s JSON (the schema above).
nlohmann::json results_json(const Problem& problem, const std::vector<PolicyResult>& results,
                            Backend backend, const BoundResult* bound, double total_seconds,
                            const EvaluateOptions& options = {});

/// What the run's policies reported (policy_registry.hpp), added to `run`'s JSON: with
/// whittle_numerical, "stochastic_index": {"grid", "classes", "seconds", "indexable"}.
void add_policy_notes(nlohmann::json& j, const PolicyNotes& notes);

/// The schema's policy object. `bound`: the bound the gaps are taken to (nullptr: none, and
/// `no_bound` says why); `metrics`: the model's own measures.
nlohmann::json policy_json(const PolicyResult& r, uint64_t epochs, const BoundResult* bound,
                           const std::string& no_bound, nlohmann::json metrics);

/// The schema's top level around `policies`; bound nullptr: "bound" is null, `no_bound` why.
nlohmann::json report_json(const std::string& command, nlohmann::json population,
                           nlohmann::json parameters, const std::string& backend,
                           const std::string& device, int processes, nlohmann::json policies,
                           const BoundResult* bound, const std::string& no_bound,
                           const std::vector<PolicyResult>& results, double total_seconds);

/// A Summary as {"mean", "ci95_low", "ci95_high", "ci95_half_width", "samples", "method",
/// "no_interval"}.
nlohmann::json summary_json(const Summary& s);

nlohmann::json bound_json(const BoundResult& b);
void print_bound(std::ostream& os, const Problem& problem, const BoundResult& b);

nlohmann::json optimal_json(const Population& pop, double epoch_length, double budget,
                            const OptimalResult& r);
void print_optimal(std::ostream& os, const Population& pop, const OptimalResult& r);

/// `crawleval fresh run --json`'s document.
nlohmann::json fresh_run_json(const FreshPopulation& pop, const FreshConfig& cfg,
                              const FreshRunOptions& options, const FreshRunResults& results,
                              double total_seconds);

/// Writes JSON as an OutputFile (output_file.hpp); `option` names it in messages.
void write_json(const std::string& path, const nlohmann::json& j,
                const std::string& option = "--json");

/// Writes the per-epoch trace of replication 0 of each policy, computed by the reference backend:
/// CSV columns policy,epoch,source,state,score,crawled,epoch_reward,running_average.
/// running_average is the mean epoch reward from epoch 0 to this epoch (burn-in included).
/// Refuses populations above 10,000 sources (InputError).
void write_trace(const std::string& path, const Problem& problem,
                 const std::vector<Policy>& policies);

}  // namespace crawleval
