#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "crawleval/analysis/stats.hpp"
#include "crawleval/analysis/warm_up.hpp"
#include "crawleval/evaluate/driver.hpp"
#include "crawleval/io/io.hpp"

namespace ce = crawleval;

namespace {

/// Uniform noise in [-a, a] from a generator whose output the standard fixes (mt19937's raw
/// integers), so the series are the same with every standard library.
struct Noise {
  std::mt19937 gen{12345};
  double operator()(double a) { return a * (2.0 * double(gen()) / 4294967295.0 - 1.0); }
};

/// y_t = level - amplitude exp(-t / tau) + uniform noise in [-noise, noise].
std::vector<double> transient(std::size_t n, double level, double amplitude, double tau,
                              double noise, uint32_t seed = 7) {
  Noise u;
  u.gen.seed(seed);
  std::vector<double> y(n);
  for (std::size_t t = 0; t < n; ++t)
    y[t] = level - amplitude * std::exp(-double(t) / tau) + u(noise);
  return y;
}

}  // namespace

TEST(Stats, StudentQuantiles) {
  EXPECT_NEAR(ce::student_t975(1), 12.7062, 1e-4);
  EXPECT_NEAR(ce::student_t975(9), 2.2622, 1e-4);
  EXPECT_NEAR(ce::student_t975(30), 2.0423, 1e-4);
  // The expansion beyond the table: continuous with it, and the published values.
  EXPECT_NEAR(ce::student_t975(31), 2.039513, 2e-6);
  EXPECT_NEAR(ce::student_t975(40), 2.021075, 2e-6);
  EXPECT_NEAR(ce::student_t975(60), 2.000298, 2e-6);
  EXPECT_NEAR(ce::student_t975(120), 1.979930, 2e-6);
  EXPECT_NEAR(ce::student_t975(1000000), 1.959966, 2e-6);
}

TEST(Stats, ReplicationInterval) {
  const ce::Summary s = ce::summarize_replications({1, 2, 3, 4, 5});
  EXPECT_DOUBLE_EQ(s.mean, 3.0);
  EXPECT_NEAR(s.std_dev, std::sqrt(2.5), 1e-12);
  EXPECT_NEAR(s.std_error, std::sqrt(2.5 / 5), 1e-12);
  EXPECT_NEAR(s.half_width, 2.776445105 * std::sqrt(0.5), 1e-9);
  EXPECT_NEAR(s.ci_low, 3.0 - s.half_width, 1e-12);
  EXPECT_EQ(s.samples, 5u);
  EXPECT_TRUE(s.no_interval.empty());
  const ce::Summary one = ce::summarize_replications({7});
  EXPECT_TRUE(std::isnan(one.half_width));
  EXPECT_EQ(one.mean, 7.0);
  EXPECT_EQ(one.no_interval, "fewer than 2 samples");
}

TEST(Stats, NonNegativeRewardNeverGetsANegativeBound) {
  // mean 10/3, sd sqrt(100/3), t(2) 4.302653: the t-interval reaches -11.0.
  const ce::Summary raw = ce::summarize_replications({0.0, 0.0, 10.0});
  EXPECT_NEAR(raw.ci_low, 10.0 / 3 - 4.302652730 * std::sqrt(100.0 / 3 / 3), 1e-9);
  EXPECT_LT(raw.ci_low, -10.0);
  const ce::Summary clipped = ce::summarize_replications({0.0, 0.0, 10.0}, ce::kNonNegative);
  EXPECT_EQ(clipped.ci_low, 0.0);
  EXPECT_EQ(clipped.ci_high, raw.ci_high);
  EXPECT_EQ(clipped.half_width, raw.half_width);
  // And from above for a reward that is minus a penalty.
  const ce::Summary neg = ce::summarize_replications({0.0, 0.0, -10.0}, ce::kNonPositive);
  EXPECT_EQ(neg.ci_high, 0.0);
  // Batch means of 50 epochs, all 0 but one spike.
  std::vector<double> spiky(50, 0.0);
  spiky[49] = 1000.0;
  const ce::Summary b = ce::summarize_batch_means(spiky, ce::kNonNegative);
  ASSERT_TRUE(b.no_interval.empty()) << b.no_interval;
  EXPECT_EQ(b.ci_low, 0.0);
  EXPECT_GT(b.ci_high, 20.0);
}

TEST(Stats, VonNeumannRatio) {
  // z = 1, 2, 3, 4: sum of squared successive differences 3, of squared deviations 5.
  EXPECT_DOUBLE_EQ(ce::von_neumann_ratio({1, 2, 3, 4}), 1.0 - 3.0 / 10.0);
  EXPECT_DOUBLE_EQ(ce::von_neumann_ratio({5, 5, 5}), 0.0);
  EXPECT_DOUBLE_EQ(ce::von_neumann_ratio({1, -1, 1, -1}), 1.0 - 12.0 / 8.0);
  // Significance: C / sqrt((k - 2) / (k^2 - 1)) > 1.645.
  EXPECT_TRUE(ce::lag1_correlated(0.40, 20));   // 0.40 / 0.2124 = 1.88
  EXPECT_FALSE(ce::lag1_correlated(0.30, 20));  // 1.41
  EXPECT_FALSE(ce::lag1_correlated(-0.9, 20));
}

TEST(Stats, BatchMeans) {
  std::vector<double> series;
  for (int k = 0; k < 100; ++k) series.push_back(k % 2 ? 1.0 : 3.0);
  // 20 batches of 5 epochs, whose means alternate 2.2 and 1.8 (ratio -0.9: not correlated).
  const ce::Summary s = ce::summarize_batch_means(series);
  EXPECT_EQ(s.method, "batch_means");
  EXPECT_EQ(s.samples, 20u);
  EXPECT_EQ(s.batch_epochs, 5u);
  EXPECT_NEAR(s.lag1, -0.9, 1e-12);
  EXPECT_DOUBLE_EQ(s.mean, 2.0);
  EXPECT_NEAR(s.std_dev, std::sqrt(20.0 * 0.04 / 19.0), 1e-12);
  EXPECT_NEAR(s.half_width, ce::student_t975(19) * s.std_dev / std::sqrt(20.0), 1e-12);
  // 60 epochs: 10 batches of 6 (below 100 there are not 20 batches of 5); each holds three 3s
  // and three 1s, so every batch mean is 2: no spread, and no interval (a zero-width one would
  // claim a precision nothing measured).
  series.resize(60);
  const ce::Summary ten = ce::summarize_batch_means(series);
  EXPECT_EQ(ten.samples, 10u);
  EXPECT_EQ(ten.batch_epochs, 6u);
  EXPECT_DOUBLE_EQ(ten.mean, 2.0);
  EXPECT_TRUE(std::isnan(ten.half_width));
  EXPECT_NE(ten.no_interval.find("every batch of 6 epochs has the same mean"), std::string::npos)
      << ten.no_interval;
  // 61 epochs: the first one is left out of the batches and of the mean.
  series.insert(series.begin(), 1000.0);
  EXPECT_DOUBLE_EQ(ce::summarize_batch_means(series).mean, 2.0);
}

TEST(Stats, BatchMeansTooShortHaveNoInterval) {
  // The footer used to say "CI over 20 batch means" with 10 epochs.
  for (std::size_t n : {1u, 2u, 10u, 49u}) {
    const ce::Summary s = ce::summarize_batch_means(std::vector<double>(n, 1.0));
    EXPECT_FALSE(s.no_interval.empty()) << n;
    EXPECT_NE(s.no_interval.find(std::to_string(n) + " measured epoch"), std::string::npos)
        << s.no_interval;
    EXPECT_TRUE(std::isnan(s.ci_low) && std::isnan(s.ci_high) && std::isnan(s.half_width));
    EXPECT_EQ(s.mean, 1.0);
  }
  std::vector<double> fifty(50, 1.0);
  fifty[7] = 2.0, fifty[30] = 3.0;
  EXPECT_TRUE(ce::summarize_batch_means(fifty).no_interval.empty());
}

TEST(Stats, EqualSamplesGiveNoInterval) {
  // Replications that are copies, or a reward that does not vary: the spread 0 is no evidence
  // that the next sample would be the same.
  for (std::size_t n : {2u, 3u, 40u}) {
    const ce::Summary s = ce::summarize_replications(std::vector<double>(n, 201.61));
    EXPECT_NEAR(s.mean, 201.61, 1e-12);
    EXPECT_EQ(s.std_dev, 0.0);
    EXPECT_TRUE(std::isnan(s.half_width) && std::isnan(s.ci_low) && std::isnan(s.ci_high));
    EXPECT_NE(s.no_interval.find("samples are equal"), std::string::npos) << s.no_interval;
  }
  const ce::Summary c = ce::summarize_batch_means(std::vector<double>(200, 1.0));
  EXPECT_EQ(c.mean, 1.0);
  EXPECT_TRUE(std::isnan(c.half_width));
  EXPECT_NE(c.no_interval.find("every batch of 10 epochs has the same mean"), std::string::npos)
      << c.no_interval;
  // One differing sample is spread.
  std::vector<double> v(5, 3.0);
  v[2] = 3.5;
  EXPECT_TRUE(ce::summarize_replications(v).no_interval.empty());
}

TEST(Stats, HeavyTailsNeedDrawsThatSeeTheTail) {
  // E[Z^2] = exp(sigma^2) for the lognormal law of mean 1.
  EXPECT_EQ(ce::heavy_tail_reason(2.0, 200.0, "exponential"), "");
  EXPECT_NE(ce::heavy_tail_reason(2.0, 199.0, "exponential"), "");
  const std::string why = ce::heavy_tail_reason(std::exp(25.0), 4e6, "lognormal:5");
  EXPECT_NE(why.find("lognormal:5 is heavy-tailed"), std::string::npos) << why;
  EXPECT_NE(ce::heavy_tail_reason(HUGE_VAL, 1e300, "pareto:1.8").find("infinite variance"),
            std::string::npos);
}

TEST(Stats, CorrelatedBatchMeansAreMergedThenRefused) {
  // Epochs in runs of 20 of +1 and -1: 20 batches of 5 come in blocks of 4 equal means (ratio
  // 0.6, significant); merged into 10 batches of 10 (blocks of 2: ratio 0.17, not significant).
  std::vector<double> blocks(100);
  for (std::size_t t = 0; t < 100; ++t) blocks[t] = (t / 20) % 2 ? -1.0 : 1.0;
  const ce::Summary merged = ce::summarize_batch_means(blocks);
  EXPECT_TRUE(merged.no_interval.empty()) << merged.no_interval;
  EXPECT_EQ(merged.samples, 10u);
  EXPECT_EQ(merged.batch_epochs, 10u);
  EXPECT_NEAR(merged.lag1, 1.0 - 16.0 / 19.2, 1e-12);
  // A slow cycle (period 1000 epochs) over 1000 epochs: correlated at 20 and at 10 batches.
  std::vector<double> slow(1000);
  for (std::size_t t = 0; t < slow.size(); ++t) slow[t] = 5.0 + std::sin(2 * M_PI * t / 1000.0);
  const ce::Summary refused = ce::summarize_batch_means(slow);
  EXPECT_NE(refused.no_interval.find("the batch means are correlated"), std::string::npos)
      << refused.no_interval;
  EXPECT_NE(refused.no_interval.find("over 10 batches of 100 epochs"), std::string::npos)
      << refused.no_interval;
  EXPECT_TRUE(std::isnan(refused.ci_low));
  EXPECT_NEAR(refused.mean, 5.0, 1e-12);
}

TEST(Mser5, ConstantAndTooShort) {
  const ce::Mser flat = ce::mser5(std::vector<double>(100, 3.0));
  EXPECT_EQ(flat.truncation, 0u);
  EXPECT_TRUE(flat.settled);
  EXPECT_EQ(flat.batches, 20u);
  const ce::Mser tiny = ce::mser5(std::vector<double>(19, 3.0));
  EXPECT_FALSE(tiny.settled);
  EXPECT_EQ(tiny.batches, 3u);
}

TEST(Mser5, StepTransientIsCutExactly) {
  // 50 epochs at 0, then 450 around 1 (+-0.01): the first 10 batches are the transient.
  std::vector<double> y(500);
  for (std::size_t t = 0; t < y.size(); ++t) y[t] = t < 50 ? 0.0 : 1.0 + (t % 2 ? 0.01 : -0.01);
  const ce::Mser m = ce::mser5(y);
  EXPECT_EQ(m.truncation, 50u);
  EXPECT_TRUE(m.settled);
}

TEST(Mser5, ExponentialTransientWithNoise) {
  // 100 - 50 exp(-t / 20) + U(-1, 1): the transient exceeds the noise up to t = 20 ln 50 = 78;
  // the truncation lands where what is left is about the noise of the remaining mean.
  const std::vector<double> y = transient(1000, 100.0, 50.0, 20.0, 1.0);
  const ce::Mser m = ce::mser5(y);
  EXPECT_TRUE(m.settled);
  EXPECT_GE(m.truncation, 60u);
  EXPECT_LE(m.truncation, 160u);
  // Stationary noise: little or nothing is cut.
  const ce::Mser s = ce::mser5(transient(1000, 100.0, 0.0, 20.0, 1.0));
  EXPECT_TRUE(s.settled);
  EXPECT_LE(s.truncation, 50u);
}

TEST(Mser5, TrendThroughoutIsNotSettled) {
  // Still rising at the end: the minimum sits at the end of the first half.
  std::vector<double> y(200);
  for (std::size_t t = 0; t < y.size(); ++t) y[t] = double(t);
  const ce::Mser m = ce::mser5(y);
  EXPECT_FALSE(m.settled);
  EXPECT_EQ(m.truncation, 5u * 20u);
}

TEST(WarmUp, PilotDoublesUntilTheTransientEnds) {
  // tau = 150: a pilot of 100 or 200 epochs is all transient; the pilot doubles until MSER-5
  // settles, and the burn-in (twice its truncation) leaves less than the noise.
  std::vector<uint64_t> lengths;
  const ce::WarmUp w = ce::choose_burn_in(100, {true, 5000}, [&](uint64_t n) {
    lengths.push_back(n);
    return transient(n, 100.0, 50.0, 150.0, 1.0);
  });
  ASSERT_GE(lengths.size(), 3u);
  EXPECT_EQ(lengths[0], 100u);
  for (std::size_t k = 1; k < lengths.size(); ++k) EXPECT_EQ(lengths[k], 2 * lengths[k - 1]);
  EXPECT_TRUE(w.settled);
  EXPECT_EQ(w.pilots, lengths.size());
  EXPECT_EQ(w.pilot_epochs, lengths.back());
  EXPECT_EQ(w.burn_in, 2 * w.mser_truncation);
  EXPECT_LT(50.0 * std::exp(-double(w.burn_in) / 150.0), 0.2);
  EXPECT_TRUE(w.warning.empty());
  EXPECT_NE(w.reason.find("MSER-5"), std::string::npos);
  // The first pilot is as long as the measured run (between 100 and 1000 epochs).
  lengths.clear();
  ce::choose_burn_in(700, {true, 5000}, [&](uint64_t n) {
    lengths.push_back(n);
    return transient(n, 100.0, 50.0, 5.0, 1.0);
  });
  EXPECT_EQ(lengths, std::vector<uint64_t>{700});
}

TEST(WarmUp, CappedBurnInWarns) {
  const ce::WarmUp w = ce::choose_burn_in(
      100, {true, 60}, [&](uint64_t n) { return transient(n, 100.0, 50.0, 500.0, 0.1); });
  EXPECT_EQ(w.burn_in, 60u);
  EXPECT_TRUE(w.capped || !w.settled);
  EXPECT_LE(w.pilot_epochs, 120u);
  EXPECT_NE(w.warning.find("--max-burn-in"), std::string::npos) << w.warning;
}

TEST(WarmUp, WindowCheck) {
  // A measured window that starts inside a transient (a fixed burn-in that is too short).
  ce::WarmUp w = ce::fixed_burn_in(5);
  const std::vector<double> y = transient(205, 100.0, 50.0, 10.0, 1.0);
  ce::check_measured_window(w, std::vector<double>(y.begin() + 5, y.end()));
  EXPECT_TRUE(w.window_checked);
  EXPECT_TRUE(w.transient_in_window);
  EXPECT_GT(w.window_truncation, 0u);
  EXPECT_LT(w.window_shift, -w.window_half_width);
  EXPECT_NE(w.warning.find("--burn-in auto"), std::string::npos) << w.warning;
  EXPECT_EQ(w.series_first, 5u);
  EXPECT_EQ(w.series.size(), 200u);
  // Stationary noise: no transient.
  ce::WarmUp ok = ce::fixed_burn_in(0);
  ce::check_measured_window(ok, transient(1000, 100.0, 0.0, 10.0, 1.0));
  EXPECT_TRUE(ok.window_checked);
  EXPECT_FALSE(ok.transient_in_window);
  EXPECT_TRUE(ok.warning.empty());
  EXPECT_EQ(ok.series_stride, 3u);  // at most 400 points
  EXPECT_EQ(ok.series.size(), 334u);
  // Too short to tell.
  ce::WarmUp short_window = ce::fixed_burn_in(0);
  ce::check_measured_window(short_window, std::vector<double>(19, 1.0));
  EXPECT_FALSE(short_window.window_checked);
  EXPECT_EQ(short_window.window_not_checked, "fewer than 20 measured epochs");
}

TEST(WarmUp, SeriesJoinsThePilotAndTheMeasuredRun) {
  ce::WarmUp w = ce::choose_burn_in(
      150, {true, 5000}, [&](uint64_t n) { return transient(n, 100.0, 50.0, 5.0, 0.5); });
  ASSERT_EQ(w.pilot_epochs, 150u);
  const std::vector<double> all = transient(w.burn_in + 150, 100.0, 50.0, 5.0, 0.5);
  ce::check_measured_window(w, std::vector<double>(all.begin() + long(w.burn_in), all.end()));
  EXPECT_EQ(w.series_first, 0u);
  EXPECT_EQ(w.series_stride, 1u);
  ASSERT_EQ(w.series.size(), all.size());
  for (std::size_t t = 0; t < all.size(); ++t) EXPECT_DOUBLE_EQ(w.series[t], all[t]) << t;
}

TEST(WarmUp, EvaluateChoosesTheBurnInAndTheObserverSeesTheMeasuredRun) {
  // The papers' example from empty sources, M = 1, the papers' 61 epochs: with the measured
  // burn-in the mean is the long-run (exact) optimum, where the papers' 61 epochs from the cold
  // start average to 254.66 (test_paper_example.cpp).
  const ce::Population pop = ce::paper_example();
  ce::RunConfig cfg;
  cfg.budget = 1;
  cfg.epochs = 61;
  const ce::Problem pr = ce::make_problem(pop, cfg);
  ce::EvaluateOptions auto_burn_in;
  auto_burn_in.warm_up.automatic = true;
  uint64_t seen = 0, first_epoch = 1;
  const ce::EpochObserver obs = [&](const ce::EpochView& v) {
    if (seen++ == 0) first_epoch = v.epoch;
  };
  for (const ce::Backend b : {ce::Backend::reference, ce::Backend::cpu}) {
    seen = 0;
    const ce::PolicyResult r = ce::evaluate(pr, ce::Policy::whittle, b, &obs, auto_burn_in);
    EXPECT_TRUE(r.warm_up.automatic);
    EXPECT_EQ(r.warm_up.pilot_epochs, 100u);
    EXPECT_GT(r.warm_up.burn_in, 0u);
    EXPECT_NEAR(r.reward.mean, 260.3899304911464, 1e-9);
    // The steady state alternates sources 1 and 2: every batch of 6 epochs has the same mean,
    // which is no evidence of precision (there is no interval, and the reason says so).
    EXPECT_TRUE(std::isnan(r.reward.half_width));
    EXPECT_NE(r.reward.no_interval.find("has the same mean"), std::string::npos)
        << r.reward.no_interval;
    EXPECT_EQ(seen, r.warm_up.burn_in + 61);  // the pilot's 100 epochs were not observed
    EXPECT_EQ(first_epoch, 0u);
    EXPECT_TRUE(r.warm_up.warning.empty()) << r.warm_up.warning;
  }
  // The same with a given burn-in of 0: the cold start is in the window, and the check says so.
  const ce::PolicyResult cold = ce::evaluate(pr, ce::Policy::whittle, ce::Backend::cpu);
  EXPECT_NEAR(cold.replication_reward[0], 254.66, 0.01);  // the papers' number
  // The interval's 10 batches of 6 epochs leave out epoch 0 (the mean is theirs).
  EXPECT_EQ(cold.reward.samples * cold.reward.batch_epochs, 60u);
  EXPECT_NEAR(cold.reward.mean, (254.66 * 61 - 0.0) / 60, 0.01);
  EXPECT_FALSE(cold.warm_up.automatic);
  EXPECT_TRUE(cold.warm_up.transient_in_window);
}
