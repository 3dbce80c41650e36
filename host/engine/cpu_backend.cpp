// The CPU backend: the fast path on machines without a GPU.
//
// Per replication and epoch t there is one fused pass over the sources (parallel over fixed
// chunks):
//   a. apply epoch t-1's selection: crawled sources pay their state as reward, then every source
//      moves to its next state (eq. 2-3 / 19);
//   b. score the new state and write its order-preserving key;
//   c. add the key to this thread's level-0 histogram (step 1 of cpu_select.hpp).
// Then the radix selector finds epoch t's stop source (cpu_select.hpp). A final pass applies the
// last epoch's selection. The deterministic Whittle policy tracks (eta, alpha^eta) per source
// (GridTracker) so the index costs a few multiply-adds instead of a log and an exp.
//
// Reward sums are taken per fixed chunk of sources and added in chunk order: the result does not
// depend on the number of threads. Small populations with many replications run the replications
// in parallel instead (one workspace per thread, serial inner loops, selection by sorting).
// Nothing is allocated inside the epoch loop.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>

#include "cpu_select.hpp"
#include "crawleval/error.hpp"
#include "crawleval/policy.hpp"
#include "crawleval/rollout.hpp"
#include "crawleval/selection.hpp"
#include "progress.hpp"

namespace crawleval {

namespace {

constexpr std::size_t kChunk = std::size_t(1) << 14;
constexpr std::size_t kSmallN = 2048;  // below this, select by sorting

struct Workspace {
  std::vector<double> x, om_eta, chunk_reward, chunk_cost;
  std::vector<uint32_t> eta, order, selected;
  std::vector<uint64_t> keys;
  detail::RadixSelector selector;

  void prepare(std::size_t n, int threads) {
    x.resize(n);
    om_eta.resize(n);
    eta.resize(n);
    keys.resize(n);
    order.resize(n);
    selected.reserve(n);
    const std::size_t chunks = (n + kChunk - 1) / kChunk;
    chunk_reward.resize(chunks);
    chunk_cost.resize(chunks);
    if (n > kSmallN) selector.prepare(n, threads);
  }
};

struct ReplicationResult {
  double reward_sum = 0.0, cost_sum = 0.0;
};

/// One replication. Template parameters fix the policy, the model and unit costs at compile time;
/// General selects the general model (belief observation, expiry, the static policy), which tracks
/// every source's AgeState word and scores through policy_score; otherwise the base model's fast
/// path (grid tracking for the deterministic Whittle index).
template <Policy P, bool Deterministic, bool UnitCost, bool General>
ReplicationResult run_replication(const Problem& pr, uint32_t rep, Workspace& ws, int threads,
                                  const EpochObserver* observer, std::vector<double>* epoch_reward,
                                  std::atomic<uint64_t>* done, detail::Progress* progress) {
  const RunConfig& cfg = pr.config;
  const std::size_t n = pr.size();
  const ParamColumns& params = pr.params;
  const double* cost = pr.population->cost.data();
  const double* cost_or_null = UnitCost ? nullptr : cost;
  const bool small = n <= kSmallN;
  constexpr bool kTrack = !General && Deterministic && P == Policy::whittle;
  const std::size_t chunks = ws.chunk_reward.size();
  const uint64_t total = pr.total_epochs();
  double* x = ws.x.data();
  double* om_eta = ws.om_eta.data();
  uint32_t* eta = ws.eta.data();
  uint64_t* keys = ws.keys.data();
  const uint64_t seed = cfg.seed;
  const UtilityDist utility = cfg.utility;
  const uint32_t r = cfg.first_replication + rep;  // the replication's index in every draw
  const double* x0 = pr.initial_state.data();
  const uint32_t* period = pr.static_period.empty() ? nullptr : pr.static_period.data();

  std::copy(pr.initial_state.begin(), pr.initial_state.end(), ws.x.begin());
  if (General) std::copy(pr.initial_age.begin(), pr.initial_age.end(), ws.eta.begin());
  if (kTrack) {
    std::copy(pr.initial_eta.begin(), pr.initial_eta.end(), ws.eta.begin());
    std::copy(pr.initial_om_eta.begin(), pr.initial_om_eta.end(), ws.om_eta.begin());
  }

  ReplicationResult res;
  Selection sel;
  uint64_t pointer = 0;
  for (uint64_t t = 0; t <= total; ++t) {
    const bool apply = t > 0, score = t < total;
    if (score && !small) ws.selector.begin_epoch();
    const uint32_t prev = uint32_t(t - 1), now = uint32_t(t);
    const ScoreContext ctx{P, cfg.observe, seed, r, now, pointer, n};
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
    for (std::size_t c = 0; c < chunks; ++c) {
      double* hist = small ? nullptr : ws.selector.histogram(omp_get_thread_num());
      const std::size_t lo = c * kChunk, hi = std::min(n, lo + kChunk);
      double reward = 0.0, spent = 0.0;
      for (std::size_t i = lo; i < hi; ++i) {
        SourceParams p = General ? params.at(i) : params.at_base(i);  // unused fields: not loaded
        if (UnitCost) p.inv_cost = 1.0;
        if constexpr (General) {
          if (apply) {
            const bool crawled = is_selected(keys[i], i, sel);
            if (crawled) {
              reward += x[i];
              spent += UnitCost ? 1.0 : cost[i];
            }
            general_transition(&x[i], &eta[i], crawled, prev, Deterministic, utility, seed, r,
                               uint32_t(i), p);
          }
          if (score) {
            const double s = policy_score(ctx, i, x[i], eta[i], x0[i], period ? period[i] : 0u, p);
            keys[i] = score_key(s);
            if (hist) hist[coarse_bin_of_score(s)] += UnitCost ? 1.0 : cost[i];
          }
          continue;
        }
        if (apply) {  // a.
          const bool crawled = is_selected(keys[i], i, sel);
          if (crawled) {
            reward += x[i];
            spent += UnitCost ? 1.0 : cost[i];
          }
          const double arrivals =
              Deterministic ? drift(p) : sample_arrivals(p, utility, seed, r, uint32_t(i), prev);
          x[i] = crawled ? arrivals : passive_next(x[i], arrivals, p);
          if (kTrack) {
            if (crawled)
              GridTracker::crawled(p, &eta[i], &om_eta[i]);
            else
              GridTracker::passive(p, &eta[i], &om_eta[i]);
          }
        }
        if (score) {  // b., c.
          double s;
          if constexpr (P == Policy::whittle)
            s = kTrack ? GridTracker::index(x[i], eta[i], om_eta[i], p) : whittle_index(x[i], p);
          else if constexpr (P == Policy::greedy)
            s = x[i] * p.inv_cost;
          else if constexpr (P == Policy::round_robin)
            s = round_robin_score(i, pointer, n);
          else
            s = random_score(seed, r, uint32_t(i), now);
          const uint64_t k = score_key(s);
          keys[i] = k;
          if (hist) hist[coarse_bin_of_score(s)] += UnitCost ? 1.0 : cost[i];
        }
      }
      ws.chunk_reward[c] = reward;
      ws.chunk_cost[c] = spent;
    }
    if (apply && prev >= cfg.burn_in) {
      double reward = 0.0, spent = 0.0;
      for (std::size_t c = 0; c < chunks; ++c)
        reward += ws.chunk_reward[c], spent += ws.chunk_cost[c];
      res.reward_sum += reward;
      res.cost_sum += spent;
      if (epoch_reward) epoch_reward->push_back(reward);
    }
    if (!score) break;
    sel = small ? detail::select_by_sort(keys, cost_or_null, n, cfg.budget, ws.order.data())
                : ws.selector.finish(keys, cost_or_null, n, cfg.budget, threads);
    if (P == Policy::round_robin && !sel.all) pointer = sel.stop_id;
    if (observer) {
      ws.selected.clear();
      double reward = 0.0;
      for (std::size_t i = 0; i < n; ++i)
        if (is_selected(keys[i], i, sel)) ws.selected.push_back(uint32_t(i)), reward += x[i];
      (*observer)(EpochView{rep, t, &ws.selected, reward, nullptr, nullptr});
    }
    const uint64_t so_far = done->fetch_add(1, std::memory_order_relaxed) + 1;
    if (progress) progress->update(so_far);
  }
  return res;
}

using ReplicationFn = ReplicationResult (*)(const Problem&, uint32_t, Workspace&, int,
                                            const EpochObserver*, std::vector<double>*,
                                            std::atomic<uint64_t>*, detail::Progress*);

template <Policy P, bool General>
ReplicationFn pick(bool deterministic, bool unit) {
  if (deterministic)
    return unit ? run_replication<P, true, true, General>
                : run_replication<P, true, false, General>;
  return unit ? run_replication<P, false, true, General>
              : run_replication<P, false, false, General>;
}

template <bool General>
ReplicationFn pick(Policy p, bool deterministic, bool unit) {
  switch (p) {
    case Policy::whittle:
      return pick<Policy::whittle, General>(deterministic, unit);
    case Policy::greedy:
      return pick<Policy::greedy, General>(deterministic, unit);
    case Policy::round_robin:
      return pick<Policy::round_robin, General>(deterministic, unit);
    case Policy::random:
      return pick<Policy::random, General>(deterministic, unit);
    case Policy::static_rate:
      return pick<Policy::static_rate, true>(deterministic, unit);
  }
  return nullptr;
}

}  // namespace

RolloutOutput cpu_rollout(const Problem& pr, Policy policy, const EpochObserver* observer) {
  const auto t0 = std::chrono::steady_clock::now();
  const RunConfig& cfg = pr.config;
  const std::size_t n = pr.size();
  const int threads = cfg.threads > 0 ? cfg.threads : omp_get_max_threads();
  if (policy == Policy::static_rate && pr.static_period.size() != n)
    throw Error("internal: the static policy needs prepare_static_policy()");
  const bool det = cfg.model == Model::deterministic;
  const ReplicationFn fn = pr.base_model(policy) ? pick<false>(policy, det, pr.unit_costs)
                                                 : pick<true>(policy, det, pr.unit_costs);
  const uint32_t reps = cfg.replications;
  RolloutOutput out;
  out.replication_reward.resize(reps);
  out.replication_cost.resize(reps);

  std::chrono::steady_clock::time_point loop_start;
  std::atomic<uint64_t> done{0};
  detail::Progress progress(cfg.progress, to_string(policy), uint64_t(reps) * pr.total_epochs());
  out.epoch_reward.reserve(cfg.epochs);
  // Tall: many replications of a small population run side by side, one per thread.
  const bool tall = n <= kSmallN && reps > 1 && threads > 1 && observer == nullptr;
  if (tall) {
    const int nt = std::min<int>(threads, int(reps));
    out.threads = nt;
    std::vector<Workspace> ws(nt);
    for (auto& w : ws) w.prepare(n, 1);
    loop_start = std::chrono::steady_clock::now();
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (uint32_t r = 0; r < reps; ++r) {
      Workspace& w = ws[omp_get_thread_num()];
      std::vector<double>* er = r == 0 ? &out.epoch_reward : nullptr;
      detail::Progress* shown = omp_get_thread_num() == 0 ? &progress : nullptr;
      const ReplicationResult res = fn(pr, r, w, 1, nullptr, er, &done, shown);
      out.replication_reward[r] = res.reward_sum / double(cfg.epochs);
      out.replication_cost[r] = res.cost_sum / double(cfg.epochs);
    }
  } else {
    // One chunk of sources per thread at least: a population of one or two chunks (the papers'
    // 4 sources) runs without a parallel region per epoch, where idle threads would spin at
    // every epoch's barrier (and steal a busy machine's cores).
    const std::size_t chunks = (n + kChunk - 1) / kChunk;
    const int used = int(std::max<std::size_t>(1, std::min<std::size_t>(threads, chunks)));
    out.threads = used;
    Workspace w;
    w.prepare(n, used);
    loop_start = std::chrono::steady_clock::now();
    for (uint32_t r = 0; r < reps; ++r) {
      std::vector<double>* er = r == 0 ? &out.epoch_reward : nullptr;
      const ReplicationResult res = fn(pr, r, w, used, observer, er, &done, &progress);
      out.replication_reward[r] = res.reward_sum / double(cfg.epochs);
      out.replication_cost[r] = res.cost_sum / double(cfg.epochs);
    }
  }
  const auto end = std::chrono::steady_clock::now();
  out.seconds = std::chrono::duration<double>(end - t0).count();
  out.loop_seconds = std::chrono::duration<double>(end - loop_start).count();
  return out;
}

}  // namespace crawleval
