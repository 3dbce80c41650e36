// One evaluation sharded over processes (MPI ranks): every rank holds a contiguous range of source
// ids (shard_of, problem.hpp) and the ranks together compute exactly what one process computes:
// the same crawled sets epoch by epoch and the same rewards, bit for bit, for any number of ranks.
//
// How (docs/scale-out.md):
//  * Selection (sharded_select): an exact radix select over the ranks' keys. Every rank builds the
//    histogram of its keys' coarse bins (counts, and fixed-point cost weights), one allreduce sums
//    them, and every rank walks the same global histogram to the same boundary bin; then digits of
//    the keys inside it, one allreduce per level, until the boundary is one key (a group of equal
//    scores, split by id: ranks hold ascending id ranges, so an allgather of each rank's weight in
//    the group places the stop) or until at most kGatherMax candidates remain worldwide, which are
//    gathered and sorted. The tie rule (score desc, id asc) and the cost-prefix rule are those of
//    selection.hpp, with the fixed-point weights of the CPU backend's wide engine. Keys never move
//    between ranks.
//  * Rewards: per chunk of 2^14 sources (the CPU backend's chunks; shards align to them), the
//    chunks folded in global order along the ranks (fold_in_order), a batch of epochs at a time.
//  * Scores and transitions: the CPU backend's wide engine's code (host/engine/source_step.hpp),
//    keyed by global ids.
#pragma once

#include <cstdint>
#include <vector>

#include "crawleval/bound.hpp"
#include "crawleval/comm.hpp"
#include "crawleval/driver.hpp"
#include "crawleval/problem.hpp"
#include "crawleval/rollout.hpp"
#include "crawleval/selection.hpp"

namespace crawleval {

/// Global candidates gathered and sorted instead of another histogram level.
inline constexpr uint64_t kGatherMax = 4096;

/// What a sharded selection moved (per call; summed over epochs by the rollout).
struct ShardedSelectStats {
  uint64_t allreduces = 0;    ///< histogram levels (each one allreduce of kBins counters or two)
  uint64_t gathered = 0;      ///< candidates gathered worldwide
  uint64_t bytes = 0;         ///< bytes this rank contributed to collectives
  double comm_seconds = 0.0;  ///< wall time inside collectives (waiting included)
};

/// What sharded_select reuses between calls.
struct SelectScratch {
  std::vector<uint64_t> hist;             ///< per thread: kBins counts, then kBins weights
  std::vector<std::vector<uint32_t>> in;  ///< per thread: its candidates, ascending
  std::vector<uint32_t> cand, next;
  /// The per-thread histograms, zeroed, for a caller that counts the coarse bins itself.
  uint64_t* coarse(int threads);
};

/// The budgeted prefix of the (key desc, id asc) order over every rank's sources. This rank holds
/// `n` sources with global ids first_id .. first_id + n - 1 (ranks in ascending id order), their
/// keys (score_key) and fixed-point weights (read only unless `unit`: every weight 1; every rank
/// must pass the same `unit`); `limit` is FixedBudget::limit. Returns the same Selection on every
/// rank; in one process (solo_comm) it is the function engine's selection. `threads` split the
/// passes; `coarse_counted`: the caller filled scratch.coarse(threads) with the keys' coarse bins.
Selection sharded_select(Comm& comm, const uint64_t* keys, const uint64_t* weights, bool unit,
                         std::size_t n, uint64_t first_id, uint64_t limit, SelectScratch& scratch,
                         ShardedSelectStats* stats = nullptr, int threads = 1,
                         bool coarse_counted = false);

/// Rank 0's population (`whole`, null elsewhere) cut into the ranks' shards (shard_of): every rank
/// returns its own slice, with the whole population's origin, and its shard in *shard. For inputs
/// that one process reads (a CSV file, the paper example); synthetic populations are generated
/// where they live (io.hpp, synthetic_slice).
Population scatter_population(Comm& comm, const Population* whole, Shard* shard);

/// This rank's problem: `local` holds the shard's sources (shard.count of them, in global id
/// order). Validates the local sources (messages name the global source, or the file line), then
/// the settings against the global totals; a collective: every rank throws the first failing
/// rank's error.
Problem make_sharded_problem(const Population& local, const RunConfig& cfg, const Shard& shard,
                             Comm& comm);

/// The rollout contract (rollout.hpp) over the ranks: every rank returns the same output. The
/// observer, when given, sees the global crawled ids on every rank (gathered every epoch: for
/// tests and small traces). A population of at most kCpuSmallN sources (wholly on rank 0: shards
/// cut at kFoldChunk) runs on rank 0's CPU backend, which uses its small engine there, and the
/// output is sent to every rank: the same numbers as one process at every size.
RolloutOutput sharded_rollout(const Problem& problem, Policy policy, Comm& comm,
                              const EpochObserver* observer = nullptr);

/// driver.hpp's evaluate() on sharded_rollout (replications and target CI unchanged).
PolicyResult evaluate_sharded(const Problem& problem, Policy policy, Comm& comm,
                              const EvaluateOptions& options = {});

/// lagrangian_bound over the ranks: the same result on every rank, bit for bit equal to one
/// process's lagrangian_bound (one fold of per-chunk sums per bisection step).
BoundResult sharded_bound(const Problem& problem, Comm& comm, bool keep_periods = false);
/// prepare_static_policy over the ranks (each rank keeps its sources' periods).
void prepare_static_policy(Problem& problem, Comm& comm);

}  // namespace crawleval
