// The policy registry (policy_registry.hpp): every policy a user can name is one entry that both
// front ends read, and it evaluates as the engines do.
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <string>

#include "crawleval/evaluate/driver.hpp"
#include "crawleval/evaluate/policy_registry.hpp"
#include "crawleval/model/population.hpp"
#include "crawleval/model/problem.hpp"

namespace ce = crawleval;

TEST(PolicyRegistry, EveryNameOnceEveryBuiltinPolicyOnce) {
  std::set<std::string> names;
  std::set<int> builtins;
  for (const ce::RegisteredPolicy& p : ce::policy_registry()) {
    SCOPED_TRACE(p.name);
    EXPECT_TRUE(names.insert(p.name).second) << "a name given twice";
    EXPECT_GT(std::string(p.description).size(), 10u);
    EXPECT_EQ(std::string(p.description).find('\n'), std::string::npos);
    EXPECT_EQ(ce::find_policy(p.name), &p);
    if (p.builtin) {
      // A built-in policy is named as the engines name it, and is made by them.
      EXPECT_STREQ(ce::to_string(*p.builtin), p.name);
      EXPECT_TRUE(builtins.insert(int(*p.builtin)).second);
      EXPECT_EQ(p.make, nullptr);
    } else {
      EXPECT_NE(p.make, nullptr);
    }
  }
  EXPECT_EQ(builtins.size(), std::size(ce::EnumNames<ce::Policy>::table));
  EXPECT_EQ(ce::policy_choices(),
            "whittle, greedy, round_robin, random, static, lip, whittle_numerical, "
            "whittle_expiry_paper, whittle_mixed, greedy_mixed, adaptive_whittle");
  EXPECT_EQ(ce::find_policy("Whittle"), nullptr);
  try {
    ce::registered_policy("fastest", "--policy");
    FAIL() << "no error";
  } catch (const ce::InputError& e) {
    EXPECT_EQ(std::string(e.what()), "--policy 'fastest' is not one of: " + ce::policy_choices());
  }
}

// A registry policy's result is its maker's score on the function engine: without an observe
// column, whittle_mixed under belief is the engines' whittle under belief, bit for bit (as the
// command line's test says of `--policy whittle,whittle_mixed`); the preparations fill what
// static and lip read.
TEST(PolicyRegistry, EvaluatesAsTheEnginesDo) {
  const ce::Population pop = ce::paper_example();
  ce::RunConfig cfg;
  cfg.budget = 1;
  cfg.model = ce::Model::stochastic;
  cfg.observe = ce::Observe::belief;
  cfg.epochs = 60;
  cfg.burn_in = 5;
  cfg.replications = 3;
  ce::Problem problem = ce::make_problem(pop, cfg);
  ce::PolicyRunOptions o;
  o.backend = ce::Backend::cpu;
  std::vector<const ce::RegisteredPolicy*> chosen;
  for (const char* name : {"whittle", "whittle_mixed", "static", "lip"})
    chosen.push_back(&ce::registered_policy(name, "policy"));
  ce::prepare_policies(problem, chosen, o);
  EXPECT_NE(problem.policy_periods(ce::Policy::static_rate), nullptr);
  EXPECT_NE(problem.policy_periods(ce::Policy::lip), nullptr);
  const ce::PolicyResult whittle = ce::evaluate_policy(problem, *chosen[0], o);
  const ce::PolicyResult mixed = ce::evaluate_policy(problem, *chosen[1], o);
  EXPECT_EQ(whittle.policy, ce::Policy::whittle);
  EXPECT_EQ(mixed.policy, std::nullopt);
  EXPECT_EQ(mixed.name, "whittle_mixed");
  EXPECT_EQ(mixed.replication_reward, whittle.replication_reward);
  for (const ce::RegisteredPolicy* p : {chosen[2], chosen[3]})
    EXPECT_EQ(ce::evaluate_policy(problem, *p, o).replication_reward,
              ce::evaluate(problem, *p->builtin, ce::Backend::cpu).replication_reward)
        << p->name;

  // The numerical index reports its lattice; an observer sees the measured epochs only.
  cfg.observe = ce::Observe::full;
  const ce::Problem full = ce::make_problem(pop, cfg);
  o.index_grid = 300;
  std::atomic<uint64_t> epochs{0};
  const ce::EpochObserver count = [&](const ce::EpochView&) { ++epochs; };
  o.observer = &count;
  ce::PolicyNotes notes;
  const ce::PolicyResult numerical =
      ce::evaluate_policy(full, ce::registered_policy("whittle_numerical", "policy"), o, &notes);
  ASSERT_TRUE(notes.numerical_index.has_value());
  EXPECT_EQ(notes.numerical_index->grid, 300u);
  EXPECT_EQ(notes.numerical_index->classes, 3u);
  EXPECT_EQ(numerical.name, "whittle_numerical");
  EXPECT_EQ(epochs.load(), uint64_t(cfg.replications) * (cfg.burn_in + cfg.epochs));
}
