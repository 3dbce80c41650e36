#include <gtest/gtest.h>

#include <cmath>

#include "crawleval/stats.hpp"

namespace ce = crawleval;

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
  EXPECT_TRUE(std::isnan(ce::summarize_replications({7}).half_width));
  EXPECT_EQ(ce::summarize_replications({7}).mean, 7.0);
}

TEST(Stats, BatchMeans) {
  std::vector<double> series;
  for (int k = 0; k < 100; ++k) series.push_back(k % 2 ? 1.0 : 3.0);
  // Batches of 4 hold two 3s and two 1s: every batch mean is 2, the interval has zero width.
  const ce::Summary even = ce::summarize_batch_means(series, 25);
  EXPECT_EQ(even.samples, 25u);
  EXPECT_DOUBLE_EQ(even.mean, 2.0);
  EXPECT_NEAR(even.half_width, 0.0, 1e-12);
  // Batches of 5 alternate between means 2.2 and 1.8.
  const ce::Summary odd = ce::summarize_batch_means(series, 20);
  EXPECT_EQ(odd.samples, 20u);
  EXPECT_DOUBLE_EQ(odd.mean, 2.0);
  EXPECT_NEAR(odd.std_dev, std::sqrt(20.0 * 0.04 / 19.0), 1e-12);
}
