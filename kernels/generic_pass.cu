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

__device__ __noinline__ double generic_score_dev(const GenericPass* g, uint64_t i,
                                                 uint32_t replication, uint32_t epoch,
                                                 uint64_t pointer, double x, uint32_t w) {
  return generic_score(*g, i, replication, epoch, pointer, x, w);
}

template <bool Unit>
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
      GenericState s{a.x[at], a.age[at]};
      const bool crawled = valid[j] && a.apply && rule.crawled(a.cls[at], at);
      if (crawled) reward = add_rn(reward, s.x), spent = add_rn(spent, Unit ? 1.0 : a.src.cost[at]);
      if (a.apply) {
        s = generic_next_dev(a.generic, at, crawled, a.replication, a.prev_epoch, s.x, s.w);
        if (valid[j]) a.x[at] = s.x, a.age[at] = s.w;
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
/// scored, from the stored state, by the scoring pass's own function.
template <bool Unit>
struct GenericKeys {
  EpochLaunch a;
  __device__ uint64_t key(uint64_t i) const {
    return score_key(generic_score_dev(a.generic, i, a.replication, a.now_epoch,
                                       a.sb.state->pointer, a.x[i], a.age[i]));
  }
  __device__ __forceinline__ uint64_t weight(uint64_t i) const {
    return Unit ? 1ull : fixed_weight(a.src.cost[i], a.weights);
  }
  __device__ __forceinline__ void set_class(uint64_t i, uint32_t c) const { a.cls[i] = uint8_t(c); }
};

template <bool Unit>
void epoch(const EpochLaunch& a, uint32_t blocks, cudaStream_t s) {
  generic_epoch_kernel<Unit><<<blocks, kThreads, 0, s>>>(a);
  CE_CUDA_CHECK_LAUNCH();
}

template <bool Unit>
void fallback(const EpochLaunch& a, uint32_t blocks, cudaStream_t s) {
  fallback_kernel<GenericKeys<Unit>, Unit><<<blocks, kThreads, 0, s>>>(a.sb, GenericKeys<Unit>{a});
  CE_CUDA_CHECK_LAUNCH();
}

template <bool Unit>
void tie_tile(const EpochLaunch& a, cudaStream_t s) {
  tie_tile_kernel<GenericKeys<Unit>><<<1, kThreads, 0, s>>>(a.sb, GenericKeys<Unit>{a});
  CE_CUDA_CHECK_LAUNCH();
}

}  // namespace

uint32_t generic_blocks(bool unit, uint64_t tiles) {
  return resident_blocks(
      unit ? (const void*)generic_epoch_kernel<true> : (const void*)generic_epoch_kernel<false>,
      tiles);
}

void launch_generic_epoch(bool unit, const EpochLaunch& a, uint32_t blocks, cudaStream_t stream) {
  if (a.src.n == 0) return;
  unit ? epoch<true>(a, blocks, stream) : epoch<false>(a, blocks, stream);
}

void launch_generic_fallback(bool unit, const EpochLaunch& a, uint32_t blocks,
                             cudaStream_t stream) {
  if (a.src.n == 0) return;
  unit ? fallback<true>(a, blocks, stream) : fallback<false>(a, blocks, stream);
}

void launch_generic_tie_tile(bool unit, const EpochLaunch& a, cudaStream_t stream) {
  if (a.src.n == 0) return;
  unit ? tie_tile<true>(a, stream) : tie_tile<false>(a, stream);
}

}  // namespace crawleval::cuda::detail
