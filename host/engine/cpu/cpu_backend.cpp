// The CPU backend: the fast path on machines without a GPU. Two engines (docs/cpu-design.md),
// each an agent of the CPU engines' one epoch loop (epoch_loop.hpp's run_epochs):
//
// Wide (N > kSmallN): one fused pass over the sources per epoch, in chunks of kChunk sources
// handed to threads dynamically (a descheduled thread holds up one chunk, not half the epoch):
//   a. apply epoch t-1's selection from each source's class (window_select.hpp: kAbove crawled,
//      kBelow not, kTie by id against the stop) and collect the reward;
//   b. move every source to its next state (eq. 2-3 / 19);
//   c. score the new state and record it in the windowed radix select (the thread's histogram;
//      sources near the previous epoch's boundary are listed, members of the previous stop's tie
//      group only counted); store the class.
// No key is stored per source. The selection (steps 2-5) then runs on the listed few percent of
// the sources; a fallback pass recomputes the scores from the stored states only when the window
// missed. The deterministic Whittle pass resolves the sources listed by the previous selection
// itself (kCandidate: the key of the state it reads against the stop, as the GPU does); the other
// engines give them their final class (kAbove or kBelow) by one scatter over the list.
// The deterministic Whittle policy keeps per source the state x, one 32-bit word (age on the
// grid, a flag, the class) and reads the columns alpha and u: 40 bytes per source and epoch with
// unit costs, 48 with costs (which also read C).
//
// Small (N <= kSmallN): serial inner loops and selection by sorting; many replications of a small
// population run side by side, one per thread (the tall regime).
//
// A policy given as a score function (function_rollout: a user's or a paper's policy) runs on the
// wide engine's general model for any N, in one process or over MPI ranks: the pass applies the
// selection and moves every source, writing what the function observes (the state, or its
// expectation under belief, and the age); one call of the function per epoch; then a pass records
// its scores in the selection. A function that computes a built-in policy's scores gets that
// policy's crawled sets and rewards bit for bit.
//
// Reward sums are taken per fixed chunk of sources and added in chunk order: the result does not
// depend on the number of threads or on which thread ran which chunk. Buffers are allocated
// before the epoch loop (the candidate lists grow to their largest size in the first epochs and
// keep it).
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>

#include "base/progress.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/engine/epoch_collective.hpp"
#include "crawleval/engine/rollout.hpp"
#include "crawleval/model/policy.hpp"
#include "crawleval/model/selection.hpp"
#include "engine/cpu/arrival_words.hpp"
#include "engine/cpu/det_whittle_avx512.hpp"
#include "engine/cpu/dormant.hpp"
#include "engine/cpu/epoch_loop.hpp"
#include "engine/cpu/source_step.hpp"
#include "engine/cpu/thread_governor.hpp"
#include "engine/cpu/whittle_avx512.hpp"
#include "select/cpu_select.hpp"
#include "select/window_selector.hpp"

namespace crawleval {

namespace {

using namespace detail;

constexpr std::size_t kChunk = std::size_t(1) << 14;
static_assert(kChunk % window::kTile == 0, "a tie tile must lie in one chunk");
constexpr std::size_t kSmallN = kCpuSmallN;  // up to this, select by sorting
/// Epochs a thread runs between two progress updates in the tall regime (a shared counter
/// touched every epoch by every thread would cost more than a small epoch).
constexpr uint64_t kProgressBatch = 256;

/// The deterministic Whittle engine's word per source: source_step.hpp's det_word (age on the
/// grid, kGeneral) with the class in bits 30-31.
namespace word {
using namespace det_word;
inline uint32_t cls(uint32_t w) { return w >> kClassShift; }
inline uint32_t with_class(uint32_t w, uint32_t c) { return (w & kStateMask) | (c << kClassShift); }
}  // namespace word

using detail::ReplicationResult;

/// What a replication reports besides its result.
struct Sinks {
  const EpochObserver* observer = nullptr;
  std::vector<double>* epoch_reward = nullptr;  // replication 0's per-epoch rewards
  std::atomic<uint64_t>* done = nullptr;        // epochs done (progress)
  detail::Progress* progress = nullptr;         // the thread that reports progress
  EngineCounters* counters = nullptr;           // the wide engine's selection figures
  const detail::Progress* stop = nullptr;       // every thread: stop between epochs once stopped()
};

// ---- wide engine ------------------------------------------------------------------------------

/// A policy given as a score function (function_rollout): the general model's transitions, then
/// one call of the function per epoch on what it observes, then the selection's records.
struct ScorePolicy {
  const ScoreFn* fn = nullptr;
  const ScoreBuffers* buffers = nullptr;  // the caller's arrays (one process), or null
  std::vector<double> seen, age, scores;  // the engine's own, where the caller gives none
};

/// When the deterministic Whittle pass splits its chunks into live and dormant sources
/// (dormant.hpp): the epochs between two splits that raise the bound (doubled after each forced
/// wake, lowered bound or split that found nothing to put to sleep, halved again after every 512
/// calm epochs) and between two catch-ups. CRAWLEVAL_DORMANT=0 (or off, false) turns dormant
/// sources off (to compare); =eager splits at every epoch that can and catches up every other
/// epoch (the tests: every path taken as often as possible).
struct DormantTuning {
  bool on = true, eager = false;
  uint64_t resplit = 32, catch_up = 256;
};
DormantTuning dormant_tuning() {
  const char* v = std::getenv("CRAWLEVAL_DORMANT");
  DormantTuning t;
  if (v && (std::string(v) == "0" || std::string(v) == "off" || std::string(v) == "false"))
    t.on = false;
  if (v && std::string(v) == "eager") t.eager = true, t.resplit = 1, t.catch_up = 2;
  return t;
}

struct WideWorkspace {
  std::vector<double> x;
  std::vector<uint32_t> word;  // the Whittle word, or the general model's AgeState word
  detail::DormantSet dormant;  // the deterministic Whittle pass's dormant sources
  std::vector<uint8_t> cls;    // class per source where it is not in `word`
  std::vector<uint64_t> selected;
  detail::WindowSelector sel;
  EpochCollective* layer = nullptr;  // the processes' selection and reward folds
  bool adapt_threads = false;  // the user left the thread count to the engine (ThreadGovernor)
  ScorePolicy* function = nullptr;

  void prepare(const Problem& pr, int threads, bool packed, bool words, EpochCollective& procs) {
    const std::size_t n = pr.size();
    x.resize(n);
    word.resize(words || packed ? n : 0);
    cls.resize(packed ? 0 : n);
    sel.prepare(n, threads, pr.unit_costs);
    sel.share(procs.comm(), pr.shard.first, pr.global_size());
    layer = &procs;
  }
};

constexpr std::size_t kBlock = 256;  // sources per block of the deterministic Whittle pass

/// The deterministic Whittle pass over the cnt sources first, first + 1, ..., first half: apply
/// the selection, move the state along the grid and score it with L_eta(x), where
/// u* (1 - alpha^eta) = x on the grid. The arrays start at source `first` (cost == nullptr: unit
/// costs; pointers offset to the block: callgrind, 4% fewer instructions than indexing from 0).
/// Writes the old state and the crawl flag per source for the second half, which sums rewards in
/// source order, scores off-grid sources (kGeneral) with the general index and records every score
/// in the selection. Split so that the arithmetic runs without the selection's branches in between
/// (measured: 10-15% faster than one loop). A source listed by the previous selection
/// (kCandidate) is crawled when listed_key(j, x, w), the key it was scored with, is selected.
template <class ListedKey>
void det_whittle_block(std::size_t first, std::size_t cnt, bool apply, ApplyRule rule,
                       double* __restrict x, uint32_t* __restrict wd,
                       const double* __restrict alpha, const double* __restrict u,
                       const double* __restrict cost, double* __restrict score,
                       double* __restrict x_old, uint8_t* __restrict crawled,
                       const ListedKey& listed_key) {
  for (std::size_t j = 0; j < cnt; ++j) {
    const uint32_t stored = wd[j];
    const uint32_t w = stored & word::kStateMask;
    const double xi = x[j];
    const uint32_t cls = stored >> word::kClassShift;
    bool c = apply & rule.crawled(cls, first + j);
    if (apply & (cls == window::kCandidate) & !c)
      c = rule.selected(listed_key(j, xi, w), first + j);
    const double xn = apply ? (c ? u[j] : alpha[j] * xi + u[j]) : xi;
    const uint32_t wn = apply ? word::next(w, c, xn != xi) : w;
    x[j] = xn;
    wd[j] = wn;
    x_old[j] = xi;
    crawled[j] = uint8_t(c);
    const double inv_c = cost ? 1.0 / cost[j] : 1.0;
    score[j] = word::grid_index(xn, wn, alpha[j], u[j], inv_c);
  }
}

/// One replication on the wide engine (the header comment's steps a-c, then the selection).
/// Template parameters fix the policy, the model and unit costs; General selects the general
/// model (belief observation, expiry, the policies with prepared columns, score functions), which
/// keeps an AgeState word per source and scores through policy_score. The epoch loop (run) is the
/// same for every instantiation; what differs is the pass over a chunk: the deterministic Whittle
/// pass (kTrack: the class packed in the word, AVX-512 and dormant sources) or the block pass (the
/// stochastic base model eight wide, the general model, score functions).
template <Policy P, bool Det, bool Unit, bool General>
class WideRun {
 public:
  static constexpr bool kTrack = !General && Det && P == Policy::whittle;

  WideRun(const Problem& pr, uint32_t rep, WideWorkspace& ws, int threads, const Sinks& sinks);
  ReplicationResult run();

  // The agent of run_epochs (epoch_loop.hpp).
  void pass(uint64_t t);
  void commit() { layer_.commit(add_); }
  void select(uint64_t t);
  void flush() { layer_.flush(add_); }

 private:
  /// What an epoch's pass reads: its iteration, whether it applies the previous selection and
  /// scores, and that selection as the apply step reads it.
  struct Epoch {
    uint64_t t;
    bool apply, score;
    uint32_t prev;
    ApplyRule rule;
    window::Plan plan;
  };
  /// The selection's view of the engine (WindowSelector::Sources): a fallback or a recount
  /// rescores every source from its stored state.
  struct Sources final : detail::WindowSelector::Sources {
    WideRun& run;
    explicit Sources(WideRun& w) : run(w) {}
    void fallback() override { run.rescore(true); }
    void recount() override { run.rescore(false); }
    // A dormant source is never a tie member (its bins lie below the tie key's).
    bool tie_member(std::size_t i) override {
      const std::size_t slot = run.dormant_.slot_of(i);
      return slot != DormantSet::kAsleep && run.class_of(slot) == window::kTie;
    }
    uint64_t weight(std::size_t i) override { return run.weight_of(i); }
  };

  uint64_t weight_of(std::size_t i) const { return Unit ? 1 : fixed_weight(cost_[i], fb_); }
  uint32_t class_of(std::size_t i) const { return kTrack ? word::cls(wd_[i]) : cl_[i]; }
  void set_class(std::size_t i, uint32_t c) {
    if constexpr (kTrack)
      wd_[i] = word::with_class(wd_[i], c);
    else
      cl_[i] = uint8_t(c);
  }
  /// The score of source i's stored state (the scoring pass and its recomputations).
  double score_of(std::size_t i, double xi, uint32_t w) const {
    if constexpr (General) {
      if (fn_scores_) return fn_scores_[i];
      return general_score(xi, w, i, base_ + i, ctx_, pr_);
    } else {
      // On the grid by grid_index, off it (kGeneral) by the general index.
      if (kTrack && !(w & word::kGeneral))
        return word::grid_index(xi, w & word::kStateMask, alpha_[i], drift_u_[i],
                                Unit ? 1.0 : 1.0 / cost_[i]);
      return base_score<P, Unit>(xi, i, base_ + i, ctx_, pr_);
    }
  }
  uint64_t local_stop(uint64_t id) const {
    return id <= base_ ? 0 : std::min<uint64_t>(id - base_, n_);
  }

  void rescore(bool relist);
  void initial_states();
  void first_plan();
  void setup_dormant();
  Epoch epoch_at(uint64_t t);
  void sweep(const Epoch& e);
  void det_chunk(const Epoch& e, std::size_t c, detail::WindowSelector::Pass& ps, double* reward,
                 double* spent);
  void block_chunk(const Epoch& e, std::size_t c, detail::WindowSelector::Pass& ps, double* reward,
                   double* spent);
  void function_scores(uint64_t t);
  void observe(uint64_t t);
  void schedule_dormant(uint64_t t);
  void report_counters() const;

  const Problem& pr_;
  const RunConfig& cfg_;
  const std::size_t n_;
  const uint32_t rep_;
  WideWorkspace& ws_;
  const int threads_;
  const Sinks& sinks_;
  EpochCollective& layer_;
  std::size_t chunks_ = 0;
  // Local source i is global source base + i (ties, round robin) and draws as draw0 + i.
  const uint64_t base_, draw0_;
  const ParamColumns& params_;
  const double* const alpha_;
  const double* const drift_u_;
  const double* const cost_;
  const uint64_t seed_;
  const UtilityDist utility_;
  const uint32_t r_;  // the replication's index in every draw
  const FixedBudget& fb_;
  const uint64_t total_;
  ScorePolicy* const fn_;
  // Which sources a score function sees fully: the population's observe column where it has one
  // (and the problem applies it), else every source as --observe says.
  const uint8_t* const observed_;
  const bool full_;
  double* x_;
  double* seen_ = nullptr;
  double* age_ = nullptr;
  double* collected_ = nullptr;
  const double* fn_scores_ = nullptr;  // this epoch's scores from the function
  uint32_t* const wd_;
  uint8_t* const cl_;
  detail::WindowSelector& sel_;
  window::SelectState& st_;
  const bool has_word_;
  bool vector_pass_ = false, vector_words_ = false, vector_index_ = false;
  bool vector_stochastic_ = false;
  ThreadGovernor governor_;
  int pass_threads_ = 1;
  ScoreContext ctx_;
  Sources sources_;
  // Dormant sources (dormant.hpp): the deterministic Whittle pass (unit costs) leaves out the
  // sources whose every future score lies below the selection's lump floor.
  DormantSet& dormant_;
  const DormantTuning tuning_;
  const bool use_dormant_;
  DormantSet::Arrays arrays_;
  std::function<void()> wake_;  // every dormant source live before a recount
  uint64_t now_ = 0;            // the loop's iteration: a wake in the selection brings states to it
  uint64_t backoff_ = 0;  // forced wakes and empty splits: each doubles the wait before a split
  uint64_t dormant_epochs_ = 0;
  uint64_t calm_since_ = 0;  // the iteration of the last forced wake or lowered bound
  std::atomic<bool> dormant_failed_{false};
  ReplicationResult res_;
  EpochCollective::Totals add_;  // a measured epoch's sums into res_
};

template <Policy P, bool Det, bool Unit, bool General>
WideRun<P, Det, Unit, General>::WideRun(const Problem& pr, uint32_t rep, WideWorkspace& ws,
                                        int threads, const Sinks& sinks)
    : pr_(pr),
      cfg_(pr.config),
      n_(pr.size()),
      rep_(rep),
      ws_(ws),
      threads_(threads),
      sinks_(sinks),
      layer_(*ws.layer),
      base_(pr.shard.first),
      draw0_(pr.first_id + pr.shard.first),
      params_(pr.params()),
      alpha_(pr.params().alpha.data()),
      drift_u_(pr.params().drift.data()),
      cost_(pr.population->cost.data()),
      seed_(pr.config.seed),
      utility_(pr.config.utility),
      r_(pr.config.first_replication + rep),
      fb_(pr.weights),
      total_(pr.total_epochs()),
      fn_(General ? ws.function : nullptr),
      observed_(pr.observe_column_applies() ? pr.population->observe.data() : nullptr),
      full_(pr.config.observe == Observe::full && !observed_),
      x_(ws.x.data()),
      wd_(ws.word.data()),
      cl_(ws.cls.data()),
      sel_(ws.sel),
      st_(ws.sel.state()),
      has_word_(!ws.word.empty()),
      governor_(threads, ws.adapt_threads),
      ctx_{P,           pr.config.observe, pr.config.seed, r_, 0, 0, pr.global_size(),
           pr.first_id, pr.lip_multiplier},
      sources_(*this),
      dormant_(ws.dormant),
      tuning_(dormant_tuning()),
      use_dormant_(kTrack && Unit && tuning_.on),
      arrays_{nullptr, nullptr, nullptr, nullptr, threads} {
  layer_.begin_sums(2, kChunk, cfg_.epochs, sinks.observer != nullptr);  // reward, cost per chunk
  chunks_ = layer_.chunks();
  // A score function under full observation reads the state itself (the caller's buffer where it
  // gives one: no copy on the way to Python); under belief (or a column) the expected state,
  // written beside it.
  if (fn_) {
    const ScoreBuffers* b = fn_->buffers;
    if (b && full_) x_ = b->state;
    seen_ = full_ ? x_ : b ? b->state : fn_->seen.data();
    age_ = b ? b->age : fn_->age.data();
    collected_ = b ? b->collected : nullptr;
  }
  // The word's grid age stops at kEtaMax (2^29 - 16) while the state goes on: a source left
  // uncrawled longer would be scored as the wrong age's (0.6% high 1e6 epochs past it; a reviewer).
  // No run of this engine is that long in practice (5.4e8 epochs of more than 2048 sources).
  CE_EXPECTS(!(kTrack && has_word_) || total_ + 2 < word::kEtaMax,
             "--epochs + --burn-in: the deterministic Whittle policy above 2048 sources (or under "
             "MPI) tracks ages up to " +
                 std::to_string(word::kEtaMax) + " epochs: at most " +
                 std::to_string(word::kEtaMax - 3) + " epochs per run");
  vector_pass_ = kTrack && Unit && avx512_pass_available();
  vector_words_ = !Det && !General && avx512_pass_available();
  vector_index_ = vector_words_;
  // The whole stochastic pass eight wide for the Whittle and greedy policies with unit costs (with
  // costs only the Whittle index is).
  vector_stochastic_ = vector_index_ && Unit && (P == Policy::whittle || P == Policy::greedy);
  arrays_ = DormantSet::Arrays{x_, wd_, alpha_, drift_u_, threads};
  setup_dormant();
}

// Every source's score recomputed from its stored state, in the scoring pass's chunks: relist
// it against the plan (the fallback) or count its bin (a recount).
// A recount needs every source's bin (the dormant ones wake first); a fallback whose bin lies
// at or above the dormant sources' bound relists the live ones alone (the others are of class
// kBelow against it, as they are already).
template <Policy P, bool Det, bool Unit, bool General>
void WideRun<P, Det, Unit, General>::rescore(bool relist) {
  const bool live_only = relist && dormant_.on() && sel_.plan().lo >= dormant_.bound();
  if (!live_only && wake_) wake_();
  const uint32_t* wd = has_word_ ? wd_ : nullptr;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads_) if (threads_ > 1)
  for (std::size_t c = 0; c < chunks_; ++c) {
    detail::WindowSelector::Pass& ps = sel_.pass(omp_get_thread_num());
    const std::size_t lo = c * kChunk, hi = std::min(n_, lo + kChunk);
    const auto rescore_source = [&](std::size_t i, std::size_t slot) {
      const uint32_t w = wd ? (kTrack ? wd[slot] & word::kStateMask : wd[slot]) : 0u;
      if (!relist) {
        const uint32_t bin = coarse_bin_of_score(score_of(i, x_[slot], w));
        detail::WindowSelector::count_bin<false>(ps, bin, weight_of(i));
      } else if (class_of(slot) != window::kTie) {  // the plan's tie key: still a member
        const uint64_t key = score_key(score_of(i, x_[slot], w));
        set_class(slot, sel_.relist(ps, key, uint32_t(i), weight_of(i)));
      }
    };
    dormant_.for_each_live(c, lo, hi, rescore_source);
  }
}

template <Policy P, bool Det, bool Unit, bool General>
void WideRun<P, Det, Unit, General>::setup_dormant() {
  dormant_.reset(n_, kChunk);
  if (use_dormant_) {
    wake_ = [this] {
      if (!dormant_.on()) return;
      dormant_.wake(now_, arrays_);
      backoff_ += 1;
      calm_since_ = now_;
    };
  }
}

template <Policy P, bool Det, bool Unit, bool General>
void WideRun<P, Det, Unit, General>::initial_states() {
#pragma omp parallel for schedule(static) num_threads(threads_) if (threads_ > 1)
  for (std::size_t i = 0; i < n_; ++i) {
    const InitialState s = pr_.initial_at(i);  // derived where the columns are compact
    x_[i] = s.x;
    if constexpr (kTrack) {
      wd_[i] = word::initial(s.eta, s.age);
    } else if constexpr (General) {
      wd_[i] = s.age;
    }
  }
  if (collected_) std::fill(collected_, collected_ + n_, 0.0);
  st_ = window::SelectState{};
}

// The first plan from a sample of the first scores (a score function's after its first call).
template <Policy P, bool Det, bool Unit, bool General>
void WideRun<P, Det, Unit, General>::first_plan() {
  std::vector<std::pair<uint64_t, uint64_t>> sample;
  for (std::size_t i = 0; i < n_; ++i)
    if (sel_.sampled(i))
      sample.emplace_back(score_key(score_of(i, x_[i], has_word_ ? wd_[i] : 0u)), weight_of(i));
  sel_.plan_from_sample(std::move(sample), fb_.limit);
}

// The previous selection as the apply step reads it: tie members are all crawled, none, or those
// below the stop id.
template <Policy P, bool Det, bool Unit, bool General>
typename WideRun<P, Det, Unit, General>::Epoch WideRun<P, Det, Unit, General>::epoch_at(
    uint64_t t) {
  const window::Applied applied = st_.applied;
  const bool all = applied.sel.all;
  const bool tie_all = applied.has_tie && applied.tie_key > applied.sel.stop_key;
  const bool tie_some = applied.has_tie && applied.tie_key == applied.sel.stop_key;
  return Epoch{
      t,
      t > 0,
      t < total_,
      uint32_t(t - 1),
      ApplyRule{all, tie_all, tie_some, local_stop(applied.sel.stop_id), applied.sel.stop_key},
      st_.plan};
}

template <Policy P, bool Det, bool Unit, bool General>
ReplicationResult WideRun<P, Det, Unit, General>::run() {
  initial_states();
  if (!fn_) first_plan();
  add_ = [&](const double* sums) {
    res_.reward_sum += sums[0];
    res_.cost_sum += sums[1];
    if (sinks_.epoch_reward) sinks_.epoch_reward->push_back(sums[0]);
  };
  const ReplicationResult timed =
      detail::run_epochs(*this, cfg_.burn_in, total_, {sinks_.done, sinks_.progress, sinks_.stop});
  res_.measured_seconds = timed.measured_seconds;
  res_.measured_epochs = timed.measured_epochs;
  report_counters();
  return res_;
}

// Iteration t's pass: steps a-c over every chunk.
template <Policy P, bool Det, bool Unit, bool General>
void WideRun<P, Det, Unit, General>::pass(uint64_t t) {
  now_ = t;
  if (t >= cfg_.burn_in && t < total_) dormant_epochs_ += dormant_.dormant();  // this pass's
  const Epoch e = epoch_at(t);
  ctx_.epoch = uint32_t(t);
  ctx_.pointer = st_.pointer;
  if (e.score) sel_.begin_pass();
  sweep(e);
  CE_EXPECTS(!dormant_failed_, "internal: a split chunk's live slot off the index grid");
}

// Epoch t's selection: the function's scores where a function scores, steps 2-5
// (window_select.hpp), then the listed sources' final classes (the deterministic Whittle pass
// resolves them itself, from the key of the state it reads; the others here), the observer and the
// next pass's dormant sources.
template <Policy P, bool Det, bool Unit, bool General>
void WideRun<P, Det, Unit, General>::select(uint64_t t) {
  if (fn_) function_scores(t);
  const Selection s = sel_.select(n_, fb_.limit, sources_);
  if constexpr (!kTrack)
    for (const auto& it : sel_.listed())
      set_class(it.id, is_selected(it.key, base_ + it.id, s) ? window::kAbove : window::kBelow);
  if (sinks_.observer) observe(t);
  if (use_dormant_) schedule_dormant(t);
}

// Steps a-c over every chunk, chunks handed to threads dynamically; each chunk's reward and cost
// go to the layer's sums (sums[c], sums[chunks + c]).
template <Policy P, bool Det, bool Unit, bool General>
void WideRun<P, Det, Unit, General>::sweep(const Epoch& e) {
  double* const sums = layer_.sums();
  pass_threads_ = governor_.threads();
  const double wall0 = governor_.adapting() ? omp_get_wtime() : 0.0;
  double pass_cpu = 0.0;
#pragma omp parallel num_threads(pass_threads_) if (pass_threads_ > 1)
  {
    const double cpu0 = governor_.adapting() ? thread_cpu_seconds() : 0.0;
#pragma omp for schedule(dynamic, 1) nowait
    for (std::size_t c = 0; c < chunks_; ++c) {
      detail::WindowSelector::Pass& ps = sel_.pass(omp_get_thread_num());
      double reward = 0.0, spent = 0.0;
      if constexpr (kTrack)
        det_chunk(e, c, ps, &reward, &spent);
      else
        block_chunk(e, c, ps, &reward, &spent);
      sums[c] = reward;
      sums[chunks_ + c] = spent;
    }
    if (governor_.adapting()) {
      const double used = thread_cpu_seconds() - cpu0;
#pragma omp atomic
      pass_cpu += used;
    }
  }
  if (governor_.adapting()) governor_.record(omp_get_wtime() - wall0, pass_cpu);
}

// The deterministic Whittle pass over chunk c: the AVX-512 pass (unit costs) until a group of
// eight holds a source off the grid, the scalar pass for that group; a split chunk's live slots
// (every one on the grid, a multiple of eight), its dormant sources lumped.
template <Policy P, bool Det, bool Unit, bool General>
void WideRun<P, Det, Unit, General>::det_chunk(const Epoch& e, std::size_t c,
                                               detail::WindowSelector::Pass& ps, double* reward_out,
                                               double* spent_out) {
  using namespace window;
  double* const x = x_;
  uint32_t* const wd = wd_;
  const double* const alpha = alpha_;
  const double* const drift_u = drift_u_;
  const double* const cost = cost_;
  // Copies, not references: the stores through x and wd (and the selection's byte arrays) could
  // alias them, and every iteration would reload them.
  const bool apply = e.apply, score = e.score;
  const ApplyRule rule = e.rule;
  const Plan plan = e.plan;
  const std::size_t lo = c * kChunk, hi = std::min(n_, lo + kChunk);
  double reward = 0.0, spent = 0.0;
  alignas(64) double sc[kBlock], x_old[kBlock];
  alignas(64) uint8_t crawled[kBlock];
  uint64_t* count = ps.count.data();
  uint64_t* weight = ps.weight.data();
  bool scalar_ran = false;
  auto scalar_block = [&](std::size_t b, std::size_t cnt) {
    det_whittle_block(
        b, cnt, apply, rule, x + b, wd + b, alpha + b, drift_u + b, Unit ? nullptr : cost + b, sc,
        x_old, crawled,
        [&](std::size_t j, double xi, uint32_t w) { return score_key(score_of(b + j, xi, w)); });
    for (std::size_t j = 0; j < cnt; ++j) {
      const std::size_t i = b + j;
      if (crawled[j]) {
        reward += x_old[j];
        spent += Unit ? 1.0 : cost[i];
      }
      if (!score) continue;
      const uint32_t w = wd[i];
      const double s = (w & word::kGeneral) ? whittle_index(x[i], params_.at_base(i)) : sc[j];
      const uint64_t key = score_key(s);
      const uint32_t bin = coarse_bin_of_score(s);
      const uint32_t k = classify(key, bin, plan);  // the plan copied: no reload per store
      const uint64_t wt = weight_of(i);
      count[bin] += 1;
      if (!Unit) weight[bin] += wt;
      if (k >= kCandidate) sel_.note(ps, key, k, uint32_t(i), wt);
      wd[i] = w | (k << word::kClassShift);
    }
    scalar_ran = true;
  };
  const uint32_t live = dormant_.live(c);
  if (live != DormantSet::kPlain && vector_pass_) {
    const DetPass part{x + lo, wd + lo, dormant_.live_alpha(c), dormant_.live_u(c), rule, plan,
                       apply,  score,   dormant_.loc(c),        uint32_t(lo)};
    if (det_whittle_avx512(part, 0, live, sel_, ps, &reward, &spent) != live)
      dormant_failed_ = true;
  } else if (live != DormantSet::kPlain) {
    // The scalar pass over the live slots (slot lo + j is source lo + loc[j]): the operations of
    // det_whittle_block and of its records, every source on the grid, in one loop (callgrind: 13%
    // fewer instructions in this pass than det_whittle_block's two halves, which win where the
    // loop reads every source in id order).
    const uint16_t* loc = dormant_.loc(c);
    const double* al = dormant_.live_alpha(c);
    const double* ul = dormant_.live_u(c);
    for (std::size_t j = 0; j < live; ++j) {
      const std::size_t slot = lo + j, id = lo + loc[j];
      const uint32_t stored = wd[slot];
      const uint32_t w = stored & word::kStateMask, cls = stored >> word::kClassShift;
      const double xi = x[slot];
      bool crawled_now = apply && rule.crawled(cls, id);
      if (apply && cls == kCandidate && !crawled_now)
        crawled_now = rule.selected(score_key(word::grid_index(xi, w, al[j], ul[j], 1.0)), id);
      const double xn = apply ? (crawled_now ? ul[j] : al[j] * xi + ul[j]) : xi;
      const uint32_t wn = apply ? word::next(w, crawled_now, xn != xi) : w;
      x[slot] = xn;
      if (crawled_now) reward += xi, spent += 1.0;
      if (!score) {
        wd[slot] = wn;
        continue;
      }
      const double s = word::grid_index(xn, wn, al[j], ul[j], 1.0);
      const uint64_t key = score_key(s);
      const uint32_t bin = coarse_bin_of_score(s);
      const uint32_t k = classify(key, bin, plan);
      ps.count[bin] += 1;
      if (k >= kCandidate) sel_.note(ps, key, k, uint32_t(id), 1);
      wd[slot] = wn | (k << word::kClassShift);
    }
    scalar_ran = true;
  }
  if (live != DormantSet::kPlain && score)
    detail::WindowSelector::lump(ps, hi - lo - live, hi - lo - live);
  const DetPass vec{x, wd, alpha, drift_u, rule, plan, apply, score};
  for (std::size_t b = live != DormantSet::kPlain ? hi : lo; b < hi;) {
    if (vector_pass_) b = det_whittle_avx512(vec, b, hi, sel_, ps, &reward, &spent);
    if (b >= hi) break;
    const std::size_t cnt = std::min(vector_pass_ ? std::size_t(8) : kBlock, hi - b);
    scalar_block(b, cnt);
    b += cnt;
  }
  if (scalar_ran) {
    // The sources under the lump floor are counted in one lump, as the AVX-512 pass counts them:
    // the same histogram, so the same plans and the same path through the selection. The scalar
    // pass counts their bins and moves them to the lump here, once per chunk (a test on the floor
    // per source cost it 17%: 6.0 -> 7.0 ms per epoch at 1e6).
    const uint32_t floor = window::lump_floor(plan);
    uint64_t low = 0, low_weight = 0;
    for (uint32_t bin = 0; bin < floor; ++bin) {
      low += count[bin];
      low_weight += Unit ? 0 : weight[bin];
      count[bin] = 0;
      if (!Unit) weight[bin] = 0;
    }
    detail::WindowSelector::lump(ps, low, Unit ? low : low_weight);
  }
  *reward_out = reward;
  *spent_out = spent;
}

// Chunk c a block at a time: the transitions (the stochastic base model with the first arrival
// words of eight sources computed at once), then the scores (the general Whittle index eight
// wide), then the selection's records. A score function's pass writes what it observes instead.
template <Policy P, bool Det, bool Unit, bool General>
void WideRun<P, Det, Unit, General>::block_chunk(const Epoch& e, std::size_t c,
                                                 detail::WindowSelector::Pass& ps,
                                                 double* reward_out, double* spent_out) {
  using namespace window;
  constexpr bool kWords = !Det && !General;
  constexpr bool kIndexed = !Det && !General && P == Policy::whittle;
  // Locals, not members or references: the stores through x, wd and cl (a byte array, which may
  // alias anything) would make every iteration reload them.
  double* const x = x_;
  uint32_t* const wd = wd_;
  uint8_t* const cl = cl_;
  const double* const cost = cost_;
  double* const collected = collected_;
  double* const seen = seen_;
  double* const age = age_;
  const uint8_t* const observed = observed_;
  const bool has_word = has_word_, full = full_, function = fn_ != nullptr;
  const uint64_t seed = seed_, draw0 = draw0_, base = base_;
  const uint32_t r = r_, epoch = ctx_.epoch;
  const UtilityDist utility = utility_;
  const ParamColumns& params = params_;
  const Problem& pr = pr_;
  detail::WindowSelector& sel = sel_;
  const bool vector_words = vector_words_, vector_index = vector_index_;
  const FixedBudget fb = fb_;
  const auto weight_of = [&](std::size_t i) -> uint64_t {
    return Unit ? 1 : fixed_weight(cost[i], fb);
  };
  // score_of for this pass (never the function's scores: a function scores after the pass).
  const ScoreContext ctx = ctx_;
  const auto score_of = [&](std::size_t i, double xi, uint32_t w) -> double {
    if constexpr (General)
      return general_score(xi, w, i, base + i, ctx, pr);
    else
      return base_score<P, Unit>(xi, i, base + i, ctx, pr);
  };
  const bool apply = e.apply, score = e.score;
  const uint32_t prev = e.prev;
  const ApplyRule rule = e.rule;
  const Plan plan = e.plan;
  const std::size_t lo = c * kChunk, hi = std::min(n_, lo + kChunk);
  double reward = 0.0, spent = 0.0;
  alignas(32) uint32_t w0[8], wnext[kBlock];
  alignas(64) double sc[kBlock];
  uint8_t sure[kBlock / 8];
  const uint32_t floor = kIndexed ? window::lump_floor(plan) : 0;
  std::size_t from = lo;
  if (vector_stochastic_) {
    const StochasticPass sp{x,    cl, &params, rule,  plan,  utility,
                            seed, r,  prev,    apply, score, P == Policy::greedy,
                            draw0};
    from = stochastic_whittle_avx512(sp, lo, hi, sel, ps, &reward, &spent);
  }
  for (std::size_t b = from; b < hi; b += kBlock) {
    const std::size_t cnt = std::min(kBlock, hi - b);
    for (std::size_t j = 0; j < cnt; ++j) {
      const std::size_t i = b + j;
      if (kWords && apply && (j & 7) == 0)
        first_arrival_words(seed, draw0 + i, std::min<std::size_t>(8, cnt - j), prev, r,
                            vector_words, w0);
      double xi = x[i];
      const uint32_t stored = has_word ? wd[i] : 0u;
      const uint32_t cls = kTrack ? word::cls(stored) : cl[i];
      uint32_t w = kTrack ? stored & word::kStateMask : stored;
      if (apply) {  // a., b.
        const bool crawled = rule.crawled(cls, i);
        if (crawled) {
          reward += xi;
          spent += Unit ? 1.0 : cost[i];
        }
        if (collected) collected[i] = crawled ? xi : 0.0;
        if constexpr (General)
          general_transition(&xi, &w, crawled, prev, Det, utility, seed, r, draw0 + i,
                             params.at(i));
        else
          xi = base_next<Det>(xi, crawled, i, base + i, prev, pr, r, &w0[j & 7]);
        x[i] = xi;
      }
      wnext[j] = w;
      if (function) {  // what the function observes; it scores after the pass
        if (score && !full) {
          double om_eta;
          seen[i] = observed && observed[i]
                        ? xi
                        : AgeState::value(w, epoch, pr.initial_state()[i], params.at(i), &om_eta);
        }
        if (score) age[i] = AgeState::age(w, epoch);
        wd[i] = w;
        continue;
      }
      if (score && !kIndexed) sc[j] = score_of(i, xi, w);
      if (!score && has_word) wd[i] = w;
    }
    if (!score || function) continue;
    if constexpr (kIndexed) whittle_index_run(x + b, params, b, cnt, vector_index, floor, sc, sure);
    for (std::size_t j = 0; j < cnt; ++j) {  // c.
      const std::size_t i = b + j;
      if (kIndexed && ((sure[j / 8] >> (j % 8)) & 1)) {  // below the floor: no index
        cl[i] = uint8_t(kBelow);
        detail::WindowSelector::lump(ps, 1, weight_of(i));
        continue;
      }
      const uint32_t k = sel.template record<Unit>(ps, score_key(sc[j]), coarse_bin_of_score(sc[j]),
                                                   uint32_t(i), weight_of(i));
      cl[i] = uint8_t(k);
      if constexpr (General) wd[i] = wnext[j];
    }
  }
  *reward_out = reward;
  *spent_out = spent;
}

// The function's one call, then its scores recorded in the selection.
template <Policy P, bool Det, bool Unit, bool General>
void WideRun<P, Det, Unit, General>::function_scores(uint64_t t) {
  const double* borrowed = nullptr;
  (*fn_->fn)(ScoreRequest{r_, t, n_, seen_, age_, fn_->scores.data(), &borrowed, base_,
                          layer_.single() ? nullptr : &layer_.comm()});
  fn_scores_ = borrowed ? borrowed : fn_->scores.data();
  if (t == 0) first_plan();
#pragma omp parallel for schedule(dynamic, 1) num_threads(pass_threads_) if (pass_threads_ > 1)
  for (std::size_t c = 0; c < chunks_; ++c) {
    detail::WindowSelector::Pass& ps = sel_.pass(omp_get_thread_num());
    for (std::size_t i = c * kChunk; i < std::min(n_, (c + 1) * kChunk); ++i) {
      const uint64_t key = score_key(fn_scores_[i]);
      cl_[i] =
          uint8_t(sel_.template record<Unit>(ps, key, coarse_bin(key), uint32_t(i), weight_of(i)));
    }
  }
  if (borrowed && sinks_.observer) std::copy(borrowed, borrowed + n_, fn_->scores.begin());
}

// The crawled global ids of every process, and the reward the next apply will collect (their
// states summed in id order across the processes).
template <Policy P, bool Det, bool Unit, bool General>
void WideRun<P, Det, Unit, General>::observe(uint64_t t) {
  ws_.selected.clear();
  std::vector<double> crawled_x;
  const window::Applied& a = st_.applied;
  // Source i in slot `slot` (i itself but in a split chunk, whose dormant sources the selection
  // never crawls).
  auto visit = [&](std::size_t i, std::size_t slot) {
    const uint32_t cls = kTrack ? word::cls(wd_[slot]) : cl_[slot];
    const uint64_t own = kTrack && cls == window::kCandidate
                             ? score_key(score_of(i, x_[slot], wd_[slot] & word::kStateMask))
                             : 0;
    if (window::crawled_by_class(cls, base_ + i, own, a))
      ws_.selected.push_back(base_ + i), crawled_x.push_back(x_[slot]);
  };
  for (std::size_t c = 0; c < chunks_; ++c)
    dormant_.for_each_live(c, c * kChunk, std::min(n_, (c + 1) * kChunk), visit);
  const std::vector<uint64_t> all = layer_.gather(ws_.selected);
  const std::vector<uint32_t> ids(all.begin(), all.end());  // observers see < 2^32 sources
  // (A score function's observer also sees the states and scores of one process.)
  const bool arrays = fn_ && layer_.single();
  (*sinks_.observer)(EpochView{rep_, t, &ids, layer_.sum_in_order(crawled_x),
                               arrays && x_ == ws_.x.data() ? &ws_.x : nullptr,
                               arrays ? &fn_->scores : nullptr});
}

// The next pass's dormant sources: everything wakes before a selection that crawls every source;
// a lower floor wakes the sources it reaches; a higher one (every `resplit` epochs, longer after
// forced wakes) puts more to sleep; the others catch up now and then.
template <Policy P, bool Det, bool Unit, bool General>
void WideRun<P, Det, Unit, General>::schedule_dormant(uint64_t t) {
  if (st_.applied.sel.all) {  // (with unit costs only when every source fits every epoch)
    if (dormant_.on()) dormant_.wake(t, arrays_), backoff_ += 1, calm_since_ = t;
    return;
  }
  const uint32_t floor = window::lump_floor(st_.plan);
  if (backoff_ > 0 && t >= calm_since_ + 512) backoff_ -= 1, calm_since_ = t;  // it decays
  const uint64_t wait = tuning_.resplit << (tuning_.eager ? 0 : std::min<uint64_t>(backoff_, 10));
  if (dormant_.on() && floor < dormant_.bound()) {
    // A floor that fell may fall again: one bin more below it, and a longer wait before the next
    // raise (a boundary that swings across a bin edge splits rarely).
    dormant_.split(floor > 0 ? floor - 1 : 0, t, arrays_);
    backoff_ += 1;
    calm_since_ = t;
  } else if (floor > dormant_.bound() && t >= dormant_.split_at() + wait) {
    dormant_.split(floor, t, arrays_);
    if (!dormant_.on()) backoff_ += 1;
  } else if (dormant_.on() && t >= dormant_.stamp() + tuning_.catch_up) {
    dormant_.catch_up(t, arrays_);
  }
}

template <Policy P, bool Det, bool Unit, bool General>
void WideRun<P, Det, Unit, General>::report_counters() const {
  if (!sinks_.counters) return;
  const window::Diagnostics& d = st_.diag;
  sinks_.counters->selections += d.epochs;
  sinks_.counters->window_misses += d.misses;
  sinks_.counters->levels += d.levels;
  sinks_.counters->tie_scans += d.tie_scans;
  sinks_.counters->recounts += d.recounts;
  sinks_.counters->listed += d.listed;
  sinks_.counters->dormant += dormant_epochs_;
  sinks_.counters->dormant_wakes += dormant_.wakes + dormant_.lowered;
}

template <Policy P, bool Det, bool Unit, bool General>
ReplicationResult run_wide(const Problem& pr, uint32_t rep, WideWorkspace& ws, int threads,
                           const Sinks& sinks) {
  return WideRun<P, Det, Unit, General>(pr, rep, ws, threads, sinks).run();
}

// ---- small populations ------------------------------------------------------------------------

struct SmallWorkspace {
  std::vector<double> x, om_eta;
  std::vector<uint32_t> eta, order, selected;
  std::vector<uint64_t> keys;

  void prepare(std::size_t n) {
    x.resize(n);
    om_eta.resize(n);
    eta.resize(n);
    keys.resize(n);
    order.resize(n);
    selected.reserve(n);
  }
};

/// One replication of a small population: serial, selection by sorting. The deterministic Whittle
/// policy tracks (eta, 1 - alpha^eta) per source (GridTracker). The agent of run_epochs
/// (epoch_loop.hpp); its sums are in id order, as the reference's.
template <Policy P, bool Det, bool Unit, bool General>
class SmallRun {
 public:
  static constexpr bool kTrack = !General && Det && P == Policy::whittle;

  SmallRun(const Problem& pr, uint32_t rep, SmallWorkspace& ws, const Sinks& sinks)
      : pr_(pr),
        cfg_(pr.config),
        n_(pr.size()),
        rep_(rep),
        ws_(ws),
        sinks_(sinks),
        params_(pr.params()),  // every column held (cpu_rollout)
        cost_(pr.population->cost.data()),
        r_(cfg_.first_replication + rep),
        x0_(pr.initial_state().data()),  // the static policy's (never compact)
        period_(pr.policy_periods(P)),
        gain_(pr.policy_gains(P)),
        x_(ws.x.data()),
        om_eta_(ws.om_eta.data()),
        eta_(ws.eta.data()),
        keys_(ws.keys.data()) {}

  ReplicationResult run() {
    for (std::size_t i = 0; i < n_; ++i) {
      const InitialState s = pr_.initial_at(i);  // derived where the columns are compact
      x_[i] = s.x;
      if (General) eta_[i] = s.age;
      if (kTrack) eta_[i] = s.eta, om_eta_[i] = s.om_eta;
    }
    const ReplicationResult timed =
        detail::run_epochs(*this, cfg_.burn_in, pr_.total_epochs(),
                           {sinks_.done, sinks_.progress, sinks_.stop, kProgressBatch});
    res_.measured_seconds = timed.measured_seconds;
    res_.measured_epochs = timed.measured_epochs;
    return res_;
  }

  // Iteration t: apply epoch t - 1's selection, then score epoch t, source by source.
  void pass(uint64_t t) {
    const bool apply = t > 0, score = t < pr_.total_epochs();
    const uint32_t prev = uint32_t(t - 1), now = uint32_t(t);
    const ScoreContext ctx{P,  cfg_.observe, cfg_.seed,         r_, now, pointer_,
                           n_, pr_.first_id, pr_.lip_multiplier};
    reward_ = 0.0, spent_ = 0.0;
    for (std::size_t i = 0; i < n_; ++i) {
      SourceParams p = General ? params_.at(i) : params_.held_base(i);  // unused: not loaded
      if (Unit) p.inv_cost = 1.0;
      if (apply) apply_one(i, p, prev);
      if (score) keys_[i] = score_key(score_one(i, p, ctx));
    }
  }
  void commit() {
    res_.reward_sum += reward_;
    res_.cost_sum += spent_;
    if (sinks_.epoch_reward) sinks_.epoch_reward->push_back(reward_);
  }
  void select(uint64_t t) {
    sel_ = detail::select_by_sort(keys_, Unit ? nullptr : cost_, n_, pr_.weights, ws_.order.data());
    if (P == Policy::round_robin && !sel_.all) pointer_ = sel_.stop_id;
    if (!sinks_.observer) return;
    ws_.selected.clear();
    double rw = 0.0;
    for (std::size_t i = 0; i < n_; ++i)
      if (is_selected(keys_[i], i, sel_)) ws_.selected.push_back(uint32_t(i)), rw += x_[i];
    (*sinks_.observer)(EpochView{rep_, t, &ws_.selected, rw, nullptr, nullptr});
  }
  void flush() {}

 private:
  // Source i's reward and move under epoch `prev`'s selection.
  void apply_one(std::size_t i, const SourceParams& p, uint32_t prev) {
    const uint64_t id = pr_.first_id + i;  // the draws' global id
    const bool crawled = is_selected(keys_[i], i, sel_);
    if (crawled) {
      reward_ += x_[i];
      spent_ += Unit ? 1.0 : cost_[i];
    }
    if constexpr (General) {
      general_transition(&x_[i], &eta_[i], crawled, prev, Det, cfg_.utility, cfg_.seed, r_, id, p);
    } else {
      const double arrivals =
          Det ? drift(p)
              : sample_arrivals_below(p, params_.no_arrival[i],
                                      first_arrival_word(cfg_.seed, r_, id, prev), cfg_.utility,
                                      cfg_.seed, r_, id, prev);
      const double before = x_[i];
      x_[i] = crawled ? arrivals : passive_next(x_[i], arrivals, p);
      if (kTrack) {
        if (crawled)
          GridTracker::crawled(p, &eta_[i], &om_eta_[i]);
        else if (x_[i] != before)  // at a fixed point the grid position stays (det_word::next)
          GridTracker::passive(p, &eta_[i], &om_eta_[i]);
      }
    }
  }
  double score_one(std::size_t i, const SourceParams& p, const ScoreContext& ctx) const {
    if constexpr (General)
      return policy_score(ctx, i, x_[i], eta_[i], x0_[i], period_ ? period_[i] : 0u,
                          gain_ ? gain_[i] : 0.0, p);
    else if constexpr (P == Policy::whittle)
      return kTrack ? GridTracker::index(x_[i], eta_[i], om_eta_[i], p) : whittle_index(x_[i], p);
    else if constexpr (P == Policy::greedy)
      return x_[i] * p.inv_cost;
    else if constexpr (P == Policy::round_robin)
      return round_robin_score(i, ctx.pointer, n_);
    else
      return random_score(cfg_.seed, r_, pr_.first_id + i, ctx.epoch);
  }

  const Problem& pr_;
  const RunConfig& cfg_;
  const std::size_t n_;
  const uint32_t rep_;
  SmallWorkspace& ws_;
  const Sinks& sinks_;
  const ParamColumns& params_;
  const double* const cost_;
  const uint32_t r_;
  const double* const x0_;
  const uint32_t* const period_;
  const double* const gain_;
  double* const x_;
  double* const om_eta_;
  uint32_t* const eta_;
  uint64_t* const keys_;
  Selection sel_;
  uint64_t pointer_ = 0;
  double reward_ = 0.0, spent_ = 0.0;  // the applied epoch's
  ReplicationResult res_;
};

template <Policy P, bool Det, bool Unit, bool General>
ReplicationResult run_small(const Problem& pr, uint32_t rep, SmallWorkspace& ws,
                            const Sinks& sinks) {
  return SmallRun<P, Det, Unit, General>(pr, rep, ws, sinks).run();
}

// ---- dispatch ---------------------------------------------------------------------------------

using WideFn = ReplicationResult (*)(const Problem&, uint32_t, WideWorkspace&, int, const Sinks&);
using SmallFn = ReplicationResult (*)(const Problem&, uint32_t, SmallWorkspace&, const Sinks&);

// Each engine as a class template holding its instantiation, so that one dispatch serves both.
template <Policy P, bool D, bool U, bool G>
struct Wide {
  static constexpr WideFn fn = run_wide<P, D, U, G>;
};
template <Policy P, bool D, bool U, bool G>
struct Small {
  static constexpr SmallFn fn = run_small<P, D, U, G>;
};

template <template <Policy, bool, bool, bool> class E, Policy P, bool General>
auto pick(bool det, bool unit) {
  if (det) return unit ? E<P, true, true, General>::fn : E<P, true, false, General>::fn;
  return unit ? E<P, false, true, General>::fn : E<P, false, false, General>::fn;
}

template <template <Policy, bool, bool, bool> class E, bool General>
auto pick(Policy p, bool det, bool unit) {
  switch (p) {
    case Policy::whittle:
      return pick<E, Policy::whittle, General>(det, unit);
    case Policy::greedy:
      return pick<E, Policy::greedy, General>(det, unit);
    case Policy::round_robin:
      return pick<E, Policy::round_robin, General>(det, unit);
    case Policy::random:
      return pick<E, Policy::random, General>(det, unit);
    case Policy::lip:
      return pick<E, Policy::lip, true>(det, unit);
    case Policy::static_rate:
      break;
  }
  return pick<E, Policy::static_rate, true>(det, unit);
}

template <template <Policy, bool, bool, bool> class E>
auto pick(const Problem& pr, Policy policy) {
  const bool det = pr.config.model == Model::deterministic;
  return pr.base_model(policy) ? pick<E, false>(policy, det, pr.unit_costs)
                               : pick<E, true>(policy, det, pr.unit_costs);
}

}  // namespace

namespace {

/// cpu_rollout, and function_rollout where `fn` is given (the wide engine's general model for any
/// number of sources, the policy's scores from the function).
RolloutOutput rollout_on_cpu(const Problem& pr, Policy policy, const EpochObserver* observer,
                             Comm* comm, ScorePolicy* fn, const std::string& label) {
  const auto t0 = std::chrono::steady_clock::now();
  const RunConfig& cfg = pr.config;
  const std::size_t n = pr.size();
  Comm& procs = comm ? *comm : solo_comm();
  const bool shared = procs.size() > 1;
  CE_EXPECTS(procs.size() > 1 || !pr.sharded(), "internal: a shard needs its processes");
  CE_EXPECTS(!fn || !fn->buffers || !shared, "internal: score buffers are for one process");
  if (observer && pr.global_size() > kMaxLocalSources)  // EpochView's positions are 32-bit
    throw Error("internal: an epoch observer sees at most 4,294,967,294 sources");
  const int threads = cfg.threads > 0 ? cfg.threads : omp_get_max_threads();
  if (policy == Policy::static_rate && pr.static_period.size() != n)
    throw Error("internal: the static policy needs prepare_static_policy()");
  if (policy == Policy::lip && (pr.lip_period.size() != n || pr.lip_gain.size() != n))
    throw Error("internal: the lip policy needs prepare_lip_policy()");
  if (cfg.model == Model::stochastic && !pr.params().has_arrival_column())
    throw Error("internal: a stochastic run on a problem derived for the deterministic model");
  if (!pr.unit_costs && pr.population->cost.size() != n)
    throw Error("internal: the costs of a population whose costs are not all 1 were dropped");
  if (pr.params().compact() && (fn || !pr.base_model(policy)))
    throw Error("internal: the compact columns serve the base model (compact_columns_apply)");
  if (n > kMaxLocalSources) throw InputError(local_limit_error(pr.population->origin, n));
  const uint32_t reps = cfg.replications;
  RolloutOutput out;
  out.replication_reward.resize(reps);
  out.replication_cost.resize(reps);

  std::chrono::steady_clock::time_point loop_start;
  std::atomic<uint64_t> done{0};
  detail::Progress progress(cfg.progress && procs.rank() == 0, label,
                            uint64_t(reps) * pr.total_epochs());
  out.epoch_reward.reserve(cfg.epochs);
  std::vector<ReplicationResult> results(reps);
  auto record = [&](uint32_t r, const ReplicationResult& res) {
    out.replication_reward[r] = res.reward_sum / double(cfg.epochs);
    out.replication_cost[r] = res.cost_sum / double(cfg.epochs);
    results[r] = res;
  };
  if (!shared && n <= kSmallN && !fn) {
    // Many replications of a small population run side by side, one per thread (tall); one
    // replication runs on one thread. It reads a source's constants every epoch: compact columns
    // are expanded for it (at most kSmallN sources).
    const Problem held = with_every_column(pr);
    const SmallFn fn = pick<Small>(held, policy);
    const int nt = observer ? 1 : std::max(1, std::min<int>(threads, int(reps)));
    out.threads = nt;
    std::vector<SmallWorkspace> ws(nt);
    for (auto& w : ws) w.prepare(n);
    loop_start = std::chrono::steady_clock::now();
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt) if (nt > 1)
    for (uint32_t r = 0; r < reps; ++r) {
      const int t = omp_get_thread_num();
      Sinks sinks{observer, r == 0 ? &out.epoch_reward : nullptr,
                  &done,    t == 0 ? &progress : nullptr,
                  nullptr,  &progress};
      if (!progress.stopped()) record(r, fn(held, r, ws[t], sinks));
    }
  } else {
    // One chunk of sources per thread at least.
    const WideFn run =
        fn ? pick<Wide, true>(Policy::whittle, cfg.model == Model::deterministic, pr.unit_costs)
           : pick<Wide>(pr, policy);
    const std::size_t chunks = (n + kChunk - 1) / kChunk;
    const int used = int(std::max<std::size_t>(1, std::min<std::size_t>(threads, chunks)));
    out.threads = used;
    const bool det_whittle =
        pr.base_model(policy) && policy == Policy::whittle && cfg.model == Model::deterministic;
    EpochCollective layer(procs, pr.shard.first, n, pr.global_size(), used);
    WideWorkspace w;
    w.prepare(pr, used, det_whittle && !fn, fn || !pr.base_model(policy), layer);
    w.adapt_threads = cfg.threads <= 0;
    if (fn) {
      w.function = fn;
      const bool own = fn->buffers == nullptr;
      fn->scores.resize(n);
      fn->age.resize(own ? n : 0);
      const bool full = cfg.observe == Observe::full && !pr.observe_column_applies();
      fn->seen.resize(own && !full ? n : 0);
      if (!own && full) std::vector<double>().swap(w.x);  // theirs
    }
    loop_start = std::chrono::steady_clock::now();
    for (uint32_t r = 0; r < reps; ++r) {
      // A stop is one process's signal (its monitor, its interrupt): under MPI the run goes on,
      // since a process that left would leave the others waiting at the next collective.
      Sinks sinks{observer,      r == 0 ? &out.epoch_reward : nullptr, &done, &progress,
                  &out.counters, shared ? nullptr : &progress};
      record(r, run(pr, r, w, used, sinks));
      if (!shared && progress.stopped()) break;
    }
    out.comm_seconds = w.sel.traffic.seconds + layer.stats.seconds;
  }
  if (!shared) progress.throw_if_stopped();
  for (const ReplicationResult& res : results)
    out.measured_seconds += res.measured_seconds, out.measured_epochs += res.measured_epochs;
  // Replications side by side (the small engine): their thread time over the threads.
  if (n <= kSmallN) out.measured_seconds /= double(out.threads);
  const auto end = std::chrono::steady_clock::now();
  out.seconds = std::chrono::duration<double>(end - t0).count();
  out.loop_seconds = std::chrono::duration<double>(end - loop_start).count();
  return out;
}

}  // namespace

RolloutOutput cpu_rollout(const Problem& pr, Policy policy, const EpochObserver* observer,
                          Comm* comm) {
  return rollout_on_cpu(pr, policy, observer, comm, nullptr, to_string(policy));
}

RolloutOutput function_rollout(const Problem& pr, const ScoreFn& score, const std::string& label,
                               const EpochObserver* observer, const ScoreBuffers* buffers,
                               Comm* comm) {
  ScorePolicy fn;
  fn.fn = &score;
  fn.buffers = buffers;
  return rollout_on_cpu(pr, Policy::whittle, observer, comm, &fn, label);
}

}  // namespace crawleval
