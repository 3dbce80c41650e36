// The LSPE(0) Whittle learner of Avrachenkov & Borkar ("A learning algorithm for the Whittle index
// policy for scheduling web crawlers", whittle-learning-lspe.txt, sections III-V).
//
// The policy is a logit-smoothed threshold rule: source i is crawled with probability
//     f_i(x) = 1 / (1 + exp(-kappa (x_i - T_i(x_-i) - 0.5))),
// independently of the others (so the budget holds only on average, as in the paper), with the
// threshold T_i(x_-i) = q0_i + q1_i s_i + q2_i s_i^2 of s_i = sum_{k != i} x_k (section V; the
// paper writes q1 twice, a typo for q2), projected onto [u_i, u_i / (1 - alpha_i)]. Critic: LSPE(0)
// for the average reward with features phi(x) = [x_1..x_N, x_i x_j (i <= j)]:
//     eta += b(n) (g - eta),  B += b(n) (phi phi' - B),  A += b(n) (phi (phi_next - phi)' - A),
//     c += b(n) (phi (g - eta) - c),  w += gamma B+ (A w + c),
// where g is the reward of the step and B+ = (B'B + delta I)^-1 B' is the Tikhonov-regularised
// inverse the paper ends up using. Actor (eq. 9): q += a(n) grad_q log p(X(n+1) | X(n))
// w'phi(X(n+1)), with grad of log f_i = -kappa (1 - f_i) psi and of log (1 - f_i) = kappa f_i psi,
// psi = (1, s, s^2). Two timescales: a(n) = c / ceil(n / 500), b(n) = c / ceil(n / 1000)^(2/3).
//
// A correction of the paper: its iterates for eta and b use sum_i X_i(n), the states of every
// source, crawled or not, while its objective (section II) counts the crawled content alone,
// sum_i X_i(n) nu_i(n); the reward g here is the utility crawled, sum_i x_i v_i, the objective's.
// LspeCritic::paper runs the iterates as printed (g = sum_i x_i), so that what the correction
// changes is measured, not only stated; the reward reported is the crawled utility either way.
//
// The operating policy. The paper (section III) calls the randomised rule "purely an
// approximation for analytic purposes": the policy it operates picks exactly N0 sources each step.
// LspeOperating::top crawls the N0 sources with the largest margin x_i - T_i(x_-i) over their
// learned thresholds (ties: the lower index), and the critic and the actor learn from those
// transitions with the logit's likelihood ratio, as an online scheme must. The paper's numbers
// ("on average one arm sampled", a dispersion that kappa controls) are those of the randomised
// rule, LspeOperating::randomised, the default.
// Choices the paper leaves open, made here and documented: states enter features and thresholds
// scaled by u*_i (s_i by sum_{k != i} u*_k), which leaves the function classes unchanged and keeps
// the matrices well conditioned; thresholds start at the middle of [u_i, u*_i] with q1 = q2 = 0;
// the threshold gradient ignores the projection (straight-through); B(-1) = 1e-3 I, delta = 1e-6, c
// = 0.5.
#pragma once

#include <cstdint>
#include <vector>

#include "crawleval/model/problem.hpp"

namespace crawleval {

/// How the learner acts (see the header comment).
enum class LspeOperating : int { randomised = 0, top = 1 };
/// The reward in the critic's iterates: the crawled utility (the objective), or the paper's
/// printed sum of every state.
enum class LspeCritic : int { crawled = 0, paper = 1 };
const char* to_string(LspeOperating o);
const char* to_string(LspeCritic c);

struct LspeConfig {
  uint32_t steps = 10000;
  LspeOperating operating = LspeOperating::randomised;
  uint32_t top = 1;  ///< N0: sources crawled per step by LspeOperating::top
  LspeCritic critic = LspeCritic::crawled;
  /// Where the thresholds start in [u_i, u*_i] (0: at u_i, 1: at u*_i; the paper does not say).
  double start = 0.5;
  /// false: the untrained policy, the starting thresholds kept (the baseline a learning run is
  /// measured against: same draws, no actor or critic step).
  bool learn = true;
  /// Record every step's states, learned and exact thresholds (LspeRun::trace).
  bool trace = false;
  double kappa = 2.0;
  double gamma = 0.05;
  double step_scale = 0.5;  ///< c in a(n), b(n)
  double tikhonov = 1e-6;   ///< delta
  uint32_t replications = 20;
  uint64_t seed = 1;
};

struct LspeRun {
  double mean_reward = 0.0;        ///< per step, over all steps
  double mean_reward_last = 0.0;   ///< per step, over the second half
  double mean_crawls = 0.0;        ///< sources crawled per step
  bool finite = true;              ///< every iterate stayed finite
  std::vector<double> thresholds;  ///< final T_i at the final state
  /// Mean over the second half of |T_i learned - T_i exact| / u*_i, over the sources: how far the
  /// learned thresholds are from the Whittle policy's (exact_threshold).
  double threshold_gap = 0.0;
  /// With LspeConfig::trace, per step and source (step-major): the state, the learned threshold
  /// (projected), the exact one, and whether the source was crawled.
  std::vector<double> trace_state, trace_learned, trace_exact;
  std::vector<uint8_t> trace_crawled;
};

/// The inverse of Theorem 1's index: the state at which source p's index (cost C) equals g
/// (bisection on [0, u*), x = g C at and above u*/C, 0 at or below 0).
double whittle_index_inverse(double g, const SourceParams& p);

/// The learning paper's exact threshold T_i(x_-i) (section III): the state at which source i's
/// Whittle index reaches the largest of the other sources' indices, gamma_i^-1(max_j!=i gamma_j).
double exact_threshold(const std::vector<double>& x, std::size_t i,
                       const std::vector<SourceParams>& p);

/// Runs the learner on the deterministic model of `problem` (its sources and epoch length; the
/// budget is not used: the randomised policy crawls each source with probability f_i).
/// Throws InputError naming the setting that is out of range.
void validate(const Problem& problem, const LspeConfig& cfg);

LspeRun lspe_run(const Problem& problem, const LspeConfig& cfg, uint32_t replication);

/// cfg.replications learning runs and, on the same draws, the untrained policy's (the starting
/// thresholds kept): per-replication figures and their means with 95% CIs over replications.
/// Replication 0 keeps its trace when cfg.trace. In parallel over replications (OpenMP).
struct LspeExperiment {
  std::vector<LspeRun> runs, untrained;
  std::vector<double> reward, reward_last, crawls, untrained_reward, threshold_gap;
  double mean_reward = 0, ci_low = 0, ci_high = 0;
  double mean_reward_last = 0, last_ci_low = 0, last_ci_high = 0;
  double mean_crawls = 0, crawls_ci_low = 0, crawls_ci_high = 0;
  double untrained_mean = 0, untrained_ci_low = 0, untrained_ci_high = 0;
  double mean_threshold_gap = 0;
  bool finite = true;
};
LspeExperiment lspe_experiment(const Problem& problem, const LspeConfig& cfg);

}  // namespace crawleval
