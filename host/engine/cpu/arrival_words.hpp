// The first Philox word of the arrival draws (rng.hpp, Stream::arrivals, block 0) of consecutive
// sources, eight at a time with AVX-512 where the CPU has it: the stochastic model's CPU engines
// decide from it alone that most source-epochs have no arrival (sample_arrivals_fast), so this
// one Philox4x32-10 block per source is most of the model's cost. The words are Random123's, bit
// for bit (tests/test_cpu_backend.cpp compares them with philox_words).
#pragma once

#include <cstddef>
#include <cstdint>

#include "crawleval/model/rng.hpp"

namespace crawleval::detail {

/// out[k] = philox_words(seed, first + k, epoch, replication, Stream::arrivals, 0).w[0] for
/// k < count (count <= 8). vector: use AVX-512 (only where avx512_pass_available()).
void first_arrival_words(uint64_t seed, uint64_t first, std::size_t count, uint32_t epoch,
                         uint32_t replication, bool vector, uint32_t* out);

/// Most sources first_arrival_blocks takes at once.
inline constexpr std::size_t kArrivalBlock = 256;

/// The whole block 0 of the arrival stream of sources first .. first + count - 1 (count <=
/// kArrivalBlock): w[m][k] = philox_words(seed, first + k, epoch, replication, Stream::arrivals,
/// 0).w[m]. vector: with AVX-512 (only where avx512_pass_available()), four groups of eight in
/// flight at once (one group's ten dependent rounds alone leave the multiplier idle most of the
/// time), a tail of fewer than eight one at a time. The three other words start the stream of a
/// source with an arrival (DrawStream's primed form).
void first_arrival_blocks(uint64_t seed, uint64_t first, std::size_t count, uint32_t epoch,
                          uint32_t replication, bool vector, uint32_t (*w)[kArrivalBlock]);

/// The same for any stream: w[m][k] = philox_words(seed, first + k, epoch, replication, stream,
/// 0).w[m] (the freshness model's change stream starts the same way: an epoch without change
/// shows in its first word).
void first_stream_blocks(Stream stream, uint64_t seed, uint64_t first, std::size_t count,
                         uint32_t epoch, uint32_t replication, bool vector,
                         uint32_t (*w)[kArrivalBlock]);

}  // namespace crawleval::detail
