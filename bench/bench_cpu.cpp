// CPU backend throughput: epochs per second of the Whittle policy on synthetic populations.
// Google Benchmark with manual time = the rollout's epoch-loop time (set-up excluded). Not a test.
//   ./bench_cpu                      all cases
//   ./bench_cpu --benchmark_filter=10000000
#include <benchmark/benchmark.h>

#include <map>

#include "crawleval/bound.hpp"
#include "crawleval/driver.hpp"
#include "crawleval/io.hpp"

namespace ce = crawleval;

namespace {

const ce::Population& population(std::size_t n) {
  static std::map<std::size_t, ce::Population> cache;
  auto it = cache.find(n);
  if (it == cache.end()) it = cache.emplace(n, ce::synthetic_population(n, 1)).first;
  return it->second;
}

// Arguments: N, budget as a fraction of N in 1/10000, model (0 deterministic, 1 stochastic),
// policy (0 whittle, 1 greedy, 2 round robin, 3 random).
void BM_CpuEpoch(benchmark::State& state) {
  const std::size_t n = std::size_t(state.range(0));
  ce::RunConfig cfg;
  cfg.budget = double(n) * double(state.range(1)) / 10000.0;
  cfg.model = state.range(2) ? ce::Model::stochastic : ce::Model::deterministic;
  cfg.epochs = 10;
  cfg.burn_in = 0;
  // Fresh start (every source at u): the default empty start ties every score at epoch 0, an
  // atypical first epoch that would weigh on a 10-epoch average.
  cfg.start = ce::Start::fresh;
  const ce::Problem pr = ce::make_problem(population(n), cfg);
  const ce::Policy policy = ce::Policy(state.range(3));
  double loop = 0.0;
  for (auto _ : state) {
    const ce::RolloutOutput out = ce::cpu_rollout(pr, policy);
    state.SetIterationTime(out.loop_seconds / double(cfg.epochs));
    loop += out.loop_seconds;
    benchmark::DoNotOptimize(out.replication_reward.data());
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(n));
  state.counters["ms_per_epoch"] =
      benchmark::Counter(1e3 * loop / double(state.iterations() * cfg.epochs));
  state.SetLabel(std::string(ce::to_string(cfg.model)) + " " + ce::to_string(policy) +
                 " M=" + std::to_string(int64_t(cfg.budget)));
}

}  // namespace

BENCHMARK(BM_CpuEpoch)
    ->ArgsProduct({{1000000, 10000000}, {100}, {0, 1}, {0}})
    ->Args({10000000, 100, 0, 1})
    ->Args({10000000, 100, 0, 2})
    ->Args({10000000, 10, 0, 0})
    ->Args({10000000, 1000, 0, 0})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

// The Lagrangian bound on the CPU backend (seconds per bound) for 1e7 and 1e8 sources.
static void BM_Bound(benchmark::State& state) {
  const std::size_t n = std::size_t(state.range(0));
  ce::RunConfig cfg;
  cfg.budget = double(n) / 100;
  const ce::Problem pr = ce::make_problem(population(n), cfg);
  ce::BoundResult b;
  for (auto _ : state) {
    b = ce::lagrangian_bound(pr);
    state.SetIterationTime(b.seconds);
  }
  state.counters["passes"] = double(b.evaluations);
  state.SetLabel("bound " + std::to_string(b.bound));
}
BENCHMARK(BM_Bound)
    ->Arg(10000000)
    ->Arg(100000000)
    ->UseManualTime()
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

BENCHMARK_MAIN();
