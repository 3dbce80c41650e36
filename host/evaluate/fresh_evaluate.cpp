// `crawleval fresh run` as a library call (fresh_evaluate.hpp): moved here from the command line
// so that the Python package returns the same numbers in the same fields.
#include "crawleval/evaluate/fresh_evaluate.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "crawleval/analysis/stats.hpp"
#include "crawleval/base/comm.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/base/monitor.hpp"
#include "crawleval/engine/cuda_backend.hpp"
#include "evaluate/replications.hpp"

namespace crawleval {

namespace {

/// The objective as a reward per epoch (what the index pursues): the freshness, or minus the
/// harmonic penalty.
std::vector<double> objective_reward(const std::vector<double>& freshness,
                                     const std::vector<double>& penalty, Objective o) {
  if (o == Objective::binary) return freshness;
  std::vector<double> r(penalty.size());
  for (std::size_t k = 0; k < r.size(); ++k) r[k] = -penalty[k];
  return r;
}

}  // namespace

std::string fresh_fmt(double v, int prec) {
  if (!std::isfinite(v)) return std::isinf(v) ? (v > 0 ? "inf" : "-inf") : "n/a";
  std::ostringstream os;
  // Fixed below 1e9, as output.cpp's tables; above, a cost per epoch of 1e200 was printed with
  // all its 201 digits, running into the next column.
  if (std::fabs(v) >= 1e9)
    os << std::scientific << std::setprecision(3) << v;
  else
    os << std::fixed << std::setprecision(prec) << v;
  return os.str();
}

Backend resolve_fresh_backend(const std::string& backend, const FreshConfig& cfg,
                              const std::vector<FreshPolicy>& policies) {
  enum_parse_or_throw<Backend>(backend, "--backend");
  bool policies_on_gpu = true;
  for (FreshPolicy p : policies) {
    if (const std::string why = cuda::fresh_policy_refusal(p); !why.empty()) {
      if (backend == "cuda") throw InputError(why);
      policies_on_gpu = false;
    }
    if (cuda::fresh_policy_pending(p)) policies_on_gpu = false;  // auto: not before a device run
  }
  // auto: the GPU when there is one and it runs these settings (not the learning variant).
  if (backend == "cuda" && cfg.learn)
    throw InputError(
        "--learn: the learning variant runs on the CPU only (use --backend cpu or auto)");
  if (backend == "cuda" && cuda::device_count() == 0) throw InputError(cuda::unavailable_message());
  const bool gpu = backend == "cuda" || (backend == "auto" && policies_on_gpu &&
                                         cuda::device_count() > 0 && cuda::fresh_supports(cfg));
  return gpu ? Backend::cuda : backend == "reference" ? Backend::reference : Backend::cpu;
}

FreshCounts fresh_counts(const FreshPopulation& pop, Comm* comm) {
  uint64_t c[3] = {pop.size(), 0, 0};
  for (std::size_t i = 0; i < pop.size(); ++i) c[1] += pop.complete[i], c[2] += pop.constrained[i];
  if (comm) comm->sum(c, 3);
  return FreshCounts{c[0], c[1], c[2]};
}

namespace {

/// A policy of the run: built in, or a user's score function.
struct Entry {
  FreshPolicy policy;
  const FreshUserPolicy* user;
  std::string name() const { return user ? user->name : std::string(to_string(policy)); }
};

/// The built-in policies and the score functions in the order of the results; refuses the score
/// functions where they do not run.
std::vector<Entry> ordered_policies(const FreshConfig& cfg, const FreshRunOptions& a) {
  std::vector<Entry> entries;
  std::size_t next = 0;
  const std::size_t total = a.policies.size() + a.functions.size();
  for (std::size_t k = 0; k < total; ++k) {
    const auto f = std::find_if(a.functions.begin(), a.functions.end(),
                                [&](const FreshUserPolicy& u) { return u.position == k; });
    if (f != a.functions.end())
      entries.push_back(Entry{FreshPolicy::index, &*f});
    else if (next < a.policies.size())
      entries.push_back(Entry{a.policies[next++], nullptr});
  }
  CE_EXPECTS(entries.size() == total, "internal: score functions' positions out of order");
  if (!a.functions.empty()) {
    // (Under MPI a GPU per rank runs a function of host arrays on each rank's host.)
    for (const FreshUserPolicy& f : a.functions)
      if (a.backend == Backend::cuda && !a.comm && !f.make_device)
        throw InputError("policy '" + f.name +
                         "' is a score function of host arrays: it runs on the CPU (backend cpu "
                         "or reference)");
    for (const FreshUserPolicy& f : a.functions)
      if (cfg.learn && !f.sees_estimates)
        throw InputError("policy '" + f.name +
                         "' is a score function that does not read the learning variant's "
                         "estimated rates: learn runs the built-in policies and score functions "
                         "that read them (FreshScoreRequest::rate, FreshUserPolicy::"
                         "sees_estimates)");
  }
  if (a.backend == Backend::reference && a.comm) {
    throw InputError("the freshness reference runs in one process (not under MPI)");
  }
  return entries;
}

/// The bound in the shared schema: an upper bound on the objective as a reward.
BoundResult bound_as_reward(const FreshBound& bound, bool binary, double seconds) {
  BoundResult as_reward;
  as_reward.applicable = bound.value.has_value();
  as_reward.bound = bound.value ? (binary ? *bound.value : -*bound.value) : NAN;
  as_reward.lambda = bound.multiplier;
  as_reward.crawl_rate = NAN;
  as_reward.seconds = seconds;
  as_reward.evaluations = bound.evaluations;
  as_reward.note = !bound.value ? bound.why_absent
                   : binary     ? bound.note
                                : "the harmonic penalty is at least " + fresh_fmt(*bound.value, 6) +
                                  "; as a reward (minus the penalty) at most its negative" +
                                  (bound.note.empty() ? "" : "; " + bound.note);
  return as_reward;
}

/// A run's numbers refused where a count of missed changes or an age reached its limit: they
/// understate the penalty (and the age the policy sees). No number rather than a wrong one. Every
/// rank has the sum over the ranks.
void refuse_saturated(const std::string& name, const FreshRolloutOutput& o, const FreshConfig& c) {
  if (!o.saturated) return;
  throw InputError(
      name + ": " + std::to_string(o.saturated) +
      (o.saturated == 1 ? " URL-epoch" : " URL-epochs") +
      " reached the simulator's limits (2,147,483,647 changes missed, or 2^32 epochs without a "
      "crawl)" +
      (c.start == FreshStart::steady
           ? ": the steady start gives some URLs the relaxed optimum's periods, beyond 2^32 epochs "
             "at this budget; raise --budget, or use --start fresh"
           : "; raise --budget") +
      " (the penalty would be understated)");
}

/// The bound holds in the long run: a measured value beyond it by more than 1% (its whole
/// interval, or without one its mean) says the window has not reached the long run, as at budgets
/// under which URLs go uncrawled for longer than any burn-in. (The index policy can sit on the
/// bound: within 1%, sampling noise alone would cross it.) Adds that to the warm-up's warning.
void check_against_bound(const BoundResult& as_reward, bool binary, const Summary& reward,
                         WarmUp& w) {
  if (!as_reward.applicable || !std::isfinite(as_reward.bound)) return;
  const double margin = 0.01 * std::fabs(as_reward.bound) + 1e-12;
  const bool beyond =
      (reward.no_interval.empty() ? reward.ci_low : reward.mean) > as_reward.bound + margin;
  if (!beyond) return;
  const std::string what = binary ? "freshness " + fresh_fmt(reward.mean, 4) +
                                        " is above the bound's " + fresh_fmt(as_reward.bound, 4)
                                  : "penalty " + fresh_fmt(-reward.mean, 4) +
                                        " is below the bound's " + fresh_fmt(-as_reward.bound, 4);
  w.warning += (w.warning.empty() ? "" : "; ") + std::string("the measured ") + what +
               " for the long run: the measured epochs are not the long run (more burn-in "
               "epochs, or a larger budget)";
}

/// One policy of the run: its warm-up, its measured replications (more of them for --target-ci),
/// its summaries.
FreshPolicyRun evaluate_policy(const FreshPopulation& pop, const FreshConfig& cfg,
                               const FreshRunOptions& a, const Entry& entry,
                               const FreshBound& bound, const BoundResult& as_reward,
                               uint64_t sources) {
  const bool binary = cfg.objective == Objective::binary;
  const bool gpu = a.backend == Backend::cuda, reference = a.backend == Backend::reference;
  const Range reward_range = binary ? Range{0.0, 1.0} : kNonPositive;
  const FreshPolicy policy = entry.policy;
  const std::string name = entry.name();
  set_activity("simulating " + name);
  auto rollout = [&](const FreshConfig& c, const FreshObserver* observer) {
    // (A user's function is made afresh for every run: nothing carries over.)
    FreshConfig labelled = c;
    if (entry.user) labelled.progress_label = name;
    FreshRolloutOutput o;
    if (gpu && a.comm) {  // a GPU per rank (fresh_keyed.hpp), a function on each rank's host
      const FreshScoreFn fn = entry.user ? entry.user->make() : FreshScoreFn();
      o = fresh_rollout_keyed(pop, labelled, policy, device_fresh_pass(), observer, &bound.period,
                              a.comm, entry.user ? &fn : nullptr);
    } else if (gpu) {
      const cuda::DeviceFreshScoreFn fn =
          entry.user ? entry.user->make_device() : cuda::DeviceFreshScoreFn();
      o = fresh_rollout_cuda(pop, c, policy, observer, &bound.period, entry.user ? &fn : nullptr);
    } else {
      const FreshScoreFn fn = entry.user ? entry.user->make() : FreshScoreFn();
      o = fresh_rollout(pop, labelled, policy, reference, observer, &bound.period, a.comm,
                        entry.user ? &fn : nullptr);
    }
    refuse_saturated(name, o, c);
    return o;
  };
  WarmUp w = a.automatic_burn_in
                 ? choose_burn_in(cfg.epochs, a.warm_up,
                                  [&](uint64_t epochs) {
                                    FreshConfig c = cfg;
                                    c.replications = 1;
                                    c.burn_in = 0;
                                    c.epochs = epochs;
                                    const FreshRolloutOutput o = rollout(c, nullptr);
                                    return objective_reward(o.epoch_freshness, o.epoch_penalty,
                                                            cfg.objective);
                                  })
                 : fixed_burn_in(cfg.burn_in);
  FreshConfig measured = cfg;
  measured.burn_in = w.burn_in;
  const auto t0 = std::chrono::steady_clock::now();
  FreshRolloutOutput o = rollout(measured, a.observer);
  FreshPolicyRun run;
  PolicyResult& r = run.result;
  // The objective's summary over the replications run so far (replication 0's epochs for batch
  // means): what the results report, and what --target-ci aims at.
  const std::vector<double> series =
      objective_reward(o.epoch_freshness, o.epoch_penalty, cfg.objective);
  const auto reported = [&](const std::vector<double>& rewards) {
    return detail::replication_summary(rewards, series, reward_range, cfg.epochs);
  };
  if (a.target_ci > 0.0) {
    std::vector<double> rewards = objective_reward(o.freshness, o.penalty, cfg.objective);
    r.target_reached = detail::add_replication_batches(
        a.target_ci, a.max_replications, false, reported, rewards,
        [&](uint32_t offset, uint32_t count) {
          FreshConfig batch = measured;
          batch.first_replication = measured.first_replication + offset;
          batch.replications = count;
          const FreshRolloutOutput more = rollout(batch, a.observer);
          o.freshness.insert(o.freshness.end(), more.freshness.begin(), more.freshness.end());
          o.penalty.insert(o.penalty.end(), more.penalty.begin(), more.penalty.end());
          o.cost.insert(o.cost.end(), more.cost.begin(), more.cost.end());
          return objective_reward(more.freshness, more.penalty, cfg.objective);
        });
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  run.freshness =
      detail::replication_summary(o.freshness, o.epoch_freshness, Range{0.0, 1.0}, cfg.epochs);
  run.penalty = detail::replication_summary(o.penalty, o.epoch_penalty, kNonNegative, cfg.epochs);
  run.closed_form = o.closed_form;
  run.replication_freshness = o.freshness;
  run.replication_penalty = o.penalty;
  run.replication_cost = o.cost;
  r.name = name;
  r.backend = a.backend;
  r.replication_reward = objective_reward(o.freshness, o.penalty, cfg.objective);
  r.reward = reported(r.replication_reward);
  r.cost = summarize_replications(o.cost, kNonNegative);
  r.replications = uint32_t(r.replication_reward.size());
  r.loop_seconds = secs;
  r.seconds = secs + w.pilot_seconds;
  r.source_epochs_per_second =
      double(sources) * double(w.burn_in + cfg.epochs) * double(r.replications) / secs;
  check_measured_window(w, series);
  check_against_bound(as_reward, binary, r.reward, w);
  r.warm_up = std::move(w);
  run.threads = o.threads;
  return run;
}

}  // namespace

FreshRunResults fresh_evaluate(
    const FreshPopulation& pop, const FreshConfig& cfg, const FreshRunOptions& a,
    const std::function<void(const FreshPolicyRun&, const BoundResult&)>& on_policy) {
  FreshRunResults out;
  if (a.backend == Backend::cuda)  // (before any work)
    for (FreshPolicy policy : a.policies)
      CE_EXPECTS(cuda::fresh_policy_refusal(policy).empty(), cuda::fresh_policy_refusal(policy));
  const std::vector<Entry> entries = ordered_policies(cfg, a);
  if (a.backend == Backend::cuda && a.comm) {
    // A GPU per rank: every rank's refusal agreed on, then each rank on its machine's device
    // local_rank modulo their count, before anything opens a context on another.
    collectively(*a.comm, [&] {
      if (const std::string why = fresh_keyed_refusal(pop, cfg); !why.empty())
        throw InputError("--backend cuda: " + why);
    });
    const int local = a.comm->local_rank();
    collectively(*a.comm, [&] { cuda::use_device(local); });
  }
  out.counts = fresh_counts(pop, a.comm);
  double bound_seconds = 0.0;
  if (a.with_bound || cfg.start == FreshStart::steady) {
    set_activity("computing the bound");
    const auto t0 = std::chrono::steady_clock::now();
    out.bound = fresh_bound(pop, cfg, a.comm);
    bound_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  out.as_reward = bound_as_reward(out.bound, cfg.objective == Objective::binary, bound_seconds);
  for (const Entry& entry : entries) {
    FreshPolicyRun run =
        evaluate_policy(pop, cfg, a, entry, out.bound, out.as_reward, out.counts.sources);
    if (on_policy) on_policy(run, out.as_reward);
    out.runs.push_back(std::move(run));
  }
  return out;
}

}  // namespace crawleval
