// The budget rule on extreme but accepted costs (selection.hpp, FixedBudget): every engine crawls
// the reference's prefix epoch by epoch, a crawled set never costs more than the budget (checked
// in long double, independently of the integer weights), no source is free, and the rule leaves
// unspent at most what its documented quantum allows. Costs sweep 1e-300..1e300; budgets sit at
// the edges: the smallest cost, just below one cost, the whole clamped total, 1e-300 and 1e300.
// The MPI engine runs the same populations in test_mpi.cpp; the CUDA engines walk the same
// fixed_weight integers (kernels/), which these tests pin down on the host.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "crawleval/analysis/fresh_rates.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/engine/fresh_engine.hpp"
#include "crawleval/engine/rollout.hpp"
#include "crawleval/evaluate/driver.hpp"
#include "crawleval/evaluate/fresh_evaluate.hpp"
#include "crawleval/io/io.hpp"
#include "crawleval/model/problem.hpp"
#include "crawleval/model/selection.hpp"
#include "test_util.hpp"

namespace ce = crawleval;

namespace {

enum class Costs { log_uniform, one_huge, all_tiny, extremes, decimals };

const char* name(Costs c) {
  switch (c) {
    case Costs::log_uniform:
      return "log-uniform 1e-300..1e300";
    case Costs::one_huge:
      return "one 1e20 among 0.5..2";
    case Costs::all_tiny:
      return "all 1e-13";
    case Costs::extremes:
      return "1e-300, 1 and 1e300";
    default:
      return "decimals 0.1..0.9";
  }
}

/// A population whose value per unit of cost stays finite (the parser's check) for any cost.
ce::Population extreme_population(std::size_t n, Costs kind, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  ce::Population pop;
  pop.origin = std::string("extreme(") + name(kind) + ")";
  for (std::size_t i = 0; i < n; ++i) {
    double c = 1.0;
    switch (kind) {
      case Costs::log_uniform:
        c = std::pow(10.0, -300.0 + 600.0 * U(rng));
        break;
      case Costs::one_huge:
        c = i == n / 3 ? 1e20 : 0.5 + 1.5 * U(rng);
        break;
      case Costs::all_tiny:
        c = 1e-13;
        break;
      case Costs::extremes: {
        const auto r = rng() % 3;
        c = r == 0 ? 1e-300 : r == 1 ? 1.0 : 1e300;
        break;
      }
      case Costs::decimals:
        c = double(1 + rng() % 9) / 10.0;
        break;
    }
    pop.cost.push_back(c);
    pop.lambda.push_back(kind == Costs::one_huge && i == n / 3 ? 1e25 : 0.05 + 5 * U(rng));
    pop.xi.push_back(0.1 + 2 * U(rng));
    pop.mu.push_back(0.02 + 1.5 * U(rng));
    pop.id.push_back(i);
  }
  return pop;
}

/// Budgets at the edges of what the rule must honour (all within the parser's range: > 0 and at
/// most the total cost).
std::vector<double> edge_budgets(const ce::Population& pop) {
  std::vector<double> c = pop.cost;
  std::sort(c.begin(), c.end());
  const double total = pop.total_cost();
  std::vector<double> b = {c.front(),
                           c[c.size() / 2],
                           std::nextafter(c[c.size() / 2], 0.0),
                           std::accumulate(c.begin(), c.begin() + long(c.size() / 4 + 1), 0.0),
                           1e-300,
                           1e300,
                           total};
  b.erase(std::remove_if(b.begin(), b.end(), [&](double m) { return !(m > 0.0) || m > total; }),
          b.end());
  return b;
}

/// The (score desc, id asc) order of an epoch's scores.
std::vector<uint32_t> order_of(const std::vector<double>& score) {
  std::vector<uint32_t> o(score.size());
  std::iota(o.begin(), o.end(), 0u);
  std::sort(o.begin(), o.end(), [&](uint32_t a, uint32_t b) {
    return score[a] != score[b] ? score[a] > score[b] : a < b;
  });
  return o;
}

/// Checks one crawled set against the budget in long double arithmetic, independently of the
/// weights: within the limit, and (when something was left out) the first source left out would
/// not have fitted but for at most K quanta of rounding (selection.hpp).
void expect_within_budget(const ce::Population& pop, const ce::FixedBudget& fb,
                          const std::vector<uint32_t>& crawled) {
  std::vector<long double> c;
  for (uint32_t i : crawled) c.push_back(pop.cost[i]);
  std::sort(c.begin(), c.end());  // ascending: the small ones are not lost
  long double used = 0;
  for (long double v : c) used += v;
  EXPECT_LE(used, (long double)fb.cost_limit * (1 + 1e-15L)) << crawled.size() << " crawled";
}

void expect_maximal(const ce::Population& pop, const ce::FixedBudget& fb,
                    const std::vector<double>& score, const std::vector<uint32_t>& crawled) {
  std::vector<uint8_t> in(pop.size(), 0);
  for (uint32_t i : crawled) in[i] = 1;
  long double used = 0;
  std::vector<long double> c;
  for (uint32_t i : crawled) c.push_back(pop.cost[i]);
  std::sort(c.begin(), c.end());
  for (long double v : c) used += v;
  for (uint32_t i : order_of(score)) {
    if (in[i]) continue;
    // The first source of the order left out: in exact arithmetic it (nearly) overflows.
    const long double quantum = std::ldexp(1.0L, -fb.exponent);
    const long double slack = fb.unit ? 0.0L : (long double)(crawled.size() + 1) * quantum;
    EXPECT_GT(used + (long double)pop.cost[i], (long double)fb.cost_limit - slack)
        << "source " << i << " of cost " << pop.cost[i] << " was left out with " << used
        << " spent of " << fb.cost_limit;
    return;
  }
}

}  // namespace

TEST(BudgetRule, WeightsRoundUpClampAndNeverVanish) {
  // The header's worked example.
  const std::vector<double> dec = {0.1, 0.1, 0.1};
  const ce::FixedBudget f = ce::cost_weights(dec.data(), 3, 0.3, false);
  EXPECT_EQ(f.exponent, 62);
  EXPECT_EQ(ce::fixed_weight(0.1, f), 461168601842738816ull);
  EXPECT_EQ(f.limit, 1383505805529600000ull);
  EXPECT_EQ(ce::reference_select({3, 2, 1}, dec, 0.3).size(), 3u);
  // Extreme costs: a cost above the limit gets L + 1 (never fits, no overflow), a tiny one at
  // least 1 (never free), and every weight of a population stays below 2^62 in total.
  for (double m : {1e-300, 1e-11, 1.0, 100.0, 1e300, 1.7976931348623157e308}) {
    for (double c : {4.9e-324, 1e-300, 1e-13, 0.3, 1.0, 1e20, 1e300, 1.7976931348623157e308}) {
      const std::vector<double> cs(3000, c);
      const ce::FixedBudget fb = ce::cost_weights(cs.data(), cs.size(), m, false);
      SCOPED_TRACE("budget " + std::to_string(m) + " cost " + std::to_string(c));
      ASSERT_LT(fb.limit, 1ull << 61);
      const unsigned long long w = ce::fixed_weight(c, fb);
      EXPECT_GE(w, 1u);
      EXPECT_LE(w, fb.limit + 1);
      EXPECT_LT(static_cast<long double>(w) * cs.size(), std::ldexp(1.0L, 62));
      if (c > fb.cost_limit) {
        EXPECT_EQ(w, fb.limit + 1);
      } else {
        // w 2^-e >= c: the weight never understates the cost.
        EXPECT_GE(std::ldexp((long double)w, -fb.exponent), (long double)c);
      }
      // The reference's walk on these equal costs crawls exactly floor(Mlim / c) in exact
      // arithmetic, or fewer by the rounding the header bounds.
      const long double fit = std::floor((long double)fb.cost_limit / (long double)c);
      const std::size_t got = ce::reference_select(std::vector<double>(3000, 1.0), cs, m).size();
      EXPECT_LE((long double)got, std::min<long double>(fit, 3000));
    }
  }
  // Unit costs: the count that fits is floor(M (1 + 1e-12)), with nothing rounded.
  EXPECT_EQ(ce::cost_weights(nullptr, 10, 2.9999, true).limit, 2u);
  EXPECT_EQ(ce::cost_weights(nullptr, 10, 3.0, true).limit, 3u);
  EXPECT_EQ(ce::cost_weights(nullptr, 10, 1e300, true).limit, 4000000000000000000ull);
}

TEST(BudgetRule, TheIssuesExamplesNowSpendWithinTheBudget) {
  // Issue #25: one source of cost 1e20 (lambda 1e25) among 3,000 with budget 100 was crawled
  // every epoch (1e20 spent per epoch); 3,000 sources of cost 1e-13 with budget 1e-11 were all
  // crawled (30x the budget).
  for (Costs kind : {Costs::one_huge, Costs::all_tiny}) {
    const ce::Population pop = extreme_population(3000, kind, 3);
    ce::RunConfig cfg;
    cfg.budget = kind == Costs::one_huge ? 100.0 : 1e-11;
    cfg.epochs = 20;
    cfg.threads = 2;
    const ce::Problem pr = ce::make_problem(pop, cfg);
    for (ce::Backend b : {ce::Backend::reference, ce::Backend::cpu}) {
      for (ce::Policy p : {ce::Policy::whittle, ce::Policy::greedy, ce::Policy::random}) {
        SCOPED_TRACE(std::string(name(kind)) + " " + ce::to_string(p) + " " + ce::to_string(b));
        const ce::RolloutOutput out = ce::rollout(pr, p, b);
        for (double spent : out.replication_cost) EXPECT_LE(spent, cfg.budget * (1 + 1e-12));
        if (kind == Costs::all_tiny) {
          // 100 sources fit exactly: 100 x 1e-13 = 1e-11 (within the 1e-12 slack).
          const crawleval::testing::Trace t = crawleval::testing::traced(pr, p, b);
          for (const auto& s : t.sets) EXPECT_EQ(s.size(), 100u);
        }
      }
    }
  }
}

// A budget of the total cost as the user writes it, which the sum of the costs misses by a rounding
// (32769 x 0.1 adds up to 3276.899999998115), crawls every source; beyond the selection's slack it
// is refused.
TEST(BudgetRule, TheTotalCostAsWrittenCrawlsEverySource) {
  ce::Population pop = ce::synthetic_population(32769, 5);
  std::fill(pop.cost.begin(), pop.cost.end(), 0.1);
  ce::RunConfig cfg;
  cfg.budget = 3276.9;
  cfg.epochs = 3;
  const ce::Problem pr = ce::make_problem(pop, cfg);
  ASSERT_LT(pr.total_cost, cfg.budget);
  for (ce::Backend b : {ce::Backend::reference, ce::Backend::cpu}) {
    const ce::RolloutOutput out = ce::rollout(pr, ce::Policy::whittle, b);
    for (double spent : out.replication_cost) EXPECT_NEAR(spent, pr.total_cost, 1e-12 * spent);
  }
  cfg.budget = 3276.9 * (1 + 2e-12);
  EXPECT_THROW(ce::make_problem(pop, cfg), ce::InputError);
}

/// make_problem refuses `pop` with an InputError whose message holds `text`.
static void expect_refused(const ce::Population& pop, const ce::RunConfig& cfg,
                           const std::string& text) {
  try {
    ce::make_problem(pop, cfg);
    ADD_FAILURE() << "no error, expected: " << text;
  } catch (const ce::InputError& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

TEST(BudgetRule, SubnormalContentIsRefused) {
  // Found by fuzz_cpop (clang build): xi = 4.9e-324, 9.9e-324 and 1.5e-323 (subnormal) with
  // lambda about 1 made the content lambda xi / mu a few subnormal ulps, and the wide engine's
  // grid form of the index ranked those sources otherwise than the reference's formula. Refused,
  // naming the source, as is lambda xi underflowing to 0; 1e-200, and lambda = 0, are accepted.
  ce::Population pop;
  pop.origin = "tiny";
  for (double xi : {1.0, 4.9406564584124654e-324, 0.0, 1e-150}) {
    pop.lambda.push_back(1.015625), pop.xi.push_back(xi), pop.mu.push_back(0.35);
    pop.cost.push_back(1.0), pop.id.push_back(pop.id.size());
  }
  ce::RunConfig cfg;
  cfg.budget = 1;
  expect_refused(pop, cfg, "source with id 1, field 'xi': lambda * xi = ");
  pop.xi[1] = 1e-300;  // lambda xi is a normal number, the content below 1e-200
  EXPECT_THROW(ce::make_problem(pop, cfg), ce::InputError);
  pop.xi[1] = 1e-200 * 0.35 / 1.015625 * (1 + 1e-15);
  EXPECT_NO_THROW(ce::make_problem(pop, cfg));
  // lambda xi underflowing is named as such (a hostile test saw "lambda * xi / mu = 0" for a
  // product that is 0 before the division).
  pop.lambda[1] = 1e-200, pop.xi[1] = 1e-200;
  expect_refused(pop, cfg, "lambda * xi = 1e-200 * 1e-200 underflows");
  pop.lambda[1] = 0;  // nothing to gain, exactly
  EXPECT_NO_THROW(ce::make_problem(pop, cfg));
}

TEST(BudgetRule, SlowDecayBelowTheIndexsPrecisionIsRefused) {
  // Found by a hostile test: mu T = 1e-16 made the reference and the CPU backend disagree by
  // 0.4-10% (the index keeps about 1e-16 / (mu T) of its digits) and the reference bound run for
  // hours (its periods grow as 1 / (mu T)). mu T below 1e-9 is refused, naming the source;
  // a longer epoch brings the same source back into range.
  ce::Population pop;
  pop.origin = "slow";
  for (double mu : {1.0, 1e-15}) {
    pop.lambda.push_back(1), pop.xi.push_back(1), pop.mu.push_back(mu), pop.cost.push_back(1);
    pop.id.push_back(pop.id.size());
  }
  ce::RunConfig cfg;
  cfg.budget = 1;
  expect_refused(pop, cfg,
                 "source with id 1, field 'mu': mu * T = 1e-15 is below "
                 "1e-9");
  cfg.epoch_length = 1e6;
  EXPECT_NO_THROW(ce::make_problem(pop, cfg));
}

TEST(BudgetRule, CostsWhoseReciprocalOverflowsAreRefused) {
  // Found by fuzz_cpop: a cost of 3.5e-310 (subnormal) made 1 / C infinite, so an empty source's
  // grid-tracked score was 0 x inf = NaN (ranked last) on the wide engine where the reference
  // scores it 0; the CPU backend then crawled another set. Refused up front, naming the source.
  ce::Population pop;
  pop.origin = "subnormal";
  for (int i = 0; i < 4; ++i) {
    pop.lambda.push_back(250), pop.xi.push_back(0.7), pop.mu.push_back(1.9e185);
    pop.cost.push_back(i == 0 ? 8e283 : 3.46540586227587e-310), pop.id.push_back(uint64_t(i));
  }
  ce::RunConfig cfg;
  cfg.budget = 1e284;
  expect_refused(pop, cfg, "its reciprocal 1 / cost, which the index uses, overflows");
  // The smallest cost accepted, on every engine from empty sources (the wide engine's grid path).
  for (double& c : pop.cost)
    if (c < 1) c = std::numeric_limits<double>::min();
  ce::Population wide;
  wide.origin = "wide";
  for (std::size_t k = 0; wide.size() <= ce::kCpuSmallN; ++k) {
    const std::size_t i = k % 4;
    wide.lambda.push_back(pop.lambda[i]), wide.xi.push_back(pop.xi[i]),
        wide.mu.push_back(pop.mu[i]);
    wide.cost.push_back(pop.cost[i]), wide.id.push_back(k);
  }
  cfg.budget = 171 * 8e283;
  cfg.epochs = 2;
  cfg.burn_in = 1;
  cfg.threads = 1;
  const ce::Problem pr = ce::make_problem(wide, cfg);
  for (ce::Policy p : {ce::Policy::whittle, ce::Policy::greedy}) {
    const auto want = crawleval::testing::traced(pr, p, ce::Backend::reference);
    const auto got = crawleval::testing::traced(pr, p, ce::Backend::cpu);
    EXPECT_EQ(got.sets, want.sets) << ce::to_string(p);
  }
}

TEST(BudgetRule, EveryEngineCrawlsTheReferencePrefixOnExtremeCosts) {
  // 40 sources: the CPU backend's small engine; 3,000: its wide engine (windowed radix select).
  for (std::size_t n : {std::size_t(40), std::size_t(3000)}) {
    for (Costs kind :
         {Costs::log_uniform, Costs::one_huge, Costs::all_tiny, Costs::extremes, Costs::decimals}) {
      const ce::Population pop = extreme_population(n, kind, 11 + n);
      for (double budget : edge_budgets(pop)) {
        ce::RunConfig cfg;
        cfg.budget = budget;
        cfg.epochs = 6;
        cfg.burn_in = 1;
        cfg.threads = 2;
        const ce::Problem pr = ce::make_problem(pop, cfg);
        for (ce::Model model : {ce::Model::deterministic, ce::Model::stochastic}) {
          // The stochastic model takes at most 1e6 arrivals per epoch (the 1e25 source).
          if (model == ce::Model::stochastic && kind == Costs::one_huge) continue;
          cfg.model = model;
          const ce::Problem prm = ce::make_problem(pop, cfg);
          for (ce::Policy p : {ce::Policy::whittle, ce::Policy::greedy, ce::Policy::round_robin}) {
            SCOPED_TRACE("n " + std::to_string(n) + " " + name(kind) + " budget " +
                         std::to_string(budget) + " " + ce::to_string(model) + " " +
                         ce::to_string(p));
            // Reference: crawled sets, and the scores it ranked, epoch by epoch.
            std::vector<std::vector<uint32_t>> ref_sets;
            const ce::EpochObserver ref_obs = [&](const ce::EpochView& v) {
              ref_sets.push_back(*v.selected);
            };
            ce::rollout(prm, p, ce::Backend::reference, &ref_obs);
            const crawleval::testing::Trace cpu =
                crawleval::testing::traced(prm, p, ce::Backend::cpu);
            ASSERT_EQ(cpu.sets.size(), ref_sets.size());
            for (std::size_t t = 0; t < ref_sets.size(); ++t) {
              ASSERT_EQ(cpu.sets[t], ref_sets[t]) << "epoch " << t;
              expect_within_budget(pop, prm.weights, ref_sets[t]);
            }
            if (p != ce::Policy::greedy) continue;
            // The function engine (user policies), with greedy's scores x / C computed by the
            // "user": the same sets. Its scores also let us check that the prefix is maximal.
            std::vector<std::vector<uint32_t>> fn_sets;
            std::vector<std::vector<double>> fn_scores;
            const ce::ScoreFn greedy = [&](const ce::ScoreRequest& q) {
              for (std::size_t i = 0; i < q.n; ++i) q.scores[i] = q.state[i] / pop.cost[i];
              fn_scores.emplace_back(q.scores, q.scores + q.n);
            };
            const ce::EpochObserver fn_obs = [&](const ce::EpochView& v) {
              fn_sets.push_back(*v.selected);
            };
            ce::function_rollout(prm, greedy, "greedy", &fn_obs);
            ASSERT_EQ(fn_sets.size(), ref_sets.size());
            for (std::size_t t = 0; t < ref_sets.size(); ++t) {
              ASSERT_EQ(fn_sets[t], ref_sets[t]) << "epoch " << t;
              expect_maximal(pop, prm.weights, fn_scores[t], fn_sets[t]);
            }
          }
        }
        (void)pr;
      }
    }
  }
}

TEST(BudgetRule, FreshnessEngineHonoursExtremeCosts) {
  // Issue #25: costs (1, 1, 1e20) with budget 2 crawled all three. Then a sweep of extreme costs:
  // the fast engine equals the reference engine, epoch by epoch, and stays within the budget; so
  // does a GPU per rank's pass (its host twin, fresh_keyed.hpp), with the CPU engine's numbers
  // bit for bit.
  {
    ce::FreshPopulation pop;
    pop.origin = "three";
    pop.resize(3);
    for (std::size_t i = 0; i < 3; ++i) {
      pop.id[i] = i, pop.host[i] = i, pop.importance[i] = 1.0, pop.rate[i] = 0.5;
      pop.cost[i] = i == 2 ? 1e20 : 1.0;
    }
    pop.importance[2] = 10.0;  // the index ranks the expensive source first
    ce::FreshConfig cfg;
    cfg.budget = 2;
    cfg.epochs = 10;
    for (bool reference : {true, false}) {
      const ce::FreshObserver obs = [&](uint32_t, uint64_t, const std::vector<uint32_t>& c) {
        double used = 0;
        for (uint32_t i : c) used += pop.cost[i];
        EXPECT_LE(used, 2.0);
      };
      const ce::FreshRolloutOutput out =
          ce::fresh_rollout(pop, cfg, ce::FreshPolicy::index, reference, &obs);
      for (double c : out.cost) EXPECT_LE(c, 2.0);
    }
  }
  for (Costs kind : {Costs::log_uniform, Costs::extremes, Costs::all_tiny, Costs::decimals}) {
    const ce::Population base = extreme_population(500, kind, 29);
    ce::FreshPopulation pop;
    pop.origin = base.origin;
    pop.resize(base.size());
    // Importances in proportion to the costs: the freshness model refuses an importance / cost
    // outside [1e-290, 1e290] (its scores left the normal doubles there), which costs from 1e-300
    // to 1e300 at importances near 1 would be; the budget walk sees the same extreme costs.
    for (std::size_t i = 0; i < base.size(); ++i) {
      pop.id[i] = i, pop.host[i] = i % 37, pop.importance[i] = base.xi[i] * base.cost[i] * 1e-5;
      pop.rate[i] = base.lambda[i] / 5, pop.cost[i] = base.cost[i];
      pop.constrained[i] = i % 3 == 0;
    }
    for (double budget : edge_budgets(base)) {
      for (uint32_t cap : {0u, 2u}) {
        ce::FreshConfig cfg;
        cfg.budget = budget;
        cfg.host_cap = cap;
        cfg.epochs = 5;
        SCOPED_TRACE(std::string(name(kind)) + " budget " + std::to_string(budget) + " cap " +
                     std::to_string(cap));
        const ce::FixedBudget fb = ce::cost_weights(pop.cost.data(), pop.size(), budget, false);
        std::vector<std::vector<uint32_t>> ref, fast;
        const ce::FreshObserver ro = [&](uint32_t, uint64_t, const std::vector<uint32_t>& c) {
          ref.push_back(c);
          expect_within_budget(base, fb, c);
        };
        const ce::FreshObserver fo = [&](uint32_t, uint64_t, const std::vector<uint32_t>& c) {
          fast.push_back(c);
        };
        std::vector<std::vector<uint32_t>> keyed;
        const ce::FreshObserver ko = [&](uint32_t, uint64_t, const std::vector<uint32_t>& c) {
          keyed.push_back(c);
        };
        ce::fresh_rollout(pop, cfg, ce::FreshPolicy::index, true, &ro);
        cfg.threads = 2;
        const ce::FreshRolloutOutput cpu =
            ce::fresh_rollout(pop, cfg, ce::FreshPolicy::index, false, &fo);
        ASSERT_EQ(ref, fast);
        const ce::FreshRolloutOutput twin = ce::fresh_rollout_keyed(
            pop, cfg, ce::FreshPolicy::index, ce::detail::host_fresh_keyed_pass, &ko);
        ASSERT_EQ(ref, keyed);
        EXPECT_EQ(twin.freshness, cpu.freshness);
        EXPECT_EQ(twin.penalty, cpu.penalty);
        EXPECT_EQ(twin.cost, cpu.cost);
      }
    }
  }
}
