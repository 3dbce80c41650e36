// Host side of the GPU's windowed radix select (include/crawleval/select/window_select.hpp; the
// device code is in select_device.cuh): its device memory, the launchers of the kernels every
// engine shares, and a standalone selector over a key array for tests and benchmarks.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "crawleval/model/selection.hpp"
#include "crawleval/select/window_select.hpp"
#include "device_buffer.cuh"
#include "select_device.cuh"

namespace crawleval::cuda::detail {

/// Device memory of the selection for up to n sources; view() is what kernels take.
class SelectStorage {
 public:
  /// scoring_blocks: blocks of the scoring pass (one tie-weight segment each); step_blocks: of the
  /// step kernels. limit: the fixed-point budget.
  void prepare(std::size_t n, bool unit, uint32_t scoring_blocks, uint32_t step_blocks,
               uint64_t limit, cudaStream_t stream);
  /// A replication's first state: the given plan, cleared histograms and counts; the diagnostics
  /// of earlier replications are kept.
  void reset(const window::Plan& plan, cudaStream_t stream);
  void set_limit(uint64_t limit) { sb_.limit = limit; }
  const SelectBuffers& view() const { return sb_; }
  /// Copies the state to the host (synchronises the stream).
  window::SelectState download_state(cudaStream_t stream) const;
  /// Device bytes prepare() allocates, exactly (the lists, the compaction and gather buffers, the
  /// tie weights per tile and per block, histograms, state).
  static std::size_t device_bytes(std::size_t n, bool unit, uint32_t scoring_blocks,
                                  uint32_t step_blocks);

 private:
  SelectBuffers sb_;
  DeviceBuffer<window::SelectState> state_;
  DeviceBuffer<unsigned long long> hist_, tile_w_, seg_w_, list_w_[4];
  DeviceBuffer<uint64_t> list_key_[4], first_key_;
  DeviceBuffer<uint32_t> list_id_[4];
  DeviceBuffer<window::Rank> part_;
  DeviceBuffer<unsigned int> done_;
};

/// Enqueues the kGridSteps step kernels of one epoch (steps 3-4).
void launch_steps(const SelectBuffers& sb, uint32_t blocks, cudaStream_t stream);
/// Enqueues the mark kernel (after the selection): the listed sources' classes, as bytes in
/// `cls` or as bits of the deterministic state words (`words`; then cls is unused).
void launch_mark(const SelectBuffers& sb, uint8_t* cls, uint32_t* words, uint32_t blocks,
                 cudaStream_t stream);

/// The selection of one epoch over keys already on the device, with the same kernels as the
/// engine (the scoring pass reads the keys instead of computing them). For tests and benchmarks.
class DeviceWindowSelector {
 public:
  void prepare(std::size_t n, bool unit, uint64_t limit, cudaStream_t stream);
  void set_limit(uint64_t limit) { storage_.set_limit(limit); }
  /// Replaces the plan (and starts from a clean state).
  void reset(const window::Plan& plan, cudaStream_t stream) { storage_.reset(plan, stream); }
  /// Enqueues one epoch; weight == nullptr: unit costs. Returns the kernels launched.
  int enqueue(const uint64_t* keys, const unsigned long long* weight, cudaStream_t stream);
  /// The state after the enqueued epochs (synchronises).
  window::SelectState state(cudaStream_t stream) const { return storage_.download_state(stream); }
  /// Each source's class after the last epoch (synchronises).
  std::vector<uint8_t> classes(cudaStream_t stream) const;

 private:
  SelectStorage storage_;
  DeviceBuffer<uint8_t> cls_;
  std::size_t n_ = 0;
  uint32_t scoring_blocks_ = 1, step_blocks_ = 1;
  bool unit_ = true;
};

/// Blocks that keep every SM busy for a kernel of kThreads threads (occupancy from the compiled
/// kernel), capped at `work` blocks.
uint32_t resident_blocks(const void* kernel, uint64_t work);

}  // namespace crawleval::cuda::detail
