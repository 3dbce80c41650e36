// The freshness model: pages that change, a crawler that keeps copies of them (Cho & Garcia-Molina
// 2003; Azar et al., PNAS 2018; Kolobov et al., NeurIPS 2019 and SIGIR 2019), on the same epoch
// clock as the crawling model (model.hpp), written once for every backend.
//
// Source i changes at Poisson rate D_i (changes per unit time) and has importance w_i and crawl
// cost C_i. The crawler acts at the start of every epoch of length T, within the budget M (sum of
// the crawled sources' costs) and, where the source's host is constrained, at most m_h crawls of
// host h per epoch (politeness). A crawl fetches the current version: the copy is fresh again.
// N_i(t) counts the changes since the copy was fetched.
//
// Observation. Incompletely observed (IO) sources: the crawler knows only the age a_i, the epochs
// since the last crawl. Completely observed (CO) sources (sitemaps, pings): it also sees every
// change as it happens, so it knows N_i.
//
// Objectives, integrated over continuous time along the simulated change times (the changes of
// an epoch are a Poisson process drawn from the counter-based draws, rng.hpp; crawls happen at the
// epoch starts):
//   binary:   freshness  w 1[N(t) = 0]              (Cho & Garcia-Molina; Azar et al.)
//   harmonic: penalty    w H(N(t)), H(n) = 1 + 1/2 + ... + 1/n   (Kolobov et al. 2019)
// Rewards are per epoch: the binary freshness, or minus the harmonic penalty, of the epoch, so that
// both objectives are maximised like the crawling model's reward.
//
// Expected rewards. For a copy fetched a epochs before the start of this epoch (a = 0: crawled
// now), N(s) ~ Poisson(D T (a + s)) at time s in [0, 1) of the epoch, and the expected reward of
// the epoch is
//   binary:   r(a) = w beta^a phi,               beta = exp(-D T), phi = (1 - beta) / (D T)
//   harmonic: r(a) = -w [G(D T (a + 1)) - G(D T a)] / (D T),
// where E[H(Poisson(z))] = Ein(z) = integral_0^z (1 - e^-y) / y dy (the entire exponential
// integral) and G(z) = z Ein(z) - z - e^-z is its antiderivative. Their sums over a period,
// F_k = r(0) + ... + r(k - 1), are
//   binary:   F_k = w (1 - beta^k) / (D T)
//   harmonic: F_k = -w [G(D T k) + 1] / (D T).
//
// The index (the per-source relaxed problem, as the research report derives the Whittle index of
// the crawling model). Relax the budget with a price lambda per unit of cost. An IO source's age
// moves deterministically, so its relaxed problem's best policy is periodic: crawl every k epochs,
// earning (F_k - lambda C) / k per epoch. r is decreasing, so F is concave and this is unimodal in
// k; the crawl at age a (period a) and the wait (period a + 1) are equally good at
//   gamma(a) = [(a + 1) F_a - a F_(a+1)] / C = [F_a - a r(a)] / C = sum_{j < a} (r(j) - r(a)) / C,
// which increases with a (gamma(a+1) - gamma(a) = (a + 1)(r(a) - r(a + 1)) / C >= 0): the source
// is indexable and gamma is its Whittle index. Binary: gamma(a) = w [(1 - beta^a) / (D T) - a
// beta^a phi] / C, tending to w / (D T C); harmonic: unbounded (an IO source is never left alone).
// A CO source is fresh until it changes: crawling a fresh copy gains nothing (index 0). Once it
// has changed, under the binary objective its relaxed choice is between crawling at the first epoch
// start after every change (reward w phi per epoch, a crawl in a fraction 1 - beta of the epochs)
// and never crawling again (0): the index is w phi / ((1 - beta) C) = w / (D T C). Under the
// harmonic objective with n >= 1 observed changes the relaxed choice is a threshold (crawl once n
// changes are missed). In continuous time (crawls at the changes) the threshold-k policy has
// penalty H(k) - 1 per unit time and crawl rate D / k, so thresholds n and n + 1 are equally good
// at the price n / D: the index is w n / (D C). On the epoch clock we use
//   gamma_CO(n) = w [Ein(m) / (m (1 - beta)) + (n - 1) / m + n / (2 (n + 1)) - 1/4] / C,  m = D T,
// whose first term is exact at n = 1 (the penalty saved by crawling now rather than at the next
// epoch start, per crawl saved: E[integral_0^1 1 / (1 + K(s)) ds] = Ein(m) / m), whose slope in n
// is the continuous-time one, and which is within 2% of a numerical Whittle index for m in
// [0.01, 6] and n <= 16 (tests/test_freshness.cpp; docs/freshness.md).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "crawleval/base/hd.hpp"
#include "crawleval/model/rng.hpp"

namespace crawleval {

enum class Objective : int { binary = 0, harmonic = 1 };

/// index: the Whittle-type index of freshness.hpp for the run's objective.
/// greedy: the expected reward a crawl now adds to this epoch, per unit of cost.
/// lambda_crawl, lambda_crawl_approx, binary_lambda_crawl, uniform, proportional: crawl rates
/// (rates below) turned into an epoch schedule that respects the budget as the crawling model's
/// static policy does: an IO source scores age x rho T (how overdue it is relative to its period
/// 1 / rho), a CO source under lambda_crawl(_approx) scores 1 (due) once one of its changes since
/// the last crawl won its coin (probability p; freshness rates), else 0.
/// random: a uniform draw.
/// nutch_adaptive: Apache Nutch's adaptive re-crawl interval (nutch.hpp): a per-URL state the
/// engines carry and score by nutch_score, not by fresh_score.
/// custom: a user's policy compiled into the CPU engines (custom_fresh_policy.hpp, the header
/// CMake's CRAWLEVAL_FRESH_POLICY names), scored by custom::fresh_score.
enum class FreshPolicy : int {
  index = 0,
  greedy = 1,
  lambda_crawl = 2,
  lambda_crawl_approx = 3,
  binary_lambda_crawl = 4,
  uniform = 5,
  proportional = 6,
  random = 7,
  nutch_adaptive = 8,
  custom = 9
};

/// Per-source constants of the freshness model, derived once from (D, w, C) and T.
struct FreshParams {
  double rate_t;    ///< D T: expected changes per epoch
  double beta;      ///< exp(-D T): probability of an epoch without change
  double om_beta;   ///< 1 - beta (expm1: keeps its digits for small D T)
  double weight;    ///< w
  double inv_cost;  ///< 1 / C
};

CE_HD_INLINE FreshParams derive_fresh_params(double rate, double weight, double cost, double T) {
  FreshParams p;
  p.rate_t = rate * T;
  p.beta = exp(-p.rate_t);
  p.om_beta = -expm1(-p.rate_t);
  p.weight = weight;
  p.inv_cost = 1.0 / cost;
  return p;
}

/// phi = (1 - beta) / (D T): the expected fresh fraction of an epoch that starts fresh (1 at D =
/// 0).
CE_HD_INLINE double fresh_fraction(const FreshParams& p) {
  return p.rate_t > 0.0 ? p.om_beta / p.rate_t : 1.0;
}

namespace detail {
/// Ein(z_l) for 0 < z_l <= 4 by its power series (terms (-1)^(k+1) z^k / (k k!), a few ulps of
/// cancellation there), L points side by side: their Horner chains are independent, so a pair
/// costs about the latency of one (each lane's operations are those of one point alone). Each
/// point's polynomial is split into its even and odd coefficients, two Horner chains in z^2 of
/// half the length (the series is latency-bound: 34 dependent multiply-adds one after another).
template <int L>
CE_HD_INLINE void ein_series(const double (&z)[L], double (&out)[L]) {
  // The coefficients (-1)^(k+1) / (k k!), k = 1..34 (the last below 1e-18 at z = 4), correctly
  // rounded.
  static const double c[34] = {1.0,
                               -0.25,
                               0.05555555555555555,
                               -0.010416666666666666,
                               0.0016666666666666668,
                               -0.0002314814814814815,
                               2.834467120181406e-05,
                               -3.1001984126984127e-06,
                               3.0619243582206544e-07,
                               -2.755731922398589e-08,
                               2.27746439867652e-09,
                               -1.7397297489890083e-10,
                               1.2353110643708935e-11,
                               -8.193389712664089e-13,
                               5.0981091545465446e-14,
                               -2.9871733327421158e-15,
                               1.6537983849091297e-16,
                               -8.677337204770125e-18,
                               4.326650129802279e-19,
                               -2.0551588116560825e-20,
                               9.32044812542441e-22,
                               -4.0439960874775335e-23,
                               1.6818131176655147e-24,
                               -6.715573212900493e-26,
                               2.5787801137537893e-27,
                               -9.53690870471076e-29,
                               3.401366616220572e-30,
                               -1.1713890132392279e-31,
                               3.8999872022233505e-33,
                               -1.2566625429386353e-34,
                               3.922984005011348e-36,
                               -1.1876221108921073e-37,
                               3.489798672961197e-39,
                               -9.962228045650476e-41};
  double even[L], odd[L], z2[L];
  CE_UNROLL
  for (int l = 0; l < L; ++l) even[l] = c[32], odd[l] = c[33], z2[l] = z[l] * z[l];
  for (int k = 30; k >= 0; k -= 2) {
    CE_UNROLL
    for (int l = 0; l < L; ++l) {
      even[l] = even[l] * z2[l] + c[k];
      odd[l] = odd[l] * z2[l] + c[k + 1];
    }
  }
  CE_UNROLL
  for (int l = 0; l < L; ++l) out[l] = (even[l] + odd[l] * z[l]) * z[l];
}

/// Ein(z_l) for 4 < z_l <= 40: E1(z) + log z + Euler's gamma, with E1 by its continued fraction
/// e^-z / (z + 1 - 1 / (z + 3 - 4 / (z + 5 - ...))) (modified Lentz), L points side by side, each
/// stopped where it alone would stop.
template <int L>
CE_HD_INLINE void ein_fraction(const double (&z)[L], double (&out)[L]) {
  const double tiny = 1e-300;
  double b[L], c[L], d[L], h[L];
  bool done[L];
  CE_UNROLL
  for (int l = 0; l < L; ++l) {
    b[l] = z[l] + 1.0, c[l] = 1.0 / tiny, d[l] = 1.0 / b[l], h[l] = d[l];
    done[l] = false;
  }
  for (int k = 1; k < 200; ++k) {
    const double a = -double(k) * double(k);
    bool all = true;
    CE_UNROLL
    for (int l = 0; l < L; ++l) {
      if (done[l]) continue;
      b[l] += 2.0;
      d[l] = 1.0 / (a * d[l] + b[l]);
      c[l] = b[l] + a / c[l];
      const double del = c[l] * d[l];
      h[l] *= del;
      done[l] = fabs(del - 1.0) < 1e-16;
      all = all && done[l];
    }
    if (all) break;
  }
  CE_UNROLL
  for (int l = 0; l < L; ++l) out[l] = h[l] * exp(-z[l]) + log(z[l]) + 0.57721566490153286061;
}
}  // namespace detail

/// Ein(z) = integral_0^z (1 - e^-y) / y dy = E[H(Poisson(z))], z >= 0: the power series up to
/// z = 4, E1(z) + log z + Euler's gamma above, with E1 by its continued fraction.
CE_HD_INLINE double entire_exp_integral(double z) {
  if (!(z > 0.0)) return 0.0;
  // Above 40, E1(z) < e^-z / z is below an ulp of log z + gamma.
  if (z > 40.0) return log(z) + 0.57721566490153286061;
  const double at[1] = {z};
  double out[1];
  if (z <= 4.0)
    detail::ein_series<1>(at, out);
  else
    detail::ein_fraction<1>(at, out);
  return out[0];
}

namespace detail {
/// harmonic_period_integral's series below z = 1/2, L points side by side: z^2 times Horner on the
/// coefficients (-1)^(m+1) / (m m! (m + 1)), m = 1..17 (correctly rounded; the first term left
/// out is below 1e-21 of the sum there).
template <int L>
CE_HD_INLINE void period_integral_series(const double (&z)[L], double (&out)[L]) {
  static const double c[17] = {0.5,
                               -0.08333333333333333,
                               0.013888888888888888,
                               -0.0020833333333333333,
                               0.0002777777777777778,
                               -3.306878306878307e-05,
                               3.5430839002267575e-06,
                               -3.4446649029982366e-07,
                               3.061924358220655e-08,
                               -2.505210838544172e-09,
                               1.8978869988971e-10,
                               -1.3382536530684679e-11,
                               8.823650459792096e-13,
                               -5.462259808442726e-14,
                               3.1863182215915904e-15,
                               -1.7571607839659504e-16,
                               9.187768805050722e-18};
  double sum[L];
  CE_UNROLL
  for (int l = 0; l < L; ++l) sum[l] = c[16];
  for (int k = 15; k >= 0; --k) {
    CE_UNROLL
    for (int l = 0; l < L; ++l) sum[l] = sum[l] * z[l] + c[k];
  }
  // (z / 2 first, then z: z^2 would underflow below 1e-154 before the product does.)
  CE_UNROLL
  for (int l = 0; l < L; ++l) out[l] = sum[l] * z[l] * z[l];
}
}  // namespace detail

/// G(z) + 1 = z Ein(z) - z - expm1(-z) = integral_0^z Ein: the harmonic penalty of a period, in
/// units of w / (D T). Below z = 1/2 its power series sum_m (-1)^(m+1) z^(m+1) / (m m! (m + 1)),
/// whose first term dominates: the closed form cancels there (z^2 / 2 from terms of size z).
CE_HD_INLINE double harmonic_period_integral(double z) {
  if (!(z > 0.0)) return 0.0;
  if (z < 0.5) {
    const double at[1] = {z};
    double out[1];
    detail::period_integral_series<1>(at, out);
    return out[0];
  }
  return z * entire_exp_integral(z) - z - expm1(-z);
}

/// The branches of harmonic_period_integral: points of one branch are evaluated side by side (L
/// lanes, each lane's operations those of the point alone: the same bits as one at a time).
enum class PeriodBranch : int {
  zero = 0,
  series = 1,
  ein_series = 2,
  ein_fraction = 3,
  asymptote = 4
};
CE_HD_INLINE PeriodBranch period_branch(double z) {
  if (!(z > 0.0)) return PeriodBranch::zero;
  if (z < 0.5) return PeriodBranch::series;
  if (z <= 4.0) return PeriodBranch::ein_series;
  if (z <= 40.0) return PeriodBranch::ein_fraction;
  return PeriodBranch::asymptote;
}

/// harmonic_period_integral at L points of branch b, bit for bit one at a time. Ein's power series
/// is a chain of dependent multiply-adds and its continued fraction a chain of dependent
/// divisions: L chains side by side fill the core's pipelines where one leaves them idle.
template <int L>
CE_HD_INLINE void harmonic_period_integral_lanes(PeriodBranch b, const double (&z)[L],
                                                 double (&out)[L]) {
  if (b == PeriodBranch::series) return detail::period_integral_series<L>(z, out);
  if (b == PeriodBranch::ein_series || b == PeriodBranch::ein_fraction) {
    double e[L];
    if (b == PeriodBranch::ein_series)
      detail::ein_series<L>(z, e);
    else
      detail::ein_fraction<L>(z, e);
    CE_UNROLL
    for (int l = 0; l < L; ++l) out[l] = z[l] * e[l] - z[l] - expm1(-z[l]);
    return;
  }
  CE_UNROLL
  for (int l = 0; l < L; ++l) out[l] = harmonic_period_integral(z[l]);
}

/// harmonic_period_integral at two points, bit for bit, side by side where both take the same
/// branch (the index's F_a and F_(a+1)).
CE_HD_INLINE void harmonic_period_integral_pair(double z1, double z2, double* i1, double* i2) {
  const PeriodBranch b = period_branch(z1);
  if (b == period_branch(z2)) {
    const double at[2] = {z1, z2};
    double out[2];
    harmonic_period_integral_lanes<2>(b, at, out);
    *i1 = out[0], *i2 = out[1];
  } else {
    *i1 = harmonic_period_integral(z1);
    *i2 = harmonic_period_integral(z2);
  }
}

/// (x + expm1(-x)) / x = sum_{k>=2} (-1)^k x^(k-1) / k!, x > 0, without the cancellation of the
/// closed form for small x and without underflow (x^2 / 2 underflows below x = 1e-154; x / 2 does
/// not). Below x = 1/2 by Horner on the coefficients (-1)^k / k!, k = 2..17 (correctly rounded;
/// the first term left out is below 1e-19 of the sum there).
namespace detail {
/// x_plus_expm1_neg_over_x at L points on one side of 1/2 (`series`: all below), bit for bit one
/// at a time.
template <int L>
CE_HD_INLINE void x_plus_expm1_neg_over_x_lanes(bool series, const double (&x)[L],
                                                double (&out)[L]) {
  if (!series) {
    CE_UNROLL
    for (int l = 0; l < L; ++l) out[l] = (x[l] + expm1(-x[l])) / x[l];
    return;
  }
  static const double c[16] = {0.5,
                               -0.16666666666666666,
                               0.041666666666666664,
                               -0.008333333333333333,
                               0.001388888888888889,
                               -0.0001984126984126984,
                               2.48015873015873e-05,
                               -2.7557319223985893e-06,
                               2.755731922398589e-07,
                               -2.505210838544172e-08,
                               2.08767569878681e-09,
                               -1.6059043836821613e-10,
                               1.1470745597729725e-11,
                               -7.647163731819816e-13,
                               4.779477332387385e-14,
                               -2.8114572543455206e-15};
  double sum[L];
  CE_UNROLL
  for (int l = 0; l < L; ++l) sum[l] = c[15];
  for (int k = 14; k >= 0; --k) {
    CE_UNROLL
    for (int l = 0; l < L; ++l) sum[l] = sum[l] * x[l] + c[k];
  }
  CE_UNROLL
  for (int l = 0; l < L; ++l) out[l] = sum[l] * x[l];
}
}  // namespace detail

CE_HD_INLINE double x_plus_expm1_neg_over_x(double x) {
  const double at[1] = {x};
  double out[1];
  detail::x_plus_expm1_neg_over_x_lanes<1>(!(x >= 0.5), at, out);
  return out[0];
}

/// J_m(x) = integral_0^1 t^m e^(-x t) dt for m = 0..8, x >= 0 (J_m is (-1)^m times the m-th
/// derivative of g(x) = (1 - e^-x) / x). Below x = 4, J_8 = e^-x 8! sum_k x^k / (k + 9)! (a
/// series of positive terms: no cancellation; Horner on correctly rounded coefficients, k <= 27,
/// the first term left out below 1e-19 of the sum there) and the others by the downward
/// recursion J_(m-1) = (x J_m + e^-x) / m, whose two terms are positive and which changes an
/// error by x / m (at most 4^8 / 8! = 1.6 in all); from x = 4 the upward recursion J_m = (m
/// J_(m-1) - e^-x) / x from J_0 = (1 - e^-x) / x, which changes it by m / x (at most 8! / 4^8 =
/// 0.6). One exponential for all nine.
namespace detail {
/// decay_moments at L points on one side of 4 (`series`: all below), bit for bit one at a time.
template <int L>
CE_HD_INLINE void decay_moments_lanes(bool series, const double (&x)[L], double (&j)[L][9]) {
  double e[L];
  CE_UNROLL
  for (int l = 0; l < L; ++l) e[l] = exp(-x[l]);
  if (series) {
    static const double c[28] = {
        0.1111111111111111,     0.011111111111111112,   0.00101010101010101,
        8.417508417508418e-05,  6.475006475006475e-06,  4.625004625004625e-07,
        3.08333641666975e-08,   1.9270852604185937e-09, 1.133579564952114e-10,
        6.297664249733966e-12,  3.3145601314389296e-13, 1.657280065719465e-14,
        7.891809836759357e-16,  3.5871862894360714e-17, 1.5596462127982918e-18,
        6.498525886659549e-20,  2.5994103546638198e-21, 9.997732133322383e-23,
        3.702863753082364e-24,  1.3224513403865587e-25, 4.560177035815719e-27,
        1.5200590119385732e-28, 4.9034161675437846e-30, 1.5323175523574327e-31,
        4.643386522295251e-33,  1.3657019183221324e-34, 3.902005480920378e-36,
        1.0838904113667718e-37};
    double sum[L];
    CE_UNROLL
    for (int l = 0; l < L; ++l) sum[l] = c[27];
    for (int k = 26; k >= 0; --k) {
      CE_UNROLL
      for (int l = 0; l < L; ++l) sum[l] = sum[l] * x[l] + c[k];
    }
    CE_UNROLL
    for (int l = 0; l < L; ++l) j[l][8] = e[l] * sum[l];
    CE_UNROLL
    for (int m = 8; m >= 1; --m) {
      CE_UNROLL
      for (int l = 0; l < L; ++l) j[l][m - 1] = (x[l] * j[l][m] + e[l]) / double(m);
    }
    return;
  }
  CE_UNROLL
  for (int l = 0; l < L; ++l) j[l][0] = -expm1(-x[l]) / x[l];
  CE_UNROLL
  for (int m = 1; m <= 8; ++m) {
    CE_UNROLL
    for (int l = 0; l < L; ++l) j[l][m] = (double(m) * j[l][m - 1] - e[l]) / x[l];
  }
}
}  // namespace detail

CE_HD_INLINE void decay_moments(double x, double (&j)[9]) {
  const double at[1] = {x};
  double out[1][9];
  detail::decay_moments_lanes<1>(x < 4.0, at, out);
  CE_UNROLL
  for (int m = 0; m < 9; ++m) j[m] = out[0][m];
}

namespace detail {
/// fresh_index_io's harmonic branch for 0 < D T <= 1/20 without its factor w / C, a (x +
/// expm1(-x)) / x + x sum_m (-h)^m J_m(x) / (m + 2)! at x = h a, at L points whose x lie in one
/// class (small_rate_class: the sides of decay_moments' and x_plus_expm1_neg_over_x's branches),
/// bit for bit one at a time. x must not be NaN.
CE_HD_INLINE int small_rate_class(double x) { return x < 0.5 ? 0 : x < 4.0 ? 1 : 2; }
template <int L>
CE_HD_INLINE void small_rate_index_lanes(int cls, const double (&a)[L], const double (&h)[L],
                                         double (&out)[L]) {
  double x[L], j[L][9], xe[L], sum[L], hm[L];
  CE_UNROLL
  for (int l = 0; l < L; ++l) x[l] = h[l] * a[l], sum[l] = 0.0, hm[l] = 1.0;
  decay_moments_lanes<L>(cls < 2, x, j);
  x_plus_expm1_neg_over_x_lanes<L>(cls == 0, x, xe);
  double fact = 2.0;  // (m + 2)!
  CE_UNROLL
  for (int m = 0; m <= 8; ++m) {
    CE_UNROLL
    for (int l = 0; l < L; ++l) {
      sum[l] += ((m & 1) ? -hm[l] : hm[l]) * j[l][m] / fact;
      hm[l] *= h[l];
    }
    fact *= double(m + 3);
  }
  CE_UNROLL
  for (int l = 0; l < L; ++l) out[l] = a[l] * xe[l] + x[l] * sum[l];
}
}  // namespace detail

/// F_k: the expected reward of the k epochs after a crawl (r(0) + ... + r(k - 1)).
CE_HD_INLINE double fresh_period_reward(Objective o, double k, const FreshParams& p) {
  if (o == Objective::binary)
    return p.rate_t > 0.0 ? p.weight * -expm1(-p.rate_t * k) / p.rate_t : p.weight * k;
  if (!(p.rate_t > 0.0)) return 0.0;
  return -p.weight * harmonic_period_integral(p.rate_t * k) / p.rate_t;
}

/// r(a): the expected reward of an epoch that starts a epochs after the copy was fetched.
CE_HD_INLINE double fresh_epoch_reward(Objective o, double a, const FreshParams& p) {
  if (o == Objective::binary) return p.weight * exp(-p.rate_t * a) * fresh_fraction(p);
  return fresh_period_reward(o, a + 1.0, p) - fresh_period_reward(o, a, p);
}

/// The index of an IO source at age a (epochs since its last crawl; 0 = just crawled), gamma(a) =
/// [(a + 1) F_a - a F_(a+1)] / C, evaluated without cancellation for any D T > 0 (the closed form
/// subtracts two terms of size a F_a: all its digits are lost where D T a^2 is below an ulp of a,
/// e.g. D T = 1e-24 at any age up to 1e12). With h = D T and x = h a:
///   binary:   gamma = w / (h C) [-expm1(-x) - a (1 - e^-h) e^-x]
///                   = w / (h C) e^-x sum_{k>=2} [x^k + (-1)^k a h^k] / k!   (x < 1/2: every
///             term is >= 0), the closed form above;
///   harmonic: gamma = w / (h^2 C) [x I(x + h) - (x + h) I(x)], I = harmonic_period_integral,
///                   = w / C [a (x + expm1(-x)) / x + x sum_{m>=0} h^m g^(m)(x) / (m + 2)!]
///             (Taylor in h; g(x) = (1 - e^-x) / x = Ein'(x), g^(m) = (-1)^m J_m) for h <= 1/20,
///             where 9 terms reach 1e-17; above, the closed form up to x = 40 (its error is about
///             an ulp times x^2 / h there) and beyond it the same expression with Ein's asymptote,
///             w / (h C) [(x + h) x log1p(h / x) / h - 1], which does not cancel.
///
/// `carry` (may be null): a period reward carried from one call to the next on one source, whose
/// parameters do not change in between. The closed form needs F_a and F_(a+1); a source not
/// crawled is scored at age a + 1 next epoch and needs F_(a+1) again. The call reads F_a from the
/// carry where it holds age a, and leaves F_(a+1) there (or marks it empty where another branch
/// ran): the same bits as the call without it, at one period reward in place of two.
struct PeriodCarry {
  double f = 0.0;     ///< F at age `age`
  double age = -1.0;  ///< -1: empty
};
/// Whether fresh_index_io at age a with this carry takes its branch that reads F_a from the
/// carry (the index policy's common case under the harmonic objective: D T > 1/20, D T a <= 40):
/// then only F_(a+1) is new, I = harmonic_period_integral(D T (a + 1)), and
/// fresh_index_io_carried(a, p, I, carry) gives fresh_index_io's bits and carry.
CE_HD_INLINE bool index_io_carried(Objective o, double a, const FreshParams& p,
                                   const PeriodCarry& carry) {
  return o == Objective::harmonic && carry.age == a && a > 0.0 && p.rate_t > 0.05 &&
         p.rate_t * a <= 40.0;
}
CE_HD_INLINE double fresh_index_io_carried(double a, const FreshParams& p, double i,
                                           PeriodCarry* carry) {
  const double fa = carry->f, fb = -p.weight * i / p.rate_t;
  carry->f = fb, carry->age = a + 1.0;
  return ((a + 1.0) * fa - a * fb) * p.inv_cost;
}

CE_HD_INLINE double fresh_index_io(Objective o, double a, const FreshParams& p,
                                   PeriodCarry* carry = nullptr) {
  // (The carry is marked empty until a branch that fills it: fresh_index_io_carried reads its f.)
  bool have = false;
  if (carry) {
    have = carry->age == a;
    carry->age = -1.0;
  }
  if (!(a > 0.0)) return 0.0;
  const double h = p.rate_t;
  if (o == Objective::binary) {
    if (!(h > 0.0)) return 0.0;  // never changes: never stale
    const double x = h * a;
    if (x < 0.5) {
      // The sum divided by h term by term (x^2 underflows for tiny h): h^(k-1) a^k / k! and
      // a h^(k-1) / k!, from k = 2.
      double sum = 0.0, px = 0.5 * x * a, pa = 0.5 * a * h;
      for (int k = 2; k <= 30; ++k) {
        sum += px + ((k & 1) ? -pa : pa);
        px *= x / double(k + 1);
        pa *= h / double(k + 1);
      }
      return p.weight * exp(-x) * sum * p.inv_cost;
    }
    const double ba = exp(-x);
    return p.weight * (-expm1(-x) / h - a * ba * fresh_fraction(p)) * p.inv_cost;
  }
  if (!(h > 0.0)) return 0.0;  // never changes: no penalty
  if (h <= 0.05) {
    const double at[1] = {a}, rate[1] = {h};
    double out[1];
    detail::small_rate_index_lanes<1>(detail::small_rate_class(h * a), at, rate, out);
    return p.weight * out[0] * p.inv_cost;
  }
  const double x = h * a;
  if (x > 40.0) {
    // There Ein(z) is log z + Euler's gamma to the last bit and expm1(-z) is -1 (z > 40), so
    // I(z) = z log z + z (gamma - 1) + 1 and x I(x + h) - (x + h) I(x) = x (x + h) log1p(h / x) - h
    // exactly: the closed form below subtracts two terms of size a^2 h log x to get that, and its
    // digits run out as x grows (all of them near a = 1e8; at a = 2^53, a + 1 is a). Divided by h
    // twice, in steps that neither overflow nor cancel.
    return p.weight * ((x + h) * (x * log1p(h / x) / h) - 1.0) / h * p.inv_cost;
  }
  // fresh_period_reward at a and a + 1 (the same bits as two calls): F_a carried from the last
  // epoch, or the two evaluated side by side.
  if (have) return fresh_index_io_carried(a, p, harmonic_period_integral(h * (a + 1.0)), carry);
  double i1, i2;
  harmonic_period_integral_pair(h * a, h * (a + 1.0), &i1, &i2);
  const double fa = -p.weight * i1 / h, fb = -p.weight * i2 / h;
  if (carry) carry->f = fb, carry->age = a + 1.0;
  return ((a + 1.0) * fa - a * fb) * p.inv_cost;
}

/// Scores IO sources by fresh_index_io with their carries, L at a time where they take the same
/// branch of it: under the harmonic objective its carried closed form (F_(a+1) by
/// harmonic_period_integral_lanes, by the integral's branch) and its branch for D T <= 1/20
/// (detail::small_rate_index_lanes, by its class); one at a time otherwise. Every source gets
/// fresh_index_io's bits and carry. `put(row, score)` receives a source's score when it is known
/// (for a source in a batch: when the batch is full, or at flush()), so not in the order of add().
template <int L, class Put>
class IndexLanes {
 public:
  IndexLanes(Objective objective, Put put) : objective_(objective), put_(put) {}

  void add(std::size_t row, double a, const FreshParams& p, PeriodCarry* carry) {
    const double h = p.rate_t;
    if (objective_ == Objective::harmonic && a > 0.0 && h > 0.0 && h <= 0.05) {
      carry->age = -1.0;  // (as fresh_index_io leaves it after this branch)
      return push(kSmallRate + detail::small_rate_class(h * a), row, a, p, carry, 0.0);
    }
    if (!index_io_carried(objective_, a, p, *carry)) {
      // The closed form without its carry (a source crawled last epoch): F_a first, then on as a
      // carried source.
      const PeriodBranch first = period_branch(h * a);
      if (objective_ == Objective::harmonic && a > 0.0 && h > 0.05 && h * a <= 40.0 &&
          first != PeriodBranch::zero && first != PeriodBranch::asymptote)
        return push(first == PeriodBranch::series       ? kPrime + 1
                    : first == PeriodBranch::ein_series ? kPrime + 2
                                                        : kPrime + 3,
                    row, a, p, carry, h * a);
      put_(row, fresh_index_io(objective_, a, p, carry));
      return;
    }
    const double z = h * (a + 1.0);
    const PeriodBranch b = period_branch(z);
    if (b == PeriodBranch::asymptote) {  // (a logarithm: nothing to gain side by side)
      put_(row, fresh_index_io_carried(a, p, harmonic_period_integral(z), carry));
      return;
    }
    push(int(b), row, a, p, carry, z);
  }

  void flush() {
    for (int k = 0; k < kKinds; ++k) {  // (F_a's batches first: they feed the others)
      const int kind = (k + kPrime + 1) % kKinds;
      if (batch_[kind].n) run(kind, batch_[kind]);
    }
  }

 private:
  // Batches: F_(a+1) of carried sources by harmonic_period_integral's branch (series,
  // ein_series, ein_fraction: PeriodBranch 1..3), the three small-rate classes, then F_a of
  // sources without their carry by the branch (kPrime + 1..3).
  static constexpr int kSmallRate = 4, kPrime = 6, kKinds = 10;
  struct Lane {
    std::size_t row;
    const FreshParams* p;
    PeriodCarry* carry;
  };
  struct Batch {
    Lane lane[L];
    double a[L], h[L], z[L];
    int n = 0;
  };

  void push(int kind, std::size_t row, double a, const FreshParams& p, PeriodCarry* carry,
            double z) {
    Batch& q = batch_[kind];
    q.lane[q.n] = Lane{row, &p, carry};
    q.a[q.n] = a, q.h[q.n] = p.rate_t, q.z[q.n] = z;
    if (++q.n == L) run(kind, q);
  }

  void run(int kind, Batch& q) {
    for (int l = q.n; l < L; ++l)  // (idle lanes: copies of the first)
      q.a[l] = q.a[0], q.h[l] = q.h[0], q.z[l] = q.z[0];
    double out[L];
    if (kind > kPrime) {
      // F_a = fresh_period_reward(a) (fresh_index_io's F_a, the same bits), carried, and each
      // source on to its F_(a+1).
      harmonic_period_integral_lanes<L>(PeriodBranch(kind - kPrime), q.z, out);
      const int n = q.n;
      q.n = 0;  // (the sources go on to the other batches)
      for (int l = 0; l < n; ++l) {
        const FreshParams& p = *q.lane[l].p;
        *q.lane[l].carry = PeriodCarry{-p.weight * out[l] / p.rate_t, q.a[l]};
        add(q.lane[l].row, q.a[l], p, q.lane[l].carry);
      }
      return;
    }
    if (kind >= kSmallRate) {
      detail::small_rate_index_lanes<L>(kind - kSmallRate, q.a, q.h, out);
      for (int l = 0; l < q.n; ++l) {
        const FreshParams& p = *q.lane[l].p;
        put_(q.lane[l].row, p.weight * out[l] * p.inv_cost);
      }
    } else {
      harmonic_period_integral_lanes<L>(PeriodBranch(kind), q.z, out);
      for (int l = 0; l < q.n; ++l)
        put_(q.lane[l].row, fresh_index_io_carried(q.a[l], *q.lane[l].p, out[l], q.lane[l].carry));
    }
    q.n = 0;
  }

  const Objective objective_;
  Put put_;
  Batch batch_[kKinds];
};

/// E[integral_0^1 (H(n + K(s)) - H(K(s))) ds], K(s) ~ Poisson(D T s): the harmonic penalty that n
/// changes already there add over an epoch. Equals integral_0^1 (1 - (1 - y)^n) / y * (1 -
/// e^(-D T y)) / (D T y) dy, by 16-point Gauss-Legendre (exact for the polynomial part up to n =
/// 16; a smooth integrand beyond).
CE_HD_INLINE double harmonic_excess(uint32_t n, const FreshParams& p) {
  if (n == 0) return 0.0;
  const double x[8] = {0.0950125098376374, 0.2816035507792589, 0.4580167776572274,
                       0.6178762444026438, 0.7554044083550030, 0.8656312023878318,
                       0.9445750230732326, 0.9894009349916499};
  const double wt[8] = {0.1894506104550685, 0.1826034150449236, 0.1691565193950025,
                        0.1495959888165767, 0.1246289712555339, 0.0951585116824928,
                        0.0622535239386479, 0.0271524594117541};
  double sum = 0.0;
  CE_UNROLL
  for (int k = 0; k < 16; ++k) {  // unrolled: constant indices keep the tables out of local memory
    const double y = 0.5 + (k < 8 ? -0.5 : 0.5) * x[k < 8 ? k : k - 8];
    const double w = wt[k < 8 ? k : k - 8];
    // (1 - (1 - y)^n) / y, and (1 - e^(-z y)) / (z y) with its limit 1 at z = 0.
    const double poly = -expm1(double(n) * log1p(-y)) / y;
    const double zy = p.rate_t * y;
    const double decay = zy > 0.0 ? -expm1(-zy) / zy : 1.0;
    sum += w * poly * decay;
  }
  return 0.5 * sum;
}

/// The index of a CO source that has seen n changes since its last crawl (0: fresh, index 0).
CE_HD_INLINE double fresh_index_co(Objective o, uint32_t n, const FreshParams& p) {
  if (n == 0 || !(p.rate_t > 0.0)) return 0.0;
  if (o == Objective::binary) return p.weight / p.rate_t * p.inv_cost;
  const double m = p.rate_t, k = double(n);
  return p.weight *
         (entire_exp_integral(m) / (m * p.om_beta) + (k - 1.0) / m + k / (2.0 * (k + 1.0)) - 0.25) *
         p.inv_cost;
}

/// H(n) = 1 + 1/2 + ... + 1/n: summed up to n = 32, the asymptotic series above (error below
/// 1e-12 there); the same formula on every backend.
namespace detail {
/// H(n) for n <= 32, summed small terms first; a constant expression, so the host's table holds
/// the bits the loop gives at run time (IEEE division and addition, correctly rounded either way).
constexpr double harmonic_sum(uint32_t n) {
  double h = 0.0;
  for (uint32_t j = n; j >= 1; --j) h += 1.0 / double(j);
  return h;
}
struct HarmonicTable {
  double h[33];
  constexpr HarmonicTable() : h{} {
    for (uint32_t n = 0; n <= 32; ++n) h[n] = harmonic_sum(n);
  }
};
inline constexpr HarmonicTable kHarmonicTable{};
}  // namespace detail

CE_HD_INLINE double harmonic_number(uint32_t n) {
  if (n <= 32) {
#if defined(__CUDA_ARCH__)
    return detail::harmonic_sum(n);  // (a loop: a host table is not device memory)
#else
    return detail::kHarmonicTable.h[n];  // (the sampler asks once per change)
#endif
  }
  const double x = double(n), inv2 = 1.0 / (x * x);
  return log(x) + 0.57721566490153286061 + 0.5 / x -
         inv2 * (1.0 / 12.0 - inv2 * (1.0 / 120.0 - inv2 / 252.0));
}

/// One simulated epoch of one source: its freshness and harmonic penalty integrated over the epoch
/// (w times the fresh fraction of the epoch, w times the time-average of H(N)), and the changes
/// the epoch added.
struct FreshEpoch {
  double fresh;
  double penalty;
  uint32_t added;
  /// A change arrived with kMaxChanges already missed (it is not counted, so the harmonic penalty
  /// is understated), or, after fresh_step, the age stood at kMaxFreshAge.
  bool saturated;
};

/// Samples one epoch of a source whose copy has seen n changes at the epoch start (n = 0 after a
/// crawl): the epoch's changes as a Poisson process (gaps -log(V) / (D T) in epoch units, V from
/// `next_uniform`), both objectives integrated along them. Both are measured on the same draws,
/// whatever objective the policy pursues. Counts saturate at kMaxChanges.
inline constexpr uint32_t kMaxChanges = 0x7FFFFFFFu;

template <class Uniform>
CE_HD_INLINE FreshEpoch sample_fresh_epoch(uint32_t n, const FreshParams& p,
                                           Uniform&& next_uniform) {
  FreshEpoch e{0.0, 0.0, 0, false};
  double h = harmonic_number(n);
  if (!(p.rate_t > 0.0)) {
    e.fresh = n == 0 ? p.weight : 0.0;
    e.penalty = p.weight * h;
    return e;
  }
  const double inv = 1.0 / p.rate_t;
  double s = 0.0, fresh = 0.0, penalty = 0.0;
  uint32_t k = 0;
  for (;;) {
    double next = s - log(next_uniform()) * inv;
    if (next > 1.0) next = 1.0;
    if (n + k == 0) fresh += next - s;
    penalty += h * (next - s);
    if (next >= 1.0) break;
    s = next;
    if (n + k < kMaxChanges) {
      ++k;
      h = harmonic_number(n + k);
    } else {
      e.saturated = true;
    }
  }
  e.fresh = p.weight * fresh;
  e.penalty = p.weight * penalty;
  e.added = k;
  return e;
}

/// Rate-based policies that treat CO sources by a coin at each change (LambdaCrawl's Algorithm 2).
CE_HD_INLINE bool coin_policy(FreshPolicy p) {
  return p == FreshPolicy::lambda_crawl || p == FreshPolicy::lambda_crawl_approx;
}

/// What a policy sees of one source, and scores it by (every backend). `p` holds the parameters
/// the policy believes (the learning variant's estimates), `rho` the source's crawl rate under a
/// rate-based policy.
struct FreshView {
  bool complete;
  uint32_t age;      ///< epochs since the last crawl
  uint32_t changes;  ///< changes missed (CO sources only: IO policies do not see it)
  bool want;         ///< CO under a coin policy: one of its changes won the coin
  double rho;
};
/// `carry`: fresh_index_io's, for the index policy (null: none; the same bits either way).
CE_HD_INLINE double fresh_score(FreshPolicy policy, Objective objective, const FreshView& v,
                                const FreshParams& p, double epoch_length, uint64_t seed,
                                uint32_t replication, uint64_t source, uint32_t epoch,
                                PeriodCarry* carry = nullptr) {
  switch (policy) {
    case FreshPolicy::index:
      return v.complete ? fresh_index_co(objective, v.changes, p)
                        : fresh_index_io(objective, double(v.age), p, carry);
    case FreshPolicy::greedy:
      if (v.complete)
        return v.changes == 0 ? 0.0
               : objective == Objective::binary
                   ? p.weight * fresh_fraction(p) * p.inv_cost
                   : p.weight * harmonic_excess(v.changes, p) * p.inv_cost;
      return (fresh_epoch_reward(objective, 0.0, p) -
              fresh_epoch_reward(objective, double(v.age), p)) *
             p.inv_cost;
    case FreshPolicy::random:
      return random_score(seed, replication, source, epoch);
    default:  // rate-based: how overdue relative to the period 1 / rho; CO coin sources: due or not
      return v.complete && coin_policy(policy) ? (v.want ? 1.0 : 0.0)
                                               : double(v.age) * v.rho * epoch_length;
  }
}

inline constexpr uint32_t kMaxFreshAge = 0xFFFFFFF0u;

/// The end of fresh_step, after the epoch's changes are sampled: counts and age advance, and a CO
/// source under a coin policy draws its coin (Stream::crawl_coin) when the epoch brought changes.
CE_HD_INLINE FreshEpoch fresh_step_advance(FreshEpoch e, bool complete, bool coins, double coin_p,
                                           const FreshParams& truth, uint64_t seed,
                                           uint32_t replication, uint64_t source, uint32_t epoch,
                                           uint32_t* age, uint32_t* changes, uint8_t* want) {
  *changes = e.added > kMaxChanges - *changes ? kMaxChanges : *changes + e.added;
  if (*age < kMaxFreshAge)
    ++*age;
  else
    e.saturated = true;
  // (A URL of importance 0 counts for nothing, however far its counts go.)
  e.saturated = e.saturated && truth.weight > 0.0;
  if (e.added && complete && coins && !*want) {
    // "Crawl at a change with probability p": one of the epoch's changes wins.
    const double u =
        uniform(philox_words(seed, source, epoch, replication, Stream::crawl_coin, 0).w[0]);
    const double p = coin_p < 1.0 ? coin_p : 1.0;
    if (u < -expm1(double(e.added) * log1p(-p))) *want = 1;
  }
  return e;
}

/// One source's epoch after the selection (every backend): a crawl resets the copy; the epoch's
/// changes are sampled (Stream::changes) and both objectives integrated; the age advances; a CO
/// source under a coin policy draws its coin (Stream::crawl_coin) when the epoch brought changes.
CE_HD_INLINE FreshEpoch fresh_step(bool crawled, bool complete, bool coins, double coin_p,
                                   const FreshParams& truth, uint64_t seed, uint32_t replication,
                                   uint64_t source, uint32_t epoch, uint32_t* age,
                                   uint32_t* changes, uint8_t* want) {
  if (crawled) *changes = 0, *age = 0, *want = 0;
  DrawStream d(seed, source, epoch, replication, Stream::changes);
  const FreshEpoch e = sample_fresh_epoch(*changes, truth, [&] { return d.next_uniform(); });
  return fresh_step_advance(e, complete, coins, coin_p, truth, seed, replication, source, epoch,
                            age, changes, want);
}

/// The first words of the change stream below which an epoch has no change (rng.hpp's
/// no_arrival_words at D T: its margin covers the freshness sampler's gap, the same expression),
/// 0 where D T is not positive (the sampler's own branch decides there).
inline uint32_t fresh_quiet_words(const FreshParams& truth) {
  return truth.rate_t > 0.0 ? no_arrival_words(truth.rate_t) : 0u;
}

/// fresh_step bit for bit, given block 0 of the source-epoch's change stream (`first`: the words
/// philox_block gives for it, which a CPU engine draws for eight sources at a time) and quiet =
/// fresh_quiet_words(truth): an epoch whose first word is below quiet has no change, its copy's
/// state holds all epoch, and it costs no logarithm (most epochs of a page that changes every few
/// days). Otherwise the sampler reads on from `first`.
CE_HD_INLINE FreshEpoch fresh_step_drawn(bool crawled, bool complete, bool coins, double coin_p,
                                         const FreshParams& truth, uint32_t quiet,
                                         const Words4& first, uint64_t seed, uint32_t replication,
                                         uint64_t source, uint32_t epoch, uint32_t* age,
                                         uint32_t* changes, uint8_t* want) {
  if (crawled) *changes = 0, *age = 0, *want = 0;
  FreshEpoch e;
  if (first.w[0] < quiet) {
    // sample_fresh_epoch's first gap reaches the epoch's end: fresh all epoch when no change was
    // missed, and the penalty H(n) all epoch (1.0 - 0.0 = 1.0: the same products).
    e = FreshEpoch{truth.weight * (*changes == 0 ? 1.0 : 0.0),
                   truth.weight * harmonic_number(*changes), 0, false};
  } else {
    DrawStream d(seed, source, epoch, replication, Stream::changes, first);
    e = sample_fresh_epoch(*changes, truth, [&] { return d.next_uniform(); });
  }
  return fresh_step_advance(e, complete, coins, coin_p, truth, seed, replication, source, epoch,
                            age, changes, want);
}

/// The steady start of an IO source whose relaxed period is `period` (fresh_engine.hpp): its age
/// uniform in 0..period-1 (never crawled: 10^6 epochs, or fewer where its changes would pass
/// 2^30, half the counter, leaving room for the run's: at more than about 1074 changes per epoch)
/// and the changes of those epochs. Returns false where the age or the count had to be cut to
/// kMaxFreshAge or kMaxChanges (periods beyond 2^32 epochs, at budgets that almost never crawl):
/// such a start understates the penalty (of a URL of importance 0, which counts for nothing,
/// never).
CE_HD_INLINE bool fresh_steady_start(double period, const FreshParams& truth, uint64_t seed,
                                     uint32_t replication, uint64_t source, uint32_t* age,
                                     uint32_t* changes) {
  DrawStream d(seed, source, 0xFFFFFFFFu, replication, Stream::fresh_start);
  constexpr double kRoom = 1073741824.0;  // 2^30
  const double a = period >= 1.0                   ? floor(d.next_uniform() * period)
                   : truth.rate_t * 1.0e6 <= kRoom ? 1.0e6
                                                   : floor(kRoom / truth.rate_t);
  const bool age_fits = a < double(kMaxFreshAge);
  *age = uint32_t(age_fits ? a : double(kMaxFreshAge));
  const bool counts = truth.weight > 0.0;  // (importance 0: never reported)
  // The changes of those epochs: a Poisson process in epoch units (long spans: the mean).
  const double span = truth.rate_t * double(*age);
  *changes = 0;
  if (span > 1000.0) {
    const bool count_fits = floor(span) < double(kMaxChanges);
    *changes = uint32_t(count_fits ? floor(span) : double(kMaxChanges));
    return (age_fits && count_fits) || !counts;
  }
  if (span > 0.0) {
    double s = 0.0;
    for (;;) {
      s -= log(d.next_uniform());
      if (s >= span) break;
      ++*changes;
    }
  }
  return age_fits || !counts;
}

}  // namespace crawleval
