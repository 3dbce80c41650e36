#include "crawleval/evaluate/driver.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <optional>
#include <utility>

#include "crawleval/base/error.hpp"
#include "crawleval/engine/cuda_backend.hpp"
#include "crawleval/engine/keyed_rollout.hpp"
#include "crawleval/engine/sharded.hpp"
#include "evaluate/replications.hpp"

namespace crawleval {

std::string cuda::unavailable_message() {
  if (!cuda::compiled())
    return "--backend cuda: this build has no CUDA backend; rebuild with "
           "-DCRAWLEVAL_ENABLE_CUDA=ON (pip: -C cmake.define.CRAWLEVAL_ENABLE_CUDA=ON), or use "
           "--backend cpu";
  if (cuda::device_count() > 0) return {};
  std::string why = cuda::device_unavailable_reason();
  if (why.empty() || why == "no CUDA device") why = "the CUDA runtime finds no device";
  return "--backend cuda: no usable GPU (" + why + "); use --backend cpu";
}

Backend resolve_backend(Backend requested) {
  const bool gpu = cuda::compiled() && cuda::device_count() > 0;
  if (requested == Backend::automatic) return gpu ? Backend::cuda : Backend::cpu;
  if (requested == Backend::cuda && !gpu) throw InputError(cuda::unavailable_message());
  return requested;
}

RolloutOutput rollout(const Problem& problem, Policy policy, Backend backend,
                      const EpochObserver* observer) {
  check_observe_column(*problem.population, policy);
  switch (backend) {
    case Backend::reference:
      return reference_rollout(problem, policy, observer);
    case Backend::cpu:
      return cpu_rollout(problem, policy, observer);
    case Backend::cuda:
      return cuda::rollout(problem, policy, observer);
    case Backend::automatic:
      break;
  }
  throw Error("internal: rollout() needs a resolved backend");
}

namespace {

/// The warm-up's pilot: replication `problem`'s first, from epoch 0, without burn-in.
Problem pilot_problem(const Problem& problem, uint64_t epochs) {
  Problem p = problem;
  p.config.replications = 1;
  p.config.burn_in = 0;
  p.config.epochs = epochs;
  return p;
}

PolicyResult evaluate_measured(const Problem& problem, Policy policy, Backend backend,
                               const RolloutFn& run, const EvaluateOptions& options, WarmUp w);

/// Refuses a rollout whose rewards or costs left the range of doubles (the states crawled in an
/// epoch, or a replication's epochs, summed beyond 1.8e308; every state is finite:
/// validate_sources), which the statistics would report as "no samples" with exit code 0. Every
/// process of an MPI run holds the same output (rollout.hpp) and throws alike: an agreed error.
const RolloutOutput& representable(const RolloutOutput& o) {
  const auto finite = [](const std::vector<double>& v) {
    return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
  };
  if (!finite(o.replication_reward) || !finite(o.epoch_reward))
    throw AgreedInputError(
        "the rewards exceed the largest double (1.8e308): the states crawled in an epoch, or a "
        "replication's rewards over its epochs, sum beyond it; scale lambda xi (and x0) down: the "
        "rewards scale with them, the policies' choices do not change");
  if (!finite(o.replication_cost))
    throw AgreedInputError(
        "the crawl costs spent over a replication's epochs exceed the largest double (1.8e308): "
        "scale the costs and --budget down together (the policies' choices do not change)");
  return o;
}

/// The observer sees the first measured call's replications only (not the warm-up's pilots, not
/// the target CI's later batches); `roll` runs the policy with or without it.
using ObservedRollout = std::function<RolloutOutput(const Problem&, const EpochObserver*)>;
PolicyResult evaluate_observed(const Problem& problem, Policy policy, Backend backend,
                               const ObservedRollout& roll, const EpochObserver* observer,
                               const EvaluateOptions& options) {
  bool first = true;
  const RolloutFn run = [&](const Problem& pr) {
    const EpochObserver* obs = first ? observer : nullptr;
    first = false;
    return roll(pr, obs);
  };
  if (!observer || !options.warm_up.automatic)
    return evaluate_with(problem, policy, backend, run, options);
  // The pilots run without the observer.
  WarmUp w = choose_burn_in(problem.config.epochs, options.warm_up, [&](uint64_t epochs) {
    return representable(roll(pilot_problem(problem, epochs), nullptr)).epoch_reward;
  });
  return evaluate_measured(problem, policy, backend, run, options, std::move(w));
}

}  // namespace

PolicyResult evaluate(const Problem& problem, Policy policy, Backend backend,
                      const EpochObserver* observer, const EvaluateOptions& options) {
  // The automatic backend takes the GPU where it runs a path that has passed on a device; the
  // generic pass has not yet (cuda_backend.hpp), and --backend cuda asks for it by name.
  if (backend == Backend::cuda && options.fallback_to_cpu &&
      (!cuda::supports(problem, policy, observer) || cuda::generic_pass(problem, policy, observer)))
    backend = Backend::cpu;
  return evaluate_observed(
      problem, policy, backend,
      [&](const Problem& pr, const EpochObserver* obs) {
        return rollout(pr, policy, backend, obs);
      },
      observer, options);
}

namespace {

/// A GPU per process for keyed_rollout (keyed_rollout.hpp): every rank's refusal agreed on, then
/// each rank on its machine's device local_rank modulo their count.
void use_keyed_device(const Problem& problem, Policy policy, Comm& comm) {
  collectively(comm, [&] {
    const std::string why = keyed_refusal(problem, policy);
    if (!why.empty()) throw InputError("--backend cuda: " + why);
  });
  const int local = comm.local_rank();
  collectively(comm, [&] { cuda::use_device(local); });
}

}  // namespace

PolicyResult evaluate_function(const Problem& problem, const std::string& name,
                               const ScoreFn& score, const EvaluateOptions& options, Comm* comm,
                               const EpochObserver* observer, const ScoreBuffers* buffers,
                               Backend backend) {
  if (backend == Backend::cuda) {
    Comm& procs = comm ? *comm : solo_comm();
    use_keyed_device(problem, Policy::whittle, procs);
    PolicyResult r = evaluate_observed(
        problem, Policy::whittle, Backend::cuda,
        [&](const Problem& pr, const EpochObserver* obs) {
          std::unique_ptr<detail::KeyedPass> pass;
          collectively(procs, [&] {
            pass = cuda::keyed_pass(detail::keyed_columns(pr, Policy::whittle, true), pr.size());
          });
          return keyed_rollout(pr, Policy::whittle, procs, *pass, obs, &score);
        },
        observer, options);
    r.policy.reset();
    r.name = name;
    return r;
  }
  PolicyResult r = evaluate_observed(
      problem, Policy::whittle, Backend::cpu,
      [&](const Problem& pr, const EpochObserver* obs) {
        return function_rollout(pr, score, name, obs, buffers, comm);
      },
      observer, options);
  r.policy.reset();
  r.name = name;
  return r;
}

PolicyResult evaluate_device_function(const Problem& problem, const std::string& name,
                                      const cuda::DeviceScoreFn& score,
                                      const EvaluateOptions& options,
                                      const EpochObserver* observer) {
  PolicyResult r = evaluate_observed(
      problem, Policy::whittle, Backend::cuda,
      [&](const Problem& pr, const EpochObserver* obs) {
        return cuda::function_rollout(pr, score, name, obs);
      },
      observer, options);
  r.policy.reset();
  r.name = name;
  return r;
}

BoundResult compute_bound(const Problem& problem, Backend backend) {
  if (backend == Backend::reference) return lagrangian_bound_reference(problem);
  if (backend == Backend::cuda && cuda::compiled() && cuda::device_count() > 0 &&
      bound_applies(problem))
    return cuda::lagrangian_bound(problem);
  return lagrangian_bound(problem);
}

PolicyResult evaluate_with(const Problem& problem, Policy policy, Backend backend,
                           const RolloutFn& run, const EvaluateOptions& options) {
  WarmUp w =
      options.warm_up.automatic
          ? choose_burn_in(problem.config.epochs, options.warm_up,
                           [&](uint64_t epochs) {
                             return representable(run(pilot_problem(problem, epochs))).epoch_reward;
                           })
          : fixed_burn_in(problem.config.burn_in);
  return evaluate_measured(problem, policy, backend, run, options, std::move(w));
}

namespace {

/// Why an interval of the reward over samples of `epochs` measured epochs each would not be
/// trusted whatever spread the samples show ("" where it would): a round-robin window shorter
/// than its pass over every source (its mean is over the sources the window crawls, which the
/// samples share), or utilities too heavy-tailed for the draws a sample makes (stats.hpp).
std::string untrusted_interval(const Problem& pr, Policy policy, uint64_t epochs) {
  if (policy == Policy::round_robin && pr.config.budget > 0.0) {
    // A pass takes at least total cost / budget epochs, and at least N / (the most sources an
    // epoch can afford, floor(budget / smallest cost)): with a budget of 1.5 unit costs it is N.
    const double per_epoch = std::floor(pr.config.budget / pr.min_cost * (1.0 + 1e-12));
    const double pass = std::max(pr.total_cost / pr.config.budget,
                                 per_epoch >= 1.0 ? double(pr.global_size()) / per_epoch
                                                  : std::numeric_limits<double>::infinity());
    if (double(epochs) < pass) {
      char buf[320];
      std::snprintf(buf, sizeof buf,
                    "round robin crawls every source once in a pass of about %.4g epochs, and "
                    "each sample covers %llu: its mean is over the sources that part of the pass "
                    "crawls, not the long run; measure at least a pass per sample (more epochs)",
                    pass, static_cast<unsigned long long>(epochs));
      return buf;
    }
  }
  if (pr.config.model == Model::stochastic)
    return heavy_tail_reason(utility_second_moment(pr.config.utility),
                             pr.arrivals_per_epoch * double(epochs), to_string(pr.config.utility));
  return {};
}

PolicyResult evaluate_measured(const Problem& original, Policy policy, Backend backend,
                               const RolloutFn& run, const EvaluateOptions& options, WarmUp w) {
  // The problem with the burn-in chosen (a copy of the config: the columns are shared).
  Problem problem = original;
  problem.config.burn_in = w.burn_in;
  const uint64_t sources = problem.global_size(), epochs_per_replication = problem.total_epochs();
  const uint32_t first_replication = problem.config.first_replication;
  const uint64_t measured_per_replication = problem.config.epochs;
  PolicyResult r;
  r.policy = policy;
  r.name = to_string(policy);
  r.backend = backend;
  RolloutOutput out = representable(run(problem));
  std::vector<double> rewards = out.replication_reward, costs = out.replication_cost;
  double seconds = out.seconds, loop_seconds = out.loop_seconds, comm = out.comm_seconds;
  // The measured epochs' time where every call timed them (the GPU's wide engine: its device
  // time of the measured epochs, H per replication).
  auto measured = [&](const RolloutOutput& o) -> std::pair<double, uint64_t> {
    if (o.measured_seconds > 0.0 && o.measured_epochs > 0)
      return {o.measured_seconds, o.measured_epochs};
    if (o.steady_seconds > 0.0)
      return {o.steady_seconds, measured_per_replication * o.replication_reward.size()};
    return {0.0, 0};
  };
  // (Plain variables, not structured bindings: the batches' lambda below adds to them, and C++17
  // does not let a lambda capture a binding.)
  const std::pair<double, uint64_t> first_measured = measured(out);
  double measured_seconds = first_measured.first;
  uint64_t measured_epochs = first_measured.second;
  bool all_measured = measured_epochs > 0;
  // The reward's summary over the replications run so far (replication 0's epochs for batch
  // means): what the results report, and what --target-ci aims at.
  const auto reported = [&](const std::vector<double>& replication_rewards) {
    return detail::replication_summary(
        replication_rewards, out.epoch_reward, kNonNegative, problem.config.epochs,
        [&](uint64_t epochs) { return untrusted_interval(problem, policy, epochs); });
  };
  if (options.target_ci > 0.0) {
    const bool hopeless = !untrusted_interval(problem, policy, problem.config.epochs).empty();
    Problem batch = problem;
    r.target_reached = detail::add_replication_batches(
        options.target_ci, options.max_replications, hopeless, reported, rewards,
        [&](uint32_t offset, uint32_t count) {
          batch.config.first_replication = first_replication + offset;
          batch.config.replications = count;
          const RolloutOutput more = representable(run(batch));
          costs.insert(costs.end(), more.replication_cost.begin(), more.replication_cost.end());
          seconds += more.seconds, loop_seconds += more.loop_seconds, comm += more.comm_seconds;
          const auto [ms, me] = measured(more);
          measured_seconds += ms, measured_epochs += me;
          all_measured = all_measured && me > 0;
          return more.replication_reward;
        });
  }
  r.replication_reward = rewards;
  r.replications = uint32_t(rewards.size());
  r.reward = reported(rewards);
  r.cost = summarize_replications(costs, kNonNegative);
  check_measured_window(w, out.epoch_reward);
  r.warm_up = std::move(w);
  r.seconds = seconds + r.warm_up.pilot_seconds;
  r.loop_seconds = loop_seconds;
  r.comm_seconds = comm;
  const double work = double(sources) * double(epochs_per_replication) * double(rewards.size());
  r.rate_of_measured_epochs = all_measured;
  if (all_measured)
    r.source_epochs_per_second = double(sources) * double(measured_epochs) / measured_seconds;
  else
    r.source_epochs_per_second = loop_seconds > 0 ? work / loop_seconds : 0.0;
  return r;
}

}  // namespace

PolicyResult evaluate_sharded(const Problem& problem, Policy policy, Comm& comm,
                              const EvaluateOptions& options, Backend backend) {
  // (A rank whose shard is empty holds no observe column: every rank takes the others' refusal.)
  collectively(comm, [&] { check_observe_column(*problem.population, policy); });
  if (backend != Backend::cuda)
    return evaluate_with(
        problem, policy, Backend::cpu,
        [&](const Problem& pr) { return sharded_rollout(pr, policy, comm); }, options);
  use_keyed_device(problem, policy, comm);
  return evaluate_with(
      problem, policy, Backend::cuda,
      [&](const Problem& pr) {
        std::unique_ptr<detail::KeyedPass> pass;
        collectively(
            comm, [&] { pass = cuda::keyed_pass(detail::keyed_columns(pr, policy), pr.size()); });
        return keyed_rollout(pr, policy, comm, *pass);
      },
      options);
}

}  // namespace crawleval
