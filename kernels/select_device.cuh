// The windowed radix select on the GPU (the algorithm and its steps are in
// include/crawleval/select/window_select.hpp): the device building blocks, the refinement kernels
// and the tie-tile kernel. Every kernel of the wide regime runs kThreads threads per block.
//
// An epoch enqueues, with no host round trip (kernels/wide_engine.cu):
//   1. the scoring pass (kernels/epoch_kernels.cu, fused with the epoch's transition): steps 1-2
//      of window_select.hpp; its last block finds the coarse boundary and starts the search;
//   2. the fallback pass (early exit unless the window missed): recomputes keys, lists bin b;
//   3. kGridSteps step kernels (step_kernel): one level or one resolution each; the last one's
//      last block goes on alone until the search ends (rare: it takes more than kGridSteps);
//   4. the tie-tile kernel (early exit unless the stop lies in the tie group): one block
//      recomputes one tile's keys;
//   5. the mark kernel, which turns the listed sources' classes into kAbove / kBelow (in the
//      deterministic engine's state words, in a class byte otherwise).
// With sleeping sources (kernels/dormant_pass.cuh) the deterministic pass is the live pass, and
// flushes, a decision and a sleep kernel join these (each an early exit unless needed).
// The blocks of a kernel only read the SelectState; the block that finishes last (an atomic
// ticket) reads every block's results and writes it.
#pragma once

#include <cub/block/block_merge_sort.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include <cstddef>
#include <cstdint>

#include "crawleval/select/window_select.hpp"

namespace crawleval::cuda::detail {

namespace ws = crawleval::window;

inline constexpr int kThreads = 256;
/// Sources per thread in a tile of the scoring pass (loads issued before any arithmetic).
inline constexpr int kItems = int(ws::kTile) / kThreads;
inline constexpr int kSortItems = int(ws::kResolveMax) / kThreads;
inline constexpr int kBinsPerThread = kBins / kThreads;
/// Step kernels enqueued per epoch; the last goes on in one block if the search needs more.
inline constexpr int kGridSteps = 4;
/// Deterministic state words carry the source's class in bits 29-30 (epoch_kernels.cuh).
inline constexpr uint32_t kClassBitsShift = 29;
inline constexpr uint32_t kClassBits = 3u << kClassBitsShift;
static_assert(kItems * kThreads == int(ws::kTile), "a tile is kItems sources per thread");
static_assert(kSortItems * kThreads == int(ws::kResolveMax), "one block sorts kResolveMax ranks");
static_assert(kBinsPerThread * kThreads == kBins, "each thread scans kBinsPerThread bins");

/// Listed sources (struct of arrays). w == nullptr: unit costs.
struct ListView {
  uint64_t* key = nullptr;
  uint32_t* id = nullptr;
  unsigned long long* w = nullptr;
};

/// Everything the selection keeps on the device (all allocated once per run).
struct SelectBuffers {
  ws::SelectState* state = nullptr;
  unsigned long long* coarse_count = nullptr;   ///< kBins
  unsigned long long* coarse_weight = nullptr;  ///< kBins; unused with unit costs
  unsigned long long* level_count = nullptr;    ///< kBins
  unsigned long long* level_weight = nullptr;   ///< kBins; unused with unit costs
  ListView list[4];                             ///< window::Buffer
  uint64_t capacity = 0;                        ///< of each compaction buffer
  unsigned long long* tile_w = nullptr;         ///< tie weight per tile
  unsigned long long* seg_w = nullptr;          ///< tie weight per block of the scoring pass
  uint64_t tiles = 0;
  uint32_t seg_blocks = 0;              ///< blocks of the scoring pass
  ws::Rank* part_min = nullptr;         ///< per step-kernel block
  ws::Rank* part_max = nullptr;         ///< per step-kernel block
  unsigned int* done = nullptr;         ///< last-block tickets: [0] scoring, [1] steps, [2] aux
  const uint64_t* first_key = nullptr;  ///< first_key_of_bin(b), b = 0..kBins
  uint64_t n = 0;
  uint64_t limit = 0;
  bool unit = true;
};

/// First tile of block b of the scoring pass: block b owns tiles [first_tile(b), first_tile(b+1)).
__host__ __device__ __forceinline__ uint64_t first_tile(uint64_t b, uint64_t blocks,
                                                        uint64_t tiles) {
  return b * tiles / blocks;
}

/// The same 64-bit word as CUDA's atomics name it (uint64_t is unsigned long here).
__device__ __forceinline__ unsigned long long* ull(uint64_t* p) {
  static_assert(sizeof(uint64_t) == sizeof(unsigned long long), "64-bit counters");
  return reinterpret_cast<unsigned long long*>(p);
}
__host__ __device__ __forceinline__ const uint64_t* u64(const unsigned long long* p) {
  return reinterpret_cast<const uint64_t*>(p);
}

using BlockScanU32 = cub::BlockScan<unsigned int, kThreads>;
using BlockScanU64 = cub::BlockScan<unsigned long long, kThreads>;
using BlockReduceU64 = cub::BlockReduce<unsigned long long, kThreads>;

// ---- per-block histograms ---------------------------------------------------------------------

/// A block's histogram in shared memory: 32-bit counts; with costs, 64-bit weights as two 32-bit
/// halves (a 64-bit shared atomicAdd would be a compare-and-swap loop).
template <bool Unit>
struct BlockHist {
  unsigned int count[kBins];
  unsigned int wlo[Unit ? 1 : kBins];
  unsigned int whi[Unit ? 1 : kBins];
};

template <bool Unit>
__device__ __forceinline__ void hist_clear(BlockHist<Unit>& h) {
  for (int b = threadIdx.x; b < kBins; b += kThreads) {
    h.count[b] = 0;
    if constexpr (!Unit) h.wlo[b] = 0, h.whi[b] = 0;
  }
}

/// Adds the 64-bit weight w to bin b of a histogram kept as 32-bit halves (exact: the lane whose
/// low-half add wraps carries one into the high half).
__device__ __forceinline__ void add_halves(unsigned int* lo, unsigned int* hi, uint32_t b,
                                           uint64_t w) {
  const unsigned l = unsigned(w), h = unsigned(w >> 32);
  const unsigned old = atomicAdd(&lo[b], l);
  const unsigned carry = old + l < old ? 1u : 0u;
  if (h + carry) atomicAdd(&hi[b], h + carry);
}

/// Adds (1, w) to bin `bin` for every valid lane. Every lane of the warp calls it, and its
/// collectives run with the whole warp (invalid lanes take part with a bin no valid lane has), so
/// the compiler needs no code for a partial warp. Lanes with the same bin are aggregated first
/// (__match_any_sync), so equal scores (a whole warp at score 0) cost one shared atomic, not 32 in
/// a row on one address. Weights: when every valid lane shares the bin, one warp sum (weights are
/// below 2^62, so the sums of their 20-bit pieces fit 32 bits); otherwise each lane adds its own
/// (a reduction over per-group masks would be serialised).
template <bool Unit>
__device__ __forceinline__ void hist_add(BlockHist<Unit>& h, uint32_t bin, uint64_t w, bool valid) {
  const unsigned peers = __match_any_sync(0xFFFFFFFFu, valid ? bin : 0xFFFFFFFFu);
  const bool leader = valid && int(threadIdx.x & 31) == __ffs(peers) - 1;
  if (leader) atomicAdd(&h.count[bin], unsigned(__popc(peers)));
  if constexpr (!Unit) {
    const unsigned active = __ballot_sync(0xFFFFFFFFu, valid);
    const bool one_bin = active && __ballot_sync(0xFFFFFFFFu, valid && peers == active) == active;
    const uint64_t v = valid ? w : 0;
    const unsigned s0 = __reduce_add_sync(0xFFFFFFFFu, unsigned(v & 0xFFFFFu));
    const unsigned s1 = __reduce_add_sync(0xFFFFFFFFu, unsigned((v >> 20) & 0xFFFFFu));
    const unsigned s2 = __reduce_add_sync(0xFFFFFFFFu, unsigned(v >> 40));
    if (one_bin) {
      if (leader)
        add_halves(h.wlo, h.whi, bin, uint64_t(s0) + (uint64_t(s1) << 20) + (uint64_t(s2) << 40));
    } else if (valid) {
      add_halves(h.wlo, h.whi, bin, w);
    }
  }
}

template <bool Unit>
__device__ __forceinline__ void hist_flush(const BlockHist<Unit>& h, unsigned long long* count,
                                           unsigned long long* weight) {
  for (int b = threadIdx.x; b < kBins; b += kThreads) {
    if (!h.count[b]) continue;
    atomicAdd(&count[b], (unsigned long long)h.count[b]);
    if constexpr (!Unit)
      atomicAdd(&weight[b], (unsigned long long)h.wlo[b] | ((unsigned long long)h.whi[b] << 32));
  }
}

// ---- block collectives ------------------------------------------------------------------------

/// Reserves `mine` consecutive slots for this thread in a buffer whose fill count is *counter
/// (one atomic per block). Returns the first slot.
__device__ __forceinline__ uint64_t block_reserve(BlockScanU32::TempStorage& tmp,
                                                  unsigned long long* counter, unsigned mine,
                                                  unsigned long long* s_base) {
  unsigned offset, total;
  BlockScanU32(tmp).ExclusiveSum(mine, offset, total);
  if (threadIdx.x == 0) *s_base = total ? atomicAdd(counter, (unsigned long long)total) : 0ull;
  __syncthreads();
  const uint64_t first = *s_base + offset;
  __syncthreads();  // s_base and tmp are reused
  return first;
}

/// True in the block that finishes last (every block's global writes are then visible to it).
__device__ __forceinline__ bool arrive_last(unsigned int* ticket, bool* s_last) {
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) *s_last = atomicAdd(ticket, 1u) == gridDim.x - 1;
  __syncthreads();
  if (*s_last) __threadfence();
  return *s_last;
}

/// Reads the state as written by other blocks of this kernel (through L2, never a stale L1 line).
__device__ __forceinline__ void load_state(ws::SelectState& dst, const ws::SelectState* src) {
  static_assert(sizeof(ws::SelectState) % 8 == 0, "copied as 64-bit words");
  const unsigned long long* s = reinterpret_cast<const unsigned long long*>(src);
  unsigned long long* d = reinterpret_cast<unsigned long long*>(&dst);
  for (std::size_t k = 0; k < sizeof(ws::SelectState) / 8; ++k) d[k] = __ldcg(s + k);
}

/// Step 2 / end of a level in one block: the boundary bin of a kBins histogram `w` in global
/// memory (walked from the highest bin, `extra` added to bin extra_bin). Thread t scans bins
/// kBins-1-8t down to kBins-8-8t after an exclusive scan of the threads' sums; exactly one bin
/// passes is_boundary (the serial walk's bin). Results for every thread in *s_bin (-1: fits)
/// and *s_above.
__device__ __forceinline__ void block_boundary(const unsigned long long* w, int extra_bin,
                                               uint64_t extra, uint64_t above0, uint64_t limit,
                                               BlockScanU64::TempStorage& tmp, int* s_bin,
                                               unsigned long long* s_above) {
  const int top = kBins - 1 - int(threadIdx.x) * kBinsPerThread;
  uint64_t v[kBinsPerThread];
  unsigned long long sum = 0;
#pragma unroll
  for (int k = 0; k < kBinsPerThread; ++k) {
    v[k] = __ldcg(&w[top - k]) + (top - k == extra_bin ? extra : 0);
    sum += v[k];
  }
  if (threadIdx.x == 0) *s_bin = -1;
  unsigned long long prefix;
  BlockScanU64(tmp).ExclusiveSum(sum, prefix);
  __syncthreads();
  uint64_t acc = above0 + prefix;
#pragma unroll
  for (int k = 0; k < kBinsPerThread; ++k) {
    if (ws::is_boundary(acc, v[k], limit)) *s_bin = top - k, *s_above = acc;
    acc += v[k];
  }
  __syncthreads();
}

/// Prefix scan in index order over `count` weights (global memory, chunk by chunk): the first
/// index whose weight overflows given `acc` before index 0. Results for every thread.
__device__ __forceinline__ void block_first_overflow(const unsigned long long* w, uint64_t first,
                                                     uint64_t count, uint64_t acc, uint64_t limit,
                                                     BlockScanU64::TempStorage& tmp,
                                                     long long* s_index,
                                                     unsigned long long* s_acc) {
  __syncthreads();  // callers may still be reading *s_index and *s_acc
  if (threadIdx.x == 0) *s_index = -1;
  __syncthreads();
  for (uint64_t base = 0; base < count; base += kThreads) {
    const uint64_t k = base + threadIdx.x;
    const unsigned long long v = k < count ? __ldcg(&w[first + k]) : 0ull;
    unsigned long long pre, total;
    BlockScanU64(tmp).ExclusiveSum(v, pre, total);
    if (k < count && ws::is_boundary(acc + pre, v, limit))
      *s_index = (long long)k, *s_acc = acc + pre;
    __syncthreads();
    if (*s_index >= 0) break;
    acc += total;
  }
}

// ---- refinement ---------------------------------------------------------------------------------

/// A rank as the resolution sorts it: (key, 2^32 - 1 - id), compared in that order.
struct SortRank {
  uint64_t key;
  uint32_t inv;
};
/// Rank order, highest first (every rank is distinct: ids are).
struct RankGreater {
  __device__ __forceinline__ bool operator()(const SortRank& a, const SortRank& b) const {
    return a.key != b.key ? a.key > b.key : a.inv > b.inv;
  }
};
using BlockSort = cub::BlockMergeSort<SortRank, kThreads, kSortItems, unsigned long long>;

struct RankMinMax {
  ws::Rank lo, hi;
};
__device__ __forceinline__ ws::Rank shfl_down_rank(ws::Rank r, int d) {
  const unsigned long long lo = __shfl_down_sync(0xFFFFFFFFu, (unsigned long long)r, d);
  const unsigned long long hi = __shfl_down_sync(0xFFFFFFFFu, (unsigned long long)(r >> 64), d);
  return (ws::Rank(hi) << 64) | ws::Rank(lo);
}

/// Min and max rank over the block, valid in every thread on return (shuffles on 64-bit halves:
/// a generic reduction of the 32-byte pair would go through local memory).
__device__ __forceinline__ RankMinMax block_minmax(RankMinMax m, RankMinMax* s_warp) {
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) {
    const ws::Rank lo = shfl_down_rank(m.lo, d), hi = shfl_down_rank(m.hi, d);
    if (lo < m.lo) m.lo = lo;
    if (hi > m.hi) m.hi = hi;
  }
  if ((threadIdx.x & 31) == 0) s_warp[threadIdx.x >> 5] = m;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kThreads / 32; ++w) {
      if (s_warp[w].lo < m.lo) m.lo = s_warp[w].lo;
      if (s_warp[w].hi > m.hi) m.hi = s_warp[w].hi;
    }
    s_warp[0] = m;
  }
  __syncthreads();
  m = s_warp[0];
  __syncthreads();
  return m;
}

/// Shared memory of a step kernel: the pass (histogram, scans) and the last block's work (the
/// sort) never overlap in time.
template <bool Unit>
struct StepSmem {
  union {
    BlockHist<Unit> hist;
    typename BlockSort::TempStorage sort;
  } u;
  union {
    BlockScanU32::TempStorage scan32;
    BlockScanU64::TempStorage scan64;
    typename BlockReduceU64::TempStorage reduce64;
    RankMinMax minmax[kThreads / 32];
  } c;
  unsigned long long base, acc;
  long long index;
  int bin;
  int stops;
  bool last;
  ws::SelectState st;  ///< the last block's working copy
};

/// Closes the epoch in one block once its search has ended (every thread calls it; the state is
/// the block's shared copy): the next plan and cleared histograms when the stop is known, and
/// after a failed search (an internal error, reported by the host after the run) the counts the
/// next scoring pass appends to cleared too (window::abandon), so that it never writes past the
/// list. Does nothing while the search goes on (kTieTile: the tie-tile kernel closes it).
__device__ __forceinline__ void close_epoch(const SelectBuffers& sb, ws::SelectState& st) {
  const uint32_t phase = st.phase;
  __syncthreads();  // every thread has read the phase before thread 0 rewrites the state
  if (phase != ws::kDone && phase != ws::kFailed) return;  // uniform
  if (threadIdx.x == 0) {
    if (phase == ws::kDone)
      ws::finalize(st, u64(sb.coarse_count), sb.n);
    else
      ws::abandon(st);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < kBins; b += kThreads) {
    sb.coarse_count[b] = 0;
    if (!sb.unit) sb.coarse_weight[b] = 0;
  }
}

/// A 128-bit rank written by another block of the running kernel (through L2, as load_state).
__device__ __forceinline__ ws::Rank load_rank(const ws::Rank* p) {
  const ulonglong2 v = __ldcg(reinterpret_cast<const ulonglong2*>(p));
  return (ws::Rank(v.y) << 64) | ws::Rank(v.x);
}

/// Step 4 in the tie group: the tile holding the stop, from the per-block then per-tile tie
/// weights (id order); `acc` is the weight ranked before the group.
template <bool Unit>
__device__ void find_tie_tile(const SelectBuffers& sb, StepSmem<Unit>& sm, uint64_t acc) {
  block_first_overflow(sb.seg_w, 0, sb.seg_blocks, acc, sb.limit, sm.c.scan64, &sm.index, &sm.acc);
  const long long seg = sm.index;
  const unsigned long long seg_acc = sm.acc;
  __syncthreads();
  if (seg < 0) {
    if (threadIdx.x == 0) sm.st.phase = ws::kFailed;
    return;
  }
  const uint64_t t0 = first_tile(uint64_t(seg), sb.seg_blocks, sb.tiles);
  const uint64_t t1 = first_tile(uint64_t(seg) + 1, sb.seg_blocks, sb.tiles);
  block_first_overflow(sb.tile_w, t0, t1 - t0, seg_acc, sb.limit, sm.c.scan64, &sm.index, &sm.acc);
  if (threadIdx.x == 0) {
    if (sm.index < 0)
      sm.st.phase = ws::kFailed;
    else
      ws::begin_tie_tile(sm.st, t0 + uint64_t(sm.index), sm.acc);
  }
  __syncthreads();
}

/// One level's pass by block `b` of `nb`: histogram of the members' digits, their min and max
/// rank, and the compaction of the members into s.dst when the level compacts.
template <bool Unit>
__device__ void level_pass(const SelectBuffers& sb, StepSmem<Unit>& sm, const ws::Search& s,
                           uint64_t src_n, uint32_t b, uint32_t nb) {
  hist_clear<Unit>(sm.u.hist);
  __syncthreads();
  const ListView src = sb.list[s.src];
  ListView dst;
  if (s.dst != ws::kNone) dst = sb.list[s.dst];
  RankMinMax mm{~ws::Rank(0), 0};
  for (uint64_t base = uint64_t(b) * kThreads; base < src_n; base += uint64_t(nb) * kThreads) {
    const uint64_t k = base + threadIdx.x;
    const bool valid = k < src_n;
    uint64_t key = 0, w = 1;
    uint32_t id = 0;
    if (valid) {
      key = src.key[k];
      id = src.id[k];
      if (!Unit) w = src.w[k];
    }
    const ws::Rank r = ws::rank_of(key, id);
    const bool member = valid && r >= s.lo && r <= s.hi;
    hist_add<Unit>(sm.u.hist, member ? ws::digit_of(r, s.lo, s.shift) : 0u, w, member);
    if (member) {
      if (r < mm.lo) mm.lo = r;
      if (r > mm.hi) mm.hi = r;
    }
    if (s.dst != ws::kNone) {
      const uint64_t at = block_reserve(sm.c.scan32, ull(&sb.state->buffer_count[s.dst]),
                                        member ? 1u : 0u, &sm.base);
      if (member && at < sb.capacity) {  // more would mean a corrupt state: caught later
        dst.key[at] = key;
        dst.id[at] = id;
        if (!Unit) dst.w[at] = w;
      }
    }
  }
  __syncthreads();
  hist_flush<Unit>(sm.u.hist, sb.level_count, sb.level_weight);
  const RankMinMax block_mm = block_minmax(mm, sm.c.minmax);
  if (threadIdx.x == 0) sb.part_min[b] = block_mm.lo, sb.part_max[b] = block_mm.hi;
}

/// A level's end in one block (nb blocks ran the pass): boundary digit, narrowed range.
template <bool Unit>
__device__ void level_finish(const SelectBuffers& sb, StepSmem<Unit>& sm, uint32_t nb) {
  ws::SelectState& st = sm.st;
  // Min and max over the blocks' partials (and the tie group's ranks).
  RankMinMax mm{~ws::Rank(0), 0};
  for (uint32_t k = threadIdx.x; k < nb; k += kThreads) {
    const ws::Rank lo = load_rank(&sb.part_min[k]), hi = load_rank(&sb.part_max[k]);
    if (lo < mm.lo) mm.lo = lo;
    if (hi > mm.hi) mm.hi = hi;
  }
  mm = block_minmax(mm, sm.c.minmax);
  const bool tie_in = st.s.tie_in != 0;
  const uint64_t tie_key = st.plan.tie_key;
  if (tie_in) {
    if (ws::rank_floor(tie_key) < mm.lo) mm.lo = ws::rank_floor(tie_key);
    if (ws::rank_ceil(tie_key) > mm.hi) mm.hi = ws::rank_ceil(tie_key);
  }
  const int tie_bin = tie_in ? int(ws::tie_digit(tie_key, st.s)) : -1;
  block_boundary(Unit ? sb.level_count : sb.level_weight, tie_bin, st.tie_weight, st.s.above,
                 sb.limit, sm.c.scan64, &sm.bin, &sm.acc);
  const int j = sm.bin;
  const unsigned long long above = sm.acc;
  bool tie_only = false;
  if (threadIdx.x == 0) {
    if (j < 0) {
      st.phase = ws::kFailed;
    } else {
      const uint64_t listed_j = __ldcg(&sb.level_count[j]);
      tie_only = !ws::end_level(st, uint32_t(j), above, listed_j, mm.lo, mm.hi, sb.capacity);
    }
    sm.stops = tie_only ? 1 : 0;
  }
  __syncthreads();
  // The level's histogram starts the next level empty.
  for (int b = threadIdx.x; b < kBins; b += kThreads) {
    sb.level_count[b] = 0;
    if (!Unit) sb.level_weight[b] = 0;
  }
  if (sm.stops) find_tie_tile<Unit>(sb, sm, above);
}

/// A resolution's gather by block `b` of `nb`: the listed members of [lo, hi] into kGather.
template <bool Unit>
__device__ void resolve_pass(const SelectBuffers& sb, StepSmem<Unit>& sm, const ws::Search& s,
                             uint64_t src_n, uint32_t b, uint32_t nb) {
  if (s.listed == 0) return;  // only the tie group: nothing to gather
  const ListView src = sb.list[s.src], dst = sb.list[ws::kGather];
  for (uint64_t base = uint64_t(b) * kThreads; base < src_n; base += uint64_t(nb) * kThreads) {
    const uint64_t k = base + threadIdx.x;
    uint64_t key = 0, w = 1;
    uint32_t id = 0;
    if (k < src_n) {
      key = src.key[k];
      id = src.id[k];
      if (!Unit) w = src.w[k];
    }
    const ws::Rank r = ws::rank_of(key, id);
    const bool member = k < src_n && r >= s.lo && r <= s.hi;
    const uint64_t at = block_reserve(sm.c.scan32, ull(&sb.state->buffer_count[ws::kGather]),
                                      member ? 1u : 0u, &sm.base);
    if (member && at < ws::kResolveMax) {  // more would mean a corrupt state: caught below
      dst.key[at] = key;
      dst.id[at] = id;
      if (!Unit) dst.w[at] = w;
    }
  }
}

/// The resolution in one block: sort the gathered ranks, walk. A merge sort of at most 2048 ranks
/// costs 11 merge rounds whatever the ranks; a radix sort would take one pass per 4 of the up to
/// 96 bits in which they still differ.
template <bool Unit>
__device__ void resolve_finish(const SelectBuffers& sb, StepSmem<Unit>& sm) {
  ws::SelectState& st = sm.st;
  const uint64_t c = __ldcg(ull(&sb.state->buffer_count[ws::kGather]));
  const ws::Search s = st.s;
  const uint64_t tie_key = st.plan.tie_key, tie_w = st.tie_weight;
  if (c != s.listed) {  // the histogram and the list disagree: a corrupt state
    if (threadIdx.x == 0) st.phase = ws::kFailed;
    __syncthreads();
    return;
  }
  const ListView g = sb.list[ws::kGather];
  SortRank r[kSortItems];
  unsigned long long w[kSortItems];
#pragma unroll
  for (int k = 0; k < kSortItems; ++k) {  // blocked: thread t holds positions 8t..8t+7
    const uint64_t pos = uint64_t(threadIdx.x) * kSortItems + k;
    if (pos < c) {
      r[k] = SortRank{__ldcg(&g.key[pos]), 0xFFFFFFFFu - __ldcg(&g.id[pos])};
      w[k] = Unit ? 1ull : __ldcg(&g.w[pos]);
    } else {  // padding: rank 0, below every source's (whose id is at most kMaxId)
      r[k] = SortRank{0, 0};
      w[k] = 0;
    }
  }
  if (c > 1) {  // uniform
    __syncthreads();
    BlockSort(sm.u.sort).Sort(r, w, RankGreater{}, int(c), SortRank{0, 0});
    __syncthreads();
  }
  unsigned long long sum = 0, above_tie = 0;
#pragma unroll
  for (int k = 0; k < kSortItems; ++k) {
    if (uint64_t(threadIdx.x) * kSortItems + k >= c) w[k] = 0;  // padding after the sort
    sum += w[k];
    if (r[k].key > tie_key) above_tie += w[k];
  }
  if (threadIdx.x == 0) sm.stops = 0;
  unsigned long long excl;
  BlockScanU64(sm.c.scan64).ExclusiveSum(sum, excl);
  __syncthreads();
#pragma unroll
  for (int k = 0; k < kSortItems; ++k) {
    const uint64_t pos = uint64_t(threadIdx.x) * kSortItems + k;
    if (pos < c && ws::member_is_stop(r[k].key, w[k], excl, s, tie_key, tie_w, sb.limit)) {
      atomicAdd(&sm.stops, 1);
      sm.base = r[k].key;
      sm.acc = 0xFFFFFFFFu - r[k].inv;  // the stop's id
    }
    excl += w[k];
  }
  const unsigned long long total_above_tie = BlockReduceU64(sm.c.reduce64).Sum(above_tie);
  __syncthreads();
  bool in_tie = false;
  if (threadIdx.x == 0) {
    in_tie = ws::tie_is_stop(total_above_tie, s, tie_w, sb.limit);
    if (sm.stops + int(in_tie) != 1)
      st.phase = ws::kFailed;
    else if (!in_tie)
      ws::set_stop(st, sm.base, sm.acc);
    sm.index = in_tie ? 1 : 0;
    sm.acc = s.above + total_above_tie;
  }
  __syncthreads();
  if (sm.index == 1 && st.phase != ws::kFailed) find_tie_tile<Unit>(sb, sm, sm.acc);
}

/// One step (a level, or a resolution) of the search. `last_slot`: the last step kernel of the
/// epoch, whose last block goes on alone until the search ends.
template <bool Unit>
__global__ void __launch_bounds__(kThreads) step_kernel(const SelectBuffers sb, bool last_slot) {
  __shared__ StepSmem<Unit> sm;
  const ws::SelectState* gst = sb.state;
  const uint32_t phase = ws::effective_phase(*gst);
  if (phase != ws::kLevel && phase != ws::kResolve) return;  // uniform: the whole grid returns
  const ws::Search s = gst->s;
  const uint64_t src_n = gst->buffer_count[s.src];
  if (phase == ws::kLevel)
    level_pass<Unit>(sb, sm, s, src_n, blockIdx.x, gridDim.x);
  else
    resolve_pass<Unit>(sb, sm, s, src_n, blockIdx.x, gridDim.x);
  if (!arrive_last(&sb.done[1], &sm.last)) return;
  if (threadIdx.x == 0) {
    load_state(sm.st, gst);
    sm.st.phase = phase;  // a fallback pass, if any, has run
    sm.st.s.steps += 1;
  }
  __syncthreads();
  uint32_t ph = phase, nb = gridDim.x;
  for (;;) {
    if (ph == ws::kLevel)
      level_finish<Unit>(sb, sm, nb);
    else
      resolve_finish<Unit>(sb, sm);
    __syncthreads();
    ph = sm.st.phase;
    const bool more = ph == ws::kLevel || ph == ws::kResolve;
    if (!more || !last_slot) break;
    if (sm.st.s.steps >= uint32_t(ws::kMaxSteps)) {  // cannot happen (window_select.hpp)
      __syncthreads();                               // every thread has read steps
      if (threadIdx.x == 0) sm.st.phase = ws::kFailed;
      break;
    }
    // Go on alone: publish the state, run the next pass with this block as the whole grid.
    __syncthreads();  // every thread has read steps
    if (threadIdx.x == 0) *sb.state = sm.st;
    __threadfence();
    __syncthreads();
    nb = 1;
    const ws::Search s2 = sm.st.s;
    const uint64_t n2 = __ldcg(ull(&sb.state->buffer_count[s2.src]));
    if (ph == ws::kLevel)
      level_pass<Unit>(sb, sm, s2, n2, 0, 1);
    else
      resolve_pass<Unit>(sb, sm, s2, n2, 0, 1);
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {  // counters the pass advanced in global memory; one more step
      for (int k = 0; k < 4; ++k) sm.st.buffer_count[k] = __ldcg(ull(&sb.state->buffer_count[k]));
      sm.st.s.steps += 1;
    }
    __syncthreads();
  }
  close_epoch(sb, sm.st);
  __syncthreads();
  if (threadIdx.x == 0) {
    *sb.state = sm.st;
    sb.done[1] = 0;
  }
}

// ---- the scoring pass (step 1) and its last block (step 2)
// ---------------------------------------

/// Tiles whose tie weights a scoring block keeps in shared memory before it writes them (one
/// barrier per kTieRing tiles instead of one per tile).
inline constexpr int kTieRing = 16;
inline constexpr int kWarps = kThreads / 32;

/// Shared memory of a scoring pass.
template <bool Unit>
struct ScoreSmem {
  BlockHist<Unit> hist;
  union {
    BlockScanU32::TempStorage scan32;
    BlockScanU64::TempStorage scan64;
    typename BlockReduceU64::TempStorage reduce64;
    typename cub::BlockReduce<double, kThreads>::TempStorage reduce_d;
  } c;
  /// Each warp's tie weight (and, with costs, count) of the last kTieRing tiles.
  unsigned long long tie_w[kTieRing][kWarps];
  unsigned int tie_n[Unit ? 1 : kTieRing][kWarps];
  unsigned long long seg_tie_w, seg_tie_n;  ///< the block's tie sums
  unsigned long long base, acc;
  int bin;
  bool last;
  ws::Plan plan;
  ws::Applied applied;
  unsigned long long pointer, pointer_prev;
  ws::SelectState st;  ///< the last block's working copy
};

/// Loads what a scoring pass reads of the state (the plan, the previous selection, the round-robin
/// pointers) into shared memory, and clears the block's histogram.
template <bool Unit>
__device__ __forceinline__ void begin_scoring(const SelectBuffers& sb, ScoreSmem<Unit>& sm) {
  if (threadIdx.x == 0) {
    sm.plan = sb.state->plan;
    sm.applied = sb.state->applied;
    sm.pointer = sb.state->pointer;
    sm.pointer_prev = sb.state->pointer_prev;
    sm.seg_tie_w = 0;
    sm.seg_tie_n = 0;
  }
  hist_clear<Unit>(sm.hist);
  __syncthreads();
}

/// Writes the tie weights of the ring's first `count` tiles (tiles first_tile ...) and adds them
/// to the block's sums. Every thread calls it; barriers on both sides.
template <bool Unit>
__device__ __forceinline__ void flush_tie_ring(ScoreSmem<Unit>& sm, const SelectBuffers& sb,
                                               uint64_t first_tile, int count) {
  __syncthreads();
  if (int(threadIdx.x) < count) {
    unsigned long long w = 0, n = 0;
#pragma unroll
    for (int k = 0; k < kWarps; ++k) {
      w += sm.tie_w[threadIdx.x][k];
      n += Unit ? 0ull : sm.tie_n[Unit ? 0 : threadIdx.x][k];
    }
    sb.tile_w[first_tile + threadIdx.x] = w;
    if (w) {
      atomicAdd(&sm.seg_tie_w, w);
      atomicAdd(&sm.seg_tie_n, Unit ? w : n);
    }
  }
  __syncthreads();
}

/// Step 1's histogram and list for one round of kItems sources per thread, by every warp on its
/// own (no block barrier): the histogram; the warp's candidates listed in consecutive slots that
/// one atomic per warp and round reserves. on_source(j) runs for each item in the first loop
/// (while the classes are at hand: the tie weights).
template <bool Unit, class OnSource>
__device__ __forceinline__ void emit_listed(
    ScoreSmem<Unit>& sm, const SelectBuffers& sb, const uint64_t (&key)[kItems],
    const uint32_t (&bin)[kItems], const uint32_t (&cls)[kItems], const uint64_t (&w)[kItems],
    const uint64_t (&id)[kItems], const bool (&valid)[kItems], OnSource on_source) {
  const unsigned lane = threadIdx.x & 31u, below = (1u << lane) - 1u;
  unsigned cand[kItems], total = 0;
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    hist_add<Unit>(sm.hist, bin[j], w[j], valid[j]);
    cand[j] = __ballot_sync(0xFFFFFFFFu, valid[j] && cls[j] == ws::kCandidate);
    total += __popc(cand[j]);
    on_source(j);
  }
  // One atomic per warp and round reserves the warp's list slots (no block barrier).
  unsigned long long base = 0;
  if (lane == 0 && total) base = atomicAdd(ull(&sb.state->buffer_count[ws::kList]), total);
  base = __shfl_sync(0xFFFFFFFFu, base, 0);
  const ListView out = sb.list[ws::kList];
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const uint64_t k = base + __popc(cand[j] & below);
    // The list holds n items and a scoring pass lists each source at most once; a count that did
    // not start at 0 is a corrupt state, which the histogram check of the search reports.
    if ((cand[j] >> lane & 1u) && k < sb.n) {
      out.key[k] = key[j];
      out.id[k] = uint32_t(id[j]);
      if constexpr (!Unit) out.w[k] = w[j];
    }
    base += __popc(cand[j]);
  }
}

/// Step 1 for one tile once its keys are known, by every warp on its own (no block barrier):
/// emit_listed, and the warp's tie weight of the tile in the ring (flushed every kTieRing tiles
/// by the loop: tie_ring_step). `slot`: the tile's place in the ring.
template <bool Unit>
__device__ __forceinline__ void emit_tile(ScoreSmem<Unit>& sm, const SelectBuffers& sb, int slot,
                                          const uint64_t (&key)[kItems],
                                          const uint32_t (&bin)[kItems],
                                          const uint32_t (&cls)[kItems],
                                          const uint64_t (&w)[kItems], const uint64_t (&id)[kItems],
                                          const bool (&valid)[kItems]) {
  unsigned tn = 0;
  unsigned long long tw = 0;
  emit_listed<Unit>(sm, sb, key, bin, cls, w, id, valid, [&](int j) {
    const bool tie = valid[j] && cls[j] == ws::kTie;
    if (Unit)
      tn += __popc(__ballot_sync(0xFFFFFFFFu, tie));
    else if (tie)
      tw += w[j], tn += 1;
  });
  if constexpr (!Unit) {
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) {
      tw += __shfl_xor_sync(0xFFFFFFFFu, tw, d);
      tn += __shfl_xor_sync(0xFFFFFFFFu, tn, d);
    }
  }
  if ((threadIdx.x & 31u) == 0 && sm.plan.has_tie) {
    sm.tie_w[slot][threadIdx.x >> 5] = Unit ? tn : tw;
    if constexpr (!Unit) sm.tie_n[Unit ? 0 : slot][threadIdx.x >> 5] = tn;
  }
}

/// After the tile at ring slot `slot` (the k-th of the block, first_tile + k): flushes a full
/// ring.
template <bool Unit>
__device__ __forceinline__ void tie_ring_step(ScoreSmem<Unit>& sm, const SelectBuffers& sb,
                                              uint64_t tile, int slot) {
  if (sm.plan.has_tie && slot == kTieRing - 1)
    flush_tie_ring<Unit>(sm, sb, tile + 1 - kTieRing, kTieRing);
}

/// End of a block's scoring over tiles [t0, t1): the ring's last tiles, the histogram and the tie
/// sums leave for global memory.
template <bool Unit>
__device__ __forceinline__ void end_scoring(ScoreSmem<Unit>& sm, const SelectBuffers& sb,
                                            uint64_t t0, uint64_t t1) {
  const int left = int((t1 - t0) % kTieRing);
  if (sm.plan.has_tie && left) flush_tie_ring<Unit>(sm, sb, t1 - left, left);
  __syncthreads();
  hist_flush<Unit>(sm.hist, sb.coarse_count, sb.coarse_weight);
  if (threadIdx.x == 0 && sm.plan.has_tie) {
    sb.seg_w[blockIdx.x] = sm.seg_tie_w;
    if (sm.seg_tie_n) {
      atomicAdd(ull(&sb.state->tie_count), sm.seg_tie_n);
      atomicAdd(ull(&sb.state->tie_weight), sm.seg_tie_w);
    }
  }
}

/// Step 2 in the scoring pass's last block: the coarse boundary bin and the start of the search
/// (or, when everything fits, the end of the epoch).
template <bool Unit>
__device__ void coarse_finish(const SelectBuffers& sb, ScoreSmem<Unit>& sm) {
  if (threadIdx.x == 0) {
    load_state(sm.st, sb.state);
    if (sm.st.phase != ws::kDone) sm.st.diag.failures += 1;  // the last search never ended
  }
  __syncthreads();
  block_boundary(Unit ? sb.coarse_count : sb.coarse_weight, -1, 0, 0, sb.limit, sm.c.scan64,
                 &sm.bin, &sm.acc);
  if (threadIdx.x == 0) {
    const int b = sm.bin;
    const uint64_t count_b = b >= 0 ? __ldcg(&sb.coarse_count[b]) : 0;
    const uint64_t k0 = b >= 0 ? sb.first_key[b] : 0, k1 = b >= 0 ? sb.first_key[b + 1] : 0;
    ws::begin_search(sm.st, b, sm.acc, count_b, k0, k1, sb.capacity);
  }
  __syncthreads();
  close_epoch(sb, sm.st);
  __syncthreads();
  if (threadIdx.x == 0) *sb.state = sm.st;
}

// ---- kernels generic over where keys come from --------------------------------------------------
//
// A KeySource gives the current scoring pass's key of source i again (the GPU engine recomputes it
// from the stored state; the standalone selector reads a key array), its fixed-point weight, and
// stores a class.

/// Step 2's fallback pass (only when the window missed): every key again, reclassified with the
/// plan [b, b], bin b's non-tie sources listed. One source per thread at a time (a slow path:
/// one inlined copy of the key's computation keeps registers low).
template <class KS, bool Unit>
__global__ void __launch_bounds__(kThreads) fallback_kernel(const SelectBuffers sb, const KS ks) {
  __shared__ BlockScanU32::TempStorage scan;
  __shared__ unsigned long long s_base;
  if (sb.state->phase != ws::kFallback) return;
  const ws::Plan plan = sb.state->plan;
  const ListView out = sb.list[ws::kList];
  for (uint64_t base = uint64_t(blockIdx.x) * kThreads; base < sb.n;
       base += uint64_t(gridDim.x) * kThreads) {
    const uint64_t i = base + threadIdx.x;
    const bool valid = i < sb.n;
    const uint64_t key = valid ? ks.key(i) : 0;
    const uint32_t cls = ws::classify(key, coarse_bin(key), plan);
    if (valid) ks.set_class(i, cls);
    const bool listed = valid && cls == ws::kCandidate;
    const uint64_t at =
        block_reserve(scan, ull(&sb.state->buffer_count[ws::kList]), listed ? 1u : 0u, &s_base);
    if (listed && at < sb.n) {  // as emit_tile: never past the list
      out.key[at] = key;
      out.id[at] = uint32_t(i);
      if constexpr (!Unit) out.w[at] = ks.weight(i);
    }
  }
}

/// Step 4's end inside the tie group (one block): the tile s.tie_tile rescanned in id order, one
/// round of kThreads consecutive ids at a time.
template <class KS>
__global__ void __launch_bounds__(kThreads) tie_tile_kernel(const SelectBuffers sb, const KS ks) {
  __shared__ ws::SelectState st;
  __shared__ BlockScanU64::TempStorage scan;
  __shared__ int found;
  __shared__ unsigned long long stop_id;
  if (sb.state->phase != ws::kTieTile) return;
  if (threadIdx.x == 0) {
    load_state(st, sb.state);
    found = 0;
  }
  __syncthreads();
  const uint64_t tie_key = st.plan.tie_key;
  uint64_t acc = st.s.tie_acc;
#pragma unroll 1
  for (int round = 0; round < kItems; ++round) {
    const uint64_t i = st.s.tie_tile * ws::kTile + uint64_t(round) * kThreads + threadIdx.x;
    const bool member = i < sb.n && ks.key(i) == tie_key;
    const unsigned long long w = member ? ks.weight(i) : 0ull;
    unsigned long long excl, total;
    BlockScanU64(scan).ExclusiveSum(w, excl, total);
    if (member && ws::is_boundary(acc + excl, w, sb.limit)) found = 1, stop_id = i;
    __syncthreads();
    if (found) break;
    acc += total;
  }
  if (threadIdx.x == 0) {
    if (found)
      ws::set_stop(st, tie_key, stop_id);
    else
      st.phase = ws::kFailed;
  }
  __syncthreads();
  close_epoch(sb, st);
  __syncthreads();
  if (threadIdx.x == 0) *sb.state = st;
}

}  // namespace crawleval::cuda::detail
