// O(N) budgeted selection on the CPU: a radix select over the 64-bit order-preserving score keys.
// The CPU backend's selection. The GPU uses the windowed variant of the same radix select
// (include/crawleval/window_select.hpp), which adds a window predicted by the previous epoch.
//
//  1. Coarse histogram of coarse_bin(key) (selection.hpp: 11 bits, four bins per octave of the
//     score), weighted by cost. The caller builds it while it computes the scores (one histogram
//     per thread, merged here).
//  2. Walk the bins from the highest: every bin whose cumulative cost still fits is crawled whole;
//     the first bin that overflows (the boundary) holds the stop source.
//  3. Collect the ids in the boundary bin (ascending, because every thread scans its own contiguous
//     range in order).
//  4. While there are many candidates, histogram an 11-bit digit of the 64-bit key among them,
//     from the top (digits 0..5 cover all 64 bits), and narrow to the new boundary bin.
//  5. Sort the few candidates by key (stable: ids stay ascending within equal keys) and walk them
//     with the remaining budget; the first one that does not fit is the stop source. Candidates
//     that all share one key (seen in step 3, or left after all six levels) are already in order.
// If the histogram sums and the sequential walk disagree by rounding (cost-weighted budgets only)
// and the walk does not stop, it falls back to a full sort: exact in every case.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "crawleval/selection.hpp"

namespace crawleval::detail {

class RadixSelector {
 public:
  /// Allocates everything for up to n sources and `threads` threads (outside the epoch loop).
  void prepare(std::size_t n, int threads);
  /// Zeroes the per-thread level-0 histograms.
  void begin_epoch();
  /// The coarse histogram of thread t (kBins cost sums, indexed by coarse_bin).
  double* histogram(int t) { return hist_.data() + std::size_t(t) * kBins; }
  /// Steps 2-5. cost == nullptr means unit costs. Parallel over `threads` when > 1.
  Selection finish(const uint64_t* keys, const double* cost, std::size_t n, double budget,
                   int threads);

 private:
  Selection full_sort(const uint64_t* keys, const double* cost, std::size_t n, double budget);
  int threads_ = 1;
  std::vector<double> hist_;
  std::vector<std::vector<uint32_t>> thread_cand_;
  std::vector<uint32_t> cand_;
  std::vector<uint32_t> order_;
};

/// Selection for small n by sorting ids: O(n log n), no histogram. `order` is scratch of size n.
Selection select_by_sort(const uint64_t* keys, const double* cost, std::size_t n, double budget,
                         uint32_t* order);

}  // namespace crawleval::detail
