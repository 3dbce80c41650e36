// nutch-adaptive: Apache Nutch's AdaptiveFetchSchedule, the re-crawl rule production crawlers ship,
// as a freshness scheduler (freshness.hpp), written once for every engine.
//
// Per URL an interval (in epochs: an epoch read as a day) and the epoch it is next due. A crawl
// that finds the page unchanged multiplies the interval by 1 + INC_RATE = 1.4, one that finds it
// changed by 1 - DEC_RATE = 0.8 (Nutch's defaults, db.fetch.schedule.adaptive.inc_rate 0.4 and
// dec_rate 0.2), clamped to [1 epoch, max] (Nutch: min_interval, db.fetch.interval.max); the URL
// is next due at the crawl's epoch plus the new interval rounded half up (Nutch: fetch time plus
// Math.round of the interval). Nutch's sync-delta adjustment (sync_delta, which moves the next
// fetch towards the page's last-modified time) is off: the model keeps no modification times.
//
// "Finds the page changed": the URL changed since its last crawl (the engine's count of missed
// changes is above 0 at the crawl), which the crawler learns by comparing the content it fetches
// with its copy, for completely and incompletely observed URLs alike.
//
// Scheduling: a URL is due when its next due epoch has come; due URLs are ranked by importance
// per unit of cost (w / C), within the budget and the host caps, ties by id as every policy's;
// a URL that is not due is ineligible (as one beyond its host's cap: it weighs 0 in the
// selection and is never crawled), so no budget is spent on it. Its score, -inf, ranks it after
// every due URL, so that it never takes a due URL's place among its host's top m.
//
// State: NutchState per URL, which the engine carries through the epochs of one run and makes
// afresh for every replication and pilot (nutch_start_state): interval = start, and the first due
// epoch uniform in 0..ceil(start)-1 (Stream::nutch_start, keyed by seed, replication and URL),
// so that the first crawls spread over one start interval as in a crawl that has run a while.
//
// Example (start 30, max 365): the crawls find the page unchanged, unchanged, changed: the
// intervals are 30 -> 42 -> 58.8 -> 47.04; a URL first due at epoch 5 is crawled (budget
// permitting) at 5, 47, 106, 153.
#pragma once

#include <cmath>
#include <cstdint>

#include "crawleval/base/hd.hpp"
#include "crawleval/model/freshness.hpp"
#include "crawleval/model/rng.hpp"

namespace crawleval {

inline constexpr double kNutchGrow = 1.4;             ///< 1 + INC_RATE (0.4): found unchanged
inline constexpr double kNutchShrink = 0.8;           ///< 1 - DEC_RATE (0.2): found changed
inline constexpr double kNutchMinInterval = 1.0;      ///< one epoch
inline constexpr uint32_t kNutchNever = 0xFFFFFFFFu;  ///< beyond every run's last epoch

/// One URL's schedule (16 bytes).
struct NutchState {
  double interval;    ///< epochs
  uint32_t next_due;  ///< the epoch from which the URL is due (kNutchNever: beyond the run)
};

/// The interval after a crawl that found the page changed or not, clamped to [1, max].
CE_HD_INLINE double nutch_interval(double interval, bool changed, double max) {
  const double next = interval * (changed ? kNutchShrink : kNutchGrow);
  return next < kNutchMinInterval ? kNutchMinInterval : next > max ? max : next;
}

/// The epoch after `epoch` plus `interval` epochs, rounded half up (kNutchNever from 2^32 - 1 on).
CE_HD_INLINE uint32_t nutch_due_after(uint32_t epoch, double interval) {
  const double due = double(epoch) + floor(interval + 0.5);
  return due < double(kNutchNever) ? uint32_t(due) : kNutchNever;
}

/// A run's start (every replication and pilot): interval `start`, first due uniform in
/// 0..ceil(start)-1.
CE_HD_INLINE NutchState nutch_start_state(double start, uint64_t seed, uint32_t replication,
                                          uint64_t source) {
  const double u = uniform(philox_words(seed, source, 0, replication, Stream::nutch_start, 0).w[0]);
  double due = floor(u * start);
  const double last = ceil(start) - 1.0;  // (u * start may round up to start itself)
  if (due > last) due = last;
  return NutchState{start, due < double(kNutchNever) ? uint32_t(due) : kNutchNever};
}

CE_HD_INLINE bool nutch_due(const NutchState& s, uint32_t epoch) { return s.next_due <= epoch; }

/// The score: importance per unit of cost when due, -inf (after every due URL) when not; the
/// engines also take a URL that is not due out of the selection (weight 0, never crawled).
CE_HD_INLINE double nutch_score(const NutchState& s, uint32_t epoch, const FreshParams& p) {
  return nutch_due(s, epoch) ? p.weight * p.inv_cost : -INFINITY;
}

/// After a crawl at `epoch` that found the page changed (`changed`: changes since the last crawl)
/// or not: the new interval and next due epoch.
CE_HD_INLINE void nutch_crawled(bool changed, uint32_t epoch, double max, NutchState* s) {
  s->interval = nutch_interval(s->interval, changed, max);
  s->next_due = nutch_due_after(epoch, s->interval);
}

}  // namespace crawleval
