// The freshness model's epoch engine (fresh_engine.hpp): scores, the budgeted selection under
// per-host politeness caps, and the sampled epoch of every source.
//
// Selection rule (selection.hpp's, with caps): order the sources by (score desc, id asc); walk the
// order; a source of a constrained host that already has m crawls this epoch is skipped; any other
// source is crawled if it fits the budget, and the walk stops at the first that does not. "Fits"
// is decided on selection.hpp's fixed-point weights (FixedBudget), whose integer sums do not depend
// on the order they are taken in, so that a GPU's scan decides exactly as the CPU's walk.
// Equivalently: only the top m of each constrained host (in that order) are eligible, and the
// budgeted prefix of the eligible sources is crawled. The reference walks a full sort; the fast
// path finds each crowded host's top m and then the budgeted prefix by nth_element.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "crawleval/change_rate.hpp"
#include "crawleval/error.hpp"
#include "crawleval/fresh_engine.hpp"
#include "crawleval/policy.hpp"
#include "crawleval/problem.hpp"
#include "crawleval/rng.hpp"
#include "crawleval/selection.hpp"
#include "progress.hpp"

namespace crawleval {

namespace {

/// (key desc, id asc): true if a comes first.
struct Before {
  const uint64_t* key;
  bool operator()(uint32_t a, uint32_t b) const {
    return key[a] > key[b] || (key[a] == key[b] && a < b);
  }
};

/// The reference selection: a full sort walked in order.
void select_reference(const std::vector<uint64_t>& key, const FreshPlan& plan,
                      const FreshConfig& cfg, std::vector<uint8_t>& crawled) {
  const std::vector<uint64_t>& weight = plan.weight;
  const FixedBudget& budget = plan.budget;
  const std::size_t n = key.size();
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), Before{key.data()});
  std::vector<uint32_t> per_host(plan.hosts.count, 0);
  std::fill(crawled.begin(), crawled.end(), 0);
  unsigned long long used = 0;
  for (uint32_t i : order) {
    const uint32_t h = plan.hosts.dense[i];
    if (cfg.host_cap && plan.hosts.constrained[h] && per_host[h] >= cfg.host_cap) continue;
    if (used + weight[i] > budget.limit) break;
    used += weight[i];
    ++per_host[h];
    crawled[i] = 1;
  }
}

/// The fast selection: each crowded host's top m by nth_element, then the budgeted prefix of the
/// eligible sources (nth_element for unit costs; a partial sort walked in order otherwise).
void select_fast(const std::vector<uint64_t>& key, const FreshPlan& plan, const FreshConfig& cfg,
                 int threads, std::vector<uint8_t>& eligible, std::vector<uint32_t>& work,
                 std::vector<uint8_t>& crawled) {
  const std::size_t n = key.size();
  const Before before{key.data()};
  const std::vector<uint64_t>& weight = plan.weight;
  const FixedBudget& budget = plan.budget;
  std::fill(eligible.begin(), eligible.end(), 1);
  std::fill(crawled.begin(), crawled.end(), 0);
  if (cfg.host_cap) {
    const std::size_t groups = plan.hosts.start.size() - 1;
#pragma omp parallel for if (threads > 1) num_threads(threads) schedule(dynamic, 64)
    for (std::size_t g = 0; g < groups; ++g) {
      std::vector<uint32_t> members(plan.hosts.members.begin() + plan.hosts.start[g],
                                    plan.hosts.members.begin() + plan.hosts.start[g + 1]);
      std::nth_element(members.begin(), members.begin() + cfg.host_cap, members.end(), before);
      for (std::size_t k = cfg.host_cap; k < members.size(); ++k) eligible[members[k]] = 0;
    }
  }
  work.clear();
  for (std::size_t i = 0; i < n; ++i)
    if (eligible[i]) work.push_back(uint32_t(i));
  if (plan.unit_costs) {  // weight 1 each: the first `limit` eligible sources
    const std::size_t k = budget.limit < work.size() ? std::size_t(budget.limit) : work.size();
    if (k < work.size()) std::nth_element(work.begin(), work.begin() + k, work.end(), before);
    for (std::size_t j = 0; j < k; ++j) crawled[work[j]] = 1;
    return;
  }
  // At most limit / min_weight sources fit: the walk never goes past that many + 1.
  const unsigned long long fit = budget.limit / std::max<uint64_t>(1, plan.min_weight) + 1;
  const std::size_t k = fit < work.size() ? std::size_t(fit) : work.size();
  if (k < work.size()) std::nth_element(work.begin(), work.begin() + k, work.end(), before);
  std::sort(work.begin(), work.begin() + k, before);
  unsigned long long used = 0;
  for (std::size_t j = 0; j < k; ++j) {
    const uint32_t i = work[j];
    if (used + weight[i] > budget.limit) break;
    used += weight[i];
    crawled[i] = 1;
  }
}

/// The online learner's observations of one source: IO sources keep up to kBins distinct interval
/// lengths (epochs) with their changed and total counts (a length beyond kBins distinct ones joins
/// the nearest bin: an approximation only for schedules that are far from periodic); CO sources
/// count the changes they saw.
constexpr int kBins = 4;
struct Observed {
  uint32_t length[kBins];
  uint32_t changed[kBins];
  uint32_t total[kBins];
  uint32_t seen;  ///< CO: changes observed (saturating)

  void reset() { *this = Observed{{0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, 0}; }
  void add(uint32_t len, bool change) {
    int at = -1, nearest = 0;
    for (int b = 0; b < kBins && at < 0; ++b)
      if (total[b] == 0 || length[b] == len) at = b;
    if (at < 0) {
      for (int b = 1; b < kBins; ++b)
        if (std::llabs(int64_t(length[b]) - len) < std::llabs(int64_t(length[nearest]) - len))
          nearest = b;
      at = nearest;
    }
    if (total[at] == 0) length[at] = len;
    ++total[at];
    changed[at] += change;
  }
  double estimate(bool complete, double epoch_length, double elapsed, double prior) const {
    if (complete) return learned_rate_complete(double(seen), elapsed, prior);
    double len[kBins];
    for (int b = 0; b < kBins; ++b) len[b] = double(length[b]) * epoch_length;
    return learned_rate_incomplete(len, changed, total, kBins, prior);
  }
};

}  // namespace

bool rate_based(FreshPolicy p) {
  return p == FreshPolicy::lambda_crawl || p == FreshPolicy::lambda_crawl_approx ||
         p == FreshPolicy::binary_lambda_crawl || p == FreshPolicy::uniform ||
         p == FreshPolicy::proportional;
}

CrowdedHosts crowded_hosts(const FreshPopulation& pop, uint32_t cap) {
  CrowdedHosts h;
  const std::size_t n = pop.size();
  std::vector<uint64_t> ids(pop.host);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  h.count = uint32_t(ids.size());
  h.dense.resize(n);
  h.constrained.assign(ids.size(), 0);
  std::vector<uint32_t> size(ids.size(), 0);
  for (std::size_t i = 0; i < n; ++i) {
    const uint32_t k =
        uint32_t(std::lower_bound(ids.begin(), ids.end(), pop.host[i]) - ids.begin());
    h.dense[i] = k;
    ++size[k];
    if (pop.constrained[i]) h.constrained[k] = 1;
  }
  if (cap == 0) return h;
  auto crowded = [&](std::size_t k) { return h.constrained[k] && size[k] > cap; };
  std::vector<std::size_t> start(ids.size() + 1, 0);
  for (std::size_t k = 0; k < ids.size(); ++k) start[k + 1] = start[k] + (crowded(k) ? size[k] : 0);
  h.members.resize(start.back());
  std::vector<std::size_t> fill(start.begin(), start.end() - 1);
  for (std::size_t i = 0; i < n; ++i)
    if (crowded(h.dense[i])) h.members[fill[h.dense[i]]++] = uint32_t(i);
  for (std::size_t k = 0; k < ids.size(); ++k)
    if (crowded(k)) h.start.push_back(start[k + 1]);
  return h;
}

FreshPlan make_fresh_plan(const FreshPopulation& pop, const FreshConfig& cfg, FreshPolicy policy,
                          const std::vector<double>* steady_period) {
  FreshPlan plan;
  const std::size_t n = pop.size();
  plan.params.resize(n);
  for (std::size_t i = 0; i < n; ++i)
    plan.params[i] =
        derive_fresh_params(pop.rate[i], pop.importance[i], pop.cost[i], cfg.epoch_length);
  if (rate_based(policy)) plan.rates = fresh_rates(pop, cfg, policy);
  if (cfg.start == FreshStart::steady)
    plan.steady_period = steady_period ? *steady_period : fresh_bound(pop, cfg).period;
  // Total importance and cost, in kFoldChunk chunks (thread-count independent).
  const std::size_t chunks = (n + kFoldChunk - 1) / kFoldChunk;
  double total_w = 0.0, total_cost = 0.0;
  for (std::size_t c = 0; c < chunks; ++c) {
    double w = 0.0, cost = 0.0;
    for (std::size_t i = c * kFoldChunk; i < std::min(n, (c + 1) * kFoldChunk); ++i)
      w += pop.importance[i], cost += pop.cost[i];
    total_w += w, total_cost += cost;
  }
  plan.norm = total_w > 0.0 ? 1.0 / total_w : 0.0;
  plan.unit_costs = pop.unit_costs();
  plan.budget = cost_weights(pop.cost.data(), n, cfg.budget, plan.unit_costs);
  plan.weight.resize(n);
  plan.min_weight = ~uint64_t(0);
  for (std::size_t i = 0; i < n; ++i) {
    plan.weight[i] = fixed_weight(pop.cost[i], plan.budget);
    plan.min_weight = std::min(plan.min_weight, plan.weight[i]);
  }
  plan.hosts = crowded_hosts(pop, cfg.host_cap);
  return plan;
}

FreshRolloutOutput fresh_rollout(const FreshPopulation& pop, const FreshConfig& cfg,
                                 FreshPolicy policy, bool reference, const FreshObserver* observer,
                                 const std::vector<double>* steady_period) {
  validate_fresh_config(pop, cfg);
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t n = pop.size();
  const double T = cfg.epoch_length;
  const FreshPlan plan = make_fresh_plan(pop, cfg, policy, steady_period);
  const std::vector<FreshParams>& params = plan.params;
  // What the policy believes: the true parameters, or (learning) those of the estimated rates.
  std::vector<FreshParams> belief_params = params;
  FreshPopulation belief;
  std::vector<Observed> observed;
  if (cfg.learn) {
    belief = pop;
    observed.resize(n);
  }
  FreshRates rates = plan.rates;
  const std::size_t chunks = (n + kFoldChunk - 1) / kFoldChunk;
  const double norm = plan.norm;

  // Below kFreshSerialN sources an epoch is too short for threads: their barriers cost more than
  // they save, and much more on a busy machine (a descheduled peer holds every barrier).
  const int threads =
      reference || n < kFreshSerialN ? 1 : (cfg.threads > 0 ? cfg.threads : omp_get_max_threads());
  FreshRolloutOutput out;
  out.threads = threads;
  if (rate_based(policy)) out.closed_form = rate_costs(pop, plan.rates, policy);
  const uint64_t total_epochs = cfg.burn_in + cfg.epochs;
  detail::Progress progress(cfg.progress, std::string("fresh ") + to_string(policy),
                            total_epochs * cfg.replications);

  std::vector<uint32_t> age(n), changes(n);
  std::vector<uint8_t> want(n), crawled(n), eligible(n);
  std::vector<uint64_t> key(n);
  std::vector<uint32_t> work, crawled_ids;
  std::vector<double> chunk_fresh(chunks), chunk_pen(chunks), chunk_cost(chunks);
  for (uint32_t r = 0; r < cfg.replications; ++r) {
    std::fill(age.begin(), age.end(), 0u);
    std::fill(changes.begin(), changes.end(), 0u);
    if (cfg.start == FreshStart::steady) {
#pragma omp parallel for if (threads > 1) num_threads(threads) schedule(static)
      for (std::size_t i = 0; i < n; ++i)
        if (!pop.complete[i])
          fresh_steady_start(plan.steady_period[i], params[i], cfg.seed, r, uint32_t(i), &age[i],
                             &changes[i]);
    }
    std::fill(want.begin(), want.end(), 0);
    for (Observed& o : observed) o.reset();
    double sum_fresh = 0.0, sum_pen = 0.0, sum_cost = 0.0;
    for (uint64_t t = 0; t < total_epochs; ++t) {
      const uint32_t epoch = uint32_t(t);
      if (cfg.learn && t % cfg.relearn == 0) {  // re-estimate, and the rates with them
        const double elapsed = double(t) * T;
#pragma omp parallel for if (threads > 1) num_threads(threads) schedule(static)
        for (std::size_t i = 0; i < n; ++i) {
          belief.rate[i] = observed[i].estimate(pop.complete[i], T, elapsed, cfg.prior);
          belief_params[i] = derive_fresh_params(belief.rate[i], pop.importance[i], pop.cost[i], T);
        }
        if (rate_based(policy)) rates = fresh_rates(belief, cfg, policy);
      }
      // 1. Scores.
#pragma omp parallel for if (threads > 1) num_threads(threads) schedule(static)
      for (std::size_t i = 0; i < n; ++i) {
        const FreshView v{pop.complete[i] != 0, age[i], changes[i], want[i] != 0,
                          rates.rho.empty() ? 0.0 : rates.rho[i]};
        const double s = fresh_score(policy, cfg.objective, v, belief_params[i], T, cfg.seed, r,
                                     uint32_t(i), epoch);
        key[i] = score_key(s);
      }
      // 2. Selection.
      if (reference)
        select_reference(key, plan, cfg, crawled);
      else
        select_fast(key, plan, cfg, threads, eligible, work, crawled);
      if (observer) {
        crawled_ids.clear();
        for (std::size_t i = 0; i < n; ++i)
          if (crawled[i]) crawled_ids.push_back(uint32_t(i));
        (*observer)(r, t, crawled_ids);
      }
      // 3. Rewards and transitions, summed per chunk.
#pragma omp parallel for if (threads > 1) num_threads(threads) schedule(dynamic, 1)
      for (std::size_t c = 0; c < chunks; ++c) {
        double f = 0.0, pen = 0.0, cost = 0.0;
        for (std::size_t i = c * kFoldChunk; i < std::min(n, (c + 1) * kFoldChunk); ++i) {
          if (crawled[i]) {
            // What the crawl reveals: for an IO source, whether it changed over the interval.
            if (cfg.learn && !pop.complete[i] && age[i] > 0)
              observed[i].add(age[i], changes[i] > 0);
            cost += pop.cost[i];
          }
          const FreshEpoch e =
              fresh_step(crawled[i] != 0, pop.complete[i] != 0, coin_policy(policy),
                         rates.p.empty() ? 0.0 : rates.p[i], params[i], cfg.seed, r, uint32_t(i),
                         epoch, &age[i], &changes[i], &want[i]);
          f += e.fresh;
          pen += e.penalty;
          if (cfg.learn && pop.complete[i])
            observed[i].seen = e.added > ~0u - observed[i].seen ? ~0u : observed[i].seen + e.added;
        }
        chunk_fresh[c] = f, chunk_pen[c] = pen, chunk_cost[c] = cost;
      }
      if (t >= cfg.burn_in) {
        double f = 0.0, pen = 0.0, cost = 0.0;
        for (std::size_t c = 0; c < chunks; ++c)
          f += chunk_fresh[c], pen += chunk_pen[c], cost += chunk_cost[c];
        sum_fresh += f * norm, sum_pen += pen * norm, sum_cost += cost;
        if (r == 0)
          out.epoch_freshness.push_back(f * norm), out.epoch_penalty.push_back(pen * norm);
      }
      progress.update(uint64_t(r) * total_epochs + t + 1);
      if (progress.stopped()) break;
    }
    progress.throw_if_stopped();
    const double h = double(cfg.epochs);
    out.freshness.push_back(sum_fresh / h);
    out.penalty.push_back(sum_pen / h);
    out.cost.push_back(sum_cost / h);
    if (cfg.learn && r == 0) {
      out.learned_rate.resize(n);
      for (std::size_t i = 0; i < n; ++i)
        out.learned_rate[i] =
            observed[i].estimate(pop.complete[i], T, double(total_epochs) * T, cfg.prior);
    }
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace crawleval
