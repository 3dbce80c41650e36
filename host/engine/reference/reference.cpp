// The reference backend: serial, double precision, a full sort every epoch, and the model written
// out literally (eq. 2-3, eq. 19, Theorem 1 via whittle_index). Its only job is to be obviously
// right; every fast path is compared against it.
#include <algorithm>
#include <chrono>
#include <numeric>

#include "base/progress.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/engine/rollout.hpp"
#include "crawleval/model/policy.hpp"
#include "crawleval/model/selection.hpp"

namespace crawleval {

std::vector<uint32_t> reference_select(const std::vector<double>& scores,
                                       const std::vector<double>& cost, const FixedBudget& fb) {
  const std::size_t n = scores.size();
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  // Higher score first, NaN last, ties by lower id (selection.hpp).
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const double sa = scores[a], sb = scores[b];
    const bool na = sa != sa, nb = sb != sb;
    if (na != nb) return nb;
    if (!na && sa != sb) return sa > sb;
    return a < b;
  });
  // The walk in integers (selection.hpp, FixedBudget): stop at the first source that does not fit.
  std::vector<uint32_t> chosen;
  unsigned long long used = 0;
  for (uint32_t i : order) {
    const unsigned long long w = cost.empty() ? 1ull : fixed_weight(cost[i], fb);
    if (used + w > fb.limit) break;
    used += w;
    chosen.push_back(i);
  }
  return chosen;
}

std::vector<uint32_t> reference_select(const std::vector<double>& scores,
                                       const std::vector<double>& cost, double budget) {
  return reference_select(scores, cost,
                          cost_weights(cost.data(), cost.size(), budget, cost.empty()));
}

RolloutOutput reference_rollout(const Problem& given, Policy policy,
                                const EpochObserver* observer) {
  const auto t0 = std::chrono::steady_clock::now();
  // It reads every source's constants every epoch: compact columns are expanded first.
  const Problem pr = with_every_column(given);
  const RunConfig& cfg = pr.config;
  const std::size_t n = pr.size();
  const Population& pop = *pr.population;
  CE_EXPECTS(pr.unit_costs || pop.cost.size() == n, "internal: a population's costs were dropped");
  std::vector<double> ones;  // the costs where the unit ones were dropped (no copy otherwise)
  if (pop.cost.empty()) ones.assign(n, 1.0);
  const std::vector<double>& cost = pop.cost.empty() ? ones : pop.cost;
  const bool deterministic = cfg.model == Model::deterministic;
  if (policy == Policy::static_rate && pr.static_period.size() != n)
    throw Error("internal: the static policy needs prepare_static_policy()");
  if (policy == Policy::lip && (pr.lip_period.size() != n || pr.lip_gain.size() != n))
    throw Error("internal: the lip policy needs prepare_lip_policy()");
  const uint32_t* periods = pr.policy_periods(policy);
  const double* gains = pr.policy_gains(policy);
  RolloutOutput out;

  std::vector<double> x(n), score(n);
  std::vector<uint32_t> w(n);  // AgeState words: time since the last crawl
  std::vector<uint8_t> crawled(n);
  detail::Progress progress(cfg.progress, to_string(policy),
                            uint64_t(cfg.replications) * pr.total_epochs());
  uint64_t done = 0;
  const auto loop_start = std::chrono::steady_clock::now();
  for (uint32_t rep = 0; rep < cfg.replications; ++rep) {
    const uint32_t r = cfg.first_replication + rep;  // the replication's index in every draw
    x = pr.initial_state();
    w = pr.initial_age();
    uint64_t pointer = 0;  // round robin
    double reward_sum = 0.0, cost_sum = 0.0;
    // The measured epochs' time (rollout.hpp): from the first measured epoch, or the second
    // without a burn-in.
    const uint64_t first_timed = std::max<uint64_t>(cfg.burn_in, 1);
    std::chrono::steady_clock::time_point timed_start;
    for (uint64_t t = 0; t < pr.total_epochs(); ++t) {
      if (t == first_timed) timed_start = std::chrono::steady_clock::now();
      // 1. scores
      ScoreContext ctx{policy, cfg.observe, cfg.seed, r, uint32_t(t), pointer, n};
      ctx.first_id = pr.first_id;
      ctx.multiplier = pr.lip_multiplier;
      for (std::size_t i = 0; i < n; ++i)
        score[i] =
            policy_score(ctx, i, x[i], w[i], pr.initial_state()[i], periods ? periods[i] : 0u,
                         gains ? gains[i] : 0.0, pr.params().at(i));
      // 2. selection
      std::vector<uint32_t> chosen = reference_select(score, cost, pr.weights);
      // 3. reward
      std::sort(chosen.begin(), chosen.end());
      std::fill(crawled.begin(), crawled.end(), 0);
      double reward = 0.0, spent = 0.0;
      for (uint32_t i : chosen) {
        crawled[i] = 1;
        reward += x[i];
        spent += cost[i];
      }
      if (t >= cfg.burn_in) {
        reward_sum += reward;
        cost_sum += spent;
        if (rep == 0) out.epoch_reward.push_back(reward);
      }
      if (observer) (*observer)(EpochView{rep, t, &chosen, reward, &x, &score});
      pointer = (pointer + chosen.size()) % n;
      // 4. transitions: X' = U if crawled, else alpha X + U (minus the expiring content)
      for (std::size_t i = 0; i < n; ++i)
        general_transition(&x[i], &w[i], crawled[i], uint32_t(t), deterministic, cfg.utility,
                           cfg.seed, r, pr.first_id + i, pr.params().at(i));
      progress.update(++done);
      progress.throw_if_stopped();
    }
    if (first_timed < pr.total_epochs()) {
      out.measured_seconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - timed_start).count();
      out.measured_epochs += pr.total_epochs() - first_timed;
    }
    out.replication_reward.push_back(reward_sum / double(cfg.epochs));
    out.replication_cost.push_back(cost_sum / double(cfg.epochs));
  }
  const auto end = std::chrono::steady_clock::now();
  out.seconds = std::chrono::duration<double>(end - t0).count();
  out.loop_seconds = std::chrono::duration<double>(end - loop_start).count();
  return out;
}

}  // namespace crawleval
