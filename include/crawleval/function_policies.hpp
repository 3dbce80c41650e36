// Policies from the papers given as score functions (rollout.hpp's ScoreFn), run by the function
// engine (function_rollout) beside the built-in policies of policy.hpp. A native engine path for
// one of them needs its score written as a __host__ __device__ function of (state, age, params)
// in policy.hpp and, for the adaptive policy, per-source estimator state in the engine.
#pragma once

#include "crawleval/problem.hpp"
#include "crawleval/rollout.hpp"

namespace crawleval {

/// The learning paper's index for content expiry (its eqs. 4-5): Theorem 1's formula with
/// u_i = (1 - alpha_i)(1 - alpha_i^E_i) lambda_i xi_i / mu_i, i.e. with u* replaced by the
/// saturated expected state x_cap = u* (1 - alpha^E), applied to the observed state (under belief
/// the expected state, AgeState::value). crawleval's own expiry index (README, model.hpp's
/// AgeState::index) keeps u* and saturates at age E instead. Without expiry both are Theorem 1's.
double expiry_paper_index(double x, const SourceParams& p);
ScoreFn expiry_paper_index_policy(const Problem& problem);

}  // namespace crawleval
