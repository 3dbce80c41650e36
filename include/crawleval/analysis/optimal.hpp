// The exact optimum of small deterministic instances: the oracle that tells how far a policy is
// from optimal.
//
// The joint state is the sources' ages (epochs since each source's last crawl, 1..cap_i; age k
// means state x_k, the passive recursion from a crawl; with content expiry E, x_cap from age E
// on), unit costs, at most M crawls per epoch,
// N <= 6. The transitions are deterministic, so a programme's optimal gain is the best mean cycle
// of its graph: Howard's policy iteration finds it, and every pass brackets it (for any values v,
// min_s (Tv - v) <= gain <= max_s (Tv - v)); the solve stops when the bracket is narrower than
// the tolerance (relative value iteration on the aperiodic chain P' = tau P + (1 - tau) I, which
// keeps the gain, finishes a solve whose bracket policy iteration leaves wide).
//
// Ages are capped per source, and the cap is bracketed from both sides by two programmes on the
// same capped states, which differ only in what a crawl at the capped age pays:
//   lower programme: x_cap, the least state of any age >= cap. Its policies run in the true
//     system and earn at least as much there, so its gain is <= the true optimum;
//   upper programme: the largest state of any age >= cap (the recursion's fixed point). Every
//     policy of the true system earns at most as much in it, so its gain is >= the true optimum.
// If neither programme's optimal cycle crawls a source at its capped age, the two gains are equal
// (each optimal policy earns the same in the other programme). So the caps start small and grow,
// for the sources that an optimal cycle crawls at their cap, until the bracket [lower, upper]
// closes to `bracket_tolerance` or the joint states would exceed max_states; a cap never needs to
// pass the age at which the source's state stops changing (its horizon: the programmes agree
// there). The optimum is reported only when the bracket is closed; otherwise the bracket is.
//
// Worked example (the paper's Table 1, M = 1): caps (2, 2, 2, 2) first; the cycles crawl sources
// at their caps, which grow; the bracket closes at 260.3899... with a 1e-8 relative tolerance.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "crawleval/model/problem.hpp"

namespace crawleval {

struct OptimalOptions {
  uint64_t max_states = 2'000'000;  ///< the product of the caps must stay below this
  uint32_t max_cap = 1u << 20;      ///< no source's cap above this
  double tolerance = 1e-9;          ///< relative width of each programme's gain bracket
  /// The optimum is reported when upper - lower <= bracket_tolerance * max(1, |upper|).
  double bracket_tolerance = 1e-8;
  uint64_t max_iterations = 200'000;
  /// At most this many state-action evaluations over every solve (a sweep of a programme costs
  /// its states times its actions): where mu T is tiny the caps grow large and the solves slow,
  /// and the result is then the bracket reached, not the optimum. About 2-4 minutes on 2 cores.
  double max_work = 1e11;
  double tau = 0.5;  ///< aperiodicity transformation (of the value iteration's fallback)
  int threads = 0;
  /// Called before each programme's solve (its joint states, its largest cap, the actions), and
  /// after every iteration with that programme's gain bracket: for progress on long solves.
  std::function<void(uint64_t states, uint32_t cap, std::size_t actions)> on_start;
  std::function<void(uint64_t iteration, double gain_low, double gain_high)> on_iteration;
};

struct OptimalResult {
  /// The true optimum's long-run reward per epoch lies in [gain_low, gain_high]: the lower
  /// programme's bracket's low end and the upper programme's high end.
  double gain_low = 0.0;
  double gain_high = 0.0;
  /// The bracket is within bracket_tolerance (and both programmes converged): `gain` is the
  /// optimum (the bracket's midpoint). Otherwise `gain` is NaN: there is only the bracket.
  bool closed = false;
  double gain = 0.0;
  double bracket_tolerance = 0.0;
  std::vector<uint32_t> caps;  ///< each source's age cap in the last solve (in position order)
  uint32_t cap = 0;            ///< the largest of them
  uint64_t states = 0;         ///< joint states of the last solve
  uint64_t iterations = 0;     ///< iterations over every solve
  uint32_t solves = 0;         ///< programmes solved (two per set of caps)
  bool converged = false;      ///< both programmes of the last solve converged
  bool out_of_work = false;    ///< the work limit (OptimalOptions::max_work) stopped the solve
  /// One period of an optimal schedule of the lower programme reached from "every source fresh"
  /// (all ages 1): the crawled ids (positions) of each epoch of the cycle, and the cycle's
  /// average reward (a schedule that runs in the true system and earns this there).
  std::vector<std::vector<uint32_t>> cycle;
  double cycle_reward = 0.0;
};

/// Throws InputError if the instance is not small (N > 6), has non-unit costs, or M is not an
/// integer in [1, N].
OptimalResult exact_optimum(const Population& pop, double epoch_length, double budget,
                            const OptimalOptions& options = {});

}  // namespace crawleval
