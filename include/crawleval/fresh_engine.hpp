// Evaluating crawl schedulers on the freshness model (freshness.hpp): the policies, the epoch
// engine with politeness caps, the papers' crawl-rate schedulers and the Lagrangian bound.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "crawleval/fresh_io.hpp"
#include "crawleval/freshness.hpp"
#include "crawleval/selection.hpp"
#include "crawleval/stats.hpp"

namespace crawleval {

class Comm;    // comm.hpp
struct Shard;  // problem.hpp

const char* to_string(FreshPolicy p);
const char* to_string(Objective o);
std::optional<FreshPolicy> parse_fresh_policy(const std::string& s);
std::optional<Objective> parse_objective(const std::string& s);

/// The state at epoch 0. fresh: every copy fetched just before the start (age 0, nothing
/// missed). steady: close to the long run, so that a short burn-in suffices: an IO source whose
/// relaxed-optimal period is K (fresh_bound) starts at an age drawn uniformly from 0..K-1 (never
/// crawled: 10^6 epochs), its changes since then drawn from their Poisson law; CO sources fresh.
enum class FreshStart : int { fresh = 0, steady = 1 };
const char* to_string(FreshStart s);

/// Below this many sources the CPU engine and the analyses run serially.
inline constexpr std::size_t kFreshSerialN = 16384;

struct FreshConfig {
  double epoch_length = 1.0;  ///< T, in the rates' time unit (days for PoliteCrawling)
  double budget = 1.0;        ///< M: crawl cost per epoch
  uint32_t host_cap = 0;      ///< m: crawls per epoch of a constrained host (0: no politeness)
  uint64_t epochs = 100;      ///< H: measured epochs per replication
  uint64_t burn_in = 0;       ///< B
  uint32_t replications = 1;
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
  uint64_t seed = 1;
  int threads = 0;
  bool progress = false;
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
/// R = M / T crawl cost per unit time. lambda_crawl: the harmonic-penalty optimum (NeurIPS 2019,
/// Algorithms 1-3) with one multiplier for IO and CO: mu D / (rho (rho + D)) = lambda C and
/// p = min(1, mu / (lambda C D)); lambda_crawl_approx: IO rates proportional to importance (Prop.
/// 9), CO probabilities as lambda_crawl's, the split of R between them by a golden-section search
/// on the harmonic penalty; binary_lambda_crawl: Azar et al.'s binary-freshness optimum rho =
/// max(epsilon R / sum C, sqrt(mu D / (lambda C)) - D), every source treated as IO; uniform: R /
/// sum C; proportional: rho proportional to D. Costs generalise the papers' unit-cost formulas.
FreshRates fresh_rates(const FreshPopulation& pop, const FreshConfig& cfg, FreshPolicy policy);

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
/// fresh_rates over every rank's columns: each rank passes its shard (which starts on a
/// kFoldChunk boundary, as shard_of's do) and gets its shard's rates; the sums are folded over the
/// ranks in global order, so that every rank count gives one process's rates to the bit. A
/// collective.
FreshRates fresh_rates(const FreshColumns& columns, const FreshConfig& cfg, FreshPolicy policy,
                       Comm& comm);
namespace detail {
/// LambdaCrawlApprox's split by golden section on the harmonic penalty (the original solver, about
/// 40 penalty evaluations each re-solving LambdaCrawl's CO multiplier): fresh_rates uses it where
/// the split is degenerate; the tests compare fresh_rates' faster solve with it. R = M / T; fills
/// out->rho and out->p (sized to the population).
void lambda_crawl_approx_golden(const FreshPopulation& pop, double R, FreshRates* out);
}  // namespace detail

/// The papers' closed forms of a rate allocation's cost per unit time under Poisson crawling,
/// normalised by the total importance: harmonic sum_IO w ln(1 + D / rho) + sum_CO -w ln p, binary
/// staleness sum_IO w D / (rho + D) + sum_CO w (1 - p). inf where a source is starved.
struct RateCosts {
  double harmonic = 0.0, binary = 0.0;
};
RateCosts rate_costs(const FreshPopulation& pop, const FreshRates& rates, FreshPolicy policy);
/// rate_costs over every rank's columns and rates (as fresh_rates' collective form).
RateCosts rate_costs(const FreshColumns& columns, const FreshRates& rates, FreshPolicy policy,
                     Comm& comm);

struct FreshRolloutOutput {
  /// Per replication, per measured epoch, normalised by the total importance: the fresh fraction
  /// (binary freshness) and the harmonic penalty; and the crawl cost spent per epoch.
  std::vector<double> freshness, penalty, cost;
  std::vector<double> epoch_freshness, epoch_penalty;  ///< replication 0, per measured epoch
  /// Learning variant: replication 0's final estimates, of this process's rows.
  std::vector<double> learned_rate;
  /// Source-epochs (and steady starts) whose count of missed changes or age reached its limit
  /// (kMaxChanges, kMaxFreshAge), over every replication and rank: where it is not 0 the numbers
  /// understate the penalty, and fresh_evaluate refuses them.
  uint64_t saturated = 0;
  /// Rate-based policies: the closed-form costs of their rates at the population's (known) rates.
  std::optional<RateCosts> closed_form;
  double seconds = 0.0;
  int threads = 1;
};

/// Runs a policy. `reference`: serial, the selection by a full sort walked in order (obviously
/// right, slow); otherwise threads and an O(N) selection (nth_element). Both give the same crawls.
/// `observer` (may be null) sees the crawled ids of every epoch, ascending.
using FreshObserver =
    std::function<void(uint32_t replication, uint64_t epoch, const std::vector<uint32_t>& crawled)>;
/// The hosts of the politeness caps: a host is constrained when any of its sources is flagged
/// (the importer flags every source of a constrained host); only a constrained host with more
/// than m sources ("crowded") can reach its cap. Over MPI ranks (`comm`, each passing its part: a
/// collective) a host's sources may lie on several ranks: the constrained hosts' ids are
/// allgathered and their sizes summed over the ranks (a directory of 8 B per constrained host on
/// every rank), so every rank numbers the crowded hosts alike.
struct CrowdedHosts {
  std::vector<uint32_t> dense;       ///< per row of this process: its host, numbered 0..count-1
  std::vector<uint8_t> constrained;  ///< per host of this process (flagged on any rank)
  uint32_t count = 0;
  /// This process's rows of every crowded host, host by host in ascending host id, ascending
  /// within a host; start: their CSR offsets (crowded hosts + 1 entries); total: the offsets of
  /// every rank's sources (== start in one process).
  std::vector<uint32_t> members;
  std::vector<std::size_t> start{0};
  std::vector<uint64_t> total{0};
  /// The hosts each rank decides (the bound solves them there, the selection finds their m-th
  /// candidate there): blocks of consecutive hosts, each about 1/P of the hosts' members, rank r's
  /// from owner[r] to owner[r + 1] - 1 (P + 1 entries; every host in one process).
  std::vector<std::size_t> owner;
  bool split = false;  ///< whether any crowded host lies on more than one rank
  /// Whether crowded host h lies on this process alone.
  bool whole(std::size_t h) const { return start[h + 1] - start[h] == total[h + 1] - total[h]; }
};
CrowdedHosts crowded_hosts(const FreshPopulation& pop, uint32_t cap, Comm* comm = nullptr);

/// What every engine derives once from the population and the settings (host/engine/
/// fresh_rollout.cpp): the per-source constants, the rate-based policy's rates (known rates), the
/// steady start's periods, the fixed-point costs of the selection and the hosts of the caps.
/// params, steady_period and weight hold the rows of pop (the run's sources first ..
/// first + params.size() - 1: a rank's part under MPI); norm and budget cover every source.
struct FreshPlan {
  std::size_t first = 0;            ///< the run's position of pop's first row (fresh_shard)
  std::vector<FreshParams> params;  ///< the truth the simulation runs on
  FreshRates rates;  ///< rate-based policies at the known rates (else empty), of params' sources
  std::vector<double> steady_period;  ///< FreshStart::steady (empty otherwise)
  FixedBudget budget;                 ///< selection.hpp's fixed point
  std::vector<uint64_t> weight;       ///< each source's fixed-point cost
  bool unit_costs = true;
  double norm = 0.0;  ///< 1 / total importance (kFoldChunk chunks)
  CrowdedHosts hosts;
};
/// `steady_period`: fresh_bound's periods for the steady start of pop's rows (computed when null
/// and needed). `comm`: the ranks whose parts make up the run (null: one process), over which the
/// rates, totals and hosts are taken (a collective).
FreshPlan make_fresh_plan(const FreshPopulation& pop, const FreshConfig& cfg, FreshPolicy policy,
                          const std::vector<double>* steady_period = nullptr, Comm* comm = nullptr);
bool rate_based(FreshPolicy p);

/// `steady_period`: fresh_bound's periods for the steady start (computed here when null).
/// `comm`: the MPI ranks that share the run (every rank passes its part, fresh_shard, and the same
/// settings; each simulates its part and the selection spans the ranks, host caps included): the
/// same output on every rank, bit for bit one process's. Null: one process.
FreshRolloutOutput fresh_rollout(const FreshPopulation& pop, const FreshConfig& cfg,
                                 FreshPolicy policy, bool reference = false,
                                 const FreshObserver* observer = nullptr,
                                 const std::vector<double>* steady_period = nullptr,
                                 Comm* comm = nullptr);

/// The Lagrangian bound on the objective per epoch (normalised like the rollout): the best
/// average of the relaxed problem, min over lambda >= 0 of lambda M + sum_i v_i(lambda), with the
/// politeness caps dropped (they only restrict the crawler). v_i is exact for IO sources (both
/// objectives) and for CO sources under the binary objective; under the harmonic objective a CO
/// source enters with its least possible penalty and free crawls (valid, looser; `note` says so).
/// For the harmonic objective the bound is a lower bound on the penalty.
struct FreshBound {
  std::optional<double> value;  ///< freshness upper bound, or penalty lower bound
  std::string why_absent;       ///< when there is no value
  std::string note;             ///< how the bound was relaxed beyond the budget, if it was
  double multiplier = 0.0;
  /// Each source's crawl period in the relaxed optimum (epochs; 0: never crawled; 1 for CO
  /// sources, crawled at their first epoch after a change): the steady start's ages. Of sources
  /// first .. first + period.size() - 1: every source in one process, the rank's shard over MPI.
  std::vector<double> period;
  std::size_t first = 0;
  uint64_t evaluations = 0;  ///< of the dual: passes over the population
};
/// `comm`: the MPI ranks (every rank passes its part, fresh_shard, and the same settings; null: one
/// process). Each rank evaluates the relaxed problem of its part and of a block of the crowded
/// hosts, whose members on other ranks send it their columns once (exchange_items, comm.hpp); the
/// dual's sums are folded over the ranks in one process's order, so every rank gets one process's
/// value and multiplier to the bit, and its own part's periods. A collective.
FreshBound fresh_bound(const FreshPopulation& pop, const FreshConfig& cfg, Comm* comm = nullptr);

}  // namespace crawleval
