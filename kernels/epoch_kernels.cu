// The epoch kernel of the wide regime. One launch per epoch t does, for every source (blocks own
// contiguous runs of tiles of kTile ids; each thread kItems sources per tile, loads first):
//  1. Apply epoch t-1's selection from the source's class (window_select.hpp): kAbove crawled,
//     kBelow not, kTie by the tie key and the stop. The mark kernel has turned every listed
//     candidate of epoch t-1 into kAbove / kBelow (its key is in the list), so no source
//     recomputes a previous key. A crawled source pays its state as reward (and its cost).
//  2. Move every source to X(t).
//     Deterministic (the state word: AgeState, the class in bits 29-30): one expm1 gives
//     1 - alpha^k for the age k this source needs, the previous age when it was crawled (its
//     reward) and the new age when not (its score); a crawled source's new 1 - alpha is the
//     1 - alpha every source computes. Two expm1 per source, no divergence.
//     Stochastic (eq. 19): with the arrivals the arrivals kernel drew before this launch (below:
//     a word of flags per 32 sources, the flagged sources' sums packed); the warp's sources whose
//     new state is not 0 are compacted in shared memory and run the index 32 at a time (full
//     warps): the same functions on the same values, so the same bits as one source per lane.
//  3. Score X(t): key, coarse bin, class from the plan; the block's histogram, the listed
//     candidates (slots reserved per warp) and the tie weights (emit_tile); the new state and
//     class are written.
//  4. Per-block (reward, cost) partials; the last block reduces them in block order (reproducible
//     for a given grid) and finds the coarse boundary (coarse_finish).
// The first launch of a replication only scores (t = 0); the last only applies (t = H + B).
//
// Bytes per source and epoch (docs/gpu-design.md): deterministic, unit costs: mu_t and u_star
// read (16), the state word read and written (8): 24 B; with costs, the cost read (32 B).
// Stochastic: lambda_t read by the arrivals kernel (8), mu_t and u_star read (16), the state read
// and written (16), the class read and written (2): 42 B; with costs 50 B; a source with arrivals
// adds its sum written and read and its mu_t and xi read for the draws (32 B). Listed candidates
// add about 12 B each, and their marks about 8 B each (a scattered read-modify-write).
#include "crawleval/engine/wide_arrivals.hpp"
#include "crawleval/model/policy.hpp"
#include "epoch_kernels.cuh"
#include "launch.cuh"
#include "window_select.cuh"

namespace crawleval::cuda::detail {

namespace {

template <bool Det, bool Unit>
__device__ __forceinline__ SourceParams make_params(double mu_t, double u_star, double lambda_t,
                                                    double xi, double cost) {
  SourceParams p = wide::grid_params(mu_t, u_star, cost, Unit);
  p.alpha = Det ? 0.0 : fp_exp(-mu_t);  // not stored: 16 bytes per source and epoch saved
  p.lambda_t = lambda_t;
  p.xi = xi;
  return p;
}

/// The deterministic Whittle score of a source off the grid (start "full" or "given", not yet
/// crawled): the general index with its divisions and logarithm. Out of line: inlined at every
/// call site, its division's slow-path calls made the register allocator spill in the hot loop.
__device__ __noinline__ double off_grid_whittle(uint32_t w, uint32_t epoch, double x0,
                                                SourceParams p) {
  double om;
  const double x = AgeState::value(w, epoch, x0, p, &om);
  return AgeState::index(w, x, om, p);
}

/// The score of a source at `epoch`: deterministic from its state word (class bits cleared),
/// stochastic from its state x. The same code serves the scoring pass, the recomputation of a
/// candidate's previous key, the fallback pass and the tie tile, so their keys agree bit for bit.
template <Policy P, bool Det>
__device__ __forceinline__ double score_of(uint32_t w, double x, uint32_t epoch, double x0,
                                           const SourceParams& p, uint64_t i, uint64_t pointer,
                                           const EpochLaunch& a) {
  if constexpr (P == Policy::round_robin) {
    return round_robin_score(i, pointer, a.src.n);
  } else if constexpr (P == Policy::random) {
    return random_score(a.seed, a.replication, a.first_id + i, epoch);
  } else {
    if constexpr (Det && P == Policy::whittle)
      if (w & AgeState::kOffGrid) return off_grid_whittle(w, epoch, x0, p);
    double om = 0.0, seen = x;
    if constexpr (Det) seen = AgeState::value(w, epoch, x0, p, &om);
    if constexpr (P == Policy::greedy)
      return mul_rn(seen, p.inv_cost);
    else if constexpr (Det)
      return AgeState::index(w, seen, om, p);
    else
      return whittle_index(seen, p);
  }
}

/// The initial state of a source off the grid (start "full" or "given").
__device__ __forceinline__ double start_of(const EpochLaunch& a, uint32_t w, uint64_t i,
                                           const SourceParams& p) {
  return (w & AgeState::kOffGrid) && a.src.x0 ? a.src.x0[i] : p.u_star;
}

/// The engine as a KeySource of the selection's generic kernels: keys recomputed from the state
/// of the epoch being scored.
template <Policy P, bool Det, bool Unit>
struct StateKeys {
  EpochLaunch a;
  __device__ __forceinline__ SourceParams params(uint64_t i) const {  // no policy reads lambda, xi
    return make_params<Det, Unit>(a.src.mu_t[i], a.src.u_star[i], 0.0, 0.0,
                                  Unit ? 1.0 : a.src.cost[i]);
  }
  __device__ uint64_t key(uint64_t i) const {
    const SourceParams p = params(i);
    const uint64_t pointer = a.sb.state->pointer;
    if constexpr (Det) {
      const uint32_t w = a.age[i] & ~kClassMask;
      return score_key(
          score_of<P, true>(w, 0.0, a.now_epoch, start_of(a, w, i, p), p, i, pointer, a));
    } else {
      return score_key(score_of<P, false>(0, a.x[i], a.now_epoch, 0.0, p, i, pointer, a));
    }
  }
  __device__ __forceinline__ uint64_t weight(uint64_t i) const {
    return Unit ? 1ull : fixed_weight(a.src.cost[i], a.weights);
  }
  __device__ __forceinline__ void set_class(uint64_t i, uint32_t c) const {
    if constexpr (Det)
      a.age[i] = (a.age[i] & ~kClassMask) | (c << kClassShift);
    else
      a.cls[i] = uint8_t(c);
  }
};

/// One deterministic source's step (apply, move, score) off the grid (start "full" or "given",
/// not yet crawled): the general formulas with their exp and logarithm, as score_of. Out of line:
/// a rare path that would otherwise double the hot loop. The score is that of the Whittle or
/// greedy policy (the others' scores do not depend on the state).
struct OffGridStep {
  uint32_t word;
  double reward, score;
};
template <Policy P>
__device__ __noinline__ OffGridStep off_grid_step(uint32_t s, bool crawled, bool apply,
                                                  uint32_t prev_epoch, uint32_t now_epoch,
                                                  const double* x0s, uint64_t i, double mu_t,
                                                  double u_star, double inv_cost) {
  SourceParams p = make_params<true, true>(mu_t, u_star, 0.0, 0.0, 1.0);
  p.inv_cost = inv_cost;
  const double x0 = x0s ? x0s[i] : u_star;  // start_of: "given", else "full"
  OffGridStep r{s, 0.0, 0.0};
  double om;
  if (crawled) r.reward = AgeState::value(s, prev_epoch, x0, p, &om);
  if (apply) r.word = AgeState::next(s, crawled);
  const double x = AgeState::value(r.word, now_epoch, x0, p, &om);
  r.score = P == Policy::greedy ? mul_rn(x, p.inv_cost) : AgeState::index(r.word, x, om, p);
  return r;
}

/// Every warp's exchange area for compacted work (the arrivals kernel's draws, the stochastic
/// pass's index): the queued items (item j of lane l as j * 32 + l) and one double per item
/// (inputs in, results out).
struct WarpQueue {
  uint8_t item[kItems * 32];
  double value[kItems * 32];
};
/// Runs f(j, lane) for every item j of every lane of the warp whose flag is set, 32 at a time
/// (the flagged items compacted in shared memory, each run by the next free lane): f gets the
/// owner's item and lane, reads q.value[j * 32 + lane] and returns the new value. Afterwards each
/// owner finds its results in q.value. Every lane of the warp calls it.
template <class F>
__device__ __forceinline__ void warp_compacted(WarpQueue& q, const bool (&flag)[kItems], F f) {
  const unsigned lane = threadIdx.x & 31u, below = (1u << lane) - 1u;
  unsigned count = 0;
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const unsigned m = __ballot_sync(0xFFFFFFFFu, flag[j]);
    if (flag[j]) q.item[count + __popc(m & below)] = uint8_t(j * 32 + int(lane));
    count += __popc(m);
  }
  __syncwarp();
#pragma unroll 1
  for (unsigned r = 0; r < count; r += 32) {  // uniform
    if (r + lane < count) {
      const unsigned e = q.item[r + lane];
      q.value[e] = f(int(e >> 5), e & 31u, q.value[e]);
    }
  }
  __syncwarp();
}

/// The compacted work for item j of lane `owner` of the warp whose first source of the tile is
/// `base`: the epoch's arrivals (the arrivals kernel), and the Whittle index of a state v (the
/// stochastic pass). The lane that runs it reloads the source's columns (lambda T in L1: the
/// warp has just read it; mu T and xi, which only these sources need, from memory).
struct ArrivalWork {
  const double *mu_t, *lambda_t, *xi;
  uint64_t base, seed;
  uint32_t replication, epoch;
  UtilityDist utility;
  uint64_t first_id;
  __device__ __forceinline__ double operator()(int j, unsigned owner, double) const {
    return arrivals_of(mu_t, lambda_t, xi, base + uint64_t(j) * kThreads + owner, utility, seed,
                       replication, epoch, first_id);
  }
  /// Out of line: its logarithms' and division's rare paths are calls, and values of the
  /// caller's tile loop that stay live across them would spill.
  __device__ static __noinline__ double arrivals_of(const double* mu_t, const double* lambda_t,
                                                    const double* xi, uint64_t i,
                                                    UtilityDist utility, uint64_t seed,
                                                    uint32_t replication, uint32_t epoch,
                                                    uint64_t first_id) {
    SourceParams p{};
    p.mu_t = mu_t[i];
    p.lambda_t = lambda_t[i];
    p.xi = xi[i];
    return sample_arrivals<false>(p, utility, seed, replication, first_id + i, epoch);
  }
};
template <bool Unit>
struct IndexWork {
  const EpochLaunch* a;
  uint64_t base;
  __device__ __forceinline__ double operator()(int j, unsigned owner, double v) const {
    const uint64_t i = base + uint64_t(j) * kThreads + owner;
    const SourceParams p = make_params<false, Unit>(a->src.mu_t[i], a->src.u_star[i], 0.0, 0.0,
                                                    Unit ? 1.0 : a->src.cost[i]);
    return whittle_index(v, p);
  }
};

/// Blocks per SM the register allocation must allow. Measured on an H100 (2026-11-24, N = 1e8,
/// bench/results/2026-11-24-nvidia-h100-80gb-hbm3.md): the deterministic Whittle pass at 2 blocks
/// (128 registers, 25% of the warps) took 1.97 ms per epoch, at 3 blocks (80) 1.65 ms, at 4 (64)
/// 1.57 ms. Each kernel takes the most that keeps its spills within the resource check
/// (scripts/check_kernel_resources.py: 32 bytes, 64 for the rare path's out-of-line off-grid
/// step): 3 for the deterministic Whittle and greedy passes (at 4 greedy's pass spills 64 bytes and
/// Whittle's off-grid step 56; at 3 that step spills 40), 4 for the other deterministic ones. The
/// stochastic passes, whose arrivals are drawn by the arrivals kernel, take 3 (80 registers; 0-24
/// bytes of spills) but Whittle's with costs, 2 (at 3 it spills 48). With the draws inside the
/// pass they took 113-122 registers at 2 blocks and spilled 100-400 bytes at 3 or 4 (though 4
/// measured 7.0 ms against 8.7 on the H100).
template <Policy P, bool Det, bool Unit>
inline constexpr int kEpochMinBlocks =
    !Det ? (P == Policy::whittle && !Unit ? 2 : 3)
         : (Unit && P != Policy::whittle && P != Policy::greedy ? 4 : 3);

template <Policy P, bool Det, bool Unit>
__global__ void __launch_bounds__(kThreads, kEpochMinBlocks<P, Det, Unit>)
    epoch_kernel(const EpochLaunch a) {
  // Sleeping sources: the live pass (dormant_pass.cu) runs this epoch instead.
  if (a.dormant && a.dormant->mode == wide::kDormant) return;
  __shared__ ScoreSmem<Unit> sm;
  __shared__ WarpQueue queues[Det ? 1 : kWarps];  // the stochastic pass's
  const SelectBuffers& sb = a.sb;
  begin_scoring<Unit>(sb, sm);
  const ws::ClassRule rule(sm.applied);
  const ws::Plan plan = sm.plan;
  const uint64_t pointer = sm.pointer;
  const std::size_t n = a.src.n;
  const unsigned lane = threadIdx.x & 31u;
  double reward = 0.0, spent = 0.0;
  const uint64_t t0 = first_tile(blockIdx.x, gridDim.x, sb.tiles);
  const uint64_t t1 = first_tile(blockIdx.x + 1, gridDim.x, sb.tiles);
  for (uint64_t tile = t0; tile < t1; ++tile) {
    const int slot = int((tile - t0) % kTieRing);
    uint64_t id[kItems];
    bool valid[kItems];
    uint32_t word[kItems];
    uint8_t c8[kItems];
    double xs[kItems], mu[kItems], us[kItems], cs[kItems];
    // Loads first: every column of every item in flight before the arithmetic.
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      id[j] = tile * ws::kTile + uint64_t(j) * kThreads + threadIdx.x;
      valid[j] = id[j] < n;
      // Past the end (the last tile only) a source reads the last one's columns: every item
      // runs the same code, and only stores and the selection look at valid[j].
      const uint64_t at = valid[j] ? id[j] : n - 1;
      xs[j] = 0.0, c8[j] = 0, word[j] = 0, cs[j] = 1.0;
      mu[j] = a.src.mu_t[at];
      us[j] = a.src.u_star[at];
      if constexpr (Det) {
        word[j] = a.age[at];
      } else {  // lambda T and xi: the arrivals kernel's (the index reads neither)
        xs[j] = a.x[at];
        c8[j] = a.cls[at];
      }
      if constexpr (!Unit) cs[j] = a.src.cost[at];
    }
    uint64_t key[kItems], w[kItems];
    uint32_t cls[kItems], bin[kItems];
    if constexpr (Det) {
#pragma unroll
      for (int j = 0; j < kItems; ++j) {
        const uint64_t i = id[j];
        const SourceParams p = make_params<Det, Unit>(mu[j], us[j], 0.0, 0.0, cs[j]);
        const uint32_t s = word[j] & ~kClassMask;
        // 1. (the mark kernel left no candidate: crawled_by_class never needs an own key)
        const bool crawled = valid[j] && a.apply && rule.crawled((word[j] >> kClassShift) & 3u, i);
        if (crawled) spent = add_rn(spent, cs[j]);
        uint32_t next = s;
        double score = 0.0;
        if (s & AgeState::kOffGrid) {
          const OffGridStep r =
              off_grid_step<P>(s, crawled, a.apply, a.prev_epoch, a.now_epoch, a.src.x0,
                               valid[j] ? i : 0, mu[j], us[j], p.inv_cost);
          next = r.word, score = r.score;
          if (crawled) reward = add_rn(reward, r.reward);
        } else {
          // 2. One expm1 (wide_dormant.hpp): the live pass of sleeping sources, the fallback
          // pass and the tie tile recompute these keys bit for bit.
          const wide::GridStep st = wide::grid_step<P == Policy::greedy>(s, crawled, a.apply, p);
          next = st.next, score = st.score;
          if (crawled) reward = add_rn(reward, st.reward);
        }
        if constexpr (P != Policy::whittle && P != Policy::greedy)
          score = score_of<P, true>(next, 0.0, a.now_epoch, 0.0, p, i, pointer, a);
        // 3. (coarse_bin_of_score(s) is coarse_bin(score_key(s)) for every s, NaN and -0 too)
        key[j] = score_key(score);
        bin[j] = coarse_bin_of_score(score);
        cls[j] = ws::classify(key[j], bin[j], plan);
        w[j] = Unit ? 1ull : fixed_weight(cs[j], a.weights);
        if (a.score) next |= cls[j] << kClassShift;
        if (valid[j]) {
          a.age[i] = next;
          if (a.keys && a.score) a.keys[i] = key[j];
        }
      }
    } else {
      WarpQueue& q = queues[threadIdx.x >> 5];
      bool crawled[kItems], busy[kItems];
      double x[kItems];
      // 1. and 2. The arrivals come from the arrivals kernel, which ran before this pass
      // (wide_arrivals.hpp: a word of flags per 32 sources, their sums packed).
#pragma unroll
      for (int j = 0; j < kItems; ++j) {
        crawled[j] = valid[j] && a.apply && rule.crawled(c8[j], id[j]);
        if (crawled[j]) reward = add_rn(reward, xs[j]), spent = add_rn(spent, cs[j]);
        busy[j] = false;
        x[j] = xs[j];
        if (valid[j] && a.apply) {
          const uint32_t flags = a.arrival_flags[id[j] >> 5];
          const double arrivals =
              (flags >> lane) & 1u ? a.arrival_sums[wide::arrival_slot(id[j], flags)] : 0.0;
          const SourceParams p = make_params<Det, Unit>(mu[j], us[j], 0.0, 0.0, cs[j]);
          x[j] = crawled[j] ? arrivals : passive_next(xs[j], arrivals, p);
          a.x[id[j]] = x[j];
        }
      }
      const uint64_t warp_base = tile * ws::kTile + (threadIdx.x & ~31u);
      // 3. The Whittle index of the sources whose state is not 0, compacted the same way (a
      // state of 0 has index 0); the other policies' scores are cheap and uniform.
      if constexpr (P == Policy::whittle) {
#pragma unroll
        for (int j = 0; j < kItems; ++j) {
          busy[j] = valid[j] && a.score && x[j] != 0.0;
          if (busy[j]) q.value[j * 32 + int(lane)] = x[j];
        }
        warp_compacted(q, busy, IndexWork<Unit>{&a, warp_base});
      }
#pragma unroll
      for (int j = 0; j < kItems; ++j) {
        key[j] = 0, w[j] = 0, cls[j] = ws::kBelow, bin[j] = 0;
        if (!valid[j] || !a.score) continue;
        double score;
        if constexpr (P == Policy::whittle) {
          score = busy[j] ? q.value[j * 32 + int(lane)] : 0.0;
        } else {
          const SourceParams p = make_params<Det, Unit>(mu[j], us[j], 0.0, 0.0, cs[j]);
          score = score_of<P, false>(0, x[j], a.now_epoch, 0.0, p, id[j], pointer, a);
        }
        key[j] = score_key(score);
        bin[j] = coarse_bin_of_score(score);
        cls[j] = ws::classify(key[j], bin[j], plan);
        // The cost again (an L1 hit) rather than kept live across the arrivals' calls.
        w[j] = Unit ? 1ull : fixed_weight(a.src.cost[id[j]], a.weights);
        a.cls[id[j]] = uint8_t(cls[j]);
        if (a.keys) a.keys[id[j]] = key[j];
      }
      __syncwarp();  // the queue is reused by the next tile
    }
    if (a.score) {
      emit_tile<Unit>(sm, sb, slot, key, bin, cls, w, id, valid);
      tie_ring_step<Unit>(sm, sb, tile, slot);
    }
  }
  // 4.
  finish_epoch<Unit>(a, sm, reward, spent, t0, t1);
}

/// The stochastic pass's arrivals of epoch a.prev_epoch, before the scoring pass that applies
/// them (wide_arrivals.hpp): per warp and tile item, the first word of each source's arrival
/// stream decides most sources without a logarithm; the sources with arrivals run
/// sample_arrivals 32 at a time in full warps (compacted over the warp's kItems items), and their
/// sums are packed at the start of their word's 32 slots. Few registers, so many warps hide the
/// draws' latency; the same draws as one source per lane.
__global__ void __launch_bounds__(kThreads) arrivals_kernel(const EpochLaunch a) {
  __shared__ WarpQueue queues[kWarps];
  WarpQueue& q = queues[threadIdx.x >> 5];
  const unsigned lane = threadIdx.x & 31u;
  const std::size_t n = a.src.n;
  const uint64_t tiles = (n + ws::kTile - 1) / ws::kTile;
  for (uint64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const uint64_t warp_base = tile * ws::kTile + (threadIdx.x & ~31u);
    bool arrive[kItems];
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      const uint64_t i = warp_base + uint64_t(j) * kThreads + lane;
      arrive[j] = i < n && wide::has_arrivals(a.src.lambda_t[i], a.seed, a.replication,
                                              a.first_id + i, a.prev_epoch);
    }
    warp_compacted(q, arrive,
                   ArrivalWork{a.src.mu_t, a.src.lambda_t, a.src.xi, warp_base, a.seed,
                               a.replication, a.prev_epoch, a.utility, a.first_id});
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      const unsigned flags = __ballot_sync(0xFFFFFFFFu, arrive[j]);
      const uint64_t first = warp_base + uint64_t(j) * kThreads;  // a multiple of 32
      if (lane == 0 && first < n) a.arrival_flags[first >> 5] = flags;
      if (arrive[j])
        a.arrival_sums[wide::arrival_slot(first + lane, flags)] = q.value[j * 32 + int(lane)];
    }
    __syncwarp();  // the queue is reused by the next tile
  }
}

template <Policy P, bool Det, bool Unit>
struct Kernels {
  static void epoch(const EpochLaunch& a, uint32_t blocks, cudaStream_t s) {
    epoch_kernel<P, Det, Unit><<<blocks, kThreads, 0, s>>>(a);
    CE_CUDA_CHECK_LAUNCH();
  }
  static void fallback(const EpochLaunch& a, uint32_t blocks, cudaStream_t s) {
    fallback_kernel<StateKeys<P, Det, Unit>, Unit>
        <<<blocks, kThreads, 0, s>>>(a.sb, StateKeys<P, Det, Unit>{a});
    CE_CUDA_CHECK_LAUNCH();
  }
  static void tie_tile(const EpochLaunch& a, cudaStream_t s) {
    tie_tile_kernel<StateKeys<P, Det, Unit>>
        <<<1, kThreads, 0, s>>>(a.sb, StateKeys<P, Det, Unit>{a});
    CE_CUDA_CHECK_LAUNCH();
  }
  static uint32_t blocks(uint64_t tiles) {
    return resident_blocks((const void*)epoch_kernel<P, Det, Unit>, tiles);
  }
};

/// Calls F<Kernels<P, Det, Unit>>::run(args...) for the run-time (policy, model, unit).
template <template <class> class F, class... Args>
auto dispatch(Policy policy, Model model, bool unit, Args&&... args) {
  const bool det = model == Model::deterministic;
#define CE_DISPATCH_POLICY(P)                               \
  if (det)                                                  \
    return unit ? F<Kernels<P, true, true>>::run(args...)   \
                : F<Kernels<P, true, false>>::run(args...); \
  return unit ? F<Kernels<P, false, true>>::run(args...)    \
              : F<Kernels<P, false, false>>::run(args...);
  switch (policy) {
    case Policy::greedy:
      CE_DISPATCH_POLICY(Policy::greedy)
    case Policy::round_robin:
      CE_DISPATCH_POLICY(Policy::round_robin)
    case Policy::random:
      CE_DISPATCH_POLICY(Policy::random)
    default:  // whittle (static_rate never reaches the wide regime)
      CE_DISPATCH_POLICY(Policy::whittle)
  }
#undef CE_DISPATCH_POLICY
}

template <class K>
struct RunEpoch {
  static int run(const EpochLaunch& a, uint32_t b, cudaStream_t s) { return K::epoch(a, b, s), 0; }
};
template <class K>
struct RunFallback {
  static int run(const EpochLaunch& a, uint32_t b, cudaStream_t s) {
    return K::fallback(a, b, s), 0;
  }
};
template <class K>
struct RunTieTile {
  static int run(const EpochLaunch& a, cudaStream_t s) { return K::tie_tile(a, s), 0; }
};
template <class K>
struct Blocks {
  static uint32_t run(uint64_t tiles) { return K::blocks(tiles); }
};

}  // namespace

uint32_t arrivals_blocks(uint64_t tiles) {
  return resident_blocks((const void*)arrivals_kernel, tiles);
}

void launch_arrivals(const EpochLaunch& a, uint32_t blocks, cudaStream_t stream) {
  if (a.src.n == 0) return;
  arrivals_kernel<<<blocks, kThreads, 0, stream>>>(a);
  CE_CUDA_CHECK_LAUNCH();
}

uint32_t epoch_blocks(Policy policy, Model model, bool unit, uint64_t tiles) {
  return dispatch<Blocks>(policy, model, unit, tiles);
}

void launch_epoch(Policy policy, Model model, bool unit, const EpochLaunch& a, uint32_t blocks,
                  cudaStream_t stream) {
  if (a.src.n == 0) return;
  dispatch<RunEpoch>(policy, model, unit, a, blocks, stream);
}

void launch_fallback(Policy policy, Model model, bool unit, const EpochLaunch& a, uint32_t blocks,
                     cudaStream_t stream) {
  if (a.src.n == 0) return;
  dispatch<RunFallback>(policy, model, unit, a, blocks, stream);
}

void launch_tie_tile(Policy policy, Model model, bool unit, const EpochLaunch& a,
                     cudaStream_t stream) {
  if (a.src.n == 0) return;
  dispatch<RunTieTile>(policy, model, unit, a, stream);
}

}  // namespace crawleval::cuda::detail
