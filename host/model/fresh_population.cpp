// Freshness populations in memory: their columns, checks, an MPI rank's rows, and the synthetic
// population (their files: host/io/fresh_csv.cpp).
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "base/progress.hpp"
#include "crawleval/base/comm.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/model/change_rate.hpp"
#include "crawleval/model/fresh_population.hpp"
#include "crawleval/model/problem.hpp"
#include "crawleval/model/rng.hpp"

namespace crawleval {

void FreshPopulation::resize(std::size_t n) {
  id.resize(n), host.resize(n), importance.resize(n), rate.resize(n);
  rate_lo.resize(n, std::numeric_limits<double>::quiet_NaN());
  rate_hi.resize(n, std::numeric_limits<double>::quiet_NaN());
  cost.resize(n, 1.0), complete.resize(n), constrained.resize(n);
  observations.resize(n), changes.resize(n);
}

FreshPopulation fresh_rows(const FreshPopulation& pop, uint64_t first, uint64_t count) {
  const std::size_t n = pop.size();
  CE_EXPECTS(first <= n && count <= n - first, "internal: rows beyond the population");
  FreshPopulation out;
  const auto cut = [&](auto& to, const auto& from) {
    if (from.size() == n)
      to.assign(from.begin() + std::ptrdiff_t(first), from.begin() + std::ptrdiff_t(first + count));
  };
  cut(out.id, pop.id), cut(out.host, pop.host), cut(out.importance, pop.importance);
  cut(out.rate, pop.rate), cut(out.rate_lo, pop.rate_lo), cut(out.rate_hi, pop.rate_hi);
  cut(out.cost, pop.cost), cut(out.complete, pop.complete), cut(out.constrained, pop.constrained);
  cut(out.observations, pop.observations), cut(out.changes, pop.changes), cut(out.line, pop.line);
  out.origin = pop.origin;
  out.first = pop.first + first;
  return out;
}

bool FreshPopulation::unit_costs() const {
  return std::all_of(cost.begin(), cost.end(), [](double c) { return c == 1.0; });
}

namespace {

std::string source_at(const FreshPopulation& pop, std::size_t i, const char* field) {
  std::string s = printable(pop.origin, 256);
  if (!pop.line.empty()) return s + ":" + std::to_string(pop.line[i]) + ": field '" + field + "'";
  return s + ": source " + std::to_string(pop.id[i]) + ": field '" + field + "'";
}

template <class T>
void permute(std::vector<T>& v, const std::vector<std::size_t>& order) {
  if (v.empty()) return;
  std::vector<T> out(order.size());
  for (std::size_t k = 0; k < order.size(); ++k) out[k] = v[order[k]];
  v.swap(out);
}

}  // namespace

void sort_fresh_by_id(FreshPopulation& pop) {
  const std::size_t n = pop.size();
  bool sorted = true;
  for (std::size_t i = 1; i < n && sorted; ++i) sorted = pop.id[i - 1] < pop.id[i];
  if (sorted) return;
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return pop.id[a] < pop.id[b]; });
  for (std::size_t k = 1; k < n; ++k)
    if (pop.id[order[k]] == pop.id[order[k - 1]]) {
      const std::size_t a = order[k - 1], b = order[k];
      throw InputError(source_at(pop, b, "id") + ": id " + std::to_string(pop.id[b]) +
                       " already used" +
                       (pop.line.empty() ? " in row " + std::to_string(a)
                                         : " on line " + std::to_string(pop.line[a])));
    }
  permute(pop.id, order), permute(pop.host, order), permute(pop.importance, order);
  permute(pop.rate, order), permute(pop.rate_lo, order), permute(pop.rate_hi, order);
  permute(pop.cost, order), permute(pop.complete, order), permute(pop.constrained, order);
  permute(pop.observations, order), permute(pop.changes, order), permute(pop.line, order);
}

void validate_fresh(const FreshPopulation& pop) {
  CE_EXPECTS(pop.size() > 0, printable(pop.origin, 256) + ": no sources");
  const bool intervals = pop.rate_lo.size() == pop.size() && pop.rate_hi.size() == pop.size();
  for (std::size_t i = 0; i < pop.size(); ++i) {
    const auto bad = [&](const char* field, const std::string& what, double v) {
      throw InputError(source_at(pop, i, field) + ": " + what + ", got " + shown_number(v));
    };
    if (!(pop.rate[i] >= 0.0) || !std::isfinite(pop.rate[i]))
      bad("rate", "must be a finite number >= 0", pop.rate[i]);
    if (!(pop.importance[i] >= 0.0) || !std::isfinite(pop.importance[i]))
      bad("importance", "must be a finite number >= 0", pop.importance[i]);
    if (!(pop.cost[i] > 0.0) || !std::isfinite(pop.cost[i]))
      bad("cost", "must be a finite number > 0", pop.cost[i]);
    if (!std::isfinite(pop.importance[i] / pop.cost[i]))
      bad("cost", "importance / cost overflows", pop.cost[i]);
    // The interval, where given (NaN: unknown; inf: unbounded above).
    if (!intervals) continue;
    if (!std::isnan(pop.rate_lo[i]) && !(pop.rate_lo[i] >= 0.0 && pop.rate_lo[i] <= pop.rate[i]))
      bad("rate_lo", "must be between 0 and the rate", pop.rate_lo[i]);
    if (!std::isnan(pop.rate_hi[i]) && !(pop.rate_hi[i] >= pop.rate[i]))
      bad("rate_hi", "must be at least the rate", pop.rate_hi[i]);
  }
}

FreshPopulation synthetic_fresh_population(uint64_t n, uint64_t seed, bool estimate) {
  return synthetic_fresh_slice(n, seed, estimate, 0, n);
}

std::string synthetic_fresh_origin(uint64_t n, uint64_t seed, uint64_t first, uint64_t count) {
  std::string origin =
      "synthetic-fresh(n=" + std::to_string(n) + ", seed=" + std::to_string(seed) + ")";
  if (first != 0 || count != n)
    origin += " slice " + std::to_string(first) + ":" + std::to_string(count);
  return origin;
}

void check_fresh_slice(uint64_t n, uint64_t seed, uint64_t first, uint64_t count, uint64_t held) {
  CE_EXPECTS(n >= 1, "synthetic freshness population: n must be >= 1");
  CE_EXPECTS(n <= kMaxGlobalId, "synthetic freshness population: at most 2^63 sources");
  CE_EXPECTS(count >= 1 && first <= n && count <= n - first,
             "synthetic freshness population: the slice must lie inside it");
  held = std::min(held, count);
  if (held > kMaxLocalSources)
    throw InputError(synthetic_fresh_origin(n, seed, first, count) + ": " + std::to_string(held) +
                     " sources" + (held < count ? " in this process's part" : "") +
                     "; one process holds at most 4,294,967,294 freshness sources: run more MPI "
                     "ranks (each holds its part), or evaluate a --slice FIRST:COUNT");
}

FreshPopulation synthetic_fresh_slice(uint64_t n, uint64_t seed, bool estimate, uint64_t first,
                                      uint64_t count, bool progress) {
  check_fresh_slice(n, seed, first, count);
  FreshPopulation pop;
  pop.origin = synthetic_fresh_origin(n, seed, first, count);
  pop.first = first;
  pop.resize(count);
  // Hosts: Zipf-like sizes. Host h gets the sources whose uniform draw falls in its share; we
  // draw the host of each source as floor(H * u^2) over H = max(1, n / 20) hosts, which gives a
  // few large hosts and many small ones. A host is constrained with probability 0.3.
  const uint64_t hosts = std::max<uint64_t>(1, n / 20);
  // Every source draws from its own stream and writes its own row: the threads (this process's
  // share of the machine's cores) give the same population as one. The rate estimates dominate:
  // 18 s per 1e6 sources on one core of the 2-core VM, where the rollouts that follow take 1-3 s.
  const int threads = count >= 4096 ? default_threads_per_rank() : 1;
  // Rows done, counted per 1024 by every thread and shown by the first; a stop asked by a monitor
  // skips the rows left (then Interrupted).
  // (Only when asked: a Progress reports to an installed monitor whatever it is told.)
  const bool report = progress && estimate;
  detail::Progress shown(report, "generating the synthetic sources", count, "sources");
  std::atomic<uint64_t> done{0};
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<double> interval;
    std::vector<uint8_t> changed;
    const bool reports = report && omp_get_thread_num() == 0;
#pragma omp for schedule(static, 1024)
    for (uint64_t i = 0; i < count; ++i) {
      if ((i & 1023) == 0 && i > 0) {
        const uint64_t so_far = done.fetch_add(1024, std::memory_order_relaxed) + 1024;
        if (reports) shown.update(so_far);
      }
      if (report && shown.stopped()) continue;
      const uint64_t id = first + i;
      DrawStream d(seed, id, 0, 0, Stream::fresh_synthetic);
      const uint32_t w_host = d.next_word();
      double u_host = uniform(w_host);
      if (hosts > (uint64_t(1) << 31)) {
        // One word has 2^32 values, and H u^2 would miss most hosts near H beyond about 2^31 of
        // them (N above 4.3e10): 32 more bits from a stream of their own (the population's other
        // draws stay where they were), which resolve every host up to H = 2^52 (N about 9e16).
        DrawStream fine(seed, id, 2, 0, Stream::fresh_synthetic);
        u_host = (double(w_host) + fine.next_uniform()) * 2.3283064365386962890625e-10;
      }
      const uint64_t h = std::min<uint64_t>(hosts - 1, uint64_t(double(hosts) * u_host * u_host));
      const double u_rate1 = d.next_uniform(), u_rate2 = d.next_uniform();
      const double u_imp = d.next_uniform(), u_co = d.next_uniform();
      // Change rate per day: log-normal with median 0.25 and sigma 1.2 (from about one change a
      // month to several a day), by Box-Muller.
      const double z = std::sqrt(-2.0 * std::log(u_rate1)) * std::cos(6.283185307179586 * u_rate2);
      const double rate = 0.25 * std::exp(1.2 * z);
      // Importance: integer scores, Pareto with tail index 1.5 (a few very important pages).
      const double importance = std::floor(std::pow(u_imp, -1.0 / 1.5));
      pop.id[i] = id;
      pop.host[i] = h;
      pop.importance[i] = importance;
      pop.complete[i] = u_co < 0.04 ? 1 : 0;                         // ~4% with sitemaps
      DrawStream host_draw(seed, h, 1, 0, Stream::fresh_synthetic);  // per host
      pop.constrained[i] = host_draw.next_uniform() < 0.3 ? 1 : 0;
      pop.cost[i] = 1.0;
      if (!estimate) {
        pop.rate[i] = rate;
        continue;
      }
      // 98 crawls about a day apart (0.5 to 1.5 days), each showing whether the page changed.
      interval.clear(), changed.clear();
      double total = 0.0;
      for (int k = 0; k < 98; ++k) {
        const double t = 0.5 + d.next_uniform();
        interval.push_back(t);
        changed.push_back(d.next_uniform() < -std::expm1(-rate * t) ? 1 : 0);
        total += t;
      }
      RateEstimate e;
      if (pop.complete[i]) {
        // Every change seen: a Poisson count over the whole time.
        double s = 0.0;
        uint32_t k = 0;
        for (;;) {
          s -= std::log(d.next_uniform()) / rate;
          if (s >= total) break;
          ++k;
        }
        e = estimate_complete(double(k), total);
        e.observations = 98;
      } else {
        e = estimate_incomplete(interval.data(), changed.data(), interval.size());
      }
      pop.rate[i] = e.rate;
      pop.rate_lo[i] = e.lo;
      pop.rate_hi[i] = e.hi;
      pop.observations[i] = e.observations;
      pop.changes[i] = e.changes;
    }
  }
  if (report) shown.throw_if_stopped();
  return pop;
}

}  // namespace crawleval
