// One evaluation sharded over processes (MPI ranks): every rank holds a contiguous range of source
// ids (shard_of, problem.hpp) and the ranks together compute exactly what one process computes:
// the same crawled sets epoch by epoch and the same rewards, bit for bit, for any number of ranks.
//
// How (docs/scale-out.md): MPI is a layer over an engine (epoch_collective.hpp). Every rank runs
// the CPU backend's wide engine on its shard, keyed by global ids, and
//  * the selection is the windowed radix select of window_select.hpp with its steps shared: the
//    coarse histogram summed over the ranks, one allreduce per level, the few listed members at
//    the boundary gathered, a stop inside a group of equal scores placed by each rank's weight in
//    it (ranks hold ascending id ranges). Scores never move between ranks;
//  * the rewards are summed per chunk of 2^14 sources (shards align to them), the chunks folded
//    in global order along the ranks (fold_in_order), a batch of epochs at a time.
#pragma once

#include <cstdint>
#include <vector>

#include "crawleval/base/comm.hpp"
#include "crawleval/engine/rollout.hpp"
#include "crawleval/model/problem.hpp"
#include "crawleval/model/selection.hpp"

namespace crawleval {

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
                             Comm& comm, ColumnSet columns = ColumnSet::all);
/// The problem keeps a pointer to `local` (make_problem): a temporary would leave it dangling (a
/// test that passed one crawled every source after a few epochs).
Problem make_sharded_problem(Population&& local, const RunConfig& cfg, const Shard& shard,
                             Comm& comm, ColumnSet = ColumnSet::all) = delete;

/// The rollout contract (rollout.hpp) over the ranks: every rank returns the same output. The
/// observer, when given, sees the global crawled ids on every rank (gathered every epoch: for
/// tests and small traces). Every rank runs the CPU backend's wide engine on its shard (an empty
/// one too) at every population size: the same numbers as one process.
RolloutOutput sharded_rollout(const Problem& problem, Policy policy, Comm& comm,
                              const EpochObserver* observer = nullptr);

}  // namespace crawleval
