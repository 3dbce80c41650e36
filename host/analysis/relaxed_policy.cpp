// The relaxed problem's own policies (include/crawleval/analysis/relaxed_policy.hpp).
#include "crawleval/analysis/relaxed_policy.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "crawleval/analysis/bound.hpp"
#include "crawleval/analysis/stats.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/base/monitor.hpp"
#include "crawleval/model/model.hpp"
#include "crawleval/model/population.hpp"
#include "crawleval/model/rng.hpp"

namespace crawleval {

namespace {

/// x_k = u* (1 - alpha^min(k, E)): the content a crawl at age k collects (relaxed_gain's x_k).
double content_at(const SourceParams& p, double k) {
  const double kk = p.expiry && k > double(p.expiry) ? double(p.expiry) : k;
  return p.u_star * -std::expm1(-p.mu_t * kk);
}

/// The index at age a, [(a + 1) x_a - a x_(a+1)] / C (Theorem 1's on the grid; x_E / C from age E
/// on with expiry): the multiplier at which crawling at age a and waiting are equally good.
double index_at_age(const SourceParams& p, double a) {
  return ((a + 1.0) * content_at(p, a) - a * content_at(p, a + 1.0)) * p.inv_cost;
}

/// A tied source's renewal cycle under tie probability p: E[K] and E[x_K]. It crawls with
/// probability p at the ages in [a, b) and surely at b (b = 0: never surely).
void cycle_moments(const SourceParams& sp, double a, double b, double p, double* mean_k,
                   double* mean_x) {
  const double q = 1.0 - p;
  if (b > 0.0) {
    double ek = 0.0, ex = 0.0, w = 1.0;  // w = q^j
    for (double k = a; k < b; k += 1.0) {
      ek += w * p * k, ex += w * p * content_at(sp, k);
      w *= q;
    }
    *mean_k = ek + w * b, *mean_x = ex + w * content_at(sp, b);
    return;
  }
  if (!(p > 0.0)) {
    *mean_k = std::numeric_limits<double>::infinity(), *mean_x = 0.0;
    return;
  }
  *mean_k = a + q / p;
  if (!sp.expiry) {  // sum_j q^j p u* (1 - alpha^(a+j)) = u* (1 - p alpha^a / (1 - q alpha))
    *mean_x = sp.u_star * (1.0 - p * std::exp(-sp.mu_t * a) / (1.0 - q * sp.alpha));
    return;
  }
  double ex = 0.0, w = 1.0;
  double k = a;
  for (; k < double(sp.expiry); k += 1.0) ex += w * p * content_at(sp, k), w *= q;
  *mean_x = ex + w * sp.x_cap;  // from age E on every crawl collects x_E
}

double cost_of(const Problem& pr, std::size_t i) { return pr.population->cost_of(i); }

}  // namespace

AverageBudgetPolicy average_budget_policy(const Problem& pr) {
  std::string why;
  if (!bound_applies(pr, &why))
    throw InputError("the average-budget policy needs the bound: " + why);
  const std::size_t n = pr.size();
  const double m = pr.config.budget;
  AverageBudgetPolicy pol;
  pol.budget = m;
  auto rate_at = [&](double lambda, std::vector<uint32_t>* periods, double* gains) {
    double rate = 0.0, g = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      uint32_t k;
      g += relaxed_gain(cost_of(pr, i) * lambda, pr.params().at(i), &k);
      if (periods) (*periods)[i] = k;
      if (k) rate += cost_of(pr, i) / double(k);
    }
    if (gains) *gains = g;
    return rate;
  };
  double hi = 0.0, lo = 0.0;  // at hi = the largest x_cap / C no source crawls
  for (std::size_t i = 0; i < n; ++i) {
    const SourceParams p = pr.params().at(i);
    hi = std::max(hi, p.x_cap * p.inv_cost);
  }
  if (rate_at(0.0, nullptr, nullptr) <= m) hi = 0.0;  // every source every epoch fits
  bracket_multiplier([&](double l) { return rate_at(l, nullptr, nullptr) > m; }, check_interrupt,
                     100, &lo, &hi);
  pol.lambda_lo = lo, pol.lambda_hi = hi;
  pol.period_lo.resize(n), pol.period_hi.resize(n);
  double g_lo, g_hi;
  const double r_lo = rate_at(lo, &pol.period_lo, &g_lo);
  rate_at(hi, &pol.period_hi, &g_hi);
  const double d_lo = lo * m + g_lo, d_hi = hi * m + g_hi;
  pol.bound = std::min(d_lo, d_hi);
  pol.lambda = d_lo < d_hi ? lo : hi;
  for (std::size_t i = 0; i < n; ++i) pol.tied += pol.period_lo[i] != pol.period_hi[i];
  // The spend and reward at tie probability p (renewal-reward, source by source).
  auto totals = [&](double p, double* reward) {
    double spend = 0.0, rew = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      const SourceParams sp = pr.params().at(i);
      const double a = pol.period_lo[i], b = pol.period_hi[i];
      double ek, ex;
      if (a == b) {
        if (!a) continue;
        ek = a, ex = content_at(sp, a);
      } else {
        cycle_moments(sp, a, b, p, &ek, &ex);
      }
      if (std::isfinite(ek)) spend += cost_of(pr, i) / ek, rew += ex / ek;
    }
    if (reward) *reward = rew;
    return spend;
  };
  if (hi == 0.0 || pol.tied == 0 || r_lo <= m) {
    pol.tie_probability = 1.0;
  } else {
    // The spend grows with p from r_hi (p = 0) to r_lo (p = 1) and brackets M.
    double pl = 0.0, ph = 1.0;
    for (int it = 0; it < 200 && ph - pl > 1e-17; ++it) {
      const double mid = 0.5 * (pl + ph);
      (totals(mid, nullptr) > m ? ph : pl) = mid;
    }
    pol.tie_probability =
        std::fabs(totals(pl, nullptr) - m) <= std::fabs(totals(ph, nullptr) - m) ? pl : ph;
    // Where the periods above lambda* already spend M (to rounding), no coin is needed: p is 0,
    // not the largest p whose extra spend rounds away (1e-16 on the example's M = 1).
    if (std::fabs(totals(0.0, nullptr) - m) <= 1e-12 * m) pol.tie_probability = 0.0;
  }
  pol.spend = totals(pol.tie_probability, &pol.reward);
  return pol;
}

AverageBudgetRun simulate_average_budget(const Problem& pr, const AverageBudgetPolicy& pol) {
  const std::size_t n = pr.size();
  CE_EXPECTS(pol.period_lo.size() == n && pol.period_hi.size() == n,
             "internal: the policy is for another problem");
  const RunConfig& cfg = pr.config;
  const uint64_t total = cfg.burn_in + cfg.epochs;
  CE_EXPECTS(cfg.epochs >= 1, "--epochs must be at least 1");
  CE_EXPECTS(total <= 0xFFFFFFFFull, "burn-in + epochs must be below 2^32");
  AverageBudgetRun out;
  std::vector<double> age(n), content(n);
  uint64_t measured = 0, over = 0;
  double spend_sum = 0.0;
  out.worst_spend = 0.0;
  for (uint32_t rep = 0; rep < cfg.replications; ++rep) {
    check_interrupt();
    const uint32_t key_rep = cfg.first_replication + rep;
    for (std::size_t i = 0; i < n; ++i) age[i] = double(pr.initial_at(i).eta);
    double reward = 0.0, spend_rep = 0.0;
    for (uint64_t t = 0; t < total; ++t) {
      double spend = 0.0, gained = 0.0;
      for (std::size_t i = 0; i < n; ++i) {
        const double a = pol.period_lo[i], b = pol.period_hi[i];
        bool crawl = false;
        if (b > 0.0 && age[i] >= b)
          crawl = true;
        else if (a > 0.0 && a != b && age[i] >= a)
          crawl =
              uniform(
                  philox_words(cfg.seed, i, uint32_t(t), key_rep, Stream::relaxed_policy, 0).w[0]) <
              pol.tie_probability;
        if (crawl) {
          gained += content_at(pr.params().at(i), age[i]);
          spend += cost_of(pr, i);
          age[i] = 1.0;
        } else {
          age[i] += 1.0;
        }
      }
      if (t < cfg.burn_in) continue;
      reward += gained, spend_rep += spend;
      ++measured, spend_sum += spend;
      out.worst_spend = std::max(out.worst_spend, spend);
      over += spend > cfg.budget * (1.0 + 1e-12);
    }
    out.replication_reward.push_back(reward / double(cfg.epochs));
    out.replication_spend.push_back(spend_rep / double(cfg.epochs));
  }
  const Summary s = summarize_replications(out.replication_reward, kNonNegative);
  out.mean_reward = s.mean;
  // One replication, or copies of one run (no tie coin): the interval is the mean itself.
  const bool interval = cfg.replications >= 2 && std::isfinite(s.ci_low) && s.std_dev > 0.0;
  out.ci_low = interval ? s.ci_low : s.mean;
  out.ci_high = interval ? s.ci_high : s.mean;
  out.mean_spend = spend_sum / double(measured);
  out.over_budget = double(over) / double(measured);
  return out;
}

DualDescentRun dual_descent(const Problem& pr, const DualDescentConfig& cfg) {
  CE_EXPECTS(cfg.epochs >= 2, "--epochs must be at least 2");
  CE_EXPECTS(std::isfinite(cfg.step) && cfg.step > 0, "--step must be a finite number > 0");
  CE_EXPECTS(std::isfinite(cfg.lambda0) && cfg.lambda0 >= 0,
             "--lambda0 must be a finite number >= 0 (0: the default start)");
  CE_EXPECTS(cfg.every >= 1, "--every must be at least 1");
  const AverageBudgetPolicy offline = average_budget_policy(pr);
  const std::size_t n = pr.size();
  const double m = pr.config.budget;
  double top = 0.0;
  std::vector<SourceParams> p(n);
  std::vector<double> cost(n), age(n);
  for (std::size_t i = 0; i < n; ++i) {
    p[i] = pr.params().at(i), cost[i] = cost_of(pr, i);
    top = std::max(top, p[i].x_cap * p[i].inv_cost);
    age[i] = double(pr.initial_at(i).eta);
  }
  DualDescentRun out;
  out.lambda_star = offline.lambda, out.bound = offline.bound;
  // Multiplicative steps on the relative overspend, clipped to [-1, 1]: the multiplier's scale is
  // the rewards' (it spans decades over a population), and one epoch that crawls everything
  // must not throw it decades away.
  double lambda = cfg.lambda0 > 0.0 ? cfg.lambda0 : 0.5 * top;
  double lambda_sum = 0.0, spend_sum = 0.0, reward_sum = 0.0;
  double late_reward = 0.0, late_spend = 0.0, late_lambda = 0.0;
  const uint64_t half = cfg.epochs / 2;
  for (uint64_t t = 0; t < cfg.epochs; ++t) {
    if ((t & 1023) == 0) check_interrupt();
    double spend = 0.0, gained = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      if (index_at_age(p[i], age[i]) > lambda) {
        gained += content_at(p[i], age[i]), spend += cost[i];
        age[i] = 1.0;
      } else {
        age[i] += 1.0;
      }
    }
    lambda_sum += lambda, spend_sum += spend, reward_sum += gained;
    if (t >= half) {
      late_reward += gained, late_spend += spend, late_lambda += lambda;
      out.late_worst_spend = std::max(out.late_worst_spend, spend);
    }
    if (t % cfg.every == 0 || t + 1 == cfg.epochs) {
      out.epoch.push_back(double(t));
      out.lambda.push_back(lambda);
      out.lambda_average.push_back(lambda_sum / double(t + 1));
      out.spend_average.push_back(spend_sum / double(t + 1));
      out.reward_average.push_back(reward_sum / double(t + 1));
    }
    const double over = std::min(1.0, std::max(-1.0, (spend - m) / m));
    lambda *= std::exp(cfg.step / std::sqrt(double(t) + 1.0) * over);
  }
  out.final_lambda = lambda;
  out.late_lambda_average = late_lambda / double(cfg.epochs - half);
  out.late_reward = late_reward / double(cfg.epochs - half);
  out.late_spend = late_spend / double(cfg.epochs - half);
  return out;
}

}  // namespace crawleval
