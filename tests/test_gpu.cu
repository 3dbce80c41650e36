// GPU tests (label gpu): every CUDA path against the CPU reference. Without a device they are
// skipped; REQUIRE_GPU=1 turns the skip into a failure (scripts/gpu-check sets it).
//
// Tolerances. Scores: the device's log/exp/expm1 differ from glibc's by at most a few ulps, so a
// Whittle index agrees with the host's to 1e-12 of u*/C. Selections: compared exactly (same stop
// source, hence the same set). Rollouts: identical crawled sets every epoch; rewards to 1e-9
// relative (states agree to a few ulps; a different summation order adds a few more).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "crawleval/analysis/bound.hpp"
#include "crawleval/analysis/fresh_rates.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/engine/cuda_backend.hpp"
#include "crawleval/engine/fresh_engine.hpp"
#include "crawleval/engine/keyed_rollout.hpp"
#include "crawleval/evaluate/driver.hpp"
#include "crawleval/evaluate/fresh_evaluate.hpp"
#include "crawleval/io/fresh_io.hpp"
#include "crawleval/io/io.hpp"
#include "crawleval/model/grid_ceiling.hpp"
#include "crawleval/model/model.hpp"
#include "crawleval/model/selection.hpp"
#include "crawleval/select/window_select.hpp"
#include "device_buffer.cuh"
#include "select/window_selector.hpp"
#include "sort_select.cuh"
#include "test_util.hpp"
#include "wide_engine.cuh"
#include "window_select.cuh"

namespace ce = crawleval;
namespace cd = crawleval::cuda::detail;

#define REQUIRE_GPU_OR_SKIP()                                                    \
  do {                                                                           \
    if (ce::cuda::device_count() == 0) {                                         \
      const char* r = std::getenv("REQUIRE_GPU");                                \
      if (r && std::string(r) == "1")                                            \
        FAIL() << "REQUIRE_GPU=1 but " << ce::cuda::device_unavailable_reason(); \
      GTEST_SKIP() << ce::cuda::device_unavailable_reason();                     \
    }                                                                            \
  } while (0)

namespace {

/// CRAWLEVAL_TEST_SANITIZE=1: the sanitizer mode (scripts/gpu-check's compute-sanitizer steps).
/// Every kernel still runs, on the smallest sizes that reach its paths, for a few epochs and two
/// policies (whittle and round robin), so that a sanitizer step stays within its minutes.
bool sanitizing() {
  const char* v = std::getenv("CRAWLEVAL_TEST_SANITIZE");
  return v && std::string(v) == "1";
}

/// CRAWLEVAL_TEST_MAX_N caps the sizes; the sanitizer mode caps them at 131 (tests that need a
/// larger size to reach a path say so).
bool size_allowed(std::size_t n) {
  if (sanitizing() && n > 131) return false;
  const char* v = std::getenv("CRAWLEVAL_TEST_MAX_N");
  return !v || n <= std::size_t(std::strtoull(v, nullptr, 10));
}

/// The policies a wide or tall rollout test runs: all four, or two in the sanitizer mode (the
/// index and a policy whose scores tie in whole blocks).
std::vector<ce::Policy> test_policies() {
  if (sanitizing()) return {ce::Policy::whittle, ce::Policy::round_robin};
  return {ce::Policy::whittle, ce::Policy::greedy, ce::Policy::round_robin, ce::Policy::random};
}

__global__ void score_kernel(const ce::SourceParams* p, const double* x, double* general,
                             const uint32_t* age, const uint32_t* epoch, double* by_age,
                             std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  general[i] = ce::whittle_index(x[i], p[i]);
  double om;
  const double v = ce::AgeState::value(age[i], epoch[i], x[i], p[i], &om);
  by_age[i] = ce::AgeState::index(age[i], v, om, p[i]);
}

using crawleval::testing::random_population;

}  // namespace

TEST(GpuScoreKernel, EqualsReference) {
  REQUIRE_GPU_OR_SKIP();
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  const std::size_t n = size_allowed(100000) ? 100000 : 1000;
  std::vector<ce::SourceParams> p(n);
  std::vector<double> x(n);
  std::vector<uint32_t> age(n), epoch(n);
  for (std::size_t i = 0; i < n; ++i) {
    p[i] = ce::derive_params(0.1 + 100 * U(rng), 0.05 + 3 * U(rng), 0.01 + 3 * U(rng),
                             0.5 + 2 * U(rng), 1.0);
    x[i] = 1.3 * U(rng) * p[i].u_star;
    age[i] = i % 3 == 0 ? ce::AgeState::kOffGrid : uint32_t(rng() % 60);
    epoch[i] = uint32_t(rng() % 60);
  }
  cd::Stream s;
  cd::DeviceBuffer<ce::SourceParams> dp;
  cd::DeviceBuffer<double> dx, dg(n), da(n);
  cd::DeviceBuffer<uint32_t> dage, depoch;
  dp.upload(p, s), dx.upload(x, s), dage.upload(age, s), depoch.upload(epoch, s);
  score_kernel<<<(n + 255) / 256, 256, 0, s>>>(dp.data(), dx.data(), dg.data(), dage.data(),
                                               depoch.data(), da.data(), n);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  std::vector<double> g(n), a(n);
  dg.download(g.data(), n, s), da.download(a.data(), n, s);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  for (std::size_t i = 0; i < n; ++i) {
    const double tol = 1e-12 * p[i].u_star * p[i].inv_cost;
    ASSERT_NEAR(g[i], ce::whittle_index(x[i], p[i]), tol) << i;
    double om;
    const double v = ce::AgeState::value(age[i], epoch[i], x[i], p[i], &om);
    ASSERT_NEAR(a[i], ce::AgeState::index(age[i], v, om, p[i]), tol) << i;
  }
}

namespace {

__global__ void ceiling_kernel(const double* alpha, const double* u, double* out, std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = ce::grid_index_ceiling(alpha[i], u[i]);
}

}  // namespace

// The dormant sources' ceiling test (model/grid_ceiling.hpp) gives the host's bits on the device:
// a GPU engine that puts sources to sleep decides as the CPU engine does.
TEST(GpuGridCeiling, EqualsTheHostBitForBit) {
  REQUIRE_GPU_OR_SKIP();
  std::mt19937_64 rng(8);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> alpha = {0.0,          0.5,  1.0, 1.0 - 0x1p-52, 1.0 - 0x1p-40, 1e-300,
                               std::nan(""), -0.0, 1.5, 0.999999,      0.25};
  std::vector<double> u = {0.0,      1e-300, 1.0, 1e300, inf, std::nan(""),
                           4.9e-324, 2.0,    0.5, 1e-10, 3.0};
  for (int k = 0; k < 20000; ++k) {
    alpha.push_back(k % 2 ? U(rng) : 1.0 - std::exp(-40.0 * U(rng)));
    u.push_back(std::exp(1400.0 * U(rng) - 700.0));
  }
  const std::size_t n = alpha.size();
  cd::Stream s;
  cd::DeviceBuffer<double> da, du, dout(n);
  da.upload(alpha, s), du.upload(u, s);
  ceiling_kernel<<<(n + 255) / 256, 256, 0, s>>>(da.data(), du.data(), dout.data(), n);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  std::vector<double> got(n);
  dout.download(got.data(), n, s);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  for (std::size_t i = 0; i < n; ++i) {
    const double want = ce::grid_index_ceiling(alpha[i], u[i]);
    ASSERT_EQ(std::memcmp(&got[i], &want, sizeof want), 0)
        << "alpha " << alpha[i] << " u " << u[i] << ": device " << got[i] << ", host " << want;
  }
}

namespace {

enum class Keys { random, all_equal, infinities, many_ties, zeros_and_few };

std::vector<double> make_scores(std::size_t n, Keys kind, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> U(0.0, 1.0);
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> s(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (kind) {
      case Keys::random:
        s[i] = std::exp(10 * U(rng)) * (rng() % 8 == 0 ? -1 : 1);
        break;
      case Keys::all_equal:
        s[i] = 7.5;
        break;
      case Keys::infinities:
        s[i] = rng() % 5 == 0 ? inf : rng() % 4 == 0 ? -inf : U(rng);
        break;
      case Keys::many_ties:
        s[i] = double(rng() % 7) + (rng() % 3 == 0 ? 1e-9 : 0.0);
        break;
      case Keys::zeros_and_few:  // the stochastic model's sources without arrivals
        s[i] = rng() % 10 == 0 ? U(rng) : 0.0;
        break;
    }
  }
  return s;
}

}  // namespace

TEST(GpuWindowSelect, EqualsTheHostTwinAndTheFullSort) {
  // The device selector and its host twin run the same steps on the same plan: same stop, same
  // classes, same decisions (misses, levels, tie scans); cub::DeviceRadixSort agrees on the stop.
  REQUIRE_GPU_OR_SKIP();
  std::mt19937_64 rng(7);
  cd::Stream s;
  // The sanitizer mode keeps 20000 keys: a bin of more than kResolveMax listed keys runs a
  // refinement level (histogram, min/max, compaction), which 131 keys never reach.
  const std::vector<std::size_t> sizes = sanitizing()
                                             ? std::vector<std::size_t>{131, 20000}
                                             : std::vector<std::size_t>{1, 131, 100000, 3000000};
  const std::vector<Keys> kinds =
      sanitizing() ? std::vector<Keys>{Keys::random, Keys::all_equal, Keys::zeros_and_few}
                   : std::vector<Keys>{Keys::random, Keys::all_equal, Keys::infinities,
                                       Keys::many_ties, Keys::zeros_and_few};
  for (std::size_t n : sizes) {
    if (!sanitizing() && !size_allowed(n)) continue;
    for (Keys kind : kinds) {
      const std::vector<double> scores = make_scores(n, kind, rng);
      std::vector<uint64_t> keys(n);
      for (std::size_t i = 0; i < n; ++i) keys[i] = ce::score_key(scores[i]);
      cd::DeviceBuffer<uint64_t> dkeys;
      dkeys.upload(keys, s);
      for (bool unit : {true, false}) {
        std::vector<uint64_t> w;
        uint64_t total = n;
        if (!unit) {
          w.resize(n);
          total = 0;
          for (auto& x : w) x = 1 + rng() % 128, total += x;
        }
        cd::DeviceBuffer<unsigned long long> dw;
        if (!unit) dw.upload(reinterpret_cast<const unsigned long long*>(w.data()), n, s);
        const unsigned long long* weight = unit ? nullptr : dw.data();
        const std::vector<uint64_t> limits =
            sanitizing() ? std::vector<uint64_t>{1, total / 2}
                         : std::vector<uint64_t>{0, 1, total / 2, total - 1, total};
        for (uint64_t limit : limits) {
          for (int plan_kind = 0; plan_kind < 3; ++plan_kind) {
            SCOPED_TRACE("n " + std::to_string(n) + " kind " + std::to_string(int(kind)) +
                         (unit ? " unit" : " costs") + " limit " + std::to_string(limit) +
                         " plan " + std::to_string(plan_kind));
            ce::detail::WindowSelector twin;
            twin.prepare(n);
            cd::DeviceWindowSelector dev;
            dev.prepare(n, unit, limit, s);
            ce::window::Plan plan;  // 0: none (the window misses)
            if (plan_kind == 1) {   // 1: the plan the same keys leave (a hit)
              twin.select(keys.data(), unit ? nullptr : w.data(), n, limit);
              plan = twin.state().plan;
              twin.state() = ce::window::SelectState{};
              twin.state().plan = plan;
            } else if (plan_kind == 2 && n > 0) {  // 2: a tie key and a one-bin window
              plan.has_tie = 1;
              plan.tie_key = keys[rng() % n];
              plan.lo = plan.hi = ce::coarse_bin(plan.tie_key);
              twin.state().plan = plan;
            }
            dev.reset(plan, s);
            dev.enqueue(dkeys.data(), weight, s);
            const ce::window::SelectState got = dev.state(s);
            const ce::Selection want =
                twin.select(keys.data(), unit ? nullptr : w.data(), n, limit);
            ASSERT_EQ(got.diag.failures, 0u);
            ASSERT_EQ(got.phase, uint32_t(ce::window::kDone));
            ASSERT_EQ(got.applied.sel.all, want.all);
            if (!want.all) {
              ASSERT_EQ(got.applied.sel.stop_key, want.stop_key);
              ASSERT_EQ(got.applied.sel.stop_id, want.stop_id);
            }
            const ce::window::Diagnostics& td = twin.state().diag;
            EXPECT_EQ(got.diag.misses, td.misses);
            EXPECT_EQ(got.diag.levels, td.levels);
            EXPECT_EQ(got.diag.tie_scans, td.tie_scans);
            EXPECT_EQ(got.plan.lo, twin.state().plan.lo);
            EXPECT_EQ(got.plan.hi, twin.state().plan.hi);
            const std::vector<uint8_t> cls = dev.classes(s);
            for (std::size_t i = 0; i < n; ++i)
              ASSERT_EQ(ce::window::crawled_by_class(cls[i], i, keys[i], got.applied),
                        ce::is_selected(keys[i], i, want))
                  << "source " << i;
            if (n <= 100000 && plan_kind == 0) {
              const ce::Selection sorted =
                  cd::select_by_full_sort(dkeys.data(), weight, n, limit, s);
              EXPECT_EQ(sorted.all, want.all);
              if (!want.all) EXPECT_EQ(sorted.stop_id, want.stop_id);
            }
          }
        }
      }
    }
  }
}

namespace {

using crawleval::testing::Trace;
using crawleval::testing::traced;

}  // namespace

TEST(GpuWideRollout, EqualsReference) {
  REQUIRE_GPU_OR_SKIP();
  for (std::size_t n : {std::size_t(1), std::size_t(131), std::size_t(100000)}) {
    if (!size_allowed(n)) continue;
    for (bool unit : {true, false}) {
      for (bool given : {false, true}) {
        const ce::Population pop = random_population(n, 31 * n + unit + 2 * given, unit, given);
        for (ce::Model model : {ce::Model::deterministic, ce::Model::stochastic}) {
          ce::RunConfig cfg;
          cfg.budget = std::min(pop.total_cost(), std::max(1.0, std::floor(pop.total_cost() / 3)));
          cfg.epochs = n >= 100000 || sanitizing() ? 4 : 40;
          cfg.burn_in = sanitizing() ? 1 : 2;
          cfg.model = model;
          cfg.start = given ? ce::Start::given : ce::Start::fresh;
          cfg.seed = 11;
          const ce::Problem pr = ce::make_problem(pop, cfg);
          for (ce::Policy p : test_policies()) {
            SCOPED_TRACE("n " + std::to_string(n) + (unit ? " unit" : " costs") +
                         (given ? " given" : " fresh") + " " + ce::to_string(model) + " " +
                         ce::to_string(p));
            const Trace want = traced(pr, p, ce::Backend::reference);
            const Trace got = traced(pr, p, ce::Backend::cuda);
            ASSERT_EQ(got.sets.size(), want.sets.size());
            for (std::size_t t = 0; t < want.sets.size(); ++t) {
              ASSERT_EQ(got.sets[t], want.sets[t]) << "epoch " << t;
              ASSERT_NEAR(got.rewards[t], want.rewards[t],
                          1e-9 * std::fabs(want.rewards[t]) + 1e-12)
                  << "epoch " << t;
            }
            const ce::RolloutOutput a = ce::rollout(pr, p, ce::Backend::reference);
            const ce::RolloutOutput b = ce::rollout(pr, p, ce::Backend::cuda);
            ASSERT_NEAR(b.replication_reward[0], a.replication_reward[0],
                        1e-9 * std::fabs(a.replication_reward[0]) + 1e-12);
          }
        }
      }
    }
  }
}

TEST(GpuWideRollout, TenMillionSourcesEqualCpuBackend) {
  REQUIRE_GPU_OR_SKIP();
  if (!size_allowed(10000000)) GTEST_SKIP() << "CRAWLEVAL_TEST_MAX_N";
  const ce::Population pop = ce::synthetic_population(10000000, 3);
  ce::RunConfig cfg;
  cfg.budget = 100000;
  cfg.epochs = 4;
  cfg.burn_in = 1;
  const ce::Problem pr = ce::make_problem(pop, cfg);
  const Trace want = traced(pr, ce::Policy::whittle, ce::Backend::cpu);
  const Trace got = traced(pr, ce::Policy::whittle, ce::Backend::cuda);
  ASSERT_EQ(got.sets.size(), want.sets.size());
  for (std::size_t t = 0; t < want.sets.size(); ++t) {
    EXPECT_EQ(got.sets[t], want.sets[t]) << "epoch " << t;
    EXPECT_NEAR(got.rewards[t], want.rewards[t], 1e-9 * want.rewards[t]) << "epoch " << t;
  }
}

TEST(GpuWideRollout, TiesAtScoreZeroEqualCpuBackendWithOneSync) {
  // Stochastic model from empty sources at M/N = 10%: most sources sit at score 0, so the boundary
  // falls inside that tie group epoch after epoch (the tie-tile path). Same crawled sets as the
  // CPU backend, and the host waits on the device once per run.
  REQUIRE_GPU_OR_SKIP();
  const std::size_t n = size_allowed(200000) ? 200000 : 2000;
  const ce::Population pop = ce::synthetic_population(n, 9);
  for (ce::Model model : {ce::Model::stochastic, ce::Model::deterministic}) {
    ce::RunConfig cfg;
    cfg.budget = double(n / 10);
    cfg.epochs = sanitizing() ? 3 : 12;
    cfg.burn_in = 1;
    cfg.model = model;
    cfg.start = ce::Start::empty;
    const ce::Problem pr = ce::make_problem(pop, cfg);
    SCOPED_TRACE(ce::to_string(model));
    const Trace want = traced(pr, ce::Policy::whittle, ce::Backend::cpu);
    const Trace got = traced(pr, ce::Policy::whittle, ce::Backend::cuda);
    ASSERT_EQ(got.sets.size(), want.sets.size());
    for (std::size_t t = 0; t < want.sets.size(); ++t) {
      ASSERT_EQ(got.sets[t], want.sets[t]) << "epoch " << t;
      ASSERT_NEAR(got.rewards[t], want.rewards[t], 1e-9 * std::fabs(want.rewards[t]) + 1e-12);
    }
    const ce::RolloutOutput out = ce::cuda::rollout(pr, ce::Policy::whittle);
    EXPECT_EQ(out.counters.syncs, 1u);
    EXPECT_EQ(out.counters.selections, cfg.epochs + cfg.burn_in);
    EXPECT_GE(out.counters.tie_scans, 1u);  // epoch 0: every source at score 0
    const ce::RolloutOutput cpu = ce::rollout(pr, ce::Policy::whittle, ce::Backend::cpu);
    EXPECT_NEAR(out.replication_reward[0], cpu.replication_reward[0],
                1e-9 * cpu.replication_reward[0]);
  }
}

TEST(GpuWideRollout, SleepingSourcesGiveThePassOverEverySourceBitForBit) {
  // kernels/dormant_pass.cu against the pass over every source: the same rewards and costs, epoch
  // by epoch, bit for bit (the host twin, test_gpu_dormant_twin.cpp, checks the same logic on the
  // host, crawled sets and states included); "eager" sleeps at every epoch that can.
  REQUIRE_GPU_OR_SKIP();
  const std::size_t n = size_allowed(200000) && !sanitizing() ? 200000 : 3000;
  for (bool unit : {true, false}) {
    const ce::Population pop =
        unit ? ce::synthetic_population(n, 17) : random_population(n, 17, false, false);
    for (double share : {0.01, 0.05}) {
      if (sanitizing() && share > 0.01) continue;  // the sanitizers: every kernel, few launches
      ce::RunConfig cfg;
      cfg.budget = std::max(1.0, std::floor(pop.total_cost() * share));
      cfg.epochs = sanitizing() ? 12 : 300;
      cfg.burn_in = sanitizing() ? 4 : 20;
      cfg.start = ce::Start::empty;
      const ce::Problem pr = ce::make_problem(pop, cfg);
      for (ce::Policy p : {ce::Policy::whittle, ce::Policy::greedy}) {
        if (sanitizing() && p == ce::Policy::greedy) continue;
        SCOPED_TRACE(std::string(unit ? "unit " : "costs ") + std::to_string(share) + " " +
                     ce::to_string(p));
        ce::RolloutOutput plain, sleepy, eager;
        {
          ce::testing::DormantMode e("0");
          plain = ce::cuda::rollout(pr, p);
        }
        if (!sanitizing()) {
          ce::testing::DormantMode e("1");
          sleepy = ce::cuda::rollout(pr, p);
        }
        {
          ce::testing::DormantMode e("eager");
          eager = ce::cuda::rollout(pr, p);
        }
        EXPECT_EQ(plain.counters.dormant, 0u);
        EXPECT_GT(eager.counters.dormant, 0u);
        for (const ce::RolloutOutput* o : {&sleepy, &eager}) {
          if (o->replication_reward.empty()) continue;  // not run under the sanitizers
          EXPECT_EQ(o->epoch_reward, plain.epoch_reward);
          EXPECT_EQ(o->replication_reward, plain.replication_reward);
          EXPECT_EQ(o->replication_cost, plain.replication_cost);
          EXPECT_EQ(o->counters.selections, plain.counters.selections);
        }
        std::printf("  asleep %.1f%% (eager %.1f%%), wakes %llu, recounts %llu\n",
                    100.0 * double(sleepy.counters.dormant) / (double(n) * cfg.epochs),
                    100.0 * double(eager.counters.dormant) / (double(n) * cfg.epochs),
                    (unsigned long long)eager.counters.dormant_wakes,
                    (unsigned long long)eager.counters.recounts);
      }
    }
  }
}

TEST(GpuTallRollout, StaticPolicyWithoutPeriodsThrows) {
  REQUIRE_GPU_OR_SKIP();
  const ce::Population pop = ce::paper_example();
  ce::RunConfig cfg;
  cfg.replications = 8;
  const ce::Problem pr = ce::make_problem(pop, cfg);  // no prepare_static_policy()
  EXPECT_THROW(ce::cuda::rollout(pr, ce::Policy::static_rate), ce::Error);
}

// Issue #28: sources whose global ids lie above 2^32 (a slice of the 1e10-source synthetic
// population from 5e9, and one straddling 2^32): the wide kernels' draws take the 64-bit id
// (a 64-bit base + the local index), so the crawled sets are the reference's; the tall kernel
// (N <= 64, several replications) too.
__global__ void greedy_scores_kernel(const double* state, const double* inv_cost, double* out,
                                     std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = __dmul_rn(state[i], inv_cost[i]);
}

__global__ void sum_kernel(const double* v, std::size_t n, double* out) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    double s = 0.0;
    for (std::size_t i = 0; i < n; ++i) s += v[i];
    *out = s;
  }
}

// A policy given as a function on the GPU (cuda::function_rollout): a device function computing
// greedy's scores (state / cost, on the state the function observes: the expected state under
// belief) crawls the built-in greedy's sets, epoch by epoch; its scores are read from the buffer
// it fills and from one it lends (borrowed), on alternate epochs; `collected` sums to the previous
// epoch's reward and `age` is 1 right after a crawl.
TEST(GpuFunctionRollout, GreedyAsAFunctionEqualsTheBuiltIn) {
  REQUIRE_GPU_OR_SKIP();
  const std::size_t n = sanitizing() ? 131 : 20000;
  for (ce::Observe observe : {ce::Observe::full, ce::Observe::belief}) {
    ce::Population pop = random_population(n, 41, false, false);
    ce::RunConfig cfg;
    cfg.budget = std::floor(double(n) / 8.0) + 0.5;
    cfg.epochs = sanitizing() ? 3 : 12;
    cfg.burn_in = 2;
    cfg.replications = 2;
    cfg.seed = 5;
    cfg.model = ce::Model::stochastic;
    cfg.observe = observe;
    const ce::Problem pr = ce::make_problem(pop, cfg);
    ASSERT_TRUE(ce::cuda::function_supports(pr));
    std::vector<double> inv_cost(n);
    for (std::size_t i = 0; i < n; ++i) inv_cost[i] = 1.0 / pop.cost[i];
    cd::DeviceBuffer<double> d_inv, own(n), sum(1);
    d_inv.upload(inv_cost, nullptr);
    std::vector<double> collected_sums;
    bool ages_restart = false;
    const ce::cuda::DeviceScoreFn fn = [&](const ce::cuda::DeviceScoreRequest& q) {
      ASSERT_EQ(q.n, n);
      const bool lend = q.epoch % 2 == 1;
      greedy_scores_kernel<<<64, 256>>>(q.state, d_inv.data(), lend ? own.data() : q.scores, n);
      if (lend) *q.borrowed = own.data();
      sum_kernel<<<1, 1>>>(q.collected, n, sum.data());
      double total = 0.0;
      sum.download(&total, 1, nullptr);
      ASSERT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
      if (q.replication == 0) collected_sums.push_back(total);
      std::vector<double> age(n);
      ASSERT_EQ(cudaMemcpy(age.data(), q.age, n * sizeof(double), cudaMemcpyDeviceToHost),
                cudaSuccess);
      ages_restart |= std::find(age.begin(), age.end(), 1.0) != age.end();
    };
    SCOPED_TRACE(ce::to_string(observe));
    const Trace want = traced(pr, ce::Policy::greedy, ce::Backend::reference);
    const Trace got = ce::testing::observed([&](const ce::EpochObserver* o) {
      return ce::cuda::function_rollout(pr, fn, "greedy", o);
    });
    ASSERT_EQ(got.sets.size(), want.sets.size());
    for (std::size_t t = 0; t < want.sets.size(); ++t)
      ASSERT_EQ(got.sets[t], want.sets[t]) << "epoch entry " << t;
    for (std::size_t r = 0; r < want.out.replication_reward.size(); ++r)
      EXPECT_NEAR(got.out.replication_reward[r], want.out.replication_reward[r],
                  1e-10 * std::fabs(want.out.replication_reward[r]));
    // collected at epoch t sums what epoch t-1 crawled (the first replication's entries).
    const std::size_t total = cfg.burn_in + cfg.epochs;
    ASSERT_EQ(collected_sums.size(), total);
    EXPECT_EQ(collected_sums[0], 0.0);
    for (std::size_t t = 1; t < total; ++t)
      EXPECT_NEAR(collected_sums[t], want.rewards[t - 1], 1e-9 * want.rewards[t - 1]) << t;
    EXPECT_TRUE(ages_restart);
  }
}

// The wide engine's generic pass (kernels/generic_pass.cu; host twin: tests/test_generic_pass.cpp)
// runs the general model and every built-in policy at any N: belief observation, content expiry,
// utility laws other than the exponential one, the static and lip policies, the three starts,
// costs, global ids across 2^32. Crawled sets epoch by epoch as the reference's; rewards within
// rounding (the device's logarithms and exponentials, the block sums).
TEST(GpuGenericPass, EqualsReference) {
  REQUIRE_GPU_OR_SKIP();
  struct Case {
    const char* name;
    ce::Model model;
    ce::Observe observe;
    bool expiry, unit;
    const char* law;
    ce::Start start;
  };
  const Case cases[] = {{"deterministic belief", ce::Model::deterministic, ce::Observe::belief,
                         false, true, "", ce::Start::empty},
                        {"stochastic expiry, costs", ce::Model::stochastic, ce::Observe::full, true,
                         false, "", ce::Start::empty},
                        {"stochastic lognormal:2, full start", ce::Model::stochastic,
                         ce::Observe::full, false, true, "lognormal:2", ce::Start::full},
                        {"stochastic pareto:3, belief, costs", ce::Model::stochastic,
                         ce::Observe::belief, false, false, "pareto:3", ce::Start::empty},
                        {"deterministic expiry, full start", ce::Model::deterministic,
                         ce::Observe::full, true, true, "", ce::Start::full}};
  const std::vector<ce::Policy> policies =
      sanitizing() ? std::vector<ce::Policy>{ce::Policy::whittle, ce::Policy::lip}
                   : std::vector<ce::Policy>{ce::Policy::whittle,     ce::Policy::greedy,
                                             ce::Policy::round_robin, ce::Policy::random,
                                             ce::Policy::static_rate, ce::Policy::lip};
  const std::size_t n = sanitizing() ? 131 : 5000;
  for (const Case& c : cases) {
    if (sanitizing() && &c != &cases[0] && &c != &cases[3]) continue;
    ce::Population pop = random_population(n, 23 + n, c.unit, true);
    if (c.expiry) {
      pop.expiry.resize(n);
      for (std::size_t i = 0; i < n; ++i) pop.expiry[i] = i % 3 ? uint32_t(2 + i % 5) : 0u;
    }
    pop.first_id = (uint64_t(1) << 32) - n / 2;
    ce::RunConfig cfg;
    cfg.budget = std::floor(double(n) / 9.0) + (c.unit ? 0.0 : 0.5);
    cfg.epochs = sanitizing() ? 3 : 10;
    cfg.burn_in = 2;
    cfg.replications = 2;
    cfg.first_replication = 3;
    cfg.seed = 29;
    cfg.model = c.model;
    cfg.observe = c.observe;
    cfg.start = c.start;
    if (*c.law) ce::set_utility(cfg, c.law);
    ce::Problem pr = ce::make_problem(pop, cfg);
    ce::prepare_static_policy(pr);
    ce::prepare_lip_policy(pr);
    for (ce::Policy p : policies) {
      SCOPED_TRACE(std::string(c.name) + " " + ce::to_string(p));
      ASSERT_TRUE(ce::cuda::generic_pass(pr, p));
      const Trace want = traced(pr, p, ce::Backend::reference);
      const Trace got = traced(pr, p, ce::Backend::cuda);
      ASSERT_EQ(got.sets.size(), want.sets.size());
      for (std::size_t t = 0; t < want.sets.size(); ++t) {
        ASSERT_EQ(got.sets[t], want.sets[t]) << "epoch entry " << t;
        EXPECT_NEAR(got.rewards[t], want.rewards[t], 1e-10 * std::fabs(want.rewards[t]) + 1e-12);
      }
      for (std::size_t r = 0; r < want.out.replication_reward.size(); ++r)
        EXPECT_NEAR(got.out.replication_reward[r], want.out.replication_reward[r],
                    1e-10 * std::fabs(want.out.replication_reward[r]) + 1e-12);
    }
  }
}

// A GPU per rank's pass (keyed_rollout.hpp, kernels/keyed_pass.cu) in one process: the crawled
// sets of the CPU backend epoch by epoch and its rewards within rounding (the device's logarithms
// and exponentials); one chunk, several with a partial last tile, costs, the general model and
// every built-in policy. The same pass over MPI ranks is the conformance test's (mpirun).
TEST(GpuKeyedPass, EqualsTheCpuBackend) {
  REQUIRE_GPU_OR_SKIP();
  struct Case {
    ce::Model model;
    ce::Observe observe;
    bool expiry, unit;
    const char* law;
    std::size_t n;
  };
  const Case cases[] = {
      {ce::Model::deterministic, ce::Observe::full, false, true, "", 40000},
      {ce::Model::stochastic, ce::Observe::belief, false, false, "", 40000},
      {ce::Model::stochastic, ce::Observe::full, true, true, "lognormal:2", 3000},
      {ce::Model::deterministic, ce::Observe::full, false, false, "", 10},
  };
  for (const Case& c : cases) {
    if (sanitizing() && c.n > 3000) continue;
    ce::Population pop = random_population(c.n, 31 + c.n, c.unit, false);
    if (c.expiry) {
      pop.expiry.resize(c.n);
      for (std::size_t i = 0; i < c.n; ++i) pop.expiry[i] = i % 3 ? uint32_t(2 + i % 5) : 0u;
    }
    if (c.n == 10) pop.first_id = (uint64_t(1) << 32) - 4;
    ce::RunConfig cfg;
    cfg.budget = std::floor(double(c.n) / 9.0) + (c.unit ? 0.0 : 0.5);
    cfg.epochs = sanitizing() ? 2 : 6;
    cfg.burn_in = 1;
    cfg.replications = 2;
    cfg.first_replication = 3;
    cfg.seed = 13;
    cfg.model = c.model;
    cfg.observe = c.observe;
    if (*c.law) ce::set_utility(cfg, c.law);
    ce::Problem pr = ce::make_problem(pop, cfg);
    ce::prepare_static_policy(pr);
    ce::prepare_lip_policy(pr);
    for (ce::Policy p : {ce::Policy::whittle, ce::Policy::greedy, ce::Policy::round_robin,
                         ce::Policy::random, ce::Policy::static_rate, ce::Policy::lip}) {
      SCOPED_TRACE(std::string(ce::to_string(c.model)) + " " + ce::to_string(c.observe) +
                   (c.expiry ? " expiry " : " ") + c.law + " n " + std::to_string(c.n) + " " +
                   ce::to_string(p));
      ASSERT_EQ(ce::keyed_refusal(pr, p), "");
      const auto pass = ce::cuda::keyed_pass(ce::detail::keyed_columns(pr, p), pr.size());
      const Trace got = ce::testing::observed([&](const ce::EpochObserver* o) {
        return ce::keyed_rollout(pr, p, ce::solo_comm(), *pass, o);
      });
      const Trace want = traced(pr, p, ce::Backend::cpu);
      ASSERT_EQ(got.sets.size(), want.sets.size());
      for (std::size_t t = 0; t < want.sets.size(); ++t) {
        ASSERT_EQ(got.sets[t], want.sets[t]) << "epoch entry " << t;
        EXPECT_NEAR(got.rewards[t], want.rewards[t], 1e-10 * std::fabs(want.rewards[t]) + 1e-12);
      }
      ASSERT_EQ(got.out.replication_reward.size(), want.out.replication_reward.size());
      for (std::size_t r = 0; r < want.out.replication_reward.size(); ++r) {
        EXPECT_NEAR(got.out.replication_reward[r], want.out.replication_reward[r],
                    1e-10 * std::fabs(want.out.replication_reward[r]) + 1e-12);
        EXPECT_EQ(got.out.replication_cost[r], want.out.replication_cost[r]);  // (exact: costs)
      }
    }
  }
}

TEST(GpuWideRollout, SliceAboveTwoToThe32EqualsReference) {
  REQUIRE_GPU_OR_SKIP();
  for (uint64_t first : {uint64_t(5000000000ull), (uint64_t(1) << 32) - 777}) {
    for (std::size_t n : {std::size_t(40), std::size_t(5000)}) {
      ce::Population pop =
          ce::synthetic_slice(10000000000ull, 3, ce::SyntheticCosts::unit, first, uint64_t(n));
      pop.first_id = first;
      for (ce::Model model : {ce::Model::deterministic, ce::Model::stochastic}) {
        ce::RunConfig cfg;
        cfg.budget = std::floor(double(n) / 10.0);
        cfg.epochs = sanitizing() ? 3 : 12;
        cfg.burn_in = 1;
        cfg.replications = n <= 64 ? 3 : 1;
        cfg.model = model;
        cfg.seed = 11;
        const ce::Problem pr = ce::make_problem(pop, cfg);
        for (ce::Policy p : test_policies()) {
          SCOPED_TRACE("first " + std::to_string(first) + " n " + std::to_string(n) + " " +
                       ce::to_string(model) + " " + ce::to_string(p));
          const ce::RolloutOutput a = ce::rollout(pr, p, ce::Backend::reference);
          const ce::RolloutOutput b = ce::rollout(pr, p, ce::Backend::cuda);
          ASSERT_EQ(b.replication_reward.size(), a.replication_reward.size());
          for (std::size_t r = 0; r < a.replication_reward.size(); ++r)
            ASSERT_NEAR(b.replication_reward[r], a.replication_reward[r],
                        1e-9 * std::fabs(a.replication_reward[r]) + 1e-12)
                << "replication " << r;
          if (n <= 64) continue;  // the tall kernel has no observer
          const Trace want = traced(pr, p, ce::Backend::reference);
          const Trace got = traced(pr, p, ce::Backend::cuda);
          ASSERT_EQ(got.sets.size(), want.sets.size());
          for (std::size_t t = 0; t < want.sets.size(); ++t)
            ASSERT_EQ(got.sets[t], want.sets[t]) << "epoch " << t;
        }
      }
    }
  }
  // The tall kernel draws with one high half's key: a small population of the general model
  // (belief) whose ids cross a multiple of 2^32 is refused with the reason.
  ce::Population pop = ce::synthetic_slice(10000000000ull, 3, ce::SyntheticCosts::unit,
                                           (uint64_t(1) << 32) - 20, 40);
  pop.first_id = (uint64_t(1) << 32) - 20;
  ce::RunConfig cfg;
  cfg.budget = 4;
  cfg.epochs = 3;
  cfg.replications = 3;
  cfg.observe = ce::Observe::belief;
  const ce::Problem pr = ce::make_problem(pop, cfg);
  try {
    ce::rollout(pr, ce::Policy::whittle, ce::Backend::cuda);
    ADD_FAILURE() << "a tall population crossing 2^32 ran on the GPU";
  } catch (const ce::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cross a multiple of 2^32"), std::string::npos)
        << e.what();
  }
}

TEST(GpuTallRollout, EqualsReference) {
  REQUIRE_GPU_OR_SKIP();
  const ce::Population pop = ce::paper_example();
  for (ce::Model model : {ce::Model::deterministic, ce::Model::stochastic}) {
    for (ce::UtilityDist u : {ce::UtilityDist::deterministic, ce::UtilityDist::exponential,
                              ce::UtilityDist::of(ce::UtilityLaw::lognormal, 2.5),
                              ce::UtilityDist::of(ce::UtilityLaw::pareto, 1.5),
                              ce::UtilityDist::of(ce::UtilityLaw::gamma, 0.3),
                              ce::UtilityDist::of(ce::UtilityLaw::gamma, 3.0)}) {
      if (model == ce::Model::deterministic && u.law > ce::UtilityLaw::exponential) continue;
      ce::RunConfig cfg;
      cfg.budget = 1;
      // 32 replications x 120 epochs: the reference's general-law epochs cost about 5 s here on
      // the GPU machine's CPU (200 x 300 took over 80 s, past the tests step's limit).
      cfg.epochs = sanitizing() ? 20 : 120;
      cfg.burn_in = sanitizing() ? 2 : 20;
      cfg.replications = size_allowed(100000) ? 32 : 8;
      cfg.model = model;
      cfg.utility = u;
      const ce::Problem pr = ce::make_problem(pop, cfg);
      for (ce::Policy p : test_policies()) {
        SCOPED_TRACE(std::string(ce::to_string(model)) + " " + ce::to_string(u) + " " +
                     ce::to_string(p));
        const ce::RolloutOutput a = ce::rollout(pr, p, ce::Backend::reference);
        const ce::RolloutOutput b = ce::rollout(pr, p, ce::Backend::cuda);  // tall: R > 1, N = 4
        ASSERT_EQ(b.replication_reward.size(), a.replication_reward.size());
        for (std::size_t r = 0; r < a.replication_reward.size(); ++r)
          ASSERT_NEAR(b.replication_reward[r], a.replication_reward[r],
                      1e-9 * a.replication_reward[r])
              << "replication " << r;
        ASSERT_EQ(b.epoch_reward.size(), a.epoch_reward.size());
        for (std::size_t t = 0; t < a.epoch_reward.size(); ++t)
          ASSERT_NEAR(b.epoch_reward[t], a.epoch_reward[t], 1e-9 * a.epoch_reward[t] + 1e-12) << t;
      }
    }
  }
}

// The wide regime draws the deterministic and exponential laws only (rng.hpp, sample_arrivals<
// false>): the other laws are refused with the reason, and --backend auto runs them on the CPU.
TEST(GpuWideRollout, OtherUtilityLawsAreRefusedWithTheReason) {
  REQUIRE_GPU_OR_SKIP();
  const ce::Population pop = random_population(500, 5, true, false);
  ce::RunConfig cfg;
  cfg.budget = 50;
  cfg.epochs = 3;
  cfg.model = ce::Model::stochastic;
  cfg.utility = ce::UtilityDist::of(ce::UtilityLaw::lognormal, 2.5);
  const ce::Problem pr = ce::make_problem(pop, cfg);
  EXPECT_FALSE(ce::cuda::supports(pr, ce::Policy::whittle));
  EXPECT_THROW(ce::cuda::rollout(pr, ce::Policy::whittle), ce::InputError);
  ce::EvaluateOptions o;
  o.fallback_to_cpu = true;
  const ce::PolicyResult r = ce::evaluate(pr, ce::Policy::whittle, ce::Backend::cuda, nullptr, o);
  EXPECT_EQ(r.backend, ce::Backend::cpu);
}

TEST(GpuWideRollout, ReproducibleRunToRun) {
  REQUIRE_GPU_OR_SKIP();
  const ce::Population pop =
      random_population(size_allowed(200000) ? 200000 : 500, 5, false, false);
  ce::RunConfig cfg;
  cfg.budget = double(pop.size() / 10);
  cfg.epochs = sanitizing() ? 3 : 10;
  cfg.model = ce::Model::stochastic;
  const ce::Problem pr = ce::make_problem(pop, cfg);
  const ce::RolloutOutput a = ce::rollout(pr, ce::Policy::whittle, ce::Backend::cuda);
  const ce::RolloutOutput b = ce::rollout(pr, ce::Policy::whittle, ce::Backend::cuda);
  EXPECT_EQ(a.epoch_reward, b.epoch_reward);
}

TEST(GpuDevice, RefusesPopulationsThatDoNotFit) {
  REQUIRE_GPU_OR_SKIP();
  try {
    cd::require_device_memory(std::size_t(1) << 50, "a test population");
    FAIL() << "expected InputError";
  } catch (const ce::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("GiB of device memory"), std::string::npos) << e.what();
  }
}

TEST(GpuTallRollout, GeneralModelEqualsReference) {
  REQUIRE_GPU_OR_SKIP();
  ce::Population pop = ce::paper_example();
  for (bool expiring : {false, true}) {
    pop.expiry = expiring ? std::vector<uint32_t>{3, 6, 2, 0} : std::vector<uint32_t>{};
    for (ce::Observe obs : {ce::Observe::full, ce::Observe::belief}) {
      ce::RunConfig cfg;
      cfg.budget = 1;
      cfg.epochs = sanitizing() ? 20 : 200;
      cfg.burn_in = sanitizing() ? 2 : 10;
      cfg.replications = sanitizing() ? 8 : 64;
      cfg.model = ce::Model::stochastic;
      cfg.observe = obs;
      ce::Problem pr = ce::make_problem(pop, cfg);
      ce::prepare_static_policy(pr);
      const std::vector<ce::Policy> policies =
          sanitizing() ? std::vector<ce::Policy>{ce::Policy::whittle, ce::Policy::static_rate}
                       : std::vector<ce::Policy>{ce::Policy::whittle, ce::Policy::greedy,
                                                 ce::Policy::static_rate};
      for (ce::Policy p : policies) {
        SCOPED_TRACE(std::string(expiring ? "expiry " : "") + ce::to_string(obs) + " " +
                     ce::to_string(p));
        const ce::RolloutOutput a = ce::rollout(pr, p, ce::Backend::reference);
        const ce::RolloutOutput b = ce::rollout(pr, p, ce::Backend::cuda);
        for (std::size_t r = 0; r < a.replication_reward.size(); ++r)
          ASSERT_NEAR(b.replication_reward[r], a.replication_reward[r],
                      1e-9 * a.replication_reward[r]);
      }
    }
  }
}

TEST(GpuBound, EqualsTheCpuBound) {
  REQUIRE_GPU_OR_SKIP();
  const ce::Population pop = ce::synthetic_population(size_allowed(1000000) ? 1000000 : 1000, 4);
  for (double fraction :
       sanitizing() ? std::vector<double>{0.01} : std::vector<double>{0.001, 0.01, 0.2}) {
    ce::RunConfig cfg;
    cfg.budget = std::floor(double(pop.size()) * fraction);
    const ce::Problem pr = ce::make_problem(pop, cfg);
    const ce::BoundResult cpu = ce::lagrangian_bound(pr);
    const ce::BoundResult gpu = ce::cuda::lagrangian_bound(pr);
    EXPECT_NEAR(gpu.bound, cpu.bound, 1e-7 * cpu.bound) << fraction;
  }
}

// Costs from 1e-300 to 1e300: the multiplier's root lies far below the linear bisection's
// resolution over [0, max x_cap / C]; the GPU halves from there as the CPU backend does.
TEST(GpuBound, CostsOverManyDecadesEqualTheCpuBound) {
  REQUIRE_GPU_OR_SKIP();
  const ce::Population pop = ce::testing::decades_population(300.0);
  ce::RunConfig cfg;
  cfg.budget = 1.0;
  const ce::Problem pr = ce::make_problem(pop, cfg);
  const ce::BoundResult cpu = ce::lagrangian_bound(pr);
  const ce::BoundResult gpu = ce::cuda::lagrangian_bound(pr);
  EXPECT_NEAR(gpu.bound, cpu.bound, 1e-7 * cpu.bound);
}

/// A GPU freshness run's crawled sets epoch by epoch are the CPU engine's, and its numbers the
/// CPU's to `tolerance` relative (`gpu_run`: the one-GPU engine by default, whose chunk sums are
/// block reductions: 1e-9; its costs exactly where `exact_cost`). With a GPU run, it also counts
/// the same saturated URL-epochs.
using GpuFreshRun = std::function<ce::FreshRolloutOutput(const ce::FreshObserver*)>;
void expect_fresh_gpu_equals_cpu(const ce::FreshPopulation& pop, const ce::FreshConfig& cfg,
                                 ce::FreshPolicy policy, const GpuFreshRun& gpu_run = nullptr,
                                 double tolerance = 1e-9, bool exact_cost = false) {
  std::vector<std::vector<uint32_t>> cpu_sets, gpu_sets;
  const ce::FreshObserver cpu_obs = [&](uint32_t, uint64_t, const std::vector<uint32_t>& c) {
    cpu_sets.push_back(c);
  };
  const ce::FreshObserver gpu_obs = [&](uint32_t, uint64_t, const std::vector<uint32_t>& c) {
    gpu_sets.push_back(c);
  };
  const ce::FreshRolloutOutput cpu = ce::fresh_rollout(pop, cfg, policy, false, &cpu_obs);
  const ce::FreshRolloutOutput gpu =
      gpu_run ? gpu_run(&gpu_obs) : ce::fresh_rollout_cuda(pop, cfg, policy, &gpu_obs);
  ASSERT_EQ(cpu_sets.size(), gpu_sets.size());
  for (std::size_t t = 0; t < cpu_sets.size(); ++t) ASSERT_EQ(cpu_sets[t], gpu_sets[t]) << t;
  ASSERT_EQ(cpu.freshness.size(), gpu.freshness.size());
  for (std::size_t r = 0; r < cpu.freshness.size(); ++r) {
    EXPECT_NEAR(gpu.freshness[r], cpu.freshness[r], tolerance * cpu.freshness[r]);
    EXPECT_NEAR(gpu.penalty[r], cpu.penalty[r], tolerance * cpu.penalty[r]);
    if (exact_cost)
      EXPECT_EQ(gpu.cost[r], cpu.cost[r]);
    else
      EXPECT_NEAR(gpu.cost[r], cpu.cost[r], tolerance * cpu.cost[r]);
  }
  if (gpu_run) EXPECT_EQ(gpu.saturated, cpu.saturated);
}

// The freshness model (kernels/fresh_engine.cu) against the CPU engine: the same crawled sets
// epoch by epoch (every policy, costs, politeness caps, the steady start, CO coins), rewards to
// 1e-9 relative (a chunk's sources are summed by a block reduction instead of in order).
TEST(GpuFresh, CrawledSetsEqualTheCpuEngine) {
  REQUIRE_GPU_OR_SKIP();
  for (bool costs : {false, true})
    for (uint32_t cap : {0u, 2u}) {
      // 20,000 URLs: above kFreshSerialN, so the CPU side runs its threaded engine (40,000 and 12
      // epochs took 141 s on an H100's host, most of a device call's test step).
      ce::FreshPopulation pop =
          ce::synthetic_fresh_population(size_allowed(20000) ? 20000 : 131, 5);
      if (costs)
        for (std::size_t i = 0; i < pop.size(); ++i) pop.cost[i] = 0.5 + double(i % 4) * 0.5;
      ce::FreshConfig cfg;
      cfg.budget = 0.2 * double(pop.size());
      cfg.host_cap = cap;
      cfg.epochs = sanitizing() ? 4 : 8;
      cfg.burn_in = sanitizing() ? 1 : 3;
      cfg.replications = 2;
      cfg.start = ce::FreshStart::steady;
      const std::vector<ce::FreshPolicy> policies =
          sanitizing()
              ? std::vector<ce::FreshPolicy>{ce::FreshPolicy::index, ce::FreshPolicy::lambda_crawl}
              : std::vector<ce::FreshPolicy>{ce::FreshPolicy::index,
                                             ce::FreshPolicy::greedy,
                                             ce::FreshPolicy::lambda_crawl,
                                             ce::FreshPolicy::lambda_crawl_approx,
                                             ce::FreshPolicy::binary_lambda_crawl,
                                             ce::FreshPolicy::uniform,
                                             ce::FreshPolicy::random,
                                             ce::FreshPolicy::custom};
      for (ce::FreshPolicy policy : policies) {
        SCOPED_TRACE(std::string(ce::to_string(policy)) + " cap " + std::to_string(cap) +
                     (costs ? " costs" : ""));
        expect_fresh_gpu_equals_cpu(pop, cfg, policy);
      }
    }
}

// A slice of a 1e11-URL population (global ids near 9e10, hosts above 2^32): the kernels key
// their draws (steady start, random scores, changes, CO coins) by the global id, as the CPU engine
// does; the same crawled sets epoch by epoch.
TEST(GpuFresh, SliceAboveTwoToThe32EqualsTheCpuEngine) {
  REQUIRE_GPU_OR_SKIP();
  const ce::FreshPopulation pop = ce::synthetic_fresh_slice(
      100000000000ull, 5, true, 90000000000ull, size_allowed(30000) ? 30000 : 131);
  ce::FreshConfig cfg;
  cfg.budget = 0.2 * double(pop.size());
  cfg.host_cap = 2;
  cfg.epochs = sanitizing() ? 3 : 10;
  cfg.burn_in = 1;
  cfg.start = ce::FreshStart::steady;
  for (ce::FreshPolicy policy :
       {ce::FreshPolicy::index, ce::FreshPolicy::random, ce::FreshPolicy::lambda_crawl}) {
    SCOPED_TRACE(ce::to_string(policy));
    expect_fresh_gpu_equals_cpu(pop, cfg, policy);
  }
  // nutch-adaptive's schedule on the device (its first due epochs drawn by the global id and the
  // replication's index: a later first replication too), with the caps and many URLs due.
  cfg.first_replication = 2;
  cfg.replications = 2;
  cfg.nutch_start = 2.0;
  cfg.nutch_max = 4.0;
  SCOPED_TRACE("nutch-adaptive");
  expect_fresh_gpu_equals_cpu(pop, cfg, ce::FreshPolicy::nutch_adaptive);
}

// The freshness model's pass for a GPU per rank (kernels/fresh_keyed_pass.cu) in one process,
// against the CPU engine: the same crawled sets epoch by epoch, the numbers within rounding (the
// chunk sums are taken in the CPU's order; only the device's log, exp and expm1 differ). Costs,
// caps, the steady start, a coin policy, nutch-adaptive, custom's header, random scores keyed by
// global ids above 2^32, a later first replication, and a user's score function on the host.
TEST(GpuFreshKeyedPass, EqualsTheCpuEngine) {
  REQUIRE_GPU_OR_SKIP();
  ce::FreshPopulation pop = ce::synthetic_fresh_slice(100000000000ull, 7, true, 90000000000ull,
                                                      size_allowed(40000) ? 40000 : 131);
  for (std::size_t i = 0; i < pop.size(); ++i) pop.cost[i] = 0.5 + double(i % 4) * 0.5;
  ce::FreshConfig cfg;
  cfg.budget = 0.15 * double(pop.size());
  cfg.host_cap = 2;
  cfg.epochs = sanitizing() ? 2 : 6;
  cfg.burn_in = 1;
  cfg.replications = 2;
  cfg.first_replication = 3;
  cfg.start = ce::FreshStart::steady;
  cfg.nutch_start = 2.0;
  cfg.nutch_max = 5.0;
  const ce::FreshPassMaker device = ce::device_fresh_pass();
  const ce::FreshScoreFn user = [&](const ce::FreshScoreRequest& q) {  // the index, as given
    for (std::size_t i = 0; i < q.n; ++i) {
      const ce::FreshParams p =
          ce::derive_fresh_params(pop.rate[i], pop.importance[i], pop.cost[i], cfg.epoch_length);
      q.scores[i] = pop.complete[i] ? ce::fresh_index_co(cfg.objective, q.changes[i], p)
                                    : ce::fresh_index_io(cfg.objective, double(q.age[i]), p);
    }
  };
  for (int k = 0; k < 6; ++k) {
    const ce::FreshPolicy policy = k == 1   ? ce::FreshPolicy::lambda_crawl
                                   : k == 2 ? ce::FreshPolicy::random
                                   : k == 3 ? ce::FreshPolicy::nutch_adaptive
                                   : k == 5 ? ce::FreshPolicy::custom
                                            : ce::FreshPolicy::index;
    SCOPED_TRACE(k == 4 ? "a score function" : ce::to_string(policy));
    const ce::FreshScoreFn* fn = k == 4 ? &user : nullptr;
    // (The pass's chunk sums are the CPU's, in its order: its costs exactly, the rest within the
    // device's log and exp.)
    expect_fresh_gpu_equals_cpu(
        pop, cfg, policy,
        [&](const ce::FreshObserver* o) {
          return ce::fresh_rollout_keyed(pop, cfg, policy, device, o, nullptr, nullptr, fn);
        },
        1e-12, true);
  }
}

TEST(GpuFresh, MillionSourcesEqualTheCpuEngineAndRefuseLearning) {
  REQUIRE_GPU_OR_SKIP();
  const ce::FreshPopulation pop =
      ce::synthetic_fresh_population(size_allowed(1000000) ? 1000000 : 131, 9, false);
  ce::FreshConfig cfg;
  cfg.budget = 0.2 * double(pop.size());
  cfg.host_cap = 3;
  cfg.epochs = sanitizing() ? 4 : 20;
  for (ce::FreshPolicy policy : {ce::FreshPolicy::index, ce::FreshPolicy::lambda_crawl}) {
    const ce::FreshRolloutOutput cpu = ce::fresh_rollout(pop, cfg, policy);
    const ce::FreshRolloutOutput gpu = ce::fresh_rollout_cuda(pop, cfg, policy);
    EXPECT_NEAR(gpu.penalty[0], cpu.penalty[0], 1e-9 * cpu.penalty[0]) << ce::to_string(policy);
    EXPECT_NEAR(gpu.freshness[0], cpu.freshness[0], 1e-9 * cpu.freshness[0]);
  }
  cfg.learn = true;
  EXPECT_THROW(ce::fresh_rollout_cuda(pop, cfg, ce::FreshPolicy::index), ce::InputError);
}
