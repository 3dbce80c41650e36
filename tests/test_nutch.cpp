// nutch-adaptive (model/nutch.hpp): the interval rule by hand, then tiny populations whose crawl
// epochs are worked out by hand, on the literal reference and the CPU engine; its settings'
// checks and the CUDA engine's refusal (host code: checked in every build).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "crawleval/base/error.hpp"
#include "crawleval/engine/cuda_backend.hpp"
#include "crawleval/evaluate/fresh_evaluate.hpp"
#include "crawleval/model/nutch.hpp"
#include "test_util.hpp"

namespace ce = crawleval;

namespace {

TEST(Nutch, IntervalGrowsByFourTenthsShrinksByATenthTimesTwoAndIsClamped) {
  // Unchanged, unchanged, unchanged, changed, changed from 30 (max 365).
  double i = 30.0;
  const bool changed[] = {false, false, false, true, true};
  const double want[] = {42.0, 58.8, 82.32, 65.856, 52.6848};
  for (int k = 0; k < 5; ++k) {
    i = ce::nutch_interval(i, changed[k], 365.0);
    EXPECT_DOUBLE_EQ(i, want[k]) << "crawl " << k;
  }
  EXPECT_EQ(ce::nutch_interval(300.0, false, 365.0), 365.0);  // 420 -> the max
  EXPECT_EQ(ce::nutch_interval(365.0, false, 365.0), 365.0);
  EXPECT_EQ(ce::nutch_interval(1.1, true, 365.0), 1.0);  // 0.88 -> one epoch
  EXPECT_EQ(ce::nutch_interval(1.0, true, 365.0), 1.0);
  EXPECT_DOUBLE_EQ(ce::nutch_interval(1.0, false, 365.0), 1.4);
  // Always changed: 30, 24, 19.2, ... reaches 1 after 16 crawls (30 x 0.8^16 = 0.84) and stays.
  i = 30.0;
  int crawls = 0;
  while (i > 1.0) i = ce::nutch_interval(i, true, 365.0), ++crawls;
  EXPECT_EQ(crawls, 16);
  // Never changed: 30 x 1.4^7 = 316.24, x 1.4 = 442.74 -> 365 at the 8th crawl.
  i = 30.0;
  for (int k = 0; k < 7; ++k) i = ce::nutch_interval(i, false, 365.0);
  EXPECT_NEAR(i, 316.240512, 1e-9);
  EXPECT_EQ(ce::nutch_interval(i, false, 365.0), 365.0);
}

TEST(Nutch, NextDueIsTheCrawlPlusTheIntervalRoundedHalfUp) {
  EXPECT_EQ(ce::nutch_due_after(10, 42.0), 52u);
  EXPECT_EQ(ce::nutch_due_after(10, 58.8), 69u);
  EXPECT_EQ(ce::nutch_due_after(10, 82.32), 92u);
  EXPECT_EQ(ce::nutch_due_after(0, 1.5), 2u);
  EXPECT_EQ(ce::nutch_due_after(0, 1.4999), 1u);
  EXPECT_EQ(ce::nutch_due_after(0xFFFFFF00u, 365.0), ce::kNutchNever);  // beyond every run
  ce::NutchState s{30.0, 5};
  EXPECT_TRUE(ce::nutch_due(s, 5));
  EXPECT_FALSE(ce::nutch_due(s, 4));
  ce::nutch_crawled(false, 5, 365.0, &s);
  EXPECT_DOUBLE_EQ(s.interval, 42.0);
  EXPECT_EQ(s.next_due, 47u);
  const ce::FreshParams p = ce::derive_fresh_params(0.5, 3.0, 2.0, 1.0);
  EXPECT_EQ(ce::nutch_score(s, 47, p), 1.5);  // due: w / C
  EXPECT_EQ(ce::nutch_score(s, 46, p), -INFINITY);
}

TEST(Nutch, FirstDueSpreadOverOneStartInterval) {
  std::vector<int> seen(30, 0);
  double sum = 0.0;
  for (uint64_t i = 0; i < 30000; ++i) {
    const ce::NutchState s = ce::nutch_start_state(30.0, 7, 0, i);
    ASSERT_EQ(s.interval, 30.0);
    ASSERT_LT(s.next_due, 30u);
    ++seen[s.next_due], sum += s.next_due;
  }
  for (int d = 0; d < 30; ++d) EXPECT_NEAR(seen[d], 1000, 150) << d;
  EXPECT_NEAR(sum / 30000, 14.5, 0.2);
  // Keyed by seed, replication and URL: replication 1 draws anew.
  int same = 0;
  for (uint64_t i = 0; i < 300; ++i)
    same += ce::nutch_start_state(30.0, 7, 0, i).next_due ==
            ce::nutch_start_state(30.0, 7, 1, i).next_due;
  EXPECT_LT(same, 40);
  EXPECT_EQ(ce::nutch_start_state(1.0, 7, 0, 12).next_due, 0u);  // start 1: all due at once
  for (uint64_t i = 0; i < 300; ++i) EXPECT_LE(ce::nutch_start_state(2.5, 7, 0, i).next_due, 2u);
}

ce::FreshPopulation urls(const std::vector<double>& rate, const std::vector<double>& importance,
                         const std::vector<uint64_t>& host = {}) {
  ce::FreshPopulation p;
  p.origin = "nutch";
  p.resize(rate.size());
  for (std::size_t i = 0; i < rate.size(); ++i) {
    p.id[i] = i, p.rate[i] = rate[i], p.importance[i] = importance[i], p.cost[i] = 1.0;
    p.complete[i] = 0, p.host[i] = host.empty() ? i : host[i];
    p.constrained[i] = !host.empty();
  }
  return p;
}

ce::FreshConfig nutch_config(double budget, uint64_t epochs, double start) {
  ce::FreshConfig cfg;
  cfg.budget = budget, cfg.epochs = epochs, cfg.burn_in = 0, cfg.seed = 3;
  cfg.start = ce::FreshStart::fresh;
  cfg.nutch_start = start, cfg.nutch_max = 365.0;
  return cfg;
}

/// The epochs at which each URL was crawled, replication by replication.
std::vector<std::vector<std::vector<uint64_t>>> crawl_epochs(const ce::FreshPopulation& pop,
                                                             const ce::FreshConfig& cfg,
                                                             bool reference) {
  const ce::testing::FreshTrace t = ce::testing::fresh_observed([&](const ce::FreshObserver* o) {
    return ce::fresh_rollout(pop, cfg, ce::FreshPolicy::nutch_adaptive, reference, o);
  });
  std::vector<std::vector<std::vector<uint64_t>>> out(
      cfg.replications, std::vector<std::vector<uint64_t>>(pop.size()));
  for (std::size_t k = 0; k < t.sets.size(); ++k)
    for (uint32_t i : t.sets[k]) out[t.epochs[k].first][i].push_back(t.epochs[k].second);
  return out;
}

/// d + each offset, those before epoch `end`.
std::vector<uint64_t> plus(uint64_t d, const std::vector<uint64_t>& offsets, uint64_t end) {
  std::vector<uint64_t> v;
  for (uint64_t o : offsets)
    if (d + o < end) v.push_back(d + o);
  return v;
}

// URL 0 never changes: every crawl finds it unchanged and its interval grows 1.4 times a crawl.
// URL 1 changes 1000 times an epoch: every crawl after its first finds it changed, and its interval
// shrinks to one epoch. (A fresh start: the first crawl, at epoch 0, finds nothing changed yet.)
TEST(Nutch, CrawlsANeverChangingPageAtGrowingIntervalsAndAnAlwaysChangingOneEveryEpoch) {
  const ce::FreshPopulation pop = urls({0.0, 1000.0}, {1.0, 1.0});
  for (bool reference : {true, false}) {
    SCOPED_TRACE(reference ? "reference" : "CPU engine");
    // Start 1: both due at epoch 0. URL 0: intervals 1.4, 1.96, 2.744, 3.8416, 5.37824,
    // 7.529536, 10.5413504, 14.75789 -> due at 1, 3, 6, 10, 15, 23, 34, 49. URL 1: 1.4 (found
    // unchanged at 0), 1.12, then 0.896 -> 1: every epoch.
    const auto got = crawl_epochs(pop, nutch_config(10, 40, 1.0), reference);
    EXPECT_EQ(got[0][0], (std::vector<uint64_t>{0, 1, 3, 6, 10, 15, 23, 34}));
    std::vector<uint64_t> every(40);
    for (uint64_t t = 0; t < 40; ++t) every[t] = t;
    EXPECT_EQ(got[0][1], every);

    // Nutch's default start, 30 epochs: first due spread over 0..29 (nutch_start_state); then
    // 42, 58.8 -> 59, 82.32 -> 82, 115.248 -> 115 epochs apart for URL 0; 24, 19.2 -> 19, 15.36
    // -> 15, 12.288 -> 12, 9.8304 -> 10, 7.86 -> 8, 6.29 -> 6, 5.03 -> 5, 4.03 -> 4, 3.22 -> 3,
    // 2.58 -> 3, 2.06 -> 2, 1.65 -> 2, 1.32 -> 1, 1.06 -> 1, then 1 for URL 1.
    ce::FreshConfig cfg = nutch_config(10, 320, 30.0);
    cfg.replications = 2;
    const auto runs = crawl_epochs(pop, cfg, reference);
    for (uint32_t r = 0; r < 2; ++r) {
      SCOPED_TRACE("replication " + std::to_string(r));
      const uint32_t d0 = ce::nutch_start_state(30.0, cfg.seed, r, 0).next_due;
      const uint32_t d1 = ce::nutch_start_state(30.0, cfg.seed, r, 1).next_due;
      ASSERT_GT(d1, 0u);  // (URL 1 has changed by its first crawl)
      EXPECT_EQ(runs[r][0], plus(d0, {0, 42, 101, 183, 298}, 320));
      const std::vector<uint64_t> converging = {0,   24,  43,  58,  70,  80,  88,  94,  99,
                                                103, 106, 109, 111, 113, 114, 115, 116, 117};
      const std::vector<uint64_t>& one = runs[r][1];
      ASSERT_EQ(one.size(), 14 + (320 - (d1 + 114)));  // every epoch from d1 + 113 on
      EXPECT_EQ(std::vector<uint64_t>(one.begin(), one.begin() + 18), plus(d1, converging, 320));
      EXPECT_EQ(one.back(), 319u);
    }
    EXPECT_NE(
        ce::nutch_start_state(30.0, cfg.seed, 0, 0).next_due,
        ce::nutch_start_state(30.0, cfg.seed, 1, 0).next_due);  // (the two replications differ)
  }
}

// Due URLs by importance within the budget; a URL that is not due takes neither budget nor a
// host's cap. Three URLs that never change, importance 1, 3, 2, budget 1, start 1 (all due at 0):
// epoch 0 {0,1,2} due -> 1 (next 1); 1 {0,1,2} -> 1 (1.96: next 3); 2 {0,2} -> 2 (next 3);
// 3 {0,1,2} -> 1 (2.744: next 6); 4 {0,2} -> 2 (1.96: next 6); 5 {0} -> 0; 6 {0,1,2} -> 1.
TEST(Nutch, RanksDueUrlsByImportanceAndSpendsNothingOnOthers) {
  for (bool reference : {true, false}) {
    SCOPED_TRACE(reference ? "reference" : "CPU engine");
    const ce::testing::FreshTrace t = ce::testing::fresh_observed([&](const ce::FreshObserver* o) {
      return ce::fresh_rollout(urls({0.0, 0.0, 0.0}, {1.0, 3.0, 2.0}), nutch_config(1, 7, 1.0),
                               ce::FreshPolicy::nutch_adaptive, reference, o);
    });
    EXPECT_EQ(t.sets, (std::vector<std::vector<uint32_t>>{{1}, {1}, {2}, {1}, {2}, {0}, {1}}));
    // Host 7 capped at 1 crawl: URL 0 (importance 5) takes it while due; when it is not (epochs
    // 2, 4), URL 1 gets the crawl; at 5 neither is due and the budget of 10 goes unspent.
    ce::FreshConfig capped = nutch_config(10, 7, 1.0);
    capped.host_cap = 1;
    const ce::testing::FreshTrace c = ce::testing::fresh_observed([&](const ce::FreshObserver* o) {
      return ce::fresh_rollout(urls({0.0, 0.0}, {5.0, 1.0}, {7, 7}), capped,
                               ce::FreshPolicy::nutch_adaptive, reference, o);
    });
    EXPECT_EQ(c.sets, (std::vector<std::vector<uint32_t>>{{0}, {0}, {1}, {0}, {1}, {}, {0}}));
    EXPECT_DOUBLE_EQ(c.out.cost[0], 6.0 / 7.0);
  }
}

TEST(Nutch, SettingsAreChecked) {
  const ce::FreshPopulation pop = urls({0.5}, {1.0});
  const auto refused = [&](double start, double max, const std::string& flag) {
    ce::FreshConfig cfg = nutch_config(1, 5, start);
    cfg.nutch_max = max;
    try {
      ce::validate_fresh_config(pop, cfg);
      ADD_FAILURE() << "start " << start << ", max " << max << " was accepted";
    } catch (const ce::InputError& e) {
      EXPECT_NE(std::string(e.what()).find(flag), std::string::npos) << e.what();
    }
  };
  refused(0.5, 365, "--nutch-start");
  refused(NAN, 365, "--nutch-start");
  refused(INFINITY, INFINITY, "--nutch-start");
  refused(30, 20, "--nutch-max");
  refused(30, NAN, "--nutch-max");
  refused(30, INFINITY, "--nutch-max");
  ce::FreshConfig ok = nutch_config(1, 5, 1.0);
  ok.nutch_max = 1.0;
  EXPECT_NO_THROW(ce::validate_fresh_config(pop, ok));
}

// The CUDA freshness engine carries the schedule (kernels/fresh_engine.cu; its conformance cells
// run where a GPU is), but no device run has passed it yet: --backend cuda takes it, auto leaves
// it to the CPU.
TEST(Nutch, TheCudaEngineTakesItAndAutoLeavesItToTheCpu) {
  EXPECT_EQ(ce::cuda::fresh_policy_refusal(ce::FreshPolicy::nutch_adaptive), "");
  EXPECT_TRUE(ce::cuda::fresh_policy_pending(ce::FreshPolicy::nutch_adaptive));
  EXPECT_FALSE(ce::cuda::fresh_policy_pending(ce::FreshPolicy::index));
  const ce::FreshConfig cfg = nutch_config(1, 5, 30.0);
  EXPECT_EQ(ce::resolve_fresh_backend("auto", cfg, {ce::FreshPolicy::nutch_adaptive}),
            ce::Backend::cpu);
  EXPECT_EQ(ce::resolve_fresh_backend("auto", cfg,
                                      {ce::FreshPolicy::index, ce::FreshPolicy::nutch_adaptive}),
            ce::Backend::cpu);
}

}  // namespace
