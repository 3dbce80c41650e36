#include "crawleval/analysis/stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace crawleval {

double student_t975(uint64_t df) {
  static const double table[31] = {std::numeric_limits<double>::quiet_NaN(),
                                   12.706204736,
                                   4.302652730,
                                   3.182446305,
                                   2.776445105,
                                   2.570581836,
                                   2.446911851,
                                   2.364624252,
                                   2.306004135,
                                   2.262157163,
                                   2.228138852,
                                   2.200985160,
                                   2.178812830,
                                   2.160368656,
                                   2.144786688,
                                   2.131449546,
                                   2.119905299,
                                   2.109815578,
                                   2.100922040,
                                   2.093024054,
                                   2.085963447,
                                   2.079613845,
                                   2.073873068,
                                   2.068657610,
                                   2.063898562,
                                   2.059538553,
                                   2.055529439,
                                   2.051830516,
                                   2.048407142,
                                   2.045229642,
                                   2.042272456};
  if (df <= 30) return table[df];
  const double z = 1.959963984540054, v = double(df);
  const double z2 = z * z, z3 = z2 * z, z5 = z3 * z2, z7 = z5 * z2, z9 = z7 * z2;
  return z + (z3 + z) / (4 * v) + (5 * z5 + 16 * z3 + 3 * z) / (96 * v * v) +
         (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * v * v * v) +
         (79 * z9 + 776 * z7 + 1482 * z5 - 1920 * z3 - 945 * z) / (92160 * v * v * v * v);
}

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void no_interval(Summary& s, std::string why) {
  s.std_error = s.half_width = s.ci_low = s.ci_high = kNaN;
  s.no_interval = std::move(why);
}

/// The mean of `v`, without overflow for values near the largest double.
double mean_of(const std::vector<double>& v, std::size_t first = 0) {
  const double n = double(v.size() - first);
  double sum = 0.0;
  for (std::size_t i = first; i < v.size(); ++i) sum += v[i];
  if (std::isfinite(sum)) return sum / n;
  double m = 0.0;  // the sum overflowed (rewards near 1e306): average the parts
  for (std::size_t i = first; i < v.size(); ++i) m += v[i] / n;
  return m;
}

void clip(Summary& s, Range range) {
  s.ci_low = std::max(s.ci_low, range.lo);
  s.ci_high = std::min(s.ci_high, range.hi);
}

}  // namespace

double power_law_exponent(const std::vector<double>& x, const std::vector<double>& y,
                          double x_from) {
  double n = 0, sx = 0, sy = 0;
  std::vector<std::pair<double, double>> pts;
  for (std::size_t k = 0; k < x.size() && k < y.size(); ++k)
    if (x[k] >= x_from && x[k] > 0 && y[k] > 0 && std::isfinite(x[k]) && std::isfinite(y[k])) {
      pts.emplace_back(std::log(x[k]), std::log(y[k]));
      n += 1, sx += pts.back().first, sy += pts.back().second;
    }
  if (n < 2) return std::numeric_limits<double>::quiet_NaN();
  const double mx = sx / n, my = sy / n;
  double sxx = 0, sxy = 0;  // centred sums: no cancellation
  for (const auto& [lx, ly] : pts) sxx += (lx - mx) * (lx - mx), sxy += (lx - mx) * (ly - my);
  return sxx > 0 ? sxy / sxx : std::numeric_limits<double>::quiet_NaN();
}

Summary summarize_replications(const std::vector<double>& samples, Range range) {
  Summary s;
  s.method = "replications";
  s.samples = samples.size();
  if (samples.empty()) {
    s.mean = s.std_dev = kNaN;
    no_interval(s, "no samples");
    return s;
  }
  const double n = double(samples.size());
  s.mean = mean_of(samples);
  if (samples.size() < 2) {
    s.std_dev = kNaN;
    no_interval(s, "fewer than 2 samples");
    return s;
  }
  double ss = 0.0;
  for (double v : samples) ss += (v - s.mean) * (v - s.mean);
  s.std_dev = std::sqrt(ss / (n - 1.0));
  if (std::all_of(samples.begin(), samples.end(), [&](double v) { return v == samples[0]; })) {
    // Equal samples say nothing about the spread of the next one: a zero-width interval would
    // claim a precision nothing measured.
    s.std_dev = 0.0;
    no_interval(s, "the " + std::to_string(samples.size()) +
                       " samples are equal: without spread there is no evidence of precision");
    return s;
  }
  if (!std::isfinite(s.std_dev)) {  // squares of deviations of 1e200 overflow: scale them first
    double scale = 0.0;
    for (double v : samples) scale = std::max(scale, std::fabs(v - s.mean));
    ss = 0.0;
    for (double v : samples) ss += ((v - s.mean) / scale) * ((v - s.mean) / scale);
    s.std_dev = scale * std::sqrt(ss / (n - 1.0));
  }
  s.std_error = s.std_dev / std::sqrt(n);
  s.half_width = student_t975(samples.size() - 1) * s.std_error;
  s.ci_low = s.mean - s.half_width;
  s.ci_high = s.mean + s.half_width;
  if (!std::isfinite(s.half_width)) {
    no_interval(s, "not representable (overflow)");
    return s;
  }
  clip(s, range);
  return s;
}

double von_neumann_ratio(const std::vector<double>& z) {
  const std::size_t k = z.size();
  if (k < 2) return 0.0;
  const double m = mean_of(z);
  double scale = 0.0;  // deviations scaled to at most 1: no overflow, no underflow to 0
  for (double v : z) scale = std::max(scale, std::fabs(v - m));
  if (!(scale > 0.0) || !std::isfinite(scale)) return 0.0;
  double den = 0.0, num = 0.0;
  for (std::size_t j = 0; j < k; ++j) {
    const double d = (z[j] - m) / scale;
    den += d * d;
    if (j + 1 < k) {
      const double e = (z[j] - z[j + 1]) / scale;
      num += e * e;
    }
  }
  return 1.0 - num / (2.0 * den);
}

bool lag1_correlated(double ratio, std::size_t k) {
  if (k < 3) return false;
  const double kk = double(k);
  return ratio / std::sqrt((kk - 2.0) / (kk * kk - 1.0)) > 1.6448536269514722;
}

Summary summarize_batch_means(const std::vector<double>& series, Range range) {
  Summary s;
  const std::size_t n = series.size();
  if (n == 0) {
    s = summarize_replications({}, range);
    s.method = "batch_means";
    return s;
  }
  if (n < kMinBatches * kMinBatchEpochs) {
    s.method = "batch_means";
    s.mean = mean_of(series);
    s.std_dev = kNaN;
    no_interval(s, std::to_string(n) + " measured epoch" + (n == 1 ? " is" : "s are") +
                       " too few for batch means over one replication (at least " +
                       std::to_string(kMinBatches * kMinBatchEpochs) + ": " +
                       std::to_string(kMinBatches) + " batches of " +
                       std::to_string(kMinBatchEpochs) +
                       " epochs); run more epochs or 2 or "
                       "more replications");
    return s;
  }
  std::size_t k = n >= kMaxBatches * kMinBatchEpochs ? kMaxBatches : kMinBatches;
  for (;;) {
    const std::size_t size = n / k, skip = n - size * k;
    std::vector<double> means(k);
    for (std::size_t b = 0; b < k; ++b) {
      double sum = 0.0;
      for (std::size_t j = 0; j < size; ++j) sum += series[skip + b * size + j];
      means[b] = sum / double(size);
      if (!std::isfinite(means[b])) {  // overflow of the sum: average the parts
        means[b] = 0.0;
        for (std::size_t j = 0; j < size; ++j)
          means[b] += series[skip + b * size + j] / double(size);
      }
    }
    const double c = von_neumann_ratio(means);
    const bool correlated = lag1_correlated(c, k);
    if (correlated && k / 2 >= kMinBatches) {
      k /= 2;  // adjacent pairs merged: batches twice as long
      continue;
    }
    s = summarize_replications(means, range);
    s.method = "batch_means";
    s.batch_epochs = size;
    s.lag1 = c;
    if (s.std_dev == 0.0 && !s.no_interval.empty()) {
      no_interval(s, "every batch of " + std::to_string(size) +
                         " epochs has the same mean: a series without spread gives no "
                         "interval (a deterministic schedule whose period divides the batch, "
                         "where the mean is exact over whole periods; a window inside one "
                         "period; or a reward that does not vary); run more epochs or 2 or more "
                         "replications of a stochastic model");
    }
    // The mean of the batched epochs: the interval is about them (the few left out are the
    // earliest, nearest the warm-up).
    s.mean = mean_of(series, skip);
    if (s.no_interval.empty()) {
      s.ci_low = s.mean - s.half_width;
      s.ci_high = s.mean + s.half_width;
      clip(s, range);
    }
    if (correlated) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "%.2f", c);
      no_interval(s, "the batch means are correlated (lag-1 " + std::string(buf) + " over " +
                         std::to_string(k) + " batches of " + std::to_string(size) +
                         " epochs, significant at 5%): run more epochs or 2 or more replications");
    }
    return s;
  }
}

std::string heavy_tail_reason(double second_moment, double draws, const std::string& law) {
  const double need = kDrawsPerSecondMoment * second_moment;
  if (draws >= need) return {};
  char buf[400];
  if (!std::isfinite(second_moment))
    std::snprintf(buf, sizeof buf,
                  "the utility law %s has an infinite variance: no sample mean of its draws has a "
                  "trustworthy interval (the mean is the run's average)",
                  law.c_str());
  else
    std::snprintf(buf, sizeof buf,
                  "the utility law %s is heavy-tailed (E[Z^2] = %.3g for Z = utility / mean): "
                  "each sample draws the like of about %.3g equally weighted utilities (the "
                  "sources' draws weighted by xi), fewer than the %.3g (%g E[Z^2]) that "
                  "would see the tail its spread depends on, so an interval would not be "
                  "trustworthy (the mean is the run's average); run more epochs per replication",
                  law.c_str(), second_moment, draws, need, kDrawsPerSecondMoment);
  return buf;
}

Mser mser5(const std::vector<double>& series) {
  Mser r;
  const std::size_t m = series.size() / 5;
  r.batches = m;
  if (m < 4) return r;
  std::vector<double> z(m);
  for (std::size_t j = 0; j < m; ++j) {
    double sum = 0.0;
    for (std::size_t i = 0; i < 5; ++i) sum += series[5 * j + i] / 5.0;
    z[j] = sum;
  }
  // Suffix sums of deviations from a centre, scaled to at most 1 (no overflow, little
  // cancellation): S_d = sum (z - c)^2 - (sum (z - c))^2 / (m - d) over j >= d.
  const double c = mean_of(z);
  double scale = 0.0;
  for (double v : z) scale = std::max(scale, std::fabs(v - c));
  const std::size_t half = m / 2;
  if (!(scale > 0.0) || !std::isfinite(scale)) {  // constant series: nothing to truncate
    r.settled = true;
    return r;
  }
  std::vector<double> stat(half + 1);
  double s1 = 0.0, s2 = 0.0;
  for (std::size_t d = m; d-- > 0;) {
    const double v = (z[d] - c) / scale;
    s1 += v, s2 += v * v;
    if (d <= half) {
      const double rest = double(m - d);
      stat[d] = std::max(0.0, s2 - s1 * s1 / rest) / (rest * rest);
    }
  }
  std::size_t best = 0;
  for (std::size_t d = 1; d <= half; ++d)
    if (stat[d] < stat[best]) best = d;
  r.truncation = 5 * best;
  r.settled = best < half;
  return r;
}

}  // namespace crawleval
