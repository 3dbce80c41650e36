// One GPU per MPI rank for the freshness model (include/crawleval/engine/fresh_keyed.hpp): the
// rank's launch per epoch. Each block takes one chunk of kFoldChunk URLs, its tiles of
// kFreshKeyedThreads in id order; a thread runs fresh_keyed_step for its URL (the host twin's
// function) and leaves its freshness, penalty and cost in shared memory, which three threads of
// different warps then add one after the other, in id order. So a chunk's sums are the
// left-to-right sums from 0.0 the CPU engine and the host twin take (a URL that was not crawled
// adds +0.0 to the cost, which changes no sum of positive costs), and they do not depend on the
// rank that holds the chunk. The serial adds cost about 3 x 256 dependent additions per tile,
// spread over three warps while the others wait: a correct GPU per rank first, not a fast one.
// Moved per URL and epoch: the crawled flag (1 B up the bus), the constants (FreshParams 40 B,
// the observation flag, the cost, a rate-based policy's rate or a coin policy's probability),
// the state read and written (age, changes, want: 9 B each way; nutch-adaptive's schedule 16 B),
// the key written and copied down the bus (8 B; a score function's run: the age and the seen
// changes, 8 B, instead).
#include <cmath>
#include <memory>
#include <string>

#include "crawleval/base/error.hpp"
#include "crawleval/engine/cuda_backend.hpp"
#include "crawleval/engine/fresh_keyed.hpp"
#include "cuda_check.cuh"
#include "custom_fresh_device.cuh"
#include "device_buffer.cuh"
#include "launch.cuh"
#include "wide_engine.cuh"

namespace crawleval::cuda {

namespace detail {

namespace {

constexpr uint32_t kFreshKeyedThreads = 256;

static_assert(kFoldChunk % kFreshKeyedThreads == 0, "a chunk holds whole tiles");

struct FreshKeyedLaunch {
  const FreshKeyedColumns* c;  // in device memory (a reference to a kernel parameter is a copy)
  FreshKeyedEpoch e;
  const uint8_t* crawled;
  uint64_t* key;
  uint8_t* due;
  uint32_t* seen_age;
  uint32_t* seen_changes;
  double* sums;  // the chunks' freshness, then their penalties, then their costs
  unsigned long long* saturated;
  uint64_t n, chunks;
};

// The row's step and score out of line: the sampler's and the index's registers stay out of the
// tile loop's. (The epoch by value and the sums through pointers: a reference to the kernel's
// parameter, or a returned struct, would cost a copy in local memory.)
__device__ __noinline__ bool fresh_keyed_row(const FreshKeyedColumns& c, uint64_t j,
                                             FreshKeyedEpoch e, bool crawled, uint64_t* key,
                                             uint8_t* due, uint32_t* seen_age,
                                             uint32_t* seen_changes, double* fresh, double* penalty,
                                             double* cost) {
  const FreshKeyedSums s = fresh_keyed_step<DeviceCustom>(c, std::size_t(j), e, crawled, key, due,
                                                          seen_age, seen_changes);
  *fresh = s.fresh, *penalty = s.penalty, *cost = s.cost;
  return s.saturated;
}

__global__ void __launch_bounds__(kFreshKeyedThreads)
    fresh_keyed_start_kernel(const FreshKeyedColumns* c, uint64_t n, uint32_t replication,
                             unsigned long long* cut) {
  for (uint64_t j = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; j < n;
       j += uint64_t(gridDim.x) * blockDim.x)
    if (fresh_keyed_start(*c, std::size_t(j), replication)) atomicAdd(cut, 1ull);
}

__global__ void __launch_bounds__(kFreshKeyedThreads) fresh_keyed_kernel(const FreshKeyedLaunch a) {
  __shared__ double got[3][kFreshKeyedThreads];
  const uint64_t chunk = blockIdx.x;
  const uint64_t lo = chunk * kFoldChunk;
  const uint64_t hi = lo + kFoldChunk < a.n ? lo + kFoldChunk : a.n;
  // Thread 0 adds the freshness, thread 32 the penalty, thread 64 the cost: one warp each.
  const uint32_t adder = threadIdx.x % 32 == 0 && threadIdx.x < 96 ? threadIdx.x / 32 : 3;
  double sum = 0.0;
  unsigned long long cut = 0;
  for (uint64_t b = lo; b < hi; b += kFreshKeyedThreads) {  // (the same trip count everywhere)
    const uint64_t j = b + threadIdx.x;
    const uint32_t count = uint32_t(hi - b < kFreshKeyedThreads ? hi - b : kFreshKeyedThreads);
    if (j < hi) {
      const bool crawled = a.e.apply && a.crawled[j] != 0;
      cut += fresh_keyed_row(*a.c, j, a.e, crawled, a.key, a.due, a.seen_age, a.seen_changes,
                             &got[0][threadIdx.x], &got[1][threadIdx.x], &got[2][threadIdx.x]);
    }
    __syncthreads();
    if (adder < 3)
      for (uint32_t k = 0; k < count; ++k) sum = __dadd_rn(sum, got[adder][k]);
    __syncthreads();  // (got is the next tile's)
  }
  if (adder < 3 && a.e.apply) a.sums[adder * a.chunks + chunk] = sum;
  if (cut) atomicAdd(a.saturated, cut);
}

class DeviceFreshKeyedPass final : public crawleval::detail::FreshKeyedPass {
 public:
  DeviceFreshKeyedPass(const FreshKeyedColumns& h, std::size_t n)
      : n_(n), chunks_((n + kFoldChunk - 1) / kFoldChunk) {
    require_device_memory(
        n * (sizeof(FreshParams) + 1 + sizeof(double) + (h.rho ? sizeof(double) : 0) +
             (h.coin_p ? sizeof(double) : 0) + (h.period ? sizeof(double) : 0) +
             2 * sizeof(uint32_t) + 1 + (h.nutch ? sizeof(NutchState) + 1 : 0) + 1 +
             sizeof(uint64_t) + (h.function ? 2 * sizeof(uint32_t) : 0)) +
            3 * chunks_ * sizeof(double),
        "a rank's " + std::to_string(n) + " URLs");
    params_.upload(h.params, n, stream_);
    complete_.upload(h.complete, n, stream_);
    cost_.upload(h.cost, n, stream_);
    if (h.rho) rho_.upload(h.rho, n, stream_);
    if (h.coin_p) coin_p_.upload(h.coin_p, n, stream_);
    if (h.period) period_.upload(h.period, n, stream_);
    age_.resize(n), changes_.resize(n), want_.resize(n), crawled_.resize(n), key_.resize(n);
    if (h.nutch) schedule_.resize(n), due_.resize(n);
    if (h.function) seen_age_.resize(n), seen_changes_.resize(n);  // (what the function sees)
    sums_.resize(3 * chunks_);
    saturated_.resize(1);
    c_ = h;
    c_.params = params_.data();
    c_.complete = complete_.data();
    c_.cost = cost_.data();
    c_.rho = h.rho ? rho_.data() : nullptr;
    c_.coin_p = h.coin_p ? coin_p_.data() : nullptr;
    c_.period = h.period ? period_.data() : nullptr;
    c_.age = age_.data(), c_.changes = changes_.data(), c_.want = want_.data();
    c_.schedule = h.nutch ? schedule_.data() : nullptr;
    columns_.upload(&c_, 1, stream_);
    CE_CUDA_TRY(cudaStreamSynchronize(stream_));  // (the host columns may go)
  }

  uint64_t start(uint32_t replication) override {
    if (!n_) return 0;
    saturated_.zero(stream_);
    fresh_keyed_start_kernel<<<grid_for(n_, kFreshKeyedThreads), kFreshKeyedThreads, 0, stream_>>>(
        columns_.data(), n_, replication, saturated_.data());
    CE_CUDA_CHECK_LAUNCH();
    return read_count();
  }
  uint64_t run(const FreshKeyedEpoch& e, const uint8_t* crawled, double* sums, uint64_t* keys,
               uint8_t* due, uint32_t* age, uint32_t* seen) override {
    if (!n_) return 0;
    CE_EXPECTS(!e.observe || c_.function,
               "internal: a freshness pass made without a score function's columns");
    if (e.apply)
      CE_CUDA_TRY(cudaMemcpyAsync(crawled_.data(), crawled, n_, cudaMemcpyHostToDevice, stream_));
    saturated_.zero(stream_);
    const FreshKeyedLaunch a{columns_.data(),
                             e,
                             crawled_.data(),
                             key_.data(),
                             due_.data(),
                             seen_age_.data(),
                             seen_changes_.data(),
                             sums_.data(),
                             saturated_.data(),
                             n_,
                             chunks_};
    fresh_keyed_kernel<<<unsigned(chunks_), kFreshKeyedThreads, 0, stream_>>>(a);
    CE_CUDA_CHECK_LAUNCH();
    if (e.apply) sums_.download(sums, 3 * chunks_, stream_);
    if (e.score) key_.download(keys, n_, stream_);
    if (e.score && c_.nutch) due_.download(due, n_, stream_);
    if (e.observe) seen_age_.download(age, n_, stream_), seen_changes_.download(seen, n_, stream_);
    return read_count();  // (and the copies above are done)
  }

 private:
  uint64_t read_count() {
    unsigned long long count = 0;
    saturated_.download(&count, 1, stream_);
    CE_CUDA_TRY(cudaStreamSynchronize(stream_));
    return count;
  }

  std::size_t n_, chunks_;
  Stream stream_;
  DeviceBuffer<FreshParams> params_;
  DeviceBuffer<uint8_t> complete_, want_, crawled_, due_;
  DeviceBuffer<double> cost_, rho_, coin_p_, period_, sums_;
  DeviceBuffer<uint32_t> age_, changes_, seen_age_, seen_changes_;
  DeviceBuffer<NutchState> schedule_;
  DeviceBuffer<uint64_t> key_;
  DeviceBuffer<unsigned long long> saturated_;
  FreshKeyedColumns c_;  // (pointing at the device's columns)
  DeviceBuffer<FreshKeyedColumns> columns_;
};

}  // namespace

}  // namespace detail

std::unique_ptr<crawleval::detail::FreshKeyedPass> fresh_keyed_pass(const FreshKeyedColumns& c,
                                                                    std::size_t n) {
  if (const std::string why = fresh_policy_refusal(c.policy); !why.empty()) throw InputError(why);
  if (device_count() == 0) throw InputError(unavailable_message());
  return std::make_unique<detail::DeviceFreshKeyedPass>(c, n);
}

}  // namespace crawleval::cuda
