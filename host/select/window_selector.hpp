// The windowed radix select (include/crawleval/select/window_select.hpp) on the host: the CPU
// backend's selection, and the GPU's algorithm step by step on the same state with the same
// decision functions.
//
// A scoring pass runs in the engine, one Pass per thread: record() adds each source to the pass's
// histogram, classifies it against the plan, lists candidates and sums tie members per tile.
// select() then merges the passes and runs steps 2-5 serially on the listed sources (a few percent
// of the population); it calls back into the engine for the two things it cannot keep: a fallback
// pass that relists every source when the window missed, and the ids and weights of one tile's tie
// members. select(keys, ...) runs a whole epoch serially over an array of keys: the tests use it
// against the sort-based rule on adversarial inputs (which is also how the GPU's selection logic is
// checked without a GPU).
//
// Shared (share(): MPI as a layer, epoch_collective.hpp): the population is split over processes in
// ascending id ranges and every process runs the same steps on the same global numbers, so each
// reaches the same Selection (a global stop id) and the same next plan. What crosses per step is
// small and fixed: the coarse histogram (kBins counts, and weights with costs) and the tie group's
// sums; per level the digit histogram and the members' rank bounds; at the resolution the few
// listed members (at most kResolveMax worldwide); for a stop in the tie group each process's tie
// weight and the stop id. No process ever sends a score per source.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "crawleval/base/comm.hpp"
#include "crawleval/select/window_select.hpp"

namespace crawleval::detail {

class WindowSelector {
 public:
  struct Item {
    uint64_t key;
    uint64_t w;
    uint32_t id;
  };
  /// One thread's share of a scoring or fallback pass.
  struct Pass {
    std::vector<uint64_t> count, weight;  ///< coarse histogram (kBins each)
    std::vector<Item> list;               ///< candidates, in the order the thread met them
    uint64_t tie_count = 0, tie_weight = 0;
    /// Sources counted below window::lump_floor(plan()) without their bin (lump()).
    uint64_t lumped = 0, lumped_weight = 0;
  };
  /// What select() asks of the engine.
  class Sources {
   public:
    /// Runs a pass over every source that calls relist() with its key (the plan's window is now the
    /// boundary bin alone) and stores the class it returns. The passes' lists are empty before.
    virtual void fallback() = 0;
    /// Runs a pass over every source that calls count_bin() with its key's coarse bin and its
    /// weight (the histogram of a pass that lumped sources, counted again; classes unchanged).
    virtual void recount() = 0;
    /// Whether source i is a member of this epoch's tie group (class kTie), and its weight.
    virtual bool tie_member(std::size_t i) = 0;
    virtual uint64_t weight(std::size_t i) = 0;

   protected:
    ~Sources() = default;
  };

  /// Buffers for up to n sources and `threads` passes; unit: every weight is 1.
  void prepare(std::size_t n, int threads = 1, bool unit = false);
  /// After prepare(n): this process's n sources are global ids first .. first + n - 1 of `total`,
  /// and the others are held by the other processes of `comm` (in ascending id ranges, in process
  /// order). Selections then carry global stop ids. Every process calls select() together.
  void share(Comm& comm, uint64_t first, uint64_t total);
  bool shared() const { return comm_ != nullptr && comm_->size() > 1; }
  uint64_t first() const { return first_; }
  /// The first plan of a replication from a sample of (key, weight) of this process's sources
  /// (window::initial_plan): sampled() says which of them to sample, so that the processes
  /// together sample what one process would.
  bool sampled(std::size_t i) const { return (first_ + i) % sample_step() == 0; }
  void plan_from_sample(std::vector<std::pair<uint64_t, uint64_t>> sample, uint64_t limit);

  CommTraffic traffic;  ///< what the shared steps moved (summed over calls)
  window::SelectState& state() { return st_; }
  const window::SelectState& state() const { return st_; }

  /// Clears every pass before a scoring pass.
  void begin_pass();
  Pass& pass(int t) { return pass_[std::size_t(t)]; }

  /// Step 1 for source `id` in a scoring pass: returns its class. bin = coarse_bin(key). Unit:
  /// every weight is 1 (the weight histogram is not kept; prepare(..., unit) says so).
  template <bool Unit>
  uint32_t record(Pass& ps, uint64_t key, uint32_t bin, uint32_t id, uint64_t w) {
    const uint32_t c = window::classify(key, bin, st_.plan);
    count<Unit>(ps, key, bin, c, id, w);
    return c;
  }
  /// The same for a source whose class c = classify(key, bin, plan()) is known.
  template <bool Unit>
  void count(Pass& ps, uint64_t key, uint32_t bin, uint32_t c, uint32_t id, uint64_t w) {
    ps.count[bin] += 1;
    if (!Unit) ps.weight[bin] += w;
    if (c >= window::kCandidate) note(ps, key, c, id, w);
  }
  /// The list or tie part of count() alone (c is kCandidate or kTie), for an engine that keeps
  /// the histogram increments in its own loop.
  void note(Pass& ps, uint64_t key, uint32_t c, uint32_t id, uint64_t w) {
    if (c == window::kCandidate) {
      put(ps.list, key, w, id);
    } else {
      ps.tie_count += 1;
      ps.tie_weight += w;
      tile_w_[id / window::kTile] += w;  // a tile is never shared by two threads' ranges
    }
  }
  /// Appends an item field by field: push_back(Item{...}) built it on the stack and copied its id
  /// with the padding as one 8-byte load behind a 4-byte store, a failed store forwarding per
  /// listed source (perf: about 9% of the deterministic pass at 1e5).
  static void put(std::vector<Item>& list, uint64_t key, uint64_t w, uint32_t id) {
    Item& it = list.emplace_back();
    it.key = key;
    it.w = w;
    it.id = id;
  }
  /// Adds `count` sources of total weight `weight` whose scores lie in bins below
  /// window::lump_floor(plan()) (which the caller has shown with a bound): their class is kBelow.
  static void lump(Pass& ps, uint64_t count, uint64_t weight) {
    ps.lumped += count;
    ps.lumped_weight += weight;
  }
  /// One source of a recount() pass.
  template <bool Unit>
  static void count_bin(Pass& ps, uint32_t bin, uint64_t w) {
    ps.count[bin] += 1;
    if (!Unit) ps.weight[bin] += w;
  }
  bool unit() const { return unit_; }
  const window::Plan& plan() const { return st_.plan; }
  /// The same in a fallback pass: the class and the list (the histogram is the scoring pass's).
  uint32_t relist(Pass& ps, uint64_t key, uint32_t id, uint64_t w) {
    const uint32_t c = window::classify(key, coarse_bin(key), st_.plan);
    if (c == window::kCandidate) put(ps.list, key, w, id);
    return c;
  }

  /// Steps 2-5 after a scoring pass over n sources: returns the selection (also in
  /// state().applied) and leaves the next epoch's plan in state().plan. Throws Error on an
  /// internal failure.
  Selection select(std::size_t n, uint64_t limit, Sources& sources);
  /// The sources listed by the last scoring (or fallback) pass: every source of class kCandidate,
  /// whose class the engine resolves into kAbove or kBelow with the selection.
  const std::vector<Item>& listed();

  /// A whole epoch over `keys` (fixed-point `weight`, nullptr = unit costs) with the plan in
  /// state(), its passes split among prepare()'s threads. classes() then holds each source's class
  /// as the next epoch's apply reads it. (The epoch layer's selection for engines that store a
  /// key per source: the function and freshness engines.)
  Selection select(const uint64_t* keys, const uint64_t* weight, std::size_t n, uint64_t limit);
  const std::vector<uint32_t>& classes() const { return cls_; }
  /// Selection steps (levels plus the resolution) the last epoch took.
  int steps() const { return steps_; }

 private:
  /// Step 4 in the tie group: the tile by prefix sums in id order, then its members; sets the stop
  /// or kFailed.
  void resolve_in_tie(uint64_t acc, uint64_t limit, std::size_t n, Sources& sources);
  uint64_t sample_step() const { return total_ / 4096 > 0 ? total_ / 4096 : 1; }
  /// Shared: sums v over the processes (counted in traffic).
  void sum(uint64_t* v, std::size_t count);
  /// Step 2's input: the passes' histograms, tie sums and lumped sources into count_, weight_ and
  /// the state (over every process when shared); returns the lumped sources' count and weight.
  std::pair<uint64_t, uint64_t> merge_histograms();
  template <class T>
  std::vector<T> allgather(const std::vector<T>& mine);
  struct Member {  // a listed member at the resolution, with its global id
    uint64_t key, w, id;
  };
  std::vector<Member> gathered_;
  window::SelectState st_;
  Comm* comm_ = nullptr;
  uint64_t first_ = 0, total_ = 0;
  std::vector<Pass> pass_;
  std::vector<uint32_t> cls_;  // select(keys, ...) only
  std::vector<Item> buf_[4];
  /// The listed sources (buffer kList) are still in the passes' lists, not copied into buf_
  /// (select reads them there; listed() copies them on demand).
  bool in_passes_ = false;
  struct Span {
    const Item* data;
    std::size_t size;
  };
  /// The items of a buffer: for kList the passes' lists while they hold them.
  std::vector<Span> spans(uint32_t buffer) const;
  /// The passes' lists become buffer kList.
  void take_list();
  /// One level over the items of buffer s.src (spans()): the digit histogram, the ranks' bounds,
  /// the compaction into buf_[s.dst]; split over the passes' threads when the buffer is long
  /// (kParallelLevel), each reading its own pass's list where the items are still there.
  void run_level(window::Rank* mn, window::Rank* mx);
  std::vector<uint64_t> count_, weight_, level_count_, level_weight_, tile_w_;
  struct LevelPart {  // one thread's share of a parallel level
    std::vector<uint64_t> count, weight;
    std::vector<Item> kept;
    window::Rank mn = 0, mx = 0;
  };
  std::vector<LevelPart> part_;
  uint64_t capacity_ = 0;
  int steps_ = 0;
  bool unit_ = false;
};

}  // namespace crawleval::detail
