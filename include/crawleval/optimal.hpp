// The exact optimum of small deterministic instances: the oracle that tells how far a policy is
// from optimal.
//
// Relative value iteration over the joint state of ages (epochs since each source's last crawl,
// 1..cap; age k means state x_k = u* (1 - alpha^k)), unit costs, at most M crawls per epoch,
// N <= 6. The chain is made aperiodic by the standard transformation P' = tau P + (1 - tau) I,
// which keeps the gain; at every iteration min_s (Th - h) <= gain <= max_s (Th - h), and the
// iteration stops when that bracket is narrower than the tolerance.
//
// Capping ages is the only approximation, and it is bounded both ways: the capped model pays
// x_cap for a crawl at any age >= cap, so its optimum is <= the true optimum; a crawl at age >= cap
// can happen at most once per cap epochs per source and loses at most u* alpha^cap, so the true
// optimum is <= capped + sum_i u*_i alpha_i^cap / cap. The cap is chosen as large as the state
// budget allows (and no larger than needed for that term to vanish).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "crawleval/problem.hpp"

namespace crawleval {

struct OptimalOptions {
  uint64_t max_states = 2'000'000;  ///< cap^N must stay below this
  uint32_t max_cap = 400;
  double tolerance = 1e-9;  ///< relative width of the gain bracket at which RVI stops
  uint64_t max_iterations = 200'000;
  double tau = 0.5;  ///< aperiodicity transformation
  int threads = 0;
  /// Called once the state space is known (joint states, age cap, actions), and after every
  /// value iteration with the gain bracket: for an estimate and progress on long solves.
  std::function<void(uint64_t states, uint32_t cap, std::size_t actions)> on_start;
  std::function<void(uint64_t iteration, double gain_low, double gain_high)> on_iteration;
};

struct OptimalResult {
  double gain = 0.0;      ///< optimal long-run reward per epoch of the capped model (midpoint)
  double gain_low = 0.0;  ///< RVI bracket on the capped gain
  double gain_high = 0.0;
  double cap_error = 0.0;  ///< sum_i u*_i alpha_i^cap / cap: true optimum <= gain_high + cap_error
  uint32_t cap = 0;
  uint64_t states = 0;
  uint64_t iterations = 0;
  bool converged = false;
  /// One period of an optimal schedule reached from "every source fresh" (all ages 1): the crawled
  /// ids (positions) of each epoch of the cycle, and the cycle's average reward.
  std::vector<std::vector<uint32_t>> cycle;
  double cycle_reward = 0.0;
};

/// Throws InputError if the instance is not small (N > 6), has non-unit costs, or M is not an
/// integer in [1, N].
OptimalResult exact_optimum(const Population& pop, double epoch_length, double budget,
                            const OptimalOptions& options = {});

}  // namespace crawleval
