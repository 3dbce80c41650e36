// Populations of the freshness model (freshness.hpp): the CSV format, the PoliteCrawling importer
// and a synthetic population with that dataset's shape.
#pragma once

#include <cstdint>
#include <functional>
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

/// Reads a freshness population CSV: a header naming `rate` and `importance` and optionally `id`
/// (default the row number), `host` (default: a host of its own, the source's id), `complete`,
/// `constrained` (0/1, default 0), `cost` (default 1), `rate_lo`, `rate_hi`, `observations`,
/// `changes`. InputError names the file, line and field.
FreshPopulation read_fresh_csv(const std::string& path);
FreshPopulation parse_fresh_csv(const std::string& data, const std::string& origin);

/// Writes every column (shortest round-trip text: reads back bit for bit); an OutputFile.
void write_fresh_csv(const FreshPopulation& pop, const std::string& path);

/// Rows [first, first + count) of pop with their draws (the result's first is pop.first + first)
/// and its origin: what an MPI rank holds of a run over pop (shard_of's part; fresh_engine.hpp).
/// Columns that pop does not hold stay empty.
FreshPopulation fresh_rows(const FreshPopulation& pop, uint64_t first, uint64_t count);

/// Checks every source (InputError naming the source's id and field).
void validate_fresh(const FreshPopulation& pop);

/// Stores the population in ascending id order; a repeated id is an InputError.
void sort_fresh_by_id(FreshPopulation& pop);

/// The PoliteCrawling dataset (Kolobov et al., SIGIR 2019 / NeurIPS 2019): a directory with the
/// tab-separated files
///   url_urlid_hostid.txt              URL, URL_ID, Host_ID
///   host_hostid_isconstrained.txt     Host_URL, Host_ID, 1 if the host is politeness-constrained
///   urlid_imp.txt                     URL_ID, importance
///   urlid_offset_history.txt          URL_ID, first-crawl offset (days), [[interval, changed],
///   ...] urlid_chrate_compl_obs_hist.txt   URL_ID, Poisson change rate (completely observed URLs)
/// Each file is streamed line by line: memory holds the per-URL columns (about 115 bytes per URL
/// measured), never a whole file. Rates are estimated from the histories (change_rate.hpp);
/// completely observed URLs take the file's rate, with the Poisson interval of rate x observed time
/// changes. The time unit is the day.
struct ImportOptions {
  uint64_t max_bad_rows = 0;  ///< bad rows tolerated (skipped, reported) before failing
  std::function<void(const std::string&)> progress;  ///< progress lines (null: none)
  std::function<void(const std::string&)> warn;      ///< each skipped row's message
};
struct ImportReport {
  uint64_t urls = 0, hosts = 0, constrained_hosts = 0, histories = 0, complete = 0;
  uint64_t bad_rows = 0;
  uint64_t without_importance = 0, without_history = 0;  ///< URLs dropped for lack of them
};
FreshPopulation import_politecrawling(const std::string& dir, const ImportOptions& options,
                                      ImportReport* report);

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
FreshPopulation synthetic_fresh_slice(uint64_t n, uint64_t seed, bool estimate, uint64_t first,
                                      uint64_t count);

}  // namespace crawleval
