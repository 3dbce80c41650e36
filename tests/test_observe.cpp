// Observation models, content expiry, the static policy, and adding replications to a target CI.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "crawleval/analysis/bound.hpp"
#include "crawleval/evaluate/driver.hpp"
#include "crawleval/io/io.hpp"
#include "crawleval/model/policy.hpp"
#include "test_util.hpp"

namespace ce = crawleval;

namespace {

using crawleval::testing::Trace;
using crawleval::testing::traced;

ce::Population two_identical_sources() {
  ce::Population p;
  p.origin = "two";
  p.lambda = {5.0, 5.0};
  p.xi = {1.0, 1.0};
  p.mu = {0.5, 0.5};
  p.cost = {1.0, 1.0};
  p.id = {0, 1};
  return p;
}

}  // namespace

TEST(Observe, BeliefEqualsFullInTheDeterministicModel) {
  const ce::Population pop = ce::paper_example();
  for (double m : {1.0, 2.0}) {
    ce::RunConfig cfg;
    cfg.budget = m;
    cfg.epochs = 200;
    const ce::Problem full = ce::make_problem(pop, cfg);
    cfg.observe = ce::Observe::belief;
    const ce::Problem belief = ce::make_problem(pop, cfg);
    for (ce::Policy p : {ce::Policy::whittle, ce::Policy::greedy}) {
      const Trace a = traced(full, p, ce::Backend::reference),
                  b = traced(belief, p, ce::Backend::reference);
      EXPECT_EQ(a.sets, b.sets) << ce::to_string(p);
      for (std::size_t t = 0; t < a.rewards.size(); ++t)
        EXPECT_NEAR(a.rewards[t], b.rewards[t], 1e-9 * a.rewards[t] + 1e-12);
    }
  }
}

// With content expiry too: from age E on the state is x_cap exactly (the recursion landed ulps
// below it, and full observation scored the saturated source as one that still grows: Table 1
// with E = 3 and M = 2 gave 333.81 under full observation and 332.44 under belief).
TEST(Observe, BeliefEqualsFullInTheDeterministicModelWithExpiry) {
  ce::Population pop = ce::paper_example();
  for (uint32_t e : {1u, 3u, 5u}) {
    pop.expiry.assign(pop.size(), e);
    for (double m : {1.0, 2.0}) {
      ce::RunConfig cfg;
      cfg.budget = m;
      cfg.epochs = 200;
      const ce::Problem full = ce::make_problem(pop, cfg);
      cfg.observe = ce::Observe::belief;
      const ce::Problem belief = ce::make_problem(pop, cfg);
      for (ce::Policy p : {ce::Policy::whittle, ce::Policy::greedy}) {
        SCOPED_TRACE("E " + std::to_string(e) + " M " + std::to_string(m) + " " + ce::to_string(p));
        const Trace a = traced(full, p, ce::Backend::reference),
                    b = traced(belief, p, ce::Backend::reference);
        EXPECT_EQ(a.sets, b.sets);
        for (std::size_t t = 0; t < a.rewards.size(); ++t)
          EXPECT_NEAR(a.rewards[t], b.rewards[t], 1e-9 * a.rewards[t] + 1e-12);
        // And the CPU engine crawls what the reference does.
        EXPECT_EQ(traced(full, p, ce::Backend::cpu).sets, a.sets);
      }
    }
  }
}

TEST(Observe, BeliefDecidesFromAgesOnly) {
  // Two identical sources, M = 1, stochastic arrivals. Under belief both expected states depend
  // only on the ages, so every seed crawls the same sequence: 0, 0 (ties: both empty, then both
  // one epoch old; lower id first), then 1, 0, 1, 0, ... (the older one). The reward is the true
  // random state.
  const ce::Population pop = two_identical_sources();
  ce::RunConfig cfg;
  cfg.budget = 1;
  cfg.epochs = 50;
  cfg.model = ce::Model::stochastic;
  cfg.observe = ce::Observe::belief;
  std::vector<std::vector<uint32_t>> first;
  bool full_differs = false;
  for (uint64_t seed : {1u, 2u, 3u}) {
    cfg.seed = seed;
    cfg.observe = ce::Observe::belief;
    const ce::Problem pr = ce::make_problem(pop, cfg);
    const Trace t = traced(pr, ce::Policy::greedy, ce::Backend::reference);
    for (std::size_t e = 0; e < t.sets.size(); ++e) {
      const uint32_t want = e < 2 ? 0u : uint32_t(1 - e % 2);
      ASSERT_EQ(t.sets[e], std::vector<uint32_t>{want}) << "seed " << seed << " epoch " << e;
      EXPECT_DOUBLE_EQ(t.rewards[e], t.states[e][want]);  // the true state is collected
    }
    cfg.observe = ce::Observe::full;
    const ce::Problem pf = ce::make_problem(pop, cfg);
    const Trace f = traced(pf, ce::Policy::greedy, ce::Backend::reference);
    for (std::size_t e = 2; e < f.sets.size(); ++e)
      full_differs = full_differs || f.sets[e][0] != uint32_t(1 - e % 2);
  }
  EXPECT_TRUE(full_differs);  // full observation reacts to the random states
}

TEST(Observe, BeliefGreedyIsTheSlidesBaseline) {
  // The slides' greedy: crawl the largest lambda xi / mu (1 - exp(-mu T_lastcrawl)).
  const ce::Population pop = ce::paper_example();
  ce::RunConfig cfg;
  cfg.budget = 1;
  cfg.epochs = 30;
  cfg.model = ce::Model::stochastic;
  cfg.observe = ce::Observe::belief;
  const ce::Problem pr = ce::make_problem(pop, cfg);
  std::vector<int> last(4, -1);  // epoch of the last crawl (-1: never; the empty start)
  int epoch = 0;
  ce::EpochObserver obs = [&](const ce::EpochView& v) {
    std::size_t best = 0;
    double best_value = -1;
    for (std::size_t i = 0; i < 4; ++i) {
      const double since = last[i] < 0 ? epoch : epoch - last[i];
      const double value =
          pop.lambda[i] * pop.xi[i] / pop.mu[i] * (1 - std::exp(-pop.mu[i] * since));
      if (value > best_value) best_value = value, best = i;
    }
    ASSERT_EQ(v.selected->size(), 1u);
    EXPECT_EQ((*v.selected)[0], best) << "epoch " << epoch;
    last[(*v.selected)[0]] = epoch;
    ++epoch;
  };
  ce::rollout(pr, ce::Policy::greedy, ce::Backend::reference, &obs);
}

TEST(Expiry, InfiniteExpiryIsTheBaseModelExactly) {
  ce::Population base = ce::paper_example();
  ce::Population inf = base;
  inf.expiry.assign(4, 0u);  // 0 = never
  for (ce::Model model : {ce::Model::deterministic, ce::Model::stochastic}) {
    ce::RunConfig cfg;
    cfg.budget = 2;
    cfg.epochs = 100;
    cfg.model = model;
    const ce::Problem a = ce::make_problem(base, cfg), b = ce::make_problem(inf, cfg);
    for (ce::Policy p : {ce::Policy::whittle, ce::Policy::greedy}) {
      const Trace ta = traced(a, p, ce::Backend::reference),
                  tb = traced(b, p, ce::Backend::reference);
      EXPECT_EQ(ta.sets, tb.sets);
      EXPECT_EQ(ta.rewards, tb.rewards);  // bit for bit
    }
  }
}

TEST(Expiry, OneEpochExpiryKeepsOnlyTheLastEpochsContent) {
  ce::Population pop = ce::paper_example();
  pop.expiry.assign(4, 1u);
  ce::RunConfig cfg;
  cfg.budget = 1;
  cfg.epochs = 60;
  cfg.model = ce::Model::stochastic;
  cfg.seed = 5;
  const ce::Problem pr = ce::make_problem(pop, cfg);
  for (ce::Policy p : {ce::Policy::whittle, ce::Policy::round_robin}) {
    const Trace t = traced(pr, p, ce::Backend::reference);
    for (std::size_t e = 1; e < t.states.size(); ++e)
      for (std::size_t i = 0; i < 4; ++i) {
        // X(e) = the arrivals of epoch e-1 and nothing older, crawled or not.
        const double last = ce::sample_arrivals(pr.params().at(i), cfg.utility, cfg.seed, 0,
                                                uint32_t(i), uint32_t(e - 1));
        ASSERT_NEAR(t.states[e][i], last, 1e-9 * (last + 1.0)) << "epoch " << e << " source " << i;
      }
  }
  // Deterministic: every state is u, the index is u / C: crawling any source pays u.
  cfg.model = ce::Model::deterministic;
  const ce::Problem det = ce::make_problem(pop, cfg);
  const Trace t = traced(det, ce::Policy::whittle, ce::Backend::reference);
  for (std::size_t e = 1; e < t.states.size(); ++e)
    for (std::size_t i = 0; i < 4; ++i)
      ASSERT_NEAR(t.states[e][i], ce::drift(det.params().at(i)), 1e-9 * t.states[e][i]);
}

TEST(Expiry, DeterministicStateFollowsTheCappedCurve) {
  // Never crawled from empty, x_k = u* (1 - alpha^min(k, E)).
  ce::Population pop = ce::paper_example();
  pop.expiry = {3, 5, 1, 8};
  ce::RunConfig cfg;
  cfg.budget = 1;
  cfg.epochs = 20;
  const ce::Problem pr = ce::make_problem(pop, cfg);
  const Trace t = traced(pr, ce::Policy::round_robin, ce::Backend::reference);
  std::vector<int> last(4, 0);  // the empty start counts as a crawl at epoch 0 with no content
  for (std::size_t e = 0; e < t.states.size(); ++e) {
    for (std::size_t i = 0; i < 4; ++i) {
      const ce::SourceParams p = pr.params().at(i);
      const double k = std::min<double>(double(int(e) - last[i]), pop.expiry[i]);
      EXPECT_NEAR(t.states[e][i], p.u_star * -std::expm1(-p.mu_t * k), 1e-9 * p.u_star)
          << "epoch " << e << " source " << i;
    }
    for (uint32_t i : t.sets[e]) last[i] = int(e);  // crawled at e: age 1 at e+1, content u
  }
}

TEST(StaticPolicy, CrawlsTheMostOverdueSourcesWithinTheBudget) {
  const ce::Population pop = ce::paper_example();
  ce::RunConfig cfg;
  cfg.budget = 1;
  cfg.epochs = 40;
  cfg.burn_in = 10;
  ce::Problem pr = ce::make_problem(pop, cfg);
  ce::prepare_static_policy(pr);
  // The relaxation crawls sources 1 and 2 every other epoch and never 3 and 4 (M = 1).
  EXPECT_EQ(pr.static_period, (std::vector<uint32_t>{2, 2, 0, 0}));
  const ce::PolicyResult r = ce::evaluate(pr, ce::Policy::static_rate, ce::Backend::reference);
  EXPECT_NEAR(r.reward.mean, 260.39, 0.3);
}

TEST(CpuBackend, GeneralModelEqualsReference) {
  std::mt19937_64 rng(44);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  for (std::size_t n : {std::size_t(5), std::size_t(131), std::size_t(5000)}) {
    ce::Population pop;
    pop.origin = "random";
    for (std::size_t i = 0; i < n; ++i) {
      pop.lambda.push_back(0.1 + 4 * U(rng));
      pop.xi.push_back(0.2 + U(rng));
      pop.mu.push_back(0.05 + U(rng));
      pop.cost.push_back(i % 3 ? 1.0 : 1.5);
      pop.id.push_back(i);
      pop.expiry.push_back(i % 4 == 0 ? 0u : uint32_t(1 + rng() % 10));
    }
    for (ce::Model model : {ce::Model::deterministic, ce::Model::stochastic}) {
      for (ce::Observe obs : {ce::Observe::full, ce::Observe::belief}) {
        ce::RunConfig cfg;
        cfg.budget = std::floor(double(n) / 4);
        cfg.epochs = 30;
        cfg.burn_in = 2;
        cfg.replications = 2;
        cfg.model = model;
        cfg.observe = obs;
        cfg.threads = 2;
        ce::Problem pr = ce::make_problem(pop, cfg);
        ce::prepare_static_policy(pr);
        for (ce::Policy p : {ce::Policy::whittle, ce::Policy::greedy, ce::Policy::static_rate}) {
          SCOPED_TRACE("n " + std::to_string(n) + " " + ce::to_string(model) + " " +
                       ce::to_string(obs) + " " + ce::to_string(p));
          const Trace a = traced(pr, p, ce::Backend::reference),
                      b = traced(pr, p, ce::Backend::cpu);
          ASSERT_EQ(a.sets, b.sets);
          for (std::size_t t = 0; t < a.rewards.size(); ++t) ASSERT_EQ(a.rewards[t], b.rewards[t]);
          const ce::RolloutOutput ra = ce::rollout(pr, p, ce::Backend::reference);
          const ce::RolloutOutput rb = ce::rollout(pr, p, ce::Backend::cpu);
          for (std::size_t r = 0; r < ra.replication_reward.size(); ++r)
            EXPECT_NEAR(rb.replication_reward[r], ra.replication_reward[r],
                        1e-12 * ra.replication_reward[r]);
        }
      }
    }
  }
}

TEST(TargetCi, AddsReplicationsUntilTheIntervalIsNarrow) {
  const ce::Population pop = ce::paper_example();
  ce::RunConfig cfg;
  cfg.budget = 1;
  cfg.epochs = 100;
  cfg.replications = 4;
  cfg.model = ce::Model::stochastic;
  cfg.threads = 2;
  const ce::Problem pr = ce::make_problem(pop, cfg);
  ce::EvaluateOptions opt;
  opt.target_ci = 0.002;
  opt.max_replications = 4096;
  const ce::PolicyResult r = ce::evaluate(pr, ce::Policy::whittle, ce::Backend::cpu, nullptr, opt);
  EXPECT_TRUE(r.target_reached);
  EXPECT_GT(r.replications, 4u);
  EXPECT_LE(r.reward.half_width, 0.002 * r.reward.mean);
  EXPECT_EQ(r.replication_reward.size(), r.replications);
  // The added replications are new ones: the first four are those of the plain run.
  const ce::RolloutOutput plain = ce::rollout(pr, ce::Policy::whittle, ce::Backend::cpu);
  for (std::size_t k = 0; k < 4; ++k)
    EXPECT_EQ(r.replication_reward[k], plain.replication_reward[k]);
  EXPECT_NE(r.replication_reward[4], r.replication_reward[0]);
  // The cap stops it.
  opt.target_ci = 1e-9;
  opt.max_replications = 16;
  const ce::PolicyResult capped =
      ce::evaluate(pr, ce::Policy::whittle, ce::Backend::cpu, nullptr, opt);
  EXPECT_FALSE(capped.target_reached);
  EXPECT_EQ(capped.replications, 16u);
}
