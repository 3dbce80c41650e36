// The Lagrangian bound on the GPU (contract in include/crawleval/analysis/bound.hpp). Each
// evaluation is one pass over the population: every source solves its relaxed problem
// (relaxed_value, the same function as the CPU's), each block sums its contiguous range and the
// host adds the blocks' sums in block order (reproducible for a given grid). The GPU does the
// per-source work from scratch at every lambda, so plain bisection suffices:
//  1. rate(lambda) = sum_i C_i / period_i(lambda) is non-increasing; bisect lambda in
//     [0, max_i x_cap_i / C_i] for rate = M (60 halvings);
//  2. the bound is min(D(lo), D(hi)) with D(lambda) = lambda M + sum_i [beta_i(lambda) - C_i
//  lambda].
#include <cub/block/block_reduce.cuh>

#include <algorithm>
#include <chrono>
#include <limits>
#include <vector>

#include "../device_buffer.cuh"
#include "../launch.cuh"
#include "crawleval/analysis/bound.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/base/monitor.hpp"
#include "crawleval/engine/cuda_backend.hpp"

namespace crawleval::cuda {

namespace {

struct Columns {
  const double *alpha, *om_alpha, *u_star, *mu_t, *cost, *x_cap, *alpha_e;
  const uint32_t* expiry;
  __device__ __forceinline__ SourceParams at(uint64_t i) const {
    SourceParams p{};
    p.alpha = alpha[i], p.om_alpha = om_alpha[i], p.u_star = u_star[i], p.mu_t = mu_t[i];
    p.inv_cost = 1.0 / cost[i], p.x_cap = x_cap[i], p.alpha_e = alpha_e[i], p.expiry = expiry[i];
    return p;
  }
};

struct RateOf {
  Columns c;
  double lambda;
  __device__ double operator()(uint64_t i) const {
    uint32_t k;
    relaxed_value(c.cost[i] * lambda, c.at(i), &k);
    return k ? c.cost[i] / double(k) : 0.0;
  }
};

/// beta_i(lambda) - C_i lambda (relaxed_gain: no cancellation against the subsidy).
struct GainOf {
  Columns c;
  double lambda;
  __device__ double operator()(uint64_t i) const {
    uint32_t k;
    return relaxed_gain(c.cost[i] * lambda, c.at(i), &k);
  }
};

constexpr int kBoundThreads = 256;

/// Block b sums op(i) over its contiguous range of sources (threads stride through it).
template <class Op>
__global__ void __launch_bounds__(kBoundThreads)
    block_sums_kernel(Op op, uint64_t n, double* sums) {
  using Reduce = cub::BlockReduce<double, kBoundThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  const uint64_t first = n * blockIdx.x / gridDim.x, last = n * (blockIdx.x + 1) / gridDim.x;
  double acc = 0.0;
  for (uint64_t i = first + threadIdx.x; i < last; i += kBoundThreads) acc += op(i);
  const double block = Reduce(tmp).Sum(acc);
  if (threadIdx.x == 0) sums[blockIdx.x] = block;
}

}  // namespace

BoundResult lagrangian_bound(const Problem& pr) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!bound_applies(pr)) return inapplicable_bound(pr);
  BoundResult res;
  using detail::DeviceBuffer;
  detail::Stream s;
  const std::size_t n = pr.size();
  DeviceBuffer<double> alpha, om_alpha, u_star, mu_t, cost, x_cap, alpha_e;
  DeviceBuffer<uint32_t> expiry;
  alpha.upload(pr.params().alpha, s), om_alpha.upload(pr.params().om_alpha, s);
  u_star.upload(pr.params().u_star, s), mu_t.upload(pr.params().mu_t, s);
  cost.upload(pr.population->cost, s), x_cap.upload(pr.params().x_cap_column(), s);
  if (pr.params().has_expiry_columns()) {
    alpha_e.upload(pr.params().alpha_e, s), expiry.upload(pr.params().expiry, s);
  } else {  // derive_params's values for expiry 0 (all-zero bytes are 0.0 and 0)
    alpha_e.resize(n), alpha_e.zero(s), expiry.resize(n), expiry.zero(s);
  }
  const Columns c{alpha.data(), om_alpha.data(), u_star.data(),  mu_t.data(),
                  cost.data(),  x_cap.data(),    alpha_e.data(), expiry.data()};
  const uint32_t blocks = uint32_t(
      std::max<std::size_t>(1, std::min<std::size_t>(std::size_t(detail::sm_count()) * 8,
                                                     (n + kBoundThreads - 1) / kBoundThreads)));
  DeviceBuffer<double> sums(blocks);
  std::vector<double> host_sums(blocks);
  auto reduce = [&](auto op) {
    ++res.evaluations;
    block_sums_kernel<<<blocks, kBoundThreads, 0, s>>>(op, uint64_t(n), sums.data());
    CE_CUDA_CHECK_LAUNCH();
    sums.download(host_sums.data(), blocks, s);
    CE_CUDA_TRY(cudaStreamSynchronize(s));
    double v = 0.0;
    for (double x : host_sums) v += x;
    return v;
  };
  const double m = pr.config.budget;
  double hi = 0.0;
  const std::vector<double>& cap = pr.params().x_cap_column();
  for (std::size_t i = 0; i < n; ++i) hi = std::max(hi, cap[i] * pr.params().inv_cost[i]);
  double lo = 0.0;
  if (reduce(RateOf{c, 0.0}) <= m) hi = 0.0;
  bracket_multiplier(
      [&](double l) {
        return reduce(RateOf{c, l}) > m;
      },
      check_interrupt, 60, &lo, &hi);
  const double d_lo = lo * m + reduce(GainOf{c, lo});
  const double d_hi = hi * m + reduce(GainOf{c, hi});
  res.lambda = d_lo < d_hi ? lo : hi;
  res.bound = std::min(d_lo, d_hi);
  res.crawl_rate = reduce(RateOf{c, res.lambda});
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

}  // namespace crawleval::cuda
