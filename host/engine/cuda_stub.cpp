// The CUDA entry points of a build without CUDA: the program links and reports "not compiled".
#include "crawleval/base/error.hpp"
#include "crawleval/engine/cuda_backend.hpp"

namespace crawleval::cuda {

bool compiled() { return false; }
int device_count() noexcept { return 0; }
std::string device_description() { return {}; }
std::string device_unavailable_reason() { return "this build has no CUDA backend"; }
bool supports(const Problem&, Policy, const EpochObserver*) { return false; }
bool generic_pass(const Problem&, Policy, const EpochObserver*) { return false; }
// resolve_backend refuses --backend cuda first; these are reached only by a caller that skips it.
RolloutOutput rollout(const Problem&, Policy, const EpochObserver*) {
  throw InputError(unavailable_message());
}
bool function_supports(const Problem&) { return false; }
DeviceScoreFn from_host(ScoreFn) {
  return [](const DeviceScoreRequest&) { throw InputError(unavailable_message()); };
}
RolloutOutput function_rollout(const Problem&, const DeviceScoreFn&, const std::string&,
                               const EpochObserver*) {
  throw InputError(unavailable_message());
}
std::unique_ptr<crawleval::detail::KeyedPass> keyed_pass(const crawleval::detail::KeyedColumns&,
                                                         std::size_t) {
  throw InputError(unavailable_message());
}
std::unique_ptr<crawleval::detail::FreshKeyedPass> fresh_keyed_pass(const FreshKeyedColumns&,
                                                                    std::size_t) {
  throw InputError(unavailable_message());
}
int visible_device_count() noexcept { return 0; }
int use_device(int) { throw InputError(unavailable_message()); }
bool fresh_supports(const FreshConfig&) { return false; }
bool custom_fresh_policy_on_gpu() { return false; }
DeviceFreshScoreFn fresh_from_host(FreshScoreFn) {
  return [](const DeviceFreshScoreRequest&) { throw InputError(unavailable_message()); };
}
FreshRolloutOutput fresh_epochs(const FreshPopulation&, const FreshConfig&, FreshPolicy,
                                const FreshPlan&, const FreshObserver*, const DeviceFreshScoreFn*) {
  throw InputError(unavailable_message());
}

}  // namespace crawleval::cuda
