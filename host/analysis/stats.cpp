#include "crawleval/stats.hpp"

#include <algorithm>
#include <cmath>
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

Summary summarize_replications(const std::vector<double>& samples) {
  Summary s;
  s.method = "replications";
  s.samples = samples.size();
  if (samples.empty()) {
    s.mean = s.std_dev = s.std_error = s.half_width = s.ci_low = s.ci_high =
        std::numeric_limits<double>::quiet_NaN();
    return s;
  }
  const double n = double(samples.size());
  double sum = 0.0;
  for (double v : samples) sum += v;
  s.mean = sum / n;
  if (!std::isfinite(s.mean)) {  // the sum overflowed (rewards near 1e306): average the parts
    s.mean = 0.0;
    for (double v : samples) s.mean += v / n;
  }
  if (samples.size() < 2) {
    s.std_dev = s.std_error = s.half_width = std::numeric_limits<double>::quiet_NaN();
    s.ci_low = s.ci_high = std::numeric_limits<double>::quiet_NaN();
    return s;
  }
  double ss = 0.0;
  for (double v : samples) ss += (v - s.mean) * (v - s.mean);
  s.std_dev = std::sqrt(ss / (n - 1.0));
  if (!std::isfinite(s.std_dev)) {  // squares of deviations of 1e200 overflow: scale them first
    double scale = 0.0;
    for (double v : samples) scale = std::max(scale, std::fabs(v - s.mean));
    ss = 0.0;
    for (double v : samples) ss += ((v - s.mean) / scale) * ((v - s.mean) / scale);
    s.std_dev = scale * std::sqrt(ss / (n - 1.0));
  }
  s.std_error = s.std_dev / std::sqrt(double(samples.size()));
  s.half_width = student_t975(samples.size() - 1) * s.std_error;
  s.ci_low = s.mean - s.half_width;
  s.ci_high = s.mean + s.half_width;
  return s;
}

Summary summarize_batch_means(const std::vector<double>& series, int batches) {
  const std::size_t n = series.size();
  const std::size_t b = std::min<std::size_t>(std::size_t(batches > 0 ? batches : 1), n);
  std::vector<double> means;
  if (b > 0) {
    const std::size_t size = n / b, skip = n - size * b;
    for (std::size_t k = 0; k < b; ++k) {
      double sum = 0.0;
      for (std::size_t j = 0; j < size; ++j) sum += series[skip + k * size + j];
      means.push_back(sum / double(size));
    }
  }
  Summary s = summarize_replications(means);
  s.method = "batch_means";
  if (n > 0) {  // report the mean of the whole series; the interval keeps its width
    double sum = 0.0;
    for (double v : series) sum += v;
    s.mean = sum / double(n);
    s.ci_low = s.mean - s.half_width;
    s.ci_high = s.mean + s.half_width;
  }
  return s;
}

}  // namespace crawleval
