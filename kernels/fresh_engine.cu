// The freshness model on the GPU (cuda_backend.hpp's fresh_rollout; the contract is
// fresh_engine.hpp's): the same plan, scores, selection rule with politeness caps, draws and
// per-source steps as the CPU engine (freshness.hpp's __host__ __device__ functions), so that the
// crawled sets are the CPU's epoch by epoch; the rewards are summed per kFoldChunk chunk by a
// block reduction (the CPU adds a chunk's sources in order), then the chunks in order.
//
// One epoch, all on the device (no host wait; the observer, when given, adds one per epoch):
//   1. score_kernel: a 64-bit key per source (selection.hpp's score_key);
//   2. with caps: the crowded hosts' members' keys gathered, sorted per host (segmented radix
//      sort, stable: equal keys keep ascending ids) and the members past the cap marked
//      ineligible;
//   3. mask_kernel: key' = key if eligible else 0, ids = 0..n-1; a stable descending radix sort of
//      (key', id) gives the rule's order; the ineligible sources fall among the NaN keys (key 0,
//      by id), where they weigh 0 in the scan and are never marked;
//   4. an inclusive scan of the fixed-point weights (ineligible: 0) in that order, read through
//      the sorted ids; mark_kernel: crawled = eligible and prefix <= limit (integer sums: the CPU
//      walk's decision);
//   5. step_kernel: fresh_step for every source, one block per chunk, block sums per chunk;
//   6. fold_kernel: the chunks' sums in order, into the epoch's totals.
// Bytes per source and epoch (unit costs, no caps): about 150 (scores 60, sort 2 x 12 x passes,
// scan 24, step 60); 8 launches plus the sort's and the scan's.
#include <thrust/iterator/transform_iterator.h>

#include <cub/block/block_reduce.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>

#include <algorithm>
#include <chrono>
#include <limits>

#include "crawleval/base/error.hpp"
#include "crawleval/engine/cuda_backend.hpp"
#include "crawleval/engine/fresh_engine.hpp"
#include "crawleval/model/problem.hpp"
#include "device_buffer.cuh"
#include "launch.cuh"
#include "wide_engine.cuh"

namespace crawleval::cuda {

namespace {

using detail::DeviceBuffer;
using detail::grid_for;

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
    fresh_init_kernel(std::size_t n, bool steady, const double* period, const FreshParams* params,
                      const uint8_t* complete, uint64_t seed, uint64_t first, uint32_t replication,
                      uint32_t* age, uint32_t* changes, uint8_t* want,
                      unsigned long long* saturated) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    uint32_t a = 0, c = 0;
    if (steady && !complete[i] &&
        !fresh_steady_start(period[i], params[i], seed, replication, first + i, &a, &c))
      atomicAdd(saturated, 1ull);  // (rare: periods beyond 2^32 epochs)
    age[i] = a, changes[i] = c, want[i] = 0;
  }
}

struct ScoreArgs {
  FreshPolicy policy;
  Objective objective;
  std::size_t n;
  const FreshParams* params;
  const uint8_t* complete;
  const uint32_t* age;
  const uint32_t* changes;
  const uint8_t* want;
  const double* rho;  ///< null: not rate-based
  double epoch_length;
  uint64_t seed, first;  ///< first: the global id of source 0 (its draws' key, FreshPopulation)
  uint32_t replication, epoch;
  uint64_t* key;
};

__global__ void __launch_bounds__(kThreads) fresh_score_kernel(ScoreArgs a) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < a.n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const FreshView v{a.complete[i] != 0, a.age[i], a.changes[i], a.want[i] != 0,
                      a.rho ? a.rho[i] : 0.0};
    a.key[i] = score_key(fresh_score(a.policy, a.objective, v, a.params[i], a.epoch_length, a.seed,
                                     a.replication, a.first + i, a.epoch));
  }
}

/// The crowded hosts' members: their keys and ids, host by host (plan.crowded's order).
__global__ void __launch_bounds__(kThreads)
    gather_crowded_kernel(std::size_t m, const uint32_t* members, const uint64_t* key,
                          uint64_t* seg_key, uint32_t* seg_id, uint8_t* eligible, std::size_t n) {
  for (std::size_t j = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; j < m;
       j += std::size_t(gridDim.x) * blockDim.x) {
    seg_key[j] = key[members[j]];
    seg_id[j] = members[j];
  }
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    eligible[i] = 1;
}

/// After the per-host sort: members at position >= cap within their host are not eligible.
__global__ void __launch_bounds__(kThreads)
    cap_kernel(std::size_t m, const uint32_t* sorted_id, const int* position_in_host, uint32_t cap,
               uint8_t* eligible) {
  for (std::size_t j = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; j < m;
       j += std::size_t(gridDim.x) * blockDim.x)
    if (uint32_t(position_in_host[j]) >= cap) eligible[sorted_id[j]] = 0;
}

__global__ void __launch_bounds__(kThreads)
    mask_kernel(std::size_t n, const uint64_t* key, const uint8_t* eligible, uint64_t* masked,
                uint32_t* ids) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    masked[i] = !eligible || eligible[i] ? key[i] : 0ull;
    ids[i] = uint32_t(i);
  }
}

/// A sorted position's fixed-point weight (0 for an ineligible source), read by the scan.
struct EligibleWeight {
  const uint8_t* eligible;  ///< null: every source eligible
  const uint64_t* weight;   ///< null: unit costs
  __host__ __device__ __forceinline__ unsigned long long operator()(uint32_t i) const {
    return (!eligible || eligible[i]) ? (weight ? weight[i] : 1ull) : 0ull;
  }
};

/// The walk's decision for every position at once: prefix sums of non-negative integers are
/// monotone, so "the prefix up to here fits" is "every eligible source before it fitted".
__global__ void __launch_bounds__(kThreads)
    mark_kernel(std::size_t n, const uint32_t* sorted_id, const uint8_t* eligible,
                const unsigned long long* incl, unsigned long long limit, uint8_t* crawled) {
  for (std::size_t j = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; j < n;
       j += std::size_t(gridDim.x) * blockDim.x) {
    const uint32_t i = sorted_id[j];
    crawled[i] = (!eligible || eligible[i]) && incl[j] <= limit;
  }
}

struct StepArgs {
  std::size_t n;
  const uint8_t* crawled;
  const uint8_t* complete;
  bool coins;
  const double* coin_p;  ///< null: no coin policy
  const FreshParams* params;
  const double* cost;
  uint64_t seed, first;
  uint32_t replication, epoch;
  uint32_t* age;
  uint32_t* changes;
  uint8_t* want;
  double* chunk_sums;             ///< 3 per chunk: freshness, penalty, cost
  unsigned long long* saturated;  ///< FreshRolloutOutput::saturated
};

/// One block per kFoldChunk chunk of sources.
__global__ void __launch_bounds__(kThreads) fresh_step_kernel(StepArgs a) {
  const std::size_t first = std::size_t(blockIdx.x) * kFoldChunk;
  const std::size_t last = first + kFoldChunk < a.n ? first + kFoldChunk : a.n;
  double f = 0.0, pen = 0.0, cost = 0.0;
  for (std::size_t i = first + threadIdx.x; i < last; i += blockDim.x) {
    const bool crawled = a.crawled[i] != 0;
    if (crawled) cost += a.cost[i];
    const FreshEpoch e = fresh_step(
        crawled, a.complete[i] != 0, a.coins, a.coin_p ? a.coin_p[i] : 0.0, a.params[i], a.seed,
        a.replication, a.first + i, a.epoch, &a.age[i], &a.changes[i], &a.want[i]);
    f += e.fresh;
    pen += e.penalty;
    if (e.saturated) atomicAdd(a.saturated, 1ull);
  }
  using Reduce = cub::BlockReduce<double, kThreads>;
  __shared__ typename Reduce::TempStorage temp;
  const double tf = Reduce(temp).Sum(f);
  __syncthreads();
  const double tp = Reduce(temp).Sum(pen);
  __syncthreads();
  const double tc = Reduce(temp).Sum(cost);
  if (threadIdx.x == 0) {
    a.chunk_sums[3 * blockIdx.x] = tf;
    a.chunk_sums[3 * blockIdx.x + 1] = tp;
    a.chunk_sums[3 * blockIdx.x + 2] = tc;
  }
}

/// The chunks' sums added in order (as the CPU engine does), into slot `slot` of the epoch totals
/// (negative: a burn-in epoch, not recorded).
__global__ void __launch_bounds__(32)
    fold_kernel(std::size_t chunks, const double* chunk_sums, long long slot, double* totals,
                std::size_t measured) {
  if (threadIdx.x != 0 || blockIdx.x != 0 || slot < 0) return;
  double f = 0.0, pen = 0.0, cost = 0.0;
  for (std::size_t c = 0; c < chunks; ++c)
    f += chunk_sums[3 * c], pen += chunk_sums[3 * c + 1], cost += chunk_sums[3 * c + 2];
  totals[slot] = f;
  totals[measured + slot] = pen;
  totals[2 * measured + slot] = cost;
}

}  // namespace

bool fresh_supports(const FreshConfig& cfg) { return !cfg.learn; }

FreshRolloutOutput fresh_epochs(const FreshPopulation& pop, const FreshConfig& cfg,
                                FreshPolicy policy, const FreshPlan& plan,
                                const FreshObserver* observer) {
  if (cfg.learn)
    throw InputError(
        "--learn: the learning variant runs on the CPU only (use --backend cpu or auto)");
  if (device_count() == 0) throw InputError("--backend cuda: " + device_unavailable_reason());
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t n = pop.size();
  const std::size_t m = plan.hosts.members.size();
  const bool caps = cfg.host_cap > 0 && m > 0;
  if (m > std::size_t(std::numeric_limits<int>::max()))
    throw InputError("--host-cap: more than 2^31 sources on crowded hosts");
  const bool rates = !plan.rates.rho.empty();
  const bool coins = coin_policy(policy);
  const std::size_t chunks = (n + kFoldChunk - 1) / kFoldChunk;
  const uint64_t total_epochs = cfg.burn_in + cfg.epochs;

  // Temporary storage for the sorts and the scan, sized once (null queries need only the sizes).
  std::size_t sort_bytes = 0, scan_bytes = 0, seg_bytes = 0;
  CE_CUDA_TRY(cub::DeviceRadixSort::SortPairsDescending(
      nullptr, sort_bytes, static_cast<const uint64_t*>(nullptr), static_cast<uint64_t*>(nullptr),
      static_cast<const uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr), int64_t(n), 0, 64));
  CE_CUDA_TRY(cub::DeviceScan::InclusiveSum(
      nullptr, scan_bytes,
      thrust::make_transform_iterator(static_cast<uint32_t*>(nullptr), EligibleWeight{}),
      static_cast<unsigned long long*>(nullptr), int64_t(n)));
  if (caps)
    CE_CUDA_TRY(cub::DeviceSegmentedRadixSort::SortPairsDescending(
        nullptr, seg_bytes, static_cast<const uint64_t*>(nullptr), static_cast<uint64_t*>(nullptr),
        static_cast<const uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr), int(m),
        int(plan.hosts.start.size() - 1), static_cast<const int*>(nullptr),
        static_cast<const int*>(nullptr) + 1, 0, 64));
  const std::size_t temp_bytes = std::max({sort_bytes, scan_bytes, seg_bytes, std::size_t(1)});
  detail::require_device_memory(
      n * (sizeof(FreshParams) + 1 + 8 + 8 + (rates ? 8 : 0) + (coins ? 8 : 0) + 4 + 4 + 1 + 8 +
           2 * 8 + 2 * 4 + 1 + 1 + 8 + (cfg.start == FreshStart::steady ? 8 : 0)) +
          m * (4 + 4 + 2 * 8 + 2 * 4) + 3 * cfg.epochs * 8 + temp_bytes + (64u << 20),
      "the freshness model on " + std::to_string(n) + " sources");

  detail::Stream stream;
  DeviceBuffer<FreshParams> params;
  params.upload(plan.params, stream);
  std::vector<uint8_t> complete(pop.complete.begin(), pop.complete.end());
  DeviceBuffer<uint8_t> d_complete;
  d_complete.upload(complete, stream);
  DeviceBuffer<uint64_t> weight;
  if (!plan.unit_costs) weight.upload(plan.weight, stream);
  DeviceBuffer<double> cost, rho, coin_p, period;
  cost.upload(pop.cost, stream);
  if (rates) rho.upload(plan.rates.rho, stream);
  if (coins) coin_p.upload(plan.rates.p, stream);
  if (cfg.start == FreshStart::steady) period.upload(plan.steady_period, stream);
  DeviceBuffer<uint32_t> age(n), changes(n), ids(n), sorted_ids(n);
  DeviceBuffer<uint8_t> want(n), crawled(n), eligible;
  DeviceBuffer<uint64_t> key(n), masked(n), sorted_keys(n);
  DeviceBuffer<unsigned long long> incl(n);
  DeviceBuffer<double> chunk_sums(3 * chunks), totals(3 * cfg.epochs);
  DeviceBuffer<unsigned long long> saturated(1);
  saturated.zero(stream);
  // Caps: the crowded members, their hosts' offsets and each position's rank within its host.
  DeviceBuffer<uint32_t> members, seg_id, seg_sorted_id;
  DeviceBuffer<uint64_t> seg_key, seg_sorted_key;
  DeviceBuffer<int> offsets, position;
  if (caps) {
    eligible.resize(n);
    members.upload(plan.hosts.members, stream);
    const std::vector<std::size_t>& start = plan.hosts.start;
    std::vector<int> off(start.begin(), start.end());
    std::vector<int> pos(m);
    for (std::size_t h = 0; h + 1 < start.size(); ++h)
      for (std::size_t j = start[h]; j < start[h + 1]; ++j) pos[j] = int(j - start[h]);
    offsets.upload(off, stream);
    position.upload(pos, stream);
    seg_id.resize(m), seg_sorted_id.resize(m), seg_key.resize(m), seg_sorted_key.resize(m);
  }
  const int segments = caps ? int(plan.hosts.start.size() - 1) : 0;
  const uint8_t* elig = caps ? eligible.data() : nullptr;
  const auto weights = thrust::make_transform_iterator(
      sorted_ids.data(), EligibleWeight{elig, plan.unit_costs ? nullptr : weight.data()});
  DeviceBuffer<unsigned char> temp(temp_bytes);

  const int grid = grid_for(n, kThreads);
  FreshRolloutOutput out;
  out.threads = 1;
  std::vector<uint8_t> host_crawled(observer ? n : 0);
  std::vector<uint32_t> crawled_ids;
  std::vector<double> host_totals(3 * cfg.epochs);
  for (uint32_t rep = 0; rep < cfg.replications; ++rep) {
    const uint32_t r = cfg.first_replication + rep;  // (the draws' replication index)
    fresh_init_kernel<<<grid, kThreads, 0, stream>>>(
        n, cfg.start == FreshStart::steady, period.data(), params.data(), d_complete.data(),
        cfg.seed, pop.first, r, age.data(), changes.data(), want.data(), saturated.data());
    CE_CUDA_CHECK_LAUNCH();
    for (uint64_t t = 0; t < total_epochs; ++t) {
      const uint32_t epoch = uint32_t(t);
      fresh_score_kernel<<<grid, kThreads, 0, stream>>>(
          ScoreArgs{policy, cfg.objective, n, params.data(), d_complete.data(), age.data(),
                    changes.data(), want.data(), rates ? rho.data() : nullptr, cfg.epoch_length,
                    cfg.seed, pop.first, r, epoch, key.data()});
      CE_CUDA_CHECK_LAUNCH();
      if (caps) {
        gather_crowded_kernel<<<grid_for(std::max(n, m), kThreads), kThreads, 0, stream>>>(
            m, members.data(), key.data(), seg_key.data(), seg_id.data(), eligible.data(), n);
        CE_CUDA_CHECK_LAUNCH();
        std::size_t bytes = seg_bytes;
        CE_CUDA_TRY(cub::DeviceSegmentedRadixSort::SortPairsDescending(
            temp.data(), bytes, seg_key.data(), seg_sorted_key.data(), seg_id.data(),
            seg_sorted_id.data(), int(m), segments, offsets.data(), offsets.data() + 1, 0, 64,
            stream));
        cap_kernel<<<grid_for(m, kThreads), kThreads, 0, stream>>>(
            m, seg_sorted_id.data(), position.data(), cfg.host_cap, eligible.data());
        CE_CUDA_CHECK_LAUNCH();
      }
      mask_kernel<<<grid, kThreads, 0, stream>>>(n, key.data(), elig, masked.data(), ids.data());
      CE_CUDA_CHECK_LAUNCH();
      std::size_t bytes = sort_bytes;
      CE_CUDA_TRY(cub::DeviceRadixSort::SortPairsDescending(
          temp.data(), bytes, masked.data(), sorted_keys.data(), ids.data(), sorted_ids.data(),
          int64_t(n), 0, 64, stream));
      bytes = scan_bytes;
      CE_CUDA_TRY(cub::DeviceScan::InclusiveSum(temp.data(), bytes, weights, incl.data(),
                                                int64_t(n), stream));
      mark_kernel<<<grid, kThreads, 0, stream>>>(n, sorted_ids.data(), elig, incl.data(),
                                                 plan.budget.limit, crawled.data());
      CE_CUDA_CHECK_LAUNCH();
      if (observer) {
        crawled.download(host_crawled.data(), n, stream);
        CE_CUDA_TRY(cudaStreamSynchronize(stream));
        crawled_ids.clear();
        for (std::size_t i = 0; i < n; ++i)
          if (host_crawled[i]) crawled_ids.push_back(uint32_t(i));
        (*observer)(r, t, crawled_ids);
      }
      fresh_step_kernel<<<unsigned(chunks), kThreads, 0, stream>>>(
          StepArgs{n, crawled.data(), d_complete.data(), coins, coins ? coin_p.data() : nullptr,
                   params.data(), cost.data(), cfg.seed, pop.first, r, epoch, age.data(),
                   changes.data(), want.data(), chunk_sums.data(), saturated.data()});
      CE_CUDA_CHECK_LAUNCH();
      fold_kernel<<<1, 32, 0, stream>>>(chunks, chunk_sums.data(),
                                        t >= cfg.burn_in ? (long long)(t - cfg.burn_in) : -1ll,
                                        totals.data(), cfg.epochs);
      CE_CUDA_CHECK_LAUNCH();
    }
    totals.download(host_totals.data(), host_totals.size(), stream);
    CE_CUDA_TRY(cudaStreamSynchronize(stream));
    // The same accumulation as the CPU engine's, from the same per-epoch totals.
    double sum_fresh = 0.0, sum_pen = 0.0, sum_cost = 0.0;
    for (uint64_t k = 0; k < cfg.epochs; ++k) {
      const double f = host_totals[k], pen = host_totals[cfg.epochs + k];
      sum_fresh += f * plan.norm, sum_pen += pen * plan.norm,
          sum_cost += host_totals[2 * cfg.epochs + k];
      if (rep == 0)
        out.epoch_freshness.push_back(f * plan.norm), out.epoch_penalty.push_back(pen * plan.norm);
    }
    const double h = double(cfg.epochs);
    out.freshness.push_back(sum_fresh / h);
    out.penalty.push_back(sum_pen / h);
    out.cost.push_back(sum_cost / h);
  }
  unsigned long long cut = 0;
  saturated.download(&cut, 1, stream);
  CE_CUDA_TRY(cudaStreamSynchronize(stream));
  out.saturated = cut;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace crawleval::cuda
