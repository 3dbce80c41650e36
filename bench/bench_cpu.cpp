// CPU backend throughput: epochs per second of the Whittle policy on synthetic populations.
// Google Benchmark with manual time = the rollout's epoch-loop time (set-up excluded). Not a test.
//   ./bench_cpu                      all cases
//   ./bench_cpu --benchmark_filter=10000000
//   ./bench_cpu --stream [threads]   stream triad bandwidth as JSON (no benchmark)
//   ./bench_cpu --floor N [threads]  the 40-byte read-modify-write floor of N sources as JSON
//   ./bench_cpu --paired N [rounds] [epochs] [threads] [burn-in]   crawleval, its C++ peer and
//                                    the floor, in the steady state (300 burn-in epochs)
//   ./bench_cpu --dump N EPOCHS DIR [burn-in]  the paired run's inputs and crawleval's rewards
//                                    (numba_peer)
#include <benchmark/benchmark.h>

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "crawleval/analysis/bound.hpp"
#include "crawleval/analysis/fresh_rates.hpp"
#include "crawleval/engine/fresh_engine.hpp"
#include "crawleval/evaluate/driver.hpp"
#include "crawleval/evaluate/fresh_evaluate.hpp"
#include "crawleval/io/fresh_io.hpp"
#include "crawleval/io/io.hpp"
#include "crawleval/io/syncbandit_io.hpp"
#include "crawleval/learn/syncbandit.hpp"

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

// LambdaCrawlApprox's rates (the freshness model's IO/CO split) on the synthetic freshness
// population, budget 20% of N: fresh_rates' Newton solve (arg 1 = 0) against the golden-section
// search it replaced (arg 1 = 1; the authors' Python takes about 5.6 s at 1e6 URLs).
static void BM_LambdaCrawlApprox(benchmark::State& state) {
  const std::size_t n = std::size_t(state.range(0));
  static std::map<std::size_t, ce::FreshPopulation> cache;
  auto it = cache.find(n);
  if (it == cache.end()) it = cache.emplace(n, ce::synthetic_fresh_population(n, 1)).first;
  const ce::FreshPopulation& pop = it->second;
  ce::FreshConfig cfg;
  cfg.budget = 0.2 * double(n);
  for (auto _ : state) {
    if (state.range(1) == 0) {
      benchmark::DoNotOptimize(
          ce::fresh_rates(pop, cfg, ce::FreshPolicy::lambda_crawl_approx).rho.data());
    } else {
      ce::FreshRates r;
      r.rho.assign(n, 0.0);
      r.p.assign(n, 0.0);
      ce::detail::lambda_crawl_approx_golden(pop, cfg.budget / cfg.epoch_length, &r);
      benchmark::DoNotOptimize(r.rho.data());
    }
  }
  state.SetLabel(state.range(1) ? "golden section (before)" : "fresh_rates (Newton)");
}
BENCHMARK(BM_LambdaCrawlApprox)
    ->ArgsProduct({{100000, 1000000}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

// Synchronization bandits: J* for K arms (polynomial and poisson families).
static void BM_SyncOptimum(benchmark::State& state) {
  const auto fam =
      state.range(1) ? crawleval::sync::Family::poisson : crawleval::sync::Family::polynomial;
  const crawleval::sync::Instance inst =
      crawleval::sync::generate_instance(fam, std::size_t(state.range(0)), 1);
  const crawleval::sync::Simplex s{inst.r_min, inst.r_max, inst.budget};
  for (auto _ : state) benchmark::DoNotOptimize(crawleval::sync::optimal_cost(inst, s));
  state.SetLabel(crawleval::sync::to_string(fam));
}
BENCHMARK(BM_SyncOptimum)
    ->ArgsProduct({{100, 1000, 1000000}, {0, 1}})
    ->Unit(benchmark::kMillisecond);

// The paper's polynomial experiment: 150 runs x 240 MirrorSync rounds, K = 100 (the public
// Python code takes about 46 s for one run).
static void BM_MirrorSyncExperiment(benchmark::State& state) {
  crawleval::sync::LearnConfig cfg;
  cfg.algorithm = crawleval::sync::Algorithm(state.range(0));
  cfg.eta = cfg.algorithm == crawleval::sync::Algorithm::mirrorsync ? 2.7 : 1.6;
  cfg.cycle = 20;
  for (auto _ : state)
    benchmark::DoNotOptimize(crawleval::sync::run_experiment(
        [](uint32_t r) {
          return crawleval::sync::generate_instance(crawleval::sync::Family::polynomial, 100,
                                                    1000 + r);
        },
        cfg, 150));
  state.SetLabel(std::string("150 runs x 240 rounds, ") +
                 crawleval::sync::to_string(cfg.algorithm));
}
BENCHMARK(BM_MirrorSyncExperiment)->Arg(0)->Arg(1)->Unit(benchmark::kSecond)->Iterations(1);

// MirrorSync rounds per second with K = 10^6 arms (one run).
static void BM_MirrorSyncMillionArms(benchmark::State& state) {
  const crawleval::sync::Instance inst =
      crawleval::sync::generate_instance(crawleval::sync::Family::polynomial, 1000000, 1);
  crawleval::sync::LearnConfig cfg;
  cfg.rounds = 5;
  for (auto _ : state) benchmark::DoNotOptimize(crawleval::sync::learn(inst, cfg, 0));
  state.counters["rounds_per_second"] = benchmark::Counter(
      double(cfg.rounds) * double(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_MirrorSyncMillionArms)->Unit(benchmark::kSecond)->Iterations(1);

// Stream bandwidth, STREAM's triad a[i] = b[i] + s c[i] over three 2^26-double arrays (1.5 GiB,
// far beyond any cache), OpenMP static schedule: the memory roofline the CPU backend is compared
// with (bench/cpu_peer.py). Counts 24 bytes per element (no write-allocate), as STREAM does; prints
// the best of 10 repetitions as JSON.
int stream_main(int threads) {
  const std::size_t n = std::size_t(1) << 26;
  if (threads <= 0) threads = omp_get_max_threads();
  std::unique_ptr<double[]> a(new double[n]), b(new double[n]), c(new double[n]);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::size_t i = 0; i < n; ++i) a[i] = 0.0, b[i] = 1.0, c[i] = 2.0;
  double best = 1e30;
  for (int rep = 0; rep < 10; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    double* pa = a.get();
    const double *pb = b.get(), *pc = c.get();
#pragma omp parallel for schedule(static) num_threads(threads)
    for (std::size_t i = 0; i < n; ++i) pa[i] = pb[i] + 3.0 * pc[i];
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  benchmark::DoNotOptimize(a[n / 2]);
  std::printf("{\"threads\": %d, \"triad_gb_per_s\": %.3f}\n", threads,
              24.0 * double(n) / best / 1e9);
  return 0;
}

// The read-modify-write floor of the deterministic Whittle pass: per source it reads x, alpha,
// u and a 32-bit word and writes x and the word back (40 bytes, the bytes the engine's epoch moves
// with unit costs, docs/cpu-design.md), with the least arithmetic that keeps every byte live.
// In place, OpenMP static schedule, best of 20 passes after one untimed; prints JSON.
int floor_main(std::size_t n, int threads, bool tail = false) {
  if (threads <= 0) threads = omp_get_max_threads();
  std::unique_ptr<double[]> x(new double[n]), alpha(new double[n]), u(new double[n]);
  std::unique_ptr<uint32_t[]> w(new uint32_t[n]);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::size_t i = 0; i < n; ++i)
    x[i] = 1.0, alpha[i] = 0.5 + 1e-9 * double(i % 1000), u[i] = 0.25, w[i] = uint32_t(i);
  double best = 1e30;
  for (int rep = 0; rep < 21; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    double* px = x.get();
    uint32_t* pw = w.get();
    const double *pa = alpha.get(), *pu = u.get();
#pragma omp parallel for schedule(static) num_threads(threads)
    for (std::size_t i = 0; i < n; ++i) {
      px[i] = pa[i] * px[i] + pu[i];
      pw[i] += 1u;
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rep > 0) best = std::min(best, s);
  }
  benchmark::DoNotOptimize(x[n / 2]);
  benchmark::DoNotOptimize(w[n / 2]);
  if (tail)  // the end of paired_main's line
    std::printf("\"floor_ms\": %.4f}\n", 1e3 * best);
  else
    std::printf("{\"n\": %zu, \"threads\": %d, \"floor_ms\": %.4f, \"gb_per_s\": %.3f}\n", n,
                threads, 1e3 * best, 40.0 * double(n) / best / 1e9);
  return 0;
}

// ---- the afternoon peer ----------------------------------------------------------------------
// The deterministic Whittle policy as an HPC engineer would write it in an afternoon, without
// crawleval's engine: per source x, its age eta since the last crawl, and the constants alpha and
// u (from crawleval's problem: the inputs, not the engine); every epoch an OpenMP pass scores
// every source (the index on the grid, x + eta ((1 - alpha) x - u)) into a key array, a parallel
// radix select (per-thread histograms of the keys' top 16 bits, then the boundary bin's members
// sorted by score descending, id ascending) picks the top M, and a second pass collects the
// reward and moves the states. 8 + 8 + 8 + 4 bytes of state and constants, plus the 8-byte key
// written and read back and a crawl flag.
struct Peer {
  std::size_t n, m;
  int threads;
  std::vector<double> x, alpha, u;
  std::vector<uint32_t> eta;
  std::vector<uint64_t> key;
  std::vector<uint8_t> crawl;
  std::vector<std::vector<uint64_t>> hist;
  std::vector<std::vector<std::pair<uint64_t, uint32_t>>> bucket;
  static constexpr int kBits = 16;
  static constexpr uint32_t kEtaCap = (1u << 29) - 16;

  static uint64_t order_key(double s) {
    uint64_t b;
    std::memcpy(&b, &s, sizeof b);
    return (b >> 63) ? ~b : b | (uint64_t(1) << 63);
  }
  double epoch() {
    const std::size_t nb = std::size_t(1) << kBits;
#pragma omp parallel num_threads(threads)
    {
      std::vector<uint64_t>& h = hist[std::size_t(omp_get_thread_num())];
      std::fill(h.begin(), h.end(), 0);
#pragma omp for schedule(static)
      for (std::size_t i = 0; i < n; ++i) {
        const double s = x[i] + double(eta[i]) * ((1.0 - alpha[i]) * x[i] - u[i]);
        const uint64_t k = order_key(s);
        key[i] = k;
        h[k >> (64 - kBits)] += 1;
      }
    }
    // The boundary bin: the top bins hold fewer than m sources, with it at least m.
    std::size_t above = 0, b = nb;
    while (b > 0) {
      std::size_t c = 0;
      for (const auto& h : hist) c += h[b - 1];
      if (above + c >= m) break;
      above += c;
      --b;
    }
    const uint64_t bin = b > 0 ? b - 1 : 0;
    const std::size_t need = m - std::min(m, above);
#pragma omp parallel num_threads(threads)
    {
      auto& mine = bucket[std::size_t(omp_get_thread_num())];
      mine.clear();
#pragma omp for schedule(static)
      for (std::size_t i = 0; i < n; ++i) {
        const uint64_t top = key[i] >> (64 - kBits);
        crawl[i] = top > bin;
        if (top == bin) mine.emplace_back(key[i], uint32_t(i));
      }
    }
    std::vector<std::pair<uint64_t, uint32_t>> all;
    for (const auto& v : bucket) all.insert(all.end(), v.begin(), v.end());
    auto before = [](const std::pair<uint64_t, uint32_t>& a,
                     const std::pair<uint64_t, uint32_t>& c) {
      return a.first != c.first ? a.first > c.first : a.second < c.second;
    };
    const std::size_t take = std::min(need, all.size());
    if (take < all.size())
      std::nth_element(all.begin(), all.begin() + std::ptrdiff_t(take), all.end(), before);
    for (std::size_t j = 0; j < take; ++j) crawl[all[j].second] = 1;
    double reward = 0.0;
#pragma omp parallel for schedule(static) num_threads(threads) reduction(+ : reward)
    for (std::size_t i = 0; i < n; ++i) {
      if (crawl[i]) {
        reward += x[i];
        x[i] = u[i];
        eta[i] = 1;
      } else {
        x[i] = alpha[i] * x[i] + u[i];
        eta[i] += eta[i] < kEtaCap;
      }
    }
    return reward;
  }
};

// crawleval's deterministic Whittle engine (its measured epochs), the afternoon peer and the
// read-modify-write floor on the same N sources, in rounds that interleave the three, after the
// peer's rewards are checked against crawleval's epoch by epoch. Both are timed in the steady
// state: after `burn_in` epochs from the fresh start (the boundary rises for about 100 epochs at
// M = N/100 and stays within a coarse bin after 150; crawleval's sleeping sources settle with
// it). Prints one JSON line per round, with the share of source-epochs crawleval's pass did not
// read (its dormant sources, host/engine/cpu/dormant.hpp).
int paired_main(std::size_t n, int rounds, int epochs, int threads, int burn_in) {
  if (threads <= 0) threads = omp_get_max_threads();
  ce::RunConfig cfg;
  cfg.budget = double(std::max<std::size_t>(1, n / 100));
  cfg.epochs = uint64_t(epochs);
  cfg.burn_in = uint64_t(burn_in);
  cfg.start = ce::Start::fresh;
  cfg.threads = threads;
  const ce::Problem pr = ce::make_problem(population(n), cfg);
  auto fresh_peer = [&] {
    Peer p{n, std::size_t(cfg.budget), threads};
    p.x = pr.initial_state();
    p.alpha = pr.params().alpha;
    p.u = pr.params().drift;
    p.eta.assign(n, 1);  // a fresh start: x = u, one epoch on the grid
    p.key.resize(n);
    p.crawl.resize(n);
    p.hist.assign(std::size_t(threads), std::vector<uint64_t>(std::size_t(1) << Peer::kBits));
    p.bucket.resize(std::size_t(threads));
    return p;
  };
  // The check: the same reward in every measured epoch.
  {
    const ce::RolloutOutput out = ce::cpu_rollout(pr, ce::Policy::whittle);
    Peer p = fresh_peer();
    double worst = 0.0;
    for (uint64_t t = 0; t < pr.total_epochs(); ++t) {
      const double r = p.epoch();
      if (t >= cfg.burn_in) {
        const double c = out.epoch_reward[t - cfg.burn_in];
        worst = std::max(worst, std::fabs(r - c) / std::max(1e-300, std::fabs(c)));
      }
    }
    if (!(worst <= 1e-9)) {
      std::fprintf(stderr, "peer: rewards differ from crawleval's (%.3g relative)\n", worst);
      return 1;
    }
  }
  for (int round = 0; round < rounds; ++round) {
    double load = 0.0;
    if (FILE* f = std::fopen("/proc/loadavg", "r")) {
      if (std::fscanf(f, "%lf", &load) != 1) load = 0.0;
      std::fclose(f);
    }
    const ce::RolloutOutput out = ce::cpu_rollout(pr, ce::Policy::whittle);
    const double engine_ms = 1e3 * out.measured_seconds / double(out.measured_epochs);
    const double dormant = double(out.counters.dormant) / (double(n) * double(cfg.epochs));
    Peer p = fresh_peer();
    for (uint64_t t = 0; t < cfg.burn_in; ++t) p.epoch();
    const auto t0 = std::chrono::steady_clock::now();
    for (int t = 0; t < epochs; ++t) p.epoch();
    const double peer_ms =
        1e3 * std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / epochs;
    std::fflush(stdout);
    std::printf(
        "{\"n\": %zu, \"round\": %d, \"load\": %.2f, \"burn_in\": %d, \"crawleval_ms\": %.4f, "
        "\"dormant\": %.4f, \"peer_ms\": %.4f, ",
        n, round, load, burn_in, engine_ms, dormant, peer_ms);
    std::fflush(stdout);
    floor_main(n, threads, true);
  }
  return 0;
}

// For peers in other languages (bench/numba_peer.py): the paired run's inputs and crawleval's
// rewards as raw little-endian doubles in DIR: alpha, u and x0 (N each) and rewards (crawleval's
// reward in each of EPOCHS measured epochs after `burn_in` epochs, M = N / 100, fresh start), and
// meta.json (n, m, burn_in, epochs).
int dump_main(std::size_t n, int epochs, const std::string& dir, int burn_in) {
  ce::RunConfig cfg;
  cfg.budget = double(std::max<std::size_t>(1, n / 100));
  cfg.epochs = uint64_t(epochs);
  cfg.burn_in = uint64_t(burn_in);
  cfg.start = ce::Start::fresh;
  const ce::Problem pr = ce::make_problem(population(n), cfg);
  const ce::RolloutOutput out = ce::cpu_rollout(pr, ce::Policy::whittle);
  auto write = [&](const char* name, const std::vector<double>& v) {
    FILE* f = std::fopen((dir + "/" + name).c_str(), "wb");
    if (!f || std::fwrite(v.data(), sizeof(double), v.size(), f) != v.size()) {
      std::fprintf(stderr, "dump: cannot write %s/%s\n", dir.c_str(), name);
      std::exit(1);
    }
    std::fclose(f);
  };
  write("alpha.f64", pr.params().alpha);
  write("u.f64", pr.params().drift);
  write("x0.f64", pr.initial_state());
  write("rewards.f64", out.epoch_reward);
  char meta[160];
  std::snprintf(meta, sizeof meta, "{\"n\": %zu, \"m\": %zu, \"burn_in\": %d, \"epochs\": %d}\n", n,
                std::size_t(cfg.budget), burn_in, epochs);
  if (FILE* f = std::fopen((dir + "/meta.json").c_str(), "w")) {
    std::fputs(meta, f);
    std::fclose(f);
  }
  std::fputs(meta, stdout);
  return 0;
}

int main(int argc, char** argv) {
  if (argc >= 5 && std::string(argv[1]) == "--dump")
    return dump_main(std::size_t(std::atof(argv[2])), std::atoi(argv[3]), argv[4],
                     argc >= 6 ? std::atoi(argv[5]) : 300);
  if (argc >= 3 && std::string(argv[1]) == "--paired")
    return paired_main(std::size_t(std::atof(argv[2])), argc >= 4 ? std::atoi(argv[3]) : 3,
                       argc >= 5 ? std::atoi(argv[4]) : 40, argc >= 6 ? std::atoi(argv[5]) : 0,
                       argc >= 7 ? std::atoi(argv[6]) : 300);
  if (argc >= 3 && std::string(argv[1]) == "--floor")
    return floor_main(std::size_t(std::atof(argv[2])), argc >= 4 ? std::atoi(argv[3]) : 0);
  if (argc >= 2 && std::string(argv[1]) == "--stream")
    return stream_main(argc >= 3 ? std::atoi(argv[2]) : 0);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
