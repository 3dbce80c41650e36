// The Lagrangian bound on the GPU (contract in include/crawleval/bound.hpp). Each evaluation is
// one pass over the population: every source solves its relaxed problem (relaxed_value, the same
// function as the CPU's) and cub::DeviceReduce adds the results in a fixed order. The GPU does the
// per-source work from scratch at every lambda, so plain bisection suffices:
//  1. rate(lambda) = sum_i C_i / period_i(lambda) is non-increasing; bisect lambda in
//     [0, max_i x_cap_i / C_i] for rate = M (60 halvings);
//  2. the bound is min(D(lo), D(hi)) with D(lambda) = sum_i beta_i(lambda) - lambda (sum C - M).
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <cub/device/device_reduce.cuh>

#include <algorithm>
#include <chrono>
#include <limits>

#include "crawleval/bound.hpp"
#include "crawleval/cuda_backend.hpp"
#include "crawleval/error.hpp"
#include "device_buffer.cuh"

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

struct BetaOf {
  Columns c;
  double lambda;
  __device__ double operator()(uint64_t i) const {
    uint32_t k;
    return relaxed_value(c.cost[i] * lambda, c.at(i), &k);
  }
};

}  // namespace

BoundResult lagrangian_bound(const Problem& pr) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!bound_applies(pr.config)) return inapplicable_bound(pr.config);
  BoundResult res;
  using detail::DeviceBuffer;
  detail::Stream s;
  const std::size_t n = pr.size();
  DeviceBuffer<double> alpha, om_alpha, u_star, mu_t, cost, x_cap, alpha_e, out(1);
  DeviceBuffer<uint32_t> expiry;
  alpha.upload(pr.params.alpha, s), om_alpha.upload(pr.params.om_alpha, s);
  u_star.upload(pr.params.u_star, s), mu_t.upload(pr.params.mu_t, s);
  cost.upload(pr.population->cost, s), x_cap.upload(pr.params.x_cap, s);
  alpha_e.upload(pr.params.alpha_e, s), expiry.upload(pr.params.expiry, s);
  const Columns c{alpha.data(), om_alpha.data(), u_star.data(),  mu_t.data(),
                  cost.data(),  x_cap.data(),    alpha_e.data(), expiry.data()};
  const thrust::counting_iterator<uint64_t> ids(0);
  std::size_t bytes = 0;
  CE_CUDA_TRY(cub::DeviceReduce::Sum(nullptr, bytes,
                                     thrust::make_transform_iterator(ids, RateOf{c, 0.0}),
                                     out.data(), int64_t(n), s));
  DeviceBuffer<unsigned char> temp(std::max<std::size_t>(bytes, 1));
  auto reduce = [&](auto op) {
    ++res.evaluations;
    std::size_t b = temp.size();
    CE_CUDA_TRY(cub::DeviceReduce::Sum(temp.data(), b, thrust::make_transform_iterator(ids, op),
                                       out.data(), int64_t(n), s));
    double v;
    CE_CUDA_TRY(cudaMemcpyAsync(&v, out.data(), sizeof v, cudaMemcpyDeviceToHost, s));
    CE_CUDA_TRY(cudaStreamSynchronize(s));
    return v;
  };
  const double m = pr.config.budget, total = pr.population->total_cost();
  double hi = 0.0;
  for (std::size_t i = 0; i < n; ++i) hi = std::max(hi, pr.params.x_cap[i] * pr.params.inv_cost[i]);
  double lo = 0.0;
  if (reduce(RateOf{c, 0.0}) <= m) hi = 0.0;
  for (int it = 0; it < 60 && hi > lo; ++it) {
    const double mid = 0.5 * (lo + hi);
    (reduce(RateOf{c, mid}) > m ? lo : hi) = mid;
  }
  const double d_lo = reduce(BetaOf{c, lo}) - lo * (total - m);
  const double d_hi = reduce(BetaOf{c, hi}) - hi * (total - m);
  res.lambda = d_lo < d_hi ? lo : hi;
  res.bound = std::min(d_lo, d_hi);
  res.crawl_rate = reduce(RateOf{c, res.lambda});
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

}  // namespace crawleval::cuda
