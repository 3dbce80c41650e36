// The CUDA backend's entry points (include/crawleval/cuda_backend.hpp): device discovery, the
// choice between the wide regime (wide_engine.cuh) and the tall one (tall_kernels.cuh), uploads.
#include <cub/device/device_reduce.cuh>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "crawleval/cuda_backend.hpp"
#include "crawleval/error.hpp"
#include "launch.cuh"
#include "tall_kernels.cuh"
#include "wide_engine.cuh"

namespace crawleval::cuda {

namespace detail {

namespace {

template <class T>
__global__ void fill_kernel(T* p, std::size_t n, T v) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    p[i] = v;
}

template <class T>
void fill(T* p, std::size_t n, T v, cudaStream_t s) {
  if (n == 0) return;
  fill_kernel<<<grid_for(n, 256), 256, 0, s>>>(p, n, v);
  CE_CUDA_CHECK_LAUNCH();
}

double gib(std::size_t b) { return double(b) / double(1ull << 30); }

}  // namespace

std::size_t wide_bytes_per_source(Model model, bool unit_costs, Start start) {
  std::size_t b = 16 + 8 + 8 + 8;  // mu_t, u_star; keys; two candidate id lists; scan
  if (model == Model::deterministic)
    b += 4 + (start == Start::given ? 8 : 0);  // age word, x0
  else
    b += 32 + 8 + 8;         // alpha, om_alpha, lambda_t, xi; state; initial state
  if (!unit_costs) b += 24;  // inv_cost, cost, weight
  return b;
}

void require_device_memory(std::size_t bytes, const std::string& what) {
  std::size_t free_b = 0, total_b = 0;
  CE_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
  const std::size_t reserve = std::size_t(256) << 20;
  if (bytes + reserve > free_b) {
    char msg[256];
    std::snprintf(msg, sizeof msg,
                  "%s needs %.2f GiB of device memory; %.2f GiB of %.2f GiB are available",
                  what.c_str(), gib(bytes + reserve), gib(free_b), gib(total_b));
    throw InputError(msg);
  }
}

WideEngine::WideEngine(const WideSetup& s, cudaStream_t stream)
    : s_(s), stream_(stream), n_(s.columns.n), blocks_(epoch_blocks(s.columns.n)) {
  if (s_.config.model == Model::deterministic)
    age_.resize(n_);
  else
    x_.resize(n_);
  keys_.resize(n_);
  block_reward_.resize(blocks_);
  block_cost_.resize(blocks_);
  const uint64_t total = s_.config.burn_in + s_.config.epochs;
  epoch_reward_.resize(total);
  epoch_cost_.resize(total);
  std::size_t bytes = 0;
  CE_CUDA_TRY(cub::DeviceReduce::Sum(nullptr, bytes, block_reward_.data(), epoch_reward_.data(),
                                     blocks_, stream_));
  reduce_temp_.resize(std::max<std::size_t>(bytes, 1));
  selector_.prepare(n_, s_.unit_costs, stream_);
}

void WideEngine::observe(uint32_t rep, uint64_t t, const Selection& sel,
                         const EpochObserver& observer) {
  const Problem& pr = *s_.host_problem;
  std::vector<uint64_t> keys(n_);
  keys_.download(keys.data(), n_, stream_);
  std::vector<double> x(n_);
  std::vector<uint32_t> age;
  if (s_.config.model == Model::deterministic) {
    age.resize(n_);
    age_.download(age.data(), n_, stream_);
  } else {
    x_.download(x.data(), n_, stream_);
  }
  CE_CUDA_TRY(cudaStreamSynchronize(stream_));
  if (!age.empty())
    for (std::size_t i = 0; i < n_; ++i) {
      double om;
      x[i] = AgeState::value(age[i], uint32_t(t), pr.initial_state[i], pr.params.at(i), &om);
    }
  std::vector<uint32_t> selected;
  double reward = 0.0;
  for (std::size_t i = 0; i < n_; ++i)
    if (is_selected(keys[i], i, sel)) selected.push_back(uint32_t(i)), reward += x[i];
  observer(EpochView{rep, t, &selected, reward, &x, nullptr});
}

RolloutOutput WideEngine::run(const EpochObserver* observer) {
  const auto t0 = std::chrono::steady_clock::now();
  const RunConfig& cfg = s_.config;
  const bool det = cfg.model == Model::deterministic;
  const uint64_t total = cfg.burn_in + cfg.epochs;
  RolloutOutput out;
  cudaEvent_t start_ev, stop_ev;
  CE_CUDA_TRY(cudaEventCreate(&start_ev));
  CE_CUDA_TRY(cudaEventCreate(&stop_ev));
  float loop_ms = 0.0f;
  std::vector<double> rewards(total), costs(total);
  try {
    for (uint32_t rep = 0; rep < cfg.replications; ++rep) {
      // Initial states.
      if (det) {
        const uint32_t word = cfg.start == Start::empty   ? 0u
                              : cfg.start == Start::fresh ? 1u
                                                          : AgeState::kOffGrid;
        fill(age_.data(), n_, word, stream_);
      } else {
        CE_CUDA_TRY(cudaMemcpyAsync(x_.data(), s_.initial_x, n_ * sizeof(double),
                                    cudaMemcpyDeviceToDevice, stream_));
      }
      CE_CUDA_TRY(cudaEventRecord(start_ev, stream_));
      EpochLaunch a;
      a.src = s_.columns;
      a.age = age_.data();
      a.x = x_.data();
      a.keys = keys_.data();
      a.select = selector_.state();
      a.replication = cfg.first_replication + rep;
      a.seed = cfg.seed;
      a.utility = cfg.utility;
      a.block_reward = block_reward_.data();
      a.block_cost = block_cost_.data();
      Selection sel;
      uint64_t pointer = 0;
      for (uint64_t t = 0; t <= total; ++t) {
        a.apply = t > 0;
        a.score = t < total;
        a.prev = sel;
        a.prev_epoch = uint32_t(t - 1);
        a.now_epoch = uint32_t(t);
        a.pointer_prev = a.pointer_now;
        a.pointer_now = pointer;
        if (a.score) selector_.clear_histogram(stream_);
        launch_epoch(s_.policy, cfg.model, s_.unit_costs, a, stream_);
        if (a.apply) {
          std::size_t bytes = reduce_temp_.size();
          CE_CUDA_TRY(cub::DeviceReduce::Sum(reduce_temp_.data(), bytes, block_reward_.data(),
                                             epoch_reward_.data() + (t - 1), blocks_, stream_));
          CE_CUDA_TRY(cub::DeviceReduce::Sum(reduce_temp_.data(), bytes, block_cost_.data(),
                                             epoch_cost_.data() + (t - 1), blocks_, stream_));
        }
        if (!a.score) break;
        sel = selector_.finish(keys_.data(), s_.columns.weight, n_, s_.budget.limit, stream_);
        if (s_.policy == Policy::round_robin && !sel.all) pointer = sel.stop_id;
        if (observer) observe(rep, t, sel, *observer);
      }
      CE_CUDA_TRY(cudaEventRecord(stop_ev, stream_));
      epoch_reward_.download(rewards.data(), total, stream_);
      epoch_cost_.download(costs.data(), total, stream_);
      CE_CUDA_TRY(cudaStreamSynchronize(stream_));
      float ms = 0.0f;
      CE_CUDA_TRY(cudaEventElapsedTime(&ms, start_ev, stop_ev));
      loop_ms += ms;
      double reward_sum = 0.0, cost_sum = 0.0;
      for (uint64_t t = cfg.burn_in; t < total; ++t) {
        reward_sum += rewards[t];
        cost_sum += costs[t];
        if (rep == 0) out.epoch_reward.push_back(rewards[t]);
      }
      out.replication_reward.push_back(reward_sum / double(cfg.epochs));
      out.replication_cost.push_back(cost_sum / double(cfg.epochs));
    }
  } catch (...) {
    CE_CUDA_TRY_NOTHROW(cudaEventDestroy(start_ev));
    CE_CUDA_TRY_NOTHROW(cudaEventDestroy(stop_ev));
    throw;
  }
  CE_CUDA_TRY_NOTHROW(cudaEventDestroy(start_ev));
  CE_CUDA_TRY_NOTHROW(cudaEventDestroy(stop_ev));
  out.loop_seconds = double(loop_ms) / 1e3;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

namespace {

struct Uploaded {
  DeviceBuffer<double> mu_t, u_star, alpha, om_alpha, lambda_t, xi, inv_cost, cost, x0, initial_x;
  DeviceBuffer<unsigned long long> weight;
};

RolloutOutput wide_rollout(const Problem& pr, Policy policy, const EpochObserver* observer,
                           cudaStream_t stream) {
  const RunConfig& cfg = pr.config;
  const std::size_t n = pr.size();
  const bool det = cfg.model == Model::deterministic;
  require_device_memory(n * wide_bytes_per_source(cfg.model, pr.unit_costs, cfg.start),
                        "a population of " + std::to_string(n) + " sources");
  Uploaded up;
  WideSetup s;
  s.config = cfg;
  s.policy = policy;
  s.unit_costs = pr.unit_costs;
  s.budget = fixed_budget(cfg.budget, pr.population->total_cost(), pr.unit_costs);
  s.host_problem = &pr;
  DeviceColumns& c = s.columns;
  c.n = n;
  up.mu_t.upload(pr.params.mu_t, stream), c.mu_t = up.mu_t.data();
  up.u_star.upload(pr.params.u_star, stream), c.u_star = up.u_star.data();
  if (!det) {
    up.alpha.upload(pr.params.alpha, stream), c.alpha = up.alpha.data();
    up.om_alpha.upload(pr.params.om_alpha, stream), c.om_alpha = up.om_alpha.data();
    up.lambda_t.upload(pr.params.lambda_t, stream), c.lambda_t = up.lambda_t.data();
    up.xi.upload(pr.params.xi, stream), c.xi = up.xi.data();
    up.initial_x.upload(pr.initial_state, stream), s.initial_x = up.initial_x.data();
  } else if (cfg.start == Start::given) {
    up.x0.upload(pr.initial_state, stream), c.x0 = up.x0.data();
  }
  if (!pr.unit_costs) {
    up.inv_cost.upload(pr.params.inv_cost, stream), c.inv_cost = up.inv_cost.data();
    up.cost.upload(pr.population->cost, stream), c.cost = up.cost.data();
    std::vector<unsigned long long> w(n);
    for (std::size_t i = 0; i < n; ++i) w[i] = fixed_weight(pr.population->cost[i], s.budget.scale);
    up.weight.upload(w, stream), c.weight = up.weight.data();
    CE_CUDA_TRY(cudaStreamSynchronize(stream));  // w leaves scope
  }
  WideEngine engine(s, stream);
  return engine.run(observer);
}

RolloutOutput tall_rollout(const Problem& pr, Policy policy, cudaStream_t stream) {
  const auto t0 = std::chrono::steady_clock::now();
  const RunConfig& cfg = pr.config;
  const std::size_t n = pr.size();
  std::vector<SourceParams> params(n);
  for (std::size_t i = 0; i < n; ++i) params[i] = pr.params.at(i);
  DeviceBuffer<SourceParams> d_params;
  DeviceBuffer<double> d_cost, d_x0, d_rep_reward(cfg.replications), d_rep_cost(cfg.replications),
      d_epoch_reward(cfg.epochs);
  DeviceBuffer<uint32_t> d_age0, d_period;
  d_params.upload(params, stream);
  d_cost.upload(pr.population->cost, stream);
  d_x0.upload(pr.initial_state, stream);
  d_age0.upload(pr.initial_age, stream);
  if (!pr.static_period.empty()) d_period.upload(pr.static_period, stream);
  TallLaunch a;
  a.n = int(n);
  a.params = d_params.data();
  a.cost = d_cost.data();
  a.x0 = d_x0.data();
  a.age0 = d_age0.data();
  a.period = pr.static_period.empty() ? nullptr : d_period.data();
  a.observe = cfg.observe;
  a.first_replication = cfg.first_replication;
  a.policy = policy;
  a.model = cfg.model;
  a.utility = cfg.utility;
  a.budget = cfg.budget;
  a.replications = cfg.replications;
  a.burn_in = cfg.burn_in;
  a.epochs = cfg.epochs;
  a.seed = cfg.seed;
  a.replication_reward = d_rep_reward.data();
  a.replication_cost = d_rep_cost.data();
  a.epoch_reward = d_epoch_reward.data();
  cudaEvent_t start_ev, stop_ev;
  CE_CUDA_TRY(cudaEventCreate(&start_ev));
  CE_CUDA_TRY(cudaEventCreate(&stop_ev));
  CE_CUDA_TRY(cudaEventRecord(start_ev, stream));
  launch_tall(a, stream);
  CE_CUDA_TRY(cudaEventRecord(stop_ev, stream));
  RolloutOutput out;
  out.replication_reward.resize(cfg.replications);
  out.replication_cost.resize(cfg.replications);
  out.epoch_reward.resize(cfg.epochs);
  d_rep_reward.download(out.replication_reward.data(), cfg.replications, stream);
  d_rep_cost.download(out.replication_cost.data(), cfg.replications, stream);
  d_epoch_reward.download(out.epoch_reward.data(), cfg.epochs, stream);
  CE_CUDA_TRY(cudaStreamSynchronize(stream));
  float ms = 0.0f;
  CE_CUDA_TRY(cudaEventElapsedTime(&ms, start_ev, stop_ev));
  CE_CUDA_TRY_NOTHROW(cudaEventDestroy(start_ev));
  CE_CUDA_TRY_NOTHROW(cudaEventDestroy(stop_ev));
  for (double& r : out.replication_reward) r /= double(cfg.epochs);
  for (double& c : out.replication_cost) c /= double(cfg.epochs);
  out.loop_seconds = double(ms) / 1e3;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace

}  // namespace detail

bool compiled() { return true; }

int device_count() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // no driver or no device: zero devices, and clear the error
    return 0;
  }
  return count;
}

std::string device_description() {
  if (device_count() == 0) return {};
  int dev = 0, driver = 0, runtime = 0;
  cudaDeviceProp prop{};
  CE_CUDA_TRY(cudaGetDevice(&dev));
  CE_CUDA_TRY(cudaGetDeviceProperties(&prop, dev));
  CE_CUDA_TRY(cudaDriverGetVersion(&driver));
  CE_CUDA_TRY(cudaRuntimeGetVersion(&runtime));
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s (sm_%d%d, %.1f GiB, %d SMs, driver %d.%d, runtime %d.%d)",
                prop.name, prop.major, prop.minor, double(prop.totalGlobalMem) / double(1ull << 30),
                prop.multiProcessorCount, driver / 1000, (driver % 1000) / 10, runtime / 1000,
                (runtime % 1000) / 10);
  return buf;
}

namespace {

bool tall_fits(const Problem& pr, const EpochObserver* observer) {
  return pr.size() <= std::size_t(detail::kTallMaxSources) && pr.config.replications > 1 &&
         observer == nullptr;
}

}  // namespace

bool supports(const Problem& pr, Policy policy, const EpochObserver* observer) {
  return pr.base_model(policy) || tall_fits(pr, observer);
}

RolloutOutput rollout(const Problem& pr, Policy policy, const EpochObserver* observer) {
  if (device_count() == 0) throw InputError("no CUDA device");
  if (!supports(pr, policy, observer))
    throw InputError(
        "the CUDA backend runs belief observation, content expiry and the static "
        "policy only for small populations (N <= 64) with several replications; "
        "use --backend cpu");
  detail::Stream stream;
  if (tall_fits(pr, observer)) return detail::tall_rollout(pr, policy, stream);
  return detail::wide_rollout(pr, policy, observer, stream);
}

}  // namespace crawleval::cuda
