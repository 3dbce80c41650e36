// The wide engine's deterministic Whittle pass (unit costs) with AVX-512, eight sources per step:
// the same arithmetic as the scalar pass in cpu_backend.cpp, operation for operation (IEEE mul,
// add, sub, the same conversions; no fused multiply-add), so the states, scores, keys and bins are
// bit for bit the scalar pass's; rewards are added one crawled source at a time in source order,
// as in the scalar pass. The selection's records are made per block of 64 sources: the sources
// under the lump floor (most of them) counted in one lump, the two bins at the floor by
// comparisons; only the increments of the bins above them and the listed or tie sources are
// scalar. Compiled for AVX-512 by function attribute and run only where the CPU has it
// (avx512_pass_available), so the binary runs on any x86-64 machine.
//
// Per source it reads the 32-bit word (age on the grid, flag, class), x, alpha and u, and writes x
// and the word: the 40 bytes of docs/cpu-design.md. A source the previous epoch listed (kCandidate)
// is resolved here, by the key of the state it was scored in (the x and age it reads), so the
// selection leaves no serial scatter of classes over the listed sources behind it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "select/window_selector.hpp"

namespace crawleval::detail {

/// How the apply step reads a class: kAbove crawled, kBelow not, tie members all, none, or those
/// below the stop id (window_select.hpp's crawled_by_class with the comparisons done once).
/// A kCandidate source is crawled by its own key against the stop (selected()), which the
/// deterministic Whittle engine recomputes from the state it scored (the stochastic engines
/// resolve their candidates into kAbove or kBelow after the selection instead).
struct ApplyRule {
  bool all = false, tie_all = false, tie_some = false;
  uint64_t stop_id = 0;
  uint64_t stop_key = 0;
  inline bool crawled(uint32_t cls, uint64_t i) const {
    return all | (cls == window::kAbove) |
           ((cls == window::kTie) & (tie_all | (tie_some & (i < stop_id))));
  }
  /// selection.hpp's is_selected(key, i, sel) for a candidate's own key (all is tested apart).
  inline bool selected(uint64_t key, uint64_t i) const {
    return (key > stop_key) | ((key == stop_key) & (i < stop_id));
  }
};

/// One deterministic Whittle pass over part of a chunk. Plain (loc null): slot i is source i.
/// Over the live slots of a chunk split by DormantSet (dormant.hpp): slot i of x, word, alpha and
/// u (the live sources' copies, in slot order) is source id0 + loc[i].
struct DetPass {
  double* x;
  uint32_t* word;  // source_step.hpp's det_word with the class in bits 30-31
  const double* alpha;
  const double* u;
  ApplyRule rule;
  window::Plan plan;
  bool apply, score;  // apply the previous selection; score and classify the new state
  const uint16_t* loc = nullptr;
  uint32_t id0 = 0;
};

/// Whether this CPU runs the AVX-512 pass, and the environment does not turn it off
/// (CRAWLEVAL_SCALAR=1: the scalar pass everywhere, to compare the two).
bool avx512_pass_available();

/// Runs the pass over sources [lo, hi) eight at a time, adding rewards and crawls (in source
/// order) to *reward and *spent and recording scores in the thread's pass of `sel`. Stops before
/// the first group of eight that holds a source off the grid (det_word::kGeneral, scored by the
/// general index) or when fewer than eight remain; returns where it stopped, for the scalar pass
/// to go on from there.
std::size_t det_whittle_avx512(const DetPass& p, std::size_t lo, std::size_t hi,
                               WindowSelector& sel, WindowSelector::Pass& ps, double* reward,
                               double* spent);

}  // namespace crawleval::detail
