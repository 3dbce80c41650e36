// Selection by sorting, for small populations (the CPU backend's small engine; the wide engine
// runs the windowed radix select of window_select.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "crawleval/model/selection.hpp"

namespace crawleval::detail {

/// The budgeted prefix of the (key desc, id asc) order, walking the integer weights of `fb` as
/// the reference does (cost == nullptr: unit costs). O(n log n); `order` is scratch of size n.
Selection select_by_sort(const uint64_t* keys, const double* cost, std::size_t n,
                         const FixedBudget& fb, uint32_t* order);

}  // namespace crawleval::detail
