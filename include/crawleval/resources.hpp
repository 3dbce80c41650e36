// The host's memory, checked before large allocations so that a request that cannot fit is
// refused with a message (exit 2) instead of being killed or dying of std::bad_alloc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace crawleval {

/// Bytes the process can still allocate: MemAvailable, or less under a cgroup (container)
/// memory limit.
std::size_t available_memory();

/// Throws InputError "<what> needs X GiB of memory; Y GiB are available" when `bytes` exceed the
/// available memory.
void require_memory(double bytes, const std::string& what);

/// Estimated host bytes per source of `crawleval run` (population, derived columns, the CPU
/// engine's state and selection buffers, the bound's periods), of `crawleval bound`, and of a
/// population alone.
inline constexpr double kRunBytesPerSource = 230;
inline constexpr double kBoundBytesPerSource = 170;
inline constexpr double kPopulationBytesPerSource = 56;
/// Host bytes per source of `crawleval fresh run|bound` beyond its CSV text (measured: a peak of
/// 243 MB for `fresh run` on 1e6 sources, 84 MB of them the text; `fresh bound` 168 MB).
inline constexpr double kFreshBytesPerSource = 200;

}  // namespace crawleval
