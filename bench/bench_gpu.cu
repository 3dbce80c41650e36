// GPU benchmarks (not tests: nothing here asserts a time).
//
//  wide: source-epochs per second of one epoch of the Whittle policy (fused epoch kernel + radix
//        select) for N in {1e6, 1e7, 1e8, 1e9}, M/N in {0.1%, 1%, 10%}, both models. The population
//        is generated on the device (synthetic.hpp), so 1e9 sources need no host memory. Each
//        figure is printed next to a measured roofline: a copy kernel that reads and writes the
//        same number of bytes per source as the epoch does, on the same device.
//  tall: replications per second of the papers' 4-source example (one thread per replication).
//
// Usage: bench_gpu [--quick] [--json FILE]. Times come from CUDA events around the epoch loop,
// after a warm-up epoch.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "crawleval/cuda_backend.hpp"
#include "crawleval/driver.hpp"
#include "crawleval/io.hpp"
#include "crawleval/synthetic.hpp"
#include "device_buffer.cuh"
#include "launch.cuh"
#include "tall_kernels.cuh"
#include "wide_engine.cuh"

namespace ce = crawleval;
namespace cd = crawleval::cuda::detail;

namespace {

__global__ void generate_columns(uint64_t seed, std::size_t n, double* mu_t, double* u_star,
                                 double* alpha, double* om_alpha, double* lambda_t, double* xi,
                                 double* x0) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const ce::SyntheticSource s = ce::synthetic_source(seed, i, false);
    const ce::SourceParams p = ce::derive_params(s.lambda, s.xi, s.mu, 1.0, 1.0);
    mu_t[i] = p.mu_t;
    u_star[i] = p.u_star;
    if (alpha) {
      alpha[i] = p.alpha, om_alpha[i] = p.om_alpha, lambda_t[i] = p.lambda_t, xi[i] = p.xi;
      x0[i] = 0.0;  // start empty
    }
  }
}

// The roofline: read `read_words` and write `write_words` 4-byte words per item, as a stream.
__global__ void copy_kernel(const uint32_t* __restrict__ in, uint32_t* __restrict__ out,
                            std::size_t n, int read_words, int write_words) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    uint32_t acc = 0;
    for (int w = 0; w < read_words; ++w) acc ^= in[std::size_t(w) * n + i];
    for (int w = 0; w < write_words; ++w) out[std::size_t(w) * n + i] = acc + uint32_t(w);
  }
}

/// Seconds per copy of n items with the given words per item (best of 5). Above 2^27 items the
/// copy runs on 2^27 and is scaled: bandwidth is flat at that size, and 1e9 sources leave no room
/// for another 40 GB.
double roofline_seconds(std::size_t n_total, int read_words, int write_words, cudaStream_t s) {
  const std::size_t n = std::min<std::size_t>(n_total, std::size_t(1) << 27);
  const double scale = double(n_total) / double(n);
  cd::DeviceBuffer<uint32_t> in(n * read_words), out(n * write_words);
  in.zero(s);
  cudaEvent_t a, b;
  CE_CUDA_TRY(cudaEventCreate(&a));
  CE_CUDA_TRY(cudaEventCreate(&b));
  float best = 1e30f;
  for (int rep = 0; rep < 6; ++rep) {
    CE_CUDA_TRY(cudaEventRecord(a, s));
    copy_kernel<<<cd::grid_for(n, 256), 256, 0, s>>>(in.data(), out.data(), n, read_words,
                                                     write_words);
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
};

nlohmann::json run_wide(const WideCase& c, cudaStream_t s) {
  const bool det = c.model == ce::Model::deterministic;
  nlohmann::json j = {{"n", c.n},
                      {"budget_fraction", c.fraction},
                      {"model", ce::to_string(c.model)},
                      {"policy", "whittle"}};
  const std::size_t per_source =
      cd::wide_bytes_per_source(c.model, true, ce::Start::empty) + (det ? 0 : 0);
  try {
    cd::require_device_memory(c.n * per_source, std::to_string(c.n) + " sources");
  } catch (const ce::InputError& e) {
    j["skipped"] = e.what();
    std::printf("  wide %-13s N=%-11zu M/N=%-5.3g%%  skipped: %s\n", ce::to_string(c.model), c.n,
                100 * c.fraction, e.what());
    return j;
  }
  cd::DeviceBuffer<double> mu_t(c.n), u_star(c.n), alpha, om_alpha, lambda_t, xi, x0;
  if (!det)
    alpha.resize(c.n), om_alpha.resize(c.n), lambda_t.resize(c.n), xi.resize(c.n), x0.resize(c.n);
  generate_columns<<<cd::grid_for(c.n, 256), 256, 0, s>>>(1, c.n, mu_t.data(), u_star.data(),
                                                          alpha.data(), om_alpha.data(),
                                                          lambda_t.data(), xi.data(), x0.data());
  CE_CUDA_CHECK_LAUNCH();
  cd::WideSetup setup;
  setup.config.budget = std::max(1.0, std::floor(double(c.n) * c.fraction));
  setup.config.model = c.model;
  setup.config.start = ce::Start::empty;
  setup.config.burn_in = 1;  // the first epochs run from empty sources; one is the warm-up
  setup.config.epochs = det ? (c.n >= 1000000000 ? 5 : 20) : (c.n >= 100000000 ? 3 : 8);
  setup.config.replications = 1;
  setup.policy = ce::Policy::whittle;
  setup.unit_costs = true;
  setup.budget = ce::fixed_budget(setup.config.budget, double(c.n), true);
  setup.columns.n = c.n;
  setup.columns.mu_t = mu_t.data();
  setup.columns.u_star = u_star.data();
  if (!det) {
    setup.columns.alpha = alpha.data(), setup.columns.om_alpha = om_alpha.data();
    setup.columns.lambda_t = lambda_t.data(), setup.columns.xi = xi.data();
    setup.initial_x = x0.data();
  }
  // Warm-up run (first use of every kernel), then the measured one.
  {
    cd::WideSetup warm = setup;
    warm.config.epochs = 1;
    warm.config.burn_in = 0;
    cd::WideEngine(warm, s).run(nullptr);
  }
  ce::RolloutOutput out;
  {
    cd::WideEngine engine(setup, s);
    out = engine.run(nullptr);
  }
  for (auto* b : {&mu_t, &u_star, &alpha, &om_alpha, &lambda_t, &xi, &x0}) b->resize(0);
  const double epochs = double(setup.config.epochs + setup.config.burn_in);
  const double epoch_s = out.loop_seconds / epochs;
  // Bytes per source and epoch: epoch kernel (deterministic: age 4 + mu_t 8 + u_star 8 read,
  // age 4 + key 8 written; stochastic: x 8 + six columns 48 read, x 8 + key 8 written) and the
  // candidate compaction (key 8 read).
  const int read_words = det ? (4 + 8 + 8 + 8) / 4 : (8 + 48 + 8) / 4;
  const int write_words = det ? (4 + 8) / 4 : (8 + 8) / 4;
  const double copy_s = roofline_seconds(c.n, read_words, write_words, s);
  const double bytes = double(c.n) * 4.0 * (read_words + write_words);
  j["epochs_timed"] = epochs;
  j["ms_per_epoch"] = epoch_s * 1e3;
  j["source_epochs_per_second"] = double(c.n) / epoch_s;
  j["bytes_per_source"] = 4 * (read_words + write_words);
  j["achieved_gb_per_second"] = bytes / epoch_s / 1e9;
  j["copy_roofline_ms"] = copy_s * 1e3;
  j["copy_roofline_gb_per_second"] = bytes / copy_s / 1e9;
  j["fraction_of_roofline"] = copy_s / epoch_s;
  j["mean_reward"] = out.replication_reward[0];
  std::printf(
      "  wide %-13s N=%-11zu M/N=%-5.3g%%  %9.3f ms/epoch  %8.3g src-epochs/s  "
      "%6.1f GB/s  roofline %7.3f ms (%5.1f%%)\n",
      ce::to_string(c.model), c.n, 100 * c.fraction, epoch_s * 1e3, double(c.n) / epoch_s,
      bytes / epoch_s / 1e9, copy_s * 1e3, 100 * copy_s / epoch_s);
  std::fflush(stdout);
  return j;
}

nlohmann::json run_tall(uint32_t reps, ce::Model model, cudaStream_t) {
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
  std::printf(
      "  tall %-13s 4 sources, R=%-8u H=%-5llu  %8.3f s  %10.4g replications/s  "
      "(%.4g source-epochs/s)\n",
      ce::to_string(model), reps, (unsigned long long)cfg.epochs, out.loop_seconds, rps,
      rps * 4.0 * double(cfg.epochs));
  std::fflush(stdout);
  return {{"sources", 4},
          {"replications", reps},
          {"epochs", cfg.epochs},
          {"model", ce::to_string(model)},
          {"seconds", out.loop_seconds},
          {"replications_per_second", rps},
          {"replication_epochs_per_second", rps * double(cfg.epochs)}};
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  std::string json_path;
  for (int k = 1; k < argc; ++k) {
    if (!std::strcmp(argv[k], "--quick"))
      quick = true;
    else if (!std::strcmp(argv[k], "--json") && k + 1 < argc)
      json_path = argv[++k];
    else {
      std::fprintf(stderr, "usage: bench_gpu [--quick] [--json FILE]\n");
      return 2;
    }
  }
  if (ce::cuda::device_count() == 0) {
    std::fprintf(stderr, "bench_gpu: no CUDA device\n");
    return 2;
  }
  try {
    cd::Stream s;
    nlohmann::json j;
    j["device"] = ce::cuda::device_description();
    std::printf("device: %s\n", j["device"].get<std::string>().c_str());
    std::vector<WideCase> cases;
    const std::vector<std::size_t> sizes =
        quick ? std::vector<std::size_t>{1000000, 10000000}
              : std::vector<std::size_t>{1000000, 10000000, 100000000, 1000000000};
    for (ce::Model m : {ce::Model::deterministic, ce::Model::stochastic})
      for (std::size_t n : sizes)
        for (double f : {0.001, 0.01, 0.1}) cases.push_back({n, f, m});
    nlohmann::json wide = nlohmann::json::array();
    for (const WideCase& c : cases) wide.push_back(run_wide(c, s));
    j["wide"] = wide;
    nlohmann::json tall = nlohmann::json::array();
    for (ce::Model m : {ce::Model::deterministic, ce::Model::stochastic})
      for (uint32_t r : quick || m == ce::Model::stochastic
                            ? std::vector<uint32_t>{100000}
                            : std::vector<uint32_t>{100000, 1000000})
        tall.push_back(run_tall(r, m, s));
    j["tall"] = tall;
    if (!json_path.empty()) std::ofstream(json_path) << j.dump(2) << "\n";
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gpu: %s\n", e.what());
    return 1;
  }
  return 0;
}
