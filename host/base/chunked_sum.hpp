// Sums over a process's sources that come out the same, to the bit, for every thread count and
// every number of MPI ranks. The analyses' solves (bound.cpp, fresh_rates.cpp) evaluate them inside
// root searches: every rank must see the same sums to take the same steps and stop at the same
// multiplier as one process.
#pragma once

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <vector>

#include "crawleval/base/comm.hpp"

namespace crawleval::detail {

/// K sums over this process's n sources: term(i, sums) adds source i's terms to sums[0..K). Each
/// kFoldChunk chunk of sources is summed left to right from 0.0, and the chunks' sums are folded
/// in global order over the ranks (fold_in_order; a rank's shard starts on a chunk boundary).
/// `packed` (optional): the items are a packed subset of the sources, and chunk c holds items
/// packed[c] .. packed[c + 1] - 1 (those of source chunk c), so that a sum over the packed items
/// has the bits of the same sum over the sources with the others skipped. threads <= 0: OpenMP's
/// default.
template <std::size_t K, class F>
std::array<double, K> chunked_sums(Comm& comm, std::size_t n, int threads, F&& term,
                                   const std::vector<std::size_t>* packed = nullptr) {
  const std::size_t chunks = packed ? packed->size() - 1 : (n + kFoldChunk - 1) / kFoldChunk;
  std::vector<double> part(K * chunks);  // row k: every chunk's k-th sum
  if (threads <= 0) threads = omp_get_max_threads();
#pragma omp parallel for if (threads > 1 && chunks > 1) num_threads(threads) schedule(static)
  for (std::size_t c = 0; c < chunks; ++c) {
    double s[K] = {};
    const std::size_t lo = packed ? (*packed)[c] : c * kFoldChunk,
                      hi = packed ? (*packed)[c + 1] : std::min(n, (c + 1) * kFoldChunk);
    for (std::size_t i = lo; i < hi; ++i) term(i, s);
    for (std::size_t k = 0; k < K; ++k) part[k * chunks + c] = s[k];
  }
  const std::vector<double> total = fold_in_order(comm, part, K, chunks);
  std::array<double, K> out{};
  std::copy(total.begin(), total.end(), out.begin());
  return out;
}

/// chunked_sums of one term: sum_i term(i).
template <class F>
double chunked_sum(Comm& comm, std::size_t n, int threads, F&& term) {
  return chunked_sums<1>(comm, n, threads, [&](std::size_t i, double* s) { s[0] += term(i); })[0];
}

}  // namespace crawleval::detail
