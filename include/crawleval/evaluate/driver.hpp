// The rollout driver: picks a backend, evaluates policies, turns per-replication rewards into
// means with confidence intervals.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "crawleval/analysis/bound.hpp"
#include "crawleval/analysis/stats.hpp"
#include "crawleval/analysis/warm_up.hpp"
#include "crawleval/base/comm.hpp"
#include "crawleval/base/enum_names.hpp"
#include "crawleval/engine/cuda_backend.hpp"
#include "crawleval/engine/rollout.hpp"

namespace crawleval {

enum class Backend : int { automatic = 0, cpu = 1, reference = 2, cuda = 3 };
template <>
struct EnumNames<Backend> {
  static constexpr EnumName<Backend> table[] = {{Backend::automatic, "auto"},
                                                {Backend::cpu, "cpu"},
                                                {Backend::reference, "reference"},
                                                {Backend::cuda, "cuda"}};
};
inline const char* to_string(Backend b) { return enum_name(b); }
inline std::optional<Backend> parse_backend(const std::string& s) { return enum_parse<Backend>(s); }

/// auto -> cuda when this binary has the CUDA backend and a device is present, else cpu.
/// cuda without a usable device, or without the backend compiled in, throws InputError with
/// cuda::unavailable_message() (cuda_backend.hpp).
Backend resolve_backend(Backend requested);

struct PolicyResult {
  std::optional<Policy> policy;  ///< the built-in policy; none for a function policy
  std::string name;              ///< the policy's name in outputs
  Backend backend;
  Summary reward;  ///< mean reward per epoch with its 95% CI
  Summary cost;    ///< mean crawl cost spent per epoch
  WarmUp warm_up;  ///< the burn-in used, why, and the check of the measured window
  std::vector<double> replication_reward;
  uint32_t replications = 0;  ///< replications run (more than asked with a target CI)
  bool target_reached = true;
  double seconds = 0.0;       ///< wall time of the evaluation (warm-up pilots included)
  double loop_seconds = 0.0;  ///< of which the epoch loops
  /// N x (measured epochs) / their wall time (RolloutOutput::measured_seconds: no burn-in, no
  /// set-up); N (B + H) R / loop_seconds where the backend does not time the measured epochs.
  double source_epochs_per_second = 0.0;
  bool rate_of_measured_epochs = false;  ///< which of the two the rate is
  double comm_seconds = 0.0;             ///< sharded: of which inside collectives (rank 0)
};

struct EvaluateOptions {
  /// Relative 95% half-width to reach: replications are added (doubling) until
  /// half_width <= target_ci * |mean| or max_replications is reached. 0: run R replications.
  double target_ci = 0.0;
  uint32_t max_replications = 100000;
  /// With a resolved cuda backend, run on the CPU what the CUDA backend does not support
  /// (--backend auto); otherwise that is an error.
  bool fallback_to_cpu = false;
  /// automatic: choose the burn-in (warm_up.hpp) instead of the problem's config.burn_in.
  WarmUpOptions warm_up;
};

/// Runs one policy on a resolved backend (not automatic). R >= 2: CI over replications;
/// R = 1: batch means over the measured epochs (stats.hpp). With options.warm_up.automatic the
/// burn-in is chosen first by pilots of replication 0 (warm_up.hpp); an observer sees the
/// measured run only.
PolicyResult evaluate(const Problem& problem, Policy policy, Backend backend,
                      const EpochObserver* observer = nullptr, const EvaluateOptions& options = {});

/// evaluate() on any rollout function (the sharded run's, sharded.hpp): `run` is called with
/// the warm-up's pilots (one replication, no burn-in), the problem, then batches of further
/// replications for a target CI.
using RolloutFn = std::function<RolloutOutput(const Problem&)>;
PolicyResult evaluate_with(const Problem& problem, Policy policy, Backend backend,
                           const RolloutFn& run, const EvaluateOptions& options = {});

/// evaluate() for a policy given as a score function (function_rollout, on the CPU): the same
/// replications, target CI and statistics as a built-in policy; `name` names it in outputs.
/// `comm`: the processes of a sharded problem (function_rollout), null in one process. The
/// observer sees the measured run only, as evaluate()'s; `buffers`: function_rollout's.
/// With Backend::cuda (asked for, not chosen automatically: no device has run it yet) the host
/// function runs on a GPU per process (keyed_rollout.hpp): the device moves the sources, the
/// function scores what it observes on the host; InputError where that cannot run.
PolicyResult evaluate_function(const Problem& problem, const std::string& name,
                               const ScoreFn& score, const EvaluateOptions& options = {},
                               Comm* comm = nullptr, const EpochObserver* observer = nullptr,
                               const ScoreBuffers* buffers = nullptr,
                               Backend backend = Backend::cpu);

/// evaluate_function for a policy given as a function of device arrays, on the GPU
/// (cuda::function_rollout): the same replications, target CI and statistics; InputError where
/// the CUDA backend cannot run it (cuda::function_rollout).
PolicyResult evaluate_device_function(const Problem& problem, const std::string& name,
                                      const cuda::DeviceScoreFn& score,
                                      const EvaluateOptions& options = {},
                                      const EpochObserver* observer = nullptr);

/// The Lagrangian bound (bound.hpp) on the backend a run used: the reference's serial version,
/// the GPU's where the CUDA backend runs and the bound applies, else the CPU's.
BoundResult compute_bound(const Problem& problem, Backend backend);

/// evaluate() over comm's ranks (replications and target CI unchanged): every rank runs the CPU
/// backend on its shard (sharded_rollout, sharded.hpp), or, with Backend::cuda, a GPU
/// (keyed_rollout, keyed_rollout.hpp; InputError where it cannot run the policy or a rank has no
/// device).
PolicyResult evaluate_sharded(const Problem& problem, Policy policy, Comm& comm,
                              const EvaluateOptions& options = {}, Backend backend = Backend::cpu);

/// Dispatches to the backend's rollout.
RolloutOutput rollout(const Problem& problem, Policy policy, Backend backend,
                      const EpochObserver* observer = nullptr);

}  // namespace crawleval
