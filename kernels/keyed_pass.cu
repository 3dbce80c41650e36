// One GPU per MPI rank (include/crawleval/engine/keyed_rollout.hpp): the rank's launch per epoch.
// Each block takes one chunk of kKeyedChunk sources, its tiles of kKeyedThreads in id order; a
// thread runs generic_keyed_step for its source (the host twin's function), and the tile's crawled
// sources are listed in id order by a block scan, their rewards and costs added by thread 0 one
// after the other. So a chunk's sums are the left-to-right sums of its crawled sources from 0.0,
// as the host twin and the CPU wide engine add them (zeros added by those change nothing), and
// they do not depend on the rank that holds the chunk.
// Moved per source and epoch: the state, word and key read and written (40 B), the constants
// and the initial state read (88 B, more with periods, gains and costs), the key copied to the
// host (8 B over the bus).
#include <cub/block/block_scan.cuh>

#include <memory>
#include <string>

#include "crawleval/engine/cuda_backend.hpp"
#include "crawleval/engine/keyed_rollout.hpp"
#include "cuda_check.cuh"
#include "device_buffer.cuh"
#include "wide_engine.cuh"

namespace crawleval::cuda {

namespace detail {

namespace {

constexpr uint32_t kKeyedThreads = 256;
static_assert(kKeyedChunk % kKeyedThreads == 0, "a chunk holds whole tiles");

struct KeyedLaunch {
  const GenericPass* g;  // in device memory (a reference to a kernel parameter would be a copy)
  KeyedEpoch e;
  double* x;
  uint32_t* w;
  uint64_t* key;
  double* seen;  // what a score function observes (KeyedEpoch::observe)
  double* age;
  const double* cost;  // nullptr: unit costs
  double* sums;        // the chunks' rewards, then their costs
  uint64_t n, chunks;
};

// The transition and the score out of line, as the generic pass calls them: the general model's
// branches stay out of the tile loop's registers.
__device__ __noinline__ GenericState keyed_next_dev(const GenericPass& g, uint64_t i, bool crawled,
                                                    uint32_t replication, uint32_t epoch, double x,
                                                    uint32_t w) {
  return generic_next(g, i, crawled, replication, epoch, x, w);
}
__device__ __noinline__ double keyed_score_dev(const GenericPass& g, uint64_t i,
                                               uint32_t replication, uint32_t epoch,
                                               uint64_t pointer, double x, uint32_t w) {
  return generic_score(g, i, replication, epoch, pointer, x, w);
}
__device__ __noinline__ double keyed_seen_dev(const GenericPass& g, uint64_t i, uint32_t epoch,
                                              double x, uint32_t w) {
  return generic_seen(g, i, epoch, x, w);
}
struct OutOfLine {
  __device__ static double seen(const GenericPass& g, uint64_t i, uint32_t epoch, double x,
                                uint32_t w) {
    return keyed_seen_dev(g, i, epoch, x, w);
  }
  __device__ static GenericState next(const GenericPass& g, uint64_t i, bool crawled,
                                      uint32_t replication, uint32_t epoch, double x, uint32_t w) {
    return keyed_next_dev(g, i, crawled, replication, epoch, x, w);
  }
  __device__ static double score(const GenericPass& g, uint64_t i, uint32_t replication,
                                 uint32_t epoch, uint64_t pointer, double x, uint32_t w) {
    return keyed_score_dev(g, i, replication, epoch, pointer, x, w);
  }
};

__global__ void __launch_bounds__(kKeyedThreads) keyed_kernel(const KeyedLaunch a) {
  using Scan = cub::BlockScan<uint32_t, kKeyedThreads>;
  __shared__ typename Scan::TempStorage scan;
  __shared__ double got_x[kKeyedThreads], got_c[kKeyedThreads];
  const uint64_t c = blockIdx.x;
  const uint64_t lo = c * kKeyedChunk;
  const uint64_t hi = lo + kKeyedChunk < a.n ? lo + kKeyedChunk : a.n;
  double reward = 0.0, spent = 0.0;                    // thread 0's
  for (uint64_t b = lo; b < hi; b += kKeyedThreads) {  // (the same trip count in every thread)
    const uint64_t i = b + threadIdx.x;
    bool crawled = false;
    double r = 0.0;
    if (i < hi)
      r = generic_keyed_step<OutOfLine>(*a.g, i, a.e, a.x, a.w, a.key, a.seen, a.age, &crawled);
    uint32_t at, count;
    Scan(scan).ExclusiveSum(crawled ? 1u : 0u, at, count);
    if (crawled) got_x[at] = r, got_c[at] = a.cost ? a.cost[i] : 1.0;
    __syncthreads();
    if (threadIdx.x == 0)
      for (uint32_t k = 0; k < count; ++k)
        reward = __dadd_rn(reward, got_x[k]), spent = __dadd_rn(spent, got_c[k]);
    __syncthreads();  // (got_x, got_c and the scan's storage are the next tile's)
  }
  if (threadIdx.x == 0 && a.e.apply) a.sums[c] = reward, a.sums[a.chunks + c] = spent;
}

class DeviceKeyedPass final : public crawleval::detail::KeyedPass {
 public:
  DeviceKeyedPass(const crawleval::detail::KeyedColumns& k, std::size_t n)
      : n_(n), chunks_((n + kKeyedChunk - 1) / kKeyedChunk) {
    const GenericPass& h = k.pass;
    require_device_memory(
        n * (sizeof(SourceParams) + 2 * (sizeof(double) + sizeof(uint32_t)) + sizeof(uint64_t) +
             (h.period ? sizeof(uint32_t) : 0) + (h.gain ? sizeof(double) : 0) +
             (k.cost.empty() ? 0 : sizeof(double)) + (k.observed.empty() ? 0 : 1) +
             (k.function ? 2 * sizeof(double) : 0)) +
            2 * chunks_ * sizeof(double),
        "a shard of " + std::to_string(n) + " sources");
    params_.upload(k.params, stream_);
    x0_.upload(k.x0, stream_);
    w0_.upload(k.w0, stream_);
    if (h.period) period_.upload(h.period, n, stream_);
    if (h.gain) gain_.upload(h.gain, n, stream_);
    if (!k.cost.empty()) cost_.upload(k.cost, stream_);
    if (!k.observed.empty()) observed_.upload(k.observed, stream_);
    x_.resize(n), w_.resize(n), key_.resize(n), sums_.resize(2 * chunks_);
    if (k.function) seen_.resize(n), age_.resize(n);
    g_ = h;
    g_.params = params_.data();
    g_.x0 = x0_.data();
    g_.period = h.period ? period_.data() : nullptr;
    g_.gain = h.gain ? gain_.data() : nullptr;
    g_.observed = k.observed.empty() ? nullptr : observed_.data();
    pass_.upload(&g_, 1, stream_);
    CE_CUDA_TRY(cudaStreamSynchronize(stream_));  // (the host columns may go)
  }

  void start() override {
    if (!n_) return;
    CE_CUDA_TRY(cudaMemcpyAsync(x_.data(), x0_.data(), n_ * sizeof(double),
                                cudaMemcpyDeviceToDevice, stream_));
    CE_CUDA_TRY(cudaMemcpyAsync(w_.data(), w0_.data(), n_ * sizeof(uint32_t),
                                cudaMemcpyDeviceToDevice, stream_));
    key_.zero(stream_);
  }
  void run(const KeyedEpoch& e, double* sums, uint64_t* keys, double* seen, double* age) override {
    if (!n_) return;
    CE_EXPECTS(!e.observe || seen_.size() == n_,
               "internal: a keyed pass without a score function's columns");
    const KeyedLaunch a{pass_.data(), e,           x_.data(),    w_.data(),    key_.data(),
                        seen_.data(), age_.data(), cost_.data(), sums_.data(), n_,
                        chunks_};
    keyed_kernel<<<unsigned(chunks_), kKeyedThreads, 0, stream_>>>(a);
    CE_CUDA_CHECK_LAUNCH();
    if (e.apply) sums_.download(sums, 2 * chunks_, stream_);
    if (e.score) key_.download(keys, n_, stream_);
    if (e.observe) seen_.download(seen, n_, stream_), age_.download(age, n_, stream_);
    CE_CUDA_TRY(cudaStreamSynchronize(stream_));
  }
  void set_keys(const uint64_t* keys) override {
    if (!n_) return;
    CE_CUDA_TRY(
        cudaMemcpyAsync(key_.data(), keys, n_ * sizeof(uint64_t), cudaMemcpyHostToDevice, stream_));
    CE_CUDA_TRY(cudaStreamSynchronize(stream_));  // (the host's keys may change)
  }
  void states(double* x) override {
    x_.download(x, n_, stream_);
    CE_CUDA_TRY(cudaStreamSynchronize(stream_));
  }

 private:
  std::size_t n_, chunks_;
  Stream stream_;
  DeviceBuffer<SourceParams> params_;
  DeviceBuffer<double> x0_, gain_, cost_, x_, sums_, seen_, age_;
  DeviceBuffer<uint8_t> observed_;
  DeviceBuffer<uint32_t> w0_, period_, w_;
  DeviceBuffer<uint64_t> key_;
  GenericPass g_;  // (pointing at the device's columns)
  DeviceBuffer<GenericPass> pass_;
};

}  // namespace

}  // namespace detail

std::unique_ptr<crawleval::detail::KeyedPass> keyed_pass(const crawleval::detail::KeyedColumns& k,
                                                         std::size_t n) {
  if (device_count() == 0) throw InputError(unavailable_message());
  return std::make_unique<detail::DeviceKeyedPass>(k, n);
}

int visible_device_count() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

int use_device(int local_rank) {
  const int count = visible_device_count();
  if (count == 0) throw InputError(unavailable_message());
  const int dev = local_rank % count;
  CE_CUDA_TRY(cudaSetDevice(dev));  // (first: device_count()'s probe opens a context)
  if (device_count() == 0) throw InputError(unavailable_message());
  return dev;
}

}  // namespace crawleval::cuda
