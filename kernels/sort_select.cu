// The GPU's reference selection (sort_select.cuh): sort, gather weights, scan, find the stop.
#include <thrust/iterator/transform_iterator.h>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>

#include "crawleval/select/window_select.hpp"
#include "device_buffer.cuh"
#include "launch.cuh"
#include "sort_select.cuh"

namespace crawleval::cuda::detail {

namespace {

constexpr int kRefThreads = 256;

__global__ void __launch_bounds__(kRefThreads) iota_kernel(uint32_t* ids, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    ids[i] = uint32_t(i);
}

struct WeightOf {
  const unsigned long long* weight;
  __host__ __device__ __forceinline__ unsigned long long operator()(uint32_t i) const {
    return weight ? weight[i] : 1ull;
  }
};

/// incl[j]: weight of the sorted sources 0..j. The stop is the j whose weight overflows.
__global__ void __launch_bounds__(kRefThreads)
    find_stop_kernel(const uint64_t* sorted_keys, const uint32_t* sorted_ids,
                     const unsigned long long* incl, const unsigned long long* weight,
                     std::size_t n, unsigned long long limit, Selection* out) {
  for (std::size_t j = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; j < n;
       j += std::size_t(gridDim.x) * blockDim.x) {
    const unsigned long long w = weight ? weight[sorted_ids[j]] : 1ull;
    if (window::is_boundary(incl[j] - w, w, limit))
      *out = Selection{sorted_keys[j], sorted_ids[j], false};
  }
}

}  // namespace

Selection select_by_full_sort(const uint64_t* keys, const unsigned long long* weight, std::size_t n,
                              unsigned long long limit, cudaStream_t stream) {
  if (n == 0) return Selection{};
  DeviceBuffer<uint64_t> sorted_keys(n);
  DeviceBuffer<uint32_t> ids(n), sorted_ids(n);
  DeviceBuffer<unsigned long long> incl(n);
  DeviceBuffer<Selection> result(1);
  const Selection all{};
  CE_CUDA_TRY(cudaMemcpyAsync(result.data(), &all, sizeof all, cudaMemcpyHostToDevice, stream));
  iota_kernel<<<grid_for(n, kRefThreads), kRefThreads, 0, stream>>>(ids.data(), n);
  CE_CUDA_CHECK_LAUNCH();
  // Stable: equal keys keep ascending ids, the rule's tie-break.
  std::size_t bytes = 0;
  CE_CUDA_TRY(cub::DeviceRadixSort::SortPairsDescending(nullptr, bytes, keys, sorted_keys.data(),
                                                        ids.data(), sorted_ids.data(), int64_t(n),
                                                        0, 64, stream));
  DeviceBuffer<unsigned char> temp(std::max<std::size_t>(bytes, 1));
  CE_CUDA_TRY(cub::DeviceRadixSort::SortPairsDescending(
      temp.data(), bytes, keys, sorted_keys.data(), ids.data(), sorted_ids.data(), int64_t(n), 0,
      64, stream));
  auto w = thrust::make_transform_iterator(sorted_ids.data(), WeightOf{weight});
  std::size_t scan_bytes = 0;
  CE_CUDA_TRY(
      cub::DeviceScan::InclusiveSum(nullptr, scan_bytes, w, incl.data(), int64_t(n), stream));
  DeviceBuffer<unsigned char> scan_temp(std::max<std::size_t>(scan_bytes, 1));
  CE_CUDA_TRY(cub::DeviceScan::InclusiveSum(scan_temp.data(), scan_bytes, w, incl.data(),
                                            int64_t(n), stream));
  find_stop_kernel<<<grid_for(n, kRefThreads), kRefThreads, 0, stream>>>(
      sorted_keys.data(), sorted_ids.data(), incl.data(), weight, n, limit, result.data());
  CE_CUDA_CHECK_LAUNCH();
  Selection sel;
  CE_CUDA_TRY(cudaMemcpyAsync(&sel, result.data(), sizeof sel, cudaMemcpyDeviceToHost, stream));
  CE_CUDA_TRY(cudaStreamSynchronize(stream));
  return sel;
}

}  // namespace crawleval::cuda::detail
