// Human-readable tables, JSON results and per-epoch traces.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "crawleval/bound.hpp"
#include "crawleval/driver.hpp"
#include "crawleval/optimal.hpp"

namespace crawleval {

/// One row per policy: mean reward, 95% CI, crawl cost per epoch, time, throughput, and the gap
/// to the bound when there is one (bound may be nullptr).
void print_results_table(std::ostream& os, const Problem& problem,
                         const std::vector<PolicyResult>& results, const BoundResult* bound);

/// {"population": ..., "parameters": ..., "backend": ..., "policies": [...], "bound": ...,
///  "timings": ...}
nlohmann::json results_json(const Problem& problem, const std::vector<PolicyResult>& results,
                            Backend backend, const BoundResult* bound, double total_seconds);

nlohmann::json bound_json(const BoundResult& b);
void print_bound(std::ostream& os, const Problem& problem, const BoundResult& b);

nlohmann::json optimal_json(const Population& pop, double epoch_length, double budget,
                            const OptimalResult& r);
void print_optimal(std::ostream& os, const Population& pop, const OptimalResult& r);

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
