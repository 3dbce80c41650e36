// Selection by sorting (cpu_select.hpp).
#include "cpu_select.hpp"

#include <algorithm>
#include <numeric>

namespace crawleval::detail {

Selection select_by_sort(const uint64_t* keys, const double* cost, std::size_t n, double budget,
                         uint32_t* order) {
  std::iota(order, order + n, 0u);
  std::sort(order, order + n, [keys](uint32_t a, uint32_t b) {
    return keys[a] != keys[b] ? keys[a] > keys[b] : a < b;
  });
  const double limit = budget_limit(budget);
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
