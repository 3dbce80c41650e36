// Dormant sources of the wide engine's deterministic Whittle pass (docs/cpu-design.md, "Dormant
// sources"). A source on the index grid is in a state of its passive recursion x' = alpha x + u
// from 0 (eq. 2 with x = u after a crawl), so every score it can have until its next crawl lies
// under a ceiling that depends on its constants alone (grid_index_ceiling). At M = 1% of a
// synthetic population the selection's boundary settles far above the ceiling of about three
// sources in four: they are never crawled again. Such a source is dormant: the pass does not read
// or write it, it is counted in the lump under the floor (window::lump_floor) that its bins lie
// under anyway, and its state waits, stamped with the iteration it is from, until it is brought
// up to date by its passive steps (catch_up) or woken.
//
// Layout. The engine's x and word stay in chunks of kChunk sources. A split chunk holds its live
// sources first, in id order, then its dormant ones, in id order; a bit per source (the chunk's
// mask) and the live sources' offsets (loc) and constants alpha and u (copies in slot order, 18 B
// per live source) say which is which. A chunk stays plain (every source live, in id order) where
// splitting gains little (more than 3/4 live, fewer than 64 sources), where a source is off the
// grid (det_word::kGeneral, scored by the general index), or where its copies would take the live
// sources of split chunks above kMaxLiveShare of all (memory). The number of live slots of a split
// chunk is a multiple of eight (the pass's groups): a few dormant-eligible sources are kept live to
// pad it.
//
// What keeps the crawled sets and rewards the plain pass's, bit for bit. (1) A source is made
// dormant only when its ceiling's coarse bin lies below the lump floor of the plan the next scoring
// pass classifies against; the plain pass would lump it (class kBelow) whatever its state, so the
// histogram, the list and every selection are the same. (2) The floor moves with the boundary: the
// engine wakes the sources whose ceiling reaches a new, lower floor before the pass runs (split
// with a lower bound), and wakes everything before a recount, a fallback pass, a tie scan or a
// selection that crawls every source, since those read every source's state or crawl it. (3) The
// states are the plain pass's: a dormant source's passive steps are the same IEEE operations
// (alpha * x, then + u; no fused multiply-add), its age steps as det_word::next's, and its class
// is kBelow when it wakes. (4) Rewards are summed over the live slots in id order, as the plain
// pass sums them; dormant sources are never crawled.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "crawleval/model/grid_ceiling.hpp"

namespace crawleval::detail {

/// The ceiling test itself, grid_index_ceiling, is the model layer's (model/grid_ceiling.hpp), one
/// __host__ __device__ function for this engine and a GPU's.
using crawleval::grid_index_ceiling;

class DormantSet {
 public:
  static constexpr uint32_t kPlain = 0xFFFFFFFFu;
  /// The engine's arrays and the pass's threads.
  struct Arrays {
    double* x;
    uint32_t* word;
    const double* alpha;
    const double* u;
    int threads;
  };

  /// Every one of n sources live, in id order (a replication's start); chunks of `chunk` sources.
  void reset(std::size_t n, std::size_t chunk);
  /// Whether some chunk is split.
  bool on() const { return on_; }
  /// Live slots of chunk c (a multiple of 8), or kPlain: the chunk is in id order, all live.
  uint32_t live(std::size_t c) const { return on_ ? live_[c] : kPlain; }
  /// Chunk c's live sources' offsets in the chunk, ascending (when live(c) != kPlain).
  const uint16_t* loc(std::size_t c) const { return loc_.data() + loc_off_[c]; }
  /// Chunk c's live sources' alpha and u, in slot order (copies: the pass reads them in a row).
  const double* live_alpha(std::size_t c) const { return alpha_.data() + loc_off_[c]; }
  const double* live_u(std::size_t c) const { return u_.data() + loc_off_[c]; }
  /// Every dormant source's scores lie in coarse bins below this one.
  uint32_t bound() const { return on_ ? bound_ : 0; }
  /// The iteration whose states the dormant sources hold.
  uint64_t stamp() const { return stamp_; }
  /// The iteration of the last split().
  uint64_t split_at() const { return split_at_; }
  /// Dormant sources in all (counted in the pass's lump).
  uint64_t dormant() const { return on_ ? dormant_ : 0; }
  /// Most sources that may be live in split chunks, as a share of all (their copies' memory).
  static constexpr double kMaxLiveShare = 0.3;
  static constexpr std::size_t kAsleep = ~std::size_t(0);
  /// Calls f(i, slot) for every live source i of chunk c (local ids lo .. hi - 1), in id order.
  template <class F>
  void for_each_live(std::size_t c, std::size_t lo, std::size_t hi, const F& f) const {
    const uint32_t n = live(c);
    if (n == kPlain) {
      for (std::size_t i = lo; i < hi; ++i) f(i, i);
      return;
    }
    const uint16_t* l = loc(c);
    for (std::size_t j = 0; j < n; ++j) f(lo + l[j], lo + j);
  }
  /// The slot of source i (local id): i in a plain chunk, kAsleep for a dormant source.
  std::size_t slot_of(std::size_t i) const;

  /// At iteration t, after the selection (x and word hold iteration t's states and the live
  /// sources' classes for the next apply, which crawls no source whose ceiling's bin is below
  /// `bound`, as the caller has shown): every source whose ceiling's bin is at least `bound`, and
  /// every source of a chunk that stays plain, live; the others dormant from t. A chunk stays
  /// plain where more than 3/4 of it would be live, and where copying its live sources would take
  /// the copies above kMaxLiveShare of all sources (the chunks with the fewest live ones split
  /// first). Dormant sources of an earlier split that stay dormant are brought to t; those that
  /// wake take their state at t and class kBelow.
  void split(uint32_t bound, uint64_t t, const Arrays& a);
  /// Everything live and in id order with iteration t's states (dormant sources: class kBelow).
  void wake(uint64_t t, const Arrays& a);
  /// The dormant sources' states brought to iteration t (their passive steps since stamp()).
  void catch_up(uint64_t t, const Arrays& a);

  /// Since reset(): the splits that woke sources (a lower bound), the wakes of every source
  /// (EngineCounters::dormant_wakes).
  uint64_t lowered = 0, wakes = 0;

 private:
  std::size_t size(std::size_t c) const {
    const std::size_t lo = c * chunk_;
    return n_ - lo < chunk_ ? n_ - lo : chunk_;
  }
  /// Chunk c back to id order at iteration t (its dormant sources' passive steps, class kBelow).
  void unsplit_chunk(std::size_t c, uint64_t t, const Arrays& a, double* tx, uint32_t* tw);
  /// The dormant slots of split chunk c brought from stamp_ to t.
  void catch_up_chunk(std::size_t c, uint64_t t, const Arrays& a);
  void build_loc(const Arrays& a);

  std::size_t n_ = 0, chunk_ = 1;
  bool on_ = false;
  uint32_t bound_ = 0;
  uint64_t stamp_ = 0, split_at_ = 0, dormant_ = 0;
  std::vector<uint32_t> live_;        // per chunk
  std::vector<uint64_t> mask_;        // a bit per source in id order: live (split chunks)
  std::vector<uint16_t> loc_;         // the live sources' offsets, chunk after chunk
  std::vector<double> alpha_, u_;     // their constants
  std::vector<std::size_t> loc_off_;  // per chunk: its first entry in loc_
};

}  // namespace crawleval::detail
