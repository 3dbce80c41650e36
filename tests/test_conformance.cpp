// The conformance matrix: every model x policy kind x engine, in one table (kRules). Each cell
// that runs or must be refused is a named test of its own
// (Conformance/OneProcess.Cell/Belief_Greedy_CpuWide; run one with
// --gtest_filter='*Belief_Greedy_CpuWide').
//
// A cell marked ok must give the reference engine's crawled sets epoch by epoch and the
// one-process CPU backend's rewards bit for bit (the CPU backend itself: the reference's rewards,
// bit for bit in its small engine and within 1e-12 relative in its wide one, as its contract says;
// the freshness model's engines: its literal reference's within 1e-12 relative; CUDA: within
// rounding, rollout.hpp). A cell marked refused must be refused with an InputError (or the command
// line's exit code 2) whose message contains the rule's reason: never run. A cell not built yet
// (a feature crawleval lacks) or not applicable (meaningless) has no test. docs/coverage.md's
// table is rendered from the same rules and checked here, so it cannot drift.
//
// ctest runs this binary four ways (tests/CMakeLists.txt): every one-process cell as a ctest entry
// of its own (gtest_discover_tests), with the rules' and the table's tests; the CUDA cells
// (label gpu: skipped without a device); the MPI cells under mpirun for P = 1..4, one ctest entry
// per P (Conformance/Mpi.* and ConformanceMpi.*: the sharded, function and freshness engines over
// the ranks, rank 0 comparing; each GPU-per-rank cell's own command line, refused, in the test's
// ranks); and the real binary's refusal under mpirun (ConformanceCli, conformance_cli).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>

#include "cli/command_line.hpp"
#include "crawleval/analysis/bound.hpp"
#include "crawleval/analysis/fresh_rates.hpp"
#include "crawleval/analysis/function_policies.hpp"
#include "crawleval/analysis/stochastic_index.hpp"
#include "crawleval/base/comm.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/engine/cuda_backend.hpp"
#include "crawleval/engine/fresh_engine.hpp"
#include "crawleval/engine/keyed_rollout.hpp"
#include "crawleval/engine/sharded.hpp"
#include "crawleval/evaluate/fresh_evaluate.hpp"
#include "crawleval/evaluate/policy_registry.hpp"
#include "crawleval/io/io.hpp"
#include "crawleval/model/policy.hpp"
#include "test_util.hpp"

namespace ce = crawleval;
using ce::testing::fresh_observed;
using ce::testing::FreshTrace;
using ce::testing::observed;
using ce::testing::Trace;
using ce::testing::world;

namespace {

// ---------------------------------------------------------------------------------------------
// The matrix.

enum Model : uint32_t {
  kDet,           // ephemeral content, deterministic arrivals, full observation, unit costs
  kStoExp,        // stochastic arrivals, exponential utilities
  kStoLognormal,  // stochastic, a heavy law: lognormal:2
  kBelief,        // stochastic, belief observation
  kExpiry,        // stochastic, content expiry (an expiry column)
  kCosts,         // stochastic, non-unit costs
  kFresh,         // the freshness model
  kFreshCaps,     // the freshness model with politeness caps
  kFreshLearn,    // the freshness model's learning variant (estimated rates), with caps
  kModels
};
constexpr std::array<const char*, kModels> kModelName = {
    "deterministic",      "stochastic",           "stochastic, lognormal:2",
    "belief observation", "content expiry",       "non-unit costs",
    "freshness",          "freshness, host caps", "freshness, learning, host caps"};
/// The models in the cells' test names.
constexpr std::array<const char*, kModels> kModelTag = {
    "Det", "Sto", "Lognormal", "Belief", "Expiry", "Costs", "Fresh", "FreshCaps", "FreshLearn"};

enum Kind : uint32_t {
  // built-in policies (policy.hpp)
  kWhittle,
  kGreedy,
  kRoundRobin,
  kRandom,
  kStatic,
  kLip,
  // a user's score function computing a built-in policy's scores (rollout.hpp's ScoreFn)
  kUserGreedy,
  kUserWhittle,
  kUserRandom,
  // the papers' policies given as score functions (function_policies.hpp, stochastic_index.hpp)
  kWhittleMixed,
  kGreedyMixed,
  kWhittleExpiryPaper,
  kAdaptiveWhittle,
  kWhittleNumerical,
  // the freshness model's schedulers (fresh_engine.hpp)
  kFIndex,
  kFGreedy,
  kFLambdaCrawl,
  kFLambdaCrawlApprox,
  kFBinaryLambdaCrawl,
  kFUniform,
  kFProportional,
  kFRandom,
  kFNutch,   // nutch-adaptive (model/nutch.hpp): a schedule per URL the engines carry
  kFCustom,  // custom: the header CMake's CRAWLEVAL_FRESH_POLICY compiles in
  // a user's score function for the freshness model, computing the index (FreshScoreFn)
  kFUserIndex,
  kKinds
};
constexpr std::array<const char*, kKinds> kKindName = {"whittle",
                                                       "greedy",
                                                       "round_robin",
                                                       "random",
                                                       "static",
                                                       "lip",
                                                       "greedy",
                                                       "whittle",
                                                       "random",
                                                       "whittle_mixed",
                                                       "greedy_mixed",
                                                       "whittle_expiry_paper",
                                                       "adaptive_whittle",
                                                       "whittle_numerical",
                                                       "index",
                                                       "greedy",
                                                       "lambda_crawl",
                                                       "lambda_crawl_approx",
                                                       "binary_lambda_crawl",
                                                       "uniform",
                                                       "proportional",
                                                       "random",
                                                       "nutch_adaptive",
                                                       "custom",
                                                       "index"};
constexpr std::array<const char*, kKinds> kKindTag = {"Whittle",
                                                      "Greedy",
                                                      "RoundRobin",
                                                      "Random",
                                                      "Static",
                                                      "Lip",
                                                      "UserGreedy",
                                                      "UserWhittle",
                                                      "UserRandom",
                                                      "WhittleMixed",
                                                      "GreedyMixed",
                                                      "WhittleExpiryPaper",
                                                      "AdaptiveWhittle",
                                                      "WhittleNumerical",
                                                      "Index",
                                                      "Greedy",
                                                      "LambdaCrawl",
                                                      "LambdaCrawlApprox",
                                                      "BinaryLambdaCrawl",
                                                      "Uniform",
                                                      "Proportional",
                                                      "Random",
                                                      "NutchAdaptive",
                                                      "Custom",
                                                      "UserIndex"};

enum Engine : uint32_t {
  kReference,  // reference_rollout; the freshness model: fresh_reference (fresh_rollout's flag)
  kCpuSmall,   // cpu_rollout with N <= kCpuSmallN; freshness: the CPU engine, serial (N <
               // kFreshSerialN)
  kCpuWide,    // cpu_rollout with N > kCpuSmallN; freshness: the CPU engine on threads
  kFunction,   // function_rollout (small and wide sizes)
  kMpi,        // sharded_rollout under mpirun, P = 1..4
  kCuda,       // cuda::rollout / fresh_rollout_cuda (skipped without a device)
  kMpiCuda,    // a GPU per MPI rank
  kEngines
};
constexpr std::array<const char*, kEngines> kEngineName = {
    "reference",     "CPU small", "CPU wide",        "function engine",
    "MPI, P = 1..4", "CUDA",      "GPU per MPI rank"};
constexpr std::array<const char*, kEngines> kEngineTag = {
    "Reference", "CpuSmall", "CpuWide", "Function", "Mpi", "Cuda", "MpiCuda"};

/// ok: runs and matches; pending: runs on a code path that has a host twin but has not run on a
/// device yet (a GPU cell: checked like ok where a device is present; the rule says which twin);
/// refused: refused with the rule's reason (checked); not_built: a feature crawleval lacks (no
/// front end runs it); na: meaningless (or, with a reason, nothing to compare it with in one
/// process).
enum class Status { ok, pending, refused, not_built, na };
constexpr bool runs(Status s) { return s == Status::ok || s == Status::pending; }

constexpr uint32_t bit(uint32_t i) { return 1u << i; }
constexpr uint32_t kAll = 0xFFFFFFFFu;
constexpr uint32_t kEphemeral =
    bit(kDet) | bit(kStoExp) | bit(kStoLognormal) | bit(kBelief) | bit(kExpiry) | bit(kCosts);
constexpr uint32_t kFreshModels = bit(kFresh) | bit(kFreshCaps) | bit(kFreshLearn);
constexpr uint32_t kBuiltIn =
    bit(kWhittle) | bit(kGreedy) | bit(kRoundRobin) | bit(kRandom) | bit(kStatic) | bit(kLip);
constexpr uint32_t kUser = bit(kUserGreedy) | bit(kUserWhittle) | bit(kUserRandom);
constexpr uint32_t kFreshUser = bit(kFUserIndex);
constexpr uint32_t kPaper = bit(kWhittleMixed) | bit(kGreedyMixed) | bit(kWhittleExpiryPaper) |
                            bit(kAdaptiveWhittle) | bit(kWhittleNumerical);
constexpr uint32_t kFreshKinds = bit(kFIndex) | bit(kFGreedy) | bit(kFLambdaCrawl) |
                                 bit(kFLambdaCrawlApprox) | bit(kFBinaryLambdaCrawl) |
                                 bit(kFUniform) | bit(kFProportional) | bit(kFRandom) |
                                 bit(kFNutch) | bit(kFCustom);
constexpr uint32_t kNative = bit(kReference) | bit(kCpuSmall) | bit(kCpuWide);
constexpr uint32_t kGpu = bit(kCuda) | bit(kMpiCuda);

/// Cells (models x kinds x engines as bit sets) and what they do; the first rule that matches a
/// cell decides it. A refused cell's `why` is part of the error message it must give.
struct Rule {
  uint32_t models, kinds, engines;
  Status status;
  const char* why;
};

constexpr const char* kGenericPass =
    "the wide engine's generic pass, checked by its host twin "
    "(GenericPass.HostTwinEqualsTheReference); "
    "device run pending";
constexpr const char* kGpuPerRank =
    "a GPU per rank (keyed_rollout), checked by its host twin under mpirun (P = 1, 3), bit for "
    "bit one process; device run pending";
constexpr const char* kGpuKeyedFunction =
    "keyed_rollout, the function run on the host, the sources on the GPU, against the CPU "
    "function engine; device run pending";
constexpr const char* kGpuPerRankFunction =
    "a GPU per rank (keyed_rollout), the function on each rank's host, checked by its host twin "
    "under mpirun (P = 1, 3), bit for bit one process; device run pending";
constexpr const char* kFreshGpuPerRank =
    "a GPU per rank (fresh_keyed), checked by its host twin under mpirun (P = 1, 3), bit for bit "
    "one process; device run pending";
constexpr const char* kFreshGpuPerRankFunction =
    "a GPU per rank (fresh_keyed), the function on each rank's host, checked by its host twin "
    "under mpirun (P = 1, 3), bit for bit one process; device run pending";
constexpr const char* kGpuFunction =
    "cuda::function_rollout, the function run from the host (cuda::from_host); device run "
    "pending";

constexpr Rule kRules[] = {
    // A user's score function for the freshness model: the freshness engines call it
    // themselves (with the learning variant's estimated rates where it runs); one GPU from the
    // host, a GPU per rank on each rank's host.
    {kFreshModels, kFreshUser, bit(kFunction), Status::na, "the freshness engines call it"},
    {bit(kFreshLearn), kFreshUser, kGpu, Status::refused,
     "the learning variant runs on the CPU only"},
    {kFreshModels, kFreshUser, bit(kCuda), Status::pending,
     "cuda::fresh_epochs, the function run from the host (cuda::fresh_from_host); device run "
     "pending"},
    {kFreshModels, kFreshUser, bit(kMpiCuda), Status::pending, kFreshGpuPerRankFunction},
    // Each family of models runs its own policies.
    {kFreshModels, ~(kFreshKinds | kFreshUser), kAll, Status::na, "an ephemeral-content policy"},
    {kEphemeral, kFreshKinds | kFreshUser, kAll, Status::na, "a freshness scheduler"},
    // The freshness model: its reference, its CPU engine, its GPU engine.
    {kFreshModels, kAll, bit(kFunction), Status::na, "a built-in scheduler"},
    {bit(kFresh) | bit(kFreshCaps), bit(kFNutch), bit(kCuda), Status::pending,
     "the CUDA freshness engine's per-URL schedule; device run pending (--backend auto runs it "
     "on the CPU)"},
    {bit(kFreshLearn), kAll, kGpu, Status::refused, "the learning variant runs on the CPU only"},
    {kFreshModels, bit(kFCustom), bit(kCuda), Status::pending,
     "the header compiled into the CUDA freshness engine (CRAWLEVAL_FRESH_POLICY_ON_GPU); device "
     "run pending (--backend auto runs it on the CPU)"},
    {kFreshModels, kAll, bit(kMpiCuda), Status::pending, kFreshGpuPerRank},
    {kFreshModels, kAll, kNative | bit(kMpi) | bit(kCuda), Status::ok, ""},
    // Built-in policies: the native engines, sharded, on the GPU.
    {kAll, kBuiltIn, bit(kFunction), Status::na, "a built-in policy"},
    {kAll, kBuiltIn, bit(kMpiCuda), Status::pending, kGpuPerRank},
    {bit(kStoLognormal) | bit(kBelief) | bit(kExpiry), kBuiltIn, bit(kCuda), Status::pending,
     kGenericPass},
    {kAll, bit(kStatic) | bit(kLip), bit(kCuda), Status::pending, kGenericPass},
    {kAll, kBuiltIn, kAll, Status::ok, ""},
    // Score functions: the function engine (CPU), in one process and over MPI ranks; on one GPU
    // (a user's through cuda::function_rollout, the papers' through keyed_rollout) and on a GPU
    // per rank (keyed_rollout), the function on the host of each process.
    {kAll, kUser, bit(kCuda), Status::pending, kGpuFunction},
    {kAll, kUser | kPaper, kNative, Status::na, "a score function"},
    {bit(kDet), bit(kWhittleNumerical), kAll, Status::refused,
     "the numerical Whittle index is the stochastic model's"},
    {bit(kBelief), bit(kWhittleNumerical), kAll, Status::refused,
     "the numerical Whittle index is for full observation"},
    {bit(kExpiry), bit(kWhittleNumerical), kAll, Status::refused,
     "the numerical Whittle index does not model content expiry yet"},
    // No reference computes these two: their MPI cells are compared with one process, their GPU
    // cells with the CPU function engine running the same function.
    {kAll, bit(kWhittleNumerical), bit(kFunction), Status::na,
     "its own index: no second engine computes it"},
    {bit(kExpiry), bit(kAdaptiveWhittle), kAll, Status::refused,
     "the adaptive Whittle policy does not model content expiry yet"},
    {kAll, bit(kAdaptiveWhittle), bit(kFunction), Status::na,
     "learns lambda xi: no built-in equivalent"},
    {bit(kExpiry), bit(kWhittleExpiryPaper), kAll, Status::na,
     "the paper's expiry index, not crawleval's"},
    {kAll, kPaper, bit(kCuda), Status::pending, kGpuKeyedFunction},
    {kAll, kUser | kPaper, bit(kMpiCuda), Status::pending, kGpuPerRankFunction},
    {kAll, kUser | kPaper, kAll, Status::ok, ""},
};

const Rule* rule_of(uint32_t m, uint32_t k, uint32_t e) {
  for (const Rule& r : kRules)
    if ((r.models & bit(m)) && (r.kinds & bit(k)) && (r.engines & bit(e))) return &r;
  return nullptr;
}

std::string label(uint32_t m, uint32_t k, uint32_t e) {
  return std::string(kModelName[m]) + " x " + kKindName[k] +
         (((kUser | kFreshUser) & bit(k)) ? " (user)" : "") + " x " + kEngineName[e];
}

// ---------------------------------------------------------------------------------------------
// The cells as tests: every cell of these engines that runs (ok) or must be refused.

struct Cell {
  Model m;
  Kind k;
  Engine e;
};

std::vector<Cell> cells_of(std::initializer_list<Engine> engines) {
  std::vector<Cell> out;
  for (uint32_t m = 0; m < kModels; ++m)
    for (uint32_t k = 0; k < kKinds; ++k)
      for (Engine e : engines) {
        const Status s = rule_of(m, k, e)->status;
        if (runs(s) || s == Status::refused) out.push_back(Cell{Model(m), Kind(k), e});
      }
  return out;
}

std::string cell_name(const ::testing::TestParamInfo<Cell>& info) {
  const Cell& c = info.param;
  return std::string(kModelTag[c.m]) + "_" + kKindTag[c.k] + "_" + kEngineTag[c.e];
}

class OneProcess : public ::testing::TestWithParam<Cell> {};
class Cuda : public ::testing::TestWithParam<Cell> {};
class Mpi : public ::testing::TestWithParam<Cell> {};

// ---------------------------------------------------------------------------------------------
// The crawling model's cells: problems and runs.

constexpr std::size_t kSmallN = 300;   // <= kCpuSmallN, < kFreshSerialN
constexpr std::size_t kWideN = 40000;  // > kCpuSmallN, > kFreshSerialN, two fold chunks
constexpr std::size_t kMpiN = 3 * ce::kFoldChunk + 777;  // four ranks hold a shard each
static_assert(kSmallN <= ce::kCpuSmallN && kWideN > ce::kCpuSmallN && kWideN > ce::kFreshSerialN);

ce::Population population(Model m, std::size_t n) {
  ce::Population pop = ce::testing::random_population(n, 7 + n + m, m != kCosts, false);
  if (m == kExpiry) {
    pop.expiry.resize(n);
    for (std::size_t i = 0; i < n; ++i) pop.expiry[i] = i % 3 ? uint32_t(2 + i % 5) : 0u;
  }
  return pop;
}

ce::RunConfig config(Model m, std::size_t n, int threads) {
  ce::RunConfig cfg;
  cfg.budget = std::floor(double(n) / 7) + (m == kCosts ? 0.5 : 0.0);
  cfg.epochs = 6;
  cfg.burn_in = 2;
  cfg.replications = 2;
  cfg.seed = 3;
  cfg.threads = threads;
  cfg.start = ce::Start::empty;  // the user's whittle reads the AgeState word off its age
  cfg.model = m == kDet ? ce::Model::deterministic : ce::Model::stochastic;
  if (m == kStoLognormal) ce::set_utility(cfg, "lognormal:2");
  if (m == kBelief) cfg.observe = ce::Observe::belief;
  return cfg;
}

/// The built-in policy whose run a cell's policy must reproduce.
ce::Policy builtin_of(Kind k) {
  switch (k) {
    case kGreedy:
    case kUserGreedy:
    case kGreedyMixed:
      return ce::Policy::greedy;
    case kRoundRobin:
      return ce::Policy::round_robin;
    case kRandom:
    case kUserRandom:
      return ce::Policy::random;
    case kStatic:
      return ce::Policy::static_rate;
    case kLip:
      return ce::Policy::lip;
    default:
      return ce::Policy::whittle;
  }
}

/// A user's policy: the scores of a built-in policy from what ScoreRequest gives (state and age).
ce::ScoreFn user_policy(const ce::Problem& pr, Kind k) {
  return [&pr, k](const ce::ScoreRequest& q) {
    for (std::size_t i = 0; i < q.n; ++i) {
      const ce::SourceParams p = pr.params().at(i);
      if (k == kUserGreedy) {
        q.scores[i] = q.state[i] * pr.params().inv_cost[i];
      } else if (k == kUserRandom) {
        q.scores[i] = ce::random_score(pr.config.seed, q.replication, uint32_t(q.first + i),
                                       uint32_t(q.epoch));
      } else if (pr.config.observe == ce::Observe::belief) {
        // From an empty start every source is on the age grid: its word is its age.
        const uint32_t w = uint32_t(q.age[i]);
        double om_eta = 0.0;
        const double seen = ce::AgeState::value(w, uint32_t(q.epoch), 0.0, p, &om_eta);
        q.scores[i] = ce::AgeState::index(w, seen, om_eta, p);
      } else {
        q.scores[i] = ce::whittle_index(q.state[i], p);
      }
    }
  };
}

/// A score-function cell's run on the function engine (InputError where the policy refuses);
/// `comm`: the ranks of a sharded problem (each calls the function on its shard).
/// Where a score function's cells run it: the CPU function engine (function_rollout), or
/// keyed_rollout with its pass's host twin or a device's.
enum class FnEngine { cpu, keyed_twin, keyed_device };

Trace function_run(const ce::Problem& pr, Kind k, ce::Comm* comm = nullptr,
                   FnEngine engine = FnEngine::cpu) {
  auto run = [&](const ce::Problem& p, const ce::ScoreFn& score) {
    return observed([&](const ce::EpochObserver* o) {
      if (engine == FnEngine::cpu)
        return ce::function_rollout(p, score, kKindName[k], o, nullptr, comm);
      const auto pass = engine == FnEngine::keyed_device
                            ? ce::cuda::keyed_pass(
                                  ce::detail::keyed_columns(p, ce::Policy::whittle, true), p.size())
                            : ce::detail::host_keyed_pass(p, ce::Policy::whittle, true);
      return ce::keyed_rollout(p, ce::Policy::whittle, comm ? *comm : ce::solo_comm(), *pass, o,
                               &score);
    });
  };
  if (kUser & bit(k)) return run(pr, user_policy(pr, k));
  // The papers' policies as the command line and Python make them: from the policy registry
  // (policy_registry.hpp), whose entry says how the policy is built and on which view of the
  // problem it runs. Each process builds its policy from its own shard, as function_rollout's
  // callers do (no comm: whittle_numerical's classes are its shard's).
  const ce::RegisteredPolicy& p = ce::registered_policy(kKindName[k], "policy");
  ce::PolicyRunOptions options;
  options.index_grid = 100;  // a coarse lattice: the cell checks the engines, not the index
  const ce::ScoreFn score = p.make(pr, options, nullptr);
  // The mixed and adaptive policies read only what their sources reveal, on the full-observation
  // view of the problem (function_policies.hpp).
  if (p.needs != ce::PolicyNeeds::function_engine_problem) return run(pr, score);
  return run(ce::function_engine_problem(pr), score);
}

template <class T>
void expect_same_sets(const ce::testing::RunTrace<T>& got, const ce::testing::RunTrace<T>& want) {
  ASSERT_EQ(got.epochs, want.epochs);
  for (std::size_t e = 0; e < want.sets.size(); ++e)
    ASSERT_EQ(got.sets[e], want.sets[e])
        << "replication " << want.epochs[e].first << " epoch " << want.epochs[e].second;
}

void expect_same_rewards(const Trace& got, const Trace& want) {
  EXPECT_EQ(got.rewards, want.rewards);
  EXPECT_EQ(got.out.replication_reward, want.out.replication_reward);
  EXPECT_EQ(got.out.replication_cost, want.out.replication_cost);
  EXPECT_EQ(got.out.epoch_reward, want.out.epoch_reward);
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want, double rel) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], rel * std::max(1.0, std::abs(want[i]))) << i;
}

void expect_refused(const std::function<void()>& f, const char* why) {
  try {
    f();
    ADD_FAILURE() << "ran; expected a refusal naming: " << why;
  } catch (const ce::InputError& e) {
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
}

/// Where a run needs only the compact columns (ColumnSet::engine: alpha and drift held, the other
/// fields and the initial states derived when read, the population's implied columns dropped, as
/// `crawleval run` does), the engine gives what it gives with every column, bit for bit; so does
/// the bound.
void check_compact_columns(const ce::Population& pop, const ce::Problem& full, ce::Policy base,
                           const Trace& want, Engine e) {
  if (!ce::compact_columns_apply(pop, full.config, {base}, false)) return;
  SCOPED_TRACE("compact columns");
  ce::Population lean = pop;
  const ce::Problem pr = ce::make_problem(lean, full.config, ce::ColumnSet::engine);
  lean.drop_implied_columns(pr.unit_costs);
  ASSERT_TRUE(pr.params().compact());
  ASSERT_TRUE(lean.cost.empty() || !full.unit_costs);
  const Trace got = observed([&](const ce::EpochObserver* o) {
    return e == kReference ? ce::reference_rollout(pr, base, o) : ce::cpu_rollout(pr, base, o);
  });
  expect_same_sets(got, want);
  expect_same_rewards(got, want);
  if (base != ce::Policy::whittle || e != kReference) return;  // one bound per population
  const ce::BoundResult b = ce::lagrangian_bound(pr), b_full = ce::lagrangian_bound(full);
  EXPECT_EQ(b.bound, b_full.bound);
  EXPECT_EQ(b.lambda, b_full.lambda);
  EXPECT_EQ(ce::lagrangian_bound_reference(pr).bound, ce::lagrangian_bound_reference(full).bound);
}

// One process, the ephemeral-content model: the reference, the CPU backend's two engines, the
// function engine. The reference and the CPU backend's run of the built-in policy are what every
// other engine is compared with.
void check_ephemeral_cell(Model m, Kind k, Engine e, const Rule& rule) {
  for (std::size_t n : {kSmallN, kWideN}) {
    if ((e == kCpuSmall && n != kSmallN) || (e == kCpuWide && n != kWideN)) continue;
    if (e == kReference && n != kSmallN) continue;
    SCOPED_TRACE("N " + std::to_string(n));
    const ce::Population pop = population(m, n);
    ce::Problem pr = ce::make_problem(pop, config(m, n, 2));
    const ce::Policy base = builtin_of(k);
    if (base == ce::Policy::static_rate) ce::prepare_static_policy(pr);
    if (base == ce::Policy::lip) ce::prepare_lip_policy(pr);
    if (rule.status == Status::refused) {
      expect_refused([&] { function_run(pr, k); }, rule.why);
      continue;
    }
    const Trace ref =
        observed([&](const ce::EpochObserver* o) { return ce::reference_rollout(pr, base, o); });
    if (e == kReference) {
      check_compact_columns(pop, pr, base, ref, e);
      // The baseline itself: every epoch within the budget, the output its epochs' mean.
      for (std::size_t t = 0; t < ref.sets.size(); ++t) {
        double spent = 0.0;
        for (uint32_t i : ref.sets[t]) spent += pop.cost[i];
        EXPECT_LE(spent, pr.config.budget) << ref.epochs[t].second;
      }
      double sum = 0.0;
      for (uint64_t t = pr.config.burn_in; t < pr.total_epochs(); ++t) sum += ref.rewards.at(t);
      EXPECT_NEAR(ref.out.replication_reward[0], sum / double(pr.config.epochs), 1e-12 * sum);
      continue;
    }
    const Trace cpu =
        observed([&](const ce::EpochObserver* o) { return ce::cpu_rollout(pr, base, o); });
    expect_same_sets(cpu, ref);
    if (e != kFunction) check_compact_columns(pop, pr, base, cpu, e);
    if (e == kCpuSmall) {
      expect_same_rewards(cpu, ref);
    } else if (e == kCpuWide) {
      expect_near(cpu.out.replication_reward, ref.out.replication_reward, 1e-12);
    } else {
      const Trace got = function_run(pr, k);
      expect_same_sets(got, ref);
      expect_same_rewards(got, cpu);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The freshness model's cells.

bool capped(Model m) { return m == kFreshCaps || m == kFreshLearn; }

ce::FreshPopulation fresh_population(Model m, std::size_t n) {
  std::mt19937_64 rng(100 + n + m);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  ce::FreshPopulation p;
  p.origin = "conformance";
  p.resize(n);
  const std::size_t hosts = n / 12 + 1;
  for (std::size_t i = 0; i < n; ++i) {
    p.id[i] = i;
    p.rate[i] = 0.05 + 1.5 * U(rng) * U(rng);
    p.importance[i] = std::floor(1.0 + 9.0 * U(rng));
    p.cost[i] = 1.0;
    p.complete[i] = U(rng) < 0.2 ? 1 : 0;
    p.host[i] = capped(m) ? uint64_t(U(rng) * U(rng) * double(hosts)) : i;
    p.constrained[i] = capped(m) && p.host[i] % 3 != 2;
  }
  return p;
}

/// The built-in scheduler of a kind (a user's score function: the one it computes).
ce::FreshPolicy fresh_policy(Kind k) {
  return k == kFUserIndex ? ce::FreshPolicy::index : ce::FreshPolicy(int(k) - int(kFIndex));
}

/// A user's score function computing the index from what it is handed (FreshScoreRequest: the
/// ages, the completely observed sources' missed changes, the learning variant's estimated rates)
/// and the population's columns.
ce::FreshScoreFn user_index(const ce::FreshPopulation& pop, const ce::FreshConfig& cfg) {
  // (Under MPI row i of the request is the run's source q.first + i: pop is the whole population.)
  return [&pop, cfg](const ce::FreshScoreRequest& q) {
    EXPECT_EQ(q.rate != nullptr, cfg.learn);
    for (std::size_t i = 0; i < q.n; ++i) {
      const std::size_t g = std::size_t(q.first) + i;
      const ce::FreshParams p = ce::derive_fresh_params(
          q.rate ? q.rate[i] : pop.rate[g], pop.importance[g], pop.cost[g], cfg.epoch_length);
      q.scores[i] = pop.complete[g] ? ce::fresh_index_co(cfg.objective, q.changes[i], p)
                                    : ce::fresh_index_io(cfg.objective, double(q.age[i]), p);
    }
  };
}

ce::FreshConfig fresh_config(Model m, Kind k, std::size_t n, int threads) {
  ce::FreshConfig cfg;
  cfg.budget = std::floor(double(n) / 10);
  cfg.host_cap = capped(m) ? 2 : 0;
  cfg.epochs = 6;
  cfg.burn_in = 1;
  cfg.replications = 2;
  cfg.objective = k == kFGreedy ? ce::Objective::binary : ce::Objective::harmonic;
  cfg.learn = m == kFreshLearn;
  cfg.relearn = 2;
  cfg.seed = 5;
  cfg.threads = threads;
  // nutch-adaptive: short intervals (first due in {0, 1}, then every 2 or 3 epochs, at most 4), so
  // that in these few epochs many URLs are due, the budget and the caps bind, and some are not due.
  cfg.nutch_start = 2.0, cfg.nutch_max = 4.0;
  return cfg;
}

/// Every epoch within the budget and the caps, and (with caps) some host at its cap, or the cell
/// would test no more than the uncapped one.
void expect_within_budget_and_caps(const FreshTrace& t, const ce::FreshPopulation& pop,
                                   const ce::FreshConfig& cfg) {
  bool at_cap = false;
  for (const std::vector<uint32_t>& set : t.sets) {
    double spent = 0.0;
    std::map<uint64_t, uint32_t> per_host;
    for (uint32_t i : set) {
      spent += pop.cost[i];
      if (cfg.host_cap && pop.constrained[i]) {
        const uint32_t crawls = ++per_host[pop.host[i]];
        EXPECT_LE(crawls, cfg.host_cap);
        at_cap |= crawls == cfg.host_cap;
      }
    }
    EXPECT_LE(spent, cfg.budget);
  }
  if (cfg.host_cap) EXPECT_TRUE(at_cap);
}

/// The freshness model's reference and CPU engine: the CPU engine gives the reference's crawls
/// exactly and its numbers within 1e-12 relative (it folds its sums in chunks, the reference adds
/// one URL after the other), and the same numbers, bit for bit, on any number of threads.
void check_fresh_cell(Model m, Kind k, Engine e) {
  const std::size_t n = e == kCpuWide ? kWideN : kSmallN;
  const ce::FreshPopulation pop = fresh_population(m, n);
  const ce::FreshPolicy policy = fresh_policy(k);
  const ce::FreshConfig cfg = fresh_config(m, k, n, 1);
  const FreshTrace ref = fresh_observed(
      [&](const ce::FreshObserver* o) { return ce::fresh_rollout(pop, cfg, policy, true, o); });
  ASSERT_EQ(ref.sets.size(), 2 * 7u);
  expect_within_budget_and_caps(ref, pop, cfg);
  if (e == kReference && k != kFUserIndex) {  // the baseline itself: the outputs its epochs' means
    double fresh = 0.0, penalty = 0.0;
    for (std::size_t t = 0; t < cfg.epochs; ++t)
      fresh += ref.out.epoch_freshness.at(t), penalty += ref.out.epoch_penalty.at(t);
    EXPECT_NEAR(ref.out.freshness[0], fresh / double(cfg.epochs), 1e-12);
    EXPECT_NEAR(ref.out.penalty[0], penalty / double(cfg.epochs), 1e-12 * penalty);
    EXPECT_EQ(ref.out.learned_rate.size(), cfg.learn ? n : 0u);
    return;
  }
  const ce::FreshConfig threaded = fresh_config(m, k, n, e == kCpuWide ? 2 : 1);
  // (A user's function: on the engine of the cell, against the reference's built-in index.)
  const ce::FreshScoreFn user = user_index(pop, cfg);
  const ce::FreshScoreFn* fn = k == kFUserIndex ? &user : nullptr;
  const FreshTrace got = fresh_observed([&](const ce::FreshObserver* o) {
    return ce::fresh_rollout(pop, threaded, policy, e == kReference, o, nullptr, nullptr, fn);
  });
  expect_same_sets(got, ref);
  expect_near(got.out.freshness, ref.out.freshness, 1e-12);
  expect_near(got.out.penalty, ref.out.penalty, 1e-12);
  expect_near(got.out.cost, ref.out.cost, 1e-12);
  expect_near(got.out.epoch_freshness, ref.out.epoch_freshness, 1e-12);
  expect_near(got.out.epoch_penalty, ref.out.epoch_penalty, 1e-12);
  EXPECT_EQ(got.out.learned_rate, ref.out.learned_rate);
  EXPECT_EQ(got.out.saturated, ref.out.saturated);
  if (e != kCpuWide) return;
  const ce::FreshRolloutOutput one = ce::fresh_rollout(pop, cfg, policy, false);
  EXPECT_EQ(got.out.freshness, one.freshness);
  EXPECT_EQ(got.out.penalty, one.penalty);
  EXPECT_EQ(got.out.epoch_freshness, one.epoch_freshness);
}

// ---------------------------------------------------------------------------------------------
// The one-process cells.

TEST_P(OneProcess, Cell) {
  const Cell c = GetParam();
  const Rule& r = *rule_of(c.m, c.k, c.e);
  SCOPED_TRACE(label(c.m, c.k, c.e));
  if (kFreshModels & bit(c.m))
    check_fresh_cell(c.m, c.k, c.e);
  else
    check_ephemeral_cell(c.m, c.k, c.e, r);
}
INSTANTIATE_TEST_SUITE_P(
    Conformance, OneProcess,
    ::testing::ValuesIn(cells_of({kReference, kCpuSmall, kCpuWide, kFunction})), cell_name);

// The CUDA cells. Whether the backend takes a cell is checked without a device (cuda::supports,
// cuda::fresh_supports); the runs, and the refusals' messages, need one (but the learning
// variant's, which the freshness driver gives before it looks for a device).
void check_cuda_fresh_cell(Model m, Kind k, const Rule& r, bool device) {
  const ce::FreshPopulation pop = fresh_population(m, kWideN);
  const ce::FreshConfig cfg = fresh_config(m, k, kWideN, 2);
  ASSERT_EQ(ce::cuda::fresh_supports(cfg), runs(r.status));
  if (r.status == Status::refused) {
    expect_refused([&] { ce::resolve_fresh_backend("cuda", cfg); }, r.why);
    return;
  }
  if (!device) return;
  if (k == kFCustom && !ce::cuda::custom_fresh_policy_on_gpu())
    GTEST_SKIP() << "built with CRAWLEVAL_FRESH_POLICY_ON_GPU=OFF: the GPU engines refuse custom";
  const FreshTrace want = fresh_observed([&](const ce::FreshObserver* o) {
    return ce::fresh_rollout(pop, cfg, fresh_policy(k), true, o);
  });
  // (A user's function: its host function on the GPU engine, against the built-in index.)
  const ce::cuda::DeviceFreshScoreFn user = ce::cuda::fresh_from_host(user_index(pop, cfg));
  const FreshTrace got = fresh_observed([&](const ce::FreshObserver* o) {
    return ce::fresh_rollout_cuda(pop, cfg, fresh_policy(k), o, nullptr,
                                  k == kFUserIndex ? &user : nullptr);
  });
  expect_same_sets(got, want);
  expect_near(got.out.freshness, want.out.freshness, 1e-12);
  expect_near(got.out.penalty, want.out.penalty, 1e-12);
}

void check_cuda_ephemeral_cell(Model m, Kind k, const Rule& r, bool device) {
  const ce::Population pop = population(m, kWideN);
  ce::Problem pr = ce::make_problem(pop, config(m, kWideN, 2));
  const ce::Policy base = builtin_of(k);
  if (kUser & bit(k)) {  // the host function on the GPU engine, against the reference
    ASSERT_EQ(ce::cuda::function_supports(pr), runs(r.status));
    if (!device) return;
    const Trace ref =
        observed([&](const ce::EpochObserver* o) { return ce::reference_rollout(pr, base, o); });
    const Trace cpu = function_run(pr, k);
    const Trace got = observed([&](const ce::EpochObserver* o) {
      return ce::cuda::function_rollout(pr, ce::cuda::from_host(user_policy(pr, k)), kKindName[k],
                                        o);
    });
    expect_same_sets(got, ref);
    expect_near(got.out.replication_reward, cpu.out.replication_reward, 1e-12);
    return;
  }
  if (kPaper & bit(k)) {                // the host function, the sources on the GPU (keyed_rollout)
    if (r.status == Status::refused) {  // (the policy refuses before any device work)
      expect_refused([&] { function_run(pr, k, nullptr, FnEngine::keyed_twin); }, r.why);
      return;
    }
    if (!device) return;
    const Trace cpu = function_run(pr, k);
    const Trace got = function_run(pr, k, nullptr, FnEngine::keyed_device);
    expect_same_sets(got, cpu);
    expect_near(got.out.replication_reward, cpu.out.replication_reward, 1e-10);
    return;
  }
  if (base == ce::Policy::static_rate) ce::prepare_static_policy(pr);
  if (base == ce::Policy::lip) ce::prepare_lip_policy(pr);
  ce::EpochObserver probe = [](const ce::EpochView&) {};
  ASSERT_EQ(ce::cuda::supports(pr, base, &probe), runs(r.status));
  EXPECT_EQ(ce::cuda::generic_pass(pr, base, &probe), r.status == Status::pending);
  if (!device) return;
  if (r.status == Status::refused) {
    expect_refused([&] { ce::cuda::rollout(pr, base, &probe); }, r.why);
    return;
  }
  const Trace ref =
      observed([&](const ce::EpochObserver* o) { return ce::reference_rollout(pr, base, o); });
  const Trace cpu =
      observed([&](const ce::EpochObserver* o) { return ce::cpu_rollout(pr, base, o); });
  const Trace got =
      observed([&](const ce::EpochObserver* o) { return ce::cuda::rollout(pr, base, o); });
  expect_same_sets(got, ref);
  expect_near(got.out.replication_reward, cpu.out.replication_reward, 1e-12);
}

TEST_P(Cuda, Cell) {
  if (!ce::cuda::compiled()) GTEST_SKIP() << "built without the CUDA backend";
  const Cell c = GetParam();
  const Rule& r = *rule_of(c.m, c.k, c.e);
  SCOPED_TRACE(label(c.m, c.k, c.e));
  const bool device = ce::cuda::device_count() > 0;
  if (kFreshModels & bit(c.m))
    check_cuda_fresh_cell(c.m, c.k, r, device);
  else
    check_cuda_ephemeral_cell(c.m, c.k, r, device);
  if (!device && !HasFailure()) {
    // scripts/gpu-check sets REQUIRE_GPU=1: there a missing device is a failure, not a skip.
    const char* required = std::getenv("REQUIRE_GPU");
    if (required && std::string(required) == "1")
      FAIL() << "REQUIRE_GPU=1 but " << ce::cuda::device_unavailable_reason();
    GTEST_SKIP() << "no CUDA device (" << ce::cuda::device_unavailable_reason()
                 << "): the cell's support was checked, not its run";
  }
}
INSTANTIATE_TEST_SUITE_P(Conformance, Cuda, ::testing::ValuesIn(cells_of({kCuda})), cell_name);

// ---------------------------------------------------------------------------------------------
// The command line under mpirun: the freshness model on a GPU per rank is refused, exit code 2
// and the reason.

/// A freshness cell's command: its model's and policy's options, --backend cuda.
std::vector<std::string> gpu_per_rank_command(Model m, Kind k) {
  std::vector<std::string> a = {"crawleval",
                                "fresh",
                                "run",
                                "--synthetic",
                                "500",
                                "--budget",
                                "20",
                                "--epochs",
                                "2",
                                "--no-bound",
                                "--no-progress",
                                "--policy",
                                ce::to_string(fresh_policy(k))};
  if (capped(m)) a.insert(a.end(), {"--host-cap", "2"});
  if (m == kFreshLearn) a.push_back("--learn");
  a.insert(a.end(), {"--backend", "cuda"});
  return a;
}

/// Runs the command line in this process (every rank, a collective under mpirun): its exit code
/// and, on rank 0, what it printed on stderr.
std::pair<int, std::string> run_command_line(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (std::string& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  ::testing::internal::CaptureStderr();
  const int rc = ce::cli::command_line(int(args.size()), argv.data());
  return {rc, ::testing::internal::GetCapturedStderr()};
}

void check_gpu_per_rank_cell(Model m, Kind k, const Rule& r, ce::Comm& comm) {
  ASSERT_EQ(r.status, Status::refused);
  const auto [rc, err] = run_command_line(gpu_per_rank_command(m, k));
  EXPECT_EQ(rc, 2) << err;
  if (comm.rank() == 0) EXPECT_NE(err.find(r.why), std::string::npos) << err;
}

#ifdef CRAWLEVAL_MPIEXEC
/// The real binary under mpirun: exit code 2 and the reason (one command per family of models;
/// the cells above check each model's and policy's command in process).
int run_under_mpirun(const std::string& args, std::string* err) {
  const std::string cmd = std::string(CRAWLEVAL_MPIEXEC) + " -np 2 --oversubscribe " +
                          CRAWLEVAL_BIN + " " + args + " 2>&1 >/dev/null";
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return -1;
  char buf[4096];
  std::size_t got;
  while ((got = fread(buf, 1, sizeof buf, f)) > 0) err->append(buf, got);
  const int status = pclose(f);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
#endif

TEST(ConformanceCli, GpuPerRankUnderTheBinary) {
#ifndef CRAWLEVAL_MPIEXEC
  GTEST_SKIP() << "built without MPI";
#else
  // Both models: refused without a device (the reason every front end gives), run with one; the
  // learning variant refused before the device is looked for.
  for (const char* args :
       {"fresh run --synthetic 500 --budget 20 --epochs 2 --no-progress --host-cap 2 --backend "
        "cuda",
        "run --synthetic 1000 --budget 50 --epochs 2 --no-progress --no-bound --policy whittle "
        "--backend cuda"}) {
    std::string err;
    const int rc = run_under_mpirun(args, &err);
    if (ce::cuda::device_count() > 0) {
      EXPECT_EQ(rc, 0) << args << ": " << err;
    } else {
      EXPECT_EQ(rc, 2) << args << ": " << err;
      EXPECT_NE(err.find(ce::cuda::unavailable_message()), std::string::npos) << err;
    }
  }
  std::string err;
  EXPECT_EQ(run_under_mpirun("fresh run --synthetic 500 --budget 20 --epochs 2 --no-progress "
                             "--learn --backend cuda",
                             &err),
            2)
      << err;
  EXPECT_NE(err.find("the learning variant runs on the CPU only"), std::string::npos) << err;
#endif
}

// ---------------------------------------------------------------------------------------------
// Under mpirun -np P (P = 1..4): the MPI column. Every rank runs its shard; rank 0 also runs the
// reference (crawled sets) and one process (rewards, bit for bit). A refused cell must be refused
// on every rank with the rule's reason.

/// A GPU per rank's run of `pr` over comm (keyed_rollout): the pass's host twin, or the device's.
Trace keyed_run(const ce::Problem& pr, ce::Policy p, ce::Comm& comm, bool device) {
  const auto pass = device ? ce::cuda::keyed_pass(ce::detail::keyed_columns(pr, p), pr.size())
                           : ce::detail::host_keyed_pass(pr, p);
  return observed(
      [&](const ce::EpochObserver* o) { return ce::keyed_rollout(pr, p, comm, *pass, o); });
}

/// `keyed`: the GPU-per-rank column (kMpiCuda): its host twin against the CPU as the MPI column's
/// engine is, and with a device on every rank the device's run against one process's.
void check_mpi_ephemeral_cell(Model m, Kind k, const Rule& rule, ce::Comm& comm, bool keyed) {
  ce::Population pop = population(m, kMpiN);
  if (k == kWhittleNumerical)  // two classes of (lambda T, mu T): the index is computed per class
    for (std::size_t i = 0; i < kMpiN; ++i) pop.lambda[i] = i % 2 ? 0.5 : 1.0, pop.mu[i] = 0.3;
  const ce::Shard shard = ce::shard_of(kMpiN, comm.rank(), comm.size());
  // Fewer epochs and one replication than the one-process cells: rank 0 runs the reference on
  // ~100,000 sources for each of ~90 cells while the other ranks wait.
  ce::RunConfig cfg = config(m, kMpiN, 1);
  cfg.epochs = 2, cfg.burn_in = 1, cfg.replications = 1;
  ce::Population mine = ce::testing::rows_of(pop, shard);  // the problem points into it
  const ce::Policy base = builtin_of(k);
  const bool function = (kUser | kPaper) & bit(k);
  // Built-in policies on the compact columns where they apply (`crawleval run` under mpirun).
  const bool compact = !function && ce::compact_columns_apply(pop, cfg, {base}, false);
  ce::Problem sharded = ce::make_sharded_problem(
      mine, cfg, shard, comm, compact ? ce::ColumnSet::engine : ce::ColumnSet::all);
  if (compact) mine.drop_implied_columns(sharded.unit_costs);
  ASSERT_EQ(sharded.params().compact(), compact);
  if (rule.status == Status::refused) {  // every rank refuses before any collective
    ASSERT_TRUE(function);
    expect_refused([&] { function_run(sharded, k, &comm); }, rule.why);
    return;
  }
  if (base == ce::Policy::static_rate && !function) ce::prepare_static_policy(sharded, comm);
  if (base == ce::Policy::lip && !function) ce::prepare_lip_policy(sharded, comm);
  auto run_here = [&](bool device) {  // this cell's engine on every rank's shard
    if (function)
      return function_run(sharded, k, &comm,
                          !keyed   ? FnEngine::cpu
                          : device ? FnEngine::keyed_device
                                   : FnEngine::keyed_twin);
    if (keyed) return keyed_run(sharded, base, comm, device);
    return observed([&](auto* o) { return ce::sharded_rollout(sharded, base, comm, o); });
  };
  const Trace got = run_here(false);
  // A GPU per rank: the device's run too where every rank sees a device (REQUIRE_GPU=1: must).
  std::optional<Trace> device;
  if (keyed && comm.all(ce::cuda::visible_device_count() > 0)) {
    const int local = comm.local_rank();
    ce::collectively(comm, [&] { ce::cuda::use_device(local); });
    device = run_here(true);
  } else if (keyed) {
    const char* required = std::getenv("REQUIRE_GPU");
    if (required && std::string(required) == "1")
      FAIL() << "REQUIRE_GPU=1 but " << ce::cuda::device_unavailable_reason();
  }
  if (comm.rank() != 0) return;
  // One process's problem, made when a run below needs it (the MPI and GPU-per-rank cells of a
  // model and kind share their reference and one-process runs).
  std::optional<ce::Problem> one_problem;
  const auto one = [&]() -> const ce::Problem& {
    if (!one_problem) {
      one_problem = ce::make_problem(pop, cfg);
      if (base == ce::Policy::static_rate && !function) ce::prepare_static_policy(*one_problem);
      if (base == ce::Policy::lip && !function) ce::prepare_lip_policy(*one_problem);
    }
    return *one_problem;
  };
  const Trace* ref = nullptr;
  if (k != kWhittleNumerical && k != kAdaptiveWhittle) {
    // One reference run per (model, built-in policy): several kinds compute the same scores.
    static std::map<std::pair<uint32_t, ce::Policy>, Trace> refs;
    auto it = refs.find({m, base});
    if (it == refs.end())
      it =
          refs.emplace(std::make_pair(uint32_t(m), base), observed([&](const ce::EpochObserver* o) {
                         return ce::reference_rollout(one(), base, o);
                       }))
              .first;
    ref = &it->second;
    expect_same_sets(got, *ref);
  }
  // One process on the CPU: the function engine, or the CPU backend.
  static std::map<std::pair<uint32_t, uint32_t>, Trace> wants;
  auto w = wants.find({m, k});
  if (w == wants.end())
    w = wants
            .emplace(std::make_pair(uint32_t(m), uint32_t(k)),
                     function ? function_run(one(), k) : observed([&](const ce::EpochObserver* o) {
                       return ce::cpu_rollout(one(), base, o);
                     }))
            .first;
  const Trace& want = w->second;
  expect_same_sets(got, want);
  if (function) {  // everything bit for bit
    expect_same_rewards(got, want);
  } else {
    // The outputs bit for bit; the observer's per-epoch sums (EpochView::reward) are added in
    // another order by the sharded engine than by the CPU backend's wide engine, and differ in the
    // last bits (found by this test; the outputs do not).
    EXPECT_EQ(got.out.replication_reward, want.out.replication_reward);
    EXPECT_EQ(got.out.replication_cost, want.out.replication_cost);
    EXPECT_EQ(got.out.epoch_reward, want.out.epoch_reward);
    expect_near(got.rewards, want.rewards, 1e-12);
  }
  if (!device) return;
  // The device's ranks: the crawled sets of the reference and the CPU, every output one device
  // process's bit for bit, the CPU's within rounding (the device's exp, expm1, log1p).
  const Trace one_device = function ? function_run(one(), k, nullptr, FnEngine::keyed_device)
                                    : keyed_run(one(), base, ce::solo_comm(), true);
  if (ref) expect_same_sets(*device, *ref);
  expect_same_sets(*device, want);
  expect_same_sets(*device, one_device);
  EXPECT_EQ(device->out.replication_reward, one_device.out.replication_reward);
  EXPECT_EQ(device->out.replication_cost, one_device.out.replication_cost);
  EXPECT_EQ(device->out.epoch_reward, one_device.out.epoch_reward);
  expect_near(device->out.replication_reward, want.out.replication_reward, 1e-10);
}

/// The freshness model over ranks: with caps, hosts deliberately placed in every way a shard can
/// cut them: one host with sources on every rank, hosts scattered over the whole id range, and
/// hosts of 20 consecutive ids (inside one rank, except the ones a shard boundary cuts).
ce::FreshPopulation fresh_mpi_population(Model m, std::size_t n) {
  ce::FreshPopulation p = fresh_population(m, n);
  if (!capped(m)) return p;
  for (std::size_t i = 0; i < n; ++i) {
    if (i % 7 == 0)
      p.host[i] = 1;  // on every rank
    else if (i % 7 < 3)
      p.host[i] = 2 + (i * 2654435761u) % (n / 40);  // scattered
    else
      p.host[i] = 1000000 + i / 20;  // a block
    p.constrained[i] = p.host[i] % 3 != 2;
  }
  return p;
}

/// What rank r holds of a run over pop: its part alone (fresh_shard).
ce::FreshPopulation mpi_part(const ce::FreshPopulation& pop, ce::Comm& comm) {
  const ce::Shard s = ce::shard_of(pop.size(), comm.rank(), comm.size());
  return ce::fresh_rows(pop, s.first, s.count);
}

/// Crawled sets as the reference's; every number as one process's, bit for bit (the learning
/// variant's estimates too, each rank holding its rows'). `keyed`: the GPU-per-rank column
/// (kMpiCuda): its pass's host twin (fresh_keyed.hpp) checked as the MPI column's engine is, and
/// with a device on every rank the device's run against one device process's, bit for bit, and
/// the CPU's sets and numbers (within rounding: the device's log, exp, expm1).
void check_mpi_fresh_cell(Model m, Kind k, ce::Comm& comm, bool keyed) {
  const ce::FreshPopulation pop = fresh_mpi_population(m, kMpiN);
  const ce::FreshPolicy policy = fresh_policy(k);
  ce::FreshConfig cfg = fresh_config(m, k, kMpiN, 1);
  cfg.epochs = 2, cfg.replications = 1;
  // (A user's function: each rank's rows, against one process's built-in index.)
  const ce::FreshScoreFn user = user_index(pop, cfg);
  const ce::FreshScoreFn* fn = k == kFUserIndex ? &user : nullptr;
  const ce::FreshPopulation part = mpi_part(pop, comm);
  const ce::FreshPassMaker twin = ce::detail::host_fresh_keyed_pass;
  const auto run = [&](const ce::FreshPopulation& rows, ce::Comm* over,
                       const ce::FreshPassMaker* pass) {
    return fresh_observed([&](const ce::FreshObserver* o) {
      return pass ? ce::fresh_rollout_keyed(rows, cfg, policy, *pass, o, nullptr, over, fn)
                  : ce::fresh_rollout(rows, cfg, policy, false, o, nullptr, over, fn);
    });
  };
  const FreshTrace got = run(part, &comm, keyed ? &twin : nullptr);
  const std::vector<double> learned =  // (each rank's rows; a collective)
      cfg.learn ? comm.allgather(got.out.learned_rate) : std::vector<double>{};
  // A GPU per rank: the device's run too where every rank sees a device (REQUIRE_GPU=1: must).
  std::optional<FreshTrace> device;
  const ce::FreshPassMaker on_device = ce::device_fresh_pass();
  // (--policy custom on the device where the build compiles its header into the GPU engines.)
  const bool compiled = k != kFCustom || ce::cuda::custom_fresh_policy_on_gpu();
  if (keyed && compiled && comm.all(ce::cuda::visible_device_count() > 0)) {
    const int local = comm.local_rank();
    ce::collectively(comm, [&] { ce::cuda::use_device(local); });
    device = run(part, &comm, &on_device);
  } else if (keyed) {
    const char* required = std::getenv("REQUIRE_GPU");
    if (required && std::string(required) == "1")
      FAIL() << "REQUIRE_GPU=1 but "
             << (compiled ? ce::cuda::device_unavailable_reason()
                          : std::string("built with CRAWLEVAL_FRESH_POLICY_ON_GPU=OFF"));
  }
  if (comm.rank() != 0) return;
  // The reference and one process, once per model and kind (the MPI and GPU-per-rank cells share
  // them).
  static std::map<std::pair<uint32_t, uint32_t>, std::pair<FreshTrace, FreshTrace>> runs;
  auto it = runs.find({m, k});
  if (it == runs.end())
    it = runs.emplace(std::make_pair(uint32_t(m), uint32_t(k)),
                      std::make_pair(fresh_observed([&](const ce::FreshObserver* o) {
                                       return ce::fresh_rollout(pop, cfg, policy, true, o);
                                     }),
                                     fresh_observed([&](const ce::FreshObserver* o) {
                                       return ce::fresh_rollout(pop, cfg, policy, false, o);
                                     })))
             .first;
  const FreshTrace& ref = it->second.first;
  const FreshTrace& one = it->second.second;
  ASSERT_EQ(ref.sets.size(), 3u);
  if (capped(m)) {  // the caps bind on the host on every rank and on split ones
    std::map<uint64_t, uint32_t> per_host;
    for (uint32_t i : ref.sets.at(2))
      if (pop.constrained[i]) ++per_host[pop.host[i]];
    EXPECT_EQ(per_host[1], cfg.host_cap);
    std::size_t at_cap = 0;
    for (const auto& [host, count] : per_host) at_cap += count == cfg.host_cap;
    EXPECT_GT(at_cap, 10u);
  }
  expect_same_sets(got, ref);
  EXPECT_EQ(got.out.freshness, one.out.freshness);
  EXPECT_EQ(got.out.penalty, one.out.penalty);
  EXPECT_EQ(got.out.cost, one.out.cost);
  EXPECT_EQ(got.out.epoch_freshness, one.out.epoch_freshness);
  EXPECT_EQ(got.out.epoch_penalty, one.out.epoch_penalty);
  EXPECT_EQ(learned, one.out.learned_rate);
  EXPECT_EQ(learned.size(), cfg.learn ? kMpiN : 0u);
  ASSERT_EQ(got.out.closed_form.has_value(), one.out.closed_form.has_value());
  if (one.out.closed_form) {  // the rate-based policies' closed forms, summed over the ranks
    EXPECT_EQ(got.out.closed_form->harmonic, one.out.closed_form->harmonic);
    EXPECT_EQ(got.out.closed_form->binary, one.out.closed_form->binary);
  }
  if (!device) return;
  const FreshTrace one_device = run(pop, nullptr, &on_device);
  expect_same_sets(*device, ref);
  expect_same_sets(*device, one_device);
  EXPECT_EQ(device->out.freshness, one_device.out.freshness);
  EXPECT_EQ(device->out.penalty, one_device.out.penalty);
  EXPECT_EQ(device->out.cost, one_device.out.cost);
  EXPECT_EQ(device->out.epoch_freshness, one_device.out.epoch_freshness);
  expect_near(device->out.freshness, one.out.freshness, 1e-12);
  expect_near(device->out.penalty, one.out.penalty, 1e-12);
  EXPECT_EQ(device->out.cost, one.out.cost);
}

TEST_P(Mpi, Cell) {
  ce::Comm& comm = world();
  const Cell c = GetParam();
  const Rule& r = *rule_of(c.m, c.k, c.e);
  SCOPED_TRACE(label(c.m, c.k, c.e) + ", P = " + std::to_string(comm.size()));
  // (The GPU-per-rank cells run at P = 1 and 3, for the test command's time; KeyedRollout.* and
  // FreshKeyed.* in tests/test_mpi.cpp run the same passes at every P.)
  if (c.e == kMpiCuda && comm.size() % 2 == 0)
    GTEST_SKIP() << "a GPU-per-rank cell: run at P = 1 and 3";
  if (c.e == kMpiCuda && (kFreshModels & bit(c.m)) && r.status == Status::refused)
    check_gpu_per_rank_cell(c.m, c.k, r, comm);
  else if (kFreshModels & bit(c.m))
    check_mpi_fresh_cell(c.m, c.k, comm, c.e == kMpiCuda);
  else
    check_mpi_ephemeral_cell(c.m, c.k, r, comm, c.e == kMpiCuda);
}
INSTANTIATE_TEST_SUITE_P(Conformance, Mpi, ::testing::ValuesIn(cells_of({kMpi, kMpiCuda})),
                         cell_name);

// A freshness score function that fails on one rank fails the run on every rank, with that rank's
// message there and a message naming another process elsewhere, instead of leaving the others
// waiting at the selection's collectives.
TEST(ConformanceMpi, AScoreFunctionFailingOnOneRankStopsEveryRank) {
  ce::Comm& comm = world();
  const ce::FreshPopulation pop = fresh_mpi_population(kFresh, kMpiN);
  ce::FreshConfig cfg = fresh_config(kFresh, kFUserIndex, kMpiN, 1);
  const ce::FreshScoreFn index = user_index(pop, cfg);
  const int bad = comm.size() - 1;
  const ce::FreshScoreFn fn = [&](const ce::FreshScoreRequest& q) {
    if (comm.rank() == bad && q.epoch == 2) throw ce::InputError("my function failed");
    index(q);
  };
  try {
    ce::fresh_rollout(mpi_part(pop, comm), cfg, ce::FreshPolicy::index, false, nullptr, nullptr,
                      &comm, &fn);
    ADD_FAILURE() << "no error on rank " << comm.rank();
  } catch (const ce::InputError& e) {
    EXPECT_NE(std::string(e.what()).find(comm.rank() == bad ? "my function failed"
                                                            : "failed on another process"),
              std::string::npos)
        << e.what();
  }
}

// The compact columns when some processes' shards cost 1 throughout and others do not (a hostile
// test's mixed-cost CSV crashed every rank: a shard dropped its cost column while the run's costs,
// over every process, are not all 1). Costs 1 on the first two fold chunks, 2 after: at P = 3 and
// 4 the first ranks' shards cost 1 alone.
TEST(ConformanceMpi, CompactColumnsWhereSomeShardsCostOne) {
  ce::Comm& comm = world();
  ce::Population pop = population(kDet, kMpiN);
  for (std::size_t i = 0; i < kMpiN; ++i) pop.cost[i] = i < 2 * ce::kFoldChunk ? 1.0 : 2.0;
  ce::RunConfig cfg = config(kDet, kMpiN, 1);
  cfg.epochs = 3, cfg.burn_in = 1, cfg.replications = 1;
  const ce::Shard shard = ce::shard_of(kMpiN, comm.rank(), comm.size());
  ce::Population mine = ce::testing::rows_of(pop, shard);
  const ce::Problem sharded =
      ce::make_sharded_problem(mine, cfg, shard, comm, ce::ColumnSet::engine);
  mine.drop_implied_columns(sharded.unit_costs);
  EXPECT_FALSE(sharded.unit_costs);
  EXPECT_EQ(mine.cost.size(), mine.size());
  for (ce::Policy p : {ce::Policy::whittle, ce::Policy::greedy}) {
    SCOPED_TRACE(std::string(ce::to_string(p)) + ", P = " + std::to_string(comm.size()));
    const Trace got = observed([&](auto* o) { return ce::sharded_rollout(sharded, p, comm, o); });
    if (comm.rank() != 0) continue;
    const ce::Problem one = ce::make_problem(pop, cfg);
    const Trace want =
        observed([&](const ce::EpochObserver* o) { return ce::cpu_rollout(one, p, o); });
    expect_same_sets(got, want);
    EXPECT_EQ(got.out.replication_reward, want.out.replication_reward);
    EXPECT_EQ(got.out.replication_cost, want.out.replication_cost);
    EXPECT_EQ(got.out.epoch_reward, want.out.epoch_reward);
  }
}

// ---------------------------------------------------------------------------------------------
// The rules themselves, and docs/coverage.md's table: rendered from kRules, compared line by line.

// A guard for models and kinds added later: the rules end in catch-alls, so with today's table
// every cell has one; a new model or kind outside every rule's sets would fail here.
TEST(ConformanceGuard, EveryCellHasARule) {
  for (uint32_t m = 0; m < kModels; ++m)
    for (uint32_t k = 0; k < kKinds; ++k)
      for (uint32_t e = 0; e < kEngines; ++e) {
        const Rule* r = rule_of(m, k, e);
        ASSERT_NE(r, nullptr) << label(m, k, e);
        if (r->status != Status::ok) {
          EXPECT_GT(std::string(r->why).size(), 5u) << label(m, k, e);
        }
      }
}

// Every policy a user can name (the policy registry, which the command line and Python read) is
// a row of the matrix under its own name: a built-in policy's row runs it on the engines, a score
// function's on the function engine.
TEST(ConformanceGuard, EveryRegisteredPolicyIsARow) {
  std::vector<std::string> rows, registered;
  for (uint32_t k = 0; k < kKinds; ++k)
    if ((kBuiltIn | kPaper) & bit(k)) rows.push_back(kKindName[k]);
  for (const ce::RegisteredPolicy& p : ce::policy_registry()) {
    registered.push_back(p.name);
    const auto k = std::find(kKindName.begin(), kKindName.end(), std::string(p.name));
    ASSERT_NE(k, kKindName.end()) << p.name;
    EXPECT_EQ(bool(p.builtin), bool(kBuiltIn & bit(uint32_t(k - kKindName.begin())))) << p.name;
  }
  std::sort(rows.begin(), rows.end());
  std::sort(registered.begin(), registered.end());
  EXPECT_EQ(rows, registered);
}

/// Rows: a family of models' policy kinds; a cell lists its kinds by status where they differ.
struct Group {
  const char* name;
  uint32_t kinds;
};
constexpr Group kGroups[] = {{"built-in policies", kBuiltIn},
                             {"freshness schedulers", kFreshKinds},
                             {"a user's score function", kUser},
                             {"a user's score function", kFreshUser},
                             {"the papers' function policies", kPaper}};

std::string render_cell(uint32_t m, uint32_t kinds, uint32_t e) {
  // Parts in the order of their first kind: (status, why) -> kinds.
  std::vector<std::pair<const Rule*, std::vector<std::string>>> parts;
  for (uint32_t k = 0; k < kKinds; ++k) {
    if (!(kinds & bit(k))) continue;
    const Rule* r = rule_of(m, k, e);
    auto it = std::find_if(parts.begin(), parts.end(), [&](const auto& p) {
      return p.first->status == r->status && std::string(p.first->why) == r->why;
    });
    if (it == parts.end()) parts.push_back({r, {}}), it = parts.end() - 1;
    it->second.push_back(kKindName[k]);
  }
  std::string out;
  for (const auto& [r, names] : parts) {
    if (!out.empty()) out += "; ";
    out += runs(r->status) ? "✔" : r->status == Status::na ? "–" : "✗";
    if (parts.size() > 1) {
      out += " ";
      for (std::size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
    }
    // A cell that is wholly not applicable needs no reason; a refusal and a missing feature
    // always give one.
    const std::string sep = parts.size() > 1 ? ": " : " ";
    if (r->status == Status::refused || r->status == Status::pending ||
        (r->status == Status::na && parts.size() > 1))
      out += sep + r->why;
    if (r->status == Status::not_built) out += sep + "not built yet: " + r->why;
  }
  return out;
}

std::vector<std::string> render_table() {
  std::vector<std::string> lines;
  std::string head = "| model | policies |", rule = "|---|---|";
  for (uint32_t e = 0; e < kEngines; ++e)
    head += std::string(" ") + kEngineName[e] + " |", rule += "---|";
  lines.push_back(head);
  lines.push_back(rule);
  for (uint32_t m = 0; m < kModels; ++m)
    for (const Group& g : kGroups) {
      bool any = false;
      for (uint32_t k = 0; k < kKinds; ++k)
        for (uint32_t e = 0; e < kEngines; ++e)
          any |= (g.kinds & bit(k)) && rule_of(m, k, e)->status != Status::na;
      if (!any) continue;
      std::string row = std::string("| ") + kModelName[m] + " | " + g.name + " |";
      for (uint32_t e = 0; e < kEngines; ++e) row += " " + render_cell(m, g.kinds, e) + " |";
      lines.push_back(row);
    }
  return lines;
}

TEST(ConformanceTable, CoverageIsTheMatrix) {
  std::ifstream in(CRAWLEVAL_DOCS_DIR "/coverage.md");
  ASSERT_TRUE(in) << CRAWLEVAL_DOCS_DIR "/coverage.md";
  const std::string begin = "<!-- conformance matrix begin", end = "<!-- conformance matrix end";
  std::vector<std::string> got;
  bool inside = false, seen = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(end, 0) == 0) inside = false;
    if (inside && !line.empty()) got.push_back(line);
    if (line.rfind(begin, 0) == 0) inside = seen = true;
  }
  ASSERT_TRUE(seen) << "docs/coverage.md has no '" << begin << "' marker";
  const std::vector<std::string> want = render_table();
  std::string table;
  for (const std::string& l : want) table += l + "\n";
  EXPECT_EQ(got, want) << "docs/coverage.md's matrix differs from tests/test_conformance.cpp's; "
                          "it should read:\n"
                       << table;
}

}  // namespace

int main(int argc, char** argv) { return ce::testing::mpi_test_main(argc, argv); }
