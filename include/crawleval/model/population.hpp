// Populations made in memory: sorted by id, from columns held elsewhere, the papers' example and
// synthetic populations (their files: io.hpp).
#pragma once

#include <cstdint>
#include <string>

#include "crawleval/model/problem.hpp"

namespace crawleval {

/// Stores `pop` in ascending id order (stable: the order of its other columns follows). Ids must
/// be unique; a repeated id throws InputError naming both positions: file lines (`lines`: "FILE:L:
/// field 'id': id X already used on line K") or 0-based rows of the input columns (`rows`:
/// "ORIGIN: row R: field 'id': id X already used in row K").
enum class IdPositions { lines, rows };
void sort_by_id(Population& pop, IdPositions positions);

/// A population from columns held elsewhere (the Python package's numpy arrays): `n` sources,
/// `lambda`, `xi` and `mu` required; `cost` (default 1), `id` (default 0..n-1), `x0`, `expiry`
/// (0 = never) and `observe` (1 = full, 0 = belief: Population::observe) may be null. Copied
/// once, stored in id order (sort_by_id, rows), and checked (validate_sources): InputError names
/// the field and the source's id.
Population population_from_columns(std::size_t n, const double* lambda, const double* xi,
                                   const double* mu, const double* cost, const uint64_t* id,
                                   const double* x0, const uint32_t* expiry,
                                   const std::string& origin, const uint8_t* observe = nullptr);

/// The papers' 4-source example (Table 1 of the research report / conference paper): Lambda = 250
/// for all, xi = (1.0, 0.7, 0.2, 0.08), mu = (0.7, 0.35, 0.7, 0.21), unit costs.
Population paper_example();

/// A synthetic population of n sources; the distributions are documented in synthetic.hpp.
/// Deterministic in (n, seed); source i depends only on (seed, i).
enum class SyntheticCosts { unit, lognormal };
template <>
struct EnumNames<SyntheticCosts> {
  static constexpr EnumName<SyntheticCosts> table[] = {{SyntheticCosts::unit, "unit"},
                                                       {SyntheticCosts::lognormal, "lognormal"}};
};
Population synthetic_population(uint64_t n, uint64_t seed,
                                SyntheticCosts costs = SyntheticCosts::unit);
/// Sources [first, first + count) of synthetic_population(n, seed, costs), generated alone (each
/// process of a sharded run makes its own shard; the origin names the whole population).
Population synthetic_slice(uint64_t n, uint64_t seed, SyntheticCosts costs, uint64_t first,
                           uint64_t count);

}  // namespace crawleval
