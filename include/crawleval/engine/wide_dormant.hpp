// Sleeping sources in the CUDA wide engine's deterministic pass (kernels/dormant_pass.cu): the
// per-source step, the ceiling that lets a source sleep, the layout of the live sources and the
// rule that decides when sources sleep and wake. Everything here is __host__ __device__: the
// kernels run it per thread, and tests/test_gpu_dormant_twin.cpp runs the same functions on the
// host, thread by thread in the kernels' order, against the pass over every source.
//
// The contract (docs/gpu-design.md, "Sleeping sources"): the same crawled sets and the same
// rewards, bit for bit, as the pass over every source.
//  - A source on the index grid scores at most fl(u* / C) at any age (its state u* (1 - alpha^k)
//    never exceeds u*, and the index subtracts a non-negative term), so once that ceiling's coarse
//    bin lies under the plan's lump floor its class is kBelow at every epoch until the floor
//    drops: it sleeps, and the pass neither reads nor writes it. Its state is its age, so waking
//    it is one addition (the epochs it slept).
//  - Rewards: block b of the scoring pass owns tiles [t0, t1), and thread `lane` the sources
//    (tile * kTile + j * kLanes + lane) in that order; each thread adds its crawled sources'
//    rewards in that order, then the block and the grid reduce as the plain pass does. The live
//    sources of a thread are listed in the same order (slot base + k * kLanes + lane), so each
//    thread adds the same rewards in the same order, and a sleeping source is never crawled.
//  - The histogram: a sleeping source is counted in the bin under the floor it was put to sleep
//    at (the "lump"); every bin at and above that floor is exact. A boundary under it is
//    counted again (every source awake) before the selection goes on. The next plan's window may
//    reach the lump or the bins under it (window::finalize reads them), so the selection's path
//    (window misses, listed sources) can differ from the pass over every source's; the
//    selection is exact for any plan, and sources wake as soon as a floor drops under theirs.
#pragma once

#include <cstdint>

#include "crawleval/base/fp.hpp"
#include "crawleval/base/hd.hpp"
#include "crawleval/model/model.hpp"
#include "crawleval/model/selection.hpp"
#include "crawleval/select/window_select.hpp"

namespace crawleval::wide {

/// Threads per block of the scoring pass and sources per thread and tile (kernels/select_device.cuh
/// checks that these are its kThreads and kItems).
inline constexpr uint32_t kLanes = 256;
inline constexpr uint32_t kPerTile = window::kTile / kLanes;
/// The class bits of a deterministic state word (kernels/epoch_kernels.cuh: bits 29-30).
inline constexpr uint32_t kClassShift = 29;
inline constexpr uint32_t kClassMask = 3u << kClassShift;

// ---- the step ---------------------------------------------------------------------------------

/// The constants the fused deterministic pass reads of a source (its columns mu T, u* and C):
/// 1 - alpha from one expm1, 1 / C correctly rounded (the host's bits).
CE_HD_INLINE SourceParams grid_params(double mu_t, double u_star, double cost, bool unit) {
  SourceParams p{};
  p.mu_t = mu_t;
  p.u_star = u_star;
  p.x_cap = u_star;  // the wide regime runs the base model: no expiry
  p.om_alpha = -fp_expm1(-mu_t);
  p.inv_cost = unit ? 1.0 : 1.0 / cost;
  return p;
}

/// One grid source's epoch in the fused deterministic pass: apply the previous selection
/// (crawled or not), move, score. One expm1: 1 - alpha^s for the reward of a crawled source,
/// 1 - alpha^(s+1) for the new state of the others (a crawled one's is 1 - alpha: p.om_alpha),
/// the same operations as AgeState::value, so that the fallback pass, the tie tile and a listed
/// source's own key recompute these scores bit for bit.
struct GridStep {
  uint32_t next;  ///< the state word (age), class bits clear
  double reward;  ///< the crawled source's state (0 when not crawled)
  double score;   ///< Whittle's index or greedy's x / C at the new state
};
template <bool Greedy>
CE_HD_INLINE GridStep grid_step(uint32_t s, bool crawled, bool apply, const SourceParams& p) {
  GridStep r{s, 0.0, 0.0};
  if (apply) r.next = AgeState::next(s, crawled);
  const uint32_t k = crawled ? s : r.next;
  const double om_k = -fp_expm1(mul_rn(-p.mu_t, double(k)));
  if (crawled) r.reward = mul_rn(p.u_star, om_k);
  const double om = crawled ? p.om_alpha : om_k;
  const double x = mul_rn(p.u_star, om);
  r.score = Greedy ? mul_rn(x, p.inv_cost) : whittle_line(x, double(r.next), om, p);
  return r;
}

/// The score a grid source had when its state word was s (what the scoring pass gave it): a
/// listed source's own key, recomputed where the mark kernel's class is not at hand.
template <bool Greedy>
CE_HD_INLINE double grid_score(uint32_t s, const SourceParams& p) {
  return grid_step<Greedy>(s, false, false, p).score;
}

/// The least upper bound this engine has for every score a grid source takes at any age: x =
/// fl(u* om) with om = -expm1(-mu T k) in [0, 1] (expm1_fast never returns below -1), so x <= u*
/// and u* - x >= 0; Whittle's line subtracts k (1 - alpha) (u* - x) >= 0 from fl(u* om), and
/// every rounding is monotone, so both policies' scores are at most fl(u* / C).
CE_HD_INLINE double grid_ceiling(const SourceParams& p) { return mul_rn(p.u_star, p.inv_cost); }

/// Whether a grid source whose word is w (class bits included, as the mark kernel left it) may
/// sleep under lump floor `floor`: its class applies as "not crawled" and its ceiling's bin lies
/// under the floor. Sources off the grid (a full or given start, not crawled yet) never sleep.
CE_HD_INLINE bool may_sleep(uint32_t w, double ceiling, uint32_t floor) {
  if (w & AgeState::kOffGrid) return false;
  if (((w & kClassMask) >> kClassShift) != window::kBelow) return false;
  return coarse_bin_of_score(ceiling) < floor;
}

// ---- the layout -------------------------------------------------------------------------------

/// Which sources thread `lane` of block b owns, in the order it adds their rewards (position pos =
/// (tile - t0) kPerTile + j), and where the k-th of its live sources is stored (the live columns
/// are laid out like the population: block b's slots are its own ids' range).
struct Geometry {
  uint64_t n = 0, tiles = 0;
  uint32_t blocks = 1;
  CE_HD_INLINE uint64_t first_tile(uint32_t b) const { return uint64_t(b) * tiles / blocks; }
  CE_HD_INLINE uint32_t positions(uint32_t b) const {
    return uint32_t((first_tile(b + 1) - first_tile(b)) * kPerTile);
  }
  CE_HD_INLINE uint64_t id(uint32_t b, uint32_t lane, uint32_t pos) const {
    return (first_tile(b) + pos / kPerTile) * window::kTile + uint64_t(pos % kPerTile) * kLanes +
           lane;
  }
  CE_HD_INLINE uint64_t slot(uint32_t b, uint32_t lane, uint32_t k) const {
    return first_tile(b) * window::kTile + uint64_t(k) * kLanes + lane;
  }
};

// ---- when sources sleep and wake --------------------------------------------------------------

/// Epochs between two rounds that put sources to sleep (at least), and the calm epochs after which
/// a doubled wait halves again (the CPU engine's tuning, host/engine/cpu/cpu_backend.cpp).
inline constexpr uint32_t kResleep = 32, kMaxResleep = 4096, kCalm = 512;

enum Mode : uint32_t { kPlain = 0, kDormant = 1 };
enum Action : uint32_t { kNone = 0, kWake = 1, kSleep = 2 };
/// Where a flush runs in an epoch: after the scoring pass (a missed window: the fallback pass reads
/// every source), before the tie tile (it rescans a tile by id), at the end (the next selection
/// crawls everything, the floor dropped under the sleeping sources, or they are put to sleep
/// again).
enum Point : uint32_t { kAfterScore = 0, kBeforeTie = 1, kAtEnd = 2 };

/// The device-resident state of the sleeping sources (one per run; reset at each replication but
/// for the counters).
struct DormantState {
  uint32_t mode = kPlain;
  uint32_t floor = 0;  ///< every sleeping source's ceiling bin lies under it
  uint32_t stamp = 0;  ///< the epoch whose states the sleeping sources' words hold
  uint32_t last = 0;   ///< the epoch sources were last put to sleep or woken
  uint32_t wait = kResleep;
  uint32_t calm = 0;  ///< epochs since the last forced wake
  uint32_t action = kNone, target = 0;
  uint64_t sleeping = 0, sleeping_weight = 0;  ///< sources asleep and their fixed-point weights
  // Counters, kept over replications (the recounts are the selection's: Diagnostics::recounts).
  uint64_t asleep_epochs = 0;  ///< measured source-epochs of sleeping sources
  uint64_t wakes = 0;          ///< flushes that woke every source (a miss, a tie tile, an epoch
                               ///< that crawls everything, a floor under the sleeping sources)
  uint32_t eager = 0;          ///< tests: sleep at every epoch that can
  uint32_t pad = 0;
};

/// Resets what a replication starts from (the counters stay).
CE_HD_INLINE void start_replication(DormantState& d) {
  d.mode = kPlain;
  d.floor = d.stamp = d.last = d.calm = 0;
  d.wait = d.eager ? 1u : kResleep;
  d.action = kNone, d.target = 0;
  d.sleeping = d.sleeping_weight = 0;
}

/// Whether the flush at `point` runs in this epoch: only in dormant mode, and then after the
/// scoring pass when the window missed, before the tie tile when the stop lies in the tie group,
/// at the end when decide() woke the sources or puts them to sleep again.
CE_HD_INLINE bool flush_due(const DormantState& d, Point point, uint32_t phase) {
  if (d.mode != kDormant) return false;
  switch (point) {
    case kAfterScore:
      return phase == window::kFallback;
    case kBeforeTie:
      return phase == window::kTieTile;
    default:
      return d.action != kNone;
  }
}

/// Whether a flush after the scoring pass must count the histogram again: the boundary the lumped
/// histogram gave lies under the floor, where the sleeping sources were counted in one bin.
CE_HD_INLINE bool recount_due(const DormantState& d, const window::SelectState& st) {
  return d.mode == kDormant && d.sleeping > 0 && st.phase == window::kFallback &&
         st.s.bin < d.floor;
}

/// After a flush that woke every source (mode plain from the next pass on). `now`: the epoch the
/// pass has moved the sources to. A forced wake doubles the wait before sources sleep again.
CE_HD_INLINE void woke(DormantState& d, uint32_t now, bool forced) {
  d.mode = kPlain;
  d.sleeping = d.sleeping_weight = 0;
  d.floor = 0;
  d.last = now;
  if (forced) {
    d.wakes += 1;
    d.calm = 0;
    if (!d.eager) d.wait = d.wait < kMaxResleep ? 2 * d.wait : kMaxResleep;
  }
}

/// At the end of epoch `now`'s selection: what the sources do before the next pass, which
/// classifies against `next` and applies `applied`. Sets d.action (and d.target, the floor to
/// sleep under) for the flush and sleep kernels.
CE_HD_INLINE void decide(DormantState& d, const window::Plan& next, const window::Applied& applied,
                         uint32_t now) {
  const uint32_t floor = window::lump_floor(next);
  d.action = kNone;
  d.target = floor;
  if (d.calm < 0xFFFFFFFFu) d.calm += 1;
  if (d.calm >= kCalm && d.wait > kResleep) d.wait /= 2, d.calm = 0;
  const bool due = now - d.last >= d.wait;
  if (d.mode == kDormant) {
    if (applied.sel.all || floor < d.floor) {
      d.action = kWake;  // every source is crawled, or the floor dropped under the sleeping ones
      if (!applied.sel.all && floor > 0 && due) d.action = kSleep;  // wake, then sleep again
    } else if (due && floor > d.floor) {
      d.action = kSleep;  // a raised floor: more may sleep
    }
  } else if (due && floor > 0 && !applied.sel.all) {
    d.action = kSleep;
  }
}

/// After a flush at the end of an epoch (d.action set): the sources are awake.
CE_HD_INLINE void flushed_at_end(DormantState& d, uint32_t now) {
  const bool forced = d.action == kWake;
  const uint32_t action = d.action;
  woke(d, now, forced);
  d.action = action;  // the sleep kernel reads it
}

/// After the sleep kernel put `sleeping` sources (of fixed-point weight `weight`) to sleep under
/// d.target at epoch `now`; none: the pass over every source goes on, and the wait doubles.
CE_HD_INLINE void slept(DormantState& d, uint64_t sleeping, uint64_t weight, uint32_t now) {
  d.action = kNone;
  d.last = now;
  if (sleeping == 0) {
    d.mode = kPlain;
    if (!d.eager) d.wait = d.wait < kMaxResleep ? 2 * d.wait : kMaxResleep;
    return;
  }
  d.mode = kDormant;
  d.floor = d.target;
  d.stamp = now;
  d.sleeping = sleeping;
  d.sleeping_weight = weight;
}

// ---- the walks of one thread ------------------------------------------------------------------

/// Makes the words of thread `lane` of block b current in the population's order: a live source's
/// from its slot, a sleeping one's aged by `delta` epochs (its class stays kBelow). io provides
/// live_pos(slot), live_word(slot), word(i), set_word(i, w), and visit(i, w, valid) for each of
/// the thread's positions in order (valid: i < n; every position is visited, so that a device
/// caller's warp collectives see every lane). `len`: the thread's live sources.
CE_HD_TEMPLATE_CHECK_OFF
template <class Io>
CE_HD_INLINE void flush_walk(const Geometry& g, uint32_t b, uint32_t lane, uint32_t len,
                             uint32_t delta, Io& io) {
  const uint32_t np = g.positions(b);
  uint32_t k = 0;
  uint32_t at = len ? io.live_pos(g.slot(b, lane, 0)) : np;
  for (uint32_t pos = 0; pos < np; ++pos) {
    const uint64_t i = g.id(b, lane, pos);
    const bool valid = i < g.n;
    uint32_t w = 0;
    if (valid) {
      if (pos == at) {
        w = io.live_word(g.slot(b, lane, k));
        ++k;
        at = k < len ? io.live_pos(g.slot(b, lane, k)) : np;
      } else {
        w = io.word(i) + delta;
      }
      io.set_word(i, w);
    }
    io.visit(i, w, valid);
  }
}

/// Puts to sleep what may sleep under `floor` among the sources of thread `lane` of block b (their
/// words current in the population's order) and lists the others in its slots, in order. io
/// provides word(i), params(i) (the step's SourceParams), weight(i), and add_live(slot, pos, i, w).
/// Returns the thread's live sources; adds its sleeping ones and their weights.
CE_HD_TEMPLATE_CHECK_OFF
template <class Io>
CE_HD_INLINE uint32_t sleep_walk(const Geometry& g, uint32_t b, uint32_t lane, uint32_t floor,
                                 Io& io, uint64_t* sleeping, uint64_t* weight) {
  const uint32_t np = g.positions(b);
  uint32_t k = 0;
  for (uint32_t pos = 0; pos < np; ++pos) {
    const uint64_t i = g.id(b, lane, pos);
    if (i >= g.n) break;  // ids grow with pos
    const uint32_t w = io.word(i);
    if (may_sleep(w, grid_ceiling(io.params(i)), floor)) {
      *sleeping += 1;
      *weight += io.weight(i);
    } else {
      io.add_live(g.slot(b, lane, k), pos, i, w);
      ++k;
    }
  }
  return k;
}

}  // namespace crawleval::wide
