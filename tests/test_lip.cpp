// The Lagrangian index policy (include/crawleval/model/lip.hpp): the closed form against relative
// value iteration of the single-source relaxed problem, hand-checked values on the papers'
// example, the multiplier of a flat dual, the exact optimum, and every engine against the
// reference.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "crawleval/analysis/bound.hpp"
#include "crawleval/analysis/optimal.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/evaluate/driver.hpp"
#include "crawleval/model/lip.hpp"
#include "crawleval/model/population.hpp"
#include "test_util.hpp"

namespace ce = crawleval;

namespace {

/// gamma at ages 0..K-1 by relative value iteration on the ages of one source at price c: a crawl
/// at age k earns x_k - c and moves to age 1, waiting moves to age k + 1 (the last age stays,
/// its state within rounding of u*). The chain is made aperiodic (P' = P / 2 + I / 2).
std::vector<double> gamma_by_rvi(const ce::SourceParams& p, double c, std::size_t ages) {
  std::vector<double> x(ages), h(ages, 0.0), next(ages);
  for (std::size_t k = 0; k < ages; ++k) x[k] = p.u_star * -std::expm1(-p.mu_t * double(k));
  for (int it = 0; it < 400000; ++it) {
    double lo = 1e300, hi = -1e300;
    for (std::size_t k = 0; k < ages; ++k) {
      const std::size_t wait = std::min(k + 1, ages - 1);
      const double v = std::max(x[k] - c + 0.5 * h[1], 0.5 * h[wait]) + 0.5 * h[k];
      next[k] = v;
      lo = std::min(lo, v - h[k]), hi = std::max(hi, v - h[k]);
    }
    const double ref = next[1];
    for (std::size_t k = 0; k < ages; ++k) h[k] = next[k] - ref;
    if (hi - lo < 1e-13 * p.u_star) break;
  }
  // h of the transformed chain is twice the plain chain's relative value.
  std::vector<double> gamma(ages - 1);
  for (std::size_t k = 0; k + 1 < ages; ++k) gamma[k] = x[k] - c + 0.5 * h[1] - 0.5 * h[k + 1];
  return gamma;
}

ce::Population random_population(std::size_t n, uint64_t seed, bool costs) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  ce::Population pop;
  pop.origin = "random";
  for (std::size_t i = 0; i < n; ++i) {
    pop.lambda.push_back(std::exp(std::log(0.5) + u(rng) * std::log(400.0)));
    pop.xi.push_back(std::exp(std::log(0.05) + u(rng) * std::log(100.0)));
    pop.mu.push_back(std::exp(std::log(0.05) + u(rng) * std::log(40.0)));
    if (costs) pop.cost.push_back(std::exp(std::log(0.3) + u(rng) * std::log(10.0)));
    pop.id.push_back(i);
  }
  return pop;
}

}  // namespace

TEST(Lip, ClosedFormIsTheRelaxedProblemsQDifference) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  int checked = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const double mu_t = std::exp(std::log(0.08) + u(rng) * std::log(25.0));
    const double cost = std::exp(std::log(0.5) + u(rng) * std::log(4.0));
    const ce::SourceParams p =
        ce::derive_params(10.0 + 100.0 * u(rng), 0.5 + u(rng), mu_t, cost, 1.0);
    // Prices from 0 to above u*, some near it.
    const double c = trial % 5 == 4 ? p.u_star * (1.0 + 0.3 * u(rng))
                                    : p.u_star * (trial % 5 == 3 ? 1.0 - 1e-3 * u(rng) : u(rng));
    const ce::LipSource q = ce::lip_source(c / cost, cost, p);
    const std::size_t ages = std::size_t(60.0 / p.mu_t) + 4 * q.period + 20;
    if (ages > 4000) continue;
    const std::vector<double> rvi = gamma_by_rvi(p, c, ages);
    for (std::size_t k = 0; k + 20 < rvi.size(); ++k) {
      SCOPED_TRACE("trial " + std::to_string(trial) + " age " + std::to_string(k));
      const double grid = ce::lip_index_grid(uint32_t(k), p, q, c / cost) * cost;
      const double any =
          ce::lip_index(p.u_star * -std::expm1(-p.mu_t * double(k)), p, q, c / cost) * cost;
      EXPECT_NEAR(grid, rvi[k], 1e-9 * p.u_star);
      EXPECT_NEAR(any, rvi[k], 1e-9 * p.u_star);
      ++checked;
    }
  }
  EXPECT_GT(checked, 2000);
}

// The papers' Table 1 with M = 2: lambda* = 43.6046 (not a flat dual), relaxed periods 1, 2, 3, 7.
TEST(Lip, PaperExampleValuesByHand) {
  const ce::Population pop = ce::paper_example();
  ce::RunConfig cfg;
  cfg.budget = 2;
  ce::Problem pr = ce::make_problem(pop, cfg);
  ce::prepare_lip_policy(pr);
  EXPECT_NEAR(pr.lip_multiplier, 43.604562, 1e-5);
  // Source 2 is indifferent between periods 1 and 2 at lambda* (its index is 0 at age 1): the
  // index depends on its gain alone, the same for either period.
  ASSERT_EQ(pr.lip_period.size(), 4u);
  EXPECT_EQ(pr.lip_period[0], 1u);
  EXPECT_TRUE(pr.lip_period[1] == 1u || pr.lip_period[1] == 2u) << pr.lip_period[1];
  EXPECT_EQ(pr.lip_period[2], 3u);
  EXPECT_EQ(pr.lip_period[3], 7u);
  const double table[4][2] = {
      {46.905, 91.850}, {0.000, 30.728}, {-14.005, -2.508}, {-29.813, -19.438}};  // ages 1 and 2
  for (std::size_t i = 0; i < 4; ++i)
    for (uint32_t age : {1u, 2u}) {
      const ce::LipSource q{pr.lip_gain[i], pr.lip_period[i]};
      EXPECT_NEAR(ce::lip_index_grid(age, pr.params().at(i), q, pr.lip_multiplier),
                  table[i][age - 1], 1e-3)
          << "source " << i + 1 << " age " << age;
    }
  // Source 1 at age 1 by the formula g - u alpha.
  const ce::SourceParams p1 = pr.params().at(0);
  EXPECT_NEAR(ce::lip_index_grid(1, p1, ce::LipSource{pr.lip_gain[0], 1}, pr.lip_multiplier),
              pr.lip_gain[0] - ce::drift(p1) * p1.alpha, 1e-12 * ce::drift(p1));
}

// With M = 1 the relaxed crawl rate equals M on a whole interval of multipliers (source 4 stops
// crawling at u*_4 = 95.238; source 2's period changes at 105.060): lambda* is its middle.
TEST(Lip, FlatDualTakesTheMiddleMultiplier) {
  const ce::Population pop = ce::paper_example();
  ce::RunConfig cfg;
  cfg.budget = 1;
  ce::Problem pr = ce::make_problem(pop, cfg);
  ce::prepare_lip_policy(pr);
  EXPECT_NEAR(pr.lip_multiplier, 0.5 * (95.238095 + 105.059780), 1e-4);
}

// On the papers' example the policy's long run is the exact optimum (260.39 at M = 1, 337.77 at
// M = 2), as Whittle's is; and it never beats the optimum on small random instances.
TEST(Lip, ReachesTheExactOptimumOnThePaperExample) {
  const ce::Population pop = ce::paper_example();
  for (double m : {1.0, 2.0}) {
    ce::RunConfig cfg;
    cfg.budget = m;
    cfg.epochs = 2000;
    cfg.burn_in = 500;
    ce::Problem pr = ce::make_problem(pop, cfg);
    ce::prepare_lip_policy(pr);
    const ce::OptimalResult opt = ce::exact_optimum(pop, 1.0, m);
    ASSERT_TRUE(opt.closed);
    const double lip = ce::evaluate(pr, ce::Policy::lip, ce::Backend::cpu).reward.mean;
    EXPECT_NEAR(lip, opt.gain, 1e-3 * opt.gain) << "M " << m;
  }
  for (int trial = 0; trial < 6; ++trial) {
    const ce::Population small = random_population(3 + trial % 3, 100 + trial, false);
    ce::RunConfig cfg;
    cfg.budget = 1 + trial % 2;
    cfg.epochs = 3000;
    cfg.burn_in = 1000;
    ce::Problem pr = ce::make_problem(small, cfg);
    ce::prepare_lip_policy(pr);
    const ce::OptimalResult opt = ce::exact_optimum(small, 1.0, cfg.budget);
    const double lip = ce::evaluate(pr, ce::Policy::lip, ce::Backend::cpu).reward.mean;
    double sum_ustar = 0.0;
    for (std::size_t i = 0; i < small.size(); ++i)
      sum_ustar += small.lambda[i] * small.xi[i] / small.mu[i];
    EXPECT_LE(lip, opt.gain_high + sum_ustar / double(cfg.epochs)) << trial;
    EXPECT_GT(lip, 0.95 * opt.gain_low) << trial;
  }
}

// Every CPU engine crawls what the reference crawls, epoch by epoch, in both models, under
// belief and with expiry, with costs, and at a flat dual.
TEST(Lip, EnginesCrawlWhatTheReferenceCrawls) {
  using ce::testing::Trace;
  using ce::testing::traced;
  struct Case {
    std::size_t n;
    ce::Model model;
    ce::Observe observe;
    bool costs;
    uint32_t expiry;
  };
  const Case cases[] = {{40, ce::Model::deterministic, ce::Observe::full, false, 0},
                        {40, ce::Model::stochastic, ce::Observe::full, true, 0},
                        {40, ce::Model::stochastic, ce::Observe::belief, false, 4},
                        {40, ce::Model::deterministic, ce::Observe::full, false, 3},
                        {3000, ce::Model::deterministic, ce::Observe::full, true, 0},
                        {3000, ce::Model::stochastic, ce::Observe::belief, false, 0}};
  for (const Case& c : cases) {
    ce::Population pop = random_population(c.n, c.n + uint64_t(c.model), c.costs);
    if (c.expiry) pop.expiry.assign(c.n, c.expiry);
    ce::RunConfig cfg;
    cfg.model = c.model;
    cfg.observe = c.observe;
    cfg.budget = c.costs ? 0.05 * pop.total_cost() : std::max(1.0, double(c.n / 20));
    cfg.epochs = 120;
    cfg.burn_in = 10;
    cfg.replications = 2;
    ce::Problem pr = ce::make_problem(pop, cfg);
    ce::prepare_lip_policy(pr);
    SCOPED_TRACE("n " + std::to_string(c.n) + " " + ce::to_string(c.model) + " " +
                 ce::to_string(c.observe) + " expiry " + std::to_string(c.expiry));
    const Trace ref = traced(pr, ce::Policy::lip, ce::Backend::reference);
    const Trace cpu = traced(pr, ce::Policy::lip, ce::Backend::cpu);
    EXPECT_EQ(cpu.sets, ref.sets);
    const ce::RolloutOutput a = ce::rollout(pr, ce::Policy::lip, ce::Backend::reference);
    const ce::RolloutOutput b = ce::rollout(pr, ce::Policy::lip, ce::Backend::cpu);
    for (std::size_t r = 0; r < a.replication_reward.size(); ++r)
      EXPECT_NEAR(b.replication_reward[r], a.replication_reward[r],
                  1e-12 * a.replication_reward[r]);
  }
}

TEST(Lip, RefusesAnObserveColumn) {
  ce::Population mixed = ce::paper_example();
  mixed.observe = {1, 0, 1, 1};
  ce::RunConfig det;
  det.budget = 1;
  ce::Problem pm = ce::make_problem(mixed, det);
  ce::prepare_lip_policy(pm);
  EXPECT_THROW(ce::rollout(pm, ce::Policy::lip, ce::Backend::cpu), ce::InputError);
}
