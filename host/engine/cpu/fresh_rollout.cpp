// The freshness model's epoch engine (fresh_engine.hpp): scores, the budgeted selection under
// per-host politeness caps, and the sampled epoch of every source; an agent (FreshRun) of the CPU
// engines' one epoch loop (epoch_loop.hpp's run_epochs), as the ephemeral model's engines are.
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
#include <exception>

#include "base/chunked_sum.hpp"
#include "base/progress.hpp"
#include "crawleval/base/comm.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/engine/epoch_collective.hpp"
#include "crawleval/engine/fresh_engine.hpp"
#include "crawleval/engine/fresh_keyed.hpp"
#include "crawleval/model/change_rate.hpp"
#include "crawleval/model/custom_fresh_policy.hpp"
#include "crawleval/model/nutch.hpp"
#include "crawleval/model/policy.hpp"
#include "crawleval/model/problem.hpp"
#include "crawleval/model/rng.hpp"
#include "crawleval/model/selection.hpp"
#include "engine/cpu/arrival_words.hpp"
#include "engine/cpu/det_whittle_avx512.hpp"
#include "engine/cpu/epoch_loop.hpp"

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
  // (The passes over every row split over the threads: serial, they were a tenth of an epoch.)
  const bool split = threads > 1;
#pragma omp parallel for if (split) num_threads(threads) schedule(static)
  for (std::size_t j = 0; j < m; ++j) eligible[j] = due ? due[j] : 1;
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
#pragma omp parallel for if (split) num_threads(threads) schedule(static)
    for (std::size_t j = 0; j < m; ++j) masked[j] = eligible[j] ? plan.weight[j] : 0;
    weight = masked.data();
  }
  const bool unit = plan.unit_costs && !cfg.host_cap && !due;
  const Selection sel = layer.select(key.data(), weight, unit, plan.budget.limit);
#pragma omp parallel for if (split) num_threads(threads) schedule(static)
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

/// The index policy's keys with its carried period rewards (score_rows): the IO rows eight at a
/// time (IndexLanes: bit for bit one at a time), in blocks of rows handed to threads.
void index_rows(const FreshPopulation& pop, Objective objective,
                const std::vector<FreshParams>& params, int threads,
                const std::vector<uint32_t>& age, const std::vector<uint32_t>& changes,
                std::vector<PeriodCarry>& carry, std::vector<uint64_t>& key) {
  constexpr std::size_t kRows = 1024;
  const std::size_t m = pop.size();
  const std::size_t blocks = (m + kRows - 1) / kRows;
  const auto put = [&key](std::size_t j, double s) { key[j] = score_key(s); };
#pragma omp parallel for if (threads > 1) num_threads(threads) schedule(static)
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t end = std::min(m, (b + 1) * kRows);
    IndexLanes<8, decltype(put)> lanes(objective, put);
    for (std::size_t j = b * kRows; j < end; ++j) {
      if (pop.complete[j])
        key[j] = score_key(fresh_index_co(objective, changes[j], params[j]));
      else
        lanes.add(j, double(age[j]), params[j], &carry[j]);
    }
    lanes.flush();
  }
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
  if (policy == FreshPolicy::index && !carry.empty()) {
    index_rows(pop, cfg.objective, believed, threads, age, changes, carry, key);
    return;
  }
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
/// the missed changes of the completely observed rows (`seen`), and the learning variant's
/// estimated rates (`rate`, null without it). Under MPI (processes) this process's rows, the run's
/// sources first, first + 1, ...
void user_rows(const FreshScoreFn& user, std::size_t m, uint32_t r, uint64_t t, int threads,
               uint64_t first, Comm* processes, const std::vector<uint32_t>& age,
               std::vector<uint32_t>& seen, const double* rate, std::vector<double>& scores,
               std::vector<uint64_t>& key) {
  const double* borrowed = nullptr;
  user(FreshScoreRequest{r, t, m, age.data(), seen.data(), scores.data(), &borrowed, first,
                         processes, rate});
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

namespace {

/// One process's part of a freshness run on the CPU: the agent of run_epochs (epoch_loop.hpp),
/// whose iteration t applies epoch t - 1's crawls (rewards, transitions: step) and scores epoch t,
/// then selects epoch t's crawls under the host caps. With a keyed pass (fresh_keyed.hpp: a device
/// or its host twin) the pass does the step and the scores, one launch per iteration, and the
/// agent the rest.
class FreshRun {
 public:
  FreshRun(const FreshPopulation& pop, const FreshConfig& cfg, FreshPolicy policy,
           const FreshPlan& plan, const FreshReplan& replan, const FreshObserver* observer,
           Comm& comm, const FreshScoreFn* user, const Shard& shard, int threads,
           detail::FreshKeyedPass* keyed);

  /// Replication k (its draws' index cfg.first_replication + k), its results appended to out.
  void replicate(uint32_t k, const detail::EpochTicks& ticks, FreshRolloutOutput& out);
  uint64_t saturated() const { return saturated_; }

  // The agent.
  void pass(uint64_t t);
  void commit() { layer_.commit(add_); }
  void select(uint64_t t);
  void flush() { layer_.flush(add_); }

 private:
  const std::vector<FreshParams>& believed() const { return cfg_.learn ? learned_ : plan_.params; }
  void relearn(uint64_t t);
  void user_scores(uint64_t t);
  void step(uint32_t epoch);
  void keyed_pass(uint64_t t);

  const FreshPopulation& pop_;
  const FreshConfig& cfg_;
  const FreshPolicy policy_;
  const FreshPlan& plan_;
  const FreshReplan& replan_;
  const FreshObserver* const observer_;
  const FreshScoreFn* const user_;
  Comm* const user_comm_;  // the ranks a score function is told of (null in one process)
  detail::FreshKeyedPass* const keyed_;  // null: the steps and scores here
  const int threads_;
  // This process's rows are the run's sources lo .. lo + m - 1 (all of them in one process), row
  // j drawing as global source pop.first + j.
  const std::size_t lo_, m_;
  const bool nutch_;
  const bool vector_words_;
  const uint64_t total_;
  // What the policy believes: the true parameters, or (learning) those of the estimated rates.
  std::vector<FreshParams> learned_;
  std::vector<double> belief_;  // learning: the shard's estimated rates
  std::vector<LearnedHistory> observed_;
  FreshRates rates_;
  std::vector<uint32_t> age_, changes_;
  std::vector<uint8_t> want_, crawled_, eligible_;
  // nutch-adaptive's schedule (nutch.hpp) and which rows it has due this epoch.
  std::vector<NutchState> schedule_;
  std::vector<uint8_t> due_;
  std::vector<uint64_t> key_, masked_, mine_;
  // The index's period reward carried from epoch to epoch (fresh_index_io; the believed
  // parameters of the learning variant change, so it carries none).
  std::vector<PeriodCarry> carry_;
  // A user's score function: what it sees of the missed changes, and its scores.
  std::vector<uint32_t> seen_changes_;
  std::vector<double> user_scores_;
  std::vector<uint32_t> crawled_ids_;
  EpochCollective layer_;
  uint64_t saturated_ = 0;
  // The replication under way: its draws' index, its sums.
  uint32_t k_ = 0, r_ = 0;
  double sum_fresh_ = 0.0, sum_pen_ = 0.0, sum_cost_ = 0.0;
  FreshRolloutOutput* out_ = nullptr;
  EpochCollective::Totals add_;
};

FreshRun::FreshRun(const FreshPopulation& pop, const FreshConfig& cfg, FreshPolicy policy,
                   const FreshPlan& plan, const FreshReplan& replan, const FreshObserver* observer,
                   Comm& comm, const FreshScoreFn* user, const Shard& shard, int threads,
                   detail::FreshKeyedPass* keyed)
    : pop_(pop),
      cfg_(cfg),
      policy_(policy),
      plan_(plan),
      replan_(replan),
      observer_(observer),
      user_(user),
      user_comm_(comm.size() > 1 ? &comm : nullptr),
      keyed_(keyed),
      threads_(threads),
      lo_(std::size_t(shard.first)),
      m_(pop.size()),
      nutch_(policy == FreshPolicy::nutch_adaptive),
      vector_words_(detail::avx512_pass_available()),
      total_(cfg.burn_in + cfg.epochs),
      rates_(plan.rates),
      // (With a keyed pass the state lives with the pass: age_ holds what a score function sees.)
      age_(m_),
      changes_(keyed ? 0 : m_),
      want_(keyed ? 0 : m_),
      crawled_(m_),
      eligible_(m_),
      schedule_(nutch_ && !keyed ? m_ : 0),
      due_(nutch_ ? m_ : 0),
      key_(m_),
      masked_(cfg.host_cap || nutch_ ? m_ : 0),
      carry_(policy == FreshPolicy::index && !cfg.learn && !user && !keyed ? m_ : 0),
      seen_changes_(user ? m_ : 0),
      user_scores_(user ? m_ : 0),
      layer_(comm, lo_, m_, std::size_t(shard.total), threads) {
  CE_EXPECTS(!keyed || !cfg.learn, "internal: a keyed freshness pass runs without --learn");
  if (cfg.learn) {
    learned_ = plan.params;
    belief_.resize(m_);
    observed_.resize(m_);
  }
  add_ = [this](const double* s) {
    const double norm = plan_.norm;
    sum_fresh_ += s[0] * norm, sum_pen_ += s[1] * norm, sum_cost_ += s[2];
    if (k_ == 0)
      out_->epoch_freshness.push_back(s[0] * norm), out_->epoch_penalty.push_back(s[1] * norm);
  };
}

void FreshRun::replicate(uint32_t k, const detail::EpochTicks& ticks, FreshRolloutOutput& out) {
  k_ = k;
  r_ = cfg_.first_replication + k;  // (the draws' replication index)
  out_ = &out;
  saturated_ +=
      keyed_ ? keyed_->start(r_)
             : start_replication(pop_, plan_, cfg_, r_, threads_, age_, changes_, want_, schedule_);
  std::fill(carry_.begin(), carry_.end(), PeriodCarry{});
  for (LearnedHistory& o : observed_) o.reset();
  sum_fresh_ = sum_pen_ = sum_cost_ = 0.0;
  layer_.begin_sums(3, kFoldChunk, cfg_.epochs, false);
  detail::run_epochs(*this, cfg_.burn_in, total_, ticks);
  if (ticks.stop) ticks.stop->throw_if_stopped();
  const double h = double(cfg_.epochs);
  out.freshness.push_back(sum_fresh_ / h);
  out.penalty.push_back(sum_pen_ / h);
  out.cost.push_back(sum_cost_ / h);
  if (cfg_.learn && k == 0) {
    const double T = cfg_.epoch_length;
    std::vector<double> rate(m_);
    for (std::size_t j = 0; j < m_; ++j)
      rate[j] = observed_[j].estimate(pop_.complete[j], T, double(total_) * T, cfg_.prior);
    out.learned_rate = std::move(rate);  // (this process's rows: no rank holds every source's)
  }
}

void FreshRun::pass(uint64_t t) {
  if (keyed_) return keyed_pass(t);
  if (t > 0) step(uint32_t(t - 1));
  if (t == total_) return;
  if (cfg_.learn && t % cfg_.relearn == 0) relearn(t);
  if (user_)
    user_scores(t);
  else
    score_rows(pop_, cfg_, policy_, believed(), rates_, r_, uint32_t(t), threads_, age_, changes_,
               want_, schedule_, carry_, due_, key_);
}

void FreshRun::select(uint64_t t) {
  select_layer(key_, plan_, cfg_, lo_, threads_, layer_, nutch_ ? due_.data() : nullptr, eligible_,
               masked_, crawled_);
  if (!observer_) return;
  mine_.clear();
  for (std::size_t j = 0; j < m_; ++j)
    if (crawled_[j]) mine_.push_back(lo_ + j);
  const std::vector<uint64_t> ids = layer_.gather(mine_);
  crawled_ids_.assign(ids.begin(), ids.end());
  (*observer_)(r_, t, crawled_ids_);
}

// A user's scores for epoch t. Under MPI a function that fails on one rank fails the run on every
// rank (the others would wait for it at the selection's collectives).
void FreshRun::user_scores(uint64_t t) {
  const auto score = [&] {
    if (!keyed_)  // (a keyed pass wrote what the function sees)
      for (std::size_t j = 0; j < m_; ++j) seen_changes_[j] = pop_.complete[j] ? changes_[j] : 0u;
    user_rows(*user_, m_, r_, t, threads_, lo_, user_comm_, age_, seen_changes_,
              cfg_.learn ? belief_.data() : nullptr, user_scores_, key_);
  };
  if (!user_comm_) return score();
  std::exception_ptr failure;
  try {
    score();
  } catch (...) {
    failure = std::current_exception();
  }
  if (!user_comm_->any(failure != nullptr)) return;
  if (failure) std::rethrow_exception(failure);
  throw InputError("a score function failed on another process (its message is that process's)");
}

// Re-estimates every rate from what the crawls revealed, and the plan's rates with them (a solve
// over every rank's estimates, each rank summing its own).
void FreshRun::relearn(uint64_t t) {
  const double T = cfg_.epoch_length;
  const double elapsed = double(t) * T;
#pragma omp parallel for if (threads_ > 1) num_threads(threads_) schedule(static)
  for (std::size_t j = 0; j < m_; ++j) {
    belief_[j] = observed_[j].estimate(pop_.complete[j], T, elapsed, cfg_.prior);
    learned_[j] = derive_fresh_params(belief_[j], pop_.importance[j], pop_.cost[j], T);
  }
  if (rate_based(policy_)) {
    CE_EXPECTS(bool(replan_), "internal: the learning variant needs its replanning");
    FreshColumns believed_columns = FreshColumns::of(pop_, 0, m_);
    believed_columns.rate = belief_.data();
    rates_ = replan_(believed_columns);
  }
}

// One launch of the keyed pass: epoch t - 1's crawls applied and its sums into the layer's chunks,
// then epoch t's keys (or what a score function sees, and its scores).
void FreshRun::keyed_pass(uint64_t t) {
  FreshKeyedEpoch e;
  e.replication = r_;
  e.prev_epoch = uint32_t(t - 1);
  e.epoch = uint32_t(t);
  e.apply = t > 0;
  e.score = !user_ && t < total_;
  e.observe = user_ && t < total_;
  saturated_ += keyed_->run(e, crawled_.data(), layer_.sums(), key_.data(),
                            nutch_ ? due_.data() : nullptr, age_.data(), seen_changes_.data());
  if (e.observe) user_scores(t);
}

// Epoch `epoch`'s crawls applied, and every row's sampled epoch: rewards and transitions, summed
// per chunk (the shard starts on a chunk's boundary).
void FreshRun::step(uint32_t epoch) {
  const std::size_t chunks = layer_.chunks();
  double* const chunk_fresh = layer_.sums();
  double* const chunk_pen = chunk_fresh + chunks;
  double* const chunk_cost = chunk_pen + chunks;
  const std::vector<FreshParams>& params = plan_.params;
  const bool coin = coin_policy(policy_);
  uint64_t cut = 0;
#pragma omp parallel for if (threads_ > 1) num_threads(threads_) schedule(dynamic, 1) \
    reduction(+ : cut)
  for (std::size_t c = 0; c < chunks; ++c) {
    double f = 0.0, pen = 0.0, cost = 0.0;
    const std::size_t chunk_end = std::min(m_, (c + 1) * kFoldChunk);
    // Block 0 of each source's change stream, kArrivalBlock sources at a time (eight per AVX-512
    // instruction where the CPU has it): most epochs show no change in the first word
    // (plan.quiet) and need no more (fresh_step_drawn).
    uint32_t words[4][detail::kArrivalBlock];
    for (std::size_t b = c * kFoldChunk; b < chunk_end; b += detail::kArrivalBlock) {
      const std::size_t count = std::min(detail::kArrivalBlock, chunk_end - b);
      detail::first_stream_blocks(Stream::changes, cfg_.seed, pop_.first + b, count, epoch, r_,
                                  vector_words_, words);
      for (std::size_t q = 0; q < count; ++q) {
        const std::size_t j = b + q;
        if (crawled_[j]) {
          // What the crawl reveals: for an IO source, whether it changed over the interval.
          if (cfg_.learn && !pop_.complete[j] && age_[j] > 0)
            observed_[j].add(age_[j], changes_[j] > 0);
          if (nutch_) nutch_crawled(changes_[j] > 0, epoch, cfg_.nutch_max, &schedule_[j]);
          cost += pop_.cost[j];
        }
        const Words4 first{{words[0][q], words[1][q], words[2][q], words[3][q]}};
        const FreshEpoch e = fresh_step_drawn(crawled_[j] != 0, pop_.complete[j] != 0, coin,
                                              rates_.p.empty() ? 0.0 : rates_.p[j], params[j],
                                              plan_.quiet[j], first, cfg_.seed, r_, pop_.first + j,
                                              epoch, &age_[j], &changes_[j], &want_[j]);
        f += e.fresh;
        pen += e.penalty;
        cut += e.saturated;
        if (cfg_.learn && pop_.complete[j]) observed_[j].see(e.added);
      }
    }
    chunk_fresh[c] = f, chunk_pen[c] = pen, chunk_cost[c] = cost;
  }
  saturated_ += cut;
}

FreshRolloutOutput run_fresh(const FreshPopulation& pop, const FreshConfig& cfg, FreshPolicy policy,
                             const FreshPlan& plan, const FreshReplan& replan,
                             const FreshObserver* observer, Comm* processes,
                             const FreshScoreFn* user, detail::FreshKeyedPass* keyed) {
  Comm& comm = processes ? *processes : solo_comm();
  CE_EXPECTS(!user || policy == FreshPolicy::index,
             "internal: a freshness score function runs as the index policy's plan");
  const auto t0 = std::chrono::steady_clock::now();
  const Shard shard = fresh_shard(pop, comm);
  const std::size_t n = std::size_t(shard.total);
  const bool sharded = comm.size() > 1;
  // (The observer's ids are 32-bit.)
  CE_EXPECTS(!observer || n <= kMaxLocalSources,
             "internal: a freshness observer sees at most 4,294,967,294 sources");
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
  std::atomic<uint64_t> done{0};
  // (Under MPI an interrupt does not stop one rank alone: the others would wait for it.)
  const detail::EpochTicks ticks{&done, &progress, sharded ? nullptr : &progress};
  FreshRun run(pop, cfg, policy, plan, replan, observer, comm, user, shard, threads, keyed);
  for (uint32_t k = 0; k < cfg.replications; ++k) run.replicate(k, ticks, out);
  out.saturated = sharded ? comm.sum(run.saturated()) : run.saturated();
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace

FreshRolloutOutput fresh_epochs(const FreshPopulation& pop, const FreshConfig& cfg,
                                FreshPolicy policy, const FreshPlan& plan,
                                const FreshReplan& replan, const FreshObserver* observer,
                                Comm* processes, const FreshScoreFn* user) {
  return run_fresh(pop, cfg, policy, plan, replan, observer, processes, user, nullptr);
}

FreshRolloutOutput fresh_keyed_epochs(const FreshPopulation& pop, const FreshConfig& cfg,
                                      FreshPolicy policy, const FreshPlan& plan,
                                      detail::FreshKeyedPass& pass, const FreshObserver* observer,
                                      Comm* processes, const FreshScoreFn* user) {
  // (Agreed on: a rank that refused alone would leave the others waiting at the selection.)
  collectively(processes ? *processes : solo_comm(), [&] {
    if (const std::string why = fresh_keyed_refusal(pop, cfg); !why.empty()) throw InputError(why);
  });
  return run_fresh(pop, cfg, policy, plan, FreshReplan(), observer, processes, user, &pass);
}

}  // namespace crawleval
