// The windowed radix select (include/crawleval/window_select.hpp) run serially on the host: the
// GPU's algorithm step by step, on the same state, with the same decision functions. The GPU runs
// each pass over sources in parallel; here each is a loop. Tests run it against the sort-based
// rule on adversarial inputs, which is how the GPU's selection logic is checked without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "crawleval/window_select.hpp"

namespace crawleval::detail {

class WindowSelector {
 public:
  /// Buffers for up to n sources.
  void prepare(std::size_t n);
  window::SelectState& state() { return st_; }
  const window::SelectState& state() const { return st_; }

  /// One epoch over `keys` (the scoring pass's keys; fixed-point `weight`, nullptr = unit costs)
  /// with the plan in state(): classifies every source, selects, finalises. Returns the
  /// selection (also in state().applied). Throws Error on an internal failure.
  Selection select(const uint64_t* keys, const uint64_t* weight, std::size_t n, uint64_t limit);

  /// Each source's class as the next epoch's apply reads it (kCandidate keeps its own key).
  const std::vector<uint32_t>& classes() const { return cls_; }
  /// Selection steps (levels plus the resolution) the last epoch took.
  int steps() const { return steps_; }

 private:
  struct Item {
    uint64_t key;
    uint32_t id;
    uint64_t w;
  };
  void list_source(uint64_t key, uint32_t id, uint64_t w);
  void find_tie_tile(uint64_t acc, uint64_t limit);
  void rescan_tie_tile(const uint64_t* keys, const uint64_t* weight, std::size_t n, uint64_t limit);
  window::SelectState st_;
  std::vector<uint32_t> cls_;
  std::vector<Item> buf_[4];
  std::vector<uint64_t> count_, weight_, level_count_, level_weight_, tile_w_;
  uint64_t capacity_ = 0;
  int steps_ = 0;
};

}  // namespace crawleval::detail
