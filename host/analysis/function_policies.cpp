// Policies from the papers as score functions (include/crawleval/analysis/function_policies.hpp).
#include "crawleval/analysis/function_policies.hpp"

#include <cfloat>
#include <cmath>
#include <limits>
#include <memory>

#include "crawleval/analysis/stats.hpp"
#include "crawleval/base/comm.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/model/model.hpp"
#include "crawleval/model/policy.hpp"

namespace crawleval {

namespace {

/// The AgeState word behind a ScoreRequest's age (AgeState::age inverted): off the grid when the
/// source started there and has not been crawled since (its age is then epoch + 1).
uint32_t age_word(const Problem& pr, std::size_t i, double age, uint64_t epoch) {
  if ((pr.initial_age()[i] & AgeState::kOffGrid) && age == double(epoch) + 1.0)
    return AgeState::kOffGrid;
  return uint32_t(age);
}

}  // namespace

double expiry_paper_index(double x, const SourceParams& p) {
  SourceParams q = p;
  q.u_star = p.x_cap;  // u_i / (1 - alpha_i) with the paper's u_i
  q.expiry = 0;
  q.alpha_e = 0.0;
  return whittle_index(x, q);
}

ScoreFn expiry_paper_index_policy(const Problem& pr) {
  return [&pr](const ScoreRequest& r) {
    for (std::size_t i = 0; i < r.n; ++i)
      r.scores[i] = expiry_paper_index(r.state[i], pr.params().at(i));
  };
}

std::vector<uint8_t> observed_fully(const Problem& pr) {
  if (!pr.population->observe.empty()) return pr.population->observe;
  return std::vector<uint8_t>(pr.size(), pr.config.observe == Observe::full ? 1 : 0);
}

Problem function_engine_problem(const Problem& pr) {
  Problem out = pr;
  out.config.observe = Observe::full;
  out.apply_observe_column = false;
  return out;
}

ScoreFn mixed_observation_policy(const Problem& pr, Policy base) {
  CE_EXPECTS(base == Policy::whittle || base == Policy::greedy,
             "internal: mixed observation is for the whittle and greedy policies");
  auto full = std::make_shared<std::vector<uint8_t>>(observed_fully(pr));
  return [&pr, base, full](const ScoreRequest& r) {
    CE_EXPECTS(r.n == full->size(), "internal: the mixed policy's population changed");
    ScoreContext c{base, Observe::belief, 0, r.replication, uint32_t(r.epoch), 0, r.n};
    for (std::size_t i = 0; i < r.n; ++i) {
      const SourceParams p = pr.params().at(i);
      const uint32_t w = age_word(pr, i, r.age[i], r.epoch);
      c.observe = (*full)[i] ? Observe::full : Observe::belief;
      r.scores[i] = policy_score(c, i, r.state[i], w, pr.initial_state()[i], 0, 0.0, p);
    }
  };
}

ScoreFn adaptive_whittle_policy(const Problem& pr, double optimism) {
  CE_EXPECTS(optimism >= 0 && std::isfinite(optimism),
             "the adaptive policy's optimism must be >= 0");
  CE_EXPECTS(!pr.has_expiry, "the adaptive Whittle policy does not model content expiry yet");
  struct State {
    std::vector<uint8_t> full;
    std::vector<double> sum, weight;  // belief: sum X, sum (1 - alpha^k); full: sum U, count
    std::vector<double> count;        // observations
    std::vector<double> prev_state, prev_age;
    uint32_t replication = 0xFFFFFFFFu;
  };
  auto st = std::make_shared<State>();
  st->full = observed_fully(pr);
  return [&pr, st, optimism](const ScoreRequest& r) {
    const std::size_t n = r.n;
    if (r.epoch == 0 || r.replication != st->replication) {  // a new replication: no estimates
      st->replication = r.replication;
      st->sum.assign(n, 0.0), st->weight.assign(n, 0.0), st->count.assign(n, 0.0);
      st->prev_state.assign(n, 0.0), st->prev_age.assign(n, 0.0);
    }
    // A source's u*^ without the prior.
    auto raw_estimate = [&](std::size_t i) {
      const double m = st->sum[i] / st->weight[i];
      return st->full[i] ? m / pr.params().om_alpha[i] : m;
    };
    for (std::size_t i = 0; i < n; ++i) {
      const SourceParams p = pr.params().at(i);
      if (r.epoch > 0) {
        const bool crawled = r.age[i] == 1.0;  // age 1 at epoch t >= 1: crawled at t - 1
        if (st->full[i]) {
          st->sum[i] += crawled ? r.state[i] : r.state[i] - p.alpha * st->prev_state[i];
          st->weight[i] += 1.0;
          st->count[i] += 1.0;
        } else if (crawled) {
          // The crawl at t - 1 collected the state seen then, at its age then (a source that
          // started off the grid has another expectation before its first crawl: not used).
          const double k = st->prev_age[i];
          const bool off_grid = (pr.initial_age()[i] & AgeState::kOffGrid) && k == double(r.epoch);
          if (!off_grid && k >= 1.0) {
            st->sum[i] += st->prev_state[i];
            st->weight[i] += -std::expm1(-p.mu_t * k);
            st->count[i] += 1.0;
          }
        }
      }
      st->prev_state[i] = r.state[i];
      st->prev_age[i] = r.age[i];
    }
    // Optimism where nothing has been seen: a source whose observations so far are all empty
    // (likely with rare arrivals) would be written off at u*^ = 0 for ever; it gets the largest
    // estimate of any source instead, divided by 1 + its observations' weight (fading as the
    // evidence of emptiness grows). One positive observation ends it: the ratio estimator alone.
    double best = 0.0;
    for (std::size_t i = 0; i < n; ++i)
      if (st->weight[i] > 0.0) best = std::max(best, raw_estimate(i));
    if (r.processes) best = r.processes->max(best);  // over every rank's sources
    for (std::size_t i = 0; i < n; ++i) {
      const SourceParams p = pr.params().at(i);
      if (!(best > 0.0)) {
        r.scores[i] = DBL_MAX;  // nothing seen yet: explore, lower ids first
        continue;
      }
      SourceParams q = p;
      // Exploration that never stops (a bonus like UCB's): without it an estimate that came out
      // low early can starve its source of the crawls that would correct it.
      const double bonus =
          optimism * best * std::sqrt(std::log(2.0 + double(r.epoch)) / (1.0 + st->count[i]));
      q.u_star = (st->sum[i] > 0.0 ? raw_estimate(i) : best / (1.0 + st->weight[i])) + bonus;
      q.x_cap = q.u_star;
      if (st->full[i]) {
        r.scores[i] = whittle_index(r.state[i], q);
      } else {
        double om;
        const uint32_t w = age_word(pr, i, r.age[i], r.epoch);
        const double x = AgeState::value(w, uint32_t(r.epoch), pr.initial_state()[i], q, &om);
        r.scores[i] = AgeState::index(w, x, om, q);
      }
    }
  };
}

LearningCurve learning_curve(const Problem& pr, const ScoreFn& score, const std::string& label,
                             uint64_t window) {
  CE_EXPECTS(window >= 1, "--window must be at least 1");
  const uint64_t total = pr.total_epochs();
  const uint32_t reps = pr.config.replications;
  std::vector<std::vector<double>> reward(reps, std::vector<double>(total, 0.0));
  const EpochObserver obs = [&](const EpochView& v) {
    if (v.replication < reps && v.epoch < total) reward[v.replication][v.epoch] = v.reward;
  };
  function_rollout(pr, score, label, &obs);
  LearningCurve out;
  if (pr.config.model == Model::stochastic) {
    const auto reason = [&](uint64_t epochs) {
      return heavy_tail_reason(utility_second_moment(pr.config.utility),
                               pr.arrivals_per_epoch * double(epochs),
                               to_string(pr.config.utility));
    };
    out.window_no_interval = reason(std::min(window, total));
    out.run_no_interval = reason(total);
  }
  std::vector<double> column(reps);
  for (uint64_t t0 = 0; t0 < total; t0 += window) {
    const uint64_t t1 = std::min(total, t0 + window);
    for (uint32_t r = 0; r < reps; ++r) {
      double s = 0.0;
      for (uint64_t t = t0; t < t1; ++t) s += reward[r][t];
      column[r] = s / double(t1 - t0);
    }
    const Summary sm = summarize_replications(column);
    out.epoch.push_back(double(t0));
    out.mean.push_back(sm.mean);
    // NaN without an interval (one replication, copies, heavy tails)
    const bool trusted = out.window_no_interval.empty();
    out.ci_low.push_back(trusted ? sm.ci_low : std::numeric_limits<double>::quiet_NaN());
    out.ci_high.push_back(trusted ? sm.ci_high : std::numeric_limits<double>::quiet_NaN());
  }
  for (uint32_t r = 0; r < reps; ++r) {
    double s = 0.0;
    for (double v : reward[r]) s += v;
    out.replication_reward.push_back(s / double(total));
  }
  return out;
}

}  // namespace crawleval
