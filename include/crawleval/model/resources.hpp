// The host's memory, checked before large allocations so that a request that cannot fit is
// refused with a message (exit 2) instead of being killed or dying of std::bad_alloc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace crawleval {

struct Population;

/// Bytes the process can still allocate: MemAvailable, or less under a cgroup (container)
/// memory limit or an address-space limit (ulimit -v).
std::size_t available_memory();

/// Throws InputError "<what> needs X GiB of memory; Y GiB are available" when `bytes` exceed the
/// available memory.
void require_memory(double bytes, const std::string& what);

/// Host bytes per source of `crawleval run`, from its parts (peak resident set measured with
/// /usr/bin/time -v at 1e6, 5e6 and 1e7 synthetic sources, 2026-11-24):
/// - the population: lambda, xi, mu, cost, id (40 B synthetic); a file adds line numbers and
///   perhaps x0, expiry and observe (56 B assumed);
/// - the problem's derived columns (problem.hpp's ProblemColumns: the ParamColumns, the initial
///   states and their grid positions): 88 B, 4 more in the stochastic model (no_arrival), 20 more
///   where a source has an expiry (x_cap, alpha_e, expiry); once: the driver's copies for another
///   burn-in (--burn-in auto and its pilots) or added replications (--target-ci) share them;
/// - the engine's state and selection records (engine_bytes_per_source);
/// - the Lagrangian bound runs after the policies, on the population and one problem: about 6 B
///   per source of its own and about 90 MB fixed (`crawleval bound`: 252 MB at 1e6, 1.71 GB at
///   1e7); runs without it about 16 MB fixed.
/// The estimates came within -4% to +7% of the measured peaks (docs/cpu-design.md, "Memory").
/// With the compact columns (problem.hpp's ColumnSet::engine: a deterministic run of the base
/// model on the CPU) the problem holds alpha and drift alone, 16 B, and the population drops its
/// unit costs, consecutive ids and line numbers (a synthetic one keeps lambda, xi, mu: 24 B):
/// the deterministic Whittle policy's run holds 24 + 16 + 22 = 62 B per source at most below a
/// budget of 2% of the sources (the engine's 22: x, the word, the selection's lists and up to 6 B
/// of the dormant sources' live copies; 58.8 B measured at 1e8, M = 1%), 70 B from 2% up (8 B more
/// of lists: engine_bytes_per_source). Loading peaks
/// at the whole population and the 16 B before the drop (56 B for a synthetic one).
inline constexpr double kSyntheticPopulationBytes = 40;
inline constexpr double kFilePopulationBytes = 56;
inline constexpr double kCompactProblemBytes = 16;
constexpr double problem_bytes_per_source(bool deterministic, bool expiry) {
  return 88 + (deterministic ? 0 : 8) + (expiry ? 20 : 0);
}
inline constexpr double kBoundWorkBytesPerSource = 8;
inline constexpr double kRunFixedBytes = 16.0 * (1 << 20);
inline constexpr double kBoundFixedBytes = 96.0 * (1 << 20);
/// The largest engine's bytes per source among `policies` (names as --policy takes them) in
/// the deterministic or the stochastic model (measured at 5e6: greedy and round robin 13, the
/// deterministic Whittle policy 16, random 21, static 26; the function engine's policies 40).
/// budget_share: the budget over the number of sources where it is known before the sources are
/// read (1 where not: the larger figure).
double engine_bytes_per_source(const std::vector<std::string>& policies, bool deterministic,
                               double budget_share = 1.0);
/// A GPU per MPI rank (keyed_rollout.hpp): the host's bytes per source of the rank's engine. The
/// pass's columns are copied for the upload (SourceParams 80 B, the initial state 8 and age word
/// 4, a cost 8 and an observation flag 1) and freed once on the device; the agent keeps the keys
/// and fixed-point weights (16 B) and, for a score function, what it observes and its scores
/// (24 B): 141 B at most, while the columns are held.
inline constexpr double kKeyedHostBytesPerSource = 141;
/// A run's bytes per source while the policies run (any burn-in, any target CI).
constexpr double run_bytes_per_source(double population, double problem, double engine) {
  return population + problem + engine;
}
/// The largest of them (a caller that does not know which policies will run).
inline constexpr double kRunBytesPerSource =
    run_bytes_per_source(kFilePopulationBytes, problem_bytes_per_source(false, true), 40);
/// The estimated peak of a run of n sources: the policies' phase (`bytes_per_source` from
/// run_bytes_per_source), or the bound's after it (`problem`: problem_bytes_per_source).
double run_memory_bytes(uint64_t n, double bytes_per_source, double population, double problem,
                        bool bound);
/// The bytes per source a population's columns hold now (the empty ones not counted).
double population_bytes_per_source(const Population& pop);
/// `crawleval bound` with every column (measured 171-183 B at 1e7-3e6; with the compact columns,
/// where a run would hold them: 47 B and 96 MB at 1e7, 0.555 GiB in all) and a population alone.
inline constexpr double kBoundBytesPerSource = 180;
inline constexpr double kPopulationBytesPerSource = 56;

/// "estimated peak about X MiB for N sources (B bytes each while the policies run, and fixed
/// parts); H MiB held now, Y GiB more available": what `crawleval run` states once its sources are
/// loaded. The estimate is of the run's peak resident memory (run_memory_bytes), the measure that
/// /usr/bin/time's "Maximum resident set size" reports, in binary units (MiB below 1 GiB).
std::string memory_estimate_line(double bytes, double bytes_per_source, uint64_t sources);
/// Host bytes per source of `crawleval fresh run|bound` beyond its CSV text (measured: a peak of
/// 243 MB for `fresh run` on 1e6 sources, 84 MB of them the text; `fresh bound` 168 MB).
inline constexpr double kFreshBytesPerSource = 200;

}  // namespace crawleval
