// The wide regime's host orchestration: for each replication and epoch, the fused epoch kernel
// (epoch_kernels.cu) and the radix select (radix_select.cu). Columns are passed in already on the
// device, so benchmarks can generate a population on the GPU.
#pragma once

#include <cuda_runtime.h>

#include <memory>

#include "crawleval/rollout.hpp"
#include "device_buffer.cuh"
#include "epoch_kernels.cuh"
#include "radix_select.cuh"

namespace crawleval::cuda::detail {

struct WideSetup {
  RunConfig config;
  Policy policy = Policy::whittle;
  bool unit_costs = true;
  FixedBudget budget;
  DeviceColumns columns;                  ///< on the device, owned by the caller
  const double* initial_x = nullptr;      ///< stochastic model: initial states (device)
  const Problem* host_problem = nullptr;  ///< needed only for observers (host-side states)
};

/// Device bytes the wide regime needs per source (columns, state, keys, selection buffers).
std::size_t wide_bytes_per_source(Model model, bool unit_costs, Start start);

/// Throws InputError when `bytes` do not fit in the device's free memory.
void require_device_memory(std::size_t bytes, const std::string& what);

class WideEngine {
 public:
  WideEngine(const WideSetup& setup, cudaStream_t stream);
  /// Runs every replication. loop_seconds is measured with CUDA events around the epoch loops.
  RolloutOutput run(const EpochObserver* observer);

 private:
  void observe(uint32_t rep, uint64_t t, const Selection& sel, const EpochObserver& observer);
  WideSetup s_;
  cudaStream_t stream_;
  std::size_t n_;
  int blocks_;
  DeviceBuffer<uint32_t> age_;
  DeviceBuffer<double> x_;
  DeviceBuffer<uint64_t> keys_;
  DeviceBuffer<double> block_reward_, block_cost_, epoch_reward_, epoch_cost_;
  DeviceBuffer<unsigned char> reduce_temp_;
  DeviceSelector selector_;
};

}  // namespace crawleval::cuda::detail
