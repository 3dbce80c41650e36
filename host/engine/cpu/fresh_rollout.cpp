// The freshness model's epoch engine (fresh_engine.hpp): scores, the budgeted selection under
// per-host politeness caps, and the sampled epoch of every source.
//
// Selection rule (selection.hpp's, with caps): order the sources by (score desc, id asc); walk the
// order; a source of a constrained host that already has m crawls this epoch is skipped; any other
// source is crawled if it fits the budget, and the walk stops at the first that does not. "Fits"
// is decided on selection.hpp's fixed-point weights (FixedBudget), whose integer sums do not depend
// on the order they are taken in, so that a GPU's scan decides exactly as the CPU's walk.
// Equivalently: only the top m of each constrained host (in that order) are eligible, and the
// budgeted prefix of the eligible sources is crawled. The reference (host/engine/reference/
// fresh_reference.cpp) walks a full sort; this engine finds each crowded host's top m by
// nth_element and then the budgeted prefix by the epoch layer's radix select
// (epoch_collective.hpp; select_layer).
//
// Over MPI ranks (fresh_rollout with a Comm) every rank holds its part of the population alone
// (fresh_shard: shard_of's rows) and its plan: the rows' constants, rates and periods, with the
// run's totals and the crowded hosts' directory taken over the ranks. It runs the epochs of its
// part: scores, transitions, rewards. A host whose sources lie on several ranks has each rank's
// top m candidates sent to the host's owner rank, which returns its m-th (docs/scale-out.md); the
// layer selects over the ranks and folds the
// rewards' chunk sums in global chunk order, as one process adds them: every rank count gives one
// process's crawls and numbers, bit for bit.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "base/chunked_sum.hpp"
#include "base/progress.hpp"
#include "crawleval/base/comm.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/engine/epoch_collective.hpp"
#include "crawleval/engine/fresh_engine.hpp"
#include "crawleval/model/change_rate.hpp"
#include "crawleval/model/custom_fresh_policy.hpp"
#include "crawleval/model/nutch.hpp"
#include "crawleval/model/policy.hpp"
#include "crawleval/model/problem.hpp"
#include "crawleval/model/rng.hpp"
#include "crawleval/model/selection.hpp"
#include "engine/cpu/arrival_words.hpp"
#include "engine/cpu/det_whittle_avx512.hpp"

namespace crawleval {

namespace {

/// (key desc, id asc): true if row a comes first.
struct Before {
  const uint64_t* key;
  bool operator()(uint32_t a, uint32_t b) const {
    const uint64_t ka = key[a], kb = key[b];
    return ka > kb || (ka == kb && a < b);
  }
};

/// The engine's selection, in one process or over ranks: each crowded host's top m (hosts.members,
/// CSR by host) by nth_element where the host lies on this rank alone (every host in one
/// process), else by the host's owner from every rank's top m candidates of it (at most m x 24 B
/// per split host and rank there, and 24 B back per host and rank); then the budgeted prefix of the
/// eligible sources by the epoch layer's radix select, with the ineligible sources weighing 0 (they
/// never stop the walk and are not crawled: the prefix of the eligible sources alone). `due`
/// (nutch-adaptive; null otherwise): the sources that may be crawled at all this epoch, the others
/// ineligible as well. key, eligible, masked and crawled hold this process's rows, the run's
/// sources lo, lo + 1, ...
void select_layer(const std::vector<uint64_t>& key, const FreshPlan& plan, const FreshConfig& cfg,
                  std::size_t lo, int threads, EpochCollective& layer, const uint8_t* due,
                  std::vector<uint8_t>& eligible, std::vector<uint64_t>& masked,
                  std::vector<uint8_t>& crawled) {
  const Before before{key.data()};
  const std::size_t m = key.size();
  if (due)
    std::copy(due, due + m, eligible.begin());
  else
    std::fill(eligible.begin(), eligible.end(), 1);
  const uint64_t* weight = plan.weight.data();
  if (cfg.host_cap) {
    const CrowdedHosts& hosts = plan.hosts;
    const std::size_t groups = hosts.start.size() - 1;
    struct Candidate {
      uint64_t group, key, id;
    };
    std::vector<Candidate> mine;
    // (Threads split the hosts in one process, where no host is split and nothing is listed.)
    // Under MPI the hosts are taken in ascending order, so each owner's candidates are too.
#pragma omp parallel if (threads > 1 && layer.single()) num_threads(threads)
    {
      std::vector<uint32_t> local;  // (one buffer per thread, not one allocation per host)
#pragma omp for schedule(dynamic, 64)
      for (std::size_t g = 0; g < groups; ++g) {
        if (hosts.start[g] == hosts.start[g + 1]) continue;  // none of it here
        local.assign(hosts.members.begin() + std::ptrdiff_t(hosts.start[g]),
                     hosts.members.begin() + std::ptrdiff_t(hosts.start[g + 1]));
        const std::size_t top = std::min<std::size_t>(cfg.host_cap, local.size());
        std::nth_element(local.begin(), local.begin() + std::ptrdiff_t(top), local.end(), before);
        if (hosts.whole(g)) {
          for (std::size_t k = top; k < local.size(); ++k) eligible[local[k]] = 0;
          continue;
        }
        for (std::size_t k = 0; k < top; ++k)
          mine.push_back(Candidate{g, key[local[k]], lo + local[k]});
      }
    }
    if (hosts.split) {
      // A split host's candidates go to its owner (hosts.owner), which finds the host's m-th
      // candidate in the order and sends it back to the ranks that hold members; a member is
      // eligible when it is no later in the order than that.
      Comm& comm = layer.comm();
      const std::size_t P = std::size_t(comm.size());
      std::vector<std::vector<Candidate>> to(P);
      for (const Candidate& c : mine)
        to[std::size_t(std::upper_bound(hosts.owner.begin(), hosts.owner.end(), c.group) -
                       hosts.owner.begin() - 1)]
            .push_back(c);
      const std::vector<std::vector<Candidate>> got = exchange_items(comm, to);
      struct From {
        Candidate c;
        std::size_t rank;
      };
      std::vector<From> all;
      for (std::size_t r = 0; r < P; ++r)
        for (const Candidate& c : got[r]) all.push_back(From{c, r});
      std::sort(all.begin(), all.end(), [](const From& x, const From& y) {
        const Candidate &a = x.c, &b = y.c;
        return a.group != b.group ? a.group < b.group
               : a.key != b.key   ? a.key > b.key
                                  : a.id < b.id;
      });
      std::vector<std::vector<Candidate>> back(P);
      for (std::size_t at = 0; at < all.size();) {
        std::size_t end = at;
        while (end < all.size() && all[end].c.group == all[at].c.group) ++end;
        const Candidate& last = all[std::min(end, at + cfg.host_cap) - 1].c;
        std::vector<uint8_t> told(P, 0);
        for (std::size_t k = at; k < end; ++k)
          if (!told[all[k].rank]) told[all[k].rank] = 1, back[all[k].rank].push_back(last);
        at = end;
      }
      const std::vector<std::vector<Candidate>> lasts = exchange_items(comm, back);
      for (std::size_t r = 0; r < P; ++r) {
        layer.stats.bytes += (to[r].size() + back[r].size()) * sizeof(Candidate);
        for (const Candidate& last : lasts[r]) {
          const std::size_t g = std::size_t(last.group);
          for (std::size_t j = hosts.start[g]; j < hosts.start[g + 1]; ++j) {
            const uint32_t row = hosts.members[j];
            const uint64_t k = key[row];
            if (k < last.key || (k == last.key && lo + row > last.id)) eligible[row] = 0;
          }
        }
      }
    }
  }
  if (cfg.host_cap || due) {
    for (std::size_t j = 0; j < m; ++j) masked[j] = eligible[j] ? plan.weight[j] : 0;
    weight = masked.data();
  }
  const bool unit = plan.unit_costs && !cfg.host_cap && !due;
  const Selection sel = layer.select(key.data(), weight, unit, plan.budget.limit);
  for (std::size_t j = 0; j < m; ++j) crawled[j] = eligible[j] && is_selected(key[j], lo + j, sel);
}

/// A replication's start (every replication and pilot is a run of its own): ages and missed
/// changes zero, or drawn by the steady start; no coin won; nutch-adaptive's schedule fresh.
/// Returns the sources whose steady start had to be cut (fresh_steady_start).
uint64_t start_replication(const FreshPopulation& pop, const FreshPlan& plan,
                           const FreshConfig& cfg, uint32_t r, int threads,
                           std::vector<uint32_t>& age, std::vector<uint32_t>& changes,
                           std::vector<uint8_t>& want, std::vector<NutchState>& schedule) {
  const std::size_t m = pop.size();
  std::fill(age.begin(), age.end(), 0u);
  std::fill(changes.begin(), changes.end(), 0u);
  std::fill(want.begin(), want.end(), 0);
  uint64_t cut = 0;
  if (cfg.start == FreshStart::steady) {
#pragma omp parallel for if (threads > 1) num_threads(threads) schedule(static) reduction(+ : cut)
    for (std::size_t j = 0; j < m; ++j)
      if (!pop.complete[j])
        cut += !fresh_steady_start(plan.steady_period[j], plan.params[j], cfg.seed, r,
                                   pop.first + j, &age[j], &changes[j]);
  }
#pragma omp parallel for if (threads > 1) num_threads(threads) schedule(static)
  for (std::size_t j = 0; j < schedule.size(); ++j)
    schedule[j] = nutch_start_state(cfg.nutch_start, cfg.seed, r, pop.first + j);
  return cut;
}

/// Every row's score key for this epoch (and nutch-adaptive's due rows), from what the policy
/// believes of it.
void score_rows(const FreshPopulation& pop, const FreshConfig& cfg, FreshPolicy policy,
                const std::vector<FreshParams>& believed, const FreshRates& rates, uint32_t r,
                uint32_t epoch, int threads, const std::vector<uint32_t>& age,
                const std::vector<uint32_t>& changes, const std::vector<uint8_t>& want,
                const std::vector<NutchState>& schedule, std::vector<PeriodCarry>& carry,
                std::vector<uint8_t>& due, std::vector<uint64_t>& key) {
  const std::size_t m = pop.size();
  const bool nutch = policy == FreshPolicy::nutch_adaptive;
#pragma omp parallel for if (threads > 1) num_threads(threads) schedule(static)
  for (std::size_t j = 0; j < m; ++j) {
    if (nutch) {
      due[j] = nutch_due(schedule[j], epoch);
      key[j] = score_key(nutch_score(schedule[j], epoch, believed[j]));
      continue;
    }
    const FreshView v{pop.complete[j] != 0, age[j], changes[j], want[j] != 0,
                      rates.rho.empty() ? 0.0 : rates.rho[j]};
    if (policy == FreshPolicy::custom) {  // the header compiled in (custom_fresh_policy.hpp)
      key[j] = score_key(custom::fresh_score(v, believed[j], cfg.epoch_length));
      continue;
    }
    key[j] =
        score_key(fresh_score(policy, cfg.objective, v, believed[j], cfg.epoch_length, cfg.seed, r,
                              pop.first + j, epoch, carry.empty() ? nullptr : &carry[j]));
  }
}

/// Every row's score key from a user's score function (FreshScoreRequest): it sees the ages and
/// the missed changes of the completely observed rows.
void user_rows(const FreshScoreFn& user, const FreshPopulation& pop, uint32_t r, uint64_t t,
               int threads, const std::vector<uint32_t>& age, const std::vector<uint32_t>& changes,
               std::vector<uint32_t>& seen, std::vector<double>& scores,
               std::vector<uint64_t>& key) {
  const std::size_t m = pop.size();
  for (std::size_t j = 0; j < m; ++j) seen[j] = pop.complete[j] ? changes[j] : 0u;
  const double* borrowed = nullptr;
  user(FreshScoreRequest{r, t, m, age.data(), seen.data(), scores.data(), &borrowed});
  const double* s = borrowed ? borrowed : scores.data();
#pragma omp parallel for if (threads > 1) num_threads(threads) schedule(static)
  for (std::size_t j = 0; j < m; ++j) key[j] = score_key(s[j]);
}

}  // namespace

const char* custom_policy_header() { return custom::fresh_policy_header(); }

CrowdedHosts crowded_hosts(const FreshPopulation& pop, uint32_t cap, Comm* processes) {
  Comm& comm = processes ? *processes : solo_comm();
  CrowdedHosts h;
  const std::size_t n = pop.size();
  std::vector<uint64_t> ids(pop.host);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  h.count = uint32_t(ids.size());
  h.dense.resize(n);
  h.constrained.assign(ids.size(), 0);
  std::vector<uint64_t> size(ids.size(), 0);
  for (std::size_t i = 0; i < n; ++i) {
    const uint32_t k =
        uint32_t(std::lower_bound(ids.begin(), ids.end(), pop.host[i]) - ids.begin());
    h.dense[i] = k;
    ++size[k];
    if (pop.constrained[i]) h.constrained[k] = 1;
  }
  if (cap == 0) {  // (no crowded host: every rank's block is empty)
    h.owner.assign(std::size_t(comm.size()) + 1, 0);
    return h;
  }
  // The constrained hosts of every rank, ascending, and their sizes over the ranks (a host may be
  // flagged on one rank and have unflagged sources on another).
  std::vector<uint64_t> flagged;
  for (std::size_t k = 0; k < ids.size(); ++k)
    if (h.constrained[k]) flagged.push_back(ids[k]);
  if (comm.size() > 1) {
    // Each id is first sent to one rank (by a hash), which drops the repeats, so the allgather
    // carries every constrained host once: 8 B per host on every rank, where a host whose sources
    // lie on k ranks would otherwise come k times.
    const std::size_t P = std::size_t(comm.size());
    std::vector<std::vector<uint64_t>> to(P);
    for (uint64_t id : flagged)
      to[std::size_t((id * 0x9E3779B97F4A7C15ull) >> 33) % P].push_back(id);
    std::vector<uint64_t> mine;
    for (const std::vector<uint64_t>& ids_from : exchange_items(comm, to))
      mine.insert(mine.end(), ids_from.begin(), ids_from.end());
    std::sort(mine.begin(), mine.end());
    mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
    flagged = comm.allgather(mine);
    std::sort(flagged.begin(), flagged.end());
  }
  std::vector<uint64_t> sizes(flagged.size(), 0);
  std::vector<std::size_t> at(ids.size(), SIZE_MAX);  // this process's hosts among them
  for (std::size_t k = 0; k < ids.size(); ++k) {
    const auto f = std::lower_bound(flagged.begin(), flagged.end(), ids[k]);
    if (f == flagged.end() || *f != ids[k]) continue;
    at[k] = std::size_t(f - flagged.begin());
    sizes[at[k]] = size[k];
    h.constrained[k] = 1;
  }
  if (comm.size() > 1) comm.sum(sizes.data(), sizes.size());
  // The crowded hosts in ascending id: group numbers, the run's offsets, this process's rows.
  std::vector<std::size_t> group(flagged.size(), SIZE_MAX);
  for (std::size_t f = 0; f < flagged.size(); ++f)
    if (sizes[f] > cap) {
      group[f] = h.total.size() - 1;
      h.total.push_back(h.total.back() + sizes[f]);
    }
  const std::size_t groups = h.total.size() - 1;
  std::vector<std::size_t> local(groups + 1, 0);
  const auto group_of = [&](std::size_t i) {
    const std::size_t f = at[h.dense[i]];
    return f == SIZE_MAX ? SIZE_MAX : group[f];
  };
  for (std::size_t i = 0; i < n; ++i)
    if (const std::size_t g = group_of(i); g != SIZE_MAX) ++local[g + 1];
  for (std::size_t g = 0; g < groups; ++g) local[g + 1] += local[g];
  h.start = local;
  h.members.resize(local.back());
  for (std::size_t i = 0; i < n; ++i)
    if (const std::size_t g = group_of(i); g != SIZE_MAX) h.members[local[g]++] = uint32_t(i);
  bool split = false;
  for (std::size_t g = 0; g < groups && !split; ++g)
    split = h.start[g] != h.start[g + 1] && !h.whole(g);
  h.split = comm.any(split);
  for (int r = 0; r <= comm.size(); ++r) {
    const uint64_t want =
        uint64_t((unsigned __int128)h.total.back() * unsigned(r) / unsigned(comm.size()));
    h.owner.push_back(
        std::size_t(std::lower_bound(h.total.begin(), h.total.end() - 1, want) - h.total.begin()));
  }
  return h;
}

FreshRolloutOutput fresh_epochs(const FreshPopulation& pop, const FreshConfig& cfg,
                                FreshPolicy policy, const FreshPlan& plan,
                                const FreshReplan& replan, const FreshObserver* observer,
                                Comm* processes, const FreshScoreFn* user) {
  Comm& comm = processes ? *processes : solo_comm();
  CE_EXPECTS(!user || (!processes && !cfg.learn && policy == FreshPolicy::index),
             "internal: a freshness score function runs in one process, without --learn");
  const auto t0 = std::chrono::steady_clock::now();
  const double T = cfg.epoch_length;
  // This process's rows are the run's sources lo .. lo + m - 1 (all of them in one process), row
  // j drawing as global source pop.first + j.
  const Shard shard = fresh_shard(pop, comm);
  const std::size_t n = std::size_t(shard.total), lo = std::size_t(shard.first), m = pop.size();
  const bool sharded = comm.size() > 1;
  // (The observer's ids are 32-bit.)
  CE_EXPECTS(!observer || n <= kMaxLocalSources,
             "internal: a freshness observer sees at most 4,294,967,294 sources");
  const std::vector<FreshParams>& params = plan.params;
  // What the policy believes: the true parameters, or (learning) those of the estimated rates.
  const FreshColumns columns = FreshColumns::of(pop, 0, m);
  std::vector<FreshParams> learned;
  std::vector<double> belief;  // learning: the shard's estimated rates
  std::vector<LearnedHistory> observed;
  if (cfg.learn) {
    learned = params;
    belief.resize(m);
    observed.resize(m);
  }
  const std::vector<FreshParams>& believed = cfg.learn ? learned : params;
  FreshRates rates = plan.rates;
  const double norm = plan.norm;

  // Below kFreshSerialN sources an epoch is too short for threads: their barriers cost more than
  // they save, and much more on a busy machine (a descheduled peer holds every barrier).
  const int threads =
      n < kFreshSerialN ? 1 : (cfg.threads > 0 ? cfg.threads : omp_get_max_threads());
  FreshRolloutOutput out;
  out.threads = threads;
  const uint64_t total_epochs = cfg.burn_in + cfg.epochs;
  detail::Progress progress(
      cfg.progress,
      "fresh " + (cfg.progress_label.empty() ? std::string(to_string(policy)) : cfg.progress_label),
      total_epochs * cfg.replications);

  std::vector<uint32_t> age(m), changes(m);
  std::vector<uint8_t> want(m), crawled(m), eligible(m);
  // nutch-adaptive's schedule (nutch.hpp) and which rows it has due this epoch.
  const bool nutch = policy == FreshPolicy::nutch_adaptive;
  std::vector<NutchState> schedule(nutch ? m : 0);
  std::vector<uint8_t> due(nutch ? m : 0);
  std::vector<uint64_t> key(m), masked(cfg.host_cap || nutch ? m : 0), mine;
  // The index's period reward carried from epoch to epoch (fresh_index_io; the believed
  // parameters of the learning variant change, so it carries none).
  std::vector<PeriodCarry> carry(policy == FreshPolicy::index && !cfg.learn && !user ? m : 0);
  // A user's score function: what it sees of the missed changes, and its scores.
  std::vector<uint32_t> seen_changes(user ? m : 0);
  std::vector<double> user_scores(user ? m : 0);
  std::vector<uint32_t> crawled_ids;
  EpochCollective layer(comm, lo, m, n, threads);
  const bool vector_words = detail::avx512_pass_available();
  uint64_t saturated = 0;
  for (uint32_t k = 0; k < cfg.replications; ++k) {
    const uint32_t r = cfg.first_replication + k;  // (the draws' replication index)
    saturated += start_replication(pop, plan, cfg, r, threads, age, changes, want, schedule);
    std::fill(carry.begin(), carry.end(), PeriodCarry{});
    for (LearnedHistory& o : observed) o.reset();
    double sum_fresh = 0.0, sum_pen = 0.0, sum_cost = 0.0;
    layer.begin_sums(3, kFoldChunk, cfg.epochs, false);
    const std::size_t chunks = layer.chunks();
    const EpochCollective::Totals add = [&](const double* s) {
      sum_fresh += s[0] * norm, sum_pen += s[1] * norm, sum_cost += s[2];
      if (k == 0)
        out.epoch_freshness.push_back(s[0] * norm), out.epoch_penalty.push_back(s[1] * norm);
    };
    for (uint64_t t = 0; t < total_epochs; ++t) {
      const uint32_t epoch = uint32_t(t);
      if (cfg.learn && t % cfg.relearn == 0) {  // re-estimate, and the rates with them
        const double elapsed = double(t) * T;
#pragma omp parallel for if (threads > 1) num_threads(threads) schedule(static)
        for (std::size_t j = 0; j < m; ++j) {
          belief[j] = observed[j].estimate(pop.complete[j], T, elapsed, cfg.prior);
          learned[j] = derive_fresh_params(belief[j], pop.importance[j], pop.cost[j], T);
        }
        // The rates: a solve over every rank's estimates, each rank summing its own.
        if (rate_based(policy)) {
          CE_EXPECTS(bool(replan), "internal: the learning variant needs its replanning");
          FreshColumns believed_columns = columns;
          believed_columns.rate = belief.data();
          rates = replan(believed_columns);
        }
      }
      // 1. Scores.
      if (user)
        user_rows(*user, pop, r, t, threads, age, changes, seen_changes, user_scores, key);
      else
        score_rows(pop, cfg, policy, believed, rates, r, epoch, threads, age, changes, want,
                   schedule, carry, due, key);
      // 2. Selection.
      select_layer(key, plan, cfg, lo, threads, layer, nutch ? due.data() : nullptr, eligible,
                   masked, crawled);
      if (observer) {
        mine.clear();
        for (std::size_t j = 0; j < m; ++j)
          if (crawled[j]) mine.push_back(lo + j);
        const std::vector<uint64_t> ids = layer.gather(mine);
        crawled_ids.assign(ids.begin(), ids.end());
        (*observer)(r, t, crawled_ids);
      }
      // 3. Rewards and transitions, summed per chunk (the shard starts on a chunk's boundary).
      double* const chunk_fresh = layer.sums();
      double* const chunk_pen = chunk_fresh + chunks;
      double* const chunk_cost = chunk_pen + chunks;
      uint64_t cut = 0;
#pragma omp parallel for if (threads > 1) num_threads(threads) schedule(dynamic, 1) \
    reduction(+ : cut)
      for (std::size_t c = 0; c < chunks; ++c) {
        double f = 0.0, pen = 0.0, cost = 0.0;
        const std::size_t chunk_end = std::min(m, (c + 1) * kFoldChunk);
        // Block 0 of each source's change stream, kArrivalBlock sources at a time (eight per
        // AVX-512 instruction where the CPU has it): most epochs show no change in the first word
        // (plan.quiet) and need no more (fresh_step_drawn).
        uint32_t words[4][detail::kArrivalBlock];
        for (std::size_t b = c * kFoldChunk; b < chunk_end; b += detail::kArrivalBlock) {
          const std::size_t count = std::min(detail::kArrivalBlock, chunk_end - b);
          detail::first_stream_blocks(Stream::changes, cfg.seed, pop.first + b, count, epoch, r,
                                      vector_words, words);
          for (std::size_t q = 0; q < count; ++q) {
            const std::size_t j = b + q;
            if (crawled[j]) {
              // What the crawl reveals: for an IO source, whether it changed over the interval.
              if (cfg.learn && !pop.complete[j] && age[j] > 0)
                observed[j].add(age[j], changes[j] > 0);
              if (nutch) nutch_crawled(changes[j] > 0, epoch, cfg.nutch_max, &schedule[j]);
              cost += pop.cost[j];
            }
            const Words4 first{{words[0][q], words[1][q], words[2][q], words[3][q]}};
            const FreshEpoch e = fresh_step_drawn(
                crawled[j] != 0, pop.complete[j] != 0, coin_policy(policy),
                rates.p.empty() ? 0.0 : rates.p[j], params[j], plan.quiet[j], first, cfg.seed, r,
                pop.first + j, epoch, &age[j], &changes[j], &want[j]);
            f += e.fresh;
            pen += e.penalty;
            cut += e.saturated;
            if (cfg.learn && pop.complete[j]) observed[j].see(e.added);
          }
        }
        chunk_fresh[c] = f, chunk_pen[c] = pen, chunk_cost[c] = cost;
      }
      saturated += cut;
      if (t >= cfg.burn_in) layer.commit(add);
      progress.update(uint64_t(k) * total_epochs + t + 1);
      // (Under MPI an interrupt does not stop one rank alone: the others would wait for it.)
      if (!sharded && progress.stopped()) break;
    }
    layer.flush(add);
    if (!sharded) progress.throw_if_stopped();
    const double h = double(cfg.epochs);
    out.freshness.push_back(sum_fresh / h);
    out.penalty.push_back(sum_pen / h);
    out.cost.push_back(sum_cost / h);
    if (cfg.learn && k == 0) {
      std::vector<double> rate(m);
      for (std::size_t j = 0; j < m; ++j)
        rate[j] = observed[j].estimate(pop.complete[j], T, double(total_epochs) * T, cfg.prior);
      out.learned_rate = std::move(rate);  // (this process's rows: no rank holds every source's)
    }
  }
  out.saturated = sharded ? comm.sum(saturated) : saturated;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace crawleval
