// The tall regime: many replications of a small population, one thread per replication.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "crawleval/model/problem.hpp"

namespace crawleval::cuda::detail {

/// Largest population the tall kernel takes (its per-thread arrays live in local memory).
inline constexpr int kTallMaxSources = 64;

struct TallLaunch {
  int n = 0;
  const SourceParams* params = nullptr;        ///< n entries (device)
  const double* cost = nullptr;                ///< n entries (device)
  const unsigned long long* weight = nullptr;  ///< n integer costs (device; selection.hpp)
  const double* x0 = nullptr;                  ///< n initial states (device)
  const uint32_t* age0 = nullptr;              ///< n initial AgeState words (device)
  const uint32_t* period = nullptr;  ///< n relaxed periods (device): static and lip policies only
  const double* gain = nullptr;      ///< n relaxed gains (device): lip policy only
  double multiplier = 0.0;           ///< lip's lambda*
  Observe observe = Observe::full;
  uint32_t first_replication = 0;
  Policy policy = Policy::whittle;
  Model model = Model::deterministic;
  UtilityDist utility = UtilityDist::exponential;
  unsigned long long limit = 0;  ///< the budget in weight units (FixedBudget::limit)
  uint32_t replications = 0;
  uint64_t burn_in = 0, epochs = 0;
  uint64_t seed = 0;
  /// Source i draws as id first_id + i (32-bit: every id has the same high half, whose key
  /// draw_key derived into `seed`; cuda_backend.cu)
  uint32_t first_id = 0;
  double* replication_reward = nullptr;  ///< R entries: sum over measured epochs
  double* replication_cost = nullptr;    ///< R entries
  double* epoch_reward = nullptr;        ///< replication 0's reward per measured epoch (H entries)
};

void launch_tall(const TallLaunch& args, cudaStream_t stream);

}  // namespace crawleval::cuda::detail
