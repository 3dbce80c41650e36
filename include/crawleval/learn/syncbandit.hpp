// Synchronization bandits (Kolobov, Bubeck & Zimmert, "Online learning for active cache
// synchronization", mirrorsync-online-cache-sync.txt) and the learners MirrorSync (Algorithm 1),
// AsyncMirrorSync (Algorithm 2) and AsyncPSGDSync (section 8).
//
// K arms generate costs continually; arm k's expected cost rate tau after its last sync is
// cbar_k(tau), its accumulated expected cost Cbar_k(tau) = int_0^tau cbar_k. A policy syncs arm k
// every 1/r_k time units; its cost is J(r) = 1/K sum_k r_k Cbar_k(1/r_k) (Lemma 1), convex and
// decreasing. Problem 1: minimise J over {r_min <= r_k <= r_max, sum_k r_k = B}.
//
// Cost families (the paper's experiments, section 8 and appendix C):
//   polynomial: c_k(tau) = a tau^p_k with a drawn per observation from U(mu_k (1 - noise),
//               mu_k (1 + noise)); Cbar_k(tau) = mu_k tau^(p+1) / (p+1), J_k(r) = mu_k r^-p /
//               (p+1);
//   poisson:    a page changes as a Poisson process of rate delta_k; the cost is w_k while it has
//               changed since its last sync: cbar_k(tau) = w_k (1 - e^(-delta tau)),
//               Cbar_k(tau) = w_k (tau - (1 - e^(-delta tau)) / delta).
// Generated instances (documented defaults, those of the paper's public code): polynomial
// mu_k ~ U(0, 1), p_k = sigmoid(5 U(0, 1)), noise 0.1; poisson delta_k ~ U(0.005, 5), w_k = 1.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "crawleval/base/enum_names.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/base/hd.hpp"
#include "crawleval/base/monitor.hpp"
#include "crawleval/model/rng.hpp"

namespace crawleval::sync {

enum class Family : int { polynomial = 0, poisson = 1 };
}  // namespace crawleval::sync
namespace crawleval {
template <>
struct EnumNames<sync::Family> {
  static constexpr EnumName<sync::Family> table[] = {{sync::Family::polynomial, "polynomial"},
                                                     {sync::Family::poisson, "poisson"}};
};
}  // namespace crawleval
namespace crawleval::sync {
inline const char* to_string(Family f) { return enum_name(f); }

/// One instance: per-arm parameters (columns) and the constraints.
struct Instance {
  Family family = Family::polynomial;
  std::vector<double> mu, p;          ///< polynomial: mean scale and exponent in (0, 1)
  std::vector<double> delta, weight;  ///< poisson: change rate, cost while changed
  double noise = 0.1;                 ///< polynomial: relative spread of a around mu
  double r_min = 0.025, r_max = 3.0, budget = 40.0;  ///< Problem 1's constraints
  std::size_t arms() const { return family == Family::polynomial ? mu.size() : delta.size(); }
};

/// Instance generator (see the header comment). Deterministic in (family, K, seed).
Instance generate_instance(Family family, std::size_t arms, uint64_t seed);

/// Checks parameters and constraints (r_min <= B/K <= r_max, ...); throws InputError.
void validate(const Instance& inst);

// ---- per-arm closed forms (host and device) ----------------------------------------------

/// Expected cost rate cbar_k(tau) and expected accumulated cost Cbar_k(tau).
double cost_rate(const Instance& inst, std::size_t k, double tau);
double accumulated_cost(const Instance& inst, std::size_t k, double tau);
/// J_k(r) = r Cbar_k(1/r).
double arm_cost(const Instance& inst, std::size_t k, double r);
/// dJ_k/dr = Cbar_k(1/r) - cbar_k(1/r) / r  (< 0).
double arm_cost_derivative(const Instance& inst, std::size_t k, double r);
/// J(r) = 1/K sum_k J_k(r_k).
double policy_cost(const Instance& inst, const std::vector<double>& r);

/// One (probe, sync) observation pair of arm k for a sync interval of length 1/r with a probe at
/// time t_probe inside it (monotone: probe cost <= sync cost). draws: a counter-based stream.
void sample_pair(const Instance& inst, std::size_t k, double t_probe, double length,
                 DrawStream& draws, double* probe_cost, double* sync_cost);

// ---- optimisation steps -------------------------------------------------------------------

/// The box-and-sum constraint set {lo <= x_k <= hi, sum_k x_k = total}.
struct Simplex {
  double lo, hi, total;
};

/// Problem 1's optimum: r_k(nu) = argmin J_k(r) + nu r over the box (closed form for polynomial
/// costs, a Newton solve for poisson ones), with the one dual variable nu found by bisection so
/// that sum_k r_k = total. Returns J(r*) and writes r* if asked.
double optimal_cost(const Instance& inst, const Simplex& s, std::vector<double>* r_opt = nullptr);

/// The log-barrier mirror step of Algorithm 1, solved exactly on a subset of arms:
///   argmin_{x in s} eta <g, x> + sum_k [-log(x_k / r_k) + x_k / r_k - 1].
/// Optimality: x_k = 1 / (eta g_k + 1/r_k + nu) clipped to [lo, hi], nu by bisection.
std::vector<double> mirror_step(const std::vector<double>& r, const std::vector<double>& g,
                                double eta, const Simplex& s);

/// Projected SGD step: the Euclidean projection of r - eta g onto s (x_k = clip(y_k - nu)).
std::vector<double> psgd_step(const std::vector<double>& r, const std::vector<double>& g,
                              double eta, const Simplex& s);

// ---- learners -------------------------------------------------------------------------------

enum class Algorithm : int { mirrorsync = 0, async_mirrorsync = 1, async_psgd = 2 };
}  // namespace crawleval::sync
namespace crawleval {
template <>
struct EnumNames<sync::Algorithm> {
  static constexpr EnumName<sync::Algorithm> table[] = {
      {sync::Algorithm::mirrorsync, "mirrorsync"},
      {sync::Algorithm::async_mirrorsync, "async-mirrorsync"},
      {sync::Algorithm::async_psgd, "async-psgd"}};
};
}  // namespace crawleval
namespace crawleval::sync {
inline const char* to_string(Algorithm a) { return enum_name(a); }

/// Where the learners depart from the paper's pseudo-code, each selectable (the defaults are
/// crawleval's; `paper` runs the pseudo-code as printed):
///   gradient (Algorithm 1, lines 14-18): `mean` averages every gradient sample of a round,
///     `first` keeps the round's first (the pseudo-code's break);
///   local budget (Algorithm 2, line 35): `public_code` gives the updated arms their current
///     bandwidth sum_A r_k, `paper` divides it by 1 + eps again (the rates already live in K_eps,
///     so the total shrinks at every update; where it falls below |A| r_min, which no rates can
///     meet, the total is r_min |A|);
///   rescheduling (Algorithm 2, lines 37-40): `public_code` reschedules the updated arms' interval
///     in progress as the authors' code does, `paper` reschedules every arm's: its next sync at
///     `now` with probability eps, else at max(t_prev + 1/r_k, now) with t_prev its last
///     scheduled sync, an interval without a probe whose sample is 0 (line 24).
enum class Gradient : int { mean = 0, first = 1 };
enum class Rule : int { public_code = 0, paper = 1 };
}  // namespace crawleval::sync
namespace crawleval {
template <>
struct EnumNames<sync::Gradient> {
  static constexpr EnumName<sync::Gradient> table[] = {{sync::Gradient::mean, "mean"},
                                                       {sync::Gradient::first, "first"}};
};
template <>
struct EnumNames<sync::Rule> {
  static constexpr EnumName<sync::Rule> table[] = {{sync::Rule::public_code, "public-code"},
                                                   {sync::Rule::paper, "paper"}};
};
}  // namespace crawleval
namespace crawleval::sync {
inline const char* to_string(Gradient g) { return enum_name(g); }
inline const char* to_string(Rule r) { return enum_name(r); }

struct LearnConfig {
  Algorithm algorithm = Algorithm::mirrorsync;
  Gradient gradient = Gradient::mean;     ///< MirrorSync
  Rule local_budget = Rule::public_code;  ///< asynchronous algorithms
  Rule reschedule = Rule::public_code;    ///< asynchronous algorithms
  double epsilon = 0.05;                  ///< probe probability (bandwidth fraction for probes)
  double eta = 2.7;                       ///< learning rate
  double cycle = 20.0;                    ///< update cycle length (asynchronous algorithms)
  uint32_t rounds = 240;  ///< MirrorSync rounds (of length 1/r_min), or that much time
  uint64_t seed = 1;
};

/// The public code's tuned learning rate and update cycle for `algorithm` on `family` instances
/// (the CLI's defaults); the other settings keep LearnConfig's defaults.
LearnConfig tuned_learn_config(Algorithm algorithm, Family family);

/// Checks the learner's settings; throws InputError.
void validate(const LearnConfig& cfg);

/// One run: the policy cost J(r) after every update (index 0: the initial policy). For the
/// asynchronous algorithms, updates happen every `cycle` time units, so the curve has
/// rounds * (1/r_min) / cycle + 1 points. `run` keys the random draws.
/// Non-stationary costs (the adversarial setting of section 5): `by_round[t]` is the instance of
/// round t + 1 (rounds of 1/r_min time units; the last one continues), `inst` then only gives the
/// rates' constraints. An update period draws its costs from the round in which it starts, and
/// curve point j is the policy after j updates priced by the costs of the period it is played in,
/// J^t(r^t) (the regret's terms).
std::vector<double> learn(const Instance& inst, const LearnConfig& cfg, uint32_t run,
                          const std::vector<Instance>* by_round = nullptr);

/// The best fixed rates against a sequence of cost functions, argmin over s of
/// sum_t J^t(r) (separable: each arm's sum is convex; one dual variable, as optimal_cost). With
/// one instance this is optimal_cost's r*. Returns the sum and writes the rates if asked.
double optimal_cost_rounds(const std::vector<Instance>& rounds, const Simplex& s,
                           std::vector<double>* r_opt = nullptr);

/// The theory's parameters and bounds for MirrorSync (section 5), with U the cost cap and
/// L = log(B / (r_min K)): Corollary 1's eps = T^(-1/3) L^(1/3) and eta = (K / U) sqrt(L eps / T);
/// Theorem 5.1's in-policy bound K L / eta + eta U^2 T / (eps K) (needs eta < K eps / (2 U));
/// Lemma 3's exploration gap bound 2 eps U T (needs T > 8 L). With these eps and eta both parts
/// are 2 U T^(2/3) L^(1/3), so the regret bound their sum gives is 4 U T^(2/3) L^(1/3); the
/// paper's Corollary 1 states 3 U T^(2/3) L^(1/3), one U T^(2/3) L^(1/3) short of the two parts
/// its proof adds (kept as paper_regret_bound). InputError when L <= 0 or T <= 8 L.
struct TheoryParams {
  double epsilon = 0.0, eta = 0.0, log_term = 0.0, cost_cap = 0.0;
  double in_policy_bound = 0.0, exploration_gap_bound = 0.0;
  double regret_bound = 0.0;        ///< in_policy_bound + exploration_gap_bound
  double paper_regret_bound = 0.0;  ///< Corollary 1 as printed: 3 U T^(2/3) L^(1/3)
};
TheoryParams theory_parameters(const Instance& inst, uint32_t rounds, double cost_cap);
/// Theorem 5.1's and Lemma 3's bounds for given eta and eps (the same formulas).
double in_policy_regret_bound(const Instance& inst, uint32_t rounds, double cost_cap, double eta,
                              double epsilon);
/// The largest expected cost rate an arm can have within the rate bounds: cbar_k(1 / r_min),
/// at the top of the noise for polynomial costs (the U of section 5 for this instance).
double cost_cap(const Instance& inst);

/// Many independent runs (instances x seeds), in parallel over runs: the curves' mean and 95% CI
/// per update, and the optima. Instance r is `make_instance(r)`.
struct Experiment {
  std::vector<double> rounds;  ///< x axis: equivalent MirrorSync rounds of each update
  std::vector<double> mean, ci_low, ci_high;
  /// Cumulative regret (section 5) after each update, in rounds x J: sum over the periods played
  /// so far of (J^t(r^t) - J^t(r*)) times the period's length in rounds, r* the best fixed rates
  /// over K_0; its mean and 95% CI over runs. in_policy: against r*_eps over K_eps.
  std::vector<double> regret_mean, regret_ci_low, regret_ci_high;
  std::vector<double> in_policy_mean, in_policy_ci_low, in_policy_ci_high;
  /// sum_t (J^t(r*_eps) - J^t(r*)) over the whole horizon (Lemma 3's exploration gap), mean.
  double exploration_gap = 0.0;
  double optimum = 0.0;          ///< mean over runs of J* (Problem 1)
  double optimum_epsilon = 0.0;  ///< mean of the optimum over K_eps (what the learners can reach)
  uint32_t runs = 0;
  double seconds = 0.0;
  /// The slope of log regret_mean against log rounds, fitted by least squares over the curve's
  /// points from round kRegretFitFrom on (NaN when fewer than two have a positive regret): the
  /// measured growth exponent, against the O(T^(2/3)) of Corollary 1.
  double regret_exponent = 0.0;
};
inline constexpr double kRegretFitFrom = 10.0;
template <class MakeInstance>
Experiment run_experiment(MakeInstance&& make_instance, const LearnConfig& cfg, uint32_t runs,
                          const std::vector<Instance>* by_round = nullptr);

/// InputError when `runs` runs of a learner on instances like `inst` would simulate more than 1e10
/// syncs (rounds x budget / r_min each).
void check_work(const Instance& inst, const LearnConfig& cfg, uint32_t runs);

/// The gradient estimate of Lemma 2 for one sync interval: 0 without a probe, else
/// (probe cost - sync cost) / (epsilon r). Its mean is dJ_k/dr (times K, before normalising).
CE_HD_INLINE double gradient_sample(bool probed, double probe_cost, double sync_cost,
                                    double epsilon, double r) {
  return probed ? (probe_cost - sync_cost) / (epsilon * r) : 0.0;
}

/// Summarises per-run curves (implementation detail of run_experiment): `comparator[r][j]` and
/// `comparator_eps[r][j]` price the best fixed rates (K_0, K_eps) in the period of curve point j.
Experiment summarize_runs(const std::vector<std::vector<double>>& curves,
                          const std::vector<double>& optimum,
                          const std::vector<double>& optimum_eps, double points_per_round,
                          const std::vector<std::vector<double>>& comparator,
                          const std::vector<std::vector<double>>& comparator_eps);

/// The comparators' prices per curve point (implementation detail of run_experiment): the best
/// fixed rates over K_0 and K_eps, each point priced as learn prices it.
void comparators(const Instance& inst, const LearnConfig& cfg, std::size_t points,
                 const std::vector<Instance>* by_round, std::vector<double>* comp,
                 std::vector<double>* comp_eps, double* opt, double* opt_eps);

template <class MakeInstance>
Experiment run_experiment(MakeInstance&& make_instance, const LearnConfig& cfg, uint32_t runs,
                          const std::vector<Instance>* by_round) {
  validate(cfg);
  if (runs > 0) check_work(make_instance(0), cfg, runs);  // before any run starts
  std::vector<std::vector<double>> curves(runs), comp(runs), comp_eps(runs);
  std::vector<double> opt(runs), opt_eps(runs);
  double points_per_round = 1.0;
  std::string error;
  bool input_error = false;
  // A stop (Ctrl-C, a monitor) ends the runs not started yet at once and is rethrown as itself
  // (Python's KeyboardInterrupt): it was an Error("interrupted") after every run had started.
  std::atomic<bool> interrupted{false};
#pragma omp parallel for schedule(dynamic, 1)
  for (uint32_t run = 0; run < runs; ++run) {
    if (interrupted.load(std::memory_order_relaxed)) continue;
    try {
      const Instance inst = make_instance(run);
      curves[run] = learn(inst, cfg, run, by_round);
      comparators(inst, cfg, curves[run].size(), by_round, &comp[run], &comp_eps[run], &opt[run],
                  &opt_eps[run]);
    } catch (const Interrupted&) {
      interrupted.store(true, std::memory_order_relaxed);
    } catch (const std::exception& e) {
#pragma omp critical
      {
        error = e.what();
        input_error = dynamic_cast<const InputError*>(&e) != nullptr;
      }
    }
  }
  if (interrupted.load()) throw Interrupted();
  if (!error.empty()) {
    if (input_error) throw InputError(error);
    throw Error(error);
  }
  if (!curves.empty() && cfg.rounds > 0)
    points_per_round = double(curves[0].size() - 1) / double(cfg.rounds);
  return summarize_runs(curves, opt, opt_eps, points_per_round, comp, comp_eps);
}

}  // namespace crawleval::sync
