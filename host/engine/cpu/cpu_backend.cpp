// The CPU backend: the fast path on machines without a GPU. Two engines (docs/cpu-design.md):
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

struct ReplicationResult {
  double reward_sum = 0.0, cost_sum = 0.0;
  double measured_seconds = 0.0;  // RolloutOutput::measured_seconds, of this replication
  uint64_t measured_epochs = 0;
};

/// Times the measured epochs of one replication: loop iterations [first, total) of an epoch loop
/// whose iteration t applies epoch t - 1's selection and scores epoch t (iteration 0, the set-up's
/// first scoring, is left out when there is no burn-in). Iteration `total` applies the last
/// selection only and is not counted.
class MeasuredWindow {
 public:
  MeasuredWindow(uint64_t burn_in, uint64_t total)
      : first_(std::max<uint64_t>(burn_in, 1)), total_(total) {}
  /// At the start of iteration t.
  void at(uint64_t t) {
    if (first_ >= total_) return;
    if (t == first_) start_ = std::chrono::steady_clock::now();
    if (t == total_) {
      res_seconds_ =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      res_epochs_ = total_ - first_;
    }
  }
  void report(ReplicationResult& r) const {
    r.measured_seconds = res_seconds_;
    r.measured_epochs = res_epochs_;
  }

 private:
  uint64_t first_, total_;
  std::chrono::steady_clock::time_point start_;
  double res_seconds_ = 0.0;
  uint64_t res_epochs_ = 0;
};

/// What a replication reports besides its result.
struct Sinks {
  const EpochObserver* observer = nullptr;
  std::vector<double>* epoch_reward = nullptr;  // replication 0's per-epoch rewards
  std::atomic<uint64_t>* done = nullptr;        // epochs done (progress)
  detail::Progress* progress = nullptr;         // the thread that reports progress
  EngineCounters* counters = nullptr;           // the wide engine's selection figures
  const detail::Progress* stop = nullptr;       // every thread: stop between epochs once stopped()
};

/// Adds a measured epoch's reward and reports it.
void count_epoch(uint64_t t, const RunConfig& cfg, double reward, double spent,
                 ReplicationResult& res, const Sinks& sinks) {
  if (t < cfg.burn_in) return;
  res.reward_sum += reward;
  res.cost_sum += spent;
  if (sinks.epoch_reward) sinks.epoch_reward->push_back(reward);
}

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

/// One replication on the wide engine. Template parameters fix the policy, the model and unit
/// costs; General selects the general model (belief observation, expiry, the static policy),
/// which keeps an AgeState word per source and scores through policy_score.
template <Policy P, bool Det, bool Unit, bool General>
ReplicationResult run_wide(const Problem& pr, uint32_t rep, WideWorkspace& ws, int threads,
                           const Sinks& sinks) {
  using namespace window;
  constexpr bool kTrack = !General && Det && P == Policy::whittle;  // class packed in the word
  const RunConfig& cfg = pr.config;
  const std::size_t n = pr.size();
  EpochCollective& layer = *ws.layer;
  layer.begin_sums(2, kChunk, cfg.epochs, sinks.observer != nullptr);  // reward, cost per chunk
  const std::size_t chunks = layer.chunks();
  // Local source i is global source base + i (ties, round robin) and draws as draw0 + i.
  const uint64_t base = pr.shard.first, draw0 = pr.first_id + base;
  // A global stop id in this process's local ids (the apply compares local ids).
  auto local_stop = [&](uint64_t id) -> uint64_t {
    return id <= base ? 0 : std::min<uint64_t>(id - base, n);
  };
  const ParamColumns& params = pr.params();
  const double* alpha = params.alpha.data();
  const double* drift_u = params.drift.data();
  const double* cost = pr.population->cost.data();
  const uint64_t seed = cfg.seed;
  const UtilityDist utility = cfg.utility;
  const uint32_t r = cfg.first_replication + rep;  // the replication's index in every draw
  const FixedBudget& fb = pr.weights;
  const uint64_t limit = fb.limit;
  const uint64_t total = pr.total_epochs();
  ScorePolicy* const fn = General ? ws.function : nullptr;
  // Which sources a score function sees fully: the population's observe column where it has one
  // (and the problem applies it), else every source as --observe says.
  const uint8_t* observed = pr.observe_column_applies() ? pr.population->observe.data() : nullptr;
  const bool full = cfg.observe == Observe::full && !observed;
  // A score function under full observation reads the state itself (the caller's buffer where it
  // gives one: no copy on the way to Python); under belief (or a column) the expected state,
  // written beside it.
  double* x = ws.x.data();
  double *seen = nullptr, *age = nullptr, *collected = nullptr;
  if (fn) {
    const ScoreBuffers* b = fn->buffers;
    if (b && full) x = b->state;
    seen = full ? x : b ? b->state : fn->seen.data();
    age = b ? b->age : fn->age.data();
    collected = b ? b->collected : nullptr;
  }
  const double* fn_scores = nullptr;  // this epoch's scores from the function
  uint32_t* wd = ws.word.data();
  uint8_t* cl = ws.cls.data();
  detail::WindowSelector& sel = ws.sel;
  SelectState& st = sel.state();
  const bool has_word = !ws.word.empty();
  // The word's grid age stops at kEtaMax (2^29 - 16) while the state goes on: a source left
  // uncrawled longer would be scored as the wrong age's (0.6% high 1e6 epochs past it; a reviewer).
  // No run of this engine is that long in practice (5.4e8 epochs of more than 2048 sources).
  CE_EXPECTS(!(kTrack && has_word) || total + 2 < word::kEtaMax,
             "--epochs + --burn-in: the deterministic Whittle policy above 2048 sources (or under "
             "MPI) tracks ages up to " +
                 std::to_string(word::kEtaMax) + " epochs: at most " +
                 std::to_string(word::kEtaMax - 3) + " epochs per run");
  const bool vector_pass = kTrack && Unit && avx512_pass_available();
  const bool vector_words = !Det && !General && avx512_pass_available();
  const bool vector_index = vector_words;
  // The whole stochastic pass eight wide for the Whittle and greedy policies with unit costs (with
  // costs only the Whittle index is).
  const bool vector_stochastic =
      vector_index && Unit && (P == Policy::whittle || P == Policy::greedy);
  ThreadGovernor governor(threads, ws.adapt_threads);

  auto weight_of = [&](std::size_t i) -> uint64_t { return Unit ? 1 : fixed_weight(cost[i], fb); };
  auto class_of = [&](std::size_t i) -> uint32_t { return kTrack ? word::cls(wd[i]) : cl[i]; };
  auto set_class = [&](std::size_t i, uint32_t c) {
    if constexpr (kTrack)
      wd[i] = word::with_class(wd[i], c);
    else
      cl[i] = uint8_t(c);
  };
  // The score of source i's stored state (the scoring pass and its recomputations).
  ScoreContext ctx{P, cfg.observe, seed, r, 0, 0, pr.global_size(), pr.first_id, pr.lip_multiplier};
  auto score_of = [&](std::size_t i, double xi, uint32_t w) -> double {
    if constexpr (General) {
      if (fn_scores) return fn_scores[i];
      return general_score(xi, w, i, base + i, ctx, pr);
    } else {
      // On the grid by grid_index, off it (kGeneral) by the general index.
      if (kTrack && !(w & word::kGeneral))
        return word::grid_index(xi, w & word::kStateMask, alpha[i], drift_u[i],
                                Unit ? 1.0 : 1.0 / cost[i]);
      return base_score<P, Unit>(xi, i, base + i, ctx, pr);
    }
  };
  struct Engine final : detail::WindowSelector::Sources {
    decltype(score_of)& score;
    decltype(weight_of)& weight_fn;
    decltype(class_of)& class_fn;
    decltype(set_class)& set_class_fn;
    detail::WindowSelector& sel;
    const double* x;
    const uint32_t* wd;  // nullptr where the engine keeps no word
    bool packed;         // the word holds the class (bits 30-31) besides the state
    std::size_t n, chunks;
    int threads;
    std::function<void()> wake;           // every dormant source live before a recount
    const DormantSet* dormant = nullptr;  // the dormant sources (none split where unused)
    Engine(decltype(score_of)& s, decltype(weight_of)& w, decltype(class_of)& c,
           decltype(set_class)& sc, detail::WindowSelector& se)
        : score(s), weight_fn(w), class_fn(c), set_class_fn(sc), sel(se) {}
    // Every source's score recomputed from its stored state, in the scoring pass's chunks: relist
    // it against the plan (the fallback) or count its bin (a recount).
    // A recount needs every source's bin (the dormant ones wake first); a fallback whose bin lies
    // at or above the dormant sources' bound relists the live ones alone (the others are of class
    // kBelow against it, as they are already).
    void rescore(bool relist) {
      const bool live_only = relist && dormant->on() && sel.plan().lo >= dormant->bound();
      if (!live_only && wake) wake();
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1)
      for (std::size_t c = 0; c < chunks; ++c) {
        detail::WindowSelector::Pass& ps = sel.pass(omp_get_thread_num());
        const std::size_t lo = c * kChunk, hi = std::min(n, lo + kChunk);
        const auto rescore_source = [&](std::size_t i, std::size_t slot) {
          const uint32_t w = wd ? (packed ? wd[slot] & word::kStateMask : wd[slot]) : 0u;
          if (!relist) {
            const uint32_t bin = coarse_bin_of_score(score(i, x[slot], w));
            detail::WindowSelector::count_bin<false>(ps, bin, weight_fn(i));
          } else if (class_fn(slot) != kTie) {  // the plan's tie key is unchanged: still a member
            const uint64_t key = score_key(score(i, x[slot], w));
            set_class_fn(slot, sel.relist(ps, key, uint32_t(i), weight_fn(i)));
          }
        };
        dormant->for_each_live(c, lo, hi, rescore_source);
      }
    }
    void fallback() override { rescore(true); }
    void recount() override { rescore(false); }
    // A dormant source is never a tie member (its bins lie below the tie key's).
    bool tie_member(std::size_t i) override {
      const std::size_t slot = dormant->slot_of(i);
      return slot != DormantSet::kAsleep && class_fn(slot) == kTie;
    }
    uint64_t weight(std::size_t i) override { return weight_fn(i); }
  } engine(score_of, weight_of, class_of, set_class, sel);
  engine.x = x;
  engine.wd = ws.word.empty() ? nullptr : wd;
  engine.packed = kTrack;
  engine.n = n;
  engine.chunks = chunks;
  engine.threads = threads;

  // Dormant sources (dormant.hpp): the deterministic Whittle pass (unit costs) leaves out the
  // sources whose every future score lies below the selection's lump floor.
  DormantSet& dormant = ws.dormant;
  const DormantTuning tuning = dormant_tuning();
  const bool use_dormant = kTrack && Unit && tuning.on;
  dormant.reset(n, kChunk);
  uint64_t now = 0;      // the loop's iteration: a wake inside the selection brings states to it
  uint64_t backoff = 0;  // forced wakes and empty splits: each doubles the wait before a split
  uint64_t dormant_epochs = 0;
  std::atomic<bool> dormant_failed{false};
  uint64_t calm_since = 0;  // the iteration of the last forced wake or lowered bound
  const DormantSet::Arrays arrays{x, wd, alpha, drift_u, threads};
  engine.dormant = &dormant;
  if (use_dormant) {
    engine.wake = [&] {
      if (!dormant.on()) return;
      dormant.wake(now, arrays);
      backoff += 1;
      calm_since = now;
    };
  }

  // Initial states; the first plan from a sample of the initial scores (initial_plan).
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (std::size_t i = 0; i < n; ++i) {
    const InitialState s = pr.initial_at(i);  // derived where the columns are compact
    x[i] = s.x;
    if constexpr (kTrack) {
      wd[i] = word::initial(s.eta, s.age);
    } else if constexpr (General) {
      wd[i] = s.age;
    }
  }
  if (collected) std::fill(collected, collected + n, 0.0);
  st = SelectState{};
  // The first plan from a sample of the first scores (a score function's after its first call).
  auto first_plan = [&] {
    std::vector<std::pair<uint64_t, uint64_t>> sample;
    for (std::size_t i = 0; i < n; ++i)
      if (sel.sampled(i))
        sample.emplace_back(score_key(score_of(i, x[i], ws.word.empty() ? 0u : wd[i])),
                            weight_of(i));
    sel.plan_from_sample(std::move(sample), limit);
  };
  if (!fn) first_plan();

  ReplicationResult res;
  const EpochCollective::Totals add = [&](const double* sums) {
    res.reward_sum += sums[0];
    res.cost_sum += sums[1];
    if (sinks.epoch_reward) sinks.epoch_reward->push_back(sums[0]);
  };
  MeasuredWindow window(cfg.burn_in, total);
  for (uint64_t t = 0; t <= total; ++t) {
    window.at(t);
    now = t;
    if (t >= cfg.burn_in && t < total) dormant_epochs += dormant.dormant();  // this pass's
    const bool apply = t > 0, score = t < total;
    const uint32_t prev = uint32_t(t - 1);
    ctx.epoch = uint32_t(t);
    ctx.pointer = st.pointer;
    // The previous selection as the apply step reads it: tie members are all crawled, none, or
    // those below the stop id.
    const Applied applied = st.applied;
    const bool all = applied.sel.all;
    const bool tie_all = applied.has_tie && applied.tie_key > applied.sel.stop_key;
    const bool tie_some = applied.has_tie && applied.tie_key == applied.sel.stop_key;
    const ApplyRule rule{all, tie_all, tie_some, local_stop(applied.sel.stop_id),
                         applied.sel.stop_key};
    const Plan plan = st.plan;
    double* const sums = layer.sums();  // sums[c]: chunk c's reward, sums[chunks + c]: its cost
    if (score) sel.begin_pass();
    const int pass_threads = governor.threads();
    const double wall0 = governor.adapting() ? omp_get_wtime() : 0.0;
    double pass_cpu = 0.0;
#pragma omp parallel num_threads(pass_threads) if (pass_threads > 1)
    {
      const double cpu0 = governor.adapting() ? thread_cpu_seconds() : 0.0;
#pragma omp for schedule(dynamic, 1) nowait
      for (std::size_t c = 0; c < chunks; ++c) {
        detail::WindowSelector::Pass& ps = sel.pass(omp_get_thread_num());
        const std::size_t lo = c * kChunk, hi = std::min(n, lo + kChunk);
        double reward = 0.0, spent = 0.0;
        if constexpr (kTrack) {
          alignas(64) double sc[kBlock], x_old[kBlock];
          alignas(64) uint8_t crawled[kBlock];
          uint64_t* count = ps.count.data();
          uint64_t* weight = ps.weight.data();
          bool scalar_ran = false;
          auto scalar_block = [&](std::size_t b, std::size_t cnt) {
            det_whittle_block(b, cnt, apply, rule, x + b, wd + b, alpha + b, drift_u + b,
                              Unit ? nullptr : cost + b, sc, x_old, crawled,
                              [&](std::size_t j, double xi, uint32_t w) {
                                return score_key(score_of(b + j, xi, w));
                              });
            for (std::size_t j = 0; j < cnt; ++j) {
              const std::size_t i = b + j;
              if (crawled[j]) {
                reward += x_old[j];
                spent += Unit ? 1.0 : cost[i];
              }
              if (!score) continue;
              const uint32_t w = wd[i];
              const double s =
                  (w & word::kGeneral) ? whittle_index(x[i], params.at_base(i)) : sc[j];
              const uint64_t key = score_key(s);
              const uint32_t bin = coarse_bin_of_score(s);
              const uint32_t k = classify(key, bin, plan);  // the plan copied: no reload per store
              const uint64_t wt = weight_of(i);
              count[bin] += 1;
              if (!Unit) weight[bin] += wt;
              if (k >= kCandidate) sel.note(ps, key, k, uint32_t(i), wt);
              wd[i] = w | (k << word::kClassShift);
            }
            scalar_ran = true;
          };
          // The AVX-512 pass (unit costs) runs until a group of eight holds a source off the grid;
          // the scalar pass takes that group, then the vector pass goes on. A split chunk: its
          // live slots (every one on the grid, a multiple of eight), its dormant sources lumped.
          const uint32_t live = dormant.live(c);
          if (live != DormantSet::kPlain && vector_pass) {
            const DetPass part{
                x + lo, wd + lo, dormant.live_alpha(c), dormant.live_u(c), rule, plan,
                apply,  score,   dormant.loc(c),        uint32_t(lo)};
            if (det_whittle_avx512(part, 0, live, sel, ps, &reward, &spent) != live)
              dormant_failed = true;
          } else if (live != DormantSet::kPlain) {
            // The scalar pass over the live slots (slot lo + j is source lo + loc[j]): the
            // operations of det_whittle_block and of its records, every source on the grid, in one
            // loop (callgrind: 13% fewer instructions in this pass than det_whittle_block's two
            // halves, which win where the loop reads every source in id order).
            const uint16_t* loc = dormant.loc(c);
            const double* al = dormant.live_alpha(c);
            const double* ul = dormant.live_u(c);
            for (std::size_t j = 0; j < live; ++j) {
              const std::size_t slot = lo + j, id = lo + loc[j];
              const uint32_t stored = wd[slot];
              const uint32_t w = stored & word::kStateMask, cls = stored >> word::kClassShift;
              const double xi = x[slot];
              bool crawled = apply && rule.crawled(cls, id);
              if (apply && cls == kCandidate && !crawled)
                crawled = rule.selected(score_key(word::grid_index(xi, w, al[j], ul[j], 1.0)), id);
              const double xn = apply ? (crawled ? ul[j] : al[j] * xi + ul[j]) : xi;
              const uint32_t wn = apply ? word::next(w, crawled, xn != xi) : w;
              x[slot] = xn;
              if (crawled) reward += xi, spent += 1.0;
              if (!score) {
                wd[slot] = wn;
                continue;
              }
              const double sc = word::grid_index(xn, wn, al[j], ul[j], 1.0);
              const uint64_t key = score_key(sc);
              const uint32_t bin = coarse_bin_of_score(sc);
              const uint32_t k = classify(key, bin, plan);
              ps.count[bin] += 1;
              if (k >= kCandidate) sel.note(ps, key, k, uint32_t(id), 1);
              wd[slot] = wn | (k << word::kClassShift);
            }
            scalar_ran = true;
          }
          if (live != DormantSet::kPlain && score)
            detail::WindowSelector::lump(ps, hi - lo - live, hi - lo - live);
          const DetPass vec{x, wd, alpha, drift_u, rule, plan, apply, score};
          for (std::size_t b = live != DormantSet::kPlain ? hi : lo; b < hi;) {
            if (vector_pass) b = det_whittle_avx512(vec, b, hi, sel, ps, &reward, &spent);
            if (b >= hi) break;
            const std::size_t cnt = std::min(vector_pass ? std::size_t(8) : kBlock, hi - b);
            scalar_block(b, cnt);
            b += cnt;
          }
          if (scalar_ran) {
            // The sources under the lump floor are counted in one lump, as the AVX-512 pass counts
            // them: the same histogram, so the same plans and the same path through the selection.
            // The scalar pass counts their bins and moves them to the lump here, once per chunk
            // (a test on the floor per source cost it 17%: 6.0 -> 7.0 ms per epoch at 1e6).
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
        } else {
          // A block of sources at a time: the transitions (the stochastic base model with the
          // first arrival words of eight sources computed at once), then the scores (the general
          // Whittle index eight wide), then the selection's records.
          constexpr bool kWords = !Det && !General;
          constexpr bool kIndexed = !Det && !General && P == Policy::whittle;
          alignas(32) uint32_t w0[8], wnext[kBlock];
          alignas(64) double sc[kBlock];
          uint8_t sure[kBlock / 8];
          const uint32_t floor = kIndexed ? window::lump_floor(plan) : 0;
          std::size_t from = lo;
          if (vector_stochastic) {
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
              if (fn) {  // what the function observes; it scores after the pass
                if (score && !full) {
                  double om_eta;
                  seen[i] = observed && observed[i]
                                ? xi
                                : AgeState::value(w, ctx.epoch, pr.initial_state()[i], params.at(i),
                                                  &om_eta);
                }
                if (score) age[i] = AgeState::age(w, ctx.epoch);
                wd[i] = w;
                continue;
              }
              if (score && !kIndexed) sc[j] = score_of(i, xi, w);
              if (!score && has_word) wd[i] = w;
            }
            if (!score || fn) continue;
            if constexpr (kIndexed)
              whittle_index_run(x + b, params, b, cnt, vector_index, floor, sc, sure);
            for (std::size_t j = 0; j < cnt; ++j) {  // c.
              const std::size_t i = b + j;
              if (kIndexed && ((sure[j / 8] >> (j % 8)) & 1)) {  // below the floor: no index
                cl[i] = uint8_t(kBelow);
                detail::WindowSelector::lump(ps, 1, weight_of(i));
                continue;
              }
              const uint32_t k = sel.record<Unit>(ps, score_key(sc[j]), coarse_bin_of_score(sc[j]),
                                                  uint32_t(i), weight_of(i));
              cl[i] = uint8_t(k);
              if constexpr (General) wd[i] = wnext[j];
            }
          }
        }
        sums[c] = reward;
        sums[chunks + c] = spent;
      }
      if (governor.adapting()) {
        const double used = thread_cpu_seconds() - cpu0;
#pragma omp atomic
        pass_cpu += used;
      }
    }
    if (governor.adapting()) governor.record(omp_get_wtime() - wall0, pass_cpu);
    CE_EXPECTS(!dormant_failed, "internal: a split chunk's live slot off the index grid");
    if (apply && prev >= cfg.burn_in) layer.commit(add);
    if (!score) break;
    if (fn) {
      // The function's one call, then its scores recorded in the selection.
      const double* borrowed = nullptr;
      (*fn->fn)(ScoreRequest{r, t, n, seen, age, fn->scores.data(), &borrowed, base,
                             layer.single() ? nullptr : &layer.comm()});
      fn_scores = borrowed ? borrowed : fn->scores.data();
      if (t == 0) first_plan();
#pragma omp parallel for schedule(dynamic, 1) num_threads(pass_threads) if (pass_threads > 1)
      for (std::size_t c = 0; c < chunks; ++c) {
        detail::WindowSelector::Pass& ps = sel.pass(omp_get_thread_num());
        for (std::size_t i = c * kChunk; i < std::min(n, (c + 1) * kChunk); ++i) {
          const uint64_t key = score_key(fn_scores[i]);
          cl[i] = uint8_t(sel.record<Unit>(ps, key, coarse_bin(key), uint32_t(i), weight_of(i)));
        }
      }
      if (borrowed && sinks.observer) std::copy(borrowed, borrowed + n, fn->scores.begin());
    }
    // Steps 2-5 (window_select.hpp), then the listed sources' final classes: the deterministic
    // Whittle pass resolves them itself (the key of the state it reads), the others here.
    const Selection s = sel.select(n, limit, engine);
    if constexpr (!kTrack)
      for (const auto& it : sel.listed())
        set_class(it.id, is_selected(it.key, base + it.id, s) ? kAbove : kBelow);
    if (sinks.observer) {
      // The crawled global ids of every process, and the reward the next apply will collect
      // (their states summed in id order across the processes).
      ws.selected.clear();
      std::vector<double> crawled_x;
      const Applied& a = st.applied;
      // Source i in slot `slot` (i itself but in a split chunk, whose dormant sources the
      // selection never crawls).
      auto visit = [&](std::size_t i, std::size_t slot) {
        const uint32_t cls = kTrack ? word::cls(wd[slot]) : cl[slot];
        const uint64_t own = kTrack && cls == kCandidate
                                 ? score_key(score_of(i, x[slot], wd[slot] & word::kStateMask))
                                 : 0;
        if (crawled_by_class(cls, base + i, own, a))
          ws.selected.push_back(base + i), crawled_x.push_back(x[slot]);
      };
      for (std::size_t c = 0; c < chunks; ++c)
        dormant.for_each_live(c, c * kChunk, std::min(n, (c + 1) * kChunk), visit);
      const std::vector<uint64_t> all = layer.gather(ws.selected);
      const std::vector<uint32_t> ids(all.begin(), all.end());  // observers see < 2^32 sources
      // (A score function's observer also sees the states and scores of one process.)
      const bool arrays = fn && layer.single();
      (*sinks.observer)(EpochView{rep, t, &ids, layer.sum_in_order(crawled_x),
                                  arrays && x == ws.x.data() ? &ws.x : nullptr,
                                  arrays ? &fn->scores : nullptr});
    }
    if (use_dormant) {
      // The next pass's dormant sources: everything wakes before a selection that crawls every
      // source; a lower floor wakes the sources it reaches; a higher one (every `resplit` epochs,
      // longer after forced wakes) puts more to sleep; the others catch up now and then.
      if (st.applied.sel.all) {  // (with unit costs only when every source fits every epoch)
        if (dormant.on()) dormant.wake(t, arrays), backoff += 1, calm_since = t;
      } else {
        const uint32_t floor = lump_floor(st.plan);
        if (backoff > 0 && t >= calm_since + 512) backoff -= 1, calm_since = t;  // it decays
        const uint64_t wait = tuning.resplit
                              << (tuning.eager ? 0 : std::min<uint64_t>(backoff, 10));
        if (dormant.on() && floor < dormant.bound()) {
          // A floor that fell may fall again: one bin more below it, and a longer wait before
          // the next raise (a boundary that swings across a bin edge splits rarely).
          dormant.split(floor > 0 ? floor - 1 : 0, t, arrays);
          backoff += 1;
          calm_since = t;
        } else if (floor > dormant.bound() && t >= dormant.split_at() + wait) {
          dormant.split(floor, t, arrays);
          if (!dormant.on()) backoff += 1;
        } else if (dormant.on() && t >= dormant.stamp() + tuning.catch_up) {
          dormant.catch_up(t, arrays);
        }
      }
    }
    const uint64_t so_far = sinks.done->fetch_add(1, std::memory_order_relaxed) + 1;
    if (sinks.progress) sinks.progress->update(so_far);
    if (sinks.stop && sinks.stop->stopped()) break;
  }
  layer.flush(add);
  window.report(res);
  if (sinks.counters) {
    const Diagnostics& d = st.diag;
    sinks.counters->selections += d.epochs;
    sinks.counters->window_misses += d.misses;
    sinks.counters->levels += d.levels;
    sinks.counters->tie_scans += d.tie_scans;
    sinks.counters->recounts += d.recounts;
    sinks.counters->listed += d.listed;
    sinks.counters->dormant += dormant_epochs;
    sinks.counters->dormant_wakes += dormant.wakes + dormant.lowered;
  }
  return res;
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
/// policy tracks (eta, 1 - alpha^eta) per source (GridTracker).
template <Policy P, bool Det, bool Unit, bool General>
ReplicationResult run_small(const Problem& pr, uint32_t rep, SmallWorkspace& ws,
                            const Sinks& sinks) {
  const RunConfig& cfg = pr.config;
  const std::size_t n = pr.size();
  const ParamColumns& params = pr.params();  // every column held (cpu_rollout)
  const double* cost = pr.population->cost.data();
  constexpr bool kTrack = !General && Det && P == Policy::whittle;
  const uint64_t total = pr.total_epochs();
  double* x = ws.x.data();
  double* om_eta = ws.om_eta.data();
  uint32_t* eta = ws.eta.data();
  uint64_t* keys = ws.keys.data();
  const uint64_t seed = cfg.seed;
  const UtilityDist utility = cfg.utility;
  const uint32_t r = cfg.first_replication + rep;
  const double* x0 = pr.initial_state().data();  // the static policy's (never compact)
  const uint32_t* period = pr.policy_periods(P);
  const double* gain = pr.policy_gains(P);

  for (std::size_t i = 0; i < n; ++i) {
    const InitialState s = pr.initial_at(i);  // derived where the columns are compact
    x[i] = s.x;
    if (General) eta[i] = s.age;
    if (kTrack) eta[i] = s.eta, om_eta[i] = s.om_eta;
  }

  ReplicationResult res;
  Selection sel;
  uint64_t pointer = 0;
  uint64_t unreported = 0;
  MeasuredWindow window(cfg.burn_in, total);
  for (uint64_t t = 0; t <= total; ++t) {
    window.at(t);
    const bool apply = t > 0, score = t < total;
    const uint32_t prev = uint32_t(t - 1), now = uint32_t(t);
    const ScoreContext ctx{P,           cfg.observe,      seed, r, now, pointer, n,
                           pr.first_id, pr.lip_multiplier};
    double reward = 0.0, spent = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      const uint64_t id = pr.first_id + i;                            // the draws' global id
      SourceParams p = General ? params.at(i) : params.held_base(i);  // unused: not loaded
      if (Unit) p.inv_cost = 1.0;
      if (apply) {
        const bool crawled = is_selected(keys[i], i, sel);
        if (crawled) {
          reward += x[i];
          spent += Unit ? 1.0 : cost[i];
        }
        if constexpr (General) {
          general_transition(&x[i], &eta[i], crawled, prev, Det, utility, seed, r, id, p);
        } else {
          const double arrivals = Det ? drift(p)
                                      : sample_arrivals_below(p, params.no_arrival[i],
                                                              first_arrival_word(seed, r, id, prev),
                                                              utility, seed, r, id, prev);
          const double before = x[i];
          x[i] = crawled ? arrivals : passive_next(x[i], arrivals, p);
          if (kTrack) {
            if (crawled)
              GridTracker::crawled(p, &eta[i], &om_eta[i]);
            else if (x[i] != before)  // at a fixed point the grid position stays (det_word::next)
              GridTracker::passive(p, &eta[i], &om_eta[i]);
          }
        }
      }
      if (score) {
        double s;
        if constexpr (General)
          s = policy_score(ctx, i, x[i], eta[i], x0[i], period ? period[i] : 0u,
                           gain ? gain[i] : 0.0, p);
        else if constexpr (P == Policy::whittle)
          s = kTrack ? GridTracker::index(x[i], eta[i], om_eta[i], p) : whittle_index(x[i], p);
        else if constexpr (P == Policy::greedy)
          s = x[i] * p.inv_cost;
        else if constexpr (P == Policy::round_robin)
          s = round_robin_score(i, pointer, n);
        else
          s = random_score(seed, r, id, now);
        keys[i] = score_key(s);
      }
    }
    if (apply) count_epoch(prev, cfg, reward, spent, res, sinks);
    if (!score) break;
    sel = detail::select_by_sort(keys, Unit ? nullptr : cost, n, pr.weights, ws.order.data());
    if (P == Policy::round_robin && !sel.all) pointer = sel.stop_id;
    if (sinks.observer) {
      ws.selected.clear();
      double rw = 0.0;
      for (std::size_t i = 0; i < n; ++i)
        if (is_selected(keys[i], i, sel)) ws.selected.push_back(uint32_t(i)), rw += x[i];
      (*sinks.observer)(EpochView{rep, t, &ws.selected, rw, nullptr, nullptr});
    }
    if (++unreported == kProgressBatch || t + 1 == total) {
      const uint64_t so_far =
          sinks.done->fetch_add(unreported, std::memory_order_relaxed) + unreported;
      unreported = 0;
      if (sinks.progress) sinks.progress->update(so_far);
      if (sinks.stop && sinks.stop->stopped()) break;
    }
  }
  window.report(res);
  return res;
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
