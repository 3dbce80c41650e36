// The function engine (rollout.hpp, function_rollout): a policy given as a function of the states,
// on the CPU. Per epoch and replication:
//   1. apply the previous selection to every source, in chunks of kChunk handed to threads: the
//      chunk's reward and cost, then the general model's transition (policy.hpp,
//      general_transition: the reference's and the CPU backend's arithmetic, bit for bit);
//   2. what the policy observes (the state, or its expectation under belief) and the age, per
//      source;
//   3. one call of the score function, on the calling thread (it may write the scores or lend its
//      own array: ScoreRequest::borrowed);
//   4. the keys (score_key), then the exact selection on the budget's integer weights
//      (selection.hpp): the epoch layer's (epoch_collective.hpp: the windowed radix select, its
//      passes split among the threads, its steps shared over the ranks under MPI).
// The rewards are summed per chunk of kChunk sources and the chunks in id order (the layer's
// fold, along the ranks under MPI), as the CPU backend does: a function that computes a built-in
// policy's scores gets that policy's numbers, on any number of processes. Under MPI each rank
// holds its shard (problem.shard) and calls the score function on it (ScoreRequest::first).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <type_traits>

#include "crawleval/comm.hpp"
#include "crawleval/epoch_collective.hpp"
#include "crawleval/error.hpp"
#include "crawleval/policy.hpp"
#include "crawleval/rollout.hpp"
#include "crawleval/sharded.hpp"
#include "crawleval/window_select.hpp"
#include "progress.hpp"

namespace crawleval {

namespace {
constexpr std::size_t kChunk = std::size_t(1) << 14;  // the CPU backend's reward chunk
}  // namespace

RolloutOutput function_rollout(const Problem& pr, const ScoreFn& score_fn, const std::string& label,
                               const EpochObserver* observer, const ScoreBuffers* buffers,
                               Comm* processes) {
  const auto t0 = std::chrono::steady_clock::now();
  const RunConfig& cfg = pr.config;
  const std::size_t n = pr.size();
  Comm& comm = processes ? *processes : solo_comm();
  CE_EXPECTS(comm.size() > 1 || !pr.sharded(), "internal: a shard needs its processes");
  CE_EXPECTS(!buffers || comm.size() == 1, "internal: score buffers are for one process");
  CE_EXPECTS(!pr.params().compact(), "internal: the function engine reads every column");
  const uint64_t first = pr.shard.first;
  if (n > kMaxLocalSources) throw InputError(local_limit_error(pr.population->origin, n));
  const int threads = cfg.threads > 0 ? cfg.threads : omp_get_max_threads();
  const std::size_t chunks = (n + kChunk - 1) / kChunk;
  const int used = int(std::max<std::size_t>(1, std::min<std::size_t>(threads, chunks)));
  const bool det = cfg.model == Model::deterministic;
  const double* cost = pr.population->cost.data();
  const FixedBudget& fb = pr.weights;

  // The observed state and the age go to the caller's buffers where it gives them (no copy on
  // the way to a Python policy).
  // Under full observation the policy sees the state itself: it then lives in the caller's
  // buffer (no copy at all), else the policy gets the belief written beside it.
  const bool full = cfg.observe == Observe::full;
  const bool external_x = buffers && full;
  std::vector<double> own_x(external_x ? 0 : n), own_seen(buffers || full ? 0 : n),
      own_age(buffers ? 0 : n), scores(n);
  double* const x = external_x ? buffers->state : own_x.data();
  double* const seen = full ? x : buffers ? buffers->state : own_seen.data();
  double* const age = buffers ? buffers->age : own_age.data();
  double* const collected = buffers ? buffers->collected : nullptr;
  std::vector<uint32_t> w(n), selected;
  std::vector<uint64_t> key(n), weight(pr.unit_costs ? 0 : n), mine;
  std::vector<double> crawled_x;
  EpochCollective layer(comm, first, n, pr.global_size(), used);
  for (std::size_t i = 0; i < weight.size(); ++i) weight[i] = fixed_weight(cost[i], fb);

  RolloutOutput out;
  out.threads = used;
  out.replication_reward.resize(cfg.replications);
  out.replication_cost.resize(cfg.replications);
  out.epoch_reward.reserve(cfg.epochs);
  detail::Progress progress(cfg.progress, label, uint64_t(cfg.replications) * pr.total_epochs());
  uint64_t done = 0;
  // An interrupt stops one process only between epochs: ranks that stopped at different epochs
  // would wait for each other at the next collective, so under MPI the run goes on.
  auto stopped = [&] { return comm.size() == 1 && progress.stopped(); };
  const auto loop_start = std::chrono::steady_clock::now();
  for (uint32_t rep = 0; rep < cfg.replications && !stopped(); ++rep) {
    const uint32_t r = cfg.first_replication + rep;
    std::copy(pr.initial_state().begin(), pr.initial_state().end(), x);
    std::copy(pr.initial_age().begin(), pr.initial_age().end(), w.begin());
    if (collected) std::fill(collected, collected + n, 0.0);
    double reward_sum = 0.0, cost_sum = 0.0;
    Selection sel;
    const uint64_t total = pr.total_epochs();
    layer.begin_sums(2, kChunk, cfg.epochs, observer != nullptr);
    const EpochCollective::Totals add = [&](const double* s) {
      reward_sum += s[0];
      cost_sum += s[1];
      if (rep == 0) out.epoch_reward.push_back(s[0]);
    };
    for (uint64_t t = 0; t <= total; ++t) {
      const bool apply = t > 0, score = t < total;
      const uint32_t prev = uint32_t(t - 1), now = uint32_t(t);
      double* const chunk_reward = layer.sums();
      double* const chunk_cost = chunk_reward + chunks;
      // Step 1-2, specialised at compile time on the model and on expiry, so that each instance
      // reads only the per-source columns its transition uses (at_base: no expiry fields).
      auto pass = [&](auto det_tag, auto base_tag) {
        constexpr bool kDet = decltype(det_tag)::value, kBase = decltype(base_tag)::value;
#pragma omp parallel for schedule(dynamic, 1) num_threads(used) if (used > 1)
        for (std::size_t c = 0; c < chunks; ++c) {
          const std::size_t lo = c * kChunk, hi = std::min(n, lo + kChunk);
          double reward = 0.0, spent = 0.0;
          for (std::size_t i = lo; i < hi; ++i) {
            const SourceParams p = kBase ? pr.params().at_base(i) : pr.params().at(i);
            if (apply) {
              const bool crawled = is_selected(key[i], first + i, sel);
              if (collected) collected[i] = crawled ? x[i] : 0.0;
              if (crawled) {
                reward += x[i];
                spent += pr.unit_costs ? 1.0 : cost[i];
              }
              general_transition(&x[i], &w[i], crawled, prev, kDet, cfg.utility, cfg.seed, r,
                                 pr.first_id + first + i, p);
            }
            if (score) {
              double om_eta;
              if (!full) seen[i] = AgeState::value(w[i], now, pr.initial_state()[i], p, &om_eta);
              age[i] = AgeState::age(w[i], now);
            }
          }
          chunk_reward[c] = reward;
          chunk_cost[c] = spent;
        }
      };
      if (det && !pr.has_expiry)
        pass(std::true_type{}, std::true_type{});
      else if (det)
        pass(std::true_type{}, std::false_type{});
      else if (!pr.has_expiry)
        pass(std::false_type{}, std::true_type{});
      else
        pass(std::false_type{}, std::false_type{});
      if (apply && prev >= cfg.burn_in) layer.commit(add);
      if (!score) break;
      const double* borrowed = nullptr;
      score_fn(ScoreRequest{r, t, n, seen, age, scores.data(), &borrowed, first,
                            comm.size() > 1 ? &comm : nullptr});
      const double* sc = borrowed ? borrowed : scores.data();
#pragma omp parallel for schedule(static) num_threads(used) if (used > 1)
      for (std::size_t i = 0; i < n; ++i) key[i] = score_key(sc[i]);
      if (borrowed && observer) std::copy(sc, sc + n, scores.begin());
      sel = layer.select(key.data(), weight.data(), pr.unit_costs, fb.limit);
      out.counters.selections += 1;
      if (observer) {
        // Every rank's crawled ids, and their states summed in id order across the ranks.
        mine.clear(), crawled_x.clear();
        for (std::size_t i = 0; i < n; ++i)
          if (is_selected(key[i], first + i, sel))
            mine.push_back(first + i), crawled_x.push_back(x[i]);
        const std::vector<uint64_t> ids = layer.gather(mine);
        selected.assign(ids.begin(), ids.end());
        const double reward = layer.sum_in_order(crawled_x);
        const bool local = comm.size() == 1;  // the per-source arrays are this process's only
        (*observer)(EpochView{rep, t, &selected, reward, local && !external_x ? &own_x : nullptr,
                              local ? &scores : nullptr});
      }
      progress.update(++done);
      if (stopped()) break;
    }
    layer.flush(add);
    out.replication_reward[rep] = reward_sum / double(cfg.epochs);
    out.replication_cost[rep] = cost_sum / double(cfg.epochs);
  }
  if (comm.size() == 1) progress.throw_if_stopped();
  const window::Diagnostics d = layer.diagnostics();
  out.counters.window_misses = d.misses;
  out.counters.levels = d.levels;
  out.counters.tie_scans = d.tie_scans;
  out.counters.listed = d.listed;
  if (comm.size() > 1) out.comm_seconds = layer.traffic().seconds;
  const auto end = std::chrono::steady_clock::now();
  out.seconds = std::chrono::duration<double>(end - t0).count();
  out.loop_seconds = std::chrono::duration<double>(end - loop_start).count();
  return out;
}

}  // namespace crawleval
