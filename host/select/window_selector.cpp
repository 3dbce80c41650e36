// The windowed radix select on the host; the steps are numbered in
// include/crawleval/select/window_select.hpp.
#include "select/window_selector.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "crawleval/base/error.hpp"

namespace crawleval::detail {

using namespace window;

void WindowSelector::prepare(std::size_t n, int threads, bool unit) {
  unit_ = unit;
  for (auto& b : buf_) b.clear();
  in_passes_ = false;
  capacity_ = compaction_capacity(n);
  count_.assign(kBins, 0);
  weight_.assign(kBins, 0);
  level_count_.assign(kBins, 0);
  level_weight_.assign(kBins, 0);
  tile_w_.assign((n + kTile - 1) / kTile, 0);
  pass_.resize(std::size_t(std::max(1, threads)));
  part_.resize(pass_.size() > 1 ? pass_.size() : 0);
  for (LevelPart& pt : part_) {
    pt.count.assign(kBins, 0);
    pt.weight.assign(kBins, 0);
    pt.kept.clear();
  }
  for (Pass& ps : pass_) {
    ps.count.assign(kBins, 0);
    ps.weight.assign(kBins, 0);
    ps.list.clear();
  }
  cls_.clear();
  st_ = SelectState{};
  comm_ = nullptr;
  first_ = 0;
  total_ = n;
}

void WindowSelector::share(Comm& comm, uint64_t first, uint64_t total) {
  comm_ = &comm;
  first_ = first;
  total_ = total;
}

void WindowSelector::sum(uint64_t* v, std::size_t count) {
  const auto t0 = std::chrono::steady_clock::now();
  comm_->sum(v, count);
  traffic.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  traffic.collectives += 1;
  traffic.bytes += count * sizeof(uint64_t);
}

template <class T>
std::vector<T> WindowSelector::allgather(const std::vector<T>& mine) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<T> all = comm_->allgather(mine);
  traffic.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  traffic.collectives += 1;
  traffic.bytes += mine.size() * sizeof(T);
  return all;
}

void WindowSelector::plan_from_sample(std::vector<std::pair<uint64_t, uint64_t>> sample,
                                      uint64_t limit) {
  if (shared()) {  // process order is id order: one process's sample
    std::vector<uint64_t> flat;
    for (const auto& kw : sample) flat.push_back(kw.first), flat.push_back(kw.second);
    flat = allgather(flat);
    sample.clear();
    for (std::size_t k = 0; k + 1 < flat.size(); k += 2) sample.emplace_back(flat[k], flat[k + 1]);
  }
  st_.plan = initial_plan(std::move(sample), total_, limit);
}

void WindowSelector::begin_pass() {
  for (Pass& ps : pass_) {
    std::fill(ps.count.begin(), ps.count.end(), 0);
    std::fill(ps.weight.begin(), ps.weight.end(), 0);
    ps.list.clear();
    ps.tie_count = ps.tie_weight = 0;
    ps.lumped = ps.lumped_weight = 0;
  }
  in_passes_ = false;
  std::fill(tile_w_.begin(), tile_w_.end(), 0);
}

void WindowSelector::resolve_in_tie(uint64_t acc, uint64_t limit, std::size_t n, Sources& sources) {
  begin_tie_tile(st_, 0, acc);
  // The processes' tie weights in id order place the stop in one process.
  uint64_t mine = 0;
  for (uint64_t w : tile_w_) mine += w;
  if (shared()) {
    const std::vector<uint64_t> all = allgather(std::vector<uint64_t>{mine});
    for (int r = 0; r < comm_->rank(); ++r) acc += all[std::size_t(r)];
  }
  uint64_t found = 0;  // the stop's global id + 1 in the process that holds it
  if (is_boundary(acc, mine, limit)) {
    // The tile, by prefix sums in id order, then its tie members in id order (the GPU recomputes
    // their keys).
    std::size_t t = 0;
    while (t < tile_w_.size() && !is_boundary(acc, tile_w_[t], limit)) acc += tile_w_[t++];
    const std::size_t end = std::min<std::size_t>(n, (t + 1) * std::size_t(kTile));
    for (std::size_t i = t * std::size_t(kTile); i < end && found == 0; ++i) {
      if (!sources.tie_member(i)) continue;
      const uint64_t w = sources.weight(i);
      if (is_boundary(acc, w, limit)) found = first_ + i + 1;
      acc += w;
    }
  }
  if (shared()) sum(&found, 1);
  if (found == 0) {
    st_.phase = kFailed;  // the tiles' weight disagrees with their sources
    return;
  }
  set_stop(st_, st_.plan.tie_key, found - 1);
}

namespace {

/// Buffers at least this long are split over the threads in a level (the first level at 1e7
/// sources reads 150-250 thousand listed sources, about half of the serial selection's time);
/// shorter ones are not worth waking a thread.
constexpr std::size_t kParallelLevel = std::size_t(1) << 15;

/// Moves every pass's list into `list` (in thread order).
void gather_lists(std::vector<WindowSelector::Pass>& passes,
                  std::vector<WindowSelector::Item>& list) {
  list.clear();
  for (auto& ps : passes) {
    list.insert(list.end(), ps.list.begin(), ps.list.end());
    ps.list.clear();
  }
}

}  // namespace

std::vector<WindowSelector::Span> WindowSelector::spans(uint32_t buffer) const {
  std::vector<Span> v;
  if (buffer == kList && in_passes_) {
    for (const Pass& ps : pass_) v.push_back(Span{ps.list.data(), ps.list.size()});
  } else {
    v.push_back(Span{buf_[buffer].data(), buf_[buffer].size()});
  }
  return v;
}

void WindowSelector::take_list() {
  st_.buffer_count[kList] = 0;
  for (const Pass& ps : pass_) st_.buffer_count[kList] += ps.list.size();
  in_passes_ = true;
}

const std::vector<WindowSelector::Item>& WindowSelector::listed() {
  if (in_passes_) {
    gather_lists(pass_, buf_[kList]);
    in_passes_ = false;
  }
  return buf_[kList];
}

void WindowSelector::run_level(Rank* mn_out, Rank* mx_out) {
  const Search& s = st_.s;
  const std::vector<Span> src = spans(s.src);
  std::size_t total = 0;
  for (const Span& sp : src) total += sp.size;
  std::vector<Item>* dst = s.dst != kNone ? &buf_[s.dst] : nullptr;
  // Histogram, bounds and compaction of the items [b, e), added to count and weight and to the
  // bounds *mn_io and *mx_io. A range of whole keys whose digits are the keys' own bits (every
  // first level over a coarse bin): the test and the digit on the 64-bit key, the bounds as
  // (key, id) pairs; the same counts, weights, bounds and kept items as the general loop.
  const bool whole_keys = s.shift >= 64 && uint64_t(s.lo) == 0 && uint64_t(s.hi) == ~uint64_t(0);
  auto level_keys = [&](const Item* b, const Item* e, uint64_t* count, uint64_t* weight,
                        std::vector<Item>* kept, Rank* mn_io, Rank* mx_io) {
    const uint64_t lo_key = uint64_t(s.lo >> 64), span = uint64_t(s.hi >> 64) - lo_key;
    const uint32_t sh = s.shift - 64;
    const uint64_t base = lo_key >> sh;
    uint64_t mn_key = ~uint64_t(0), mn_id = 0, mx_key = 0, mx_id = ~uint64_t(0);
    bool any = false;
    for (const Item* it = b; it != e; ++it) {
      if (it->key - lo_key > span) continue;
      const uint64_t d = (it->key >> sh) - base;
      count[d] += 1;
      weight[d] += it->w;
      const uint64_t id = first_ + it->id;
      // the lowest rank: the lowest key, then the highest id; the highest: the reverse
      if (it->key < mn_key || (it->key == mn_key && id > mn_id)) mn_key = it->key, mn_id = id;
      if (it->key > mx_key || (it->key == mx_key && id < mx_id)) mx_key = it->key, mx_id = id;
      any = true;
      if (kept) kept->push_back(*it);
    }
    if (any) {
      *mn_io = std::min(*mn_io, rank_of(mn_key, mn_id));
      *mx_io = std::max(*mx_io, rank_of(mx_key, mx_id));
    }
  };
  auto level = [&](const Item* b, const Item* e, uint64_t* count, uint64_t* weight,
                   std::vector<Item>* kept, Rank* mn_io, Rank* mx_io) {
    if (whole_keys) return level_keys(b, e, count, weight, kept, mn_io, mx_io);
    Rank mn = *mn_io, mx = *mx_io;
    for (const Item* it = b; it != e; ++it) {
      const Rank r = rank_of(it->key, first_ + it->id);
      if (r < s.lo || r > s.hi) continue;
      const uint32_t d = digit_of(r, s.lo, s.shift);
      count[d] += 1;
      weight[d] += it->w;
      mn = std::min(mn, r), mx = std::max(mx, r);
      if (kept) kept->push_back(*it);
    }
    *mn_io = mn, *mx_io = mx;
  };
  std::fill(level_count_.begin(), level_count_.end(), 0);
  std::fill(level_weight_.begin(), level_weight_.end(), 0);
  if (dst) dst->clear();
  const std::size_t parts = part_.size();
  if (parts < 2 || total < kParallelLevel || omp_in_parallel()) {
    Rank mn = ~Rank(0), mx = 0;
    for (const Span& sp : src)
      level(sp.data, sp.data + sp.size, level_count_.data(), level_weight_.data(), dst, &mn, &mx);
    *mn_out = mn, *mx_out = mx;
    return;
  }
  // Each thread its share: its own pass's list where the items are still there, else a slice of
  // the buffer. The sums are exact and the compacted order does not matter (ranks are distinct
  // and the resolution sorts them), so the result is the serial loop's.
#pragma omp parallel num_threads(int(parts))
  {
    const std::size_t t = std::size_t(omp_get_thread_num()),
                      nt = std::size_t(omp_get_num_threads());
    LevelPart& pt = part_[t];
    std::fill(pt.count.begin(), pt.count.end(), 0);
    std::fill(pt.weight.begin(), pt.weight.end(), 0);
    pt.kept.clear();
    pt.mn = ~Rank(0), pt.mx = 0;
    if (src.size() == 1) {
      const Item* d = src[0].data;
      level(d + total * t / nt, d + total * (t + 1) / nt, pt.count.data(), pt.weight.data(),
            dst ? &pt.kept : nullptr, &pt.mn, &pt.mx);
    } else {
      for (std::size_t k = t; k < src.size(); k += nt)
        level(src[k].data, src[k].data + src[k].size, pt.count.data(), pt.weight.data(),
              dst ? &pt.kept : nullptr, &pt.mn, &pt.mx);
    }
    if (t == 0)  // a team smaller than asked leaves the other parts empty
      for (std::size_t u = nt; u < parts; ++u) {
        std::fill(part_[u].count.begin(), part_[u].count.end(), 0);
        std::fill(part_[u].weight.begin(), part_[u].weight.end(), 0);
        part_[u].kept.clear();
        part_[u].mn = ~Rank(0), part_[u].mx = 0;
      }
  }
  Rank mn = ~Rank(0), mx = 0;
  for (const LevelPart& pt : part_) {
    for (int b = 0; b < kBins; ++b)
      level_count_[b] += pt.count[b], level_weight_[b] += pt.weight[b];
    mn = std::min(mn, pt.mn), mx = std::max(mx, pt.mx);
    if (dst) dst->insert(dst->end(), pt.kept.begin(), pt.kept.end());
  }
  *mn_out = mn, *mx_out = mx;
}

Selection WindowSelector::select(const uint64_t* keys, const uint64_t* weight, std::size_t n,
                                 uint64_t limit) {
  if (tile_w_.size() != (n + kTile - 1) / kTile || pass_.empty()) {
    // (prepare() forgets the other processes: one process alone must not leave the shared steps.)
    if (comm_) throw Error("internal: a shared window select was given another population size");
    prepare(n);
  }
  unit_ = weight == nullptr;
  cls_.resize(n);
  // Step 1, and the fallback's relisting: blocks of whole tiles handed to the threads.
  constexpr std::size_t kBlock = std::size_t(16) * kTile;
  const std::size_t blocks = (n + kBlock - 1) / kBlock;
  const int threads = n > kParallelLevel ? int(pass_.size()) : 1;
  auto each = [&](auto&& visit) {
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
    for (std::size_t b = 0; b < blocks; ++b) {
      Pass& ps = pass_[std::size_t(omp_get_thread_num())];
      for (std::size_t i = b * kBlock; i < std::min(n, (b + 1) * kBlock); ++i) visit(ps, i);
    }
  };
  begin_pass();
  if (unit_)
    each([&](Pass& ps, std::size_t i) {
      cls_[i] = record<true>(ps, keys[i], coarse_bin(keys[i]), uint32_t(i), 1);
    });
  else
    each([&](Pass& ps, std::size_t i) {
      cls_[i] = record<false>(ps, keys[i], coarse_bin(keys[i]), uint32_t(i), weight[i]);
    });
  struct Keys final : Sources {
    WindowSelector* sel;
    const uint64_t *keys, *w;
    decltype(each)* relist_all;
    void fallback() override {
      (*relist_all)([&](Pass& p, std::size_t i) {
        sel->cls_[i] = sel->relist(p, keys[i], uint32_t(i), weight(i));
      });
    }
    void recount() override {
      (*relist_all)([&](Pass& p, std::size_t i) {
        WindowSelector::count_bin<false>(p, coarse_bin(keys[i]), weight(i));
      });
    }
    bool tie_member(std::size_t i) override { return sel->cls_[i] == kTie; }
    uint64_t weight(std::size_t i) override { return w ? w[i] : 1; }
  } src;
  src.sel = this, src.keys = keys, src.w = weight, src.relist_all = &each;
  return select(n, limit, src);
}

std::pair<uint64_t, uint64_t> WindowSelector::merge_histograms() {
  std::fill(count_.begin(), count_.end(), 0);
  std::fill(weight_.begin(), weight_.end(), 0);
  st_.tie_count = st_.tie_weight = 0;
  uint64_t lumped = 0, lumped_weight = 0;
  for (const Pass& ps : pass_) {
    const std::vector<uint64_t>& w = unit_ ? ps.count : ps.weight;
    for (int b = 0; b < kBins; ++b) count_[b] += ps.count[b], weight_[b] += w[b];
    st_.tie_count += ps.tie_count;
    st_.tie_weight += ps.tie_weight;
    lumped += ps.lumped;
    lumped_weight += unit_ ? ps.lumped : ps.lumped_weight;
  }
  if (shared()) {  // the global histogram, tie group and lumped sources
    std::vector<uint64_t> v(count_);
    if (!unit_) v.insert(v.end(), weight_.begin(), weight_.end());
    v.push_back(st_.tie_count);
    v.push_back(st_.tie_weight);
    v.push_back(lumped);
    v.push_back(lumped_weight);
    sum(v.data(), v.size());
    std::copy(v.begin(), v.begin() + kBins, count_.begin());
    std::copy(v.begin() + (unit_ ? 0 : kBins), v.begin() + (unit_ ? kBins : 2 * kBins),
              weight_.begin());
    st_.tie_count = v[v.size() - 4];
    st_.tie_weight = v[v.size() - 3];
    lumped = v[v.size() - 2];
    lumped_weight = v.back();
  }
  return {lumped, lumped_weight};
}

Selection WindowSelector::select(std::size_t n, uint64_t limit, Sources& sources) {
  steps_ = 0;
  // Merge the passes (their lists stay where they are: spans()).
  take_list();
  const auto lumped = merge_histograms();
  const uint32_t floor = lump_floor(st_.plan);
  if (lumped.first > 0) {
    if (floor == 0) throw Error("internal: sources lumped below a plan without a floor");
    count_[floor - 1] += lumped.first;  // somewhere in bins 0 .. floor - 1
    weight_[floor - 1] += lumped.second;
  }
  // Step 2.
  uint64_t above = 0;
  int b = find_boundary(weight_.data(), kBins, 0, limit, &above);
  if (lumped.first > 0 && b >= 0 && uint32_t(b) < floor) {
    // The boundary lies below the floor, where the lumped sources' bins are not known: count
    // every source's bin (a window miss: the fallback pass follows).
    for (Pass& ps : pass_) {
      std::fill(ps.count.begin(), ps.count.end(), 0);
      std::fill(ps.weight.begin(), ps.weight.end(), 0);
      ps.lumped = ps.lumped_weight = 0;
    }
    sources.recount();
    merge_histograms();
    b = find_boundary(weight_.data(), kBins, 0, limit, &above);
    st_.diag.recounts += 1;
  }
  // Step 2.
  const uint64_t k0 = b < 0 ? 0 : first_key_of_bin(uint32_t(b));
  const uint64_t k1 = b < 0 ? 0 : first_key_of_bin(uint32_t(b) + 1);
  begin_search(st_, b, above, b < 0 ? 0 : count_[b], k0, k1, capacity_);
  if (st_.phase == kFallback) {  // the fallback pass: recompute, reclassify, list bin b
    for (Pass& ps : pass_) ps.list.clear();
    in_passes_ = false;
    sources.fallback();
    take_list();
  }
  // Steps 3-4: at most kMaxSteps levels and resolutions, as on the GPU.
  Search& s = st_.s;
  for (int step = 0; step < kMaxSteps; ++step) {
    const uint32_t phase = effective_phase(st_);
    if (phase != kLevel && phase != kResolve) break;
    ++steps_;
    if (phase == kLevel) {
      Rank mn, mx;
      run_level(&mn, &mx);
      if (s.dst != kNone) st_.buffer_count[s.dst] = buf_[s.dst].size();
      if (shared()) {  // the level's global histogram and the members' global rank bounds
        std::vector<uint64_t> v(level_count_);
        v.insert(v.end(), level_weight_.begin(), level_weight_.end());
        sum(v.data(), v.size());
        std::copy(v.begin(), v.begin() + kBins, level_count_.begin());
        std::copy(v.begin() + kBins, v.end(), level_weight_.begin());
        const std::vector<Rank> bounds = allgather(std::vector<Rank>{mn, mx});
        for (std::size_t k = 0; k < bounds.size(); k += 2)
          mn = std::min(mn, bounds[k]), mx = std::max(mx, bounds[k + 1]);
      }
      if (s.tie_in) {
        level_weight_[tie_digit(st_.plan.tie_key, s)] += st_.tie_weight;
        mn = std::min(mn, rank_floor(st_.plan.tie_key));
        mx = std::max(mx, rank_ceil(st_.plan.tie_key));
      }
      uint64_t before = 0;
      const int j = find_boundary(level_weight_.data(), kBins, s.above, limit, &before);
      if (j < 0) {
        st_.phase = kFailed;
        break;
      }
      if (!end_level(st_, uint32_t(j), before, level_count_[j], mn, mx, capacity_))
        resolve_in_tie(before, limit, n, sources);
    } else if (phase == kResolve) {
      // Gather the listed members (every process's, with global ids), sort them by rank
      // (descending), walk with the tie group.
      std::vector<Member>& g = gathered_;
      g.clear();
      if (s.listed > 0) {
        // Every listed source of the window when no level compacted them (the first level's
        // members fill its buffer): the keys outside [lo, hi]'s keys rejected first.
        const Rank lo = s.lo, hi = s.hi;
        const uint64_t lo_key = uint64_t(lo >> 64), key_span = uint64_t(hi >> 64) - lo_key;
        for (const Span& sp : spans(s.src))
          for (const Item* it = sp.data; it != sp.data + sp.size; ++it) {
            if (it->key - lo_key > key_span) continue;
            const Rank r = rank_of(it->key, first_ + it->id);
            if (r >= lo && r <= hi) g.push_back(Member{it->key, it->w, first_ + it->id});
          }
      }
      if (shared()) g = allgather(g);
      if (g.size() != s.listed) {
        st_.phase = kFailed;
        break;
      }
      std::sort(g.begin(), g.end(), [](const Member& a, const Member& b) {
        return rank_of(a.key, a.id) > rank_of(b.key, b.id);
      });
      // The walk as the GPU's block computes it: exclusive prefix sums and one test per member.
      const uint64_t tie_key = st_.plan.tie_key, tie_w = st_.tie_weight;
      uint64_t excl = 0, above_tie = 0;
      int stop = -1, stops = 0;
      for (std::size_t k = 0; k < g.size(); ++k) {
        if (member_is_stop(g[k].key, g[k].w, excl, s, tie_key, tie_w, limit))
          stop = int(k), ++stops;
        if (g[k].key > tie_key) above_tie += g[k].w;
        excl += g[k].w;
      }
      const bool in_tie = tie_is_stop(above_tie, s, tie_w, limit);
      if (stops + int(in_tie) != 1) {  // exactly one place overflows, or the state is corrupt
        st_.phase = kFailed;
        break;
      }
      if (stop >= 0)
        set_stop(st_, g[stop].key, g[stop].id);
      else
        resolve_in_tie(s.above + above_tie, limit, n, sources);
    }
  }
  if (st_.phase != kDone) {
    const uint32_t phase = st_.phase;
    abandon(st_);
    throw Error("internal: window select did not converge (phase " + std::to_string(phase) + ")");
  }
  const Selection sel = st_.applied.sel;
  finalize(st_, count_.data(), shared() ? total_ : n);
  return sel;
}

}  // namespace crawleval::detail
