// The wide regime's host orchestration: every epoch of every replication enqueued without a host
// round trip (the epoch kernel, then the selection's kernels: select_device.cuh), one
// synchronisation at the end. Columns are passed in already on the device, so benchmarks can
// generate a population on the GPU.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "crawleval/engine/cuda_backend.hpp"
#include "crawleval/engine/rollout.hpp"
#include "crawleval/model/selection.hpp"
#include "crawleval/select/window_select.hpp"
#include "device_buffer.cuh"
#include "dormant_pass.cuh"
#include "epoch_kernels.cuh"
#include "window_select.cuh"

namespace crawleval::cuda::detail {

struct WideSetup {
  RunConfig config;
  Policy policy = Policy::whittle;
  bool unit_costs = true;
  FixedBudget budget;
  DeviceColumns columns;              ///< on the device, owned by the caller
  const double* initial_x = nullptr;  ///< stochastic model, generic pass: initial states (device);
                                      ///< nullptr: 0
  /// The generic pass (generic_pass.cuh) instead of the fused ones: its columns and settings and
  /// the initial AgeState words, in device memory. nullptr: the fused passes.
  const GenericPass* generic = nullptr;
  const uint32_t* initial_w = nullptr;
  /// A policy given as a function (with `generic`): two launches per epoch around its call
  /// (WideEngine::function_epoch). nullptr: a built-in policy.
  const DeviceScoreFn* fn = nullptr;
  /// Plan of each replication's first epoch (sample_first_plan); a poor one costs a fallback.
  window::Plan first_plan;
  const Problem* host_problem = nullptr;  ///< needed only for observers (host-side states)
  uint64_t first_id = 0;                  ///< Problem::first_id: source i draws as first_id + i
  /// Sleeping sources (dormant_pass.cuh): kDormantOff, kDormantOn or kDormantEager (tests: sleep
  /// at every epoch that can). dormant_setting() gives what a run may use.
  int dormant = 0;
};

inline constexpr int kDormantOff = 0, kDormantOn = 1, kDormantEager = 2;

/// Whether a wide run sleeps sources: the deterministic Whittle or greedy fused pass from an empty
/// or fresh start (every state on the index grid), without an observer, and CRAWLEVAL_DORMANT says
/// so. Unset, it is off on the GPU until a device run has checked the live pass
/// (docs/gpu-design.md); eager turns it on with a sleep at every epoch that can, 0 (off, false)
/// keeps it off, and any other value (1, on) turns it on, as on the CPU.
int dormant_setting(const WideSetup& setup, bool observed);

/// Device bytes of the columns wide_rollout uploads for n sources (the model's parameters, the
/// costs, the initial states).
std::size_t wide_column_bytes(std::size_t n, Model model, bool unit_costs, Start start);

/// Throws InputError when `bytes` do not fit in the device's free memory.
void require_device_memory(std::size_t bytes, const std::string& what);

/// Sources whose scores make a first plan (sample_first_plan; a score function's first scores).
inline constexpr std::size_t kPlanSample = 4096;

/// The first epoch's plan from a sample of at most kPlanSample sources: score_and_cost(i) gives
/// source i's score at epoch 0 and its cost (computed on the host; the device's scores may differ
/// in the last bit, which only moves the window a little).
window::Plan sample_first_plan(uint64_t n, const FixedBudget& budget, bool unit_costs,
                               const std::function<std::pair<double, double>(uint64_t)>& source);

class WideEngine {
 public:
  /// Allocates the engine's buffers after checking that device_bytes(setup) fit (InputError).
  WideEngine(const WideSetup& setup, cudaStream_t stream);
  /// Device bytes the engine allocates, exactly (states, classes, partial sums, the selection's
  /// storage; with an observer, a key per source). The columns are the caller's.
  static std::size_t device_bytes(const WideSetup& setup, bool observed = false);
  /// Runs every replication. loop_seconds and steady_seconds come from CUDA events; the host
  /// waits on the device once (plus once per epoch with an observer).
  RolloutOutput run(const EpochObserver* observer);
  /// Kernels enqueued per scored epoch.
  int launches_per_epoch() const;

 private:
  struct Grid {
    uint32_t blocks, step_blocks;
  };
  static Grid grid(const WideSetup& setup);
  void observe(uint32_t rep, uint64_t t, const EpochObserver& observer, RolloutOutput& out);
  /// A replication's initial states and classes; returns the kernels it launched.
  uint64_t start_replication();
  /// Epoch a.now_epoch of a built-in policy: the scoring pass, then the selection; returns the
  /// kernels launched.
  uint64_t enqueue_epoch(const EpochLaunch& a);
  /// The selection's kernels after a scoring pass (from_array: a score function's scores).
  void enqueue_select(const EpochLaunch& a, bool from_array);
  /// Epoch t of a score function: the moving pass, a wait, the function's call, a wait for the
  /// device, at t = 0 the first plan from its scores, then the scoring pass over its scores and
  /// the selection; returns the kernels launched.
  uint64_t function_epoch(EpochLaunch& a, uint64_t t);
  WideSetup s_;
  cudaStream_t stream_;
  std::unique_ptr<DormantPass> dormant_;  ///< with sleeping sources (s_.dormant)
  std::size_t n_;
  bool det_;
  bool generic_;   ///< the generic pass: x, AgeState words and class bytes
  bool words_;     ///< the deterministic fused passes: state words with the class in their bits
  bool arrivals_;  ///< the stochastic fused passes: the arrivals kernel before each apply
  uint32_t blocks_ = 1, step_blocks_ = 1, mark_blocks_ = 1, arrival_blocks_ = 1;
  DeviceBuffer<uint32_t> age_;
  DeviceBuffer<double> x_;
  DeviceBuffer<uint8_t> cls_;
  DeviceBuffer<uint32_t> arrival_flags_;  ///< the fused stochastic pass's (wide_arrivals.hpp)
  DeviceBuffer<double> arrival_sums_;
  DeviceBuffer<uint64_t> keys_;
  DeviceBuffer<double2> partial_;
  DeviceBuffer<double> epoch_reward_, epoch_cost_, sums_;
  DeviceBuffer<double> seen_, seen_age_, collected_, scores_;  ///< a score function's arrays
  DeviceBuffer<double> sample_;  ///< its first scores at the first plan's sample of sources
  SelectStorage storage_;
};

}  // namespace crawleval::cuda::detail
