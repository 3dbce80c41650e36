// The exact optimum of small deterministic instances (optimal.hpp): a lower and an upper capped
// programme, each solved by policy iteration, with caps grown until their gains meet.
#include "crawleval/analysis/optimal.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <map>
#include <memory>

#include "crawleval/base/error.hpp"
#include "crawleval/base/monitor.hpp"
#include "crawleval/model/model.hpp"
#include "crawleval/model/resources.hpp"

namespace crawleval {

namespace {

constexpr int kMaxSources = 6;
/// The passive recursion is followed this far for a source's horizon (its fixed point).
constexpr uint32_t kHorizonScan = 1u << 22;

/// One source's states along the passive recursion from a crawl: x_1 = u, x_(k+1) = alpha x_k + u,
/// as the simulation iterates them, up to its horizon (the age from which x no longer changes) or
/// kHorizonScan ages.
struct SourceStates {
  std::vector<double> x;  ///< x[a - 1] = the state at age a
  uint32_t horizon = 0;   ///< x is constant from this age on; 0: not reached within the scan
  double sup = 0.0;       ///< the largest state of any age (past the scan: a rigorous bound)
  /// The largest state of any age >= a: what the upper programme pays at cap a.
  double sup_from(uint32_t a) const {
    if (horizon && a >= horizon) return x[horizon - 1];
    double s = 0.0;
    for (std::size_t k = a - 1; k < x.size(); ++k) s = std::max(s, x[k]);
    return horizon ? s : std::max(s, sup);
  }
};

SourceStates follow(const SourceParams& p) {
  SourceStates s;
  // With expiry E the state is x_cap from age E on, exactly, as the engines set it
  // (general_transition): only the last E epochs' content is held.
  auto at = [&](uint32_t age, double x) { return p.expiry && age >= p.expiry ? p.x_cap : x; };
  double x = at(1, drift(p));
  s.x.push_back(x);
  for (uint32_t a = 1; a < kHorizonScan; ++a) {
    const double next = at(a + 1, passive_next(x, drift(p), p));
    if (next == x) {
      s.horizon = a;
      break;
    }
    x = next;
    s.x.push_back(x);
  }
  double top = 0.0;
  for (double v : s.x) top = std::max(top, v);
  // Past the scan the recursion approaches u* from below; its rounding stays within ulps of it.
  s.sup = s.horizon ? top : std::max(top, p.u_star) * (1.0 + 0x1p-40);
  return s;
}

struct Programme {
  double low = 0.0, high = 0.0;
  uint64_t iterations = 0;
  bool converged = false;
  std::vector<std::pair<uint32_t, double>> cycle;  ///< action and reward of each epoch
  uint32_t crawled_at_cap = 0;                     ///< sources the cycle crawls at their cap
  bool out_of_work = false;                        ///< stopped by the work limit
};

/// The optimal gain of one capped programme: joint ages 1..caps[i], a crawl at age a < cap paying
/// x_a and at the cap `top[i]`. The transitions are deterministic, so the optimum is the best mean
/// cycle of a graph, found by Howard's policy iteration (Cochet-Terrasson et al. 1998: evaluate
/// a policy's cycles and values by walking its successor graph, then improve by gain and then by
/// value), usually in a few dozen passes. Every pass also brackets the optimum: for any values v,
/// every cycle's mean lies in [min_s (Tv - v)(s), max_s (Tv - v)(s)], Tv(s) = max_a r + v(next),
/// so the programme's gain does; the solve stops when that bracket is within the tolerance.
Programme solve(const std::vector<SourceStates>& src, const std::vector<uint32_t>& caps,
                const std::vector<double>& top, int m, const OptimalOptions& opt,
                double* work_left) {
  const std::size_t n = caps.size();
  std::vector<uint64_t> weight(n);
  uint64_t states = 1;
  for (std::size_t i = 0; i < n; ++i) weight[i] = states, states *= caps[i];
  std::vector<std::vector<double>> reward(n);
  for (std::size_t i = 0; i < n; ++i) {
    reward[i].assign(caps[i] + 1, 0.0);
    for (uint32_t a = 1; a < caps[i]; ++a) reward[i][a] = src[i].x[a - 1];
    reward[i][caps[i]] = top[i];
  }
  std::vector<uint32_t> actions;  // subsets of at most m sources
  for (uint32_t s = 0; s < (1u << n); ++s)
    if (__builtin_popcount(s) <= m) actions.push_back(s);

  // For state s: the passive successor's index and, per source, (digit of the successor) x
  // weight, so that crawling source i maps the successor to base - delta_i (age 1 is digit 0).
  auto decode = [&](uint64_t s, uint64_t* base, uint64_t* delta, double* r, uint32_t* age) {
    uint64_t b = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const uint32_t a = uint32_t((s / weight[i]) % caps[i]) + 1;
      const uint32_t next = std::min(a + 1, caps[i]);
      b += uint64_t(next - 1) * weight[i];
      delta[i] = uint64_t(next - 1) * weight[i];
      r[i] = reward[i][a];
      if (age) age[i] = a;
    }
    *base = b;
  };
  auto step = [&](uint32_t a, uint64_t base, const uint64_t* delta, const double* r, double* gain) {
    uint64_t next = base;
    double g = 0.0;
    for (std::size_t i = 0; i < n; ++i)
      if (a >> i & 1u) next -= delta[i], g += r[i];
    *gain = g;
    return next;
  };

  const int threads = opt.threads > 0 ? opt.threads : omp_get_max_threads();
  uint32_t largest = 0;
  for (uint32_t c : caps) largest = std::max(largest, c);
  if (opt.on_start) opt.on_start(states, largest, actions.size());
  // The policy (an action per state), its successor and reward, and its cycles' gains and values.
  std::vector<uint8_t> act(states);
  std::vector<uint64_t> next(states);
  std::vector<double> rew(states), gain(states), value(states);
  std::vector<uint8_t> mark(states);
  std::vector<uint64_t> path;
  // A stop asked during a sweep: the calling thread asks every 2^16 states.
  std::atomic<bool> stop{false};
  auto poll = [&](uint64_t s) {
    if ((s & 0xFFFF) == 0 && omp_get_thread_num() == 0) {
      try {
        check_interrupt();
      } catch (const Interrupted&) {
        stop.store(true, std::memory_order_relaxed);
      }
    }
    return stop.load(std::memory_order_relaxed);
  };
  // Start: the action of the largest immediate reward (the first such).
#pragma omp parallel for schedule(static) num_threads(threads)
  for (uint64_t s = 0; s < states; ++s) {
    if (poll(s)) continue;
    uint64_t base, delta[kMaxSources];
    double r[kMaxSources], best = -1.0, g;
    decode(s, &base, delta, r, nullptr);
    for (std::size_t k = 0; k < actions.size(); ++k) {
      const uint64_t to = step(actions[k], base, delta, r, &g);
      if (g > best) best = g, act[s] = uint8_t(k), next[s] = to, rew[s] = g;
    }
  }
  if (stop.load()) throw Interrupted();

  Programme res;
  double lo = 0.0, hi = 0.0;
  uint64_t it = 0;
  // Every sweep evaluates each state's actions; the work limit is checked after a sweep, so each
  // solve makes at least one and its bracket is a bound.
  const double sweep = double(states) * double(actions.size());
  auto spend = [&] {
    *work_left -= sweep;
    if (*work_left > 0.0) return false;
    res.out_of_work = true;
    return true;
  };
  spend();  // the start
  for (; it < opt.max_iterations; ++it) {
    check_interrupt();
    // Evaluate: walk each state's path to a cycle (mark 1: on the path, 2: done); a cycle's gain
    // is its mean reward and its values are relative to its first state found; a path's states
    // take their successor's gain and value(s) = r(s) - g + value(next).
    std::fill(mark.begin(), mark.end(), uint8_t(0));
    for (uint64_t s0 = 0; s0 < states; ++s0) {
      if ((s0 & 0xFFFF) == 0) check_interrupt();
      if (mark[s0]) continue;
      path.clear();
      uint64_t s = s0;
      while (!mark[s]) mark[s] = 1, path.push_back(s), s = next[s];
      std::size_t tail = path.size();  // the path's states not on a new cycle
      if (mark[s] == 1) {              // a new cycle, from s to the path's end
        const std::size_t first =
            std::size_t(std::find(path.begin(), path.end(), s) - path.begin());
        double total = 0.0;
        for (std::size_t k = first; k < path.size(); ++k) total += rew[path[k]];
        const double g = total / double(path.size() - first);
        value[s] = 0.0, gain[s] = g, mark[s] = 2;
        for (std::size_t k = path.size(); k-- > first + 1;) {
          const uint64_t t = path[k];
          gain[t] = g, value[t] = rew[t] - g + value[next[t]], mark[t] = 2;
        }
        tail = first;
      }
      for (std::size_t k = tail; k-- > 0;) {
        const uint64_t t = path[k];
        gain[t] = gain[next[t]], value[t] = rew[t] - gain[t] + value[next[t]], mark[t] = 2;
      }
    }
    // Improve: a larger gain first, then a larger value; only a strictly better action replaces
    // the current one (a relative margin against rounding), so that the iteration ends. The same
    // sweep gives the bracket (Tv - v over every state).
    double scale = 1.0, gain_scale = 1.0;
    for (uint64_t s = 0; s < states; ++s)
      scale = std::max(scale, std::fabs(value[s])),
      gain_scale = std::max(gain_scale, std::fabs(gain[s]));
    const double eps = 1e-12 * scale, eps_gain = 1e-12 * gain_scale;
    uint64_t changed = 0;
    lo = std::numeric_limits<double>::infinity();
    hi = -lo;
#pragma omp parallel for schedule(static) num_threads(threads) reduction(+ : changed) \
    reduction(min : lo) reduction(max : hi)
    for (uint64_t s = 0; s < states; ++s) {
      if (poll(s)) continue;
      uint64_t base, delta[kMaxSources];
      double r[kMaxSources], g;
      decode(s, &base, delta, r, nullptr);
      double best_gain = gain[next[s]], best_value = rew[s] + value[next[s]], bellman = best_value;
      std::size_t best = act[s];
      for (std::size_t k = 0; k < actions.size(); ++k) {
        const uint64_t to = step(actions[k], base, delta, r, &g);
        const double v = g + value[to];
        bellman = std::max(bellman, v);
        if (gain[to] > best_gain + eps_gain ||
            (gain[to] >= best_gain - eps_gain && v > best_value + eps)) {
          best_gain = gain[to], best_value = v, best = k;
        }
      }
      lo = std::min(lo, bellman - value[s]);
      hi = std::max(hi, bellman - value[s]);
      if (best != act[s]) {
        act[s] = uint8_t(best);
        next[s] = step(actions[best], base, delta, r, &rew[s]);
        ++changed;
      }
    }
    if (stop.load()) throw Interrupted();
    if (opt.on_iteration) opt.on_iteration(it + 1, lo, hi);
    if (hi - lo <= opt.tolerance * std::max(1.0, std::fabs(hi)) || changed == 0) {
      res.converged = hi - lo <= opt.tolerance * std::max(1.0, std::fabs(hi));
      ++it;
      break;
    }
    if (spend()) {
      ++it;
      break;
    }
  }
  if (!res.converged && !res.out_of_work) {
    // Policy iteration ended without a tight bracket (values of tied cycles relative to different
    // states can leave Tv - v wide): relative value iteration from its values, on the chain made
    // aperiodic by P' = tau P + (1 - tau) I (the same gain; its bias is v / tau), whose bracket
    // narrows at every step.
    const double tau = opt.tau;
    std::vector<double> h(states), h_next(states);
    for (uint64_t s = 0; s < states; ++s) h[s] = (value[s] - value[0]) / tau;
    for (; it < opt.max_iterations; ++it) {
      check_interrupt();
      lo = std::numeric_limits<double>::infinity();
      hi = -lo;
#pragma omp parallel for schedule(static) num_threads(threads) reduction(min                 \
                                                                         : lo) reduction(max \
                                                                                         : hi)
      for (uint64_t s = 0; s < states; ++s) {
        if (poll(s)) continue;
        uint64_t base, delta[kMaxSources];
        double r[kMaxSources], g, best = -std::numeric_limits<double>::infinity();
        std::size_t best_k = 0;
        decode(s, &base, delta, r, nullptr);
        for (std::size_t k = 0; k < actions.size(); ++k) {
          const uint64_t to = step(actions[k], base, delta, r, &g);
          // Strictly better by a relative margin: ties go to the first action.
          const double v = g + tau * h[to];
          if (k == 0 || v > best + 1e-9 * std::max(1.0, std::fabs(best))) best = v, best_k = k;
        }
        act[s] = uint8_t(best_k);
        next[s] = step(actions[best_k], base, delta, r, &rew[s]);
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
      if (spend()) {
        ++it;
        break;
      }
    }
  }
  res.iterations = it;
  res.low = lo;
  res.high = hi;

  // One period of the policy from "all fresh" (every age 1, the state index 0), and the sources
  // it crawls at their cap.
  std::map<uint64_t, std::size_t> seen;
  std::vector<std::pair<uint32_t, double>> walk;  // action, reward
  std::vector<uint32_t> at_cap;                   // per epoch: the sources crawled at their cap
  uint64_t s = 0;
  while (!seen.count(s)) {
    seen[s] = walk.size();
    uint64_t base, delta[kMaxSources];
    double r[kMaxSources];
    uint32_t age[kMaxSources];
    decode(s, &base, delta, r, age);
    const uint32_t a = actions[act[s]];
    uint32_t capped = 0;
    for (std::size_t i = 0; i < n; ++i)
      if ((a >> i & 1u) && age[i] == caps[i]) capped |= 1u << i;
    walk.emplace_back(a, rew[s]);
    at_cap.push_back(capped);
    s = next[s];
  }
  for (std::size_t k = seen[s]; k < walk.size(); ++k) {
    res.cycle.push_back(walk[k]);
    res.crawled_at_cap |= at_cap[k];
  }
  return res;
}

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
  CE_EXPECTS(opt.max_states >= 1, "--max-states (max_states) must be at least 1");
  CE_EXPECTS(opt.max_work > 0, "--max-work (max_work) must be > 0");
  RunConfig cfg;
  cfg.epoch_length = epoch_length;
  cfg.budget = budget;
  validate(pop, cfg);
  const int m = int(budget);

  std::vector<SourceStates> src(n);
  for (std::size_t i = 0; i < n; ++i) {
    check_interrupt();
    src[i] = follow(derive_params(pop.lambda[i], pop.xi[i], pop.mu[i], 1.0, epoch_length,
                                  pop.expiry.empty() ? 0u : pop.expiry[i]));
  }
  // An epoch earns at most the sum of the sources' largest states; the solve's values add many
  // epochs' rewards, so keep that sum well inside the doubles (as `run` refuses rewards that leave
  // them).
  double most = 0.0;
  for (const SourceStates& s : src) most += s.sup;
  CE_EXPECTS(most <= 1e300,
             "the rewards exceed the range of doubles: the sources' largest states sum to " +
                 shown_number(most) +
                 " per epoch; scale lambda xi down (the rewards scale with it, the optimal "
                 "schedule does not change)");
  // A cap's last age: at most the horizon (exact there), the ages scanned, and max_cap.
  auto limit = [&](std::size_t i) {
    uint32_t l = std::min<uint32_t>(uint32_t(src[i].x.size()), std::max<uint32_t>(1, opt.max_cap));
    if (src[i].horizon) l = std::min(l, src[i].horizon);
    return std::max<uint32_t>(l, 1);
  };
  std::vector<uint32_t> caps(n);
  for (std::size_t i = 0; i < n; ++i) caps[i] = std::min<uint32_t>(2, limit(i));
  auto product = [&](const std::vector<uint32_t>& c) {
    double p = 1.0;
    for (uint32_t v : c) p *= double(v);
    return p;
  };
  CE_EXPECTS(product(caps) <= double(opt.max_states),
             "--max-states (max_states) must be at least " + shown_number(product(caps)) +
                 " for these sources (their first caps)");

  OptimalResult res;
  res.bracket_tolerance = opt.bracket_tolerance;
  double work_left = opt.max_work;
  for (;;) {
    std::vector<double> lower_top(n), upper_top(n);
    for (std::size_t i = 0; i < n; ++i) {
      lower_top[i] = src[i].x[caps[i] - 1];
      upper_top[i] = src[i].sup_from(caps[i]);
    }
    const double states = product(caps);
    require_memory(16.0 * states,
                   "the exact optimum over " + shown_number(states) + " joint states");
    const Programme lower = solve(src, caps, lower_top, m, opt, &work_left);
    const Programme upper = solve(src, caps, upper_top, m, opt, &work_left);
    res.out_of_work = lower.out_of_work || upper.out_of_work;
    res.solves += 2;
    res.iterations += lower.iterations + upper.iterations;
    res.caps = caps;
    res.cap = *std::max_element(caps.begin(), caps.end());
    res.states = uint64_t(states);
    res.converged = lower.converged && upper.converged;
    res.gain_low = lower.low;
    res.gain_high = std::max(upper.high, lower.high);
    res.cycle.clear();
    double total = 0.0;
    for (const auto& [action, reward] : lower.cycle) {
      std::vector<uint32_t> ids;
      for (std::size_t i = 0; i < n; ++i)
        if (action >> i & 1u) ids.push_back(uint32_t(i));
      res.cycle.push_back(ids);
      total += reward;
    }
    res.cycle_reward = res.cycle.empty() ? 0.0 : total / double(res.cycle.size());
    res.closed =
        res.converged && res.gain_high - res.gain_low <=
                             opt.bracket_tolerance * std::max(1.0, std::fabs(res.gain_high));
    if (res.closed || !res.converged || res.out_of_work) break;
    // Grow the caps of the sources an optimal cycle crawls at their cap, the ones whose two
    // prices differ most first, while the joint states fit.
    std::vector<std::size_t> grow;
    const uint32_t capped = lower.crawled_at_cap | upper.crawled_at_cap;
    for (std::size_t i = 0; i < n; ++i)
      if ((capped >> i & 1u) && caps[i] < limit(i)) grow.push_back(i);
    std::sort(grow.begin(), grow.end(), [&](std::size_t a, std::size_t b) {
      return upper_top[a] - lower_top[a] > upper_top[b] - lower_top[b];
    });
    bool grown = false;
    for (std::size_t i : grow) {
      std::vector<uint32_t> next = caps;
      next[i] = std::min(limit(i), std::max(caps[i] + 1, 2 * caps[i]));
      // A doubling that does not fit may still fit as a smaller step.
      while (next[i] > caps[i] && product(next) > double(opt.max_states))
        next[i] = caps[i] + (next[i] - caps[i]) / 2;
      if (next[i] > caps[i]) caps = next, grown = true;
    }
    if (!grown) break;
  }
  res.gain =
      res.closed ? 0.5 * (res.gain_low + res.gain_high) : std::numeric_limits<double>::quiet_NaN();
  return res;
}

}  // namespace crawleval
