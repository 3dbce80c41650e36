// The ceiling of a deterministic source's Whittle index on the age grid: what makes a source
// dormant (docs/cpu-design.md, "Dormant sources"). One __host__ __device__ function, so that the
// CPU engine and a GPU engine decide which sources sleep by the same bits: every operation is
// explicitly rounded (fp.hpp), none left for a compiler to fuse.
#pragma once

#include <cstdint>
#include <limits>

#include "crawleval/base/fp.hpp"
#include "crawleval/base/hd.hpp"

namespace crawleval {

/// Ages on the grid stay below this (the CPU engine's det_word::kGeneral, the flag above its age
/// bits): the ceiling holds for every age under it.
inline constexpr uint32_t kGridAgeBound = 1u << 29;

/// An upper bound on every score det_word::grid_index(x, eta, alpha, u, 1.0) takes for a source
/// with these constants over every x its passive recursion fl(fl(alpha x) + u) reaches from 0
/// and every age eta < kGridAgeBound, with the engine's roundings; +inf where none is found (alpha
/// too near 1 for the margins, non-finite constants). Rigorous: the recursion's states stay under
/// X = u (1 + r) / (1 - alpha (1 + r)^2) (r the unit roundoff; computed with margins), and the
/// score is a composition of rounded operations, each monotone in x and in eta, evaluated at X and
/// at eta = kGridAgeBound.
CE_HD_INLINE double grid_index_ceiling(double alpha, double u) {
  const double inf = std::numeric_limits<double>::infinity();
  if (!(alpha >= 0.0 && alpha <= 1.0) || !(u >= 0.0 && u < inf)) return inf;
  // r = 8 e (e = 2^-53, the unit roundoff) covers every rounding of the bound's own arithmetic
  // and the recursion's: 1 - alpha (1 + e)^2 >= m - 4 e >= den, where m = fl(1 - alpha) is the
  // engine's (1 - alpha) (exact for alpha >= 1/2, within e below). Through the largest age it
  // makes the ceiling about 2^29 r (1 + 2m) = 5e-7 relative above u / (1 - alpha).
  const double r = 0x1p-50;
  const double m = sub_rn(1.0, alpha);
  const double den = sub_rn(mul_rn(m, sub_rn(1.0, r)), r);
  if (!(den > 0x1p-60)) return inf;
  // X >= u (1 + 2^-53) / den: the recursion maps [0, X] into itself (fl(fl(alpha X) + u) <= X), so
  // every state reached from 0 stays below X; the absolute term covers the roundings of subnormals.
  const double x_max = add_rn(mul_rn(mul_rn(u, add_rn(1.0, r)) / den, add_rn(1.0, r)), 0x1p-1000);
  if (!(x_max < inf)) return inf;
  // grid_index(x, eta) = x + eta ((1 - alpha) x - u) with the engine's roundings: each is
  // monotone in x and, where the bracket is positive, in eta, so the value at X and the largest
  // age bounds every other; where the bracket is not positive the score is at most x.
  const double t = sub_rn(mul_rn(m, x_max), u);
  const double s = t > 0.0 ? add_rn(x_max, mul_rn(double(kGridAgeBound), t)) : x_max;
  return s < inf ? s : inf;
}

}  // namespace crawleval
