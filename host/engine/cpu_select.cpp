// Radix select on the CPU; the algorithm's steps are numbered in cpu_select.hpp.
#include "cpu_select.hpp"

#include <omp.h>

#include <algorithm>
#include <limits>
#include <numeric>

namespace crawleval::detail {

namespace {

inline double cost_of(const double* cost, uint32_t i) { return cost ? cost[i] : 1.0; }

/// Step 2: walks bins from the top, adding whole bins to `above` while they fit. Returns the
/// boundary bin, or -1 when everything fits.
int find_boundary(const double* hist, double& above, double limit) {
  for (int b = kBins - 1; b >= 0; --b) {
    if (above + hist[b] > limit) return b;
    above += hist[b];
  }
  return -1;
}

/// Step 5 on an id list sorted by (key desc, id asc): the first id that does not fit stops.
bool walk(const std::vector<uint32_t>& ids, const uint64_t* keys, const double* cost, double above,
          double limit, Selection* out) {
  for (uint32_t i : ids) {
    const double c = cost_of(cost, i);
    if (above + c > limit) {
      *out = Selection{keys[i], i, false};
      return true;
    }
    above += c;
  }
  return false;
}

void sort_by_key_desc(std::vector<uint32_t>& ids, const uint64_t* keys) {
  std::stable_sort(ids.begin(), ids.end(),
                   [keys](uint32_t a, uint32_t b) { return keys[a] > keys[b]; });
}

}  // namespace

void RadixSelector::prepare(std::size_t n, int threads) {
  threads_ = std::max(1, threads);
  hist_.assign(std::size_t(threads_) * kBins, 0.0);
  thread_cand_.resize(threads_);
  for (auto& v : thread_cand_) v.reserve(n / threads_ + 1);
  cand_.reserve(n);
  order_.reserve(n);
}

void RadixSelector::begin_epoch() { std::fill(hist_.begin(), hist_.end(), 0.0); }

Selection RadixSelector::full_sort(const uint64_t* keys, const double* cost, std::size_t n,
                                   double budget) {
  order_.resize(n);
  return select_by_sort(keys, cost, n, budget, order_.data());
}

Selection RadixSelector::finish(const uint64_t* keys, const double* cost, std::size_t n,
                                double budget, int threads) {
  threads = std::max(1, std::min(threads, threads_));
  const double limit = budget_limit(budget);
  // Step 1 (merge): thread 0's histogram receives the others, in thread order.
  double* h0 = histogram(0);
  for (int t = 1; t < threads_; ++t) {
    const double* ht = histogram(t);
    for (int b = 0; b < kBins; ++b) h0[b] += ht[b];
  }
  // Step 2.
  double above = 0.0;
  int boundary = find_boundary(h0, above, limit);
  if (boundary < 0) return Selection{};  // all fit
  // Step 3: each thread scans one contiguous range, so concatenation keeps ids ascending. The bin
  // is a contiguous key range [key_lo, key_hi]: two integer comparisons per source.
  const uint64_t key_lo = first_key_of_bin(uint32_t(boundary));
  const uint64_t key_hi = first_key_of_bin(uint32_t(boundary) + 1) - 1;
  int used_threads = 1;
  uint64_t kmin = ~uint64_t(0), kmax = 0;  // of the candidates: equal means all tied
#pragma omp parallel num_threads(threads) if (threads > 1) reduction(min                   \
                                                                     : kmin) reduction(max \
                                                                                       : kmax)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    if (t == 0) used_threads = nt;
    const std::size_t lo = n * t / nt, hi = n * (t + 1) / nt;
    auto& mine = thread_cand_[t];
    mine.clear();
    for (std::size_t i = lo; i < hi; ++i) {
      const uint64_t k = keys[i];
      if (k >= key_lo && k <= key_hi) {
        mine.push_back(uint32_t(i));
        kmin = std::min(kmin, k), kmax = std::max(kmax, k);
      }
    }
  }
  cand_.clear();
  for (int t = 0; t < used_threads; ++t)
    cand_.insert(cand_.end(), thread_cand_[t].begin(), thread_cand_[t].end());
  // Step 4. Tied candidates (one key) need no refinement; six levels leave only tied ones.
  bool tied = kmin == kmax;
  double* hl = histogram(0);  // reused as scratch
  for (int level = 0; level < kLevels && !tied && cand_.size() > 4096; ++level) {
    std::fill(hl, hl + kBins, 0.0);
    for (uint32_t i : cand_) hl[key_digit(keys[i], level)] += cost_of(cost, i);
    double above_next = above;
    const int b = find_boundary(hl, above_next, limit);
    if (b < 0) break;  // rounding: the bin did not overflow after all; let step 5 decide
    above = above_next;
    std::size_t kept = 0;
    for (uint32_t i : cand_)
      if (key_digit(keys[i], level) == uint32_t(b)) cand_[kept++] = i;
    cand_.resize(kept);
    tied = level == kLevels - 1;
  }
  // Step 5. Tied candidates are already in their order (ascending ids).
  if (!tied) sort_by_key_desc(cand_, keys);
  Selection sel;
  if (walk(cand_, keys, cost, above, limit, &sel)) return sel;
  return full_sort(keys, cost, n, budget);  // histogram/sequential rounding disagreement
}

Selection select_by_sort(const uint64_t* keys, const double* cost, std::size_t n, double budget,
                         uint32_t* order) {
  std::iota(order, order + n, 0u);
  std::sort(order, order + n, [keys](uint32_t a, uint32_t b) {
    return keys[a] != keys[b] ? keys[a] > keys[b] : a < b;
  });
  const double limit = budget_limit(budget);
  double used = 0.0;
  for (std::size_t j = 0; j < n; ++j) {
    const uint32_t i = order[j];
    const double c = cost_of(cost, i);
    if (used + c > limit) return Selection{keys[i], i, false};
    used += c;
  }
  return Selection{};
}

}  // namespace crawleval::detail
