// One GPU per rank (keyed_rollout.hpp): the epochs of a rank whose pass runs elsewhere (a device,
// or the host twin), as an agent of the CPU engines' one epoch loop (epoch_loop.hpp), with the
// selection and the sums taken by the epoch layer. The host twin is here too: the pass's
// per-source step (generic_keyed_step) and its chunk sums, on the host.
#include "crawleval/engine/keyed_rollout.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>

#include "base/progress.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/engine/epoch_collective.hpp"
#include "crawleval/model/selection.hpp"
#include "engine/cpu/epoch_loop.hpp"

namespace crawleval {

namespace detail {

KeyedColumns keyed_columns(const Problem& pr, Policy policy, bool function) {
  if (function) policy = Policy::whittle;  // (not read: the function scores)
  const std::size_t n = pr.size();
  const RunConfig& cfg = pr.config;
  if (policy == Policy::static_rate && pr.static_period.size() != n)
    throw Error("internal: the static policy needs prepare_static_policy()");
  if (policy == Policy::lip && (pr.lip_period.size() != n || pr.lip_gain.size() != n))
    throw Error("internal: the lip policy needs prepare_lip_policy()");
  KeyedColumns k;
  k.params.resize(n);
  k.x0.resize(n);
  k.w0.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    k.params[i] = pr.params().at(i);
    const InitialState s = pr.initial_at(i);
    k.x0[i] = s.x;
    k.w0[i] = s.age;
  }
  if (!pr.unit_costs) {
    k.cost.resize(n);
    for (std::size_t i = 0; i < n; ++i) k.cost[i] = pr.population->cost_of(i);
  }
  k.function = function;
  if (function && pr.observe_column_applies()) k.observed = pr.population->observe;
  GenericPass& g = k.pass;
  g.params = k.params.data();
  g.x0 = k.x0.data();
  g.period = pr.policy_periods(policy);
  g.gain = pr.policy_gains(policy);
  g.policy = policy;
  g.observe = cfg.observe;
  g.deterministic = cfg.model == Model::deterministic;
  g.utility = cfg.utility;
  g.seed = cfg.seed;
  g.first_id = pr.first_id + pr.shard.first;
  g.base = pr.shard.first;
  g.n = pr.global_size();
  g.multiplier = pr.lip_multiplier;
  g.observed = k.observed.empty() ? nullptr : k.observed.data();
  return k;
}

namespace {

class HostKeyedPass final : public KeyedPass {
 public:
  HostKeyedPass(const Problem& pr, Policy policy, bool function)
      : k_(keyed_columns(pr, policy, function)), n_(pr.size()), x_(n_), w_(n_), key_(n_) {}

  void start() override {
    x_ = k_.x0;
    w_ = k_.w0;
    std::fill(key_.begin(), key_.end(), 0);
  }
  void run(const KeyedEpoch& e, double* sums, uint64_t* keys, double* seen, double* age) override {
    const std::size_t chunks = (n_ + kKeyedChunk - 1) / kKeyedChunk;
    for (std::size_t c = 0; c < chunks; ++c) {
      double reward = 0.0, spent = 0.0;
      for (std::size_t i = c * kKeyedChunk; i < std::min(n_, (c + 1) * kKeyedChunk); ++i) {
        bool crawled;
        const double r = generic_keyed_step(k_.pass, i, e, x_.data(), w_.data(), key_.data(), seen,
                                            age, &crawled);
        if (crawled) reward += r, spent += k_.cost.empty() ? 1.0 : k_.cost[i];
      }
      if (e.apply) sums[c] = reward, sums[chunks + c] = spent;
    }
    if (e.score) std::copy(key_.begin(), key_.end(), keys);
  }
  void set_keys(const uint64_t* keys) override { std::copy(keys, keys + n_, key_.begin()); }
  void states(double* x) override { std::copy(x_.begin(), x_.end(), x); }

 private:
  KeyedColumns k_;
  std::size_t n_;
  std::vector<double> x_;
  std::vector<uint32_t> w_;
  std::vector<uint64_t> key_;
};

}  // namespace

std::unique_ptr<KeyedPass> host_keyed_pass(const Problem& pr, Policy policy, bool function) {
  return std::make_unique<HostKeyedPass>(pr, policy, function);
}

namespace {

/// One replication of one rank: the agent of run_epochs. Iteration t launches the pass (apply
/// epoch t - 1's selection, score epoch t), hands the chunk sums to the layer, then selects epoch
/// t over every rank from the keys.
class KeyedRun {
 public:
  KeyedRun(const Problem& pr, KeyedPass& pass, EpochCollective& layer,
           const EpochObserver* observer, const ScoreFn* fn)
      : pr_(pr),
        pass_(pass),
        layer_(layer),
        observer_(observer),
        fn_(fn),
        n_(pr.size()),
        total_(pr.total_epochs()),
        keys_(n_),
        seen_(fn ? n_ : 0),
        age_(fn ? n_ : 0),
        scores_(fn ? n_ : 0) {
    if (!pr.unit_costs) {
      weights_.resize(n_);
      for (std::size_t i = 0; i < n_; ++i)
        weights_[i] = fixed_weight(pr.population->cost_of(i), pr.weights);
    }
  }

  ReplicationResult replicate(uint32_t k, std::vector<double>* epoch_reward,
                              const EpochTicks& ticks) {
    rep_ = k;
    r_ = pr_.config.first_replication + k;
    sel_ = Selection{};
    pointer_ = 0;
    res_ = ReplicationResult{};
    epoch_reward_ = epoch_reward;
    pass_.start();
    layer_.begin_sums(2, kKeyedChunk, pr_.config.epochs, observer_ != nullptr);
    const ReplicationResult timed = run_epochs(*this, pr_.config.burn_in, total_, ticks);
    res_.measured_seconds = timed.measured_seconds;
    res_.measured_epochs = timed.measured_epochs;
    return res_;
  }

  void pass(uint64_t t) {
    KeyedEpoch e;
    e.prev = sel_;
    e.pointer = pointer_;
    e.replication = r_;
    e.prev_epoch = uint32_t(t - 1);
    e.epoch = uint32_t(t);
    e.apply = t > 0;
    e.score = !fn_ && t < total_;
    e.observe = fn_ && t < total_;
    pass_.run(e, layer_.sums(), keys_.data(), seen_.data(), age_.data());
    if (e.observe) function_keys(t);
  }
  void commit() { layer_.commit(add()); }
  void select(uint64_t t) {
    sel_ = layer_.select(keys_.data(), weights_.empty() ? nullptr : weights_.data(), pr_.unit_costs,
                         pr_.weights.limit);
    if (!sel_.all) pointer_ = sel_.stop_id;  // (round robin's, as window::finalize keeps it)
    if (observer_) observe(t);
  }
  void flush() { layer_.flush(add()); }

 private:
  // The function's scores for epoch t as keys. Under MPI a function that fails on one rank fails
  // the run on every rank (the others would wait for it at the selection's collectives).
  void function_keys(uint64_t t) {
    const bool single = layer_.single();
    const double* borrowed = nullptr;
    std::exception_ptr failure;
    try {
      (*fn_)(ScoreRequest{r_, t, n_, seen_.data(), age_.data(), scores_.data(), &borrowed,
                          single ? 0 : pr_.shard.first, single ? nullptr : &layer_.comm()});
    } catch (...) {
      failure = std::current_exception();
    }
    if (!single && layer_.comm().any(failure != nullptr) && !failure)
      throw InputError(
          "a score function failed on another process (its message is that process's)");
    if (failure) std::rethrow_exception(failure);
    const double* s = borrowed ? borrowed : scores_.data();
    for (std::size_t i = 0; i < n_; ++i) keys_[i] = score_key(s[i]);
    pass_.set_keys(keys_.data());
  }
  EpochCollective::Totals add() {
    return [this](const double* s) {
      res_.reward_sum += s[0];
      res_.cost_sum += s[1];
      if (epoch_reward_) epoch_reward_->push_back(s[0]);
    };
  }
  // The crawled ids of every rank and the sum of their states, as the CPU engines report them.
  void observe(uint64_t t) {
    states_.resize(n_);
    pass_.states(states_.data());
    std::vector<uint64_t> mine;
    std::vector<double> crawled_x;
    for (std::size_t i = 0; i < n_; ++i)
      if (is_selected(keys_[i], pr_.shard.first + i, sel_))
        mine.push_back(pr_.shard.first + i), crawled_x.push_back(states_[i]);
    const std::vector<uint64_t> all = layer_.gather(mine);
    const std::vector<uint32_t> ids(all.begin(), all.end());  // observers see < 2^32 sources
    (*observer_)(EpochView{rep_, t, &ids, layer_.sum_in_order(crawled_x), nullptr, nullptr});
  }

  const Problem& pr_;
  KeyedPass& pass_;
  EpochCollective& layer_;
  const EpochObserver* const observer_;
  const ScoreFn* const fn_;
  const std::size_t n_;
  const uint64_t total_;
  std::vector<uint64_t> keys_, weights_;
  std::vector<double> states_, seen_, age_, scores_;
  Selection sel_;
  uint64_t pointer_ = 0;
  uint32_t rep_ = 0, r_ = 0;
  ReplicationResult res_;
  std::vector<double>* epoch_reward_ = nullptr;
};

}  // namespace

}  // namespace detail

std::string keyed_refusal(const Problem& pr, Policy) {
  if (pr.config.model == Model::stochastic && pr.config.utility.law == UtilityLaw::empirical)
    return "the empirical utility law's table is not copied to the device: use --backend cpu";
  if (pr.size() > kMaxLocalSources)
    return "a rank holds at most 4,294,967,294 sources on a GPU: use more ranks";
  return "";
}

RolloutOutput keyed_rollout(const Problem& pr, Policy policy, Comm& comm, detail::KeyedPass& pass,
                            const EpochObserver* observer, const ScoreFn* fn) {
  const auto t0 = std::chrono::steady_clock::now();
  const RunConfig& cfg = pr.config;
  CE_EXPECTS(comm.size() > 1 || !pr.sharded(), "internal: a shard needs its processes");
  if (observer && pr.global_size() > kMaxLocalSources)  // EpochView's positions are 32-bit
    throw Error("internal: an epoch observer sees at most 4,294,967,294 sources");
  const uint32_t reps = cfg.replications;
  RolloutOutput out;
  out.replication_reward.resize(reps);
  out.replication_cost.resize(reps);
  out.epoch_reward.reserve(cfg.epochs);
  std::atomic<uint64_t> done{0};
  const bool shared = comm.size() > 1;
  detail::Progress progress(cfg.progress && comm.rank() == 0,
                            fn ? "score function" : to_string(policy),
                            uint64_t(reps) * pr.total_epochs());
  // (The selection's passes over the keys on the host's threads.)
  const int threads = cfg.threads > 0 ? cfg.threads : omp_get_max_threads();
  EpochCollective layer(comm, pr.shard.first, pr.size(), pr.global_size(), threads);
  detail::KeyedRun run(pr, pass, layer, observer, fn);
  const auto loop_start = std::chrono::steady_clock::now();
  for (uint32_t k = 0; k < reps; ++k) {
    // (Under MPI a stop is one process's signal: the run goes on, as on the CPU engines.)
    const detail::ReplicationResult res = run.replicate(
        k, k == 0 ? &out.epoch_reward : nullptr, {&done, &progress, shared ? nullptr : &progress});
    out.replication_reward[k] = res.reward_sum / double(cfg.epochs);
    out.replication_cost[k] = res.cost_sum / double(cfg.epochs);
    out.measured_seconds += res.measured_seconds;
    out.measured_epochs += res.measured_epochs;
    if (!shared && progress.stopped()) break;
  }
  if (!shared) progress.throw_if_stopped();
  const auto end = std::chrono::steady_clock::now();
  out.comm_seconds = layer.traffic().seconds;
  out.seconds = std::chrono::duration<double>(end - t0).count();
  out.loop_seconds = std::chrono::duration<double>(end - loop_start).count();
  return out;
}

}  // namespace crawleval
