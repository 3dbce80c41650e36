// Budgeted top-M selection: the contract every backend implements.
//
// Rule. Sort the sources by (score descending, source id ascending) and crawl the longest prefix
// whose total cost fits the budget M: walk the order, stop at the first source that does not fit.
// With unit costs and integer M this is exactly the top-M. "Fits" means
//     used + cost <= M * (1 + kBudgetSlack)
// so that costs like 0.1 + 0.1 + 0.1 fit a budget of 0.3 despite rounding.
//
// Ties and NaN. Equal scores are ordered by lower source id first. -0.0 equals +0.0. A NaN score
// sorts after every number, -inf included (valid inputs never produce one; the CLI rejects NaN in
// its input). Example: scores {2, 5, 5, NaN, 1}, unit costs, M = 2 -> crawl {1, 2}.
//
// Representation. A selection is a prefix, so it is fully described by the first source that is
// NOT crawled (the "stop" source): source i is crawled iff its (key, id) comes before the stop's in
// the order. Keys are the order-preserving 64-bit image of the score (score_key below), so "comes
// before" is an integer comparison that CPU and GPU evaluate identically.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "crawleval/base/hd.hpp"

namespace crawleval {

inline constexpr double kBudgetSlack = 1e-12;

CE_HD_INLINE double budget_limit(double budget) { return budget * (1.0 + kBudgetSlack); }

/// Order-preserving map double -> uint64: a > b  <=>  score_key(a) > score_key(b).
/// +0.0 and -0.0 map to the same key; NaN maps to 0, below -inf. Branch-free but for NaN.
CE_HD_INLINE uint64_t score_key(double s) {
  if (s != s) return 0;
  s += 0.0;  // -0.0 + 0.0 = +0.0 in round-to-nearest
  uint64_t b;
#if defined(__CUDA_ARCH__)
  b = static_cast<uint64_t>(__double_as_longlong(s));
#else
  std::memcpy(&b, &s, sizeof b);
#endif
  const uint64_t negative = uint64_t(int64_t(b) >> 63);  // all ones for negative scores
  return b ^ (negative | 0x8000000000000000ull);
}

/// Inverse of score_key (NaN for key 0; -0.0 comes back as +0.0).
CE_HD_INLINE double key_score(uint64_t key) {
  const uint64_t b = (key >> 63) ? (key & 0x7FFFFFFFFFFFFFFFull) : ~key;
  double s;
#if defined(__CUDA_ARCH__)
  s = __longlong_as_double(static_cast<long long>(b));
#else
  std::memcpy(&s, &b, sizeof s);
#endif
  return s;
}

/// Coarse, order-preserving 11-bit bin of a score, for the first pass of the radix select: the
/// top 11 bits of the score rounded to float (sign, 8 exponent bits, 2 mantissa bits: four bins per
/// octave). The top bits of the double itself would give one bin per two octaves, too coarse for
/// scores that span a few octaves. Rounding to nearest is monotone, so a >= b implies
/// coarse_bin_of_score(a) >= coarse_bin_of_score(b); NaN goes to bin 0.
CE_HD_INLINE uint32_t coarse_bin_of_score(double s) {
  if (s != s) return 0;
  const float f = static_cast<float>(s) + 0.0f;
  uint32_t b;
#if defined(__CUDA_ARCH__)
  b = __float_as_uint(f);
#else
  std::memcpy(&b, &f, sizeof b);
#endif
  const uint32_t negative = uint32_t(int32_t(b) >> 31);
  return (b ^ (negative | 0x80000000u)) >> 21;
}

/// The same bin from a key.
CE_HD_INLINE uint32_t coarse_bin(uint64_t key) { return coarse_bin_of_score(key_score(key)); }

/// Radix-select geometry shared by the CPU and GPU selectors: 11-bit digits; the coarse first pass
/// uses coarse_bin, the refinements the 64-bit key's digits from the top.
inline constexpr int kDigitBits = 11;
inline constexpr int kBins = 1 << kDigitBits;
inline constexpr int kLevels = 6;

/// Digit `level` of a key (0..5): bits [53-11*level, 63-11*level]; the last level overlaps the
/// previous one, which is harmless because candidates already share those bits.
CE_HD_INLINE uint32_t key_digit(uint64_t key, int level) {
  const int shift = 53 - kDigitBits * level;
  return uint32_t((shift > 0 ? key >> shift : key) & uint64_t(kBins - 1));
}

/// The largest key score_key produces (that of +inf).
inline constexpr uint64_t kTopKey = 0xFFF0000000000000ull;

/// The smallest key whose coarse bin is >= b, or kTopKey + 1 if none. coarse_bin is monotone on
/// [0, kTopKey] (every key score_key produces), so a bisection finds it; the keys of bin b are
/// exactly [first_key_of_bin(b), first_key_of_bin(b + 1) - 1].
CE_HD_INLINE uint64_t first_key_of_bin(uint32_t b) {
  if (coarse_bin(kTopKey) < b) return kTopKey + 1;
  uint64_t lo = 0, hi = kTopKey;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (coarse_bin(mid) >= b)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

/// The first source not crawled, or "everything crawled".
struct Selection {
  uint64_t stop_key = 0;
  uint64_t stop_id = 0;
  bool all = true;  ///< every source fits: nothing stops the prefix
};

/// True iff the source with this key and id is in the selected prefix.
CE_HD_INLINE bool is_selected(uint64_t key, uint64_t id, const Selection& s) {
  return s.all || key > s.stop_key || (key == s.stop_key && id < s.stop_id);
}

/// Costs as integers: the rule's arithmetic on every backend. Every engine walks the same integer
/// weights, so every engine crawls the same prefix, and sums are exact in any order (atomic
/// histograms, threads, MPI ranks). With Mlim = budget_limit(M) and an exponent e,
///     w_i = min(ceil(C_i 2^e), L + 1),   L = floor(Mlim 2^e),   "fits": used + w_i <= L.
/// Costs round up and the limit rounds down, so a crawled set never costs more than Mlim in exact
/// arithmetic, and no source is free (w_i >= 1, whatever 2^e). A cost above Mlim gets L + 1: it
/// never fits (as in exact arithmetic) and its weight cannot overflow.
///   e = 60 - ilogb(Mlim) - max(ilogb(S), 0),  S = sum_i min(C_i, Mlim) 2^-ilogb(Mlim)
/// (the clamped total, scaled so it cannot overflow; summed in kFoldChunk chunks in id order, so
/// every process count finds the same e) keeps L < 2^61 and the sum of every weight below 2^62
/// (n < 2^32 sources), so 64-bit sums never overflow. Against exact real arithmetic the rule can
/// only stop earlier, and only when the exact prefix sum lies within K 2^-e of Mlim (K: the
/// sources crawled), where 2^-e <= 2^-59 max(Mlim, sum_i min(C_i, Mlim)). Costs that are
/// multiples of 2^-e (integers, halves, ...) are summed exactly: the rule is then the exact one.
/// Unit costs use e = 0 (weight 1, L = floor(Mlim)): the same rule, with nothing rounded.
/// Example: C = {0.1, 0.1, 0.1}, M = 0.3: S = 3 (0.1 2^2) = 1.2, e = 60 + 2 - 0 = 62, each
/// w = 0.1 2^62 = 461168601842738816 (exact: 0.1's double is a multiple of 2^-56) and
/// L = floor(0.3 (1 + 1e-12) 2^62) = 1383505805529600000 >= 3 w: all three fit, as the slack
/// intends (the double 0.3 is below 3 x the double 0.1).
struct FixedBudget {
  unsigned long long limit = 0;         ///< L
  double cost_limit = 0.0;              ///< Mlim: a cost above it never fits
  double scale_a = 1.0, scale_b = 1.0;  ///< 2^e as two factors that are normal doubles
  int exponent = 0;                     ///< e, in [-996, 1134]
  bool unit = true;                     ///< every cost is 1 (weight 1, e = 0)
};

/// fl(M (1 + kBudgetSlack)), and M itself where that would overflow.
CE_HD_INLINE double budget_limit_finite(double budget) {
  const double l = budget_limit(budget);
  return l <= 1.7976931348623157e308 ? l : budget;
}

/// One source's term of S (FixedBudget): min(C, Mlim) 2^-ilogb(Mlim), in [0, 2).
inline double clamped_cost_term(double cost, double cost_limit) {
  return std::ldexp(cost < cost_limit ? cost : cost_limit, -std::ilogb(cost_limit));
}

/// The rule's integers for budget M, given S (the sum of clamped_cost_term over every source, in
/// the fixed order FixedBudget describes). M <= 0: nothing fits.
inline FixedBudget fixed_budget(double budget, double clamped_sum, bool unit_costs) {
  FixedBudget f;
  f.unit = unit_costs;
  f.cost_limit = budget_limit_finite(budget);
  if (!(f.cost_limit > 0.0)) return f;  // L = 0: no weight fits
  if (unit_costs) {
    f.limit = f.cost_limit < 4.0e18 ? (unsigned long long)(std::floor(f.cost_limit))
                                    : 4000000000000000000ull;
    return f;
  }
  const int s = clamped_sum >= 1.0 ? std::ilogb(clamped_sum) : 0;
  f.exponent = 60 - std::ilogb(f.cost_limit) - s;
  f.scale_a = std::ldexp(1.0, f.exponent / 2);
  f.scale_b = std::ldexp(1.0, f.exponent - f.exponent / 2);
  f.limit = (unsigned long long)(std::floor(std::ldexp(f.cost_limit, f.exponent)));
  return f;
}

/// A source's weight under f (above). C 2^e is taken as (C 2^a) 2^b, e = a + b, both factors
/// normal doubles: exact whenever C 2^e >= 1 (the first product is then at least 1 when e < 0,
/// and both are exact scalings when e >= 0), and any value in [0, 1] has weight 1 anyway.
CE_HD_INLINE unsigned long long fixed_weight(double cost, const FixedBudget& f) {
  if (f.unit) return 1ull;
  if (!(cost <= f.cost_limit)) return f.limit + 1ull;
  const double w = ceil((cost * f.scale_a) * f.scale_b);
  return w >= 1.0 ? (unsigned long long)(w) : 1ull;
}

/// The reference implementation of the rule (host, sort-based): the crawled ids in selection
/// order, walking the weights of `fb`. An empty `cost` means unit costs.
std::vector<uint32_t> reference_select(const std::vector<double>& scores,
                                       const std::vector<double>& cost, const FixedBudget& fb);
/// The same with the weights of budget M over these costs (cost_weights, problem.hpp).
std::vector<uint32_t> reference_select(const std::vector<double>& scores,
                                       const std::vector<double>& cost, double budget);

}  // namespace crawleval
