// The freshness model's reference engine (fresh_engine.hpp): serial, double precision, a full sort
// every epoch, the budget and the host caps walked literally, the sums taken plainly in id order.
// Its only job is to be obviously right: the CPU engine (host/engine/cpu/fresh_rollout.cpp) and
// the GPU one (kernels/fresh_engine.cu) are compared with it, crawl for crawl.
//
// What it shares with them, by design, is the model's per-URL math (freshness.hpp: the scores,
// the sampled epoch, the steady start; change_rate.hpp: the learner's record of a URL) and the
// plan (the per-URL constants, the rate-based policies' rates, the steady start's periods, the
// fixed-point costs of selection.hpp). The loop, the selection, the hosts of the caps and the sums
// are its own: it reads the hosts and their flags off the population, not the plan's directory of
// crowded hosts, and it adds the rewards one URL after the other, where the engines fold chunks.
#include <algorithm>
#include <chrono>
#include <map>
#include <numeric>
#include <set>

#include "base/progress.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/engine/fresh_engine.hpp"
#include "crawleval/model/change_rate.hpp"
#include "crawleval/model/custom_fresh_policy.hpp"
#include "crawleval/model/freshness.hpp"
#include "crawleval/model/nutch.hpp"
#include "crawleval/model/problem.hpp"
#include "crawleval/model/selection.hpp"

namespace crawleval {

namespace {

/// The crawled URLs of one epoch (selection.hpp's rule, with caps): the URLs in the order of
/// (score desc, id asc), -0.0 equal to +0.0 and NaN after every number; walking that order, a URL
/// of a constrained host that already has `cap` crawls this epoch is skipped, any other is crawled
/// if its weight fits what is left of the budget, and the walk stops at the first that does not.
/// `due` (nutch-adaptive; empty otherwise): a URL that is not due is skipped too.
std::vector<uint8_t> select_epoch(const std::vector<double>& score, const FreshPopulation& pop,
                                  const std::set<uint64_t>& constrained, uint32_t cap,
                                  const FreshPlan& plan, const std::vector<uint8_t>& due) {
  const std::size_t n = score.size();
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const double sa = score[a], sb = score[b];
    const bool na = sa != sa, nb = sb != sb;
    if (na != nb) return nb;
    if (!na && sa != sb) return sa > sb;
    return a < b;
  });
  std::vector<uint8_t> crawled(n, 0);
  std::map<uint64_t, uint32_t> crawls;  // this epoch's crawls of each constrained host
  unsigned long long used = 0;
  for (uint32_t i : order) {
    if (!due.empty() && !due[i]) continue;
    const bool polite = cap > 0 && constrained.count(pop.host[i]) > 0;
    if (polite && crawls[pop.host[i]] >= cap) continue;
    if (used + plan.weight[i] > plan.budget.limit) break;
    used += plan.weight[i];
    if (polite) ++crawls[pop.host[i]];
    crawled[i] = 1;
  }
  return crawled;
}

}  // namespace

FreshRolloutOutput fresh_reference(const FreshPopulation& pop, const FreshConfig& cfg,
                                   FreshPolicy policy, const FreshPlan& plan,
                                   const FreshReplan& replan, const FreshObserver* observer,
                                   const FreshScoreFn* user) {
  const auto t0 = std::chrono::steady_clock::now();
  CE_EXPECTS(!user || policy == FreshPolicy::index,
             "internal: a freshness score function runs as the index policy's plan");
  const std::size_t n = pop.size();
  const double T = cfg.epoch_length;
  CE_EXPECTS(plan.params.size() == n && plan.weight.size() == n,
             "internal: the freshness reference's plan is of other sources");
  CE_EXPECTS(!observer || n <= kMaxLocalSources,
             "internal: a freshness observer sees at most 4,294,967,294 sources");
  CE_EXPECTS(!cfg.learn || !rate_based(policy) || bool(replan),
             "internal: the learning variant needs its replanning");
  // A host is constrained when any of its URLs is flagged.
  std::set<uint64_t> constrained;
  for (std::size_t i = 0; i < n; ++i)
    if (pop.constrained[i]) constrained.insert(pop.host[i]);
  double total_importance = 0.0;
  for (std::size_t i = 0; i < n; ++i) total_importance += pop.importance[i];
  const auto normalised = [&](double x) {
    return total_importance > 0.0 ? x / total_importance : 0.0;
  };

  FreshRolloutOutput out;
  out.threads = 1;
  const uint64_t total_epochs = cfg.burn_in + cfg.epochs;
  detail::Progress progress(
      cfg.progress,
      "fresh " + (cfg.progress_label.empty() ? std::string(to_string(policy)) : cfg.progress_label),
      total_epochs * cfg.replications);
  for (uint32_t k = 0; k < cfg.replications; ++k) {
    const uint32_t r = cfg.first_replication + k;  // (the draws' replication index)
    // Every URL's state: its age, the changes it missed, a CO URL's won coin; what the policy
    // believes of it (the truth, or the learning variant's estimates) and the rates it schedules.
    std::vector<uint32_t> age(n, 0), changes(n, 0);
    std::vector<uint8_t> want(n, 0);
    std::vector<FreshParams> believed = plan.params;
    std::vector<double> estimate(cfg.learn ? n : 0);  // the learning variant's rates
    FreshRates rates = plan.rates;
    std::vector<LearnedHistory> history(n);
    for (LearnedHistory& h : history) h.reset();
    // nutch-adaptive's schedule of every URL (nutch.hpp), made afresh for every replication.
    const bool nutch = policy == FreshPolicy::nutch_adaptive;
    std::vector<NutchState> schedule;
    for (std::size_t i = 0; nutch && i < n; ++i)
      schedule.push_back(nutch_start_state(cfg.nutch_start, cfg.seed, r, pop.first + i));
    if (cfg.start == FreshStart::steady)
      for (std::size_t i = 0; i < n; ++i)
        if (!pop.complete[i] && !fresh_steady_start(plan.steady_period[i], plan.params[i], cfg.seed,
                                                    r, pop.first + i, &age[i], &changes[i]))
          ++out.saturated;
    double sum_fresh = 0.0, sum_penalty = 0.0, sum_cost = 0.0;
    for (uint64_t t = 0; t < total_epochs; ++t) {
      const uint32_t epoch = uint32_t(t);
      if (cfg.learn && t % cfg.relearn == 0) {  // what the crawls revealed so far
        for (std::size_t i = 0; i < n; ++i) {
          estimate[i] = history[i].estimate(pop.complete[i], T, double(t) * T, cfg.prior);
          believed[i] = derive_fresh_params(estimate[i], pop.importance[i], pop.cost[i], T);
        }
        if (rate_based(policy)) {
          FreshColumns columns = FreshColumns::of(pop, 0, n);
          columns.rate = estimate.data();
          rates = replan(columns);
        }
      }
      std::vector<double> score(n);
      std::vector<uint8_t> due;
      if (user) {
        // A user's scores, from the ages and the missed changes it may see (CO sources').
        std::vector<uint32_t> seen(n);
        for (std::size_t i = 0; i < n; ++i) seen[i] = pop.complete[i] ? changes[i] : 0u;
        (*user)(FreshScoreRequest{r, t, n, age.data(), seen.data(), score.data(), nullptr, 0,
                                  nullptr, cfg.learn ? estimate.data() : nullptr});
      }
      for (std::size_t i = 0; i < n && !user; ++i) {
        if (nutch) {
          due.push_back(nutch_due(schedule[i], epoch));
          score[i] = nutch_score(schedule[i], epoch, believed[i]);
          continue;
        }
        const FreshView v{pop.complete[i] != 0, age[i], changes[i], want[i] != 0,
                          rates.rho.empty() ? 0.0 : rates.rho[i]};
        score[i] = policy == FreshPolicy::custom  // the header compiled in
                       ? custom::fresh_score(v, believed[i], T)
                       : fresh_score(policy, cfg.objective, v, believed[i], T, cfg.seed, r,
                                     pop.first + i, epoch);
      }
      const std::vector<uint8_t> crawled =
          select_epoch(score, pop, constrained, cfg.host_cap, plan, due);
      if (observer) {
        std::vector<uint32_t> ids;
        for (std::size_t i = 0; i < n; ++i)
          if (crawled[i]) ids.push_back(uint32_t(i));
        (*observer)(r, t, ids);
      }
      double fresh = 0.0, penalty = 0.0, cost = 0.0;
      for (std::size_t i = 0; i < n; ++i) {
        if (crawled[i]) {
          // What the crawl reveals of an IO URL: whether it changed since the last crawl.
          if (cfg.learn && !pop.complete[i] && age[i] > 0) history[i].add(age[i], changes[i] > 0);
          // What it reveals to nutch-adaptive: whether the page changed since the last crawl.
          if (nutch) nutch_crawled(changes[i] > 0, epoch, cfg.nutch_max, &schedule[i]);
          cost += pop.cost[i];
        }
        const FreshEpoch e =
            fresh_step(crawled[i] != 0, pop.complete[i] != 0, coin_policy(policy),
                       rates.p.empty() ? 0.0 : rates.p[i], plan.params[i], cfg.seed, r,
                       pop.first + i, epoch, &age[i], &changes[i], &want[i]);
        fresh += e.fresh;
        penalty += e.penalty;
        out.saturated += e.saturated;
        if (cfg.learn && pop.complete[i]) history[i].see(e.added);  // a CO URL sees every change
      }
      if (t >= cfg.burn_in) {
        sum_fresh += normalised(fresh);
        sum_penalty += normalised(penalty);
        sum_cost += cost;
        if (k == 0) {
          out.epoch_freshness.push_back(normalised(fresh));
          out.epoch_penalty.push_back(normalised(penalty));
        }
      }
      progress.update(uint64_t(k) * total_epochs + t + 1);
      if (progress.stopped()) break;
    }
    progress.throw_if_stopped();
    const double h = double(cfg.epochs);
    out.freshness.push_back(sum_fresh / h);
    out.penalty.push_back(sum_penalty / h);
    out.cost.push_back(sum_cost / h);
    if (cfg.learn && k == 0) {
      out.learned_rate.resize(n);
      for (std::size_t i = 0; i < n; ++i)
        out.learned_rate[i] =
            history[i].estimate(pop.complete[i], T, double(total_epochs) * T, cfg.prior);
    }
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace crawleval
