// The Lagrangian (Whittle relaxation) upper bound on the optimal long-run reward per epoch.
//
// Derivation (research report, sections 3-6). Replace the per-epoch budget sum_i C_i v_i(t) <= M by
// its long-run average and price it with a multiplier lambda >= 0, paid as a subsidy C_i lambda for
// every passive epoch (the report's k(x, v) = x v + C lambda (1 - v)). For any policy that meets
// the budget, sum_i C_i (1 - v_i) >= sum_i C_i - M every epoch, so
//     reward = sum_i [reward_i + C_i lambda (1 - v_i)] - lambda sum_i C_i (1 - v_i)
//           <= sum_i beta_i(lambda) - lambda (sum_i C_i - M),
// where beta_i(lambda) is the best average of reward_i + C_i lambda (1 - v_i) for source i alone: a
// threshold policy by indexability, i.e. crawl every k epochs or never (relaxed_value, model.hpp).
// Every lambda >= 0 gives a bound; the best, D(lambda*) = min_lambda, is where the relaxed crawl
// rate sum_i C_i / period_i(lambda) crosses M (D is convex, D'(lambda) = M - rate).
//
// Validity: the deterministic model, and the stochastic model observed as a belief (decisions then
// depend on ages only and the expected reward of a crawl at age k is x_k). A policy that sees the
// random states of the stochastic model can beat it, so no bound is reported there.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "crawleval/base/comm.hpp"
#include "crawleval/model/problem.hpp"

namespace crawleval {

struct BoundResult {
  bool applicable = true;
  std::string note;          ///< why not applicable
  double bound = 0.0;        ///< upper bound on the optimal long-run reward per epoch
  double lambda = 0.0;       ///< the multiplier that gave it
  double crawl_rate = 0.0;   ///< sum_i C_i / period_i(lambda): the relaxed budget use
  uint64_t evaluations = 0;  ///< passes over the population
  double seconds = 0.0;
  std::vector<uint32_t> period;  ///< relaxed crawl periods at lambda (0 = never), if asked
};

/// True when the bound applies to this problem (see above); else `why` says why not.
bool bound_applies(const RunConfig& cfg, std::string* why = nullptr);
/// bound_applies of the settings, and of the population's observe column (this process's part):
/// in the stochastic model a source the column marks fully observed lets a policy see its random
/// state, which the relaxation does not bound.
bool bound_applies(const Problem& problem, std::string* why = nullptr);

/// The result for a problem the bound does not apply to (NaN value, the reason in note).
BoundResult inapplicable_bound(const RunConfig& cfg);
BoundResult inapplicable_bound(const Problem& problem);

/// Fast path (OpenMP): lambda from a sample of 65536 sources, then bracketing and bisection
/// passes that move each source's period by a few steps (multiply-adds only), and a final exact
/// pass. 1e8 sources take seconds.
BoundResult lagrangian_bound(const Problem& problem, bool keep_periods = false);

/// Reference: serial bisection on lambda with every source's period found by scanning k = 1, 2, ...
BoundResult lagrangian_bound_reference(const Problem& problem);

/// Fills problem.static_period (the static policy's periods) from the relaxation.
void prepare_static_policy(Problem& problem);
/// Fills problem.lip_multiplier, lip_gain and lip_period (the Lagrangian index's relaxation,
/// lip.hpp): lambda* is the bound's multiplier, or the middle of the multipliers where the dual is
/// flat (a range of them minimises it).
void prepare_lip_policy(Problem& problem);

/// The multiplier's bracket, on every backend: lo < lambda* <= hi for a crawl rate that falls
/// with lambda, from lo = 0 and hi = lambda_high (the largest x_cap / C, where the rate is 0), by
/// `steps` bisections; where they leave lo at 0 (costs over many decades put the root below
/// hi 2^-steps: 1e300 with a cost of 1e-300, and the bound was far above the dual's minimum, and
/// the backends apart; a hostile pass) hi is halved until the rate at hi / 2 exceeds M, and
/// [hi / 2, hi] bisected `steps` times. above(l): whether the rate at l exceeds M. `check`
/// (interrupts) runs before each step.
template <class Above, class Check>
void bracket_multiplier(const Above& above, const Check& check, int steps, double* lo_out,
                        double* hi_out) {
  double lo = 0.0, hi = *hi_out;
  for (int it = 0; it < steps && hi > lo; ++it) {
    check();
    const double mid = 0.5 * (lo + hi);
    (above(mid) ? lo : hi) = mid;
  }
  if (lo == 0.0 && hi > 0.0) {
    for (int it = 0; it < 2200 && hi > 0.0 && lo == 0.0; ++it) {
      check();
      (above(0.5 * hi) ? lo : hi) = 0.5 * hi;
    }
    for (int it = 0; it < steps && lo > 0.0 && hi > lo; ++it) {
      check();
      const double mid = 0.5 * (lo + hi);
      (above(mid) ? lo : hi) = mid;
    }
  }
  *lo_out = lo, *hi_out = hi;
}

/// lagrangian_bound over the ranks: the same result on every rank, bit for bit equal to one
/// process's lagrangian_bound (one fold of per-chunk sums per bisection step).
BoundResult sharded_bound(const Problem& problem, Comm& comm, bool keep_periods = false);
/// prepare_static_policy over the ranks (each rank keeps its sources' periods).
void prepare_static_policy(Problem& problem, Comm& comm);
/// prepare_lip_policy over the ranks (a collective; each rank keeps its sources' columns).
void prepare_lip_policy(Problem& problem, Comm& comm);

namespace cuda {
/// The Lagrangian bound computed on the GPU (kernels/analysis/bound_kernels.cu); InputError in a
/// build without the CUDA backend.
BoundResult lagrangian_bound(const Problem& problem);
}  // namespace cuda

}  // namespace crawleval
