// The sharded engine (sharded.hpp): the rollout contract of rollout.hpp over the ranks of an MPI
// run, each rank holding a contiguous range of global ids. Per epoch and rank:
//   1. one fused pass over the rank's sources, in chunks of kChunk handed to threads: apply the
//      previous selection (is_selected on the stored key and the global id), collect the chunk's
//      reward, move to the next state and score it (source_step.hpp: the CPU backend's wide
//      engine's arithmetic, so the keys are the same bits), store the key;
//   2. the exact selection over every rank's keys, and
//   3. every few epochs, the chunks' rewards folded in global chunk order along the ranks: both
//      the epoch layer's (epoch_collective.hpp), which the function and freshness engines share;
//      the same additions, in the same order, as one process.
// Bytes per source and epoch: the state (8 B, read and written), the word (4 B, both ways), the
// key (8 B written, read by the apply and the selection's scans), the columns the transition and
// score read (alpha and u for the deterministic Whittle policy, 16 B) and the weight with costs.
#include <omp.h>

#include <algorithm>
#include <chrono>

#include "../engine/progress.hpp"
#include "../engine/source_step.hpp"
#include "crawleval/epoch_collective.hpp"
#include "crawleval/error.hpp"
#include "crawleval/policy.hpp"
#include "crawleval/sharded.hpp"
#include "crawleval/window_select.hpp"

namespace crawleval {

namespace {

using namespace detail;

/// The CPU backend's reward chunk (cpu_backend.cpp): the rewards fold the same partial sums.
constexpr std::size_t kChunk = std::size_t(1) << 14;
static_assert(kFoldChunk % kChunk == 0, "shards must hold whole reward chunks");

struct Workspace {
  std::vector<double> x;
  std::vector<uint32_t> word;
  std::vector<uint64_t> key, weight;
  std::vector<uint32_t> selected_local;
};

struct Totals {
  double reward_sum = 0.0, cost_sum = 0.0;
};

/// What every replication reports besides its totals.
struct Report {
  const EpochObserver* observer;
  std::vector<double>* epoch_reward;  // replication 0's, measured epochs
  Progress* progress;
  uint64_t* done;
  EngineCounters* counters;
};

template <Policy P, bool Det, bool Unit, bool General>
Totals run_shard(const Problem& pr, uint32_t rep, Workspace& ws, EpochCollective& layer,
                 int threads, const Report& out) {
  constexpr bool kTrack = !General && Det && P == Policy::whittle;
  const RunConfig& cfg = pr.config;
  const std::size_t n = pr.size();
  const uint64_t first = pr.shard.first, global_n = pr.global_size();
  const ParamColumns& params = pr.params();
  const double* cost = pr.population->cost.data();
  const uint32_t r = cfg.first_replication + rep;
  const uint64_t total = pr.total_epochs();
  const FixedBudget& fb = pr.weights;
  layer.begin_sums(2, kChunk, cfg.epochs, out.observer != nullptr);
  const std::size_t chunks = layer.chunks();
  double* x = ws.x.data();
  uint32_t* wd = ws.word.data();
  uint64_t* key = ws.key.data();

  std::copy(pr.initial_state().begin(), pr.initial_state().end(), ws.x.begin());
  for (std::size_t i = 0; i < n; ++i) {
    if constexpr (kTrack)
      wd[i] = det_word::initial(pr.initial_eta()[i], pr.initial_age()[i]);
    else if constexpr (General)
      wd[i] = pr.initial_age()[i];
  }

  Totals res;
  Selection sel;
  uint64_t pointer = 0;
  const EpochCollective::Totals add = [&](const double* sums) {
    res.reward_sum += sums[0];
    res.cost_sum += sums[1];
    if (out.epoch_reward) out.epoch_reward->push_back(sums[0]);
  };

  for (uint64_t t = 0; t <= total; ++t) {
    const bool apply = t > 0, score = t < total;
    const uint32_t prev = uint32_t(t - 1);
    ScoreContext ctx{P, cfg.observe, cfg.seed, r, uint32_t(t), pointer, global_n};
    ctx.first_id = pr.first_id;
    double* const chunk_reward = layer.sums();
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1)
    for (std::size_t c = 0; c < chunks; ++c) {
      const std::size_t lo = c * kChunk, hi = std::min(n, lo + kChunk);
      double reward = 0.0, spent = 0.0;
      for (std::size_t i = lo; i < hi; ++i) {
        const uint64_t id = first + i;
        double xi = x[i];
        uint32_t wi = (kTrack || General) ? wd[i] : 0u;
        if (apply) {
          const bool crawled = is_selected(key[i], id, sel);
          if (crawled) {
            reward += xi;
            spent += Unit ? 1.0 : cost[i];
          }
          if constexpr (General)
            general_transition(&xi, &wi, crawled, prev, Det, cfg.utility, cfg.seed, r,
                               pr.first_id + id, params.at(i));
          else
            xi = base_next<Det>(xi, crawled, i, id, prev, pr, r);
          if constexpr (kTrack) wi = det_word::next(wi, crawled);
          x[i] = xi;
          if constexpr (kTrack || General) wd[i] = wi;
        }
        if (score) {
          double s;
          if constexpr (kTrack)
            s = det_whittle_score<Unit>(xi, wi, i, pr);
          else if constexpr (General)
            s = general_score(xi, wi, i, id, ctx, pr);
          else
            s = base_score<P, Unit>(xi, i, id, ctx, pr);
          key[i] = score_key(s);
        }
      }
      chunk_reward[c] = reward;
      chunk_reward[chunks + c] = spent;
    }
    if (apply && prev >= cfg.burn_in) layer.commit(add);
    if (!score) break;
    sel = layer.select(key, ws.weight.data(), Unit, fb.limit);
    out.counters->selections += 1;
    if (P == Policy::round_robin && !sel.all) pointer = sel.stop_id;
    if (out.observer) {
      // The global crawled ids (rank order is id order) and the epoch's reward as the next apply
      // will collect it.
      ws.selected_local.clear();
      std::vector<double> part(chunks, 0.0);
      for (std::size_t i = 0; i < n; ++i)
        if (is_selected(key[i], first + i, sel)) {
          ws.selected_local.push_back(uint32_t(first + i));
          part[i / kChunk] += x[i];
        }
      const std::vector<uint32_t> selected = layer.comm().allgather(ws.selected_local);
      const double reward = fold_in_order(layer.comm(), part, 1, chunks)[0];
      (*out.observer)(EpochView{rep, t, &selected, reward, nullptr, nullptr});
    }
    if (out.progress) out.progress->update(++*out.done);
  }
  layer.flush(add);
  return res;
}

using ShardFn = Totals (*)(const Problem&, uint32_t, Workspace&, EpochCollective&, int,
                           const Report&);

template <Policy P, bool General>
ShardFn pick(bool det, bool unit) {
  if (det) return unit ? run_shard<P, true, true, General> : run_shard<P, true, false, General>;
  return unit ? run_shard<P, false, true, General> : run_shard<P, false, false, General>;
}

template <bool General>
ShardFn pick(Policy p, bool det, bool unit) {
  switch (p) {
    case Policy::whittle:
      return pick<Policy::whittle, General>(det, unit);
    case Policy::greedy:
      return pick<Policy::greedy, General>(det, unit);
    case Policy::round_robin:
      return pick<Policy::round_robin, General>(det, unit);
    case Policy::random:
      return pick<Policy::random, General>(det, unit);
    case Policy::static_rate:
      break;
  }
  return pick<Policy::static_rate, true>(det, unit);
}

/// The root's vector on every rank.
template <class T>
void broadcast_vector(Comm& comm, std::vector<T>& v, int root) {
  uint64_t size = v.size();
  comm.broadcast(&size, sizeof size, root);
  v.resize(size);
  comm.broadcast(v.data(), size * sizeof(T), root);
}

/// A population of at most kCpuSmallN sources lies in one chunk, wholly on one rank (shard_of):
/// that rank runs the CPU backend's small engine, as one process does, and sends the output (and
/// what its observer saw) to the others.
RolloutOutput small_on_one_rank(const Problem& pr, Policy policy, Comm& comm,
                                const EpochObserver* observer) {
  int owner = 0;
  for (int r = 0; r < comm.size(); ++r)
    if (shard_of(pr.global_size(), r, comm.size()).count == pr.global_size()) owner = r;
  RolloutOutput out;
  struct Seen {
    uint32_t replication;
    uint64_t epoch;
    double reward;
  };
  std::vector<Seen> seen;
  std::vector<uint32_t> sets, set_sizes;
  const EpochObserver record = [&](const EpochView& v) {
    seen.push_back(Seen{v.replication, v.epoch, v.reward});
    set_sizes.push_back(uint32_t(v.selected->size()));
    sets.insert(sets.end(), v.selected->begin(), v.selected->end());
  };
  collectively(comm, [&] {
    if (comm.rank() == owner) out = cpu_rollout(pr, policy, observer ? &record : nullptr);
  });
  broadcast_vector(comm, out.replication_reward, owner);
  broadcast_vector(comm, out.replication_cost, owner);
  broadcast_vector(comm, out.epoch_reward, owner);
  double times[3] = {out.seconds, out.loop_seconds, double(out.threads)};
  comm.broadcast(times, sizeof times, owner);
  out.seconds = times[0], out.loop_seconds = times[1], out.threads = int(times[2]);
  comm.broadcast(&out.counters, sizeof out.counters, owner);
  if (observer) {
    broadcast_vector(comm, seen, owner);
    broadcast_vector(comm, set_sizes, owner);
    broadcast_vector(comm, sets, owner);
    std::size_t at = 0;
    for (std::size_t k = 0; k < seen.size(); ++k) {
      const std::vector<uint32_t> selected(sets.begin() + std::ptrdiff_t(at),
                                           sets.begin() + std::ptrdiff_t(at + set_sizes[k]));
      at += set_sizes[k];
      (*observer)(EpochView{seen[k].replication, seen[k].epoch, &selected, seen[k].reward, nullptr,
                            nullptr});
    }
  }
  return out;
}

}  // namespace

Problem make_sharded_problem(const Population& local, const RunConfig& cfg, const Shard& shard,
                             Comm& comm) {
  collectively(comm, [&] {
    CE_EXPECTS(local.size() == shard.count, "internal: a shard of " + std::to_string(shard.count) +
                                                " sources holds " + std::to_string(local.size()));
    CE_EXPECTS(shard.total > 0, local.origin + ": the population is empty");
    if (shard.count > kMaxLocalSources)
      throw InputError(local_limit_error(local.origin, shard.count));
    CE_EXPECTS(shard.total < kMaxGlobalId, local.origin + ": at most 2^63 sources are supported");
    validate_sources(local, cfg);
  });
  // The global facts: total cost (kFoldChunk chunks folded in id order), unit costs, expiry.
  const std::size_t chunks = (local.size() + kFoldChunk - 1) / kFoldChunk;
  // Beside it, the clamped total S of the selection's integer costs (selection.hpp), folded the
  // same way, so every process count finds the same weights.
  const double cost_limit = budget_limit_finite(cfg.budget);
  std::vector<double> part(2 * chunks, 0.0);
  for (std::size_t i = 0; i < local.size(); ++i) {
    part[i / kFoldChunk] += local.cost[i];
    if (cost_limit > 0.0)
      part[chunks + i / kFoldChunk] += clamped_cost_term(local.cost[i], cost_limit);
  }
  const std::vector<double> folded = fold_in_order(comm, part, 2, chunks);
  const double total_cost = folded[0], clamped_sum = folded[1];
  bool has_expiry = false;
  for (uint32_t e : local.expiry) has_expiry = has_expiry || e > 0;
  has_expiry = comm.any(has_expiry);
  // Checks that need the global facts, as validate() makes them (the same messages).
  collectively(comm, [&] {
    validate_budget(cfg, total_cost, shard.total, local.origin);
    if (!has_expiry) return;
    CE_EXPECTS(cfg.start != Start::given,
               local.origin +
                   ": content expiry needs --start empty, fresh or full (an initial state from "
                   "the x0 column has no age to expire from)");
    CE_EXPECTS(cfg.model == Model::deterministic || cfg.start == Start::empty,
               "content expiry in the stochastic model needs --start empty (the initial content "
               "must come from the simulated arrivals to expire)");
  });
  Problem pr;
  collectively(comm, [&] { pr = derive_problem(local, cfg); });  // out of memory on one rank
  pr.unit_costs = comm.all(local.unit_costs());
  pr.has_expiry = has_expiry;
  pr.total_cost = total_cost;
  pr.weights = fixed_budget(cfg.budget, clamped_sum, pr.unit_costs);
  pr.shard = shard;
  return pr;
}

RolloutOutput sharded_rollout(const Problem& pr, Policy policy, Comm& comm,
                              const EpochObserver* observer) {
  if (observer && pr.global_size() > kMaxLocalSources)  // EpochView's positions are 32-bit
    throw Error("internal: an epoch observer sees at most 4,294,967,294 sources");
  if (pr.global_size() <= kCpuSmallN) return small_on_one_rank(pr, policy, comm, observer);
  const auto t0 = std::chrono::steady_clock::now();
  const RunConfig& cfg = pr.config;
  const std::size_t n = pr.size();
  if (policy == Policy::static_rate && pr.static_period.size() != n)
    throw Error("internal: the static policy needs prepare_static_policy()");
  if (cfg.model == Model::stochastic && !pr.params().has_arrival_column())
    throw Error("internal: a stochastic run on a problem derived for the deterministic model");
  const int threads = cfg.threads > 0 ? cfg.threads : omp_get_max_threads();
  const std::size_t chunks = (n + kChunk - 1) / kChunk;
  const int used = int(std::max<std::size_t>(1, std::min<std::size_t>(threads, chunks)));
  const bool det = cfg.model == Model::deterministic;
  const ShardFn fn = pr.base_model(policy) ? pick<false>(policy, det, pr.unit_costs)
                                           : pick<true>(policy, det, pr.unit_costs);

  Workspace ws;
  ws.x.resize(n);
  ws.word.resize(n);
  ws.key.resize(n);
  if (!pr.unit_costs) {
    ws.weight.resize(n);
    for (std::size_t i = 0; i < n; ++i)
      ws.weight[i] = fixed_weight(pr.population->cost[i], pr.weights);
  }

  RolloutOutput out;
  out.threads = used;
  out.replication_reward.resize(cfg.replications);
  out.replication_cost.resize(cfg.replications);
  Progress progress(cfg.progress && comm.rank() == 0, to_string(policy),
                    uint64_t(cfg.replications) * pr.total_epochs());
  uint64_t done = 0;
  EpochCollective layer(comm, pr.shard.first, n, pr.global_size(), used);
  const auto loop_start = std::chrono::steady_clock::now();
  for (uint32_t rep = 0; rep < cfg.replications; ++rep) {
    const Report report{observer, rep == 0 ? &out.epoch_reward : nullptr, &progress, &done,
                        &out.counters};
    const Totals t = fn(pr, rep, ws, layer, used, report);
    out.replication_reward[rep] = t.reward_sum / double(cfg.epochs);
    out.replication_cost[rep] = t.cost_sum / double(cfg.epochs);
  }
  const auto end = std::chrono::steady_clock::now();
  out.counters.levels = layer.stats.allreduces;
  out.counters.listed = layer.stats.gathered;
  out.comm_seconds = layer.stats.comm_seconds;
  out.seconds = std::chrono::duration<double>(end - t0).count();
  out.loop_seconds = std::chrono::duration<double>(end - loop_start).count();
  return out;
}

PolicyResult evaluate_sharded(const Problem& problem, Policy policy, Comm& comm,
                              const EvaluateOptions& options) {
  check_observe_column(*problem.population, policy);
  return evaluate_with(
      problem, policy, Backend::cpu,
      [&](const Problem& pr) { return sharded_rollout(pr, policy, comm); }, options);
}

}  // namespace crawleval
