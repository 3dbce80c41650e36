// Synthetic populations (distributions documented in include/crawleval/synthetic.hpp).
#include "crawleval/synthetic.hpp"

#include "crawleval/io.hpp"

namespace crawleval {

Population synthetic_population(uint64_t n, uint64_t seed, SyntheticCosts costs) {
  Population pop;
  pop.origin = "synthetic(" + std::to_string(n) + ", seed " + std::to_string(seed) + ")";
  pop.lambda.resize(n), pop.xi.resize(n), pop.mu.resize(n), pop.cost.resize(n), pop.id.resize(n);
  const bool lognormal = costs == SyntheticCosts::lognormal;
#pragma omp parallel for schedule(static)
  for (uint64_t i = 0; i < n; ++i) {
    const SyntheticSource s = synthetic_source(seed, i, lognormal);
    pop.lambda[i] = s.lambda, pop.xi[i] = s.xi, pop.mu[i] = s.mu, pop.cost[i] = s.cost;
    pop.id[i] = i;
  }
  return pop;
}

}  // namespace crawleval
