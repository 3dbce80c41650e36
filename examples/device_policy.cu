// Your own policy on the GPU, in C++: a DeviceScoreFn (include/crawleval/engine/cuda_backend.hpp)
// whose kernel scores every source from the device arrays the engine hands it, run by
// cuda::function_rollout on a synthetic population beside the built-in policy it reimplements.
// The engine moves every source, calls the function once per epoch, and selects on its scores, so
// a function that computes greedy's scores crawls greedy's sets: the two rewards agree.
//
//   cmake --build build --target example_device_policy
//   build/example_device_policy [sources]        (exit code 77: no usable GPU)
//
// From Python the same policy is a function of CuPy or PyTorch arrays (docs/python.md, "Your
// policy on the GPU").
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "crawleval/engine/cuda_backend.hpp"
#include "crawleval/model/population.hpp"
#include "crawleval/model/problem.hpp"

namespace ce = crawleval;

// Greedy: the content waiting at a source per unit of its cost. `state` is what the policy
// observes (the state itself under full observation); `age` the epochs since the source's last
// crawl. Scores: higher first, ties by lower id, NaN last, as for every policy.
__global__ void greedy_scores(const double* state, const double* inv_cost, double* scores,
                              std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    scores[i] = __dmul_rn(state[i], inv_cost[i]);
}

int main(int argc, char** argv) {
  if (ce::cuda::device_count() == 0) {
    std::printf("no usable GPU (%s)\n", ce::cuda::device_unavailable_reason().c_str());
    return 77;
  }
  const std::size_t n = argc > 1 ? std::stoull(argv[1]) : 1000000;
  const ce::Population pop = ce::synthetic_population(n, 1, ce::SyntheticCosts::lognormal);
  ce::RunConfig cfg;
  cfg.budget = double(n) / 100.0;
  cfg.model = ce::Model::stochastic;
  cfg.epochs = 50;
  cfg.burn_in = 50;
  cfg.replications = 2;
  const ce::Problem pr = ce::make_problem(pop, cfg);

  // The policy's own data, on the device once: 1 / cost per source.
  std::vector<double> inv_cost(n);
  for (std::size_t i = 0; i < n; ++i) inv_cost[i] = 1.0 / pop.cost_of(i);
  double* d_inv_cost = nullptr;
  if (cudaMalloc(&d_inv_cost, n * sizeof(double)) != cudaSuccess ||
      cudaMemcpy(d_inv_cost, inv_cost.data(), n * sizeof(double), cudaMemcpyHostToDevice) !=
          cudaSuccess) {
    std::printf("device memory: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  // The function: its kernel may run on any stream (the engine waits for the device after the
  // call); it fills q.scores (or points *q.borrowed at scores of its own).
  const ce::cuda::DeviceScoreFn mine = [&](const ce::cuda::DeviceScoreRequest& q) {
    greedy_scores<<<1024, 256>>>(q.state, d_inv_cost, q.scores, q.n);
  };
  const ce::RolloutOutput a = ce::cuda::function_rollout(pr, mine, "my_greedy");
  const ce::RolloutOutput b = ce::cuda::rollout(pr, ce::Policy::greedy);
  cudaFree(d_inv_cost);
  bool same = true;
  for (std::size_t r = 0; r < b.replication_reward.size(); ++r) {
    std::printf("replication %zu: my_greedy %.9g, built-in greedy %.9g\n", r,
                a.replication_reward[r], b.replication_reward[r]);
    same &= std::fabs(a.replication_reward[r] - b.replication_reward[r]) <=
            1e-10 * std::fabs(b.replication_reward[r]);
  }
  std::printf("%s (device time %.3f s and %.3f s)\n",
              same ? "the same policy: rewards agree" : "REWARDS DIFFER", a.loop_seconds,
              b.loop_seconds);
  return same ? 0 : 1;
}
