// Sleeping sources in the wide engine's deterministic pass (the contract and the per-thread logic:
// include/crawleval/engine/wide_dormant.hpp; the bytes: docs/gpu-design.md, "Sleeping
// sources"). The live pass replaces the pass over every source while sources sleep; flushes
// wake them where a kernel reads every source by id; a decision at the end of each selection and
// a sleep kernel put them to sleep. Every kernel here returns at once when it has nothing to do,
// so an epoch is enqueued without knowing which will work.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "crawleval/engine/wide_dormant.hpp"
#include "device_buffer.cuh"
#include "epoch_kernels.cuh"

namespace crawleval::cuda::detail {

static_assert(wide::kLanes == uint32_t(kThreads), "the live layout is the scoring grid's");
static_assert(wide::kPerTile == uint32_t(kItems), "the live layout is the scoring grid's");
static_assert(wide::kClassShift == kClassBitsShift, "the class bits of a state word");

/// The live sources' columns and the sleeping sources' state, on the device.
struct DormantLaunch {
  wide::DormantState* state = nullptr;
  wide::Geometry g;
  uint32_t* len = nullptr;        ///< live sources per thread of the scoring grid
  uint32_t* block_len = nullptr;  ///< per block: its threads' longest list
  uint32_t* word = nullptr;       ///< live state words, in slots
  uint32_t* pos = nullptr;        ///< each live source's position in its thread's order
  double* mu_t = nullptr;         ///< copies of the live sources' columns, in slots
  double* u_star = nullptr;
  double* cost = nullptr;                        ///< with costs
  unsigned long long* recount_count = nullptr;   ///< kBins, zero between uses
  unsigned long long* recount_weight = nullptr;  ///< kBins, with costs
  unsigned long long* sums = nullptr;            ///< the sleep kernel's totals, zero between uses
  unsigned int* done = nullptr;                  ///< last-block tickets: [0] flush, [1] sleep
};

/// Kernels a scored epoch adds with sleeping sources on: the live pass, three flushes, the
/// decision and the sleep kernel.
inline constexpr int kDormantLaunches = 6;

/// The device buffers of the sleeping sources of one wide engine.
class DormantPass {
 public:
  /// Device bytes for n sources and a scoring grid of `blocks` blocks.
  static std::size_t device_bytes(std::size_t n, bool unit, uint32_t blocks);
  DormantPass(std::size_t n, bool unit, uint32_t blocks, bool eager, cudaStream_t stream);
  const DormantLaunch& view() const { return v_; }
  /// A replication starts with every source awake (the counters stay).
  void start_replication(cudaStream_t stream);
  /// The state (counters), after the stream's work.
  wide::DormantState download(cudaStream_t stream);

 private:
  DormantLaunch v_;
  DeviceBuffer<wide::DormantState> state_;
  DeviceBuffer<uint32_t> len_, block_len_, word_, pos_;
  DeviceBuffer<double> mu_t_, u_star_, cost_;
  DeviceBuffer<unsigned long long> recount_, sums_;
  DeviceBuffer<unsigned int> done_;
};

/// The live pass (epoch a.now_epoch; returns unless sources sleep): the whittle and greedy
/// policies of the deterministic model.
void launch_live_epoch(Policy policy, bool unit, const EpochLaunch& a, const DormantLaunch& d,
                       uint32_t blocks, cudaStream_t stream);
/// The flush at `point` (returns unless wide::flush_due), with the recount after the scoring pass.
void launch_flush(Policy policy, bool unit, const EpochLaunch& a, const DormantLaunch& d,
                  wide::Point point, uint32_t blocks, cudaStream_t stream);
/// wide::decide at the end of the selection.
void launch_decide(const EpochLaunch& a, const DormantLaunch& d, cudaStream_t stream);
/// Puts sources to sleep (returns unless decided).
void launch_sleep(Policy policy, bool unit, const EpochLaunch& a, const DormantLaunch& d,
                  uint32_t blocks, cudaStream_t stream);

}  // namespace crawleval::cuda::detail
