// The policies a user can name, and how each is prepared, made and evaluated
// (policy_registry.hpp).
#include "crawleval/evaluate/policy_registry.hpp"

#include <algorithm>
#include <array>
#include <memory>

#include "crawleval/analysis/bound.hpp"
#include "crawleval/analysis/function_policies.hpp"
#include "crawleval/analysis/stochastic_index.hpp"
#include "crawleval/base/comm.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/base/monitor.hpp"

namespace crawleval {

namespace {

/// Under MPI each process computes the numerical index of its own sources' classes: the run is
/// refused, as in one process, when the processes' classes together exceed the limit (a
/// collective). Returns the number of classes over every process (what one process reports).
std::size_t check_index_classes(Comm& world, const Problem& pr) {
  std::vector<std::array<double, 2>> mine;
  for (std::size_t i = 0; i < pr.size(); ++i) {
    const SourceParams p = pr.params().at(i);
    if (p.lambda_t > 0.0 && p.xi > 0.0) mine.push_back({p.lambda_t, p.mu_t});
  }
  std::sort(mine.begin(), mine.end());
  mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
  std::vector<std::array<double, 2>> all = world.allgather(mine);
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  constexpr std::size_t kMaxClasses = 256;  // compute_stochastic_index's default
  if (all.size() > kMaxClasses)             // every process has the same list
    throw AgreedInputError(
        "the numerical Whittle index is computed per class of sources with the same lambda T and "
        "mu T; " +
        printable(pr.population->origin, 256) + " has more than " + std::to_string(kMaxClasses) +
        " classes");
  return all.size();
}

ScoreFn numerical_index(const Problem& problem, const PolicyRunOptions& o, PolicyNotes* notes) {
  set_activity("computing the numerical Whittle index");
  StochasticIndexOptions io;
  io.grid = o.index_grid;
  // Under MPI the classes over every process are checked first, so that a population is refused
  // for them as in one process (not for one class that some process solves first).
  std::size_t classes = o.comm ? check_index_classes(*o.comm, problem) : 0;
  auto index = std::make_shared<const StochasticIndex>(compute_stochastic_index(problem, io));
  if (!o.comm) classes = index->tables.size();
  for (const IndexTable& t : index->tables)
    if (!t.indexable) throw InputError("not indexable on the lattice: " + t.not_indexable);
  if (notes)
    notes->numerical_index = NumericalIndexFacts{o.index_grid, classes, index->seconds, true};
  // (stochastic_index_policy reads the index it is given: the score keeps it alive.)
  return [index, score = stochastic_index_policy(problem, *index)](const ScoreRequest& r) {
    score(r);
  };
}

ScoreFn expiry_paper(const Problem& problem, const PolicyRunOptions&, PolicyNotes*) {
  return expiry_paper_index_policy(problem);
}

// The mixed and adaptive policies are built from the run's problem (its --observe says how the
// sources without an observe column entry are observed) and run on its full-observation view.
ScoreFn whittle_mixed(const Problem& problem, const PolicyRunOptions&, PolicyNotes*) {
  return mixed_observation_policy(problem, Policy::whittle);
}
ScoreFn greedy_mixed(const Problem& problem, const PolicyRunOptions&, PolicyNotes*) {
  return mixed_observation_policy(problem, Policy::greedy);
}
ScoreFn adaptive_whittle(const Problem& problem, const PolicyRunOptions&, PolicyNotes*) {
  return adaptive_whittle_policy(problem);
}

}  // namespace

const std::vector<RegisteredPolicy>& policy_registry() {
  using N = PolicyNeeds;
  static const std::vector<RegisteredPolicy> registry = {
      // The engines' own policies (policy.hpp).
      {"whittle", "the index of Theorem 1", Policy::whittle},
      {"greedy", "the highest state per unit of cost, X / C", Policy::greedy},
      {"round_robin", "the cyclic order of ids", Policy::round_robin},
      {"random", "a fresh uniform score per source and epoch", Policy::random},
      {"static", "the relaxation's crawl periods as a schedule", Policy::static_rate,
       N::static_periods},
      {"lip", "the Lagrangian index (Avrachenkov, Borkar and Shah)", Policy::lip,
       N::lip_relaxation},
      // The papers' policies given as score functions (function_policies.hpp,
      // stochastic_index.hpp).
      {"whittle_numerical", "the stochastic model's Whittle index, computed numerically",
       std::nullopt, N::numerical_index, numerical_index},
      {"whittle_expiry_paper", "the learning paper's own expiry index (its eqs. 4-5)", std::nullopt,
       N::nothing, expiry_paper},
      {"whittle_mixed", "whittle reading the observe column (full or belief per source)",
       std::nullopt, N::function_engine_problem, whittle_mixed},
      {"greedy_mixed", "greedy reading the observe column (full or belief per source)",
       std::nullopt, N::function_engine_problem, greedy_mixed},
      {"adaptive_whittle", "whittle with lambda xi estimated from what it observes", std::nullopt,
       N::function_engine_problem, adaptive_whittle},
  };
  return registry;
}

const RegisteredPolicy* find_policy(const std::string& name) {
  for (const RegisteredPolicy& p : policy_registry())
    if (name == p.name) return &p;
  return nullptr;
}

std::string policy_choices(const std::string& separator) {
  std::string out;
  for (const RegisteredPolicy& p : policy_registry()) {
    if (!out.empty()) out += separator;
    out += p.name;
  }
  return out;
}

const RegisteredPolicy& registered_policy(const std::string& name, const std::string& what) {
  if (const RegisteredPolicy* p = find_policy(name)) return *p;
  throw InputError(what + " '" + printable(name) + "' is not one of: " + policy_choices());
}

void prepare_policies(Problem& problem, const std::vector<const RegisteredPolicy*>& policies,
                      const PolicyRunOptions& o) {
  auto needs = [&](PolicyNeeds n) {
    return std::any_of(policies.begin(), policies.end(),
                       [n](const RegisteredPolicy* p) { return p->needs == n; });
  };
  if (needs(PolicyNeeds::static_periods))
    o.comm ? prepare_static_policy(problem, *o.comm) : prepare_static_policy(problem);
  if (needs(PolicyNeeds::lip_relaxation)) {
    set_activity("computing the lip policy's multiplier");
    o.comm ? prepare_lip_policy(problem, *o.comm) : prepare_lip_policy(problem);
  }
}

PolicyResult evaluate_policy(const Problem& problem, const RegisteredPolicy& policy,
                             const PolicyRunOptions& o, PolicyNotes* notes) {
  if (policy.builtin) {
    set_activity(std::string("simulating ") + policy.name);
    return o.comm ? evaluate_sharded(problem, *policy.builtin, *o.comm, o.eval, o.backend)
                  : evaluate(problem, *policy.builtin, o.backend, o.observer, o.eval);
  }
  CE_EXPECTS(policy.make, std::string("internal: the policy ") + policy.name + " has no maker");
  const ScoreFn score = policy.make(problem, o, notes);
  set_activity(std::string("simulating ") + policy.name);
  // On a GPU where asked for, not where chosen automatically (no device has run it yet).
  const Backend backend =
      o.backend == Backend::cuda && !o.eval.fallback_to_cpu ? Backend::cuda : Backend::cpu;
  if (policy.needs != PolicyNeeds::function_engine_problem)
    return evaluate_function(problem, policy.name, score, o.eval, o.comm, o.observer, nullptr,
                             backend);
  // These see true states only where their sources reveal them: the function engine runs them
  // with full observation (rewards do not depend on it).
  const Problem engine = function_engine_problem(problem);
  return evaluate_function(engine, policy.name, score, o.eval, o.comm, o.observer, nullptr,
                           backend);
}

}  // namespace crawleval
