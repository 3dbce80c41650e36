// Budgeted top-M selection: the contract on tiny hand-checked cases, then the CPU backend's
// windowed radix select (as its wide engine runs it, several threads) and the sort-based small
// selection against the reference on random and adversarial keys.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "crawleval/model/problem.hpp"
#include "crawleval/model/selection.hpp"
#include "select/cpu_select.hpp"
#include "select/window_selector.hpp"

namespace ce = crawleval;
namespace cd = crawleval::detail;

namespace {

std::vector<uint32_t> sorted(std::vector<uint32_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<uint64_t> keys_of(const std::vector<double>& scores) {
  std::vector<uint64_t> k(scores.size());
  for (std::size_t i = 0; i < scores.size(); ++i) k[i] = ce::score_key(scores[i]);
  return k;
}

std::vector<uint32_t> members(const std::vector<uint64_t>& keys, const ce::Selection& s) {
  std::vector<uint32_t> out;
  for (std::size_t i = 0; i < keys.size(); ++i)
    if (ce::is_selected(keys[i], i, s)) out.push_back(uint32_t(i));
  return out;
}

// Runs the windowed radix select the way the CPU backend's wide engine does: one scoring pass
// per thread over tile-aligned ranges, the fallback pass across the same ranges, costs as
// the budget's integer weights (selection.hpp: FixedBudget), one epoch per key set in `epochs`.
// The first epoch has no plan (its window misses); a second on the same keys scores them with the
// plan the first left (its window hits). lump: the scoring passes lump most sources whose bin lies
// below window::lump_floor of the plan, as the stochastic engine lumps those its bound places there
// (an epoch whose keys fell below the floor then counts its histogram again). Returns every
// epoch's selection and adds the recounts to *recounts.
std::vector<ce::Selection> radix_epochs(const std::vector<std::vector<uint64_t>>& epochs,
                                        const std::vector<double>& cost, double budget, int threads,
                                        bool lump = false, uint64_t* recounts = nullptr) {
  namespace cw = ce::window;
  const std::size_t n = epochs.front().size();
  const ce::FixedBudget fb = ce::cost_weights(cost.data(), cost.size(), budget, cost.empty());
  auto weight = [&](std::size_t i) -> uint64_t {
    return cost.empty() ? 1 : ce::fixed_weight(cost[i], fb);
  };
  const std::size_t tiles = (n + cw::kTile - 1) / cw::kTile;
  auto range = [&](int t) {
    return std::make_pair(std::min(n, tiles * t / threads * cw::kTile),
                          std::min(n, tiles * (t + 1) / threads * cw::kTile));
  };
  cd::WindowSelector sel;
  sel.prepare(n, threads, cost.empty());
  std::vector<uint32_t> cls(n);
  const std::vector<uint64_t>* keys = &epochs.front();
  struct Src final : cd::WindowSelector::Sources {
    std::function<void()> fb, rc;
    std::function<bool(std::size_t)> tie;
    std::function<uint64_t(std::size_t)> w;
    void fallback() override { fb(); }
    void recount() override { rc(); }
    bool tie_member(std::size_t i) override { return tie(i); }
    uint64_t weight(std::size_t i) override { return w(i); }
  } src;
  src.fb = [&] {
    for (int t = threads - 1; t >= 0; --t) {  // any order of the threads' ranges
      const auto [lo, hi] = range(t);
      for (std::size_t i = lo; i < hi; ++i)
        if (cls[i] != cw::kTie)
          cls[i] = sel.relist(sel.pass(t), (*keys)[i], uint32_t(i), weight(i));
    }
  };
  src.rc = [&] {
    for (int t = 0; t < threads; ++t) {
      const auto [lo, hi] = range(t);
      for (std::size_t i = lo; i < hi; ++i)
        cd::WindowSelector::count_bin<false>(sel.pass(t), ce::coarse_bin((*keys)[i]), weight(i));
    }
  };
  src.tie = [&](std::size_t i) { return cls[i] == cw::kTie; };
  src.w = weight;
  std::vector<ce::Selection> out;
  for (const std::vector<uint64_t>& k : epochs) {
    keys = &k;
    sel.begin_pass();
    const uint32_t floor = lump ? cw::lump_floor(sel.plan()) : 0;
    for (int t = 0; t < threads; ++t) {
      const auto [lo, hi] = range(t);
      for (std::size_t i = lo; i < hi; ++i) {
        // (Some of them, as a bound shows only some: the others are counted in their bins.)
        if (ce::coarse_bin(k[i]) < floor && (i * 2654435761u) % 7 < 5) {
          cls[i] = cw::kBelow;
          cd::WindowSelector::lump(sel.pass(t), 1, weight(i));
          continue;
        }
        cls[i] = cost.empty()
                     ? sel.record<true>(sel.pass(t), k[i], ce::coarse_bin(k[i]), uint32_t(i), 1)
                     : sel.record<false>(sel.pass(t), k[i], ce::coarse_bin(k[i]), uint32_t(i),
                                         weight(i));
      }
    }
    const ce::Selection s = sel.select(n, fb.limit, src);
    for (const auto& it : sel.listed())
      cls[it.id] = ce::is_selected(it.key, it.id, s) ? cw::kAbove : cw::kBelow;
    // Every source's class says whether it is crawled, as the next epoch's apply reads it.
    for (std::size_t i = 0; i < n; ++i)
      EXPECT_EQ(cw::crawled_by_class(cls[i], i, 0, sel.state().applied),
                ce::is_selected(k[i], i, s))
          << "source " << i;
    out.push_back(s);
  }
  if (recounts) *recounts += sel.state().diag.recounts;
  return out;
}

std::pair<ce::Selection, ce::Selection> radix_select(const std::vector<uint64_t>& keys,
                                                     const std::vector<double>& cost, double budget,
                                                     int threads) {
  const std::vector<ce::Selection> s = radix_epochs({keys, keys}, cost, budget, threads);
  return {s[0], s[1]};
}

}  // namespace

TEST(Selection, ScoreKeyPreservesOrder) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> v = {-inf,   -1e300, -2.5, -1e-300, -0.0,  0.0,
                                 1e-310, 1e-300, 1,    2.5,     1e300, inf};
  for (std::size_t a = 0; a + 1 < v.size(); ++a) {
    if (v[a] == v[a + 1]) {
      EXPECT_EQ(ce::score_key(v[a]), ce::score_key(v[a + 1]));  // -0 == +0
    } else {
      EXPECT_LT(ce::score_key(v[a]), ce::score_key(v[a + 1])) << v[a] << " " << v[a + 1];
    }
  }
  EXPECT_LT(ce::score_key(std::nan("")), ce::score_key(-inf));
}

TEST(Selection, ReferenceTinyCases) {
  const double nan = std::nan("");
  // The header's example: {2, 5, 5, NaN, 1}, unit costs, M = 2 -> {1, 2}.
  EXPECT_EQ(ce::reference_select({2, 5, 5, nan, 1}, {}, 2), (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(ce::reference_select({2, 5, 5, nan, 1}, {}, 4), (std::vector<uint32_t>{1, 2, 0, 4}));
  EXPECT_EQ(ce::reference_select({2, 5, 5, nan, 1}, {}, 5), (std::vector<uint32_t>{1, 2, 0, 4, 3}));
  // Ties by lower id.
  EXPECT_EQ(ce::reference_select({1, 1, 1}, {}, 2), (std::vector<uint32_t>{0, 1}));
  // The prefix stops at the first source that does not fit, even if a later one would.
  EXPECT_EQ(ce::reference_select({3, 2, 1}, {1, 5, 1}, 4), (std::vector<uint32_t>{0}));
  // Nothing fits.
  EXPECT_TRUE(ce::reference_select({3, 2}, {5, 1}, 4).empty());
  // Rounding slack: 0.1 + 0.1 + 0.1 fits 0.3.
  EXPECT_EQ(ce::reference_select({3, 2, 1}, {0.1, 0.1, 0.1}, 0.3).size(), 3u);
}

TEST(Selection, IsSelectedFollowsTheStopSource) {
  const std::vector<uint64_t> keys = keys_of({2, 5, 5, 7, 1});
  ce::Selection s{ce::score_key(5), 2, false};  // stop at source 2: {3, 1} crawled
  EXPECT_EQ(members(keys, s), (std::vector<uint32_t>{1, 3}));
  EXPECT_EQ(members(keys, ce::Selection{}).size(), 5u);  // all
}

namespace {

enum class KeyKind { random, all_equal, few_distinct, with_infinities, wide_range };

std::vector<double> make_scores(std::size_t n, KeyKind kind, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> U(0.0, 1.0);
  std::vector<double> s(n);
  const double inf = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < n; ++i) {
    switch (kind) {
      case KeyKind::random:
        s[i] = 100 * U(rng);
        break;
      case KeyKind::all_equal:
        s[i] = 3.25;
        break;
      case KeyKind::few_distinct:
        s[i] = double(rng() % 5);
        break;
      case KeyKind::with_infinities: {
        const auto r = rng() % 10;
        s[i] = r == 0 ? inf : r == 1 ? -inf : U(rng) - 0.5;
        break;
      }
      case KeyKind::wide_range:
        s[i] = std::pow(10.0, 600 * U(rng) - 300) * (rng() % 4 == 0 ? -1 : 1);
        break;
    }
  }
  return s;
}

}  // namespace

TEST(Selection, RadixEqualsReference) {
  std::mt19937_64 rng(2024);
  const double inf = std::numeric_limits<double>::infinity();
  uint64_t recounts = 0;  // epochs whose boundary fell below the lump floor
  for (std::size_t n :
       {std::size_t(1), std::size_t(2), std::size_t(131), std::size_t(5000), std::size_t(100000)}) {
    for (KeyKind kind : {KeyKind::random, KeyKind::all_equal, KeyKind::few_distinct,
                         KeyKind::with_infinities, KeyKind::wide_range}) {
      const std::vector<double> scores = make_scores(n, kind, rng);
      const std::vector<uint64_t> keys = keys_of(scores);
      for (bool unit : {true, false}) {
        std::vector<double> cost;
        if (!unit) {
          cost.resize(n);
          for (double& c : cost) c = 0.25 + double(rng() % 12) * 0.25;  // exact binary sums
        }
        const double total = unit ? double(n) : [&] {
          double t = 0;
          for (double c : cost) t += c;
          return t;
        }();
        for (double budget :
             {0.0, 1.0, double(n / 2), double(n > 1 ? n - 1 : 1), double(n), total / 3}) {
          if (budget > total) continue;
          for (int threads : {1, 2, 3}) {
            SCOPED_TRACE("n " + std::to_string(n) + " kind " + std::to_string(int(kind)) +
                         (unit ? " unit" : " costs") + " budget " + std::to_string(budget) +
                         " threads " + std::to_string(threads));
            const auto want = sorted(ce::reference_select(scores, cost, budget));
            const auto got = radix_select(keys, cost, budget, threads);
            ASSERT_EQ(members(keys, got.first), want);
            ASSERT_EQ(members(keys, got.second), want);
            // With lumping below the floor: the same keys twice, then every other source's score
            // gone to -inf (the boundary falls below the window and the floor: a recount) and
            // back (the boundary rises above the window).
            std::vector<double> fewer = scores;
            for (std::size_t i = 0; i < n; i += 2) fewer[i] = -inf;
            const std::vector<uint64_t> fewer_keys = keys_of(fewer);
            const auto lumped = radix_epochs({keys, keys, fewer_keys, keys}, cost, budget, threads,
                                             true, &recounts);
            ASSERT_EQ(members(keys, lumped[0]), want);
            ASSERT_EQ(members(keys, lumped[1]), want);
            ASSERT_EQ(members(fewer_keys, lumped[2]),
                      sorted(ce::reference_select(fewer, cost, budget)));
            ASSERT_EQ(members(keys, lumped[3]), want);
            std::vector<uint32_t> order(n);
            const ce::Selection small =
                cd::select_by_sort(keys.data(), unit ? nullptr : cost.data(), n,
                                   ce::cost_weights(cost.data(), n, budget, unit), order.data());
            ASSERT_EQ(members(keys, small), want);
          }
        }
      }
    }
  }
  EXPECT_GT(recounts, 0u);  // the recount path ran
}

TEST(Selection, RadixEqualsReferenceOnTenMillionKeys) {
  std::mt19937_64 rng(5);
  const std::size_t n = 10'000'000;
  std::vector<double> scores(n);
  std::lognormal_distribution<double> L(0.0, 2.0);
  for (double& s : scores) s = std::floor(L(rng) * 1000) / 1000;  // heavy ties
  const std::vector<uint64_t> keys = keys_of(scores);
  for (double budget : {1e5, double(n - 1)}) {
    SCOPED_TRACE(budget);
    const auto want = sorted(ce::reference_select(scores, {}, budget));
    const auto got = radix_select(keys, {}, budget, 2);
    ASSERT_EQ(members(keys, got.first), want);
    ASSERT_EQ(members(keys, got.second), want);
  }
}

TEST(Selection, SortSelectionWithUnitCostsEqualsTheWalk) {
  // select_by_sort finds the stop of unit costs by nth_element above 16 sources: the same stop as
  // the sorted walk, for budgets at, just above and just below whole numbers, and beyond n.
  std::mt19937_64 rng(77);
  for (std::size_t n : {1u, 16u, 17u, 100u, 2048u}) {
    std::vector<double> scores(n);
    for (double& s : scores) s = double(rng() % 7);  // many ties
    std::vector<uint64_t> keys(n);
    for (std::size_t i = 0; i < n; ++i) keys[i] = crawleval::score_key(scores[i]);
    std::vector<uint32_t> order(n);
    for (double budget : {0.0, 0.5, 1.0, 2.999999999, 3.0, 3.0 + 1e-13, 15.5, double(n) - 1.0,
                          double(n), double(n) + 5.0}) {
      const std::vector<uint32_t> crawled = crawleval::reference_select(scores, {}, budget);
      const crawleval::Selection sel = crawleval::detail::select_by_sort(
          keys.data(), nullptr, n, crawleval::cost_weights(nullptr, n, budget, true), order.data());
      std::vector<uint32_t> got;
      for (std::size_t i = 0; i < n; ++i)
        if (crawleval::is_selected(keys[i], i, sel)) got.push_back(uint32_t(i));
      std::vector<uint32_t> want = crawled;
      std::sort(want.begin(), want.end());
      EXPECT_EQ(got, want) << "n " << n << " budget " << budget;
    }
  }
}
