// The host's available memory (include/crawleval/model/resources.hpp).
#include "crawleval/model/resources.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include <sys/resource.h>
#include <unistd.h>

#include "crawleval/base/error.hpp"
#include "crawleval/model/problem.hpp"

namespace crawleval {

namespace {

/// A number from a one-value file ("max" or missing: no limit).
std::size_t read_limit(const char* path) {
  std::ifstream in(path);
  std::string v;
  if (!(in >> v) || v == "max") return std::numeric_limits<std::size_t>::max();
  try {
    return std::size_t(std::stoull(v));
  } catch (...) {
    return std::numeric_limits<std::size_t>::max();
  }
}

}  // namespace

std::size_t available_memory() {
  std::size_t avail = std::numeric_limits<std::size_t>::max();
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::size_t kb;
  std::string unit;
  while (meminfo >> key >> kb) {
    std::getline(meminfo, unit);
    if (key == "MemAvailable:") {
      avail = kb * 1024;
      break;
    }
  }
  // cgroup v2, then v1: what the container may still use.
  for (const auto& [limit, usage] :
       {std::pair<const char*, const char*>{"/sys/fs/cgroup/memory.max",
                                            "/sys/fs/cgroup/memory.current"},
        {"/sys/fs/cgroup/memory/memory.limit_in_bytes",
         "/sys/fs/cgroup/memory/memory.usage_in_bytes"}}) {
    const std::size_t l = read_limit(limit);
    if (l == std::numeric_limits<std::size_t>::max()) continue;
    const std::size_t u = read_limit(usage);
    const std::size_t left = u == std::numeric_limits<std::size_t>::max() || u > l ? 0 : l - u;
    if (left < avail) avail = left;
    break;
  }
  // An address-space limit (ulimit -v, RLIMIT_AS): what the process may still map.
  struct rlimit as {};
  if (::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    std::size_t pages = 0;
    std::ifstream statm("/proc/self/statm");
    if (statm >> pages) {
      const std::size_t used = pages * std::size_t(::sysconf(_SC_PAGESIZE));
      const std::size_t left = used >= as.rlim_cur ? 0 : std::size_t(as.rlim_cur) - used;
      if (left < avail) avail = left;
    }
  }
  return avail;
}

void require_memory(double bytes, const std::string& what) {
  const std::size_t avail = available_memory();
  if (avail == std::numeric_limits<std::size_t>::max() || bytes <= double(avail)) return;
  char msg[160];
  std::snprintf(msg, sizeof msg, " needs %.1f GiB of memory; %.1f GiB are available",
                bytes / double(1ull << 30), double(avail) / double(1ull << 30));
  throw InputError(what + msg);
}

double engine_bytes_per_source(const std::vector<std::string>& policies, bool deterministic,
                               double budget_share) {
  double most = 0.0;
  for (const std::string& p : policies) {
    // Deterministic Whittle: x, the word and the selection's lists (16 B), and up to 6 B for the
    // live sources' copies beside the dormant ones (host/engine/cpu/dormant.hpp: 18 B per live
    // source and a bit per source, at most DormantSet::kMaxLiveShare of them: about 22% at M =
    // 1%, 58.8 B per source measured at 1e8 against 62 stated). From a budget of 2% of the
    // sources up, 8 B more of lists: there the window covers a boundary that swings between
    // crowded bins (window::spread_window, up to N/4 listed; at M/N = 10%, 1e7 sources, 400
    // epochs, 729 MiB measured against 683 MiB stated).
    const double b = p == "whittle" ? (deterministic ? (budget_share < 0.02 ? 22 : 30) : 13)
                     : p == "greedy" || p == "round_robin" ? 13
                     : p == "random"                       ? 21
                     : p == "static"                       ? 26
                                                           : 40;
    most = std::max(most, b);
  }
  return most;
}

double run_memory_bytes(uint64_t n, double bytes_per_source, double population, double problem,
                        bool bound) {
  const double policies = kRunFixedBytes + bytes_per_source * double(n);
  if (!bound) return policies;
  const double after =
      kBoundFixedBytes + (population + problem + kBoundWorkBytesPerSource) * double(n);
  return std::max(policies, after);
}

double population_bytes_per_source(const Population& pop) {
  if (pop.size() == 0) return 0.0;
  const double bytes =
      8.0 * double(pop.lambda.size() + pop.xi.size() + pop.mu.size() + pop.cost.size() +
                   pop.x0.size() + pop.id.size() + pop.line.size()) +
      4.0 * double(pop.expiry.size()) + double(pop.observe.size());
  return bytes / double(pop.size());
}

namespace {
/// Bytes in binary units a reader compares with /usr/bin/time's or top's: "144 MiB", "5.23 GiB".
std::string binary_size(double bytes) {
  char out[32];
  if (bytes < double(1ull << 30))
    std::snprintf(out, sizeof out, "%.0f MiB", bytes / double(1ull << 20));
  else
    std::snprintf(out, sizeof out, "%.2f GiB", bytes / double(1ull << 30));
  return out;
}
}  // namespace

std::string memory_estimate_line(double bytes, double bytes_per_source, uint64_t sources) {
  const std::size_t avail = available_memory();
  char msg[240];
  const int len = std::snprintf(
      msg, sizeof msg,
      "estimated peak about %s for %llu sources (%.0f bytes each while the policies run, and "
      "fixed parts)",
      binary_size(bytes).c_str(), (unsigned long long)sources, bytes_per_source);
  // Stated after loading: the population and the problem's columns are held already, so the
  // memory still available is compared with what is not held yet.
  std::size_t held = 0;
  {
    std::ifstream statm("/proc/self/statm");
    std::size_t pages_total = 0, pages_resident = 0;
    if (statm >> pages_total >> pages_resident)
      held = pages_resident * std::size_t(sysconf(_SC_PAGESIZE));
  }
  if (avail != std::numeric_limits<std::size_t>::max() && len > 0 && std::size_t(len) < sizeof msg)
    std::snprintf(msg + len, sizeof msg - std::size_t(len), "; %s held now, %s more available",
                  binary_size(double(held)).c_str(), binary_size(double(avail)).c_str());
  return msg;
}

}  // namespace crawleval
