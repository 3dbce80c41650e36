// Names, validation and derivation of a run's problem.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <sstream>
#include <utility>

#include "crawleval/base/error.hpp"
#include "crawleval/model/population.hpp"
#include "crawleval/model/problem.hpp"

namespace crawleval {

bool Population::unit_costs() const {
  for (double c : cost)
    if (c != 1.0) return false;
  return true;
}

double Population::total_cost() const {
  double s = 0.0;
  for (std::size_t lo = 0; lo < size(); lo += kFoldChunk) {
    double part = 0.0;
    const std::size_t hi = std::min(size(), lo + kFoldChunk);
    for (std::size_t i = lo; i < hi; ++i) part += cost_of(i);
    s += part;
  }
  return s;
}

void Population::drop_implied_columns(bool every_cost_is_one) {
  if (every_cost_is_one && !cost.empty() && unit_costs()) std::vector<double>().swap(cost);
  std::vector<uint64_t>().swap(line);
  if (id.empty()) return;
  bool consecutive = true;
  for (std::size_t i = 1; i < id.size() && consecutive; ++i) consecutive = id[i] == id[0] + i;
  if (!consecutive) return;
  id_offset = id[0];
  std::vector<uint64_t>().swap(id);
}

double clamped_cost_sum(const double* cost, std::size_t n, double cost_limit) {
  double s = 0.0;
  if (!(cost_limit > 0.0)) return s;
  for (std::size_t lo = 0; lo < n; lo += kFoldChunk) {
    double part = 0.0;
    const std::size_t hi = std::min(n, lo + kFoldChunk);
    for (std::size_t i = lo; i < hi; ++i) part += clamped_cost_term(cost[i], cost_limit);
    s += part;
  }
  return s;
}

FixedBudget cost_weights(const double* cost, std::size_t n, double budget, bool unit_costs) {
  return fixed_budget(budget,
                      unit_costs ? 0.0 : clamped_cost_sum(cost, n, budget_limit_finite(budget)),
                      unit_costs);
}

Shard shard_of(uint64_t total, int rank, int ranks) {
  const uint64_t chunks = (total + kFoldChunk - 1) / kFoldChunk;
  const uint64_t c0 = chunks * uint64_t(rank) / uint64_t(ranks);
  const uint64_t c1 = chunks * uint64_t(rank + 1) / uint64_t(ranks);
  Shard s;
  s.total = total;
  s.first = std::min(total, c0 * kFoldChunk);
  s.count = std::min(total, c1 * kFoldChunk) - s.first;
  return s;
}

namespace {

/// "file:line: field 'x'" for a source read from a text file, else "origin: source with id k,
/// field 'x'" (the id, not the position: a process's shard starts anywhere in the population).
std::string where(const Population& pop, std::size_t i, const char* field) {
  std::ostringstream os;
  if (i < pop.line.size() && pop.line[i] > 0)
    os << printable(pop.origin, 256) << ":" << pop.line[i] << ": field '" << field << "'";
  else if (i < pop.id.size() || (pop.id.empty() && i < pop.size()))
    os << printable(pop.origin, 256) << ": source with id " << pop.id_of(i) << ", field '" << field
       << "'";
  else
    os << printable(pop.origin, 256) << ": source " << i << ", field '" << field << "'";
  return os.str();
}

}  // namespace

void sort_by_id(Population& pop, IdPositions positions) {
  const std::size_t n = pop.size();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return pop.id[a] < pop.id[b]; });
  const bool lines = positions == IdPositions::lines && pop.line.size() == n;
  for (std::size_t k = 1; k < n; ++k) {
    const std::size_t a = order[k - 1], b = order[k];
    if (pop.id[a] != pop.id[b]) continue;
    const std::string id = std::to_string(pop.id[b]);
    if (lines)
      throw InputError(printable(pop.origin, 256) + ":" + std::to_string(pop.line[b]) +
                       ": field 'id': id " + id + " already used on line " +
                       std::to_string(pop.line[a]));
    throw InputError(printable(pop.origin, 256) + ": row " + std::to_string(b) +
                     ": field 'id': id " + id + " already used in row " + std::to_string(a));
  }
  if (std::is_sorted(order.begin(), order.end())) return;
  auto permute = [&](auto& v) {
    if (v.empty()) return;
    auto copy = v;
    for (std::size_t k = 0; k < n; ++k) v[k] = copy[order[k]];
  };
  permute(pop.lambda), permute(pop.xi), permute(pop.mu), permute(pop.cost), permute(pop.x0),
      permute(pop.expiry), permute(pop.id), permute(pop.line), permute(pop.observe);
}

Population population_from_columns(std::size_t n, const double* lambda, const double* xi,
                                   const double* mu, const double* cost, const uint64_t* id,
                                   const double* x0, const uint32_t* expiry,
                                   const std::string& origin, const uint8_t* observe) {
  CE_EXPECTS(n > 0, origin + ": the population is empty");
  if (n > kMaxLocalSources) throw InputError(local_limit_error(origin, n));
  CE_EXPECTS(lambda && xi && mu, "internal: population_from_columns needs lambda, xi and mu");
  Population pop;
  pop.origin = origin;
  pop.lambda.assign(lambda, lambda + n);
  pop.xi.assign(xi, xi + n);
  pop.mu.assign(mu, mu + n);
  if (cost)
    pop.cost.assign(cost, cost + n);
  else
    pop.cost.assign(n, 1.0);
  if (x0) pop.x0.assign(x0, x0 + n);
  if (expiry) pop.expiry.assign(expiry, expiry + n);
  if (observe) {
    for (std::size_t i = 0; i < n; ++i)
      CE_EXPECTS(observe[i] <= 1, origin + ": row " + std::to_string(i) +
                                      ": field 'observe' must be full or belief");
    pop.observe.assign(observe, observe + n);
  }
  if (id) {
    pop.id.assign(id, id + n);
    sort_by_id(pop, IdPositions::rows);
  } else {
    pop.id.resize(n);
    std::iota(pop.id.begin(), pop.id.end(), uint64_t(0));
  }
  validate_sources(pop, RunConfig{});
  return pop;
}

void check_observe_column(const Population& pop, Policy policy) {
  if (pop.observe.empty() ||
      (policy != Policy::whittle && policy != Policy::greedy && policy != Policy::lip))
    return;
  const std::string mixed = policy == Policy::lip ? std::string("whittle_mixed or greedy_mixed")
                                                  : to_string(policy) + std::string("_mixed");
  throw InputError(printable(pop.origin, 256) + " has an observe column (mixed observation): the " +
                   to_string(policy) + " policy of the engines does not read it; the papers' " +
                   mixed + " does (crawleval run --policy " + mixed +
                   "; round_robin, random and static do not depend on the observation)");
}

void validate(const Population& pop, const RunConfig& cfg) {
  CE_EXPECTS(pop.size() > 0, pop.origin + ": the population is empty");
  if (pop.size() > kMaxLocalSources) throw InputError(local_limit_error(pop.origin, pop.size()));
  validate_sources(pop, cfg);
  validate_budget(cfg, pop.total_cost(), pop.size(), pop.origin);
}

void validate_budget(const RunConfig& cfg, double total, uint64_t n, const std::string& origin) {
  // With the selection's slack (budget_limit): 32769 x 0.1 adds up to 3276.899999998115, and
  // --budget 3276.9 means "crawl every source".
  if (cfg.budget > budget_limit(total)) {
    std::ostringstream os;
    os << "--budget " << shown_number(cfg.budget) << " is larger than the total crawl cost "
       << shown_number(total) << " of the " << n << " sources in " << printable(origin, 256);
    throw InputError(os.str());
  }
}

std::string local_limit_error(const std::string& origin, uint64_t n) {
  return printable(origin, 256) + ": " + std::to_string(n) +
         " sources in one process; one process holds at most 4,294,967,294 sources; run more "
         "ranks (mpirun)";
}

void validate_sources(const Population& pop, const RunConfig& cfg) {
  const std::size_t n = pop.size();
  // The deterministic model draws no utilities: a law given for it would be ignored in silence.
  CE_EXPECTS(cfg.model == Model::stochastic || cfg.utility.law == UtilityLaw::exponential ||
                 cfg.utility.law == UtilityLaw::deterministic,
             "--utility applies to the stochastic model only; the deterministic model uses each "
             "source's mean xi");
  CE_EXPECTS(pop.first_id < kMaxGlobalId && n <= kMaxGlobalId - pop.first_id,
             printable(pop.origin, 256) + ": its global ids " + std::to_string(pop.first_id) +
                 " + " + std::to_string(n) + " pass 2^63");
  CE_EXPECTS(pop.xi.size() == n && pop.mu.size() == n && (pop.cost.size() == n || pop.cost.empty()),
             pop.origin + ": columns have different lengths");
  CE_EXPECTS(pop.x0.empty() || pop.x0.size() == n, pop.origin + ": x0 column has the wrong length");
  CE_EXPECTS(pop.expiry.empty() || pop.expiry.size() == n,
             pop.origin + ": expiry column has the wrong length");
  CE_EXPECTS(pop.observe.empty() || pop.observe.size() == n,
             pop.origin + ": observe column has the wrong length");
  for (std::size_t i = 0; i < n; ++i) {
    CE_EXPECTS(std::isfinite(pop.lambda[i]) && pop.lambda[i] >= 0,
               where(pop, i, "lambda") + " must be a finite number >= 0");
    CE_EXPECTS(std::isfinite(pop.xi[i]) && pop.xi[i] >= 0,
               where(pop, i, "xi") + " must be a finite number >= 0");
    CE_EXPECTS(std::isfinite(pop.mu[i]) && pop.mu[i] > 0,
               where(pop, i, "mu") + " must be a finite number > 0");
    CE_EXPECTS(std::isfinite(pop.cost_of(i)) && pop.cost_of(i) > 0,
               where(pop, i, "cost") + " must be a finite number > 0");
    // The engines score by x / C as x (1 / C): a cost whose reciprocal overflows (below about
    // 5.6e-309, a subnormal number) would turn an empty source's score 0 into 0 x inf = NaN.
    CE_EXPECTS(std::isfinite(1.0 / pop.cost_of(i)),
               where(pop, i, "cost") + " " + shown_number(pop.cost_of(i)) +
                   " is below 5.6e-309: its reciprocal 1 / cost, which the index uses, overflows");
    if (!pop.x0.empty())
      CE_EXPECTS(std::isfinite(pop.x0[i]) && pop.x0[i] >= 0,
                 where(pop, i, "x0") + " must be a finite number >= 0");
    CE_EXPECTS(std::isfinite(pop.lambda[i] * pop.xi[i] / pop.mu[i]),
               where(pop, i, "lambda") + ": lambda * xi / mu overflows");
    // A full start under expiry is the age AgeState::kMaxAge, past which belief observation could
    // not tell an older copy: a longer lifetime gave belief a wrong start (a hostile test pass).
    CE_EXPECTS(pop.expiry.empty() || pop.expiry[i] <= AgeState::kMaxAge,
               where(pop, i, "expiry") + " must be at most " + std::to_string(AgeState::kMaxAge) +
                   " epochs (or inf)");
    // The other end: content so small that the engines' arithmetic on it is subnormal (found by
    // fuzz_cpop: xi = 4.9e-324) has lost its precision, and two correct formulas for the index
    // (the reference's and the wide engine's grid form) then rank such sources differently. The
    // index is linear in xi, so rescaling every xi changes no ranking; a source with nothing to
    // gain has lambda = 0 or xi = 0, which stays exact.
    // Slow decay: the index's formula subtracts terms of size (1 - alpha) u* to get one of size
    // (1 - alpha) u, so it keeps about 1e-16 / (mu T) of its digits, and the bound's and the
    // static policy's periods grow as 1 / (mu T) (a hostile test found both engines disagreeing
    // by 10% at mu T = 1e-16 and the reference bound running for hours).
    CE_EXPECTS(pop.mu[i] * cfg.epoch_length >= kMinMuT || !(cfg.epoch_length > 0),
               where(pop, i, "mu") + ": mu * T = " + shown_number(pop.mu[i] * cfg.epoch_length) +
                   " is below 1e-9 (content that decays by less than a billionth per epoch): "
                   "the index keeps too few digits there; use a longer --epoch-length");
    if (pop.lambda[i] > 0 && pop.xi[i] > 0) {
      CE_EXPECTS(pop.lambda[i] * pop.xi[i] >= std::numeric_limits<double>::min(),
                 where(pop, i, "xi") + ": lambda * xi = " + shown_number(pop.lambda[i]) + " * " +
                     shown_number(pop.xi[i]) +
                     " underflows (below 2.2e-308); multiply every xi by the same factor (no "
                     "ranking changes) or set xi = 0");
      const double most = pop.lambda[i] * pop.xi[i] / pop.mu[i];
      CE_EXPECTS(most >= kMinContent,
                 where(pop, i, "xi") + ": lambda * xi / mu = " + shown_number(most) +
                     " (the content a source holds at most) is below 1e-200 with lambda and xi "
                     "above 0: the index loses its precision there (subnormal numbers); "
                     "multiply every xi by the same factor (no ranking changes) or set xi = 0");
    }
    // The bound's multiplier lives below max_i x_cap_i / C_i: it must be a finite number.
    CE_EXPECTS(std::isfinite(pop.lambda[i] * pop.xi[i] / pop.mu[i] / pop.cost_of(i)),
               where(pop, i, "cost") +
                   ": lambda * xi / mu / cost (the value of a crawl per unit of cost) overflows");
  }
  CE_EXPECTS(std::isfinite(cfg.epoch_length) && cfg.epoch_length > 0,
             "--epoch-length must be a finite number > 0");
  CE_EXPECTS(std::isfinite(cfg.budget) && cfg.budget > 0, "--budget must be a finite number > 0");
  CE_EXPECTS(cfg.epochs > 0, "--epochs must be at least 1");
  CE_EXPECTS(cfg.replications > 0, "--replications must be at least 1");
  CE_EXPECTS(cfg.burn_in <= std::numeric_limits<uint32_t>::max() &&
                 cfg.epochs <= std::numeric_limits<uint32_t>::max() - cfg.burn_in,
             "--burn-in plus --epochs must be below 2^32");
  CE_EXPECTS(cfg.start != Start::given || !pop.x0.empty() || n == 0,
             "--start given needs an x0 column in " + pop.origin);
  std::size_t first_expiring = n;
  for (std::size_t i = 0; i < pop.expiry.size() && first_expiring == n; ++i)
    if (pop.expiry[i] > 0) first_expiring = i;
  const bool expiring = first_expiring < n;
  if (expiring) {
    CE_EXPECTS(cfg.start != Start::given,
               where(pop, first_expiring, "expiry") +
                   ": content expiry needs --start empty, fresh or full (an initial state from "
                   "the x0 column has no age to expire from)");
    CE_EXPECTS(cfg.model == Model::deterministic || cfg.start == Start::empty,
               "content expiry in the stochastic model needs --start empty (the initial content "
               "must come from the simulated arrivals to expire)");
  }
  if (cfg.model == Model::stochastic) {
    // The heavier-tailed laws (rng.hpp) can draw an item far above its mean: a state holds about
    // u* = lambda xi / mu of content, each item at most the law's largest draw times xi; with a
    // margin of 1e3 for the arrivals' fluctuations it must stay finite. (The deterministic and
    // exponential laws keep the checks they always had.)
    const bool heavy =
        cfg.utility.law != UtilityLaw::deterministic && cfg.utility.law != UtilityLaw::exponential;
    const double zmax = heavy ? utility_max_ratio(cfg.utility) * 1e3 : 1.0;
    for (std::size_t i = 0; i < n; ++i) {
      CE_EXPECTS(pop.lambda[i] * cfg.epoch_length <= kMaxArrivalsPerEpoch,
                 where(pop, i, "lambda") +
                     ": lambda * T above 1e6 arrivals per epoch is not "
                     "supported by the stochastic model");
      if (heavy)
        CE_EXPECTS(std::isfinite(pop.lambda[i] * pop.xi[i] / pop.mu[i] * zmax),
                   where(pop, i, "xi") + ": lambda * xi / mu times the largest utility the " +
                       to_string(cfg.utility) + " law can draw (" + shown_number(zmax / 1e3) +
                       " times its mean, with a margin of 1e3) overflows");
    }
  }
}

void ParamColumns::resize(std::size_t n, bool expiry_columns, bool arrival_column) {
  for (auto* v : {&alpha, &om_alpha, &u_star, &mu_t, &inv_cost, &lambda_t, &xi, &drift})
    v->resize(n);
  for (auto* v : {&x_cap, &alpha_e}) v->resize(expiry_columns ? n : 0);
  expiry.resize(expiry_columns ? n : 0);
  no_arrival.resize(arrival_column ? n : 0);
}

void ParamColumns::set(std::size_t i, const SourceParams& p) {
  alpha[i] = p.alpha, om_alpha[i] = p.om_alpha, u_star[i] = p.u_star, mu_t[i] = p.mu_t;
  inv_cost[i] = p.inv_cost, lambda_t[i] = p.lambda_t, xi[i] = p.xi;
  if (!expiry.empty()) x_cap[i] = p.x_cap, alpha_e[i] = p.alpha_e, expiry[i] = p.expiry;
  drift[i] = crawleval::drift(p);
  if (!no_arrival.empty()) no_arrival[i] = no_arrival_words(p.lambda_t);
}

namespace {

/// Source i's initial state for the start `start` (x0: the input's x0 column, or null).
InitialState initial_state_of(const SourceParams& p, Start start, const double* x0, std::size_t i) {
  InitialState s;
  switch (start) {
    case Start::empty:
      s.x = 0.0;
      break;
    case Start::fresh:
      s.x = drift(p);
      break;
    case Start::full:
      s.x = p.x_cap;
      break;
    case Start::given:
      s.x = x0[i];
      break;
  }
  if (start == Start::fresh && !at_or_above_u_star(s.x, p))
    s.eta = 1, s.om_eta = p.om_alpha;  // x = u = x_1 exactly
  else
    GridTracker::init(s.x, p, &s.eta, &s.om_eta);
  switch (start) {
    case Start::empty:
      s.age = 0;
      break;
    case Start::fresh:
      s.age = 1;
      break;
    case Start::full:
      s.age = p.expiry ? AgeState::kMaxAge : AgeState::kOffGrid;
      break;
    case Start::given:
      s.age = AgeState::kOffGrid;
      break;
  }
  return s;
}

}  // namespace

Problem with_every_column(const Problem& pr) {
  if (!pr.params().compact()) return pr;
  const std::size_t n = pr.size();
  auto columns = std::make_shared<ProblemColumns>();
  ProblemColumns& c = *columns;
  c.params.resize(n, false, false);  // compact columns: no expiry, the deterministic model
  c.initial_state.resize(n), c.initial_eta.resize(n), c.initial_om_eta.resize(n);
  c.initial_age.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    c.params.set(i, pr.params().at_base(i));
    const InitialState s = pr.initial_at(i);
    c.initial_state[i] = s.x, c.initial_eta[i] = s.eta, c.initial_om_eta[i] = s.om_eta;
    c.initial_age[i] = s.age;
  }
  Problem out = pr;
  out.columns = std::move(columns);
  return out;
}

InitialState Problem::initial_at(std::size_t i) const {
  const ProblemColumns& c = *columns;
  if (!c.params.compact())
    return InitialState{c.initial_state[i], c.initial_om_eta[i], c.initial_eta[i],
                        c.initial_age[i]};
  return initial_state_of(c.params.at_base(i), config.start, nullptr, i);
}

bool compact_columns_apply(const Population& pop, const RunConfig& cfg,
                           const std::vector<Policy>& policies, bool function_policies) {
  if (function_policies || cfg.model != Model::deterministic || cfg.observe != Observe::full)
    return false;
  if (cfg.start != Start::empty && cfg.start != Start::fresh) return false;
  for (uint32_t e : pop.expiry)
    if (e > 0) return false;
  for (Policy p : policies)
    if (p == Policy::static_rate || p == Policy::lip) return false;
  return true;
}

Problem make_problem(const Population& pop, const RunConfig& cfg, ColumnSet columns) {
  validate(pop, cfg);
  return derive_problem(pop, cfg, columns);
}

Problem derive_problem(const Population& pop, const RunConfig& cfg, ColumnSet set) {
  Problem pr;
  pr.population = &pop;
  pr.config = cfg;
  const std::size_t n = pop.size();
  auto columns = std::make_shared<ProblemColumns>();
  ProblemColumns& c = *columns;
  bool expiry_columns = false;
  for (uint32_t e : pop.expiry) expiry_columns = expiry_columns || e > 0;
  const bool compact = set == ColumnSet::engine;
  if (compact) {
    CE_EXPECTS(cfg.model == Model::deterministic && !expiry_columns &&
                   (cfg.start == Start::empty || cfg.start == Start::fresh),
               "internal: compact columns are for the deterministic model without expiry from an "
               "empty or fresh start");
    c.params.alpha.resize(n), c.params.drift.resize(n);
    c.params.derived_from = &pop;
    c.params.epoch_length = cfg.epoch_length;
  } else {
    c.params.resize(n, expiry_columns, cfg.model == Model::stochastic);
    c.initial_state.resize(n);
    c.initial_eta.resize(n);
    c.initial_om_eta.resize(n);
    c.initial_age.resize(n);
  }
  const double* x0 = pop.x0.empty() ? nullptr : pop.x0.data();
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < n; ++i) {
    const uint32_t expiry = pop.expiry.empty() ? 0u : pop.expiry[i];
    const SourceParams p = derive_params(pop.lambda[i], pop.xi[i], pop.mu[i], pop.cost_of(i),
                                         cfg.epoch_length, expiry);
    if (compact) {
      c.params.alpha[i] = p.alpha, c.params.drift[i] = drift(p);
      continue;
    }
    c.params.set(i, p);
    const InitialState s = initial_state_of(p, cfg.start, x0, i);
    c.initial_state[i] = s.x, c.initial_eta[i] = s.eta, c.initial_om_eta[i] = s.om_eta;
    c.initial_age[i] = s.age;
  }
  pr.columns = std::move(columns);
  pr.unit_costs = pop.unit_costs();
  for (uint32_t e : pop.expiry) pr.has_expiry = pr.has_expiry || e > 0;
  pr.total_cost = pop.total_cost();
  pr.min_cost = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < n; ++i) pr.min_cost = std::min(pr.min_cost, pop.cost_of(i));
  double xi_scale = 0.0, s1 = 0.0, s2 = 0.0;
  for (std::size_t i = 0; i < n; ++i) xi_scale = std::max(xi_scale, pop.xi[i]);
  for (std::size_t lo = 0; lo < n; lo += kFoldChunk) {
    double p1 = 0.0, p2 = 0.0;
    for (std::size_t i = lo; i < std::min(n, lo + kFoldChunk); ++i)
      draws_terms(pop.lambda[i] * cfg.epoch_length, pop.xi[i], xi_scale, &p1, &p2);
    s1 += p1, s2 += p2;
  }
  pr.arrivals_per_epoch = effective_draws(s1, s2);
  pr.weights = cost_weights(pop.cost.data(), n, cfg.budget, pr.unit_costs);
  pr.shard = Shard{0, n, n};
  pr.first_id = pop.first_id;
  return pr;
}

}  // namespace crawleval
