// crawleval learn mirrorsync|async-mirrorsync|async-psgd|lspe, crawleval syncbandit optimum.
#include "cli_learn.hpp"

#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "crawleval/analysis/function_policies.hpp"
#include "crawleval/analysis/relaxed_policy.hpp"
#include "crawleval/analysis/stats.hpp"
#include "crawleval/base/enum_names.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/base/version.hpp"
#include "crawleval/evaluate/driver.hpp"
#include "crawleval/io/io.hpp"
#include "crawleval/io/learn_output.hpp"
#include "crawleval/io/output.hpp"
#include "crawleval/io/output_file.hpp"
#include "crawleval/io/syncbandit_io.hpp"
#include "crawleval/learn/lspe.hpp"
#include "crawleval/learn/syncbandit.hpp"
#include "crawleval/model/population.hpp"
#include "crawleval/model/resources.hpp"
#include "options.hpp"

namespace crawleval::cli {

namespace {

namespace sb = crawleval::sync;
using cli::integer_in;
using cli::kHuge;
using cli::kMaxU32;
using cli::kMaxU64;
using cli::number_in;

/// Instance settings shared by the sync-bandit commands.
struct InstanceArgs {
  std::string family = "polynomial", instance_path;
  std::size_t arms = 100;
  uint64_t seed = 0;
  double budget = -1, r_min = 0.025, r_max = -1, noise = 0.1;
  CLI::Option* family_option = nullptr;

  /// `seed_help`: how the command uses the seed; `instance`: whether it reads --instance and
  /// the budget and rate limits (which an instance file does not hold); `noise`: whether it
  /// observes noisy costs (the learners).
  void add(CLI::App* app, const char* seed_help, bool instance, bool noisy) {
    family_option =
        app->add_option(
               "--family", family,
               instance ? "cost family of generated instances: " + enum_choices<sb::Family>(" | ") +
                              " (an --instance file's is read from its columns)"
                        : "cost family: " + enum_choices<sb::Family>(" | "))
            ->check(CLI::IsMember(enum_names<sb::Family>()))
            ->capture_default_str();
    app->add_option("--arms,-K", arms, "arms of generated instances")
        ->capture_default_str()
        ->check(integer_in(1, kMaxU32));
    if (instance)
      app->add_option("--instance", instance_path,
                      "CSV of per-arm parameters: columns mu,p (polynomial) or delta,weight "
                      "(poisson), optionally arm; every run uses it")
          ->check(CLI::ExistingFile);
    app->add_option("--seed", seed, seed_help)
        ->capture_default_str()
        ->check(integer_in(0, kMaxU64 - kMaxU32));
    if (!instance) return;
    app->add_option("--budget,-B", budget, "total sync rate B (default 0.4 K)")
        ->check(number_in(0, kHuge, true));
    app->add_option("--r-min", r_min, "lowest rate")
        ->capture_default_str()
        ->check(number_in(0, kHuge, true));
    app->add_option("--r-max", r_max, "highest rate (default 3 polynomial, 6 poisson)")
        ->check(number_in(0, kHuge, true));
    if (noisy)
      app->add_option("--noise", noise, "polynomial: relative spread of the observed costs' scale")
          ->capture_default_str()
          ->check(number_in(0, 1));
  }
  sb::Family fam() const { return enum_parse_or_throw<sb::Family>(family, "--family"); }
  /// The --instance file, its family read from its columns (--family, when given, must match).
  std::unique_ptr<sb::Instance> read() const {
    if (instance_path.empty()) return nullptr;
    return std::make_unique<sb::Instance>(sb::read_instance_csv(
        instance_path,
        family_option && family_option->count() ? std::optional(fam()) : std::nullopt));
  }
  /// The instance of run r: the CSV (same for every run) or a generated one.
  sb::Instance make(uint32_t run, const sb::Instance* fixed) const {
    sb::Instance inst = fixed ? *fixed : sb::generate_instance(fam(), arms, seed + run);
    const double k = double(inst.arms());
    inst.budget = budget > 0 ? budget : 0.4 * k;
    inst.r_min = r_min;
    inst.r_max = r_max > 0 ? r_max : (inst.family == sb::Family::polynomial ? 3.0 : 6.0);
    inst.noise = noise;
    sb::validate(inst);
    return inst;
  }
};

/// The section-5 settings of a learning run: round-varying costs, the theory's parameters.
struct TheoryArgs {
  std::string round_costs;  ///< CSV of round-varying costs (read_round_costs_csv)
  bool theory = false;      ///< Corollary 1's eta and eps
  double cost_cap = 0.0;    ///< U (0: the instance's, cost_cap())
};

/// One sync learner's settings (learn mirrorsync|async-mirrorsync|async-psgd).
struct SyncArgs {
  InstanceArgs ia;
  sb::LearnConfig cfg;
  uint32_t runs = 150;
  std::string json, curve;
  CLI::Option *eta = nullptr, *cycle = nullptr, *epsilon = nullptr;  ///< (given or not)
  TheoryArgs th;
  std::string gradient = "mean", local_budget = "public-code", reschedule = "public-code";
};

/// A learner's run as settled before it starts.
struct SyncPlan {
  std::unique_ptr<sb::Instance> fixed;  ///< every run's instance (null: generated per run)
  sb::Family family = sb::Family::polynomial;
  std::vector<sb::Instance> by_round;  ///< --round-costs: each round's costs (empty: fixed)
  sb::LearnConfig cfg;                 ///< with the tuned or the theory's parameters
  std::size_t arms = 0;
  sb::Instance first;  ///< run 0's instance
  double cap = 0.0;    ///< U: the largest expected cost rate of any round
  sb::TheoryParams theory;

  /// Lemma 3's bound on the exploration gap, 2 eps U T.
  double gap_bound() const { return 2.0 * cfg.epsilon * cap * double(cfg.rounds); }
};

/// The settings that do not go together, and the outputs that cannot be written, before any work.
void check_sync_run(const SyncArgs& a, sb::Algorithm alg) {
  const bool eta_given = a.eta->count() > 0, epsilon_given = a.epsilon->count() > 0;
  if (a.th.theory && alg != sb::Algorithm::mirrorsync)
    throw InputError(
        "--theory sets MirrorSync's parameters (Theorem 5.1, Corollary 1); the "
        "asynchronous variants have no such theory");
  if (a.th.theory && (eta_given || epsilon_given))
    throw InputError("--theory sets --learning-rate and --epsilon itself (Corollary 1)");
  if (!a.th.round_costs.empty() && !a.ia.instance_path.empty())
    throw InputError("give --instance or --round-costs, not both");
  CE_EXPECTS(a.runs >= 1, "--runs must be at least 1");
  if (!a.json.empty()) check_output(a.json, "--json");
  if (!a.curve.empty()) check_output(a.curve, "--curve");
  if (a.json == "-" && a.curve == "-")
    throw InputError("--json - and --curve - both ask for standard output; give one a file");
}

/// The instances (the --instance file, or --round-costs' rounds), the learner's parameters (the
/// public code's tuned ones where not given, or --theory's) and U, checked against the memory.
SyncPlan plan_sync(const SyncArgs& a, sb::Algorithm alg) {
  SyncPlan p;
  p.fixed = a.ia.read();
  p.family = p.fixed ? p.fixed->family : a.ia.fam();
  const sb::LearnConfig tuned = sb::tuned_learn_config(alg, p.family);
  p.cfg = a.cfg;
  p.cfg.gradient = *enum_parse<sb::Gradient>(a.gradient);
  p.cfg.local_budget = *enum_parse<sb::Rule>(a.local_budget);
  p.cfg.reschedule = *enum_parse<sb::Rule>(a.reschedule);
  p.cfg.algorithm = alg;
  if (a.eta->count() == 0) p.cfg.eta = tuned.eta;  // the public code's tuned learning rates
  if (!a.cycle || a.cycle->count() == 0) p.cfg.cycle = tuned.cycle;
  if (!a.th.round_costs.empty()) {
    sb::Instance base;
    base.family = p.family;
    p.by_round = sb::read_round_costs_csv(a.th.round_costs, p.family, base, p.cfg.rounds);
    p.fixed = std::make_unique<sb::Instance>(a.ia.make(0, &p.by_round.front()));
    for (sb::Instance& inst : p.by_round) {
      inst.budget = p.fixed->budget, inst.r_min = p.fixed->r_min, inst.r_max = p.fixed->r_max,
      inst.noise = p.fixed->noise;
      sb::validate(inst);
    }
  }
  // About 200 bytes per arm and run in flight (instance, rates, gradients, schedules).
  p.arms = p.fixed ? p.fixed->arms() : a.ia.arms;
  require_memory(
      200.0 * double(p.arms) *
          double(std::min<uint32_t>(a.runs, std::max(1u, std::thread::hardware_concurrency()))),
      std::to_string(p.arms) + " arms");
  p.first = a.ia.make(0, p.fixed.get());  // validates the settings first
  p.cap = a.th.cost_cap;
  if (!(p.cap > 0)) {
    p.cap = sb::cost_cap(p.first);
    for (const sb::Instance& inst : p.by_round) p.cap = std::max(p.cap, sb::cost_cap(inst));
  }
  if (a.th.theory) {
    p.theory = sb::theory_parameters(p.first, p.cfg.rounds, p.cap);
    CE_EXPECTS(p.theory.epsilon < 1, "Corollary 1's epsilon is not below 1 for " +
                                         std::to_string(p.cfg.rounds) + " rounds: use more rounds");
    p.cfg.epsilon = p.theory.epsilon, p.cfg.eta = p.theory.eta;
  }
  p.cfg.seed = a.ia.seed;  // the learners' draws follow --seed too (as the help and the JSON say)
  return p;
}

/// The learning curve's table, the regret and its growth, and the theory's bounds.
void print_sync_report(std::ostream& human, const SyncArgs& a, sb::Algorithm alg, const SyncPlan& p,
                       const sb::Experiment& e, double secs) {
  const sb::LearnConfig& cfg = p.cfg;
  human << sb::to_string(alg) << " on " << a.runs << (a.runs == 1 ? " run of " : " runs of ")
        << (p.fixed ? "the instance in " + printable(a.ia.instance_path, 256) + " (" +
                          sb::to_string(p.family) + ")"
                    : sb::to_string(p.family) + std::string(" instances"))
        << ", K = " << p.arms << ", epsilon " << cfg.epsilon << ", learning rate " << cfg.eta;
  if (alg != sb::Algorithm::mirrorsync) human << ", update cycle " << cfg.cycle;
  if (cfg.gradient == sb::Gradient::first) human << ", the round's first gradient sample";
  if (cfg.local_budget == sb::Rule::paper) human << ", the paper's local budget";
  if (cfg.reschedule == sb::Rule::paper) human << ", the paper's rescheduling";
  human << "\n\n"
        << std::setw(8) << "round" << std::setw(14) << "mean J" << std::setw(26) << "95% CI"
        << std::setw(14) << "gap to J*eps\n";
  const std::size_t points = e.mean.size();
  const std::size_t every = std::max<std::size_t>(1, (points - 1) / 12);
  for (std::size_t t = 0; t < points;
       t += (t + every < points || t == points - 1) ? every : points - 1 - t) {
    human << std::setw(8) << std::setprecision(4) << e.rounds[t] << std::setw(14)
          << std::setprecision(6) << e.mean[t] << std::setw(12) << "[" << e.ci_low[t] << ", "
          << e.ci_high[t] << "]" << std::setw(10) << std::setprecision(3)
          << 100 * (e.mean[t] / e.optimum_epsilon - 1) << "%\n";
    if (t == points - 1) break;
  }
  human << std::setprecision(6) << "\nJ* (Problem 1) mean " << e.optimum
        << ", optimum with epsilon-probing (J*eps) " << e.optimum_epsilon << "; " << secs << " s\n";
  human << "regret after " << cfg.rounds << " rounds (against the best fixed rates"
        << (p.by_round.empty() ? "" : " for the whole cost sequence")
        << "): " << e.regret_mean.back() << " [" << e.regret_ci_low.back() << ", "
        << e.regret_ci_high.back() << "]; in-policy regret (against the best rates over K_eps) "
        << e.in_policy_mean.back() << " [" << e.in_policy_ci_low.back() << ", "
        << e.in_policy_ci_high.back() << "]; exploration gap " << e.exploration_gap << "\n"
        << "regret growth: regret ~ rounds^" << e.regret_exponent
        << " (least squares on log-log from round " << sb::kRegretFitFrom
        << "; Corollary 1's rate is 2/3)\n";
  human << "Lemma 3: exploration gap <= 2 eps U T = " << p.gap_bound() << " (U = " << p.cap << ")";
  if (alg == sb::Algorithm::mirrorsync)
    human << "; Theorem 5.1: in-policy regret <= "
          << (cfg.eta < double(p.first.arms()) * cfg.epsilon / (2 * p.cap)
                  ? std::to_string(sb::in_policy_regret_bound(p.first, cfg.rounds, p.cap, cfg.eta,
                                                              cfg.epsilon))
                  : std::string("(no bound: eta >= K eps / (2 U))"));
  if (a.th.theory)
    human << "\nCorollary 1 (eta " << p.theory.eta << ", eps " << p.theory.epsilon
          << "): regret <= in-policy + exploration bounds = 4 U T^(2/3) log^(1/3)(B / (r_min "
             "K)) = "
          << p.theory.regret_bound << " (the paper prints 3 U ...: " << p.theory.paper_regret_bound
          << ")";
  human << "\n";
}

/// Writes --json's document: the command's envelope (tool, version, command, context), its
/// figures `j` and the seconds it took.
void write_command_json(const std::string& path, const char* command, const nlohmann::json& j,
                        double secs) {
  nlohmann::json out = {{"tool", "crawleval"},
                        {"version", version()},
                        {"command", command},
                        {"context", context_json("cpu")}};
  out.update(j);
  out["seconds"] = secs;
  write_json(path, out);
}

/// --json's document: the settings, the final figures and the whole curve.
nlohmann::json sync_json(const SyncArgs& a, sb::Algorithm alg, const SyncPlan& p,
                         const sb::Experiment& e, double secs) {
  const sb::LearnConfig& cfg = p.cfg;
  nlohmann::json j = {
      {"tool", "crawleval"},
      {"version", version()},
      {"command", std::string("learn ") + sb::to_string(alg)},
      {"context", context_json("cpu")},
      {"family", sb::to_string(p.family)},
      {"arms", p.arms},
      {"runs", a.runs},
      {"rounds", cfg.rounds},
      {"epsilon", cfg.epsilon},
      {"learning_rate", cfg.eta},
      {"seed", cfg.seed},
      {"j_star", e.optimum},
      {"j_star_epsilon", e.optimum_epsilon},
      {"final_mean_j", e.mean.back()},
      {"final_ci95", {e.ci_low.back(), e.ci_high.back()}},
      {"seconds", secs},
      {"regret", e.regret_mean.back()},
      {"regret_ci95", {e.regret_ci_low.back(), e.regret_ci_high.back()}},
      {"in_policy_regret", e.in_policy_mean.back()},
      {"in_policy_regret_ci95", {e.in_policy_ci_low.back(), e.in_policy_ci_high.back()}},
      {"exploration_gap", e.exploration_gap},
      {"exploration_gap_bound", p.gap_bound()},
      {"cost_cap", p.cap},
      {"round_costs", a.th.round_costs},
      {"regret_exponent",
       std::isfinite(e.regret_exponent) ? nlohmann::json(e.regret_exponent) : nlohmann::json()},
      {"regret_fit_from_round", sb::kRegretFitFrom},
      {"gradient", sb::to_string(cfg.gradient)},
      {"local_budget", sb::to_string(cfg.local_budget)},
      {"reschedule", sb::to_string(cfg.reschedule)},
      {"curve",
       {{"round", e.rounds},
        {"mean_j", e.mean},
        {"ci95_low", e.ci_low},
        {"ci95_high", e.ci_high},
        {"regret_mean", e.regret_mean},
        {"regret_ci95_low", e.regret_ci_low},
        {"regret_ci95_high", e.regret_ci_high},
        {"in_policy_regret_mean", e.in_policy_mean}}}};
  if (a.th.theory)
    j["theory"] = {{"epsilon", p.theory.epsilon},
                   {"learning_rate", p.theory.eta},
                   {"log_term", p.theory.log_term},
                   {"in_policy_bound", p.theory.in_policy_bound},
                   {"exploration_gap_bound", p.theory.exploration_gap_bound},
                   {"regret_bound", p.theory.regret_bound},
                   {"paper_regret_bound", p.theory.paper_regret_bound}};
  if (alg != sb::Algorithm::mirrorsync) j["cycle"] = cfg.cycle;  // MirrorSync has rounds, no cycle
  return j;
}

/// --curve: the mean curve with its CI, and the regrets', as CSV.
void write_sync_curve(const std::string& path, const sb::Experiment& e) {
  OutputFile f(path, "--curve");
  f.stream() << "round,mean_j,ci95_low,ci95_high,j_star,j_star_epsilon,regret_mean,"
                "regret_ci95_low,regret_ci95_high,in_policy_regret_mean,in_policy_ci95_low,"
                "in_policy_ci95_high\n"
             << std::setprecision(10);
  for (std::size_t t = 0; t < e.mean.size(); ++t)
    f.stream() << e.rounds[t] << ',' << e.mean[t] << ',' << e.ci_low[t] << ',' << e.ci_high[t]
               << ',' << e.optimum << ',' << e.optimum_epsilon << ',' << e.regret_mean[t] << ','
               << e.regret_ci_low[t] << ',' << e.regret_ci_high[t] << ',' << e.in_policy_mean[t]
               << ',' << e.in_policy_ci_low[t] << ',' << e.in_policy_ci_high[t] << '\n';
  f.commit();
}

/// learn mirrorsync|...: `runs` runs of the learner, its report, and the outputs asked for.
int learn_sync(const SyncArgs& a, sb::Algorithm alg) {
  check_sync_run(a, alg);
  const SyncPlan p = plan_sync(a, alg);
  const auto t0 = std::chrono::steady_clock::now();
  const sb::Experiment e =
      sb::run_experiment([&](uint32_t r) { return a.ia.make(r, p.fixed.get()); }, p.cfg, a.runs,
                         p.by_round.empty() ? nullptr : &p.by_round);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // With an output on standard output, stdout holds that output alone: the table goes to stderr.
  std::ostream& human = a.json == "-" || a.curve == "-" ? std::cerr : std::cout;
  print_sync_report(human, a, alg, p, e, secs);
  if (!a.json.empty()) write_json(a.json, sync_json(a, alg, p, e, secs));
  if (!a.curve.empty()) write_sync_curve(a.curve, e);
  return kExitOk;
}

/// A command's run, once the command line is parsed: its exit code, or -1 when it was not the
/// command given.
using Handler = std::function<int()>;

/// One learner's subcommand and its options.
CLI::App* add_sync_learner(CLI::App* learn, sb::Algorithm alg, SyncArgs& st) {
  auto* sub = learn->add_subcommand(sb::to_string(alg), std::string("run ") + sb::to_string(alg) +
                                                            " on synchronization-bandit instances");
  st.ia.add(sub, "seed: instance r is generated with seed + r, and the learners' draws with seed",
            true, true);
  sub->add_option("--runs,-R", st.runs, "independent runs (instances x seeds)")
      ->capture_default_str()
      ->check(integer_in(1, kMaxU32));
  sub->add_option("--rounds", st.cfg.rounds, "MirrorSync rounds of 1/r_min (or that much time)")
      ->capture_default_str()
      ->check(integer_in(1, kMaxU32));
  st.epsilon = sub->add_option("--epsilon", st.cfg.epsilon, "probe probability")
                   ->capture_default_str()
                   ->check(number_in(0, 1, true, true));
  sub->add_option("--round-costs", st.th.round_costs,
                  "CSV round,arm,mu,p (or delta,weight): costs that change from round to round "
                  "(round 1 gives every arm; later rounds the changes); the regret is against "
                  "the best fixed rates for the whole sequence");
  sub->add_option("--cost-cap", st.th.cost_cap,
                  "U of section 5 (default: the instance's largest expected cost rate "
                  "within the rate bounds)")
      ->check(number_in(0, kHuge, true));
  if (alg == sb::Algorithm::mirrorsync)
    sub->add_flag("--theory", st.th.theory,
                  "Corollary 1's parameters: eps = T^-1/3 log^1/3(B / (r_min K)), eta = (K / "
                  "U) sqrt(log(B / (r_min K)) eps / T)");
  st.eta = sub->add_option("--learning-rate", st.cfg.eta,
                           "default: the public code's (2.7/5, 1.6/1.3, 0.08/0.5)")
               ->check(number_in(0, kHuge, true));
  if (alg != sb::Algorithm::mirrorsync)
    st.cycle =
        sub->add_option("--cycle", st.cfg.cycle, "update cycle length (default 20/8, PSGD 20/40)")
            ->check(number_in(0, kHuge, true));
  // The pseudo-code's rules where crawleval departs from them (syncbandit.hpp, LearnConfig).
  if (alg == sb::Algorithm::mirrorsync) {
    sub->add_option("--gradient", st.gradient,
                    "mean: every gradient sample of a round averaged; first: the round's first "
                    "(Algorithm 1, lines 14-18, as printed)")
        ->check(CLI::IsMember(enum_names<sb::Gradient>()))
        ->capture_default_str();
  } else {
    sub->add_option("--local-budget", st.local_budget,
                    "public-code: the updated arms share their current bandwidth; paper: that "
                    "sum divided by 1 + eps (Algorithm 2, line 35, as printed)")
        ->check(CLI::IsMember(enum_names<sb::Rule>()))
        ->capture_default_str();
    sub->add_option("--reschedule", st.reschedule,
                    "public-code: the updated arms' interval in progress rescheduled as the "
                    "authors' code does; paper: every arm's, at max(t_prev + 1/r, now) or now "
                    "with probability eps (Algorithm 2, lines 37-40, as printed)")
        ->check(CLI::IsMember(enum_names<sb::Rule>()))
        ->capture_default_str();
  }
  sub->add_option("--json", st.json, "write the result (with the curve) as JSON");
  sub->add_option("--curve", st.curve, "write the mean curve with its CI as CSV");
  return sub;
}

/// learn mirrorsync|...: the sync bandit's learners, one subcommand each.
Handler add_sync_learners(CLI::App* learn) {
  auto states = std::make_shared<std::vector<std::pair<CLI::App*, std::shared_ptr<SyncArgs>>>>();
  for (const EnumName<sb::Algorithm>& named : EnumNames<sb::Algorithm>::table) {
    auto st = std::make_shared<SyncArgs>();
    states->emplace_back(add_sync_learner(learn, named.value, *st), st);
  }
  return [=]() -> int {
    for (auto& [sub, st] : *states)
      if (sub->parsed()) return learn_sync(*st, *enum_parse<sb::Algorithm>(sub->get_name()));
    return -1;
  };
}

/// learn lspe's settings.
struct LspeArgs {
  std::string sources, json, trace;
  bool paper = false;
  LspeConfig cfg;
  // The operating policy and the critic's reward (lspe.hpp): names, mapped when the command runs.
  std::string operating = "randomised", critic = "crawled";
};

/// learn lspe's options.
void add_lspe_options(CLI::App* lspe, LspeArgs& a) {
  lspe->add_option("--sources", a.sources, "CSV of sources (default: the paper example)");
  lspe->add_flag("--paper-example", a.paper, "the papers' 4-source example");
  lspe->add_option("--steps", a.cfg.steps, "learning steps (epochs)")
      ->capture_default_str()
      ->check(integer_in(2, kMaxU32));
  lspe->add_option(
          "--kappa", a.cfg.kappa,
          "slope kappa > 0 of the logit f_i that smooths the threshold rule (larger: closer to "
          "the deterministic threshold; it sets how many sources are crawled per step)")
      ->capture_default_str()
      ->check(number_in(0, kHuge, true));
  lspe->add_option("--gamma", a.cfg.gamma,
                   "step size gamma > 0 of the LSPE(0) critic, r += gamma B^-1 (A r + b)")
      ->capture_default_str()
      ->check(number_in(0, kHuge, true));
  lspe->add_option("--replications,-R", a.cfg.replications,
                   "independent learning runs (replications)")
      ->capture_default_str()
      ->check(integer_in(1, kMaxU32));
  lspe->add_option("--seed", a.cfg.seed, "seed of the learners' exploration draws")
      ->capture_default_str()
      ->check(integer_in(0, kMaxU64));
  lspe->add_option("--json", a.json, "write the result as JSON");
  lspe->add_option("--start-thresholds", a.cfg.start,
                   "where the thresholds start in [u_i, u*_i]: 0 at u_i, 1 at u*_i")
      ->capture_default_str()
      ->check(number_in(0, 1));
  lspe->add_option("--operating", a.operating,
                   "randomised: each source crawled with its logit probability (the paper's "
                   "experiment); top: the --top sources with the largest margin over their "
                   "learned thresholds, exactly (the policy the paper operates)")
      ->check(CLI::IsMember({"randomised", "top"}))
      ->capture_default_str();
  lspe->add_option("--top", a.cfg.top, "N0, the sources crawled per step by --operating top")
      ->capture_default_str()
      ->check(integer_in(1, 64));
  lspe->add_option("--critic", a.critic,
                   "the reward in the critic's iterates: crawled (the utility crawled, the "
                   "objective) or paper (sum_i X_i over every source, as the paper's iterates "
                   "print it)")
      ->check(CLI::IsMember({"crawled", "paper"}))
      ->capture_default_str();
  lspe->add_option("--trace", a.trace,
                   "write replication 0's step,source,state,learned,exact,crawled as CSV (the "
                   "learned threshold beside the Whittle policy's exact one, every step)");
}

/// --trace: replication 0's learned thresholds beside the exact ones, every step, as CSV.
void write_lspe_trace(const std::string& path, const Population& pop, const LspeExperiment& ex) {
  OutputFile f(path, "--trace");
  std::ostream& os = f.stream();
  os << std::setprecision(17) << "step,source,state,learned,exact,crawled\n";
  const LspeRun& r0 = ex.runs[0];
  const std::size_t n = pop.size();
  for (std::size_t k = 0; k < r0.trace_state.size(); ++k)
    os << k / n << ',' << pop.id_of(k % n) << ',' << r0.trace_state[k] << ',' << r0.trace_learned[k]
       << ',' << r0.trace_exact[k] << ',' << int(r0.trace_crawled[k]) << '\n';
  f.commit();
}

/// The learner's rewards beside the untrained baseline, the bound and the known-parameter policy.
void print_lspe_report(std::ostream& human, const Population& pop, const LspeConfig& cfg,
                       const LspeExperiment& ex, const nlohmann::json& j, double secs) {
  const uint32_t n0 = cfg.operating == LspeOperating::top ? cfg.top : 1;
  human << "LSPE(0) learner on " << pop.origin << ": " << cfg.replications
        << (cfg.replications == 1 ? " replication of " : " replications of ") << cfg.steps
        << " steps, kappa " << cfg.kappa << ", gamma " << cfg.gamma << ", operating "
        << (cfg.operating == LspeOperating::top ? "top " + std::to_string(cfg.top)
                                                : std::string("randomised"))
        << ", critic " << to_string(cfg.critic) << "\n"
        << std::fixed << std::setprecision(2) << "  mean reward per step " << ex.mean_reward << " ["
        << ex.ci_low << ", " << ex.ci_high << "], second half " << ex.mean_reward_last << " ["
        << ex.last_ci_low << ", " << ex.last_ci_high << "]\n  sources crawled per step "
        << ex.mean_crawls << " [" << ex.crawls_ci_low << ", " << ex.crawls_ci_high
        << "]; iterates finite: " << (ex.finite ? "yes" : "NO")
        << "\n  untrained (starting thresholds kept, same draws): " << ex.untrained_mean << " ["
        << ex.untrained_ci_low << ", " << ex.untrained_ci_high << "]"
        << "\n  Lagrangian bound at the learner's crawl rate (" << ex.mean_crawls
        << " per step): " << j["budget_matched_bound"].get<double>()
        << "\n  learned thresholds' distance from the exact ones (second half, / u*): "
        << ex.mean_threshold_gap << "\n  Whittle index policy with known parameters, M = " << n0
        << " (deterministic): " << j["whittle_known_parameters_top"].get<double>() << "\n  " << secs
        << " s\n";
}

/// learn lspe: the learner's replications, its report and the outputs asked for; exit 1 when
/// its iterates did not stay finite.
int lspe_command(const LspeArgs& a) {
  LspeConfig cfg = a.cfg;
  cfg.operating = a.operating == "top" ? LspeOperating::top : LspeOperating::randomised;
  cfg.critic = a.critic == "paper" ? LspeCritic::paper : LspeCritic::crawled;
  CE_EXPECTS(a.sources.empty() || !a.paper, "give --sources or --paper-example, not both");
  if (!a.json.empty()) check_output(a.json, "--json");
  if (!a.trace.empty()) check_output(a.trace, "--trace");
  const Population pop = a.sources.empty() ? paper_example() : read_sources_csv(a.sources);
  const auto t0 = std::chrono::steady_clock::now();
  // Each replication runs twice on the same draws: learning, and untrained (the starting
  // thresholds kept), the baseline that says what the learning itself adds.
  LspeConfig run_cfg = cfg;
  run_cfg.trace = !a.trace.empty();
  LspeExperiment ex;
  nlohmann::json j = lspe_report(pop, run_cfg, &ex);
  if (!a.trace.empty()) write_lspe_trace(a.trace, pop, ex);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // With --json -, standard output holds the JSON alone.
  print_lspe_report(a.json == "-" ? std::cerr : std::cout, pop, cfg, ex, j, secs);
  if (!a.json.empty()) write_command_json(a.json, "learn lspe", j, secs);
  return ex.finite ? kExitOk : kExitFailure;
}

/// learn lspe: the LSPE(0) Whittle learner.
Handler add_lspe(CLI::App* learn) {
  auto a = std::make_shared<LspeArgs>();
  auto* lspe =
      learn->add_subcommand("lspe", "the LSPE(0) Whittle learner (learning paper, section V)");
  add_lspe_options(lspe, *a);
  return [=]() -> int { return lspe->parsed() ? lspe_command(*a) : -1; };
}

/// learn adaptive-whittle's settings.
struct AdaptiveArgs {
  std::string sources, utility = "exponential", model = "stochastic", observe = "belief";
  std::string curve, json;
  bool paper = false;
  RunConfig cfg;
  uint64_t window = 100;
};

/// learn adaptive-whittle's options.
void add_adaptive_options(CLI::App* adaptive, AdaptiveArgs& a) {
  adaptive->add_option("--sources", a.sources,
                       "CSV of sources (an observe column sets each source's observation)");
  adaptive->add_flag("--paper-example", a.paper, "the papers' 4-source example (Table 1)");
  adaptive->add_option("--budget,-M", a.cfg.budget, "crawl budget per epoch")
      ->required()
      ->check(number_in(0, kHuge, true));
  adaptive->add_option("--model", a.model, "deterministic | stochastic")->capture_default_str();
  adaptive->add_option("--utility", a.utility, "the law of an item's utility (see run --help)")
      ->capture_default_str();
  adaptive
      ->add_option("--observe", a.observe,
                   "full | belief, for sources without an observe column entry")
      ->capture_default_str();
  adaptive->add_option("--epochs,-H", a.cfg.epochs, "epochs per replication, from the start")
      ->capture_default_str()
      ->check(integer_in(1, kMaxU32));
  adaptive
      ->add_option("--replications,-R", a.cfg.replications,
                   "independent replications (the curve's CI is over them)")
      ->capture_default_str()
      ->check(integer_in(1, 100000));
  adaptive->add_option("--seed", a.cfg.seed, "seed of the arrivals' draws")
      ->capture_default_str()
      ->check(integer_in(0, kMaxU64));
  adaptive->add_option("--window", a.window, "epochs per point of the curve")
      ->capture_default_str()
      ->check(integer_in(1, kMaxU32));
  adaptive->add_option("--curve", a.curve,
                       "write window,adaptive_mean,adaptive_ci95_low,adaptive_ci95_high,"
                       "known_mean,known_ci95_low,known_ci95_high as CSV");
  adaptive->add_option("--json", a.json, "write the result as JSON");
}

/// The adaptive policy's learning curve and the known-parameter policy's, over the same epochs.
struct AdaptiveCurves {
  LearningCurve adaptive, known;
  Summary sa, sk;  ///< each policy's reward over every epoch, across the replications
  double seconds = 0.0;
};

AdaptiveCurves adaptive_curves(const Population& pop, const RunConfig& cfg, uint64_t window) {
  AdaptiveCurves c;
  const Problem base = make_problem(pop, cfg);
  const Problem engine = function_engine_problem(base);
  const auto t0 = std::chrono::steady_clock::now();
  c.adaptive = learning_curve(engine, adaptive_whittle_policy(base), "adaptive", window);
  c.known = learning_curve(engine, mixed_observation_policy(base, Policy::whittle),
                           "known parameters", window);
  c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  c.sa = summarize_replications(c.adaptive.replication_reward, kNonNegative);
  c.sk = summarize_replications(c.known.replication_reward, kNonNegative);
  for (Summary* s : {&c.sa, &c.sk})
    if (s->no_interval.empty() && !c.adaptive.run_no_interval.empty()) {
      s->std_error = s->half_width = s->ci_low = s->ci_high =
          std::numeric_limits<double>::quiet_NaN();
      s->no_interval = c.adaptive.run_no_interval;
    }
  return c;
}

/// An interval, or n/a where the replications give none (the reason follows the table).
std::string interval_text(double lo, double hi) {
  if (std::isnan(lo) || std::isnan(hi)) return std::string("n/a");
  std::ostringstream os;
  os << std::fixed << std::setprecision(2) << "[" << lo << ", " << hi << "]";
  return os.str();
}

/// The two curves side by side (about a dozen rows), the means over every epoch, and why an
/// interval is absent.
void print_adaptive_report(std::ostream& human, const Population& pop, const RunConfig& cfg,
                           const AdaptiveCurves& c) {
  const LearningCurve &ac = c.adaptive, &kc = c.known;
  human << "adaptive Whittle policy on " << pop.origin << ": " << cfg.replications
        << (cfg.replications == 1 ? " replication of " : " replications of ") << cfg.epochs
        << " epochs, budget " << cfg.budget << ", " << to_string(cfg.model) << " model"
        << (cfg.model == Model::stochastic ? " (" + utility_setting(cfg) + " utilities)"
                                           : std::string())
        << ", observation: "
        << (pop.observe.empty() ? std::string(to_string(cfg.observe))
                                : std::string("the observe column"))
        << "\n\n"
        << std::setw(10) << "epochs" << std::setw(14) << "adaptive" << std::setw(26) << "95% CI"
        << std::setw(14) << "known" << std::setw(26) << "95% CI\n";
  const std::size_t points = ac.mean.size();
  const std::size_t every = std::max<std::size_t>(1, points / 12);
  for (std::size_t t = 0; t < points; ++t) {
    if (t % every != 0 && t + 1 != points) continue;
    human << std::setw(10) << uint64_t(ac.epoch[t]) << std::fixed << std::setprecision(2)
          << std::setw(14) << ac.mean[t] << std::setw(26)
          << interval_text(ac.ci_low[t], ac.ci_high[t]) << std::setw(14) << kc.mean[t]
          << std::setw(26) << interval_text(kc.ci_low[t], kc.ci_high[t]) << "\n";
  }
  human << "over every epoch: adaptive " << c.sa.mean << " "
        << interval_text(c.sa.ci_low, c.sa.ci_high) << ", known parameters " << c.sk.mean << " "
        << interval_text(c.sk.ci_low, c.sk.ci_high) << "; " << c.seconds << " s\n";
  if (!ac.window_no_interval.empty() && ac.run_no_interval.empty())
    human << "no 95% CI per window: " << ac.window_no_interval << "\n";
  if (!c.sa.no_interval.empty())
    human << "no 95% CI: "
          << (cfg.model == Model::deterministic && c.sa.std_dev == 0.0
                  ? "the replications are copies (the deterministic model draws nothing)"
                  : c.sa.no_interval)
          << "\n";
}

/// --curve: both curves with their intervals, a row per window, as CSV.
void write_adaptive_curve(const std::string& path, const AdaptiveCurves& c) {
  const LearningCurve &ac = c.adaptive, &kc = c.known;
  OutputFile f(path, "--curve");
  f.stream() << std::setprecision(10)
             << "window,adaptive_mean,adaptive_ci95_low,adaptive_ci95_high,known_mean,"
                "known_ci95_low,known_ci95_high\n";
  for (std::size_t t = 0; t < ac.mean.size(); ++t)
    f.stream() << ac.epoch[t] << ',' << ac.mean[t] << ',' << ac.ci_low[t] << ',' << ac.ci_high[t]
               << ',' << kc.mean[t] << ',' << kc.ci_low[t] << ',' << kc.ci_high[t] << '\n';
  f.commit();
}

/// --json's document: the settings, both policies' rewards and both curves.
nlohmann::json adaptive_json(const Population& pop, const RunConfig& cfg, uint64_t window,
                             const AdaptiveCurves& c) {
  const LearningCurve &ac = c.adaptive, &kc = c.known;
  return {{"tool", "crawleval"},
          {"version", version()},
          {"command", "learn adaptive-whittle"},
          {"context", context_json("cpu")},
          {"origin", pop.origin},
          {"budget", cfg.budget},
          {"epochs", cfg.epochs},
          {"replications", cfg.replications},
          {"window", window},
          {"model", to_string(cfg.model)},
          {"utility", utility_setting(cfg)},
          {"adaptive_mean_reward", c.sa.mean},
          {"adaptive_ci95", {c.sa.ci_low, c.sa.ci_high}},
          {"no_interval",
           c.sa.no_interval.empty() ? nlohmann::json() : nlohmann::json(c.sa.no_interval)},
          {"known_mean_reward", c.sk.mean},
          {"known_ci95", {c.sk.ci_low, c.sk.ci_high}},
          {"curve",
           {{"epoch", ac.epoch},
            {"adaptive_mean", ac.mean},
            {"adaptive_ci95_low", ac.ci_low},
            {"adaptive_ci95_high", ac.ci_high},
            {"known_mean", kc.mean},
            {"known_ci95_low", kc.ci_low},
            {"known_ci95_high", kc.ci_high}}},
          {"seconds", c.seconds}};
}

/// learn adaptive-whittle: both policies' learning curves, the report and the outputs asked for.
int adaptive_command(const AdaptiveArgs& a) {
  if (!a.curve.empty()) check_output(a.curve, "--curve");
  if (!a.json.empty()) check_output(a.json, "--json");
  CE_EXPECTS(a.json != "-" || a.curve != "-",
             "--json - and --curve - both ask for standard output; give one a file");
  CE_EXPECTS(int(!a.sources.empty()) + int(a.paper) == 1,
             "give exactly one of --sources FILE, --paper-example");
  const Population pop =
      a.paper ? paper_example() : read_population(a.sources, kPopulationBytesPerSource);
  RunConfig cfg = a.cfg;
  cfg.model = enum_parse_or_throw<Model>(a.model, "--model");
  cfg.observe = enum_parse_or_throw<Observe>(a.observe, "--observe");
  cfg.burn_in = 0;
  set_utility(cfg, a.utility);
  const AdaptiveCurves c = adaptive_curves(pop, cfg, a.window);
  // With an output on standard output, stdout holds that output alone.
  print_adaptive_report(a.json == "-" || a.curve == "-" ? std::cerr : std::cout, pop, cfg, c);
  if (!a.curve.empty()) write_adaptive_curve(a.curve, c);
  if (!a.json.empty()) write_json(a.json, adaptive_json(pop, cfg, a.window, c));
  return kExitOk;
}

/// learn adaptive-whittle: the adaptive Whittle policy.
Handler add_adaptive(CLI::App* learn) {
  auto a = std::make_shared<AdaptiveArgs>();
  a->cfg.epochs = 2000;
  a->cfg.replications = 20;
  auto* adaptive = learn->add_subcommand(
      "adaptive-whittle",
      "the adaptive Whittle policy (research report, section 9): lambda xi estimated online, its "
      "learning curve against the policy that knows the parameters");
  add_adaptive_options(adaptive, *a);
  return [=]() -> int { return adaptive->parsed() ? adaptive_command(*a) : -1; };
}

/// crawleval relaxed's settings.
struct RelaxedArgs {
  std::string sources, json, curve;
  bool paper = false, dual = false;
  uint64_t synthetic = 0, population_seed = 1;
  RunConfig cfg;
  DualDescentConfig dd;
};

/// crawleval relaxed's options.
void add_relaxed_options(CLI::App* relaxed, RelaxedArgs& a) {
  relaxed->add_flag("--paper-example", a.paper, "the papers' 4-source example (Table 1)");
  relaxed->add_option("--sources", a.sources, "CSV (or .cpop) of sources");
  relaxed->add_option("--synthetic", a.synthetic, "a synthetic population of N sources")
      ->check(integer_in(1, kMaxU32));
  relaxed->add_option("--population-seed", a.population_seed, "seed of the synthetic population")
      ->capture_default_str()
      ->check(integer_in(0, kMaxU64));
  relaxed->add_option("--budget,-M", a.cfg.budget, "M: the crawl cost per epoch, on average")
      ->required()
      ->check(number_in(0, kHuge, true));
  relaxed->add_option("--epochs,-H", a.cfg.epochs, "measured epochs (and the dual descent's)")
      ->capture_default_str()
      ->check(integer_in(2, kMaxU32));
  relaxed->add_option("--burn-in,-B", a.cfg.burn_in, "epochs before measuring")
      ->capture_default_str()
      ->check(integer_in(0, kMaxU32));
  relaxed->add_option("--replications,-R", a.cfg.replications, "replications (tie coins)")
      ->capture_default_str()
      ->check(integer_in(1, 100000));
  relaxed->add_option("--seed", a.cfg.seed, "seed of the tie coins")
      ->capture_default_str()
      ->check(integer_in(0, kMaxU64));
  relaxed->add_flag("--dual-descent", a.dual,
                    "also run the online dual descent (lambda adjusted every epoch from the "
                    "epoch's spend)");
  relaxed
      ->add_option("--step", a.dd.step,
                   "the dual descent's step scale s: log lambda moves by s / sqrt(t + 1) times "
                   "the epoch's relative overspend (clipped to [-1, 1])")
      ->capture_default_str()
      ->check(number_in(0, kHuge, true));
  relaxed
      ->add_option("--lambda0", a.dd.lambda0,
                   "the dual descent's starting multiplier (0: half the largest x_cap / C)")
      ->capture_default_str()
      ->check(number_in(0, kHuge));
  relaxed->add_option("--every", a.dd.every, "record the dual descent every N epochs")
      ->capture_default_str()
      ->check(integer_in(1, kMaxU32));
  relaxed->add_option("--curve", a.curve,
                      "write the dual descent's epoch,lambda,lambda_average,spend_average,"
                      "reward_average,lambda_star as CSV");
  relaxed->add_option("--json", a.json, "write the result as JSON");
}

/// The multiplier and the bound, the average-budget policy exact and simulated, and the dual
/// descent's second half.
void print_relaxed_report(std::ostream& human, const Population& pop, const RelaxedArgs& a,
                          const nlohmann::json& j, const DualDescentRun& dd, double secs) {
  const auto num = [&](const char* k) { return j[k].get<double>(); };
  human << std::setprecision(8) << "relaxed problem of " << pop.origin << ", M = " << a.cfg.budget
        << " (deterministic model)\n"
        << "  multiplier lambda* " << num("lambda") << " (bracket ["
        << j["lambda_bracket"][0].get<double>() << ", " << j["lambda_bracket"][1].get<double>()
        << "]), Lagrangian bound " << num("bound") << "\n"
        << "average-budget policy: " << j["tied"].get<uint64_t>() << " tied source(s), tie "
        << "probability " << num("tie_probability") << "\n"
        << "  exact long-run reward " << num("reward")
        << " (the bound minus it: " << num("bound") - num("reward") << "), spend " << num("spend")
        << " per epoch\n"
        << std::setprecision(6) << "  simulated (" << a.cfg.replications << " x " << a.cfg.epochs
        << " epochs after " << a.cfg.burn_in << "): reward " << num("simulated_reward") << " ["
        << j["simulated_ci95"][0].get<double>() << ", " << j["simulated_ci95"][1].get<double>()
        << "], spend " << num("simulated_spend") << " on average, " << num("worst_epoch_spend")
        << " in the worst epoch, over M in " << 100 * num("over_budget_fraction")
        << "% of the epochs\n";
  if (a.dual)
    human << "dual descent (" << a.cfg.epochs << " epochs, step " << a.dd.step << "): lambda "
          << dd.final_lambda << ", its mean over the second half " << dd.late_lambda_average
          << " (lambda* " << dd.lambda_star << "); second half: reward " << dd.late_reward
          << ", spend " << dd.late_spend << " (worst epoch " << dd.late_worst_spend << ")\n";
  human << "  " << secs << " s\n";
}

/// --curve: the dual descent's multiplier and running averages, a row per record, as CSV.
void write_dual_descent_curve(const std::string& path, const DualDescentRun& dd) {
  OutputFile f(path, "--curve");
  f.stream() << std::setprecision(12)
             << "epoch,lambda,lambda_average,spend_average,reward_average,lambda_star\n";
  for (std::size_t k = 0; k < dd.epoch.size(); ++k)
    f.stream() << dd.epoch[k] << ',' << dd.lambda[k] << ',' << dd.lambda_average[k] << ','
               << dd.spend_average[k] << ',' << dd.reward_average[k] << ',' << dd.lambda_star
               << '\n';
  f.commit();
}

/// crawleval relaxed: the relaxed problem's policies, the report and the outputs asked for.
int relaxed_command(const RelaxedArgs& a) {
  CE_EXPECTS(int(!a.sources.empty()) + int(a.paper) + int(a.synthetic > 0) == 1,
             "give exactly one of --sources FILE, --paper-example, --synthetic N");
  CE_EXPECTS(a.curve.empty() || a.dual, "--curve is the dual descent's: add --dual-descent");
  if (!a.json.empty()) check_output(a.json, "--json");
  if (!a.curve.empty()) check_output(a.curve, "--curve");
  CE_EXPECTS(a.json != "-" || a.curve != "-",
             "--json - and --curve - both ask for standard output; give one a file");
  if (a.synthetic)
    require_memory(double(a.synthetic) * kPopulationBytesPerSource,
                   "--synthetic " + std::to_string(a.synthetic));
  const Population pop = a.paper       ? paper_example()
                         : a.synthetic ? synthetic_population(a.synthetic, a.population_seed)
                                       : read_population(a.sources, kPopulationBytesPerSource);
  const auto t0 = std::chrono::steady_clock::now();
  DualDescentRun dd;
  nlohmann::json j = relaxed_report(pop, a.cfg, a.dual ? &a.dd : nullptr, &dd);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  print_relaxed_report(a.json == "-" || a.curve == "-" ? std::cerr : std::cout, pop, a, j, dd,
                       secs);
  if (!a.curve.empty()) write_dual_descent_curve(a.curve, dd);
  if (!a.json.empty()) write_command_json(a.json, "relaxed", j, secs);
  return kExitOk;
}

/// crawleval relaxed: the relaxed problem's own policies (analysis/relaxed_policy.hpp).
Handler add_relaxed(CLI::App& app) {
  auto a = std::make_shared<RelaxedArgs>();
  a->cfg.epochs = 10000;
  a->cfg.burn_in = 1000;
  a->cfg.replications = 20;
  auto* relaxed = app.add_subcommand(
      "relaxed",
      "the relaxed problem's policies: the average-budget policy (every source whose index "
      "exceeds the bound's multiplier, randomised at its ties) and the online dual descent");
  add_relaxed_options(relaxed, *a);
  return [=]() -> int { return relaxed->parsed() ? relaxed_command(*a) : -1; };
}

/// syncbandit optimum|generate: the sync bandit's optimum and instances.
Handler add_syncbandit(CLI::App& app) {
  auto* sync = app.add_subcommand("syncbandit", "synchronization-bandit utilities");
  sync->require_subcommand(1);
  auto opt_state = std::make_shared<std::tuple<InstanceArgs, double, std::string, std::string>>();
  std::get<1>(*opt_state) = 0.0;
  auto* optimum = sync->add_subcommand("optimum", "J* of Problem 1 (one dual variable, bisection)");
  std::get<0>(*opt_state).add(optimum, "seed of the generated instance", true, false);
  optimum
      ->add_option("--epsilon", std::get<1>(*opt_state),
                   "optimum over K_eps (rates scaled by 1/(1+eps)); 0: Problem 1")
      ->capture_default_str()
      ->check(number_in(0, 1, false, true));
  optimum->add_option("--json", std::get<2>(*opt_state), "write the result as JSON");
  optimum->add_option("--rates", std::get<3>(*opt_state), "write the optimal rates as CSV");
  auto* gen = sync->add_subcommand("generate", "write a generated instance as CSV");
  auto gen_state = std::make_shared<std::pair<InstanceArgs, std::string>>();
  gen_state->first.add(gen, "seed of the generated instance", false, false);
  gen->add_option("--out", gen_state->second, "output CSV")->required();
  return [=]() -> int {
    if (optimum->parsed()) {
      const auto& [ia, eps, json, rates_path] = *opt_state;
      CE_EXPECTS(eps >= 0 && eps < 1, "--epsilon must lie in [0, 1)");
      CE_EXPECTS(json != "-" || rates_path != "-",
                 "--json - and --rates - both ask for standard output; give one a file");
      if (!json.empty()) check_output(json, "--json");
      if (!rates_path.empty()) check_output(rates_path, "--rates");
      const std::unique_ptr<sb::Instance> fixed = ia.read();
      if (!fixed) require_memory(120.0 * double(ia.arms), std::to_string(ia.arms) + " arms");
      const sb::Instance inst = ia.make(0, fixed.get());
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<double> r;
      const double j = sb::optimal_cost(
          inst, sb::Simplex{inst.r_min, inst.r_max / (1 + eps), inst.budget / (1 + eps)}, &r);
      const double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      (json == "-" || rates_path == "-" ? std::cerr : std::cout)
          << std::setprecision(10) << "J* = " << j << "  (" << sb::to_string(inst.family)
          << ", K = " << inst.arms() << ", B = " << inst.budget << ", rates in [" << inst.r_min
          << ", " << inst.r_max / (1 + eps) << "], " << secs << " s)\n";
      if (!json.empty())
        write_json(json, {{"tool", "crawleval"},
                          {"version", version()},
                          {"command", "syncbandit optimum"},
                          {"context", context_json("cpu")},
                          {"family", sb::to_string(inst.family)},
                          {"arms", inst.arms()},
                          {"budget", inst.budget},
                          {"epsilon", eps},
                          {"j_star", j},
                          {"seconds", secs}});
      if (!rates_path.empty()) {
        OutputFile f(rates_path, "--rates");
        f.stream() << "arm,rate\n" << std::setprecision(17);
        for (std::size_t k = 0; k < r.size(); ++k) f.stream() << k << ',' << r[k] << '\n';
        f.commit();
      }
      return kExitOk;
    }
    if (gen->parsed()) {
      check_output(gen_state->second, "--out");
      require_memory(80.0 * double(gen_state->first.arms),
                     std::to_string(gen_state->first.arms) + " arms");
      const sb::Instance inst = gen_state->first.make(0, nullptr);
      sb::write_instance_csv(inst, gen_state->second);
      std::cout << "wrote " << count_of(inst.arms(), "arm", "arms") << " to " << gen_state->second
                << "\n";
      return kExitOk;
    }
    return -1;
  };
}

}  // namespace

std::function<int()> add_learning_commands(CLI::App& app) {
  auto* learn = app.add_subcommand("learn", "learning schedulers: MirrorSync family, LSPE(0)");
  learn->require_subcommand(1);
  // (In this order: the order of the help's commands.)
  const std::vector<Handler> handlers = {add_sync_learners(learn), add_lspe(learn),
                                         add_adaptive(learn), add_relaxed(app),
                                         add_syncbandit(app)};
  return [handlers]() -> int {
    for (const Handler& run : handlers)
      if (const int rc = run(); rc != -1) return rc;
    return -1;
  };
}

}  // namespace crawleval::cli
