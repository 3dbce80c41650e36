// Counter-based randomness shared by every backend.
//
// Every random number is a pure function of (seed, replication, source, epoch, stream, block):
// Philox4x32-10 (Random123) with key = seed and counter = {source, epoch, replication,
// stream << 24 | block}. A CPU run therefore reproduces a GPU run draw for draw, whatever the
// thread or block layout, and replications can be run in any order.
//
// Streams: arrivals of the stochastic model, scores of the random policy, the synthetic population
// generator. Each Philox call yields four 32-bit words; uniform(r) maps a word to the open interval
// (0, 1) exactly (no rounding to 0 or 1), so -log(u) is always finite.
#pragma once

#include <cstdint>

#include <Random123/philox.h>

#include "crawleval/hd.hpp"
#include "crawleval/model.hpp"

namespace crawleval {

enum class Stream : uint32_t {
  arrivals = 1,
  random_policy = 2,
  synthetic = 3,
  belief = 4,
  sync_instance = 5,     ///< synchronization-bandit instance generator
  sync_costs = 6,        ///< synchronization-bandit observations
  lspe = 7,              ///< the LSPE(0) learner's randomised actions
  changes = 8,           ///< freshness model: the change times of a source's epoch
  crawl_coin = 9,        ///< freshness model: LambdaCrawl's coin at a CO source's change
  fresh_synthetic = 10,  ///< freshness model: the synthetic population generator
  fresh_start = 11       ///< freshness model: the steady start's ages and changes
};

struct Words4 {
  uint32_t w[4];
};

CE_HD_INLINE Words4 philox_words(uint64_t seed, uint32_t source, uint32_t epoch,
                                 uint32_t replication, Stream stream, uint32_t block) {
  r123::Philox4x32 gen;
  r123::Philox4x32::ctr_type ctr = {
      {source, epoch, replication, (uint32_t(stream) << 24) | (block & 0xFFFFFFu)}};
  r123::Philox4x32::key_type key = {{uint32_t(seed), uint32_t(seed >> 32)}};
  const r123::Philox4x32::ctr_type r = gen(ctr, key);
  return Words4{{r[0], r[1], r[2], r[3]}};
}

/// Maps a 32-bit word to (0, 1): (w + 1/2) / 2^32, exact in double.
CE_HD_INLINE double uniform(uint32_t w) {
  return mul_rn(add_rn(double(w), 0.5), 2.3283064365386962890625e-10);
}

/// A sequential reader over the words of one (seed, replication, source, epoch, stream) key.
class DrawStream {
 public:
  CE_HD_INLINE DrawStream(uint64_t seed, uint32_t source, uint32_t epoch, uint32_t replication,
                          Stream stream)
      : seed_(seed), source_(source), epoch_(epoch), replication_(replication), stream_(stream) {}

  CE_HD_INLINE uint32_t next_word() {
    if (used_ == 4) {
      const Words4 w = philox_words(seed_, source_, epoch_, replication_, stream_, block_++);
      w0_ = w.w[0], w1_ = w.w[1], w2_ = w.w[2], w3_ = w.w[3];
      used_ = 0;
    }
    // Selected by value, not by indexing an array: on the GPU a run-time index would put the
    // four words in local memory.
    const uint32_t v = used_ == 0 ? w0_ : used_ == 1 ? w1_ : used_ == 2 ? w2_ : w3_;
    ++used_;
    return v;
  }
  CE_HD_INLINE double next_uniform() { return uniform(next_word()); }

 private:
  uint64_t seed_;
  uint32_t source_, epoch_, replication_;
  Stream stream_;
  uint32_t block_ = 0;
  int used_ = 4;
  uint32_t w0_ = 0, w1_ = 0, w2_ = 0, w3_ = 0;
};

/// Distribution of the initial utility of one content item.
enum class UtilityDist : int { deterministic = 0, exponential = 1 };

/// Largest lambda T the stochastic model accepts: the arrivals of one source-epoch are drawn from
/// one Philox counter range of 2^24 blocks (4 words each), and cost O(lambda T) time.
inline constexpr double kMaxArrivalsPerEpoch = 1.0e6;

/// U for one source and epoch (eq. 19): the sum over the epoch's Poisson(lambda T) arrivals of
/// xi_n exp(-mu (T - tau_n)). Arrival times are generated as a Poisson process in epoch time
/// units, s_{n+1} = s_n - log(V_n) / (lambda T), until s >= 1 (equivalent in law to a Poisson
/// count with uniform times); xi_n = xi (deterministic) or -xi log(W_n) (exponential with mean xi).
/// Words used in order: gap, [utility], gap, [utility], ... E[U] = u.
CE_HD_INLINE double sample_arrivals(const SourceParams& p, UtilityDist dist, uint64_t seed,
                                    uint32_t replication, uint32_t source, uint32_t epoch) {
  if (!(p.lambda_t > 0.0) || !(p.xi > 0.0)) return 0.0;
  DrawStream draws(seed, source, epoch, replication, Stream::arrivals);
  const double inv_rate = 1.0 / p.lambda_t;
  double s = 0.0, total = 0.0;
  for (;;) {
    s = sub_rn(s, mul_rn(fp_log(draws.next_uniform()), inv_rate));
    if (s >= 1.0) break;
    const double xi_n =
        dist == UtilityDist::exponential ? mul_rn(-p.xi, fp_log(draws.next_uniform())) : p.xi;
    total = add_rn(total, mul_rn(xi_n, fp_exp(mul_rn(-p.mu_t, sub_rn(1.0, s)))));
  }
  return total;
}

/// A bound on the first uniform of sample_arrivals' draws below which the epoch has no arrival:
/// exp(-lambda T) lowered by a relative 1e-9. A first uniform V at or below it gives a first gap
/// -log(V) / (lambda T) >= 1 + 0.99e-9 / (lambda T) before rounding, and the roundings of exp,
/// log, the division and the product (a few 1e-16 relative) cannot bring it below 1 for
/// lambda T <= kMaxArrivalsPerEpoch: sample_arrivals returns 0 without reading further. Most
/// epochs of a source crawled daily with a few changes a month have no arrival, and this test
/// costs one Philox block and no logarithm. NaN: never below (the draws decide).
CE_HD_INLINE double no_arrival_threshold(double lambda_t) {
  return mul_rn(fp_exp(-lambda_t), 1.0 - 1e-9);
}

/// The first word sample_arrivals reads (block 0 of the source-epoch's arrival stream).
CE_HD_INLINE uint32_t first_arrival_word(uint64_t seed, uint32_t replication, uint32_t source,
                                         uint32_t epoch) {
  return philox_words(seed, source, epoch, replication, Stream::arrivals, 0).w[0];
}

/// sample_arrivals(p, ...), bit for bit, given no_arrival = no_arrival_threshold(p.lambda_t) and
/// the first word w0 = first_arrival_word(seed, replication, source, epoch).
CE_HD_INLINE double sample_arrivals_fast(const SourceParams& p, double no_arrival, uint32_t w0,
                                         UtilityDist dist, uint64_t seed, uint32_t replication,
                                         uint32_t source, uint32_t epoch) {
  if (uniform(w0) <= no_arrival) return 0.0;
  return sample_arrivals(p, dist, seed, replication, source, epoch);
}

/// Score of the random policy: a uniform number keyed like every other draw.
CE_HD_INLINE double random_score(uint64_t seed, uint32_t replication, uint32_t source,
                                 uint32_t epoch) {
  return uniform(philox_words(seed, source, epoch, replication, Stream::random_policy, 0).w[0]);
}

}  // namespace crawleval
