// Host side of the GPU's windowed radix select, its shared kernels (step, mark, state reset), and
// the standalone selector over a key array. The algorithm:
// include/crawleval/select/window_select.hpp; the device code: select_device.cuh.
#include <algorithm>

#include "launch.cuh"
#include "window_select.cuh"

namespace crawleval::cuda::detail {

namespace {

/// After the selection: every listed source's class becomes kAbove or kBelow (its key is in the
/// list), so the next epoch's apply needs no key of its own. Classes are bytes (stochastic
/// engine) or bits 29-30 of the state words (deterministic engine: `words`, read-modify-write; a
/// source is listed once, so no two threads touch one word).
__global__ void __launch_bounds__(kThreads)
    mark_kernel(const SelectBuffers sb, uint8_t* cls, uint32_t* words) {
  const uint64_t m = sb.state->mark_count;
  const Selection sel = sb.state->applied.sel;
  const ListView l = sb.list[ws::kList];
  for (uint64_t k = blockIdx.x * uint64_t(kThreads) + threadIdx.x; k < m;
       k += uint64_t(gridDim.x) * kThreads) {
    const uint32_t id = l.id[k];
    const uint32_t c = is_selected(l.key[k], id, sel) ? ws::kAbove : ws::kBelow;
    if (words)
      words[id] = (words[id] & ~kClassBits) | (c << kClassBitsShift);
    else
      cls[id] = uint8_t(c);
  }
}

__global__ void __launch_bounds__(32)
    init_state_kernel(const SelectBuffers sb, const ws::SelectState st0) {
  if (threadIdx.x != 0) return;
  ws::SelectState st = st0;
  st.diag = sb.state->diag;  // kept over replications
  *sb.state = st;
  sb.done[0] = sb.done[1] = sb.done[2] = 0;
}

/// Keys from an array (the standalone selector); classes into a byte array.
struct ArrayKeys {
  const uint64_t* keys;
  const unsigned long long* w;
  uint8_t* cls;
  __device__ __forceinline__ uint64_t key(uint64_t i) const { return keys[i]; }
  __device__ __forceinline__ uint64_t weight(uint64_t i) const { return w ? w[i] : 1ull; }
  __device__ __forceinline__ void set_class(uint64_t i, uint32_t c) const { cls[i] = uint8_t(c); }
};

/// Step 1 from a key array: the scoring pass without a model.
template <bool Unit>
__global__ void __launch_bounds__(kThreads)
    key_scoring_kernel(const SelectBuffers sb, const ArrayKeys ks) {
  __shared__ ScoreSmem<Unit> sm;
  begin_scoring<Unit>(sb, sm);
  const uint64_t t0 = first_tile(blockIdx.x, gridDim.x, sb.tiles);
  const uint64_t t1 = first_tile(blockIdx.x + 1, gridDim.x, sb.tiles);
  for (uint64_t tile = t0; tile < t1; ++tile) {
    const int slot = int((tile - t0) % kTieRing);
    uint64_t key[kItems], w[kItems], id[kItems];
    uint32_t cls[kItems], bin[kItems];
    bool valid[kItems];
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      id[j] = tile * ws::kTile + uint64_t(j) * kThreads + threadIdx.x;
      valid[j] = id[j] < sb.n;
      key[j] = valid[j] ? ks.key(id[j]) : 0;
      w[j] = valid[j] ? ks.weight(id[j]) : 0;
      bin[j] = coarse_bin(key[j]);
      cls[j] = ws::classify(key[j], bin[j], sm.plan);
      if (valid[j]) ks.set_class(id[j], cls[j]);
    }
    emit_tile<Unit>(sm, sb, slot, key, bin, cls, w, id, valid);
    tie_ring_step<Unit>(sm, sb, tile, slot);
  }
  end_scoring<Unit>(sm, sb, t0, t1);
  if (!arrive_last(&sb.done[0], &sm.last)) return;
  coarse_finish<Unit>(sb, sm);
  if (threadIdx.x == 0) sb.done[0] = 0;
}

const std::vector<uint64_t>& first_key_table() {
  static const std::vector<uint64_t> table = [] {
    std::vector<uint64_t> t(kBins + 1);
    for (int b = 0; b <= kBins; ++b) t[b] = first_key_of_bin(uint32_t(b));
    return t;
  }();
  return table;
}

}  // namespace

uint32_t resident_blocks(const void* kernel, uint64_t work) {
  int per_sm = 0;
  CE_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, 0));
  const uint64_t full = uint64_t(std::max(per_sm, 1)) * uint64_t(sm_count());
  return uint32_t(std::max<uint64_t>(1, std::min(full, work)));
}

std::size_t SelectStorage::device_bytes(std::size_t n, bool unit, uint32_t scoring_blocks,
                                        uint32_t step_blocks) {
  // The same capacities as prepare(): the list holds every source, the two compaction buffers
  // compaction_capacity(n) each, the gather buffer kResolveMax.
  const std::size_t item = sizeof(uint64_t) + sizeof(uint32_t) + (unit ? 0 : sizeof(uint64_t));
  const std::size_t cap = std::size_t(ws::compaction_capacity(n));
  const std::size_t tiles = (n + ws::kTile - 1) / ws::kTile;
  return sizeof(ws::SelectState) + 4 * std::size_t(kBins) * sizeof(unsigned long long) +
         item * (std::max<std::size_t>(n, 1) + 2 * cap + std::size_t(ws::kResolveMax)) +
         sizeof(unsigned long long) *
             (std::max<std::size_t>(tiles, 1) + std::max<uint32_t>(scoring_blocks, 1)) +
         2 * sizeof(ws::Rank) * std::max<uint32_t>(step_blocks, 1) + 3 * sizeof(unsigned int) +
         (std::size_t(kBins) + 1) * sizeof(uint64_t);
}

void SelectStorage::prepare(std::size_t n, bool unit, uint32_t scoring_blocks, uint32_t step_blocks,
                            uint64_t limit, cudaStream_t stream) {
  sb_ = SelectBuffers{};
  sb_.n = n;
  sb_.unit = unit;
  sb_.limit = limit;
  sb_.capacity = ws::compaction_capacity(n);
  sb_.tiles = (n + ws::kTile - 1) / ws::kTile;
  sb_.seg_blocks = scoring_blocks;
  state_.resize(1);
  CE_CUDA_TRY(cudaMemsetAsync(state_.data(), 0, sizeof(ws::SelectState), stream));
  sb_.state = state_.data();
  hist_.resize(4 * std::size_t(kBins));
  hist_.zero(stream);
  sb_.coarse_count = hist_.data();
  sb_.coarse_weight = hist_.data() + kBins;
  sb_.level_count = hist_.data() + 2 * kBins;
  sb_.level_weight = hist_.data() + 3 * kBins;
  const std::size_t cap[4] = {std::max<std::size_t>(n, 1), std::size_t(sb_.capacity),
                              std::size_t(sb_.capacity), std::size_t(ws::kResolveMax)};
  for (int b = 0; b < 4; ++b) {
    list_key_[b].resize(cap[b]);
    list_id_[b].resize(cap[b]);
    list_w_[b].resize(unit ? 0 : cap[b]);
    sb_.list[b] =
        ListView{list_key_[b].data(), list_id_[b].data(), unit ? nullptr : list_w_[b].data()};
  }
  tile_w_.resize(std::max<uint64_t>(sb_.tiles, 1));
  tile_w_.zero(stream);
  sb_.tile_w = tile_w_.data();
  seg_w_.resize(std::max<uint32_t>(scoring_blocks, 1));
  seg_w_.zero(stream);
  sb_.seg_w = seg_w_.data();
  part_.resize(2 * std::size_t(std::max<uint32_t>(step_blocks, 1)));
  sb_.part_min = part_.data();
  sb_.part_max = part_.data() + std::max<uint32_t>(step_blocks, 1);
  done_.resize(3);
  done_.zero(stream);
  sb_.done = done_.data();
  first_key_.upload(first_key_table(), stream);
  sb_.first_key = first_key_.data();
}

void SelectStorage::reset(const window::Plan& plan, cudaStream_t stream) {
  hist_.zero(stream);
  ws::SelectState st0;
  st0.plan = plan;
  init_state_kernel<<<1, 32, 0, stream>>>(sb_, st0);
  CE_CUDA_CHECK_LAUNCH();
}

window::SelectState SelectStorage::download_state(cudaStream_t stream) const {
  ws::SelectState st;
  CE_CUDA_TRY(cudaMemcpyAsync(&st, sb_.state, sizeof st, cudaMemcpyDeviceToHost, stream));
  CE_CUDA_TRY(cudaStreamSynchronize(stream));
  return st;
}

void launch_steps(const SelectBuffers& sb, uint32_t blocks, cudaStream_t stream) {
  for (int k = 0; k < kGridSteps; ++k) {
    const bool last = k == kGridSteps - 1;
    if (sb.unit)
      step_kernel<true><<<blocks, kThreads, 0, stream>>>(sb, last);
    else
      step_kernel<false><<<blocks, kThreads, 0, stream>>>(sb, last);
    CE_CUDA_CHECK_LAUNCH();
  }
}

void launch_mark(const SelectBuffers& sb, uint8_t* cls, uint32_t* words, uint32_t blocks,
                 cudaStream_t stream) {
  mark_kernel<<<blocks, kThreads, 0, stream>>>(sb, cls, words);
  CE_CUDA_CHECK_LAUNCH();
}

void DeviceWindowSelector::prepare(std::size_t n, bool unit, uint64_t limit, cudaStream_t stream) {
  n_ = n;
  unit_ = unit;
  const uint64_t tiles = (n + ws::kTile - 1) / ws::kTile;
  scoring_blocks_ = unit ? resident_blocks((const void*)key_scoring_kernel<true>, tiles)
                         : resident_blocks((const void*)key_scoring_kernel<false>, tiles);
  step_blocks_ =
      resident_blocks(unit ? (const void*)step_kernel<true> : (const void*)step_kernel<false>,
                      (n + kThreads - 1) / kThreads);
  storage_.prepare(n, unit, scoring_blocks_, step_blocks_, limit, stream);
  cls_.resize(std::max<std::size_t>(n, 1));
  storage_.reset(ws::Plan{}, stream);
}

int DeviceWindowSelector::enqueue(const uint64_t* keys, const unsigned long long* weight,
                                  cudaStream_t stream) {
  if (n_ == 0) return 0;
  const SelectBuffers& sb = storage_.view();
  const ArrayKeys ks{keys, weight, cls_.data()};
  if (unit_) {
    key_scoring_kernel<true><<<scoring_blocks_, kThreads, 0, stream>>>(sb, ks);
    CE_CUDA_CHECK_LAUNCH();
    fallback_kernel<ArrayKeys, true><<<scoring_blocks_, kThreads, 0, stream>>>(sb, ks);
  } else {
    key_scoring_kernel<false><<<scoring_blocks_, kThreads, 0, stream>>>(sb, ks);
    CE_CUDA_CHECK_LAUNCH();
    fallback_kernel<ArrayKeys, false><<<scoring_blocks_, kThreads, 0, stream>>>(sb, ks);
  }
  CE_CUDA_CHECK_LAUNCH();
  launch_steps(sb, step_blocks_, stream);
  tie_tile_kernel<ArrayKeys><<<1, kThreads, 0, stream>>>(sb, ks);
  CE_CUDA_CHECK_LAUNCH();
  return 3 + kGridSteps;
}

std::vector<uint8_t> DeviceWindowSelector::classes(cudaStream_t stream) const {
  std::vector<uint8_t> c(n_);
  cls_.download(c.data(), n_, stream);
  CE_CUDA_TRY(cudaStreamSynchronize(stream));
  return c;
}

}  // namespace crawleval::cuda::detail
