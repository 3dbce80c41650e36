// Synthetic populations (distributions documented in include/crawleval/model/synthetic.hpp).
#include "crawleval/model/synthetic.hpp"

#include "crawleval/model/population.hpp"

namespace crawleval {

Population synthetic_population(uint64_t n, uint64_t seed, SyntheticCosts costs) {
  return synthetic_slice(n, seed, costs, 0, n);
}

Population synthetic_slice(uint64_t n, uint64_t seed, SyntheticCosts costs, uint64_t first,
                           uint64_t count) {
  Population pop;
  pop.origin = "synthetic(" + std::to_string(n) + ", seed " + std::to_string(seed) + ")";
  pop.lambda.resize(count), pop.xi.resize(count), pop.mu.resize(count), pop.cost.resize(count);
  pop.id.resize(count);
  const bool lognormal = costs == SyntheticCosts::lognormal;
#pragma omp parallel for schedule(static)
  for (uint64_t j = 0; j < count; ++j) {
    const uint64_t i = first + j;
    const SyntheticSource s = synthetic_source(seed, i, lognormal);
    pop.lambda[j] = s.lambda, pop.xi[j] = s.xi, pop.mu[j] = s.mu, pop.cost[j] = s.cost;
    pop.id[j] = i;
  }
  return pop;
}

}  // namespace crawleval
