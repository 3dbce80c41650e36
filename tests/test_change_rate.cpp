// Change-rate estimators (change_rate.hpp): Cho & Garcia-Molina's closed form on regular intervals,
// the boundary cases, and bias and interval coverage on simulated histories with known rates.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "crawleval/model/change_rate.hpp"

using namespace crawleval;

namespace {

struct History {
  std::vector<double> t;
  std::vector<uint8_t> changed;
};

History simulate(double rate, std::size_t n, double t_lo, double t_hi, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> interval(t_lo, t_hi), u(0.0, 1.0);
  History h;
  for (std::size_t k = 0; k < n; ++k) {
    const double t = interval(rng);
    h.t.push_back(t);
    h.changed.push_back(u(rng) < -std::expm1(-rate * t) ? 1 : 0);
  }
  return h;
}

}  // namespace

TEST(ChangeRate, RegularIntervalsGiveChoGarciaMolina) {
  // n crawls every I days, X of them saw a change: D = -log((n - X + 0.5) / (n + 0.5)) / I.
  for (int n : {1, 5, 14, 98}) {
    for (int x = 0; x <= n; x += (n > 10 ? 7 : 1)) {
      const double I = 1.25;
      std::vector<double> t(n, I);
      std::vector<uint8_t> c(n, 0);
      for (int k = 0; k < x; ++k) c[n - 1 - k] = 1;
      const RateEstimate e = estimate_incomplete(t.data(), c.data(), t.size());
      const double cho = -std::log((n - x + 0.5) / (n + 0.5)) / I;
      EXPECT_NEAR(e.rate, cho, 1e-12 * (1.0 + cho)) << "n=" << n << " x=" << x;
      EXPECT_EQ(e.changes, uint32_t(x));
      EXPECT_EQ(e.observations, uint32_t(n));
      EXPECT_DOUBLE_EQ(e.observed_time, n * I);
      EXPECT_LE(e.lo, e.rate);
      EXPECT_GE(e.hi, e.rate);
      EXPECT_TRUE(std::isfinite(e.hi));  // also when every interval changed
    }
  }
}

TEST(ChangeRate, IntervalEndsAreWhereTheLikelihoodDropsBy1_92) {
  std::mt19937_64 rng(7);
  const History h = simulate(0.6, 60, 0.3, 2.5, rng);
  const RateEstimate e = estimate_incomplete(h.t.data(), h.changed.data(), h.t.size());
  ASSERT_GT(e.changes, 0u);
  ASSERT_LT(e.changes, 60u);
  const double top = incomplete_log_likelihood(e.rate, h.t.data(), h.changed.data(), h.t.size());
  // The maximiser: the likelihood is lower on both sides.
  EXPECT_GT(top, incomplete_log_likelihood(e.rate * 1.001, h.t.data(), h.changed.data(), 60));
  EXPECT_GT(top, incomplete_log_likelihood(e.rate * 0.999, h.t.data(), h.changed.data(), 60));
  for (double end : {e.lo, e.hi})
    EXPECT_NEAR(top - incomplete_log_likelihood(end, h.t.data(), h.changed.data(), 60),
                kHalfChi2_95, 1e-9);
  EXPECT_GT(e.lo, 0.0);
}

TEST(ChangeRate, NeverChangedAndNoHistory) {
  std::vector<double> t = {1.0, 2.0, 0.5, 0.5};
  std::vector<uint8_t> c(4, 0);
  const RateEstimate e = estimate_incomplete(t.data(), c.data(), 4);
  EXPECT_EQ(e.rate, 0.0);
  EXPECT_EQ(e.lo, 0.0);
  // l_s(D) = -(4 + 0.5 * 1) D: the interval ends where it reaches -1.92.
  EXPECT_DOUBLE_EQ(e.hi, kHalfChi2_95 / 4.5);
  const RateEstimate none = estimate_incomplete(nullptr, nullptr, 0);
  EXPECT_EQ(none.rate, 0.0);
  EXPECT_TRUE(std::isinf(none.hi));
}

TEST(ChangeRate, SimulatedHistoriesRecoverTheRateWithNominalCoverage) {
  // 98 daily-ish crawls (the dataset's 14 weeks) at rates from slow to fast: the estimator's mean
  // is within a few percent of the truth and the 95% interval covers it about 95% of the time.
  std::mt19937_64 rng(2019);
  for (double rate : {0.05, 0.3, 1.0, 2.0}) {
    const int histories = 1500;
    int covered = 0;
    double mean = 0.0;
    for (int r = 0; r < histories; ++r) {
      const History h = simulate(rate, 98, 0.5, 1.5, rng);
      const RateEstimate e = estimate_incomplete(h.t.data(), h.changed.data(), h.t.size());
      mean += e.rate / histories;
      covered += e.lo <= rate && rate <= e.hi;
    }
    EXPECT_NEAR(mean / rate, 1.0, rate < 0.1 ? 0.06 : 0.04) << "rate " << rate;
    const double coverage = double(covered) / histories;
    EXPECT_GT(coverage, 0.92) << "rate " << rate;
    EXPECT_LT(coverage, 0.985) << "rate " << rate;
  }
}

TEST(ChangeRate, CompleteObservations) {
  const RateEstimate e = estimate_complete(12.0, 98.0);
  EXPECT_DOUBLE_EQ(e.rate, 12.0 / 98.0);
  for (double end : {e.lo, e.hi})
    EXPECT_NEAR(12.0 * std::log(e.rate / end) - (e.rate - end) * 98.0, kHalfChi2_95, 1e-9);
  EXPECT_LT(e.lo, e.rate);
  EXPECT_GT(e.hi, e.rate);
  const RateEstimate zero = estimate_complete(0.0, 98.0);
  EXPECT_EQ(zero.rate, 0.0);
  EXPECT_DOUBLE_EQ(zero.hi, kHalfChi2_95 / 98.0);
}
