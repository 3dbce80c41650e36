// Populations of the freshness model in files: the CSV format and the PoliteCrawling importer.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "crawleval/model/fresh_population.hpp"

namespace crawleval {

/// Reads a freshness population CSV: a header naming `rate` and `importance` and optionally `id`
/// (default the row number), `host` (default: a host of its own, the source's id), `complete`,
/// `constrained` (0/1, default 0), `cost` (default 1), `rate_lo`, `rate_hi`, `observations`,
/// `changes`. InputError names the file, line and field.
FreshPopulation read_fresh_csv(const std::string& path);
FreshPopulation parse_fresh_csv(const std::string& data, const std::string& origin);

/// Writes every column (shortest round-trip text: reads back bit for bit); an OutputFile.
void write_fresh_csv(const FreshPopulation& pop, const std::string& path);

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

}  // namespace crawleval
