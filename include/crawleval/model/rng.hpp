// Counter-based randomness shared by every backend.
//
// Every random number is a pure function of (seed, replication, source, epoch, stream, block):
// Philox4x32-10 (Random123) with key = draw_key(seed, source) and counter = {source mod 2^32,
// epoch, replication, stream << 24 | block}. A CPU run therefore reproduces a GPU run draw for
// draw, whatever the thread or block layout, and replications can be run in any order.
//
// Draw contract 2 (kDrawContract, written in every JSON result's context): source ids are 64-bit
// global ids. The counter has no room left for the id's high 32 bits, so they enter the key:
// draw_key(seed, id) = seed for ids below 2^32 (exactly the draws of contract 1, which keyed every
// draw by the seed and took 32-bit ids: every earlier result is reproduced bit for bit), and for
// higher ids the first two words of one Philox4x32-10 call keyed by the seed on the counter
// {id >> 32, 0, 0, Stream::key_derivation << 24}, whose stream no draw uses. For one seed that call
// is a bijection of its counter, so two high halves share a key only when 64 of 128 output bits
// collide: a 2^-64 chance per pair, as for two seeds.
//
// Streams: arrivals of the stochastic model, scores of the random policy, the synthetic population
// generator. Each Philox call yields four 32-bit words; uniform(r) maps a word to the open interval
// (0, 1) exactly (no rounding to 0 or 1), so -log(u) is always finite.
#pragma once

#include <cstdint>

#include <Random123/philox.h>

#include "crawleval/base/hd.hpp"
#include "crawleval/model/model.hpp"

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
  fresh_start = 11,      ///< freshness model: the steady start's ages and changes
  relaxed_policy = 12,   ///< the average-budget policy's tie coins (analysis/relaxed_policy.hpp)
  nutch_start = 13,      ///< freshness model: nutch-adaptive's first due epochs (nutch.hpp)
  key_derivation = 255   ///< draw contract 2: the key of ids >= 2^32 (draw_key; never a draw)
};

/// The draw contract's version (above): 1 took 32-bit source ids; 2 takes 64-bit ones and draws
/// exactly as 1 did below 2^32.
inline constexpr int kDrawContract = 2;

struct Words4 {
  uint32_t w[4];
};

using DrawKey = r123::Philox4x32::key_type;

/// The key of ids whose high half `hi` is not 0. Out of line on the GPU: ids below 2^32 never
/// call it, and inlined its ten rounds would hold registers in every kernel that draws.
CE_HD_NOINLINE DrawKey derived_draw_key(uint64_t seed, uint32_t hi) {
  r123::Philox4x32 gen;
  const r123::Philox4x32::ctr_type ctr = {{hi, 0u, 0u, uint32_t(Stream::key_derivation) << 24}};
  const r123::Philox4x32::key_type key = {{uint32_t(seed), uint32_t(seed >> 32)}};
  const r123::Philox4x32::ctr_type r = gen(ctr, key);
  return DrawKey{{r[0], r[1]}};
}

/// Philox's key for the draws of global source id `source` (draw contract 2, above); every
/// backend keys its draws with it.
CE_HD_INLINE DrawKey draw_key(uint64_t seed, uint64_t source) {
  const uint32_t hi = uint32_t(source >> 32);
  if (hi != 0) return derived_draw_key(seed, hi);
  return DrawKey{{uint32_t(seed), uint32_t(seed >> 32)}};
}

/// The words of block `block` of a stream, the key already derived (draw_key).
CE_HD_INLINE Words4 philox_block(DrawKey key, uint32_t source_lo, uint32_t epoch,
                                 uint32_t replication, Stream stream, uint32_t block) {
  r123::Philox4x32 gen;
  const r123::Philox4x32::ctr_type ctr = {
      {source_lo, epoch, replication, (uint32_t(stream) << 24) | (block & 0xFFFFFFu)}};
  const r123::Philox4x32::ctr_type r = gen(ctr, key);
  return Words4{{r[0], r[1], r[2], r[3]}};
}

CE_HD_INLINE Words4 philox_words(uint64_t seed, uint64_t source, uint32_t epoch,
                                 uint32_t replication, Stream stream, uint32_t block) {
  return philox_block(draw_key(seed, source), uint32_t(source), epoch, replication, stream, block);
}

/// Maps a 32-bit word to (0, 1): (w + 1/2) / 2^32, exact in double.
CE_HD_INLINE double uniform(uint32_t w) {
  return mul_rn(add_rn(double(w), 0.5), 2.3283064365386962890625e-10);
}

/// A sequential reader over the words of one (seed, replication, source, epoch, stream) key.
class DrawStream {
 public:
  CE_HD_INLINE DrawStream(uint64_t seed, uint64_t source, uint32_t epoch, uint32_t replication,
                          Stream stream)
      : key_(draw_key(seed, source)),
        source_(uint32_t(source)),
        epoch_(epoch),
        replication_(replication),
        stream_(stream) {}

  /// The same stream with its block 0 already drawn (`first`, the words philox_block gives for
  /// block 0 of this key): the reader starts with them.
  CE_HD_INLINE DrawStream(uint64_t seed, uint64_t source, uint32_t epoch, uint32_t replication,
                          Stream stream, const Words4& first)
      : DrawStream(seed, source, epoch, replication, stream) {
    block_ = 1;
    used_ = 0;
    w0_ = first.w[0], w1_ = first.w[1], w2_ = first.w[2], w3_ = first.w[3];
  }

  CE_HD_INLINE uint32_t next_word() {
    if (used_ == 4) {
      const Words4 w = philox_block(key_, source_, epoch_, replication_, stream_, block_++);
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
  DrawKey key_;
  uint32_t source_, epoch_, replication_;
  Stream stream_;
  uint32_t block_ = 0;
  int used_ = 4;
  uint32_t w0_ = 0, w1_ = 0, w2_ = 0, w3_ = 0;
};

/// The law of one content item's initial utility xi_n, scaled so that its mean is the source's xi
/// (every law: the model's u, index and bound depend on the mean alone). The laws (research
/// report, section 2: "a nonnegative random variable with finite mean"), with Z = xi_n / xi:
///   deterministic  Z = 1
///   exponential    Z ~ Exp(1)
///   lognormal      Z = exp(sigma N - sigma^2 / 2), N standard normal; shape = sigma in (0, 5]
///   pareto         Z = (a - 1)/a V^(-1/a), V uniform; shape = the tail index a in [1.5, 1e6]
///                  (P(Z > z) ~ z^-a: infinite variance for a <= 2)
///   gamma          Z ~ Gamma(k, 1) / k; shape = k in [0.01, 1e6]
///   empirical      Z = value[j] with probability cdf[j] - cdf[j-1] (a table from a file, its
///                  values divided by their mean: problem.hpp, set_utility; `table` holds cdf,
///                  then value)
/// The limits keep the sampler's own mean within 1e-6 of xi: the uniforms are discrete (2^-52 for
/// the normal, 2^-64 for the Pareto tail), which cuts off the far tail; below a = 1.5 or above
/// sigma = 5 that cut-off would move the mean by more (Pareto at a = 1.5: 4e-7; lognormal at
/// sigma = 5: about 1e-9).
///
/// A POD (copied into kernel arguments as it is). The empirical table's arrays are owned by the
/// RunConfig that holds this law (RunConfig::utility_table); a backend that runs on another memory
/// space must copy them there.
enum class UtilityLaw : uint32_t {
  deterministic = 0,
  exponential = 1,
  lognormal = 2,
  pareto = 3,
  gamma = 4,
  empirical = 5
};

struct UtilityDist {
  UtilityLaw law = UtilityLaw::exponential;
  uint32_t atoms = 0;  ///< empirical: table size
  double shape = 0.0;  ///< lognormal: sigma; pareto: a; gamma: k
  /// empirical: 2 atoms doubles, the cumulative probabilities (the last exactly 1), then the
  /// values divided by their mean (so that E[Z] = 1)
  const double* table = nullptr;

  static const UtilityDist deterministic;
  static const UtilityDist exponential;
  static constexpr UtilityDist of(UtilityLaw law, double shape = 0.0) {
    return UtilityDist{law, 0, shape, nullptr};
  }
};
inline constexpr UtilityDist UtilityDist::deterministic{UtilityLaw::deterministic, 0, 0.0, nullptr};
inline constexpr UtilityDist UtilityDist::exponential{UtilityLaw::exponential, 0, 0.0, nullptr};
inline bool operator==(const UtilityDist& a, const UtilityDist& b) {
  return a.law == b.law && a.atoms == b.atoms && a.shape == b.shape && a.table == b.table;
}
inline bool operator!=(const UtilityDist& a, const UtilityDist& b) { return !(a == b); }

/// Largest lambda T the stochastic model accepts: the arrivals of one source-epoch are drawn from
/// one Philox counter range of 2^24 blocks (4 words each, at most about 8 words per arrival), and
/// cost O(lambda T) time.
inline constexpr double kMaxArrivalsPerEpoch = 1.0e6;

/// A uniform on (0, 1) from two words, 52 bits: (k + 1/2) 2^-52 with k the top 32 bits of `hi`
/// followed by the top 20 of `lo` (exact in double).
CE_HD_INLINE double uniform52(uint32_t hi, uint32_t lo) {
  const uint64_t k = (uint64_t(hi) << 20) | uint64_t(lo >> 12);
  return mul_rn(add_rn(double(k), 0.5), 2.220446049250313080847e-16);
}

/// A uniform on (0, 1] from two words, resolving 2^-64 near 0 (the Pareto law's tail lives
/// there): hi 2^-32 + (lo + 1/2) 2^-64, exact below 2^-32, never 0.
CE_HD_INLINE double uniform64(uint32_t hi, uint32_t lo) {
  return add_rn(
      mul_rn(double(hi), 2.3283064365386962890625e-10),
      mul_rn(add_rn(double(lo), 0.5), 5.42101086242752217003726400434970855712890625e-20));
}

/// A standard normal by Marsaglia's polar method on 52-bit uniforms: per attempt four words
/// (hi, lo of V1, then of V2), V = 2 U - 1 (exact), S = V1^2 + V2^2, accepted when S < 1
/// (probability pi/4); N = V1 sqrt(-2 log S / S). Only V1's normal is used. The acceptance test is
/// exact arithmetic on the same words on every backend, so CPU and GPU read the same words.
CE_HD_INLINE double standard_normal(DrawStream& draws) {
  for (;;) {
    const uint32_t h1 = draws.next_word();
    const uint32_t l1 = draws.next_word();
    const uint32_t h2 = draws.next_word();
    const uint32_t l2 = draws.next_word();
    const double v1 = sub_rn(mul_rn(2.0, uniform52(h1, l1)), 1.0);
    const double v2 = sub_rn(mul_rn(2.0, uniform52(h2, l2)), 1.0);
    const double s = add_rn(mul_rn(v1, v1), mul_rn(v2, v2));
    if (s < 1.0) return mul_rn(v1, fp_sqrt(mul_rn(-2.0, fp_log(s)) / s));
  }
}

/// Gamma(k, 1) for k >= 1 by Marsaglia and Tsang's method: d = k - 1/3, c = 1/sqrt(9 d); per
/// attempt a normal N (standard_normal's words), then, when v = (1 + c N)^3 > 0, one word for U;
/// accepted when U < 1 - 0.0331 N^4 or log U < N^2/2 + d (1 - v + log v). Returns d v.
CE_HD_INLINE double gamma_at_least_one(double k, DrawStream& draws) {
  const double d = sub_rn(k, 1.0 / 3.0);
  const double c = 1.0 / fp_sqrt(mul_rn(9.0, d));
  for (;;) {
    const double n = standard_normal(draws);
    const double t = add_rn(1.0, mul_rn(c, n));
    if (!(t > 0.0)) continue;
    const double v = mul_rn(mul_rn(t, t), t);
    const double u = draws.next_uniform();
    const double n2 = mul_rn(n, n);
    if (u < sub_rn(1.0, mul_rn(0.0331, mul_rn(n2, n2)))) return mul_rn(d, v);
    if (fp_log(u) < add_rn(mul_rn(0.5, n2), mul_rn(d, add_rn(sub_rn(1.0, v), fp_log(v)))))
      return mul_rn(d, v);
  }
}

/// One item's initial utility xi_n = xi Z (UtilityDist's laws). Words read, in order:
///   deterministic 0; exponential 1 (Z = -log U); lognormal standard_normal's; pareto 2
///   (uniform64(hi, lo)); gamma k >= 1: gamma_at_least_one's; gamma k < 1: gamma_at_least_one(k +
///   1)'s, then 1 word U (Z = G U^(1/k) / k, Stuart's boost); empirical 1 (the first j with
///   U <= table[j], by bisection).
CE_HD_INLINE double draw_item_utility(const UtilityDist& d, double xi, DrawStream& draws) {
  switch (d.law) {
    case UtilityLaw::deterministic:
      return xi;
    case UtilityLaw::exponential:
      return mul_rn(-xi, fp_log(draws.next_uniform()));
    case UtilityLaw::lognormal: {
      const double n = standard_normal(draws);
      return mul_rn(xi, fp_exp(sub_rn(mul_rn(d.shape, n), mul_rn(0.5, mul_rn(d.shape, d.shape)))));
    }
    case UtilityLaw::pareto: {
      const uint32_t hi = draws.next_word();
      const uint32_t lo = draws.next_word();
      const double z = fp_exp(-fp_log(uniform64(hi, lo)) / d.shape);
      return mul_rn(mul_rn(xi, sub_rn(d.shape, 1.0) / d.shape), z);
    }
    case UtilityLaw::gamma: {
      if (d.shape >= 1.0) return mul_rn(xi, gamma_at_least_one(d.shape, draws) / d.shape);
      const double g = gamma_at_least_one(add_rn(d.shape, 1.0), draws);
      const double boost = fp_exp(fp_log(draws.next_uniform()) / d.shape);
      return mul_rn(xi, mul_rn(g, boost) / d.shape);
    }
    case UtilityLaw::empirical: {
      const double u = draws.next_uniform();
      uint32_t lo = 0, hi = d.atoms - 1;  // the answer lies in [lo, hi]; table[atoms - 1] = 1 > u
      while (lo < hi) {
        const uint32_t mid = lo + (hi - lo) / 2;
        if (u <= d.table[mid])
          hi = mid;
        else
          lo = mid + 1;
      }
      return mul_rn(xi, d.table[d.atoms + lo]);
    }
  }
  return xi;
}

/// U for one source and epoch (eq. 19): the sum over the epoch's Poisson(lambda T) arrivals of
/// xi_n exp(-mu (T - tau_n)). Arrival times are generated as a Poisson process in epoch time
/// units, s_{n+1} = s_n - log(V_n) / (lambda T), until s >= 1 (equivalent in law to a Poisson
/// count with uniform times); xi_n from draw_item_utility. Words used in order: gap, [the item's
/// words], gap, [the item's words], ... E[U] = u for every law.
/// AllLaws = false compiles the deterministic and exponential laws alone (the same draws): the
/// GPU's wide epoch kernel calls this out of line, and the other laws' code there would raise its
/// register pressure around the call until it spills; that kernel runs those two laws only
/// (cuda_backend.cu).
template <bool AllLaws = true>
CE_HD_INLINE double sample_arrivals_from(const SourceParams& p, const UtilityDist& dist,
                                         DrawStream& draws);
template <bool AllLaws = true>
CE_HD_INLINE double sample_arrivals(const SourceParams& p, const UtilityDist& dist, uint64_t seed,
                                    uint32_t replication, uint64_t source, uint32_t epoch) {
  if (!(p.lambda_t > 0.0) || !(p.xi > 0.0)) return 0.0;
  DrawStream draws(seed, source, epoch, replication, Stream::arrivals);
  return sample_arrivals_from<AllLaws>(p, dist, draws);
}

/// sample_arrivals on the arrival stream `draws` of its source and epoch, not yet read (a
/// CPU engine that drew block 0 eight sources at a time starts the stream with it).
template <bool AllLaws>
CE_HD_INLINE double sample_arrivals_from(const SourceParams& p, const UtilityDist& dist,
                                         DrawStream& draws) {
  if (!(p.lambda_t > 0.0) || !(p.xi > 0.0)) return 0.0;
  const double inv_rate = 1.0 / p.lambda_t;
  double s = 0.0, total = 0.0;
  for (;;) {
    s = sub_rn(s, mul_rn(fp_log(draws.next_uniform()), inv_rate));
    if (s >= 1.0) break;
    double xi_n = p.xi;
    if (AllLaws)
      xi_n = draw_item_utility(dist, p.xi, draws);
    else if (dist.law == UtilityLaw::exponential)
      xi_n = mul_rn(-p.xi, fp_log(draws.next_uniform()));
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

/// The first arrival words that show an epoch without arrival: every w < no_arrival_words(lambda T)
/// has uniform(w) <= no_arrival_threshold(lambda T), every w at or above it (but the last word,
/// where the count 2^32 would not fit and that word is drawn instead, which gives the same 0)
/// uniform(w) above it. A 32-bit column (half the bytes of the threshold) compared with the word
/// itself: the engines need not map it to a double. 0 for NaN (every epoch drawn).
inline uint32_t no_arrival_words(double lambda_t) {
  const double t = no_arrival_threshold(lambda_t);
  if (!(t >= uniform(0))) return 0;
  // uniform(w) = (w + 1/2) 2^-32 <= t for w <= t 2^32 - 1/2; the steps below correct the
  // estimate's rounding (there is none for t < 1) so that the count is exact.
  const double top = mul_rn(t, 4294967296.0) - 0.5;
  uint64_t k = top >= 4294967295.0 ? (uint64_t(1) << 32) : uint64_t(top) + 1;
  while (k > 0 && !(uniform(uint32_t(k - 1)) <= t)) --k;
  while (k < (uint64_t(1) << 32) && uniform(uint32_t(k)) <= t) ++k;
  return k > 0xFFFFFFFFu ? 0xFFFFFFFFu : uint32_t(k);
}

/// The first word sample_arrivals reads (block 0 of the source-epoch's arrival stream).
CE_HD_INLINE uint32_t first_arrival_word(uint64_t seed, uint32_t replication, uint64_t source,
                                         uint32_t epoch) {
  return philox_words(seed, source, epoch, replication, Stream::arrivals, 0).w[0];
}

/// sample_arrivals(p, ...), bit for bit, given no_arrival = no_arrival_threshold(p.lambda_t) and
/// the first word w0 = first_arrival_word(seed, replication, source, epoch).
CE_HD_INLINE double sample_arrivals_fast(const SourceParams& p, double no_arrival, uint32_t w0,
                                         const UtilityDist& dist, uint64_t seed,
                                         uint32_t replication, uint64_t source, uint32_t epoch) {
  if (uniform(w0) <= no_arrival) return 0.0;
  return sample_arrivals(p, dist, seed, replication, source, epoch);
}

/// The same with the first arrival words that show no arrival, k = no_arrival_words(p.lambda_t).
inline double sample_arrivals_below(const SourceParams& p, uint32_t k, uint32_t w0,
                                    const UtilityDist& dist, uint64_t seed, uint32_t replication,
                                    uint64_t source, uint32_t epoch) {
  if (w0 < k) return 0.0;
  return sample_arrivals(p, dist, seed, replication, source, epoch);
}

/// Score of the random policy: a uniform number keyed like every other draw.
CE_HD_INLINE double random_score(uint64_t seed, uint32_t replication, uint64_t source,
                                 uint32_t epoch) {
  return uniform(philox_words(seed, source, epoch, replication, Stream::random_policy, 0).w[0]);
}

}  // namespace crawleval
