#include "crawleval/driver.hpp"

#include "crawleval/cuda_backend.hpp"
#include "crawleval/error.hpp"

namespace crawleval {

const char* to_string(Backend b) {
  switch (b) {
    case Backend::automatic:
      return "auto";
    case Backend::cpu:
      return "cpu";
    case Backend::reference:
      return "reference";
    case Backend::cuda:
      return "cuda";
  }
  return "?";
}

std::optional<Backend> parse_backend(const std::string& s) {
  for (Backend b : {Backend::automatic, Backend::cpu, Backend::reference, Backend::cuda})
    if (s == to_string(b)) return b;
  return std::nullopt;
}

Backend resolve_backend(Backend requested) {
  const bool gpu = cuda::compiled() && cuda::device_count() > 0;
  if (requested == Backend::automatic) return gpu ? Backend::cuda : Backend::cpu;
  if (requested == Backend::cuda && !gpu) {
    if (!cuda::compiled())
      throw InputError("no CUDA device: this crawleval was built without the CUDA backend");
    throw InputError(
        "no CUDA device: --backend cuda needs a visible NVIDIA GPU (use --backend cpu)");
  }
  return requested;
}

RolloutOutput rollout(const Problem& problem, Policy policy, Backend backend,
                      const EpochObserver* observer) {
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

PolicyResult evaluate(const Problem& problem, Policy policy, Backend backend,
                      const EpochObserver* observer) {
  const RolloutOutput out = rollout(problem, policy, backend, observer);
  PolicyResult r;
  r.policy = policy;
  r.backend = backend;
  r.replication_reward = out.replication_reward;
  if (out.replication_reward.size() >= 2) {
    r.reward = summarize_replications(out.replication_reward);
    r.cost = summarize_replications(out.replication_cost);
  } else {
    r.reward = summarize_batch_means(out.epoch_reward);
    r.cost = summarize_replications(out.replication_cost);
  }
  r.seconds = out.seconds;
  r.loop_seconds = out.loop_seconds;
  const double work =
      double(problem.size()) * double(problem.total_epochs()) * double(problem.config.replications);
  r.source_epochs_per_second = out.loop_seconds > 0 ? work / out.loop_seconds : 0.0;
  return r;
}

}  // namespace crawleval
