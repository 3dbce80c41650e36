// CPU backend EqualsReference: on random instances the fast path crawls the same sets epoch by
// epoch and collects the same rewards as the serial reference.
//
// Tolerance. With one chunk (N <= 16384) the CPU backend adds rewards in the reference's order, and
// both call the same model functions on the same host: rewards must be bit-identical (this is also
// how "stochastic draws identical draw for draw" is checked). Larger N adds per-chunk partial sums,
// so rewards agree to 1e-12 relative. The deterministic Whittle fast path evaluates the index on
// the grid (no logarithm); it agrees with the reference's general formula to a few ulps at the ages
// these runs reach (more for a source left uncrawled far beyond 1 / (mu T): docs/cpu-design.md),
// far below any gap between distinct scores in these instances, so the selected sets are identical.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "crawleval/analysis/bound.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/evaluate/driver.hpp"
#include "crawleval/io/io.hpp"
#include "crawleval/model/rng.hpp"
#include "engine/cpu/arrival_words.hpp"
#include "engine/cpu/det_whittle_avx512.hpp"
#include "engine/cpu/source_step.hpp"
#include "engine/cpu/thread_governor.hpp"
#include "engine/cpu/whittle_avx512.hpp"
#include "test_util.hpp"

namespace ce = crawleval;

namespace {

using crawleval::testing::random_population;

using crawleval::testing::Trace;
using crawleval::testing::traced;

}  // namespace

TEST(CpuBackend, EqualsReference) {
  for (std::size_t n : {std::size_t(1), std::size_t(2), std::size_t(131), std::size_t(100000)}) {
    const uint64_t epochs = n >= 100000 ? 5 : 60;
    for (uint64_t seed : {1u, 2u}) {
      if (n >= 100000 && seed == 2) continue;  // the reference's full sort makes this case slow
      for (bool unit : {true, false}) {
        const ce::Population pop = random_population(n, seed * 7919 + n, unit, seed == 2);
        const double total = pop.total_cost();
        for (double budget : {1.0, std::floor(double(n) / 3), double(n)}) {
          if (budget < 1 || budget > total) continue;
          for (ce::Model model : {ce::Model::deterministic, ce::Model::stochastic}) {
            ce::RunConfig cfg;
            cfg.budget = unit ? budget : std::min(total, budget * 1.3);
            cfg.epochs = epochs;
            cfg.burn_in = 2;
            cfg.replications = n >= 100000 ? 1 : 2;
            cfg.model = model;
            cfg.seed = seed;
            cfg.threads = 2;
            cfg.start = seed == 2 ? ce::Start::given : ce::Start::empty;
            const ce::Problem pr = ce::make_problem(pop, cfg);
            for (ce::Policy p : {ce::Policy::whittle, ce::Policy::greedy, ce::Policy::round_robin,
                                 ce::Policy::random}) {
              SCOPED_TRACE("n " + std::to_string(n) + " seed " + std::to_string(seed) +
                           (unit ? " unit" : " costs") + " budget " + std::to_string(cfg.budget) +
                           " " + ce::to_string(model) + " " + ce::to_string(p));
              const Trace want = traced(pr, p, ce::Backend::reference);
              const Trace got = traced(pr, p, ce::Backend::cpu);
              ASSERT_EQ(got.sets.size(), want.sets.size());
              for (std::size_t t = 0; t < want.sets.size(); ++t) {
                ASSERT_EQ(got.sets[t], want.sets[t]) << "epoch " << t;
                if (n <= 16384)
                  ASSERT_EQ(got.rewards[t], want.rewards[t]) << "epoch " << t;
                else
                  ASSERT_NEAR(got.rewards[t], want.rewards[t], 1e-12 * std::fabs(want.rewards[t]))
                      << "epoch " << t;
              }
              // The untraced run (tall regime for small n) gives the same replication means.
              const ce::RolloutOutput a = ce::rollout(pr, p, ce::Backend::reference);
              const ce::RolloutOutput b = ce::rollout(pr, p, ce::Backend::cpu);
              ASSERT_EQ(a.replication_reward.size(), b.replication_reward.size());
              for (std::size_t r = 0; r < a.replication_reward.size(); ++r)
                EXPECT_NEAR(b.replication_reward[r], a.replication_reward[r],
                            1e-12 * std::fabs(a.replication_reward[r]));
            }
          }
        }
      }
    }
  }
}

TEST(CpuBackend, ResultDoesNotDependOnTheThreadCount) {
  const ce::Population pop = random_population(70000, 9, false, false);
  ce::RunConfig cfg;
  cfg.budget = 5000;
  cfg.epochs = 20;
  cfg.model = ce::Model::stochastic;
  std::vector<double> first;
  for (int threads : {1, 2, 3}) {
    cfg.threads = threads;
    const ce::RolloutOutput out = ce::cpu_rollout(ce::make_problem(pop, cfg), ce::Policy::whittle);
    if (first.empty())
      first = out.epoch_reward;
    else
      EXPECT_EQ(out.epoch_reward, first) << threads << " threads";
  }
}

TEST(CpuBackend, StochasticReplicationsDifferAndDeterministicOnesAgree) {
  const ce::Population pop = ce::paper_example();
  ce::RunConfig cfg;
  cfg.budget = 1;
  cfg.epochs = 200;
  cfg.replications = 8;
  cfg.threads = 2;
  const ce::RolloutOutput det = ce::cpu_rollout(ce::make_problem(pop, cfg), ce::Policy::whittle);
  for (double r : det.replication_reward) EXPECT_EQ(r, det.replication_reward[0]);
  cfg.model = ce::Model::stochastic;
  const ce::RolloutOutput sto = ce::cpu_rollout(ce::make_problem(pop, cfg), ce::Policy::whittle);
  EXPECT_NE(sto.replication_reward[0], sto.replication_reward[1]);
}

TEST(CpuBackend, SmallPopulationsRunWithoutAParallelRegionPerEpoch) {
  // Regression: 1000 epochs of the 4-source example took 0.4-4.4 s of CPU time under load, idle
  // threads spinning at every epoch's barrier. One chunk of sources means one thread.
  const ce::Population pop = ce::paper_example();
  ce::RunConfig cfg;
  cfg.budget = 1;
  cfg.epochs = 1000;
  cfg.threads = 2;
  const ce::Problem pr = ce::make_problem(pop, cfg);
  EXPECT_EQ(ce::rollout(pr, ce::Policy::whittle, ce::Backend::cpu).threads, 1);
  const ce::Population big = random_population(40000, 3, true, false);  // 3 chunks
  ce::RunConfig cb = cfg;
  cb.budget = 400;
  cb.epochs = 2;
  const ce::Problem pb = ce::make_problem(big, cb);
  EXPECT_EQ(ce::rollout(pb, ce::Policy::whittle, ce::Backend::cpu).threads, 2);
}

// The wide engine (N > 2048: windowed radix select, classes instead of keys, fallback passes, tie
// groups) against the reference, epoch by epoch, from every kind of start: one chunk (bit-identical
// rewards) and several chunks handed to two threads. The empty start ties every score at 0 in the
// first epoch (the boundary inside a tie group); the given start puts sources off the grid (the
// general index until their first crawl); the full start puts them at u*. The engine's counters
// show that the window was used (listed sources) and missed at most in the first epochs.
TEST(CpuBackend, WideEngineEqualsReference) {
  for (std::size_t n : {std::size_t(3000), std::size_t(40000)}) {
    for (bool unit : {true, false}) {
      const ce::Population pop = random_population(n, 31 + n, unit, true);
      for (ce::Start start :
           {ce::Start::empty, ce::Start::fresh, ce::Start::full, ce::Start::given}) {
        if (n > 3000 && (start == ce::Start::fresh || start == ce::Start::full)) continue;
        for (double frac : {0.001, 0.3, 0.97}) {
          for (ce::Model model : {ce::Model::deterministic, ce::Model::stochastic}) {
            ce::RunConfig cfg;
            cfg.budget = std::max(1.0, std::floor(frac * pop.total_cost()));
            cfg.epochs = n > 3000 ? 8 : 25;
            cfg.burn_in = 1;
            cfg.model = model;
            cfg.start = start;
            cfg.threads = 2;
            const ce::Problem pr = ce::make_problem(pop, cfg);
            for (ce::Policy p : {ce::Policy::whittle, ce::Policy::greedy, ce::Policy::round_robin,
                                 ce::Policy::random}) {
              if (n > 3000 && p != ce::Policy::whittle && p != ce::Policy::round_robin) continue;
              SCOPED_TRACE("n " + std::to_string(n) + (unit ? " unit" : " costs") + " start " +
                           ce::to_string(start) + " budget " + std::to_string(cfg.budget) + " " +
                           ce::to_string(model) + " " + ce::to_string(p));
              const Trace want = traced(pr, p, ce::Backend::reference);
              const Trace got = traced(pr, p, ce::Backend::cpu);
              ASSERT_EQ(got.sets.size(), want.sets.size());
              for (std::size_t t = 0; t < want.sets.size(); ++t) {
                ASSERT_EQ(got.sets[t], want.sets[t]) << "epoch " << t;
                if (n <= 16384)
                  ASSERT_EQ(got.rewards[t], want.rewards[t]) << "epoch " << t;
                else
                  ASSERT_NEAR(got.rewards[t], want.rewards[t], 1e-12 * std::fabs(want.rewards[t]));
              }
              const ce::RolloutOutput out = ce::cpu_rollout(pr, p);
              EXPECT_EQ(out.counters.selections, cfg.epochs + cfg.burn_in);
              EXPECT_EQ(out.counters.launches, 0u);
              EXPECT_LT(out.counters.listed, n * (cfg.epochs + cfg.burn_in));
            }
          }
        }
      }
    }
  }
}

// Issue #28: a slice of the 1e10-source synthetic population whose global ids lie above 2^32
// (from 5e9), and one that straddles 2^32 (two draw keys inside one group of eight sources), on
// the CPU backend (the small engine at 1500 sources, the wide engine and its vector passes at
// 20011) crawls the reference's sets epoch by epoch with the reference's rewards.
TEST(CpuBackend, SliceAboveTwoToThe32EqualsReference) {
  constexpr uint64_t kTotal = 10000000000ull;
  for (uint64_t first : {uint64_t(5000000000ull), (uint64_t(1) << 32) - 1003}) {
    for (std::size_t n : {std::size_t(1500), std::size_t(20011)}) {
      ce::Population pop =
          ce::synthetic_slice(kTotal, 3, ce::SyntheticCosts::unit, first, uint64_t(n));
      pop.first_id = first;
      for (ce::Model model : {ce::Model::deterministic, ce::Model::stochastic}) {
        for (ce::Observe observe : {ce::Observe::full, ce::Observe::belief}) {
          if (n > 1500 && observe == ce::Observe::belief) continue;
          ce::RunConfig cfg;
          cfg.budget = std::floor(double(n) / 20.0);
          cfg.epochs = n > 1500 ? 6 : 12;
          cfg.burn_in = 1;
          cfg.model = model;
          cfg.observe = observe;
          cfg.seed = 11;
          cfg.threads = 2;
          const ce::Problem pr = ce::make_problem(pop, cfg);
          for (ce::Policy p : {ce::Policy::whittle, ce::Policy::greedy, ce::Policy::round_robin,
                               ce::Policy::random}) {
            SCOPED_TRACE("first " + std::to_string(first) + " n " + std::to_string(n) + " " +
                         ce::to_string(model) + " " + ce::to_string(observe) + " " +
                         ce::to_string(p));
            const Trace want = traced(pr, p, ce::Backend::reference);
            const Trace got = traced(pr, p, ce::Backend::cpu);
            ASSERT_EQ(got.sets.size(), want.sets.size());
            for (std::size_t t = 0; t < want.sets.size(); ++t) {
              ASSERT_EQ(got.sets[t], want.sets[t]) << "epoch " << t;
              ASSERT_NEAR(got.rewards[t], want.rewards[t], 1e-12 * std::fabs(want.rewards[t]));
              if (n <= 16384) ASSERT_EQ(got.rewards[t], want.rewards[t]) << "epoch " << t;
            }
          }
        }
      }
    }
  }
}

// The AVX-512 deterministic Whittle pass (det_whittle_avx512.cpp) against the scalar pass
// (CRAWLEVAL_SCALAR=1) on the same problems: identical crawled sets and bit-identical rewards
// epoch by epoch (both add rewards per chunk in source order). Several chunks and a tail of fewer
// than eight sources; the empty start (every score tied at 0 in the first epoch), the given start
// (groups of eight holding off-grid sources go to the scalar pass) and the full start; budgets
// from 0.1% to 97%. The vector pass against the reference is WideEngineEqualsReference, which
// runs whichever pass the machine has.
TEST(CpuBackend, VectorPassEqualsScalarPass) {
  if (!crawleval::detail::avx512_pass_available())
    GTEST_SKIP() << "this CPU has no AVX-512 (or CRAWLEVAL_SCALAR is set): the scalar pass runs";
  struct ScalarPass {  // CRAWLEVAL_SCALAR=1 for the scope
    ScalarPass() { setenv("CRAWLEVAL_SCALAR", "1", 1); }
    ~ScalarPass() { unsetenv("CRAWLEVAL_SCALAR"); }
  };
  // Distinct sources, and sources in five groups of equal parameters (ties at nonzero states:
  // the stop falls inside a tie group epoch after epoch).
  ce::Population grouped = random_population(40003, 17, true, true);
  for (std::size_t i = 5; i < grouped.size(); ++i) {
    grouped.lambda[i] = grouped.lambda[i % 5], grouped.xi[i] = grouped.xi[i % 5];
    grouped.mu[i] = grouped.mu[i % 5], grouped.x0[i] = grouped.x0[i % 5];
  }
  for (const ce::Population& pop : {random_population(40003, 17, true, true), grouped})
    for (ce::Start start : {ce::Start::empty, ce::Start::given, ce::Start::full}) {
      for (double frac : {0.001, 0.3, 0.97}) {
        ce::RunConfig cfg;
        cfg.budget = std::max(1.0, std::floor(frac * pop.total_cost()));
        cfg.epochs = 12;
        cfg.burn_in = 1;
        cfg.start = start;
        cfg.threads = 2;
        const ce::Problem pr = ce::make_problem(pop, cfg);
        SCOPED_TRACE(pop.origin + (&pop == &grouped ? " grouped" : "") + " start " +
                     ce::to_string(start) + " budget " + std::to_string(cfg.budget));
        const Trace vec = traced(pr, ce::Policy::whittle, ce::Backend::cpu);
        Trace scalar;
        {
          ScalarPass off;
          ASSERT_FALSE(crawleval::detail::avx512_pass_available());
          scalar = traced(pr, ce::Policy::whittle, ce::Backend::cpu);
        }
        ASSERT_EQ(vec.sets.size(), scalar.sets.size());
        for (std::size_t t = 0; t < vec.sets.size(); ++t) {
          ASSERT_EQ(vec.sets[t], scalar.sets[t]) << "epoch " << t;
          ASSERT_EQ(vec.rewards[t], scalar.rewards[t]) << "epoch " << t;
        }
        // Without an observer too (the class of every source is then read only by the next pass).
        const ce::RolloutOutput a = ce::cpu_rollout(pr, ce::Policy::whittle);
        ce::RolloutOutput b;
        {
          ScalarPass off;
          b = ce::cpu_rollout(pr, ce::Policy::whittle);
        }
        EXPECT_EQ(a.replication_reward, b.replication_reward);
        // The same path through the selection: the same sources listed, ties found, misses.
        EXPECT_EQ(a.counters.listed, b.counters.listed);
        EXPECT_EQ(a.counters.tie_scans, b.counters.tie_scans);
        EXPECT_EQ(a.counters.window_misses, b.counters.window_misses);
        EXPECT_EQ(a.counters.levels, b.counters.levels);
      }
    }
}

// The deterministic Whittle pass counts the sources under the lump floor (two bins below the
// window) in one lump, the AVX-512 pass and the scalar pass alike; an epoch whose boundary falls
// below the floor counts every bin again (a recount) before the fallback lists its bin. From given
// or full states a large budget's boundary falls through the floor in the first epochs: both passes
// recount and crawl the reference's sets with its rewards.
TEST(CpuBackend, DeterministicLumpRecountsEqualReference) {
  const ce::Population pop = random_population(40003, 17, true, true);
  for (ce::Start start : {ce::Start::given, ce::Start::full})
    for (double frac : {0.1, 0.3}) {
      ce::RunConfig cfg;
      cfg.budget = std::floor(frac * pop.total_cost());
      cfg.epochs = 8;
      cfg.burn_in = 1;
      cfg.start = start;
      cfg.threads = 2;
      const ce::Problem pr = ce::make_problem(pop, cfg);
      const Trace want = traced(pr, ce::Policy::whittle, ce::Backend::reference);
      for (bool scalar : {false, true}) {
        if (!scalar && !crawleval::detail::avx512_pass_available()) continue;
        SCOPED_TRACE(std::string(scalar ? "scalar" : "AVX-512") + " pass, start " +
                     ce::to_string(start) + " budget " + std::to_string(cfg.budget));
        if (scalar) setenv("CRAWLEVAL_SCALAR", "1", 1);
        const Trace got = traced(pr, ce::Policy::whittle, ce::Backend::cpu);
        const ce::RolloutOutput out = ce::cpu_rollout(pr, ce::Policy::whittle);
        if (scalar) unsetenv("CRAWLEVAL_SCALAR");
        EXPECT_GT(out.counters.recounts, 0u);
        ASSERT_EQ(got.sets.size(), want.sets.size());
        for (std::size_t t = 0; t < want.sets.size(); ++t) {
          ASSERT_EQ(got.sets[t], want.sets[t]) << "epoch " << t;
          ASSERT_NEAR(got.rewards[t], want.rewards[t], 1e-12 * std::fabs(want.rewards[t]));
        }
      }
    }
}

// The AVX-512 deterministic pass's records of one scoring pass, source by source against
// window::classify of the scalar score (grid_index, score_key, coarse_bin_of_score): the class in
// every word, the sources under the lump floor in the lump and no bin, every other source's bin
// counted, the candidates listed in source order with their keys, the tie members summed. Blocks of
// 64 sources and their partial ends: a pass that stops before a source off the grid (the caller
// scores that group) and goes on after it, and a pass that stops short of its last five sources.
TEST(CpuBackend, DetVectorPassLumpsCountsAndListsAsClassify) {
  using namespace crawleval::window;
  namespace dw = crawleval::detail::det_word;
  if (!crawleval::detail::avx512_pass_available())
    GTEST_SKIP() << "this CPU has no AVX-512 (or CRAWLEVAL_SCALAR is set)";
  const std::size_t n = 1013, off = 500;  // source 500 off the grid: its group 496..503 is skipped
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<double> x(n), alpha(n), u(n);
  std::vector<uint32_t> w0(n);
  for (std::size_t i = 0; i < n; ++i) {
    alpha[i] = std::exp(-0.01 - 3.0 * unit(rng));
    u[i] = 0.1 + 5.0 * unit(rng);
    w0[i] = uint32_t(rng() % 40);
    x[i] = unit(rng) * u[i] / (1.0 - alpha[i]);
  }
  x[7] = std::numeric_limits<double>::quiet_NaN();  // key 0, bin 0
  w0[off] = dw::kGeneral;
  std::vector<double> score(n);
  std::vector<uint32_t> sorted_bins;
  const auto score_all = [&] {
    sorted_bins.clear();
    for (std::size_t i = 0; i < n; ++i) {
      score[i] = dw::grid_index(x[i], w0[i], alpha[i], u[i], 1.0);
      sorted_bins.push_back(ce::coarse_bin_of_score(score[i]));
    }
  };
  score_all();
  std::vector<uint32_t> by_bin = sorted_bins;
  std::sort(sorted_bins.begin(), sorted_bins.end());
  Plan windowed;
  windowed.lo = sorted_bins[n * 8 / 10], windowed.hi = sorted_bins[n * 9 / 10];
  // A tie group of 40 inside the window (the plan's tie key is a score they share).
  std::size_t j = 0;
  while (by_bin[j] <= windowed.lo || by_bin[j] > windowed.hi) ++j;
  for (std::size_t i = 100; i < 140; ++i)
    x[i] = x[j], alpha[i] = alpha[j], u[i] = u[j], w0[i] = w0[j];
  score_all();
  windowed.has_tie = 1, windowed.tie_key = ce::score_key(score[j]);
  for (const Plan& plan : {windowed, Plan{}}) {
    const uint32_t floor = lump_floor(plan);
    SCOPED_TRACE("plan " + std::to_string(plan.lo) + ".." + std::to_string(plan.hi) + " floor " +
                 std::to_string(floor));
    std::vector<uint32_t> word = w0;
    crawleval::detail::WindowSelector sel;
    sel.prepare(n, 1, true);
    sel.begin_pass();
    crawleval::detail::WindowSelector::Pass& ps = sel.pass(0);
    const crawleval::detail::DetPass pass{
        x.data(), word.data(), alpha.data(), u.data(), crawleval::detail::ApplyRule{},
        plan,     false,       true};
    double reward = 0.0, spent = 0.0;
    ASSERT_EQ(crawleval::detail::det_whittle_avx512(pass, 0, n, sel, ps, &reward, &spent), 496u);
    ASSERT_EQ(crawleval::detail::det_whittle_avx512(pass, 504, n, sel, ps, &reward, &spent), 1008u);
    uint64_t lumped = 0, ties = 0;
    std::vector<uint64_t> count(ce::kBins, 0);
    std::vector<std::pair<uint64_t, uint32_t>> list;
    for (std::size_t i = 0; i < n; ++i) {
      if ((i >= 496 && i < 504) || i >= 1008) {
        EXPECT_EQ(word[i], w0[i]) << i;  // not the pass's
        continue;
      }
      const uint64_t key = ce::score_key(score[i]);
      const uint32_t bin = ce::coarse_bin_of_score(score[i]);
      const uint32_t c = classify(key, bin, plan);
      ASSERT_EQ(word[i], w0[i] | (c << dw::kClassShift)) << i;
      if (bin < floor) {
        ASSERT_EQ(c, uint32_t(kBelow)) << i;
        lumped += 1;
      } else {
        count[bin] += 1;
      }
      if (c == kCandidate) list.emplace_back(key, uint32_t(i));
      if (c == kTie) ties += 1;
    }
    if (floor > 0) EXPECT_GT(lumped, 100u);
    if (floor > 0) {  // the two bins at the floor hold sources
      EXPECT_GT(count[floor], 0u);
      EXPECT_GT(count[floor + 1], 0u);
    }
    if (plan.lo <= plan.hi) EXPECT_GT(list.size(), 20u);
    if (plan.has_tie) EXPECT_GE(ties, 40u);
    EXPECT_EQ(ps.lumped, lumped);
    EXPECT_EQ(ps.lumped_weight, lumped);
    EXPECT_EQ(ps.count, count);
    EXPECT_EQ(ps.tie_count, ties);
    ASSERT_EQ(ps.list.size(), list.size());
    for (std::size_t k = 0; k < list.size(); ++k) {
      EXPECT_EQ(ps.list[k].key, list[k].first) << k;
      EXPECT_EQ(ps.list[k].id, list[k].second) << k;
      EXPECT_EQ(ps.list[k].w, 1u) << k;
    }
  }
}

// The general Whittle index eight wide (whittle_avx512.cpp) against model.hpp's whittle_index,
// bit for bit, on states that take every branch: empty and negative, tiny, on and beside the
// grid points x_k = u* (1 - alpha^k) (where the argmax moves to a neighbour), just below, at and
// above u*, infinite and NaN, with mu T from 1e-9 (k in the billions) to 800 (alpha underflows to
// 0) and unit and other costs. Blocks of 256 (the engines' block) and a tail of 13.
TEST(CpuBackend, WhittleIndexEightWideEqualsScalar) {
  if (!crawleval::detail::avx512_pass_available())
    GTEST_SKIP() << "this CPU has no AVX-512 (or CRAWLEVAL_SCALAR is set)";
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const std::size_t n = 256 * 40 + 13;
  ce::ParamColumns c;
  c.resize(n);
  std::vector<double> x(n);
  const double mu_ts[] = {1e-9, 1e-5, 3e-3, 0.05, 0.7, 4.0, 40.0, 800.0};
  for (std::size_t i = 0; i < n; ++i) {
    const double mu_t = mu_ts[i % 8] * (0.5 + unit(rng));
    // Every 41st source tiny (u* from 1e-300 to 1e-130) and cheap (C from 1e-300 to 1e-120):
    // indices from normal down to where the bound's products underflow.
    const bool tiny = i % 41 == 5;
    const double cost = tiny          ? std::pow(10.0, -300.0 + 180.0 * unit(rng))
                        : i % 3 == 0  ? 1.0
                        : i % 37 == 1 ? 1e-300
                        : i % 37 == 2 ? 1e300
                                      : 0.1 + 10.0 * unit(rng);
    const double lambda =
        tiny ? std::pow(10.0, -300.0 + 170.0 * unit(rng)) : 0.1 + 50.0 * unit(rng);
    const ce::SourceParams p = ce::derive_params(lambda, 0.01 + unit(rng), mu_t, cost, 1.0);
    c.set(i, p);
    const double k = std::floor(1.0 + 30.0 * unit(rng) / std::min(1.0, std::sqrt(mu_t)));
    const double grid = p.u_star * -std::expm1(-mu_t * k);
    switch ((i / 8) % 12) {
      case 0:
        x[i] = unit(rng) * p.u_star;
        break;
      case 1:
        x[i] = grid;
        break;
      case 2:
        x[i] = std::nextafter(grid, 0.0);
        break;
      case 3:
        x[i] = std::nextafter(grid, 1e300);
        break;
      case 4:
        x[i] = std::nextafter(p.u_star, 0.0);
        break;
      case 5:
        x[i] = i % 2 ? p.u_star : p.u_star * (1.0 + unit(rng));
        break;
      case 6:
        x[i] = i % 2 ? 0.0 : -unit(rng);
        break;
      case 7:
        x[i] = p.u_star * 1e-300 * unit(rng);
        break;
      case 8:
        x[i] = i % 2 ? std::numeric_limits<double>::infinity()
                     : std::numeric_limits<double>::quiet_NaN();
        break;
      case 9:
        x[i] = p.u_star * (1.0 - 1e-12 * unit(rng));
        break;
      default:
        x[i] = p.u_star * unit(rng) * unit(rng);
        break;
    }
  }
  std::vector<double> vec(n), scalar(n);
  std::vector<uint8_t> sure_vec((n + 7) / 8), sure_scalar((n + 7) / 8);
  crawleval::detail::whittle_index_run(x.data(), c, 0, n, true, 0, vec.data(), sure_vec.data());
  crawleval::detail::whittle_index_run(x.data(), c, 0, n, false, 0, scalar.data(),
                                       sure_scalar.data());
  std::vector<double> direct(n);
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_EQ(std::memcmp(&vec[i], &scalar[i], sizeof(double)), 0)
        << "source " << i << ": x " << x[i] << " mu T " << c.mu_t[i] << ": " << vec[i]
        << " (eight wide) against " << scalar[i];
    direct[i] = ce::whittle_index(x[i], c.at_base(i));
    EXPECT_EQ(std::memcmp(&scalar[i], &direct[i], sizeof(double)), 0);
  }
  EXPECT_EQ(sure_vec, std::vector<uint8_t>((n + 7) / 8, 0));
  // With a lump floor: the same sources shown below it eight wide and one at a time, each of
  // them truly below it (the bound x / C), every other one's index computed, bit for bit.
  for (uint32_t floor : {1u, 600u, 1024u, 1025u, 1400u, 1500u, 1536u, 1600u, 1700u, 2047u}) {
    SCOPED_TRACE("floor " + std::to_string(floor));
    std::fill(vec.begin(), vec.end(), -1.0);
    std::fill(scalar.begin(), scalar.end(), -1.0);
    crawleval::detail::whittle_index_run(x.data(), c, 0, n, true, floor, vec.data(),
                                         sure_vec.data());
    crawleval::detail::whittle_index_run(x.data(), c, 0, n, false, floor, scalar.data(),
                                         sure_scalar.data());
    ASSERT_EQ(sure_vec, sure_scalar);
    std::size_t shown = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if ((sure_vec[i / 8] >> (i % 8)) & 1) {
        ++shown;
        EXPECT_LT(ce::coarse_bin_of_score(direct[i]), floor)
            << "source " << i << ": x " << x[i] << " u* " << c.u_star[i] << " mu T " << c.mu_t[i]
            << " 1/C " << c.inv_cost[i] << ": index " << direct[i];
        continue;
      }
      EXPECT_EQ(std::memcmp(&vec[i], &direct[i], sizeof(double)), 0) << "source " << i;
      EXPECT_EQ(std::memcmp(&scalar[i], &direct[i], sizeof(double)), 0) << "source " << i;
    }
    if (floor >= 1600) EXPECT_GT(shown, n / 10);  // scores up to about 2^17: most below
  }
  // At each source's own bin as the floor the bound must never claim it below (the tightest
  // floor: a claim there is wrong whatever the slack).
  std::size_t own = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const uint32_t bin = ce::coarse_bin_of_score(direct[i]);
    if (bin <= 1024) continue;
    ++own;
    EXPECT_FALSE(crawleval::detail::whittle_below_floor(
        x[i], c.u_star[i], c.mu_t[i], c.om_alpha[i], c.inv_cost[i],
        crawleval::detail::lump_threshold(std::min(bin, 2044u))))
        << "source " << i << ": x " << x[i] << " u* " << c.u_star[i] << " mu T " << c.mu_t[i]
        << " 1/C " << c.inv_cost[i] << ": index " << direct[i] << " in bin " << bin;
  }
  EXPECT_GT(own, n / 2);
  // The library's log1p and expm1 are libm's to an ulp (they are SLEEF's, model.hpp).
  for (int j = 0; j < 10000; ++j) {
    const double v = -unit(rng) * std::ldexp(1.0, -int(rng() % 60));
    EXPECT_LE(std::fabs(ce::index_log1p(v) - std::log1p(v)), 2.3e-16 * std::fabs(std::log1p(v)));
    const double e = -800.0 * unit(rng) * std::ldexp(1.0, -int(rng() % 50));
    EXPECT_LE(std::fabs(ce::index_expm1(e) - std::expm1(e)), 2.3e-16 * std::fabs(std::expm1(e)));
  }
}

// Sources with tiny states and costs (u* about 1e-170, C 1e-140: indices near 1e-30 and 1e-21)
// where the bound's products underflow: the engine crawls the reference's sets (a review's fuzzer
// found the index bound "showing" the top source below the window when e^2 underflowed to 0).
TEST(CpuBackend, TinyStatesAndCostsEqualReference) {
  ce::Population pop;
  const std::size_t n = 5000;
  for (std::size_t i = 0; i < n; ++i) {
    const bool top = i == n - 1;
    pop.lambda.push_back(top ? 1e-170 : 1e-140);
    pop.xi.push_back(1.0);
    pop.mu.push_back(top ? 1.0 : 1e30);
    pop.cost.push_back(top ? 1e-150 : 1e-140);
    pop.x0.push_back(0.5e-170 * (1.0 + double(top ? 0 : i) / double(n)));
  }
  for (bool scalar : {false, true}) {
    ce::RunConfig cfg;
    cfg.model = ce::Model::stochastic;
    cfg.budget = 10e-140;
    cfg.epochs = 3;
    cfg.burn_in = 0;
    cfg.start = ce::Start::given;
    cfg.threads = 2;
    const ce::Problem pr = ce::make_problem(pop, cfg);
    if (scalar) setenv("CRAWLEVAL_SCALAR", "1", 1);
    const Trace got = traced(pr, ce::Policy::whittle, ce::Backend::cpu);
    unsetenv("CRAWLEVAL_SCALAR");
    const Trace want = traced(pr, ce::Policy::whittle, ce::Backend::reference);
    ASSERT_EQ(got.sets.size(), want.sets.size());
    ASSERT_FALSE(want.sets.empty());
    EXPECT_NE(std::find(want.sets[0].begin(), want.sets[0].end(), uint32_t(n - 1)),
              want.sets[0].end());  // the top source is crawled first
    for (std::size_t t = 0; t < want.sets.size(); ++t)
      EXPECT_EQ(got.sets[t], want.sets[t]) << (scalar ? "scalar" : "vector") << " epoch " << t;
  }
}

// The lump floor's threshold: every double below it has its coarse bin below the floor, and it
// sits at the top of the bin under the floor (or of the last finite one).
TEST(CpuBackend, LumpThresholdIsTheTopOfTheBinUnderTheFloor) {
  for (uint32_t floor = 1; floor < uint32_t(ce::kBins); ++floor) {
    const double t = crawleval::detail::lump_threshold(floor);
    if (floor <= 1024) {
      EXPECT_EQ(t, 0.0) << floor;
      continue;
    }
    ASSERT_GT(t, 0.0) << floor;
    EXPECT_EQ(ce::coarse_bin_of_score(t), std::min(floor - 1, 2043u)) << floor;
    EXPECT_LT(ce::coarse_bin_of_score(std::nextafter(t, 0.0)), floor) << floor;
    if (floor <= 2044)  // the next float up is the floor's first
      EXPECT_EQ(ce::coarse_bin_of_score(
                    double(std::nextafter(float(t), std::numeric_limits<float>::infinity()))),
                floor)
          << floor;
  }
}

// The stochastic model's wide pass eight wide (the Whittle index and greedy; Philox words,
// transitions, classes) against the scalar pass: the same crawled sets and rewards bit for bit,
// epoch by epoch.
TEST(CpuBackend, StochasticVectorPassEqualsScalarPass) {
  if (!crawleval::detail::avx512_pass_available())
    GTEST_SKIP() << "this CPU has no AVX-512 (or CRAWLEVAL_SCALAR is set): the scalar pass runs";
  const ce::Population pop = random_population(20011, 23, true, true);
  for (ce::Policy policy : {ce::Policy::whittle, ce::Policy::greedy})
    for (ce::Start start : {ce::Start::empty, ce::Start::given})
      for (double frac : {0.01, 0.4}) {
        ce::RunConfig cfg;
        cfg.model = ce::Model::stochastic;
        cfg.budget = std::max(1.0, std::floor(frac * pop.total_cost()));
        cfg.epochs = 10;
        cfg.start = start;
        cfg.threads = 2;
        const ce::Problem pr = ce::make_problem(pop, cfg);
        SCOPED_TRACE(std::string(ce::to_string(policy)) + " start " + ce::to_string(start) +
                     " budget " + std::to_string(cfg.budget));
        const Trace vec = traced(pr, policy, ce::Backend::cpu);
        setenv("CRAWLEVAL_SCALAR", "1", 1);
        const Trace scalar = traced(pr, policy, ce::Backend::cpu);
        unsetenv("CRAWLEVAL_SCALAR");
        ASSERT_EQ(vec.sets.size(), scalar.sets.size());
        for (std::size_t t = 0; t < vec.sets.size(); ++t) {
          ASSERT_EQ(vec.sets[t], scalar.sets[t]) << "epoch " << t;
          ASSERT_EQ(vec.rewards[t], scalar.rewards[t]) << "epoch " << t;
        }
      }
}

// The thread count the wide engine picks epoch by epoch when the user leaves it to the engine:
// down to one thread after two passes running took longer than their threads' CPU time (one
// thread would have done the work sooner), back to all of them after kRetry epochs; a single
// slow pass (a page fault, a fallback) changes nothing; an explicit count is never changed.
TEST(CpuBackend, ThreadGovernorDropsToOneThreadOnlyWhenPassesWaitOnTheirPeers) {
  using crawleval::detail::ThreadGovernor;
  ThreadGovernor g(2, true);
  EXPECT_EQ(g.threads(), 2);
  g.record(1.0, 1.9);  // unloaded: wall about CPU / 2
  g.record(1.0, 0.8);  // one slow pass
  g.record(1.0, 1.9);
  g.record(1.0, 0.8);
  EXPECT_EQ(g.threads(), 2);
  g.record(1.0, 0.8);  // the second slow pass running
  ASSERT_EQ(g.threads(), 1);
  for (int e = 1; e < ThreadGovernor::kRetry; ++e) {
    g.record(1.0, 1.0);
    ASSERT_EQ(g.threads(), 1) << e;
  }
  g.record(1.0, 1.0);
  EXPECT_EQ(g.threads(), 2);  // tries every thread again
  EXPECT_EQ(g.single_epochs(), ThreadGovernor::kRetry);
  g.record(1.0, 0.8);  // still loaded: one slow pass ends the retry
  EXPECT_EQ(g.threads(), 1);
  ThreadGovernor fixed(2, false);  // --threads 2
  for (int e = 0; e < 5; ++e) fixed.record(1.0, 0.5);
  EXPECT_EQ(fixed.threads(), 2);
  EXPECT_FALSE(ThreadGovernor(1, true).adapting());
}

// The stochastic model's shortcuts: the first arrival words eight at a time (AVX-512 where the
// CPU has it) are Random123's Philox words, and sample_arrivals_fast, which decides from the
// first word alone that an epoch has no arrival, returns sample_arrivals' value bit for bit: for
// rates from 1e-12 to 300 arrivals per epoch, on draws chosen next to the threshold too. The ids
// are 64-bit: below 2^32, anywhere below 2^63, and eight that straddle a multiple of 2^32 (two
// keys: draw contract 2).
TEST(CpuBackend, StochasticShortcutsEqualTheDraws) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 3000; ++trial) {
    const uint64_t seed = rng();
    const uint64_t first = trial % 3 == 0   ? uint64_t(uint32_t(rng()))
                           : trial % 3 == 1 ? rng() >> 1
                                            : ((uint64_t(1) + rng() % 5) << 32) - 1 - rng() % 7;
    const uint32_t epoch = uint32_t(rng()), rep = uint32_t(rng() % 64);
    for (bool vector : {false, crawleval::detail::avx512_pass_available()}) {
      uint32_t got[8];
      crawleval::detail::first_arrival_words(seed, first, 8, epoch, rep, vector, got);
      for (uint64_t k = 0; k < 8; ++k)
        ASSERT_EQ(got[k],
                  ce::philox_words(seed, first + k, epoch, rep, ce::Stream::arrivals, 0).w[0])
            << "trial " << trial << " lane " << k << (vector ? " vector" : " scalar");
    }
    // The whole block 0 of a block of sources (four groups in flight, then single groups).
    if (trial % 10 == 0) {
      static uint32_t w[4][crawleval::detail::kArrivalBlock];
      const std::size_t count = 1 + std::size_t(rng() % 256);  // tails of fewer than eight too
      crawleval::detail::first_arrival_blocks(seed, first, count, epoch, rep,
                                              crawleval::detail::avx512_pass_available(), w);
      for (uint64_t k = 0; k < count; ++k) {
        const ce::Words4 want =
            ce::philox_words(seed, first + k, epoch, rep, ce::Stream::arrivals, 0);
        for (int m = 0; m < 4; ++m)
          ASSERT_EQ(w[m][k], want.w[m]) << "trial " << trial << " source " << k << " word " << m;
      }
    }
  }
  std::uniform_real_distribution<double> U(0.0, 1.0);
  uint64_t empty = 0, checked = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    ce::SourceParams p{};
    p.lambda_t = std::pow(10.0, -12.0 + 14.5 * U(rng));
    p.xi = 0.1 + U(rng);
    p.mu_t = 0.01 + 2 * U(rng);
    const double thr = ce::no_arrival_threshold(p.lambda_t);
    for (uint32_t epoch = 0; epoch < 4; ++epoch) {
      const uint32_t src = uint32_t(trial);
      const uint32_t w0 = ce::first_arrival_word(1, 0, src, epoch);
      const double want = ce::sample_arrivals(p, ce::UtilityDist::exponential, 1, 0, src, epoch);
      const double got =
          ce::sample_arrivals_fast(p, thr, w0, ce::UtilityDist::exponential, 1, 0, src, epoch);
      ASSERT_EQ(std::memcmp(&got, &want, sizeof got), 0) << "lambda T " << p.lambda_t;
      const double below = ce::sample_arrivals_below(
          p, ce::no_arrival_words(p.lambda_t), w0, ce::UtilityDist::exponential, 1, 0, src, epoch);
      ASSERT_EQ(std::memcmp(&below, &want, sizeof below), 0) << "lambda T " << p.lambda_t;
      // The stream started from its block 0 drawn beforehand reads the same words.
      ce::DrawStream primed(1, src, epoch, 0, ce::Stream::arrivals,
                            ce::philox_words(1, src, epoch, 0, ce::Stream::arrivals, 0));
      const double from = ce::sample_arrivals_from(p, ce::UtilityDist::exponential, primed);
      ASSERT_EQ(std::memcmp(&from, &want, sizeof from), 0) << "lambda T " << p.lambda_t;
      empty += got == 0.0;
      ++checked;
    }
    // A first gap just above 1 on either side of the threshold: the word nearest exp(-lambda T).
    const double w_at = std::exp(-p.lambda_t) * 4294967296.0 - 0.5;
    for (double dw : {-2.0, -1.0, 0.0, 1.0, 2.0}) {
      const double w = std::floor(w_at) + dw;
      if (w < 0.0 || w > 4294967295.0) continue;
      const double v = ce::uniform(uint32_t(w));
      const bool fast_empty = v <= thr;
      const bool exact_empty = -std::log(v) * (1.0 / p.lambda_t) >= 1.0;
      if (fast_empty) EXPECT_TRUE(exact_empty) << "lambda T " << p.lambda_t << " word " << w;
    }
  }
  EXPECT_GT(empty, checked / 4);  // the shortcut is taken, not only the full draw
}

// no_arrival_words counts exactly the words whose uniform lies at or below the threshold (the
// words on both sides of it, for rates from 0 to the largest accepted and beyond): the engines'
// integer comparison decides as the threshold does. NaN: every epoch drawn.
TEST(CpuBackend, NoArrivalWordsCountTheWordsBelowTheThreshold) {
  std::mt19937_64 rng(8);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  std::vector<double> rates = {0.0,     5e-324, 1e-300, 1e-17,
                               1e-12,   1e-10,  1e-9,   1.16e-10,
                               2.3e-10, 1e-6,   0.5,    1.0,
                               22.0,    23.0,   30.0,   700.0,
                               745.2,   1e6,    1e300,  std::numeric_limits<double>::infinity()};
  for (int trial = 0; trial < 20000; ++trial)
    rates.push_back(std::pow(10.0, -14.0 + 17.0 * U(rng)));
  for (double lt : rates) {
    const double t = ce::no_arrival_threshold(lt);
    const uint32_t k = ce::no_arrival_words(lt);
    if (k > 0) EXPECT_LE(ce::uniform(k - 1), t) << "lambda T " << lt;
    if (k < 0xFFFFFFFFu) EXPECT_GT(ce::uniform(k), t) << "lambda T " << lt;
    for (uint32_t d = 1; d < 4; ++d) {
      if (k >= d) EXPECT_LE(ce::uniform(k - d), t) << "lambda T " << lt;
      if (k <= 0xFFFFFFFFu - d) EXPECT_GT(ce::uniform(k + d), t) << "lambda T " << lt;
    }
  }
  EXPECT_EQ(ce::no_arrival_words(std::nan("")), 0u);
  EXPECT_EQ(ce::no_arrival_words(1e300), 0u);
  EXPECT_GT(ce::no_arrival_words(0.0), 0xFFFFF000u);  // exp(0) (1 - 1e-9): all but about 4 words
}

TEST(CpuBackend, MeasuredEpochsLeaveOutTheBurnInAndTheSetUp) {
  // rollout.hpp: the measured window starts at the first measured epoch, or at the second
  // without a burn-in (the first carries the set-up); the driver's rate divides those epochs
  // by their time. The wide engine (N > kCpuSmallN), the small one and the reference.
  for (std::size_t n : {std::size_t(200), std::size_t(5000)}) {
    const ce::Population pop = ce::synthetic_population(n, 3);
    ce::RunConfig cfg;
    cfg.budget = double(n / 20);
    cfg.epochs = 6;
    cfg.replications = 2;
    cfg.threads = 2;
    for (uint64_t burn_in : {uint64_t(0), uint64_t(4)}) {
      cfg.burn_in = burn_in;
      const ce::Problem pr = ce::make_problem(pop, cfg);
      const uint64_t per_replication = burn_in > 0 ? 6 : 5;
      for (ce::Backend b : {ce::Backend::cpu, ce::Backend::reference}) {
        const ce::RolloutOutput out = ce::rollout(pr, ce::Policy::whittle, b);
        EXPECT_EQ(out.measured_epochs, 2 * per_replication) << n << " " << burn_in;
        EXPECT_GT(out.measured_seconds, 0.0);
        EXPECT_LE(out.measured_seconds, out.loop_seconds * (1 + 1e-9) + 1e-9);
        const ce::PolicyResult r = ce::evaluate(pr, ce::Policy::whittle, b);
        EXPECT_TRUE(r.rate_of_measured_epochs);
        EXPECT_GT(r.source_epochs_per_second, 0.0);
      }
    }
  }
}

// The compact columns (ColumnSet::engine: alpha and drift held, everything else derived when read;
// the population's unit costs, consecutive ids and line numbers dropped, as `crawleval run` does)
// give every column's crawled sets and rewards bit for bit, on the reference and both engines of
// the CPU backend, and the same bound, at the extremes the parser accepts: parameters from 1e-300
// to 1e300, sources with no content (lambda or xi 0: off the index grid from the empty start),
// mu T at its 1e-9 floor, ties (copies of one source), costs from 1e-300 to 1e300, one source,
// a fresh start, an epoch length other than 1, ids starting above 2^32.
TEST(CpuBackend, CompactColumnsEqualEveryColumnAtTheExtremes) {
  const double lambdas[] = {0.0, 1e-300, 1e-3, 1.0, 7.5, 1e150, 1e300};
  const double xis[] = {0.0, 1e-300, 0.25, 1.0, 1e100, 1e300};
  const double mus[] = {1e-9, 1e-4, 0.3, 1.0, 50.0, 1e200};
  const double costs[] = {1e-300, 1e-6, 0.5, 1.0, 3.0, 1e300};
  for (std::size_t n : {std::size_t(1), std::size_t(700), std::size_t(5000)}) {
    for (bool unit : {true, false}) {
      std::mt19937_64 rng(n * 31 + unit);
      ce::Population pop;
      pop.origin = "extremes";
      pop.first_id = n == 5000 ? (uint64_t(1) << 32) + 17 : 0;
      ce::RunConfig check;
      check.epoch_length = n == 700 ? 0.37 : 1.0;
      while (pop.size() < n) {
        ce::Population one;
        if (pop.size() > 0 && rng() % 5 == 0) {  // a tie with an earlier source
          const std::size_t j = rng() % pop.size();
          one.lambda = {pop.lambda[j]}, one.xi = {pop.xi[j]}, one.mu = {pop.mu[j]};
          one.cost = {pop.cost[j]};
        } else {
          one.lambda = {lambdas[rng() % 7]}, one.xi = {xis[rng() % 6]}, one.mu = {mus[rng() % 6]};
          one.cost = {unit ? 1.0 : costs[rng() % 6]};
        }
        one.id = {pop.first_id + pop.size()};
        try {
          ce::validate_sources(one, check);
        } catch (const ce::InputError&) {
          continue;  // refused by the parser: not a population any engine sees
        }
        pop.lambda.push_back(one.lambda[0]), pop.xi.push_back(one.xi[0]);
        pop.mu.push_back(one.mu[0]), pop.cost.push_back(one.cost[0]), pop.id.push_back(one.id[0]);
      }
      for (ce::Start start : {ce::Start::empty, ce::Start::fresh}) {
        ce::RunConfig cfg;
        cfg.epoch_length = check.epoch_length;
        cfg.budget = unit ? std::max(1.0, std::floor(0.2 * double(n))) : 0.2 * pop.total_cost();
        cfg.epochs = 12;
        cfg.burn_in = 2;
        cfg.start = start;
        cfg.threads = 2;
        ASSERT_TRUE(ce::compact_columns_apply(pop, cfg, {ce::Policy::whittle}, false));
        const ce::Problem full = ce::make_problem(pop, cfg);
        ce::Population lean = pop;
        const ce::Problem pr = ce::make_problem(lean, cfg, ce::ColumnSet::engine);
        lean.drop_implied_columns(pr.unit_costs);
        EXPECT_EQ(lean.cost.empty(), unit);
        EXPECT_TRUE(lean.id.empty());
        EXPECT_EQ(lean.id_of(n - 1), pop.id[n - 1]);
        for (std::size_t i = 0; i < n; ++i) {
          const ce::InitialState a = full.initial_at(i), b = pr.initial_at(i);
          ASSERT_EQ(a.x, b.x);
          ASSERT_EQ(a.eta, b.eta);
          ASSERT_EQ(a.om_eta, b.om_eta);
          ASSERT_EQ(a.age, b.age);
          const ce::SourceParams p = full.params().at(i), q = pr.params().at(i);
          const double fp[] = {p.alpha,    p.om_alpha, p.u_star, p.mu_t,   p.inv_cost,
                               p.lambda_t, p.xi,       p.x_cap,  p.alpha_e};
          const double fq[] = {q.alpha,    q.om_alpha, q.u_star, q.mu_t,   q.inv_cost,
                               q.lambda_t, q.xi,       q.x_cap,  q.alpha_e};
          ASSERT_EQ(std::memcmp(fp, fq, sizeof fp), 0) << "source " << i;  // bits, NaN too
          ASSERT_EQ(p.expiry, q.expiry);
        }
        for (ce::Policy p : {ce::Policy::whittle, ce::Policy::greedy, ce::Policy::round_robin,
                             ce::Policy::random}) {
          for (ce::Backend b : {ce::Backend::reference, ce::Backend::cpu}) {
            SCOPED_TRACE("n " + std::to_string(n) + (unit ? " unit" : " costs") + " start " +
                         ce::to_string(start) + " " + ce::to_string(p) + " " + ce::to_string(b));
            const Trace want = traced(full, p, b), got = traced(pr, p, b);
            ASSERT_EQ(got.sets, want.sets);
            ASSERT_EQ(got.rewards, want.rewards);
          }
        }
        const ce::BoundResult b = ce::lagrangian_bound(pr), b_full = ce::lagrangian_bound(full);
        EXPECT_EQ(b.bound, b_full.bound);
        EXPECT_EQ(b.crawl_rate, b_full.crawl_rate);
      }
    }
  }
}
