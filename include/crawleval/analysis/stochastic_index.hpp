// The stochastic model's Whittle index, computed numerically (research report, section 7 and the
// slides' "numerical procedures for the Whittle index in the stochastic case": "there is no nice
// explicit expression").
//
// One source under full observation: X' = alpha X + U if passive, X' = U after a crawl that earns
// X, with U the epoch's compound-Poisson arrivals (rng.hpp) and a subsidy c = C lambda for every
// passive epoch. The index of a state x is the subsidy at which crawling at x and waiting are
// equally good. Theorem 1's formula is the index of the deterministic model (U = u); applied to
// random states it is a heuristic (the slides: "just an heuristic").
//
// Method (renewal-reward over threshold policies, on a lattice). Everything is computed for xi = 1
// and C = 1: U scales with xi and the index with xi / C, so one table serves every source of a
// class (lambda T, mu T, utility law).
//   1. The law of U on the lattice {k h}: the item's decayed utility Y = xi_n exp(-mu T (1 - s))
//      is spread over its two neighbouring lattice points in proportion (its mean kept exactly:
//      E[hat_k(Y)] is a second difference of E[(y - Y)^+], in closed form for W = exp(-mu T s)
//      and summed over a mean-preserving quantisation of xi_n's law); the compound Poisson sum by
//      Panjer's recursion. What lies beyond the lattice is kept as a mass and its mean.
//   2. The uncontrolled chain on the lattice states s_i = i h, i < G: alpha s_i is spread over its
//      two neighbours (mean kept), then U added. P (G x G) is its transition matrix, states beyond
//      the lattice count as "above every threshold".
//   3. For the threshold policy "crawl at states >= s_b": its cycle (from the epoch after a
//      crawl to the next crawl) has length T_b and collects R_b; and, from state s_m continuing
//      under threshold m + 1, L_m further epochs to the crawl, which collects Q_m. Every b at once
//      from one LU factorisation of I - P without pivoting (an M-matrix): the leading blocks of
//      the factors are the factors of the leading blocks I - P_b, so each solve is a prefix of one
//      triangular solve (O(G^3) in all).
//   4. The index of s_m: at the subsidy c where thresholds m and m + 1 are equally good, crawling
//      at s_m now (x_m - g + H) equals waiting (L (c - g) + Q - g + H), with the gain
//      g = c + (R_m - c) / T_m of either threshold. Hence
//          c_m = R_m - T_m (Q_m - s_m) / L_m.
//      (The deterministic model gives T = k, R = x_k, L = 1, Q = x_(k+1): c = (k + 1) x_k -
//      k x_(k+1), Theorem 1's index on its grid.) Unlike the crossing of two thresholds' gains,
//      this needs no difference of two nearly equal cycle values, so states the chain rarely
//      visits get their index too.
//   5. Indexability (Whittle's condition for threshold policies): the passive set grows with the
//      subsidy iff c_m does not decrease in m. It is checked; the first violation is reported.
// Between lattice points the index is interpolated linearly; above the lattice it continues with
// slope 1 (crawling at x + d instead of x earns d more for the same future).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "crawleval/engine/rollout.hpp"
#include "crawleval/model/model.hpp"
#include "crawleval/model/problem.hpp"
#include "crawleval/model/rng.hpp"

namespace crawleval {

/// The law of U for one source (xi = 1) on the lattice {k h, k < size}: pmf[k], and what lies at
/// or beyond size h (its probability and its contribution to E[U]).
struct ArrivalLattice {
  double h = 0.0;
  std::vector<double> pmf;
  double beyond_mass = 0.0;
  double beyond_mean = 0.0;  ///< E[U; U >= size h]
  double mean = 0.0;         ///< E[U] = u (for xi = 1): lattice part + beyond_mean
};

/// lambda_t = lambda T, mu_t = mu T; xi = 1.
ArrivalLattice arrival_lattice(double lambda_t, double mu_t, const UtilityDist& law, double h,
                               std::size_t size);

/// The item law's quantisation (step 1): atoms z_j of Z = xi_n / xi with probabilities p_j,
/// sum p_j z_j = 1 exactly (to rounding). Exposed for the tests.
struct LawAtoms {
  std::vector<double> z, p;
};
LawAtoms utility_atoms(const UtilityDist& law, std::size_t bins = 600);

/// The regularised lower incomplete gamma function P(a, x) (series or continued fraction).
double regularized_gamma_p(double a, double x);

struct StochasticIndexOptions {
  std::size_t grid = 800;  ///< lattice states G (the solve is O(G^3), its memory 3 G^2 doubles)
  /// The lattice's top, in units of u* = lambda / mu: 0 chooses u* + 8 standard deviations of the
  /// never-crawled state (5 u* for laws without a variance).
  double top = 0.0;
  /// Refuse a lattice whose step exceeds a quarter of U's standard deviation (it would model its
  /// own spreading, not the arrivals). The tests of the lattice's algebra switch it off.
  bool require_resolution = true;
};

/// One class's table (xi = 1, C = 1).
struct IndexTable {
  double h = 0.0;                       ///< lattice step
  std::vector<double> index;            ///< c_m at s_m = m h, m < G
  std::vector<double> cycle_length;     ///< T_m
  std::vector<double> cycle_reward;     ///< R_m
  std::vector<double> continue_length;  ///< L_m
  std::vector<double> continue_reward;  ///< Q_m
  bool indexable = true;
  std::string not_indexable;  ///< where c_m decreases (empty when indexable)
  double u = 0.0;             ///< E[U]
  /// gamma(x) C / xi for a state x / xi (linear between lattice points, slope 1 above).
  double at(double x) const;
  /// The best gain of the relaxed problem at subsidy c (xi = 1, C = 1): max over the lattice's
  /// thresholds of c + (R_b - c) / T_b, and never crawling (c).
  double relaxed_gain(double c) const;
};

/// The table of one class: the arrival lattice, P, the LU solves, the index and its check.
IndexTable stochastic_index_table(double lambda_t, double mu_t, const UtilityDist& law,
                                  const StochasticIndexOptions& options = {});

/// The index of every source of a problem (stochastic model, full observation, no expiry),
/// computed once per class (lambda T, mu T) of its sources.
struct StochasticIndex {
  std::vector<IndexTable> tables;
  std::vector<uint32_t> class_of;  ///< per source; kNoClass: no arrivals (index x / C)
  static constexpr uint32_t kNoClass = 0xFFFFFFFFu;
  double seconds = 0.0;
  /// gamma_i(x) for source i.
  double index(std::size_t i, double x, const Problem& pr) const;
  bool indexable() const;
};

/// InputError (with the reason) for the deterministic model (Theorem 1 is its exact index), belief
/// observation, content expiry, and more than `max_classes` classes.
StochasticIndex compute_stochastic_index(const Problem& problem,
                                         const StochasticIndexOptions& options = {},
                                         std::size_t max_classes = 256);

/// The numerical index as a policy for function_rollout (rollout.hpp): scores gamma_i(X_i).
ScoreFn stochastic_index_policy(const Problem& problem, const StochasticIndex& index);

}  // namespace crawleval
