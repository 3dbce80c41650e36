// Selection by sorting (cpu_select.hpp).
#include "select/cpu_select.hpp"

#include <algorithm>
#include <numeric>

namespace crawleval::detail {

Selection select_by_sort(const uint64_t* keys, const double* cost, std::size_t n,
                         const FixedBudget& fb, uint32_t* order) {
  std::iota(order, order + n, 0u);
  const auto before = [keys](uint32_t a, uint32_t b) {
    return keys[a] != keys[b] ? keys[a] > keys[b] : a < b;
  };
  if (!cost && n > 16) {
    // Unit costs: the first L sources of the order fit and the next one stops the walk, so only
    // the L-th source of the order is needed: nth_element, O(n). (Up to 16 sources the sort is an
    // insertion sort, faster still.)
    if (fb.limit >= n) return Selection{};
    const std::size_t k = std::size_t(fb.limit);
    std::nth_element(order, order + k, order + n, before);
    return Selection{keys[order[k]], order[k], false};
  }
  std::sort(order, order + n, before);
  uint64_t used = 0;
  for (std::size_t j = 0; j < n; ++j) {
    const uint32_t i = order[j];
    const uint64_t w = cost ? fixed_weight(cost[i], fb) : 1;
    if (w > fb.limit - used) return Selection{keys[i], i, false};
    used += w;
  }
  return Selection{};
}

}  // namespace crawleval::detail
