// Sleeping sources in the wide engine's deterministic pass (dormant_pass.cuh). Per thread, these
// kernels run the functions of include/crawleval/engine/wide_dormant.hpp, which
// tests/test_gpu_dormant_twin.cpp runs on the host against the pass over every source.
//
// Bytes per source and epoch while sources sleep (docs/gpu-design.md): a live source reads its
// slot's word, position, mu T and u* (24 B; with costs 32) and writes its word (4 B); a sleeping
// source moves nothing. The flushes and the sleep kernel read and write every source (about 24 and
// 40 B) when they run: at most once per kResleep epochs while the floor holds, and at the rare
// epochs that wake every source.
#include "crawleval/model/policy.hpp"
#include "dormant_pass.cuh"
#include "launch.cuh"
#include "window_select.cuh"

namespace crawleval::cuda::detail {

namespace {

/// Whether a listed source of the previous selection was crawled, from its own key (the score its
/// word s had). Out of line: a rare path (the listed sources, a few percent), whose expm1 would
/// otherwise double the hot loop's registers and instructions.
template <bool Greedy, bool Unit>
__device__ __noinline__ bool listed_crawled(uint32_t s, double mu_t, double u_star, double cost,
                                            uint64_t id, const Selection* sel) {
  const SourceParams p = wide::grid_params(mu_t, u_star, cost, Unit);
  return is_selected(score_key(wide::grid_score<Greedy>(s, p)), id, *sel);
}

/// The live pass: epoch_kernel's deterministic path over the live slots of each thread, in the
/// order of its sources, with the listed sources' own keys recomputed (the mark kernel's class
/// went to the source's word in the population's order, which waits until the next flush).
template <Policy P, bool Unit>
__global__ void __launch_bounds__(kThreads, 3)
    live_epoch_kernel(const EpochLaunch a, const DormantLaunch d) {
  constexpr bool kGreedy = P == Policy::greedy;
  if (d.state->mode != wide::kDormant) return;
  __shared__ ScoreSmem<Unit> sm;
  const SelectBuffers& sb = a.sb;
  begin_scoring<Unit>(sb, sm);
  const ws::ClassRule rule(sm.applied);
  const ws::Plan plan = sm.plan;
  const uint32_t b = blockIdx.x, lane = threadIdx.x;
  const uint64_t t0 = d.g.first_tile(b), t1 = d.g.first_tile(b + 1);
  if (a.score && plan.has_tie)  // tie weights per tile, added below
    for (uint64_t t = t0 + lane; t < t1; t += kThreads) sb.tile_w[t] = 0;
  __syncthreads();
  const uint32_t len = d.len[uint64_t(b) * kThreads + lane];
  const uint32_t rounds = (d.block_len[b] + uint32_t(kItems) - 1) / uint32_t(kItems);
  // Geometry::slot and Geometry::id with the block's base hoisted: slot(k) = first + k kThreads,
  // id(pos) = first + (pos / kItems) kTile + (pos % kItems) kThreads (first = t0 kTile + lane).
  const uint64_t first = t0 * ws::kTile + lane;
  double reward = 0.0, spent = 0.0;
  for (uint32_t r = 0; r < rounds; ++r) {
    uint64_t id[kItems], slot[kItems];
    bool valid[kItems];
    uint32_t word[kItems], pos[kItems];
    double mu[kItems], us[kItems], cs[kItems];
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      const uint32_t k = r * uint32_t(kItems) + uint32_t(j);
      valid[j] = k < len;
      slot[j] = first + uint64_t(k) * kThreads;
      word[j] = 0, pos[j] = 0, mu[j] = 1.0, us[j] = 0.0, cs[j] = 1.0;
      if (valid[j]) {
        word[j] = d.word[slot[j]];
        pos[j] = d.pos[slot[j]];
        mu[j] = d.mu_t[slot[j]];
        us[j] = d.u_star[slot[j]];
        if constexpr (!Unit) cs[j] = d.cost[slot[j]];
      }
    }
    uint64_t key[kItems], w[kItems];
    uint32_t cls[kItems], bin[kItems];
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      id[j] = first + uint64_t(pos[j] / uint32_t(kItems)) * ws::kTile +
              (pos[j] % uint32_t(kItems)) * uint32_t(kThreads);
      const SourceParams p = wide::grid_params(mu[j], us[j], cs[j], Unit);
      const uint32_t s = word[j] & ~kClassMask, c = (word[j] >> kClassShift) & 3u;
      bool crawled = false;
      if (valid[j] && a.apply)
        crawled = c == ws::kCandidate
                      ? rule.all || listed_crawled<kGreedy, Unit>(s, mu[j], us[j], cs[j], id[j],
                                                                  &sm.applied.sel)
                      : rule.crawled(c, id[j]);
      if (crawled) spent = add_rn(spent, cs[j]);
      const wide::GridStep st = wide::grid_step<kGreedy>(s, crawled, a.apply, p);
      if (crawled) reward = add_rn(reward, st.reward);
      key[j] = score_key(st.score);
      bin[j] = coarse_bin_of_score(st.score);
      cls[j] = ws::classify(key[j], bin[j], plan);
      w[j] = Unit ? 1ull : fixed_weight(cs[j], a.weights);
      const uint32_t next = a.score ? st.next | (cls[j] << kClassShift) : st.next;
      if (valid[j]) d.word[slot[j]] = next;
    }
    if (a.score) {
      // Tie members add their weights to their own tiles (the slots of a round hold several).
      emit_listed<Unit>(sm, sb, key, bin, cls, w, id, valid, [&](int j) {
        if (valid[j] && cls[j] == ws::kTie) {
          atomicAdd(&sb.tile_w[id[j] / ws::kTile], (unsigned long long)w[j]);
          atomicAdd(&sm.seg_tie_w, (unsigned long long)w[j]);
          atomicAdd(&sm.seg_tie_n, 1ull);
        }
      });
    }
  }
  if (a.score) {  // end_scoring's work, the tie weights already in place; the lump
    __syncthreads();
    hist_flush<Unit>(sm.hist, sb.coarse_count, sb.coarse_weight);
    if (threadIdx.x == 0) {
      if (plan.has_tie) {
        sb.seg_w[blockIdx.x] = sm.seg_tie_w;
        if (sm.seg_tie_n) {
          atomicAdd(ull(&sb.state->tie_count), sm.seg_tie_n);
          atomicAdd(ull(&sb.state->tie_weight), sm.seg_tie_w);
        }
      }
      if (blockIdx.x == 0) {  // the sleeping sources, in the bin under their floor
        const uint32_t under = d.state->floor - 1;
        atomicAdd(&sb.coarse_count[under], (unsigned long long)d.state->sleeping);
        if constexpr (!Unit)
          atomicAdd(&sb.coarse_weight[under], (unsigned long long)d.state->sleeping_weight);
      }
    }
  }
  if (a.measured && blockIdx.x == 0 && threadIdx.x == 0)
    d.state->asleep_epochs += d.state->sleeping;
  finish_epoch<Unit, false>(a, sm, reward, spent, t0, t1);
}

/// flush_walk's accessors on the device; with a recount, every source's bin into the block's
/// histogram.
template <Policy P, bool Unit>
struct FlushIo {
  const EpochLaunch* a;
  const DormantLaunch* d;
  BlockHist<Unit>* hist;
  bool recount;
  __device__ uint32_t live_pos(uint64_t s) const { return d->pos[s]; }
  __device__ uint32_t live_word(uint64_t s) const { return d->word[s]; }
  __device__ uint32_t word(uint64_t i) const { return a->age[i]; }
  __device__ void set_word(uint64_t i, uint32_t w) const { a->age[i] = w; }
  __device__ void visit(uint64_t i, uint32_t w, bool valid) const {
    if (!recount) return;  // uniform
    uint32_t bin = 0;
    uint64_t weight = 0;
    if (valid) {
      const double cost = Unit ? 1.0 : a->src.cost[i];
      const SourceParams p = wide::grid_params(a->src.mu_t[i], a->src.u_star[i], cost, Unit);
      bin = coarse_bin_of_score(wide::grid_score<P == Policy::greedy>(w & ~kClassMask, p));
      weight = Unit ? 1ull : fixed_weight(cost, a->weights);
    }
    hist_add<Unit>(*hist, bin, weight, valid);
  }
};

/// Wakes every source (wide::flush_due says when): their words current in the population's order,
/// the pass over every source from the next epoch on. After a scoring pass whose boundary fell
/// under the floor (wide::recount_due), also counts every source's bin and aims the search again.
template <Policy P, bool Unit>
__global__ void __launch_bounds__(kThreads)
    flush_kernel(const EpochLaunch a, const DormantLaunch d, uint32_t point) {
  __shared__ wide::DormantState ds;
  __shared__ ws::SelectState st;
  __shared__ BlockHist<Unit> hist;
  __shared__ BlockScanU64::TempStorage scan;
  __shared__ int s_bin;
  __shared__ unsigned long long s_above;
  __shared__ bool last;
  const SelectBuffers& sb = a.sb;
  if (threadIdx.x == 0) {
    ds = *d.state;
    load_state(st, sb.state);
  }
  __syncthreads();
  if (!wide::flush_due(ds, wide::Point(point), st.phase)) return;  // uniform
  const bool recount = point == wide::kAfterScore && wide::recount_due(ds, st);
  if (recount) hist_clear<Unit>(hist);
  __syncthreads();
  const uint32_t b = blockIdx.x, lane = threadIdx.x;
  FlushIo<P, Unit> io{&a, &d, &hist, recount};
  wide::flush_walk(d.g, b, lane, d.len[uint64_t(b) * kThreads + lane], a.now_epoch - ds.stamp, io);
  if (recount) {
    __syncthreads();
    hist_flush<Unit>(hist, d.recount_count, d.recount_weight);
  }
  if (!arrive_last(&d.done[0], &last)) return;
  if (recount) {
    block_boundary(Unit ? d.recount_count : d.recount_weight, -1, 0, 0, sb.limit, scan, &s_bin,
                   &s_above);
    const bool failed = s_bin < 0;  // uniform
    if (threadIdx.x == 0) {
      // The lumped histogram had a boundary, and the total weight is the same: so has this one.
      if (failed)
        st.phase = ws::kFailed;
      else
        ws::recount_search(st, uint32_t(s_bin), s_above, __ldcg(&d.recount_count[s_bin]),
                           sb.first_key[s_bin], sb.first_key[s_bin + 1], sb.capacity);
    }
    __syncthreads();
    for (int k = threadIdx.x; k < kBins; k += kThreads) {  // finalize reads the true counts
      if (!failed) sb.coarse_count[k] = __ldcg(&d.recount_count[k]);
      d.recount_count[k] = 0;
      if constexpr (!Unit) {
        if (!failed) sb.coarse_weight[k] = __ldcg(&d.recount_weight[k]);
        d.recount_weight[k] = 0;
      }
    }
    // A failure is closed as the selection closes one (counted, the histogram cleared, the next
    // plan without a window), so the host reports it after the run.
    if (failed) close_epoch(sb, st);
    __syncthreads();
    if (threadIdx.x == 0) *sb.state = st;
  }
  if (threadIdx.x == 0) {
    if (point == wide::kAtEnd)
      wide::flushed_at_end(ds, a.now_epoch);
    else
      wide::woke(ds, a.now_epoch, true);
    *d.state = ds;
    d.done[0] = 0;
  }
}

__global__ void __launch_bounds__(32)
    decide_kernel(const SelectBuffers sb, wide::DormantState* state, uint32_t now) {
  if (threadIdx.x != 0) return;
  wide::DormantState ds = *state;
  const ws::SelectState& st = *sb.state;
  if (st.phase == ws::kDone)
    wide::decide(ds, st.plan, st.applied, now);
  else
    ds.action = wide::kNone;  // a failed selection: reported after the run
  *state = ds;
}

/// sleep_walk's accessors on the device.
template <bool Unit>
struct SleepIo {
  const EpochLaunch* a;
  const DormantLaunch* d;
  __device__ uint32_t word(uint64_t i) const { return a->age[i]; }
  __device__ SourceParams params(uint64_t i) const {
    return wide::grid_params(a->src.mu_t[i], a->src.u_star[i], Unit ? 1.0 : a->src.cost[i], Unit);
  }
  __device__ uint64_t weight(uint64_t i) const {
    return Unit ? 1ull : fixed_weight(a->src.cost[i], a->weights);
  }
  __device__ void add_live(uint64_t s, uint32_t pos, uint64_t i, uint32_t w) const {
    d->word[s] = w;
    d->pos[s] = pos;
    d->mu_t[s] = a->src.mu_t[i];
    d->u_star[s] = a->src.u_star[i];
    if constexpr (!Unit) d->cost[s] = a->src.cost[i];
  }
};

/// Puts to sleep what may sleep under the decided floor (the words are current in the population's
/// order: a flush ran, or none slept) and lists the others in their threads' slots.
template <bool Unit>
__global__ void __launch_bounds__(kThreads)
    sleep_kernel(const EpochLaunch a, const DormantLaunch d) {
  __shared__ unsigned long long s_sleeping, s_weight;
  __shared__ unsigned int s_longest;
  __shared__ uint32_t s_action, s_target;
  __shared__ bool last;
  if (threadIdx.x == 0) {
    s_action = d.state->action;
    s_target = d.state->target;
    s_sleeping = s_weight = 0;
    s_longest = 0;
  }
  __syncthreads();
  if (s_action != wide::kSleep) return;  // uniform
  const uint32_t b = blockIdx.x, lane = threadIdx.x;
  SleepIo<Unit> io{&a, &d};
  uint64_t sleeping = 0, weight = 0;
  const uint32_t len = wide::sleep_walk(d.g, b, lane, s_target, io, &sleeping, &weight);
  d.len[uint64_t(b) * kThreads + lane] = len;
  atomicAdd(&s_sleeping, (unsigned long long)sleeping);
  atomicAdd(&s_weight, (unsigned long long)weight);
  atomicMax(&s_longest, len);
  __syncthreads();
  if (threadIdx.x == 0) {
    d.block_len[b] = s_longest;
    atomicAdd(&d.sums[0], s_sleeping);
    atomicAdd(&d.sums[1], s_weight);
  }
  if (!arrive_last(&d.done[1], &last)) return;
  if (threadIdx.x == 0) {
    wide::DormantState ds = *d.state;
    wide::slept(ds, __ldcg(&d.sums[0]), __ldcg(&d.sums[1]), a.now_epoch);
    *d.state = ds;
    d.sums[0] = d.sums[1] = 0;
    d.done[1] = 0;
  }
}

__global__ void __launch_bounds__(32) start_kernel(wide::DormantState* state) {
  if (threadIdx.x == 0) wide::start_replication(*state);
}

/// Calls F<P, Unit>::run(args...) for the run-time policy (whittle or greedy) and costs.
template <template <Policy, bool> class F, class... Args>
void dispatch(Policy policy, bool unit, Args&&... args) {
  if (policy == Policy::greedy)
    unit ? F<Policy::greedy, true>::run(args...) : F<Policy::greedy, false>::run(args...);
  else
    unit ? F<Policy::whittle, true>::run(args...) : F<Policy::whittle, false>::run(args...);
}

template <Policy P, bool Unit>
struct RunLive {
  static void run(const EpochLaunch& a, const DormantLaunch& d, uint32_t blocks, cudaStream_t s) {
    live_epoch_kernel<P, Unit><<<blocks, kThreads, 0, s>>>(a, d);
    CE_CUDA_CHECK_LAUNCH();
  }
};
template <Policy P, bool Unit>
struct RunFlush {
  static void run(const EpochLaunch& a, const DormantLaunch& d, wide::Point point, uint32_t blocks,
                  cudaStream_t s) {
    flush_kernel<P, Unit><<<blocks, kThreads, 0, s>>>(a, d, uint32_t(point));
    CE_CUDA_CHECK_LAUNCH();
  }
};
template <Policy P, bool Unit>
struct RunSleep {
  static void run(const EpochLaunch& a, const DormantLaunch& d, uint32_t blocks, cudaStream_t s) {
    sleep_kernel<Unit><<<blocks, kThreads, 0, s>>>(a, d);
    CE_CUDA_CHECK_LAUNCH();
  }
};

}  // namespace

std::size_t DormantPass::device_bytes(std::size_t n, bool unit, uint32_t blocks) {
  const std::size_t slots = tile_slots(n);
  const std::size_t per_slot = 2 * sizeof(uint32_t) + (unit ? 2 : 3) * sizeof(double);
  return slots * per_slot + std::size_t(blocks) * (kThreads + 1) * sizeof(uint32_t) +
         2 * kBins * sizeof(unsigned long long) + sizeof(wide::DormantState) + 64;
}

DormantPass::DormantPass(std::size_t n, bool unit, uint32_t blocks, bool eager,
                         cudaStream_t stream) {
  const uint64_t tiles = (n + ws::kTile - 1) / ws::kTile;
  const std::size_t slots = std::max<std::size_t>(tile_slots(n), 1);
  state_.resize(1);
  len_.resize(std::size_t(blocks) * kThreads);
  block_len_.resize(blocks);
  word_.resize(slots);
  pos_.resize(slots);
  mu_t_.resize(slots);
  u_star_.resize(slots);
  if (!unit) cost_.resize(slots);
  recount_.resize(2 * std::size_t(kBins));
  sums_.resize(2);
  done_.resize(2);
  recount_.zero(stream);
  sums_.zero(stream);
  done_.zero(stream);
  wide::DormantState init;
  init.eager = eager ? 1u : 0u;
  wide::start_replication(init);
  state_.upload(&init, 1, stream);
  v_.state = state_.data();
  v_.g = wide::Geometry{n, tiles, blocks};
  v_.len = len_.data();
  v_.block_len = block_len_.data();
  v_.word = word_.data();
  v_.pos = pos_.data();
  v_.mu_t = mu_t_.data();
  v_.u_star = u_star_.data();
  v_.cost = unit ? nullptr : cost_.data();
  v_.recount_count = recount_.data();
  v_.recount_weight = recount_.data() + kBins;
  v_.sums = sums_.data();
  v_.done = done_.data();
}

void DormantPass::start_replication(cudaStream_t stream) {
  start_kernel<<<1, 32, 0, stream>>>(state_.data());
  CE_CUDA_CHECK_LAUNCH();
}

wide::DormantState DormantPass::download(cudaStream_t stream) {
  wide::DormantState s;
  state_.download(&s, 1, stream);
  CE_CUDA_TRY(cudaStreamSynchronize(stream));
  return s;
}

void launch_live_epoch(Policy policy, bool unit, const EpochLaunch& a, const DormantLaunch& d,
                       uint32_t blocks, cudaStream_t stream) {
  dispatch<RunLive>(policy, unit, a, d, blocks, stream);
}

void launch_flush(Policy policy, bool unit, const EpochLaunch& a, const DormantLaunch& d,
                  wide::Point point, uint32_t blocks, cudaStream_t stream) {
  dispatch<RunFlush>(policy, unit, a, d, point, blocks, stream);
}

void launch_decide(const EpochLaunch& a, const DormantLaunch& d, cudaStream_t stream) {
  decide_kernel<<<1, 32, 0, stream>>>(a.sb, d.state, a.now_epoch);
  CE_CUDA_CHECK_LAUNCH();
}

void launch_sleep(Policy policy, bool unit, const EpochLaunch& a, const DormantLaunch& d,
                  uint32_t blocks, cudaStream_t stream) {
  dispatch<RunSleep>(policy, unit, a, d, blocks, stream);
}

}  // namespace crawleval::cuda::detail
