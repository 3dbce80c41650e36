// The fused epoch kernel of the wide regime. One launch per epoch t does, for every source
// (grid-stride loop, fixed grid, so sums are reproducible):
//  1. Recompute epoch t-1's score from the state X(t-1) (same code, same inputs: the same bits as
//     the key the selection saw) and test it against the selection's stop source. Recomputing
//     costs a few flops and saves reading a key per source.
//  2. Apply the selection: a crawled source pays X(t-1) as reward (and its cost); every source
//     moves to X(t) (eq. 2-3 with AgeState words in the deterministic model, eq. 19 with the
//     counter-based arrivals in the stochastic one).
//  3. Score X(t), write its key, and add it to the block's coarse histogram (step 1 of
//     radix_select.cu) in shared memory; flush with integer atomics.
//  4. Reduce the block's reward and cost (cub::BlockReduce) into one partial sum per block; the
//     host side reduces the partials with cub::DeviceReduce (deterministic order).
// The first launch of a replication only scores (t = 0); the last only applies (t = H + B).
#include <cub/block/block_reduce.cuh>

#include "crawleval/policy.hpp"
#include "epoch_kernels.cuh"
#include "launch.cuh"

namespace crawleval::cuda::detail {

namespace {

template <bool Det, bool Unit>
__device__ __forceinline__ SourceParams load_params(const DeviceColumns& c, std::size_t i) {
  SourceParams p{};
  p.mu_t = c.mu_t[i];
  p.u_star = c.u_star[i];
  if (Det) {
    p.om_alpha = -expm1(-p.mu_t);  // not stored: saves 8 bytes per source and epoch
  } else {
    p.alpha = c.alpha[i];
    p.om_alpha = c.om_alpha[i];
    p.lambda_t = c.lambda_t[i];
    p.xi = c.xi[i];
  }
  p.inv_cost = Unit ? 1.0 : c.inv_cost[i];
  p.x_cap = p.u_star;  // the wide path runs the base model: no expiry
  return p;
}

template <Policy P, bool Det>
__device__ __forceinline__ double score_of(double x, uint32_t w, double om_eta,
                                           const SourceParams& p, std::size_t i, uint32_t epoch,
                                           uint64_t pointer, const EpochLaunch& a) {
  if constexpr (P == Policy::whittle)
    return Det ? AgeState::index(w, x, om_eta, p) : whittle_index(x, p);
  else if constexpr (P == Policy::greedy)
    return x * p.inv_cost;
  else if constexpr (P == Policy::round_robin)
    return round_robin_score(i, pointer, a.src.n);
  else
    return random_score(a.seed, a.replication, uint32_t(i), epoch);
}

template <Policy P, bool Det, bool Unit>
__global__ void __launch_bounds__(kEpochThreads) epoch_kernel(const EpochLaunch a) {
  __shared__ unsigned int s_count[kBins];
  __shared__ unsigned long long s_weight[Unit ? 1 : kBins];
  using Reduce = cub::BlockReduce<double, kEpochThreads>;
  __shared__ typename Reduce::TempStorage reduce_storage;
  if (a.score) {
    for (int b = threadIdx.x; b < kBins; b += blockDim.x) {
      s_count[b] = 0;
      if (!Unit) s_weight[b] = 0;
    }
    __syncthreads();
  }
  double reward = 0.0, spent = 0.0;
  const std::size_t n = a.src.n;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const SourceParams p = load_params<Det, Unit>(a.src, i);
    uint32_t w = 0;
    double x, om_eta = 0.0, x0 = 0.0;
    if (Det) {
      w = a.age[i];
      if (w & AgeState::kOffGrid) x0 = a.src.x0 ? a.src.x0[i] : p.u_star;
      x = AgeState::value(w, a.apply ? a.prev_epoch : a.now_epoch, x0, p, &om_eta);
    } else {
      x = a.x[i];
    }
    if (a.apply) {
      // Steps 1-2.
      const double s_prev = score_of<P, Det>(x, w, om_eta, p, i, a.prev_epoch, a.pointer_prev, a);
      const bool crawled = is_selected(score_key(s_prev), i, a.prev);
      if (crawled) {
        reward += x;
        spent += Unit ? 1.0 : a.src.cost[i];
      }
      if (Det) {
        w = AgeState::next(w, crawled);
        x = AgeState::value(w, a.now_epoch, x0, p, &om_eta);
        a.age[i] = w;
      } else {
        const double arrivals =
            sample_arrivals(p, a.utility, a.seed, a.replication, uint32_t(i), a.prev_epoch);
        x = crawled ? arrivals : passive_next(x, arrivals, p);
        a.x[i] = x;
      }
    }
    if (a.score) {
      // Step 3.
      const double s = score_of<P, Det>(x, w, om_eta, p, i, a.now_epoch, a.pointer_now, a);
      a.keys[i] = score_key(s);
      const uint32_t b = coarse_bin_of_score(s);
      atomicAdd(&s_count[b], 1u);
      if (!Unit) atomicAdd(&s_weight[b], a.src.weight[i]);
    }
  }
  if (a.apply) {  // step 4
    const double block_reward = Reduce(reduce_storage).Sum(reward);
    __syncthreads();
    const double block_cost = Reduce(reduce_storage).Sum(spent);
    if (threadIdx.x == 0)
      a.block_reward[blockIdx.x] = block_reward, a.block_cost[blockIdx.x] = block_cost;
  }
  if (a.score) {
    __syncthreads();
    for (int b = threadIdx.x; b < kBins; b += blockDim.x) {
      if (s_count[b]) atomicAdd(&a.select->count[b], (unsigned long long)s_count[b]);
      if (!Unit && s_weight[b]) atomicAdd(&a.select->weight[b], s_weight[b]);
    }
  }
}

template <Policy P, bool Det, bool Unit>
void launch(const EpochLaunch& a, cudaStream_t stream) {
  epoch_kernel<P, Det, Unit><<<epoch_blocks(a.src.n), kEpochThreads, 0, stream>>>(a);
  CE_CUDA_CHECK_LAUNCH();
}

template <Policy P>
void launch_policy(bool det, bool unit, const EpochLaunch& a, cudaStream_t stream) {
  if (det)
    unit ? launch<P, true, true>(a, stream) : launch<P, true, false>(a, stream);
  else
    unit ? launch<P, false, true>(a, stream) : launch<P, false, false>(a, stream);
}

}  // namespace

int epoch_blocks(std::size_t n) { return grid_for(n, kEpochThreads); }

void launch_epoch(Policy policy, Model model, bool unit_costs, const EpochLaunch& a,
                  cudaStream_t stream) {
  if (a.src.n == 0) return;
  const bool det = model == Model::deterministic;
  switch (policy) {
    case Policy::whittle:
      return launch_policy<Policy::whittle>(det, unit_costs, a, stream);
    case Policy::greedy:
      return launch_policy<Policy::greedy>(det, unit_costs, a, stream);
    case Policy::round_robin:
      return launch_policy<Policy::round_robin>(det, unit_costs, a, stream);
    case Policy::random:
      return launch_policy<Policy::random>(det, unit_costs, a, stream);
  }
}

}  // namespace crawleval::cuda::detail
