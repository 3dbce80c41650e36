// Confidence intervals for mean rewards.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace crawleval {

/// A mean with its 95% confidence interval. half_width is NaN when there are too few samples.
struct Summary {
  double mean = 0.0;
  double std_dev = 0.0;    ///< sample standard deviation of the samples
  double std_error = 0.0;  ///< std_dev / sqrt(samples)
  double half_width = 0.0;
  double ci_low = 0.0, ci_high = 0.0;
  uint64_t samples = 0;  ///< replications, or batches for batch means
  std::string method;    ///< "replications" or "batch_means"
};

/// 0.975 quantile of Student's t with `df` degrees of freedom (exact table up to 30, then a
/// Cornish-Fisher expansion accurate to better than 1e-6).
double student_t975(uint64_t df);

/// t-interval over independent replications (one sample each).
Summary summarize_replications(const std::vector<double>& samples);

/// Batch means over one long run: the series is cut into `batches` equal consecutive batches
/// (the first H mod batches values are dropped) and the batch means are treated as independent.
Summary summarize_batch_means(const std::vector<double>& series, int batches = 20);

}  // namespace crawleval
