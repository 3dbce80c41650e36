// Exact budgeted top-M selection on the GPU: a radix select on CUB.
//
// Input: the order-preserving 64-bit keys of the scores (selection.hpp), ids 0..n-1, fixed-point
// cost weights (or unit costs) and a fixed-point limit. Output: the Selection (first source not
// crawled), identical to the sort-based reference's prefix.
//
//  1. Coarse histogram. Every source adds its count and weight to bin coarse_bin(key) (11 bits:
//     four bins per octave of the score). Per-block histograms in shared memory, flushed with
//     integer atomics (exact, so the result does not depend on the order of the atomics). In a
//     rollout this step is fused into the epoch kernel (epoch_kernels.cu).
//  2. Boundary. One block scans the bins from the highest (cub::BlockScan): every bin whose
//     cumulative weight fits the limit is selected whole; the first bin that overflows is the
//     boundary and holds the stop source. No overflow: everything is selected, done.
//  3. Compaction. cub::DeviceSelect::If keeps the ids whose key lies in the boundary bin's key
//     range [first_key_of_bin(b), first_key_of_bin(b+1) - 1]. DeviceSelect is stable, so the
//     candidates stay in ascending id order.
//  4. Refinement. While more than kResolveMax candidates remain, histogram one 11-bit digit of
//     their 64-bit keys (from the top, levels 0..5), find the boundary digit as in step 2 (carrying
//     the weight above), and compact again (step 3 with a digit predicate).
//  5. Resolution of ties at the threshold. At most kResolveMax candidates: one block sorts them by
//     key, descending, with cub::BlockRadixSort (stable: equal keys keep ascending ids), scans
//     their weights and stops at the first candidate whose cumulative weight exceeds the limit.
//     Still more after six levels means every candidate has the same key: they are already in the
//     final order (ascending id), and a DeviceScan of their weights finds the stop.
// The host reads back two small values per epoch (the candidate count after steps 2 and 4).
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>

#include <algorithm>
#include <climits>

#include "launch.cuh"
#include "radix_select.cuh"

namespace crawleval::cuda::detail {

namespace {

constexpr int kHistThreads = 256;
constexpr int kScanThreads = 1024;  // 2 bins per thread

// ---- step 1 and the histogram of step 4 -------------------------------------------------------

/// Digit of source i: coarse_bin of its key (level < 0) or key_digit(level).
__device__ __forceinline__ uint32_t bin_of(uint64_t key, int level) {
  return level < 0 ? coarse_bin(key) : key_digit(key, level);
}

/// ids == nullptr: sources 0..n-1; else the listed candidates.
__global__ void histogram_kernel(const uint64_t* __restrict__ keys,
                                 const unsigned long long* __restrict__ weight,
                                 const uint32_t* __restrict__ ids, std::size_t n, int level,
                                 SelectState* state) {
  __shared__ unsigned int s_count[kBins];
  __shared__ unsigned long long s_weight[kBins];
  for (int b = threadIdx.x; b < kBins; b += blockDim.x) s_count[b] = 0, s_weight[b] = 0;
  __syncthreads();
  for (std::size_t j = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; j < n;
       j += std::size_t(gridDim.x) * blockDim.x) {
    const uint32_t i = ids ? ids[j] : uint32_t(j);
    const uint32_t b = bin_of(keys[i], level);
    atomicAdd(&s_count[b], 1u);
    if (weight) atomicAdd(&s_weight[b], weight[i]);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < kBins; b += blockDim.x) {
    if (s_count[b]) atomicAdd(&state->count[b], (unsigned long long)s_count[b]);
    if (weight && s_weight[b]) atomicAdd(&state->weight[b], s_weight[b]);
  }
}

// ---- step 2 (and the boundary of step 4) -------------------------------------------------------

/// coarse: the first pass (above starts at 0, "all fit" possible). The coarse bin's key range is
/// computed on the host from the boundary (first_key_of_bin's bisection would cost registers).
__global__ void __launch_bounds__(kScanThreads)
    boundary_kernel(SelectState* state, bool unit, unsigned long long limit, bool coarse) {
  using Scan = cub::BlockScan<unsigned long long, kScanThreads>;
  __shared__ typename Scan::TempStorage scan_storage;
  __shared__ int first;
  if (threadIdx.x == 0) first = INT_MAX;
  const unsigned long long above0 = coarse ? 0ull : state->info.above;
  // Thread t holds positions 2t, 2t+1 of the bins in descending order.
  unsigned long long w[2];
  for (int k = 0; k < 2; ++k) {
    const int b = kBins - 1 - (2 * int(threadIdx.x) + k);
    w[k] = unit ? state->count[b] : state->weight[b];
  }
  unsigned long long incl[2];
  Scan(scan_storage).InclusiveSum(w, incl);
  __syncthreads();
  for (int k = 0; k < 2; ++k)
    if (above0 + incl[k] > limit) atomicMin(&first, 2 * int(threadIdx.x) + k);
  __syncthreads();
  for (int k = 0; k < 2; ++k) {
    const int p = 2 * int(threadIdx.x) + k;
    if (p != first) continue;
    const int b = kBins - 1 - p;
    state->info.boundary = b;
    state->info.above = above0 + incl[k] - w[k];
    state->info.candidates = state->count[b];
  }
  if (threadIdx.x == 0 && first == INT_MAX) {
    state->info.boundary = -1;
    state->info.candidates = 0;
    if (coarse) state->selection = Selection{};  // everything fits
  }
}

// ---- step 3 predicates -------------------------------------------------------------------------

struct InKeyRange {
  const uint64_t* keys;
  uint64_t lo, hi;
  __device__ __forceinline__ bool operator()(uint32_t i) const {
    const uint64_t k = keys[i];
    return k >= lo && k <= hi;
  }
};

struct DigitIs {
  const uint64_t* keys;
  int level;
  uint32_t digit;
  __device__ __forceinline__ bool operator()(uint32_t i) const {
    return key_digit(keys[i], level) == digit;
  }
};

struct WeightOf {
  const unsigned long long* weight;
  __host__ __device__ __forceinline__ unsigned long long operator()(uint32_t i) const {
    return weight ? weight[i] : 1ull;
  }
};

// ---- step 5 ------------------------------------------------------------------------------------

__global__ void resolve_small_kernel(const uint64_t* __restrict__ keys,
                                     const unsigned long long* __restrict__ weight,
                                     const uint32_t* __restrict__ cand, std::size_t c,
                                     unsigned long long limit, SelectState* state) {
  using Sort = cub::BlockRadixSort<uint64_t, kResolveThreads, kResolveItems, uint32_t>;
  using Scan = cub::BlockScan<unsigned long long, kResolveThreads>;
  __shared__ union {
    typename Sort::TempStorage sort;
    typename Scan::TempStorage scan;
  } storage;
  __shared__ int first;
  if (threadIdx.x == 0) first = INT_MAX;
  uint64_t k[kResolveItems];
  uint32_t id[kResolveItems];
  for (int j = 0; j < kResolveItems; ++j) {
    const std::size_t pos = std::size_t(threadIdx.x) * kResolveItems + j;  // blocked, input order
    if (pos < c) {
      id[j] = cand[pos];
      k[j] = keys[id[j]];
    } else {  // padding: key 0 and last in input order, so after every real candidate (stable)
      id[j] = 0xFFFFFFFFu;
      k[j] = 0;
    }
  }
  Sort(storage.sort).SortDescending(k, id);
  __syncthreads();
  unsigned long long w[kResolveItems], incl[kResolveItems];
  for (int j = 0; j < kResolveItems; ++j)
    w[j] = id[j] == 0xFFFFFFFFu ? 0ull : (weight ? weight[id[j]] : 1ull);
  Scan(storage.scan).InclusiveSum(w, incl);
  const unsigned long long above = state->info.above;
  for (int j = 0; j < kResolveItems; ++j)
    if (id[j] != 0xFFFFFFFFu && above + incl[j] > limit)
      atomicMin(&first, int(threadIdx.x) * kResolveItems + j);
  __syncthreads();
  for (int j = 0; j < kResolveItems; ++j)
    if (int(threadIdx.x) * kResolveItems + j == first)
      state->selection = Selection{k[j], id[j], false};
  if (threadIdx.x == 0 && first == INT_MAX) state->info.boundary = -2;  // cannot happen: reported
}

/// All candidates tied: scan[j] = weight of candidates 0..j (ascending ids = final order).
__global__ void find_first_kernel(const uint64_t* __restrict__ keys,
                                  const uint32_t* __restrict__ cand,
                                  const unsigned long long* __restrict__ scan, std::size_t c,
                                  unsigned long long limit, SelectState* state) {
  const unsigned long long above = state->info.above;
  for (std::size_t j = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; j < c;
       j += std::size_t(gridDim.x) * blockDim.x) {
    const bool over = above + scan[j] > limit;
    const bool before_fits = j == 0 || above + scan[j - 1] <= limit;
    if (over && before_fits) {
      state->selection = Selection{keys[cand[j]], cand[j], false};
      state->info.boundary = 0;  // found (the caller set -2 before the scan)
    }
  }
}

__global__ void iota_kernel(uint32_t* ids, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    ids[i] = uint32_t(i);
}

template <class T>
T read_back(const T* device, cudaStream_t stream) {
  T v;
  CE_CUDA_TRY(cudaMemcpyAsync(&v, device, sizeof(T), cudaMemcpyDeviceToHost, stream));
  CE_CUDA_TRY(cudaStreamSynchronize(stream));
  return v;
}

}  // namespace

void DeviceSelector::prepare(std::size_t n, bool unit, cudaStream_t stream) {
  unit_ = unit;
  state_.resize(1);
  cand_a_.resize(std::max<std::size_t>(n, 1));
  cand_b_.resize(std::max<std::size_t>(n, 1));
  scan_.resize(std::max<std::size_t>(n, 1));
  num_selected_.resize(1);
  // Temporary storage for the largest of the CUB calls below, sized once.
  std::size_t bytes = 0, b = 0;
  const int64_t items = int64_t(std::max<std::size_t>(n, 1));
  CE_CUDA_TRY(cub::DeviceSelect::If(nullptr, b, thrust::counting_iterator<uint32_t>(0),
                                    cand_a_.data(), num_selected_.data(), items,
                                    InKeyRange{nullptr, 0, 0}, stream));
  bytes = std::max(bytes, b);
  CE_CUDA_TRY(cub::DeviceSelect::If(nullptr, b, cand_a_.data(), cand_b_.data(),
                                    num_selected_.data(), items, DigitIs{nullptr, 0, 0}, stream));
  bytes = std::max(bytes, b);
  CE_CUDA_TRY(cub::DeviceScan::InclusiveSum(
      nullptr, b, thrust::make_transform_iterator(cand_a_.data(), WeightOf{nullptr}), scan_.data(),
      items, stream));
  bytes = std::max(bytes, b);
  temp_.resize(std::max<std::size_t>(bytes, 1));
}

void DeviceSelector::clear_histogram(cudaStream_t stream) {
  // count and weight are the first members: one memset.
  CE_CUDA_TRY(cudaMemsetAsync(state_.data(), 0, 2 * kBins * sizeof(unsigned long long), stream));
}

void DeviceSelector::build_histogram(const uint64_t* keys, const unsigned long long* weight,
                                     std::size_t n, cudaStream_t stream) {
  clear_histogram(stream);
  if (n == 0) return;
  histogram_kernel<<<grid_for(n, kHistThreads), kHistThreads, 0, stream>>>(keys, weight, nullptr, n,
                                                                           -1, state_.data());
  CE_CUDA_CHECK_LAUNCH();
}

std::size_t DeviceSelector::select_candidates(const uint32_t* in, std::size_t n, uint32_t* out,
                                              const uint64_t* keys, int level, uint32_t digit,
                                              uint64_t lo, uint64_t hi, cudaStream_t stream) {
  std::size_t bytes = temp_.size();
  if (in == nullptr)
    CE_CUDA_TRY(cub::DeviceSelect::If(temp_.data(), bytes, thrust::counting_iterator<uint32_t>(0),
                                      out, num_selected_.data(), int64_t(n),
                                      InKeyRange{keys, lo, hi}, stream));
  else
    CE_CUDA_TRY(cub::DeviceSelect::If(temp_.data(), bytes, in, out, num_selected_.data(),
                                      int64_t(n), DigitIs{keys, level, digit}, stream));
  return std::size_t(read_back(num_selected_.data(), stream));
}

Selection DeviceSelector::finish(const uint64_t* keys, const unsigned long long* weight,
                                 std::size_t n, unsigned long long limit, cudaStream_t stream) {
  if (n == 0) return Selection{};
  SelectState* st = state_.data();
  // Step 2.
  boundary_kernel<<<1, kScanThreads, 0, stream>>>(st, weight == nullptr, limit, true);
  CE_CUDA_CHECK_LAUNCH();
  const BoundaryInfo info = read_back(&st->info, stream);
  if (info.boundary < 0) return Selection{};
  const uint64_t key_lo = first_key_of_bin(uint32_t(info.boundary));
  const uint64_t key_hi = first_key_of_bin(uint32_t(info.boundary) + 1) - 1;
  // Step 3.
  uint32_t* cand = cand_a_.data();
  uint32_t* spare = cand_b_.data();
  std::size_t c = select_candidates(nullptr, n, cand, keys, -1, 0, key_lo, key_hi, stream);
  if (c != info.candidates)  // the key range and the histogram must agree
    throw Error("internal: radix select found " + std::to_string(c) + " candidates in bin " +
                std::to_string(info.boundary) + ", the histogram counted " +
                std::to_string(info.candidates));
  // Step 4.
  for (int level = 0; level < kLevels && c > std::size_t(kResolveMax); ++level) {
    clear_histogram(stream);
    histogram_kernel<<<grid_for(c, kHistThreads), kHistThreads, 0, stream>>>(keys, weight, cand, c,
                                                                             level, st);
    CE_CUDA_CHECK_LAUNCH();
    boundary_kernel<<<1, kScanThreads, 0, stream>>>(st, weight == nullptr, limit, false);
    CE_CUDA_CHECK_LAUNCH();
    const int digit = read_back(&st->info.boundary, stream);
    if (digit < 0)
      throw Error("internal: radix select lost its boundary at level " + std::to_string(level));
    c = select_candidates(cand, c, spare, keys, level, uint32_t(digit), 0, 0, stream);
    std::swap(cand, spare);
  }
  // Step 5.
  if (c <= std::size_t(kResolveMax)) {
    resolve_small_kernel<<<1, kResolveThreads, 0, stream>>>(keys, weight, cand, c, limit, st);
    CE_CUDA_CHECK_LAUNCH();
  } else {
    std::size_t bytes = temp_.size();
    CE_CUDA_TRY(cub::DeviceScan::InclusiveSum(
        temp_.data(), bytes, thrust::make_transform_iterator(cand, WeightOf{weight}), scan_.data(),
        int64_t(c), stream));
    find_first_kernel<<<grid_for(c, 256), 256, 0, stream>>>(keys, cand, scan_.data(), c, limit, st);
    CE_CUDA_CHECK_LAUNCH();
  }
  if (read_back(&st->info.boundary, stream) == -2)
    throw Error("internal: radix select found no stop");
  return read_back(&st->selection, stream);
}

Selection select_by_full_sort(const uint64_t* keys, const unsigned long long* weight, std::size_t n,
                              unsigned long long limit, cudaStream_t stream) {
  if (n == 0) return Selection{};
  DeviceBuffer<uint64_t> sorted_keys(n);
  DeviceBuffer<uint32_t> ids(n), sorted_ids(n);
  DeviceBuffer<unsigned long long> scan(n);
  DeviceBuffer<SelectState> state(1);
  iota_kernel<<<grid_for(n, 256), 256, 0, stream>>>(ids.data(), n);
  CE_CUDA_CHECK_LAUNCH();
  std::size_t bytes = 0;
  CE_CUDA_TRY(cub::DeviceRadixSort::SortPairsDescending(nullptr, bytes, keys, sorted_keys.data(),
                                                        ids.data(), sorted_ids.data(), int64_t(n),
                                                        0, 64, stream));
  DeviceBuffer<unsigned char> temp(std::max<std::size_t>(bytes, 1));
  CE_CUDA_TRY(cub::DeviceRadixSort::SortPairsDescending(
      temp.data(), bytes, keys, sorted_keys.data(), ids.data(), sorted_ids.data(), int64_t(n), 0,
      64, stream));
  std::size_t scan_bytes = 0;
  auto w = thrust::make_transform_iterator(sorted_ids.data(), WeightOf{weight});
  CE_CUDA_TRY(
      cub::DeviceScan::InclusiveSum(nullptr, scan_bytes, w, scan.data(), int64_t(n), stream));
  DeviceBuffer<unsigned char> scan_temp(std::max<std::size_t>(scan_bytes, 1));
  CE_CUDA_TRY(cub::DeviceScan::InclusiveSum(scan_temp.data(), scan_bytes, w, scan.data(),
                                            int64_t(n), stream));
  const unsigned long long total = read_back(scan.data() + (n - 1), stream);
  if (total <= limit) return Selection{};
  // find_first with above = 0: the state's above must be zero.
  CE_CUDA_TRY(cudaMemsetAsync(state.data(), 0, sizeof(SelectState), stream));
  find_first_kernel<<<grid_for(n, 256), 256, 0, stream>>>(keys, sorted_ids.data(), scan.data(), n,
                                                          limit, state.data());
  CE_CUDA_CHECK_LAUNCH();
  return read_back(&state.data()->selection, stream);
}

}  // namespace crawleval::cuda::detail
