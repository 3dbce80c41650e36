// The CPU engines' epoch loop, written once for both models and every regime (docs/architecture.md,
// "Engines"). What differs between the engines is their agent: how a pass moves and scores the
// sources, how an epoch's crawled set is chosen, where the sums go. The loop owns what every
// engine must do the same way: the order of the steps, the burn-in (which epochs count), the timed
// window of the measured epochs, progress and stopping between epochs.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>

#include "base/progress.hpp"

namespace crawleval::detail {

/// One replication's result on a CPU engine.
struct ReplicationResult {
  double reward_sum = 0.0, cost_sum = 0.0;
  double measured_seconds = 0.0;  // RolloutOutput::measured_seconds, of this replication
  uint64_t measured_epochs = 0;
};

/// Times the measured epochs of one replication: loop iterations [first, total) of run_epochs
/// (iteration 0, the set-up's first scoring, is left out when there is no burn-in). Iteration
/// `total` applies the last selection only and is not counted.
class MeasuredWindow {
 public:
  MeasuredWindow(uint64_t burn_in, uint64_t total)
      : first_(std::max<uint64_t>(burn_in, 1)), total_(total) {}
  /// At the start of iteration t.
  void at(uint64_t t) {
    if (first_ >= total_) return;
    if (t == first_) start_ = std::chrono::steady_clock::now();
    if (t == total_) {
      res_seconds_ =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      res_epochs_ = total_ - first_;
    }
  }
  void report(ReplicationResult& r) const {
    r.measured_seconds = res_seconds_;
    r.measured_epochs = res_epochs_;
  }

 private:
  uint64_t first_, total_;
  std::chrono::steady_clock::time_point start_;
  double res_seconds_ = 0.0;
  uint64_t res_epochs_ = 0;
};

/// How a replication reports its epochs as it goes.
struct EpochTicks {
  std::atomic<uint64_t>* done = nullptr;  // epochs done by every replication (progress)
  Progress* progress = nullptr;           // the thread that reports progress
  const Progress* stop = nullptr;         // stop between epochs once stopped()
  uint64_t batch = 1;                     // epochs between two reports (and stop checks)
};

/// The epoch loop of one replication: burn_in + epochs epochs (total). Iteration t applies epoch
/// t - 1's selection and scores epoch t in one pass over the sources, then chooses epoch t's
/// crawled set:
///
///   agent.pass(t)     t > 0: apply epoch t - 1's selection (rewards, transitions);
///                     t < total: score epoch t
///   agent.commit()    the applied epoch's sums into the run's, for a measured epoch (t - 1 >=
///                     burn_in)
///   agent.select(t)   epoch t's crawled set, and what follows it (observers, schedules)
///   agent.flush()     after the last iteration (or a stop): sums still held
///
/// A stop (ticks.stop) ends the loop after an epoch's selection. Returns the measured window's
/// seconds and epochs in a ReplicationResult the caller completes.
template <class Agent>
ReplicationResult run_epochs(Agent& agent, uint64_t burn_in, uint64_t total,
                             const EpochTicks& ticks) {
  MeasuredWindow window(burn_in, total);
  uint64_t unreported = 0;
  for (uint64_t t = 0; t <= total; ++t) {
    window.at(t);
    agent.pass(t);
    if (t > 0 && t - 1 >= burn_in) agent.commit();
    if (t == total) break;
    agent.select(t);
    if (++unreported == ticks.batch || t + 1 == total) {
      const uint64_t so_far =
          ticks.done ? ticks.done->fetch_add(unreported, std::memory_order_relaxed) + unreported
                     : 0;
      unreported = 0;
      if (ticks.progress) ticks.progress->update(so_far);
      if (ticks.stop && ticks.stop->stopped()) break;
    }
  }
  agent.flush();
  ReplicationResult res;
  window.report(res);
  return res;
}

}  // namespace crawleval::detail
