// Dormant sources of the deterministic Whittle pass (host/engine/cpu/dormant.hpp): the ceiling
// bounds every score a source's recursion reaches; a split layout, its catch-ups and its wakes keep
// every state the plain pass's passive steps give; and whole rollouts in which most sources sleep
// crawl the reference's sets, with the plain pass's rewards bit for bit and the same path through
// the selection.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <random>

#include "crawleval/evaluate/driver.hpp"
#include "crawleval/io/io.hpp"
#include "crawleval/model/selection.hpp"
#include "engine/cpu/det_whittle_avx512.hpp"
#include "engine/cpu/dormant.hpp"
#include "engine/cpu/source_step.hpp"
#include "test_util.hpp"

namespace ce = crawleval;
using ce::detail::DormantSet;
using ce::detail::grid_index_ceiling;
namespace dw = ce::detail::det_word;

using ce::testing::DormantMode;

// The ceiling against every state the recursion x' = alpha x + u reaches from 0 (up to 20000
// steps, or its fixed point where it gets there), scored at its own age and at the largest age a
// word holds, over constants from the ends of the doubles; and it is close enough to u/(1-alpha)
// to put sources to sleep.
TEST(Dormant, CeilingBoundsEveryScoreTheRecursionReaches) {
  std::vector<std::pair<double, double>> cases;  // (mu T, u)
  for (double mt : {1e-10, 1e-7, 1e-4, 0.02, 0.3, 1.0, 2.0, 30.0, 700.0, 745.0, 800.0})
    for (double u : {0.0, 4.9e-324, 1e-300, 1e-200, 1e-20, 1.0, 3.7, 1e20, 1e200, 1e300})
      cases.emplace_back(mt, u);
  std::mt19937_64 rng(5);
  for (int k = 0; k < 300; ++k)
    cases.emplace_back(std::exp(std::uniform_real_distribution<double>(-23, 6.6)(rng)),
                       std::exp(std::uniform_real_distribution<double>(-690, 690)(rng)));
  for (const auto& [mt, u] : cases) {
    SCOPED_TRACE("mu T " + std::to_string(mt) + " u " + std::to_string(u));
    const double alpha = std::exp(-mt);
    const double ceiling = grid_index_ceiling(alpha, u);
    ASSERT_FALSE(std::isnan(ceiling));
    double x = 0.0;
    for (uint32_t age = 0; age < 20000; ++age) {
      ASSERT_LE(dw::grid_index(x, age, alpha, u, 1.0), ceiling) << "age " << age;
      ASSERT_LE(dw::grid_index(x, dw::kEtaMax, alpha, u, 1.0), ceiling) << "age " << age;
      const double next = alpha * x + u;
      if (next == x) break;
      x = next;
    }
    // Useful: within 1e-5 of the fixed point u / (1 - alpha) where that is a number.
    const double fixed = u / (1.0 - alpha);
    if (mt >= 1e-4 && std::isfinite(fixed) && fixed < 1e300)
      EXPECT_LE(ceiling, fixed * (1 + 1e-5) + 1e-290);
  }
  // No bound: alpha 1 (no decay), non-finite constants.
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(grid_index_ceiling(1.0, 1.0), inf);
  EXPECT_EQ(grid_index_ceiling(0.5, inf), inf);
  EXPECT_EQ(grid_index_ceiling(std::nan(""), 1.0), inf);
  EXPECT_EQ(grid_index_ceiling(0.5, std::nan("")), inf);
  EXPECT_EQ(grid_index_ceiling(1.0 - 1e-17, 1.0), inf);
}

// The layout alone: sources split into live and dormant, moved by passive steps (the live ones in
// their slots, as the pass moves them; the dormant ones by catch_up at some epochs, not at
// others), re-split at a lower bound (some wake) and a higher one, then woken: every x is the
// plain recursion's bit for bit, every age det_word::next's (it stops where the state does), a
// source that slept has class kBelow and one that never slept keeps its class. Chunks of 1024
// sources: whole, partial, one off the grid (stays plain).
TEST(Dormant, SplitCatchUpAndWakeKeepThePassiveSteps) {
  constexpr std::size_t kChunk = 1024, n = 5 * kChunk + 300;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  std::vector<double> alpha(n), u(n), x(n);
  std::vector<uint32_t> word(n);
  for (std::size_t i = 0; i < n; ++i) {
    alpha[i] = std::exp(-0.02 * std::pow(100.0, U(rng)));
    u[i] = std::exp(6 * U(rng) - 3);
    x[i] = u[i] * (1 + 5 * U(rng));
    word[i] = uint32_t(rng() % 5000) | (uint32_t(rng() % 4) << dw::kClassShift);
  }
  word[3 * kChunk + 17] |= dw::kGeneral;  // chunk 3 stays plain
  std::vector<uint32_t> bins(n);
  for (std::size_t i = 0; i < n; ++i)
    bins[i] = ce::coarse_bin_of_score(grid_index_ceiling(alpha[i], u[i]));
  std::vector<uint32_t> sorted = bins;
  std::sort(sorted.begin(), sorted.end());
  const uint32_t bound_hi = sorted[n * 7 / 10], bound_lo = sorted[n * 4 / 10];

  std::vector<double> px = x;  // the plain recursion
  std::vector<uint32_t> pw = word;
  std::vector<char> slept(n, 0);
  DormantSet d;
  d.reset(n, kChunk);
  const DormantSet::Arrays a{x.data(), word.data(), alpha.data(), u.data(), 2};
  const std::size_t chunks = (n + kChunk - 1) / kChunk;
  auto note_sleepers = [&] {
    for (std::size_t c = 0; c < chunks; ++c) {
      if (d.live(c) == DormantSet::kPlain) continue;
      std::vector<char> live(kChunk, 0);
      for (uint32_t j = 0; j < d.live(c); ++j) live[d.loc(c)[j]] = 1;
      for (std::size_t i = c * kChunk; i < std::min(n, (c + 1) * kChunk); ++i)
        if (!live[i - c * kChunk]) slept[i] = 1;
    }
  };
  auto step = [&] {  // one epoch without crawls: every plain source, every live slot
    for (std::size_t i = 0; i < n; ++i) {
      const double next = alpha[i] * px[i] + u[i];
      pw[i] = (pw[i] & ~dw::kStateMask) | dw::next(pw[i] & dw::kStateMask, false, next != px[i]);
      px[i] = next;
    }
    for (std::size_t c = 0; c < chunks; ++c) {
      const std::size_t lo = c * kChunk, hi = std::min(n, lo + kChunk);
      const uint32_t live = d.live(c);
      for (std::size_t j = 0; j < (live == DormantSet::kPlain ? hi - lo : live); ++j) {
        const std::size_t id = lo + (live == DormantSet::kPlain ? j : d.loc(c)[j]);
        const double next = alpha[id] * x[lo + j] + u[id];
        word[lo + j] = (word[lo + j] & ~dw::kStateMask) |
                       dw::next(word[lo + j] & dw::kStateMask, false, next != x[lo + j]);
        x[lo + j] = next;
      }
    }
  };
  uint64_t t = 0;
  d.split(bound_hi, t, a);
  ASSERT_TRUE(d.on());
  EXPECT_EQ(d.live(3), DormantSet::kPlain);
  EXPECT_GT(d.dormant(), n / 3);
  for (std::size_t c = 0; c < chunks; ++c)
    if (d.live(c) != DormantSet::kPlain) {
      EXPECT_EQ(d.live(c) % 8, 0u);
      for (uint32_t j = 0; j < d.live(c); ++j) {  // the copies of the constants
        EXPECT_EQ(d.live_alpha(c)[j], alpha[c * kChunk + d.loc(c)[j]]);
        EXPECT_EQ(d.live_u(c)[j], u[c * kChunk + d.loc(c)[j]]);
      }
    }
  note_sleepers();
  for (int e = 0; e < 40; ++e) {
    step(), ++t;
    if (e == 7 || e == 8 || e == 30) d.catch_up(t, a);
    if (e == 19) d.split(bound_lo, t, a), note_sleepers();  // a lower bound: some wake
    if (e == 25) d.split(bound_hi, t, a), note_sleepers();
  }
  // Sources with a fixed point within reach: run one long stretch (they converge and are flagged).
  for (int e = 0; e < 3000; ++e) step(), ++t;
  d.catch_up(t, a);
  for (int e = 0; e < 5; ++e) step(), ++t;
  d.wake(t, a);
  EXPECT_FALSE(d.on());
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(x[i], px[i]) << "source " << i;
    ASSERT_EQ(word[i] & dw::kStateMask, pw[i] & dw::kStateMask) << "source " << i;
    ASSERT_EQ(word[i] >> dw::kClassShift, slept[i] ? 0u : pw[i] >> dw::kClassShift)
        << "source " << i;
  }
  EXPECT_GT(std::count(slept.begin(), slept.end(), 1), 0);
}

// Whole rollouts of the deterministic Whittle policy in which most sources sleep: a synthetic
// population (its steady state at 1% leaves about three sources in four below the floor for
// good), one of five groups of equal sources (the stop inside a tie group: a tie scan wakes every
// source), fresh, empty and given starts (a given start's off-grid sources keep their chunks
// plain), 300 epochs. The crawled sets are the reference's epoch by epoch; against the plain pass
// (CRAWLEVAL_DORMANT=0) the rewards are equal bit for bit and the selection takes the same path.
// Eager mode (a split every epoch, no margin below the floor, catch-ups every other epoch) makes
// the floor's every dip wake sources; the scalar pass (CRAWLEVAL_SCALAR=1, the pass of CPUs without
// AVX-512) runs the live slots too.
TEST(Dormant, RolloutsEqualThePlainPassAndTheReference) {
  ce::Population grouped = ce::testing::random_population(20011, 17, true, false);
  for (std::size_t i = 5; i < grouped.size(); ++i)
    grouped.lambda[i] = grouped.lambda[i % 5], grouped.xi[i] = grouped.xi[i % 5],
    grouped.mu[i] = grouped.mu[i % 5];
  ce::Population given = ce::synthetic_population(20011, 8, ce::SyntheticCosts::unit);
  given.x0.resize(given.size());
  for (std::size_t i = 0; i < given.size(); ++i)
    given.x0[i] = i % 3 == 0 ? 0.5 * given.lambda[i] * given.xi[i] / given.mu[i] : 0.0;
  struct Case {
    const char* name;
    ce::Population pop;
    ce::Start start;
    double frac;
  };
  const std::vector<Case> cases = {
      {"synthetic 1%", ce::synthetic_population(40000, 3, ce::SyntheticCosts::unit),
       ce::Start::fresh, 0.01},
      {"synthetic 5% empty", ce::synthetic_population(20011, 4, ce::SyntheticCosts::unit),
       ce::Start::empty, 0.05},
      {"synthetic 0.2%", ce::synthetic_population(20011, 5, ce::SyntheticCosts::unit),
       ce::Start::fresh, 0.002},
      {"grouped 1%", grouped, ce::Start::empty, 0.01},
      {"given 1%", given, ce::Start::given, 0.01},
  };
  uint64_t slept = 0, woken = 0;
  for (const Case& k : cases) {
    ce::RunConfig cfg;
    cfg.budget = std::floor(k.frac * double(k.pop.size()));
    cfg.epochs = 280;
    cfg.burn_in = 20;
    cfg.start = k.start;
    cfg.threads = 2;
    cfg.replications = std::string(k.name) == "grouped 1%" ? 2 : 1;  // the workspace reused
    const ce::Problem pr = ce::make_problem(k.pop, cfg);
    const ce::testing::Trace want =
        ce::testing::traced(pr, ce::Policy::whittle, ce::Backend::reference);
    ce::testing::Trace plain;
    ce::RolloutOutput plain_out;
    {
      DormantMode off("0");
      plain = ce::testing::traced(pr, ce::Policy::whittle, ce::Backend::cpu);
      plain_out = ce::cpu_rollout(pr, ce::Policy::whittle);
      EXPECT_EQ(plain_out.counters.dormant, 0u);
    }
    for (const char* mode : {"1", "eager", "scalar"}) {
      // "scalar": the scalar pass over the live slots (CRAWLEVAL_SCALAR=1, as without AVX-512).
      const bool scalar = std::string(mode) == "scalar";
      if (!scalar && !ce::detail::avx512_pass_available()) continue;
      SCOPED_TRACE(std::string(k.name) + ", CRAWLEVAL_DORMANT=" + mode);
      DormantMode on(scalar ? "eager" : mode);
      if (scalar) setenv("CRAWLEVAL_SCALAR", "1", 1);
      struct Unset {
        bool on;
        ~Unset() {
          if (on) unsetenv("CRAWLEVAL_SCALAR");
        }
      } unset{scalar};
      const ce::testing::Trace got = ce::testing::traced(pr, ce::Policy::whittle, ce::Backend::cpu);
      ASSERT_EQ(got.sets.size(), want.sets.size());
      for (std::size_t t = 0; t < want.sets.size(); ++t) {
        ASSERT_EQ(got.sets[t], want.sets[t]) << "epoch " << t;
        ASSERT_EQ(got.rewards[t], plain.rewards[t]) << "epoch " << t;
      }
      const ce::RolloutOutput out = ce::cpu_rollout(pr, ce::Policy::whittle);
      EXPECT_EQ(out.replication_reward, plain_out.replication_reward);
      EXPECT_EQ(out.epoch_reward, plain_out.epoch_reward);
      EXPECT_EQ(out.counters.listed, plain_out.counters.listed);
      EXPECT_EQ(out.counters.tie_scans, plain_out.counters.tie_scans);
      EXPECT_EQ(out.counters.window_misses, plain_out.counters.window_misses);
      EXPECT_EQ(out.counters.levels, plain_out.counters.levels);
      EXPECT_EQ(out.counters.recounts, plain_out.counters.recounts);
      if (std::string(k.name) == "synthetic 1%")  // most of the steady state asleep
        EXPECT_GT(out.counters.dormant, cfg.epochs * k.pop.size() / 2);
      slept += out.counters.dormant;
      woken += out.counters.dormant_wakes;
    }
  }
  EXPECT_GT(slept, 0u);
  EXPECT_GT(woken, 0u);
}

// Sources whose states reach the floating-point fixed point of fl(alpha x) + u keep the age at
// which they got there (det_word::next, GridTracker in the small engine), so their index on the
// grid stays a function of the state, as the reference's general index is. Found by a hostile
// pass: with the age going on, sources of equal constants that converged at different ages no
// longer tied, and the CPU backend crawled other sources than the reference (two kinds of
// sources with u* = 10: at epoch 350 the reference crawled source 49, the CPU backend 50). Two
// kinds alternating and five groups of equal sources (all of u* 10, or random), in the small
// engine (100 and 2000 sources) and the wide one (20011), the vector and the scalar pass: the
// reference's crawled sets and rewards epoch by epoch. (Not every such population agrees in the
// wide engine: different sources' indices near u* can lie closer than either computation's
// rounding, about eta ulps of u for the engine's x + eta ((1 - alpha) x - u) and 5-40 ulps for the
// reference's general formula: the five groups of u* 10 at 10000 sources, M = 100, crawl other
// sets from epoch 171; docs/cpu-design.md.)
TEST(Dormant, ConvergedStatesKeepTheirAgeAndTieAsInTheReference) {
  auto two_kinds = [](std::size_t n) {
    ce::Population pop;
    pop.origin = "two kinds";
    for (std::size_t i = 0; i < n; ++i) {
      pop.lambda.push_back(i % 2 ? 1.0 : 5.0);
      pop.xi.push_back(1.0);
      pop.mu.push_back(i % 2 ? 0.1 : 0.5);
      pop.cost.push_back(1.0);
      pop.id.push_back(i);
    }
    return pop;
  };
  auto five_groups = [](std::size_t n) {
    ce::Population pop = ce::testing::random_population(n, 23, true, false);
    for (std::size_t i = 5; i < n; ++i)
      pop.lambda[i] = pop.lambda[i % 5], pop.xi[i] = pop.xi[i % 5], pop.mu[i] = pop.mu[i % 5];
    return pop;
  };
  auto u_star_ten = [](std::size_t n) {  // five groups whose u* are all 10 (a hostile pass's)
    ce::Population pop;
    pop.origin = "five groups with u* 10";
    const double lambda[5] = {1, 2, 3, 5, 8}, mu[5] = {0.1, 0.2, 0.3, 0.5, 0.8};
    for (std::size_t i = 0; i < n; ++i) {
      pop.lambda.push_back(lambda[i % 5]);
      pop.xi.push_back(1.0);
      pop.mu.push_back(mu[i % 5]);
      pop.cost.push_back(1.0);
      pop.id.push_back(i);
    }
    return pop;
  };
  struct Case {
    ce::Population pop;
    double budget;
  };
  const std::vector<Case> cases = {{two_kinds(100), 1},
                                   {u_star_ten(2000), 20},
                                   {five_groups(2000), 20},
                                   {five_groups(20011), 200},
                                   {five_groups(20011), 20}};
  for (const Case& k : cases) {
    ce::RunConfig cfg;
    cfg.budget = k.budget;
    cfg.epochs = 500;
    cfg.burn_in = 0;
    cfg.threads = 2;
    const ce::Problem pr = ce::make_problem(k.pop, cfg);
    const ce::testing::Trace want =
        ce::testing::traced(pr, ce::Policy::whittle, ce::Backend::reference);
    for (bool scalar : {false, true}) {
      if (!scalar && !ce::detail::avx512_pass_available()) continue;
      SCOPED_TRACE(k.pop.origin + " of " + std::to_string(k.pop.size()) + ", M " +
                   std::to_string(k.budget) + (scalar ? ", scalar pass" : ""));
      if (scalar) setenv("CRAWLEVAL_SCALAR", "1", 1);
      const ce::testing::Trace got = ce::testing::traced(pr, ce::Policy::whittle, ce::Backend::cpu);
      if (scalar) unsetenv("CRAWLEVAL_SCALAR");
      ASSERT_EQ(got.sets.size(), want.sets.size());
      for (std::size_t t = 0; t < want.sets.size(); ++t) {
        ASSERT_EQ(got.sets[t], want.sets[t]) << "epoch " << t;
        if (k.pop.size() <= 16384) ASSERT_EQ(got.rewards[t], want.rewards[t]) << "epoch " << t;
      }
    }
  }
}

// The one known way the wide engine's crawled sets can differ from the reference's
// (docs/coverage.md; docs/cpu-design.md, "Differences from the reference"): sources of five kinds,
// all of u* 10, crawled about every 100 epochs, whose states near u* give indices closer than
// either engine computes them. Wherever the crawled sets first differ, every source crawled by one
// engine alone has a reference index within 1e-13 relative of the reference's boundary (its lowest
// crawled index), and the mean rewards over 500 epochs agree to 1e-13 relative. (At 10000 sources,
// M = 100 the sets differ from epoch 171: 10-ulp gaps against about 40 ulps of the engine's
// rounding at age 170.)
TEST(Dormant, WhereTheCrawledSetsDifferFromTheReferenceTheIndicesAgreeTo1e13) {
  ce::Population pop;
  pop.origin = "five kinds of u* 10";
  const double lambda[5] = {1, 2, 3, 5, 8}, mu[5] = {0.1, 0.2, 0.3, 0.5, 0.8};
  for (std::size_t i = 0; i < 10000; ++i) {
    pop.lambda.push_back(lambda[i % 5]);
    pop.xi.push_back(1.0);
    pop.mu.push_back(mu[i % 5]);
    pop.cost.push_back(1.0);
    pop.id.push_back(i);
  }
  ce::RunConfig cfg;
  cfg.budget = 100;
  cfg.epochs = 500;
  cfg.burn_in = 0;
  cfg.threads = 2;
  const ce::Problem pr = ce::make_problem(pop, cfg);
  const ce::testing::Trace want =
      ce::testing::traced(pr, ce::Policy::whittle, ce::Backend::reference);
  const ce::testing::Trace got = ce::testing::traced(pr, ce::Policy::whittle, ce::Backend::cpu);
  ASSERT_EQ(got.sets.size(), want.sets.size());
  ASSERT_EQ(want.states.size(), want.sets.size());
  auto index = [&](std::size_t t, uint32_t i) {
    return ce::whittle_index(want.states[t][i], pr.params().at(i));
  };
  for (std::size_t t = 0; t < want.sets.size(); ++t) {
    if (got.sets[t] == want.sets[t]) continue;
    double boundary = std::numeric_limits<double>::infinity();
    for (uint32_t i : want.sets[t]) boundary = std::min(boundary, index(t, i));
    std::vector<uint32_t> one_only;
    std::set_symmetric_difference(want.sets[t].begin(), want.sets[t].end(), got.sets[t].begin(),
                                  got.sets[t].end(), std::back_inserter(one_only));
    for (uint32_t i : one_only)
      EXPECT_NEAR(index(t, i), boundary, 1e-13 * boundary) << "epoch " << t << ", source " << i;
    break;  // (the states differ from here on)
  }
  double sum_want = 0.0, sum_got = 0.0;
  for (std::size_t t = 0; t < want.rewards.size(); ++t)
    sum_want += want.rewards[t], sum_got += got.rewards[t];
  EXPECT_NEAR(sum_got, sum_want, 1e-13 * sum_want);
}
