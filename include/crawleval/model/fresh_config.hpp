// The freshness model's settings (freshness.hpp): its policies' names, the run's configuration and
// its checks, an MPI rank's shard, and the rate allocations' data (solved in fresh_rates.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "crawleval/base/enum_names.hpp"
#include "crawleval/model/fresh_population.hpp"
#include "crawleval/model/freshness.hpp"

namespace crawleval {

class Comm;    // comm.hpp
struct Shard;  // problem.hpp

// The names on the command line, from Python and in outputs (enum_names.hpp).
template <>
struct EnumNames<FreshPolicy> {
  static constexpr EnumName<FreshPolicy> table[] = {
      {FreshPolicy::index, "index"},
      {FreshPolicy::greedy, "greedy"},
      {FreshPolicy::lambda_crawl, "lambda-crawl"},
      {FreshPolicy::lambda_crawl_approx, "lambda-crawl-approx"},
      {FreshPolicy::binary_lambda_crawl, "binary-lambda-crawl"},
      {FreshPolicy::uniform, "uniform"},
      {FreshPolicy::proportional, "proportional"},
      {FreshPolicy::random, "random"},
      {FreshPolicy::nutch_adaptive, "nutch-adaptive"},
      {FreshPolicy::custom, "custom"}};
};
template <>
struct EnumNames<Objective> {
  static constexpr EnumName<Objective> table[] = {{Objective::harmonic, "harmonic"},
                                                  {Objective::binary, "binary"}};
};

inline const char* to_string(FreshPolicy p) { return enum_name(p); }
inline const char* to_string(Objective o) { return enum_name(o); }
inline std::optional<FreshPolicy> parse_fresh_policy(const std::string& s) {
  return enum_parse<FreshPolicy>(s);
}
inline std::optional<Objective> parse_objective(const std::string& s) {
  return enum_parse<Objective>(s);
}

/// The state at epoch 0. fresh: every copy fetched just before the start (age 0, nothing
/// missed). steady: close to the long run, so that a short burn-in suffices: an IO source whose
/// relaxed-optimal period is K (fresh_bound) starts at an age drawn uniformly from 0..K-1 (never
/// crawled: 10^6 epochs), its changes since then drawn from their Poisson law; CO sources fresh.
enum class FreshStart : int { fresh = 0, steady = 1 };
template <>
struct EnumNames<FreshStart> {
  static constexpr EnumName<FreshStart> table[] = {{FreshStart::steady, "steady"},
                                                   {FreshStart::fresh, "fresh"}};
};
inline const char* to_string(FreshStart s) { return enum_name(s); }
inline std::optional<FreshStart> parse_fresh_start(const std::string& s) {
  return enum_parse<FreshStart>(s);
}

/// Below this many sources the CPU engine and the analyses run serially.
inline constexpr std::size_t kFreshSerialN = 16384;

struct FreshConfig {
  double epoch_length = 1.0;  ///< T, in the rates' time unit (days for PoliteCrawling)
  double budget = 1.0;        ///< M: crawl cost per epoch
  uint32_t host_cap = 0;      ///< m: crawls per epoch of a constrained host (0: no politeness)
  uint64_t epochs = 100;      ///< H: measured epochs per replication
  uint64_t burn_in = 0;       ///< B
  uint32_t replications = 1;
  /// The draws' index of the first replication (replications first_replication ..
  /// first_replication + replications - 1): fresh_evaluate's --target-ci adds replications with
  /// draws of their own.
  uint32_t first_replication = 0;
  Objective objective = Objective::harmonic;  ///< what the index and the greedy policy pursue
  double epsilon = 0.4;  ///< binary_lambda_crawl's floor: epsilon R / sum C (0: Azar et al.)
  /// Learning variant (NeurIPS 2019, LambdaLearnAndCrawl): policies see change rates estimated
  /// online from what the crawls reveal (IO: whether the page changed since the last crawl, over
  /// that interval; CO: every change), re-estimated every `relearn` epochs
  /// (change_rate.hpp's learned_rate_*, imaginary intervals of `prior` time units), rate-based
  /// policies recomputed from them. The population's rates remain the truth that is simulated.
  bool learn = false;
  uint32_t relearn = 1;
  double prior = 0.5;
  FreshStart start = FreshStart::fresh;
  /// nutch-adaptive (nutch.hpp): every URL's first interval and the intervals' cap, in epochs.
  double nutch_start = 30.0, nutch_max = 365.0;
  uint64_t seed = 1;
  int threads = 0;
  bool progress = false;
  /// The policy's name in the progress lines where it is not the policy's own (a user's score
  /// function runs as FreshPolicy::index); empty: to_string(policy).
  std::string progress_label;
};

/// Checks the population against the settings (InputError naming the field). `comm`: the MPI
/// ranks of a run, each passing its part (fresh_shard): a collective, every rank throws the first
/// failing rank's error, and the whole-run checks (no sources, the total importance) are over
/// every part. Null: one process.
void validate_fresh_config(const FreshPopulation& pop, const FreshConfig& cfg,
                           Comm* comm = nullptr);

/// A run over MPI ranks: rank r passes every function here its part of the run's population, the
/// rows shard_of(total, r, P) (whole kFoldChunk chunks, in rank order; fresh_rows cuts them from a
/// whole population), with `first` the global draw id of its first row; one process passes all of
/// it. This returns that Shard (total, first, count): a collective (an allgather of the sizes); an
/// internal error on every rank when the ranks' sizes are not shard_of's.
Shard fresh_shard(const FreshPopulation& pop, Comm& comm);

/// Crawl rates of a rate-based policy: rho per unit time for the sources scheduled by age (all
/// but the CO sources of lambda_crawl(_approx)), p for those CO sources (0 elsewhere).
struct FreshRates {
  std::vector<double> rho;
  std::vector<double> p;
  double multiplier = 0.0;  ///< the Lagrange multiplier found (0 where none)
};
/// The columns the rate solves read, of sources first .. first + n - 1 of a population: all of
/// them in one process, a rank's shard under MPI; `rate` may point elsewhere (the learning
/// variant's estimates).
struct FreshColumns {
  const double* importance = nullptr;
  const double* rate = nullptr;
  const double* cost = nullptr;
  const uint8_t* complete = nullptr;
  std::size_t n = 0;
  static FreshColumns of(const FreshPopulation& pop, std::size_t first, std::size_t count);
};
/// The papers' closed forms of a rate allocation's cost per unit time under Poisson crawling,
/// normalised by the total importance: harmonic sum_IO w ln(1 + D / rho) + sum_CO -w ln p, binary
/// staleness sum_IO w D / (rho + D) + sum_CO w (1 - p). inf where a source is starved.
struct RateCosts {
  double harmonic = 0.0, binary = 0.0;
};
/// Whether a policy schedules by rates that fresh_rates solves for.
bool rate_based(FreshPolicy p);

}  // namespace crawleval
