// The stochastic model with AVX-512: the general Whittle index (model.hpp's whittle_index,
// Theorem 1) of eight sources of the base model at once, and the wide engine's whole pass built on
// it (for the Whittle policy, and for greedy, whose score is the state). The engines score every
// source's continuous state every epoch, and one log1p and one expm1 per source were most of the
// epoch's arithmetic; now only the sources that a bound (whittle_below_floor) does not place
// below the selection's window get them (about a tenth at a 1% budget).
//
// The same IEEE operations in the same order as the scalar code (no fused multiply-add), and
// SLEEF's deterministic log1p and expm1, which return the same bits eight wide as one at a time
// (model.hpp's index_log1p): the scores are the scalar index's bit for bit, and the pass's states,
// classes and rewards the scalar pass's (tests/test_cpu_backend.cpp:
// WhittleIndexEightWideEqualsScalar, StochasticVectorPassEqualsScalarPass). Compiled for AVX-512
// by function attribute; call it only where avx512_pass_available().
//
// Bytes per source and epoch of the pass (unit costs): x (8 + 8), class (1 + 1), and the columns
// no_arrival (4: a word count), alpha, u*, mu T and 1 - alpha (32): 54 B; lambda T and xi only
// where the epoch has an arrival.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "crawleval/model/problem.hpp"
#include "crawleval/model/rng.hpp"
#include "crawleval/model/selection.hpp"
#include "engine/cpu/det_whittle_avx512.hpp"

namespace crawleval::detail {

/// Most sources whittle_index_block takes at once.
inline constexpr std::size_t kIndexBlock = 256;

/// out[j] = whittle_index(x[j], c.at_base(first + j)) for j < count <= kIndexBlock: eight at a
/// time, the last count % 8 one at a time.
void whittle_index_block(const double* x, const ParamColumns& c, std::size_t first,
                         std::size_t count, double* out);

/// Where the selection needs no index. With z = (u* - x)(1 - alpha) / (u* mu T) and w = 1 - z, two
/// bounds on the Whittle index of the base model below u* (Theorem 1: the maximum over k of the
/// lines L_k(x) = (u* (1 - alpha^k) - k (1 - alpha) (u* - x)) / C):
///   B1 = x / C: each line is at most x / C at x = 0 (1 - alpha^k <= k (1 - alpha)) and at x = u*,
///      so on all of [0, u*]; also the index itself at or above u*, and 0 >= the index for x <= 0;
///   B2 = (u* / C) w^2 / (2 z) = (u* mu T - d s)^2 / (2 d s mu T C) with d = u* - x, s = 1 - alpha:
///      over real k >= 0, C L_k / u* = 1 - alpha^k - k s (1 - x/u*) is concave with its maximum
///      1 - z + z log z = sum_{n>=2} w^n / (n (n - 1)) <= w^2 / (2 z) at alpha^k = z.
/// B1 is tight near u*, B2 for small states (the index is then about x / C (x/u* + mu T) / 2).
/// The computed index exceeds the exact one by at most about 2.3e-13 u* / C (the lines'
/// roundings, 1 - alpha^(k-1) taken as (1 - alpha^k - (1 - alpha)) / alpha with alpha >
/// kNeighbourAlpha, k (1 - alpha) (u* - x) <= 4 u*), which is below 1e-2 B1 where x >= 1e-9 u*
/// and below 1e-2 B2 where w >= 1e-4 (B2 >= 5e-9 u* / C); the bounds' own roundings are relative
/// 1e-11 at most there (the cancellation in u* mu T - d s is at most 1 / w). So where a bound
/// meets its condition and the bin of 1.01 times it lies below `floor`, the index's bin does too
/// (bins and roundings are monotone) and the source is of class kBelow under any plan whose
/// window::lump_floor is `floor`: the engines count it without computing the index
/// (WindowSelector::lump). The bin test is a comparison with lump_threshold(floor) (B2's without
/// its division: e^2 C^-1 1.01 < T 2 d s mu T, whose roundings the slack covers, every factor a
/// normal number). NaN, infinite, zero and negative bounds never qualify.
inline constexpr double kIndexBoundSlack = 1.01;
inline constexpr double kIndexBoundMinRatio = 1e-9;            // B1: x >= this u*
inline constexpr double kIndexBoundMinW = 1e-4;                // B2: w >= this
inline constexpr double kMinNormal = 2.2250738585072014e-308;  // DBL_MIN
/// The largest float below the first float of bin `floor` (0 where no positive score lies in a
/// bin below it): a double v < this rounds to a float below that bin, so coarse_bin_of_score(v)
/// < floor.
inline double lump_threshold(uint32_t floor) {
  if (floor <= 1024) return 0.0;  // bins up to 1024 hold the scores <= 0
  // (bins 2044 and up start at float infinity: the largest finite float then)
  const uint32_t bits = std::min<uint32_t>(((floor - 1024) << 21) - 1, 0x7F7FFFFFu);
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return double(f);
}
inline bool whittle_below_floor(double x, double u_star, double mu_t, double om_alpha,
                                double inv_cost, double threshold) {
  const double b1 = mul_rn(mul_rn(x, inv_cost), kIndexBoundSlack);
  if (x >= mul_rn(u_star, kIndexBoundMinRatio) && b1 > 0.0 && b1 < threshold) return true;
  const double d = sub_rn(u_star, x), a = mul_rn(u_star, mu_t), ds = mul_rn(d, om_alpha);
  const double e = sub_rn(a, ds);  // u* mu T w
  const double e2 = mul_rn(e, e), den = mul_rn(mul_rn(2.0, ds), mu_t);
  const double lhs = mul_rn(mul_rn(e2, inv_cost), kIndexBoundSlack);
  // Every factor a normal number: a product that underflows loses its relative accuracy, and a
  // large 1/C or threshold would then magnify the loss (found by a fuzzer: e^2 underflowing to 0
  // with 1/C = 1e140 "showed" the top source below the floor).
  return d > 0.0 && e >= mul_rn(a, kIndexBoundMinW) && ds >= kMinNormal && e2 >= kMinNormal &&
         den >= kMinNormal && lhs >= kMinNormal && lhs < mul_rn(threshold, den);
}

/// whittle_index_block, except for the sources whittle_below_floor shows below
/// the floor (none when floor = 0): bit j % 8 of sure[j / 8] is set for those (their out[j] is
/// not the index) and clear for the others. unit: every cost is 1 (1/C not read).
void whittle_index_block_above(const double* x, const ParamColumns& c, std::size_t first,
                               std::size_t count, uint32_t floor, bool unit, double* out,
                               uint8_t* sure);

/// The same for any count (sure: (count + 7) / 8 bytes): with AVX-512 where `vector`, else one at
/// a time.
inline void whittle_index_run(const double* x, const ParamColumns& c, std::size_t first,
                              std::size_t count, bool vector, uint32_t floor, double* out,
                              uint8_t* sure) {
  if (!vector) {
    std::fill(sure, sure + (count + 7) / 8, uint8_t(0));
    const double threshold = lump_threshold(floor);
    for (std::size_t j = 0; j < count; ++j) {
      const std::size_t i = first + j;
      if (threshold > 0.0 && whittle_below_floor(x[j], c.u_star[i], c.mu_t[i], c.om_alpha[i],
                                                 c.inv_cost[i], threshold))
        sure[j / 8] = uint8_t(sure[j / 8] | (1u << (j % 8)));
      else
        out[j] = whittle_index(x[j], c.at_base(i));
    }
    return;
  }
  for (std::size_t j = 0; j < count; j += kIndexBlock)
    whittle_index_block_above(x + j, c, first + j, std::min(kIndexBlock, count - j), floor, false,
                              out + j, sure + j / 8);
}

/// One pass of the stochastic base model with unit costs over part of a chunk: the Whittle policy,
/// or greedy (the state is the score).
struct StochasticPass {
  double* x;
  uint8_t* cls;  // the class of every source (window_select.hpp)
  const ParamColumns* c;
  ApplyRule rule;
  window::Plan plan;
  UtilityDist utility;
  uint64_t seed;
  uint32_t replication, prev;  // the draws' replication; the epoch whose arrivals are drawn
  bool apply, score;           // apply the previous selection; score and classify the new state
  bool greedy;                 // score x (greedy with unit costs) instead of the Whittle index
  uint64_t first_id = 0;       // Problem::first_id: source i draws as first_id + i
};

/// The wide engine's pass for the stochastic model, Whittle or greedy policy, unit costs, over
/// blocks of up to kIndexBlock sources of [lo, hi), eight at a time: apply the previous selection
/// (rewards added in source order), draw the arrivals (the first Philox word of eight sources at
/// once; the logarithms only where the first uniform says the epoch has an arrival), move the
/// states, score them with whittle_index_block (greedy: the score is the state), classify them and
/// record them in the thread's pass of `sel`. The scalar pass's numbers bit for bit. Stops where
/// fewer than eight sources remain and returns that position, for the scalar pass to go on from.
/// Only where avx512_pass_available().
std::size_t stochastic_whittle_avx512(const StochasticPass& p, std::size_t lo, std::size_t hi,
                                      WindowSelector& sel, WindowSelector::Pass& ps, double* reward,
                                      double* spent);

}  // namespace crawleval::detail
