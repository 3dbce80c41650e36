// The papers' 4-source example (Table 1, T = 1) through the whole pipeline.
#include <gtest/gtest.h>

#include <cmath>

#include "crawleval/analysis/optimal.hpp"
#include "crawleval/evaluate/driver.hpp"
#include "crawleval/io/io.hpp"

namespace ce = crawleval;

namespace {

ce::RunConfig config(double budget, uint64_t epochs, uint64_t burn_in) {
  ce::RunConfig c;
  c.budget = budget;
  c.epochs = epochs;
  c.burn_in = burn_in;
  c.threads = 2;
  return c;
}

// x_k = (1 - alpha^k) u*: the state of a source crawled k epochs ago.
double grid_state(int source, int k) {
  const double xi[] = {1.0, 0.7, 0.2, 0.08}, mu[] = {0.7, 0.35, 0.7, 0.21};
  return 250.0 * xi[source - 1] / mu[source - 1] * (1 - std::exp(-mu[source - 1] * k));
}

}  // namespace

TEST(PaperExample, CrawlingOnlySourceOneGives179_79) {
  ce::Population one = ce::paper_example();
  for (auto* v : {&one.lambda, &one.xi, &one.mu, &one.cost}) v->resize(1);
  one.id.resize(1);
  const ce::Problem pr = ce::make_problem(one, config(1, 50, 1));  // epoch 0 crawls an empty source
  for (ce::Backend b : {ce::Backend::reference, ce::Backend::cpu}) {
    const ce::PolicyResult r = ce::evaluate(pr, ce::Policy::whittle, b);
    EXPECT_NEAR(r.reward.mean, 179.79, 0.005) << ce::to_string(b);
  }
}

TEST(PaperExample, WhittleWithOneCrawlAlternatesSourcesOneAndTwo) {
  const ce::Population pop = ce::paper_example();
  const ce::Problem pr = ce::make_problem(pop, config(1, 400, 20));
  std::vector<std::vector<uint32_t>> sets;
  ce::EpochObserver obs = [&](const ce::EpochView& v) { sets.push_back(*v.selected); };
  const ce::PolicyResult r = ce::evaluate(pr, ce::Policy::whittle, ce::Backend::reference, &obs);
  ASSERT_EQ(sets.size(), 420u);
  // From empty sources, epochs 0 and 1 both crawl source 1 (a tie at 0, then gamma(u) is larger
  // for source 1); from then on the two alternate.
  for (std::size_t t = 2; t < sets.size(); ++t) {
    ASSERT_EQ(sets[t].size(), 1u);
    EXPECT_LE(sets[t][0], 1u) << "epoch " << t;              // only sources 1 and 2 (ids 0, 1)
    EXPECT_NE(sets[t][0], sets[t - 1][0]) << "epoch " << t;  // alternately
  }
  // Each is crawled every second epoch: reward (x_2 of source 1 + x_2 of source 2) / 2.
  const double expected = 0.5 * (grid_state(1, 2) + grid_state(2, 2));
  EXPECT_NEAR(expected, 260.39, 0.005);
  EXPECT_NEAR(r.reward.mean, expected, 1e-9 * expected);
}

// This test asserts a fit, not a reproduction. The papers report 254.66 for the Whittle policy
// with M = 1, below its long-run 260.39, and give no horizon or start. The mean reward of a finite
// run from empty sources (X = 0) matches it at one horizon, 61 epochs (t = 0..60): the horizon was
// chosen to fit. Its neighbours show how sharp the fit is (60 epochs: 254.71, 62: 254.89), and
// from fresh sources (X = u) no horizon comes closer than 254.81 (docs/reproduction.md).
TEST(PaperExample, Fit61EpochsFromEmptySourcesGives254_66) {
  const ce::Population pop = ce::paper_example();
  auto mean_of_first = [&](uint64_t epochs, ce::Backend b) {
    ce::RunConfig c = config(1, epochs, 0);
    c.start = ce::Start::empty;
    const ce::Problem pr = ce::make_problem(pop, c);
    return ce::rollout(pr, ce::Policy::whittle, b).replication_reward[0];
  };
  for (ce::Backend b : {ce::Backend::reference, ce::Backend::cpu}) {
    EXPECT_NEAR(mean_of_first(61, b), 254.66, 0.005) << ce::to_string(b);
    EXPECT_NEAR(mean_of_first(60, b), 254.71, 0.005) << ce::to_string(b);
    EXPECT_NEAR(mean_of_first(62, b), 254.89, 0.005) << ce::to_string(b);
  }
}

TEST(PaperExample, WhittleEqualsTheExactOptimumWithOneCrawl) {
  const ce::Population pop = ce::paper_example();
  const ce::OptimalResult opt = ce::exact_optimum(pop, 1.0, 1.0);
  ASSERT_TRUE(opt.closed);
  const ce::Problem pr = ce::make_problem(pop, config(1, 1000, 50));
  const ce::PolicyResult w = ce::evaluate(pr, ce::Policy::whittle, ce::Backend::cpu);
  EXPECT_NEAR(w.reward.mean, opt.gain, 1e-6 * opt.gain);
  EXPECT_LE(opt.gain_high - opt.gain_low, 1e-8 * opt.gain);
  // The optimal cycle found is the same alternation.
  ASSERT_EQ(opt.cycle.size(), 2u);
  EXPECT_EQ(opt.cycle[0].size(), 1u);
  EXPECT_NE(opt.cycle[0], opt.cycle[1]);
  EXPECT_NEAR(opt.cycle_reward, opt.gain, 1e-6 * opt.gain);
}

TEST(PaperExample, RoundRobinWithOneCrawlGivesAbout208) {
  // The slides report 208 for round robin with M = 1: each source crawled every fourth epoch.
  const ce::Population pop = ce::paper_example();
  const ce::Problem pr = ce::make_problem(pop, config(1, 400, 8));
  const ce::PolicyResult r = ce::evaluate(pr, ce::Policy::round_robin, ce::Backend::cpu);
  double expected = 0.0;
  for (int s = 1; s <= 4; ++s) expected += grid_state(s, 4) / 4;
  EXPECT_NEAR(r.reward.mean, expected, 1e-9 * expected);
  EXPECT_NEAR(r.reward.mean, 208.0, 0.5);
}

TEST(PaperExample, PoliciesAreBelowTheOptimumWithTwoCrawls) {
  const ce::Population pop = ce::paper_example();
  const ce::OptimalResult opt = ce::exact_optimum(pop, 1.0, 2.0);
  ASSERT_TRUE(opt.closed);
  const ce::Problem pr = ce::make_problem(pop, config(2, 2000, 200));
  for (ce::Policy p :
       {ce::Policy::whittle, ce::Policy::greedy, ce::Policy::round_robin, ce::Policy::random}) {
    const ce::PolicyResult r = ce::evaluate(pr, p, ce::Backend::cpu);
    // A finite window can start from fuller-than-average states: at most sum u* / H above g*.
    const double window = (357.15 + 500.0 + 71.43 + 95.24) / 2000.0;
    EXPECT_LE(r.reward.mean, opt.gain_high + window) << ce::to_string(p);
  }
}
