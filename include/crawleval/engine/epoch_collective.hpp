// What an engine's epoch needs from the processes that share its population: the crawled set
// and the rewards' sums (MPI as a layer over any engine, issue 28). An engine scores the sources
// of its shard (global ids first .. first + n - 1) and asks this layer for
//  * the selection: the budgeted prefix of (key desc, id asc) over every process's sources
//    (selection.hpp's rule, by the windowed radix select of window_select.hpp: its passes split
//    among the threads, its steps shared over the processes, a few collectives per epoch);
//  * the sums: per-chunk partial sums of a few quantities per epoch (reward, cost, ...) added
//    chunk after chunk in global id order (fold_in_order, a batch of epochs at a time), so that
//    every process count adds the same numbers in the same order: the same bits.
// One process is the case comm.size() == 1 (solo_comm): the same code, no message.
//
// Example (an engine's epoch on any number of processes):
//   EpochCollective layer(comm, pr.shard.first, n, pr.global_size(), threads);
//   layer.begin_sums(2, kChunk, cfg.epochs, observer != nullptr);   // reward and cost per chunk
//   for each epoch:
//     keys[i] = score_key(score(first + i));
//     const Selection sel = layer.select(keys, weights, unit, limit);
//     crawled(i) = is_selected(keys[i], first + i, sel);
//     double* row = layer.sums();          // row[c]: chunk c's reward, row[chunks + c]: its cost
//     ...
//     layer.commit([&](const double* s) { reward += s[0]; cost += s[1]; });
//   layer.flush(same callback);            // the epochs still in the batch, in order
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "crawleval/base/comm.hpp"
#include "crawleval/model/selection.hpp"
#include "crawleval/select/window_select.hpp"

namespace crawleval {

namespace detail {
class WindowSelector;
}

class EpochCollective {
 public:
  /// This process holds the n sources of ids first .. first + n - 1 of the global_n (processes
  /// in ascending id order); `threads` split the selection's passes.
  EpochCollective(Comm& comm, uint64_t first, std::size_t n, uint64_t global_n, int threads);
  ~EpochCollective();

  Comm& comm() const { return comm_; }
  bool single() const { return comm_.size() == 1; }
  uint64_t first() const { return first_; }

  /// The budgeted prefix over every process's sources: the same Selection on every process
  /// (stop_id global). weights: fixed_weight per source (read only unless !unit); limit:
  /// FixedBudget::limit. The window of bins the selection lists is planned from the previous
  /// call's boundary: call it once per epoch.
  Selection select(const uint64_t* keys, const uint64_t* weights, bool unit, uint64_t limit);
  /// The selections' counters (levels, window misses, ...) over every call.
  window::Diagnostics diagnostics() const;

  /// Starts a replication's sums: `quantities` per epoch, each over chunks of `chunk` ids (a
  /// divisor of kFoldChunk, so that shards hold whole chunks); at most `epochs` per batch;
  /// `every_epoch` folds each epoch at once (observers see its totals).
  void begin_sums(std::size_t quantities, std::size_t chunk, uint64_t epochs, bool every_epoch);
  std::size_t chunks() const { return chunks_; }  ///< this process's chunks
  /// The next epoch's partial sums to fill: quantities x chunks(), row-major.
  double* sums() { return batch_.data() + rows_ * quantities_ * chunks_; }
  using Totals = std::function<void(const double* totals)>;  ///< one epoch's `quantities` sums
  /// Takes the epoch filled in sums(); when the batch is full, folds it and calls `each` per
  /// epoch, in order.
  void commit(const Totals& each);
  void flush(const Totals& each);

  /// For observers: every process's ids (global), in process order.
  std::vector<uint64_t> gather(const std::vector<uint64_t>& mine);
  /// 0.0 + v_1 + v_2 + ... over every process's values in process order: one process's
  /// left-to-right sum, bit for bit.
  double sum_in_order(const std::vector<double>& values);

  /// What the folds and gathers moved (an engine adds its own collectives here).
  CommTraffic stats;
  /// stats and the selections' collectives.
  CommTraffic traffic() const;

 private:
  Comm& comm_;
  uint64_t first_, global_n_;
  std::size_t n_;
  int threads_;
  std::unique_ptr<detail::WindowSelector> sel_;  // made by the first select()
  std::size_t quantities_ = 0, chunks_ = 0, batch_rows_ = 1, rows_ = 0;
  std::vector<double> batch_;
};

}  // namespace crawleval
