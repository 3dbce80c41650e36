// The epoch kernel of the wide regime (one replication, the whole population) and the engine's
// side of the selection's generic kernels (fallback pass, tie tile). See epoch_kernels.cu.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "crawleval/engine/generic_step.hpp"
#include "crawleval/engine/wide_dormant.hpp"
#include "crawleval/model/problem.hpp"
#include "select_device.cuh"

namespace crawleval::cuda::detail {

/// Per-source columns on the device. Only what the (model, costs, start) combination reads is
/// uploaded; the rest stays nullptr.
struct DeviceColumns {
  std::size_t n = 0;
  const double* mu_t = nullptr;      ///< always
  const double* u_star = nullptr;    ///< always
  const double* lambda_t = nullptr;  ///< stochastic model
  const double* xi = nullptr;        ///< stochastic model
  const double* cost = nullptr;      ///< non-unit costs
  const double* x0 = nullptr;        ///< deterministic model, start "given" (read off the grid)
};

/// Deterministic state word of the wide regime: AgeState (bit 31: off the grid, the age below)
/// with the source's class (window_select.hpp) in bits 29-30, so the class costs no extra bytes.
inline constexpr uint32_t kClassShift = kClassBitsShift;
inline constexpr uint32_t kClassMask = kClassBits;
/// Ages stay below 2^29 (clear of the class bits) when a run has fewer epochs than this.
inline constexpr uint64_t kWideMaxEpochs = (uint64_t(1) << kClassShift) - 64;

/// n sources rounded up to whole tiles: the slots of the per-tile layouts (the arrivals' sums,
/// the live columns of sleeping sources).
inline std::size_t tile_slots(std::size_t n) { return (n + ws::kTile - 1) / ws::kTile * ws::kTile; }

struct EpochLaunch {
  DeviceColumns src;
  uint32_t* age = nullptr;  ///< deterministic model: state words; generic pass: AgeState words
  double* x = nullptr;      ///< stochastic model and generic pass: states
  /// The fused stochastic pass: the arrivals of epoch prev_epoch, written by the arrivals kernel
  /// before the pass (wide_arrivals.hpp: a word of flags per 32 sources, their sums packed).
  uint32_t* arrival_flags = nullptr;
  double* arrival_sums = nullptr;
  uint8_t* cls = nullptr;  ///< stochastic model and generic pass: classes
  /// The generic pass (generic_pass.cuh): its columns and settings, in device memory; nullptr for
  /// the fused passes.
  const GenericPass* generic = nullptr;
  /// A score function's run (the generic pass in two launches per epoch: launch A applies and
  /// moves, writing what the function observes; launch B scores from its scores): the scores of
  /// epoch now_epoch (device, n; launch B), and what the function observes (device, n each;
  /// launch A writes them where `seen` is set): the observed state and the age at now_epoch
  /// (when `observing`), and what each source gave at prev_epoch's crawl (0 where not crawled).
  const double* user_scores = nullptr;
  double* seen = nullptr;
  double* seen_age = nullptr;
  double* collected = nullptr;
  bool observing = false;
  uint64_t* keys = nullptr;  ///< with an observer: every source's key (else nullptr)
  uint32_t prev_epoch = 0, now_epoch = 0;
  bool apply = false;     ///< apply epoch prev_epoch's selection: reward, transition
  bool score = false;     ///< score epoch now_epoch: steps 1-2 of the selection
  bool measured = false;  ///< prev_epoch is after the burn-in
  uint32_t replication = 0;
  uint64_t seed = 0;
  uint64_t first_id = 0;  ///< source i draws as first_id + i (rng.hpp, draw contract 2)
  UtilityDist utility = UtilityDist::exponential;
  FixedBudget weights;             ///< integer costs (selection.hpp)
  double2* partial = nullptr;      ///< (reward, cost) per block
  double* epoch_reward = nullptr;  ///< per epoch (replication 0; else nullptr)
  double* epoch_cost = nullptr;    ///< per epoch (replication 0; else nullptr)
  double* sums = nullptr;          ///< this replication's (reward, cost) over measured epochs
  SelectBuffers sb;
  /// Runs with sleeping sources (dormant_pass.cuh): their state; the pass over every source runs
  /// only while it says kPlain. nullptr: no sleeping sources.
  const wide::DormantState* dormant = nullptr;
};

/// Step 4 of a scoring pass, shared by the fused and the generic passes: the block's (reward,
/// cost) partial; in the block that arrives last, the partials reduced in block order (the same
/// sums for a given grid, run after run) and the coarse boundary (coarse_finish). Every thread of
/// every block calls it after its tiles. Ring: the pass kept its tie weights in the ring
/// (end_scoring writes them); otherwise it has written them and its histogram itself.
template <bool Unit, bool Ring = true>
__device__ __forceinline__ void finish_epoch(const EpochLaunch& a, ScoreSmem<Unit>& sm,
                                             double reward, double spent, uint64_t t0,
                                             uint64_t t1) {
  const SelectBuffers& sb = a.sb;
  if constexpr (Ring)
    if (a.score) end_scoring<Unit>(sm, sb, t0, t1);
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
      r = add_rn(r, v.x), c = add_rn(c, v.y);
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

/// Blocks of the epoch kernel (every SM busy, at most one per tile); the scoring pass's segments.
uint32_t epoch_blocks(Policy policy, Model model, bool unit, uint64_t tiles);

/// The fused stochastic pass's arrivals of epoch a.prev_epoch (before launch_epoch, when it
/// applies a selection), on `blocks` = arrivals_blocks(tiles) blocks.
uint32_t arrivals_blocks(uint64_t tiles);
void launch_arrivals(const EpochLaunch& a, uint32_t blocks, cudaStream_t stream);

/// Step 1-2 (and the transition): one launch per epoch.
void launch_epoch(Policy policy, Model model, bool unit, const EpochLaunch& a, uint32_t blocks,
                  cudaStream_t stream);
/// Step 2's fallback pass (returns at once unless the window missed).
void launch_fallback(Policy policy, Model model, bool unit, const EpochLaunch& a, uint32_t blocks,
                     cudaStream_t stream);
/// Step 4's tie tile (returns at once unless the stop lies in the tie group).
void launch_tie_tile(Policy policy, Model model, bool unit, const EpochLaunch& a,
                     cudaStream_t stream);

}  // namespace crawleval::cuda::detail
