// The relaxed problem's policies: the average-budget policy's long-run reward is the Lagrangian
// bound (computed independently by bound.cpp), its spend is M, and a simulation agrees; the online
// dual descent reaches the multiplier.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "crawleval/analysis/bound.hpp"
#include "crawleval/analysis/relaxed_policy.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/model/model.hpp"
#include "crawleval/model/population.hpp"

namespace ce = crawleval;

namespace {

ce::Population random_population(std::size_t n, uint64_t seed, bool unit_costs, uint32_t expiry) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  ce::Population p;
  p.origin = "random";
  for (std::size_t i = 0; i < n; ++i) {
    p.lambda.push_back(1 + 10 * U(rng));
    p.xi.push_back(0.2 + U(rng));
    p.mu.push_back(0.05 + 1.5 * U(rng));
    p.cost.push_back(unit_costs ? 1.0 : 0.5 + double(rng() % 6) * 0.25);
    if (expiry) p.expiry.push_back(1 + uint32_t(rng() % expiry));
    p.id.push_back(i);
  }
  return p;
}

ce::RunConfig config(double budget) {
  ce::RunConfig c;
  c.budget = budget;
  c.epochs = 20000;
  c.burn_in = 500;
  c.replications = 8;
  return c;
}

}  // namespace

// The 4-source example with M = 1, by hand: at lambda* sources 1 and 2 have period 2 and 3 and 4
// are never crawled, a spend of 1/2 + 1/2 = 1 = M with no tie; the reward is (x_2 of source 1 +
// x_2 of source 2) / 2 = 260.39, the exact optimum (docs/reproduction.md, section 1).
TEST(AverageBudget, PaperExampleByHand) {
  const ce::Population pop = ce::paper_example();
  const ce::Problem pr = ce::make_problem(pop, config(1.0));
  const ce::AverageBudgetPolicy pol = ce::average_budget_policy(pr);
  const ce::SourceParams p1 = pr.params().at(0), p2 = pr.params().at(1);
  const double x2_1 = p1.u_star * (1 - p1.alpha * p1.alpha);
  const double x2_2 = p2.u_star * (1 - p2.alpha * p2.alpha);
  EXPECT_NEAR(pol.reward, (x2_1 + x2_2) / 2, 1e-9);
  EXPECT_NEAR(pol.reward, 260.38993049116357, 1e-9);  // the Whittle policy's long run
  EXPECT_NEAR(pol.spend, 1.0, 1e-12);
  EXPECT_EQ(pol.period_hi[0], 2u);
  EXPECT_EQ(pol.period_hi[1], 2u);
  EXPECT_EQ(pol.period_hi[2], 0u);
  EXPECT_EQ(pol.period_hi[3], 0u);
}

// Its long-run reward is the bound, the relaxation's value computed by bound.cpp (its fast path
// and its serial reference), and its spend is M exactly: unit and unequal costs, with and without
// expiry, budgets where sources tie.
TEST(AverageBudget, RewardIsTheBoundAndSpendIsTheBudget) {
  struct Case {
    ce::Population pop;
    double budget;
  };
  std::vector<Case> cases;
  for (double m : {1.0, 2.0, 3.0, 1.5, 2.5}) cases.push_back({ce::paper_example(), m});
  for (double m : {3.0, 17.5, 60.0}) cases.push_back({random_population(200, 7, true, 0), m});
  for (double m : {4.0, 30.0}) cases.push_back({random_population(150, 8, false, 0), m});
  for (double m : {2.0, 25.0}) cases.push_back({random_population(120, 9, true, 6), m});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.pop.origin + " M = " + std::to_string(c.budget));
    const ce::Problem pr = ce::make_problem(c.pop, config(c.budget));
    const ce::AverageBudgetPolicy pol = ce::average_budget_policy(pr);
    const double bound = ce::lagrangian_bound(pr).bound;
    const double reference = ce::lagrangian_bound_reference(pr).bound;
    EXPECT_NEAR(pol.reward, bound, 1e-9 * bound);
    EXPECT_NEAR(pol.reward, reference, 1e-9 * bound);
    EXPECT_NEAR(pol.spend, c.budget, 1e-9 * c.budget);
    EXPECT_GE(pol.tie_probability, 0.0);
    EXPECT_LE(pol.tie_probability, 1.0);
  }
}

// A budget that ties: M = 1.5 on the example cannot be met by periods alone, so one source
// randomises; the simulation's reward and spend agree with the exact ones, and some epochs spend
// more than M (the budget holds on average only).
TEST(AverageBudget, SimulationAgreesWithTheExactFigures) {
  for (double m : {1.5, 2.0, 2.5}) {
    SCOPED_TRACE(m);
    const ce::Population pop = ce::paper_example();
    const ce::Problem pr = ce::make_problem(pop, config(m));
    const ce::AverageBudgetPolicy pol = ce::average_budget_policy(pr);
    EXPECT_GE(pol.tied, 1u);
    const ce::AverageBudgetRun sim = ce::simulate_average_budget(pr, pol);
    if (sim.ci_low < sim.ci_high) {
      EXPECT_LE(sim.ci_low, pol.reward + 1e-9);
      EXPECT_GE(sim.ci_high, pol.reward - 1e-9);
    } else {  // p = 0 (M = 2.5: the periods above lambda* spend M): one periodic run, a window
      EXPECT_NEAR(sim.mean_reward, pol.reward, 1e-3 * pol.reward);
    }
    EXPECT_NEAR(sim.mean_spend, m, 0.01 * m);
    if (m != std::floor(m)) {  // whole crawls: some epochs spend more than a fractional M
      EXPECT_GT(sim.worst_spend, m);
      EXPECT_GT(sim.over_budget, 0.0);
    }
  }
}

// At M = 1 the periods above the multiplier spend M exactly: the tie probability is 0, the policy
// draws nothing, and every replication is the same periodic run.
TEST(AverageBudget, NoTieMeansNoDraws) {
  ce::RunConfig c = config(1.0);
  c.epochs = 1000;
  const ce::Population pop = ce::paper_example();
  const ce::Problem pr = ce::make_problem(pop, c);
  const ce::AverageBudgetPolicy pol = ce::average_budget_policy(pr);
  EXPECT_EQ(pol.tie_probability, 0.0);
  const ce::AverageBudgetRun sim = ce::simulate_average_budget(pr, pol);
  for (double r : sim.replication_reward) EXPECT_EQ(r, sim.replication_reward[0]);
  EXPECT_NEAR(sim.mean_reward, pol.reward, 1e-9 * pol.reward);
}

// A budget of every source every epoch: the multiplier is 0 and every source is crawled every
// epoch.
TEST(AverageBudget, BudgetOfEverything) {
  const ce::Population pop = ce::paper_example();
  const ce::Problem pr = ce::make_problem(pop, config(4.0));
  const ce::AverageBudgetPolicy pol = ce::average_budget_policy(pr);
  EXPECT_EQ(pol.lambda, 0.0);
  EXPECT_NEAR(pol.spend, 4.0, 1e-12);
  double x1 = 0.0;
  for (std::size_t i = 0; i < 4; ++i) x1 += ce::drift(pr.params().at(i));
  EXPECT_NEAR(pol.reward, x1, 1e-9);
}

TEST(AverageBudget, RefusesFullObservationOfTheStochasticModel) {
  ce::RunConfig c = config(1.0);
  c.model = ce::Model::stochastic;
  c.observe = ce::Observe::full;
  const ce::Population pop = ce::paper_example();
  const ce::Problem pr = ce::make_problem(pop, c);
  EXPECT_THROW(ce::average_budget_policy(pr), ce::InputError);
}

// The online dual descent: its multiplier's mean over the second half of the run approaches
// lambda*, and over that half it spends M on average and earns near the bound. (With M = 1 the
// example's dual is flat over a range of multipliers, every one a minimiser: there only the spend
// and the reward are checked.)
TEST(DualDescent, ReachesTheMultiplier) {
  for (double m : {1.0, 2.0, 3.0}) {
    SCOPED_TRACE(m);
    const ce::Population pop = ce::paper_example();
    const ce::Problem pr = ce::make_problem(pop, config(m));
    ce::DualDescentConfig dc;
    dc.epochs = 40000;
    dc.every = 100;
    const ce::DualDescentRun dd = ce::dual_descent(pr, dc);
    if (m != 1.0) EXPECT_NEAR(dd.late_lambda_average, dd.lambda_star, 0.05 * dd.lambda_star);
    EXPECT_NEAR(dd.late_spend, m, 0.02 * m);
    EXPECT_NEAR(dd.late_reward, dd.bound, 0.01 * dd.bound);
    EXPECT_EQ(dd.epoch.size(), 400u + 1u);
  }
  const ce::Population syn_pop = random_population(300, 3, true, 0);
  const ce::Problem syn = ce::make_problem(syn_pop, config(20.0));
  ce::DualDescentConfig dc;
  dc.epochs = 20000;
  const ce::DualDescentRun dd = ce::dual_descent(syn, dc);
  EXPECT_NEAR(dd.late_lambda_average, dd.lambda_star, 0.05 * dd.lambda_star);
  EXPECT_NEAR(dd.late_spend, 20.0, 0.02 * 20.0);
  EXPECT_NEAR(dd.late_reward, dd.bound, 0.01 * dd.bound);
}
