// The freshness model's epoch engine (freshness.hpp): its output, the hosts of the politeness caps,
// the plan every engine runs on, the CPU engine and the reference.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "crawleval/model/fresh_config.hpp"
#include "crawleval/model/selection.hpp"

namespace crawleval {

class Comm;    // comm.hpp
struct Shard;  // problem.hpp

struct FreshRolloutOutput {
  /// Per replication, per measured epoch, normalised by the total importance: the fresh fraction
  /// (binary freshness) and the harmonic penalty; and the crawl cost spent per epoch.
  std::vector<double> freshness, penalty, cost;
  std::vector<double> epoch_freshness, epoch_penalty;  ///< replication 0, per measured epoch
  /// Learning variant: replication 0's final estimates, of this process's rows.
  std::vector<double> learned_rate;
  /// Source-epochs (and steady starts) whose count of missed changes or age reached its limit
  /// (kMaxChanges, kMaxFreshAge), over every replication and rank: where it is not 0 the numbers
  /// understate the penalty, and fresh_evaluate refuses them.
  uint64_t saturated = 0;
  /// Rate-based policies: the closed-form costs of their rates at the population's (known) rates.
  std::optional<RateCosts> closed_form;
  double seconds = 0.0;
  int threads = 1;
};

/// What a policy given as a score function sees, once per epoch and replication (a user's policy:
/// the Python package's `fresh.evaluate` with a function). The arrays hold one entry per source
/// of the run, in row order, and are valid during the call only.
struct FreshScoreRequest {
  uint32_t replication;  ///< the replication's index in the draws
  uint64_t epoch;        ///< 0 .. burn_in + epochs - 1
  std::size_t n;
  const uint32_t* age;      ///< epochs since the last crawl (0: fetched at epoch 0, fresh start)
  const uint32_t* changes;  ///< changes missed, of the completely observed sources (0 elsewhere)
  double* scores;           ///< to fill: n scores, ranked as every policy's (NaN last)
  /// Instead of filling `scores`, a function may point *borrowed at n scores of its own, read
  /// before it is called again. Null where the caller does not offer it.
  const double** borrowed = nullptr;
  /// Under MPI (fresh_rollout with a Comm): row k of the arrays is the run's source first + k, and
  /// `processes` are the ranks whose parts make the population, for a policy that needs a quantity
  /// over every source. In one process: 0 and null.
  uint64_t first = 0;
  Comm* processes = nullptr;
  /// The learning variant (FreshConfig::learn): each row's change rate as the built-in policies
  /// believe it, estimated from what the crawls revealed (per unit time, re-estimated every
  /// `relearn` epochs: change_rate.hpp). Null without it.
  const double* rate = nullptr;
};
using FreshScoreFn = std::function<void(const FreshScoreRequest&)>;

/// The header of `--policy custom` compiled into the CPU engines (CMake's CRAWLEVAL_FRESH_POLICY).
const char* custom_policy_header();

/// Sees the crawled ids of every epoch, ascending.
using FreshObserver =
    std::function<void(uint32_t replication, uint64_t epoch, const std::vector<uint32_t>& crawled)>;
/// The hosts of the politeness caps: a host is constrained when any of its sources is flagged
/// (the importer flags every source of a constrained host); only a constrained host with more
/// than m sources ("crowded") can reach its cap. Over MPI ranks (`comm`, each passing its part: a
/// collective) a host's sources may lie on several ranks: the constrained hosts' ids are
/// allgathered and their sizes summed over the ranks (a directory of 8 B per constrained host on
/// every rank), so every rank numbers the crowded hosts alike.
struct CrowdedHosts {
  std::vector<uint32_t> dense;       ///< per row of this process: its host, numbered 0..count-1
  std::vector<uint8_t> constrained;  ///< per host of this process (flagged on any rank)
  uint32_t count = 0;
  /// This process's rows of every crowded host, host by host in ascending host id, ascending
  /// within a host; start: their CSR offsets (crowded hosts + 1 entries); total: the offsets of
  /// every rank's sources (== start in one process).
  std::vector<uint32_t> members;
  std::vector<std::size_t> start{0};
  std::vector<uint64_t> total{0};
  /// The hosts each rank decides (the bound solves them there, the selection finds their m-th
  /// candidate there): blocks of consecutive hosts, each about 1/P of the hosts' members, rank r's
  /// from owner[r] to owner[r + 1] - 1 (P + 1 entries; every host in one process).
  std::vector<std::size_t> owner;
  bool split = false;  ///< whether any crowded host lies on more than one rank
  /// Whether crowded host h lies on this process alone.
  bool whole(std::size_t h) const { return start[h + 1] - start[h] == total[h + 1] - total[h]; }
};
CrowdedHosts crowded_hosts(const FreshPopulation& pop, uint32_t cap, Comm* comm = nullptr);

/// What every engine derives once from the population and the settings (make_fresh_plan,
/// host/evaluate/fresh_plan.cpp): the per-source constants, the rate-based policy's rates (known
/// rates), the steady start's periods, the fixed-point costs of the selection and the hosts of the
/// caps (the engines' directory of crowded hosts; the reference reads the hosts off the
/// population). params, quiet, steady_period and weight hold the rows of pop (the run's sources
/// first .. first + params.size() - 1: a rank's part under MPI); norm and budget cover every
/// source.
struct FreshPlan {
  std::size_t first = 0;            ///< the run's position of pop's first row (fresh_shard)
  std::vector<FreshParams> params;  ///< the truth the simulation runs on
  /// fresh_quiet_words of params: the first change-stream words of an epoch without change (the
  /// CPU engine's step skips the sampler there; the reference samples every epoch).
  std::vector<uint32_t> quiet;
  FreshRates rates;  ///< rate-based policies at the known rates (else empty), of params' sources
  std::vector<double> steady_period;  ///< FreshStart::steady (empty otherwise)
  FixedBudget budget;                 ///< selection.hpp's fixed point
  std::vector<uint64_t> weight;       ///< each source's fixed-point cost
  bool unit_costs = true;
  double norm = 0.0;  ///< 1 / total importance (kFoldChunk chunks)
  CrowdedHosts hosts;
};
/// The CPU engine: the epoch loop of a policy on a plan (make_fresh_plan, fresh_evaluate.hpp,
/// builds it and the replanning), on threads with an O(N) selection. `observer` (may be null) sees
/// the crawled ids of every epoch, ascending. Learning variant: `replan` re-solves the rate-based
/// policy's rates from the estimated ones (a collective over `comm`). `comm`: the MPI ranks that
/// share the run (every rank passes its part, fresh_shard, and the same settings; each simulates
/// its part and the selection spans the ranks, host caps included): the same output on every
/// rank, bit for bit one process's. Null: one process.
using FreshReplan = std::function<FreshRates(const FreshColumns& believed)>;
/// `user` (may be null): a score function that replaces the policy's scores (`policy` is then
/// FreshPolicy::index, for what the step and the plan do, which is nothing policy-specific), in
/// one process or over comm's ranks (each rank's function sees its rows); under the learning
/// variant it is handed the estimated rates (FreshScoreRequest::rate).
FreshRolloutOutput fresh_epochs(const FreshPopulation& pop, const FreshConfig& cfg,
                                FreshPolicy policy, const FreshPlan& plan,
                                const FreshReplan& replan, const FreshObserver* observer = nullptr,
                                Comm* comm = nullptr, const FreshScoreFn* user = nullptr);

/// The reference engine (host/engine/reference/fresh_reference.cpp): the same run, written to be
/// obviously right rather than fast, one process. Serial; every epoch a full sort of (score desc,
/// id asc) walked in that order, a constrained host's sources skipped once it has m crawls, the
/// walk stopped at the first source that does not fit the budget's fixed-point weights
/// (selection.hpp); the sums taken plainly in id order. It shares with the other engines only the
/// model's per-URL math (fresh_score, fresh_step, fresh_steady_start, LearnedHistory) and what the
/// plan gives (constants, rates, steady periods, fixed-point weights): its crawls equal theirs
/// exactly and its numbers within rounding (the engines fold their sums in chunks).
FreshRolloutOutput fresh_reference(const FreshPopulation& pop, const FreshConfig& cfg,
                                   FreshPolicy policy, const FreshPlan& plan,
                                   const FreshReplan& replan,
                                   const FreshObserver* observer = nullptr,
                                   const FreshScoreFn* user = nullptr);

}  // namespace crawleval
