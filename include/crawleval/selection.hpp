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

#include <cstdint>
#include <cstring>
#include <vector>

#include "crawleval/hd.hpp"

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

/// Fixed-point costs, used by the GPU selector: weight_i = round(cost_i * scale) and a budget
/// limit = floor(M (1 + kBudgetSlack) scale). Integer sums are exact whatever their order, so
/// atomic histograms are reproducible run to run. scale is the largest power of two (at most 2^40)
/// that keeps the total cost below 2^62; unit costs use scale 1 (weight 1 each). With costs that
/// are multiples of 1/scale (integers, halves, ...) this is the same rule as the double walk; with
/// arbitrary real costs the two can differ only when a prefix's cost is within about N/scale of M.
struct FixedBudget {
  double scale = 1.0;
  unsigned long long limit = 0;
};

inline FixedBudget fixed_budget(double budget, double total_cost, bool unit_costs) {
  FixedBudget f;
  if (!unit_costs)
    while (f.scale < 1099511627776.0 && total_cost * f.scale * 2.0 < 4.0e18) f.scale *= 2.0;
  const double lim = budget_limit(budget) * f.scale;
  f.limit = lim >= 4.0e18 ? 4000000000000000000ull : (unsigned long long)(lim);
  return f;
}

CE_HD_INLINE unsigned long long fixed_weight(double cost, double scale) {
  return (unsigned long long)(cost * scale + 0.5);
}

/// The reference implementation of the rule (host, sort-based): the crawled ids in selection
/// order. An empty `cost` means unit costs.
std::vector<uint32_t> reference_select(const std::vector<double>& scores,
                                       const std::vector<double>& cost, double budget);

}  // namespace crawleval
