// The epoch kernel of the wide regime. One launch per epoch t does, for every source (blocks own
// contiguous runs of tiles of kTile ids; each thread kItems sources per tile, loads first):
//  1. Apply epoch t-1's selection from the source's class (window_select.hpp): kAbove crawled,
//     kBelow not, kTie by the tie key and the stop, kCandidate by its own key of epoch t-1
//     (deterministic model: recomputed from the state word, a few flops; stochastic model: the
//     mark kernel has already turned candidates into kAbove / kBelow). A crawled source pays its
//     state as reward (and its cost).
//  2. Move every source to X(t): the deterministic state word (AgeState, the class in bits 29-30)
//     or the stochastic state (eq. 19, counter-based arrivals in registers).
//  3. Score X(t): key, coarse bin, class from the plan; the block's histogram, the listed
//     candidates and the tie weights (emit_tile); the new state and class are written.
//  4. Per-block (reward, cost) partials; the last block reduces them in block order (reproducible
//     for a given grid) and finds the coarse boundary (coarse_finish).
// The first launch of a replication only scores (t = 0); the last only applies (t = H + B).
//
// Bytes per source and epoch (docs/gpu-design.md): deterministic, unit costs: mu_t and u_star
// read (16), the state word read and written (8): 24 B; with costs, the cost read (32 B).
// Stochastic: mu_t, u_star, lambda_t, xi read (32), the state read and written (16), the class
// read and written (2): 50 B; with costs 58 B. Listed candidates add about 12 B each.
#include "crawleval/policy.hpp"
#include "epoch_kernels.cuh"
#include "launch.cuh"
#include "window_select.cuh"

namespace crawleval::cuda::detail {

namespace {

template <bool Det, bool Unit>
__device__ __forceinline__ SourceParams make_params(double mu_t, double u_star, double lambda_t,
                                                    double xi, double cost) {
  SourceParams p{};
  p.mu_t = mu_t;
  p.u_star = u_star;
  p.x_cap = u_star;  // the wide regime runs the base model: no expiry
  p.om_alpha = -expm1(-mu_t);
  p.alpha = Det ? 0.0 : exp(-mu_t);  // not stored: 16 bytes per source and epoch saved
  p.lambda_t = lambda_t;
  p.xi = xi;
  p.inv_cost = Unit ? 1.0 : 1.0 / cost;  // correctly rounded: the host's bits
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
    return random_score(a.seed, a.replication, uint32_t(i), epoch);
  } else {
    if constexpr (Det && P == Policy::whittle)
      if (w & AgeState::kOffGrid) return off_grid_whittle(w, epoch, x0, p);
    double om = 0.0, seen = x;
    if constexpr (Det) seen = AgeState::value(w, epoch, x0, p, &om);
    if constexpr (P == Policy::greedy)
      return seen * p.inv_cost;
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
  __device__ __forceinline__ SourceParams params(uint64_t i) const {
    return make_params<Det, Unit>(a.src.mu_t[i], a.src.u_star[i], Det ? 0.0 : a.src.lambda_t[i],
                                  Det ? 0.0 : a.src.xi[i], Unit ? 1.0 : a.src.cost[i]);
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

template <Policy P, bool Det, bool Unit>
__global__ void __launch_bounds__(kThreads) epoch_kernel(const EpochLaunch a) {
  __shared__ ScoreSmem<Unit> sm;
  const SelectBuffers& sb = a.sb;
  begin_scoring<Unit>(sb, sm);
  const ws::Applied applied = sm.applied;
  const ws::Plan plan = sm.plan;
  const uint64_t pointer = sm.pointer, pointer_prev = sm.pointer_prev;
  const std::size_t n = a.src.n;
  double reward = 0.0, spent = 0.0;
  unsigned long long tie_w = 0, tie_n = 0;
  const uint64_t t0 = first_tile(blockIdx.x, gridDim.x, sb.tiles);
  const uint64_t t1 = first_tile(blockIdx.x + 1, gridDim.x, sb.tiles);
  for (uint64_t tile = t0; tile < t1; ++tile) {
    uint64_t id[kItems];
    bool valid[kItems];
    uint32_t word[kItems];
    uint8_t c8[kItems];
    double xs[kItems], mu[kItems], us[kItems], lt[kItems], xv[kItems], cs[kItems];
    // Loads first: every column of every item in flight before the arithmetic.
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      id[j] = tile * ws::kTile + uint64_t(j) * kThreads + threadIdx.x;
      valid[j] = id[j] < n;
      word[j] = 0, c8[j] = 0, xs[j] = 0.0, lt[j] = 0.0, xv[j] = 0.0, cs[j] = 1.0;
      mu[j] = 1.0, us[j] = 0.0;
      if (!valid[j]) continue;
      mu[j] = a.src.mu_t[id[j]];
      us[j] = a.src.u_star[id[j]];
      if constexpr (Det) {
        word[j] = a.age[id[j]];
      } else {
        xs[j] = a.x[id[j]];
        c8[j] = a.cls[id[j]];
        lt[j] = a.src.lambda_t[id[j]];
        xv[j] = a.src.xi[id[j]];
      }
      if constexpr (!Unit) cs[j] = a.src.cost[id[j]];
    }
    uint64_t key[kItems], w[kItems];
    uint32_t cls[kItems];
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      key[j] = 0, w[j] = 0, cls[j] = ws::kBelow;
      if (!valid[j]) continue;
      const uint64_t i = id[j];
      const SourceParams p = make_params<Det, Unit>(mu[j], us[j], lt[j], xv[j], cs[j]);
      if constexpr (Det) {
        uint32_t s = word[j] & ~kClassMask;
        const double x0 = start_of(a, s, i, p);
        if (a.apply) {  // 1-2.
          const uint32_t c_prev = (word[j] >> kClassShift) & 3u;
          uint64_t own = 0;
          if (c_prev == ws::kCandidate && !applied.sel.all)
            own = score_key(score_of<P, true>(s, 0.0, a.prev_epoch, x0, p, i, pointer_prev, a));
          if (ws::crawled_by_class(c_prev, i, own, applied)) {
            double om;
            reward += AgeState::value(s, a.prev_epoch, x0, p, &om);
            spent += cs[j];
            s = AgeState::next(s, true);
          } else {
            s = AgeState::next(s, false);
          }
        }
        if (a.score) {  // 3.
          key[j] = score_key(score_of<P, true>(s, 0.0, a.now_epoch, x0, p, i, pointer, a));
          cls[j] = ws::classify(key[j], coarse_bin(key[j]), plan);
          w[j] = Unit ? 1ull : fixed_weight(cs[j], a.weights);
          s |= cls[j] << kClassShift;
        }
        a.age[i] = s;
      } else {
        double x = xs[j];
        if (a.apply) {  // 1-2.
          const bool crawled = ws::crawled_by_class(c8[j], i, 0, applied);
          if (crawled) reward += x, spent += cs[j];
          const double arrivals =
              sample_arrivals(p, a.utility, a.seed, a.replication, uint32_t(i), a.prev_epoch);
          x = crawled ? arrivals : passive_next(x, arrivals, p);
          a.x[i] = x;
        }
        if (a.score) {  // 3.
          key[j] = score_key(score_of<P, false>(0, x, a.now_epoch, 0.0, p, i, pointer, a));
          cls[j] = ws::classify(key[j], coarse_bin(key[j]), plan);
          w[j] = Unit ? 1ull : fixed_weight(cs[j], a.weights);
          a.cls[i] = uint8_t(cls[j]);
        }
      }
      if (a.keys && a.score) a.keys[i] = key[j];
    }
    if (a.score) emit_tile<Unit>(sm, sb, tile, key, cls, w, id, valid, &tie_w, &tie_n);
  }
  if (a.score) end_scoring<Unit>(sm, sb, tie_w, tie_n);
  // 4.
  using ReduceD = cub::BlockReduce<double, kThreads>;
  if (a.apply) {
    __syncthreads();
    const double r = ReduceD(sm.c.reduce_d).Sum(reward);
    __syncthreads();
    const double c = ReduceD(sm.c.reduce_d).Sum(spent);
    if (threadIdx.x == 0) a.partial[blockIdx.x] = make_double2(r, c);
  }
  if (!arrive_last(&sb.done[0], &sm.last)) return;
  if (a.apply) {
    double r = 0.0, c = 0.0;
    for (uint32_t k = threadIdx.x; k < gridDim.x; k += kThreads) {
      const double2 v = __ldcg(&a.partial[k]);
      r += v.x, c += v.y;
    }
    __syncthreads();
    const double rt = ReduceD(sm.c.reduce_d).Sum(r);
    __syncthreads();
    const double ct = ReduceD(sm.c.reduce_d).Sum(c);
    if (threadIdx.x == 0) {
      if (a.epoch_reward) a.epoch_reward[a.prev_epoch] = rt, a.epoch_cost[a.prev_epoch] = ct;
      if (a.measured) a.sums[0] += rt, a.sums[1] += ct;
    }
    __syncthreads();
  }
  if (a.score) coarse_finish<Unit>(sb, sm);
  if (threadIdx.x == 0) sb.done[0] = 0;
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
