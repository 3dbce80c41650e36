// The CUDA backend's entry points (include/crawleval/engine/cuda_backend.hpp): device discovery,
// the choice between the wide regime (wide_engine.cuh) and the tall one (tall_kernels.cuh),
// uploads.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <vector>

#include "crawleval/base/error.hpp"
#include "crawleval/engine/cuda_backend.hpp"
#include "crawleval/model/policy.hpp"
#include "generic_pass.cuh"
#include "launch.cuh"
#include "tall_kernels.cuh"
#include "wide_engine.cuh"

namespace crawleval::cuda {

namespace detail {

namespace {

struct Uploaded {
  DeviceBuffer<double> mu_t, u_star, lambda_t, xi, cost, x0, initial_x;
};

/// What every wide-regime run of `pr` sets up alike (its columns still to upload).
WideSetup wide_setup(const Problem& pr, Policy policy) {
  WideSetup s;
  s.config = pr.config;
  s.policy = policy;
  s.unit_costs = pr.unit_costs;
  s.budget = pr.weights;
  s.host_problem = &pr;
  s.first_id = pr.first_id;
  s.columns.n = pr.size();
  return s;
}

RolloutOutput wide_rollout(const Problem& pr, Policy policy, const EpochObserver* observer,
                           cudaStream_t stream) {
  const RunConfig& cfg = pr.config;
  const std::size_t n = pr.size();
  const bool det = cfg.model == Model::deterministic;
  Uploaded up;
  WideSetup s = wide_setup(pr, policy);
  s.dormant = dormant_setting(s, observer != nullptr);
  // Everything this run allocates, checked before the first upload.
  require_device_memory(wide_column_bytes(n, cfg.model, pr.unit_costs, cfg.start) +
                            WideEngine::device_bytes(s, observer != nullptr),
                        "a population of " + std::to_string(n) + " sources");
  // The first epoch's plan, from the host's scores of a sample of sources at epoch 0.
  ScoreContext ctx{policy, Observe::full, cfg.seed, cfg.first_replication, 0, 0, n};
  ctx.first_id = pr.first_id;
  s.first_plan = sample_first_plan(n, s.budget, pr.unit_costs, [&](uint64_t i) {
    const double x0 = pr.initial_state()[i];
    const double score =
        policy_score(ctx, i, x0, pr.initial_age()[i], x0, 0, 0.0, pr.params().at_base(i));
    return std::make_pair(score, pr.population->cost[i]);
  });
  DeviceColumns& c = s.columns;
  c.n = n;
  up.mu_t.upload(pr.params().mu_t, stream), c.mu_t = up.mu_t.data();
  up.u_star.upload(pr.params().u_star, stream), c.u_star = up.u_star.data();
  if (!det) {
    up.lambda_t.upload(pr.params().lambda_t, stream), c.lambda_t = up.lambda_t.data();
    up.xi.upload(pr.params().xi, stream), c.xi = up.xi.data();
    up.initial_x.upload(pr.initial_state(), stream), s.initial_x = up.initial_x.data();
  } else if (cfg.start == Start::given) {
    up.x0.upload(pr.initial_state(), stream), c.x0 = up.x0.data();
  }
  if (!pr.unit_costs) up.cost.upload(pr.population->cost, stream), c.cost = up.cost.data();
  WideEngine engine(s, stream);
  return engine.run(observer);
}

/// The general model, or a policy the fused passes do not run, at any N: the wide engine with
/// the generic pass (generic_pass.cuh).
/// `fn`: a policy given as a function (then `policy` is not read).
RolloutOutput generic_rollout(const Problem& pr, Policy policy, const EpochObserver* observer,
                              cudaStream_t stream, const DeviceScoreFn* fn = nullptr) {
  const RunConfig& cfg = pr.config;
  const std::size_t n = pr.size();
  if (policy == Policy::static_rate && pr.static_period.size() != n)
    throw Error("internal: the static policy needs prepare_static_policy()");
  if (policy == Policy::lip && (pr.lip_period.size() != n || pr.lip_gain.size() != n))
    throw Error("internal: the lip policy needs prepare_lip_policy()");
  const uint32_t* periods = fn ? nullptr : pr.policy_periods(policy);
  const double* gains = fn ? nullptr : pr.policy_gains(policy);
  const uint8_t* observed =
      fn && pr.observe_column_applies() ? pr.population->observe.data() : nullptr;
  WideSetup s = wide_setup(pr, policy);
  s.fn = fn;
  GenericPass g;  // host copy; its pointers are set to the device columns below
  g.policy = policy;
  g.observe = cfg.observe;
  g.deterministic = cfg.model == Model::deterministic;
  g.utility = cfg.utility;
  g.seed = cfg.seed;
  g.first_id = pr.first_id;
  g.n = n;
  g.multiplier = pr.lip_multiplier;
  // Everything this run allocates, checked before the first upload: the constants, the initial
  // state (also x0) and word, periods and gains, the observation column, costs. (A Python
  // policy's own device copies of its columns are its array module's, not counted here.)
  const std::size_t columns =
      n * (sizeof(SourceParams) + sizeof(double) + sizeof(uint32_t) +
           (periods ? sizeof(uint32_t) : 0) + (gains ? sizeof(double) : 0) +
           (observed ? sizeof(uint8_t) : 0) + (pr.unit_costs ? 0 : sizeof(double)));
  s.generic = &g;  // device_bytes and grid only ask whether it is set
  require_device_memory(columns + WideEngine::device_bytes(s, observer != nullptr),
                        "a population of " + std::to_string(n) + " sources");
  // The first epoch's plan, from the host's scores of a sample of sources at epoch 0 (a score
  // function's from its first scores: WideEngine::function_epoch).
  if (!fn) {
    ScoreContext ctx{policy, cfg.observe, cfg.seed, cfg.first_replication, 0, 0, n};
    ctx.first_id = pr.first_id;
    ctx.multiplier = pr.lip_multiplier;
    s.first_plan = sample_first_plan(n, s.budget, pr.unit_costs, [&](uint64_t i) {
      const double x0 = pr.initial_state()[i];
      const double score =
          policy_score(ctx, i, x0, pr.initial_age()[i], x0, periods ? periods[i] : 0u,
                       gains ? gains[i] : 0.0, pr.params().at(i));
      return std::make_pair(score, pr.population->cost_of(i));
    });
  }
  std::vector<SourceParams> params(n);
  for (std::size_t i = 0; i < n; ++i) params[i] = pr.params().at(i);
  DeviceBuffer<SourceParams> d_params;
  DeviceBuffer<double> d_x0, d_gain, d_cost;
  DeviceBuffer<uint32_t> d_w0, d_period;
  DeviceBuffer<uint8_t> d_observed;
  DeviceBuffer<GenericPass> d_pass;
  d_params.upload(params, stream);
  d_x0.upload(pr.initial_state(), stream);
  d_w0.upload(pr.initial_age(), stream);
  if (periods) d_period.upload(periods, n, stream);
  if (gains) d_gain.upload(gains, n, stream);
  if (observed) d_observed.upload(observed, n, stream);
  if (!pr.unit_costs) d_cost.upload(pr.population->cost, stream), s.columns.cost = d_cost.data();
  g.params = d_params.data();
  g.x0 = d_x0.data();
  g.period = periods ? d_period.data() : nullptr;
  g.gain = gains ? d_gain.data() : nullptr;
  g.observed = observed ? d_observed.data() : nullptr;
  d_pass.upload(&g, 1, stream);
  s.generic = d_pass.data();
  s.initial_x = d_x0.data();
  s.initial_w = d_w0.data();
  WideEngine engine(s, stream);
  return engine.run(observer);
}

RolloutOutput tall_rollout(const Problem& pr, Policy policy, cudaStream_t stream) {
  const auto t0 = std::chrono::steady_clock::now();
  const RunConfig& cfg = pr.config;
  const std::size_t n = pr.size();
  if (policy == Policy::static_rate && pr.static_period.size() != n)
    throw Error("internal: the static policy needs prepare_static_policy()");
  if (policy == Policy::lip && (pr.lip_period.size() != n || pr.lip_gain.size() != n))
    throw Error("internal: the lip policy needs prepare_lip_policy()");
  std::vector<SourceParams> params(n);
  for (std::size_t i = 0; i < n; ++i) params[i] = pr.params().at(i);
  DeviceBuffer<SourceParams> d_params;
  std::vector<unsigned long long> weight(n);
  for (std::size_t i = 0; i < n; ++i) weight[i] = fixed_weight(pr.population->cost[i], pr.weights);
  DeviceBuffer<unsigned long long> d_weight;
  d_weight.upload(weight, stream);
  DeviceBuffer<double> d_cost, d_x0, d_rep_reward(cfg.replications), d_rep_cost(cfg.replications),
      d_epoch_reward(cfg.epochs);
  DeviceBuffer<uint32_t> d_age0, d_period;
  DeviceBuffer<double> d_gain;
  d_params.upload(params, stream);
  d_cost.upload(pr.population->cost, stream);
  d_x0.upload(pr.initial_state(), stream);
  d_age0.upload(pr.initial_age(), stream);
  const uint32_t* periods = pr.policy_periods(policy);
  const double* gains = pr.policy_gains(policy);
  if (periods) d_period.upload(periods, n, stream);
  if (gains) d_gain.upload(gains, n, stream);
  TallLaunch a;
  a.n = int(n);
  a.params = d_params.data();
  a.cost = d_cost.data();
  a.weight = d_weight.data();
  a.x0 = d_x0.data();
  a.age0 = d_age0.data();
  a.period = periods ? d_period.data() : nullptr;
  a.gain = gains ? d_gain.data() : nullptr;
  a.multiplier = pr.lip_multiplier;
  a.observe = cfg.observe;
  a.first_replication = cfg.first_replication;
  a.policy = policy;
  a.model = cfg.model;
  a.utility = cfg.utility;
  a.limit = pr.weights.limit;
  a.replications = cfg.replications;
  a.burn_in = cfg.burn_in;
  a.epochs = cfg.epochs;
  // Ids that share their high half draw as their low halves under that half's key (rng.hpp,
  // draw_key): derived here once, so the kernel's draws take 32-bit ids and carry no derivation
  // (its registers made the kernel spill). tall_fits checks the population has one high half.
  const DrawKey key = draw_key(cfg.seed, pr.first_id);
  a.seed = uint64_t(key[0]) | uint64_t(key[1]) << 32;
  a.first_id = uint32_t(pr.first_id);
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

namespace {

__global__ void __launch_bounds__(32) probe_kernel() {}

/// Why no device is usable ("" when one is), found once: cudaGetDeviceCount's error in words (an
/// old driver is named as such, with both versions), and a device this binary has no code for.
const std::string& unavailable() {
  static const std::string reason = []() -> std::string {
    int count = 0, driver = 0, runtime = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    (void)cudaGetLastError();
    if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
    if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) runtime = 0;
    (void)cudaGetLastError();
    auto version = [](int v) {
      return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
    };
    if (e == cudaErrorInsufficientDriver) {
      if (driver == 0) return "no NVIDIA driver is installed";
      return "the NVIDIA driver supports CUDA " + version(driver) +
             ", older than the CUDA runtime " + version(runtime) +
             " this binary was built with: update the driver";
    }
    if (e == cudaErrorNoDevice || (e == cudaSuccess && count == 0)) return "no CUDA device";
    if (e != cudaSuccess)
      return std::string("no usable CUDA device (") + cudaGetErrorName(e) + ": " +
             cudaGetErrorString(e) + ")";
    // A device without code in this binary (a fat binary covers sm_80 to sm_120, PTX beyond;
    // docs/building.md).
    cudaFuncAttributes attr{};
    const cudaError_t k = cudaFuncGetAttributes(&attr, (const void*)probe_kernel);
    (void)cudaGetLastError();
    if (k != cudaSuccess) {
      int dev = 0, major = 0, minor = 0;
      (void)cudaGetDevice(&dev);
      (void)cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
      (void)cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
      (void)cudaGetLastError();
      return "this binary has no code for the GPU's sm_" + std::to_string(major) +
             std::to_string(minor) + " (" + cudaGetErrorName(k) +
             "): rebuild with -DCMAKE_CUDA_ARCHITECTURES=" + std::to_string(major) +
             std::to_string(minor) + " or -DCRAWLEVAL_CUDA_FAT=ON";
    }
    return {};
  }();
  return reason;
}

}  // namespace

int device_count() noexcept {
  try {
    if (!unavailable().empty()) return 0;
  } catch (...) {
    return 0;
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

std::string device_unavailable_reason() { return unavailable(); }

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

/// Whether every global id of the population has the same high 32 bits (the tall kernel's draws).
bool one_high_half(const Problem& pr) {
  return pr.size() == 0 || (pr.first_id >> 32) == ((pr.first_id + pr.size() - 1) >> 32);
}

bool tall_fits(const Problem& pr, const EpochObserver* observer) {
  return pr.size() <= std::size_t(detail::kTallMaxSources) && pr.config.replications > 1 &&
         observer == nullptr && one_high_half(pr);
}

/// The wide regime's epoch kernel draws the deterministic and exponential utility laws only
/// (rng.hpp, sample_arrivals<false>).
bool wide_law(const Problem& pr) {
  return pr.config.model == Model::deterministic ||
         pr.config.utility.law == UtilityLaw::deterministic ||
         pr.config.utility.law == UtilityLaw::exponential;
}

/// The wide regime's limits: 32-bit source ids, ages clear of the class bits.
bool wide_size(const Problem& pr) {
  return pr.size() <= std::size_t(window::kMaxId) && pr.total_epochs() < detail::kWideMaxEpochs;
}

/// The wide regime's fused passes: the base model and the laws they draw.
bool wide_fits(const Problem& pr, Policy policy) {
  return pr.base_model(policy) && wide_law(pr) && wide_size(pr);
}

}  // namespace

/// The empirical utility law's table lives in host memory (RunConfig::utility_table): not
/// uploaded yet.
bool host_table(const Problem& pr) {
  return pr.config.model == Model::stochastic && pr.config.utility.law == UtilityLaw::empirical;
}

bool supports(const Problem& pr, Policy, const EpochObserver* observer) {
  return !host_table(pr) && (wide_size(pr) || tall_fits(pr, observer));
}

bool generic_pass(const Problem& pr, Policy policy, const EpochObserver* observer) {
  return supports(pr, policy, observer) && !tall_fits(pr, observer) && !wide_fits(pr, policy);
}

DeviceScoreFn from_host(ScoreFn score) {
  struct Host {
    std::vector<double> state, age, scores;
  };
  auto host = std::make_shared<Host>();
  return [score = std::move(score), host](const DeviceScoreRequest& q) {
    Host& h = *host;
    h.state.resize(q.n), h.age.resize(q.n), h.scores.resize(q.n);
    CE_CUDA_TRY(cudaMemcpy(h.state.data(), q.state, q.n * sizeof(double), cudaMemcpyDeviceToHost));
    CE_CUDA_TRY(cudaMemcpy(h.age.data(), q.age, q.n * sizeof(double), cudaMemcpyDeviceToHost));
    const double* borrowed = nullptr;
    score(ScoreRequest{q.replication, q.epoch, q.n, h.state.data(), h.age.data(), h.scores.data(),
                       &borrowed});
    CE_CUDA_TRY(cudaMemcpy(q.scores, borrowed ? borrowed : h.scores.data(), q.n * sizeof(double),
                           cudaMemcpyHostToDevice));
  };
}

bool function_supports(const Problem& pr) {
  return !host_table(pr) && !pr.sharded() && wide_size(pr);
}

RolloutOutput function_rollout(const Problem& pr, const DeviceScoreFn& score,
                               const std::string& label, const EpochObserver* observer) {
  if (device_count() == 0) throw InputError(device_unavailable_reason());
  if (host_table(pr))
    throw InputError("policy '" + label +
                     "': the CUDA backend does not run the empirical utility law yet (its table "
                     "is not copied to the device); use backend cpu");
  if (!function_supports(pr))
    throw InputError("policy '" + label + "': the CUDA backend runs score functions in one " +
                     "process, on at most " + std::to_string(window::kMaxId) + " sources and " +
                     std::to_string(detail::kWideMaxEpochs) + " epochs; use backend cpu");
  detail::Stream stream;
  return detail::generic_rollout(pr, Policy::whittle, observer, stream, &score);
}

RolloutOutput rollout(const Problem& pr, Policy policy, const EpochObserver* observer) {
  if (device_count() == 0) throw InputError(device_unavailable_reason());
  if (host_table(pr))
    throw InputError(
        "the CUDA backend does not run the empirical utility law yet (its table is not copied to "
        "the device); use --backend cpu");
  if (!supports(pr, policy, observer))
    throw InputError("the CUDA backend's wide regime runs at most " +
                     std::to_string(detail::kWideMaxEpochs) + " epochs and " +
                     std::to_string(window::kMaxId) + " sources; use --backend cpu");
  detail::Stream stream;
  if (tall_fits(pr, observer)) return detail::tall_rollout(pr, policy, stream);
  if (wide_fits(pr, policy)) return detail::wide_rollout(pr, policy, observer, stream);
  return detail::generic_rollout(pr, policy, observer, stream);
}

}  // namespace crawleval::cuda
