// `crawleval fresh run` as a library call: every policy simulated (warm-up, measured run,
// summaries), the Lagrangian bound, and the results in the CLI's JSON. The command line prints its
// table from it and the Python package returns it, so the two cannot drift apart.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "crawleval/analysis/fresh_rates.hpp"
#include "crawleval/analysis/warm_up.hpp"
#include "crawleval/engine/fresh_engine.hpp"
#include "crawleval/engine/fresh_keyed.hpp"
#include "crawleval/evaluate/driver.hpp"

namespace crawleval {

/// A policy given as a score function (fresh_evaluate): its name in the results, the function,
/// and where it comes in the results among the built-in policies.
struct FreshUserPolicy {
  std::string name;
  /// Makes the run's score function, afresh before every run (the burn-in's pilot, the measured
  /// run, every batch of --target-ci), so that no run carries memory into the next.
  std::function<FreshScoreFn()> make;
  std::size_t position = 0;  ///< its index in the results (0: first)
  /// The same as a function of device arrays, for the CUDA backend in one process (empty: one
  /// GPU refuses it; a GPU per MPI rank calls `make`'s function on each rank's host).
  std::function<cuda::DeviceFreshScoreFn()> make_device;
  /// Whether the function reads FreshScoreRequest::rate, the learning variant's estimates: the
  /// learning variant runs only such functions (one that ignores them would run as without it).
  bool sees_estimates = false;
};

struct FreshRunOptions {
  std::vector<FreshPolicy> policies;
  /// Users' score functions, on the CPU engine or the reference (in one process or over comm's
  /// ranks), on one GPU where they have make_device, on a GPU per rank on each rank's host; under
  /// the learning variant those that read its estimates (fresh_evaluate refuses the others with
  /// the reason).
  std::vector<FreshUserPolicy> functions;
  /// cpu, reference or cuda (resolve_fresh_backend).
  Backend backend = Backend::cpu;
  bool automatic_burn_in = true;  ///< MSER-5 per policy (cfg.burn_in otherwise)
  WarmUpOptions warm_up;
  bool with_bound = true;  ///< the bound in the results (computed anyway for a steady start)
  /// > 0: replications are added (in batches, each with draws of its own) until the objective's
  /// 95% interval over the replications is within target_ci times its mean, or max_replications
  /// are run (PolicyResult::target_reached says which). 0: cfg.replications.
  double target_ci = 0.0;
  uint32_t max_replications = 1000;
  /// Per policy and epoch (burn-in included), replication by replication: the crawled ids
  /// (may be null).
  const FreshObserver* observer = nullptr;
  /// The MPI ranks that share the runs (fresh_rollout's comm: each passes its part of the
  /// population, fresh_shard), null in one process.
  Comm* comm = nullptr;
};

/// One policy's run: the shared PolicyResult (the objective as the reward), the freshness and
/// the harmonic penalty with their intervals, the rate-based policies' closed forms.
struct FreshPolicyRun {
  PolicyResult result;
  Summary freshness, penalty;
  std::optional<RateCosts> closed_form;
  std::vector<double> replication_freshness, replication_penalty, replication_cost;
  int threads = 1;  ///< the engine's
};

/// A run's population in numbers, over every rank's part.
struct FreshCounts {
  uint64_t sources = 0, complete = 0, constrained = 0;  ///< rows, CO rows, rows flagged constrained
};
/// A collective over `comm`'s ranks (each passing its part; null: one process).
FreshCounts fresh_counts(const FreshPopulation& pop, Comm* comm);

struct FreshRunResults {
  FreshCounts counts;  ///< of the whole run (every rank's part)
  FreshBound bound;
  BoundResult as_reward;  ///< the bound as an upper bound on the objective as a reward
  std::vector<FreshPolicyRun> runs;
};

/// The backend a `--backend` word resolves to for these settings and `policies` (auto: the GPU
/// when there is one and it runs them); InputError for an unknown word, cuda with a policy it does
/// not run (cuda::fresh_policy_refusal), with --learn or without a device.
Backend resolve_fresh_backend(const std::string& backend, const FreshConfig& cfg,
                              const std::vector<FreshPolicy>& policies = {});

/// A number in the freshness tables: fixed with `prec` decimals below 1e9, 4-digit scientific
/// above, "inf", "-inf" or "n/a".
std::string fresh_fmt(double v, int prec);

/// Runs every policy of `options` on `pop` (cfg already validated: validate_fresh_config).
/// `on_policy` (may be empty) is called after each policy with the bound as a reward, e.g. to
/// print its row.
FreshRunResults fresh_evaluate(
    const FreshPopulation& pop, const FreshConfig& cfg, const FreshRunOptions& options,
    const std::function<void(const FreshPolicyRun&, const BoundResult&)>& on_policy = {});

/// `steady_period`: fresh_bound's periods for the steady start of pop's rows (computed when null
/// and needed). `comm`: the ranks whose parts make up the run (null: one process), over which the
/// rates, totals and hosts are taken (a collective).
FreshPlan make_fresh_plan(const FreshPopulation& pop, const FreshConfig& cfg, FreshPolicy policy,
                          const std::vector<double>* steady_period = nullptr, Comm* comm = nullptr);

/// make_fresh_plan, then the CPU engine's loop (fresh_epochs), or with `reference` the literal
/// reference's (fresh_reference; one process only), with the rates re-solved for the learning
/// variant, and the rate-based policy's closed-form costs. `user`: a score function in place of
/// the policy's scores (policy FreshPolicy::index; under the learning variant it is handed the
/// estimated rates).
FreshRolloutOutput fresh_rollout(const FreshPopulation& pop, const FreshConfig& cfg,
                                 FreshPolicy policy, bool reference = false,
                                 const FreshObserver* observer = nullptr,
                                 const std::vector<double>* steady_period = nullptr,
                                 Comm* comm = nullptr, const FreshScoreFn* user = nullptr);

/// Makes a rank's freshness pass (fresh_keyed.hpp) for a plan of pop's rows: a device's
/// (device_fresh_pass) or the host twin (detail::host_fresh_keyed_pass). `function`: a score
/// function's run.
using FreshPassMaker = std::function<std::unique_ptr<detail::FreshKeyedPass>(
    const FreshPopulation& pop, const FreshConfig& cfg, FreshPolicy policy, const FreshPlan& plan,
    bool function)>;
/// The maker of cuda::fresh_keyed_pass, on this process's current device.
FreshPassMaker device_fresh_pass();

/// fresh_rollout with each rank's per-URL work done by the pass `make` gives (a GPU per MPI rank:
/// fresh_keyed_epochs), over comm's ranks or in one process. InputError where
/// fresh_keyed_refusal() is not empty. `user`: a score function on the host (policy
/// FreshPolicy::index).
FreshRolloutOutput fresh_rollout_keyed(const FreshPopulation& pop, const FreshConfig& cfg,
                                       FreshPolicy policy, const FreshPassMaker& make,
                                       const FreshObserver* observer = nullptr,
                                       const std::vector<double>* steady_period = nullptr,
                                       Comm* comm = nullptr, const FreshScoreFn* user = nullptr);

/// The same on the GPU (cuda::fresh_epochs; one process, no learning variant); `user`: a score
/// function of device arrays in place of the policy's scores (policy FreshPolicy::index).
FreshRolloutOutput fresh_rollout_cuda(const FreshPopulation& pop, const FreshConfig& cfg,
                                      FreshPolicy policy, const FreshObserver* observer = nullptr,
                                      const std::vector<double>* steady_period = nullptr,
                                      const cuda::DeviceFreshScoreFn* user = nullptr);

}  // namespace crawleval
