// The function engine (rollout.hpp, function_rollout): a policy given as a function of the states,
// on the CPU. Per epoch and replication:
//   1. apply the previous selection to every source, in chunks of kChunk handed to threads: the
//      chunk's reward and cost, then the general model's transition (policy.hpp,
//      general_transition: the reference's and the CPU backend's arithmetic, bit for bit);
//   2. what the policy observes (the state, or its expectation under belief) and the age, per
//      source;
//   3. one call of the score function, on the calling thread;
//   4. the keys (score_key), then the exact selection on the budget's integer weights
//      (selection.hpp): by sorting up to kCpuSmallN sources (as the small engine), else the radix
//      select on stored keys (sharded.hpp's sharded_select in one process).
// The rewards are summed per chunk of kChunk sources and the chunks in id order, as the CPU
// backend does: a function that computes a built-in policy's scores gets that policy's numbers.
#include <omp.h>

#include <algorithm>
#include <chrono>

#include "cpu_select.hpp"
#include "crawleval/comm.hpp"
#include "crawleval/error.hpp"
#include "crawleval/policy.hpp"
#include "crawleval/rollout.hpp"
#include "crawleval/sharded.hpp"
#include "crawleval/window_select.hpp"
#include "progress.hpp"

namespace crawleval {

namespace {
constexpr std::size_t kChunk = std::size_t(1) << 14;  // the CPU backend's reward chunk
}

RolloutOutput function_rollout(const Problem& pr, const ScoreFn& score_fn, const std::string& label,
                               const EpochObserver* observer) {
  const auto t0 = std::chrono::steady_clock::now();
  const RunConfig& cfg = pr.config;
  const std::size_t n = pr.size();
  CE_EXPECTS(!pr.sharded(), "internal: function policies run in one process");
  if (n > window::kMaxId)
    throw InputError(pr.population->origin + ": the CPU backend takes at most 4294967294 sources");
  const int threads = cfg.threads > 0 ? cfg.threads : omp_get_max_threads();
  const std::size_t chunks = (n + kChunk - 1) / kChunk;
  const int used = int(std::max<std::size_t>(1, std::min<std::size_t>(threads, chunks)));
  const bool det = cfg.model == Model::deterministic;
  const bool small = n <= kCpuSmallN;
  const double* cost = pr.population->cost.data();
  const FixedBudget& fb = pr.weights;

  std::vector<double> x(n), seen(n), age(n), scores(n), chunk_reward(chunks), chunk_cost(chunks);
  std::vector<uint32_t> w(n), order(small ? n : 0), scratch, selected;
  std::vector<uint64_t> key(n), weight(small || pr.unit_costs ? 0 : n);
  for (std::size_t i = 0; i < weight.size(); ++i) weight[i] = fixed_weight(cost[i], fb);

  RolloutOutput out;
  out.threads = used;
  out.replication_reward.resize(cfg.replications);
  out.replication_cost.resize(cfg.replications);
  out.epoch_reward.reserve(cfg.epochs);
  detail::Progress progress(cfg.progress, label, uint64_t(cfg.replications) * pr.total_epochs());
  uint64_t done = 0;
  const auto loop_start = std::chrono::steady_clock::now();
  for (uint32_t rep = 0; rep < cfg.replications && !progress.stopped(); ++rep) {
    const uint32_t r = cfg.first_replication + rep;
    std::copy(pr.initial_state.begin(), pr.initial_state.end(), x.begin());
    std::copy(pr.initial_age.begin(), pr.initial_age.end(), w.begin());
    double reward_sum = 0.0, cost_sum = 0.0;
    Selection sel;
    const uint64_t total = pr.total_epochs();
    for (uint64_t t = 0; t <= total; ++t) {
      const bool apply = t > 0, score = t < total;
      const uint32_t prev = uint32_t(t - 1), now = uint32_t(t);
#pragma omp parallel for schedule(dynamic, 1) num_threads(used) if (used > 1)
      for (std::size_t c = 0; c < chunks; ++c) {
        const std::size_t lo = c * kChunk, hi = std::min(n, lo + kChunk);
        double reward = 0.0, spent = 0.0;
        for (std::size_t i = lo; i < hi; ++i) {
          const SourceParams p = pr.params.at(i);
          if (apply) {
            const bool crawled = is_selected(key[i], i, sel);
            if (crawled) {
              reward += x[i];
              spent += pr.unit_costs ? 1.0 : cost[i];
            }
            general_transition(&x[i], &w[i], crawled, prev, det, cfg.utility, cfg.seed, r,
                               uint32_t(i), p);
          }
          if (score) {
            double om_eta;
            seen[i] = cfg.observe == Observe::belief
                          ? AgeState::value(w[i], now, pr.initial_state[i], p, &om_eta)
                          : x[i];
            age[i] = AgeState::age(w[i], now);
          }
        }
        chunk_reward[c] = reward;
        chunk_cost[c] = spent;
      }
      if (apply && prev >= cfg.burn_in) {
        double reward = 0.0, spent = 0.0;
        for (std::size_t c = 0; c < chunks; ++c) reward += chunk_reward[c], spent += chunk_cost[c];
        reward_sum += reward;
        cost_sum += spent;
        if (rep == 0) out.epoch_reward.push_back(reward);
      }
      if (!score) break;
      score_fn(ScoreRequest{r, t, n, seen.data(), age.data(), scores.data()});
#pragma omp parallel for schedule(static) num_threads(used) if (used > 1)
      for (std::size_t i = 0; i < n; ++i) key[i] = score_key(scores[i]);
      if (small)
        sel =
            detail::select_by_sort(key.data(), pr.unit_costs ? nullptr : cost, n, fb, order.data());
      else
        sel = sharded_select(solo_comm(), key.data(), weight.data(), pr.unit_costs, n, 0, fb.limit,
                             scratch);
      out.counters.selections += 1;
      if (observer) {
        selected.clear();
        double reward = 0.0;
        for (std::size_t i = 0; i < n; ++i)
          if (is_selected(key[i], i, sel)) selected.push_back(uint32_t(i)), reward += x[i];
        (*observer)(EpochView{rep, t, &selected, reward, &x, &scores});
      }
      progress.update(++done);
      if (progress.stopped()) break;
    }
    out.replication_reward[rep] = reward_sum / double(cfg.epochs);
    out.replication_cost[rep] = cost_sum / double(cfg.epochs);
  }
  progress.throw_if_stopped();
  const auto end = std::chrono::steady_clock::now();
  out.seconds = std::chrono::duration<double>(end - t0).count();
  out.loop_seconds = std::chrono::duration<double>(end - loop_start).count();
  return out;
}

}  // namespace crawleval
