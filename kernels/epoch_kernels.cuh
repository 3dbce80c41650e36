// The fused epoch kernel of the wide regime (one replication, the whole population).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "crawleval/problem.hpp"
#include "crawleval/selection.hpp"
#include "radix_select.cuh"

namespace crawleval::cuda::detail {

/// Per-source columns on the device. Only what the (model, costs, start) combination reads is
/// uploaded; the rest stays nullptr.
struct DeviceColumns {
  std::size_t n = 0;
  const double* mu_t = nullptr;                ///< always
  const double* u_star = nullptr;              ///< always
  const double* alpha = nullptr;               ///< stochastic model
  const double* om_alpha = nullptr;            ///< stochastic model
  const double* lambda_t = nullptr;            ///< stochastic model
  const double* xi = nullptr;                  ///< stochastic model
  const double* inv_cost = nullptr;            ///< non-unit costs
  const double* cost = nullptr;                ///< non-unit costs
  const unsigned long long* weight = nullptr;  ///< non-unit costs (fixed point)
  const double* x0 = nullptr;                  ///< deterministic model, start "given"
};

struct EpochLaunch {
  DeviceColumns src;
  uint32_t* age = nullptr;  ///< deterministic model: AgeState words
  double* x = nullptr;      ///< stochastic model: states
  uint64_t* keys = nullptr;
  SelectState* select = nullptr;               ///< receives the coarse histogram
  Selection prev;                              ///< epoch prev_epoch's selection (when apply)
  uint64_t pointer_prev = 0, pointer_now = 0;  ///< round robin
  uint32_t prev_epoch = 0, now_epoch = 0;
  bool apply = false;  ///< apply prev's selection: reward, transition
  bool score = false;  ///< score now_epoch: keys, histogram
  uint32_t replication = 0;
  uint64_t seed = 0;
  UtilityDist utility = UtilityDist::exponential;
  double* block_reward = nullptr;  ///< one partial sum per block (when apply)
  double* block_cost = nullptr;
};

inline constexpr int kEpochThreads = 256;

/// Blocks the epoch kernel uses for n sources (the length of the partial-sum arrays).
int epoch_blocks(std::size_t n);

void launch_epoch(Policy policy, Model model, bool unit_costs, const EpochLaunch& args,
                  cudaStream_t stream);

}  // namespace crawleval::cuda::detail
