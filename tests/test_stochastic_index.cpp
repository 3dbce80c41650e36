// The stochastic model's numerical Whittle index (stochastic_index.hpp) against independent
// computations: the arrivals' lattice law against the compound-Poisson closed forms, the index of
// lattice states against a brute force (policy iteration on the same lattice chain, bisection on
// the subsidy until crawling and waiting are equally good: the definition), the cycles of threshold
// policies against a Monte Carlo run of the continuous model with the engines' own draws, the
// deterministic model's index (Theorem 1) where the model is deterministic, and the policy's
// reward on the paper's example.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "crawleval/analysis/stochastic_index.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/evaluate/driver.hpp"
#include "crawleval/io/io.hpp"
#include "crawleval/model/policy.hpp"

namespace ce = crawleval;

namespace {

/// x + L (solve A x = b by Gaussian elimination with partial pivoting): the brute force's own
/// solver, independent of the index's LU.
std::vector<double> solve(std::vector<double> a, std::vector<double> b) {
  const std::size_t n = b.size();
  for (std::size_t k = 0; k < n; ++k) {
    std::size_t p = k;
    for (std::size_t i = k + 1; i < n; ++i)
      if (std::fabs(a[i * n + k]) > std::fabs(a[p * n + k])) p = i;
    if (p != k) {
      for (std::size_t j = 0; j < n; ++j) std::swap(a[k * n + j], a[p * n + j]);
      std::swap(b[k], b[p]);
    }
    for (std::size_t i = k + 1; i < n; ++i) {
      const double l = a[i * n + k] / a[k * n + k];
      for (std::size_t j = k; j < n; ++j) a[i * n + j] -= l * a[k * n + j];
      b[i] -= l * b[k];
    }
  }
  std::vector<double> x(n);
  for (std::size_t i = n; i-- > 0;) {
    double s = b[i];
    for (std::size_t j = i + 1; j < n; ++j) s -= a[i * n + j] * x[j];
    x[i] = s / a[i * n + i];
  }
  return x;
}

/// The single-source problem on the lattice (the model of the index's steps 1-2, rebuilt here):
/// states s_i = i h, i < G; passive X' = alpha X + U with alpha X split between its neighbours;
/// a state beyond the lattice is crawled at once (as the index's thresholds all do).
struct LatticeModel {
  std::size_t G;
  double h, alpha, u;
  std::vector<double> P, phi, rho, pi;  // rho, pi: the beyond part of each row's next state
  double rho_f, pi_f;                   // of the fresh start

  LatticeModel(double lambda_t, double mu_t, const ce::UtilityDist& law, double h_, std::size_t g)
      : G(g), h(h_), alpha(std::exp(-mu_t)) {
    const ce::ArrivalLattice U = ce::arrival_lattice(lambda_t, mu_t, law, h, G);
    u = U.mean;
    phi = U.pmf;
    rho_f = U.beyond_mean, pi_f = U.beyond_mass;
    P.assign(G * G, 0.0);
    rho.resize(G), pi.resize(G);
    for (std::size_t i = 0; i < G; ++i) {
      const double y = alpha * double(i);
      const std::size_t f = std::size_t(y);
      const double th = y - double(f);
      double mass = 0, mean = 0;
      for (std::size_t k = 0; k < G; ++k) {
        if (f + k < G) P[i * G + f + k] += (1 - th) * phi[k];
        if (f + k + 1 < G) P[i * G + f + k + 1] += th * phi[k];
      }
      for (std::size_t j = 0; j < G; ++j) mass += P[i * G + j], mean += P[i * G + j] * j * h;
      pi[i] = 1 - mass, rho[i] = alpha * i * h + u - mean;
    }
  }

  /// Policy iteration at subsidy c: the optimal relative values h (h_0 = 0), gain g and W (the
  /// value at the start of a cycle). crawl[i]: the policy.
  struct Solution {
    std::vector<double> hv;
    double g, W;
  };
  Solution evaluate(const std::vector<char>& crawl, double c) const {
    // Unknowns: h_1..h_(G-1), g, W (index G - 1 + 0 = g, G = W).
    const std::size_t n = G + 1;
    std::vector<double> A(n * n, 0.0), b(n, 0.0);
    auto H = [&](std::size_t j) { return j - 1; };  // column of h_j, j >= 1
    const std::size_t cg = G - 1, cw = G;
    for (std::size_t i = 0; i < G; ++i) {
      double* row = &A[i * n];
      if (i >= 1) row[H(i)] += 1;
      row[cg] += 1;
      if (crawl[i]) {  // h_i + g = s_i + W
        row[cw] -= 1;
        b[i] = i * h;
      } else {  // h_i + g = c + sum P h + rho - pi g + pi W
        for (std::size_t j = 1; j < G; ++j) row[H(j)] -= P[i * G + j];
        row[cg] += pi[i];
        row[cw] -= pi[i];
        b[i] = c + rho[i];
      }
    }
    double* row = &A[G * n];  // W = sum phi h + rho_f - pi_f g + pi_f W
    row[cw] += 1 - pi_f;
    for (std::size_t j = 1; j < G; ++j) row[H(j)] -= phi[j];
    row[cg] += pi_f;
    b[G] = rho_f;
    const std::vector<double> x = solve(A, b);
    Solution s;
    s.hv.assign(G, 0.0);
    for (std::size_t j = 1; j < G; ++j) s.hv[j] = x[H(j)];
    s.g = x[cg], s.W = x[cw];
    return s;
  }
  double continue_value(const Solution& s, std::size_t i, double c) const {
    double v = c + rho[i] + pi[i] * (s.W - s.g);
    for (std::size_t j = 0; j < G; ++j) v += P[i * G + j] * s.hv[j];
    return v;
  }
  Solution optimal(double c) const {
    std::vector<char> crawl(G, 1);
    for (int it = 0; it < 200; ++it) {
      const Solution s = evaluate(crawl, c);
      bool changed = false;
      for (std::size_t i = 0; i < G; ++i) {
        const double a = i * h + s.W, p = continue_value(s, i, c);
        const char want = a > p + 1e-12 * (std::fabs(a) + 1)   ? 1
                          : p > a + 1e-12 * (std::fabs(a) + 1) ? 0
                                                               : crawl[i];
        if (want != crawl[i]) crawl[i] = want, changed = true;
      }
      if (!changed) return s;
    }
    ADD_FAILURE() << "policy iteration did not converge";
    return evaluate(crawl, c);
  }
  /// The subsidy at which crawling at state m and waiting are equally good (bisection).
  double indifference(std::size_t m, double lo, double hi) const {
    for (int it = 0; it < 60; ++it) {
      const double c = 0.5 * (lo + hi);
      const Solution s = optimal(c);
      if (m * h + s.W > continue_value(s, m, c))
        lo = c;  // crawling still better: the index is above c
      else
        hi = c;
    }
    return 0.5 * (lo + hi);
  }
};

}  // namespace

// The law of U on the lattice: probabilities sum to 1, the mean is u exactly (the lattice keeps
// every mean), the variance is the compound-Poisson closed form lambda T E[Z^2] (1 - alpha^2) /
// (2 mu T) up to the lattice's own spread (at most h^2 / 4 per lattice split), and the
// probability of no arrival is at least e^(-lambda T).
TEST(StochasticIndex, ArrivalLatticeHasTheCompoundPoissonMoments) {
  for (const char* law : {"deterministic", "exponential", "gamma:0.5", "lognormal:1", "pareto:3"}) {
    ce::RunConfig cfg;
    ce::set_utility(cfg, law);
    for (double lt : {0.3, 2.5, 40.0}) {
      const double mt = 0.7, alpha = std::exp(-mt);
      const double u = lt * (1 - alpha) / mt;
      const double var =
          lt * ce::utility_second_moment(cfg.utility) * (1 - alpha * alpha) / (2 * mt);
      const double h = (u + 12 * std::sqrt(var) + 30) / 3000;
      const ce::ArrivalLattice U = ce::arrival_lattice(lt, mt, cfg.utility, h, 3000);
      double mass = 0, m1 = 0, m2 = 0;
      for (std::size_t k = 0; k < U.pmf.size(); ++k) {
        mass += U.pmf[k];
        m1 += U.pmf[k] * k * h;
        m2 += U.pmf[k] * (k * h) * (k * h);
      }
      SCOPED_TRACE(std::string(law) + " lambda T " + std::to_string(lt));
      EXPECT_NEAR(mass + U.beyond_mass, 1.0, 1e-12);
      EXPECT_NEAR(m1 + U.beyond_mean, u, 1e-12 * u);
      EXPECT_NEAR(U.mean, u, 1e-14 * u);
      const std::string name = law;
      if (name != "pareto:3" && name != "lognormal:1") {  // their tails reach beyond the lattice
        EXPECT_LT(U.beyond_mass, 1e-9);
        EXPECT_NEAR(m2 - m1 * m1, var, 0.002 * var + lt * h * h);
      }
      EXPECT_GE(U.pmf[0], std::exp(-lt) * (1 - 1e-12));
    }
  }
}

// The quantised item laws keep probability 1 and mean 1, and their second moment is the law's.
TEST(StochasticIndex, UtilityAtomsKeepTheMoments) {
  for (const char* law : {"exponential", "gamma:0.05", "gamma:7", "lognormal:2.5", "pareto:2.5"}) {
    ce::RunConfig cfg;
    ce::set_utility(cfg, law);
    const ce::LawAtoms a = ce::utility_atoms(cfg.utility);
    double p = 0, m1 = 0, m2 = 0;
    for (std::size_t j = 0; j < a.z.size(); ++j)
      p += a.p[j], m1 += a.p[j] * a.z[j], m2 += a.p[j] * a.z[j] * a.z[j];
    SCOPED_TRACE(law);
    EXPECT_NEAR(p, 1.0, 1e-14);
    EXPECT_NEAR(m1, 1.0, 1e-14);
    const double want = ce::utility_second_moment(cfg.utility);
    EXPECT_NEAR(m2, want, (std::string(law) == "pareto:2.5" ? 0.05 : 0.002) * want);
  }
  EXPECT_NEAR(ce::regularized_gamma_p(1.0, 2.0), -std::expm1(-2.0), 1e-15);
  EXPECT_NEAR(ce::regularized_gamma_p(0.5, 2.0), std::erf(std::sqrt(2.0)), 1e-14);
  EXPECT_NEAR(ce::regularized_gamma_p(3.0, 10.0), 1 - std::exp(-10.0) * (1 + 10 + 50), 1e-15);
}

// The index of lattice states equals the brute force: policy iteration on the same lattice chain
// (its own solver, no LU prefixes), and the subsidy at which crawling at s_m and waiting are
// equally good found by bisection. Rare large arrivals (the case, exponential and
// lognormal items), frequent ones, and slow decay.
TEST(StochasticIndex, IndexEqualsABruteForceOnSmallLattices) {
  struct Case {
    double lt, mt;
    const char* law;
  };
  for (const Case c : {Case{2.5, 0.7, "exponential"}, Case{2.5, 0.7, "lognormal:1.5"},
                       Case{20.0, 0.35, "deterministic"}, Case{0.4, 0.21, "gamma:0.5"}}) {
    ce::RunConfig cfg;
    ce::set_utility(cfg, c.law);
    ce::StochasticIndexOptions o;
    o.grid = 70;  // coarse: this checks the algebra on the lattice, not its fidelity
    o.require_resolution = false;
    const ce::IndexTable t = ce::stochastic_index_table(c.lt, c.mt, cfg.utility, o);
    const LatticeModel m(c.lt, c.mt, cfg.utility, t.h, o.grid);
    SCOPED_TRACE(std::string(c.law) + " lambda T " + std::to_string(c.lt));
    EXPECT_TRUE(t.indexable) << t.not_indexable;
    for (std::size_t s :
         {std::size_t(0), std::size_t(3), std::size_t(12), std::size_t(25), std::size_t(40)}) {
      const double want = m.indifference(s, -1.0, 4.0 * o.grid * t.h);
      EXPECT_NEAR(t.index[s], want, 1e-7 * (std::fabs(want) + t.u)) << "state " << s;
    }
    // The cycle values of a threshold policy solve their own linear system too.
    for (std::size_t b : {std::size_t(1), std::size_t(20), std::size_t(45)}) {
      std::vector<char> crawl(o.grid, 0);
      for (std::size_t i = b; i < o.grid; ++i) crawl[i] = 1;
      const double c0 = 0.3, c1 = 0.9;  // g(c) = c + (R - c) / T is affine in c
      const double g0 = m.evaluate(crawl, c0).g, g1 = m.evaluate(crawl, c1).g;
      const double inv_t = 1 - (g1 - g0) / (c1 - c0);
      EXPECT_NEAR(1 / inv_t, t.cycle_length[b], 1e-8 * t.cycle_length[b]) << "threshold " << b;
      EXPECT_NEAR((g0 - c0) / inv_t + c0, t.cycle_reward[b], 1e-8 * t.cycle_reward[b]);
    }
  }
}

// The cycles of threshold policies on the lattice against the continuous model simulated with the
// engines' own draws (sample_arrivals): the lattice's error is O(h), the Monte Carlo's a few
// standard errors.
TEST(StochasticIndex, ThresholdCyclesMatchTheSimulatedModel) {
  const double lt = 2.5, mt = 0.7;
  const ce::SourceParams p = ce::derive_params(lt, 1.0, mt, 1.0, 1.0);
  ce::StochasticIndexOptions o;
  o.grid = 400;
  const ce::IndexTable t = ce::stochastic_index_table(lt, mt, ce::UtilityDist::exponential, o);
  for (std::size_t b : {std::size_t(20), std::size_t(80), std::size_t(160)}) {
    const double a = double(b) * t.h;
    double len = 0, len2 = 0, rew = 0, rew2 = 0;
    const int cycles = 40000;
    uint32_t epoch = 0;
    for (int k = 0; k < cycles; ++k) {
      double x = ce::sample_arrivals(p, ce::UtilityDist::exponential, 3, 0, 1, epoch++);
      int n = 1;
      while (x < a)
        x = p.alpha * x + ce::sample_arrivals(p, ce::UtilityDist::exponential, 3, 0, 1, epoch++),
        ++n;
      len += n, len2 += double(n) * n, rew += x, rew2 += x * x;
    }
    const double ml = len / cycles, mr = rew / cycles;
    const double sl = std::sqrt((len2 / cycles - ml * ml) / cycles);
    const double sr = std::sqrt((rew2 / cycles - mr * mr) / cycles);
    SCOPED_TRACE("threshold " + std::to_string(a));
    EXPECT_NEAR(t.cycle_length[b], ml, 5 * sl + 0.01 * ml);
    EXPECT_NEAR(t.cycle_reward[b], mr, 5 * sr + 0.01 * mr);
  }
}

// Many small arrivals (U within 4.6 standard deviations of u with probability 1 - 2e-6): below u/2,
// where P(U < x) < 1e-13, both indices are (1 - alpha) x: from x, one passive epoch lands above
// any threshold x, and a fresh cycle starts above it.
TEST(StochasticIndex, ManySmallArrivalsGiveTheoremOnesIndexBelowU) {
  const double lt = 250, mt = 0.7;
  const ce::SourceParams p = ce::derive_params(lt, 1.0, mt, 1.0, 1.0);
  ce::StochasticIndexOptions o;
  o.grid = 300;
  const ce::IndexTable t = ce::stochastic_index_table(lt, mt, ce::UtilityDist::deterministic, o);
  for (double f : {0.1, 0.3, 0.5}) {
    const double x = f * ce::drift(p);
    EXPECT_NEAR(t.at(x), ce::whittle_index(x, p), 1e-9 * x) << "x " << x;
  }
}

// The paper's example with rarer, larger arrivals of the same mean (Lambda = 2.5, xi x 100): the
// numerical index policy earns at least what Theorem 1's heuristic earns (same draws, 95% CIs of
// paired replications), the gap the reproduction reports.
TEST(StochasticIndex, PolicyBeatsTheHeuristicOnRareLargeArrivals) {
  ce::Population pop = ce::paper_example();
  for (std::size_t i = 0; i < pop.size(); ++i) pop.lambda[i] /= 100, pop.xi[i] *= 100;
  ce::RunConfig cfg;
  cfg.model = ce::Model::stochastic;
  cfg.budget = 1;
  cfg.epochs = 2000;
  cfg.burn_in = 100;
  cfg.replications = 16;
  cfg.threads = 2;
  const ce::Problem pr = ce::make_problem(pop, cfg);
  ce::StochasticIndexOptions o;
  o.grid = 300;
  const ce::StochasticIndex idx = ce::compute_stochastic_index(pr, o);
  ASSERT_EQ(idx.tables.size(), 3u);  // mu = 0.7 (sources 1 and 3), 0.35, 0.21; one lambda
  EXPECT_TRUE(idx.indexable());
  const ce::RolloutOutput num = ce::function_rollout(pr, ce::stochastic_index_policy(pr, idx), "n");
  const ce::RolloutOutput heu = ce::rollout(pr, ce::Policy::whittle, ce::Backend::cpu);
  double d = 0, d2 = 0;
  const std::size_t r = num.replication_reward.size();
  for (std::size_t k = 0; k < r; ++k) {
    const double v = num.replication_reward[k] - heu.replication_reward[k];
    d += v, d2 += v * v;
  }
  const double mean = d / r, se = std::sqrt((d2 / r - mean * mean) / (r - 1));
  EXPECT_GT(mean, 2 * se) << "gain " << mean << " +- " << se;
}

TEST(StochasticIndex, RefusesWhatItDoesNotModel) {
  const ce::Population pop = ce::paper_example();
  ce::RunConfig cfg;
  cfg.budget = 1;
  EXPECT_THROW(ce::compute_stochastic_index(ce::make_problem(pop, cfg)), ce::InputError);
  cfg.model = ce::Model::stochastic;
  cfg.observe = ce::Observe::belief;
  EXPECT_THROW(ce::compute_stochastic_index(ce::make_problem(pop, cfg)), ce::InputError);
  cfg.observe = ce::Observe::full;
  const ce::Problem pr = ce::make_problem(pop, cfg);
  EXPECT_THROW(ce::compute_stochastic_index(pr, {}, 2), ce::InputError);  // 3 classes
  ce::StochasticIndexOptions o;
  o.grid = 4;
  EXPECT_THROW(ce::compute_stochastic_index(pr, o), ce::InputError);
  // Lattices too coarse for the arrivals: slow decay (a state range of u* = 25000 against
  // arrivals of standard deviation 2.2) and many arrivals (U nearly constant); tiny and rare
  // arrivals, and fast decay, are resolved.
  o.grid = 200;
  EXPECT_THROW(ce::stochastic_index_table(2.5, 1e-4, ce::UtilityDist::exponential, o),
               ce::InputError);
  EXPECT_THROW(ce::stochastic_index_table(1e5, 0.7, ce::UtilityDist::exponential, o),
               ce::InputError);
  for (double lt : {1e-6, 0.01, 2.5})
    for (double mt : {0.05, 0.7, 50.0}) {
      const ce::IndexTable t = ce::stochastic_index_table(lt, mt, ce::UtilityDist::exponential, o);
      EXPECT_TRUE(t.indexable) << lt << " " << mt << ": " << t.not_indexable;
      for (double c : t.index) ASSERT_TRUE(std::isfinite(c));
    }
  // Arrivals rarer than double precision resolves (exp(-lambda T) == 1): refused with the reason,
  // not an internal error.
  try {
    ce::stochastic_index_table(1e-300, 1.0, ce::UtilityDist::exponential, o);
    ADD_FAILURE() << "no error";
  } catch (const ce::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("less likely than double precision resolves"),
              std::string::npos)
        << e.what();
  }
}

namespace {

/// Two sources on their lattices (beyond-lattice mass clamped to the top state), one crawl per
/// epoch: the joint chain's gain under a stationary policy by relative value iteration with
/// aperiodicity damping; `choose(i, j)` is true to crawl source 1 (false: source 2); without a
/// policy the optimum (max over both).
double joint_gain(const LatticeModel& a, const LatticeModel& b,
                  const std::function<bool(std::size_t, std::size_t)>* choose) {
  const std::size_t G1 = a.G, G2 = b.G;
  auto clamp = [](const LatticeModel& m, std::vector<double>& P, std::vector<double>& phi) {
    P = m.P, phi = m.phi;
    for (std::size_t i = 0; i < m.G; ++i) P[i * m.G + m.G - 1] += m.pi[i];
    phi[m.G - 1] += m.pi_f;
  };
  std::vector<double> P1, f1, P2, f2;
  clamp(a, P1, f1);
  clamp(b, P2, f2);
  std::vector<double> V(G1 * G2, 0.0), W1(G1 * G2), W2(G1 * G2), next(G1 * G2);
  double gain = 0;
  for (int it = 0; it < 20000; ++it) {
    // W1[i][l] = sum_k P1[i][k] V[k][l]; W2[k][j] = sum_l V[k][l] P2[j][l].
    std::fill(W1.begin(), W1.end(), 0.0);
    for (std::size_t i = 0; i < G1; ++i)
      for (std::size_t k = 0; k < G1; ++k) {
        const double p = P1[i * G1 + k];
        if (p == 0) continue;
        for (std::size_t l = 0; l < G2; ++l) W1[i * G2 + l] += p * V[k * G2 + l];
      }
    for (std::size_t k = 0; k < G1; ++k)
      for (std::size_t j = 0; j < G2; ++j) {
        double s = 0;
        for (std::size_t l = 0; l < G2; ++l) s += V[k * G2 + l] * P2[j * G2 + l];
        W2[k * G2 + j] = s;
      }
    std::vector<double> c1(G2, 0.0);  // crawl 1 from (., j): sum_k f1_k W2[k][j]
    for (std::size_t k = 0; k < G1; ++k)
      for (std::size_t j = 0; j < G2; ++j) c1[j] += f1[k] * W2[k * G2 + j];
    double lo = HUGE_VAL, hi = -HUGE_VAL;
    for (std::size_t i = 0; i < G1; ++i)
      for (std::size_t j = 0; j < G2; ++j) {
        double c2 = 0;  // crawl 2 from (i, .): sum_l f2_l W1[i][l]
        for (std::size_t l = 0; l < G2; ++l) c2 += f2[l] * W1[i * G2 + l];
        const double v1 = i * a.h + c1[j], v2 = j * b.h + c2;
        const double t = choose ? ((*choose)(i, j) ? v1 : v2) : std::max(v1, v2);
        const double d = t - V[i * G2 + j];
        lo = std::min(lo, d), hi = std::max(hi, d);
        next[i * G2 + j] = 0.5 * V[i * G2 + j] + 0.5 * t;  // aperiodic: P' = (I + P) / 2
      }
    gain = 0.5 * (lo + hi);
    const double base = next[0];
    for (double& v : next) v -= base;
    V.swap(next);
    if (hi - lo < 1e-10 * std::fabs(gain) && it > 10) return gain;
  }
  ADD_FAILURE() << "relative value iteration did not converge";
  return gain;
}

}  // namespace

// Two sources with rare, large arrivals, one crawl per epoch, on their lattices: the numerical
// index policy against the exact optimum and Theorem 1's heuristic, every gain computed exactly by
// relative value iteration on the joint chain (no simulation). On this lattice: optimum 2.88459,
// numerical index 2.88303 (within 0.06%), Theorem 1 2.88089: the index policy is within 0.1% of
// the optimum and ahead of the heuristic.
TEST(StochasticIndex, PolicyIsNearTheJointOptimumAndAheadOfTheHeuristic) {
  struct Src {
    double lt, mt;
  };
  const Src s1{2.5, 0.7}, s2{1.75, 0.35};
  ce::StochasticIndexOptions o;
  o.grid = 80;
  o.require_resolution = false;  // exact on this lattice: its fidelity is not the question
  const ce::IndexTable t1 =
      ce::stochastic_index_table(s1.lt, s1.mt, ce::UtilityDist::exponential, o);
  const ce::IndexTable t2 =
      ce::stochastic_index_table(s2.lt, s2.mt, ce::UtilityDist::exponential, o);
  const LatticeModel a(s1.lt, s1.mt, ce::UtilityDist::exponential, t1.h, o.grid);
  const LatticeModel b(s2.lt, s2.mt, ce::UtilityDist::exponential, t2.h, o.grid);
  const ce::SourceParams p1 = ce::derive_params(s1.lt, 1.0, s1.mt, 1.0, 1.0);
  const ce::SourceParams p2 = ce::derive_params(s2.lt, 1.0, s2.mt, 1.0, 1.0);
  const std::function<bool(std::size_t, std::size_t)> numerical = [&](std::size_t i,
                                                                      std::size_t j) {
    return t1.index[i] >= t2.index[j];  // ties: the lower id
  };
  const std::function<bool(std::size_t, std::size_t)> theorem1 = [&](std::size_t i, std::size_t j) {
    return ce::whittle_index(i * a.h, p1) >= ce::whittle_index(j * b.h, p2);
  };
  const double opt = joint_gain(a, b, nullptr);
  const double num = joint_gain(a, b, &numerical);
  const double heu = joint_gain(a, b, &theorem1);
  RecordProperty("optimum", std::to_string(opt));
  RecordProperty("numerical", std::to_string(num));
  RecordProperty("theorem1", std::to_string(heu));
  EXPECT_LE(num, opt * (1 + 1e-9));
  EXPECT_LE(heu, opt * (1 + 1e-9));
  EXPECT_GE(num, 0.999 * opt) << "optimum " << opt << " numerical " << num << " theorem 1 " << heu;
  EXPECT_GT(num, heu) << "optimum " << opt << " numerical " << num << " theorem 1 " << heu;
}
