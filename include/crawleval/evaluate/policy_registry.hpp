// Every policy of the ephemeral-content model a user can name (`crawleval run --policy`, Python's
// evaluate(policies=...)), in one table: what it is, what it needs before the run, a line that
// describes it, and how it is made and evaluated. The command line and Python read this table
// only, so a policy added here is offered by both, with the same checks and the same numbers.
//
//   const RegisteredPolicy& p = registered_policy("whittle_mixed", "--policy");
//   PolicyRunOptions o;                  // backend, EvaluateOptions, --index-grid, comm, observer
//   prepare_policies(problem, {&p}, o);  // the static periods, lip's relaxation: once per run
//   PolicyResult r = evaluate_policy(problem, p, o);
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "crawleval/engine/rollout.hpp"
#include "crawleval/evaluate/driver.hpp"
#include "crawleval/model/problem.hpp"

namespace crawleval {

class Comm;

/// What a policy needs prepared before it runs.
enum class PolicyNeeds {
  nothing,
  /// The relaxation's crawl periods (prepare_static_policy, bound.hpp): `static`.
  static_periods,
  /// The relaxation at the bound's multiplier (prepare_lip_policy, bound.hpp): `lip`.
  lip_relaxation,
  /// The stochastic model's numerical index (compute_stochastic_index on a lattice of
  /// PolicyRunOptions::index_grid states): `whittle_numerical`.
  numerical_index,
  /// To run on the full-observation view of the problem (function_engine_problem,
  /// function_policies.hpp): the policies that read the observe column themselves.
  function_engine_problem,
};

/// What the registry's policies report beside their results: the numerical index's lattice (the
/// command line prints it; both front ends write it to the results' JSON).
struct NumericalIndexFacts {
  std::size_t grid = 0;
  std::size_t classes = 0;  ///< classes of (lambda T, mu T), over every process
  double seconds = 0.0;
  bool indexable = true;
};
struct PolicyNotes {
  std::optional<NumericalIndexFacts> numerical_index;
};

/// How the policies of a run are prepared and evaluated.
struct PolicyRunOptions {
  /// Where the built-in policies run (resolved: not automatic); score functions run on the CPU.
  Backend backend = Backend::cpu;
  EvaluateOptions eval;
  std::size_t index_grid = 800;  ///< whittle_numerical's lattice states per class
  /// The processes of a sharded problem (null: one process): the preparations and evaluations are
  /// then collectives that every process calls alike.
  Comm* comm = nullptr;
  /// One process: sees the measured run's epochs (driver.hpp's evaluate).
  const EpochObserver* observer = nullptr;
};

struct RegisteredPolicy;
/// Makes a score-function policy for `problem` (after prepare_policies), writing what it reports
/// into `notes` (which may be null).
using MakeScoreFn = ScoreFn (*)(const Problem& problem, const PolicyRunOptions& options,
                                PolicyNotes* notes);

struct RegisteredPolicy {
  const char* name;         ///< as users write it and outputs show it
  const char* description;  ///< one line (the command line's --policy help)
  /// The engines' own policy (policy.hpp: every backend); none: a score function run by the
  /// function engine on the CPU (rollout.hpp), made by `make`.
  std::optional<Policy> builtin;
  PolicyNeeds needs = PolicyNeeds::nothing;
  MakeScoreFn make = nullptr;

  bool score_function() const { return !builtin.has_value(); }
};

/// Every policy, in the order the help and the messages list them: the built-in ones first.
const std::vector<RegisteredPolicy>& policy_registry();
/// The entry of `name`, or null.
const RegisteredPolicy* find_policy(const std::string& name);
/// The entry of `name`, else InputError "`what` 'name' is not one of: whittle, greedy, ...".
const RegisteredPolicy& registered_policy(const std::string& name, const std::string& what);
/// Every name, joined by `separator` ("whittle, greedy, ..." for messages).
std::string policy_choices(const std::string& separator = ", ");

/// The per-source data the policies need (PolicyNeeds::static_periods, lip_relaxation), computed
/// once into `problem`; under options.comm a collective.
void prepare_policies(Problem& problem, const std::vector<const RegisteredPolicy*>& policies,
                      const PolicyRunOptions& options);

/// The policy's result on `problem` (prepared by prepare_policies): a built-in one on
/// options.backend (sharded over options.comm when given), a score function on the function
/// engine. `notes` (may be null) receives what the policy reports.
PolicyResult evaluate_policy(const Problem& problem, const RegisteredPolicy& policy,
                             const PolicyRunOptions& options, PolicyNotes* notes = nullptr);

}  // namespace crawleval
