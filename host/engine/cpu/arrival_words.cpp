// first_stream_blocks, first_arrival_blocks and first_arrival_words (arrival_words.hpp):
// Philox4x32-10 as Random123 defines it, with eight counters in the 64-bit lanes of AVX-512
// registers (each lane's low 32 bits hold the word; _mm512_mul_epu32 reads only those, so the high
// halves need no clearing until the end).
#include "engine/cpu/arrival_words.hpp"

#include <algorithm>

#include "crawleval/model/rng.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12's AVX-512 headers start some conversions from _mm512_undefined_*, which -Wuninitialized
// reports once inlined (GCC bug 105593); the values are all written.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#define CE_HAVE_AVX512_PHILOX 1
#else
#define CE_HAVE_AVX512_PHILOX 0
#endif

namespace crawleval::detail {

namespace {

#if CE_HAVE_AVX512_PHILOX
/// Groups g .. g + G - 1 (eight ids each from first + 8 g, one key): Philox4x32-10 with eight
/// counters in the 64-bit lanes (each lane's low 32 bits hold the word; _mm512_mul_epu32 reads only
/// those, so the high halves need no clearing until the end), the ten rounds of each group
/// interleaved, all four words of each lane out.
template <int G>
__attribute__((target("avx512f"))) void philox_groups(DrawKey key, uint32_t first, std::size_t g,
                                                      uint32_t epoch, uint32_t replication,
                                                      Stream stream, uint32_t (*w)[kArrivalBlock]) {
  const __m512i m0 = _mm512_set1_epi64(0xD2511F53);  // PHILOX_M4x32_0
  const __m512i m1 = _mm512_set1_epi64(0xCD9E8D57);  // PHILOX_M4x32_1
  __m512i c0[G], c1[G], c2[G], c3[G];
  for (int q = 0; q < G; ++q) {
    c0[q] = _mm512_add_epi64(_mm512_set1_epi64(first + uint32_t(8 * (g + std::size_t(q)))),
                             _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7));
    c1[q] = _mm512_set1_epi64(epoch);
    c2[q] = _mm512_set1_epi64(replication);
    c3[q] = _mm512_set1_epi64(uint32_t(stream) << 24);
  }
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; ++round) {
    if (round > 0) k0 += 0x9E3779B9u, k1 += 0xBB67AE85u;  // PHILOX_W32_0, PHILOX_W32_1
    const __m512i vk0 = _mm512_set1_epi64(k0), vk1 = _mm512_set1_epi64(k1);
    for (int q = 0; q < G; ++q) {
      // hi0:lo0 = M0 * c0, hi1:lo1 = M1 * c2; {hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0} (0x96:
      // three-way exclusive or)
      const __m512i p0 = _mm512_mul_epu32(m0, c0[q]);
      const __m512i p1 = _mm512_mul_epu32(m1, c2[q]);
      const __m512i n0 = _mm512_ternarylogic_epi64(_mm512_srli_epi64(p1, 32), c1[q], vk0, 0x96);
      const __m512i n2 = _mm512_ternarylogic_epi64(_mm512_srli_epi64(p0, 32), c3[q], vk1, 0x96);
      c1[q] = p1;
      c3[q] = p0;
      c0[q] = n0;
      c2[q] = n2;
    }
  }
  for (int q = 0; q < G; ++q) {
    const std::size_t at = 8 * (g + std::size_t(q));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(w[0] + at), _mm512_cvtepi64_epi32(c0[q]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(w[1] + at), _mm512_cvtepi64_epi32(c1[q]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(w[2] + at), _mm512_cvtepi64_epi32(c2[q]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(w[3] + at), _mm512_cvtepi64_epi32(c3[q]));
  }
}
#endif

}  // namespace

void first_stream_blocks(Stream stream, uint64_t seed, uint64_t first, std::size_t count,
                         uint32_t epoch, uint32_t replication, bool vector,
                         uint32_t (*w)[kArrivalBlock]) {
  std::size_t k = 0;
#if CE_HAVE_AVX512_PHILOX
  // One key for the whole block unless it straddles a multiple of 2^32 (then: one at a time).
  if (vector && count > 0 && (first >> 32) == ((first + count - 1) >> 32)) {
    const DrawKey key = draw_key(seed, first);
    const std::size_t groups = count / 8;
    std::size_t g = 0;
    for (; g + 4 <= groups; g += 4)
      philox_groups<4>(key, uint32_t(first), g, epoch, replication, stream, w);
    for (; g < groups; ++g)
      philox_groups<1>(key, uint32_t(first), g, epoch, replication, stream, w);
    k = 8 * groups;
  }
#else
  (void)vector;
#endif
  for (; k < count; ++k) {
    const Words4 b = philox_words(seed, first + k, epoch, replication, stream, 0);
    for (int m = 0; m < 4; ++m) w[m][k] = b.w[m];
  }
}

void first_arrival_blocks(uint64_t seed, uint64_t first, std::size_t count, uint32_t epoch,
                          uint32_t replication, bool vector, uint32_t (*w)[kArrivalBlock]) {
  first_stream_blocks(Stream::arrivals, seed, first, count, epoch, replication, vector, w);
}

void first_arrival_words(uint64_t seed, uint64_t first, std::size_t count, uint32_t epoch,
                         uint32_t replication, bool vector, uint32_t* out) {
  uint32_t w[4][kArrivalBlock];  // the block's words (only the first count written)
  first_arrival_blocks(seed, first, count, epoch, replication, vector, w);
  std::copy(w[0], w[0] + count, out);
}

}  // namespace crawleval::detail
