// The CUDA entry points of a build without CUDA: the program links and reports "not compiled".
#include "crawleval/cuda_backend.hpp"
#include "crawleval/error.hpp"

namespace crawleval::cuda {

bool compiled() { return false; }
int device_count() noexcept { return 0; }
std::string device_description() { return {}; }
std::string device_unavailable_reason() {
  return "this crawleval was built without the CUDA backend";
}
bool supports(const Problem&, Policy, const EpochObserver*) { return false; }
BoundResult lagrangian_bound(const Problem&) {
  throw Error("this crawleval was built without the CUDA backend (CRAWLEVAL_ENABLE_CUDA=OFF)");
}
RolloutOutput rollout(const Problem&, Policy, const EpochObserver*) {
  throw Error("this crawleval was built without the CUDA backend (CRAWLEVAL_ENABLE_CUDA=OFF)");
}
bool fresh_supports(const FreshConfig&) { return false; }
FreshRolloutOutput fresh_rollout(const FreshPopulation&, const FreshConfig&, FreshPolicy,
                                 const FreshObserver*, const std::vector<double>*) {
  throw InputError(
      "--backend cuda: this crawleval was built without the CUDA backend "
      "(CRAWLEVAL_ENABLE_CUDA=OFF)");
}

}  // namespace crawleval::cuda
