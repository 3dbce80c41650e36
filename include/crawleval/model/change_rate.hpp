// Change-rate estimation for the freshness model (freshness.hpp): how often a page changes, from
// its crawl history.
//
// Incomplete observations. A crawl only reveals whether the page changed at least once since the
// previous crawl, and the intervals between crawls vary. With Poisson changes at rate D, an
// interval of length t shows a change with probability 1 - exp(-D t), so the log-likelihood of a
// history is
//     l(D) = sum_{changed} log(1 - exp(-D t_i)) - D sum_{unchanged} t_j.
// Its maximiser is 0 when nothing changed and infinite when every interval changed. Cho &
// Garcia-Molina ("Estimating frequency of change", ACM TOIT 2003) fix both ends for regular
// intervals I with n crawls and X changes by the bias-reduced estimator
//     D = -log((n - X + 0.5) / (n + 0.5)) / I.
// We use the penalised likelihood that gives exactly that estimator for regular intervals and
// extends it to irregular ones: half an unchanged pseudo-interval of the mean length tbar,
//     l_s(D) = l(D) - 0.5 tbar D,
// whose maximiser solves  sum_{changed} t_i / (exp(D t_i) - 1) = sum_{unchanged} t_j + 0.5 tbar
// (for regular intervals: X I / (exp(D I) - 1) = (n - X + 0.5) I, i.e. Cho's formula). It is 0
// when nothing changed and finite when everything did. The 95% interval is the likelihood-ratio
// interval of l_s: {D >= 0 : l_s(D_hat) - l_s(D) <= 1.92} (chi-square, one degree of freedom).
//
// Complete observations. Every change is seen (the dataset's completely observed URLs give the
// rate itself): k changes in a time S give D = k / S and the likelihood-ratio interval of the
// Poisson likelihood k log D - D S.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>

namespace crawleval {

struct RateEstimate {
  double rate = 0.0;  ///< changes per unit time
  double lo = 0.0;    ///< 95% interval
  double hi = 0.0;
  uint32_t observations = 0;   ///< intervals observed
  uint32_t changes = 0;        ///< of which showed a change
  double observed_time = 0.0;  ///< the intervals' total length
};

/// Half the 95% chi-square quantile with one degree of freedom (3.841459 / 2).
inline constexpr double kHalfChi2_95 = 1.9207294103470415;

/// The penalised maximum-likelihood rate and its interval from n intervals (> 0, finite) and
/// whether each showed a change. n = 0: rate 0, interval [0, inf).
RateEstimate estimate_incomplete(const double* interval, const uint8_t* changed, std::size_t n);

/// Whether a history's estimate is a rate at all: finite, and above 0 when a change was seen
/// (intervals too long, 1e200 days with changes, give none). Every reader of histories refuses
/// one that is not ("gives no finite change rate").
inline bool has_finite_rate(const RateEstimate& e) {
  return e.rate <= 1.7976931348623157e308 && e.rate >= 0.0 && (e.changes == 0 || e.rate > 0.0);
}
inline constexpr const char* kNoFiniteRate =
    "gives no finite change rate (intervals too long or too short)";

/// Completely observed changes: `changes` changes in `time` (> 0) units.
RateEstimate estimate_complete(double changes, double time);

/// The online learner's estimate (the NeurIPS 2019 paper's learning variant and its smoothing):
/// the maximum-likelihood rate of intervals of `bins` distinct lengths, with `changed[b]` of the
/// `total[b]` intervals of length `length[b]` showing a change, plus one changed and one unchanged
/// imaginary interval of length `prior` each (so that no history gives log(2) / prior, and every
/// history a finite positive rate).
double learned_rate_incomplete(const double* length, const uint32_t* changed, const uint32_t* total,
                               std::size_t bins, double prior = 0.5);
/// The same for completely observed changes: (changes + prior) / (time + prior).
inline double learned_rate_complete(double changes, double time, double prior = 0.5) {
  return (changes + prior) / (time + prior);
}

/// The learning variant's record of one URL (every engine keeps one per URL and replication): an
/// IO URL keeps up to kBins distinct interval lengths (epochs between its crawls) with how many of
/// those intervals showed a change and how many there were (a length beyond kBins distinct ones
/// joins the nearest bin: an approximation only for schedules that are far from periodic), a CO
/// URL counts the changes it saw. estimate() is learned_rate_incomplete or _complete of it.
struct LearnedHistory {
  static constexpr int kBins = 4;
  uint32_t length[kBins];
  uint32_t changed[kBins];
  uint32_t total[kBins];
  uint32_t seen;  ///< CO: changes observed (saturating)

  void reset() { *this = LearnedHistory{{0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, 0}; }
  /// An IO URL's crawl after `len` epochs: whether it had changed.
  void add(uint32_t len, bool change) {
    int at = -1, nearest = 0;
    for (int b = 0; b < kBins && at < 0; ++b)
      if (total[b] == 0 || length[b] == len) at = b;
    if (at < 0) {
      for (int b = 1; b < kBins; ++b)
        if (std::llabs(int64_t(length[b]) - len) < std::llabs(int64_t(length[nearest]) - len))
          nearest = b;
      at = nearest;
    }
    if (total[at] == 0) length[at] = len;
    ++total[at];
    changed[at] += change;
  }
  /// A CO URL's epoch that brought `added` changes (all seen).
  void see(uint32_t added) { seen = added > ~0u - seen ? ~0u : seen + added; }
  /// The rate estimate after `elapsed` time units, with imaginary intervals of `prior`.
  double estimate(bool complete, double epoch_length, double elapsed, double prior) const {
    if (complete) return learned_rate_complete(double(seen), elapsed, prior);
    double len[kBins];
    for (int b = 0; b < kBins; ++b) len[b] = double(length[b]) * epoch_length;
    return learned_rate_incomplete(len, changed, total, kBins, prior);
  }
};

/// The penalised log-likelihood l_s of the header (for tests).
double incomplete_log_likelihood(double rate, const double* interval, const uint8_t* changed,
                                 std::size_t n);

}  // namespace crawleval
