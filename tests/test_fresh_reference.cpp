// The freshness model's literal reference (fresh_reference.cpp) against hand-checked crawls, then
// the CPU engine against it on random populations: every policy, unit and other costs, both
// starts, the learning variant, with and without host caps that bind; crawled sets epoch by epoch
// exactly, the numbers within 1e-12 relative.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "crawleval/base/error.hpp"
#include "crawleval/evaluate/fresh_evaluate.hpp"
#include "test_util.hpp"

namespace ce = crawleval;

namespace {

/// The first epoch of a fresh start scores every URL 0 under every policy but random (age 0,
/// nothing missed): the walk takes them in id order.
ce::FreshPopulation six_urls(bool costs) {
  ce::FreshPopulation p;
  p.origin = "six";
  p.resize(6);
  const uint64_t host[6] = {7, 7, 7, 8, 8, 9};
  const double cost[6] = {1.0, 1.0, 1.0, 2.0, 1.0, 0.5};
  for (std::size_t i = 0; i < 6; ++i) {
    p.id[i] = i, p.rate[i] = 0.5, p.importance[i] = 1.0, p.complete[i] = 0;
    p.host[i] = host[i], p.cost[i] = costs ? cost[i] : 1.0;
    p.constrained[i] = host[i] == 7;
  }
  return p;
}

std::vector<uint32_t> first_epoch(const ce::FreshPopulation& pop, double budget, uint32_t cap,
                                  bool reference) {
  ce::FreshConfig cfg;
  cfg.budget = budget, cfg.host_cap = cap, cfg.epochs = 1, cfg.burn_in = 0;
  const ce::testing::FreshTrace t = ce::testing::fresh_observed([&](const ce::FreshObserver* o) {
    return ce::fresh_rollout(pop, cfg, ce::FreshPolicy::index, reference, o);
  });
  return t.sets.at(0);
}

TEST(FreshReference, WalksTheCapsAndTheBudgetInOrder) {
  for (bool reference : {true, false}) {
    SCOPED_TRACE(reference ? "reference" : "CPU engine");
    // Host 7 (constrained, cap 1) gives its first URL; hosts 8 and 9 are not constrained.
    EXPECT_EQ(first_epoch(six_urls(false), 3, 1, reference), (std::vector<uint32_t>{0, 3, 4}));
    EXPECT_EQ(first_epoch(six_urls(false), 3, 0, reference), (std::vector<uint32_t>{0, 1, 2}));
    EXPECT_EQ(first_epoch(six_urls(false), 3, 2, reference), (std::vector<uint32_t>{0, 1, 3}));
    // Costs 1, (1, 1 skipped), 2, then 1 does not fit 3.5: the walk stops there, although URL 5
    // (0.5) would fit.
    EXPECT_EQ(first_epoch(six_urls(true), 3.5, 1, reference), (std::vector<uint32_t>{0, 3}));
    EXPECT_EQ(first_epoch(six_urls(true), 0.5, 1, reference), (std::vector<uint32_t>{}));
  }
}

/// n URLs with ties: rates, importances and costs from a few values each (some never change, some
/// count for nothing), a fifth completely observed, hosts of very unequal sizes of which two in
/// three are constrained.
ce::FreshPopulation tied_population(std::size_t n, uint64_t seed, bool costs) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  const double rates[4] = {0.0, 0.2, 0.7, 1.5}, importances[4] = {0.0, 1.0, 2.0, 5.0};
  const double cost_values[4] = {0.5, 1.0, 1.5, 2.0};
  ce::FreshPopulation p;
  p.origin = "tied(" + std::to_string(n) + ")";
  p.resize(n);
  const std::size_t hosts = n / 8 + 1;
  for (std::size_t i = 0; i < n; ++i) {
    p.id[i] = i;
    p.rate[i] = rates[rng() % 4];
    p.importance[i] = i == 0 ? 1.0 : importances[rng() % 4];
    p.cost[i] = costs ? cost_values[rng() % 4] : 1.0;
    p.complete[i] = U(rng) < 0.2 ? 1 : 0;
    p.host[i] = uint64_t(U(rng) * U(rng) * double(hosts));
    p.constrained[i] = p.host[i] % 3 != 2;
  }
  return p;
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want,
                 const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-12 * std::max(1.0, std::fabs(want[i]))) << what << " " << i;
}

/// Whether some epoch crawled `cap` URLs of a constrained host.
bool some_host_at_its_cap(const ce::testing::FreshTrace& t, const ce::FreshPopulation& pop,
                          uint32_t cap) {
  for (const std::vector<uint32_t>& set : t.sets) {
    std::map<uint64_t, uint32_t> per_host;
    for (uint32_t i : set)
      if (pop.constrained[i] && ++per_host[pop.host[i]] == cap) return true;
  }
  return false;
}

enum class Variant { plain, costs, steady, learn };
const char* name(Variant v) {
  return v == Variant::plain    ? "unit costs"
         : v == Variant::costs  ? "costs"
         : v == Variant::steady ? "steady start"
                                : "learning";
}

TEST(FreshReference, EqualsTheCpuEngine) {
  const ce::FreshPolicy policies[] = {ce::FreshPolicy::index,
                                      ce::FreshPolicy::greedy,
                                      ce::FreshPolicy::lambda_crawl,
                                      ce::FreshPolicy::lambda_crawl_approx,
                                      ce::FreshPolicy::binary_lambda_crawl,
                                      ce::FreshPolicy::uniform,
                                      ce::FreshPolicy::proportional,
                                      ce::FreshPolicy::random};
  // No URL: refused alike (a run needs one).
  for (bool reference : {true, false})
    EXPECT_THROW(ce::fresh_rollout(tied_population(0, 1, false), ce::FreshConfig{},
                                   ce::FreshPolicy::index, reference),
                 ce::InputError);
  std::size_t capped = 0, bindable = 0;  // runs whose caps changed the crawls; runs with caps
  for (std::size_t n : {std::size_t(1), std::size_t(131), std::size_t(5000)})
    for (Variant v : {Variant::plain, Variant::costs, Variant::steady, Variant::learn}) {
      const ce::FreshPopulation pop = tied_population(n, 40 + n, v == Variant::costs);
      for (std::size_t k = 0; k < std::size(policies); ++k) {
        ce::testing::FreshTrace uncapped;
        for (uint32_t cap : {0u, 2u}) {
          SCOPED_TRACE("N " + std::to_string(n) + ", " + name(v) + ", " +
                       ce::to_string(policies[k]) + ", cap " + std::to_string(cap));
          ce::FreshConfig cfg;
          // A fifth of the URLs (or 0.5: none of the unit-cost ones; every one of a single URL).
          cfg.budget = n == 1 ? 3.0 : n == 131 && k == 7 ? 0.5 : std::floor(double(n) / 5);
          cfg.host_cap = cap;
          cfg.epochs = 6, cfg.burn_in = 2, cfg.replications = 2, cfg.seed = 11 + k;
          cfg.objective = k % 2 ? ce::Objective::binary : ce::Objective::harmonic;
          cfg.start = v == Variant::steady ? ce::FreshStart::steady : ce::FreshStart::fresh;
          cfg.learn = v == Variant::learn, cfg.relearn = 3;
          cfg.threads = 2;
          const auto run = [&](bool reference) {
            return ce::testing::fresh_observed([&](const ce::FreshObserver* o) {
              return ce::fresh_rollout(pop, cfg, policies[k], reference, o);
            });
          };
          const ce::testing::FreshTrace ref = run(true), cpu = run(false);
          ASSERT_EQ(ref.sets.size(), 2 * 8u);
          ASSERT_EQ(cpu.epochs, ref.epochs);
          for (std::size_t e = 0; e < ref.sets.size(); ++e)
            ASSERT_EQ(cpu.sets[e], ref.sets[e])
                << "replication " << ref.epochs[e].first << " epoch " << ref.epochs[e].second;
          expect_near(cpu.out.freshness, ref.out.freshness, "freshness");
          expect_near(cpu.out.penalty, ref.out.penalty, "penalty");
          expect_near(cpu.out.cost, ref.out.cost, "cost");
          expect_near(cpu.out.epoch_freshness, ref.out.epoch_freshness, "epoch freshness");
          expect_near(cpu.out.epoch_penalty, ref.out.epoch_penalty, "epoch penalty");
          EXPECT_EQ(cpu.out.learned_rate, ref.out.learned_rate);
          EXPECT_EQ(cpu.out.saturated, ref.out.saturated);
          EXPECT_EQ(ref.out.learned_rate.size(), cfg.learn ? n : 0u);
          if (cap == 0) {
            uncapped = ref;
          } else if (n > 1 && cfg.budget >= 1) {
            ++bindable;
            capped += some_host_at_its_cap(ref, pop, cap) && ref.sets != uncapped.sets;
          }
        }
      }
    }
  // The caps bound (a host at its cap, other crawls than without caps) in every run of more than
  // one URL with a budget: the capped runs are not the uncapped ones again.
  EXPECT_GE(bindable, 50u);
  EXPECT_EQ(capped, bindable);
}

}  // namespace
