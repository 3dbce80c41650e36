// The windowed radix select (include/crawleval/select/window_select.hpp), the GPU wide regime's
// selection algorithm, run by its serial host twin (host/select/window_selector.cpp) against the
// sort-based rule: hand-checked cases, then thousands of adversarial ones (±0, ±inf, NaN, one-ulp
// ties, all equal, M = 0 and M = N, N = 1, unit and random costs, windows that hit and windows that
// miss, tie keys right and wrong, epochs that follow each other).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>

#include "crawleval/base/error.hpp"
#include "crawleval/model/selection.hpp"
#include "crawleval/select/window_select.hpp"
#include "select/window_selector.hpp"

namespace ce = crawleval;
namespace cw = crawleval::window;
namespace cd = crawleval::detail;

namespace {

/// The rule of selection.hpp on fixed-point weights: walk (key desc, id asc), stop at the first
/// source that overflows.
ce::Selection expected(const std::vector<uint64_t>& keys, const std::vector<uint64_t>& w,
                       uint64_t limit) {
  std::vector<uint32_t> order(keys.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return keys[a] != keys[b] ? keys[a] > keys[b] : a < b; });
  uint64_t used = 0;
  for (uint32_t i : order) {
    const uint64_t c = w.empty() ? 1 : w[i];
    if (used <= limit && c > limit - used) return ce::Selection{keys[i], i, false};
    used += c;
  }
  return ce::Selection{};
}

/// Runs one epoch and checks the selection and every source's class against the rule.
void check_epoch(cd::WindowSelector& sel, const std::vector<uint64_t>& keys,
                 const std::vector<uint64_t>& w, uint64_t limit, const std::string& what) {
  SCOPED_TRACE(what);
  const ce::Selection want = expected(keys, w, limit);
  ce::Selection got;
  ASSERT_NO_THROW(got =
                      sel.select(keys.data(), w.empty() ? nullptr : w.data(), keys.size(), limit));
  ASSERT_EQ(got.all, want.all);
  if (!want.all) {
    ASSERT_EQ(got.stop_key, want.stop_key);
    ASSERT_EQ(got.stop_id, want.stop_id);
  }
  // What the next epoch's apply concludes from the classes alone.
  const cw::Applied& a = sel.state().applied;
  for (std::size_t i = 0; i < keys.size(); ++i)
    ASSERT_EQ(cw::crawled_by_class(sel.classes()[i], i, keys[i], a),
              ce::is_selected(keys[i], i, want))
        << "source " << i << " class " << sel.classes()[i];
  ASSERT_LE(sel.steps(), cw::kMaxSteps);
}

std::vector<uint64_t> keys_of(const std::vector<double>& s) {
  std::vector<uint64_t> k(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) k[i] = ce::score_key(s[i]);
  return k;
}

double next_up(double x) { return std::nextafter(x, std::numeric_limits<double>::infinity()); }

enum class Kind {
  random,
  all_equal,
  infinities,
  nan_and_zeros,
  ulp_ties,
  few_values,
  big_tie_group,
  wide_range,
  count
};

std::vector<double> make_scores(std::size_t n, Kind kind, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> U(0.0, 1.0);
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> s(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (kind) {
      case Kind::random:
        s[i] = std::exp(8 * U(rng)) * (rng() % 8 == 0 ? -1 : 1);
        break;
      case Kind::all_equal:
        s[i] = 7.5;
        break;
      case Kind::infinities:
        s[i] = rng() % 5 == 0 ? inf : rng() % 4 == 0 ? -inf : U(rng);
        break;
      case Kind::nan_and_zeros:
        s[i] = rng() % 6 == 0 ? nan : rng() % 2 ? 0.0 : -0.0;
        if (rng() % 5 == 0) s[i] = U(rng) - 0.5;
        break;
      case Kind::ulp_ties: {
        double v = 1.0;
        for (int k = int(rng() % 4); k > 0; --k) v = next_up(v);
        s[i] = v;
        break;
      }
      case Kind::few_values:
        s[i] = double(rng() % 5) + (rng() % 3 == 0 ? 1e-9 : 0.0);
        break;
      case Kind::big_tie_group:
        s[i] = rng() % 10 == 0 ? U(rng) : 0.0;
        break;
      case Kind::wide_range:
        s[i] = std::ldexp(U(rng), int(rng() % 2000) - 1000);
        break;
      case Kind::count:
        break;
    }
  }
  return s;
}

std::vector<uint64_t> make_weights(std::size_t n, int mode, std::mt19937_64& rng) {
  if (mode == 0) return {};  // unit costs
  std::vector<uint64_t> w(n);
  for (auto& x : w) x = mode == 1 ? 1 + rng() % 128 : (uint64_t(1) << (rng() % 40)) + rng() % 7;
  return w;
}

uint64_t total_of(const std::vector<uint64_t>& w, std::size_t n) {
  return w.empty() ? n : std::accumulate(w.begin(), w.end(), uint64_t(0));
}

}  // namespace

TEST(WindowSelect, HandCheckedCases) {
  // The contract's example: scores {2, 5, 5, NaN, 1}, unit costs, M = 2 -> crawl {1, 2}: the stop
  // is source 0 (score 2).
  cd::WindowSelector sel;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<uint64_t> k = keys_of({2, 5, 5, nan, 1});
  check_epoch(sel, k, {}, 2, "example");
  EXPECT_EQ(sel.state().applied.sel.stop_id, 0u);
  // Everything fits.
  check_epoch(sel, k, {}, 5, "all fit");
  EXPECT_TRUE(sel.state().applied.sel.all);
  // M = 0: the top source stops the prefix.
  check_epoch(sel, k, {}, 0, "M = 0");
  EXPECT_EQ(sel.state().applied.sel.stop_id, 1u);
  // One source.
  cd::WindowSelector one;
  check_epoch(one, keys_of({3.0}), {}, 0, "N = 1, M = 0");
  check_epoch(one, keys_of({3.0}), {}, 1, "N = 1, M = 1");
  // Costs: weights {3, 1, 1} for scores {9, 8, 7}, limit 4: 3 fits, 1 fits, 1 does not.
  cd::WindowSelector c;
  check_epoch(c, keys_of({9, 8, 7}), {3, 1, 1}, 4, "costs");
  EXPECT_EQ(c.state().applied.sel.stop_id, 2u);
}

TEST(WindowSelect, AdversarialCasesEqualTheSortRule) {
  std::mt19937_64 rng(2026);
  int cases = 0;
  for (std::size_t n : {std::size_t(1), std::size_t(2), std::size_t(3), std::size_t(131),
                        std::size_t(1000), std::size_t(5000), std::size_t(20000)}) {
    for (int kind = 0; kind < int(Kind::count); ++kind) {
      for (int wmode = 0; wmode < 3; ++wmode) {
        const std::vector<double> scores = make_scores(n, Kind(kind), rng);
        const std::vector<uint64_t> keys = keys_of(scores);
        const std::vector<uint64_t> w = make_weights(n, wmode, rng);
        const uint64_t total = total_of(w, n);
        std::vector<uint64_t> limits = {
            0, 1, total / 2, total > 0 ? total - 1 : 0, total, total + 5, rng() % (total + 1)};
        for (uint64_t limit : limits) {
          // Plans: none (every boundary misses), the previous epoch's (a hit on the same keys),
          // a random window, a window far away, and tie keys right and wrong.
          for (int plan = 0; plan < 6; ++plan) {
            cd::WindowSelector sel;
            sel.prepare(n);
            cw::Plan& p = sel.state().plan;
            switch (plan) {
              case 0:
                break;
              case 1: {  // the plan the same keys leave: the second epoch must hit
                check_epoch(sel, keys, w, limit, "warm-up");
                break;
              }
              case 2:
                p.lo = uint32_t(rng() % ce::kBins);
                p.hi = std::min<uint32_t>(p.lo + uint32_t(rng() % 5), ce::kBins - 1);
                break;
              case 3:
                p.lo = p.hi = 0;
                break;
              case 4:  // tie key = the true stop key (the large-tie fast path)
              {
                const ce::Selection want = expected(keys, w, limit);
                p.lo = p.hi = want.all ? 0 : ce::coarse_bin(want.stop_key);
                p.has_tie = 1;
                p.tie_key = want.all ? 0 : want.stop_key;
                break;
              }
              case 5:  // a tie key that is some source's key, not the stop's
                p.has_tie = 1;
                p.tie_key = keys[rng() % n];
                p.lo = ce::coarse_bin(p.tie_key);
                p.hi = std::min<uint32_t>(p.lo + 1, ce::kBins - 1);
                break;
            }
            const uint64_t misses_before = sel.state().diag.misses;
            check_epoch(sel, keys, w, limit,
                        "n " + std::to_string(n) + " kind " + std::to_string(kind) + " weights " +
                            std::to_string(wmode) + " limit " + std::to_string(limit) + " plan " +
                            std::to_string(plan));
            if (plan == 1) {
              // The same keys again: the window the first epoch left always holds the boundary.
              EXPECT_EQ(sel.state().diag.misses, misses_before);
            }
            ++cases;
          }
        }
      }
    }
  }
  EXPECT_GE(cases, 1000);
}

TEST(WindowSelect, EpochsThatFollowEachOther) {
  // A rollout-like sequence: scores drift, the plan of each epoch comes from the previous one.
  std::mt19937_64 rng(99);
  std::normal_distribution<double> Z(0.0, 1.0);
  for (std::size_t n : {std::size_t(500), std::size_t(30000)}) {
    for (int wmode = 0; wmode < 2; ++wmode) {
      cd::WindowSelector sel;
      std::vector<double> s(n);
      for (auto& x : s) x = std::exp(2 * Z(rng));
      const std::vector<uint64_t> w = make_weights(n, wmode, rng);
      const uint64_t limit = total_of(w, n) / 20;
      for (int t = 0; t < 40; ++t) {
        for (std::size_t i = 0; i < n; ++i)
          s[i] = t % 10 == 9 && i % 3 == 0 ? 0.0 : s[i] * std::exp(0.05 * Z(rng));
        check_epoch(sel, keys_of(s), w, limit, "epoch " + std::to_string(t));
      }
      // Slow drift: most epochs hit their window.
      EXPECT_LE(sel.state().diag.misses, 12u) << "n " << n;
    }
  }
}

TEST(WindowSelect, ABoundarySwingingBetweenCrowdedBinsIsCoveredAfterItsFirstSwing) {
  // Two groups of 10000 sources, each in one coarse bin (more than window_budget's 2048), and a
  // budget whose boundary falls in the upper group on even epochs and the lower on odd ones (as
  // the deterministic Whittle policy's boundary swings at M/N = 10%). A one-bin window would miss
  // on every swing; the window that covers the recent boundaries misses while it has seen one.
  const std::size_t n = 100000;
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<double> U(0.0, 0.01);
  cd::WindowSelector sel;
  std::vector<double> s(n);
  for (int t = 0; t < 40; ++t) {
    for (std::size_t i = 0; i < n; ++i)
      s[i] = i < 10000 ? 2.0 + U(rng) : i < 20000 ? 1.0 + U(rng) : 0.1 * U(rng);
    check_epoch(sel, keys_of(s), {}, t % 2 == 0 ? 5000 : 15000, "epoch " + std::to_string(t));
  }
  EXPECT_LE(sel.state().diag.misses, 2u);
  EXPECT_EQ(sel.state().diag.recounts, 0u);
  // Never more listed than the spread's budget (both groups: 20000 of n / 4).
  EXPECT_LE(sel.state().diag.listed, 40 * cw::spread_budget(n));
}

TEST(WindowSelect, BoundaryInsideAHugeTieCostsNoExtraPass) {
  // Every source at score 0 (the first epoch from empty sources): with the tie key in the plan
  // nothing is listed, no window misses, no level runs, and one tie scan finds the stop.
  const std::size_t n = 200000;
  const std::vector<uint64_t> keys(n, ce::score_key(0.0));
  for (bool unit : {true, false}) {
    std::mt19937_64 rng(5);
    const std::vector<uint64_t> w = make_weights(n, unit ? 0 : 1, rng);
    std::vector<std::pair<uint64_t, uint64_t>> sample;
    for (std::size_t i = 0; i < n; i += 97) sample.push_back({keys[i], w.empty() ? 1 : w[i]});
    const uint64_t limit = total_of(w, n) / 10;
    cd::WindowSelector sel;
    sel.prepare(n);
    sel.state().plan = cw::initial_plan(sample, n, limit);
    EXPECT_TRUE(sel.state().plan.has_tie);
    check_epoch(sel, keys, w, limit, unit ? "unit" : "costs");
    const cw::Diagnostics& d = sel.state().diag;
    EXPECT_EQ(d.misses, 0u);
    EXPECT_EQ(d.levels, 0u);
    EXPECT_EQ(d.tie_scans, 1u);
    EXPECT_EQ(d.listed, 0u);
  }
}

TEST(WindowSelect, TiesAmongListedSourcesSkipToTheIdBits) {
  // 50000 listed sources share one key (no tie key predicted): the first level finds every member
  // in one digit, and the next works on the members' exact span, which only their ids fill.
  const std::size_t n = 60000;
  std::vector<double> s(n, 3.0);
  for (std::size_t i = 0; i < n; i += 6) s[i] = 2.0 + double(i % 7);
  cd::WindowSelector sel;
  check_epoch(sel, keys_of(s), {}, 30000, "tied");
  EXPECT_LE(sel.state().diag.levels, 3u);
}

TEST(WindowSelect, InitialPlanFindsTheBoundaryBin) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  const std::size_t n = 100000;
  std::vector<double> s(n);
  for (auto& x : s) x = std::exp(6 * U(rng));
  const std::vector<uint64_t> keys = keys_of(s);
  std::vector<std::pair<uint64_t, uint64_t>> sample;
  for (std::size_t i = 0; i < n; i += 25) sample.push_back({keys[i], 1});
  const uint64_t limit = n / 100;
  cd::WindowSelector sel;
  sel.prepare(n);
  sel.state().plan = cw::initial_plan(sample, n, limit);
  check_epoch(sel, keys, {}, limit, "sampled plan");
  EXPECT_EQ(sel.state().diag.misses, 0u);
}

TEST(WindowSelect, AFailedSearchIsReportedAndTheNextEpochStartsClean) {
  // Every source ties at the plan's tie key and the engine then denies each tie member, so the
  // stop's tile holds no member: the search fails (an internal error, thrown), and the selector
  // is left as the GPU leaves its state (window::abandon): nothing listed, no window, phase done,
  // the failure counted. The next epoch then gives the sort rule's answer.
  const std::size_t n = 5000;
  const std::vector<uint64_t> tied(n, ce::score_key(1.5));
  cd::WindowSelector sel;
  sel.prepare(n, 1, true);
  cw::Plan& plan = sel.state().plan;
  plan.has_tie = 1;
  plan.tie_key = tied[0];
  plan.lo = plan.hi = ce::coarse_bin(tied[0]);
  sel.begin_pass();
  for (std::size_t i = 0; i < n; ++i)
    sel.record<true>(sel.pass(0), tied[i], ce::coarse_bin(tied[i]), uint32_t(i), 1);
  struct Deny final : cd::WindowSelector::Sources {
    void fallback() override {}
    void recount() override {}
    bool tie_member(std::size_t) override { return false; }
    uint64_t weight(std::size_t) override { return 1; }
  } deny;
  EXPECT_THROW(sel.select(n, n / 2, deny), ce::Error);
  const cw::SelectState& st = sel.state();
  EXPECT_EQ(st.diag.failures, 1u);
  EXPECT_EQ(st.phase, uint32_t(cw::kDone));
  EXPECT_EQ(st.buffer_count[cw::kList], 0u);
  EXPECT_EQ(st.tie_count, 0u);
  EXPECT_GT(st.plan.lo, st.plan.hi);
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  std::vector<double> s(n);
  for (auto& x : s) x = std::exp(4 * U(rng));
  check_epoch(sel, keys_of(s), {}, n / 10, "after a failure");
}

TEST(WindowSelect, ClassRuleIsCrawledByClass) {
  // The GPU engines decide a source's crawl from its class with the per-epoch comparisons done
  // once (window::ClassRule); it must be crawled_by_class with no own key read (a candidate's
  // taken as 0), for every class, around the stop id, for stops above, at and below the tie key.
  std::mt19937_64 rng(9);
  for (int trial = 0; trial < 2000; ++trial) {
    cw::Applied a;
    a.sel.all = trial % 7 == 0;
    a.sel.stop_key = trial % 5 == 0 ? 0 : rng() % 4;
    a.sel.stop_id = rng() % 50;
    a.tie_key = rng() % 4;
    a.has_tie = 1;
    const cw::ClassRule rule(a);
    for (uint32_t cls = 0; cls < 4; ++cls)
      for (uint64_t id = 0; id < 60; ++id)
        ASSERT_EQ(rule.crawled(cls, id), cw::crawled_by_class(cls, id, 0, a))
            << "class " << cls << " id " << id << " stop " << a.sel.stop_key << "/" << a.sel.stop_id
            << " tie " << a.tie_key;
  }
}
