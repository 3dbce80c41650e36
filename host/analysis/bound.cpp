// The Lagrangian bound (bound.hpp): a fast OpenMP path and a plain reference.
#include "crawleval/analysis/bound.hpp"
#include "crawleval/base/monitor.hpp"
#include "crawleval/engine/cuda_backend.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "base/chunked_sum.hpp"
#include "crawleval/engine/sharded.hpp"
#include "crawleval/model/lip.hpp"
#include "crawleval/model/model.hpp"

namespace crawleval {

namespace {

/// C gamma_k for source p at age k with 1 - alpha^k = om_k: [(k+1) x_k - k x_(k+1)] with the
/// expiry cap (x_cap from age E on).
inline double cost_times_index(double k, double om_k, const SourceParams& p) {
  if (p.expiry && k >= double(p.expiry)) return p.x_cap;
  return p.u_star * (om_k - k * p.om_alpha * (1.0 - om_k));
}

double lambda_high(const Problem& pr, Comm& comm) {
  double hi = 0.0;
  for (std::size_t i = 0; i < pr.size(); ++i) {
    const SourceParams p = pr.params().at(i);  // derived where the columns are compact
    hi = std::max(hi, p.x_cap * p.inv_cost);
  }
  return comm.max(hi);
}

/// A source of the first phase's sample.
struct Sampled {
  double cost;
  SourceParams p;
};

}  // namespace

BoundResult inapplicable_bound(const RunConfig& cfg) {
  BoundResult res;
  res.applicable = false;
  res.bound = std::numeric_limits<double>::quiet_NaN();
  bound_applies(cfg, &res.note);
  return res;
}

bool bound_applies(const RunConfig& cfg, std::string* why) {
  if (cfg.model == Model::deterministic || cfg.observe == Observe::belief) return true;
  if (why)
    *why =
        "no bound for the stochastic model with full observation: a policy that sees the "
        "random states can beat the deterministic relaxation (use --observe belief)";
  return false;
}

namespace {
constexpr const char* kObserveColumnNote =
    "no bound for the stochastic model when the observe column marks sources fully observed: a "
    "policy that sees their random states can beat the deterministic relaxation";
/// Whether this process's part of the observe column lets a policy see a random state.
bool column_sees_states(const Problem& pr) {
  const std::vector<uint8_t>& o = pr.population->observe;
  return pr.config.model == Model::stochastic &&
         std::any_of(o.begin(), o.end(), [](uint8_t v) { return v != 0; });
}
BoundResult column_inapplicable() {
  BoundResult res;
  res.applicable = false;
  res.bound = std::numeric_limits<double>::quiet_NaN();
  res.note = kObserveColumnNote;
  return res;
}
}  // namespace

bool bound_applies(const Problem& pr, std::string* why) {
  if (!bound_applies(pr.config, why)) return false;
  if (!column_sees_states(pr)) return true;
  if (why) *why = kObserveColumnNote;
  return false;
}

BoundResult inapplicable_bound(const Problem& pr) {
  return bound_applies(pr.config) ? column_inapplicable() : inapplicable_bound(pr.config);
}

namespace {

/// The bound's solve over this rank's sources (global ids from pr.shard.first), every sum taken
/// over the ranks in one order: the multiplier from a sample (phase 1), a bracket of the crawl
/// rate's crossing of the budget from there (phases 2 and 3), narrowed by regula falsi, and the
/// dual at its ends. The periods of the last multiplier evaluated are kept (period_).
class BoundSolve {
 public:
  BoundSolve(const Problem& pr, Comm& comm)
      : pr_(pr),
        comm_(comm),
        pop_(*pr.population),
        n_(pr.size()),
        m_(pr.config.budget),
        period_(n_),
        om_period_(n_) {}

  BoundResult solve(bool keep_periods);

 private:
  double sampled_multiplier(double* lo, double* hi);
  double exact_rate(double l);
  double stepped_rate(double l);
  double dual(double l, double* rate);
  void bracket(double lambda, double top, double* lo, double* hi, double* f_lo, double* f_hi);
  void narrow(double* lo, double* hi, double* f_lo, double* f_hi);

  const Problem& pr_;
  Comm& comm_;
  const Population& pop_;  // costs: cost_of (none held: all 1)
  const std::size_t n_;
  const double m_;
  std::vector<uint32_t> period_;
  std::vector<double> om_period_;
  uint64_t evaluations_ = 0;
};

// Phase 1: lambda from an evenly spaced sample of 2^18 sources (global ids j * stride, gathered
// on every rank), by bisection on its crawl rate, summed in fixed chunks of the sample. Returns
// the bracket's midpoint; *hi is 0 where the budget does not bind at the sample.
double BoundSolve::sampled_multiplier(double* lo, double* hi) {
  const uint64_t global_n = pr_.global_size();
  const uint64_t stride = std::max<uint64_t>(1, global_n >> 18);
  const uint64_t samples = (global_n + stride - 1) / stride;
  const double scale = double(global_n) / double(samples);
  std::vector<Sampled> sample;
  {
    std::vector<Sampled> mine;
    const uint64_t first = pr_.shard.first;
    for (uint64_t j = (first + stride - 1) / stride; j * stride < first + n_; ++j) {
      const std::size_t i = std::size_t(j * stride - first);
      mine.push_back(Sampled{pop_.cost_of(i), pr_.params().at(i)});
    }
    sample = comm_.allgather(mine);
  }
  constexpr std::size_t kSampleChunk = 4096;
  const std::size_t sample_chunks = (sample.size() + kSampleChunk - 1) / kSampleChunk;
  std::vector<double> sample_part(sample_chunks);
  auto sample_rate = [&](double lambda) {
#pragma omp parallel for schedule(static)
    for (std::size_t c = 0; c < sample_chunks; ++c) {
      double r = 0.0;
      const std::size_t end = std::min(sample.size(), (c + 1) * kSampleChunk);
      for (std::size_t j = c * kSampleChunk; j < end; ++j) {
        uint32_t k;
        relaxed_value(sample[j].cost * lambda, sample[j].p, &k);
        if (k) r += sample[j].cost / double(k);
      }
      sample_part[c] = r;
    }
    double r = 0.0;
    for (double part : sample_part) r += part;
    return r * scale;
  };
  if (sample_rate(0.0) > m_)
    bracket_multiplier([&](double l) { return sample_rate(l) > m_; }, check_interrupt, 50, lo, hi);
  else
    *hi = 0.0;
  return 0.5 * (*lo + *hi);
}

// Phase 2: every source's exact period at l, and the crawl rate there.
double BoundSolve::exact_rate(double l) {
  ++evaluations_;
  return detail::chunked_sum(comm_, n_, 0, [&](std::size_t i) {
    const SourceParams p = pr_.params().at(i);
    uint32_t k;
    relaxed_value(pop_.cost_of(i) * l, p, &k);
    period_[i] = k;
    om_period_[i] = k ? -expm1(-p.mu_t * double(k)) : 0.0;
    return k ? pop_.cost_of(i) / double(k) : 0.0;
  });
}

// Phase 3 passes: move each period by a few steps (index condition, multiply-adds only).
double BoundSolve::stepped_rate(double l) {
  ++evaluations_;
  return detail::chunked_sum(comm_, n_, 0, [&](std::size_t i) {
    const SourceParams p = pr_.params().at(i);
    const double c = pop_.cost_of(i) * l;
    if (!(c < p.x_cap)) {
      period_[i] = 0;
      return 0.0;
    }
    double k = period_[i], om_k = om_period_[i];
    bool ok = k >= 1.0 && period_[i] < kMaxRelaxedPeriod;  // (a longer one: solved afresh)
    if (ok) {
      int steps = 0;
      if (cost_times_index(k, om_k, p) >= c) {
        while (ok && k > 1.0) {
          const double om_prev =
              p.alpha > 1e-3 ? (om_k - p.om_alpha) / p.alpha : -expm1(-p.mu_t * (k - 1.0));
          if (!(cost_times_index(k - 1.0, om_prev, p) >= c)) break;
          k -= 1.0, om_k = om_prev;
          ok = ++steps < 64;
        }
      } else {
        while (ok && !(cost_times_index(k, om_k, p) >= c)) {
          k += 1.0, om_k = p.om_alpha + p.alpha * om_k;
          ok = ++steps < 64;
        }
      }
    }
    if (!ok) {  // too far (or was "never"): solve afresh
      uint32_t kk;
      relaxed_value(c, p, &kk);
      k = kk, om_k = kk ? -expm1(-p.mu_t * k) : 0.0;
    }
    period_[i] = k < double(kMaxRelaxedPeriod) ? uint32_t(k) : kMaxRelaxedPeriod;
    om_period_[i] = om_k;
    return period_[i] ? pop_.cost_of(i) / k : 0.0;
  });
}

// D(lambda) = lambda M + sum_i [beta_i(lambda) - C_i lambda], exact (every source's best period
// found afresh), and the crawl rate there. Summing the gains beta_i - C_i lambda >= 0, never
// beta_i and C_i lambda apart, keeps the digits of a costly source's small reward.
double BoundSolve::dual(double l, double* rate) {
  ++evaluations_;
  const auto [gains, crawl_rate] =
      detail::chunked_sums<2>(comm_, n_, 0, [&](std::size_t i, double* s) {
        uint32_t k;
        s[0] += relaxed_gain(pop_.cost_of(i) * l, pr_.params().at(i), &k);
        period_[i] = k;
        s[1] += k ? pop_.cost_of(i) / double(k) : 0.0;
      });
  if (rate) *rate = crawl_rate;
  return l * m_ + gains;
}

// Phase 3: a bracket lo < hi with rate(lo) > m >= rate(hi), from steps of about the sample's
// error around lambda (nothing where lambda is 0), with f = rate - m at its ends.
void BoundSolve::bracket(double lambda, double top, double* lo, double* hi, double* f_lo,
                         double* f_hi) {
  if (!(lambda > 0.0)) return;
  const double f0 = exact_rate(lambda) - m_;
  double step = 0.01 * lambda;
  if (f0 > 0.0) {
    *lo = lambda, *f_lo = f0;
    // After 16 doublings the factor squares itself (4, 16, 256, ...), up to `top`: a sample
    // that misses the sources setting the root (every other one, 2^19 sources) left lambda
    // hundreds of decades below it, and the doublings used up the evaluations (a reviewer).
    double factor = 2.0;
    for (int it = 0;; ++it) {
      *hi = std::min(top, *lo + step), *f_hi = stepped_rate(*hi) - m_;
      if (*f_hi <= 0.0 || !(*hi < top)) break;
      *lo = *hi, *f_lo = *f_hi, step *= factor;
      if (it >= 16 && factor < 1e100) factor *= factor;
    }
  } else {
    *hi = lambda, *f_hi = f0;
    for (;;) {
      *lo = std::max(0.0, *hi - step), *f_lo = stepped_rate(*lo) - m_;
      if (*f_lo > 0.0 || *lo == 0.0) break;
      *hi = *lo, *f_hi = *f_lo, step *= 2.0;
    }
  }
}

// A bracket over decades (lambda far from the root) halved in log lambda to a factor of 4, then
// regula falsi (Illinois) on rate - m, which is nearly linear at this scale, to a relative width of
// 1e-7: D(hi) - D(lambda*) <= (hi - lo) M is then negligible. (At least 40 steps of its own,
// whatever the bracket took.)
void BoundSolve::narrow(double* lo, double* hi, double* f_lo, double* f_hi) {
  for (int it = 0; it < 2200 && *f_lo > 0.0 && *f_hi < 0.0 && *lo > 0.0 && *hi > 4.0 * *lo; ++it) {
    check_interrupt();
    const double x = std::sqrt(*lo) * std::sqrt(*hi);
    const double fx = stepped_rate(x) - m_;
    (fx > 0.0 ? *lo : *hi) = x;
    (fx > 0.0 ? *f_lo : *f_hi) = fx;
  }
  int side = 0;
  const uint64_t cap = std::max<uint64_t>(80, evaluations_ + 40);
  while (*f_lo > 0.0 && *f_hi < 0.0 && *hi - *lo > 1e-7 * *hi && evaluations_ < cap) {
    check_interrupt();
    double x = (*lo * *f_hi - *hi * *f_lo) / (*f_hi - *f_lo);
    if (!(x > *lo && x < *hi)) x = 0.5 * (*lo + *hi);
    const double fx = stepped_rate(x) - m_;
    if (fx > 0.0) {
      *lo = x, *f_lo = fx;
      if (side == -1) *f_hi *= 0.5;
      side = -1;
    } else {
      *hi = x, *f_hi = fx;
      if (side == +1) *f_lo *= 0.5;
      side = +1;
    }
  }
}

BoundResult BoundSolve::solve(bool keep_periods) {
  BoundResult res;
  double lo = 0.0, hi = lambda_high(pr_, comm_);
  const double top = hi;  // every source's period is "never" there: the crawl rate is 0
  double lambda = sampled_multiplier(&lo, &hi);
  double f_lo = 0.0, f_hi = 0.0;
  bracket(lambda, top, &lo, &hi, &f_lo, &f_hi);
  narrow(&lo, &hi, &f_lo, &f_hi);
  // D is minimal where the rate crosses M: between lo and hi (or at hi when rate(hi) = M).
  // (dual leaves the periods of the lambda it was last called with: periods_of.)
  double rate_lo = 0.0, rate_hi = 0.0;
  const double d_hi = dual(hi, &rate_hi);
  double periods_of = hi;
  const bool lo_evaluated = lo > 0.0 && f_hi != 0.0;
  const double d_lo = lo_evaluated ? dual(lo, &rate_lo) : std::numeric_limits<double>::infinity();
  if (lo_evaluated) periods_of = lo;
  lambda = d_lo < d_hi ? lo : hi;
  res.bound = std::min(d_lo, d_hi);
  res.lambda = lambda;
  res.crawl_rate = d_lo < d_hi ? rate_lo : rate_hi;
  // Every lambda >= 0 gives a bound. Where both ends overflow (lambda M beyond the doubles: a
  // budget of 1e200 and a bracket grown from costs of 1e-300), lambda = 0's, the unconstrained
  // optimum, if it is a number: the CPU backend reported "not representable" there while the
  // reference, whose bisection ends at 0 on such a population, gave that value (a hostile pass).
  if (!std::isfinite(res.bound) && lambda > 0.0) {
    double rate_0;
    const double d_0 = dual(0.0, &rate_0);
    periods_of = 0.0;
    if (std::isfinite(d_0) && !(d_0 >= res.bound)) {
      lambda = 0.0;
      res.bound = d_0, res.lambda = 0.0, res.crawl_rate = rate_0;
    }
  }
  // The periods of the chosen lambda (the static policy's). Until 2026-11-25 they were lo's
  // whenever both ends were evaluated and hi was chosen (a reviewer).
  if (keep_periods && periods_of != lambda) dual(lambda, &rate_lo);
  if (keep_periods) res.period = std::move(period_);
  res.evaluations = evaluations_;
  return res;
}

BoundResult bound_impl(const Problem& pr, bool keep_periods, bool check_applies, Comm& comm) {
  const auto t0 = std::chrono::steady_clock::now();
  if (check_applies && !bound_applies(pr.config)) return inapplicable_bound(pr.config);
  // (The column over every rank: a rank whose part has no fully observed source decides alike.)
  if (check_applies && comm.any(column_sees_states(pr))) return column_inapplicable();
  BoundResult res = BoundSolve(pr, comm).solve(keep_periods);
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

}  // namespace

BoundResult lagrangian_bound(const Problem& pr, bool keep_periods) {
  return bound_impl(pr, keep_periods, true, solo_comm());
}

BoundResult sharded_bound(const Problem& pr, Comm& comm, bool keep_periods) {
  return bound_impl(pr, keep_periods, true, comm);
}

void prepare_static_policy(Problem& pr, Comm& comm) {
  pr.static_period = bound_impl(pr, true, false, comm).period;
}

namespace {

/// The relaxed crawl rate sum_i C_i / tau_i(lambda) over every rank's sources (folded in order).
double relaxed_rate(const Problem& pr, double lambda, Comm& comm) {
  const Population& pop = *pr.population;
  return detail::chunked_sum(comm, pr.size(), 0, [&](std::size_t i) {
    uint32_t k;
    relaxed_value(pop.cost_of(i) * lambda, pr.params().at(i), &k);
    return k ? pop.cost_of(i) / double(k) : 0.0;
  });
}

/// Where `holds` (true at `at`, false from some lambda <= `top` on) turns false: the supremum of
/// {lambda : holds}, to a relative 1e-12.
template <class F>
double last_holding(const F& holds, double at, double top) {
  double lo = at, hi = at;
  for (double step = 1e-9 * std::max(at, 1e-300);; step *= 4.0) {
    check_interrupt();
    hi = std::min(top, lo + step);
    if (!holds(hi) || !(hi < top)) break;
    lo = hi;
  }
  while (hi - lo > 1e-12 * hi) {
    check_interrupt();
    const double mid = 0.5 * (lo + hi);
    if (!(mid > lo && mid < hi)) break;
    (holds(mid) ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace

void prepare_lip_policy(Problem& pr, Comm& comm) {
  const RunConfig& cfg = pr.config;
  const double m = cfg.budget;
  double lambda = 0.0;
  if (relaxed_rate(pr, 0.0, comm) > m) {
    // The relaxed crawl rate falls with lambda in steps; the dual is minimal where it crosses M.
    // Where a step lands exactly on M the minimisers are an interval [lo, hi] (every lambda there
    // gives the same periods and the same bound, but the index moves inside it): its midpoint, a
    // point every backend computes alike and where no source is indifferent between two periods.
    const double found = bound_impl(pr, false, false, comm).lambda;
    if (relaxed_rate(pr, found, comm) == m) {
      const double top = lambda_high(pr, comm);
      const double hi =
          last_holding([&](double l) { return relaxed_rate(pr, l, comm) >= m; }, found, top);
      // The low end: from a lambda below it (the rate exceeds M there, or it is 0), up.
      double below = found;
      for (double step = 1e-9 * found;; step *= 4.0) {
        check_interrupt();
        below = std::max(0.0, found - step);
        if (below == 0.0 || relaxed_rate(pr, below, comm) > m) break;
      }
      const double lo =
          last_holding([&](double l) { return relaxed_rate(pr, l, comm) > m; }, below, found);
      lambda = 0.5 * (lo + hi);
    } else {
      lambda = found;
    }
  }
  const std::size_t n = pr.size();
  pr.lip_multiplier = lambda;
  pr.lip_gain.resize(n);
  pr.lip_period.resize(n);
  const Population& pop = *pr.population;
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < n; ++i) {
    const LipSource s = lip_source(lambda, pop.cost_of(i), pr.params().at(i));
    pr.lip_gain[i] = s.gain, pr.lip_period[i] = s.period;
  }
}

BoundResult lagrangian_bound_reference(const Problem& pr) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!bound_applies(pr)) return inapplicable_bound(pr);
  BoundResult res;
  const std::size_t n = pr.size();
  const Population& pop = *pr.population;  // costs: cost_of (none held: all 1)
  const double m = pr.config.budget;
  // beta_i(lambda) - C_i lambda and the period: the smallest k maximising the gain (x_k - c) / k,
  // x_k = u* (1 - alpha^min(k, E)) in closed form. The gain is unimodal in k (x_k is concave), so
  // "it still rises at k" holds exactly below the maximiser: found by doubling k, then bisecting.
  // (A scan of k = 1, 2, ... took 45 s for six sources at mu T = 1e-9, whose periods pass 1e9.)
  auto source = [&](std::size_t i, double lambda, double* rate) {
    const SourceParams p = pr.params().at(i);
    const double c = pop.cost_of(i) * lambda;
    *rate = 0.0;
    if (!(c < p.x_cap)) return 0.0;
    const double k_max = p.expiry ? double(p.expiry) : 9007199254740992.0;
    auto gain = [&](double k) {
      const double kk = p.expiry && k > double(p.expiry) ? double(p.expiry) : k;
      return (p.u_star * -std::expm1(-p.mu_t * kk) - c) / k;
    };
    auto rising = [&](double k) { return k < k_max && gain(k + 1.0) > gain(k); };
    double lo = 1.0, hi = 1.0;
    while (rising(hi)) lo = hi + 1.0, hi = std::min(k_max, 2.0 * hi);
    while (lo < hi) {
      const double mid = std::floor(0.5 * (lo + hi));
      if (rising(mid))
        lo = mid + 1.0;
      else
        hi = mid;
    }
    const double best = gain(lo);
    if (!(best > 0.0)) return 0.0;
    *rate = pop.cost_of(i) / lo;
    return best;
  };
  auto evaluate = [&](double lambda, double* rate_out) {
    ++res.evaluations;
    double gains = 0.0, rate = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      double r;
      gains += source(i, lambda, &r);
      rate += r;
    }
    *rate_out = rate;
    return lambda * m + gains;
  };
  double lo = 0.0, hi = lambda_high(pr, solo_comm()), rate;
  evaluate(0.0, &rate);
  if (rate <= m) hi = 0.0;
  bracket_multiplier([&](double l) { return evaluate(l, &rate), rate > m; }, check_interrupt, 100,
                     &lo, &hi);
  double r_lo, r_hi;
  const double d_lo = evaluate(lo, &r_lo), d_hi = evaluate(hi, &r_hi);
  res.bound = std::min(d_lo, d_hi);
  res.lambda = d_lo < d_hi ? lo : hi;
  res.crawl_rate = d_lo < d_hi ? r_lo : r_hi;
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

void prepare_static_policy(Problem& pr) {
  // The relaxation's periods (those of the deterministic model, whatever the run's model).
  pr.static_period = bound_impl(pr, true, false, solo_comm()).period;
}

void prepare_lip_policy(Problem& pr) { prepare_lip_policy(pr, solo_comm()); }

#ifndef CRAWLEVAL_HAVE_CUDA
// Without the CUDA backend the GPU's bound says so (compute_bound never asks for it then).
BoundResult cuda::lagrangian_bound(const Problem&) {
  throw InputError(cuda::unavailable_message());
}
#endif

}  // namespace crawleval
