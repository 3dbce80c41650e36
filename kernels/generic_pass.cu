// The generic pass of the wide regime (generic_pass.cuh). One launch per epoch t does, for every
// source (blocks own contiguous runs of tiles, kItems sources per thread and tile, as the fused
// passes):
//  1. Apply epoch t-1's selection from the source's class (a crawled source pays its state as
//     reward, and its cost) and move it to X(t) with general_transition, epoch t-1's draws.
//  2. Score X(t) with policy_score: key, coarse bin, class from the plan; the block's histogram,
//     listed candidates and tie weights (emit_tile).
//  3. The block's (reward, cost) partial and, in the last block, the coarse boundary
//     (finish_epoch, as the fused passes).
// The state is the reference's (x, the AgeState word w) and a class byte per source. The
// transition and the score are out-of-line functions called from every kernel that needs them:
// one compiled copy each, so the fallback pass and the tie tile recompute a key from the stored
// state with the bits the scoring pass gave it; and the general model's branches (every law,
// observation, expiry, policy) stay out of the tile loop's registers.
//
// Bytes per source and epoch: the constants (SourceParams, 80 B, read twice from cache: the
// transition and the score), the initial state (8), period and gain where the policy reads them
// (4 + 8), the cost (8, non-unit costs); x and w read and written (24), the class read and
// written (2): about 115 B with unit costs, as the CPU engine's general path
// (docs/gpu-design.md, "The generic pass").
#include "generic_pass.cuh"
#include "launch.cuh"
#include "window_select.cuh"

namespace crawleval::cuda::detail {

namespace {

__device__ __noinline__ GenericState generic_next_dev(const GenericPass* g, uint64_t i,
                                                      bool crawled, uint32_t replication,
                                                      uint32_t epoch, double x, uint32_t w) {
  return generic_next(*g, i, crawled, replication, epoch, x, w);
}

__device__ __noinline__ double generic_seen_dev(const GenericPass* g, uint64_t i, uint32_t epoch,
                                                double x, uint32_t w) {
  return generic_seen(*g, i, epoch, x, w);
}

__device__ __noinline__ double generic_score_dev(const GenericPass* g, uint64_t i,
                                                 uint32_t replication, uint32_t epoch,
                                                 uint64_t pointer, double x, uint32_t w) {
  return generic_score(*g, i, replication, epoch, pointer, x, w);
}

/// FromArray false: steps 1-3 (a score function's launch A without scoring: a.score false, the
/// observation written where a.seen is set). FromArray true: a score function's launch B, the
/// scores read from a.user_scores (a.apply false).
template <bool Unit, bool FromArray>
__global__ void __launch_bounds__(kThreads) generic_epoch_kernel(const EpochLaunch a) {
  __shared__ ScoreSmem<Unit> sm;
  const SelectBuffers& sb = a.sb;
  begin_scoring<Unit>(sb, sm);
  const ws::ClassRule rule(sm.applied);
  const ws::Plan plan = sm.plan;
  const uint64_t pointer = sm.pointer;
  const std::size_t n = a.src.n;
  double reward = 0.0, spent = 0.0;
  const uint64_t t0 = first_tile(blockIdx.x, gridDim.x, sb.tiles);
  const uint64_t t1 = first_tile(blockIdx.x + 1, gridDim.x, sb.tiles);
  for (uint64_t tile = t0; tile < t1; ++tile) {
    const int slot = int((tile - t0) % kTieRing);
    uint64_t id[kItems];
    bool valid[kItems];
    double score[kItems];
    // 1. and 2.'s score: only the scores stay live across the calls.
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      id[j] = tile * ws::kTile + uint64_t(j) * kThreads + threadIdx.x;
      valid[j] = id[j] < n;
      // Past the end (the last tile only) a source reads the last one's columns and writes
      // nothing: every item runs the same code.
      const uint64_t at = valid[j] ? id[j] : n - 1;
      if constexpr (FromArray) {
        score[j] = a.user_scores[at];
        continue;
      }
      GenericState s{a.x[at], a.age[at]};
      const double before = s.x;
      const bool crawled = valid[j] && a.apply && rule.crawled(a.cls[at], at);
      if (crawled) reward = add_rn(reward, s.x), spent = add_rn(spent, Unit ? 1.0 : a.src.cost[at]);
      if (a.apply) {
        s = generic_next_dev(a.generic, at, crawled, a.replication, a.prev_epoch, s.x, s.w);
        if (valid[j]) a.x[at] = s.x, a.age[at] = s.w;
      }
      if (a.seen && valid[j]) {  // a score function's launch A: what it observes
        a.collected[at] = crawled ? before : 0.0;
        if (a.observing) {
          a.seen[at] = generic_seen_dev(a.generic, at, a.now_epoch, s.x, s.w);
          a.seen_age[at] = AgeState::age(s.w, a.now_epoch);
        }
      }
      score[j] =
          a.score ? generic_score_dev(a.generic, at, a.replication, a.now_epoch, pointer, s.x, s.w)
                  : 0.0;
    }
    if (!a.score) continue;
    // 2. Keys, bins, classes, weights; the selection's step 1 for the tile.
    uint64_t key[kItems], w[kItems];
    uint32_t cls[kItems], bin[kItems];
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      key[j] = score_key(score[j]);
      bin[j] = coarse_bin_of_score(score[j]);
      cls[j] = ws::classify(key[j], bin[j], plan);
      w[j] = Unit ? 1ull : fixed_weight(a.src.cost[valid[j] ? id[j] : n - 1], a.weights);
      if (valid[j]) {
        a.cls[id[j]] = uint8_t(cls[j]);
        if (a.keys) a.keys[id[j]] = key[j];
      }
    }
    emit_tile<Unit>(sm, sb, slot, key, bin, cls, w, id, valid);
    tie_ring_step<Unit>(sm, sb, tile, slot);
  }
  // 3.
  finish_epoch<Unit>(a, sm, reward, spent, t0, t1);
}

/// The generic pass as a KeySource of the selection's generic kernels: the key of the epoch being
/// scored, from the stored state by the scoring pass's own function, or from a score function's
/// scores.
template <bool Unit, bool FromArray>
struct GenericKeys {
  EpochLaunch a;
  __device__ uint64_t key(uint64_t i) const {
    if constexpr (FromArray) return score_key(a.user_scores[i]);
    return score_key(generic_score_dev(a.generic, i, a.replication, a.now_epoch,
                                       a.sb.state->pointer, a.x[i], a.age[i]));
  }
  __device__ __forceinline__ uint64_t weight(uint64_t i) const {
    return Unit ? 1ull : fixed_weight(a.src.cost[i], a.weights);
  }
  __device__ __forceinline__ void set_class(uint64_t i, uint32_t c) const { a.cls[i] = uint8_t(c); }
};

template <bool Unit, bool FromArray>
void epoch(const EpochLaunch& a, uint32_t blocks, cudaStream_t s) {
  generic_epoch_kernel<Unit, FromArray><<<blocks, kThreads, 0, s>>>(a);
  CE_CUDA_CHECK_LAUNCH();
}

template <bool Unit, bool FromArray>
void fallback(const EpochLaunch& a, uint32_t blocks, cudaStream_t s) {
  using KS = GenericKeys<Unit, FromArray>;
  fallback_kernel<KS, Unit><<<blocks, kThreads, 0, s>>>(a.sb, KS{a});
  CE_CUDA_CHECK_LAUNCH();
}

template <bool Unit, bool FromArray>
void tie_tile(const EpochLaunch& a, cudaStream_t s) {
  using KS = GenericKeys<Unit, FromArray>;
  tie_tile_kernel<KS><<<1, kThreads, 0, s>>>(a.sb, KS{a});
  CE_CUDA_CHECK_LAUNCH();
}

/// Calls F<Unit, FromArray>() for the run-time pair.
template <template <bool, bool> class F, class... Args>
void dispatch(bool unit, bool from_array, Args&&... args) {
  if (unit)
    from_array ? F<true, true>::run(args...) : F<true, false>::run(args...);
  else
    from_array ? F<false, true>::run(args...) : F<false, false>::run(args...);
}
template <bool U, bool A>
struct RunEpoch {
  static void run(const EpochLaunch& a, uint32_t b, cudaStream_t s) { epoch<U, A>(a, b, s); }
};
template <bool U, bool A>
struct RunFallback {
  static void run(const EpochLaunch& a, uint32_t b, cudaStream_t s) { fallback<U, A>(a, b, s); }
};
template <bool U, bool A>
struct RunTieTile {
  static void run(const EpochLaunch& a, cudaStream_t s) { tie_tile<U, A>(a, s); }
};

}  // namespace

uint32_t generic_blocks(bool unit, bool from_array, uint64_t tiles) {
  const void* k = unit ? (from_array ? (const void*)generic_epoch_kernel<true, true>
                                     : (const void*)generic_epoch_kernel<true, false>)
                       : (from_array ? (const void*)generic_epoch_kernel<false, true>
                                     : (const void*)generic_epoch_kernel<false, false>);
  return resident_blocks(k, tiles);
}

void launch_generic_epoch(bool unit, bool from_array, const EpochLaunch& a, uint32_t blocks,
                          cudaStream_t stream) {
  if (a.src.n == 0) return;
  dispatch<RunEpoch>(unit, from_array, a, blocks, stream);
}

void launch_generic_fallback(bool unit, bool from_array, const EpochLaunch& a, uint32_t blocks,
                             cudaStream_t stream) {
  if (a.src.n == 0) return;
  dispatch<RunFallback>(unit, from_array, a, blocks, stream);
}

void launch_generic_tie_tile(bool unit, bool from_array, const EpochLaunch& a,
                             cudaStream_t stream) {
  if (a.src.n == 0) return;
  dispatch<RunTieTile>(unit, from_array, a, stream);
}

}  // namespace crawleval::cuda::detail
