// The model and the Whittle index: paper values, hand-checked values, and the numerics the index
// must survive (grid points, u*, above u*, u = 0, tiny and huge mu T).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "crawleval/io/io.hpp"
#include "crawleval/model/model.hpp"

namespace ce = crawleval;

namespace {

ce::SourceParams paper_source(int k) {  // k = 1..4 as in Table 1
  const double xi[] = {1.0, 0.7, 0.2, 0.08}, mu[] = {0.7, 0.35, 0.7, 0.21};
  return ce::derive_params(250.0, xi[k - 1], mu[k - 1], 1.0, 1.0);
}

// Theorem 1 written out literally, with logarithms in base alpha and pow(): an independent check.
double theorem1_literal(double x, double lambda, double xi, double mu, double cost, double T) {
  const double alpha = std::exp(-mu * T);
  const double u = lambda * xi / mu * (1 - alpha);
  const double arg = (u - (1 - alpha) * x) / u;
  const double eta = arg > 0 ? std::ceil(std::log(arg) / std::log(alpha)) : 0.0;
  return (eta * ((1 - alpha) * x - u) + (1 - std::pow(alpha, eta)) / (1 - alpha) * u) / cost;
}

// The subsidy at which crawling with period k and with period k+1 give the same average reward:
//   [C l (k-1) + (1-alpha^k) u*] / k = [C l k + (1-alpha^(k+1)) u*] / (k+1)   (eq. 17).
// Found by bisection, without using the closed form: this is what gamma(x_k) means.
double indifference_subsidy(const ce::SourceParams& p, int k) {
  const double cost = 1.0 / p.inv_cost;
  auto avg = [&](double l, int period) {
    return (cost * l * (period - 1) + (1 - std::pow(p.alpha, period)) * p.u_star) / period;
  };
  double lo = 0.0, hi = 10.0 * p.u_star / cost + 1.0;
  for (int it = 0; it < 200; ++it) {
    const double mid = 0.5 * (lo + hi);
    // Larger subsidy favours waiting (the longer period).
    if (avg(mid, k + 1) > avg(mid, k))
      hi = mid;
    else
      lo = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace

TEST(Model, PaperExampleDerivedQuantities) {
  const ce::SourceParams p1 = paper_source(1);
  EXPECT_NEAR(ce::drift(p1), 179.79, 0.005);  // u_1 = 179.79 (Table 1, T = 1)
  EXPECT_NEAR(p1.u_star, 250.0 / 0.7, 1e-12);
  EXPECT_NEAR(p1.alpha, std::exp(-0.7), 1e-15);
  EXPECT_NEAR(ce::drift(paper_source(2)), 147.655955, 1e-6);
  EXPECT_NEAR(ce::drift(paper_source(3)), 35.958193, 1e-6);
  EXPECT_NEAR(ce::drift(paper_source(4)), 18.039596, 1e-6);
}

TEST(Model, SmallMuTKeepsItsDigits) {
  // 1 - exp(-1e-12) computed naively loses ~4 digits; expm1 keeps them all.
  const ce::SourceParams p = ce::derive_params(2.0, 3.0, 1e-12, 1.0, 1.0);
  EXPECT_NEAR(p.om_alpha, 1e-12 - 0.5e-24, 1e-27);
  EXPECT_NEAR(ce::drift(p), 6.0, 1e-9);  // u -> lambda xi T as mu T -> 0
}

TEST(Model, Transitions) {
  const ce::SourceParams p = paper_source(1);
  const double u = ce::drift(p);
  EXPECT_DOUBLE_EQ(ce::passive_next(0.0, u, p), u);
  EXPECT_DOUBLE_EQ(ce::passive_next(u, u, p), p.alpha * u + u);
  // Never crawled, the state rises to u*.
  double x = 0.0;
  for (int t = 0; t < 200; ++t) x = ce::passive_next(x, u, p);
  EXPECT_NEAR(x, p.u_star, 1e-9 * p.u_star);
}

TEST(WhittleIndex, HandCheckedValues) {
  // gamma(u) = (1 - alpha) u / C and gamma at the grid points x_k = (1 - alpha^k) u*.
  const ce::SourceParams p1 = paper_source(1), p2 = paper_source(2);
  EXPECT_NEAR(ce::whittle_index(ce::drift(p1), p1), 90.509412985, 1e-7);
  EXPECT_NEAR(ce::whittle_index(p1.u_star * (1 - p1.alpha * p1.alpha), p1), 180.400701672, 1e-7);
  EXPECT_NEAR(ce::whittle_index(ce::drift(p2), p2), 43.604562177, 1e-7);
  EXPECT_NEAR(ce::whittle_index(p2.u_star * (1 - p2.alpha * p2.alpha), p2), 105.059793424, 1e-7);
  EXPECT_EQ(ce::whittle_index(0.0, p1), 0.0);
  // Cost divides the index.
  const ce::SourceParams p1c = ce::derive_params(250.0, 1.0, 0.7, 4.0, 1.0);
  EXPECT_NEAR(ce::whittle_index(ce::drift(p1c), p1c), 90.509412985 / 4, 1e-7);
}

TEST(WhittleIndex, FastDecayKeepsTheNeighbourExact) {
  // Found by fuzz_csv (lambda 1224, xi 1, mu 35): with alpha = exp(-35) = 6.3e-16 the k - 1
  // neighbour's 1 - alpha^(k-1), taken from 1 - alpha^k by a subtraction divided by alpha, was
  // noise, and the reference scored gamma(u) = 36.95 where (1 - alpha) u = 34.97. gamma(u) is
  // (1 - alpha) u / C for every mu T, and gamma at the grid points x_k is the line L_k.
  for (double mu : {6.0, 7.0, 20.0, 35.0, 300.0, 800.0}) {
    const ce::SourceParams p = ce::derive_params(1224.0, 1.0, mu, 2.0, 1.0);
    const double u = ce::drift(p);
    EXPECT_DOUBLE_EQ(ce::whittle_index(u, p), p.om_alpha * u / 2.0) << "mu " << mu;
    for (double k : {2.0, 3.0}) {
      const double om_k = -std::expm1(-p.mu_t * k);
      const double x = p.u_star * om_k;
      if (!(x < p.u_star)) continue;  // alpha^k below the rounding of u*
      EXPECT_NEAR(ce::whittle_index(x, p),
                  (p.u_star * om_k - k * p.om_alpha * (p.u_star - x)) / 2.0, 1e-12 * p.u_star)
          << "mu " << mu << " k " << k;
    }
  }
}

TEST(WhittleIndex, EqualsIndifferenceSubsidyAtGridPoints) {
  for (int s = 1; s <= 4; ++s) {
    const ce::SourceParams p = paper_source(s);
    for (int k = 1; k <= 12; ++k) {
      SCOPED_TRACE("source " + std::to_string(s) + " age " + std::to_string(k));
      const double xk = p.u_star * (1 - std::pow(p.alpha, k));
      EXPECT_NEAR(ce::whittle_index(xk, p), indifference_subsidy(p, k), 1e-9 * p.u_star);
    }
  }
}

TEST(WhittleIndex, MatchesTheoremOneOffTheGrid) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  for (int trial = 0; trial < 2000; ++trial) {
    const double lambda = 0.1 + 100 * U(rng), xi = 0.05 + 3 * U(rng), mu = 0.02 + 2 * U(rng);
    const double cost = 0.5 + 2 * U(rng), T = 0.5 + U(rng);
    const ce::SourceParams p = ce::derive_params(lambda, xi, mu, cost, T);
    const double x = p.u_star * U(rng) * 0.999;
    SCOPED_TRACE(trial);
    EXPECT_NEAR(ce::whittle_index(x, p), theorem1_literal(x, lambda, xi, mu, cost, T),
                1e-9 * p.u_star / cost);
  }
}

TEST(WhittleIndex, MonotoneAndContinuousOnAFineGrid) {
  for (int s = 1; s <= 4; ++s) {
    const ce::SourceParams p = paper_source(s);
    const double hi = 1.5 * p.u_star;
    double prev = ce::whittle_index(0.0, p);
    const int steps = 200000;
    double max_jump = 0.0;
    for (int j = 1; j <= steps; ++j) {
      const double x = hi * j / steps;
      const double g = ce::whittle_index(x, p);
      ASSERT_TRUE(std::isfinite(g));
      ASSERT_GE(g, prev - 1e-12 * p.u_star) << "source " << s << " x " << x;
      max_jump = std::max(max_jump, g - prev);
      prev = g;
    }
    // Continuity: no step of the fine grid jumps by more than (slope bound) x (step). Near u* the
    // slope eta (1 - alpha) grows like log(1/y); 1% of u* per step is a generous bound.
    EXPECT_LT(max_jump, 0.01 * p.u_star) << "source " << s;
  }
}

TEST(WhittleIndex, ContinuousAtGridPoints) {
  for (int s = 1; s <= 4; ++s) {
    const ce::SourceParams p = paper_source(s);
    for (int k = 1; k <= 30; ++k) {
      const double xk = p.u_star * (1 - std::pow(p.alpha, k));
      const double left = ce::whittle_index(xk * (1 - 1e-13), p);
      const double at = ce::whittle_index(xk, p);
      const double right = ce::whittle_index(xk * (1 + 1e-13), p);
      EXPECT_NEAR(left, at, 1e-9 * p.u_star) << "source " << s << " k " << k;
      EXPECT_NEAR(right, at, 1e-9 * p.u_star) << "source " << s << " k " << k;
    }
  }
}

TEST(WhittleIndex, TendsToUStarOverCostAtUStar) {
  const ce::SourceParams p = ce::derive_params(250.0, 0.7, 0.35, 2.0, 1.0);
  const double target = p.u_star * p.inv_cost;
  EXPECT_DOUBLE_EQ(ce::whittle_index(p.u_star, p), target);
  for (double eps : {1e-2, 1e-4, 1e-6, 1e-9, 1e-12, 1e-15}) {
    const double g = ce::whittle_index(p.u_star * (1 - eps), p);
    EXPECT_LE(g, target * (1 + 1e-14)) << eps;
    // gamma(u*) - gamma(x) ~ u* y log(1/y): shrinks with eps.
    EXPECT_NEAR(g, target, 50 * eps * std::log(1 / eps) * target + 1e-12 * target) << eps;
  }
}

TEST(WhittleIndex, ExtensionAboveUStarIsContinuousAndIncreasing) {
  const ce::SourceParams p = paper_source(4);
  EXPECT_DOUBLE_EQ(ce::whittle_index(p.u_star * 1.5, p), p.u_star * 1.5);
  EXPECT_DOUBLE_EQ(ce::whittle_index(p.u_star * 1e6, p), p.u_star * 1e6);
  EXPECT_NEAR(ce::whittle_index(p.u_star * (1 + 1e-12), p), p.u_star, 1e-9);
  EXPECT_LT(ce::whittle_index(p.u_star * 1.1, p), ce::whittle_index(p.u_star * 1.2, p));
}

TEST(WhittleIndex, ZeroDriftSource) {
  // lambda = 0 or xi = 0: u = u* = 0; the state only decays and the index is x / C.
  for (const ce::SourceParams& p :
       {ce::derive_params(0.0, 1.0, 0.5, 2.0, 1.0), ce::derive_params(3.0, 0.0, 0.5, 2.0, 1.0)}) {
    EXPECT_EQ(ce::drift(p), 0.0);
    EXPECT_EQ(ce::whittle_index(0.0, p), 0.0);
    EXPECT_DOUBLE_EQ(ce::whittle_index(4.0, p), 2.0);
  }
}

TEST(WhittleIndex, TinyAndHugeMuT) {
  // mu T = 1e-10: alpha = 1 - 1e-10, eta reaches ~1e11 near u*.
  const ce::SourceParams slow = ce::derive_params(1.0, 1.0, 1e-10, 1.0, 1.0);
  double prev = 0.0;
  for (double f : {1e-12, 1e-9, 1e-6, 0.1, 0.5, 0.9, 0.999999, 1 - 1e-12}) {
    const double g = ce::whittle_index(f * slow.u_star, slow);
    ASSERT_TRUE(std::isfinite(g)) << f;
    EXPECT_GE(g, 0.0) << f;
    EXPECT_GE(g, prev * (1 - 1e-9)) << f;
    EXPECT_LE(g, slow.u_star * (1 + 1e-12)) << f;
    prev = g;
  }
  // gamma(u) = (1 - alpha) u. The formula subtracts quantities of size u* (1 - alpha) ~ u to get
  // a value of size (1 - alpha) u, so its relative accuracy is about 1e-16 / (mu T): 1e-6 here.
  EXPECT_NEAR(ce::whittle_index(ce::drift(slow), slow), slow.om_alpha * ce::drift(slow),
              1e-5 * slow.om_alpha * ce::drift(slow));
  // mu T = 50 and 800 (alpha underflows to 0): the state is u after one epoch; gamma(x) = x / C.
  for (double mu : {50.0, 800.0}) {
    const ce::SourceParams fast = ce::derive_params(2.0, 3.0, mu, 1.0, 1.0);
    for (double f : {0.0, 0.3, 0.999, 1.0, 2.0}) {
      const double x = f * fast.u_star;
      EXPECT_NEAR(ce::whittle_index(x, fast), x, 1e-12 * fast.u_star + 1e-300) << mu << " " << f;
    }
  }
}

TEST(WhittleIndex, NeverNaNForValidParameters) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  auto log_uniform = [&](double lo, double hi) { return lo * std::pow(hi / lo, U(rng)); };
  for (int trial = 0; trial < 200000; ++trial) {
    const double lambda = trial % 17 == 0 ? 0.0 : log_uniform(1e-6, 1e6);
    const double xi = trial % 19 == 0 ? 0.0 : log_uniform(1e-6, 1e6);
    const double mu = log_uniform(1e-9, 1e4), cost = log_uniform(1e-3, 1e3);
    const ce::SourceParams p = ce::derive_params(lambda, xi, mu, cost, log_uniform(1e-3, 1e2));
    const double x = trial % 5 == 0 ? 0.0 : U(rng) * 2.0 * (p.u_star > 0 ? p.u_star : 1.0);
    const double g = ce::whittle_index(x, p);
    ASSERT_TRUE(std::isfinite(g)) << "lambda " << lambda << " xi " << xi << " mu " << mu << " x "
                                  << x;
    ASSERT_GE(g, 0.0);
  }
}

TEST(GridTracker, FollowsTheGeneralIndexAlongTrajectories) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  for (int trial = 0; trial < 200; ++trial) {
    const ce::SourceParams p =
        ce::derive_params(1 + 50 * U(rng), 0.1 + U(rng), 0.05 + 1.5 * U(rng), 0.5 + U(rng), 1.0);
    // Start anywhere, including off the grid and above u*.
    double x = trial % 3 == 0 ? 0.0 : U(rng) * 1.3 * p.u_star;
    uint32_t eta;
    double a;  // 1 - alpha^eta
    ce::GridTracker::init(x, p, &eta, &a);
    for (int t = 0; t < 300; ++t) {
      const double tracked = ce::GridTracker::index(x, eta, a, p);
      const double general = ce::whittle_index(x, p);
      ASSERT_NEAR(tracked, general, 1e-10 * p.u_star * p.inv_cost)
          << "trial " << trial << " t " << t;
      if (U(rng) < 0.2) {
        x = ce::drift(p);
        ce::GridTracker::crawled(p, &eta, &a);
      } else {
        x = ce::passive_next(x, ce::drift(p), p);
        ce::GridTracker::passive(p, &eta, &a);
      }
    }
  }
}

TEST(Model, PaperExamplePopulation) {
  const ce::Population pop = ce::paper_example();
  ASSERT_EQ(pop.size(), 4u);
  EXPECT_TRUE(pop.unit_costs());
  EXPECT_EQ(pop.id[0], 1u);
  EXPECT_EQ(pop.lambda[3], 250.0);
  EXPECT_EQ(pop.xi[3], 0.08);
  EXPECT_EQ(pop.mu[3], 0.21);
}

TEST(AgeState, TracksTheIteratedDeterministicState) {
  // The GPU's one-word state against the literal recursion X' = alpha X + u / X' = u.
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  for (int trial = 0; trial < 300; ++trial) {
    const ce::SourceParams p =
        ce::derive_params(1 + 50 * U(rng), 0.1 + U(rng), 0.02 + 1.5 * U(rng), 0.5 + U(rng), 1.0);
    const int start = trial % 4;  // empty, fresh, full, given
    double x0 = start == 0   ? 0.0
                : start == 1 ? ce::drift(p)
                : start == 2 ? p.u_star
                             : 1.5 * U(rng) * p.u_star;
    uint32_t w = start == 0 ? 0u : start == 1 ? 1u : ce::AgeState::kOffGrid;
    double x = x0;
    for (uint32_t t = 0; t < 200; ++t) {
      double om;
      const double v = ce::AgeState::value(w, t, x0, p, &om);
      ASSERT_NEAR(v, x, 1e-12 * p.u_star + 1e-12 * x) << "trial " << trial << " t " << t;
      ASSERT_NEAR(ce::AgeState::index(w, v, om, p), ce::whittle_index(x, p),
                  1e-10 * p.u_star * p.inv_cost)
          << "trial " << trial << " t " << t;
      const bool crawl = U(rng) < 0.15;
      w = ce::AgeState::next(w, crawl);
      x = crawl ? ce::drift(p) : ce::passive_next(x, ce::drift(p), p);
    }
  }
}

TEST(Model, GpuExpm1IsWithinTwoUlpsOfALongDoubleExpm1) {
  // The GPU's expm1 (fp.hpp, expm1_fast: the same IEEE operations on the host) against a
  // long-double expm1: the model's arguments -mu T k <= 0 within 1.2 ulp, positive ones within
  // 1.7, and the special values.
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  double worst_neg = 0.0, worst_pos = 0.0;
  for (int n = 0; n < 2000000; ++n) {
    double x;
    switch (n % 4) {
      case 0:
        x = -40.0 * U(rng);
        break;
      case 1:
        x = -std::exp(-700.0 + 704.0 * U(rng));
        break;
      case 2:
        x = -U(rng);
        break;
      default:
        x = (2.0 * U(rng) - 1.0) * (n % 8 == 3 ? 1e-3 : 709.7);
        break;
    }
    const long double ref = expm1l(static_cast<long double>(x));
    const double r = static_cast<double>(ref);
    const double ulp = std::nextafter(std::fabs(r), INFINITY) - std::fabs(r);
    const double err =
        static_cast<double>(std::fabs(static_cast<long double>(ce::expm1_fast(x)) - ref)) / ulp;
    (x <= 0.0 ? worst_neg : worst_pos) = std::max(x <= 0.0 ? worst_neg : worst_pos, err);
  }
  EXPECT_LE(worst_neg, 1.2);
  EXPECT_LE(worst_pos, 1.7);
  EXPECT_EQ(ce::expm1_fast(0.0), 0.0);
  EXPECT_EQ(ce::expm1_fast(-38.5), -1.0);
  EXPECT_EQ(ce::expm1_fast(-std::numeric_limits<double>::infinity()), -1.0);
  EXPECT_EQ(ce::expm1_fast(-4.9406564584124654e-324), -4.9406564584124654e-324);
  EXPECT_EQ(ce::expm1_fast(709.78), std::expm1(709.78));
  EXPECT_EQ(ce::expm1_fast(709.8), std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(ce::expm1_fast(std::nan(""))));
}
