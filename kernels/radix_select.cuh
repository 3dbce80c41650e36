// Exact budgeted top-M selection on the GPU (the contract is in include/crawleval/selection.hpp).
// The algorithm is documented step by step in radix_select.cu.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "crawleval/selection.hpp"
#include "device_buffer.cuh"

namespace crawleval::cuda::detail {

/// Largest candidate set resolved by one block (256 threads x 16 keys).
inline constexpr int kResolveThreads = 256;
inline constexpr int kResolveItems = 16;
inline constexpr int kResolveMax = kResolveThreads * kResolveItems;

/// Device-resident state of one selection. The epoch kernel adds the coarse histogram into
/// count/weight; the selector does the rest.
struct BoundaryInfo {
  unsigned long long above = 0;       ///< fixed-point cost of every source before the boundary bin
  unsigned long long candidates = 0;  ///< sources in the boundary bin
  int boundary = -1;                  ///< boundary bin; -1: everything fits; -2: internal error
  int pad = 0;
  uint64_t reserved_a = 0, reserved_b = 0;
};

struct SelectState {
  unsigned long long count[kBins];   ///< sources per bin
  unsigned long long weight[kBins];  ///< fixed-point cost per bin (unused with unit costs)
  BoundaryInfo info;
  Selection selection;  ///< the result
};

/// Host-side driver of the selection steps; allocates everything in prepare().
class DeviceSelector {
 public:
  /// n: largest population; unit: unit costs (no weight array).
  void prepare(std::size_t n, bool unit, cudaStream_t stream);
  SelectState* state() { return state_.data(); }
  /// Zeroes the coarse histogram (before the kernel that fills it).
  void clear_histogram(cudaStream_t stream);
  /// Steps 2-7 after the coarse histogram of `keys` is in state(). weight == nullptr: unit costs.
  /// Returns the selection (also left in state()->selection for the next kernel).
  Selection finish(const uint64_t* keys, const unsigned long long* weight, std::size_t n,
                   unsigned long long limit, cudaStream_t stream);
  /// Step 1 as a standalone pass (the rollout fuses it into the epoch kernel).
  void build_histogram(const uint64_t* keys, const unsigned long long* weight, std::size_t n,
                       cudaStream_t stream);

 private:
  std::size_t select_candidates(const uint32_t* in, std::size_t n, uint32_t* out,
                                const uint64_t* keys, int level, uint32_t digit, uint64_t lo,
                                uint64_t hi, cudaStream_t stream);
  DeviceBuffer<SelectState> state_;
  DeviceBuffer<uint32_t> cand_a_, cand_b_;
  DeviceBuffer<unsigned long long> scan_;  // weights prefix sums for the all-ties case
  DeviceBuffer<unsigned long long> num_selected_;
  DeviceBuffer<unsigned char> temp_;
  bool unit_ = true;
};

/// The slower second implementation to test against: cub::DeviceRadixSort of every (key, id)
/// pair, then the prefix walk. Allocates; for tests and benchmarks only.
Selection select_by_full_sort(const uint64_t* keys, const unsigned long long* weight, std::size_t n,
                              unsigned long long limit, cudaStream_t stream);

}  // namespace crawleval::cuda::detail
