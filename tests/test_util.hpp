// Helpers shared by the test files.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "crawleval/base/comm.hpp"
#include "crawleval/engine/fresh_engine.hpp"
#include "crawleval/evaluate/driver.hpp"
#include "crawleval/model/problem.hpp"

namespace crawleval::testing {

/// CRAWLEVAL_DORMANT=value for the scope (sleeping sources: the CPU engine's dormant pass, the GPU
/// wide engine's live pass).
struct DormantMode {
  explicit DormantMode(const char* value) { setenv("CRAWLEVAL_DORMANT", value, 1); }
  ~DormantMode() { unsetenv("CRAWLEVAL_DORMANT"); }
  DormantMode(const DormantMode&) = delete;
  DormantMode& operator=(const DormantMode&) = delete;
};

/// A file in gtest's temporary directory whose name is the running test's own: ctest runs the
/// tests of a binary as parallel processes, and two tests writing one "names.csv" read each
/// other's.
inline std::string test_temp_path(const std::string& name) {
  const ::testing::TestInfo* t = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string tag = t ? std::string(t->test_suite_name()) + "." + t->name() + "-" : "";
  return ::testing::TempDir() + "/" + tag + name;
}

/// 50 sources whose costs span 10^-span .. 10^span (uniform in the exponent), the others of
/// ordinary size: the Lagrangian bound's multiplier search over many decades.
inline Population decades_population(double span) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> U(0.0, 1.0), E(-span, span);
  Population pop;
  pop.origin = "decades";
  for (std::size_t i = 0; i < 50; ++i) {
    pop.lambda.push_back(0.5 + 4.0 * U(rng));
    pop.xi.push_back(0.5 + 9.0 * U(rng));
    pop.mu.push_back(std::pow(10.0, -3.0 + 3.0 * U(rng)));
    pop.cost.push_back(std::pow(10.0, E(rng)));
  }
  return pop;
}

/// A random population of n sources (seeded): lambda in [0.05, 5.05), xi in [0.1, 2.1), mu in
/// [0.02, 1.52); costs 1, or multiples of 1/4 in [0.5, 2.25] (exact binary sums: the budget rule's
/// integer weights are exact, selection.hpp); optional initial states in [0, 2 u*).
inline Population random_population(std::size_t n, uint64_t seed, bool unit_costs, bool with_x0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  Population pop;
  pop.origin = "random(" + std::to_string(n) + ")";
  for (std::size_t i = 0; i < n; ++i) {
    pop.lambda.push_back(0.05 + 5 * U(rng));
    pop.xi.push_back(0.1 + 2 * U(rng));
    pop.mu.push_back(0.02 + 1.5 * U(rng));
    pop.cost.push_back(unit_costs ? 1.0 : 0.5 + double(rng() % 8) * 0.25);
    pop.id.push_back(i);
    if (with_x0) pop.x0.push_back(2 * U(rng) * pop.lambda.back() * pop.xi.back() / pop.mu.back());
  }
  return pop;
}

/// What a run did, epoch by epoch (burn-in included), in (replication, epoch) order whatever order
/// its threads reported them in: the crawled ids (ascending), each epoch's reward, and the states
/// where the engine reports them; then the run's output. One type for both models (the freshness
/// engines report the crawled ids alone).
template <class Output>
struct RunTrace {
  std::vector<std::pair<uint32_t, uint64_t>> epochs;  ///< (replication, epoch) of each entry
  std::vector<std::vector<uint32_t>> sets;
  std::vector<double> rewards;
  std::vector<std::vector<double>> states;
  Output out{};
};
using Trace = RunTrace<RolloutOutput>;
using FreshTrace = RunTrace<FreshRolloutOutput>;

/// Runs rollout(observer), an engine's run of the crawling model, and traces it.
template <class F>
Trace observed(F&& rollout) {
  struct Epoch {
    std::vector<uint32_t> set;
    double reward;
    std::vector<double> states;
  };
  std::map<std::pair<uint32_t, uint64_t>, Epoch> seen;
  std::mutex mu;
  const EpochObserver obs = [&](const EpochView& v) {
    std::lock_guard<std::mutex> lock(mu);
    seen[{v.replication, v.epoch}] =
        Epoch{*v.selected, v.reward, v.states ? *v.states : std::vector<double>{}};
  };
  Trace t;
  t.out = rollout(&obs);
  for (auto& [key, e] : seen) {
    t.epochs.push_back(key);
    t.sets.push_back(std::move(e.set));
    t.rewards.push_back(e.reward);
    if (!e.states.empty()) t.states.push_back(std::move(e.states));
  }
  return t;
}

/// The same for a run of the freshness model.
template <class F>
FreshTrace fresh_observed(F&& rollout) {
  std::map<std::pair<uint32_t, uint64_t>, std::vector<uint32_t>> seen;
  std::mutex mu;
  const FreshObserver obs = [&](uint32_t r, uint64_t t, const std::vector<uint32_t>& crawled) {
    std::lock_guard<std::mutex> lock(mu);
    seen[{r, t}] = crawled;
  };
  FreshTrace t;
  t.out = rollout(&obs);
  for (auto& [key, set] : seen) t.epochs.push_back(key), t.sets.push_back(std::move(set));
  return t;
}

inline Trace traced(const Problem& pr, Policy p, Backend b) {
  return observed([&](const EpochObserver* o) { return rollout(pr, p, b, o); });
}

/// Sources [s.first, s.first + s.count) of pop, every per-source column cut (an empty one stays
/// empty) and the rest as in pop (origin, first_id): an MPI rank's shard of a population.
inline Population rows_of(const Population& pop, const Shard& s) {
  Population out;
  const auto cut = [&](const auto& v) {
    using V = std::decay_t<decltype(v)>;
    if (v.empty()) return V{};
    return V(v.begin() + std::ptrdiff_t(s.first), v.begin() + std::ptrdiff_t(s.first + s.count));
  };
  out.lambda = cut(pop.lambda), out.xi = cut(pop.xi), out.mu = cut(pop.mu);
  out.cost = cut(pop.cost), out.x0 = cut(pop.x0), out.expiry = cut(pop.expiry);
  out.observe = cut(pop.observe), out.id = cut(pop.id), out.line = cut(pop.line);
  out.origin = pop.origin, out.first_id = pop.first_id, out.id_offset = pop.id_offset;
  return out;
}

/// The processes of a test binary: mpirun's, or this one alone.
inline Comm& world() {
  Comm* w = mpi_world();
  return w ? *w : solo_comm();
}

/// The main() of a test binary that mpirun starts (as in one process): only rank 0 prints; a
/// failure on any rank fails its exit code, and so mpirun's.
inline int mpi_test_main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (world().rank() != 0) {
    ::testing::TestEventListeners& l = ::testing::UnitTest::GetInstance()->listeners();
    delete l.Release(l.default_result_printer());
  }
  const int rc = RUN_ALL_TESTS();
  finalize_mpi();
  return rc;
}

}  // namespace crawleval::testing
