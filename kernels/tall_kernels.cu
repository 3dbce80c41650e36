// The tall regime: one thread runs one whole replication of a small population (N <= 64), so
// 10^5-10^6 replications fill the GPU. Each thread follows the reference step for step:
//  1. score every source (the shared model functions: whittle_index on the true state, ...);
//  2. order the sources by (score desc, NaN last, id asc) with an insertion sort in local memory
//     and crawl the longest prefix that fits the budget, summing the integer weights of
//     selection.hpp (computed on the host) in that order;
//  3. add the crawled states in ascending id order (the reference's order: same bits);
//  4. move every source to its next state (arrivals keyed by (seed, replication, source, epoch)).
// Rewards are summed sequentially per thread: reproducible and equal to the reference up to the
// last-ulp differences of the device's log/exp. It runs the general model (belief observation,
// expiry, the static policy) with the same shared functions as the reference.
#include "crawleval/model/policy.hpp"
#include "crawleval/model/selection.hpp"
#include "launch.cuh"
#include "tall_kernels.cuh"

namespace crawleval::cuda::detail {

namespace {

constexpr int kTallThreads = 128;

__device__ __forceinline__ bool before(double sa, uint32_t a, double sb, uint32_t b) {
  const bool na = sa != sa, nb = sb != sb;
  if (na != nb) return nb;
  if (!na && sa != sb) return sa > sb;
  return a < b;
}

__global__ void __launch_bounds__(kTallThreads) tall_kernel(const TallLaunch a) {
  // 64-bit: near 2^32 replications, blockIdx.x * blockDim.x of the last block wraps 32 bits.
  const uint64_t rep64 = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (rep64 >= a.replications) return;
  const uint32_t rep = uint32_t(rep64);
  const uint32_t r = a.first_replication + rep;  // the replication's index in every draw
  const int n = a.n;
  const bool deterministic = a.model == Model::deterministic;
  double x[kTallMaxSources], score[kTallMaxSources];
  uint32_t w[kTallMaxSources];
  uint8_t order[kTallMaxSources];
  bool crawled[kTallMaxSources];
  for (int i = 0; i < n; ++i) x[i] = a.x0[i], w[i] = a.age0[i];
  uint64_t pointer = 0;
  double reward_sum = 0.0, cost_sum = 0.0;
  const uint64_t total = a.burn_in + a.epochs;
  for (uint64_t t = 0; t < total; ++t) {
    // 1.
    ScoreContext ctx{a.policy, a.observe, a.seed, r, uint32_t(t), pointer, uint64_t(n)};
    ctx.multiplier = a.multiplier;
    for (int i = 0; i < n; ++i)
      score[i] = a.policy == Policy::random  // 32-bit ids (TallLaunch::first_id)
                     ? random_score(a.seed, r, a.first_id + uint32_t(i), uint32_t(t))
                     : policy_score(ctx, i, x[i], w[i], a.x0[i], a.period ? a.period[i] : 0u,
                                    a.gain ? a.gain[i] : 0.0, a.params[i]);
    // 2.
    for (int i = 0; i < n; ++i) {
      int j = i;
      while (j > 0 && before(score[i], i, score[order[j - 1]], order[j - 1])) {
        order[j] = order[j - 1];
        --j;
      }
      order[j] = uint8_t(i);
      crawled[i] = false;
    }
    unsigned long long used = 0;
    int count = 0;
    for (int j = 0; j < n; ++j) {
      const unsigned long long wj = a.weight[order[j]];
      if (wj > a.limit - used) break;
      used += wj;
      crawled[order[j]] = true;
      ++count;
    }
    // 3.
    double reward = 0.0, spent = 0.0;
    for (int i = 0; i < n; ++i)
      if (crawled[i]) reward += x[i], spent += a.cost[i];
    if (t >= a.burn_in) {
      reward_sum += reward;
      cost_sum += spent;
      if (rep == 0) a.epoch_reward[t - a.burn_in] = reward;
    }
    pointer = (pointer + uint64_t(count)) % uint64_t(n);
    // 4.
    for (int i = 0; i < n; ++i)
      general_transition(&x[i], &w[i], crawled[i], uint32_t(t), deterministic, a.utility, a.seed, r,
                         a.first_id + uint32_t(i), a.params[i]);
  }
  a.replication_reward[rep] = reward_sum;
  a.replication_cost[rep] = cost_sum;
}

/// Blocks for R replications, in 64 bits: R + 127 wraps a 32-bit count for R > 2^32 - 128.
constexpr uint64_t tall_blocks(uint32_t replications) {
  return (uint64_t(replications) + kTallThreads - 1) / kTallThreads;
}
static_assert(tall_blocks(0xFFFFFFFFu) == (uint64_t(1) << 25), "the largest count of replications");
static_assert(tall_blocks(129) == 2, "a partial block");

}  // namespace

void launch_tall(const TallLaunch& a, cudaStream_t stream) {
  if (a.replications == 0) return;
  tall_kernel<<<unsigned(tall_blocks(a.replications)), kTallThreads, 0, stream>>>(a);
  CE_CUDA_CHECK_LAUNCH();
}

}  // namespace crawleval::cuda::detail
