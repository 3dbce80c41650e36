// The freshness model's analyses (fresh_engine.hpp): settings, the papers' crawl-rate schedulers,
// their closed-form costs, and the Lagrangian bound.
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "base/chunked_sum.hpp"
#include "base/progress.hpp"
#include "crawleval/analysis/fresh_rates.hpp"
#include "crawleval/base/comm.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/engine/fresh_engine.hpp"
#include "crawleval/model/problem.hpp"

namespace crawleval {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// Threads of the analyses: --threads, or every hardware thread (0). Set by the entry points.
thread_local int analysis_threads = 0;
int threads_of(const FreshConfig& cfg) {
  return cfg.threads > 0 ? cfg.threads : omp_get_max_threads();
}
/// Sets analysis_threads for the duration of an entry point.
struct ThreadsScope {
  int saved;
  explicit ThreadsScope(int threads) : saved(analysis_threads) { analysis_threads = threads; }
  ~ThreadsScope() { analysis_threads = saved; }
};

/// sum_i f(i) over this process's n sources, folded over the ranks (chunked_sum.hpp).
template <class F>
double chunked_sum(Comm& comm, std::size_t n, const F& f) {
  return detail::chunked_sum(comm, n, analysis_threads, f);
}

/// sqrt(lo hi), 0 < lo < hi; where lo hi leaves the normal doubles (importances or costs far from 1
/// put a multiplier near 1e-200 or 1e200), the product of the roots. The product itself used to
/// underflow to 0 there (a multiplier of 0: infinite rates, NaN) or overflow.
double geometric_mid(double lo, double hi) {
  const double product = lo * hi;
  return product >= std::numeric_limits<double>::min() &&
                 product <= std::numeric_limits<double>::max()
             ? std::sqrt(product)
             : std::sqrt(lo) * std::sqrt(hi);
}

/// The root of a decreasing function of lambda > 0 (supply(lambda) = target), bisected in log
/// lambda from a bracket found by steps of 4 from `start`, down to start 4^-500 and up to start
/// 4^500; returns the upper end (supply <= target there). After 32 steps the step squares itself
/// at each step (16, 256, ...): the same multipliers as ever wherever the root lies within 4^32 of
/// the start (about 1.8e19, every population of ordinary units), and about 40 evaluations of the
/// supply instead of 500 at the ends of the range (importances or costs near 1e-300 or 1e300,
/// where a bound took a few minutes).
template <class S>
double solve_multiplier(const S& supply, double target, double start, double tolerance = 1e-14) {
  const double floor = std::ldexp(start, -1000), ceiling = std::ldexp(start, 1000);
  double lo = start, hi = start, step = 4.0;
  const auto grow = [&](int it) {
    if (it >= 31 && step < 1e150) step *= step;
  };
  for (int it = 0; lo > floor && !(supply(lo) > target); ++it)
    lo = std::max(floor, lo / step), grow(it);
  if (!(supply(lo) > target)) return lo;  // even the smallest multiplier does not use it all
  step = 4.0;
  for (int it = 0; hi < ceiling && supply(hi) > target; ++it)
    hi = std::min(ceiling, hi * step), grow(it);
  for (int it = 0; it < 200 && hi > lo * (1.0 + tolerance); ++it) {
    const double mid = geometric_mid(lo, hi);
    if (!(mid > lo && mid < hi)) break;  // no double between them
    if (supply(mid) > target)
      lo = mid;
    else
      hi = mid;
  }
  return hi;
}

/// LambdaCrawl's IO rate: mu D / (rho (rho + D)) = lambda C, written without cancellation.
double io_rate(double w, double d, double c, double lambda) {
  if (!(w > 0.0) || !(d > 0.0)) return 0.0;
  const double q = 4.0 * w * d / (lambda * c);
  return 0.5 * q / (d + std::sqrt(d * d + q));
}
/// LambdaCrawl's CO probability: mu / (lambda C D), at most 1.
double co_prob(double w, double d, double c, double lambda) {
  if (!(w > 0.0) || !(d > 0.0)) return 0.0;
  return std::min(1.0, w / (lambda * c * d));
}

}  // namespace

namespace {

/// LambdaCrawlApprox's split by golden section (detail::lambda_crawl_approx_golden) over a
/// process's columns, its sums folded over the ranks.
void approx_golden(const FreshColumns& col, double R, Comm& comm, FreshRates* out) {
  const std::size_t n = col.n;
  const double* w = col.importance;
  const double* d = col.rate;
  const double* c = col.cost;
  const uint8_t* complete = col.complete;
  // IO: rho proportional to importance (per unit of cost) within R_IO; CO: LambdaCrawl's
  // probabilities within R_CO = R - R_IO; R_CO by golden section on the harmonic penalty.
  const std::array<double, 2> io_co =
      detail::chunked_sums<2>(comm, n, analysis_threads, [&](std::size_t i, double* s) {
        s[0] += complete[i] ? 0.0 : w[i];
        s[1] += complete[i] ? c[i] * d[i] : 0.0;
      });
  const double w_io = io_co[0], co_max = io_co[1];  // (named: lambdas capture them)
  auto co_lambda = [&](double r_co) {
    if (!(r_co > 0.0)) return kInf;
    if (r_co >= co_max) return 0.0;  // every CO source at p = 1
    auto supply = [&](double lambda) {
      return chunked_sum(comm, n, [&](std::size_t i) {
        return complete[i] ? c[i] * d[i] * co_prob(w[i], d[i], c[i], lambda) : 0.0;
      });
    };
    return solve_multiplier(supply, r_co, 1.0);
  };
  auto fill = [&](double r_co) {
    const double r_io = R - r_co, lambda = co_lambda(r_co);
    for (std::size_t i = 0; i < n; ++i) {
      if (complete[i])
        out->p[i] = lambda == 0.0        ? (d[i] > 0.0 && w[i] > 0.0 ? 1.0 : 0.0)
                    : std::isinf(lambda) ? 0.0
                                         : co_prob(w[i], d[i], c[i], lambda);
      else
        out->rho[i] = w_io > 0.0 ? w[i] / c[i] * r_io / w_io : 0.0;
    }
  };
  auto penalty = [&](double r_co) {
    fill(r_co);
    return rate_costs(col, *out, FreshPolicy::lambda_crawl_approx, comm).harmonic;
  };
  double a = 0.0, b = std::min(R, co_max);
  if (w_io == 0.0) a = b;        // nothing but CO sources: give them all they can use
  if (co_max == 0.0) b = a = 0;  // no CO source changes
  const double g = 0.3819660112501051;
  double x1 = a + g * (b - a), x2 = b - g * (b - a);
  double f1 = penalty(x1), f2 = penalty(x2);
  for (int it = 0; it < 80 && b - a > 1e-9 * R; ++it) {
    if (f1 <= f2) {
      b = x2, x2 = x1, f2 = f1, x1 = a + g * (b - a), f1 = penalty(x1);
    } else {
      a = x1, x1 = x2, f1 = f2, x2 = b - g * (b - a), f2 = penalty(x2);
    }
  }
  fill(0.5 * (a + b));
}

/// LambdaCrawlApprox's split of R between IO and CO sources, solved from its optimality condition
/// instead of a golden-section search on the penalty. With r the CO share and s = R - r, the
/// harmonic penalty is f(r) = CO(r) + IO(s): CO(r) is LambdaCrawl's CO optimum within r, whose
/// derivative is minus its multiplier lambda (p_i = min(1, w_i / (lambda C_i D_i))); IO(s) =
/// sum w_i log1p(a_i / s) with a_i = D_i C_i W_IO / w_i (rho_i = w_i s / (C_i W_IO)). f is convex
/// and f'(r) = -lambda + D(s), D(s) = sum w_i a_i / (s (s + a_i)). Parametrised by lambda,
/// r(lambda) = sum min(C_i D_i, w_i / lambda) is explicit, and G(lambda) = D(R - r(lambda)) -
/// lambda is strictly decreasing: its root is found by Newton's method on log lambda inside a
/// bracket (about ten passes over the sources, each one division per source, against ~43
/// golden-section steps each re-solving lambda by ~60 bisections). The golden section locates the
/// minimum of f only to about the square root of the rounding error (f is flat there), so the two
/// agree to about 1e-7 relative on the rates; this one is the more accurate
/// (tests/test_freshness.cpp). Returns false where the split is degenerate (no CO or no IO source
/// with importance and changes: the penalty does not depend on part of the split) and the golden
/// section decides.
bool approx_newton(const FreshColumns& col, double R, Comm& comm, FreshRates* out) {
  const std::size_t n = col.n;
  const double* w = col.importance;
  const double* d = col.rate;
  const double* c = col.cost;
  const uint8_t* complete = col.complete;
  const double w_io = chunked_sum(comm, n, [&](std::size_t i) { return complete[i] ? 0.0 : w[i]; });
  // The sources that enter the penalty, packed: CO (C D, w) and IO (a, w), with where each
  // kFoldChunk chunk of sources starts in them (so that their sums have the bits of sums over
  // the sources, in one process and over ranks alike).
  std::vector<double> co_cd, co_w, io_a, io_w;
  std::vector<std::size_t> co_at{0}, io_at{0};
  for (auto* v : {&co_cd, &co_w, &io_a, &io_w}) v->reserve(n);  // pages touched only as filled
  for (std::size_t i = 0; i < n; ++i) {
    if (w[i] > 0.0 && d[i] > 0.0) {
      if (complete[i]) {
        co_cd.push_back(c[i] * d[i]);
        co_w.push_back(w[i]);
      } else {
        io_a.push_back(d[i] * c[i] * (w_io / w[i]));
        io_w.push_back(w[i]);
      }
    }
    if ((i + 1) % kFoldChunk == 0 || i + 1 == n)
      co_at.push_back(co_cd.size()), io_at.push_back(io_a.size());
  }
  uint64_t present[2] = {co_cd.size(), io_a.size()};
  comm.sum(present, 2);
  if (!present[0] || !present[1] || !(w_io > 0.0) || !(R > 0.0)) return false;
  // r(lambda) and lambda r'(lambda) (= -sum over unsaturated sources of w / lambda).
  auto co_share = [&](double lambda) {
    return detail::chunked_sums<2>(
        comm, co_cd.size(), analysis_threads,
        [&](std::size_t i, double* s) {
          const double q = co_w[i] / lambda;
          if (q < co_cd[i])
            s[0] += q, s[1] -= q;
          else
            s[0] += co_cd[i];
        },
        &co_at);
  };
  // D(s) and s D'(s).
  auto io_slope = [&](double s) {
    return detail::chunked_sums<2>(
        comm, io_a.size(), analysis_threads,
        [&](std::size_t i, double* v) {
          // (w / s) (a / (s + a)): s (s + a) overflowed at costs near 1e290.
          const double a = io_a[i], t = io_w[i] / s * (a / (s + a));
          v[0] += t;
          v[1] -= t * (2.0 * s + a) / (s + a);
        },
        &io_at);
  };
  struct Eval {
    double g, dg;  // G(lambda) and lambda G'(lambda); g = +inf where r(lambda) >= R
    double r;
  };
  auto eval = [&](double lambda) -> Eval {
    const auto [r, lam_dr] = co_share(lambda);
    const double s = R - r;
    if (!(s > 0.0)) return {kInf, 0.0, r};
    const auto [dv, s_ddv] = io_slope(s);
    // dG/dlog(lambda) = D'(s) (-lambda r'(lambda)) - lambda.
    return {dv - lambda, (s_ddv / s) * (-lam_dr) - lambda, r};
  };
  // The search runs in units of a power of two near W_IO / sum over CO of C D (importance per unit
  // of cost and time): scaling the importances or the costs by powers of two then scales every
  // multiplier below exactly and the iteration takes the same steps, so the rates are the same to
  // the bit in any units (from 1 its log's tolerance grew with |log lambda|: other rates, and other
  // crawls, at importance / cost near 1e289).
  const double co_cd_total = chunked_sum(comm, n, [&](std::size_t i) {
    return complete[i] && w[i] > 0.0 && d[i] > 0.0 ? c[i] * d[i] : 0.0;
  });
  const double scaled = std::ldexp(1.0, std::ilogb(w_io) - std::ilogb(co_cd_total));
  const double unit = scaled > 0.0 && std::isfinite(scaled) ? scaled : 1.0;  // (sum C D overflows)
  // Bracket lo < lambda* <= hi with G(lo) > 0 >= G(hi), widening by squares of 4.
  double lo = unit, hi = unit, step = 4.0;
  Eval e_lo = eval(lo), e_hi = e_lo;
  if (e_lo.g > 0.0) {
    for (int it = 0; it < 12 && e_hi.g > 0.0; ++it, step *= step)
      lo = hi, e_lo = e_hi, hi = std::min(hi * step, 1e307), e_hi = eval(hi);
  } else {
    for (int it = 0; it < 12 && !(e_lo.g > 0.0); ++it, step *= step)
      hi = lo, e_hi = e_lo, lo = std::max(lo / step, 1e-307), e_lo = eval(lo);
  }
  if (!(e_lo.g > 0.0) || e_hi.g > 0.0) return false;
  // Newton on y = log lambda from the better end, bisection (in y) where a step leaves the bracket.
  double y_lo = std::log(lo / unit), y_hi = std::log(hi / unit);
  double y = std::isinf(e_lo.g) ? y_hi : y_lo;
  Eval e = std::isinf(e_lo.g) ? e_hi : e_lo;
  for (int it = 0; it < 200 && y_hi - y_lo > 1e-14 * std::max(1.0, std::fabs(y_hi)); ++it) {
    double next = 0.5 * (y_lo + y_hi);
    if (std::isfinite(e.g) && e.dg < 0.0) {
      const double newton = y - e.g / e.dg;
      if (newton > y_lo && newton < y_hi) next = newton;
    }
    const double step_taken = std::fabs(next - y);
    y = next;
    e = eval(unit * std::exp(y));
    if (e.g > 0.0)
      y_lo = y;
    else
      y_hi = y;
    // Quadratic convergence: after a step this small y is exact to rounding.
    if (e.g == 0.0 || step_taken < 1e-13 * std::max(1.0, std::fabs(y))) break;
  }
  const double lambda = unit * std::exp(y);
  const double r_io = R - e.r;
  for (std::size_t i = 0; i < n; ++i) {
    if (complete[i])
      out->p[i] = co_prob(w[i], d[i], c[i], lambda);
    else
      out->rho[i] = w[i] / c[i] * r_io / w_io;
  }
  return true;
}

}  // namespace

FreshRates fresh_rates(const FreshPopulation& pop, const FreshConfig& cfg, FreshPolicy policy) {
  return fresh_rates(FreshColumns::of(pop, 0, pop.size()), cfg, policy, solo_comm());
}

FreshRates fresh_rates(const FreshColumns& col, const FreshConfig& cfg, FreshPolicy policy,
                       Comm& comm) {
  // (Threads do not change the sums' bits: a shard decides its own.)
  const ThreadsScope scope(col.n < kFreshSerialN ? 1 : threads_of(cfg));
  const std::size_t n = col.n;
  const double R = cfg.budget / cfg.epoch_length;  // crawl cost per unit time
  FreshRates out;
  out.rho.assign(n, 0.0);
  out.p.assign(n, 0.0);
  const double* w = col.importance;
  const double* d = col.rate;
  const double* c = col.cost;
  const uint8_t* complete = col.complete;
  const double total_cost = chunked_sum(comm, n, [&](std::size_t i) { return c[i]; });
  switch (policy) {
    case FreshPolicy::uniform:
      for (std::size_t i = 0; i < n; ++i) out.rho[i] = R / total_cost;
      return out;
    case FreshPolicy::proportional: {
      const double cd = chunked_sum(comm, n, [&](std::size_t i) { return c[i] * d[i]; });
      for (std::size_t i = 0; i < n; ++i) out.rho[i] = cd > 0.0 ? d[i] * R / cd : R / total_cost;
      return out;
    }
    case FreshPolicy::binary_lambda_crawl: {
      const double floor_rate = cfg.epsilon * R / total_cost;
      auto rate = [&](std::size_t i, double lambda) {
        if (!(w[i] > 0.0) || !(d[i] > 0.0)) return floor_rate;
        return std::max(floor_rate, std::sqrt(w[i] * d[i] / (lambda * c[i])) - d[i]);
      };
      if (cfg.epsilon >= 1.0) {
        for (std::size_t i = 0; i < n; ++i) out.rho[i] = floor_rate;
        return out;
      }
      auto supply = [&](double lambda) {
        return chunked_sum(comm, n, [&](std::size_t i) { return c[i] * rate(i, lambda); });
      };
      const double lambda = solve_multiplier(supply, R, 1.0);
      for (std::size_t i = 0; i < n; ++i) out.rho[i] = rate(i, lambda);
      out.multiplier = lambda;
      return out;
    }
    case FreshPolicy::lambda_crawl: {
      auto supply = [&](double lambda) {
        return chunked_sum(comm, n, [&](std::size_t i) {
          return complete[i] ? c[i] * d[i] * co_prob(w[i], d[i], c[i], lambda)
                             : c[i] * io_rate(w[i], d[i], c[i], lambda);
        });
      };
      const double lambda = solve_multiplier(supply, R, 1.0);
      for (std::size_t i = 0; i < n; ++i) {
        if (complete[i])
          out.p[i] = co_prob(w[i], d[i], c[i], lambda);
        else
          out.rho[i] = io_rate(w[i], d[i], c[i], lambda);
      }
      out.multiplier = lambda;
      return out;
    }
    case FreshPolicy::lambda_crawl_approx:
      if (!approx_newton(col, R, comm, &out)) approx_golden(col, R, comm, &out);
      return out;
    default:
      throw Error(std::string("fresh_rates: ") + to_string(policy) + " is not rate-based");
  }
}

void detail::lambda_crawl_approx_golden(const FreshPopulation& pop, double R, FreshRates* out) {
  approx_golden(FreshColumns::of(pop, 0, pop.size()), R, solo_comm(), out);
}

RateCosts rate_costs(const FreshPopulation& pop, const FreshRates& rates, FreshPolicy policy) {
  return rate_costs(FreshColumns::of(pop, 0, pop.size()), rates, policy, solo_comm());
}

RateCosts rate_costs(const FreshColumns& col, const FreshRates& rates, FreshPolicy policy,
                     Comm& comm) {
  const bool co_split =
      policy == FreshPolicy::lambda_crawl || policy == FreshPolicy::lambda_crawl_approx;
  // The total importance, the harmonic penalty and the binary staleness in one pass.
  const auto [total_w, harmonic, binary] =
      detail::chunked_sums<3>(comm, col.n, analysis_threads, [&](std::size_t i, double* s) {
        const double w = col.importance[i], d = col.rate[i];
        s[0] += w;
        if (!(d > 0.0) || !(w > 0.0)) return;
        if (co_split && col.complete[i]) {
          s[1] += rates.p[i] > 0.0 ? -w * std::log(rates.p[i]) : kInf;
          s[2] += w * (1.0 - rates.p[i]);
        } else {
          s[1] += rates.rho[i] > 0.0 ? w * std::log1p(d / rates.rho[i]) : kInf;
          s[2] += w * d / (rates.rho[i] + d);
        }
      });
  RateCosts out{harmonic, binary};
  if (total_w > 0.0) out.harmonic /= total_w, out.binary /= total_w;
  return out;
}

namespace {

/// The relaxed single-source value v(lambda) per epoch and the cost of its crawls per epoch.
struct Relaxed {
  double value, crawl_cost;
};

/// best_period's search (below), gamma(k) giving the index at period k; `hint` (0: none) is where
/// it starts. `ceiling` (may be null; NaN: not known) is the largest index a search without a hint
/// saw when it found no period: that search reads the index at the same periods 2, 4, 8, ...
/// whatever the price, so at any price above it it finds none again, and returns 0 at once. A
/// search without a hint that finds none stores it there.
template <class Gamma>
double best_period_search(Objective o, double lambda, const FreshParams& p, double hint,
                          Gamma& gamma, double* ceiling = nullptr) {
  // Periods are searched up to 1e300 epochs (doubles; beyond 2^53 the period is continuous for
  // every purpose): a page that changes once in 1e24 epochs is best crawled about every 1e12
  // epochs, and validate_fresh_config keeps D T at 0 or above 1e-200, where the index reaches
  // its limit (binary: w / (D T C)) well before 1e300.
  constexpr double kMax = 1e300;
  if (!(lambda > 0.0) || gamma(1.0) >= lambda) return 1.0;
  // The binary index rises towards w / (D T C) and stays below it (fresh_index_io: 1 - e^-x over
  // D T, less a positive term): a price above that, with room for the computed index's rounding
  // (a few ulps), is reached at no period, which the search below would find only after about
  // a thousand doublings up to kMax.
  if (o == Objective::binary && lambda > p.weight / p.rate_t * p.inv_cost * (1.0 + 1e-9))
    return 0.0;
  // Bracket lo < k* <= hi with gamma(lo) < lambda <= gamma(hi), lo >= 1.
  double lo = 1.0, hi = 2.0;
  if (hint > 1.0 && hint < kMax) {
    // The gallop's first step: 1, or 2^-26 of the hint above 2^26 epochs (it used to climb from 1
    // through the steps below the hint's ulp, and about 50 more, at periods near 1e75). Where the
    // index rises with the period, below about 4e15 epochs, the period found does not depend on it.
    const double step0 = std::max(1.0, std::floor(std::ldexp(hint, -26)));  // (whole: so are
                                                                            // the bracket's ends)
    if (gamma(hint) >= lambda) {
      hi = hint;
      double step = step0;
      lo = std::max(1.0, hi - step);
      while (lo > 1.0 && gamma(lo) >= lambda) hi = lo, step *= 2.0, lo = std::max(1.0, hi - step);
    } else {
      lo = hint;
      double step = step0;
      hi = lo + step;
      while (hi < kMax && gamma(hi) < lambda) lo = hi, step *= 2.0, hi = lo + step;
    }
  } else {
    if (ceiling && lambda > *ceiling) return 0.0;  // (false while NaN)
    double seen = -std::numeric_limits<double>::infinity(), g;
    while (hi < kMax && (g = gamma(hi)) < lambda) seen = std::max(seen, g), lo = hi, hi *= 2.0;
    if (!(gamma(hi) >= lambda)) {  // none up to kMax (the index is NaN at hi, or below lambda)
      if (ceiling && !std::isnan(g = gamma(hi))) seen = std::max(seen, g);
      if (ceiling) *ceiling = seen;
      return 0.0;
    }
  }
  if (!(gamma(hi) >= lambda)) return 0.0;  // binary: the index never reaches lambda
  while (hi - lo > 1.0) {
    const double mid = std::floor(lo + 0.5 * (hi - lo));
    if (!(mid > lo && mid < hi)) break;  // adjacent doubles above 2^53
    (gamma(mid) >= lambda ? hi : lo) = mid;
  }
  return hi;
}

/// What the period search keeps of a source between its calls: the last period found (where the
/// next search starts) and the index at that period, at the one before it and at 1, computed when
/// first needed. The bound prices each source at about 40 multipliers, and a crowded host's members
/// at about 16 host prices for each: the period rarely moves between two calls, and the search
/// then reads the index at those three periods alone. Each is the same pure function's value, so
/// the search decides as if it had computed them.
struct PeriodMemo {
  static constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();
  double k = 0.0;  ///< the last period found (0: none yet, or none up to 1e300)
  /// NaN: not computed yet (32 B per source; an index that is NaN itself is computed again at
  /// every use, which costs time, not bits). With k = 0, at_k is best_period_search's ceiling.
  double at_1 = kUnknown, at_k = kUnknown, below_k = kUnknown;
};

/// The best period of an IO source at crawl price lambda per unit of cost: the smallest k >= 1
/// with gamma(k) >= lambda (0: never, where the binary index never reaches lambda). The search
/// starts from the memo's last period (none: null or 0), galloping from it: the bound's bisections
/// move the price a little at a time, so the previous answer is close. The result does not depend
/// on where it starts wherever the index rises with the period, which it does at every integer
/// age up to about 4e15 epochs; beyond, one age moves it by less than an ulp, and the period found
/// may differ by a few epochs with the start (1e-15 relative), the same on every rank count.
double best_period(Objective o, double lambda, const FreshParams& p, PeriodMemo* memo) {
  const double hint = memo ? memo->k : 0.0;
  auto gamma = [&](double k) {
    if (memo) {
      double* slot = k == 1.0          ? &memo->at_1
                     : k == hint       ? &memo->at_k
                     : k == hint - 1.0 ? &memo->below_k
                                       : nullptr;
      if (slot) {
        if (std::isnan(*slot)) *slot = fresh_index_io(o, k, p);
        return *slot;
      }
    }
    return fresh_index_io(o, k, p);
  };
  // With no period (k = 0) at_k keeps the ceiling of best_period_search.
  const double k =
      best_period_search(o, lambda, p, hint, gamma, memo && hint == 0.0 ? &memo->at_k : nullptr);
  if (memo && k != hint) memo->k = k, memo->at_k = memo->below_k = PeriodMemo::kUnknown;
  return k;
}

Relaxed relaxed_io(Objective o, double lambda, const FreshParams& p, double cost,
                   PeriodMemo* memo = nullptr) {
  // A page that never changes is always fresh (w per epoch under the binary objective, no
  // penalty) without a crawl; one without importance counts for nothing.
  if (!(p.weight > 0.0) || !(p.rate_t > 0.0)) return {o == Objective::binary ? p.weight : 0.0, 0.0};
  const double k = best_period(o, lambda, p, memo);
  if (k == 0.0) return {0.0, 0.0};
  const double v = (fresh_period_reward(o, k, p) - lambda * cost) / k;
  if (o == Objective::binary && v < 0.0) return {0.0, 0.0};
  return {v, cost / k};
}

Relaxed relaxed_co_binary(double lambda, const FreshParams& p, double cost) {
  if (!(p.weight > 0.0) || !(p.rate_t > 0.0)) return {p.weight, 0.0};  // always fresh
  const double v = p.weight * fresh_fraction(p) - lambda * cost * p.om_beta;
  return v > 0.0 ? Relaxed{v, cost * p.om_beta} : Relaxed{0.0, 0.0};
}

}  // namespace

namespace {

/// fresh_bound's dual (the Lagrangian relaxation of the budget and the politeness caps) over this
/// process's rows, the run's sources lo .. lo + m - 1 (every source in one process): it evaluates
/// those of no crowded host among them, and the crowded hosts of its block (`CrowdedHosts::owner`),
/// whose members other ranks hold it receives first.
class FreshDual {
 public:
  FreshDual(const FreshPopulation& pop, const FreshConfig& cfg, Comm* processes, const Shard& shard,
            int threads);
  FreshBound solve();

 private:
  // Host h's j-th member in the run's order: its constants, memo, cost and observation.
  struct Member {
    const FreshParams* p;
    PeriodMemo* memo;
    double cost;
    bool complete;
  };
  struct Eval {
    double value, demand;
  };
  void receive_members();
  Member member(std::size_t h, std::size_t j);
  Relaxed relaxed(bool complete, double cost, const FreshParams& p, PeriodMemo* memo,
                  double lambda) const;
  double host_crawls(std::size_t h, double lambda, double nu, double* value, double* cost);
  void price_host(std::size_t h, double lambda);
  Eval eval(double lambda);
  void periods(FreshBound& out);

  const FreshPopulation& pop_;
  const FreshConfig& cfg_;
  Comm& comm_;
  const std::size_t lo_, m_;
  const int threads_;
  // Politeness caps: a constrained host with more than m sources gets its own multiplier nu_h
  // >= 0 on "at most m crawls per epoch" (relaxed to its long-run average), so a crawl of its
  // source i costs lambda C_i + nu_h; for a given lambda each host's best nu_h is found by
  // bisection (its crawls per epoch fall to m). Every (lambda, nu) gives a valid bound.
  const CrowdedHosts crowd_;
  const std::size_t hosts_, h_lo_, h_hi_;  // the crowded hosts; this process's block of them
  std::vector<uint8_t> grouped_;           // this process's members of crowded hosts
  std::vector<FreshParams> params_;
  std::vector<PeriodMemo> memo_;
  // The members of this process's hosts that other ranks hold: each rank sends its rows of a host
  // to the host's solver once (exchange_items, comm.hpp), in host order, and they are kept in
  // `other` in the run's order: a host's members before this process's rows of it (from lower
  // ranks), then those after. Host h's members in the run's order are `before` others, this
  // process's rows start[h] .. start[h + 1] - 1, then the rest of its others from `at`.
  struct Block {
    std::size_t before, at;
  };
  std::vector<Block> block_;
  std::vector<FreshParams> other_params_;
  std::vector<PeriodMemo> other_memo_;
  std::vector<double> other_cost_;
  std::vector<uint8_t> other_complete_;
  std::vector<double> host_value_, host_demand_, host_nu_;
  const std::size_t chunks_, lead_;  // lead: rank 0's first column, the fold's start
  std::vector<double> sums_;
  uint64_t evaluations_ = 0;
  detail::Progress* progress_ = nullptr;
};

FreshDual::FreshDual(const FreshPopulation& pop, const FreshConfig& cfg, Comm* processes,
                     const Shard& shard, int threads)
    : pop_(pop),
      cfg_(cfg),
      comm_(processes ? *processes : solo_comm()),
      lo_(std::size_t(shard.first)),
      m_(pop.size()),
      threads_(threads),
      crowd_(crowded_hosts(pop, cfg.host_cap, processes)),
      hosts_(crowd_.start.size() - 1),
      h_lo_(crowd_.owner[std::size_t(comm_.rank())]),
      h_hi_(crowd_.owner[std::size_t(comm_.rank()) + 1]),
      grouped_(m_, 0),
      params_(m_),
      memo_(m_),
      block_(h_hi_ - h_lo_, Block{0, 0}),
      host_value_(hosts_),
      host_demand_(hosts_),
      host_nu_(hosts_, 0.0),
      chunks_((m_ + kFoldChunk - 1) / kFoldChunk),
      lead_(comm_.rank() == 0 ? 1 : 0),
      sums_(2 * (lead_ + std::max(chunks_, h_hi_ - h_lo_))) {
  for (uint32_t i : crowd_.members) grouped_[i] = 1;
#pragma omp parallel for if (threads > 1) num_threads(threads) schedule(static)
  for (std::size_t i = 0; i < m_; ++i)
    params_[i] = derive_fresh_params(pop.rate[i], pop.importance[i], pop.cost[i], cfg.epoch_length);
  if (comm_.size() > 1) receive_members();
}

void FreshDual::receive_members() {
  struct Column {
    uint64_t host;
    double rate, importance, cost;
    uint64_t complete;
  };
  const std::vector<std::size_t>& cut = crowd_.owner;
  const std::vector<std::size_t>& start = crowd_.start;
  std::vector<std::vector<Column>> to(std::size_t(comm_.size()));
  for (int r = 0; r < comm_.size(); ++r) {
    if (r == comm_.rank()) continue;
    for (std::size_t h = cut[std::size_t(r)]; h < cut[std::size_t(r) + 1]; ++h)
      for (std::size_t j = start[h]; j < start[h + 1]; ++j) {
        const uint32_t i = crowd_.members[j];
        to[std::size_t(r)].push_back(
            Column{h, pop_.rate[i], pop_.importance[i], pop_.cost[i], pop_.complete[i]});
      }
  }
  const std::vector<std::vector<Column>> from = exchange_items(comm_, to);
  std::vector<std::size_t> next(from.size(), 0);
  for (std::size_t h = h_lo_; h < h_hi_; ++h) {
    Block& k = block_[h - h_lo_];
    k.at = other_params_.size();
    for (std::size_t r = 0; r < from.size(); ++r) {
      for (; next[r] < from[r].size() && from[r][next[r]].host == h; ++next[r]) {
        const Column& c = from[r][next[r]];
        other_params_.push_back(
            derive_fresh_params(c.rate, c.importance, c.cost, cfg_.epoch_length));
        other_cost_.push_back(c.cost);
        other_complete_.push_back(uint8_t(c.complete));
      }
      if (int(r) < comm_.rank()) k.before = other_params_.size() - k.at;
    }
    CE_EXPECTS(other_params_.size() - k.at + start[h + 1] - start[h] ==
                   crowd_.total[h + 1] - crowd_.total[h],
               "internal: a crowded host's members did not all reach its solver");
  }
  other_memo_.resize(other_params_.size());
}

FreshDual::Member FreshDual::member(std::size_t h, std::size_t j) {
  const Block& k = block_[h - h_lo_];
  const std::size_t here = crowd_.start[h + 1] - crowd_.start[h];
  if (j >= k.before && j < k.before + here) {
    const uint32_t i = crowd_.members[crowd_.start[h] + j - k.before];
    return {&params_[i], &memo_[i], pop_.cost[i], pop_.complete[i] != 0};
  }
  const std::size_t o = k.at + (j < k.before ? j : j - here);
  return {&other_params_[o], &other_memo_[o], other_cost_[o], other_complete_[o] != 0};
}

Relaxed FreshDual::relaxed(bool complete, double cost, const FreshParams& p, PeriodMemo* memo,
                           double lambda) const {
  if (!complete) return relaxed_io(cfg_.objective, lambda, p, cost, memo);
  if (cfg_.objective == Objective::binary) return relaxed_co_binary(lambda, p, cost);
  // Harmonic: no policy does better than a fresh copy at every epoch start, F_1 = r(0); its
  // crawls are not charged (an upper bound on the relaxed value for every lambda >= 0).
  return Relaxed{fresh_period_reward(Objective::harmonic, 1.0, p), 0.0};
}

// Host h's crawls per epoch at crawl price lambda and host price nu (and its value and cost).
double FreshDual::host_crawls(std::size_t h, double lambda, double nu, double* value,
                              double* cost) {
  double v = nu * cfg_.host_cap, c = 0.0, k = 0.0;
  for (std::size_t j = 0; j < crowd_.total[h + 1] - crowd_.total[h]; ++j) {
    const Member s = member(h, j);
    const Relaxed r = relaxed(s.complete, s.cost, *s.p, s.memo, lambda + nu / s.cost);
    v += r.value, c += r.crawl_cost, k += r.crawl_cost / s.cost;
  }
  *value = v, *cost = c;
  return k;
}

// Host h's price nu at crawl price lambda: 0 where the host stays under its cap, else (any nu >= 0
// gives a valid bound: a relative 1e-4 is plenty) bracketed from the previous lambda's nu and
// bisected; its value and demand there.
void FreshDual::price_host(std::size_t h, double lambda) {
  const double cap = double(cfg_.host_cap);
  double v, c;
  if (host_crawls(h, lambda, 0.0, &v, &c) > cap) {
    double nu_hi = host_nu_[h] > 0.0 ? host_nu_[h] : 1.0, nu_lo = 0.0;
    // (As far as the doubles reach: importances of 1e-250 put nu near 1e-250; 400 halvings
    // stopped at 1e-121, a valid but looser bound.)
    for (int it = 0; it < 1100 && host_crawls(h, lambda, nu_hi, &v, &c) > cap; ++it)
      nu_lo = nu_hi, nu_hi *= 2.0;
    if (nu_lo == 0.0) {
      nu_lo = nu_hi / 2.0;
      for (int it = 0; it < 1100 && !(host_crawls(h, lambda, nu_lo, &v, &c) > cap); ++it)
        nu_hi = nu_lo, nu_lo /= 2.0;
    }
    // (Prices at the ends of the doubles' range: where nu_lo * nu_hi under- or overflows, the
    // product of the roots; where no double lies strictly between them, or nu_lo fell to 0, nu_hi
    // as it is. The loop used to spin forever on a lower end of 0.)
    for (int it = 0; it < 200 && nu_hi > nu_lo * (1.0 + 1e-4); ++it) {
      const double mid = geometric_mid(nu_lo, nu_hi);
      if (!(mid > nu_lo && mid < nu_hi)) break;
      (host_crawls(h, lambda, mid, &v, &c) > cap ? nu_lo : nu_hi) = mid;
    }
    host_crawls(h, lambda, nu_hi, &v, &c);
    host_nu_[h] = nu_hi;
  } else {
    host_nu_[h] = 0.0;  // under its cap at no price (the periods use it)
  }
  host_value_[h] = v, host_demand_[h] = c;
}

// The dual's value and crawl demand at lambda, over every rank. The other sources: value and crawl
// cost in one pass, kFoldChunk chunks in order. The sum is lambda M + the chunks' values in order +
// the hosts' values in order (and the same for the demand from 0), folded over the ranks in that
// order: one process's bits on every rank.
FreshDual::Eval FreshDual::eval(double lambda) {
  progress_->update(++evaluations_);
#pragma omp parallel for if (threads_ > 1) num_threads(threads_) schedule(dynamic, 16)
  for (std::size_t h = h_lo_; h < h_hi_; ++h) price_host(h, lambda);
  const std::size_t cols = lead_ + chunks_;
  if (lead_) sums_[0] = lambda * cfg_.budget, sums_[cols] = 0.0;
#pragma omp parallel for if (threads_ > 1) num_threads(threads_) schedule(static)
  for (std::size_t ch = 0; ch < chunks_; ++ch) {
    double v = 0.0, c = 0.0;
    for (std::size_t i = ch * kFoldChunk; i < std::min(m_, (ch + 1) * kFoldChunk); ++i) {
      if (grouped_[i]) continue;
      const Relaxed r = relaxed(pop_.complete[i] != 0, pop_.cost[i], params_[i], &memo_[i], lambda);
      v += r.value, c += r.crawl_cost;
    }
    sums_[lead_ + ch] = v, sums_[cols + lead_ + ch] = c;
  }
  const std::vector<double> ungrouped =
      fold_in_order(comm_, std::vector<double>(sums_.begin(), sums_.begin() + 2 * cols), 2, cols);
  const std::size_t host_cols = lead_ + h_hi_ - h_lo_;
  if (lead_) sums_[0] = ungrouped[0], sums_[host_cols] = ungrouped[1];
  for (std::size_t h = h_lo_; h < h_hi_; ++h)
    sums_[lead_ + h - h_lo_] = host_value_[h],
                      sums_[host_cols + lead_ + h - h_lo_] = host_demand_[h];
  const std::vector<double> total = fold_in_order(
      comm_, std::vector<double>(sums_.begin(), sums_.begin() + 2 * host_cols), 2, host_cols);
  return Eval{total[0], total[1]};
}

// The relaxed optimum's periods at the multipliers found (the steady start of the rollout), of
// this process's sources: the hosts' multipliers from the ranks that solved them.
void FreshDual::periods(FreshBound& out) {
  if (comm_.size() > 1)
    host_nu_ = comm_.allgather(std::vector<double>(host_nu_.begin() + std::ptrdiff_t(h_lo_),
                                                   host_nu_.begin() + std::ptrdiff_t(h_hi_)));
  out.period.assign(m_, 1.0);
  auto period_at = [&](std::size_t i, double price) {
    if (pop_.complete[i]) return 1.0;
    const FreshParams& p = params_[i];
    if (!(p.weight > 0.0) || !(p.rate_t > 0.0)) return 0.0;
    return best_period(cfg_.objective, price, p, &memo_[i]);  // (the memo: where it starts)
  };
  const std::vector<uint32_t>& members = crowd_.members;
#pragma omp parallel for if (threads_ > 1) num_threads(threads_) schedule(dynamic, 16)
  for (std::size_t h = 0; h < hosts_; ++h)
    for (std::size_t j = crowd_.start[h]; j < crowd_.start[h + 1]; ++j)
      out.period[members[j]] =
          period_at(members[j], out.multiplier + host_nu_[h] / pop_.cost[members[j]]);
#pragma omp parallel for if (threads_ > 1) num_threads(threads_) schedule(static)
  for (std::size_t i = 0; i < m_; ++i)
    if (!grouped_[i]) out.period[i] = period_at(i, out.multiplier);
}

FreshBound FreshDual::solve() {
  FreshBound out;
  const bool harmonic_co = cfg_.objective == Objective::harmonic &&
                           comm_.any(std::any_of(pop_.complete.begin(), pop_.complete.end(),
                                                 [](uint8_t c) { return c; }));
  if (harmonic_co)
    out.note =
        "completely observed sources enter the harmonic bound with free crawls (their least "
        "possible penalty: a fresh copy at every epoch start), a valid but looser relaxation";
  if (hosts_) {
    if (!out.note.empty()) out.note += "; ";
    out.note += "politeness caps enter through per-host multipliers (" + std::to_string(hosts_) +
                (hosts_ == 1 ? " host" : " hosts") + " with more sources than the cap)";
  }
  // Progress: one step per evaluation of the dual (about 40 in all; with caps each takes a while).
  detail::Progress progress(cfg_.progress, "fresh bound", 40, "passes (about)");
  progress_ = &progress;
  const double total_w = chunked_sum(comm_, m_, [&](std::size_t i) { return pop_.importance[i]; });
  double best;
  if (!(eval(0.0).demand > cfg_.budget)) {  // the budget does not bind
    best = eval(0.0).value;
  } else {
    // The dual is convex in lambda with slope M - demand(lambda): bisect for the sign change;
    // every lambda gives a valid bound, so the smaller of the two ends is kept.
    const double lambda =
        solve_multiplier([&](double l) { return eval(l).demand; }, cfg_.budget, 1.0, 1e-8);
    out.multiplier = lambda;
    best = std::min(eval(lambda).value, eval(lambda / (1.0 + 1e-12)).value);
  }
  const double normalised = total_w > 0.0 ? best / total_w : 0.0;
  // Freshness lies in [0, 1] and the penalty is at least 0, so a dual value beyond them is
  // clamped: still a bound, and no longer an empty one (a source whose index underflows at
  // every period, importance 1e-200 and cost 1e200, left the multiplier at 4^-500 and a "penalty
  // at least -2.8e98").
  // (NaN stays NaN; a penalty of -0, where every rate is 0, is 0.)
  const double penalty = -normalised;
  out.value = cfg_.objective == Objective::binary
                  ? (normalised > 1.0 ? 1.0 : normalised)
                  : (penalty > 0.0 || std::isnan(penalty) ? penalty : 0.0);
  out.evaluations = evaluations_;
  out.first = lo_;
  periods(out);
  progress_ = nullptr;
  return out;
}

}  // namespace

FreshBound fresh_bound(const FreshPopulation& pop, const FreshConfig& cfg, Comm* processes) {
  validate_fresh_config(pop, cfg, processes);
  Comm& comm = processes ? *processes : solo_comm();
  const Shard shard = fresh_shard(pop, comm);
  // Small populations run serially (kFreshSerialN, as the engine).
  const int threads = std::size_t(shard.total) < kFreshSerialN ? 1 : threads_of(cfg);
  const ThreadsScope scope(threads);
  FreshDual dual(pop, cfg, processes, shard, threads);
  return dual.solve();
}
}  // namespace crawleval
