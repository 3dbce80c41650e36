// GPU benchmarks (not tests: nothing here asserts a time).
//
//  wide: one replication of the Whittle policy on N synthetic sources (generated on the device,
//        so 1e9 sources need no host memory), N in {1e6, 1e7, 1e8, 1e9}, M/N in {0.1%, 1%, 10%},
//        both models, unit and lognormal costs. Time per epoch from CUDA events around the epochs
//        after the burn-in; beside it a copy kernel that reads and writes the same bytes per source
//        as the epoch's pass (the roofline on this device) and the time those bytes take at the
//        H100's 3.35 TB/s. Also the launches and host waits per epoch and what the selection did
//        (window misses, levels, tie scans, listed candidates). With CRAWLEVAL_DORMANT=1, each
//        deterministic case runs again with sleeping sources (kernels/dormant_pass.cuh): its time,
//        the share of source-epochs asleep, and whether its rewards are the first run's bit for
//        bit.
//  tall: the papers' 4-source example, 1e5 and 1e6 replications (one thread each).
//
// Usage: bench_gpu [--quick] [--max-n N] [--only wide|tall] [--case MODEL:COSTS:N:FRACTION]
//                  [--burn-in B] [--burn-in-seconds S] [--dump DIR] [--json FILE]
// --burn-in B (default 3) epochs before the timed ones, at most about S seconds of them per case
// (--burn-in-seconds); each case reports the burn-in it ran and the bytes it moved per source,
// counted from the engine's counters.
// --dump DIR: deterministic unit-cost cases write their columns and rewards to DIR (the PyTorch
// peer's check, bench/pytorch_baseline.py --check DIR).
// The JSON file is rewritten after every case, so a run that is stopped keeps what it measured.
// Each case checks the device memory it will allocate (columns and engine, counted exactly)
// before allocating; a case that does not fit is recorded as skipped, one that fails as an error,
// and the run goes on with the next case. --case runs one wide case (for ncu).
#include <cuda_runtime.h>

#include <cub/device/device_reduce.cuh>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "crawleval/engine/cuda_backend.hpp"
#include "crawleval/evaluate/driver.hpp"
#include "crawleval/io/io.hpp"
#include "crawleval/model/policy.hpp"
#include "crawleval/model/synthetic.hpp"
#include "device_buffer.cuh"
#include "launch.cuh"
#include "wide_engine.cuh"

namespace ce = crawleval;
namespace cd = crawleval::cuda::detail;

namespace {

constexpr double kH100Bandwidth = 3.35e12;  // bytes per second, the H100 SXM's datasheet figure

/// --dump DIR: a deterministic unit-cost case writes its columns and per-epoch rewards there, for
/// bench/pytorch_baseline.py --check DIR (the PyTorch peer checked against crawleval's rewards).
std::string g_dump_dir;
/// --burn-in B: epochs run before the timed ones (3 by default: past the first epochs' transient
/// from empty sources; 300 is the steady state users measure, as bench_cpu's); --burn-in-seconds
/// S caps a case's burn-in at about S seconds (from the warm-up run's epoch time, at least 3
/// epochs), so that the largest cases fit a device call. Each case reports the burn-in it ran.
uint64_t g_burn_in = 3;
double g_burn_in_seconds = 1e30;

/// The datasheet bandwidth of the device (bytes per second): the H100 SXM's 3.35 TB/s, the H200's
/// 4.8 TB/s, NaN for another device (no figure claimed).
double datasheet_bandwidth() {
  cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return NAN;
  const std::string name = p.name;
  if (name.find("H200") != std::string::npos) return 4.8e12;
  if (name.find("H100") != std::string::npos) return 3.35e12;
  return NAN;
}

__global__ void generate_columns(uint64_t seed, std::size_t n, bool lognormal, double* mu_t,
                                 double* u_star, double* lambda_t, double* xi, double* cost) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const ce::SyntheticSource s = ce::synthetic_source(seed, i, lognormal);
    const ce::SourceParams p = ce::derive_params(s.lambda, s.xi, s.mu, s.cost, 1.0);
    mu_t[i] = p.mu_t;
    u_star[i] = p.u_star;
    if (lambda_t) lambda_t[i] = p.lambda_t, xi[i] = p.xi;
    if (cost) cost[i] = s.cost;
  }
}

/// The bytes one epoch's pass moves per source, as arrays of 8-, 4- and 1-byte words.
struct Traffic {
  int read8, read4, read1, write8, write4, write1;
  int bytes() const { return 8 * (read8 + write8) + 4 * (read4 + write4) + read1 + write1; }
};

Traffic traffic_of(ce::Model model, bool unit) {
  // Deterministic: mu_t, u_star and the state word read, the word written. Stochastic: lambda_t
  // (the arrivals kernel), x, mu_t, u_star and the class read; x and the class written; not
  // counted: the arrivals' flags (0.25 B) and, for the share s of sources with arrivals, their
  // sums written and read and their mu_t and xi read (32 s B). Costs: the cost read.
  Traffic t =
      model == ce::Model::deterministic ? Traffic{2, 1, 0, 0, 1, 0} : Traffic{4, 0, 1, 1, 0, 1};
  if (!unit) t.read8 += 1;
  return t;
}

__global__ void copy_kernel(const double* r8, const uint32_t* r4, const uint8_t* r1, double* w8,
                            uint32_t* w4, uint8_t* w1, std::size_t n, Traffic t) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    double a = 0.0;
    uint32_t b = 0;
    for (int k = 0; k < t.read8; ++k) a += r8[std::size_t(k) * n + i];
    for (int k = 0; k < t.read4; ++k) b ^= r4[std::size_t(k) * n + i];
    for (int k = 0; k < t.read1; ++k) b ^= r1[std::size_t(k) * n + i];
    for (int k = 0; k < t.write8; ++k) w8[std::size_t(k) * n + i] = a + k;
    for (int k = 0; k < t.write4; ++k) w4[std::size_t(k) * n + i] = b + uint32_t(k);
    for (int k = 0; k < t.write1; ++k) w1[std::size_t(k) * n + i] = uint8_t(b + k);
  }
}

/// Seconds per copy of n items with the given traffic (best of 5). Above 2^26 items the copy runs
/// on 2^26 and is scaled: bandwidth is flat at that size, and 1e9 sources leave no room for a copy.
double roofline_seconds(std::size_t n_total, const Traffic& t, cudaStream_t s) {
  const std::size_t n = std::min<std::size_t>(n_total, std::size_t(1) << 26);
  const double scale = double(n_total) / double(n);
  cd::DeviceBuffer<double> r8(n * std::max(t.read8, 1)), w8(n * std::max(t.write8, 1));
  cd::DeviceBuffer<uint32_t> r4(n * std::max(t.read4, 1)), w4(n * std::max(t.write4, 1));
  cd::DeviceBuffer<uint8_t> r1(n * std::max(t.read1, 1)), w1(n * std::max(t.write1, 1));
  r8.zero(s), r4.zero(s), r1.zero(s);
  cudaEvent_t a, b;
  CE_CUDA_TRY(cudaEventCreate(&a));
  CE_CUDA_TRY(cudaEventCreate(&b));
  float best = 1e30f;
  for (int rep = 0; rep < 6; ++rep) {
    CE_CUDA_TRY(cudaEventRecord(a, s));
    copy_kernel<<<cd::grid_for(n, 256), 256, 0, s>>>(r8.data(), r4.data(), r1.data(), w8.data(),
                                                     w4.data(), w1.data(), n, t);
    CE_CUDA_CHECK_LAUNCH();
    CE_CUDA_TRY(cudaEventRecord(b, s));
    CE_CUDA_TRY(cudaEventSynchronize(b));
    float ms;
    CE_CUDA_TRY(cudaEventElapsedTime(&ms, a, b));
    if (rep > 0) best = std::min(best, ms);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return best / 1e3 * scale;
}

struct WideCase {
  std::size_t n;
  double fraction;
  ce::Model model;
  bool unit;
};

/// The timed run of `setup` with sleeping sources, against `plain` (the same run over every
/// source).
nlohmann::json run_dormant(const cd::WideSetup& setup, const ce::RolloutOutput& plain,
                           std::size_t n, cudaStream_t s) {
  nlohmann::json j;
  ce::RolloutOutput out;
  try {
    cd::WideEngine engine(setup, s);
    j["launches_per_epoch"] = engine.launches_per_epoch();
    out = engine.run(nullptr);
  } catch (const ce::InputError& e) {
    j["skipped"] = e.what();
    return j;
  }
  const double epochs = double(setup.config.epochs);
  const ce::EngineCounters& k = out.counters;
  j["ms_per_epoch"] = out.steady_seconds / epochs * 1e3;
  j["asleep_share_measured"] = double(k.dormant) / (double(n) * epochs);
  j["forced_wakes"] = k.dormant_wakes;
  j["recounts"] = k.recounts;
  j["window_misses"] = k.window_misses;
  j["rewards_equal_bit_for_bit"] = out.epoch_reward == plain.epoch_reward &&
                                   out.replication_reward == plain.replication_reward &&
                                   out.replication_cost == plain.replication_cost;
  j["mean_reward"] = out.replication_reward[0];
  std::printf(
      "    with sleeping sources: %9.3f ms/epoch  asleep %.1f%%  wakes %llu  recounts %llu"
      "  rewards %s\n",
      out.steady_seconds / epochs * 1e3, 100.0 * j["asleep_share_measured"].get<double>(),
      (unsigned long long)k.dormant_wakes, (unsigned long long)k.recounts,
      j["rewards_equal_bit_for_bit"].get<bool>() ? "equal" : "DIFFER");
  std::fflush(stdout);
  return j;
}

nlohmann::json run_wide(const WideCase& c, cudaStream_t s) {
  const bool det = c.model == ce::Model::deterministic;
  nlohmann::json j = {{"n", c.n},
                      {"budget_fraction", c.fraction},
                      {"model", ce::to_string(c.model)},
                      {"costs", c.unit ? "unit" : "lognormal"},
                      {"policy", "whittle"}};
  const char* costs = c.unit ? "unit" : "lognormal";
  const uint64_t seed = 1;
  cd::WideSetup setup;
  setup.config.model = c.model;
  setup.config.start = ce::Start::empty;
  // From empty sources the first epochs are a transient (all scores 0, then the first spread):
  // burn-in epochs are not timed (the burn-in is set after the warm-up run, which times an epoch).
  setup.config.burn_in = 0;
  setup.config.epochs = c.n >= 1000000000 ? 5 : (det ? 20 : 10);
  setup.config.replications = 1;
  setup.policy = ce::Policy::whittle;
  setup.unit_costs = c.unit;
  setup.columns.n = c.n;
  // Everything this case allocates at once: the columns it generates (no initial-state column:
  // every source starts empty) and the timed engine (the warm-up engine is gone by then).
  const std::size_t column_bytes = c.n * sizeof(double) * (2 + (det ? 0 : 2) + (c.unit ? 0 : 1));
  const std::size_t engine_bytes = cd::WideEngine::device_bytes(setup);
  j["device_bytes"] = column_bytes + engine_bytes;
  try {
    cd::require_device_memory(column_bytes + engine_bytes, std::to_string(c.n) + " sources");
  } catch (const ce::InputError& e) {
    j["skipped"] = e.what();
    std::printf("  %-13s %-9s N=%-11zu M/N=%-5.3g%%  skipped: %s\n", ce::to_string(c.model), costs,
                c.n, 100 * c.fraction, e.what());
    std::fflush(stdout);
    return j;
  }
  cd::DeviceBuffer<double> mu_t(c.n), u_star(c.n), lambda_t, xi, cost;
  if (!det) lambda_t.resize(c.n), xi.resize(c.n);
  if (!c.unit) cost.resize(c.n);
  generate_columns<<<cd::grid_for(c.n, 256), 256, 0, s>>>(
      seed, c.n, !c.unit, mu_t.data(), u_star.data(), lambda_t.data(), xi.data(), cost.data());
  CE_CUDA_CHECK_LAUNCH();
  double total_cost = double(c.n);
  if (!c.unit) {  // the fixed-point scale needs the total cost
    cd::DeviceBuffer<double> sum(1);
    std::size_t bytes = 0;
    CE_CUDA_TRY(cub::DeviceReduce::Sum(nullptr, bytes, cost.data(), sum.data(), c.n, s));
    cd::DeviceBuffer<unsigned char> tmp(std::max<std::size_t>(bytes, 1));
    CE_CUDA_TRY(cub::DeviceReduce::Sum(tmp.data(), bytes, cost.data(), sum.data(), c.n, s));
    sum.download(&total_cost, 1, s);
    CE_CUDA_TRY(cudaStreamSynchronize(s));
  }
  setup.config.budget = std::max(1.0, std::floor(total_cost * c.fraction));
  // S of the integer costs (selection.hpp): every cost here lies below the budget's limit (the
  // budget is at least 0.1% of 1e6 costs of mean 1, and no lognormal(0.5) cost reaches 1000), so
  // S is the total cost scaled by 2^-ilogb(limit).
  setup.budget = ce::fixed_budget(
      setup.config.budget,
      std::ldexp(total_cost, -std::ilogb(ce::budget_limit_finite(setup.config.budget))), c.unit);
  setup.columns.mu_t = mu_t.data();
  setup.columns.u_star = u_star.data();
  if (!det) setup.columns.lambda_t = lambda_t.data(), setup.columns.xi = xi.data();
  if (!c.unit) setup.columns.cost = cost.data();
  const ce::ScoreContext ctx{ce::Policy::whittle, ce::Observe::full, seed, 0, 0, 0, c.n};
  setup.first_plan = cd::sample_first_plan(c.n, setup.budget, c.unit, [&](uint64_t i) {
    const ce::SyntheticSource src = ce::synthetic_source(seed, i, !c.unit);
    const ce::SourceParams p = ce::derive_params(src.lambda, src.xi, src.mu, src.cost, 1.0);
    return std::make_pair(ce::policy_score(ctx, i, 0.0, 0u, 0.0, 0u, 0.0, p), src.cost);
  });
  double warm_epoch_s = 0.0;
  {  // first use of every kernel, in its own scope: its buffers are freed before the timed run's
    cd::WideSetup w = setup;
    w.config.burn_in = 0;
    w.config.epochs = 2;
    const auto t0 = std::chrono::steady_clock::now();
    cd::WideEngine(w, s).run(nullptr);
    warm_epoch_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 2.0;
  }
  setup.config.burn_in = g_burn_in;
  if (double(g_burn_in) * warm_epoch_s > g_burn_in_seconds)
    setup.config.burn_in =
        std::max<uint64_t>(3, uint64_t(g_burn_in_seconds / std::max(warm_epoch_s, 1e-9)));
  ce::RolloutOutput out;
  int lpe = 0;
  {
    cd::WideEngine engine(setup, s);
    lpe = engine.launches_per_epoch();
    out = engine.run(nullptr);
  }
  // Sleeping sources (CRAWLEVAL_DORMANT=1): the same case again with them, after the pass over
  // every source, and whether its rewards are that pass's bit for bit.
  cd::WideSetup sleepy = setup;
  sleepy.dormant = cd::dormant_setting(setup, false);
  if (sleepy.dormant != cd::kDormantOff) j["dormant"] = run_dormant(sleepy, out, c.n, s);
  if (!g_dump_dir.empty() && det && c.unit) {
    // mu T and u* as raw little-endian float64 (T = 1), and replication 0's measured rewards.
    std::vector<double> host(c.n);
    for (const auto& [name, column] :
         {std::pair{"mu_t.f64", &mu_t}, std::pair{"u_star.f64", &u_star}}) {
      column->download(host.data(), c.n, s);
      CE_CUDA_TRY(cudaStreamSynchronize(s));
      std::ofstream f(g_dump_dir + "/" + name, std::ios::binary);
      f.write(reinterpret_cast<const char*>(host.data()), std::streamsize(c.n * sizeof(double)));
      if (!f) throw std::runtime_error("--dump: cannot write " + g_dump_dir + "/" + name);
    }
    const nlohmann::json d = {{"n", c.n},
                              {"budget", setup.config.budget},
                              {"start", "empty"},
                              {"burn_in", setup.config.burn_in},
                              {"epochs", setup.config.epochs},
                              {"epoch_reward", out.epoch_reward},
                              {"mean_reward", out.replication_reward[0]}};
    std::ofstream(g_dump_dir + "/crawleval.json") << d.dump(1) << "\n";
  }
  const Traffic t = traffic_of(c.model, c.unit);
  const double epochs = double(setup.config.epochs);
  const double epoch_s = out.steady_seconds / epochs;
  const double all_epochs = double(setup.config.epochs + setup.config.burn_in);
  const double copy_s = roofline_seconds(c.n, t, s);
  const double bytes = double(c.n) * t.bytes();
  const ce::EngineCounters& k = out.counters;
  // The bytes the epochs moved per source, counted from the engine's counters over every epoch
  // (burn-in included) with docs/gpu-design.md's bytes per item: the pass, a fallback pass per
  // window miss (deterministic 24 B, stochastic 25 B per source), and each listed candidate
  // written and read once (12 B, 20 B with costs).
  const double fallback_bytes = det ? 24.0 : 25.0, listed_bytes = c.unit ? 12.0 : 20.0;
  const double moved = double(t.bytes()) + double(k.window_misses) / all_epochs * fallback_bytes +
                       double(k.listed) / all_epochs / double(c.n) * 2.0 * listed_bytes;
  const double datasheet = datasheet_bandwidth();
  j["epochs_timed"] = setup.config.epochs;
  j["burn_in"] = setup.config.burn_in;
  j["burn_in_asked"] = g_burn_in;
  j["bytes_moved_per_source"] = moved;
  j["moved_gb_per_second"] = moved * double(c.n) / epoch_s / 1e9;
  j["moved_fraction_of_copy_bandwidth"] = (moved * double(c.n) / epoch_s) / (bytes / copy_s);
  j["datasheet_tb_per_second"] =
      std::isnan(datasheet) ? nlohmann::json() : nlohmann::json(datasheet / 1e12);
  j["expected_ms_at_datasheet"] =
      std::isnan(datasheet) ? nlohmann::json() : nlohmann::json(bytes / datasheet * 1e3);
  j["ms_per_epoch"] = epoch_s * 1e3;
  j["source_epochs_per_second"] = double(c.n) / epoch_s;
  j["bytes_per_source"] = t.bytes();
  j["achieved_gb_per_second"] = bytes / epoch_s / 1e9;
  j["copy_roofline_ms"] = copy_s * 1e3;
  j["copy_roofline_gb_per_second"] = bytes / copy_s / 1e9;
  j["fraction_of_roofline"] = copy_s / epoch_s;
  j["expected_ms_at_3_35_tbps"] = bytes / kH100Bandwidth * 1e3;
  j["launches_per_epoch"] = lpe;
  j["syncs_per_epoch"] = double(k.syncs) / all_epochs;
  j["window_misses"] = k.window_misses;
  j["levels_per_epoch"] = double(k.levels) / all_epochs;
  j["tie_scans"] = k.tie_scans;
  j["listed_per_epoch"] = double(k.listed) / all_epochs;
  j["mean_reward"] = out.replication_reward[0];
  std::printf(
      "  %-13s %-9s N=%-11zu M/N=%-5.3g%%  %9.3f ms/epoch  %6.1f GB/s  roofline %7.3f ms "
      "(%5.1f%%)  3.35TB/s: %7.3f ms  misses %llu\n",
      ce::to_string(c.model), costs, c.n, 100 * c.fraction, epoch_s * 1e3, bytes / epoch_s / 1e9,
      copy_s * 1e3, 100 * copy_s / epoch_s, bytes / kH100Bandwidth * 1e3,
      (unsigned long long)k.window_misses);
  std::fflush(stdout);
  return j;
}

nlohmann::json run_tall(uint32_t reps, ce::Model model) {
  const ce::Population pop = ce::paper_example();
  ce::RunConfig cfg;
  cfg.budget = 1;
  // Stochastic epochs draw ~250 arrivals per source: fewer of them.
  cfg.epochs = model == ce::Model::deterministic ? 1000 : 100;
  cfg.burn_in = 0;
  cfg.replications = reps;
  cfg.model = model;
  const ce::Problem pr = ce::make_problem(pop, cfg);
  ce::cuda::rollout(pr, ce::Policy::whittle);  // warm-up
  const ce::RolloutOutput out = ce::cuda::rollout(pr, ce::Policy::whittle);
  const double rps = double(reps) / out.loop_seconds;
  const double seps = rps * 4.0 * double(cfg.epochs);
  std::printf("  tall %-13s 4 sources, R=%-8u H=%-5llu  %8.3f s  %10.4g source-epochs/s\n",
              ce::to_string(model), reps, (unsigned long long)cfg.epochs, out.loop_seconds, seps);
  std::fflush(stdout);
  return {{"sources", 4},
          {"replications", reps},
          {"epochs", cfg.epochs},
          {"model", ce::to_string(model)},
          {"seconds", out.loop_seconds},
          {"replications_per_second", rps},
          {"source_epochs_per_second", seps}};
}

/// A case that failed: the error is recorded and the run goes on. An error that leaves the
/// context unusable (a kernel fault) fails every later case too, each with its own message.
nlohmann::json failed(nlohmann::json j, const std::exception& e) {
  (void)cudaGetLastError();  // clears an error that is not sticky (an allocation that failed)
  const cudaError_t sticky = cudaDeviceSynchronize();
  j["error"] = e.what();
  if (sticky != cudaSuccess) j["context_error"] = cudaGetErrorName(sticky);
  std::printf("  FAILED: %s%s%s\n", e.what(), sticky != cudaSuccess ? " (context: " : "",
              sticky != cudaSuccess ? (std::string(cudaGetErrorName(sticky)) + ")").c_str() : "");
  std::fflush(stdout);
  return j;
}

bool parse_case(const std::string& text, WideCase* c) {
  // MODEL:COSTS:N:FRACTION, e.g. deterministic:unit:1e8:0.01
  const auto a = text.find(':'), b = text.find(':', a + 1), d = text.find(':', b + 1);
  if (a == std::string::npos || b == std::string::npos || d == std::string::npos) return false;
  const std::string model = text.substr(0, a), costs = text.substr(a + 1, b - a - 1);
  if ((model != "deterministic" && model != "stochastic") ||
      (costs != "unit" && costs != "lognormal"))
    return false;
  c->model = model == "deterministic" ? ce::Model::deterministic : ce::Model::stochastic;
  c->unit = costs == "unit";
  c->n = std::size_t(std::strtod(text.substr(b + 1, d - b - 1).c_str(), nullptr));
  c->fraction = std::strtod(text.substr(d + 1).c_str(), nullptr);
  return c->n > 0 && c->fraction > 0 && c->fraction <= 1;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, wide = true, tall = true;
  std::size_t max_n = std::size_t(1) << 62;
  std::string json_path;
  std::vector<WideCase> only;
  auto usage = [] {
    std::fprintf(stderr,
                 "usage: bench_gpu [--quick] [--max-n N] [--only wide|tall] "
                 "[--case MODEL:COSTS:N:FRACTION] [--burn-in B] [--burn-in-seconds S] "
                 "[--dump DIR] [--json FILE]\n");
    return 2;
  };
  for (int k = 1; k < argc; ++k) {
    const bool has_value = k + 1 < argc;
    if (!std::strcmp(argv[k], "--quick")) {
      quick = true;
    } else if (!std::strcmp(argv[k], "--max-n") && has_value) {
      max_n = std::size_t(std::strtod(argv[++k], nullptr));
    } else if (!std::strcmp(argv[k], "--json") && has_value) {
      json_path = argv[++k];
    } else if (!std::strcmp(argv[k], "--only") && has_value) {
      const std::string v = argv[++k];
      if (v != "wide" && v != "tall") return usage();
      wide = v == "wide", tall = v == "tall";
    } else if (!std::strcmp(argv[k], "--burn-in") && has_value) {
      g_burn_in = std::strtoull(argv[++k], nullptr, 10);
    } else if (!std::strcmp(argv[k], "--burn-in-seconds") && has_value) {
      g_burn_in_seconds = std::strtod(argv[++k], nullptr);
    } else if (!std::strcmp(argv[k], "--dump") && has_value) {
      g_dump_dir = argv[++k];
    } else if (!std::strcmp(argv[k], "--case") && has_value) {
      WideCase c{};
      if (!parse_case(argv[++k], &c)) return usage();
      only.push_back(c);
      tall = false;
    } else {
      return usage();
    }
  }
  if (ce::cuda::device_count() == 0) {
    std::fprintf(stderr, "bench_gpu: %s\n", ce::cuda::device_unavailable_reason().c_str());
    return 2;
  }
  int errors = 0;
  try {
    cd::Stream s;
    nlohmann::json j;
    j["device"] = ce::cuda::device_description();
    j["wide"] = nlohmann::json::array();
    j["tall"] = nlohmann::json::array();
    auto save = [&] {
      if (!json_path.empty()) std::ofstream(json_path) << j.dump(2) << "\n";
    };
    std::printf("device: %s\n", j["device"].get<std::string>().c_str());
    std::vector<std::size_t> sizes =
        quick ? std::vector<std::size_t>{1000000, 10000000}
              : std::vector<std::size_t>{1000000, 10000000, 100000000, 1000000000};
    sizes.erase(
        std::remove_if(sizes.begin(), sizes.end(), [&](std::size_t n) { return n > max_n; }),
        sizes.end());
    std::vector<WideCase> cases = only;
    if (cases.empty() && wide)
      for (ce::Model m : {ce::Model::deterministic, ce::Model::stochastic})
        for (bool unit : {true, false})
          for (std::size_t n : sizes)
            for (double f : {0.001, 0.01, 0.1}) cases.push_back({n, f, m, unit});
    // The targets' cases first (N = 1e8: deterministic at M/N = 1%, stochastic at 10%), then
    // N = 1e9: a step stopped at its time limit has measured what matters most.
    auto rank = [](const WideCase& c) {
      if (c.n == 100000000 && c.unit && c.model == ce::Model::deterministic && c.fraction == 0.01)
        return 0;
      if (c.n == 100000000 && c.unit && c.model == ce::Model::stochastic && c.fraction == 0.1)
        return 1;
      return c.n >= 1000000000 ? 2 : 3;
    };
    std::stable_sort(cases.begin(), cases.end(),
                     [&](const WideCase& a, const WideCase& b) { return rank(a) < rank(b); });
    for (const WideCase& c : cases) {
      nlohmann::json r = {{"n", c.n},
                          {"budget_fraction", c.fraction},
                          {"model", ce::to_string(c.model)},
                          {"costs", c.unit ? "unit" : "lognormal"},
                          {"policy", "whittle"}};
      try {
        r = run_wide(c, s);
      } catch (const std::exception& e) {
        r = failed(r, e), ++errors;
      }
      j["wide"].push_back(r);
      save();
    }
    if (tall)
      for (ce::Model m : {ce::Model::deterministic, ce::Model::stochastic})
        for (uint32_t reps : quick || m == ce::Model::stochastic
                                 ? std::vector<uint32_t>{100000}
                                 : std::vector<uint32_t>{100000, 1000000}) {
          nlohmann::json r = {{"sources", 4}, {"replications", reps}, {"model", ce::to_string(m)}};
          try {
            r = run_tall(reps, m);
          } catch (const std::exception& e) {
            r = failed(r, e), ++errors;
          }
          j["tall"].push_back(r);
          save();
        }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gpu: %s\n", e.what());
    return 1;
  }
  if (errors) std::fprintf(stderr, "bench_gpu: %d case(s) failed (see above)\n", errors);
  return errors ? 1 : 0;
}
