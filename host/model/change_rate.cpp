// Change-rate estimators (change_rate.hpp): penalised maximum likelihood for incomplete
// observations, the Poisson rate for complete ones, likelihood-ratio intervals for both.
#include "crawleval/model/change_rate.hpp"

#include <cmath>
#include <limits>

namespace crawleval {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// The interval's ends: the roots of h(D) = l(D_hat) - l(D) - kHalfChi2_95 on each side of the
/// maximiser of a concave log-likelihood l (l' = slope). h is convex, so Newton's method started
/// where h > 0 moves monotonically towards the root and never crosses it.
template <class L, class Slope>
void likelihood_interval(double d_hat, const L& l, const Slope& slope, double* lo, double* hi) {
  const double top = l(d_hat);
  auto h = [&](double d) { return top - l(d) - kHalfChi2_95; };
  auto newton = [&](double d) {
    for (int it = 0; it < 100; ++it) {
      const double hd = h(d);
      const double s = -slope(d);  // h'(d)
      if (!(hd > 0.0) || !(s != 0.0) || !std::isfinite(s)) break;
      const double next = d - hd / s;
      if (!(std::fabs(next - d) > 1e-13 * std::fabs(d))) {
        d = next;
        break;
      }
      d = next;
    }
    return d;
  };
  // Upper end: double until h > 0 (l_s falls without bound as D grows), then Newton downwards.
  double b = d_hat > 0.0 ? 2.0 * d_hat : 1.0;
  for (int it = 0; it < 2000 && !(h(b) > 0.0); ++it) b *= 2.0;
  *hi = std::isfinite(h(b)) ? newton(b) : b;
  // Lower end: 0 if l(0) is within the threshold, else halve until h > 0, then Newton upwards.
  if (!(h(0.0) > 0.0)) {
    *lo = 0.0;
    return;
  }
  double a = d_hat / 2.0;
  for (int it = 0; it < 2000 && !(h(a) > 0.0); ++it) a /= 2.0;
  *lo = newton(a);
}

/// The root of g(D) = sum over changed intervals of count t / (exp(D t) - 1) - s, which decreases
/// from +inf to -s: Newton on v = log D (g is monotone in v too), kept inside a bracket [a, b] with
/// g(a) > 0 > g(b), started at d. `changed(f)` calls f(t, count) for every changed interval.
template <class Changed>
double solve_rate(const Changed& changed, double s, double d) {
  double a = 0.0, b = kInf;
  for (int it = 0; it < 200; ++it) {
    double g = -s, dg = 0.0;  // g and its derivative in D
    changed([&](double t, double count) {
      const double x = d * t;
      const double em1 = std::expm1(x);
      g += count * t / em1;
      // d/dD [t / (e^(Dt) - 1)] = -t^2 e^(Dt) / (e^(Dt) - 1)^2 = -t^2 / (expm1(x) (1 - e^-x))
      dg -= count * t * t / (em1 * -std::expm1(-x));
    });
    if (g > 0.0) a = d;
    if (g < 0.0) b = d;
    if (g == 0.0) break;
    double next = d * std::exp(-g / (dg * d));  // Newton in v = log D: dv = -g / (dg D)
    if (!(next > a && next < b) || !std::isfinite(next))
      next = std::isfinite(b) ? (a > 0.0 ? std::sqrt(a * b) : b / 2.0) : 2.0 * a;
    if (std::fabs(next - d) <= 1e-14 * d) return next;
    d = next;
  }
  return d;
}

}  // namespace

double incomplete_log_likelihood(double rate, const double* interval, const uint8_t* changed,
                                 std::size_t n) {
  if (n == 0) return 0.0;
  double total = 0.0, unchanged = 0.0, sum_log = 0.0;
  for (std::size_t k = 0; k < n; ++k) {
    total += interval[k];
    if (changed[k])
      sum_log += std::log(-std::expm1(-rate * interval[k]));
    else
      unchanged += interval[k];
  }
  return sum_log - rate * (unchanged + 0.5 * total / double(n));
}

RateEstimate estimate_incomplete(const double* interval, const uint8_t* changed, std::size_t n) {
  RateEstimate e;
  e.observations = uint32_t(n);
  if (n == 0) {
    e.hi = kInf;
    return e;
  }
  double total = 0.0, unchanged = 0.0;
  for (std::size_t k = 0; k < n; ++k) {
    total += interval[k];
    if (changed[k])
      ++e.changes;
    else
      unchanged += interval[k];
  }
  e.observed_time = total;
  const double tbar = total / double(n);
  const double s = unchanged + 0.5 * tbar;  // right-hand side of the estimating equation
  auto l = [&](double d) { return incomplete_log_likelihood(d, interval, changed, n); };
  // l_s'(D) = sum_changed t / (exp(D t) - 1) - s, decreasing from +inf to -s.
  auto slope = [&](double d) {
    double g = -s;
    for (std::size_t k = 0; k < n; ++k)
      if (changed[k]) g += interval[k] / std::expm1(d * interval[k]);
    return g;
  };
  if (e.changes == 0) {  // l_s(D) = -s D: maximised at 0
    e.rate = 0.0;
    e.lo = 0.0;
    e.hi = kHalfChi2_95 / s;
    return e;
  }
  // Cho's regular-interval formula with the mean interval starts the search.
  const double d0 = std::log((double(n) + 0.5) / (double(n - e.changes) + 0.5)) / tbar;
  const double d = solve_rate(
      [&](auto&& f) {
        for (std::size_t k = 0; k < n; ++k)
          if (changed[k]) f(interval[k], 1.0);
      },
      s, d0);
  e.rate = d;
  likelihood_interval(d, l, slope, &e.lo, &e.hi);
  return e;
}

RateEstimate estimate_complete(double changes, double time) {
  RateEstimate e;
  e.changes = changes < 4294967295.0 ? uint32_t(changes) : 0xFFFFFFFFu;
  e.observed_time = time;
  e.rate = changes / time;
  if (!(changes > 0.0)) {
    e.hi = kHalfChi2_95 / time;
    return e;
  }
  auto l = [&](double d) { return d > 0.0 ? changes * std::log(d) - d * time : -kInf; };
  auto slope = [&](double d) { return changes / d - time; };
  likelihood_interval(e.rate, l, slope, &e.lo, &e.hi);
  return e;
}

double learned_rate_incomplete(const double* length, const uint32_t* changed, const uint32_t* total,
                               std::size_t bins, double prior) {
  double s = prior, n = 1.0;  // the unchanged imaginary interval, and the changed one below
  double time = 2.0 * prior;
  for (std::size_t b = 0; b < bins; ++b) {
    s += double(total[b] - changed[b]) * length[b];
    n += double(total[b]);
    time += double(total[b]) * length[b];
  }
  const double d0 = std::log(2.0) / (time / (n + 1.0));
  return solve_rate(
      [&](auto&& f) {
        f(prior, 1.0);
        for (std::size_t b = 0; b < bins; ++b)
          if (changed[b]) f(length[b], double(changed[b]));
      },
      s, d0);
}

}  // namespace crawleval
