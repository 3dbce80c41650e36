// The host twin of the CUDA wide engine's generic pass (kernels/generic_pass.cu): the pass's
// per-source functions (engine/generic_step.hpp) run on the host in the kernel's order (launch t
// applies epoch t-1's selection and transition, then scores epoch t; round robin's pointer
// advances by the sources crawled), with the reference's full-sort selection in place of the
// device's windowed one (whose own host twin is tests/test_window_select.cpp). They must give the
// reference engine's crawled sets and rewards bit for bit: the general model (belief observation,
// content expiry, utility laws), every built-in policy, the three starts, non-unit costs, global
// ids across 2^32 and a later first replication.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "crawleval/analysis/bound.hpp"
#include "crawleval/engine/generic_step.hpp"
#include "crawleval/engine/rollout.hpp"
#include "crawleval/io/io.hpp"
#include "test_util.hpp"

namespace ce = crawleval;

namespace {

struct TwinTrace {
  std::vector<std::vector<uint32_t>> sets;  // every epoch of every replication, in order
  std::vector<double> rewards;
};

TwinTrace generic_twin(const ce::Problem& pr, ce::Policy policy) {
  const std::size_t n = pr.size();
  const ce::RunConfig& cfg = pr.config;
  std::vector<ce::SourceParams> params(n);
  for (std::size_t i = 0; i < n; ++i) params[i] = pr.params().at(i);
  ce::GenericPass g;
  g.params = params.data();
  g.x0 = pr.initial_state().data();
  g.period = pr.policy_periods(policy);
  g.gain = pr.policy_gains(policy);
  g.policy = policy;
  g.observe = cfg.observe;
  g.deterministic = cfg.model == ce::Model::deterministic;
  g.utility = cfg.utility;
  g.seed = cfg.seed;
  g.first_id = pr.first_id;
  g.n = n;
  g.multiplier = pr.lip_multiplier;
  std::vector<double> cost(n);
  for (std::size_t i = 0; i < n; ++i) cost[i] = pr.population->cost_of(i);
  TwinTrace out;
  const uint64_t total = pr.total_epochs();
  for (uint32_t rep = 0; rep < cfg.replications; ++rep) {
    const uint32_t r = cfg.first_replication + rep;
    std::vector<double> x = pr.initial_state(), score(n);
    std::vector<uint32_t> w = pr.initial_age();
    std::vector<uint8_t> crawled(n, 0);
    uint64_t pointer = 0;
    for (uint64_t t = 0; t <= total; ++t) {  // the engine's launches: t applies t-1, scores t
      const bool apply = t > 0, scoring = t < total;
      double reward = 0.0;
      for (std::size_t i = 0; i < n; ++i) {
        if (apply) {
          if (crawled[i]) reward += x[i];
          const ce::GenericState s =
              ce::generic_next(g, i, crawled[i], r, uint32_t(t - 1), x[i], w[i]);
          x[i] = s.x, w[i] = s.w;
        }
        if (scoring) score[i] = ce::generic_score(g, i, r, uint32_t(t), pointer, x[i], w[i]);
      }
      if (apply) out.rewards.push_back(reward);
      if (!scoring) continue;
      std::vector<uint32_t> chosen = ce::reference_select(score, cost, pr.weights);
      std::sort(chosen.begin(), chosen.end());
      std::fill(crawled.begin(), crawled.end(), 0);
      for (uint32_t i : chosen) crawled[i] = 1;
      pointer = (pointer + chosen.size()) % n;
      out.sets.push_back(std::move(chosen));
    }
  }
  return out;
}

struct Case {
  const char* name;
  ce::Model model;
  ce::Observe observe;
  bool expiry, unit_costs;
  const char* law;  // "" : exponential
  ce::Start start;
};

ce::Population population_of(const Case& c, std::size_t n) {
  ce::Population pop = ce::testing::random_population(n, 11 + n, c.unit_costs, true);
  if (c.expiry) {
    pop.expiry.resize(n);
    for (std::size_t i = 0; i < n; ++i) pop.expiry[i] = i % 3 ? uint32_t(2 + i % 5) : 0u;
  }
  pop.first_id = (uint64_t(1) << 32) - n / 2;  // the draws' ids cross 2^32
  return pop;
}

void expect_twin_is_reference(const Case& c, ce::Policy policy) {
  SCOPED_TRACE(std::string(c.name) + " x " + ce::to_string(policy));
  const std::size_t n = 500;
  const ce::Population pop = population_of(c, n);
  ce::RunConfig cfg;
  cfg.budget = c.unit_costs ? 60 : 60.5;
  cfg.epochs = 7;
  cfg.burn_in = 3;
  cfg.replications = 2;
  cfg.first_replication = 5;
  cfg.seed = 19;
  cfg.model = c.model;
  cfg.observe = c.observe;
  cfg.start = c.start;
  if (*c.law) ce::set_utility(cfg, c.law);
  ce::Problem pr = ce::make_problem(pop, cfg);
  if (policy == ce::Policy::static_rate) ce::prepare_static_policy(pr);
  if (policy == ce::Policy::lip) ce::prepare_lip_policy(pr);
  const ce::testing::Trace ref = ce::testing::observed(
      [&](const ce::EpochObserver* o) { return ce::reference_rollout(pr, policy, o); });
  const TwinTrace twin = generic_twin(pr, policy);
  ASSERT_EQ(twin.sets.size(), ref.sets.size());
  for (std::size_t e = 0; e < ref.sets.size(); ++e) {
    EXPECT_EQ(twin.sets[e], ref.sets[e]) << "epoch entry " << e;
    EXPECT_EQ(twin.rewards[e], ref.rewards[e]) << "epoch entry " << e;
  }
  // Something was crawled, and not everything: the budget binds.
  EXPECT_GT(ref.sets.back().size(), 0u);
  EXPECT_LT(ref.sets.back().size(), n);
}

constexpr ce::Policy kPolicies[] = {ce::Policy::whittle,     ce::Policy::greedy,
                                    ce::Policy::round_robin, ce::Policy::random,
                                    ce::Policy::static_rate, ce::Policy::lip};

const Case kCases[] = {
    {"deterministic belief", ce::Model::deterministic, ce::Observe::belief, false, true, "",
     ce::Start::empty},
    {"stochastic belief", ce::Model::stochastic, ce::Observe::belief, false, true, "",
     ce::Start::empty},
    {"deterministic expiry, full start", ce::Model::deterministic, ce::Observe::full, true, true,
     "", ce::Start::full},
    {"stochastic expiry, costs", ce::Model::stochastic, ce::Observe::full, true, false, "",
     ce::Start::empty},
    {"stochastic lognormal:2, full start", ce::Model::stochastic, ce::Observe::full, false, true,
     "lognormal:2", ce::Start::full},
    {"stochastic pareto:3, belief, costs", ce::Model::stochastic, ce::Observe::belief, false, false,
     "pareto:3", ce::Start::empty},
    {"deterministic, given start, costs", ce::Model::deterministic, ce::Observe::full, false, false,
     "", ce::Start::given},
};

TEST(GenericPass, HostTwinEqualsTheReference) {
  for (const Case& c : kCases)
    for (ce::Policy p : kPolicies) expect_twin_is_reference(c, p);
}

}  // namespace
