// The function engine (function_rollout): a policy given as a score function. A function that
// computes a built-in policy's scores must give that policy's run bit for bit (the Python
// package's user policies rest on this); a monitor can stop any CPU engine between epochs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

#include "crawleval/base/monitor.hpp"
#include "crawleval/evaluate/driver.hpp"
#include "crawleval/io/io.hpp"
#include "crawleval/model/fresh_population.hpp"
#include "crawleval/model/policy.hpp"
#include "test_util.hpp"

namespace ce = crawleval;

namespace {

using crawleval::testing::random_population;

/// Greedy as a function: the built-in score x / C (policy.hpp: x * inv_cost).
ce::ScoreFn greedy_fn(const ce::Problem& pr) {
  return [&pr](const ce::ScoreRequest& q) {
    for (std::size_t i = 0; i < q.n; ++i) q.scores[i] = q.state[i] * pr.params().inv_cost[i];
  };
}

struct Observed {
  std::vector<std::vector<uint32_t>> sets;
  std::vector<double> rewards;
  ce::RolloutOutput out;
};

template <class F>
Observed observed(F&& rollout) {
  Observed r;
  ce::EpochObserver obs = [&](const ce::EpochView& v) {
    r.sets.push_back(*v.selected);
    r.rewards.push_back(v.reward);
  };
  r.out = rollout(&obs);
  return r;
}

}  // namespace

TEST(FunctionRollout, GreedyFunctionEqualsBuiltInGreedyBitForBit) {
  // 300: the small engine (sort); 40000: the wide engine (windowed radix select, 3 chunks).
  for (std::size_t n : {std::size_t(300), std::size_t(40000)}) {
    for (bool unit : {true, false}) {
      for (ce::Model model : {ce::Model::deterministic, ce::Model::stochastic}) {
        for (ce::Observe observe : {ce::Observe::full, ce::Observe::belief}) {
          const ce::Population pop = random_population(n, 17 + n, unit, false);
          ce::RunConfig cfg;
          cfg.budget = std::floor(double(n) / 7);
          cfg.epochs = n > 1000 ? 6 : 40;
          cfg.burn_in = 2;
          cfg.replications = 2;
          cfg.model = model;
          cfg.observe = observe;
          cfg.threads = 2;
          const ce::Problem pr = ce::make_problem(pop, cfg);
          SCOPED_TRACE("n " + std::to_string(n) + (unit ? " unit " : " costs ") +
                       ce::to_string(model) + " " + ce::to_string(observe));
          const Observed want = observed([&](const ce::EpochObserver* o) {
            return ce::cpu_rollout(pr, ce::Policy::greedy, o);
          });
          const Observed got = observed([&](const ce::EpochObserver* o) {
            return ce::function_rollout(pr, greedy_fn(pr), "mine", o);
          });
          ASSERT_EQ(got.sets, want.sets);
          EXPECT_EQ(got.rewards, want.rewards);
          EXPECT_EQ(got.out.replication_reward, want.out.replication_reward);
          EXPECT_EQ(got.out.replication_cost, want.out.replication_cost);
          EXPECT_EQ(got.out.epoch_reward, want.out.epoch_reward);
        }
      }
    }
  }
}

// Scores at the extremes (NaN, infinities, 1e300, denormals, signed zeros, ties) from a score
// function: every epoch's crawled set is the prefix selection.hpp's sort-based rule takes on the
// scores the function returned (reference_select), from one source to several chunks, with unit
// and other costs. (The function engine runs on the wide engine's windowed select for any N.)
TEST(FunctionRollout, ExtremeScoresCrawlTheRulesPrefix) {
  const double inf = std::numeric_limits<double>::infinity();
  const double table[] = {std::nan(""), inf,    -inf, 1e300, -1e300, 1e-300, -1e-300, 0.0,
                          -0.0,         5e-324, 1.0,  1.0,   1.0,    2.0,    -2.0};
  for (std::size_t n :
       {std::size_t(1), std::size_t(2), std::size_t(7), std::size_t(3001), std::size_t(40000)}) {
    for (bool unit : {true, false}) {
      const ce::Population pop = random_population(n, 5 + n, unit, false);
      ce::RunConfig cfg;
      double dearest = 0.0;
      for (double c : pop.cost) dearest = std::max(dearest, c);
      cfg.budget = std::max(dearest, std::floor(pop.total_cost() / 3));
      cfg.epochs = n > 1000 ? 4 : 12;
      cfg.burn_in = 1;
      cfg.threads = 2;
      const ce::Problem pr = ce::make_problem(pop, cfg);
      std::vector<std::vector<double>> given;  // the scores of every epoch
      const ce::ScoreFn fn = [&](const ce::ScoreRequest& q) {
        for (std::size_t i = 0; i < q.n; ++i)
          q.scores[i] = table[(i * 7919 + q.epoch * 31 + (i >> 3)) % std::size(table)];
        given.emplace_back(q.scores, q.scores + q.n);
      };
      SCOPED_TRACE("n " + std::to_string(n) + (unit ? " unit" : " costs"));
      const Observed got = observed(
          [&](const ce::EpochObserver* o) { return ce::function_rollout(pr, fn, "x", o); });
      ASSERT_EQ(got.sets.size(), given.size());
      const std::vector<double> costs = unit ? std::vector<double>() : pop.cost;
      for (std::size_t t = 0; t < given.size(); ++t) {
        std::vector<uint32_t> want = ce::reference_select(given[t], costs, pr.weights);
        std::sort(want.begin(), want.end());
        ASSERT_EQ(got.sets[t], want) << "epoch " << t;
      }
    }
  }
}

// Issue #28: on a slice of the 1e10-source synthetic population from id 5e9 the function engine's
// stochastic arrivals are those of the global ids: greedy as a function equals the built-in
// greedy (whose draws the reference's equal: test_cpu_backend.cpp) bit for bit.
TEST(FunctionRollout, SliceAboveTwoToThe32EqualsBuiltInGreedy) {
  for (std::size_t n : {std::size_t(300), std::size_t(40000)}) {
    ce::Population pop =
        ce::synthetic_slice(10000000000ull, 5, ce::SyntheticCosts::unit, 5000000000ull, n);
    pop.first_id = 5000000000ull;
    for (ce::Observe observe : {ce::Observe::full, ce::Observe::belief}) {
      ce::RunConfig cfg;
      cfg.budget = std::floor(double(n) / 9);
      cfg.epochs = 6;
      cfg.burn_in = 1;
      cfg.model = ce::Model::stochastic;
      cfg.observe = observe;
      cfg.threads = 2;
      const ce::Problem pr = ce::make_problem(pop, cfg);
      SCOPED_TRACE("n " + std::to_string(n) + " " + ce::to_string(observe));
      const Observed want = observed(
          [&](const ce::EpochObserver* o) { return ce::cpu_rollout(pr, ce::Policy::greedy, o); });
      const Observed got = observed([&](const ce::EpochObserver* o) {
        return ce::function_rollout(pr, greedy_fn(pr), "mine", o);
      });
      ASSERT_EQ(got.sets, want.sets);
      EXPECT_EQ(got.out.replication_reward, want.out.replication_reward);
      EXPECT_EQ(got.out.epoch_reward, want.out.epoch_reward);
    }
  }
}

TEST(FunctionRollout, SeesTheObservedStateAndAge) {
  // The reference's states, epoch by epoch; ages from the fresh start: 1 + epochs since a crawl.
  const ce::Population pop = ce::paper_example();
  ce::RunConfig cfg;
  cfg.budget = 1;
  cfg.epochs = 5;
  cfg.start = ce::Start::fresh;
  const ce::Problem pr = ce::make_problem(pop, cfg);
  std::vector<std::vector<double>> ref_states;
  ce::EpochObserver obs = [&](const ce::EpochView& v) { ref_states.push_back(*v.states); };
  ce::reference_rollout(pr, ce::Policy::round_robin, &obs);
  std::vector<std::vector<double>> states, ages;
  const ce::ScoreFn rr = [&](const ce::ScoreRequest& q) {
    states.emplace_back(q.state, q.state + q.n);
    ages.emplace_back(q.age, q.age + q.n);
    for (std::size_t i = 0; i < q.n; ++i)  // round robin: epoch t crawls source t mod n
      q.scores[i] = ce::round_robin_score(i, q.epoch % q.n, q.n);
  };
  ce::function_rollout(pr, rr, "rr");
  EXPECT_EQ(states, ref_states);
  ASSERT_EQ(ages.size(), 5u);
  EXPECT_EQ(ages[0], (std::vector<double>{1, 1, 1, 1}));
  EXPECT_EQ(ages[1], (std::vector<double>{1, 2, 2, 2}));
  EXPECT_EQ(ages[4], (std::vector<double>{4, 3, 2, 1}));
}

TEST(FunctionRollout, EvaluateFunctionNamesTheResult) {
  const ce::Population pop = random_population(500, 3, false, false);
  ce::RunConfig cfg;
  cfg.budget = 40;
  cfg.epochs = 20;
  cfg.replications = 3;
  cfg.model = ce::Model::stochastic;
  const ce::Problem pr = ce::make_problem(pop, cfg);
  const ce::PolicyResult got = ce::evaluate_function(pr, "mine", greedy_fn(pr));
  const ce::PolicyResult want = ce::evaluate(pr, ce::Policy::greedy, ce::Backend::cpu);
  EXPECT_EQ(got.name, "mine");
  EXPECT_FALSE(got.policy.has_value());
  EXPECT_EQ(want.name, "greedy");
  EXPECT_EQ(got.replication_reward, want.replication_reward);
  EXPECT_EQ(got.reward.half_width, want.reward.half_width);
}

namespace {
/// Stops the run at its k-th report.
class StopAfter : public ce::RunMonitor {
 public:
  explicit StopAfter(int k) : left_(k) { previous_ = ce::set_run_monitor(this); }
  ~StopAfter() override { ce::set_run_monitor(previous_); }
  bool update(const std::string& label, uint64_t done, uint64_t total) override {
    labels.push_back(label);
    EXPECT_LE(done, total);
    return --left_ > 0;
  }
  std::vector<std::string> labels;

 private:
  int left_;
  ce::RunMonitor* previous_;
};
}  // namespace

TEST(RunMonitor, StopsEveryCpuEngineWithInterrupted) {
  const ce::Population small = random_population(50, 1, true, false);
  const ce::Population wide = random_population(5000, 2, true, false);
  for (const ce::Population* pop : {&small, &wide}) {
    ce::RunConfig cfg;
    cfg.budget = 5;
    cfg.epochs = 20000000;  // hours, unless stopped
    const ce::Problem pr = ce::make_problem(*pop, cfg);
    {
      StopAfter stop(1);
      EXPECT_THROW(ce::cpu_rollout(pr, ce::Policy::whittle), ce::Interrupted);
      EXPECT_EQ(stop.labels, std::vector<std::string>{"whittle"});
    }
    {
      StopAfter stop(2);
      EXPECT_THROW(ce::function_rollout(pr, greedy_fn(pr), "mine"), ce::Interrupted);
    }
    {
      StopAfter stop(1);
      EXPECT_THROW(ce::reference_rollout(pr, ce::Policy::greedy), ce::Interrupted);
    }
  }
  // Without a monitor nothing is reported and nothing stops.
  EXPECT_EQ(ce::run_monitor(), nullptr);
}

// The synthetic freshness population's rate estimates take about 18 s per 1e6 sources and core:
// the generation reports its progress and a monitor can stop it; what it generates is the same.
TEST(RunMonitor, SeesAndStopsTheSyntheticFreshnessGeneration) {
  {
    StopAfter stop(1);
    EXPECT_THROW(ce::synthetic_fresh_slice(20000, 1, true, 0, 20000, true), ce::Interrupted);
    ASSERT_EQ(stop.labels.size(), 1u);
    EXPECT_EQ(stop.labels[0], "generating the synthetic sources");
  }
  StopAfter never(1 << 30);
  const ce::FreshPopulation shown = ce::synthetic_fresh_slice(20000, 1, true, 0, 20000, true);
  EXPECT_FALSE(never.labels.empty());
  const std::size_t reports = never.labels.size();
  const ce::FreshPopulation quiet = ce::synthetic_fresh_population(20000, 1);
  EXPECT_EQ(never.labels.size(), reports);  // not asked for: nothing reported, even to a monitor
  EXPECT_EQ(shown.rate, quiet.rate);
  EXPECT_EQ(shown.host, quiet.host);
}

TEST(PopulationFromColumns, SortsByIdAndNamesTheBadSource) {
  const double lambda[] = {1, 2, 3}, xi[] = {1, 1, 1}, mu[] = {1, 2, 3}, cost[] = {1, 2, 3};
  const uint64_t id[] = {30, 10, 20};
  const uint32_t expiry[] = {0, 4, 0};
  const ce::Population p =
      ce::population_from_columns(3, lambda, xi, mu, cost, id, nullptr, expiry, "arrays");
  EXPECT_EQ(p.id, (std::vector<uint64_t>{10, 20, 30}));
  EXPECT_EQ(p.lambda, (std::vector<double>{2, 3, 1}));
  EXPECT_EQ(p.cost, (std::vector<double>{2, 3, 1}));
  EXPECT_EQ(p.expiry, (std::vector<uint32_t>{4, 0, 0}));
  EXPECT_TRUE(p.x0.empty());
  const ce::Population d =
      ce::population_from_columns(3, lambda, xi, mu, nullptr, nullptr, nullptr, nullptr, "a");
  EXPECT_EQ(d.id, (std::vector<uint64_t>{0, 1, 2}));
  EXPECT_EQ(d.cost, (std::vector<double>{1, 1, 1}));

  const uint64_t dup[] = {4, 7, 4};
  try {
    ce::population_from_columns(3, lambda, xi, mu, cost, dup, nullptr, nullptr, "arrays");
    FAIL() << "duplicate ids accepted";
  } catch (const ce::InputError& e) {
    EXPECT_STREQ(e.what(), "arrays: row 2: field 'id': id 4 already used in row 0");
  }
  const double bad_mu[] = {1, 0, 1};
  try {
    ce::population_from_columns(3, lambda, xi, bad_mu, nullptr, id, nullptr, nullptr, "arrays");
    FAIL() << "mu = 0 accepted";
  } catch (const ce::InputError& e) {
    EXPECT_STREQ(e.what(), "arrays: source with id 10, field 'mu' must be a finite number > 0");
  }
}
