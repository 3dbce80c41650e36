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
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "crawleval/base/error.hpp"
#include "crawleval/engine/cuda_backend.hpp"
#include "crawleval/engine/fresh_engine.hpp"
#include "crawleval/model/nutch.hpp"
#include "crawleval/model/problem.hpp"
#include "custom_fresh_device.cuh"
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

/// nutch-adaptive's schedules at a run's start (nutch.hpp: interval `start`, first due drawn).
__global__ void __launch_bounds__(kThreads)
    nutch_init_kernel(std::size_t n, double start, uint64_t seed, uint64_t first,
                      uint32_t replication, NutchState* schedule) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    schedule[i] = nutch_start_state(start, seed, replication, first + i);
}

/// Step 1 for nutch-adaptive: the due URLs' keys (importance per unit of cost; -inf for the
/// others) and which are due (the others take no part in the selection: ineligible).
__global__ void __launch_bounds__(kThreads)
    nutch_score_kernel(std::size_t n, const NutchState* schedule, const FreshParams* params,
                       uint32_t epoch, uint64_t* key, uint8_t* due) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const NutchState s = schedule[i];
    key[i] = score_key(nutch_score(s, epoch, params[i]));
    due[i] = nutch_due(s, epoch);
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
    a.key[i] = score_key(a.policy == FreshPolicy::custom
                             ? detail::DeviceCustom::score(v, a.params[i], a.epoch_length)
                             : fresh_score(a.policy, a.objective, v, a.params[i], a.epoch_length,
                                           a.seed, a.replication, a.first + i, a.epoch));
  }
}

/// The crowded hosts' members: their keys and ids, host by host (plan.crowded's order); every
/// source eligible, or (nutch-adaptive) every due one.
__global__ void __launch_bounds__(kThreads)
    gather_crowded_kernel(std::size_t m, const uint32_t* members, const uint64_t* key,
                          uint64_t* seg_key, uint32_t* seg_id, const uint8_t* due,
                          uint8_t* eligible, std::size_t n) {
  for (std::size_t j = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; j < m;
       j += std::size_t(gridDim.x) * blockDim.x) {
    seg_key[j] = key[members[j]];
    seg_id[j] = members[j];
  }
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    eligible[i] = due ? due[i] : 1;
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
  NutchState* schedule;  ///< nutch-adaptive's (null otherwise): a crawl updates it
  double nutch_max;
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
    // (What the crawl found, before the step: the CPU engine's order.)
    if (crawled && a.schedule)
      nutch_crawled(a.changes[i] > 0, a.epoch, a.nutch_max, &a.schedule[i]);
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

/// What a score function sees of the run: the ages and the changes of the completely observed
/// sources (0 elsewhere), copied (it may write them; the engine never reads them back).
__global__ void __launch_bounds__(kThreads)
    user_view_kernel(std::size_t n, const uint32_t* age, const uint32_t* changes,
                     const uint8_t* complete, uint32_t* seen_age, uint32_t* seen_changes) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    seen_age[i] = age[i];
    seen_changes[i] = complete[i] ? changes[i] : 0u;
  }
}

/// Step 1 for a score function: its scores' keys (the CPU engine's user_rows).
__global__ void __launch_bounds__(kThreads)
    user_key_kernel(std::size_t n, const double* scores, uint64_t* key) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    key[i] = score_key(scores[i]);
}

/// The device buffers of a freshness run and its epochs' launches (the header's steps 1-6).
class FreshDeviceRun {
 public:
  FreshDeviceRun(const FreshPopulation& pop, const FreshConfig& cfg, FreshPolicy policy,
                 const FreshPlan& plan, const DeviceFreshScoreFn* user);
  /// Replication `rep` (its draws' index cfg.first_replication + rep): every epoch enqueued, its
  /// totals accumulated into out as the CPU engine accumulates them.
  void replicate(uint32_t rep, const FreshObserver* observer, FreshRolloutOutput& out);
  /// The source-epochs at the simulator's limits, over every replication so far.
  uint64_t saturated();

 private:
  void size_temporaries();
  void upload();
  void select(uint32_t r, uint32_t epoch);
  /// Step 1 by a score function: its call between two waits, its scores' keys.
  void user_keys(uint32_t r, uint32_t epoch);
  void observe(uint32_t r, uint64_t t, const FreshObserver& observer);
  void step(uint32_t r, uint64_t t);

  const FreshPopulation& pop_;
  const FreshConfig& cfg_;
  const FreshPolicy policy_;
  const FreshPlan& plan_;
  const DeviceFreshScoreFn* const user_;
  const std::size_t n_, m_;  // sources; members of crowded hosts
  const bool caps_, rates_, coins_, nutch_;
  const std::size_t chunks_;
  const int grid_;
  int segments_ = 0;
  std::size_t sort_bytes_ = 0, scan_bytes_ = 0, seg_bytes_ = 0, temp_bytes_ = 0;
  detail::Stream stream_;
  DeviceBuffer<FreshParams> params_;
  DeviceBuffer<uint8_t> complete_;
  DeviceBuffer<uint64_t> weight_;
  DeviceBuffer<double> cost_, rho_, coin_p_, period_;
  DeviceBuffer<uint32_t> age_, changes_, ids_, sorted_ids_;
  DeviceBuffer<uint8_t> want_, crawled_, eligible_, due_;
  DeviceBuffer<NutchState> schedule_;  // nutch-adaptive's
  DeviceBuffer<uint64_t> key_, masked_, sorted_keys_;
  DeviceBuffer<unsigned long long> incl_;
  DeviceBuffer<double> chunk_sums_, totals_;
  DeviceBuffer<unsigned long long> saturated_;
  // Caps: the crowded members, their hosts' offsets and each position's rank within its host.
  DeviceBuffer<uint32_t> members_, seg_id_, seg_sorted_id_;
  DeviceBuffer<uint64_t> seg_key_, seg_sorted_key_;
  DeviceBuffer<int> offsets_, position_;
  DeviceBuffer<unsigned char> temp_;
  DeviceBuffer<uint32_t> user_age_, user_changes_;  // a score function's copies
  DeviceBuffer<double> user_scores_;
  std::vector<uint8_t> host_crawled_;
  std::vector<uint32_t> crawled_ids_;
  std::vector<double> host_totals_;
};

FreshDeviceRun::FreshDeviceRun(const FreshPopulation& pop, const FreshConfig& cfg,
                               FreshPolicy policy, const FreshPlan& plan,
                               const DeviceFreshScoreFn* user)
    : pop_(pop),
      cfg_(cfg),
      policy_(policy),
      plan_(plan),
      user_(user),
      n_(pop.size()),
      m_(plan.hosts.members.size()),
      caps_(cfg.host_cap > 0 && m_ > 0),
      rates_(!plan.rates.rho.empty()),
      coins_(coin_policy(policy)),
      nutch_(policy == FreshPolicy::nutch_adaptive && !user),
      chunks_((n_ + kFoldChunk - 1) / kFoldChunk),
      grid_(grid_for(n_, kThreads)) {
  if (m_ > std::size_t(std::numeric_limits<int>::max()))
    throw InputError("--host-cap: more than 2^31 sources on crowded hosts");
  size_temporaries();
  detail::require_device_memory(
      n_ * (sizeof(FreshParams) + 1 + 8 + 8 + (rates_ ? 8 : 0) + (coins_ ? 8 : 0) + 4 + 4 + 1 + 8 +
            2 * 8 + 2 * 4 + 1 + 1 + 8 + (cfg.start == FreshStart::steady ? 8 : 0) +
            (user ? 4 + 4 + 8 : 0) + (policy == FreshPolicy::nutch_adaptive ? 16 + 1 : 0)) +
          m_ * (4 + 4 + 2 * 8 + 2 * 4) + 3 * cfg.epochs * 8 + temp_bytes_ + (64u << 20),
      "the freshness model on " + std::to_string(n_) + " sources");
  upload();
  host_totals_.resize(3 * cfg.epochs);
}

// Temporary storage for the sorts and the scan, sized once (null queries need only the sizes).
void FreshDeviceRun::size_temporaries() {
  CE_CUDA_TRY(cub::DeviceRadixSort::SortPairsDescending(
      nullptr, sort_bytes_, static_cast<const uint64_t*>(nullptr), static_cast<uint64_t*>(nullptr),
      static_cast<const uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr), int64_t(n_), 0, 64));
  CE_CUDA_TRY(cub::DeviceScan::InclusiveSum(
      nullptr, scan_bytes_,
      thrust::make_transform_iterator(static_cast<uint32_t*>(nullptr), EligibleWeight{}),
      static_cast<unsigned long long*>(nullptr), int64_t(n_)));
  if (caps_)
    CE_CUDA_TRY(cub::DeviceSegmentedRadixSort::SortPairsDescending(
        nullptr, seg_bytes_, static_cast<const uint64_t*>(nullptr), static_cast<uint64_t*>(nullptr),
        static_cast<const uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr), int(m_),
        int(plan_.hosts.start.size() - 1), static_cast<const int*>(nullptr),
        static_cast<const int*>(nullptr) + 1, 0, 64));
  temp_bytes_ = std::max({sort_bytes_, scan_bytes_, seg_bytes_, std::size_t(1)});
}

void FreshDeviceRun::upload() {
  params_.upload(plan_.params, stream_);
  const std::vector<uint8_t> complete(pop_.complete.begin(), pop_.complete.end());
  complete_.upload(complete, stream_);
  if (!plan_.unit_costs) weight_.upload(plan_.weight, stream_);
  cost_.upload(pop_.cost, stream_);
  if (rates_) rho_.upload(plan_.rates.rho, stream_);
  if (coins_) coin_p_.upload(plan_.rates.p, stream_);
  if (cfg_.start == FreshStart::steady) period_.upload(plan_.steady_period, stream_);
  age_.resize(n_), changes_.resize(n_), ids_.resize(n_), sorted_ids_.resize(n_);
  want_.resize(n_), crawled_.resize(n_);
  key_.resize(n_), masked_.resize(n_), sorted_keys_.resize(n_);
  incl_.resize(n_);
  chunk_sums_.resize(3 * chunks_), totals_.resize(3 * cfg_.epochs);
  saturated_.resize(1);
  saturated_.zero(stream_);
  if (caps_) {
    eligible_.resize(n_);
    members_.upload(plan_.hosts.members, stream_);
    const std::vector<std::size_t>& start = plan_.hosts.start;
    std::vector<int> off(start.begin(), start.end());
    std::vector<int> pos(m_);
    for (std::size_t h = 0; h + 1 < start.size(); ++h)
      for (std::size_t j = start[h]; j < start[h + 1]; ++j) pos[j] = int(j - start[h]);
    offsets_.upload(off, stream_);
    position_.upload(pos, stream_);
    seg_id_.resize(m_), seg_sorted_id_.resize(m_), seg_key_.resize(m_), seg_sorted_key_.resize(m_);
    segments_ = int(start.size() - 1);
  }
  temp_.resize(temp_bytes_);
  if (user_) user_age_.resize(n_), user_changes_.resize(n_), user_scores_.resize(n_);
  if (nutch_) schedule_.resize(n_), due_.resize(n_);
  // (The host vectors uploaded above are pageable, which cudaMemcpyAsync reads before it returns;
  // waiting here also leaves the uploads done before the first epoch's kernels.)
  CE_CUDA_TRY(cudaStreamSynchronize(stream_));
}

// Steps 1-4: epoch `epoch`'s crawled flags.
void FreshDeviceRun::user_keys(uint32_t r, uint32_t epoch) {
  user_view_kernel<<<grid_, kThreads, 0, stream_>>>(
      n_, age_.data(), changes_.data(), complete_.data(), user_age_.data(), user_changes_.data());
  CE_CUDA_CHECK_LAUNCH();
  CE_CUDA_TRY(cudaStreamSynchronize(stream_));
  int device = 0;
  CE_CUDA_TRY(cudaGetDevice(&device));
  const double* borrowed = nullptr;
  (*user_)(DeviceFreshScoreRequest{r, epoch, n_, user_age_.data(), user_changes_.data(),
                                   user_scores_.data(), &borrowed, device});
  CE_CUDA_TRY(cudaDeviceSynchronize());  // the function may have run on any stream
  user_key_kernel<<<grid_, kThreads, 0, stream_>>>(n_, borrowed ? borrowed : user_scores_.data(),
                                                   key_.data());
  CE_CUDA_CHECK_LAUNCH();
}

void FreshDeviceRun::select(uint32_t r, uint32_t epoch) {
  if (user_) {
    user_keys(r, epoch);
  } else if (nutch_) {
    nutch_score_kernel<<<grid_, kThreads, 0, stream_>>>(n_, schedule_.data(), params_.data(), epoch,
                                                        key_.data(), due_.data());
    CE_CUDA_CHECK_LAUNCH();
  } else {
    fresh_score_kernel<<<grid_, kThreads, 0, stream_>>>(
        ScoreArgs{policy_, cfg_.objective, n_, params_.data(), complete_.data(), age_.data(),
                  changes_.data(), want_.data(), rates_ ? rho_.data() : nullptr, cfg_.epoch_length,
                  cfg_.seed, pop_.first, r, epoch, key_.data()});
    CE_CUDA_CHECK_LAUNCH();
  }
  if (caps_) {
    gather_crowded_kernel<<<grid_for(std::max(n_, m_), kThreads), kThreads, 0, stream_>>>(
        m_, members_.data(), key_.data(), seg_key_.data(), seg_id_.data(),
        nutch_ ? due_.data() : nullptr, eligible_.data(), n_);
    CE_CUDA_CHECK_LAUNCH();
    std::size_t bytes = seg_bytes_;
    CE_CUDA_TRY(cub::DeviceSegmentedRadixSort::SortPairsDescending(
        temp_.data(), bytes, seg_key_.data(), seg_sorted_key_.data(), seg_id_.data(),
        seg_sorted_id_.data(), int(m_), segments_, offsets_.data(), offsets_.data() + 1, 0, 64,
        stream_));
    cap_kernel<<<grid_for(m_, kThreads), kThreads, 0, stream_>>>(
        m_, seg_sorted_id_.data(), position_.data(), cfg_.host_cap, eligible_.data());
    CE_CUDA_CHECK_LAUNCH();
  }
  // Eligible: the caps' survivors (of the due URLs, nutch-adaptive), or the due URLs, or all.
  const uint8_t* elig = caps_ ? eligible_.data() : nutch_ ? due_.data() : nullptr;
  mask_kernel<<<grid_, kThreads, 0, stream_>>>(n_, key_.data(), elig, masked_.data(), ids_.data());
  CE_CUDA_CHECK_LAUNCH();
  std::size_t bytes = sort_bytes_;
  CE_CUDA_TRY(cub::DeviceRadixSort::SortPairsDescending(
      temp_.data(), bytes, masked_.data(), sorted_keys_.data(), ids_.data(), sorted_ids_.data(),
      int64_t(n_), 0, 64, stream_));
  const auto weights = thrust::make_transform_iterator(
      sorted_ids_.data(), EligibleWeight{elig, plan_.unit_costs ? nullptr : weight_.data()});
  bytes = scan_bytes_;
  CE_CUDA_TRY(cub::DeviceScan::InclusiveSum(temp_.data(), bytes, weights, incl_.data(), int64_t(n_),
                                            stream_));
  mark_kernel<<<grid_, kThreads, 0, stream_>>>(n_, sorted_ids_.data(), elig, incl_.data(),
                                               plan_.budget.limit, crawled_.data());
  CE_CUDA_CHECK_LAUNCH();
}

// The crawled ids to the observer (a wait for the device every epoch).
void FreshDeviceRun::observe(uint32_t r, uint64_t t, const FreshObserver& observer) {
  host_crawled_.resize(n_);
  crawled_.download(host_crawled_.data(), n_, stream_);
  CE_CUDA_TRY(cudaStreamSynchronize(stream_));
  crawled_ids_.clear();
  for (std::size_t i = 0; i < n_; ++i)
    if (host_crawled_[i]) crawled_ids_.push_back(uint32_t(i));
  observer(r, t, crawled_ids_);
}

// Steps 5-6: every source's sampled epoch, its sums per chunk, folded into the epoch's totals
// (a measured epoch's).
void FreshDeviceRun::step(uint32_t r, uint64_t t) {
  fresh_step_kernel<<<unsigned(chunks_), kThreads, 0, stream_>>>(
      StepArgs{n_, crawled_.data(), complete_.data(), coins_, coins_ ? coin_p_.data() : nullptr,
               params_.data(), cost_.data(), cfg_.seed, pop_.first, r, uint32_t(t), age_.data(),
               changes_.data(), want_.data(), nutch_ ? schedule_.data() : nullptr, cfg_.nutch_max,
               chunk_sums_.data(), saturated_.data()});
  CE_CUDA_CHECK_LAUNCH();
  fold_kernel<<<1, 32, 0, stream_>>>(chunks_, chunk_sums_.data(),
                                     t >= cfg_.burn_in ? (long long)(t - cfg_.burn_in) : -1ll,
                                     totals_.data(), cfg_.epochs);
  CE_CUDA_CHECK_LAUNCH();
}

void FreshDeviceRun::replicate(uint32_t rep, const FreshObserver* observer,
                               FreshRolloutOutput& out) {
  const uint32_t r = cfg_.first_replication + rep;  // (the draws' replication index)
  fresh_init_kernel<<<grid_, kThreads, 0, stream_>>>(
      n_, cfg_.start == FreshStart::steady, period_.data(), params_.data(), complete_.data(),
      cfg_.seed, pop_.first, r, age_.data(), changes_.data(), want_.data(), saturated_.data());
  CE_CUDA_CHECK_LAUNCH();
  if (nutch_) {
    nutch_init_kernel<<<grid_, kThreads, 0, stream_>>>(n_, cfg_.nutch_start, cfg_.seed, pop_.first,
                                                       r, schedule_.data());
    CE_CUDA_CHECK_LAUNCH();
  }
  const uint64_t total_epochs = cfg_.burn_in + cfg_.epochs;
  for (uint64_t t = 0; t < total_epochs; ++t) {
    select(r, uint32_t(t));
    if (observer) observe(r, t, *observer);
    step(r, t);
  }
  totals_.download(host_totals_.data(), host_totals_.size(), stream_);
  CE_CUDA_TRY(cudaStreamSynchronize(stream_));
  // The same accumulation as the CPU engine's, from the same per-epoch totals.
  double sum_fresh = 0.0, sum_pen = 0.0, sum_cost = 0.0;
  const uint64_t h = cfg_.epochs;
  for (uint64_t k = 0; k < h; ++k) {
    const double f = host_totals_[k], pen = host_totals_[h + k];
    sum_fresh += f * plan_.norm, sum_pen += pen * plan_.norm, sum_cost += host_totals_[2 * h + k];
    if (rep == 0)
      out.epoch_freshness.push_back(f * plan_.norm), out.epoch_penalty.push_back(pen * plan_.norm);
  }
  out.freshness.push_back(sum_fresh / double(h));
  out.penalty.push_back(sum_pen / double(h));
  out.cost.push_back(sum_cost / double(h));
}

uint64_t FreshDeviceRun::saturated() {
  unsigned long long cut = 0;
  saturated_.download(&cut, 1, stream_);
  CE_CUDA_TRY(cudaStreamSynchronize(stream_));
  return cut;
}

}  // namespace

bool fresh_supports(const FreshConfig& cfg) { return !cfg.learn; }

bool custom_fresh_policy_on_gpu() {
#if defined(CRAWLEVAL_FRESH_POLICY_HEADER)
  return true;
#else
  return false;
#endif
}

DeviceFreshScoreFn fresh_from_host(FreshScoreFn score) {
  struct Host {
    std::vector<uint32_t> age, changes;
    std::vector<double> scores;
  };
  auto host = std::make_shared<Host>();
  return [score = std::move(score), host](const DeviceFreshScoreRequest& q) {
    Host& h = *host;
    h.age.resize(q.n), h.changes.resize(q.n), h.scores.resize(q.n);
    CE_CUDA_TRY(cudaMemcpy(h.age.data(), q.age, q.n * sizeof(uint32_t), cudaMemcpyDeviceToHost));
    CE_CUDA_TRY(
        cudaMemcpy(h.changes.data(), q.changes, q.n * sizeof(uint32_t), cudaMemcpyDeviceToHost));
    const double* borrowed = nullptr;
    score(FreshScoreRequest{q.replication, q.epoch, q.n, h.age.data(), h.changes.data(),
                            h.scores.data(), &borrowed});
    CE_CUDA_TRY(cudaMemcpy(q.scores, borrowed ? borrowed : h.scores.data(), q.n * sizeof(double),
                           cudaMemcpyHostToDevice));
  };
}

FreshRolloutOutput fresh_epochs(const FreshPopulation& pop, const FreshConfig& cfg,
                                FreshPolicy policy, const FreshPlan& plan,
                                const FreshObserver* observer, const DeviceFreshScoreFn* user) {
  if (cfg.learn)
    throw InputError(
        "--learn: the learning variant runs on the CPU only (use --backend cpu or auto)");
  if (device_count() == 0) throw InputError("--backend cuda: " + device_unavailable_reason());
  const auto t0 = std::chrono::steady_clock::now();
  FreshDeviceRun run(pop, cfg, policy, plan, user);
  FreshRolloutOutput out;
  out.threads = 1;
  for (uint32_t rep = 0; rep < cfg.replications; ++rep) run.replicate(rep, observer, out);
  out.saturated = run.saturated();
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace crawleval::cuda
