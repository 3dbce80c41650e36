// The exact budgeted selection over the ranks' keys (sharded.hpp). Every rank runs the same steps
// on the same global histograms, so every rank reaches the same stop without any key moving; in
// one process (solo_comm) the same steps are the function engine's selection. Every pass over the
// sources or the candidates is split among the threads (static ranges, joined in order, so each
// candidate list stays in id order):
//  1. Coarse level: the histogram of coarse_bin over this rank's keys (counts and fixed-point
//     weights; the weights are the counts with unit costs), summed over the threads and the ranks.
//     Walking the bins from the top, the first bin whose cumulative weight exceeds the limit holds
//     the stop (window::find_boundary); none: every source fits. This rank's members of that bin
//     become its candidates, and the search keeps the key range [lo, hi] the bin covers and the
//     budget left for the bin.
//  2. Levels: while more than kGatherMax candidates remain worldwide and the range holds more than
//     one key, histogram the next digit of key - lo (the range's span in at most kBins digits),
//     sum it, narrow the range and the budget to the boundary digit, and keep the candidates
//     inside it.
//  3a. Few candidates: gather them (key, global id, weight) on every rank, sort by (key desc, id
//     asc), and walk the budget left to the first that overflows.
//  3b. One key left (a group of equal scores larger than kGatherMax): the group's members come in
//     id order rank after rank, so each rank's total group weight, gathered, places the stop in one
//     rank, which walks its members in id order; a sum tells the others its id.
#include <omp.h>

#include <algorithm>
#include <chrono>

#include "crawleval/error.hpp"
#include "crawleval/sharded.hpp"
#include "crawleval/window_select.hpp"

namespace crawleval {

namespace {

struct Candidate {
  uint64_t key, id, weight;
};

class Timed {
 public:
  explicit Timed(ShardedSelectStats* s) : s_(s), t0_(std::chrono::steady_clock::now()) {}
  ~Timed() {
    if (s_)
      s_->comm_seconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }

 private:
  ShardedSelectStats* s_;
  std::chrono::steady_clock::time_point t0_;
};

constexpr std::size_t kWidth = 2 * std::size_t(kBins);  // a histogram: counts, then weights

}  // namespace

uint64_t* SelectScratch::coarse(int threads) {
  hist.assign(std::size_t(threads) * kWidth, 0);
  return hist.data();
}

Selection sharded_select(Comm& comm, const uint64_t* keys, const uint64_t* weights, bool unit,
                         std::size_t n, uint64_t first_id, uint64_t limit, SelectScratch& s,
                         ShardedSelectStats* stats, int threads, bool coarse_counted) {
  using window::find_boundary;
  threads = std::max(1, threads);
  auto weight_of = [&](uint32_t i) -> uint64_t { return unit ? 1 : weights[i]; };
  // Passes split among the threads only where they are long enough to pay for a team.
  auto parallel = [&](std::size_t count) { return threads > 1 && count > kCpuSmallN; };
  s.in.resize(std::size_t(threads));
  std::vector<uint64_t> total(kWidth);
  // The threads' histograms summed, then over the ranks; returns the weights.
  // (With unit costs the weights are the counts: half the bytes cross.)
  const std::size_t width = unit ? kBins : kWidth;
  auto reduce = [&]() -> const uint64_t* {
    std::fill(total.begin(), total.end(), 0);
    for (std::size_t t = 0; t * kWidth < s.hist.size(); ++t)
      for (std::size_t b = 0; b < width; ++b) total[b] += s.hist[t * kWidth + b];
    Timed timed(stats);
    comm.sum(total.data(), width);
    if (stats) stats->allreduces += 1, stats->bytes += width * sizeof(uint64_t);
    return unit ? total.data() : total.data() + kBins;
  };
  // Histogram of digit(i) over `count` items (item(k) -> source).
  auto histogram = [&](std::size_t count, auto&& item, auto&& digit) {
    s.coarse(threads);
#pragma omp parallel num_threads(threads) if (parallel(count))
    {
      uint64_t* h = s.hist.data() + std::size_t(omp_get_thread_num()) * kWidth;
#pragma omp for schedule(static)
      for (std::size_t k = 0; k < count; ++k) {
        const uint32_t i = item(k);
        const std::size_t d = digit(i);
        h[d] += 1;
        if (!unit) h[kBins + d] += weights[i];
      }
    }
    return reduce();
  };
  // Keeps the items whose key lies in [lo, hi], in order.
  auto keep = [&](std::size_t count, auto&& item, uint64_t lo, uint64_t hi,
                  std::vector<uint32_t>& out) {
    for (std::vector<uint32_t>& part : s.in) part.clear();
#pragma omp parallel num_threads(threads) if (parallel(count))
    {
      std::vector<uint32_t>& mine = s.in[std::size_t(omp_get_thread_num())];
#pragma omp for schedule(static)
      for (std::size_t k = 0; k < count; ++k) {
        const uint32_t i = item(k);
        if (keys[i] >= lo && keys[i] <= hi) mine.push_back(i);
      }
    }
    out.clear();
    for (const std::vector<uint32_t>& part : s.in) out.insert(out.end(), part.begin(), part.end());
  };

  // 1. Coarse level (counted by the caller along with the keys when coarse_counted).
  auto source = [](std::size_t k) { return uint32_t(k); };
  const uint64_t* w = coarse_counted
                          ? reduce()
                          : histogram(n, source, [&](uint32_t i) { return coarse_bin(keys[i]); });
  uint64_t above = 0;
  const int bin = find_boundary(w, kBins, 0, limit, &above);
  if (bin < 0) return Selection{};
  uint64_t left = limit - above;  // the boundary bin's weight that still fits
  uint64_t global = total[std::size_t(bin)];
  uint64_t lo = first_key_of_bin(uint32_t(bin));
  uint64_t hi = first_key_of_bin(uint32_t(bin) + 1) - 1;
  keep(n, source, lo, hi, s.cand);

  // 2. Levels.
  while (global > kGatherMax && lo < hi) {
    int shift = 0;
    while (((hi - lo) >> shift) >= uint64_t(kBins)) ++shift;
    const std::vector<uint32_t>& c = s.cand;
    auto member = [&](std::size_t k) { return c[k]; };
    const uint64_t* lw = histogram(
        c.size(), member, [&](uint32_t i) { return std::size_t((keys[i] - lo) >> shift); });
    uint64_t skipped = 0;
    const int d = find_boundary(lw, kBins, 0, left, &skipped);
    if (d < 0) throw Error("internal: the sharded selection lost its boundary");
    left -= skipped;
    global = total[std::size_t(d)];
    const uint64_t new_lo = lo + (uint64_t(d) << shift);
    hi = std::min(hi, new_lo + ((uint64_t(1) << shift) - 1));
    lo = new_lo;
    keep(c.size(), member, lo, hi, s.next);
    std::swap(s.cand, s.next);
  }

  Selection sel;
  sel.all = false;
  if (global <= kGatherMax) {
    // 3a. Gather and sort the few candidates left.
    std::vector<Candidate> mine;
    mine.reserve(s.cand.size());
    for (uint32_t i : s.cand) mine.push_back(Candidate{keys[i], first_id + i, weight_of(i)});
    std::vector<Candidate> all;
    if (comm.size() == 1) {
      all = std::move(mine);
    } else {
      Timed timed(stats);
      all = comm.allgather(mine);
      if (stats) stats->bytes += mine.size() * sizeof(Candidate);
    }
    if (stats) stats->gathered += all.size();
    std::sort(all.begin(), all.end(), [](const Candidate& a, const Candidate& b) {
      return a.key != b.key ? a.key > b.key : a.id < b.id;
    });
    uint64_t used = 0;
    for (const Candidate& c : all) {
      if (c.weight > left - used) {
        sel.stop_key = c.key, sel.stop_id = c.id;
        return sel;
      }
      used += c.weight;
    }
    throw Error("internal: the sharded selection's candidates all fit");
  }
  // 3b. One key: split the group by id.
  uint64_t mine = 0;
  for (uint32_t i : s.cand) mine += weight_of(i);
  uint64_t before = 0;
  if (comm.size() > 1) {
    std::vector<uint64_t> per_rank;
    {
      Timed timed(stats);
      per_rank = comm.allgather(std::vector<uint64_t>{mine});
    }
    for (int r = 0; r < comm.rank(); ++r) before += per_rank[std::size_t(r)];
  }
  uint64_t found = 0;  // the stop's id + 1 on the rank that holds it
  if (before <= left && left - before < mine) {
    uint64_t used = before;
    for (uint32_t i : s.cand) {
      if (weight_of(i) > left - used) {
        found = first_id + i + 1;
        break;
      }
      used += weight_of(i);
    }
  }
  if (comm.size() > 1) {
    Timed timed(stats);
    found = comm.sum(found);
    if (stats) stats->bytes += sizeof(uint64_t) * 2;
  }
  if (found == 0) throw Error("internal: the sharded selection found no stop in its tie group");
  sel.stop_key = lo;
  sel.stop_id = found - 1;
  return sel;
}

}  // namespace crawleval
