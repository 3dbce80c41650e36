// Synthetic populations and the papers' example.
//
// Synthetic source i draws from Philox keyed by (seed, i) only, so any N and any thread count give
// the same source i. With T = 1 read as one hour:
//   lambda ~ Pareto(shape 1.2, minimum 0.02), capped at 1000 arrivals per epoch: most sources
//   publish
//            rarely (median 0.036 per epoch, about one item a day), 1% publish more than one item
//            per epoch, 0.01% more than nine (news front pages);
//   xi     ~ lognormal(0, 1): median utility 1, mean 1.65, a few very valuable sources;
//   mu     ~ log-uniform on [0.02, 2]: half-lives from 20 minutes to 35 hours;
//   cost   = 1, or lognormal with sigma 0.5 and mean 1 (SyntheticCosts::lognormal).
#include <cmath>

#include "crawleval/io.hpp"
#include "crawleval/rng.hpp"

namespace crawleval {

Population synthetic_population(uint64_t n, uint64_t seed, SyntheticCosts costs) {
  Population pop;
  pop.origin = "synthetic(" + std::to_string(n) + ", seed " + std::to_string(seed) + ")";
  pop.lambda.resize(n), pop.xi.resize(n), pop.mu.resize(n), pop.cost.resize(n), pop.id.resize(n);
  const double two_pi = 6.283185307179586;
#pragma omp parallel for schedule(static)
  for (uint64_t i = 0; i < n; ++i) {
    DrawStream d(seed, uint32_t(i), uint32_t(i >> 32), 0, Stream::synthetic);
    const double u_lambda = d.next_uniform();
    const double u1 = d.next_uniform(), u2 = d.next_uniform();
    const double u_mu = d.next_uniform();
    const double z_xi = std::sqrt(-2.0 * std::log(u1)) * std::cos(two_pi * u2);
    pop.lambda[i] = std::fmin(0.02 * std::pow(u_lambda, -1.0 / 1.2), 1000.0);
    pop.xi[i] = std::exp(z_xi);
    pop.mu[i] = 0.02 * std::pow(100.0, u_mu);
    if (costs == SyntheticCosts::lognormal) {
      const double v1 = d.next_uniform(), v2 = d.next_uniform();
      const double z = std::sqrt(-2.0 * std::log(v1)) * std::cos(two_pi * v2);
      pop.cost[i] = std::exp(0.5 * z - 0.125);
    } else {
      pop.cost[i] = 1.0;
    }
    pop.id[i] = i;
  }
  return pop;
}

}  // namespace crawleval
