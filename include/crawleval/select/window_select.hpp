// Windowed radix select: the budgeted top-M selection of selection.hpp, organised so that an engine
// that scores every source once per epoch never writes a key per source and never needs a second
// pass over the population when the previous epoch predicted the boundary. The GPU's wide regime
// runs it (kernels/window_select.cu, kernels/epoch_kernels.cu), and so does the CPU backend's wide
// engine (host/select/window_selector.cpp: scoring passes per thread, steps 2-5 serially on the
// listed sources), which is also how the algorithm is tested without a GPU.
//
// Order. Sources are ranked by rank_of(key, id) = key * 2^64 + (2^64 - 1 - id), a 128-bit integer
// (ids are global: an engine's local ids plus its shard's first id under MPI): a higher rank comes
// first, so ranks order sources exactly as selection.hpp does (score
// descending, id ascending), and no two sources share a rank. Costs are fixed-point weights
// (selection.hpp, FixedBudget), so every sum below is exact in any order.
//
// One epoch:
//  1. Scoring pass (one pass over the population, fused with the epoch's transition). Each source
//     gets a coarse bin (coarse_bin, 11 bits) added to the coarse histogram (count and weight), and
//     a class from the plan the previous epoch left (classify): kTie if its key equals the plan's
//     tie key, else kAbove / kBelow if its bin lies above / below the plan's window of bins, else
//     kCandidate. Candidates are appended to a list with their key, id and weight; tie members are
//     only summed, per tile of kTile consecutive ids. Nothing else is written per source.
//  2. Coarse boundary. Walking bins from the top, the first bin whose cumulative weight exceeds the
//     limit is the boundary bin b (is_boundary). None: everything fits, done. If b lies inside the
//     window, its candidates are all in the list ("hit"). Otherwise ("miss") a fallback pass
//     recomputes every score from the stored state and lists bin b's sources (window [b, b]).
//  3. Refinement (levels). The search keeps a rank range [lo, hi] that holds the stop, starting
//     with bin b's ranks. While more than kResolveMax listed sources lie in the range, one level
//     histograms the next digit of their ranks (digit_shift: the span of the range in at most
//     kBins digits), the tie group's whole weight added to its digit, and narrows the range to
//     the boundary digit (end_level); the range is also clipped to the members' min and max rank,
//     so a level never repeats on bits the members share (ties skip straight to the id bits).
//     Members are compacted into a smaller buffer when the range holds at most half the buffer.
//  4. Resolution. At most kResolveMax listed members remain: sort them by rank, walk their
//     weights from the top with the tie group inserted at its
//     key, and stop at the first that overflows (member_is_stop, tie_is_stop). A stop inside the
//     tie group is found from the per-tile tie weights summed in id order (begin_tie_tile), then
//     one tile whose keys are recomputed (kTieTile).
//  5. Finalise (finalize). The result (stop key and id) and the tie key become the record the next
//     epoch applies (crawled_by_class); the next plan is a window of bins around b holding at most
//     window_budget listed sources, and its tie key is this epoch's stop key, so a boundary inside
//     a large group of equal scores (all sources at score 0) costs no more than any other epoch.
//
// Applying the selection needs no key: kAbove sources are crawled, kBelow ones are not, kTie ones
// compare the tie key and their id with the stop, kCandidate ones compare their own key (which the
// deterministic engine recomputes from its state, and which the stochastic engine resolves into
// kAbove / kBelow after the selection).
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "crawleval/base/hd.hpp"
#include "crawleval/model/selection.hpp"

namespace crawleval::window {

// ---- ranks ------------------------------------------------------------------------------------

using Rank = unsigned __int128;

/// Largest local source id of one engine (its scoring passes list 32-bit ids).
inline constexpr uint32_t kMaxId = 0xFFFFFFFEu;

CE_HD_INLINE Rank rank_of(uint64_t key, uint64_t id) { return (Rank(key) << 64) | Rank(~id); }
CE_HD_INLINE uint64_t rank_key(Rank r) { return uint64_t(r >> 64); }
CE_HD_INLINE uint64_t rank_id(Rank r) { return ~uint64_t(r); }
/// Lowest and highest rank a key can have.
CE_HD_INLINE Rank rank_floor(uint64_t key) { return Rank(key) << 64; }
CE_HD_INLINE Rank rank_ceil(uint64_t key) { return (Rank(key) << 64) | Rank(~uint64_t(0)); }

// ---- geometry ---------------------------------------------------------------------------------

/// Most listed members resolved by one sort (one block of 256 threads x 8 ranks on the GPU).
inline constexpr uint64_t kResolveMax = 2048;
/// Consecutive ids whose tie weights are summed together (the GPU's tile of 256 threads x 4).
inline constexpr uint32_t kTile = 1024;
/// Most levels and resolutions an epoch may need: a coarse bin spans at most 2^128 ranks (bin 1024,
/// float zero, holds every tiny score of either sign), every level divides the span by at least
/// 1023 (13 levels), and a span of at most kBins ranks holds at most kResolveMax sources.
inline constexpr int kMaxSteps = 14;
/// Window bins on each side of the previous boundary, at most.
inline constexpr int kMaxWindowHalf = 8;
/// Selections whose boundary bins the next window covers (spread_window).
inline constexpr int kRecentBoundaries = 8;

/// Capacity of each of the two compaction buffers for n sources.
CE_HD_INLINE uint64_t compaction_capacity(uint64_t n) {
  const uint64_t c = n / 8;
  return c > 4 * kResolveMax ? c : 4 * kResolveMax;
}

/// Listed sources the next window may hold (from the previous epoch's histogram): enough to catch
/// a moving boundary, small against the N the scoring pass reads. At least one resolution's worth
/// (kResolveMax). The floor was 4 kResolveMax: below 524288 sources it let the window list up to
/// 8% of the population, and every epoch ran a level over them (12% of a CPU epoch at 1e5; 0.30
/// -> 0.21 ms per epoch with this floor, the same crawled sets).
CE_HD_INLINE uint64_t window_budget(uint64_t n) {
  const uint64_t b = n / 64;
  return b > kResolveMax ? b : kResolveMax;
}

// ---- classes and the plan ---------------------------------------------------------------------

enum Class : uint32_t { kBelow = 0, kAbove = 1, kCandidate = 2, kTie = 3 };

/// What the scoring pass needs from the previous epoch. lo > hi: no window (every boundary misses).
struct Plan {
  uint32_t lo = 1, hi = 0;
  uint32_t has_tie = 0;
  uint32_t pad = 0;
  uint64_t tie_key = 0;
};

CE_HD_INLINE uint32_t classify(uint64_t key, uint32_t bin, const Plan& p) {
  if (p.has_tie && key == p.tie_key) return kTie;
  if (bin > p.hi) return kAbove;
  if (bin < p.lo) return kBelow;
  return kCandidate;
}

/// Bins under which a scoring pass may count a source without its bin ("lumped"), given the
/// plan it classifies against: two bins below the window, and below the tie key's bin; 0: none.
/// A source whose score is known (from a bound) to lie in a bin below this floor is of class
/// kBelow whatever its bin, and the coarse histogram at and above the floor stays exact; the
/// lumped sources are counted in the bin under the floor, and an epoch whose boundary falls
/// there counts every bin again before it goes on (WindowSelector::select). The two exact bins
/// let the next window grow below this one.
CE_HD_INLINE uint32_t lump_floor(const Plan& p) {
  if (p.lo > p.hi) return 0;
  uint32_t top = p.lo;
  if (p.has_tie && coarse_bin(p.tie_key) < top) top = coarse_bin(p.tie_key);
  return top > 2 ? top - 2 : 0;
}

/// What the next epoch needs to apply this epoch's selection.
struct Applied {
  Selection sel;
  uint64_t tie_key = 0;
  uint32_t has_tie = 0;
  uint32_t pad = 0;
};

/// Whether a source of class `cls` was crawled. `own_key` is read only for kCandidate.
CE_HD_INLINE bool crawled_by_class(uint32_t cls, uint64_t id, uint64_t own_key, const Applied& a) {
  if (a.sel.all) return true;
  switch (cls) {
    case kAbove:
      return true;
    case kBelow:
      return false;
    case kTie:
      return is_selected(a.tie_key, id, a.sel);
    default:
      return is_selected(own_key, id, a.sel);
  }
}

/// crawled_by_class for a source whose own key is not read (every class but kCandidate; a
/// candidate's own key taken as 0, as the engines that mark candidates pass it), with the
/// comparisons that depend only on the selection done once per epoch instead of per source: the
/// tie group is all crawled, none, or the members below the stop id (its key equals the stop's).
struct ClassRule {
  uint64_t stop_id = 0;
  bool all = true, tie_all = false, tie_below = false, zero_below = false;
  CE_HD_INLINE explicit ClassRule(const Applied& a)
      : stop_id(a.sel.stop_id),
        all(a.sel.all),
        tie_all(a.tie_key > a.sel.stop_key),
        tie_below(a.tie_key == a.sel.stop_key),
        zero_below(a.sel.stop_key == 0) {}
  CE_HD_INLINE bool crawled(uint32_t cls, uint64_t id) const {
    const bool below = id < stop_id;
    return all || cls == kAbove || (cls == kTie && (tie_all || (tie_below && below))) ||
           (cls == kCandidate && zero_below && below);
  }
};

// ---- the search state -------------------------------------------------------------------------

enum Phase : uint32_t {
  kDone = 0,      ///< the selection is known
  kFallback = 1,  ///< the window missed: a fallback pass lists bin b, then `next` runs
  kLevel = 2,     ///< a histogram level over the listed members of [lo, hi]
  kResolve = 3,   ///< gather the (few) listed members of [lo, hi] and resolve
  kTieTile = 4,   ///< the stop is a tie member of tile s.tie_tile: rescan that tile
  kFailed = 5     ///< internal error (reported by the host after the run)
};

/// Buffers that hold listed sources: the scoring pass's list, two compaction buffers, and the
/// gather buffer of the resolution.
enum Buffer : uint32_t { kList = 0, kCompactA = 1, kCompactB = 2, kGather = 3, kNone = 4 };

struct Search {
  Rank lo = 0, hi = 0;    ///< the stop's rank lies in [lo, hi]
  uint64_t above = 0;     ///< weight of every source ranked above hi
  uint64_t listed = 0;    ///< listed (non-tie) sources with rank in [lo, hi]
  uint32_t tie_in = 0;    ///< the tie group's ranks lie in [lo, hi]
  uint32_t shift = 0;     ///< digit shift of the current level
  uint32_t src = kList;   ///< buffer holding the members
  uint32_t dst = kNone;   ///< compaction target of the current level
  uint32_t next = kDone;  ///< phase after a fallback pass
  uint32_t bin = 0;       ///< coarse boundary bin
  uint32_t steps = 0;     ///< levels and resolutions run this epoch
  uint32_t pad = 0;
  uint64_t tie_tile = 0;  ///< kTieTile: the tile holding the stop
  uint64_t tie_acc = 0;   ///< kTieTile: weight ranked before that tile's tie members
};

/// Counters kept over a whole run (what the benchmark reports).
struct Diagnostics {
  uint64_t epochs = 0;     ///< selections made
  uint64_t misses = 0;     ///< fallback passes (window missed)
  uint64_t levels = 0;     ///< histogram levels
  uint64_t tie_scans = 0;  ///< stops found inside the tie group
  uint64_t listed = 0;     ///< sources listed by scoring passes (sum over epochs)
  uint64_t failures = 0;   ///< internal errors (must stay 0)
  uint64_t recounts = 0;   ///< histograms counted again (a boundary below the lump floor)
};

/// Device-resident state of the selection; also the host twin's state.
struct SelectState {
  Plan plan;        ///< window and tie key of the scoring pass in progress
  Applied applied;  ///< the previous epoch's selection (read by the next apply)
  Search s;         ///< the refinement in progress
  uint32_t phase = kDone;
  uint32_t pad = 0;
  uint64_t pointer = 0;       ///< round robin: first source of the current epoch's order
  uint64_t pointer_prev = 0;  ///< round robin: the pointer the applied selection was scored with
  uint64_t buffer_count[4] = {0, 0, 0, 0};  ///< items in each Buffer
  uint64_t mark_count = 0;  ///< listed sources of the last scoring pass (the stochastic engine
                            ///< resolves their classes after the selection)
  uint64_t tie_count = 0;   ///< tie members this epoch
  uint64_t tie_weight = 0;  ///< their total weight
  /// The boundary bins of the last kRecentBoundaries selections (recent[k % kRecentBoundaries]
  /// for the k-th; `recorded` of them so far): the next window covers their spread.
  uint16_t recent[kRecentBoundaries] = {};
  uint64_t recorded = 0;
  Diagnostics diag;
};

// ---- step 2 and the boundary of every level ---------------------------------------------------

/// The boundary is the first bin from the top whose weight overflows: `above_before` (the weight
/// ranked before it) still fits and adding its own weight `w` does not. Exactly one bin of a
/// histogram satisfies this when its total overflows, and none otherwise.
CE_HD_INLINE bool is_boundary(uint64_t above_before, uint64_t w, uint64_t limit) {
  return above_before <= limit && w > limit - above_before;
}

/// Serial walk over `bins` bins from the highest (the host's version of the GPU's block scan):
/// returns the boundary bin and sets *above_before, or -1 when the total fits.
CE_HD_INLINE int find_boundary(const uint64_t* w, int bins, uint64_t above, uint64_t limit,
                               uint64_t* above_before) {
  for (int b = bins - 1; b >= 0; --b) {
    if (is_boundary(above, w[b], limit)) {
      *above_before = above;
      return b;
    }
    above += w[b];
  }
  return -1;
}

// ---- step 3 -----------------------------------------------------------------------------------

/// Smallest shift with (hi >> shift) - (lo >> shift) < kBins.
CE_HD_INLINE uint32_t digit_shift(Rank lo, Rank hi) {
  uint32_t s = 0;
  while (((hi >> s) - (lo >> s)) >= Rank(kBins)) ++s;
  return s;
}

CE_HD_INLINE uint32_t digit_of(Rank r, Rank lo, uint32_t shift) {
  return uint32_t((r >> shift) - (lo >> shift));
}

/// Digit of the tie group: that of its lowest rank. The group is counted, not listed, so its whole
/// weight goes there; no listed source has its key, so no listed source lies between that digit
/// and the group's highest rank, and the group keeps its place in the order.
CE_HD_INLINE uint32_t tie_digit(uint64_t tie_key, const Search& s) {
  return digit_of(rank_floor(tie_key), s.lo, s.shift);
}

/// Whether the current level compacts its members into another buffer: only when they fill at
/// most half of the buffer they are read from and fit in the compaction buffers.
CE_HD_INLINE bool should_compact(uint64_t listed, uint64_t src_size, uint64_t capacity) {
  return listed <= capacity && 2 * listed <= src_size;
}

CE_HD_INLINE uint32_t other_compaction_buffer(uint32_t src) {
  return src == kCompactA ? kCompactB : kCompactA;
}

/// Sets up a level before the kernel that runs it (its blocks only read the state): the digit
/// shift, and whether members are compacted (and where; that buffer's count starts at 0).
CE_HD_INLINE void begin_level(SelectState& st, uint64_t capacity) {
  Search& s = st.s;
  s.shift = digit_shift(s.lo, s.hi);
  s.dst = should_compact(s.listed, st.buffer_count[s.src], capacity)
              ? other_compaction_buffer(s.src)
              : uint32_t(kNone);
  if (s.dst != kNone) st.buffer_count[s.dst] = 0;
}

/// Sets the phase that follows once [lo, hi] holds s.listed listed members.
CE_HD_INLINE uint32_t next_phase(SelectState& st, uint64_t capacity) {
  if (st.s.listed > kResolveMax) {
    begin_level(st, capacity);
    return kLevel;
  }
  st.buffer_count[kGather] = 0;
  return kResolve;
}

/// The search's range for boundary bin b: its keys (first_key_b = first_key_of_bin(b), and that of
/// b + 1), the weight ranked above it, its listed members (count_b less the tie group's).
CE_HD_INLINE void aim_search(SelectState& st, uint32_t b, uint64_t above, uint64_t count_b,
                             uint64_t first_key_b, uint64_t first_key_b1) {
  Search& s = st.s;
  s.bin = b;
  s.lo = rank_floor(first_key_b);
  s.hi = rank_ceil(first_key_b1 - 1);
  s.above = above;
  s.tie_in = st.plan.has_tie && st.tie_count > 0 && coarse_bin(st.plan.tie_key) == b;
  s.listed = count_b - (s.tie_in ? st.tie_count : 0);
  s.src = kList;
  s.dst = kNone;
  s.steps = 0;
}

/// A boundary outside the window: the fallback pass lists bin s.bin alone (so compacting it would
/// gain nothing), then the search goes on.
CE_HD_INLINE void miss_search(SelectState& st, uint64_t capacity) {
  st.plan.lo = st.plan.hi = st.s.bin;
  st.buffer_count[kList] = 0;
  st.s.next = next_phase(st, capacity);
  st.phase = kFallback;
}

/// Step 2's decision, given the coarse boundary bin b (or -1) and the weight above it.
/// first_key_b, first_key_b1: first_key_of_bin(b) and first_key_of_bin(b + 1).
/// capacity: of each compaction buffer.
CE_HD_INLINE void begin_search(SelectState& st, int b, uint64_t above, uint64_t count_b,
                               uint64_t first_key_b, uint64_t first_key_b1, uint64_t capacity) {
  st.diag.epochs += 1;
  st.diag.listed += st.buffer_count[kList];
  if (b < 0) {  // everything fits
    st.applied.sel = Selection{};
    st.phase = kDone;
    return;
  }
  aim_search(st, uint32_t(b), above, count_b, first_key_b, first_key_b1);
  const bool hit = st.plan.lo <= uint32_t(b) && uint32_t(b) <= st.plan.hi;
  if (hit) {
    st.phase = next_phase(st, capacity);
  } else {
    st.diag.misses += 1;
    miss_search(st, capacity);
  }
}

/// A missed boundary's search again, from a histogram counted again (every source in its own bin)
/// because the scoring pass counted some sources under the lump floor in one bin and its boundary
/// fell there: boundary bin b of the new counts, the same epoch (no counter but recounts moves).
CE_HD_INLINE void recount_search(SelectState& st, uint32_t b, uint64_t above, uint64_t count_b,
                                 uint64_t first_key_b, uint64_t first_key_b1, uint64_t capacity) {
  st.diag.recounts += 1;
  aim_search(st, b, above, count_b, first_key_b, first_key_b1);
  miss_search(st, capacity);
}

/// The phase a refinement kernel runs (a fallback pass has run before it, in stream order).
CE_HD_INLINE uint32_t effective_phase(const SelectState& st) {
  return st.phase == kFallback ? st.s.next : st.phase;
}

/// End of a level: the boundary digit j was found in the level's histogram (to which the caller
/// added the tie group's weight at tie_digit), with `above_before` ranked above it and
/// `listed_j` listed members in it; [min_rank, max_rank] bound every member of the level (listed
/// and tie). Narrows the range and picks the next phase. Returns false when the digit holds only
/// the tie group (resolve it now: nothing to gather).
CE_HD_INLINE bool end_level(SelectState& st, uint32_t j, uint64_t above_before, uint64_t listed_j,
                            Rank min_rank, Rank max_rank, uint64_t capacity) {
  Search& s = st.s;
  st.diag.levels += 1;
  const bool tie_in = s.tie_in && tie_digit(st.plan.tie_key, s) == j;
  const Rank base = (s.lo >> s.shift) + Rank(j);
  // (base + 1) << shift is at most 2^128, which wraps to 0: hi is then the top rank, clipped below.
  Rank lo = base << s.shift, hi = ((base + 1) << s.shift) - 1;
  if (lo < s.lo) lo = s.lo;
  if (hi > s.hi) hi = s.hi;
  if (lo < min_rank) lo = min_rank;
  if (hi > max_rank) hi = max_rank;
  s.lo = lo;
  s.hi = hi;
  s.above = above_before;
  s.tie_in = tie_in;
  s.listed = listed_j;
  if (s.dst != kNone) s.src = s.dst;
  s.dst = kNone;
  st.phase = next_phase(st, capacity);
  return listed_j > 0;
}

// ---- step 4 -----------------------------------------------------------------------------------

/// The walk of the resolution, in the form a block computes it in parallel. Members are sorted by
/// rank (descending); excl is the weight of the members before this one. The tie group sits before
/// the first member whose key is below the tie key, so that member and every later one also have
/// the group's weight before them. Exactly one of the members and the tie group is the stop when
/// the range's weight overflows the limit.
CE_HD_INLINE uint64_t tie_before(uint64_t key, const Search& s, uint64_t tie_key, uint64_t tie_w) {
  return s.tie_in && key < tie_key ? tie_w : 0;
}
CE_HD_INLINE bool member_is_stop(uint64_t key, uint64_t w, uint64_t excl, const Search& s,
                                 uint64_t tie_key, uint64_t tie_w, uint64_t limit) {
  return is_boundary(s.above + excl + tie_before(key, s, tie_key, tie_w), w, limit);
}
/// w_above_tie: weight of the members whose key is above the tie key.
CE_HD_INLINE bool tie_is_stop(uint64_t w_above_tie, const Search& s, uint64_t tie_w,
                              uint64_t limit) {
  return s.tie_in && is_boundary(s.above + w_above_tie, tie_w, limit);
}

/// Result of the resolution: the stop is a listed member...
CE_HD_INLINE void set_stop(SelectState& st, uint64_t key, uint64_t id) {
  st.applied.sel = Selection{key, id, false};
  st.phase = kDone;
}

/// ... or a tie member. Tie weights are summed per tile of kTile ids (and per block of the
/// scoring pass, a contiguous run of tiles), so the stop's tile is found by prefix sums in id
/// order: the first tile that overflows, given the weight `acc_before` ranked before it.
CE_HD_INLINE void begin_tie_tile(SelectState& st, uint64_t tile, uint64_t acc_before) {
  st.s.tie_tile = tile;
  st.s.tie_acc = acc_before;
  st.diag.tie_scans += 1;
  st.phase = kTieTile;
}

// ---- step 5 -----------------------------------------------------------------------------------

/// Window of bins around b for the next epoch: grows one bin at a time, alternating above and
/// below, while the listed count (histogram count minus the tie group) stays within the budget.
CE_HD_INLINE Plan plan_window(const uint64_t* count, uint32_t b, uint64_t budget, uint64_t tie_key,
                              bool has_tie, uint64_t tie_count_in_b) {
  Plan p;
  p.lo = p.hi = b;
  p.has_tie = has_tie;
  p.tie_key = tie_key;
  uint64_t total = count[b] - tie_count_in_b;
  for (int step = 0; step < kMaxWindowHalf; ++step) {
    bool grew = false;
    if (p.hi + 1 < uint32_t(kBins) && total + count[p.hi + 1] <= budget)
      total += count[++p.hi], grew = true;
    if (p.lo > 0 && total + count[p.lo - 1] <= budget) total += count[--p.lo], grew = true;
    if (!grew) break;
  }
  return p;
}

/// Listed sources a window may hold to cover the boundary's recent spread (spread_window): more
/// than window_budget, since a miss costs a fallback pass over every source.
CE_HD_INLINE uint64_t spread_budget(uint64_t n) {
  const uint64_t b = n / 4;
  return b > kResolveMax ? b : kResolveMax;
}

/// Widens plan p (around boundary bin b) to the bins where the boundary lay in the last
/// kRecentBoundaries selections, while the listed count stays within `budget`. A boundary that
/// swings between neighbouring bins each holding more than window_budget sources (the
/// deterministic Whittle policy at M/N = 10%: 5-15% of the sources per bin) would otherwise miss
/// the one-bin window on every swing, and each miss costs a fallback pass.
CE_HD_INLINE void spread_window(Plan& p, const uint64_t* count, uint64_t listed, uint32_t lo,
                                uint32_t hi, uint64_t budget) {
  for (int step = 0; step < kMaxWindowHalf; ++step) {
    bool grew = false;
    if (p.hi < hi && listed + count[p.hi + 1] <= budget) listed += count[++p.hi], grew = true;
    if (p.lo > lo && listed + count[p.lo - 1] <= budget) listed += count[--p.lo], grew = true;
    if (!grew) break;
  }
}

/// Closes the epoch: the record the next apply reads, the round-robin pointer, the next plan.
/// count: the coarse histogram's counts (before it is cleared).
CE_HD_INLINE void finalize(SelectState& st, const uint64_t* count, uint64_t n) {
  st.applied.tie_key = st.plan.tie_key;
  st.applied.has_tie = st.plan.has_tie;
  st.pointer_prev = st.pointer;
  const Selection& sel = st.applied.sel;
  if (!sel.all) {
    st.pointer = sel.stop_id;
    const uint32_t b = st.s.bin;
    const bool tie_in_b = st.plan.has_tie && coarse_bin(st.plan.tie_key) == b;
    const uint64_t tie_in = tie_in_b ? st.tie_count : 0;
    st.plan = plan_window(count, b, window_budget(n), sel.stop_key, true, tie_in);
    st.recent[st.recorded % kRecentBoundaries] = uint16_t(b);
    st.recorded += 1;
    const uint64_t seen = st.recorded < kRecentBoundaries ? st.recorded : kRecentBoundaries;
    uint32_t lo = b, hi = b;
    for (uint64_t k = 0; k < seen; ++k) {
      lo = st.recent[k] < lo ? st.recent[k] : lo;
      hi = st.recent[k] > hi ? st.recent[k] : hi;
    }
    uint64_t listed = 0;
    for (uint32_t k = st.plan.lo; k <= st.plan.hi; ++k) listed += count[k];
    spread_window(st.plan, count, listed - tie_in, lo, hi, spread_budget(n));
  }
  st.tie_count = 0;
  st.tie_weight = 0;
  st.mark_count = st.buffer_count[kList];
  st.buffer_count[kList] = 0;
  st.phase = kDone;
}

/// Closes an epoch whose search failed (an internal error: the host reports it after the run and
/// returns no result). Counted in the diagnostics; the counts the next scoring pass appends to
/// start again at 0 and the next plan has no window, so the epochs that follow run on a clean
/// state instead of listing past the end of the list.
CE_HD_INLINE void abandon(SelectState& st) {
  st.diag.failures += 1;
  st.plan = Plan{};
  st.applied = Applied{};
  st.tie_count = 0;
  st.tie_weight = 0;
  st.mark_count = 0;
  for (uint64_t& c : st.buffer_count) c = 0;
  st.phase = kDone;
}

/// The plan of an epoch without a previous one (the first of a replication), estimated on the host
/// from the keys of a sample of sources (key, weight) out of n: the window around the boundary
/// bin of the sample's histogram scaled to n, and the sample's boundary key as the tie key when
/// the sample holds it more than once (every source at score 0, say). A poor estimate costs a
/// fallback pass, never a wrong selection.
inline Plan initial_plan(std::vector<std::pair<uint64_t, uint64_t>> sample, uint64_t n,
                         uint64_t limit) {
  if (sample.empty() || n == 0) return Plan{};
  const double scale = double(n) / double(sample.size());
  std::vector<uint64_t> count(kBins, 0), weight(kBins, 0);
  std::vector<double> cf(kBins, 0.0), wf(kBins, 0.0);
  for (const auto& kw : sample) {
    const uint32_t b = coarse_bin(kw.first);
    cf[b] += scale;
    wf[b] += scale * double(kw.second);
  }
  for (int b = 0; b < kBins; ++b)
    count[b] = uint64_t(cf[b] + 0.5), weight[b] = uint64_t(std::min(wf[b] + 0.5, 4.0e18));
  uint64_t above = 0;
  const int b = find_boundary(weight.data(), kBins, 0, limit, &above);
  if (b < 0) return Plan{};
  std::sort(sample.begin(), sample.end(),
            [](const auto& x, const auto& y) { return x.first > y.first; });
  double acc = 0.0;
  uint64_t boundary_key = sample.back().first;
  for (const auto& kw : sample) {
    acc += scale * double(kw.second);
    if (acc > double(limit)) {
      boundary_key = kw.first;
      break;
    }
  }
  const auto same = std::count_if(sample.begin(), sample.end(),
                                  [&](const auto& kw) { return kw.first == boundary_key; });
  return plan_window(count.data(), uint32_t(b), window_budget(n), boundary_key, same >= 2, 0);
}

}  // namespace crawleval::window
