// Confidence intervals for mean rewards, and the initial-transient detector.
//
// Intervals: over R >= 2 replications, Student's t over the replication means (independent by
// construction). Over one replication, batch means (Schmeiser 1982; Fishman 1978): the measured
// epochs are cut into k = 20 (or 10) consecutive batches of at least 5 epochs, and the batch
// means are tested for lag-1 correlation with von Neumann's ratio (Young 1941; Fishman 1978); when
// 20 batches are correlated, adjacent pairs are merged into 10; when 10 still are, or the run is
// shorter than 50 epochs, there is no interval and the summary says why. A quantity that cannot
// leave [lo, hi] (a reward is >= 0) gets its interval clipped to that range: the true mean lies
// inside it, so the clipped interval covers it exactly as often.
//
// Warm-up: MSER-5 (White 1997, "An effective truncation heuristic for bias reduction in
// simulation output", Simulation 69(6); White, Cobb & Spratt 2000, "A comparison of five
// steady-state truncation heuristics for simulation", Proc. Winter Simulation Conference): the
// series is cut into batches of 5, and the truncation point d (in batches) minimises
// MSER(d) = sum_{j >= d} (z_j - mean_{>= d} z)^2 / (m - d)^2 over the first half of the m batches;
// a minimum at the half's end means the series is too short to show the end of the transient.
//
// Worked example: summarize_batch_means of 100 epochs alternating 3, 1 uses 20 batches of 5
// epochs, whose means alternate 2.2, 1.8 (von Neumann ratio -0.95: no positive correlation), so
// the interval is 2 +- t(19) * 0.2 / sqrt(20) * sqrt(20/19).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace crawleval {

/// The values a sample can take: its interval is clipped to [lo, hi].
struct Range {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
};
/// Rewards, costs and freshness are >= 0; the freshness model's reward (minus a penalty) <= 0.
inline constexpr Range kNonNegative{0.0, std::numeric_limits<double>::infinity()};
inline constexpr Range kNonPositive{-std::numeric_limits<double>::infinity(), 0.0};

/// A mean with its 95% confidence interval. Without an interval (too few samples, correlated
/// batch means), half_width, std_error and the bounds are NaN and `no_interval` says why.
struct Summary {
  double mean = 0.0;
  double std_dev = 0.0;    ///< sample standard deviation of the samples
  double std_error = 0.0;  ///< std_dev / sqrt(samples)
  double half_width = 0.0;
  double ci_low = 0.0, ci_high = 0.0;  ///< mean -+ half_width, clipped to the samples' Range
  uint64_t samples = 0;                ///< replications, or the batches the interval is over
  std::string method;                  ///< "replications" or "batch_means"
  /// Batch means: epochs per batch, and the von Neumann estimate of the batch means' lag-1
  /// correlation (NaN when not computed).
  uint64_t batch_epochs = 0;
  double lag1 = std::numeric_limits<double>::quiet_NaN();
  std::string no_interval;  ///< empty when there is an interval
  /// Replications that gave the same reward to the last bit (the deterministic model draws
  /// nothing): copies of one run, whose epochs the batch means are then over. 0 otherwise.
  uint64_t copies = 0;
};

/// 0.975 quantile of Student's t with `df` degrees of freedom (exact table up to 30, then a
/// Cornish-Fisher expansion accurate to better than 1e-6).
double student_t975(uint64_t df);

/// t-interval over independent replications (one sample each).
Summary summarize_replications(const std::vector<double>& samples, Range range = {});

/// Batch means over one long run (the method in the header comment). The first n mod k values
/// are left out (of the batches and of the mean: the mean is the one the interval is about).
/// Below 50 values the mean is the whole series' and there is no interval.
Summary summarize_batch_means(const std::vector<double>& series, Range range = {});

/// The exponent b of a power law y = a x^b fitted by least squares on (log x, log y) over the
/// points with x >= x_from, x > 0 and y > 0 (NaN with fewer than two such points, or when their
/// x are all equal). Example: y = 3 x^0.7 at x = 1, 2, 4 gives 0.7 (to the last few bits).
double power_law_exponent(const std::vector<double>& x, const std::vector<double>& y,
                          double x_from = 0.0);

/// Batch-means constants (documented in docs/statistics.md).
inline constexpr uint64_t kMaxBatches = 20, kMinBatches = 10, kMinBatchEpochs = 5;

/// Heavy tails. A sample's mean (a replication's, a batch's) of utilities Z xi with E[Z] = 1 has
/// a relative spread of about sqrt(E[Z^2] / draws); its sample variance is trusted only where the
/// draws see the tail that carries E[Z^2]. An interval is given only where every sample draws at
/// least kDrawsPerSecondMoment E[Z^2] utilities (lognormal:5: E[Z^2] = 7.2e10, so no run does;
/// the exponential law: 200). Where it is not, the summary has no interval and says why.
inline constexpr double kDrawsPerSecondMoment = 100.0;
/// Why a sample of `draws` utilities of a law with E[Z^2] = `second_moment` gives no trusted
/// interval ("" when it does). `law` names it in the message.
std::string heavy_tail_reason(double second_moment, double draws, const std::string& law);

/// Von Neumann's ratio C = 1 - sum (z_j - z_{j+1})^2 / (2 sum (z_j - mean)^2), an estimate of
/// the lag-1 correlation; 0 when every z is equal. Under independence C / sqrt((k-2)/(k^2-1)) is
/// about standard normal for k >= 8.
double von_neumann_ratio(const std::vector<double>& z);
/// True when C is significantly positive at the 5% level (one-sided).
bool lag1_correlated(double ratio, std::size_t k);

/// MSER-5's verdict on a series.
struct Mser {
  uint64_t truncation = 0;  ///< epochs to discard: 5 d*
  uint64_t batches = 0;     ///< m = floor(n / 5)
  /// The minimum lies strictly inside the first half of the batches: the series shows the end of
  /// the transient. False for a series shorter than 4 batches.
  bool settled = false;
};
Mser mser5(const std::vector<double>& series);

}  // namespace crawleval
