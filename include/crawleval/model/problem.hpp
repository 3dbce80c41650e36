// What a run evaluates: a population of sources, the run's settings, and the policies.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "crawleval/base/comm.hpp"
#include "crawleval/base/enum_names.hpp"
#include "crawleval/base/hd.hpp"
#include "crawleval/model/model.hpp"
#include "crawleval/model/rng.hpp"
#include "crawleval/model/selection.hpp"

namespace crawleval {

/// One process holds at most this many sources (its engines index them with 32-bit local
/// indices, one value kept free as "none"); more run as more MPI ranks.
inline constexpr uint64_t kMaxLocalSources = 4294967294ull;
/// Global ids, counts and slices (Population::first_id + size) lie below 2^63.
inline constexpr uint64_t kMaxGlobalId = uint64_t(1) << 63;
/// "ORIGIN: one process holds at most 4,294,967,294 sources; run more ranks" when n exceeds it.
std::string local_limit_error(const std::string& origin, uint64_t n);

/// The ids [first, first + count) of a population of `total` sources that one process holds.
struct Shard {
  uint64_t first = 0, count = 0, total = 0;
};
/// Rank `rank` of `ranks`: chunks [rank C / ranks, (rank + 1) C / ranks) of the C = ceil(total /
/// kFoldChunk) chunks (empty for some ranks when C < ranks).
Shard shard_of(uint64_t total, int rank, int ranks);

/// Sources as columns. Position i is the source id used for tie-breaking; when the input has an
/// `id` column the population is stored in ascending id order, so "lower id" means the same in
/// both.
struct Population {
  std::vector<double> lambda;    ///< arrival rate (items per unit time), >= 0
  std::vector<double> xi;        ///< mean initial utility of an item, >= 0
  std::vector<double> mu;        ///< decay rate, > 0
  std::vector<double> cost;      ///< crawl cost C_i, > 0 (default 1); empty: every cost is 1
  std::vector<double> x0;        ///< initial state, only when the input gave one (else empty)
  std::vector<uint32_t> expiry;  ///< content lifetime in epochs, 0 = never (empty: never for all)
  /// Mixed observation (research report, section 7): per source 1 = full (the policy sees the
  /// state), 0 = belief (only the crawls' content); empty: every source as --observe says. Only
  /// the policies of function_policies.hpp read it (check_observe_column).
  std::vector<uint8_t> observe;
  /// External ids (0..N-1 when the input had none); empty: source i has the id id_offset + i.
  std::vector<uint64_t> id;
  std::vector<uint64_t> line;  ///< the source's line in its file (empty when not from a file)
  std::string origin;          ///< where it came from, for messages and reports
  /// The global id of position 0 when this population is a slice [first_id, first_id + size())
  /// of a larger one (--slice, a .cpop file's first_id): its draws are keyed by the global ids
  /// first_id + i (rng.hpp, draw contract 2); ties and round robin order by position, the same
  /// order. Under MPI every rank holds the same first_id and its shard's positions.
  uint64_t first_id = 0;
  uint64_t id_offset = 0;  ///< the ids where the id column is left empty (drop_implied_columns)

  std::size_t size() const { return lambda.size(); }
  double cost_of(std::size_t i) const { return cost.empty() ? 1.0 : cost[i]; }
  uint64_t id_of(std::size_t i) const { return id.empty() ? id_offset + i : id[i]; }
  /// Frees what a validated population's run does not need to hold: the costs when every one is
  /// 1 (cost_of) and `unit_costs` says so of the whole population (under MPI: of every process's
  /// shard, Problem::unit_costs; the engines read the column of a shard whose costs are all 1
  /// when another shard's are not), the ids when they are consecutive (id_of), the line numbers
  /// (only validation's messages read them). 16-24 bytes per source (a run's population, once
  /// its problem is derived).
  void drop_implied_columns(bool unit_costs);
  bool unit_costs() const;
  double total_cost() const;  ///< kFoldChunk chunks in id order
};

/// S of FixedBudget (selection.hpp) for `n` costs: clamped_cost_term summed per kFoldChunk chunk,
/// the chunks in id order (a sharded population folds the same chunk sums across processes).
double clamped_cost_sum(const double* cost, std::size_t n, double cost_limit);
/// The selection's integer weights for these costs and budget (unit_costs: every cost is 1).
FixedBudget cost_weights(const double* cost, std::size_t n, double budget, bool unit_costs);

/// One source's terms of the effective draws per epoch (Problem::arrivals_per_epoch): lambda T
/// (xi / scale) and lambda T (xi / scale)^2, scale the largest xi (so no square overflows).
inline void draws_terms(double lambda_t, double xi, double scale, double* s1, double* s2) {
  const double w = scale > 0.0 ? xi / scale : 0.0;
  *s1 += lambda_t * w;
  *s2 += lambda_t * w * w;
}
/// (sum s1)^2 / sum s2, written so that neither square overflows first; 0 without draws.
inline double effective_draws(double s1, double s2) { return s2 > 0.0 ? s1 * (s1 / s2) : 0.0; }

enum class Model : int { deterministic = 0, stochastic = 1 };
/// static: the relaxation's optimal crawl periods (bound.hpp) as a schedule that respects the
/// per-epoch budget: crawl the sources most overdue relative to their period (age / period).
enum class Policy : int {
  whittle = 0,
  greedy = 1,
  round_robin = 2,
  random = 3,
  static_rate = 4,
  lip = 5,  ///< the Lagrangian index (lip.hpp)
};
/// What a policy sees: the true state (full), or only the expected state given the time since
/// its last crawl (belief; the learning paper's setting). Rewards are always the true state.
enum class Observe : int { full = 0, belief = 1 };
/// Initial state of every source: empty (0), fresh (u: as if crawled just before the start),
/// full (u*: the limit of a never-crawled source) or given (the x0 column of the input).
enum class Start : int { empty = 0, fresh = 1, full = 2, given = 3 };

// Their names on the command line, from Python and in outputs (enum_names.hpp). The built-in
// policies are also named by the evaluate layer's policy registry (policy_registry.hpp), beside
// the score-function policies.
template <>
struct EnumNames<Model> {
  static constexpr EnumName<Model> table[] = {{Model::deterministic, "deterministic"},
                                              {Model::stochastic, "stochastic"}};
};
template <>
struct EnumNames<Policy> {
  static constexpr EnumName<Policy> table[] = {
      {Policy::whittle, "whittle"},         {Policy::greedy, "greedy"},
      {Policy::round_robin, "round_robin"}, {Policy::random, "random"},
      {Policy::static_rate, "static"},      {Policy::lip, "lip"}};
};
template <>
struct EnumNames<Observe> {
  static constexpr EnumName<Observe> table[] = {{Observe::full, "full"},
                                                {Observe::belief, "belief"}};
};
template <>
struct EnumNames<Start> {
  static constexpr EnumName<Start> table[] = {{Start::empty, "empty"},
                                              {Start::fresh, "fresh"},
                                              {Start::full, "full"},
                                              {Start::given, "given"}};
};
template <>
struct EnumNames<UtilityLaw> {
  static constexpr EnumName<UtilityLaw> table[] = {{UtilityLaw::deterministic, "deterministic"},
                                                   {UtilityLaw::exponential, "exponential"},
                                                   {UtilityLaw::lognormal, "lognormal"},
                                                   {UtilityLaw::pareto, "pareto"},
                                                   {UtilityLaw::gamma, "gamma"},
                                                   {UtilityLaw::empirical, "empirical"}};
};

/// The empirical utility law's table (rng.hpp, UtilityLaw::empirical), read from a file by
/// set_utility: for the atoms in ascending value, their cumulative probabilities (the last exactly
/// 1), then their values divided by the table's mean (so that every source's mean stays its xi).
struct UtilityTable {
  std::vector<double> data;  ///< cdf[0..atoms), then value[0..atoms)
  double mean = 0.0;         ///< the table's mean as given (before the division)
  std::string origin;        ///< the file
};

struct RunConfig {
  double epoch_length = 1.0;  ///< T
  double budget = 1.0;        ///< M: total crawl cost allowed per epoch
  uint64_t epochs = 1000;     ///< H: measured epochs per replication
  uint64_t burn_in = 0;       ///< B: epochs run before measuring
  uint32_t replications = 1;  ///< R
  Model model = Model::deterministic;
  UtilityDist utility = UtilityDist::exponential;
  /// Owns the arrays of an empirical `utility` (null for the other laws); copies of the config
  /// share it, so that the law's pointers stay valid as long as any copy lives.
  std::shared_ptr<const UtilityTable> utility_table;
  Start start = Start::empty;
  Observe observe = Observe::full;
  uint32_t first_replication = 0;  ///< replication indices start here (for adding replications)
  uint64_t seed = 1;
  int threads = 0;  ///< 0: all hardware threads
  bool progress = false;
};

/// Names used on the command line and in outputs (the tables above).
inline const char* to_string(Model m) { return enum_name(m); }
inline const char* to_string(Policy p) { return enum_name(p); }
inline const char* to_string(Start s) { return enum_name(s); }
inline const char* to_string(Observe o) { return enum_name(o); }
/// "exponential", "lognormal:2.5", "empirical" (the table's file: RunConfig::utility_table).
std::string to_string(const UtilityDist& d);
inline std::optional<Model> parse_model(const std::string& s) { return enum_parse<Model>(s); }
inline std::optional<Policy> parse_policy(const std::string& s) { return enum_parse<Policy>(s); }
inline std::optional<Start> parse_start(const std::string& s) { return enum_parse<Start>(s); }
inline std::optional<Observe> parse_observe(const std::string& s) { return enum_parse<Observe>(s); }
/// The utility laws' names and their parameter's name (nullptr: none), and the law of a name.
inline const char* utility_law_name(UtilityLaw law) { return enum_name(law); }
const char* utility_law_shape(UtilityLaw law);
inline std::optional<UtilityLaw> utility_law_named(const std::string& name) {
  return enum_parse<UtilityLaw>(name);
}
/// The settings --utility takes, for messages: "deterministic, exponential, lognormal:SIGMA, ...".
std::string utility_choices();
/// The setting that gives cfg's law back: to_string(cfg.utility), or "empirical:FILE".
std::string utility_setting(const RunConfig& cfg);
/// The parametric laws alone (no file): nullopt for anything else, and for a shape out of range.
std::optional<UtilityDist> parse_utility(const std::string& s);
/// Why `shape` is out of range for `law` ("" when it is in range).
std::string utility_shape_error(UtilityLaw law, double shape);
/// An upper bound on Z = xi_n / xi for every draw the sampler can make (rng.hpp): validation
/// refuses a source whose states could overflow with it.
double utility_max_ratio(const UtilityDist& d);
/// E[Z^2] of the law (Z = xi_n / xi; E[Z] = 1): the arrivals' variance is
/// lambda T xi^2 E[Z^2] (1 - alpha^2) / (2 mu T).
double utility_second_moment(const UtilityDist& d);

/// InputError when `policy` depends on the observation and the population has an observe column
/// that the built-in engines do not read (whittle, greedy: use whittle_mixed, greedy_mixed).
void check_observe_column(const Population& pop, Policy policy);

/// Checks the population and the settings; throws InputError naming the offending field.
void validate(const Population& pop, const RunConfig& cfg);
/// The smallest lambda xi / mu accepted for a source with lambda > 0 and xi > 0: below it the
/// index's arithmetic runs into subnormal numbers and engines could rank sources differently.
inline constexpr double kMinContent = 1e-200;
/// The smallest mu T accepted: below it the index keeps fewer than 7 of its digits (about
/// 1e-16 / (mu T)) and the bound's periods pass 1e9 epochs.
inline constexpr double kMinMuT = 1e-9;
/// The parts of validate(): every source and the settings (an empty population passes: a
/// process's shard may hold no source), and the budget against the total cost of n sources.
void validate_sources(const Population& pop, const RunConfig& cfg);
void validate_budget(const RunConfig& cfg, double total_cost, uint64_t n,
                     const std::string& origin);

/// Per-source constants as columns (one array per field of SourceParams): a pass that needs only
/// some fields reads only those, on the CPU and on the GPU.
struct ParamColumns {
  std::vector<double> alpha, om_alpha, u_star, mu_t, inv_cost, lambda_t, xi, x_cap, alpha_e;
  std::vector<double> drift;  ///< u = u* (1 - alpha), as model.hpp's drift() computes it
  /// rng.hpp's no_arrival_words(lambda T): a first arrival word below it means no arrival (the
  /// stochastic model's CPU engines skip the logarithm of such an epoch).
  std::vector<uint32_t> no_arrival;
  std::vector<uint32_t> expiry;

  /// Compact columns (ColumnSet::engine): only alpha and drift are held; at() and at_base()
  /// derive a source's other fields from this population on demand, with derive_params, so they
  /// are the bits the full columns hold. Null: every column is held.
  const Population* derived_from = nullptr;
  double epoch_length = 0.0;

  std::size_t size() const { return alpha.size(); }
  bool compact() const { return derived_from != nullptr; }
  /// `expiry_columns` false: x_cap, alpha_e and expiry stay empty, for a population without
  /// expiry (at() gives derive_params's values for expiry 0: x_cap = u*, alpha_e = 0); false
  /// `arrival_column`: no_arrival stays empty (the deterministic model draws no arrivals). 20 and
  /// 4 bytes per source that a deterministic run of the base model does not hold.
  void resize(std::size_t n, bool expiry_columns = true, bool arrival_column = true);
  void set(std::size_t i, const SourceParams& p);
  bool has_expiry_columns() const { return expiry.size() == alpha.size(); }
  bool has_arrival_column() const { return no_arrival.size() == alpha.size(); }
  [[gnu::always_inline]] SourceParams at(std::size_t i) const {
    if (expiry.empty()) return at_base(i);  // compact columns have no expiry
    return SourceParams{alpha[i],    om_alpha[i], u_star[i], mu_t[i],    inv_cost[i],
                        lambda_t[i], xi[i],       x_cap[i],  alpha_e[i], expiry[i]};
  }
  /// x_cap: u* where the expiry columns are left out.
  const std::vector<double>& x_cap_column() const { return expiry.empty() ? u_star : x_cap; }
  /// For the base model (no expiry): the expiry fields are not read.
  [[gnu::always_inline]] SourceParams at_base(std::size_t i) const {
    if (derived_from) {
      const Population& pop = *derived_from;  // inline: a caller's unused fields are not derived
      return derive_params_given_alpha(pop.lambda[i], pop.xi[i], pop.mu[i], pop.cost_of(i),
                                       epoch_length, alpha[i]);
    }
    return held_base(i);
  }
  /// at_base() of columns that are all held (not compact): no branch, for a loop that reads a
  /// source's constants every epoch. (Always inline: the engines' large pass functions exceed
  /// GCC's inlining budget, and a call per source cost 15% of a score function's epoch.)
  [[gnu::always_inline]] SourceParams held_base(std::size_t i) const {
    return SourceParams{alpha[i],    om_alpha[i], u_star[i], mu_t[i], inv_cost[i],
                        lambda_t[i], xi[i],       u_star[i], 0.0,     0u};
  }
};

/// Which per-source columns a problem holds. `all`: every field of SourceParams and the initial
/// states (any engine, backend, policy and model). `engine`: alpha and drift alone, the other
/// fields and the initial states derived when read (ParamColumns::compact): 16 bytes per source
/// against 88, for a deterministic run of the base model from an empty or fresh start whose
/// engines read no other column in their passes (compact_columns_apply).
enum class ColumnSet { all, engine };
/// Whether `engine` columns serve a run of `cfg` on the CPU backend with only these built-in
/// policies (none static) and no function policy: the deterministic model with full observation,
/// no expiry and an empty or fresh start, where every pass reads alpha, drift and the state.
bool compact_columns_apply(const Population& pop, const RunConfig& cfg,
                           const std::vector<Policy>& policies, bool function_policies);

/// A source's initial state: x, its grid position (GridTracker::init) and its AgeState word.
struct InitialState {
  double x = 0.0, om_eta = 0.0;
  uint32_t eta = 0, age = 0;
};

/// A problem's per-source constants and initial states, derived once and never changed after:
/// copies of a Problem (another burn-in, the warm-up's pilots, added replications, the function
/// engine's) share them instead of holding about 116 bytes per source each (resources.hpp).
struct ProblemColumns {
  ParamColumns params;
  std::vector<double> initial_state;
  /// The initial states' grid position (GridTracker::init), computed once for every replication.
  std::vector<uint32_t> initial_eta;
  std::vector<double> initial_om_eta;
  /// AgeState words of the initial states (belief, expiry, static and the GPU's wide path).
  std::vector<uint32_t> initial_age;
};

/// Everything a backend needs, derived once: per-source constants and initial states.
struct Problem {
  const Population* population = nullptr;
  RunConfig config;
  /// Shared by every copy: a copy that changes the config costs no column.
  std::shared_ptr<const ProblemColumns> columns = std::make_shared<const ProblemColumns>();
  const ParamColumns& params() const { return columns->params; }
  const std::vector<double>& initial_state() const { return columns->initial_state; }
  const std::vector<uint32_t>& initial_eta() const { return columns->initial_eta; }
  const std::vector<double>& initial_om_eta() const { return columns->initial_om_eta; }
  const std::vector<uint32_t>& initial_age() const { return columns->initial_age; }
  /// Source i's initial state: from the columns, or derived where the columns are compact.
  InitialState initial_at(std::size_t i) const;
  /// Crawl periods of the static policy (0 = never), from the Lagrangian relaxation; filled by
  /// prepare_static_policy (bound.hpp) when that policy runs.
  std::vector<uint32_t> static_period;
  /// The Lagrangian index policy's relaxation (lip.hpp), filled by prepare_lip_policy (bound.hpp)
  /// when that policy runs: the multiplier lambda* and every source's relaxed gain and period
  /// there.
  double lip_multiplier = 0.0;
  std::vector<double> lip_gain;
  std::vector<uint32_t> lip_period;
  /// What `policy` reads per source beside its state: its relaxed periods (static, lip) and gains
  /// (lip); null for the other policies (and before the preparation).
  const uint32_t* policy_periods(Policy policy) const {
    const std::vector<uint32_t>& v = policy == Policy::lip ? lip_period : static_period;
    return (policy == Policy::static_rate || policy == Policy::lip) && !v.empty() ? v.data()
                                                                                  : nullptr;
  }
  const double* policy_gains(Policy policy) const {
    return policy == Policy::lip && !lip_gain.empty() ? lip_gain.data() : nullptr;
  }
  bool unit_costs = true;
  bool has_expiry = false;
  /// The sum of every source's cost (kFoldChunk chunks in id order).
  double total_cost = 0.0;
  /// The smallest cost of any source (1 with unit costs; +inf with no source): round robin's pass
  /// crawls at most floor(budget / min_cost) sources an epoch (driver.cpp).
  double min_cost = 1.0;
  /// The effective number of utilities drawn per epoch, (sum lambda T xi)^2 / sum lambda T xi^2
  /// over every source (the same folds; sum lambda T where every xi is equal): a reward is a sum
  /// of utilities weighted by xi, and a few sources of large xi carry its spread. The statistics'
  /// heavy-tail check (stats.hpp, heavy_tail_reason).
  double arrivals_per_epoch = 0.0;
  /// The selection's integer costs for config.budget over the whole population (selection.hpp);
  /// every engine's budget walk uses them.
  FixedBudget weights;
  /// The sources this problem holds: all of them, or one process's shard (host/engine/mpi/), whose
  /// local source i has the global id shard.first + i (draws, ties and round robin use it).
  Shard shard;
  /// Population::first_id: source i (of the whole population) draws as first_id + i.
  uint64_t first_id = 0;
  /// Whether a score function sees the population's observe column applied (a belief source's
  /// expected state, a full source's state), as every policy that does not read the column itself
  /// must. False for the papers' policies that read it (function_engine_problem): they are handed
  /// every true state and reveal only what each source's observation allows.
  bool apply_observe_column = true;
  bool observe_column_applies() const {
    return apply_observe_column && !population->observe.empty();
  }

  /// The epoch loop's fast paths (grid tracking, the GPU's wide kernel) cover the base model:
  /// full observation, no expiry, and not the policies that read prepared columns (static, lip).
  bool base_model(Policy p) const {
    return config.observe == Observe::full && !has_expiry && p != Policy::static_rate &&
           p != Policy::lip;
  }

  std::size_t size() const { return columns->params.size(); }
  /// Sources in the whole population (size() unless sharded).
  uint64_t global_size() const { return shard.total; }
  bool sharded() const { return shard.count != shard.total; }
  uint64_t total_epochs() const { return config.burn_in + config.epochs; }
};

/// The problem keeps a pointer to `pop`, which must outlive it (a temporary cannot be passed).
Problem make_problem(const Population& pop, const RunConfig& cfg,
                     ColumnSet columns = ColumnSet::all);
Problem make_problem(Population&& pop, const RunConfig& cfg, ColumnSet = ColumnSet::all) = delete;
/// make_problem without validation (for a population validated otherwise, sharded.hpp).
Problem derive_problem(const Population& pop, const RunConfig& cfg,
                       ColumnSet columns = ColumnSet::all);
Problem derive_problem(Population&& pop, const RunConfig& cfg, ColumnSet = ColumnSet::all) = delete;
/// `pr` with every column held (its compact columns expanded, the same values): for the engines
/// that read a source's constants every epoch (the small engine, the reference).
Problem with_every_column(const Problem& pr);

}  // namespace crawleval
