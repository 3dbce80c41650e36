// Counter-based draws: known answers, determinism, and the law of the epoch arrivals U.
#include <gtest/gtest.h>

#include <cmath>

#include "crawleval/model.hpp"
#include "crawleval/problem.hpp"
#include "crawleval/rng.hpp"

namespace ce = crawleval;

TEST(Rng, PhiloxKnownAnswer) {
  // Random123's published known-answer vector for Philox4x32-10 with zero counter and key.
  r123::Philox4x32 gen;
  const r123::Philox4x32::ctr_type ctr = {{0, 0, 0, 0}};
  const r123::Philox4x32::key_type key = {{0, 0}};
  const auto r = gen(ctr, key);
  EXPECT_EQ(r[0], 0x6627e8d5u);
  EXPECT_EQ(r[1], 0xe169c58du);
  EXPECT_EQ(r[2], 0xbc57ac4cu);
  EXPECT_EQ(r[3], 0x9b00dbd8u);
}

TEST(Rng, UniformIsStrictlyInsideTheUnitInterval) {
  EXPECT_GT(ce::uniform(0u), 0.0);
  EXPECT_LT(ce::uniform(0xFFFFFFFFu), 1.0);
  EXPECT_DOUBLE_EQ(ce::uniform(0x80000000u), 0.5 + 0.5 / 4294967296.0);
}

TEST(Rng, DrawsArePureFunctionsOfTheirKey) {
  const auto a = ce::philox_words(42, 7, 3, 1, ce::Stream::arrivals, 0);
  const auto b = ce::philox_words(42, 7, 3, 1, ce::Stream::arrivals, 0);
  for (int k = 0; k < 4; ++k) EXPECT_EQ(a.w[k], b.w[k]);
  // Any change of key component changes the words.
  const auto c = ce::philox_words(42, 7, 3, 2, ce::Stream::arrivals, 0);
  const auto d = ce::philox_words(42, 8, 3, 1, ce::Stream::arrivals, 0);
  const auto e = ce::philox_words(43, 7, 3, 1, ce::Stream::arrivals, 0);
  const auto f = ce::philox_words(42, 7, 3, 1, ce::Stream::random_policy, 0);
  EXPECT_NE(a.w[0], c.w[0]);
  EXPECT_NE(a.w[0], d.w[0]);
  EXPECT_NE(a.w[0], e.w[0]);
  EXPECT_NE(a.w[0], f.w[0]);
  // A DrawStream reads block 0 then block 1, ...
  ce::DrawStream s(42, 7, 3, 1, ce::Stream::arrivals);
  for (int k = 0; k < 4; ++k) EXPECT_EQ(s.next_word(), a.w[k]);
  const auto g = ce::philox_words(42, 7, 3, 1, ce::Stream::arrivals, 1);
  EXPECT_EQ(s.next_word(), g.w[0]);
}

namespace {

struct Moments {
  double mean, var;
};

Moments arrival_moments(const ce::SourceParams& p, ce::UtilityDist dist, int samples) {
  double s = 0, s2 = 0;
  for (int k = 0; k < samples; ++k) {
    const double u = ce::sample_arrivals(p, dist, 99, uint32_t(k % 97), 5, uint32_t(k / 97));
    s += u, s2 += u * u;
  }
  const double mean = s / samples;
  return {mean, s2 / samples - mean * mean};
}

}  // namespace

// U is compound Poisson: E[U] = lambda T E[xi] (1 - alpha)/(mu T) = u and
// Var[U] = lambda T E[xi^2] (1 - alpha^2) / (2 mu T), with E[xi^2] = xi^2 (deterministic) or 2 xi^2
// (exponential). Both are checked within 5 standard errors (fixed seed: the test is deterministic).
TEST(Rng, EpochArrivalsHaveTheModelsMeanAndVariance) {
  for (auto dist : {ce::UtilityDist::deterministic, ce::UtilityDist::exponential}) {
    for (double lambda : {0.3, 4.0, 250.0}) {
      const ce::SourceParams p = ce::derive_params(lambda, 0.7, 0.35, 1.0, 1.0);
      const int samples = lambda > 100 ? 40000 : 200000;
      const Moments m = arrival_moments(p, dist, samples);
      const double exi2 = (dist == ce::UtilityDist::exponential ? 2.0 : 1.0) * p.xi * p.xi;
      const double var = p.lambda_t * exi2 * (1 - p.alpha * p.alpha) / (2 * p.mu_t);
      SCOPED_TRACE("lambda " + std::to_string(lambda) + " dist " + ce::to_string(dist));
      EXPECT_NEAR(m.mean, ce::drift(p), 5 * std::sqrt(var / samples));
      EXPECT_NEAR(m.var, var, 0.05 * var);
    }
  }
}

TEST(Rng, NoArrivalsWithoutRateOrUtility) {
  EXPECT_EQ(ce::sample_arrivals(ce::derive_params(0.0, 1.0, 1.0, 1.0, 1.0),
                                ce::UtilityDist::exponential, 1, 0, 0, 0),
            0.0);
  EXPECT_EQ(ce::sample_arrivals(ce::derive_params(5.0, 0.0, 1.0, 1.0, 1.0),
                                ce::UtilityDist::exponential, 1, 0, 0, 0),
            0.0);
}
