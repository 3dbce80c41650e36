// Relative value iteration for the exact optimum of small deterministic instances (optimal.hpp).
#include "crawleval/optimal.hpp"
#include "crawleval/monitor.hpp"
#include "crawleval/resources.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <map>
#include <memory>

#include "crawleval/error.hpp"
#include "crawleval/model.hpp"

namespace crawleval {

namespace {

constexpr int kMaxSources = 6;

}  // namespace

OptimalResult exact_optimum(const Population& pop, double epoch_length, double budget,
                            const OptimalOptions& opt) {
  const std::size_t n = pop.size();
  CE_EXPECTS(n >= 1 && n <= kMaxSources, "the exact optimum is computed for 1 to 6 sources; " +
                                             pop.origin + " has " + std::to_string(n));
  CE_EXPECTS(pop.unit_costs(), "the exact optimum needs unit costs (every cost = 1)");
  CE_EXPECTS(std::isfinite(epoch_length) && epoch_length > 0, "--epoch-length must be > 0");
  CE_EXPECTS(budget >= 1 && budget <= double(n) && budget == std::floor(budget),
             "the exact optimum needs an integer --budget between 1 and the number of sources (" +
                 std::to_string(n) + ")");
  RunConfig cfg;
  cfg.epoch_length = epoch_length;
  cfg.budget = budget;
  validate(pop, cfg);
  const int m = int(budget);

  std::vector<SourceParams> p(n);
  for (std::size_t i = 0; i < n; ++i)
    p[i] = derive_params(pop.lambda[i], pop.xi[i], pop.mu[i], 1.0, epoch_length);

  // Cap: as large as the state budget allows, but no larger than needed for alpha^cap to vanish.
  uint32_t cap = 2;
  while (cap < opt.max_cap && std::pow(double(cap + 1), double(n)) <= double(opt.max_states)) ++cap;
  uint32_t needed = 2;
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i].alpha <= 0.0 || p[i].u_star <= 0.0) continue;
    const double k = std::ceil(std::log(1e-16) / std::log(p[i].alpha)) + 1.0;
    needed = std::max<uint32_t>(needed, k > 1e9 ? 1000000000u : uint32_t(k));
  }
  cap = std::min(cap, needed);

  // Reward of crawling source i at age a (1..cap): x_a, iterated exactly as the simulation does.
  std::vector<std::vector<double>> reward(n, std::vector<double>(cap + 1, 0.0));
  double cap_error = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    double x = drift(p[i]);
    for (uint32_t a = 1; a <= cap; ++a) {
      reward[i][a] = x;
      x = passive_next(x, drift(p[i]), p[i]);
    }
    cap_error += std::max(0.0, p[i].u_star - reward[i][cap]) / double(cap);
  }

  std::vector<uint64_t> weight(n);
  uint64_t states = 1;
  for (std::size_t i = 0; i < n; ++i) weight[i] = states, states *= cap;

  std::vector<uint32_t> actions;  // subsets of at most m sources
  for (uint32_t s = 0; s < (1u << n); ++s)
    if (__builtin_popcount(s) <= m) actions.push_back(s);

  // For state s: passive successor index and, per source, (digit of the successor) * weight, so
  // that crawling source i maps the successor to base - delta_i (age 1 is digit 0).
  auto decode = [&](uint64_t s, uint64_t* base, uint64_t* delta, double* r) {
    uint64_t b = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const uint32_t age = uint32_t((s / weight[i]) % cap) + 1;
      const uint32_t next = std::min(age + 1, cap);
      b += uint64_t(next - 1) * weight[i];
      delta[i] = uint64_t(next - 1) * weight[i];
      r[i] = reward[i][age];
    }
    *base = b;
  };

  const int threads = opt.threads > 0 ? opt.threads : omp_get_max_threads();
  require_memory(16.0 * double(states), "the exact optimum over " + std::to_string(states) +
                                            " joint states (age cap " + std::to_string(cap) + ")");
  if (opt.on_start) opt.on_start(states, cap, actions.size());
  // Uninitialised (h_next is written whole by each sweep), h zeroed in slices between which a stop
  // is asked: zero-filling both in their constructors took 28 s at 9e8 states that Ctrl-C could not
  // interrupt.
  const std::unique_ptr<double[]> h_memory(new double[states]), h_next_memory(new double[states]);
  double* const h = h_memory.get();
  double* const h_next = h_next_memory.get();
  for (uint64_t s0 = 0; s0 < states; s0 += uint64_t(1) << 22) {
    check_interrupt();
    std::fill(h + s0, h + std::min<uint64_t>(states, s0 + (uint64_t(1) << 22)), 0.0);
  }
  const double tau = opt.tau;
  OptimalResult res;
  res.cap = cap;
  res.states = states;
  res.cap_error = cap_error;
  double lo = 0.0, hi = 0.0;
  uint64_t it = 0;
  // A stop asked during a sweep (Ctrl-C in Python: a sweep over 9e8 states took 34 s to notice):
  // the calling thread asks every 2^16 states, and the sweep's remaining states are skipped.
  std::atomic<bool> stop{false};
  for (; it < opt.max_iterations; ++it) {
    check_interrupt();
    lo = std::numeric_limits<double>::infinity();
    hi = -lo;
#pragma omp parallel for schedule(static) num_threads(threads) reduction(min                 \
                                                                         : lo) reduction(max \
                                                                                         : hi)
    for (uint64_t s = 0; s < states; ++s) {
      if ((s & 0xFFFF) == 0 && omp_get_thread_num() == 0) {
        try {
          check_interrupt();
        } catch (const Interrupted&) {
          stop.store(true, std::memory_order_relaxed);
        }
      }
      if (stop.load(std::memory_order_relaxed)) continue;
      uint64_t base, delta[kMaxSources];
      double r[kMaxSources];
      decode(s, &base, delta, r);
      double best = -std::numeric_limits<double>::infinity();
      for (uint32_t a : actions) {
        uint64_t next = base;
        double gain = 0.0;
        for (std::size_t i = 0; i < n; ++i)
          if (a >> i & 1u) next -= delta[i], gain += r[i];
        best = std::max(best, gain + tau * h[next]);
      }
      const double v = best + (1.0 - tau) * h[s];
      h_next[s] = v;
      lo = std::min(lo, v - h[s]);
      hi = std::max(hi, v - h[s]);
    }
    if (stop.load()) throw Interrupted();
    const double ref = h_next[0];
    for (uint64_t s = 0; s < states; ++s) h[s] = h_next[s] - ref;
    if (opt.on_iteration) opt.on_iteration(it + 1, lo, hi);
    if (hi - lo <= opt.tolerance * std::max(1.0, std::fabs(hi))) {
      res.converged = true;
      ++it;
      break;
    }
  }
  res.iterations = it;
  res.gain_low = lo;
  res.gain_high = hi;
  res.gain = 0.5 * (lo + hi);

  // One period of a greedy-in-h schedule from "all fresh" (every age 1, the state index 0).
  std::map<uint64_t, std::size_t> seen;
  std::vector<std::pair<uint32_t, double>> path;  // action, reward
  uint64_t s = 0;
  while (!seen.count(s) && path.size() < 100000) {
    seen[s] = path.size();
    uint64_t base, delta[kMaxSources];
    double r[kMaxSources];
    decode(s, &base, delta, r);
    double best = -std::numeric_limits<double>::infinity(), best_gain = 0.0;
    uint64_t best_next = base;
    uint32_t best_a = 0;
    for (uint32_t a : actions) {
      uint64_t next = base;
      double gain = 0.0;
      for (std::size_t i = 0; i < n; ++i)
        if (a >> i & 1u) next -= delta[i], gain += r[i];
      // Strictly better by a relative margin, so that ties go to the first (smallest) action.
      // h solves the transformed equation h + g = max_a [r + tau h'] + (1 - tau) h, so the optimal
      // action maximises r + tau h(next).
      const double v = gain + tau * h[next];
      if (a == actions.front() || v > best + 1e-9 * std::max(1.0, std::fabs(best)))
        best = v, best_gain = gain, best_next = next, best_a = a;
    }
    path.emplace_back(best_a, best_gain);
    s = best_next;
  }
  if (seen.count(s)) {
    double total = 0.0;
    for (std::size_t k = seen[s]; k < path.size(); ++k) {
      std::vector<uint32_t> ids;
      for (std::size_t i = 0; i < n; ++i)
        if (path[k].first >> i & 1u) ids.push_back(uint32_t(i));
      res.cycle.push_back(ids);
      total += path[k].second;
    }
    res.cycle_reward = res.cycle.empty() ? 0.0 : total / double(res.cycle.size());
  }
  return res;
}

}  // namespace crawleval
