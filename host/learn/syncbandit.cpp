// Synchronization bandits: instances, closed forms, the exact optimum, the mirror and PSGD steps,
// and the learners (contract in include/crawleval/learn/syncbandit.hpp).
#include "crawleval/learn/syncbandit.hpp"
#include "crawleval/base/monitor.hpp"

#include <omp.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>

#include "crawleval/analysis/stats.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/model/resources.hpp"

namespace crawleval::sync {

// ---- instances ------------------------------------------------------------------------------

Instance generate_instance(Family family, std::size_t arms, uint64_t seed) {
  Instance inst;
  inst.family = family;
  inst.budget = 0.4 * double(arms);
  inst.r_max = family == Family::polynomial ? 3.0 : 6.0;
  for (std::size_t k = 0; k < arms; ++k) {
    DrawStream d(seed, uint32_t(k), uint32_t(k >> 32), 0, Stream::sync_instance);
    if (family == Family::polynomial) {
      inst.mu.push_back(d.next_uniform());
      inst.p.push_back(1.0 / (1.0 + std::exp(-5.0 * d.next_uniform())));
    } else {
      inst.delta.push_back(0.005 + (5.0 - 0.005) * d.next_uniform());
      inst.weight.push_back(1.0);
    }
  }
  return inst;
}

LearnConfig tuned_learn_config(Algorithm alg, Family family) {
  const bool poly = family == Family::polynomial;
  LearnConfig cfg;
  cfg.algorithm = alg;
  cfg.eta = alg == Algorithm::mirrorsync         ? (poly ? 2.7 : 5.0)
            : alg == Algorithm::async_mirrorsync ? (poly ? 1.6 : 1.3)
                                                 : (poly ? 0.08 : 0.5);
  cfg.cycle = alg == Algorithm::async_psgd ? (poly ? 20.0 : 40.0) : (poly ? 20.0 : 8.0);
  return cfg;
}

void validate(const Instance& inst) {
  const std::size_t k = inst.arms();
  CE_EXPECTS(k > 0, "the instance has no arms");
  if (inst.family == Family::polynomial) {
    CE_EXPECTS(inst.p.size() == k, "polynomial instance: mu and p have different lengths");
    for (std::size_t i = 0; i < k; ++i) {
      CE_EXPECTS(std::isfinite(inst.mu[i]) && inst.mu[i] >= 0,
                 "arm " + std::to_string(i) + ": mu must be a finite number >= 0");
      CE_EXPECTS(inst.p[i] > 0 && inst.p[i] < 1,
                 "arm " + std::to_string(i) + ": p must lie in (0, 1)");
    }
    CE_EXPECTS(inst.noise >= 0 && inst.noise <= 1, "--noise must lie in [0, 1]");
  } else {
    CE_EXPECTS(inst.weight.size() == k,
               "poisson instance: delta and weight have different lengths");
    for (std::size_t i = 0; i < k; ++i) {
      CE_EXPECTS(std::isfinite(inst.delta[i]) && inst.delta[i] > 0,
                 "arm " + std::to_string(i) + ": delta must be a finite number > 0");
      CE_EXPECTS(std::isfinite(inst.weight[i]) && inst.weight[i] >= 0,
                 "arm " + std::to_string(i) + ": weight must be a finite number >= 0");
    }
  }
  CE_EXPECTS(inst.r_min > 0 && inst.r_min < inst.r_max, "need 0 < --r-min < --r-max");
  CE_EXPECTS(inst.budget >= inst.r_min * double(k) && inst.budget <= inst.r_max * double(k),
             "--budget must lie in [K r_min, K r_max] = [" + shown_number(inst.r_min * double(k)) +
                 ", " + shown_number(inst.r_max * double(k)) + "]");
}

// ---- closed forms ---------------------------------------------------------------------------

double cost_rate(const Instance& inst, std::size_t k, double tau) {
  if (inst.family == Family::polynomial) return inst.mu[k] * std::pow(tau, inst.p[k]);
  return -inst.weight[k] * std::expm1(-inst.delta[k] * tau);
}

namespace {
// Below x = 1e-3 the Poisson closed forms cancel (tau + expm1(-d tau) / d lost every digit at d tau
// = 1e-17, and J* came out negative; a hostile pass): their series there, the direct forms above
// (unchanged).
constexpr double kSeriesBelow = 1e-3;
/// x + expm1(-x) = x^2/2 - x^3/6 + x^4/24 - x^5/120 + ...
double x_plus_expm1_neg(double x) {
  return x * x * (0.5 - x * (1.0 / 6.0 - x * (1.0 / 24.0 - x / 120.0)));
}
/// h(x) = 1 - e^-x (1 + x) = x^2/2 - x^3/3 + x^4/8 - x^5/30 + ...
double h_series(double x) { return x * x * (0.5 - x * (1.0 / 3.0 - x * (0.125 - x / 30.0))); }
}  // namespace

double accumulated_cost(const Instance& inst, std::size_t k, double tau) {
  if (inst.family == Family::polynomial)
    return inst.mu[k] * std::pow(tau, inst.p[k] + 1.0) / (inst.p[k] + 1.0);
  const double d = inst.delta[k];
  if (d * tau < kSeriesBelow) return inst.weight[k] * (x_plus_expm1_neg(d * tau) / d);
  return inst.weight[k] * (tau + std::expm1(-d * tau) / d);
}

double arm_cost(const Instance& inst, std::size_t k, double r) {
  const double c = r * accumulated_cost(inst, k, 1.0 / r);
  // mu r^-p / (p + 1) where (1/r)^(p+1) overflows and r^-p does not (r near 1e-200).
  if (std::isfinite(c) || inst.family != Family::polynomial) return c;
  return inst.mu[k] * std::pow(r, -inst.p[k]) / (inst.p[k] + 1.0);
}

double arm_cost_derivative(const Instance& inst, std::size_t k, double r) {
  if (inst.family == Family::poisson && inst.delta[k] / r < kSeriesBelow)
    return -inst.weight[k] / inst.delta[k] * h_series(inst.delta[k] / r);  // -(w/d) h(d/r)
  return accumulated_cost(inst, k, 1.0 / r) - cost_rate(inst, k, 1.0 / r) / r;
}

double policy_cost(const Instance& inst, const std::vector<double>& r) {
  double s = 0.0;
#pragma omp parallel for reduction(+ : s) if (r.size() > 20000)
  for (std::size_t k = 0; k < r.size(); ++k) s += arm_cost(inst, k, r[k]);
  return s / double(r.size());
}

void sample_pair(const Instance& inst, std::size_t k, double t_probe, double length,
                 DrawStream& draws, double* probe_cost, double* sync_cost) {
  if (inst.family == Family::polynomial) {
    // One draw of a for the pair keeps the two observations ordered (Assumption 3).
    const double a = inst.mu[k] * (1.0 - inst.noise + 2.0 * inst.noise * draws.next_uniform());
    *probe_cost = t_probe > 0.0 ? a * std::pow(t_probe, inst.p[k]) : 0.0;
    *sync_cost = a * std::pow(length, inst.p[k]);
  } else {
    // Changed by the probe time with probability 1 - e^(-delta t); by the sync time if changed by
    // the probe, or if a change comes in between.
    const double d = inst.delta[k];
    const bool by_probe = draws.next_uniform() < -std::expm1(-d * t_probe);
    const bool by_sync = by_probe || draws.next_uniform() < -std::expm1(-d * (length - t_probe));
    *probe_cost = by_probe ? inst.weight[k] : 0.0;
    *sync_cost = by_sync ? inst.weight[k] : 0.0;
  }
}

// ---- one-dual-variable solves ---------------------------------------------------------------

namespace {

/// Root of a non-increasing f on [a, b] with f(a) >= 0 >= f(b): bisection, then Illinois steps.
template <class F>
double decreasing_root(F&& f, double a, double fa, double b, double fb, double tol,
                       int bisections) {
  if (fa <= 0.0) return a;
  if (fb >= 0.0) return b;
  for (int it = 0; it < bisections; ++it) {  // a coarse bracket first (f may be flat at the ends)
    const double m = 0.5 * (a + b), fm = f(m);
    if (fm > 0.0)
      a = m, fa = fm;
    else
      b = m, fb = fm;
  }
  int side = 0;
  for (int it = 0; it < 200 && b - a > tol * std::max(1.0, std::fabs(a) + std::fabs(b)); ++it) {
    double m = (a * fb - b * fa) / (fb - fa);
    if (!(m > a && m < b)) m = 0.5 * (a + b);
    const double fm = f(m);
    if (fm == 0.0) return m;
    if (fm > 0.0) {
      a = m, fa = fm;
      if (side == -1) fb *= 0.5;
      side = -1;
    } else {
      b = m, fb = fm;
      if (side == +1) fa *= 0.5;
      side = +1;
    }
  }
  return 0.5 * (a + b);
}

template <class F>
double decreasing_root(F&& f, double a, double b, double tol, int bisections = 12) {
  const double fa = f(a), fb = f(b);
  return decreasing_root(f, a, fa, b, fb, tol, bisections);
}

/// h^-1 for h(z) = 1 - e^(-z) (1 + z) in (0, 1): Newton on z - log1p(z) = -log(1 - y), from
/// `warm` when given (> 0; a previous solution for a nearby y), else from the asymptotes.
double inverse_h(double y, double warm = 0.0) {
  const double l = -std::log1p(-y);
  double z = warm > 0.0 ? warm : std::max(std::sqrt(2.0 * l), l + std::log1p(l));
  // z - log1p(z) = z^2/2 - z^3/3 + z^4/4 - ... below kSeriesBelow (the difference cancels there).
  const auto z_minus_log1p = [](double z) {
    return z < kSeriesBelow ? z * z * (0.5 - z * (1.0 / 3.0 - z * (0.25 - z * 0.2)))
                            : z - std::log1p(z);
  };
  for (int it = 0; it < 60; ++it) {
    const double step = (z_minus_log1p(z) - l) * (1.0 + z) / z;
    z -= step;
    if (std::fabs(step) <= 1e-13 * z) break;  // quadratic convergence: the next step is ~1e-26
  }
  return z;
}

/// Brings the rates' sum to s.total exactly (after a root solve leaves a tiny excess) by scaling
/// the free coordinates (strictly inside [lo, hi]); `clamp` keeps the scaled ones in the bounds.
void scale_free_rates(std::vector<double>& r, const Simplex& s, bool clamp) {
  double sum = 0.0, free_sum = 0.0;
  for (double v : r) {
    sum += v;
    if (v > s.lo && v < s.hi) free_sum += v;
  }
  if (!(free_sum > 0.0)) return;
  const double scale = 1.0 + (s.total - sum) / free_sum;
  for (double& v : r)
    if (v > s.lo && v < s.hi) v = clamp ? std::min(s.hi, std::max(s.lo, v * scale)) : v * scale;
}

/// Arm k's best rate against a price nu per unit rate: argmin J_k(r) + nu r over [lo, hi].
/// warm (poisson): in, a previous Newton solution for this arm; out, this one.
double best_rate(const Instance& inst, std::size_t k, double nu, double lo, double hi,
                 double* warm = nullptr, double log_nu = std::numeric_limits<double>::quiet_NaN()) {
  double r;
  if (inst.family == Family::polynomial) {
    const double p = inst.p[k], a = inst.mu[k] * p / (p + 1.0);  // -J'(r) = a r^-(p+1)
    const double ratio = a / nu;
    // In logs where nu or a / nu leaves the doubles (a price beyond 1e308, for r_min near
    // 1e-200, or mu near 1e306: J* was wrong or NaN with exit 0; a hostile pass).
    if (!(a > 0.0))
      r = 0.0;
    else if (nu > 0.0 && nu < HUGE_VAL && ratio > 0.0 && ratio < HUGE_VAL)
      r = std::pow(ratio, 1.0 / (p + 1.0));
    else
      r = std::exp((std::log(a) - (std::isnan(log_nu) ? std::log(nu) : log_nu)) / (p + 1.0));
  } else {
    const double d = inst.delta[k], w = inst.weight[k];  // -J'(r) = (w/d) h(d/r)
    const double y = w > 0.0 ? nu * d / w : 1.0;
    if (y >= 1.0) return lo;
    const double z = inverse_h(y, warm ? *warm : 0.0);
    if (warm) *warm = z;
    r = d / z;
  }
  return std::min(hi, std::max(lo, r));
}

/// Newton polish of sum x(nu) = total for x_k(nu) = clip(1 / (c_k + nu)): the interior
/// coordinates move, the clipped ones stay; each step is exact for the current active set.
void polish_sum(std::vector<double>& x, const std::vector<double>& c, double& nu,
                const Simplex& s) {
  for (int it = 0; it < 8; ++it) {
    double sum = 0.0, slope = 0.0;
    for (std::size_t k = 0; k < x.size(); ++k) {
      sum += x[k];
      if (x[k] > s.lo && x[k] < s.hi) slope += x[k] * x[k];
    }
    const double resid = sum - s.total;
    if (std::fabs(resid) <= 1e-15 * s.total || slope == 0.0) return;
    nu += resid / slope;
    for (std::size_t k = 0; k < x.size(); ++k) {
      const double d = c[k] + nu;
      x[k] = d > 0.0 ? std::min(s.hi, std::max(s.lo, 1.0 / d)) : s.hi;
    }
  }
}

}  // namespace

double optimal_cost(const Instance& inst, const Simplex& s, std::vector<double>* r_opt) {
  validate(inst);
  const std::size_t n = inst.arms();
  CE_EXPECTS(s.lo * double(n) <= s.total * (1 + 1e-12) && s.total <= s.hi * double(n) * (1 + 1e-12),
             "the budget does not fit the rate bounds");
  std::vector<double> warm(inst.family == Family::poisson ? n : 0, 0.0);  // Newton warm starts
  auto rate_sum = [&](double log_nu) {
    const double nu = std::exp(log_nu);
    double sum = 0.0;
#pragma omp parallel for reduction(+ : sum) if (n > 20000)
    for (std::size_t k = 0; k < n; ++k)
      sum += best_rate(inst, k, nu, s.lo, s.hi, warm.empty() ? nullptr : &warm[k], log_nu);
    return sum - s.total;
  };
  // Large instances: the dual variable of an evenly spaced sample of 4096 arms first, so that the
  // passes over every arm start from a narrow bracket.
  const std::size_t stride = n > 50000 ? n / 4096 : 1;
  // Prices from "every arm at hi" to "every arm at lo".
  double nu_lo = std::numeric_limits<double>::infinity(), nu_hi = 0.0;
  int overflow = 0;
#pragma omp parallel for reduction(min                         \
                                   : nu_lo) reduction(max      \
                                                      : nu_hi) \
    reduction(|                                                \
              : overflow) if (n > 20000)
  for (std::size_t k = 0; k < n; ++k) {
    const double at_hi = -arm_cost_derivative(inst, k, s.hi),
                 at_lo = -arm_cost_derivative(inst, k, s.lo);
    if (at_hi > 0) nu_lo = std::min(nu_lo, at_hi);
    nu_hi = std::max(nu_hi, at_lo);
    overflow |= !std::isfinite(at_lo);  // (inf, or inf - inf: max() would skip the NaN)
  }
  if (!std::isfinite(nu_lo) || nu_lo <= 0) nu_lo = 1e-300;
  double log_hi = std::log(nu_hi);
  if (overflow || !std::isfinite(log_hi)) {  // -J'(lo) beyond the doubles: in logs
    log_hi = -HUGE_VAL;
    for (std::size_t k = 0; k < n; ++k)
      log_hi = std::max(log_hi, inst.family == Family::polynomial
                                    ? std::log(inst.mu[k] * inst.p[k] / (inst.p[k] + 1.0)) -
                                          (inst.p[k] + 1.0) * std::log(s.lo)
                                    : std::log(inst.weight[k]) - std::log(inst.delta[k]));
  }
  const double a = std::log(nu_lo) - 1.0, b = log_hi + 1.0;
  const int bisections = 12;
  double log_nu;
  if (stride > 1) {
    const std::size_t samples = (n + stride - 1) / stride;
    const double scale = double(n) / double(samples);
    auto sample_sum = [&](double log_nu) {
      const double nu = std::exp(log_nu);
      double sum = 0.0;
      for (std::size_t j = 0; j < samples; ++j) sum += best_rate(inst, j * stride, nu, s.lo, s.hi);
      return sum * scale - s.total;
    };
    const double guess = decreasing_root(sample_sum, a, b, 1e-8);
    double lo = guess - 0.05, hi = guess + 0.05, f_lo, f_hi;
    while ((f_lo = rate_sum(lo)) < 0.0 && lo > a) lo -= 0.5;
    while ((f_hi = rate_sum(hi)) > 0.0 && hi < b) hi += 0.5;
    // log nu to 1e-11: the rates' sum is then exact to ~1e-11 and rescaled exactly below.
    log_nu = decreasing_root(rate_sum, lo, f_lo, hi, f_hi, 1e-11, 0);
  } else {
    log_nu = decreasing_root(rate_sum, a, b, 1e-15, bisections);
  }
  std::vector<double> r(n);
  const double nu = std::exp(log_nu);
#pragma omp parallel for if (n > 20000)
  for (std::size_t k = 0; k < n; ++k)
    r[k] = best_rate(inst, k, nu, s.lo, s.hi, warm.empty() ? nullptr : &warm[k], log_nu);
  // Exact sum: scale the free coordinates' excess (tiny after the root solve).
  scale_free_rates(r, s, false);
  // Where the arms' best rates jump at the root (a marginal cost that is flat, to the doubles'
  // resolution, between the jump's ends: Poisson arms with r << delta), no free coordinate takes
  // up the rest and the budget was left unspent (J* too high: three equal arms spent 0.075 of
  // 0.1; a hostile pass). Every arm then moves the same fraction of the way between its best
  // rates just above and just below the root's price (those that jump there; the others stay):
  // the sum is exact, and every rate lies where the marginal cost is the root's to 1e-9.
  double sum = 0.0;
  for (double v : r) sum += v;
  if (!(std::fabs(sum - s.total) <= 1e-12 * s.total)) {
    std::vector<double> below(n), above(n);  // at prices nu e^-1e-9 and nu e^1e-9
    double s_below = 0.0, s_above = 0.0;
    for (std::size_t k = 0; k < n; ++k) {
      below[k] = best_rate(inst, k, std::exp(log_nu - 1e-9), s.lo, s.hi, nullptr, log_nu - 1e-9);
      above[k] = best_rate(inst, k, std::exp(log_nu + 1e-9), s.lo, s.hi, nullptr, log_nu + 1e-9);
      s_below += below[k], s_above += above[k];
    }
    if (s_below > s_above && s_above <= s.total && s.total <= s_below) {
      const double t = (s.total - s_above) / (s_below - s_above);
      for (std::size_t k = 0; k < n; ++k) r[k] = above[k] + t * (below[k] - above[k]);
    }
  }
  const double j = policy_cost(inst, r);
  if (r_opt) *r_opt = std::move(r);
  return j;
}

std::vector<double> mirror_step(const std::vector<double>& r, const std::vector<double>& g,
                                double eta, const Simplex& s) {
  const std::size_t n = r.size();
  std::vector<double> c(n), x(n);
  double cmin = std::numeric_limits<double>::infinity(), cmax = -cmin;
  for (std::size_t k = 0; k < n; ++k) {
    c[k] = eta * g[k] + 1.0 / r[k];
    cmin = std::min(cmin, c[k]), cmax = std::max(cmax, c[k]);
  }
  auto fill = [&](double nu) {
    for (std::size_t k = 0; k < n; ++k) {
      const double d = c[k] + nu;
      x[k] = d > 0.0 ? std::min(s.hi, std::max(s.lo, 1.0 / d)) : s.hi;
    }
  };
  auto excess = [&](double nu) {
    fill(nu);
    double sum = 0.0;
    for (double v : x) sum += v;
    return sum - s.total;
  };
  // At nu_a every x is hi (d <= 1/hi), at nu_b every x is lo (d >= 1/lo).
  const double nu_a = 1.0 / s.hi - cmax, nu_b = 1.0 / s.lo - cmin;
  double nu = decreasing_root(excess, nu_a, nu_b, 1e-16);
  fill(nu);
  polish_sum(x, c, nu, s);
  return x;
}

std::vector<double> psgd_step(const std::vector<double>& r, const std::vector<double>& g,
                              double eta, const Simplex& s) {
  const std::size_t n = r.size();
  std::vector<double> y(n), x(n);
  double ymin = std::numeric_limits<double>::infinity(), ymax = -ymin;
  for (std::size_t k = 0; k < n; ++k) {
    y[k] = r[k] - eta * g[k];
    ymin = std::min(ymin, y[k]), ymax = std::max(ymax, y[k]);
  }
  auto fill = [&](double nu) {
    for (std::size_t k = 0; k < n; ++k) x[k] = std::min(s.hi, std::max(s.lo, y[k] - nu));
  };
  auto excess = [&](double nu) {
    fill(nu);
    double sum = 0.0;
    for (double v : x) sum += v;
    return sum - s.total;
  };
  double nu = decreasing_root(excess, ymin - s.hi, ymax - s.lo, 1e-16);
  // The sum is linear in nu on the current active set: solve it exactly.
  fill(nu);
  double fixed = 0.0, free_y = 0.0;
  std::size_t free_n = 0;
  for (std::size_t k = 0; k < n; ++k) {
    if (x[k] > s.lo && x[k] < s.hi)
      free_y += y[k], ++free_n;
    else
      fixed += x[k];
  }
  if (free_n) {
    nu = (free_y + fixed - s.total) / double(free_n);
    for (std::size_t k = 0; k < n; ++k)
      if (x[k] > s.lo && x[k] < s.hi) x[k] = std::min(s.hi, std::max(s.lo, y[k] - nu));
  }
  return x;
}

// ---- learners --------------------------------------------------------------------------------

namespace {

/// Plays arm k's sync intervals of length 1/r from `start` while they end by `until`, with a
/// probe in each with probability epsilon; returns the number of intervals and adds their
/// gradient samples (Lemma 2) to *sum. Advances *start past the completed intervals.
uint32_t play_arm(const Instance& inst, std::size_t k, double r, double* start, double until,
                  double epsilon, DrawStream& draws, double* sum, double* first = nullptr) {
  const double len = 1.0 / r;
  uint32_t count = 0;
  while (*start + len <= until) {
    const bool probe = draws.next_uniform() < epsilon;
    const double t_probe = probe ? len * draws.next_uniform() : 0.0;
    double cp, cs;
    sample_pair(inst, k, t_probe, len, draws, &cp, &cs);
    const double g = gradient_sample(probe, cp, cs, epsilon, r);
    if (first && count == 0) *first = g;
    *sum += g;
    *start += len;
    ++count;
  }
  return count;
}

}  // namespace

void check_work(const Instance& inst, const LearnConfig& cfg, uint32_t runs) {
  // Every learner simulates each arm's syncs, about B / r_min per round of 1 / r_min time units
  // (the rates sum to at most B), in every run: a tiny --r-min, or many runs of a small one,
  // would run for hours.
  const double syncs = double(cfg.rounds) * inst.budget / inst.r_min * double(runs);
  CE_EXPECTS(syncs <= 1e10, "--r-min " + shown_number(inst.r_min) + " with --budget " +
                                shown_number(inst.budget) + ", " + std::to_string(cfg.rounds) +
                                " rounds and " + std::to_string(runs) +
                                (runs == 1 ? " run" : " runs") +
                                ": the learner would simulate about " + shown_number(syncs) +
                                " syncs (rounds x budget / r_min x runs); at most 1e10: a larger "
                                "--r-min, fewer rounds or fewer runs");
}

void validate(const LearnConfig& cfg) {
  CE_EXPECTS(cfg.epsilon > 0 && cfg.epsilon < 1, "--epsilon must lie in (0, 1)");
  CE_EXPECTS(cfg.eta > 0, "--learning-rate must be > 0");
  CE_EXPECTS(cfg.rounds > 0, "--rounds must be at least 1");
  CE_EXPECTS(cfg.algorithm == Algorithm::mirrorsync || cfg.cycle > 0, "--cycle must be > 0");
}

std::vector<double> learn(const Instance& inst, const LearnConfig& cfg, uint32_t run,
                          const std::vector<Instance>* by_round) {
  validate(inst);
  validate(cfg);
  check_work(inst, cfg, 1);
  // The asynchronous curve has rounds / (r_min cycle) + 1 points, 8 B each per run and summary:
  // a tiny --cycle asks for gigabytes.
  if (cfg.algorithm != Algorithm::mirrorsync) {
    const double points = double(cfg.rounds) / (inst.r_min * cfg.cycle) + 1.0;
    CE_EXPECTS(points <= 1e8, "--cycle " + shown_number(cfg.cycle) + " with --r-min " +
                                  shown_number(inst.r_min) + " and " + std::to_string(cfg.rounds) +
                                  " rounds: the curve would have " + shown_number(points) +
                                  " points (rounds / (r_min cycle)); at most 1e8: a longer cycle");
  }
  CE_EXPECTS(!by_round || (!by_round->empty() && by_round->front().arms() == inst.arms()),
             "internal: round-varying costs need one instance per round with the same arms");
  // The costs of round t (0-based; the last round continues).
  auto costs = [&](std::size_t t) -> const Instance& {
    return by_round ? (*by_round)[std::min(t, by_round->size() - 1)] : inst;
  };
  const std::size_t n = inst.arms();
  const double eps = cfg.epsilon;
  // Probes take a fraction eps of the bandwidth: sync plays live in K_eps (line 2 of Alg. 1).
  const Simplex s{inst.r_min, inst.r_max / (1.0 + eps), inst.budget / (1.0 + eps)};
  // The barrier's minimiser over K_eps: equal rates (clipped).
  std::vector<double> r(n, std::min(s.hi, std::max(s.lo, s.total / double(n))));
  const double round_len = 1.0 / inst.r_min;
  const bool parallel = n >= 20000;
  std::vector<double> curve{policy_cost(costs(0), r)};

  if (cfg.algorithm == Algorithm::mirrorsync) {
    std::vector<double> g(n);
    for (uint32_t round = 1; round <= cfg.rounds; ++round) {
      check_interrupt();
      // Every arm restarts at time 0 of the round (the algorithm's "free" resets).
#pragma omp parallel for schedule(static) if (parallel)
      for (std::size_t k = 0; k < n; ++k) {
        DrawStream draws(cfg.seed, uint32_t(k), round, run, Stream::sync_costs);
        double start = 0.0, sum = 0.0, first = 0.0;
        const uint32_t count =
            play_arm(costs(round - 1), k, r[k], &start, round_len, eps, draws, &sum, &first);
        // Deviation from Algorithm 1 (lines 14-18), which keeps the round's first gradient
        // sample and breaks: every sample of the round is averaged. Each is unbiased (Lemma 2),
        // so the mean is too, with less variance; Algorithm 2 (line 30) averages the same way.
        // Gradient::first runs the pseudo-code's rule (the same draws: the first sample is the
        // first interval's).
        if (cfg.gradient == Gradient::first)
          g[k] = count ? first / double(n) : 0.0;
        else
          g[k] = count ? sum / double(count) / double(n) : 0.0;
      }
      r = mirror_step(r, g, cfg.eta, s);
      curve.push_back(policy_cost(costs(round), r));  // played in round `round` + 1
    }
    return curve;
  }

  // Asynchronous: updates every `cycle` time units, on the arms with a completed interval.
  const uint64_t cycles = uint64_t(std::llround(double(cfg.rounds) * round_len / cfg.cycle));
  std::vector<double> latest(n, 0.0), g(n);
  std::vector<uint32_t> count(n);
  // Rule::paper's rescheduled syncs (times): each ends an interval without a probe, a gradient
  // sample of 0 for the first update at or after it (lines 19-27 count every sync played since).
  std::vector<std::vector<double>> zero_syncs(cfg.reschedule == Rule::paper ? n : 0);
  for (uint64_t c = 1; c <= cycles; ++c) {
    if ((c & 63) == 0) check_interrupt();
    const double now = double(c) * cfg.cycle;
    const Instance& period = costs(std::size_t(double(c - 1) * cfg.cycle / round_len + 1e-9));
#pragma omp parallel for schedule(static) if (parallel)
    for (std::size_t k = 0; k < n; ++k) {
      DrawStream draws(cfg.seed, uint32_t(k), uint32_t(c), run, Stream::sync_costs);
      double sum = 0.0;
      uint32_t zeros = 0;
      if (!zero_syncs.empty()) {
        std::vector<double>& z = zero_syncs[k];
        const auto played = std::remove_if(z.begin(), z.end(), [&](double t) { return t <= now; });
        zeros = uint32_t(z.end() - played);
        z.erase(played, z.end());
      }
      count[k] = play_arm(period, k, r[k], &latest[k], now, eps, draws, &sum) + zeros;
      g[k] = count[k] ? sum / double(count[k]) : 0.0;
    }
    std::vector<std::size_t> active;
    for (std::size_t k = 0; k < n; ++k)
      if (count[k]) active.push_back(k);
    if (!active.empty()) {
      std::vector<double> ra(active.size()), ga(active.size());
      double total = 0.0;
      for (std::size_t j = 0; j < active.size(); ++j) {
        ra[j] = r[active[j]];
        ga[j] = g[active[j]] / double(active.size());
        total += ra[j];
      }
      // The updated arms share their current bandwidth, sum_k r_k, as the authors' public code
      // does. Deviation from Algorithm 2, line 35, which divides that sum by (1 + eps) again:
      // the rates already live in K_eps, so a second division would shrink the budget at every
      // update.
      if (cfg.local_budget == Rule::paper)
        total = std::max(total / (1.0 + eps), s.lo * double(active.size()));
      const Simplex local{s.lo, s.hi, total};
      const std::vector<double> rn = cfg.algorithm == Algorithm::async_mirrorsync
                                         ? mirror_step(ra, ga, cfg.eta, local)
                                         : psgd_step(ra, ga, cfg.eta, local);
      for (std::size_t j = 0; j < active.size(); ++j) {
        const std::size_t k = active[j];
        if (cfg.reschedule == Rule::paper) {
          r[k] = rn[j];
          continue;
        }
        // The interval in progress is not observed; its sync is rescheduled as in the authors'
        // public code: now with probability epsilon, else after one period of the new rate if
        // that still lies ahead and is shorter, else of the old one. Deviations from Algorithm 2,
        // lines 37-40, which reschedule every arm (not only the updated ones) at
        // max(t_prev + 1/r_k, now) (Rule::paper, below).
        DrawStream draws(cfg.seed, uint32_t(k), uint32_t(c), run + 0x40000000u, Stream::sync_costs);
        if (draws.next_uniform() < eps)
          latest[k] = now;
        else if (1.0 / rn[j] < 1.0 / r[k] && latest[k] + 1.0 / rn[j] >= now)
          latest[k] += 1.0 / rn[j];
        else
          latest[k] += 1.0 / r[k];
        r[k] = rn[j];
      }
    }
    if (cfg.reschedule == Rule::paper)
      for (std::size_t k = 0; k < n; ++k) {  // lines 37-41, every arm, at its (new) rate
        DrawStream draws(cfg.seed, uint32_t(k), uint32_t(c), run + 0x40000000u, Stream::sync_costs);
        latest[k] = draws.next_uniform() < eps ? now : std::max(latest[k] + 1.0 / r[k], now);
        zero_syncs[k].push_back(latest[k]);
      }
    curve.push_back(policy_cost(costs(std::size_t(double(c) * cfg.cycle / round_len + 1e-9)), r));
  }
  return curve;
}

Experiment summarize_runs(const std::vector<std::vector<double>>& curves,
                          const std::vector<double>& optimum,
                          const std::vector<double>& optimum_eps, double points_per_round,
                          const std::vector<std::vector<double>>& comparator,
                          const std::vector<std::vector<double>>& comparator_eps) {
  Experiment e;
  e.runs = uint32_t(curves.size());
  if (curves.empty()) return e;
  const std::size_t points = curves[0].size();
  std::vector<double> column(curves.size());
  auto push = [&](std::vector<double>& m, std::vector<double>& lo, std::vector<double>& hi) {
    const Summary s = summarize_replications(column);
    m.push_back(s.mean);
    lo.push_back(curves.size() >= 2 ? s.ci_low : s.mean);
    hi.push_back(curves.size() >= 2 ? s.ci_high : s.mean);
  };
  // Cumulative regrets per run: point j sums the periods 0..j-1, each 1 / points_per_round
  // rounds long.
  std::vector<double> regret(curves.size(), 0.0), in_policy(curves.size(), 0.0);
  for (std::size_t t = 0; t < points; ++t) {
    for (std::size_t r = 0; r < curves.size(); ++r) column[r] = curves[r][t];
    e.rounds.push_back(double(t) / points_per_round);
    push(e.mean, e.ci_low, e.ci_high);
    for (std::size_t r = 0; r < curves.size(); ++r) column[r] = regret[r];
    push(e.regret_mean, e.regret_ci_low, e.regret_ci_high);
    for (std::size_t r = 0; r < curves.size(); ++r) column[r] = in_policy[r];
    push(e.in_policy_mean, e.in_policy_ci_low, e.in_policy_ci_high);
    for (std::size_t r = 0; r < curves.size(); ++r) {
      regret[r] += (curves[r][t] - comparator[r][t]) / points_per_round;
      in_policy[r] += (curves[r][t] - comparator_eps[r][t]) / points_per_round;
    }
  }
  for (std::size_t r = 0; r < curves.size(); ++r)
    for (std::size_t t = 0; t + 1 < points; ++t)
      e.exploration_gap +=
          (comparator_eps[r][t] - comparator[r][t]) / points_per_round / double(curves.size());
  e.regret_exponent = power_law_exponent(e.rounds, e.regret_mean, kRegretFitFrom);
  for (double v : optimum) e.optimum += v / double(optimum.size());
  for (double v : optimum_eps) e.optimum_epsilon += v / double(optimum_eps.size());
  return e;
}

double optimal_cost_rounds(const std::vector<Instance>& rounds, const Simplex& s,
                           std::vector<double>* r_opt) {
  CE_EXPECTS(!rounds.empty(), "internal: no rounds");
  // Equal consecutive rounds are one term with its multiplicity.
  std::vector<std::pair<const Instance*, double>> terms;
  for (const Instance& inst : rounds) {
    const bool same = !terms.empty() && terms.back().first->mu == inst.mu &&
                      terms.back().first->p == inst.p && terms.back().first->delta == inst.delta &&
                      terms.back().first->weight == inst.weight;
    if (same)
      terms.back().second += 1.0;
    else
      terms.emplace_back(&inst, 1.0);
  }
  const std::size_t n = rounds.front().arms();
  auto derivative = [&](std::size_t k, double r) {
    double d = 0.0;
    for (const auto& [inst, w] : terms) d += w * arm_cost_derivative(*inst, k, r);
    return d;
  };
  // Arm k's best rate at price nu: F_k'(r) + nu = 0 on [lo, hi] (F_k' increases: F_k convex).
  auto best = [&](std::size_t k, double nu) {
    if (derivative(k, s.hi) + nu <= 0.0) return s.hi;
    if (derivative(k, s.lo) + nu >= 0.0) return s.lo;
    double a = std::log(s.lo), b = std::log(s.hi);
    for (int it = 0; it < 100 && b - a > 1e-15; ++it) {
      const double m = 0.5 * (a + b);
      if (derivative(k, std::exp(m)) + nu < 0.0)
        a = m;
      else
        b = m;
    }
    return std::exp(0.5 * (a + b));
  };
  double nu_hi = 0.0, nu_lo = std::numeric_limits<double>::infinity();
  for (std::size_t k = 0; k < n; ++k) {
    nu_hi = std::max(nu_hi, -derivative(k, s.lo));
    const double at_hi = -derivative(k, s.hi);
    if (at_hi > 0) nu_lo = std::min(nu_lo, at_hi);
  }
  if (!std::isfinite(nu_lo) || nu_lo <= 0) nu_lo = 1e-300;
  double a = std::log(nu_lo) - 1.0, b = std::log(nu_hi) + 1.0;
  std::vector<double> r(n);
  auto fill = [&](double log_nu) {
    double sum = 0.0;
    for (std::size_t k = 0; k < n; ++k) sum += r[k] = best(k, std::exp(log_nu));
    return sum;
  };
  for (int it = 0; it < 200 && b - a > 1e-13; ++it) {  // the rates' sum decreases with nu
    const double m = 0.5 * (a + b);
    if (fill(m) > s.total)
      a = m;
    else
      b = m;
  }
  fill(0.5 * (a + b));
  scale_free_rates(r, s, true);
  double total = 0.0;
  for (const auto& [inst, w] : terms) total += w * policy_cost(*inst, r);
  if (r_opt) *r_opt = r;
  return total;
}

double cost_cap(const Instance& inst) {
  double u = 0.0;
  for (std::size_t k = 0; k < inst.arms(); ++k) {
    if (inst.family == Family::polynomial)
      u = std::max(u, inst.mu[k] * (1.0 + inst.noise) * std::pow(1.0 / inst.r_min, inst.p[k]));
    else
      u = std::max(u, inst.weight[k]);
  }
  return u;
}

double in_policy_regret_bound(const Instance& inst, uint32_t rounds, double cost_cap, double eta,
                              double epsilon) {
  const double k = double(inst.arms()), l = std::log(inst.budget / (inst.r_min * k));
  return k / eta * l + eta * cost_cap * cost_cap / (epsilon * k) * double(rounds);
}

TheoryParams theory_parameters(const Instance& inst, uint32_t rounds, double cost_cap) {
  TheoryParams t;
  const double k = double(inst.arms()), T = double(rounds);
  t.log_term = std::log(inst.budget / (inst.r_min * k));
  t.cost_cap = cost_cap;
  CE_EXPECTS(t.log_term > 0,
             "the theory's parameters need B > r_min K (log(B / (r_min K)) > 0; here B = " +
                 shown_number(inst.budget) + ", r_min K = " + shown_number(inst.r_min * k) + ")");
  CE_EXPECTS(T > 8.0 * t.log_term, "Corollary 1 needs more rounds than 8 log(B / (r_min K)) = " +
                                       shown_number(8.0 * t.log_term));
  CE_EXPECTS(cost_cap > 0, "the cost cap U must be > 0");
  t.epsilon = std::cbrt(t.log_term / T);
  t.eta = k / cost_cap * std::sqrt(t.log_term * t.epsilon / T);
  t.in_policy_bound = in_policy_regret_bound(inst, rounds, cost_cap, t.eta, t.epsilon);
  t.exploration_gap_bound = 2.0 * t.epsilon * cost_cap * T;
  t.regret_bound = t.in_policy_bound + t.exploration_gap_bound;
  t.paper_regret_bound = 3.0 * cost_cap * std::pow(T, 2.0 / 3.0) * std::cbrt(t.log_term);
  return t;
}

void comparators(const Instance& inst, const LearnConfig& cfg, std::size_t points,
                 const std::vector<Instance>* by_round, std::vector<double>* comp,
                 std::vector<double>* comp_eps, double* opt, double* opt_eps) {
  const Simplex s0{inst.r_min, inst.r_max, inst.budget};
  const Simplex se{inst.r_min, inst.r_max / (1 + cfg.epsilon), inst.budget / (1 + cfg.epsilon)};
  if (!by_round) {
    *opt = optimal_cost(inst, s0);
    *opt_eps = optimal_cost(inst, se);
    comp->assign(points, *opt);
    comp_eps->assign(points, *opt_eps);
    return;
  }
  // The horizon's rounds (points - 1 periods, each 1 / points_per_round rounds long).
  std::vector<Instance> horizon(
      by_round->begin(), by_round->begin() + std::min<std::size_t>(cfg.rounds, by_round->size()));
  while (horizon.size() < cfg.rounds) horizon.push_back(by_round->back());
  std::vector<double> r0, re;
  *opt = optimal_cost_rounds(horizon, s0, &r0) / double(horizon.size());
  *opt_eps = optimal_cost_rounds(horizon, se, &re) / double(horizon.size());
  const double per_round = double(points - 1) / double(cfg.rounds);
  comp->resize(points), comp_eps->resize(points);
  for (std::size_t j = 0; j < points; ++j) {
    const std::size_t t = std::min(horizon.size() - 1, std::size_t(double(j) / per_round + 1e-9));
    (*comp)[j] = policy_cost(horizon[t], r0);
    (*comp_eps)[j] = policy_cost(horizon[t], re);
  }
}

}  // namespace crawleval::sync
