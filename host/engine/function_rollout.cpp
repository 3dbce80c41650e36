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
//      (selection.hpp): by sorting up to kCpuSmallN sources (as the small engine), else the radix
//      select on stored keys: sharded.hpp's sharded_select in one process, with its passes split
//      among the threads (parallel_select) when there are several; the same stop either way.
// The rewards are summed per chunk of kChunk sources and the chunks in id order, as the CPU
// backend does: a function that computes a built-in policy's scores gets that policy's numbers.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <type_traits>

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

/// What parallel_select reuses between epochs.
struct SelectScratch {
  std::vector<uint64_t> hist;             ///< per thread: kBins counts, then kBins weights
  std::vector<std::vector<uint32_t>> in;  ///< per thread: its candidates, ascending
  std::vector<uint32_t> cand, next;
};

/// sharded_select's steps (host/mpi/sharded_select.cpp) in one process with every pass over the
/// sources or the candidates split among `threads` threads: the same rule (selection.hpp: score
/// descending, id ascending, the longest prefix whose fixed-point weights fit `limit`), hence
/// the same Selection.
///  1. the coarse histogram (coarse_bin: counts and weights), per thread then summed; the first
///     bin from the top whose cumulative weight exceeds the limit holds the stop (none: all fit);
///     its members, listed by each thread over its static range, so ascending when joined;
///  2. while more than kGatherMax candidates remain and their key range holds more than one key,
///     the next digit's histogram and the boundary digit, the same way;
///  3. sort the few left by (key desc, id asc) and walk the budget left to the first that does not
///     fit; or, one key left, walk its members in id order.
Selection parallel_select(const uint64_t* keys, const uint64_t* weights, bool unit, std::size_t n,
                          uint64_t limit, int threads, SelectScratch& s, bool coarse_counted) {
  using window::find_boundary;
  const std::size_t width = 2 * std::size_t(kBins);
  s.in.resize(std::size_t(threads));
  auto weight_of = [&](uint32_t i) -> uint64_t { return unit ? 1 : weights[i]; };
  // Histogram of digit(i) over `count` items (item(k) -> source), then the summed weights.
  std::vector<uint64_t> total(width);
  auto sum = [&]() {
    std::fill(total.begin(), total.end(), 0);
    for (int t = 0; t < threads; ++t)
      for (std::size_t b = 0; b < width; ++b) total[b] += s.hist[std::size_t(t) * width + b];
    return total.data() + kBins;
  };
  auto histogram = [&](std::size_t count, auto&& item, auto&& digit) {
    s.hist.assign(std::size_t(threads) * width, 0);
#pragma omp parallel num_threads(threads) if (threads > 1 && count > kCpuSmallN)
    {
      uint64_t* h = s.hist.data() + std::size_t(omp_get_thread_num()) * width;
#pragma omp for schedule(static)
      for (std::size_t k = 0; k < count; ++k) {
        const uint32_t i = item(k);
        const std::size_t d = digit(i);
        h[d] += 1;
        h[kBins + d] += weight_of(i);
      }
    }
    return sum();
  };
  // Keeps the items whose key lies in [lo, hi], in order.
  auto keep = [&](std::size_t count, auto&& item, uint64_t lo, uint64_t hi,
                  std::vector<uint32_t>& out) {
#pragma omp parallel num_threads(threads) if (threads > 1 && count > kCpuSmallN)
    {
      std::vector<uint32_t>& mine = s.in[std::size_t(omp_get_thread_num())];
      mine.clear();
#pragma omp for schedule(static)
      for (std::size_t k = 0; k < count; ++k) {
        const uint32_t i = item(k);
        if (keys[i] >= lo && keys[i] <= hi) mine.push_back(i);
      }
    }
    out.clear();
    for (int t = 0; t < threads; ++t)
      out.insert(out.end(), s.in[std::size_t(t)].begin(), s.in[std::size_t(t)].end());
  };

  // 1. Coarse level.
  auto source = [](std::size_t k) { return uint32_t(k); };
  // (Counted with the keys, per thread in s.hist, when coarse_counted.)
  const uint64_t* w = coarse_counted
                          ? sum()
                          : histogram(n, source, [&](uint32_t i) { return coarse_bin(keys[i]); });
  uint64_t above = 0;
  const int bin = find_boundary(w, kBins, 0, limit, &above);
  if (bin < 0) return Selection{};
  uint64_t left = limit - above;
  uint64_t lo = first_key_of_bin(uint32_t(bin));
  uint64_t hi = first_key_of_bin(uint32_t(bin) + 1) - 1;
  keep(n, source, lo, hi, s.cand);

  // 2. Levels.
  while (s.cand.size() > kGatherMax && lo < hi) {
    int shift = 0;
    while (((hi - lo) >> shift) >= uint64_t(kBins)) ++shift;
    const std::vector<uint32_t>& c = s.cand;
    auto member = [&](std::size_t k) { return c[k]; };
    const uint64_t* lw = histogram(
        c.size(), member, [&](uint32_t i) { return std::size_t((keys[i] - lo) >> shift); });
    uint64_t skipped = 0;
    const int d = find_boundary(lw, kBins, 0, left, &skipped);
    if (d < 0) throw Error("internal: the parallel selection lost its boundary");
    left -= skipped;
    const uint64_t new_lo = lo + (uint64_t(d) << shift);
    hi = std::min(hi, new_lo + ((uint64_t(1) << shift) - 1));
    lo = new_lo;
    keep(c.size(), member, lo, hi, s.next);
    std::swap(s.cand, s.next);
  }

  // 3. The stop.
  Selection sel;
  sel.all = false;
  if (s.cand.size() <= kGatherMax) {
    std::sort(s.cand.begin(), s.cand.end(), [&](uint32_t a, uint32_t b) {
      return keys[a] != keys[b] ? keys[a] > keys[b] : a < b;
    });
    uint64_t used = 0;
    for (uint32_t i : s.cand) {
      if (weight_of(i) > left - used) {
        sel.stop_key = keys[i], sel.stop_id = i;
        return sel;
      }
      used += weight_of(i);
    }
    throw Error("internal: the parallel selection's candidates all fit");
  }
  uint64_t used = 0;  // one key: its members in id order
  for (uint32_t i : s.cand) {
    if (weight_of(i) > left - used) {
      sel.stop_key = lo, sel.stop_id = i;
      return sel;
    }
    used += weight_of(i);
  }
  throw Error("internal: the parallel selection found no stop in its tie group");
}

}  // namespace

RolloutOutput function_rollout(const Problem& pr, const ScoreFn& score_fn, const std::string& label,
                               const EpochObserver* observer, const ScoreBuffers* buffers) {
  const auto t0 = std::chrono::steady_clock::now();
  const RunConfig& cfg = pr.config;
  const std::size_t n = pr.size();
  CE_EXPECTS(!pr.sharded(), "internal: function policies run in one process");
  if (n > kMaxLocalSources) throw InputError(local_limit_error(pr.population->origin, n));
  const int threads = cfg.threads > 0 ? cfg.threads : omp_get_max_threads();
  const std::size_t chunks = (n + kChunk - 1) / kChunk;
  const int used = int(std::max<std::size_t>(1, std::min<std::size_t>(threads, chunks)));
  const bool det = cfg.model == Model::deterministic;
  const bool small = n <= kCpuSmallN;
  const double* cost = pr.population->cost.data();
  const FixedBudget& fb = pr.weights;

  // The observed state and the age go to the caller's buffers where it gives them (no copy on
  // the way to a Python policy).
  // Under full observation the policy sees the state itself: it then lives in the caller's
  // buffer (no copy at all), else the policy gets the belief written beside it.
  const bool full = cfg.observe == Observe::full;
  const bool external_x = buffers && full;
  std::vector<double> own_x(external_x ? 0 : n), own_seen(buffers || full ? 0 : n),
      own_age(buffers ? 0 : n), scores(n), chunk_reward(chunks), chunk_cost(chunks);
  double* const x = external_x ? buffers->state : own_x.data();
  double* const seen = full ? x : buffers ? buffers->state : own_seen.data();
  double* const age = buffers ? buffers->age : own_age.data();
  double* const collected = buffers ? buffers->collected : nullptr;
  std::vector<uint32_t> w(n), order(small ? n : 0), scratch, selected;
  SelectScratch select;
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
    std::copy(pr.initial_state().begin(), pr.initial_state().end(), x);
    std::copy(pr.initial_age().begin(), pr.initial_age().end(), w.begin());
    if (collected) std::fill(collected, collected + n, 0.0);
    double reward_sum = 0.0, cost_sum = 0.0;
    Selection sel;
    const uint64_t total = pr.total_epochs();
    for (uint64_t t = 0; t <= total; ++t) {
      const bool apply = t > 0, score = t < total;
      const uint32_t prev = uint32_t(t - 1), now = uint32_t(t);
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
              const bool crawled = is_selected(key[i], i, sel);
              if (collected) collected[i] = crawled ? x[i] : 0.0;
              if (crawled) {
                reward += x[i];
                spent += pr.unit_costs ? 1.0 : cost[i];
              }
              general_transition(&x[i], &w[i], crawled, prev, kDet, cfg.utility, cfg.seed, r,
                                 pr.first_id + i, p);
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
      if (apply && prev >= cfg.burn_in) {
        double reward = 0.0, spent = 0.0;
        for (std::size_t c = 0; c < chunks; ++c) reward += chunk_reward[c], spent += chunk_cost[c];
        reward_sum += reward;
        cost_sum += spent;
        if (rep == 0) out.epoch_reward.push_back(reward);
      }
      if (!score) break;
      const double* borrowed = nullptr;
      score_fn(ScoreRequest{r, t, n, seen, age, scores.data(), &borrowed});
      const double* sc = borrowed ? borrowed : scores.data();
      // The keys; for the parallel selection, each thread's coarse histogram in the same pass
      // (parallel_select's step 1 without reading the keys again).
      const bool fused = !small && used > 1;
      if (fused) {
        constexpr std::size_t width = 2 * std::size_t(kBins);
        select.hist.assign(std::size_t(used) * width, 0);
        const bool unit = pr.unit_costs;
        const uint64_t* wt = weight.data();
#pragma omp parallel num_threads(used)
        {
          uint64_t* h = select.hist.data() + std::size_t(omp_get_thread_num()) * width;
#pragma omp for schedule(static)
          for (std::size_t i = 0; i < n; ++i) {
            const uint64_t k = score_key(sc[i]);
            key[i] = k;
            const uint32_t d = coarse_bin(k);
            h[d] += 1;
            h[kBins + d] += unit ? 1 : wt[i];
          }
        }
      } else {
#pragma omp parallel for schedule(static) num_threads(used) if (used > 1)
        for (std::size_t i = 0; i < n; ++i) key[i] = score_key(sc[i]);
      }
      if (borrowed && observer) std::copy(sc, sc + n, scores.begin());
      if (small)
        sel =
            detail::select_by_sort(key.data(), pr.unit_costs ? nullptr : cost, n, fb, order.data());
      else if (used > 1)
        sel = parallel_select(key.data(), weight.data(), pr.unit_costs, n, fb.limit, used, select,
                              fused);
      else
        sel = sharded_select(solo_comm(), key.data(), weight.data(), pr.unit_costs, n, 0, fb.limit,
                             scratch);
      out.counters.selections += 1;
      if (observer) {
        selected.clear();
        double reward = 0.0;
        for (std::size_t i = 0; i < n; ++i)
          if (is_selected(key[i], i, sel)) selected.push_back(uint32_t(i)), reward += x[i];
        (*observer)(EpochView{rep, t, &selected, reward, external_x ? nullptr : &own_x, &scores});
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
