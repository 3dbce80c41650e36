// Helpers shared by the test files.
#pragma once

#include <cmath>
#include <random>
#include <string>

#include "crawleval/evaluate/driver.hpp"
#include "crawleval/model/problem.hpp"

namespace crawleval::testing {

/// 50 sources whose costs span 10^-span .. 10^span (uniform in the exponent), the others of
/// ordinary size: the Lagrangian bound's multiplier search over many decades.
inline Population decades_population(double span) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> U(0.0, 1.0), E(-span, span);
  Population pop;
  pop.origin = "decades";
  for (std::size_t i = 0; i < 50; ++i) {
    pop.lambda.push_back(0.5 + 4.0 * U(rng));
    pop.xi.push_back(0.5 + 9.0 * U(rng));
    pop.mu.push_back(std::pow(10.0, -3.0 + 3.0 * U(rng)));
    pop.cost.push_back(std::pow(10.0, E(rng)));
  }
  return pop;
}

/// A random population of n sources (seeded): lambda in [0.05, 5.05), xi in [0.1, 2.1), mu in
/// [0.02, 1.52); costs 1, or multiples of 1/4 in [0.5, 2.25] (exact binary sums: the budget rule's
/// integer weights are exact, selection.hpp); optional initial states in [0, 2 u*).
inline Population random_population(std::size_t n, uint64_t seed, bool unit_costs, bool with_x0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  Population pop;
  pop.origin = "random(" + std::to_string(n) + ")";
  for (std::size_t i = 0; i < n; ++i) {
    pop.lambda.push_back(0.05 + 5 * U(rng));
    pop.xi.push_back(0.1 + 2 * U(rng));
    pop.mu.push_back(0.02 + 1.5 * U(rng));
    pop.cost.push_back(unit_costs ? 1.0 : 0.5 + double(rng() % 8) * 0.25);
    pop.id.push_back(i);
    if (with_x0) pop.x0.push_back(2 * U(rng) * pop.lambda.back() * pop.xi.back() / pop.mu.back());
  }
  return pop;
}

/// What a backend did, epoch by epoch (all epochs, burn-in included).
struct Trace {
  std::vector<std::vector<uint32_t>> sets;  ///< crawled ids, ascending
  std::vector<double> rewards;
  std::vector<std::vector<double>> states;  ///< where the backend reports them
};

inline Trace traced(const Problem& pr, Policy p, Backend b) {
  Trace t;
  EpochObserver obs = [&](const EpochView& v) {
    t.sets.push_back(*v.selected);
    t.rewards.push_back(v.reward);
    if (v.states) t.states.push_back(*v.states);
  };
  rollout(pr, p, b, &obs);
  return t;
}

}  // namespace crawleval::testing
