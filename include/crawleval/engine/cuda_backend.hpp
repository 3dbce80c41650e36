// Entry points of the CUDA backend (kernels/). Plain C++: no CUDA types cross this boundary.
// Built without CUDA, the same functions exist (host/engine/cuda_stub.cpp): compiled() is false,
// device_count() is 0 and rollout() throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "crawleval/engine/fresh_engine.hpp"
#include "crawleval/engine/fresh_keyed.hpp"
#include "crawleval/engine/keyed_rollout.hpp"
#include "crawleval/engine/rollout.hpp"

namespace crawleval::cuda {

/// True when this binary contains the CUDA backend.
bool compiled();

/// Number of usable CUDA devices; any error (no driver, no device) counts as zero.
int device_count() noexcept;

/// Why device_count() is 0, in words: "no CUDA device", an NVIDIA driver older than this binary's
/// CUDA runtime (both versions named), no driver, or a GPU this binary has no code for. Empty
/// when a device is usable.
std::string device_unavailable_reason();

/// Why `--backend cuda` cannot run here, in the one wording every front end uses (the command
/// line's run, bound and fresh run, Python's evaluate, bound and fresh.evaluate), with what to do:
///   "--backend cuda: this build has no CUDA backend; rebuild with -DCRAWLEVAL_ENABLE_CUDA=ON
///    (pip: -C cmake.define.CRAWLEVAL_ENABLE_CUDA=ON), or use --backend cpu"
///   "--backend cuda: no usable GPU (the CUDA runtime finds no device); use --backend cpu"
/// (the reason in brackets is device_unavailable_reason()'s). Empty when a device is usable.
/// Defined beside resolve_backend (host/evaluate/driver.cpp), in builds with and without CUDA.
std::string unavailable_message();

/// "NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB, driver 13.0)" or similar; empty when none.
std::string device_description();

/// Whether rollout() runs this problem and policy: every built-in policy of the general model
/// (belief observation, content expiry, every utility law but the empirical one, whose table is
/// not copied to the device) with up to 2^32 - 2 sources and fewer than 2^29 - 64 epochs in the
/// wide regime; any N <= 64 with several replications and no observer in the tall regime.
bool supports(const Problem& problem, Policy policy, const EpochObserver* observer = nullptr);

/// Whether rollout() runs this problem and policy through the wide regime's generic pass
/// (kernels/generic_pass.cuh: the general model, the static and lip policies, the utility laws
/// other than the deterministic and exponential ones) rather than the tall kernel or the fused
/// passes of the base model. The generic pass has not run on a device yet (docs/coverage.md), so
/// the automatic backend leaves it to the CPU; --backend cuda runs it.
bool generic_pass(const Problem& problem, Policy policy, const EpochObserver* observer = nullptr);

/// Same contract as reference_rollout/cpu_rollout (rollout.hpp). The tall regime (many
/// replications of a small population, one thread per replication) when it fits, else the wide
/// regime (one replication at a time, the whole population per epoch: kernels/wide_engine.cuh),
/// with its fused passes for the base model and its generic pass for the rest.
/// Throws InputError for what neither runs and when the population does not fit in device memory
/// (the message gives memory needed and available), Error on CUDA failures and internal ones (a
/// selection that did not end is reported after the run, never returned).
RolloutOutput rollout(const Problem& problem, Policy policy,
                      const EpochObserver* observer = nullptr);

/// What a policy given as a function sees on the GPU, once per epoch and replication: ScoreRequest
/// (rollout.hpp) with device memory. `state`, `age` and `collected` hold n doubles each on device
/// `device`, in id order, as ScoreRequest defines them. They are the engine's copies, made for the
/// call: the engine never reads them back, so a function may write them (frameworks without
/// read-only arrays, PyTorch and CuPy, cannot be kept from it); they are valid during the call.
/// The function fills `scores` (n doubles, device memory), or points *borrowed at n device scores
/// of its own, read before it is called again. The engine's work is done when it is called, and
/// it waits for the whole device after the call returns, so the function may run its kernels on
/// any stream.
struct DeviceScoreRequest {
  uint32_t replication;
  uint64_t epoch;
  std::size_t n;
  const double* state;
  const double* age;
  const double* collected;
  double* scores;
  const double** borrowed;
  int device;
};
using DeviceScoreFn = std::function<void(const DeviceScoreRequest&)>;

/// A score function on host memory (ScoreRequest) as a DeviceScoreFn: before each call the
/// observed state and the age are copied to the host, after it the scores to the device. For a
/// C++ or numpy policy that has no device code, on the GPU engine (about 24 B per source and
/// epoch over the bus); the conformance test runs its host score functions this way.
DeviceScoreFn from_host(ScoreFn score);

/// Whether function_rollout() runs this problem: one process, any model but the empirical
/// utility law, up to 2^32 - 2 sources and fewer than 2^29 - 64 epochs.
bool function_supports(const Problem& problem);

/// A policy given as a function on the GPU: the wide engine's generic pass in two launches per
/// epoch (move every source and write what the function observes; then select on its scores),
/// the function called between them. Same model, selection rule and reward accounting as the CPU
/// function engine (function_rollout in rollout.hpp), so a function computing a built-in policy's
/// scores gives that policy's crawled sets; rewards within rounding. `label` names it in errors.
/// Exceptions thrown by `score` propagate. InputError where function_supports() is false, without
/// a device, and when the population does not fit in device memory.
RolloutOutput function_rollout(const Problem& problem, const DeviceScoreFn& score,
                               const std::string& label, const EpochObserver* observer = nullptr);

/// One rank's keyed pass on a device (keyed_rollout.hpp; kernels/keyed_pass.cu): the columns
/// uploaded, n sources. The device is this process's current one (use_device). InputError without
/// a device and when the columns do not fit in device memory.
std::unique_ptr<crawleval::detail::KeyedPass> keyed_pass(const crawleval::detail::KeyedColumns& k,
                                                         std::size_t n);

/// One rank's freshness pass on a device (fresh_keyed.hpp; kernels/fresh_keyed_pass.cu): the
/// columns `c` points at (n rows) uploaded, the state on the device. The device is this process's
/// current one (use_device). InputError without a device and when the rows do not fit in device
/// memory.
std::unique_ptr<crawleval::detail::FreshKeyedPass> fresh_keyed_pass(const FreshKeyedColumns& c,
                                                                    std::size_t n);

/// The devices the CUDA runtime sees, without opening a context on any (0 without a driver or a
/// device; device_count() also checks that this binary has code for them).
int visible_device_count() noexcept;

/// Makes device `local_rank` modulo visible_device_count() this process's (a GPU per MPI rank,
/// ranks on one machine spread over its devices), before anything opens a context on another;
/// then checks it as device_count() does (InputError where it is unusable). Returns its number.
int use_device(int local_rank);

/// Whether fresh_epochs() runs these settings (everything but the learning variant).
bool fresh_supports(const FreshConfig& cfg);

/// Whether the GPU engines were built with `--policy custom`'s header (CMake's
/// CRAWLEVAL_FRESH_POLICY_ON_GPU; false without CUDA).
bool custom_fresh_policy_on_gpu();

/// Why the GPU engines (fresh_epochs(), fresh_keyed_pass()) do not run `policy` ("" where they
/// do, and in a build without CUDA, which refuses the backend itself). Host code, so that every
/// front end refuses it before any work, device or not (resolve_fresh_backend, fresh_evaluate,
/// fresh_rollout_cuda).
inline std::string fresh_policy_refusal(FreshPolicy policy) {
  return policy == FreshPolicy::custom && compiled() && !custom_fresh_policy_on_gpu()
             ? "custom (the policy compiled in from CRAWLEVAL_FRESH_POLICY) is in this build's "
               "CPU engines only (CRAWLEVAL_FRESH_POLICY_ON_GPU=OFF): use --backend cpu"
             : "";
}

/// Whether fresh_epochs() runs `policy` on a path no device run has passed yet (nutch-adaptive's
/// per-URL schedule, `--policy custom`): --backend auto leaves it to the CPU, --backend cuda runs
/// it.
inline bool fresh_policy_pending(FreshPolicy policy) {
  return policy == FreshPolicy::nutch_adaptive || policy == FreshPolicy::custom;
}

/// What a freshness score function sees on the GPU, once per epoch and replication:
/// FreshScoreRequest (fresh_engine.hpp) with device memory. `age` and `changes` (n uint32 each,
/// the changes of the completely observed sources, 0 elsewhere) are copies made for the call,
/// which the engine never reads back; `scores`, `borrowed` and the waits as DeviceScoreRequest's.
struct DeviceFreshScoreRequest {
  uint32_t replication;
  uint64_t epoch;
  std::size_t n;
  const uint32_t* age;
  const uint32_t* changes;
  double* scores;
  const double** borrowed;
  int device;
};
using DeviceFreshScoreFn = std::function<void(const DeviceFreshScoreRequest&)>;

/// A freshness score function on host memory as a DeviceFreshScoreFn (from_host's twin).
DeviceFreshScoreFn fresh_from_host(FreshScoreFn score);

/// The freshness model on the GPU (kernels/fresh_engine.cu): fresh_engine.hpp's contract on the
/// same plan (make_fresh_plan), scores, selection rule with politeness caps, draws and steps as the
/// CPU engine, hence its crawled sets epoch by epoch; rewards within rounding (a chunk's sources
/// are summed by a block reduction). InputError for the learning variant, without a device, or
/// when the population does not fit in device memory.
/// `user`: a score function of device arrays ranks the URLs instead of `policy` (whose plan is
/// still `plan`), under the same budget and caps.
FreshRolloutOutput fresh_epochs(const FreshPopulation& pop, const FreshConfig& cfg,
                                FreshPolicy policy, const FreshPlan& plan,
                                const FreshObserver* observer = nullptr,
                                const DeviceFreshScoreFn* user = nullptr);

}  // namespace crawleval::cuda
