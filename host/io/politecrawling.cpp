// The PoliteCrawling importer (fresh_io.hpp): streams the dataset's five tab-separated files into
// a freshness population, estimating each URL's change rate from its history.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "crawleval/base/error.hpp"
#include "crawleval/base/monitor.hpp"
#include "crawleval/io/fresh_io.hpp"
#include "crawleval/model/change_rate.hpp"
#include "io/text_fields.hpp"

namespace crawleval {

namespace {

using text::Location;
using text::shown;
using text::trim;

/// Reads a file line by line (no line is kept after the next is read), reporting progress about
/// once a second, and counting bad rows against the budget of ImportOptions. Every read error
/// fails the import (it is never taken for the end of the file), and no line may grow beyond
/// kMaxImportLine (a file without line ends cannot fill the memory).
class LineReader {
 public:
  static constexpr std::size_t kMaxImportLine = std::size_t(64) << 20;

  LineReader(const std::string& path, const ImportOptions& options, uint64_t* bad_rows)
      : path_(path), options_(options), bad_rows_(bad_rows) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw InputError(printable(path, 256) + ": cannot open: " + std::strerror(errno));
    struct stat st;
    size_ = ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode) ? uint64_t(st.st_size) : 0;
    last_ = std::chrono::steady_clock::now();
    buf_.resize(kChunk);
  }
  ~LineReader() {
    if (fd_ >= 0) ::close(fd_);
  }
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  /// The next non-empty line without its end of line; false at the end of the file.
  bool next(std::string_view* line) {
    for (;;) {
      std::string_view raw;
      if (!raw_line(&raw)) return false;
      ++line_no_;
      read_ += raw.size() + 1;
      if ((line_no_ & 0xFFFF) == 0) {
        check_interrupt();
        const auto now = std::chrono::steady_clock::now();
        if (options_.progress && now - last_ > std::chrono::seconds(1)) {
          last_ = now;
          options_.progress(printable(path_, 256) + ": " + std::to_string(line_no_) + " lines" +
                            (size_ ? " (" + std::to_string(100 * read_ / size_) + "%)" : ""));
        }
      }
      std::string_view l = trim(raw);
      if (line_no_ == 1 && l.size() >= 3 && l.substr(0, 3) == "\xEF\xBB\xBF") l.remove_prefix(3);
      if (l.empty()) continue;
      *line = l;
      return true;
    }
  }
  Location where() const { return Location{path_, line_no_}; }

  /// Skips the current row if the budget of bad rows allows it (warns), else throws.
  void bad(const InputError& e) {
    ++*bad_rows_;
    if (*bad_rows_ > options_.max_bad_rows) {
      if (options_.max_bad_rows == 0) throw e;
      throw InputError(std::string(e.what()) + " (bad row " + std::to_string(*bad_rows_) +
                       ", more than --max-bad-rows " + std::to_string(options_.max_bad_rows) + ")");
    }
    if (options_.warn) options_.warn(std::string(e.what()) + " (row skipped)");
  }

 private:
  std::string path_;
  const ImportOptions& options_;
  uint64_t* bad_rows_;
  static constexpr std::size_t kChunk = std::size_t(1) << 20;

  /// The next line (without '\n') in buf_[begin_, end_), reading more as needed; false at the end.
  bool raw_line(std::string_view* out) {
    for (;;) {
      const char* nl =
          static_cast<const char*>(std::memchr(buf_.data() + scan_, '\n', end_ - scan_));
      const std::size_t stop = nl ? std::size_t(nl - buf_.data()) : end_;
      if (stop - begin_ > kMaxImportLine)
        throw InputError(Location{path_, line_no_ + 1}.here() + ": a line longer than " +
                         std::to_string(kMaxImportLine >> 20) + " MiB (not a dataset file?)");
      if (nl) {
        *out = std::string_view(buf_.data() + begin_, stop - begin_);
        begin_ = scan_ = stop + 1;
        return true;
      }
      scan_ = end_;
      if (eof_) {
        if (begin_ == end_) return false;
        *out = std::string_view(buf_.data() + begin_, end_ - begin_);  // no final line end
        begin_ = scan_ = end_;
        return true;
      }
      // Move the partial line to the front, grow if it fills the buffer, read more.
      if (begin_ > 0) {
        std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
        end_ -= begin_, scan_ -= begin_, begin_ = 0;
      }
      if (end_ + kChunk > buf_.size()) buf_.resize(buf_.size() * 2);
      ssize_t got;
      do got = ::read(fd_, buf_.data() + end_, buf_.size() - end_);
      while (got < 0 && errno == EINTR);
      if (got < 0)
        throw InputError(printable(path_, 256) + ": read error after line " +
                         std::to_string(line_no_) + " (" + std::strerror(errno) + ")");
      if (got == 0) eof_ = true;
      end_ += std::size_t(got > 0 ? got : 0);
    }
  }

  int fd_ = -1;
  std::vector<char> buf_;
  std::size_t begin_ = 0, scan_ = 0, end_ = 0;
  bool eof_ = false;
  std::size_t line_no_ = 0;
  uint64_t size_ = 0, read_ = 0;
  std::chrono::steady_clock::time_point last_;
};

/// Splits at tabs, requiring at least `min_fields` fields.
void fields_of(std::string_view line, std::size_t min_fields, const Location& loc,
               const char* layout, std::vector<std::string_view>& fields) {
  text::split(line, '\t', fields);
  if (fields.size() < min_fields)
    throw InputError(loc.here() + ": expected " + std::to_string(min_fields) +
                     " tab-separated fields (" + layout + "), found " +
                     std::to_string(fields.size()));
}

/// Position of `id` in the sorted id column, or npos.
std::size_t find_id(const std::vector<uint64_t>& ids, uint64_t id) {
  const auto it = std::lower_bound(ids.begin(), ids.end(), id);
  return it != ids.end() && *it == id ? std::size_t(it - ids.begin()) : std::size_t(-1);
}

/// The history's pairs "[[1.10397, 0], [1.47311, 1], ...]" into intervals and change flags.
void parse_history(std::string_view t, const Location& loc, std::vector<double>& interval,
                   std::vector<uint8_t>& changed) {
  interval.clear(), changed.clear();
  t = trim(t);
  auto fail = [&](const std::string& what) {
    throw InputError(loc.at("history") + ": " + what + " in " + shown(t));
  };
  if (t.size() < 2 || t.front() != '[' || t.back() != ']') fail("expected [[interval, 0|1], ...]");
  std::string_view rest = trim(t.substr(1, t.size() - 2));
  while (!rest.empty()) {
    if (rest.front() != '[') fail("expected '['");
    const std::size_t close = rest.find(']');
    if (close == std::string_view::npos) fail("missing ']'");
    const std::string_view pair = rest.substr(1, close - 1);
    const std::size_t comma = pair.find(',');
    if (comma == std::string_view::npos) fail("expected a pair [interval, 0|1]");
    const double dt = text::parse_number(pair.substr(0, comma), loc, "history interval");
    if (!(dt > 0.0))
      throw InputError(loc.at("history interval") + ": must be > 0, got " +
                       shown(trim(pair.substr(0, comma))));
    const std::string_view flag = trim(pair.substr(comma + 1));
    if (flag != "0" && flag != "1")
      throw InputError(loc.at("history changed") + ": must be 0 or 1, got " + shown(flag));
    interval.push_back(dt);
    changed.push_back(flag == "1" ? 1 : 0);
    rest = trim(rest.substr(close + 1));
    if (!rest.empty()) {
      if (rest.front() != ',') fail("expected ',' between pairs");
      rest = trim(rest.substr(1));
      if (rest.empty()) fail("trailing ','");
    }
  }
}

/// Every non-empty line of a file, split at tabs into at least `min_fields` fields, handed to
/// body(line, fields, loc); an InputError from a row (or its field count) counts against the bad
/// rows (LineReader::bad).
template <class Body>
void for_each_row(const std::string& path, const ImportOptions& options, uint64_t* bad_rows,
                  std::size_t min_fields, const char* layout, Body&& body) {
  LineReader r(path, options, bad_rows);
  std::string_view line;
  std::vector<std::string_view> fields;
  while (r.next(&line)) {
    try {
      const Location loc = r.where();
      fields_of(line, min_fields, loc, layout, fields);
      body(line, fields, loc);
    } catch (const InputError& e) {
      r.bad(e);
    }
  }
}

}  // namespace

FreshPopulation import_politecrawling(const std::string& dir, const ImportOptions& options,
                                      ImportReport* report_out) {
  ImportReport report;
  const std::string base = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  const uint64_t none = std::numeric_limits<uint64_t>::max();

  // Hosts: id -> constrained, sorted by id.
  std::vector<std::pair<uint64_t, uint8_t>> hosts;
  {
    for_each_row(
        base + "host_hostid_isconstrained.txt", options, &report.bad_rows, 3,
        "Host_URL, Host_ID, Is_constrained",
        [&](std::string_view, const std::vector<std::string_view>& f, const Location& loc) {
          const uint64_t id = text::parse_uint(f[1], loc, "Host_ID");
          const std::string_view c = trim(f[2]);
          if (c != "0" && c != "1")
            throw InputError(loc.at("Is_constrained") + ": must be 0 or 1, got " + shown(c));
          hosts.emplace_back(id, c == "1" ? 1 : 0);
        });
  }
  std::sort(hosts.begin(), hosts.end());
  for (std::size_t k = 1; k < hosts.size(); ++k)
    if (hosts[k].first == hosts[k - 1].first)
      throw InputError(printable(base, 256) + "host_hostid_isconstrained.txt: Host_ID " +
                       std::to_string(hosts[k].first) + " appears twice");
  report.hosts = hosts.size();
  for (const auto& h : hosts) report.constrained_hosts += h.second;

  // URLs: the population's rows.
  FreshPopulation pop;
  pop.origin = base;
  {
    for_each_row(
        base + "url_urlid_hostid.txt", options, &report.bad_rows, 3, "URL, URL_ID, Host_ID",
        [&](std::string_view, const std::vector<std::string_view>& f, const Location& loc) {
          const uint64_t id = text::parse_uint(f[f.size() - 2], loc, "URL_ID");
          const uint64_t host = text::parse_uint(f[f.size() - 1], loc, "Host_ID");
          const auto it =
              std::lower_bound(hosts.begin(), hosts.end(), std::make_pair(host, uint8_t(0)));
          if (it == hosts.end() || it->first != host)
            throw InputError(loc.at("Host_ID") + ": host " + std::to_string(host) +
                             " is not in host_hostid_isconstrained.txt");
          pop.id.push_back(id);
          pop.host.push_back(host);
          pop.constrained.push_back(it->second);
        });
  }
  {
    // Sort by URL_ID (the other columns follow); a repeated URL_ID is an error of the file.
    std::vector<std::size_t> order(pop.id.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return pop.id[a] < pop.id[b]; });
    std::vector<uint64_t> id(order.size()), host(order.size());
    std::vector<uint8_t> constrained(order.size());
    for (std::size_t k = 0; k < order.size(); ++k) {
      id[k] = pop.id[order[k]], host[k] = pop.host[order[k]];
      constrained[k] = pop.constrained[order[k]];
      if (k && id[k] == id[k - 1])
        throw InputError(printable(base, 256) + "url_urlid_hostid.txt: URL_ID " +
                         std::to_string(id[k]) + " appears twice");
    }
    pop.id.swap(id), pop.host.swap(host), pop.constrained.swap(constrained);
  }
  const std::size_t n = pop.id.size();
  report.urls = n;
  pop.importance.assign(n, std::numeric_limits<double>::quiet_NaN());
  pop.rate.assign(n, std::numeric_limits<double>::quiet_NaN());
  pop.rate_lo.assign(n, std::numeric_limits<double>::quiet_NaN());
  pop.rate_hi.assign(n, std::numeric_limits<double>::quiet_NaN());
  pop.cost.assign(n, 1.0);
  pop.complete.assign(n, 0);
  pop.observations.assign(n, 0);
  pop.changes.assign(n, 0);
  std::vector<double> observed_time(n, 0.0);
  std::vector<uint8_t> has_history(n, 0);

  auto url_of = [&](std::string_view t, const Location& loc) {
    const uint64_t id = text::parse_uint(t, loc, "URL_ID");
    const std::size_t k = find_id(pop.id, id);
    if (k == std::size_t(-1))
      throw InputError(loc.at("URL_ID") + ": URL " + std::to_string(id) +
                       " is not in url_urlid_hostid.txt");
    return k;
  };
  {
    for_each_row(
        base + "urlid_imp.txt", options, &report.bad_rows, 2, "URL_ID, importance",
        [&](std::string_view, const std::vector<std::string_view>& f, const Location& loc) {
          const std::size_t k = url_of(f[0], loc);
          const double w = text::parse_number(f[1], loc, "importance");
          if (!(w >= 0.0))
            throw InputError(loc.at("importance") + ": must be >= 0, got " + shown(trim(f[1])));
          if (!std::isnan(pop.importance[k]))
            throw InputError(loc.at("URL_ID") + ": URL " + std::to_string(pop.id[k]) +
                             " already has an importance");
          pop.importance[k] = w;
        });
  }
  {
    std::vector<double> interval;
    std::vector<uint8_t> changed;
    for_each_row(
        base + "urlid_offset_history.txt", options, &report.bad_rows, 3, "URL_ID, offset, history",
        [&](std::string_view line, const std::vector<std::string_view>& f, const Location& loc) {
          const std::size_t k = url_of(f[0], loc);
          const double offset = text::parse_number(f[1], loc, "offset");
          if (!(offset >= 0.0))
            throw InputError(loc.at("offset") + ": must be >= 0, got " + shown(trim(f[1])));
          // The list may contain tabs only if the writer put them there: rejoin the rest.
          const std::string_view hist = line.substr(std::size_t(f[2].data() - line.data()));
          parse_history(hist, loc, interval, changed);
          if (has_history[k])
            throw InputError(loc.at("URL_ID") + ": URL " + std::to_string(pop.id[k]) +
                             " already has a history");
          has_history[k] = 1;
          ++report.histories;
          if (interval.empty()) return;  // nothing observed: as if there were no history
          const RateEstimate e =
              estimate_incomplete(interval.data(), changed.data(), interval.size());
          if (!has_finite_rate(e)) throw InputError(loc.at("history") + ": " + kNoFiniteRate);
          pop.rate[k] = e.rate, pop.rate_lo[k] = e.lo, pop.rate_hi[k] = e.hi;
          pop.observations[k] = e.observations, pop.changes[k] = e.changes;
          observed_time[k] = e.observed_time;
        });
  }
  {
    for_each_row(
        base + "urlid_chrate_compl_obs_hist.txt", options, &report.bad_rows, 2,
        "URL_ID, change rate",
        [&](std::string_view, const std::vector<std::string_view>& f, const Location& loc) {
          const std::size_t k = url_of(f[0], loc);
          const double rate = text::parse_number(f[1], loc, "change rate");
          if (!(rate >= 0.0))
            throw InputError(loc.at("change rate") + ": must be >= 0, got " + shown(trim(f[1])));
          if (pop.complete[k])
            throw InputError(loc.at("URL_ID") + ": URL " + std::to_string(pop.id[k]) +
                             " already has a complete-observation rate");
          pop.complete[k] = 1;
          pop.rate[k] = rate;
          if (observed_time[k] > 0.0) {
            const RateEstimate e = estimate_complete(rate * observed_time[k], observed_time[k]);
            pop.rate_lo[k] = e.lo, pop.rate_hi[k] = e.hi;
          } else {
            pop.rate_lo[k] = pop.rate_hi[k] = std::numeric_limits<double>::quiet_NaN();
          }
          ++report.complete;
        });
  }
  // Keep the URLs with an importance and a rate.
  std::size_t kept = 0;
  for (std::size_t k = 0; k < n; ++k) {
    if (std::isnan(pop.importance[k])) {
      ++report.without_importance;
      continue;
    }
    if (std::isnan(pop.rate[k])) {
      ++report.without_history;
      continue;
    }
    pop.id[kept] = pop.id[k], pop.host[kept] = pop.host[k];
    pop.importance[kept] = pop.importance[k], pop.rate[kept] = pop.rate[k];
    pop.rate_lo[kept] = pop.rate_lo[k], pop.rate_hi[kept] = pop.rate_hi[k];
    pop.complete[kept] = pop.complete[k], pop.constrained[kept] = pop.constrained[k];
    pop.observations[kept] = pop.observations[k], pop.changes[kept] = pop.changes[k];
    ++kept;
  }
  pop.resize(kept);
  (void)none;
  if (kept == 0)
    throw InputError(printable(base, 256) +
                     ": no URL has both an importance (urlid_imp.txt) and a history "
                     "(urlid_offset_history.txt or urlid_chrate_compl_obs_hist.txt)");
  if (report_out) *report_out = report;
  return pop;
}

}  // namespace crawleval
