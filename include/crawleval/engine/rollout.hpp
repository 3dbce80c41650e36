// The rollout contract: every backend runs R replications of (burn-in + H) epochs of one policy and
// returns each replication's mean reward per measured epoch.
//
// One epoch t, for every replication r:
//   1. score every source from its state X(t) (policy.hpp),
//   2. select the budgeted prefix of the (score desc, id asc) order (selection.hpp),
//   3. collect the reward: the sum of X(t) over crawled sources (counted when t >= burn-in),
//   4. move to X(t+1) (model.hpp), the stochastic arrivals keyed by (seed, r, source, t).
//
// Backends: reference (host/engine/reference/reference.cpp: serial, sort-based, literal formulas),
// cpu (host/engine/cpu/cpu_backend.cpp: threads, O(N) radix selection, no allocation in the epoch
// loop), cuda (kernels/). They must agree: same selected sets epoch by epoch, rewards within
// rounding.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "crawleval/model/problem.hpp"

namespace crawleval {

class Comm;  // comm.hpp

/// What an observer sees after each epoch's selection (all epochs, burn-in included).
struct EpochView {
  uint32_t replication;
  uint64_t epoch;
  const std::vector<uint32_t>* selected;  ///< crawled source ids, ascending
  double reward;                          ///< sum of the crawled states
  const std::vector<double>* states;      ///< X(t) per source (nullptr where not provided)
  const std::vector<double>* scores;      ///< scores per source (nullptr where not provided)
};
using EpochObserver = std::function<void(const EpochView&)>;

/// What the windowed selection did (the GPU's wide regime, the CPU backend's wide engine; zero
/// elsewhere; launches and syncs are the GPU's): the figures a benchmark reports.
struct EngineCounters {
  uint64_t launches = 0;       ///< kernel launches enqueued (every epoch's, set-up included)
  uint64_t syncs = 0;          ///< host waits on the device (observers add one per epoch)
  uint64_t selections = 0;     ///< epochs selected
  uint64_t window_misses = 0;  ///< fallback passes (the previous epoch's window missed)
  uint64_t levels = 0;         ///< refinement levels run
  uint64_t tie_scans = 0;      ///< stops found inside a group of equal scores
  uint64_t listed = 0;         ///< candidate sources listed by the scoring passes
  uint64_t recounts = 0;       ///< passes that counted the coarse histogram again (CPU)
  /// Deterministic Whittle (and greedy on the GPU): measured source-epochs whose source was
  /// dormant (not read by the pass), and the wakes of dormant sources
  /// (host/engine/cpu/dormant.hpp; on the GPU include/crawleval/engine/wide_dormant.hpp).
  uint64_t dormant = 0;
  uint64_t dormant_wakes = 0;
};

struct RolloutOutput {
  std::vector<double> replication_reward;  ///< mean reward per measured epoch, per replication
  std::vector<double> replication_cost;    ///< mean crawl cost spent per measured epoch
  std::vector<double> epoch_reward;        ///< replication 0's reward per measured epoch
  double seconds = 0.0;                    ///< wall time of the whole call
  double loop_seconds = 0.0;  ///< wall time of the epoch loops alone (no set-up, no transfers)
  /// GPU: device time of the measured epochs alone (after the burn-in), summed over replications.
  double steady_seconds = 0.0;
  /// The measured epochs alone: their wall time and their number (summed over replications).
  /// The window starts at the first measured epoch, or at the second when there is no burn-in
  /// (the first carries the set-up: initial states, the first plan). Zero where a backend does
  /// not time it (the driver's rate then covers every epoch of the loop). The CPU's small engine
  /// runs replications side by side: its figure is their thread time divided by the threads.
  double measured_seconds = 0.0;
  uint64_t measured_epochs = 0;
  int threads = 1;            ///< CPU threads the engine ran on (1 for the reference and the GPU)
  double comm_seconds = 0.0;  ///< under MPI: wall time inside collectives (waits included)
  EngineCounters counters;
};

/// Up to this many sources the CPU backend runs its small engine: serial, selection by sorting
/// with the budget's integer weights walked in order (cpu_select.hpp), replications side by side.
inline constexpr std::size_t kCpuSmallN = 2048;

/// Serial, double precision, sort-based. Obviously right; slow.
RolloutOutput reference_rollout(const Problem& problem, Policy policy,
                                const EpochObserver* observer = nullptr);

class Comm;

/// Multi-threaded CPU backend (OpenMP): the fast path on machines without a GPU. With `comm` of
/// several processes (MPI as a layer, host/engine/mpi/), each holds a shard of the problem (its
/// sources are the global ids problem.shard.first ..) and all of them return the one-process
/// output; the population must hold more than kCpuSmallN sources (sharded_rollout runs smaller ones
/// on one).
RolloutOutput cpu_rollout(const Problem& problem, Policy policy,
                          const EpochObserver* observer = nullptr, Comm* comm = nullptr);

/// What a policy given as a function sees, once per epoch and replication (function_rollout).
/// The arrays hold one entry per source, in id order, and are valid during the call only.
struct ScoreRequest {
  uint32_t replication;  ///< the replication's index in the draws
  uint64_t epoch;        ///< 0 .. burn_in + epochs - 1
  std::size_t n;
  /// What the policy observes: the state X(t) under full observation; under belief its expected
  /// value given the time since the last crawl (AgeState::value), as the built-in policies see it.
  const double* state;
  /// Epochs of content since the source's last crawl (AgeState::age): 1 right after one; before
  /// its first crawl, `epoch` from an empty start, `epoch + 1` from the other starts.
  const double* age;
  double* scores;  ///< to fill: n scores, ranked like every policy's (selection.hpp; NaN last)
  /// Instead of filling `scores`, a function may point *borrowed at n scores of its own, read
  /// before it is called again (the Python package hands over a numpy policy's result this way,
  /// without a copy). Null where the caller does not offer it.
  const double** borrowed = nullptr;
  /// Under MPI (function_rollout with a Comm): source k of the arrays is global source first + k,
  /// and `processes` are the ranks whose shards make the population, for a policy that needs a
  /// quantity over every source (adaptive_whittle_policy's largest estimate: a max over them).
  /// In one process: 0 and null.
  uint64_t first = 0;
  Comm* processes = nullptr;
};
using ScoreFn = std::function<void(const ScoreRequest&)>;

/// A policy given as a score function (the Python package's user policies) on the CPU: the same
/// model, selection rule and reward accounting as the CPU backend
/// (host/engine/cpu/cpu_backend.cpp: the wide engine's general model), so that a function computing
/// a built-in policy's scores gives that policy's result bit for bit. `label` names it in progress
/// reports. Exceptions thrown by `score` propagate. Buffers of n doubles each, owned by the caller,
/// that function_rollout writes the observed state and the age into (ScoreRequest's arrays) instead
/// of its own: the Python package hands them to a numpy policy as read-only views that stay valid
/// as long as the policy keeps them. `collected` (optional): what each source gave at the previous
/// epoch's crawl (its state then; 0 where not crawled, and at epoch 0), so that a policy can learn
/// from its rewards.
struct ScoreBuffers {
  double* state = nullptr;
  double* age = nullptr;
  double* collected = nullptr;
};
/// `comm`: the processes of a sharded problem (problem.shard: this process's sources; sharded.hpp),
/// every one calling `score` on its shard; the same output on every process, bit for bit that of
/// one process. Null: one process.
RolloutOutput function_rollout(const Problem& problem, const ScoreFn& score,
                               const std::string& label, const EpochObserver* observer = nullptr,
                               const ScoreBuffers* buffers = nullptr, Comm* comm = nullptr);

}  // namespace crawleval
