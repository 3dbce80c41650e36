// The crawling model of Avrachenkov & Borkar ("Whittle index policy for crawling ephemeral
// content", Inria RR-8702, sections 2-7), written once for every backend.
//
// Source i publishes content at Poisson rate lambda_i; an item has initial utility xi (mean xi_i)
// that decays as exp(-mu_i t). The crawler acts every epoch of length T. With
//     alpha = exp(-mu T),   u = lambda xi (1 - alpha) / mu,   u* = u / (1 - alpha) = lambda xi /
//     mu,
// the state X (utility waiting at the source) moves as
//     passive:  X' = alpha X + U          (U = u in the deterministic model, eq. 2)
//     crawled:  reward X, then X' = U     (eq. 3; eq. 19 for the stochastic model)
// where in the stochastic model U is the decayed utility of the epoch's arrivals (see rng.hpp).
//
// Whittle index (Theorem 1). Write y(x) = 1 - x/u* (the fraction of u* still missing) and
//     L_k(x) = [ u* (1 - alpha^k) - k (1 - alpha) (u* - x) ] / C,       k = 0, 1, 2, ...
// L_k(x) is the subsidy at which "crawl now, at age k" and "wait one more epoch" are equally good
// for a source whose period would otherwise be k. Theorem 1 evaluates L_k at
//     k = eta(x) = ceil(log_alpha y(x)),
// and because L_{k+1} - L_k = u* (1 - alpha)(alpha^k - y) / C changes sign exactly there,
//     gamma(x) = max_k L_k(x).                                                          (*)
// (*) is what makes the numerics safe: a ceil that lands one off next to a grid point is repaired
// by also looking at the neighbours, and gamma is continuous at the grid points x_k = (1 - alpha^k)
// u* where L_k = L_{k+1}. Properties, all tested: gamma is increasing and continuous on [0, u*),
// gamma(x) -> u*/C as x -> u*, gamma(0) = 0, gamma(u) = (1 - alpha) u / C.
//
// Grid states (the remark after Theorem 1): a source crawled at least once is at x_k for its age k,
// where y = alpha^k exactly, so eta = k and gamma = [u* - alpha^k (u* + k (1 - alpha) u*)]/C: no
// logarithm. The fast deterministic paths track (k, 1 - alpha^k) by multiply-adds only
// (GridTracker below); the general whittle_index(x) serves arbitrary states.
//
// States at or above u* are transient (they only come from a user-given initial state, and never
// return once crawled). We extend the index there by gamma(x) = x / C. This is the index the
// average- reward dynamic program gives in that region: for a subsidy lambda >= u*/C the source is
// never crawled in steady state, so crawling at x is worth exactly x against a subsidy C lambda,
// and the indifference point is x = C lambda. The extension is continuous at u* (value u*/C) and
// increasing. The same formula covers u = 0 (lambda xi = 0): then u* = 0 and every state is "above"
// u*.
//
// Accuracy: L_k subtracts terms of size u* (1 - alpha^k) to produce a value that, for small states
// and small mu T, is of size k (1 - alpha) x. Its absolute error is a few ulps of u* (1 - alpha^k),
// so the relative error is about 1e-16 / (mu T) there (1e-11 for mu T = 1e-5); at states near u*,
// or for mu T of order one, the index is accurate to a few ulps.
#pragma once

#include <cmath>
#include <cstdint>

#include "crawleval/base/fp.hpp"
#include "crawleval/base/hd.hpp"

namespace crawleval {

/// The index's two transcendental functions (whittle_argmax, once per source and epoch for states
/// off the grid). On the host they are SLEEF's deterministic log1p and expm1 (host/engine/
/// index_math.cpp: the "cinz" variants, without fused multiply-add, 1-ulp accurate like libm's),
/// which return the same bits whether called one value at a time or eight per AVX-512 instruction:
/// the CPU engines' vector passes (host/engine/cpu/whittle_avx512.cpp) compute the reference's
/// index bit for bit. On the GPU they are CUDA's.
#if !defined(__CUDA_ARCH__)
double index_log1p(double v);
double index_expm1(double v);
#endif
CE_HD_INLINE double whittle_log1p(double v) {
#if defined(__CUDA_ARCH__)
  return fp_log1p(v);
#else
  return index_log1p(v);
#endif
}
CE_HD_INLINE double whittle_expm1(double v) {
#if defined(__CUDA_ARCH__)
  return fp_expm1(v);
#else
  return index_expm1(v);
#endif
}

/// Per-source constants, derived once from (lambda, xi, mu, cost) and the epoch length T.
struct SourceParams {
  double alpha;     ///< exp(-mu T): fraction of waiting utility left after one epoch
  double om_alpha;  ///< 1 - alpha, computed with expm1 so that small mu T keeps its digits
  double u_star;    ///< lambda xi / mu: limit of the state of a never-crawled source
  double mu_t;      ///< mu T = -log(alpha); the index uses it instead of log(alpha)
  double inv_cost;  ///< 1 / C
  double lambda_t;  ///< lambda T: mean number of arrivals per epoch (stochastic model)
  double xi;        ///< mean initial utility of one arrival (stochastic model)
  double x_cap;     ///< largest expected state: u*, or u* (1 - alpha^E) with expiry E
  double alpha_e;   ///< alpha^E: weight of the content that expires (0 without expiry)
  uint32_t expiry;  ///< E: content older than E epochs is dropped; 0 = never
};

/// derive_params with alpha = fp_exp(-mul_rn(mu, T)) already known (compact columns hold it).
CE_HD_INLINE SourceParams derive_params_given_alpha(double lambda, double xi, double mu,
                                                    double cost, double T, double alpha,
                                                    uint32_t expiry = 0) {
  SourceParams p;
  p.mu_t = mul_rn(mu, T);
  p.alpha = alpha;
  p.om_alpha = -fp_expm1(-p.mu_t);
  p.u_star = mul_rn(lambda, xi) / mu;
  p.inv_cost = 1.0 / cost;
  p.lambda_t = mul_rn(lambda, T);
  p.xi = xi;
  p.expiry = expiry;
  p.alpha_e = expiry ? fp_exp(mul_rn(-p.mu_t, double(expiry))) : 0.0;
  p.x_cap = expiry ? mul_rn(p.u_star, -fp_expm1(mul_rn(-p.mu_t, double(expiry)))) : p.u_star;
  return p;
}

/// expiry: E in epochs (content that arrived more than E epochs ago is dropped), 0 = never.
CE_HD_INLINE SourceParams derive_params(double lambda, double xi, double mu, double cost, double T,
                                        uint32_t expiry = 0) {
  return derive_params_given_alpha(lambda, xi, mu, cost, T, fp_exp(-mul_rn(mu, T)), expiry);
}

/// u = E[U] = lambda xi (1 - alpha) / mu: expected utility gathered in one epoch (eq. 1).
CE_HD_INLINE double drift(const SourceParams& p) { return mul_rn(p.u_star, p.om_alpha); }

/// Passive transition (eq. 2 / eq. 19): X' = alpha X + U.
CE_HD_INLINE double passive_next(double x, double arrivals, const SourceParams& p) {
  return add_rn(mul_rn(p.alpha, x), arrivals);
}

/// True where the index uses its extension x / C: x >= u* (also when x/u* rounds to 1, where the
/// logarithm of y = 1 - x/u* would be -inf).
CE_HD_INLINE bool at_or_above_u_star(double x, const SourceParams& p) {
  return !(x < p.u_star) || !(x / p.u_star < 1.0);
}

/// L_k(x) of (*) given k and 1 - alpha^k. The single formula behind every Whittle evaluation.
/// Taking 1 - alpha^k (not alpha^k) keeps its digits when mu T k is small.
CE_HD_INLINE double whittle_line(double x, double k, double om_alpha_k, const SourceParams& p) {
  return mul_rn(
      sub_rn(mul_rn(p.u_star, om_alpha_k), mul_rn(mul_rn(k, p.om_alpha), sub_rn(p.u_star, x))),
      p.inv_cost);
}

/// For 0 < x < u*: the maximising k of (*) and 1 - alpha^k. Starts from eta = ceil(log_alpha y)
/// (with log_alpha y = -log1p(-x/u*) / (mu T)) and checks both neighbours. One expm1: the
/// neighbours' 1 - alpha^(k +- 1) follow from 1 - alpha^k by the grid recurrences
/// 1 - alpha^(k+1) = (1 - alpha) + alpha (1 - alpha^k) and its inverse (sums of non-negative terms,
/// or a difference of at most a factor k / (k - 1) cancellation).
/// Below this alpha, whittle_argmax computes 1 - alpha^(k-1) with expm1 instead of from 1 -
/// alpha^k.
inline constexpr double kNeighbourAlpha = 1e-3;
CE_HD_INLINE void whittle_argmax(double x, const SourceParams& p, double* k_out, double* om_k_out) {
  const double r = -whittle_log1p(-x / p.u_star) / p.mu_t;  // log_alpha y(x) > 0
  const double k = ceil(r);
  const double om_k = -whittle_expm1(mul_rn(-p.mu_t, k));
  double best_k = k, best_om = om_k;
  double best = whittle_line(x, k, om_k, p);
  if (k >= 1.0) {
    // 1 - alpha^(k-1): 0 at k = 1. From om_k by (1 - alpha^k - (1 - alpha)) / alpha while that
    // keeps its digits (the subtraction's rounding grows as 1 / alpha); below kNeighbourAlpha
    // directly (found by fuzz_csv: alpha = 6.3e-16 made it 36.9 where the index is 34.97).
    const double om = k == 1.0                    ? 0.0
                      : p.alpha > kNeighbourAlpha ? sub_rn(om_k, p.om_alpha) / p.alpha
                                                  : -whittle_expm1(mul_rn(-p.mu_t, k - 1.0));
    const double v = whittle_line(x, k - 1.0, om, p);
    if (v > best) best = v, best_k = k - 1.0, best_om = om;
  }
  const double om = add_rn(p.om_alpha, mul_rn(p.alpha, om_k));
  const double v = whittle_line(x, k + 1.0, om, p);
  if (v > best) best = v, best_k = k + 1.0, best_om = om;
  *k_out = best_k;
  *om_k_out = best_om;
}

/// The Whittle index gamma(x) of Theorem 1 for any state x >= 0 (see the header comment for the
/// extension above u*). Never NaN for valid parameters (mu > 0, lambda, xi >= 0, cost > 0, finite).
CE_HD_INLINE double whittle_index(double x, const SourceParams& p) {
  if (at_or_above_u_star(x, p) || !(x < p.x_cap)) return mul_rn(x, p.inv_cost);  // x >= u*
  if (!(x > 0.0)) return 0.0;  // empty source: eta = 0
  double k, om_k;
  whittle_argmax(x, p, &k, &om_k);
  return whittle_line(x, k, om_k, p);
}

/// Age tracking for deterministic states on (or moving along) the index grid: keeps k = eta and
/// 1 - alpha^k so that the index needs no transcendental function per epoch. A passive epoch maps
/// y -> alpha y, hence eta -> eta + 1 and 1 - alpha^(eta+1) = (1 - alpha) + alpha (1 - alpha^eta)
/// (a sum of non-negative terms: no cancellation); a crawl resets the state to u = x_1 (eta = 1).
/// kAbove marks a state at or above u* (index x / C).
/// kGeneral marks a state whose position passed kMaxAge (a given start near u*, or 4.3e9 passive
/// epochs): its age no longer fits the word, so its index is the general one, whittle_index(x),
/// until its next crawl. (The age used to stop at kMaxAge while 1 - alpha^k went on: the index
/// of the wrong age, and the small engine's crawls differed from the reference's; a hostile pass.)
struct GridTracker {
  static constexpr uint32_t kAbove = 0xFFFFFFFFu;
  static constexpr uint32_t kGeneral = 0xFFFFFFFEu;
  static constexpr uint32_t kMaxAge = 0xFFFFFFF0u;

  CE_HD_INLINE static void init(double x0, const SourceParams& p, uint32_t* eta, double* om_eta) {
    if (at_or_above_u_star(x0, p)) {
      *eta = kAbove, *om_eta = 1.0;
    } else if (!(x0 > 0.0)) {
      *eta = 0, *om_eta = 0.0;
    } else {
      double k, om;
      whittle_argmax(x0, p, &k, &om);
      *eta = k < double(kMaxAge) ? uint32_t(k) : kGeneral;
      *om_eta = om;
    }
  }
  CE_HD_INLINE static void crawled(const SourceParams& p, uint32_t* eta, double* om_eta) {
    *eta = 1, *om_eta = p.om_alpha;
  }
  CE_HD_INLINE static void passive(const SourceParams& p, uint32_t* eta, double* om_eta) {
    if (*eta == kAbove || *eta == kGeneral) return;
    *eta = *eta + 1 < kMaxAge ? *eta + 1 : kGeneral;
    *om_eta = add_rn(p.om_alpha, mul_rn(p.alpha, *om_eta));
  }
  CE_HD_INLINE static double index(double x, uint32_t eta, double om_eta, const SourceParams& p) {
    if (eta == kAbove) return mul_rn(x, p.inv_cost);
    if (eta == kGeneral) return whittle_index(x, p);
    return whittle_line(x, double(eta), om_eta, p);
  }
};

/// Deterministic state in one 32-bit word, for the GPU's wide path where memory traffic is the
/// cost: on the grid the word is the age eta and the state is x_eta = u* (1 - alpha^eta), so the
/// state, its index and its transition need no other storage (one expm1 per source and epoch,
/// which the GPU does for free). A source that started off the grid (start "full" or "given") and
/// has not been crawled yet is flagged kOffGrid; its state is u* - alpha^t (u* - x0) at epoch t and
/// its index the general formula. A crawl puts every source on the grid (eta = 1).
//
// The same word serves the belief observation model: the policy sees only the expected state given
// the crawl history, which is value(). With expiry E the expected state stops growing at age E:
// x_k = u* (1 - alpha^min(k, E)) (a full start is age kMaxAge), and the index is that of the
// deterministic expiry model: Theorem 1's L_k below age E, x_cap / C from age E on.
struct AgeState {
  static constexpr uint32_t kOffGrid = 0x80000000u;
  static constexpr uint32_t kMaxAge = 0x7FFFFFF0u;

  /// The state at epoch `epoch`; on the grid also 1 - alpha^eta (else 0).
  CE_HD_INLINE static double value(uint32_t w, uint32_t epoch, double x0, const SourceParams& p,
                                   double* om_eta) {
    if (w & kOffGrid) {
      *om_eta = 0.0;
      return sub_rn(p.u_star, mul_rn(fp_exp(mul_rn(-p.mu_t, double(epoch))), sub_rn(p.u_star, x0)));
    }
    const uint32_t k = p.expiry && w > p.expiry ? p.expiry : w;  // content expires after E epochs
    *om_eta = -fp_expm1(mul_rn(-p.mu_t, double(k)));
    return mul_rn(p.u_star, *om_eta);
  }
  CE_HD_INLINE static double index(uint32_t w, double x, double om_eta, const SourceParams& p) {
    if (w & kOffGrid) return whittle_index(x, p);
    if (p.expiry && w >= p.expiry) return mul_rn(p.x_cap, p.inv_cost);  // saturated: no gain
    return whittle_line(x, double(w), om_eta, p);
  }
  /// Epochs since the last crawl (off the grid: since the start, plus one).
  CE_HD_INLINE static double age(uint32_t w, uint32_t epoch) {
    return (w & kOffGrid) ? double(epoch) + 1.0 : double(w);
  }
  CE_HD_INLINE static uint32_t next(uint32_t w, bool crawled) {
    if (crawled) return 1;
    if (w & kOffGrid) return w;
    return w < kMaxAge ? w + 1 : w;
  }
};

/// Passive transition with expiry (learning paper, section II): the content of the epoch E epochs
/// back leaves the state, X' = alpha X + U_t - alpha^E U_(t-E), once the state holds E epochs of
/// content (age >= E). Without expiry this is passive_next.
CE_HD_INLINE double passive_next_expiring(double x, double arrivals, double expired,
                                          const SourceParams& p) {
  return sub_rn(add_rn(mul_rn(p.alpha, x), arrivals), mul_rn(p.alpha_e, expired));
}

/// The relaxed single-source problem behind the Lagrangian bound (research report, sections 4-6):
/// a passive epoch earns a subsidy c = C lambda, a crawl earns the state. Crawling every `k`
/// epochs earns f(k) = [c (k - 1) + x_k] / k = c + (x_k - c) / k per epoch (x_k = u* (1 -
/// alpha^min(k, E))); never crawling earns c. Returns the gain over never crawling,
/// beta(lambda) - c = max(0, max_k (x_k - c) / k), and the best period (0 = never). The gain is
/// computed from x_k - c alone: adding c first and subtracting it later would lose x_k's digits
/// when c is large (a costly source's c = C lambda dwarfs what it earns).
/// (x_k - c) / k is unimodal in k (x_k is concave), and its maximiser is the smallest k whose index
/// [(k + 1) x_k - k x_(k+1)] / C reaches lambda: a continuous estimate of it, then a climb.
/// Periods are searched up to 2^53 epochs; `period` holds at most kMaxRelaxedPeriod (a longer
/// one is never reached in a run). (The search stopped at 2^32 - 16: a bound below the relaxed
/// optimum where mu T and M are tiny; a hostile pass.)
/// `near_u_star`: compute x_k - c as (u* - c) - u* alpha^k where c > u* / 2 (u* - c is exact
/// there), keeping the digits of a gain that is small against u* (c within 1e-12 of u* left it
/// with a relative error of 0.14); the Lagrangian index needs them (lip.hpp), the bound not (its
/// sums are of gains against the budget, and its results stay those of the other form).
inline constexpr uint32_t kMaxRelaxedPeriod = 0xFFFFFFF0u;
CE_HD_INLINE double relaxed_gain(double c, const SourceParams& p, uint32_t* period,
                                 bool near_u_star = false) {
  if (!(c < p.x_cap)) {
    *period = 0;
    return 0.0;
  }
  const double k_max = p.expiry ? double(p.expiry) : 9007199254740992.0;
  const bool from_top = near_u_star && c > 0.5 * p.u_star;
  auto g = [&](double k) {
    const double kk = p.expiry && k > double(p.expiry) ? double(p.expiry) : k;
    if (from_top)
      return sub_rn(sub_rn(p.u_star, c), mul_rn(p.u_star, fp_exp(mul_rn(-p.mu_t, kk)))) / k;
    return sub_rn(mul_rn(p.u_star, -fp_expm1(mul_rn(-p.mu_t, kk))), c) / k;
  };
  // e^-z (1 + z) = 1 - c/u* with z = k mu T approximates the index condition: solve
  // z - log1p(z) = -log r by Newton from its small- and large-z asymptotes (the climb below makes
  // the result exact, so two steps suffice).
  double k = 1.0;
  const double r = sub_rn(1.0, c / p.u_star);
  if (r < 1.0 && r > 0.0) {
    const double lr = -fp_log(r);
    double z = fmax(sqrt(mul_rn(2.0, lr)), add_rn(lr, fp_log1p(lr)));
    for (int it = 0; it < 2; ++it)
      z = sub_rn(z, mul_rn(sub_rn(sub_rn(z, fp_log1p(z)), lr), add_rn(1.0, z)) / z);
    k = ceil(z / p.mu_t);
    if (!(k >= 1.0)) k = 1.0;
    if (k > k_max) k = k_max;
  }
  double gk = g(k);
  for (int it = 0; it < 100000 && k > 1.0; ++it) {  // climb down
    const double gd = g(k - 1.0);
    if (!(gd >= gk)) break;
    k -= 1.0, gk = gd;
  }
  for (int it = 0; it < 100000 && k < k_max; ++it) {  // climb up
    const double gu = g(k + 1.0);
    if (!(gu > gk)) break;
    k += 1.0, gk = gu;
  }
  if (!(gk > 0.0)) {
    *period = 0;
    return 0.0;
  }
  *period = k < double(kMaxRelaxedPeriod) ? uint32_t(k) : kMaxRelaxedPeriod;
  return gk;
}

/// beta(lambda) = c + relaxed_gain: the best average reward of the relaxed problem.
CE_HD_INLINE double relaxed_value(double c, const SourceParams& p, uint32_t* period) {
  return add_rn(c, relaxed_gain(c, p, period));
}

}  // namespace crawleval
