// The exact budgeted selection over the ranks' keys (sharded.hpp). Every rank runs the same steps
// on the same global histograms, so every rank reaches the same stop without any key moving:
//  1. Coarse level: the histogram of coarse_bin over this rank's keys (counts; fixed-point
//     weights unless costs are unit), summed over the ranks. Walking the bins from the top, the
//     first bin whose cumulative weight exceeds the limit holds the stop (window::find_boundary);
//     none: every source fits. This rank's members of that bin become its candidates, and the
//     search keeps the key range [lo, hi] the bin covers and the budget left for the bin.
//  2. Levels: while more than kGatherMax candidates remain worldwide and the range holds more than
//     one key, histogram the next digit of key - lo (the range's span in at most kBins digits),
//     sum it over the ranks, narrow the range and the budget to the boundary digit, and keep the
//     candidates inside it.
//  3a. Few candidates: gather them (key, global id, weight) on every rank, sort by (key desc, id
//     asc), and walk the budget left to the first that overflows.
//  3b. One key left (a group of equal scores larger than kGatherMax): the group's members come in
//     id order rank after rank, so each rank's total group weight, gathered, places the stop in one
//     rank, which walks its members in id order; a sum tells the others its id.
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

}  // namespace

Selection sharded_select(Comm& comm, const uint64_t* keys, const uint64_t* weights, bool unit,
                         std::size_t n, uint64_t first_id, uint64_t limit,
                         std::vector<uint32_t>& cand, ShardedSelectStats* stats) {
  using window::find_boundary;
  const std::size_t width = unit ? kBins : 2 * std::size_t(kBins);
  std::vector<uint64_t> hist(width);
  auto weight_of = [&](std::size_t i) -> uint64_t { return unit ? 1 : weights[i]; };
  // Sums a histogram over the ranks; returns its weights (the counts with unit costs).
  auto reduce = [&]() -> const uint64_t* {
    Timed timed(stats);
    comm.sum(hist.data(), width);
    if (stats) stats->allreduces += 1, stats->bytes += width * sizeof(uint64_t);
    return unit ? hist.data() : hist.data() + kBins;
  };

  // 1. Coarse level.
  for (std::size_t i = 0; i < n; ++i) {
    const uint32_t b = coarse_bin(keys[i]);
    hist[b] += 1;
    if (!unit) hist[kBins + b] += weights[i];
  }
  const uint64_t* w = reduce();
  uint64_t above = 0;
  const int bin = find_boundary(w, kBins, 0, limit, &above);
  if (bin < 0) return Selection{};
  uint64_t left = limit - above;  // the boundary bin's weight that still fits
  uint64_t global = hist[std::size_t(bin)];
  uint64_t lo = first_key_of_bin(uint32_t(bin));
  uint64_t hi = first_key_of_bin(uint32_t(bin) + 1) - 1;
  cand.clear();
  for (std::size_t i = 0; i < n; ++i)
    if (keys[i] >= lo && keys[i] <= hi) cand.push_back(uint32_t(i));

  // 2. Levels.
  while (global > kGatherMax && lo < hi) {
    int shift = 0;
    while (((hi - lo) >> shift) >= uint64_t(kBins)) ++shift;
    std::fill(hist.begin(), hist.end(), 0);
    for (uint32_t i : cand) {
      const uint64_t d = (keys[i] - lo) >> shift;
      hist[d] += 1;
      if (!unit) hist[kBins + d] += weights[i];
    }
    const uint64_t* lw = reduce();
    uint64_t skipped = 0;
    const int d = find_boundary(lw, kBins, 0, left, &skipped);
    if (d < 0) throw Error("internal: the sharded selection lost its boundary");
    left -= skipped;
    global = hist[std::size_t(d)];
    const uint64_t new_lo = lo + (uint64_t(d) << shift);
    hi = std::min(hi, new_lo + ((uint64_t(1) << shift) - 1));
    lo = new_lo;
    cand.erase(std::remove_if(cand.begin(), cand.end(),
                              [&](uint32_t i) { return keys[i] < lo || keys[i] > hi; }),
               cand.end());
  }

  Selection sel;
  sel.all = false;
  if (global <= kGatherMax) {
    // 3a. Gather and sort the few candidates left.
    std::vector<Candidate> mine;
    mine.reserve(cand.size());
    for (uint32_t i : cand) mine.push_back(Candidate{keys[i], first_id + i, weight_of(i)});
    std::vector<Candidate> all;
    {
      Timed timed(stats);
      all = comm.allgather(mine);
    }
    if (stats) stats->gathered += all.size(), stats->bytes += mine.size() * sizeof(Candidate);
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
  for (uint32_t i : cand) mine += weight_of(i);
  std::vector<uint64_t> per_rank;
  {
    Timed timed(stats);
    per_rank = comm.allgather(std::vector<uint64_t>{mine});
  }
  uint64_t before = 0;
  for (int r = 0; r < comm.rank(); ++r) before += per_rank[std::size_t(r)];
  uint64_t found = 0;  // the stop's id + 1 on the rank that holds it
  if (before <= left && left - before < mine) {
    uint64_t used = before;
    for (uint32_t i : cand) {
      if (weight_of(i) > left - used) {
        found = first_id + i + 1;
        break;
      }
      used += weight_of(i);
    }
  }
  {
    Timed timed(stats);
    found = comm.sum(found);
  }
  if (stats) stats->bytes += sizeof(uint64_t) * 2;
  if (found == 0) throw Error("internal: the sharded selection found no stop in its tie group");
  sel.stop_key = lo;
  sel.stop_id = found - 1;
  return sel;
}

}  // namespace crawleval
