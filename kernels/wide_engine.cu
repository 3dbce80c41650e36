// The wide regime's host orchestration (wide_engine.cuh). Per scored epoch it enqueues, in stream
// order and without waiting: the epoch kernel, the fallback pass, kGridSteps step kernels, the
// tie-tile kernel and the mark kernel (the listed sources' classes); each returns at once when
// its phase is not the selection's current one. Per replication: one fill and one state reset.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "generic_pass.cuh"
#include "launch.cuh"
#include "wide_engine.cuh"

namespace crawleval::cuda::detail {

namespace {

__global__ void __launch_bounds__(kThreads)
    fill_words_kernel(uint32_t* p, std::size_t n, uint32_t v) {
  for (std::size_t i = blockIdx.x * std::size_t(kThreads) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * kThreads)
    p[i] = v;
}

double gib(std::size_t b) { return double(b) / double(1ull << 30); }

/// out[j] = scores[j * n / m], j < m: a score function's first scores at sample_first_plan's
/// sources, gathered for one copy to the host.
__global__ void __launch_bounds__(kThreads)
    gather_sample_kernel(const double* scores, std::size_t n, std::size_t m, double* out) {
  for (std::size_t j = blockIdx.x * std::size_t(kThreads) + threadIdx.x; j < m;
       j += std::size_t(gridDim.x) * kThreads)
    out[j] = scores[j * n / m];
}

}  // namespace

std::size_t wide_column_bytes(std::size_t n, Model model, bool unit_costs, Start start) {
  std::size_t b = 2 * sizeof(double);  // mu_t, u_star
  if (model == Model::stochastic)
    b += 3 * sizeof(double);  // lambda_t, xi, initial state
  else if (start == Start::given)
    b += sizeof(double);  // x0
  if (!unit_costs) b += sizeof(double);
  return n * b;
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

window::Plan sample_first_plan(uint64_t n, const FixedBudget& budget, bool unit_costs,
                               const std::function<std::pair<double, double>(uint64_t)>& source) {
  const uint64_t m = std::min<uint64_t>(n, kPlanSample);
  std::vector<std::pair<uint64_t, uint64_t>> sample;
  sample.reserve(m);
  for (uint64_t j = 0; j < m; ++j) {
    const uint64_t i = j * n / m;
    const std::pair<double, double> sc = source(i);
    sample.emplace_back(score_key(sc.first), unit_costs ? 1ull : fixed_weight(sc.second, budget));
  }
  return window::initial_plan(std::move(sample), n, budget.limit);
}

int dormant_setting(const WideSetup& s, bool observed) {
  // Read as the CPU engine reads it (cpu_backend.cpp, dormant_tuning), but unset means off.
  const char* v = std::getenv("CRAWLEVAL_DORMANT");
  const std::string mode = v ? v : "";
  const int asked = mode == "eager" ? kDormantEager
                    : mode.empty() || mode == "0" || mode == "off" || mode == "false" ? kDormantOff
                                                                                      : kDormantOn;
  const RunConfig& c = s.config;
  const bool fits = c.model == Model::deterministic &&
                    (s.policy == Policy::whittle || s.policy == Policy::greedy) && !s.generic &&
                    !s.fn && (c.start == Start::empty || c.start == Start::fresh) && !observed;
  return fits ? asked : kDormantOff;
}

WideEngine::Grid WideEngine::grid(const WideSetup& s) {
  const std::size_t n = s.columns.n;
  const uint64_t tiles = (n + window::kTile - 1) / window::kTile;
  Grid g;
  g.blocks = s.generic ? generic_blocks(s.unit_costs, false, std::max<uint64_t>(tiles, 1))
                       : epoch_blocks(s.policy, s.config.model, s.unit_costs,
                                      std::max<uint64_t>(tiles, 1));
  g.step_blocks = resident_blocks(
      s.unit_costs ? (const void*)step_kernel<true> : (const void*)step_kernel<false>,
      std::max<uint64_t>((n + kThreads - 1) / kThreads, 1));
  return g;
}

std::size_t WideEngine::device_bytes(const WideSetup& s, bool observed) {
  const std::size_t n = s.columns.n;
  const Grid g = grid(s);
  const bool det = s.config.model == Model::deterministic;
  const uint64_t total = s.config.burn_in + s.config.epochs;
  const std::size_t slots = tile_slots(n);
  std::size_t b = s.generic ? n * (sizeof(double) + sizeof(uint32_t) + sizeof(uint8_t))
                  : det     ? n * sizeof(uint32_t)
                        : n * (sizeof(double) + sizeof(uint8_t)) + slots / 32 * sizeof(uint32_t) +
                              slots * sizeof(double);
  if (observed) b += n * sizeof(uint64_t);
  if (s.fn)  // seen, seen_age, collected, scores; the first plan's sample
    b += 4 * n * sizeof(double) + std::min<std::size_t>(n, kPlanSample) * sizeof(double);
  b += std::size_t(g.blocks) * sizeof(double2) + 2 * std::size_t(total) * sizeof(double) +
       2 * std::size_t(s.config.replications) * sizeof(double);
  if (s.dormant != kDormantOff) b += DormantPass::device_bytes(n, s.unit_costs, g.blocks);
  return b + SelectStorage::device_bytes(n, s.unit_costs, g.blocks, g.step_blocks);
}

WideEngine::WideEngine(const WideSetup& s, cudaStream_t stream)
    : s_(s),
      stream_(stream),
      n_(s.columns.n),
      det_(s.config.model == Model::deterministic),
      generic_(s.generic != nullptr),
      words_(det_ && !generic_),
      arrivals_(!det_ && !generic_) {
  require_device_memory(device_bytes(s_), "the wide engine for " + std::to_string(n_) + " sources");
  const Grid g = grid(s_);
  blocks_ = g.blocks;
  step_blocks_ = g.step_blocks;
  mark_blocks_ = step_blocks_;
  if (det_ || generic_) age_.resize(n_);
  if (!words_) {
    x_.resize(n_);
    cls_.resize(n_);
  }
  if (arrivals_) {
    const std::size_t slots = tile_slots(n_);
    arrival_flags_.resize(slots / 32);
    arrival_sums_.resize(slots);
    arrival_blocks_ = arrivals_blocks(slots / window::kTile);
  }
  if (s_.fn) {
    sample_.resize(std::min<std::size_t>(n_, kPlanSample));
    seen_.resize(n_);
    seen_age_.resize(n_);
    collected_.resize(n_);
    scores_.resize(n_);
  }
  partial_.resize(blocks_);
  const uint64_t total = s_.config.burn_in + s_.config.epochs;
  epoch_reward_.resize(total);
  epoch_cost_.resize(total);
  sums_.resize(2 * std::size_t(s_.config.replications));
  storage_.prepare(n_, s_.unit_costs, blocks_, step_blocks_, s_.budget.limit, stream_);
  if (s_.dormant != kDormantOff && n_ > 0)
    dormant_ = std::make_unique<DormantPass>(n_, s_.unit_costs, blocks_,
                                             s_.dormant == kDormantEager, stream_);
}

int WideEngine::launches_per_epoch() const {
  return 4 + kGridSteps + (dormant_ ? kDormantLaunches : 0) + (arrivals_ ? 1 : 0);
}

void WideEngine::observe(uint32_t rep, uint64_t t, const EpochObserver& observer,
                         RolloutOutput& out) {
  const Problem& pr = *s_.host_problem;
  std::vector<uint64_t> keys(n_);
  keys_.download(keys.data(), n_, stream_);
  std::vector<double> x(n_);
  std::vector<uint32_t> age;
  if (words_) {
    age.resize(n_);
    age_.download(age.data(), n_, stream_);
  } else {
    x_.download(x.data(), n_, stream_);
  }
  const window::SelectState st = storage_.download_state(stream_);  // synchronises
  out.counters.syncs += 1;
  if (!age.empty())
    for (std::size_t i = 0; i < n_; ++i) {
      double om;
      x[i] = AgeState::value(age[i] & ~kClassMask, uint32_t(t), pr.initial_state()[i],
                             pr.params().at(i), &om);
    }
  std::vector<uint32_t> selected;
  double reward = 0.0;
  for (std::size_t i = 0; i < n_; ++i)
    if (is_selected(keys[i], i, st.applied.sel)) selected.push_back(uint32_t(i)), reward += x[i];
  observer(EpochView{rep, t, &selected, reward, &x, nullptr});
}

uint64_t WideEngine::start_replication() {
  const RunConfig& cfg = s_.config;
  if (generic_) {
    CE_CUDA_TRY(cudaMemcpyAsync(x_.data(), s_.initial_x, n_ * sizeof(double),
                                cudaMemcpyDeviceToDevice, stream_));
    CE_CUDA_TRY(cudaMemcpyAsync(age_.data(), s_.initial_w, n_ * sizeof(uint32_t),
                                cudaMemcpyDeviceToDevice, stream_));
    cls_.zero(stream_);
    return 0;
  }
  if (det_) {
    const uint32_t word = cfg.start == Start::empty   ? 0u
                          : cfg.start == Start::fresh ? 1u
                                                      : AgeState::kOffGrid;
    fill_words_kernel<<<grid_for(n_, kThreads), kThreads, 0, stream_>>>(age_.data(), n_, word);
    CE_CUDA_CHECK_LAUNCH();
    return 1;
  }
  if (s_.initial_x)
    CE_CUDA_TRY(cudaMemcpyAsync(x_.data(), s_.initial_x, n_ * sizeof(double),
                                cudaMemcpyDeviceToDevice, stream_));
  else
    x_.zero(stream_);
  cls_.zero(stream_);
  return 0;
}

uint64_t WideEngine::enqueue_epoch(const EpochLaunch& a) {
  const RunConfig& cfg = s_.config;
  if (arrivals_ && a.apply) launch_arrivals(a, arrival_blocks_, stream_);
  if (generic_)
    launch_generic_epoch(s_.unit_costs, false, a, blocks_, stream_);
  else
    launch_epoch(s_.policy, cfg.model, s_.unit_costs, a, blocks_, stream_);
  // With sleeping sources, one of the two passes returns at once (the mode is on the device).
  if (dormant_) launch_live_epoch(s_.policy, s_.unit_costs, a, dormant_->view(), blocks_, stream_);
  if (!a.score) return 1 + (dormant_ ? 1 : 0) + (arrivals_ && a.apply ? 1 : 0);
  enqueue_select(a, false);
  return uint64_t(launches_per_epoch()) - (arrivals_ && !a.apply ? 1 : 0);
}

void WideEngine::enqueue_select(const EpochLaunch& a, bool from_array) {
  const RunConfig& cfg = s_.config;
  // With sleeping sources, every source wakes before a kernel that reads every source by id.
  const DormantLaunch* d = dormant_ ? &dormant_->view() : nullptr;
  auto flush = [&](wide::Point point) {
    if (d) launch_flush(s_.policy, s_.unit_costs, a, *d, point, blocks_, stream_);
  };
  flush(wide::kAfterScore);
  if (generic_)
    launch_generic_fallback(s_.unit_costs, from_array, a, blocks_, stream_);
  else
    launch_fallback(s_.policy, cfg.model, s_.unit_costs, a, blocks_, stream_);
  launch_steps(a.sb, step_blocks_, stream_);
  flush(wide::kBeforeTie);
  if (generic_)
    launch_generic_tie_tile(s_.unit_costs, from_array, a, stream_);
  else
    launch_tie_tile(s_.policy, cfg.model, s_.unit_costs, a, stream_);
  if (d) launch_decide(a, *d, stream_);
  flush(wide::kAtEnd);
  // While sources sleep, the mark writes the listed (live) sources' classes into words in the
  // population's order that wait for a flush, which rewrites them from the slots: the live pass
  // recomputes those sources' own keys instead.
  launch_mark(a.sb, cls_.data(), words_ ? age_.data() : nullptr, mark_blocks_, stream_);
  if (d) launch_sleep(s_.policy, s_.unit_costs, a, *d, blocks_, stream_);
}

uint64_t WideEngine::function_epoch(EpochLaunch& a, uint64_t t) {
  // Launch A: apply epoch t-1's selection, move every source, write what the function observes.
  EpochLaunch move = a;
  move.score = false;
  move.observing = a.score;
  launch_generic_epoch(s_.unit_costs, false, move, blocks_, stream_);
  if (!a.score) return 1;
  // The function, once its arrays are ready; it may run on any stream, so the whole device is
  // waited for before its scores are read.
  CE_CUDA_TRY(cudaStreamSynchronize(stream_));
  int device = 0;
  CE_CUDA_TRY(cudaGetDevice(&device));
  const double* borrowed = nullptr;
  (*s_.fn)(DeviceScoreRequest{a.replication, t, n_, seen_.data(), seen_age_.data(),
                              collected_.data(), scores_.data(), &borrowed, device});
  CE_CUDA_TRY(cudaDeviceSynchronize());
  a.user_scores = borrowed ? borrowed : scores_.data();
  uint64_t launches = 1;
  if (t == 0) {  // the first plan, from a sample of the function's first scores
    const Problem& pr = *s_.host_problem;
    const std::size_t m = std::min<std::size_t>(n_, kPlanSample);
    std::vector<double> score(m);
    gather_sample_kernel<<<grid_for(m, kThreads), kThreads, 0, stream_>>>(a.user_scores, n_, m,
                                                                          sample_.data());
    CE_CUDA_CHECK_LAUNCH();
    sample_.download(score.data(), m, stream_);
    CE_CUDA_TRY(cudaStreamSynchronize(stream_));
    ++launches;
    std::vector<std::pair<uint64_t, uint64_t>> sample;
    for (std::size_t j = 0; j < m; ++j)
      sample.emplace_back(
          score_key(score[j]),
          s_.unit_costs ? 1ull : fixed_weight(pr.population->cost_of(j * n_ / m), s_.budget));
    storage_.reset(window::initial_plan(std::move(sample), n_, s_.budget.limit), stream_);
    ++launches;
  }
  // Launch B: the scores into the selection.
  EpochLaunch scoring = a;
  scoring.apply = false;
  scoring.seen = nullptr;
  launch_generic_epoch(s_.unit_costs, true, scoring, blocks_, stream_);
  enqueue_select(scoring, true);
  return launches + uint64_t(launches_per_epoch());
}

RolloutOutput WideEngine::run(const EpochObserver* observer) {
  const auto t0 = std::chrono::steady_clock::now();
  const RunConfig& cfg = s_.config;
  const uint64_t total = cfg.burn_in + cfg.epochs;
  const uint32_t reps = cfg.replications;
  RolloutOutput out;
  if (n_ == 0) {
    out.replication_reward.assign(reps, 0.0);
    out.replication_cost.assign(reps, 0.0);
    out.epoch_reward.assign(cfg.epochs, 0.0);
    return out;
  }
  if (observer) keys_.resize(n_);
  sums_.zero(stream_);
  // Device time: the whole run, and the measured epochs of the first replications.
  constexpr uint32_t kTimedReps = 1024;
  const uint32_t timed = std::min(reps, kTimedReps);
  std::vector<cudaEvent_t> ev(2 + 2 * std::size_t(timed));
  for (auto& e : ev) CE_CUDA_TRY(cudaEventCreate(&e));
  auto destroy = [&] {
    for (auto& e : ev) CE_CUDA_TRY_NOTHROW(cudaEventDestroy(e));
  };
  uint64_t& launches = out.counters.launches;
  try {
    CE_CUDA_TRY(cudaEventRecord(ev[0], stream_));
    EpochLaunch a;
    a.src = s_.columns;
    a.age = age_.data();
    a.x = x_.data();
    a.cls = cls_.data();
    a.arrival_flags = arrival_flags_.data();
    a.arrival_sums = arrival_sums_.data();
    a.keys = observer ? keys_.data() : nullptr;
    a.generic = s_.generic;
    if (s_.fn) {
      a.seen = seen_.data();
      a.seen_age = seen_age_.data();
      a.collected = collected_.data();
    }
    a.seed = cfg.seed;
    a.first_id = s_.first_id;
    a.utility = cfg.utility;
    a.weights = s_.budget;
    a.partial = partial_.data();
    a.sb = storage_.view();
    if (dormant_) {
      if (observer) throw Error("internal: sleeping sources with an observer");
      a.dormant = dormant_->view().state;
    }
    for (uint32_t rep = 0; rep < reps; ++rep) {
      launches += start_replication();
      if (dormant_) dormant_->start_replication(stream_), ++launches;
      // A score function's first plan comes from its first scores (function_epoch).
      if (!s_.fn) storage_.reset(s_.first_plan, stream_), ++launches;
      a.replication = cfg.first_replication + rep;
      a.sums = sums_.data() + 2 * std::size_t(rep);
      a.epoch_reward = rep == 0 ? epoch_reward_.data() : nullptr;
      a.epoch_cost = rep == 0 ? epoch_cost_.data() : nullptr;
      for (uint64_t t = 0; t <= total; ++t) {
        if (rep < timed && t == cfg.burn_in) CE_CUDA_TRY(cudaEventRecord(ev[2 + 2 * rep], stream_));
        a.apply = t > 0;
        a.score = t < total;
        a.prev_epoch = uint32_t(t - 1);
        a.now_epoch = uint32_t(t);
        a.measured = t > cfg.burn_in;
        launches += s_.fn ? function_epoch(a, t) : enqueue_epoch(a);
        if (rep < timed && t + 1 == total) CE_CUDA_TRY(cudaEventRecord(ev[3 + 2 * rep], stream_));
        if (observer && a.score) observe(rep, t, *observer, out);
      }
    }
    CE_CUDA_TRY(cudaEventRecord(ev[1], stream_));
    // The run's only wait: sums, per-epoch rewards, the selection's diagnostics.
    std::vector<double> sums(2 * std::size_t(reps)), rewards(total), costs(total);
    sums_.download(sums.data(), sums.size(), stream_);
    epoch_reward_.download(rewards.data(), total, stream_);
    const window::SelectState st = storage_.download_state(stream_);
    out.counters.syncs += 1;
    if (st.diag.failures)
      throw Error("internal: the GPU selection failed in " + std::to_string(st.diag.failures) +
                  " epoch(s) (window select state " + std::to_string(st.phase) + ")");
    float ms = 0.0f;
    CE_CUDA_TRY(cudaEventElapsedTime(&ms, ev[0], ev[1]));
    out.loop_seconds = double(ms) / 1e3;
    double steady = 0.0;
    for (uint32_t r = 0; r < timed; ++r) {
      CE_CUDA_TRY(cudaEventElapsedTime(&ms, ev[2 + 2 * r], ev[3 + 2 * r]));
      steady += double(ms) / 1e3;
    }
    out.steady_seconds = steady * double(reps) / double(timed);
    for (uint32_t r = 0; r < reps; ++r) {
      out.replication_reward.push_back(sums[2 * r] / double(cfg.epochs));
      out.replication_cost.push_back(sums[2 * r + 1] / double(cfg.epochs));
    }
    out.epoch_reward.assign(rewards.begin() + long(cfg.burn_in), rewards.end());
    out.counters.selections = st.diag.epochs;
    out.counters.window_misses = st.diag.misses;
    out.counters.levels = st.diag.levels;
    out.counters.tie_scans = st.diag.tie_scans;
    out.counters.listed = st.diag.listed;
    out.counters.recounts = st.diag.recounts;
    if (dormant_) {
      const wide::DormantState ds = dormant_->download(stream_);
      out.counters.dormant = ds.asleep_epochs;
      out.counters.dormant_wakes = ds.wakes;
    }
  } catch (...) {
    destroy();
    throw;
  }
  destroy();
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace crawleval::cuda::detail
