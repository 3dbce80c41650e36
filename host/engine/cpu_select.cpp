// Selection by sorting (cpu_select.hpp).
#include "cpu_select.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace crawleval::detail {

Selection select_by_sort(const uint64_t* keys, const double* cost, std::size_t n, double budget,
                         uint32_t* order) {
  std::iota(order, order + n, 0u);
  const auto before = [keys](uint32_t a, uint32_t b) {
    return keys[a] != keys[b] ? keys[a] > keys[b] : a < b;
  };
  const double limit = budget_limit(budget);
  if (!cost && n > 16) {
    // Unit costs: the walk below stops at the first position k with k + 1 > limit (in double, as
    // it computes), so only the k-th source of the order is needed: nth_element, O(n). (Up to 16
    // sources the sort is an insertion sort, faster still.)
    std::size_t k = 0;
    if (limit >= 1.0) {
      const double f = std::floor(limit);
      k = f < double(n) ? std::size_t(f) : n;
      while (k > 0 && double(k - 1) + 1.0 > limit) --k;
      while (k < n && !(double(k) + 1.0 > limit)) ++k;
    }
    if (k >= n) return Selection{};
    std::nth_element(order, order + k, order + n, before);
    return Selection{keys[order[k]], order[k], false};
  }
  std::sort(order, order + n, before);
  double used = 0.0;
  for (std::size_t j = 0; j < n; ++j) {
    const uint32_t i = order[j];
    const double c = cost ? cost[i] : 1.0;
    if (used + c > limit) return Selection{keys[i], i, false};
    used += c;
  }
  return Selection{};
}

}  // namespace crawleval::detail
