// The sharded engine over MPI ranks equals one process: ctest runs this binary under
// `mpirun -np P` for P = 1, 2, 3, 4 (tests/CMakeLists.txt). Every rank builds the whole population
// and runs its own shard through the sharded engine; rank 0 also runs the single-process CPU
// backend on the whole population (once, not on every rank: the test runs oversubscribed on 2
// cores) and compares: the crawled sets must be identical epoch by epoch and the rewards, the bound
// and the replications identical bit for bit (EXPECT_EQ on doubles, not NEAR). The crawled sets
// and results of a sharded run are the same on every rank (they are gathered), so rank 0's
// comparison covers them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <random>

#include "crawleval/analysis/bound.hpp"
#include "crawleval/analysis/fresh_rates.hpp"
#include "crawleval/base/comm.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/engine/epoch_collective.hpp"
#include "crawleval/engine/fresh_engine.hpp"
#include "crawleval/engine/fresh_keyed.hpp"
#include "crawleval/engine/keyed_rollout.hpp"
#include "crawleval/engine/sharded.hpp"
#include "crawleval/evaluate/fresh_evaluate.hpp"
#include "crawleval/io/io.hpp"
#include "crawleval/model/selection.hpp"
#include "test_util.hpp"

namespace ce = crawleval;

namespace {

using ce::testing::world;

/// The selection rule of selection.hpp with fixed-point weights, by sorting.
ce::Selection sorted_rule(const std::vector<uint64_t>& keys, const std::vector<uint64_t>& w,
                          uint64_t limit) {
  std::vector<uint64_t> order(keys.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](uint64_t a, uint64_t b) { return keys[a] != keys[b] ? keys[a] > keys[b] : a < b; });
  uint64_t used = 0;
  for (uint64_t i : order) {
    const uint64_t wi = w.empty() ? 1 : w[i];
    if (wi > limit - used) return ce::Selection{keys[i], i, false};
    used += wi;
  }
  return ce::Selection{};
}

// The epoch layer's selection (the windowed radix select shared over the ranks). Ranks hold uneven
// contiguous ranges (any partition, not only shard_of's); keys with few distinct values (ties
// larger than the resolution's sort, across ranks), NaN keys, +-inf, spread keys; weights with
// zeros (the freshness model's ineligible sources). The limits follow each other as epochs do, so
// the window planned from one boundary hits or misses the next.
TEST(ShardedSelect, EqualsTheSortedRule) {
  ce::Comm& comm = world();
  for (uint64_t n : {1ull, 7ull, 5000ull, 30000ull, 100000ull}) {
    for (int kind = 0; kind < 4; ++kind) {
      for (bool unit : {true, false}) {
        std::mt19937_64 rng(n * 31 + uint64_t(kind) * 7 + unit);
        std::vector<uint64_t> keys(n), w(unit ? 0 : n);
        for (uint64_t i = 0; i < n; ++i) {
          double s;
          switch (kind) {
            case 0:
              s = std::ldexp(double(rng() % 1000000), -int(rng() % 40));
              break;
            case 1:
              s = double(rng() % 3);  // huge tie groups
              break;
            case 2:
              s = rng() % 50 == 0 ? NAN : (rng() % 2 ? INFINITY : -INFINITY);
              break;
            default:
              s = 1.0 + double(rng() % 1000) * 1e-15;  // one coarse bin, many digits
          }
          keys[i] = ce::score_key(s);
          if (!unit) w[i] = kind == 3 && rng() % 4 == 0 ? 0 : 1 + rng() % 9;
        }
        uint64_t total = 0;
        for (uint64_t i = 0; i < n; ++i) total += unit ? 1 : w[i];
        std::vector<uint64_t> cut{0};
        // Uneven, and with n = 1 or 7 some ranks hold nothing.
        for (int r = 1; r < comm.size(); ++r)
          cut.push_back(n * uint64_t(r * r) / uint64_t(comm.size() * comm.size()));
        cut.push_back(n);
        const uint64_t lo = cut[std::size_t(comm.rank())], hi = cut[std::size_t(comm.rank()) + 1];
        // One thread and two (the threaded passes of the function engine's selection).
        for (int threads : {1, 2}) {
          ce::EpochCollective layer(comm, lo, hi - lo, n, threads);
          for (uint64_t limit : {uint64_t(0), uint64_t(1), total / 3, total / 2 + 1, total / 3,
                                 total - 1, total, total / 50}) {
            SCOPED_TRACE("n " + std::to_string(n) + " kind " + std::to_string(kind) +
                         (unit ? " unit" : " weights") + " limit " + std::to_string(limit) +
                         " threads " + std::to_string(threads));
            const ce::Selection want = sorted_rule(keys, w, limit);
            // An empty range passes no weights at all, as an empty shard does.
            const ce::Selection got = layer.select(
                keys.data() + lo, unit || hi == lo ? nullptr : w.data() + lo, unit, limit);
            ASSERT_EQ(got.all, want.all);
            if (!want.all) {
              EXPECT_EQ(got.stop_key, want.stop_key);
              EXPECT_EQ(got.stop_id, want.stop_id);
            }
          }
        }
      }
    }
  }
}

struct Case {
  ce::Model model;
  bool unit;
  ce::Observe observe;
  bool expiry;
  bool given;
};

/// Enough sources that four ranks hold a shard each (shard_of cuts at 2^15).
constexpr std::size_t kN = 4 * ce::kFoldChunk + 1234;

ce::Population case_population(const Case& c) {
  ce::Population pop = ce::testing::random_population(kN, c.unit ? 11 : 12, c.unit, c.given);
  if (c.expiry) {
    pop.expiry.resize(kN);
    for (std::size_t i = 0; i < kN; ++i) pop.expiry[i] = i % 3 ? uint32_t(2 + i % 5) : 0u;
  }
  return pop;
}

TEST(ShardedRollout, EqualsOneProcess) {
  ce::Comm& comm = world();
  const std::vector<Case> cases = {
      {ce::Model::deterministic, true, ce::Observe::full, false, false},
      {ce::Model::deterministic, false, ce::Observe::full, false, true},
      {ce::Model::stochastic, true, ce::Observe::full, false, false},
      {ce::Model::stochastic, false, ce::Observe::full, false, false},
      {ce::Model::stochastic, true, ce::Observe::belief, false, false},
      {ce::Model::deterministic, false, ce::Observe::full, true, false},
  };
  for (const Case& c : cases) {
    const ce::Population pop = case_population(c);
    const ce::Shard shard = ce::shard_of(kN, comm.rank(), comm.size());
    const ce::Population mine = ce::testing::rows_of(pop, shard);
    ce::RunConfig cfg;
    cfg.budget = std::floor(kN / (c.unit ? 50.0 : 40.0)) + 0.5 * !c.unit;
    cfg.epochs = 5;
    cfg.burn_in = 2;
    cfg.replications = 2;
    cfg.model = c.model;
    cfg.observe = c.observe;
    cfg.seed = 3;
    cfg.threads = 1;
    cfg.start = c.given ? ce::Start::given : ce::Start::empty;
    ce::Problem one = ce::make_problem(pop, cfg);
    ce::Problem sharded = ce::make_sharded_problem(mine, cfg, shard, comm);
    EXPECT_EQ(sharded.total_cost, one.total_cost);
    EXPECT_EQ(sharded.weights.exponent, one.weights.exponent);
    EXPECT_EQ(sharded.weights.limit, one.weights.limit);
    for (ce::Policy p : {ce::Policy::whittle, ce::Policy::greedy, ce::Policy::round_robin,
                         ce::Policy::random, ce::Policy::static_rate}) {
      SCOPED_TRACE(std::string(ce::to_string(c.model)) + (c.unit ? " unit" : " costs") + " " +
                   ce::to_string(c.observe) + (c.expiry ? " expiry" : "") +
                   (c.given ? " given" : "") + " " + ce::to_string(p));
      if (p == ce::Policy::static_rate) {
        ce::prepare_static_policy(one);  // the bound's passes: every rank's part of the periods
        ce::prepare_static_policy(sharded, comm);
        ASSERT_EQ(sharded.static_period.size(), shard.count);
        for (std::size_t i = 0; i < shard.count; ++i)
          ASSERT_EQ(sharded.static_period[i], one.static_period[shard.first + i]) << i;
      }
      ce::testing::Trace want, got;
      ce::EpochObserver w_obs = [&](const ce::EpochView& v) { want.sets.push_back(*v.selected); };
      ce::EpochObserver g_obs = [&](const ce::EpochView& v) {
        got.sets.push_back(*v.selected);
        got.rewards.push_back(v.reward);
      };
      const ce::RolloutOutput b = ce::sharded_rollout(sharded, p, comm, &g_obs);
      // Without an observer the rewards are folded in batches of epochs: the same bits (checked
      // for two policies, one of each engine path).
      const bool quiet_too = p == ce::Policy::whittle || p == ce::Policy::random;
      const ce::RolloutOutput quiet = quiet_too ? ce::sharded_rollout(sharded, p, comm) : b;
      if (comm.rank() != 0) continue;
      const ce::RolloutOutput a = ce::cpu_rollout(one, p, &w_obs);
      ASSERT_EQ(got.sets.size(), want.sets.size());
      for (std::size_t t = 0; t < want.sets.size(); ++t) ASSERT_EQ(got.sets[t], want.sets[t]) << t;
      ASSERT_EQ(a.replication_reward.size(), b.replication_reward.size());
      for (std::size_t r = 0; r < a.replication_reward.size(); ++r) {
        EXPECT_EQ(b.replication_reward[r], a.replication_reward[r]) << "replication " << r;
        EXPECT_EQ(b.replication_cost[r], a.replication_cost[r]) << "replication " << r;
      }
      EXPECT_EQ(b.epoch_reward, a.epoch_reward);
      EXPECT_EQ(quiet.replication_reward, a.replication_reward);
      EXPECT_EQ(quiet.epoch_reward, a.epoch_reward);
    }
  }
}

// A GPU per rank (keyed_rollout.hpp) through its pass's host twin: the per-source step and the
// chunk sums the device runs, the selection and folds of the epoch layer. Every rank count gives
// the CPU backend's one-process crawled sets and outputs, bit for bit: the general model's
// transitions and the built-in policies, costs, a given start, a later first replication, a slice
// whose ids cross 2^32, small populations and empty shards.
TEST(KeyedRollout, HostTwinEqualsTheCpuEngineInOneProcess) {
  ce::Comm& comm = world();
  struct KeyedCase {
    Case c;
    const char* law;
    std::size_t n;
  };
  const std::vector<KeyedCase> cases = {
      {{ce::Model::deterministic, true, ce::Observe::full, false, false}, "", kN},
      {{ce::Model::deterministic, false, ce::Observe::full, false, true}, "", 40000},
      {{ce::Model::stochastic, true, ce::Observe::belief, false, false}, "", 40000},
      {{ce::Model::stochastic, false, ce::Observe::full, true, false}, "lognormal:2", 40000},
      {{ce::Model::deterministic, true, ce::Observe::belief, true, false}, "", 2000},
      {{ce::Model::stochastic, false, ce::Observe::full, false, false}, "", 10},
  };
  for (const KeyedCase& k : cases) {
    const Case& c = k.c;
    ce::Population pop = ce::testing::random_population(k.n, 40 + k.n, c.unit, c.given);
    if (c.expiry) {
      pop.expiry.resize(k.n);
      for (std::size_t i = 0; i < k.n; ++i) pop.expiry[i] = i % 3 ? uint32_t(2 + i % 5) : 0u;
    }
    if (k.n == 10) {
      pop.first_id = (uint64_t(1) << 32) - 4;  // the draws' ids cross 2^32
      for (double& cost : pop.cost) cost = 0.25;
    }
    const ce::Shard shard = ce::shard_of(k.n, comm.rank(), comm.size());
    const ce::Population mine = ce::testing::rows_of(pop, shard);
    ce::RunConfig cfg;
    cfg.budget = std::floor(double(k.n) / (c.unit ? 50.0 : 40.0)) + 0.5 * !c.unit + 1;
    cfg.epochs = 4;
    cfg.burn_in = 1;
    cfg.replications = 2;
    cfg.first_replication = 3;
    cfg.model = c.model;
    cfg.observe = c.observe;
    cfg.seed = 5;
    cfg.threads = 1;
    cfg.start = c.given ? ce::Start::given : ce::Start::empty;
    if (*k.law) ce::set_utility(cfg, k.law);
    ce::Problem one = ce::make_problem(pop, cfg);
    ce::Problem sharded = ce::make_sharded_problem(mine, cfg, shard, comm);
    // (Every built-in policy on every model is the conformance matrix's GPU-per-rank column; here
    // the index, the pointer, the draws by id and the relaxed columns.)
    for (ce::Policy p :
         {ce::Policy::whittle, ce::Policy::round_robin, ce::Policy::random, ce::Policy::lip}) {
      SCOPED_TRACE(std::string(ce::to_string(c.model)) + (c.unit ? " unit" : " costs") + " " +
                   ce::to_string(c.observe) + (c.expiry ? " expiry " : " ") + k.law +
                   (c.given ? " given" : "") + " n " + std::to_string(k.n) + " " +
                   ce::to_string(p));
      if (p == ce::Policy::lip) {
        ce::prepare_lip_policy(one);
        ce::prepare_lip_policy(sharded, comm);
      }
      ce::testing::Trace want, got;
      ce::EpochObserver w_obs = [&](const ce::EpochView& v) {
        want.sets.push_back(*v.selected);
        want.rewards.push_back(v.reward);
      };
      ce::EpochObserver g_obs = [&](const ce::EpochView& v) {
        got.sets.push_back(*v.selected);
        got.rewards.push_back(v.reward);
      };
      const auto twin = ce::detail::host_keyed_pass(sharded, p);
      const ce::RolloutOutput b = ce::keyed_rollout(sharded, p, comm, *twin, &g_obs);
      // Without an observer the sums are folded a batch of epochs at a time: the same bits
      // (checked for two policies).
      const bool quiet_too = p == ce::Policy::whittle || p == ce::Policy::lip;
      const ce::RolloutOutput quiet = quiet_too ? ce::keyed_rollout(sharded, p, comm, *twin) : b;
      if (comm.rank() != 0) continue;
      const ce::RolloutOutput a = ce::cpu_rollout(one, p, &w_obs);
      ASSERT_EQ(got.sets.size(), want.sets.size());
      for (std::size_t t = 0; t < want.sets.size(); ++t) ASSERT_EQ(got.sets[t], want.sets[t]) << t;
      EXPECT_GT(want.sets.back().size(), 0u);
      EXPECT_EQ(b.replication_reward, a.replication_reward);
      EXPECT_EQ(b.replication_cost, a.replication_cost);
      EXPECT_EQ(b.epoch_reward, a.epoch_reward);
      EXPECT_EQ(quiet.replication_reward, a.replication_reward);
      EXPECT_EQ(quiet.replication_cost, a.replication_cost);
      EXPECT_EQ(quiet.epoch_reward, a.epoch_reward);
      // The observer's sums: the crawled states gathered in rank order and added left to right,
      // the CPU engine's in id order.
      EXPECT_EQ(got.rewards, want.rewards);
    }
  }
}

// The stochastic Whittle policy counts most sources below the window in one lump (a bound shows
// their index there); an epoch whose boundary falls below the lump floor counts every bin again,
// all ranks together. From full states a large budget's boundary falls through the floor in the
// first epochs: the crawled sets and rewards of every rank count equal one process's, and both
// recounted.
TEST(ShardedRollout, LumpedSourcesAndRecountsEqualOneProcess) {
  ce::Comm& comm = world();
  for (bool unit : {true, false}) {
    const ce::Population pop = ce::testing::random_population(kN, 21, unit, false);
    const ce::Shard shard = ce::shard_of(kN, comm.rank(), comm.size());
    ce::RunConfig cfg;
    cfg.budget = std::floor(0.3 * double(kN));
    cfg.epochs = 10;
    cfg.burn_in = 0;
    cfg.model = ce::Model::stochastic;
    cfg.seed = 5;
    cfg.threads = 2;
    cfg.start = ce::Start::full;
    ce::Problem one = ce::make_problem(pop, cfg);
    const ce::Population mine = ce::testing::rows_of(pop, shard);  // the problem reads its columns
    ce::Problem sharded = ce::make_sharded_problem(mine, cfg, shard, comm);
    SCOPED_TRACE(unit ? "unit" : "costs");
    ce::testing::Trace want, got;
    ce::EpochObserver w_obs = [&](const ce::EpochView& v) { want.sets.push_back(*v.selected); };
    ce::EpochObserver g_obs = [&](const ce::EpochView& v) { got.sets.push_back(*v.selected); };
    const ce::RolloutOutput b = ce::sharded_rollout(sharded, ce::Policy::whittle, comm, &g_obs);
    EXPECT_GT(b.counters.recounts, 0u);
    if (comm.rank() != 0) continue;
    const ce::RolloutOutput a = ce::cpu_rollout(one, ce::Policy::whittle, &w_obs);
    EXPECT_GT(a.counters.recounts, 0u);
    ASSERT_EQ(got.sets.size(), want.sets.size());
    for (std::size_t t = 0; t < want.sets.size(); ++t) ASSERT_EQ(got.sets[t], want.sets[t]) << t;
    EXPECT_EQ(b.replication_reward, a.replication_reward);
    EXPECT_EQ(b.epoch_reward, a.epoch_reward);
    // And the reference engine's crawled sets (a full sort each epoch, every index computed).
    ce::testing::Trace ref;
    ce::EpochObserver r_obs = [&](const ce::EpochView& v) { ref.sets.push_back(*v.selected); };
    ce::rollout(one, ce::Policy::whittle, ce::Backend::reference, &r_obs);
    ASSERT_EQ(ref.sets.size(), want.sets.size());
    for (std::size_t t = 0; t < want.sets.size(); ++t) ASSERT_EQ(ref.sets[t], want.sets[t]) << t;
  }
}

// Dormant sources (host/engine/cpu/dormant.hpp): every rank puts its own part's sources to sleep
// against the global plan's floor, wakes them when it drops, and counts them in the lump. 260
// epochs of the deterministic Whittle policy at 1% of a synthetic population: every rank count
// crawls one process's sets with its rewards bit for bit, in the default mode and the eager one
// (a split every epoch, wakes at every dip of the floor), and every rank slept.
TEST(ShardedRollout, DormantSourcesEqualOneProcess) {
  ce::Comm& comm = world();
  const std::size_t n = kN;  // shards of whole kFoldChunk blocks: every rank holds some
  const ce::Population pop = ce::synthetic_population(n, 6, ce::SyntheticCosts::unit);
  const ce::Shard shard = ce::shard_of(n, comm.rank(), comm.size());
  ce::RunConfig cfg;
  cfg.budget = std::floor(0.01 * double(n));
  cfg.epochs = 240;
  cfg.burn_in = 20;
  cfg.threads = 2;
  cfg.start = ce::Start::fresh;
  const ce::Problem one = ce::make_problem(pop, cfg);
  const ce::Population mine = ce::testing::rows_of(pop, shard);
  const ce::Problem sharded = ce::make_sharded_problem(mine, cfg, shard, comm);
  for (const char* mode : {"1", "eager"}) {
    SCOPED_TRACE(std::string("CRAWLEVAL_DORMANT=") + mode);
    setenv("CRAWLEVAL_DORMANT", mode, 1);
    ce::testing::Trace want, got;
    ce::EpochObserver w_obs = [&](const ce::EpochView& v) { want.sets.push_back(*v.selected); };
    ce::EpochObserver g_obs = [&](const ce::EpochView& v) { got.sets.push_back(*v.selected); };
    const ce::RolloutOutput b = ce::sharded_rollout(sharded, ce::Policy::whittle, comm, &g_obs);
    const ce::RolloutOutput quiet = ce::sharded_rollout(sharded, ce::Policy::whittle, comm);
    unsetenv("CRAWLEVAL_DORMANT");
    EXPECT_GT(quiet.counters.dormant, 0u);
    if (comm.rank() != 0) continue;
    setenv("CRAWLEVAL_DORMANT", "0", 1);
    const ce::RolloutOutput a = ce::cpu_rollout(one, ce::Policy::whittle, &w_obs);
    unsetenv("CRAWLEVAL_DORMANT");
    ASSERT_EQ(got.sets.size(), want.sets.size());
    for (std::size_t t = 0; t < want.sets.size(); ++t) ASSERT_EQ(got.sets[t], want.sets[t]) << t;
    EXPECT_EQ(b.epoch_reward, a.epoch_reward);
    EXPECT_EQ(quiet.epoch_reward, a.epoch_reward);
    EXPECT_EQ(quiet.replication_reward, a.replication_reward);
  }
}

// Issue #28's acceptance: a slice of the 1e10-source synthetic population whose global ids lie
// above 2^32 (from 5e9), each rank generating only its own part, equals the same slice in one
// process: crawled sets epoch by epoch and rewards bit for bit, for both models and the policies
// whose draws or order use the ids (random, round robin) beside whittle. Four shards at P = 4.
// The slice's draws are those of its global ids: the same sources numbered from 0 crawl other sets
// under the random policy and collect other rewards in the stochastic model.
TEST(ShardedRollout, SliceAboveTwoToThe32EqualsOneProcess) {
  ce::Comm& comm = world();
  constexpr uint64_t kTotal = 10000000000ull, kFirst = 5000000000ull;
  const ce::Shard shard = ce::shard_of(kN, comm.rank(), comm.size());
  ce::Population mine = ce::synthetic_slice(kTotal, 7, ce::SyntheticCosts::lognormal,
                                            kFirst + shard.first, shard.count);
  mine.first_id = kFirst;
  ce::Population whole;
  if (comm.rank() == 0) {
    whole = ce::synthetic_slice(kTotal, 7, ce::SyntheticCosts::lognormal, kFirst, kN);
    whole.first_id = kFirst;
    ASSERT_EQ(whole.id.front(), kFirst);
    for (std::size_t i = 0; i < shard.count; ++i) ASSERT_EQ(mine.lambda[i], whole.lambda[i]);
  }
  for (ce::Model model : {ce::Model::deterministic, ce::Model::stochastic}) {
    ce::RunConfig cfg;
    cfg.budget = std::floor(double(kN) / 30.0);
    cfg.epochs = 4;
    cfg.burn_in = 1;
    cfg.replications = 2;
    cfg.model = model;
    cfg.seed = 7;
    cfg.threads = 1;
    const ce::Problem sharded = ce::make_sharded_problem(mine, cfg, shard, comm);
    EXPECT_EQ(sharded.first_id, kFirst);
    for (ce::Policy p : {ce::Policy::whittle, ce::Policy::random, ce::Policy::round_robin}) {
      SCOPED_TRACE(std::string(ce::to_string(model)) + " " + ce::to_string(p));
      ce::testing::Trace got;
      ce::EpochObserver g_obs = [&](const ce::EpochView& v) { got.sets.push_back(*v.selected); };
      const ce::RolloutOutput b = ce::sharded_rollout(sharded, p, comm, &g_obs);
      if (comm.rank() != 0) continue;
      const ce::Problem one = ce::make_problem(whole, cfg);
      const ce::testing::Trace want = ce::testing::traced(one, p, ce::Backend::cpu);
      const ce::RolloutOutput a = ce::cpu_rollout(one, p);
      ASSERT_EQ(got.sets.size(), want.sets.size());
      for (std::size_t t = 0; t < want.sets.size(); ++t) ASSERT_EQ(got.sets[t], want.sets[t]) << t;
      EXPECT_EQ(b.replication_reward, a.replication_reward);
      EXPECT_EQ(b.replication_cost, a.replication_cost);
      EXPECT_EQ(b.epoch_reward, a.epoch_reward);
      if (p == ce::Policy::random || (model == ce::Model::stochastic && p == ce::Policy::whittle)) {
        ce::Population from_zero = whole;
        from_zero.first_id = 0;
        const ce::Problem low = ce::make_problem(from_zero, cfg);
        const ce::testing::Trace other = ce::testing::traced(low, p, ce::Backend::cpu);
        EXPECT_NE(ce::cpu_rollout(low, p).replication_reward, a.replication_reward);
        if (p == ce::Policy::random) EXPECT_NE(other.sets, want.sets);
      }
    }
  }
}

// Small populations (the CPU backend's small engine, the budget walked by sorting) and shards that
// hold nothing, with costs: the numbers of one process.
TEST(ShardedRollout, SmallPopulationsAndEmptyShardsEqualOneProcess) {
  ce::Comm& comm = world();
  for (std::size_t n : {std::size_t(10), std::size_t(2000), std::size_t(40000)}) {
    ce::Population pop = ce::testing::random_population(n, 40 + n, false, false);
    if (n == 10)  // a budget of 0.3 holds three costs of 0.1 only within the budget's slack
      for (double& c : pop.cost) c = 0.1;
    const ce::Shard shard = ce::shard_of(n, comm.rank(), comm.size());
    const ce::Population mine = ce::testing::rows_of(pop, shard);
    ce::RunConfig cfg;
    cfg.budget = n == 10 ? 0.3 : std::floor(double(n) / 7) + 0.25;
    cfg.epochs = 6;
    cfg.burn_in = 1;
    cfg.replications = 2;
    cfg.threads = 1;
    for (ce::Model model : {ce::Model::deterministic, ce::Model::stochastic}) {
      cfg.model = model;
      const ce::Problem one = ce::make_problem(pop, cfg);
      const ce::Problem sharded = ce::make_sharded_problem(mine, cfg, shard, comm);
      for (ce::Policy p : {ce::Policy::whittle, ce::Policy::greedy}) {
        SCOPED_TRACE("n " + std::to_string(n) + " " + ce::to_string(model) + " " +
                     ce::to_string(p));
        ce::testing::Trace want, got;
        ce::EpochObserver w_obs = [&](const ce::EpochView& v) { want.sets.push_back(*v.selected); };
        ce::EpochObserver g_obs = [&](const ce::EpochView& v) { got.sets.push_back(*v.selected); };
        const ce::RolloutOutput b = ce::sharded_rollout(sharded, p, comm, &g_obs);
        const ce::RolloutOutput quiet = ce::sharded_rollout(sharded, p, comm);
        if (comm.rank() != 0) continue;
        const ce::RolloutOutput a = ce::cpu_rollout(one, p, &w_obs);
        EXPECT_EQ(got.sets, want.sets);
        EXPECT_EQ(b.replication_reward, a.replication_reward);
        EXPECT_EQ(b.replication_cost, a.replication_cost);
        EXPECT_EQ(quiet.replication_reward, a.replication_reward);
      }
    }
  }
}

// Issue #25: costs over 1e-300..1e300, budgets at the edges: the budget rule's integer weights
// come from a clamped total folded in the same order for every process count.
void extreme_costs_equal_one_process(std::size_t n);

TEST(ShardedRollout, ExtremeCostsEqualOneProcess) {
  // 1500: one rank holds every source (the others none) and runs the wide engine, where one
  // process runs the small engine; 40000: two chunks, shards of 0, 1 or 2 chunks.
  for (std::size_t n : {std::size_t(1500), std::size_t(40000)}) {
    SCOPED_TRACE("n " + std::to_string(n));
    extreme_costs_equal_one_process(n);
  }
}

void extreme_costs_equal_one_process(std::size_t n) {
  ce::Comm& comm = world();
  ce::Population pop = ce::testing::random_population(n, 77, false, false);
  std::mt19937_64 rng(5);
  for (double& c : pop.cost) c = std::pow(10.0, -300.0 + double(rng() % 601));
  const ce::Shard shard = ce::shard_of(n, comm.rank(), comm.size());
  const ce::Population mine = ce::testing::rows_of(pop, shard);
  for (double budget : {1e-300, 1e-5, 1e200}) {
    ce::RunConfig cfg;
    cfg.budget = budget;
    cfg.epochs = 4;
    cfg.threads = 1;
    const ce::Problem one = ce::make_problem(pop, cfg);
    const ce::Problem sharded = ce::make_sharded_problem(mine, cfg, shard, comm);
    EXPECT_EQ(sharded.weights.exponent, one.weights.exponent);
    EXPECT_EQ(sharded.weights.limit, one.weights.limit);
    for (ce::Policy p : {ce::Policy::whittle, ce::Policy::greedy}) {
      SCOPED_TRACE("budget " + std::to_string(budget) + " " + ce::to_string(p));
      ce::testing::Trace want, got, keyed;
      ce::EpochObserver w_obs = [&](const ce::EpochView& v) { want.sets.push_back(*v.selected); };
      ce::EpochObserver g_obs = [&](const ce::EpochView& v) { got.sets.push_back(*v.selected); };
      ce::EpochObserver k_obs = [&](const ce::EpochView& v) { keyed.sets.push_back(*v.selected); };
      const ce::RolloutOutput b = ce::sharded_rollout(sharded, p, comm, &g_obs);
      // A GPU per rank's pass, through its host twin: the same at the extremes.
      const auto twin = ce::detail::host_keyed_pass(sharded, p);
      const ce::RolloutOutput k = ce::keyed_rollout(sharded, p, comm, *twin, &k_obs);
      if (comm.rank() != 0) continue;
      const ce::RolloutOutput a = ce::cpu_rollout(one, p, &w_obs);
      EXPECT_EQ(got.sets, want.sets);
      EXPECT_EQ(b.replication_reward, a.replication_reward);
      EXPECT_EQ(b.replication_cost, a.replication_cost);
      EXPECT_EQ(keyed.sets, want.sets);
      EXPECT_EQ(k.replication_reward, a.replication_reward);
      EXPECT_EQ(k.replication_cost, a.replication_cost);
      for (double spent : a.replication_cost) EXPECT_LE(spent, budget * (1 + 1e-12));
    }
  }
}

TEST(ShardedBound, EqualsOneProcessBitForBit) {
  ce::Comm& comm = world();
  for (bool unit : {true, false}) {
    const ce::Population pop = ce::testing::random_population(kN, 5 + unit, unit, false);
    const ce::Shard shard = ce::shard_of(kN, comm.rank(), comm.size());
    const ce::Population mine = ce::testing::rows_of(pop, shard);
    ce::RunConfig cfg;
    cfg.budget = kN / 30.0;
    const ce::Problem one = ce::make_problem(pop, cfg);
    const ce::Problem sharded = ce::make_sharded_problem(mine, cfg, shard, comm);
    const ce::BoundResult b = ce::sharded_bound(sharded, comm);
    if (comm.rank() != 0) continue;
    const ce::BoundResult a = ce::lagrangian_bound(one);
    EXPECT_EQ(b.bound, a.bound);
    EXPECT_EQ(b.lambda, a.lambda);
    EXPECT_EQ(b.crawl_rate, a.crawl_rate);
    EXPECT_EQ(b.evaluations, a.evaluations);
  }
}

// The freshness model's rate solves over the ranks: each rank passes its shard's columns and gets
// its shard's rates, bit for bit one process's (the multiplier too), and the closed-form costs
// alike. Populations: IO and CO sources mixed (LambdaCrawlApprox's Newton split), IO alone and CO
// alone (its golden section), sources without importance or changes, costs over six decades, and
// a population smaller than one fold chunk (ranks without sources).
TEST(ShardedFreshRates, EqualOneProcessBitForBit) {
  ce::Comm& comm = world();
  for (int kind = 0; kind < 4; ++kind) {
    const std::size_t n = kind == 3 ? 777 : 3 * ce::kFoldChunk + 777;
    std::mt19937_64 rng(40 + kind);
    std::uniform_real_distribution<double> U(0.0, 1.0);
    ce::FreshPopulation pop;
    pop.origin = "rates";
    pop.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      pop.id[i] = i;
      pop.rate[i] = i % 17 == 0 ? 0.0 : 0.01 + 3.0 * U(rng) * U(rng);
      pop.importance[i] = i % 23 == 0 ? 0.0 : std::floor(1.0 + 9.0 * U(rng));
      pop.cost[i] = std::pow(10.0, 6.0 * U(rng) - 3.0);
      pop.complete[i] = kind == 1 ? 0 : kind == 2 ? 1 : (U(rng) < 0.3 ? 1 : 0);
      pop.host[i] = i;
    }
    const ce::Shard shard = ce::shard_of(n, comm.rank(), comm.size());
    const ce::FreshColumns mine = ce::FreshColumns::of(pop, shard.first, shard.count);
    for (ce::FreshPolicy p : {ce::FreshPolicy::lambda_crawl, ce::FreshPolicy::lambda_crawl_approx,
                              ce::FreshPolicy::binary_lambda_crawl, ce::FreshPolicy::uniform,
                              ce::FreshPolicy::proportional}) {
      for (double budget : {double(n) / 50, 1e9}) {  // binding, and more than every CO can use
        SCOPED_TRACE(std::string(ce::to_string(p)) + ", population " + std::to_string(kind) +
                     ", budget " + std::to_string(budget) + ", P = " + std::to_string(comm.size()));
        ce::FreshConfig cfg;
        cfg.budget = budget;
        cfg.epsilon = 0.25;
        const ce::FreshRates got = ce::fresh_rates(mine, cfg, p, comm);
        const ce::RateCosts got_costs = ce::rate_costs(mine, got, p, comm);
        const ce::FreshRates one = ce::fresh_rates(pop, cfg, p);
        const ce::RateCosts one_costs = ce::rate_costs(pop, one, p);
        ASSERT_EQ(got.rho.size(), shard.count);
        ASSERT_EQ(got.p.size(), shard.count);
        const auto at = [&](const std::vector<double>& v) {
          return std::vector<double>(v.begin() + std::ptrdiff_t(shard.first),
                                     v.begin() + std::ptrdiff_t(shard.first + shard.count));
        };
        EXPECT_EQ(got.rho, at(one.rho));
        EXPECT_EQ(got.p, at(one.p));
        EXPECT_EQ(got.multiplier, one.multiplier);
        EXPECT_EQ(got_costs.harmonic, one_costs.harmonic);
        EXPECT_EQ(got_costs.binary, one_costs.binary);
        // Something was allocated: the rates are not all zero.
        EXPECT_GT(std::accumulate(one.rho.begin(), one.rho.end(), 0.0) +
                      std::accumulate(one.p.begin(), one.p.end(), 0.0),
                  0.0);
      }
    }
  }
}

// The freshness model's Lagrangian bound over the ranks: each rank holds its part alone
// (fresh_rows), evaluates it and a block of the crowded hosts, whose members on other ranks it
// receives; the value and multiplier equal one process's bit for bit, and each rank's periods (the
// steady start's) are its part's of one process's. Hosts with sources on every rank, scattered
// over the id range, and in blocks; a host flagged constrained on one rank only; both objectives;
// three fold chunks, so that at P = 4 a rank has no sources (it still solves hosts). Then a
// steady-start run over the ranks equals one process's.
TEST(ShardedFreshBound, EqualsOneProcessBitForBit) {
  ce::Comm& comm = world();
  const std::size_t n = 2 * ce::kFoldChunk + 500;
  std::mt19937_64 rng(77);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  ce::FreshPopulation pop;
  pop.origin = "bound";
  pop.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    pop.id[i] = i;
    pop.rate[i] = i % 19 == 0 ? 0.0 : 0.05 + 1.5 * U(rng) * U(rng);
    pop.importance[i] = std::floor(1.0 + 9.0 * U(rng));
    pop.cost[i] = i % 5 == 0 ? 2.5 : 1.0;
    pop.complete[i] = U(rng) < 0.2 ? 1 : 0;
    pop.host[i] = i % 97 == 0 ? 1 : i % 7 == 1 ? 2 + (i * 2654435761u) % (n / 80) : 1000000 + i / 6;
    // (Few constrained hosts: the bound solves each one's multiplier at every step.)
    pop.constrained[i] = pop.host[i] < 1000000 ? pop.host[i] % 3 != 2 : pop.host[i] % 5 == 0;
  }
  // Host 1's sources lie on every rank; only its last one says it is constrained.
  for (std::size_t i = 0; i < n; ++i)
    if (pop.host[i] == 1) pop.constrained[i] = 0;
  pop.constrained[n - 1 - (n - 1) % 97] = 1;
  const ce::Shard shard = ce::shard_of(n, comm.rank(), comm.size());
  const ce::FreshPopulation mine = ce::fresh_rows(pop, shard.first, shard.count);
  for (uint32_t cap : {0u, 2u}) {
    for (ce::Objective o : {ce::Objective::harmonic, ce::Objective::binary}) {
      if (cap == 0 && o == ce::Objective::binary) continue;
      SCOPED_TRACE("cap " + std::to_string(cap) + ", " + ce::to_string(o) +
                   ", P = " + std::to_string(comm.size()));
      ce::FreshConfig cfg;
      cfg.budget = double(n) / 10;
      cfg.host_cap = cap;
      cfg.objective = o;
      const ce::FreshBound got = ce::fresh_bound(mine, cfg, &comm);
      EXPECT_EQ(got.first, shard.first);
      ASSERT_EQ(got.period.size(), shard.count);
      const std::vector<double> periods = comm.allgather(got.period);  // every rank's, in order
      if (comm.rank() != 0) continue;
      const ce::FreshBound one = ce::fresh_bound(pop, cfg);
      ASSERT_TRUE(one.value.has_value());
      ASSERT_TRUE(got.value.has_value());
      EXPECT_EQ(*got.value, *one.value);
      EXPECT_EQ(got.multiplier, one.multiplier);
      EXPECT_GT(one.multiplier, 0.0);  // the budget binds
      EXPECT_EQ(got.note, one.note);
      EXPECT_EQ(periods, one.period);
    }
  }
  ce::FreshConfig cfg;
  cfg.budget = double(n) / 10;
  cfg.host_cap = 2;
  cfg.start = ce::FreshStart::steady;
  cfg.epochs = 2;
  cfg.threads = 1;
  for (ce::FreshPolicy p :
       {ce::FreshPolicy::lambda_crawl, ce::FreshPolicy::index, ce::FreshPolicy::random}) {
    SCOPED_TRACE(std::string(ce::to_string(p)) + ", P = " + std::to_string(comm.size()));
    std::vector<std::vector<uint32_t>> sets, one_sets;
    const ce::FreshObserver seen = [&](uint32_t, uint64_t, const std::vector<uint32_t>& c) {
      sets.push_back(c);
    };
    const ce::FreshRolloutOutput got =
        ce::fresh_rollout(mine, cfg, p, false, &seen, nullptr, &comm);
    if (comm.rank() != 0) continue;
    const ce::FreshObserver one_seen = [&](uint32_t, uint64_t, const std::vector<uint32_t>& c) {
      one_sets.push_back(c);
    };
    const ce::FreshRolloutOutput one = ce::fresh_rollout(pop, cfg, p, false, &one_seen);
    EXPECT_EQ(sets, one_sets);
    EXPECT_EQ(got.freshness, one.freshness);
    EXPECT_EQ(got.penalty, one.penalty);
    EXPECT_EQ(got.cost, one.cost);
    EXPECT_EQ(got.epoch_freshness, one.epoch_freshness);
  }
}

// One GPU per rank for the freshness model (fresh_keyed.hpp) through its pass's host twin: the
// per-URL step, key and chunk sums the device runs, driven by the CPU engine's agent (selection
// under the host caps, observer, score-function calls). Every rank count gives the CPU engine's
// one-process crawled sets and numbers, bit for bit: every built-in policy (custom's header
// included), with and without caps, both objectives, costs, a steady start, a later first
// replication, and a user's score function; three fold chunks, so that at P = 4 a rank holds no
// URL. The learning variant is refused with its reason.
TEST(FreshKeyed, HostTwinEqualsTheCpuEngineInOneProcess) {
  ce::Comm& comm = world();
  const std::size_t n = 2 * ce::kFoldChunk + 300;
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  ce::FreshPopulation pop;
  pop.origin = "keyed";
  pop.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    pop.id[i] = i;
    pop.rate[i] = i % 23 == 0 ? 0.0 : 0.02 + 2.0 * U(rng) * U(rng);
    pop.importance[i] = i % 31 == 0 ? 0.0 : std::floor(1.0 + 9.0 * U(rng));
    pop.cost[i] = i % 4 == 0 ? 3.25 : 1.0;
    pop.complete[i] = U(rng) < 0.25 ? 1 : 0;
    // Hosts spread over every rank, and blocks of consecutive URLs.
    pop.host[i] = i % 11 == 3 ? (i * 2654435761u) % 40 : 1000 + i / 9;
    pop.constrained[i] = pop.host[i] < 40 || pop.host[i] % 4 == 0;
  }
  const ce::Shard shard = ce::shard_of(n, comm.rank(), comm.size());
  const ce::FreshPopulation mine = ce::fresh_rows(pop, shard.first, shard.count);
  const ce::FreshPassMaker twin = ce::detail::host_fresh_keyed_pass;
  // The steady start's periods (given, not the bound's: its solve would take most of the test),
  // some below one epoch (never crawled: 10^6 epochs).
  std::vector<double> period(n);
  for (std::size_t i = 0; i < n; ++i) period[i] = i % 29 == 0 ? 0.5 : 1.0 + double(i % 50) * 0.7;
  const std::vector<double> my_period(period.begin() + std::ptrdiff_t(shard.first),
                                      period.begin() + std::ptrdiff_t(shard.first + shard.count));
  struct Run {
    ce::FreshPolicy policy;
    uint32_t cap;
    ce::Objective objective;
    ce::FreshStart start;
    bool user;
  };
  std::vector<Run> runs;
  for (ce::FreshPolicy p :
       {ce::FreshPolicy::index, ce::FreshPolicy::greedy, ce::FreshPolicy::lambda_crawl,
        ce::FreshPolicy::lambda_crawl_approx, ce::FreshPolicy::binary_lambda_crawl,
        ce::FreshPolicy::uniform, ce::FreshPolicy::proportional, ce::FreshPolicy::random,
        ce::FreshPolicy::nutch_adaptive, ce::FreshPolicy::custom})
    for (uint32_t cap : {0u, 2u})
      runs.push_back({p, cap, cap ? ce::Objective::binary : ce::Objective::harmonic,
                      ce::FreshStart::fresh, false});
  runs.push_back(
      {ce::FreshPolicy::index, 2, ce::Objective::harmonic, ce::FreshStart::steady, false});
  runs.push_back({ce::FreshPolicy::index, 0, ce::Objective::binary, ce::FreshStart::fresh, true});
  runs.push_back({ce::FreshPolicy::index, 2, ce::Objective::harmonic, ce::FreshStart::fresh, true});
  // A user's function of what it sees and of the URL's global id (q.first under MPI).
  const ce::FreshScoreFn user = [](const ce::FreshScoreRequest& q) {
    for (std::size_t k = 0; k < q.n; ++k)
      q.scores[k] = double(q.age[k]) * double(1 + (q.first + k) % 13) + 5.0 * q.changes[k] +
                    (q.epoch % 3 == 0 && (q.first + k) % 17 == 0 ? NAN : 0.0);
  };
  for (const Run& run : runs) {
    SCOPED_TRACE(std::string(run.user ? "user function" : ce::to_string(run.policy)) + ", cap " +
                 std::to_string(run.cap) + ", " + ce::to_string(run.objective) + ", " +
                 ce::to_string(run.start) + ", P = " + std::to_string(comm.size()));
    ce::FreshConfig cfg;
    cfg.budget = double(n) / 12 + 0.5;
    cfg.host_cap = run.cap;
    cfg.objective = run.objective;
    cfg.start = run.start;
    cfg.burn_in = 1;
    cfg.epochs = 3;
    cfg.first_replication = 4;
    cfg.seed = 11;
    cfg.threads = 1;
    cfg.nutch_start = 2.0;  // (due within the run)
    cfg.nutch_max = 6.0;
    std::vector<std::vector<uint32_t>> sets, one_sets;
    const ce::FreshObserver seen = [&](uint32_t, uint64_t, const std::vector<uint32_t>& c) {
      sets.push_back(c);
    };
    const ce::FreshRolloutOutput got = ce::fresh_rollout_keyed(
        mine, cfg, run.policy, twin, &seen, &my_period, &comm, run.user ? &user : nullptr);
    if (comm.rank() != 0) continue;
    const ce::FreshObserver one_seen = [&](uint32_t, uint64_t, const std::vector<uint32_t>& c) {
      one_sets.push_back(c);
    };
    const ce::FreshRolloutOutput one = ce::fresh_rollout(
        pop, cfg, run.policy, false, &one_seen, &period, nullptr, run.user ? &user : nullptr);
    // (EXPECT, not ASSERT: rank 0 leaving the loop would leave the others waiting for it.)
    EXPECT_EQ(sets, one_sets);
    EXPECT_FALSE(one_sets.empty() || one_sets.back().empty());
    EXPECT_EQ(got.freshness, one.freshness);
    EXPECT_EQ(got.penalty, one.penalty);
    EXPECT_EQ(got.cost, one.cost);
    EXPECT_EQ(got.epoch_freshness, one.epoch_freshness);
    EXPECT_EQ(got.epoch_penalty, one.epoch_penalty);
    EXPECT_EQ(got.saturated, one.saturated);
    EXPECT_EQ(got.closed_form.has_value(), one.closed_form.has_value());
  }
  ce::FreshConfig learn;
  learn.budget = 100;
  learn.learn = true;
  try {
    ce::fresh_rollout_keyed(mine, learn, ce::FreshPolicy::index, twin, nullptr, nullptr, &comm);
    ADD_FAILURE() << "a keyed pass ran the learning variant";
  } catch (const ce::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("the learning variant runs on the CPU only"),
              std::string::npos)
        << e.what();
  }
}

// The personalised exchange: every pair's bytes arrive whole and in order, empty ones included,
// in one round and in many (a piece of 7 bytes, as a message beyond 2^31 bytes is cut).
TEST(Comm, ExchangeItemsInRounds) {
  ce::Comm& comm = world();
  const std::size_t P = std::size_t(comm.size()), me = std::size_t(comm.rank());
  auto item = [](std::size_t from, std::size_t to, std::size_t k) {
    return uint32_t(from * 1000003u + to * 1009u + k);
  };
  auto count = [](std::size_t from, std::size_t to) { return (from * 7 + to * 3) % 11; };
  std::vector<std::vector<uint32_t>> to(P);
  for (std::size_t r = 0; r < P; ++r)
    for (std::size_t k = 0; k < count(me, r); ++k) to[r].push_back(item(me, r, k));
  for (const char* piece : {static_cast<const char*>(nullptr), "7", "1"}) {
    if (piece)
      setenv("CRAWLEVAL_ALLTOALL_PIECE", piece, 1);
    else
      unsetenv("CRAWLEVAL_ALLTOALL_PIECE");
    const std::vector<std::vector<uint32_t>> got = ce::exchange_items(comm, to);
    ASSERT_EQ(got.size(), P);
    for (std::size_t r = 0; r < P; ++r) {
      std::vector<uint32_t> want;
      for (std::size_t k = 0; k < count(r, me); ++k) want.push_back(item(r, me, k));
      EXPECT_EQ(got[r], want) << "from " << r << ", piece " << (piece ? piece : "default");
    }
  }
  unsetenv("CRAWLEVAL_ALLTOALL_PIECE");
}

TEST(ShardedEvaluate, TargetCiAddsTheSameReplications) {
  ce::Comm& comm = world();
  const ce::Population pop = ce::testing::random_population(kN, 21, true, false);
  const ce::Shard shard = ce::shard_of(kN, comm.rank(), comm.size());
  const ce::Population mine = ce::testing::rows_of(pop, shard);
  ce::RunConfig cfg;
  cfg.budget = 2000;
  cfg.epochs = 3;
  cfg.replications = 2;
  cfg.model = ce::Model::stochastic;
  cfg.threads = 1;
  const ce::Problem one = ce::make_problem(pop, cfg);
  const ce::Problem sharded = ce::make_sharded_problem(mine, cfg, shard, comm);
  ce::EvaluateOptions opt;
  opt.target_ci = 1e-4;
  opt.max_replications = 8;
  const ce::PolicyResult b = ce::evaluate_sharded(sharded, ce::Policy::whittle, comm, opt);
  if (comm.rank() != 0) return;
  const ce::PolicyResult a = ce::evaluate(one, ce::Policy::whittle, ce::Backend::cpu, nullptr, opt);
  EXPECT_EQ(b.replications, a.replications);
  EXPECT_EQ(b.replication_reward, a.replication_reward);
  EXPECT_EQ(b.reward.mean, a.reward.mean);
  EXPECT_EQ(b.reward.half_width, a.reward.half_width);
}

// A bad value in the last shard only: every rank throws the same InputError, which names the file
// line the value came from.
TEST(ShardedProblem, EveryRankReportsTheFirstBadSource) {
  ce::Comm& comm = world();
  ce::Population pop = ce::testing::random_population(kN, 9, true, false);
  pop.origin = "sources.csv";
  pop.line.resize(kN);
  for (std::size_t i = 0; i < kN; ++i) pop.line[i] = i + 2;
  pop.mu[kN - 1] = -1.0;
  const ce::Shard shard = ce::shard_of(kN, comm.rank(), comm.size());
  const ce::Population mine = ce::testing::rows_of(pop, shard);
  ce::RunConfig cfg;
  cfg.budget = 10;
  std::string message;
  try {
    ce::make_sharded_problem(mine, cfg, shard, comm);
  } catch (const ce::InputError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("sources.csv:" + std::to_string(kN + 1) + ": field 'mu'"),
            std::string::npos)
      << message;
  // And a budget above the total cost, which no shard sees alone.
  ce::Population good = ce::testing::random_population(kN, 9, true, false);
  cfg.budget = double(kN) + 1;
  message.clear();
  const ce::Population good_mine = ce::testing::rows_of(good, shard);
  try {
    ce::make_sharded_problem(good_mine, cfg, shard, comm);
  } catch (const ce::InputError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("larger than the total crawl cost"), std::string::npos) << message;
}

}  // namespace

int main(int argc, char** argv) { return ce::testing::mpi_test_main(argc, argv); }
