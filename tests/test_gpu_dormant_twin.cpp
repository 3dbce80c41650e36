// The host twin of the CUDA wide engine's sleeping sources (kernels/dormant_pass.cu): two engines
// run the deterministic fused pass in the kernels' per-thread order, one over every source (the
// pass of kernels/epoch_kernels.cu), one with sleeping sources (the live pass, the flushes, the
// decision and the sleep kernel, through the functions of include/crawleval/engine/wide_dormant.hpp
// that the kernels call). Epoch by epoch they must give the same per-thread reward sums (so the
// same rewards, bit for bit, under the device's block reductions), the same keys for every source
// the live pass scores, the crawled set of the exact selection, and the same boundary bin (after
// a recount where the lumped histogram put it under the floor); at the end every state word is
// the same. The selection itself is the exact rule here (its device kernels have their own twin,
// test_window_select.cpp); each engine keeps its own plans (window::finalize over its own counts)
// and classes, as on the device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "crawleval/engine/wide_dormant.hpp"
#include "crawleval/model/selection.hpp"
#include "crawleval/select/window_select.hpp"

namespace {

namespace ce = crawleval;
namespace wd = crawleval::wide;
namespace ws = crawleval::window;

struct Case {
  std::string name;
  uint64_t n;
  uint32_t blocks;
  double fraction;  ///< budget as a share of the total cost
  bool unit, greedy, eager;
  uint32_t epochs;
  int groups;  ///< > 0: the population is this many groups of equal sources (ties)
  /// Budget schedule: from epoch `jump_at` the budget is multiplied by `jump` (a boundary that
  /// falls under the floor: the recount; or everything crawled: a forced wake).
  uint32_t jump_at = 0;
  double jump = 1.0;
};

struct Population {
  std::vector<double> mu_t, u_star, cost;
};

Population population(const Case& c) {
  std::mt19937_64 rng(c.n * 7 + c.blocks);
  std::lognormal_distribution<double> mu(std::log(0.1), 1.0), u(0.0, 1.5), cost(0.0, 0.5);
  Population p;
  for (uint64_t i = 0; i < c.n; ++i) {
    const uint64_t g = c.groups > 0 ? i % uint64_t(c.groups) : i;
    std::mt19937_64 r(c.groups > 0 ? g + 1 : rng());
    p.mu_t.push_back(std::min(mu(r), 5.0));
    p.u_star.push_back(u(r));
    p.cost.push_back(c.unit ? 1.0 : cost(r));
  }
  if (c.groups == 0 && c.n > 10) {  // extremes: they must never sleep wrongly or poison the sums
    p.u_star[3] = 1e-300, p.u_star[7] = 1e300, p.mu_t[5] = 1e-12, p.mu_t[9] = 700.0;
  }
  return p;
}

/// The exact budgeted selection over every source's key (ranks: key descending, id ascending).
ce::Selection exact_selection(const std::vector<uint64_t>& key, const std::vector<uint64_t>& w,
                              uint64_t limit) {
  std::vector<uint32_t> order(key.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return key[a] != key[b] ? key[a] > key[b] : a < b; });
  uint64_t used = 0;
  for (uint32_t i : order) {
    if (ws::is_boundary(used, w[i], limit)) return ce::Selection{key[i], i, false};
    used += w[i];
  }
  return ce::Selection{};
}

/// The boundary bin of a coarse histogram (-1: everything fits), and the weight above it.
int boundary(const std::vector<uint64_t>& weight, uint64_t limit) {
  uint64_t acc = 0;
  for (int b = ce::kBins - 1; b >= 0; --b) {
    if (ws::is_boundary(acc, weight[std::size_t(b)], limit)) return b;
    acc += weight[std::size_t(b)];
  }
  return -1;
}

struct Counters {
  uint64_t sleeps = 0, sleeping_epochs = 0, wakes = 0, recounts = 0, tie_flushes = 0, catch_ups = 0,
           candidates_by_own_key = 0;
};

/// One engine of the twin: its state words in the population's order, its plan and selection
/// record, and with sleeping sources the live slots and the DormantState.
class Engine {
 public:
  Engine(const Case& c, const Population& p, const wd::Geometry& g, bool sleepy,
         const ce::FixedBudget& fb)
      : c_(c), p_(p), g_(g), sleepy_(sleepy), word_(c.n, 0u), key_(c.n, 0) {
    const std::size_t slots = g.tiles * ws::kTile;
    lword_.resize(slots), lpos_.resize(slots), lmu_.resize(slots), lu_.resize(slots);
    lcost_.resize(slots), len_.assign(std::size_t(g.blocks) * wd::kLanes, 0);
    block_len_.assign(g.blocks, 0);
    d_.eager = c.eager;
    wd::start_replication(d_);
    for (uint64_t i = 0; i < c.n; ++i)
      w_.push_back(c.unit ? 1ull : ce::fixed_weight(p.cost[i], fb));
  }

  ce::SourceParams params(uint64_t i) const {
    return wd::grid_params(p_.mu_t[i], p_.u_star[i], p_.cost[i], c_.unit);
  }
  double score_of_word(uint32_t w, uint64_t i) const {
    return c_.greedy ? wd::grid_score<true>(w & ~wd::kClassMask, params(i))
                     : wd::grid_score<false>(w & ~wd::kClassMask, params(i));
  }
  ce::SourceParams live_params(uint64_t slot) const {
    return wd::grid_params(lmu_[slot], lu_[slot], lcost_[slot], c_.unit);
  }

  /// One source's step as the kernels do it: apply by class (a listed candidate by its own key),
  /// move, score, classify; the reward into its thread's sum. Returns the new word.
  uint32_t step(uint32_t word, const ce::SourceParams& p, uint64_t i, bool apply, bool score,
                std::size_t thread) {
    const uint32_t s = word & ~wd::kClassMask, cls = (word >> wd::kClassShift) & 3u;
    bool crawled = false;
    if (apply) {
      if (cls == ws::kCandidate) {
        crawled =
            rule_.all || ce::is_selected(ce::score_key(c_.greedy ? wd::grid_score<true>(s, p)
                                                                 : wd::grid_score<false>(s, p)),
                                         i, st_.applied.sel);
        ++own_key_;
      } else {
        crawled = rule_.crawled(cls, i);
      }
      crawled_[i] = crawled;
    }
    if (crawled) spent_[thread] += p_.cost[i];
    const wd::GridStep r = c_.greedy ? wd::grid_step<true>(s, crawled, apply, p)
                                     : wd::grid_step<false>(s, crawled, apply, p);
    if (crawled) reward_[thread] += r.reward;
    if (!score) return r.next;
    const uint64_t key = ce::score_key(r.score);
    const uint32_t bin = ce::coarse_bin_of_score(r.score);
    const uint32_t c = ws::classify(key, bin, st_.plan);
    key_[i] = key;
    scored_[i] = 1;
    count_[bin] += 1, weight_[bin] += w_[i];
    if (c == ws::kCandidate) listed_.push_back(uint32_t(i));
    if (c == ws::kTie) tie_count_ += 1;
    return r.next | (c << wd::kClassShift);
  }

  /// The epoch's pass (the plain one or the live one, as the mode says).
  void pass(bool apply, bool score) {
    rule_ = ws::ClassRule(st_.applied);
    reward_.assign(len_.size(), 0.0), spent_.assign(len_.size(), 0.0);
    count_.assign(ce::kBins, 0), weight_.assign(ce::kBins, 0);
    listed_.clear(), tie_count_ = 0;
    crawled_.assign(c_.n, 0), scored_.assign(c_.n, 0);
    live_pass_ = d_.mode == wd::kDormant;
    for (uint32_t b = 0; b < g_.blocks; ++b)
      for (uint32_t lane = 0; lane < wd::kLanes; ++lane) {
        const std::size_t t = std::size_t(b) * wd::kLanes + lane;
        if (!live_pass_) {
          for (uint32_t pos = 0; pos < g_.positions(b); ++pos) {
            const uint64_t i = g_.id(b, lane, pos);
            if (i < c_.n) word_[i] = step(word_[i], params(i), i, apply, score, t);
          }
          continue;
        }
        // The live kernel's loop runs to the block's longest list (rounded up to kItems).
        EXPECT_LE(len_[t], block_len_[b]);
        for (uint32_t k = 0; k < len_[t]; ++k) {
          const uint64_t s = g_.slot(b, lane, k);
          const uint64_t i = g_.id(b, lane, lpos_[s]);
          lword_[s] = step(lword_[s], live_params(s), i, apply, score, t);
        }
      }
    if (live_pass_ && score) {  // the lump
      const uint32_t under = d_.floor - 1;
      count_[under] += d_.sleeping, weight_[under] += d_.sleeping_weight;
    }
    if (live_pass_ && apply) counters_.sleeping_epochs += d_.sleeping;
  }

  /// The flush kernel's work for every thread; with `recount`, every source's bin counted again.
  void flush(uint32_t now, bool recount) {
    const uint32_t delta = now - d_.stamp;
    if (delta) counters_.catch_ups += 1;
    if (recount) count_.assign(ce::kBins, 0), weight_.assign(ce::kBins, 0);
    struct Io {
      Engine* e;
      bool recount;
      uint32_t live_pos(uint64_t s) const { return e->lpos_[s]; }
      uint32_t live_word(uint64_t s) const { return e->lword_[s]; }
      uint32_t word(uint64_t i) const { return e->word_[i]; }
      void set_word(uint64_t i, uint32_t w) const { e->word_[i] = w; }
      void visit(uint64_t i, uint32_t w, bool valid) const {
        if (!recount || !valid) return;
        const uint32_t bin = ce::coarse_bin_of_score(e->score_of_word(w, i));
        e->count_[bin] += 1, e->weight_[bin] += e->w_[i];
      }
    } io{this, recount};
    for (uint32_t b = 0; b < g_.blocks; ++b)
      for (uint32_t lane = 0; lane < wd::kLanes; ++lane)
        wd::flush_walk(g_, b, lane, len_[std::size_t(b) * wd::kLanes + lane], delta, io);
  }

  void sleep(uint32_t now) {
    struct Io {
      Engine* e;
      uint32_t word(uint64_t i) const { return e->word_[i]; }
      ce::SourceParams params(uint64_t i) const { return e->params(i); }
      uint64_t weight(uint64_t i) const { return e->w_[i]; }
      void add_live(uint64_t s, uint32_t pos, uint64_t i, uint32_t w) const {
        e->lword_[s] = w, e->lpos_[s] = pos;
        e->lmu_[s] = e->p_.mu_t[i], e->lu_[s] = e->p_.u_star[i], e->lcost_[s] = e->p_.cost[i];
      }
    } io{this};
    uint64_t sleeping = 0, weight = 0;
    for (uint32_t b = 0; b < g_.blocks; ++b) {
      uint32_t longest = 0;
      for (uint32_t lane = 0; lane < wd::kLanes; ++lane) {
        const uint32_t len = wd::sleep_walk(g_, b, lane, d_.target, io, &sleeping, &weight);
        len_[std::size_t(b) * wd::kLanes + lane] = len;
        longest = std::max(longest, len);
      }
      block_len_[b] = longest;
    }
    wd::slept(d_, sleeping, weight, now);
    counters_.sleeps += 1;
  }

  /// Everything after the pass: boundary (with a recount), fallback, the tie tile's flush,
  /// finalize, the decision, the end flush, the mark and the sleep kernel. `sel`: the exact
  /// selection; `b_true`: the boundary of every source's own bin.
  void select(const ce::Selection& sel, int b_true, uint64_t limit, uint32_t now) {
    int b = boundary(c_.unit ? count_ : weight_, limit);
    ws::SelectState& st = st_;
    const bool hit = b >= 0 && st.plan.lo <= uint32_t(b) && uint32_t(b) <= uint32_t(st.plan.hi);
    if (live_pass_ && b >= 0 && uint32_t(b) < d_.floor) {  // the lumped bin: count again
      ASSERT_FALSE(hit) << "a boundary under the floor inside the window";
      flush(now, true);
      wd::woke(d_, now, true);
      counters_.wakes += 1, counters_.recounts += 1;
      b = boundary(c_.unit ? count_ : weight_, limit);
    } else if (live_pass_ && b >= 0 && !hit) {  // a miss: the fallback pass reads every source
      flush(now, false);
      wd::woke(d_, now, true);
      counters_.wakes += 1;
    }
    ASSERT_EQ(b, b_true) << "epoch " << now;
    if (b >= 0 && !hit) {  // the fallback pass: every source classified against [b, b]
      st.plan.lo = st.plan.hi = uint32_t(b);
      listed_.clear();
      for (uint64_t i = 0; i < c_.n; ++i) {
        const double s = score_of_word(word_[i], i);
        if (!scored_[i]) key_[i] = ce::score_key(s);  // it slept through the pass
        ASSERT_EQ(ce::score_key(s), key_[i]) << "fallback key of source " << i;
        const uint32_t cls = ws::classify(key_[i], ce::coarse_bin_of_score(s), st.plan);
        word_[i] = (word_[i] & ~wd::kClassMask) | (cls << wd::kClassShift);
        if (cls == ws::kCandidate) listed_.push_back(uint32_t(i));
      }
    }
    if (d_.mode == wd::kDormant && !sel.all && st.plan.has_tie && sel.stop_key == st.plan.tie_key) {
      flush(now, false);  // the tie tile rescans a tile by id
      wd::woke(d_, now, true);
      counters_.wakes += 1, counters_.tie_flushes += 1;
    }
    st.applied.sel = sel;
    st.s.bin = uint32_t(std::max(b, 0));
    st.tie_count = tie_count_;
    st.buffer_count[ws::kList] = listed_.size();
    ws::finalize(st, count_.data(), c_.n);
    if (sleepy_) {
      wd::decide(d_, st.plan, st.applied, now);
      if (d_.mode == wd::kDormant && d_.action != wd::kNone) {
        if (d_.action == wd::kWake) counters_.wakes += 1;
        flush(now, false);
        wd::flushed_at_end(d_, now);
      }
    }
    for (uint32_t i : listed_) {  // the mark kernel, in the population's order
      const uint32_t cls = ce::is_selected(key_[i], i, sel) ? ws::kAbove : ws::kBelow;
      word_[i] = (word_[i] & ~wd::kClassMask) | (cls << wd::kClassShift);
    }
    if (sleepy_ && d_.action == wd::kSleep) sleep(now);
  }

  const Case& c_;
  const Population& p_;
  wd::Geometry g_;
  bool sleepy_;
  std::vector<uint32_t> word_;
  std::vector<uint64_t> key_, w_, count_, weight_;
  std::vector<uint8_t> crawled_, scored_;
  std::vector<uint32_t> listed_;
  uint64_t tie_count_ = 0, own_key_ = 0;
  std::vector<double> reward_, spent_;
  std::vector<uint32_t> lword_, lpos_, len_, block_len_;
  std::vector<double> lmu_, lu_, lcost_;
  wd::DormantState d_;
  ws::SelectState st_;
  ws::ClassRule rule_{ws::Applied{}};
  bool live_pass_ = false;
  Counters counters_;
};

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

void run_case(const Case& c, Counters& out) {
  const Population p = population(c);
  const wd::Geometry g{c.n, (c.n + ws::kTile - 1) / ws::kTile, c.blocks};
  double total = 0.0;
  for (double x : p.cost) total += x;
  auto budget_at = [&](uint32_t t) {
    const double m = std::floor(total * c.fraction * (c.jump_at && t >= c.jump_at ? c.jump : 1.0));
    return std::max(m, 1.0);
  };
  // The integer weights of the first budget's scale; a later budget is a limit on them.
  double clamped = 0.0;
  const double mlim = ce::budget_limit_finite(budget_at(0));
  for (double x : p.cost) clamped += ce::clamped_cost_term(x, mlim);
  const ce::FixedBudget fb = ce::fixed_budget(budget_at(0), clamped, c.unit);
  Engine plain(c, p, g, false, fb), sleepy(c, p, g, true, fb);
  std::vector<uint64_t> prev_key;
  ce::Selection prev_sel;
  for (uint32_t t = 0; t <= c.epochs; ++t) {
    SCOPED_TRACE(c.name + ", epoch " + std::to_string(t));
    const bool apply = t > 0, score = t < c.epochs;
    plain.pass(apply, score);
    sleepy.pass(apply, score);
    // Each thread added the same rewards in the same order: the device's reductions over them
    // give the same bits.
    EXPECT_TRUE(same_bits(plain.reward_, sleepy.reward_)) << "rewards";
    EXPECT_TRUE(same_bits(plain.spent_, sleepy.spent_)) << "costs";
    for (uint64_t i = 0; i < c.n && apply; ++i)
      if (plain.crawled_[i] != ce::is_selected(prev_key[i], i, prev_sel)) {
        ADD_FAILURE() << "source " << i << ": the classes do not crawl the exact selection";
        break;
      }
    for (uint64_t i = 0; i < c.n && apply; ++i)
      if (plain.crawled_[i] != sleepy.crawled_[i]) {
        ADD_FAILURE() << "source " << i << " crawled " << int(plain.crawled_[i]) << " against "
                      << int(sleepy.crawled_[i]);
        break;
      }
    if (!score) break;
    for (uint64_t i = 0; i < c.n; ++i) {
      if (sleepy.scored_[i]) {
        ASSERT_EQ(sleepy.key_[i], plain.key_[i]) << "key of source " << i;
      } else {  // asleep: under the floor (its key is not computed: the plain engine's is)
        ASSERT_LT(ce::coarse_bin(plain.key_[i]), sleepy.d_.floor) << "sleeping source " << i;
      }
    }
    // The histogram at and above the lump floor of the plan the pass classified against is exact
    // (the next window is sized from it), so the sleeping sources' bin lies under that floor.
    for (uint32_t b = ws::lump_floor(sleepy.st_.plan); b < uint32_t(ce::kBins); ++b) {
      ASSERT_EQ(sleepy.count_[b], plain.count_[b]) << "bin " << b;
      ASSERT_EQ(sleepy.weight_[b], plain.weight_[b]) << "bin " << b;
    }
    uint64_t limit = c.unit ? uint64_t(budget_at(t)) : fb.limit;
    if (!c.unit && c.jump_at && t >= c.jump_at)
      limit = uint64_t(std::min(double(fb.limit) * c.jump, 4e18));
    const ce::Selection sel = exact_selection(plain.key_, plain.w_, limit);
    prev_key = plain.key_, prev_sel = sel;  // what the next pass must crawl
    const int b_true = boundary(c.unit ? plain.count_ : plain.weight_, limit);
    plain.select(sel, b_true, limit, t);
    sleepy.select(sel, b_true, limit, t);
    if (::testing::Test::HasFatalFailure()) return;
  }
  // Every state word the same once the sleeping ones are brought up to date.
  if (sleepy.d_.mode == wd::kDormant) sleepy.flush(c.epochs, false);
  for (uint64_t i = 0; i < c.n; ++i)
    if ((plain.word_[i] & ~wd::kClassMask) != (sleepy.word_[i] & ~wd::kClassMask)) {
      ADD_FAILURE() << c.name << ": state of source " << i << ": " << plain.word_[i] << " against "
                    << sleepy.word_[i];
      break;
    }
  out = sleepy.counters_;
  out.candidates_by_own_key = sleepy.own_key_;
}

// The ceiling: no score a grid source takes at any age lies above fl(u* / C), for rates and
// utilities across the double range, in the host's arithmetic and with the device's expm1.
TEST(GpuDormantTwin, CeilingBoundsEveryScoreOnTheGrid) {
  const double mus[] = {1e-300, 1e-12, 1e-6, 0.01, 0.2, 1.0, 5.0, 40.0, 700.0, 1e300};
  const double us[] = {5e-324, 1e-300, 1e-10, 0.5, 1.0, 3.0, 1e10, 1e300};
  const double costs[] = {1.0, 1e-3, 0.37, 1e3};
  const uint32_t ages[] = {0, 1, 2, 3, 10, 100, 1000, 100000, 1u << 20, (1u << 29) - 1};
  int checked = 0;
  for (double mu : mus)
    for (double u : us)
      for (double cost : costs) {
        const ce::SourceParams p = wd::grid_params(mu, u, cost, cost == 1.0);
        const double ceiling = wd::grid_ceiling(p);
        for (uint32_t k : ages) {
          ASSERT_LE(wd::grid_score<false>(k, p), ceiling)
              << mu << " " << u << " " << cost << " " << k;
          ASSERT_LE(wd::grid_score<true>(k, p), ceiling)
              << mu << " " << u << " " << cost << " " << k;
          const double om = -ce::expm1_fast(-mu * double(k));  // the device's expm1
          ASSERT_LE(om, 1.0) << mu << " " << k;
          ++checked;
        }
      }
  EXPECT_EQ(checked, 10 * 8 * 4 * 10);
}

// The layout: every thread's positions are its sources of the plain pass, in its order, and its
// slots lie in its block's range without overlap.
TEST(GpuDormantTwin, EveryThreadListsItsOwnSourcesInOrder) {
  for (const uint64_t n : {1ull, 1023ull, 1024ull, 5000ull, 70000ull})
    for (const uint32_t blocks : {1u, 3u, 7u}) {
      const wd::Geometry g{n, (n + ws::kTile - 1) / ws::kTile, blocks};
      std::vector<int> seen(n, 0), slot_used(g.tiles * ws::kTile, 0);
      for (uint32_t b = 0; b < blocks; ++b)
        for (uint32_t lane = 0; lane < wd::kLanes; ++lane) {
          uint64_t last = 0;
          for (uint32_t pos = 0; pos < g.positions(b); ++pos) {
            const uint64_t i = g.id(b, lane, pos);
            const uint64_t s = g.slot(b, lane, pos);
            ASSERT_LT(s, g.tiles * ws::kTile);
            ASSERT_EQ(slot_used[s]++, 0);
            if (pos) ASSERT_GT(i, last);
            last = i;
            if (i < n) seen[i] += 1;
            // The plain pass's thread, tile and item of source i.
            const uint64_t tile = i / ws::kTile;
            ASSERT_GE(tile, g.first_tile(b));
            ASSERT_LT(tile, g.first_tile(b + 1));
            ASSERT_EQ(i % wd::kLanes, lane);
          }
        }
      for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(seen[i], 1) << n << " " << blocks << " " << i;
    }
}

TEST(GpuDormantTwin, SleepingSourcesGiveThePassOverEverySourceBitForBit) {
  const Case cases[] = {
      {"whittle unit 1%", 12000, 3, 0.01, true, false, false, 300, 0},
      {"whittle unit 1% eager", 12000, 3, 0.01, true, false, true, 200, 0},
      {"whittle costs 2% eager", 9000, 5, 0.02, false, false, true, 200, 0},
      {"greedy unit 5% eager", 6000, 2, 0.05, true, true, true, 200, 0},
      {"whittle unit 0.5%, one block", 3000, 1, 0.005, true, false, true, 200, 0},
      {"equal groups (ties) eager", 6000, 3, 0.013, true, false, true, 200, 7},
      {"budget jump x40 (recount) eager", 10000, 3, 0.01, true, false, true, 180, 0, 150, 40.0},
      {"budget jump x40 costs eager", 10000, 4, 0.01, false, false, true, 180, 0, 150, 40.0},
      {"budget jump to all (wake) eager", 5000, 2, 0.02, true, false, true, 170, 0, 150, 200.0},
  };
  Counters sum;
  for (const Case& c : cases) {
    Counters k;
    run_case(c, k);
    if (::testing::Test::HasFatalFailure()) return;
    std::printf("%s: sleeps %llu, asleep %llu, wakes %llu, recounts %llu\n", c.name.c_str(),
                (unsigned long long)k.sleeps, (unsigned long long)k.sleeping_epochs,
                (unsigned long long)k.wakes, (unsigned long long)k.recounts);
    EXPECT_GT(k.sleeps, 0u) << c.name;
    EXPECT_GT(k.sleeping_epochs, 0u) << c.name;
    sum.wakes += k.wakes, sum.recounts += k.recounts, sum.tie_flushes += k.tie_flushes;
    sum.catch_ups += k.catch_ups, sum.candidates_by_own_key += k.candidates_by_own_key;
  }
  // Every path was taken somewhere.
  EXPECT_GT(sum.wakes, 0u);
  EXPECT_GT(sum.recounts, 0u);
  EXPECT_GT(sum.catch_ups, 0u);
  EXPECT_GT(sum.candidates_by_own_key, 0u);
  std::printf("wakes %llu, recounts %llu, tie flushes %llu, catch-ups %llu, own keys %llu\n",
              (unsigned long long)sum.wakes, (unsigned long long)sum.recounts,
              (unsigned long long)sum.tie_flushes, (unsigned long long)sum.catch_ups,
              (unsigned long long)sum.candidates_by_own_key);
}

}  // namespace
