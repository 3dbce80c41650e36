// The utility laws of the stochastic model (rng.hpp, UtilityDist): each law's draws against its
// closed-form distribution (Kolmogorov-Smirnov distance, moments), the epoch arrivals' mean and
// variance and the transition's expectation against the compound-Poisson closed forms, the words
// each law reads (the contract, re-derived here from the raw Philox words), the settings and
// table files that are refused, and every CPU engine running each law alike.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <vector>

#include "crawleval/base/error.hpp"
#include "crawleval/engine/rollout.hpp"
#include "crawleval/evaluate/driver.hpp"
#include "crawleval/io/io.hpp"
#include "crawleval/model/policy.hpp"
#include "crawleval/model/problem.hpp"
#include "crawleval/model/rng.hpp"
#include "test_util.hpp"

namespace ce = crawleval;

namespace {

/// Z = xi_n / xi drawn `n` times, one DrawStream per sample (keyed by the sample's number).
std::vector<double> item_draws(const ce::UtilityDist& d, int n, uint64_t seed = 5) {
  std::vector<double> z(static_cast<std::size_t>(n));
  for (int k = 0; k < n; ++k) {
    ce::DrawStream s(seed, uint32_t(k), 3, 1, ce::Stream::arrivals);
    z[std::size_t(k)] = ce::draw_item_utility(d, 1.0, s);
  }
  return z;
}

/// sup |F_n - F| of the sample against the closed-form CDF.
double ks_distance(std::vector<double> z, const std::function<double(double)>& cdf) {
  std::sort(z.begin(), z.end());
  const double n = double(z.size());
  double d = 0.0;
  for (std::size_t i = 0; i < z.size(); ++i) {
    const double f = cdf(z[i]);
    d = std::max({d, std::fabs(f - double(i) / n), std::fabs(double(i + 1) / n - f)});
  }
  return d;
}

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

/// The regularised lower incomplete gamma P(k, x) by its power series, summed in long double (an
/// independent check of the gamma sampler; x here stays below 60).
double gamma_cdf(double k, double x) {
  if (x <= 0) return 0.0;
  long double term = 1.0L / k, sum = term;
  for (int n = 1; n < 2000; ++n) {
    term *= (long double)x / (k + n);
    sum += term;
    if (term < sum * 1e-19L) break;
  }
  return double(sum * std::exp((long double)(k * std::log(x) - x - std::lgamma(k))));
}

struct Case {
  const char* name;
  ce::UtilityDist law;
  std::function<double(double)> cdf;  ///< of Z (mean 1)
};

std::vector<Case> cases() {
  std::vector<Case> c;
  c.push_back({"exponential", ce::UtilityDist::exponential,
               [](double z) { return z <= 0 ? 0.0 : -std::expm1(-z); }});
  for (double s : {0.3, 1.0, 2.5, 5.0})
    c.push_back({"lognormal", ce::UtilityDist::of(ce::UtilityLaw::lognormal, s), [s](double z) {
                   return z <= 0 ? 0.0 : normal_cdf((std::log(z) + s * s / 2) / s);
                 }});
  for (double a : {1.5, 2.5, 20.0})
    c.push_back({"pareto", ce::UtilityDist::of(ce::UtilityLaw::pareto, a), [a](double z) {
                   const double zm = (a - 1) / a;
                   return z <= zm ? 0.0 : 1.0 - std::pow(zm / z, a);
                 }});
  for (double k : {0.01, 0.3, 1.0, 2.5, 40.0})
    c.push_back({"gamma", ce::UtilityDist::of(ce::UtilityLaw::gamma, k),
                 [k](double z) { return gamma_cdf(k, k * z); }});
  return c;
}

}  // namespace

// Each law's items follow its distribution: the Kolmogorov-Smirnov distance of 40000 draws from
// the closed-form CDF stays below 1.95 / sqrt(n) (the 0.1% critical value; the seed is fixed, so
// the test is deterministic and a broken sampler, off by a few percent anywhere, fails it).
TEST(UtilityLaw, ItemsFollowTheirClosedFormDistribution) {
  const int n = 40000;
  for (const Case& c : cases()) {
    SCOPED_TRACE(ce::to_string(c.law));
    const std::vector<double> z = item_draws(c.law, n);
    EXPECT_LT(ks_distance(z, c.cdf), 1.95 / std::sqrt(double(n)));
    for (double v : z) ASSERT_TRUE(std::isfinite(v) && v >= 0.0);
  }
}

// E[Z] = 1 for every law (the source's mean is its xi), and E[Z^2] as utility_second_moment says,
// where the fourth moment is finite (so that the sample's second moment has a standard error).
TEST(UtilityLaw, ItemMomentsMatchTheClosedForms) {
  const int n = 200000;
  for (const Case& c : cases()) {
    SCOPED_TRACE(ce::to_string(c.law));
    const std::vector<double> z = item_draws(c.law, n, 11);
    double s1 = 0, s2 = 0, s4 = 0;
    for (double v : z) s1 += v, s2 += v * v, s4 += v * v * v * v;
    const double m1 = s1 / n, m2 = s2 / n, m4 = s4 / n;
    const double want2 = ce::utility_second_moment(c.law);
    const bool heavy = (c.law.law == ce::UtilityLaw::pareto && c.law.shape <= 4.0) ||
                       (c.law.law == ce::UtilityLaw::lognormal && c.law.shape > 1.5);
    if (heavy) {
      // Var(Z) = E[Z^2] - 1 is large or infinite: the sample mean is checked against the median
      // instead (both laws have closed-form medians), and the mean loosely.
      std::vector<double> sorted = z;
      std::nth_element(sorted.begin(), sorted.begin() + n / 2, sorted.end());
      const double median = sorted[std::size_t(n / 2)];
      const double want_median =
          c.law.law == ce::UtilityLaw::pareto
              ? (c.law.shape - 1) / c.law.shape * std::pow(2.0, 1.0 / c.law.shape)
              : std::exp(-c.law.shape * c.law.shape / 2);
      EXPECT_NEAR(median, want_median, 0.02 * want_median);
      if (c.law.law == ce::UtilityLaw::pareto && c.law.shape > 2)
        EXPECT_NEAR(m1, 1.0, 5 * std::sqrt((want2 - 1) / n));
      continue;
    }
    EXPECT_NEAR(m1, 1.0, 5 * std::sqrt((want2 - 1) / n));
    EXPECT_NEAR(m2, want2, 5 * std::sqrt((m4 - m2 * m2) / n));
  }
  // The third moment separates gamma shapes that share the first two's tolerance.
  for (double k : {0.3, 2.5}) {
    const std::vector<double> z = item_draws(ce::UtilityDist::of(ce::UtilityLaw::gamma, k), n, 13);
    double s3 = 0, s6 = 0;
    for (double v : z) s3 += v * v * v, s6 += v * v * v * v * v * v;
    const double m3 = s3 / n, want3 = (k + 1) * (k + 2) / (k * k);
    EXPECT_NEAR(m3, want3, 5 * std::sqrt((s6 / n - m3 * m3) / n)) << "k " << k;
  }
}

// Extreme shapes: the mean stays 1 where the law's variance allows a check, and every draw is
// finite. sigma = 1e-300 is the deterministic law in all but name; gamma k = 1e6 too.
TEST(UtilityLaw, ExtremeShapesKeepTheMean) {
  const int n = 20000;
  for (double v : item_draws(ce::UtilityDist::of(ce::UtilityLaw::lognormal, 1e-300), 100))
    EXPECT_EQ(v, 1.0);
  const std::vector<double> g = item_draws(ce::UtilityDist::of(ce::UtilityLaw::gamma, 1e6), n);
  double s = 0;
  for (double v : g) {
    s += v;
    ASSERT_NEAR(v, 1.0, 0.01);  // standard deviation 1/sqrt(k) = 1e-3
  }
  EXPECT_NEAR(s / n, 1.0, 5 * 1e-3 / std::sqrt(double(n)));
  const std::vector<double> p = item_draws(ce::UtilityDist::of(ce::UtilityLaw::pareto, 1e6), 100);
  for (double v : p) EXPECT_NEAR(v, 1.0, 1e-4);
}

// The words each law reads (rng.hpp's contract), recomputed here from the raw Philox words: a
// change of the order or number of words fails this test, not only a change of the law.
TEST(UtilityLaw, DrawsReadTheDocumentedWords) {
  std::vector<uint32_t> words;
  for (uint32_t b = 0; b < 16; ++b) {
    const ce::Words4 w = ce::philox_words(77, 9, 4, 2, ce::Stream::arrivals, b);
    words.insert(words.end(), w.w, w.w + 4);
  }
  auto u52 = [](uint32_t hi, uint32_t lo) {
    return (double((uint64_t(hi) << 20) | (lo >> 12)) + 0.5) / 4503599627370496.0;
  };
  auto stream = [] { return ce::DrawStream(77, 9, 4, 2, ce::Stream::arrivals); };
  // Exponential: one word, Z = -log U.
  {
    ce::DrawStream s = stream();
    EXPECT_EQ(ce::draw_item_utility(ce::UtilityDist::exponential, 2.0, s),
              -2.0 * std::log(ce::uniform(words[0])));
    EXPECT_EQ(s.next_word(), words[1]);
  }
  // Lognormal: the polar method over (hi, lo) pairs, four words per attempt.
  {
    std::size_t k = 0;
    double n = 0;
    for (;;) {
      const double v1 = 2 * u52(words[k], words[k + 1]) - 1,
                   v2 = 2 * u52(words[k + 2], words[k + 3]) - 1;
      k += 4;
      const double s = v1 * v1 + v2 * v2;
      if (s < 1) {
        n = v1 * std::sqrt(-2 * std::log(s) / s);
        break;
      }
    }
    ce::DrawStream s = stream();
    const double sigma = 1.5;
    const ce::UtilityDist law = ce::UtilityDist::of(ce::UtilityLaw::lognormal, sigma);
    EXPECT_EQ(ce::draw_item_utility(law, 1.0, s), std::exp(sigma * n - 0.5 * (sigma * sigma)));
    EXPECT_EQ(s.next_word(), words[k]);
  }
  // Pareto: two words, hi then lo.
  {
    ce::DrawStream s = stream();
    const double a = 2.5;
    const double v =
        double(words[0]) / 4294967296.0 + (double(words[1]) + 0.5) / 18446744073709551616.0;
    const ce::UtilityDist law = ce::UtilityDist::of(ce::UtilityLaw::pareto, a);
    EXPECT_EQ(ce::draw_item_utility(law, 1.0, s), (a - 1) / a * std::exp(-std::log(v) / a));
    EXPECT_EQ(s.next_word(), words[2]);
  }
  // Empirical: one word, the first atom whose cumulative probability reaches it.
  {
    const double table[6] = {0.25, 0.75, 1.0, 0.5, 1.0, 1.5};
    ce::UtilityDist d = ce::UtilityDist::of(ce::UtilityLaw::empirical);
    d.atoms = 3, d.table = table;
    for (int k = 0; k < 8; ++k) {
      ce::DrawStream s(77, 9, 4, 2, ce::Stream::arrivals);
      for (int j = 0; j < k; ++j) s.next_word();
      const double u = ce::uniform(words[std::size_t(k)]);
      const double want = u <= 0.25 ? 0.5 : u <= 0.75 ? 1.0 : 1.5;
      EXPECT_EQ(ce::draw_item_utility(d, 1.0, s), want);
    }
  }
}

// The epoch's arrivals U are compound Poisson: E[U] = u and Var[U] = lambda T E[xi_n^2] (1 -
// alpha^2) / (2 mu T) with E[xi_n^2] = xi^2 E[Z^2], for every law; and the passive transition's
// expectation E[X'] = alpha x + u (crawled: u), through general_transition, the function every
// engine runs.
TEST(UtilityLaw, ArrivalsAndTransitionMatchTheCompoundPoissonClosedForms) {
  for (const Case& c : cases()) {
    if (c.law.law == ce::UtilityLaw::pareto && c.law.shape < 4) continue;  // below: no variance
    if (c.law.law == ce::UtilityLaw::lognormal && c.law.shape > 2) continue;
    for (double lambda : {0.4, 6.0}) {
      const ce::SourceParams p = ce::derive_params(lambda, 0.7, 0.35, 1.0, 1.0);
      const int samples = 60000;
      double s = 0, s2 = 0, sx = 0;
      const double x0 = 3.0;
      for (int k = 0; k < samples; ++k) {
        const double u = ce::sample_arrivals(p, c.law, 99, uint32_t(k % 89), 5, uint32_t(k / 89));
        s += u, s2 += u * u;
        double x = x0;
        uint32_t w = 7;
        ce::general_transition(&x, &w, false, uint32_t(k / 89), false, c.law, 99, uint32_t(k % 89),
                               5, p);
        EXPECT_EQ(x, p.alpha * x0 + u);  // same draws: the transition adds this U
        sx += x;
      }
      const double mean = s / samples, var = s2 / samples - mean * mean;
      const double want_var = p.lambda_t * p.xi * p.xi * ce::utility_second_moment(c.law) *
                              (1 - p.alpha * p.alpha) / (2 * p.mu_t);
      SCOPED_TRACE(ce::to_string(c.law) + " lambda " + std::to_string(lambda));
      EXPECT_NEAR(mean, ce::drift(p), 5 * std::sqrt(want_var / samples));
      EXPECT_NEAR(var, want_var, 0.08 * want_var);
      EXPECT_NEAR(sx / samples, p.alpha * x0 + ce::drift(p), 5 * std::sqrt(want_var / samples));
    }
  }
}

// The settings and table files that are refused, with what the message names.
TEST(UtilityLaw, BadSettingsAndTablesAreRefusedWithTheReason) {
  auto message = [](const std::string& text) {
    ce::RunConfig cfg;
    try {
      ce::set_utility(cfg, text);
    } catch (const ce::InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message("lognormal").find("needs its sigma"), std::string::npos);
  EXPECT_NE(message("lognormal:0").find("(0, 5]"), std::string::npos);
  EXPECT_NE(message("lognormal:5.01").find("(0, 5]"), std::string::npos);
  EXPECT_NE(message("lognormal:nan").find("(0, 5]"), std::string::npos);
  EXPECT_NE(message("lognormal:2x").find("not a number"), std::string::npos);
  EXPECT_NE(message("pareto:1.2").find("[1.5, 1e6]"), std::string::npos);
  EXPECT_NE(message("gamma:0.001").find("[0.01, 1e6]"), std::string::npos);
  EXPECT_NE(message("exponential:2").find("takes no parameter"), std::string::npos);
  EXPECT_NE(message("weibull:2").find("is not one of"), std::string::npos);
  EXPECT_NE(message("empirical").find("needs its table"), std::string::npos);
  EXPECT_NE(message("empirical:/nonexistent/t.csv").find("cannot open"), std::string::npos);
  EXPECT_EQ(message("pareto:1.5"), "");
  EXPECT_EQ(message("gamma:1e6"), "");

  const std::string path = ::testing::TempDir() + "utility_table.csv";
  auto table = [&](const std::string& body) {
    std::ofstream(path) << body;
    return message("empirical:" + path);
  };
  EXPECT_NE(table("value,probability\n1,0.5\n-2,0.5\n").find(":3: field 'value' must be >= 0"),
            std::string::npos);
  EXPECT_NE(table("value,probability\n1,nan\n").find(":2: field 'probability'"), std::string::npos);
  EXPECT_NE(table("value,weight\n1,1\n").find("unknown column"), std::string::npos);
  EXPECT_NE(table("value,probability\n").find("no rows after the header"), std::string::npos);
  EXPECT_NE(table("value,probability\n0,1\n0,2\n").find("mean value is 0"), std::string::npos);
  EXPECT_NE(table("value,probability\n1,0\n").find("every probability is 0"), std::string::npos);
  EXPECT_EQ(table("Probability,Value\n# counts are normalised\n3,2\n1,6\n"), "");
  std::remove(path.c_str());
}

// A table is sorted, merged and normalised: weights 3 and 1 on values 2 and 6 (mean 3) are the
// atoms 2/3 and 2 with probabilities 3/4 and 1/4.
TEST(UtilityLaw, EmpiricalTableIsNormalisedToMeanOne) {
  const std::string path = ::testing::TempDir() + "utility_table2.csv";
  std::ofstream(path) << "value,probability\n6,0.5\n2,1\n2,0.5\n0,0\n";
  ce::RunConfig cfg;
  ce::set_utility(cfg, "empirical:" + path);
  std::remove(path.c_str());
  ASSERT_TRUE(cfg.utility_table);
  EXPECT_EQ(cfg.utility.atoms, 2u);
  EXPECT_DOUBLE_EQ(cfg.utility_table->mean, 3.0);
  EXPECT_DOUBLE_EQ(cfg.utility.table[2], 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(cfg.utility.table[3], 2.0);
  EXPECT_DOUBLE_EQ(cfg.utility.table[0], 0.75);
  EXPECT_EQ(cfg.utility.table[1], 1.0);
  EXPECT_DOUBLE_EQ(ce::utility_second_moment(cfg.utility), 0.75 * 4 / 9 + 0.25 * 4);
  EXPECT_EQ(ce::to_string(cfg.utility), "empirical");
  // The config's copies keep the table alive.
  ce::RunConfig copy = cfg;
  cfg = ce::RunConfig{};
  const std::vector<double> z = item_draws(copy.utility, 40000);
  double ones = 0;
  for (double v : z) ones += v == 2.0 / 3.0;
  EXPECT_NEAR(ones / 40000, 0.75, 5 * std::sqrt(0.75 * 0.25 / 40000));
}

// Every CPU engine runs every law alike: the reference, the CPU backend (small engine and the
// wide one) and the function engine given the Whittle index crawl the same sets and collect the
// same rewards, bit for bit (one chunk: the same additions in the same order).
TEST(UtilityLaw, EnginesAgreeOnEveryLaw) {
  const std::string path = ::testing::TempDir() + "utility_table3.csv";
  std::ofstream(path) << "value,probability\n0,0.5\n1,0.3\n10,0.2\n";
  for (const char* law : {"lognormal:2.5", "pareto:1.5", "gamma:0.2", "gamma:3", "empirical"}) {
    for (std::size_t n : {std::size_t(5), std::size_t(3000)}) {
      const ce::Population pop = ce::testing::random_population(n, 17 + n, true, false);
      ce::RunConfig cfg;
      cfg.model = ce::Model::stochastic;
      cfg.budget = double(n / 5 + 1);
      cfg.epochs = 12;
      cfg.burn_in = 1;
      cfg.replications = 2;
      cfg.threads = 2;
      ce::set_utility(cfg, std::string(law) == "empirical" ? "empirical:" + path : law);
      const ce::Problem pr = ce::make_problem(pop, cfg);
      SCOPED_TRACE(std::string(law) + " n " + std::to_string(n));
      for (ce::Policy p : {ce::Policy::whittle, ce::Policy::greedy}) {
        const auto want = ce::testing::traced(pr, p, ce::Backend::reference);
        const auto got = ce::testing::traced(pr, p, ce::Backend::cpu);
        ASSERT_EQ(got.sets, want.sets);
        ASSERT_EQ(got.rewards, want.rewards);
      }
      const ce::RolloutOutput ref = ce::rollout(pr, ce::Policy::whittle, ce::Backend::reference);
      const ce::RolloutOutput fn = ce::function_rollout(
          pr,
          [&](const ce::ScoreRequest& r) {
            for (std::size_t i = 0; i < r.n; ++i)
              r.scores[i] = ce::whittle_index(r.state[i], pr.params().at(i));
          },
          "whittle as a function");
      EXPECT_EQ(fn.replication_reward, ref.replication_reward);
    }
  }
  std::remove(path.c_str());
}
