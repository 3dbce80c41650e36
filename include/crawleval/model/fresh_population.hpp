// Populations of the freshness model (freshness.hpp) in memory: the columns, their checks, an MPI
// rank's rows and a synthetic population with the PoliteCrawling dataset's shape (their files:
// fresh_io.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace crawleval {

/// Sources of the freshness model as columns, in ascending id order.
struct FreshPopulation {
  std::vector<uint64_t> id;
  std::vector<uint64_t> host;          ///< host id (politeness caps apply per host)
  std::vector<double> importance;      ///< w >= 0
  std::vector<double> rate;            ///< change rate D >= 0, changes per unit time
  std::vector<double> rate_lo;         ///< 95% interval of the rate (NaN: unknown)
  std::vector<double> rate_hi;         ///<   (inf: unbounded)
  std::vector<double> cost;            ///< crawl cost C > 0
  std::vector<uint8_t> complete;       ///< 1: every change is observed (CO), 0: only at crawls (IO)
  std::vector<uint8_t> constrained;    ///< 1: the host imposes a politeness cap
  std::vector<uint32_t> observations;  ///< crawl intervals in the history the rate came from
  std::vector<uint32_t> changes;       ///< of which showed a change
  std::vector<uint64_t> line;          ///< the source's line in its file (empty when not from one)
  // rate_lo, rate_hi, observations, changes and line may be empty (not held): `fresh run` drops
  // them after its checks, since no engine reads them.
  std::string origin;
  /// The global position of row 0: row i draws its changes, coins and start as source first + i
  /// (rng.hpp's 64-bit draw key). 0 except for a slice of a larger synthetic population, whose
  /// rows draw as they do in the whole, and for an MPI rank's part of a run (fresh_rows); a CSV
  /// has no field for it.
  uint64_t first = 0;

  std::size_t size() const { return id.size(); }
  void resize(std::size_t n);
  bool unit_costs() const;
};

/// Rows [first, first + count) of pop with their draws (the result's first is pop.first + first)
/// and its origin: what an MPI rank holds of a run over pop (shard_of's part; fresh_engine.hpp).
/// Columns that pop does not hold stay empty.
FreshPopulation fresh_rows(const FreshPopulation& pop, uint64_t first, uint64_t count);

/// Checks every source (InputError naming the source's id and field).
void validate_fresh(const FreshPopulation& pop);

/// Stores the population in ascending id order; a repeated id is an InputError.
void sort_fresh_by_id(FreshPopulation& pop);

/// A synthetic population with the dataset's shape (docs/freshness.md says how it is generated):
/// deterministic in (n, seed); row i of it depends only on (n, seed, i). `estimate`: rates
/// estimated from simulated 14-week daily histories (with intervals), as the importer does;
/// otherwise the true rates (and no interval).
FreshPopulation synthetic_fresh_population(uint64_t n, uint64_t seed, bool estimate = true);

/// Sources [first, first + count) of synthetic_fresh_population(n, seed, estimate), with their
/// global ids (pop.first = first): n up to 2^63, count at most 2^32 - 2 (what one process holds;
/// under MPI each rank generates its own part of the run alone). InputError when
/// synthetic_fresh_slice(n, seed, ., first, count) cannot be held: count (or `held`, the rows one
/// process generates of it: an MPI rank's part) above one process's 4,294,967,294 sources.
void check_fresh_slice(uint64_t n, uint64_t seed, uint64_t first, uint64_t count,
                       uint64_t held = ~uint64_t(0));
/// The origin synthetic_fresh_slice(n, seed, ., first, count) names its rows by.
std::string synthetic_fresh_origin(uint64_t n, uint64_t seed, uint64_t first, uint64_t count);
/// `progress`: a progress line while it runs (stderr on a terminal, or the embedding's RunMonitor,
/// which may stop it: Interrupted), since the rate estimates take about 18 s per 1e6 sources and
/// core.
FreshPopulation synthetic_fresh_slice(uint64_t n, uint64_t seed, bool estimate, uint64_t first,
                                      uint64_t count, bool progress = false);

}  // namespace crawleval
