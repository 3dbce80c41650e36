// The Lagrangian index policy (Avrachenkov, Borkar and Shah, "Lagrangian Index Policy for Restless
// Bandits with Average Reward", arXiv 2412.12641, 2024) for the crawling model: a source's index is
// the advantage of crawling it now in the single-source relaxed problem at the budget's multiplier
// lambda*, gamma(x) = Q(x, crawl) - Q(x, wait), and the policy crawls the largest gamma / C (the
// scale of the Whittle index: gamma / C > 0 exactly where the Whittle index exceeds lambda*).
//
// Derivation (docs/model.md). At the price c = C lambda* of a crawl, the relaxed source's best
// average gain over never crawling is g = max(0, max_k (x_k - c) / k), reached by crawling every
// tau epochs (relaxed_gain), and with relative values h, gamma(x) = x - c - h(x'), x' = alpha x +
// u. Waiting one more epoch gains x' - x = (1 - alpha)(u* - x), which falls as x grows, so the
// relaxed policy crawls from theta = u* - g / (1 - alpha) on, and with D = u* - x:
//   gamma(x) = min over n >= 1 of [ n g - D (1 - alpha^n) ],  n* = max(1, ceil(log((1 - alpha) D /
//   g)
//              / (mu T))),
// what crawling now instead of n epochs later forfeits against n epochs of the cycle's gain. On the
// index grid (x = x_k, age k; belief observation, deterministic expiry): gamma(x_k) = g - u alpha^k
// for k >= tau, (tau - k) g - u* alpha^k (1 - alpha^(tau - k)) below, -c at k = 0, and g from age E
// on with expiry E. A source the relaxation never crawls (g = 0): gamma(x) = x - c (and
// min(x - c, (1 - alpha)(x - u*)) above u*).
//
// Checked against relative value iteration of the single-source problem (tests/test_lip.cpp) and,
// in derivation, against an 80-bit Bellman solution: within 2.4 ulp of the terms it subtracts.
//
// Worked example: the papers' Table 1 with M = 2 has lambda* = 43.6046; source 1 (u = 179.79,
// alpha = e^-0.7, relaxed period 1, g = 136.19) at age 1: gamma = g - u alpha = 46.905.
#pragma once

#include <cstdint>

#include "crawleval/base/fp.hpp"
#include "crawleval/base/hd.hpp"
#include "crawleval/model/model.hpp"

namespace crawleval {

/// A source's relaxed problem at lambda*: its gain g (0: never crawled) and period tau.
struct LipSource {
  double gain = 0.0;
  uint32_t period = 0;
};

/// g and tau at lambda* for a source of cost `cost` (host, before the run: prepare_lip_policy).
CE_HD_INLINE LipSource lip_source(double lambda, double cost, const SourceParams& p) {
  LipSource s;
  s.gain = relaxed_gain(mul_rn(cost, lambda), p, &s.period, true);
  return s;
}

/// gamma / C of a source at age k on the index grid (the state x_k; belief observation and
/// deterministic expiry).
CE_HD_INLINE double lip_index_grid(uint32_t k, const SourceParams& p, LipSource q, double lambda) {
  if (!(q.gain > 0.0)) {  // never crawled in the relaxation: (x_k - c) / C
    const double kk = p.expiry && k > p.expiry ? double(p.expiry) : double(k);
    return sub_rn(mul_rn(mul_rn(p.u_star, -fp_expm1(mul_rn(-p.mu_t, kk))), p.inv_cost), lambda);
  }
  if (k == 0) return -lambda;                                        // -c / C, exactly
  if (p.expiry && k >= p.expiry) return mul_rn(q.gain, p.inv_cost);  // saturated
  // alpha^k from exp (1 - (1 - alpha^k) loses its digits where alpha^k is small).
  const double ak = fp_exp(mul_rn(-p.mu_t, double(k)));
  double gamma;
  if (k >= q.period) {
    gamma = sub_rn(q.gain, mul_rn(drift(p), ak));
  } else {
    const double n = double(q.period - k);
    gamma = sub_rn(mul_rn(n, q.gain), mul_rn(mul_rn(p.u_star, ak), -fp_expm1(mul_rn(-p.mu_t, n))));
  }
  return mul_rn(gamma, p.inv_cost);
}

/// gamma / C of a source in any state x >= 0 (full observation; off-grid starts).
CE_HD_INLINE double lip_index(double x, const SourceParams& p, LipSource q, double lambda) {
  if (!(q.gain > 0.0)) {
    const double wait_once = mul_rn(mul_rn(p.om_alpha, sub_rn(x, p.u_star)), p.inv_cost);
    const double now = sub_rn(mul_rn(x, p.inv_cost), lambda);
    return x > p.u_star && wait_once < now ? wait_once : now;
  }
  if (!(x > 0.0)) return -lambda;
  const double d = sub_rn(p.u_star, x);    // exact near u* (Sterbenz); negative above it
  const double a = mul_rn(p.om_alpha, d);  // what one more epoch of waiting gains
  if (a <= q.gain) return mul_rn(sub_rn(q.gain, a), p.inv_cost);  // x >= theta: n* = 1
  // n* = ceil(log(a / g) / mu T), a / g > 1: log1p((a - g) / g) keeps the digits near a = g; n* is
  // at most tau for x >= 0, which also clamps a / g = inf. The minimum over n* - 1, n*, n* + 1
  // repairs a ceiling that lands one off.
  const double n_max = double(q.period) + 1.0;
  const double r = whittle_log1p(sub_rn(a, q.gain) / q.gain) / p.mu_t;
  double n0 = r < n_max ? ceil(r) : n_max;
  if (!(n0 >= 1.0)) n0 = 1.0;
  double gamma = 0.0;
  bool first = true;
  for (int step = -1; step <= 1; ++step) {
    const double n = n0 + double(step);
    if (!(n >= 1.0)) continue;
    const double v = sub_rn(mul_rn(n, q.gain), mul_rn(d, -fp_expm1(mul_rn(-p.mu_t, n))));
    if (first || v < gamma) gamma = v, first = false;
  }
  return mul_rn(gamma, p.inv_cost);
}

}  // namespace crawleval
