// The deterministic Whittle pass with AVX-512 (det_whittle_avx512.hpp). Each line below names the
// scalar expression it computes (source_step.hpp's det_word, selection.hpp's score_key and
// coarse_bin_of_score, window_select.hpp's classify).
#include "det_whittle_avx512.hpp"

#include <cstdlib>

#include "source_step.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12's AVX-512 headers start some conversions from _mm512_undefined_*, which
// -Wmaybe-uninitialized reports once inlined (GCC bug 105593); the values are all written.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#define CE_AVX512 __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw")))
#define CE_HAVE_AVX512_PASS 1
#else
#define CE_HAVE_AVX512_PASS 0
#endif

namespace crawleval::detail {

bool avx512_pass_available() {
#if CE_HAVE_AVX512_PASS
  static const bool cpu = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw");
  const char* off = std::getenv("CRAWLEVAL_SCALAR");
  return cpu && !(off && *off && *off != '0');
#else
  return false;
#endif
}

#if CE_HAVE_AVX512_PASS

CE_AVX512 std::size_t det_whittle_avx512(const DetPass& p, std::size_t lo, std::size_t hi,
                                         WindowSelector& sel, WindowSelector::Pass& ps,
                                         double* reward, double* spent) {
  using namespace det_word;
  const __m256i general = _mm256_set1_epi32(int(kGeneral));
  const __m256i state_mask = _mm256_set1_epi32(int(kStateMask));
  const __m256i age_mask = _mm256_set1_epi32(int(kGeneral - 1));
  const __m256i eta_max = _mm256_set1_epi32(int(kEtaMax));
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i cls_above = _mm256_set1_epi32(int(window::kAbove));
  const __m256i cls_tie = _mm256_set1_epi32(int(window::kTie));
  const __m256i cls_candidate = _mm256_set1_epi32(int(window::kCandidate));
  // ids are at most window::kMaxId, so i < stop_id for every id when stop_id >= 2^32 - 1.
  const __m256i stop_id = _mm256_set1_epi32(
      int(uint32_t(p.rule.stop_id >= 0xFFFFFFFFull ? 0xFFFFFFFFull : p.rule.stop_id)));
  const __mmask8 all = p.rule.all ? 0xFF : 0, tie_all = p.rule.tie_all ? 0xFF : 0,
                 tie_some = p.rule.tie_some ? 0xFF : 0;
  const __m256i plan_lo = _mm256_set1_epi32(int(p.plan.lo));
  const __m256i plan_hi = _mm256_set1_epi32(int(p.plan.hi));
  const __m512i tie_key = _mm512_set1_epi64((long long)p.plan.tie_key);
  const bool has_tie = p.plan.has_tie != 0;
  const __m512d one_d = _mm512_set1_pd(1.0);
  const __m512d zero_d = _mm512_setzero_pd();
  const __m256 zero_f = _mm256_setzero_ps();
  const __m512i sign64 = _mm512_set1_epi64((long long)0x8000000000000000ull);
  const __m256i sign32 = _mm256_set1_epi32(int(0x80000000u));
  uint64_t* count = ps.count.data();
  alignas(64) double x_old[8];
  alignas(64) uint64_t keys[8];
  alignas(32) uint32_t bins[8];
  double r = *reward, s = *spent;

  std::size_t i = lo;
  for (; i + 8 <= hi; i += 8) {
    const __m256i stored = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.word + i));
    const __m256i w = _mm256_and_si256(stored, state_mask);
    if (_mm256_test_epi32_mask(w, general)) break;  // off the grid: the scalar pass scores it
    const __m512d x = _mm512_loadu_pd(p.x + i);
    const __m512d alpha = _mm512_loadu_pd(p.alpha + i);
    const __m512d u = _mm512_loadu_pd(p.u + i);
    __m512d xn = x;
    __m256i wn = w;
    if (p.apply) {
      // rule.crawled(stored >> kClassShift, i)
      const __m256i cls = _mm256_srli_epi32(stored, int(kClassShift));
      const __m256i id = _mm256_add_epi32(_mm256_set1_epi32(int(uint32_t(i))), lane);
      const __mmask8 crawled = all | _mm256_cmpeq_epi32_mask(cls, cls_above) |
                               (_mm256_cmpeq_epi32_mask(cls, cls_tie) &
                                (tie_all | (tie_some & _mm256_cmplt_epu32_mask(id, stop_id))));
      // crawled ? u : alpha * x + u
      xn = _mm512_mask_blend_pd(crawled, _mm512_add_pd(_mm512_mul_pd(alpha, x), u), u);
      // next(w, crawled): 1 after a crawl, else w + (w < kEtaMax) (w is on the grid)
      wn = _mm256_mask_add_epi32(w, _mm256_cmplt_epu32_mask(w, eta_max), w, one);
      wn = _mm256_mask_mov_epi32(wn, crawled, one);
      _mm512_storeu_pd(p.x + i, xn);
      if (crawled) {  // rewards in source order, as the scalar pass adds them
        _mm512_store_pd(x_old, x);
        for (unsigned m = crawled; m; m &= m - 1) r += x_old[__builtin_ctz(m)];
        s += double(__builtin_popcount(crawled));
      }
    }
    if (!p.score) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(p.word + i), wn);
      continue;
    }
    // grid_index(xn, wn, alpha, u, 1): xn + eta ((1 - alpha) xn - u)
    const __m512d eta = _mm512_cvtepu32_pd(_mm256_and_si256(wn, age_mask));
    const __m512d score = _mm512_add_pd(
        xn, _mm512_mul_pd(eta, _mm512_sub_pd(_mm512_mul_pd(_mm512_sub_pd(one_d, alpha), xn), u)));
    const __mmask8 number = _mm512_cmp_pd_mask(score, score, _CMP_ORD_Q);  // NaN: key 0, bin 0
    // score_key: the bits of score + 0.0, flipped by sign
    const __m512i b64 = _mm512_castpd_si512(_mm512_add_pd(score, zero_d));
    const __m512i key =
        _mm512_maskz_xor_epi64(number, b64, _mm512_or_si512(_mm512_srai_epi64(b64, 63), sign64));
    // coarse_bin_of_score: the top 11 bits of float(score) + 0.0f, flipped by sign
    const __m256i b32 = _mm256_castps_si256(_mm256_add_ps(_mm512_cvtpd_ps(score), zero_f));
    const __m256i bin = _mm256_maskz_srli_epi32(
        number, _mm256_xor_si256(b32, _mm256_or_si256(_mm256_srai_epi32(b32, 31), sign32)), 21);
    // classify: kTie on the tie key, else kAbove above the window, kBelow below it, else kCandidate
    const __mmask8 tie = has_tie ? _mm512_cmpeq_epi64_mask(key, tie_key) : 0;
    __m256i k = cls_candidate;
    k = _mm256_mask_mov_epi32(k, _mm256_cmplt_epu32_mask(bin, plan_lo), _mm256_setzero_si256());
    k = _mm256_mask_mov_epi32(k, _mm256_cmpgt_epu32_mask(bin, plan_hi), cls_above);
    k = _mm256_mask_mov_epi32(k, tie, cls_tie);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p.word + i),
                        _mm256_or_si256(wn, _mm256_slli_epi32(k, int(kClassShift))));
    _mm256_store_si256(reinterpret_cast<__m256i*>(bins), bin);
    for (int l = 0; l < 8; ++l) count[bins[l]] += 1;
    const __mmask8 noted = _mm256_cmpge_epu32_mask(k, cls_candidate);
    if (noted) {  // listed candidates and tie members, rare: one at a time
      _mm512_store_si512(keys, key);
      for (unsigned m = noted; m; m &= m - 1) {
        const int l = __builtin_ctz(m);
        sel.note(ps, keys[l], (tie >> l) & 1 ? window::kTie : window::kCandidate,
                 uint32_t(i + std::size_t(l)), 1);
      }
    }
  }
  *reward = r;
  *spent = s;
  return i;
}

#else

std::size_t det_whittle_avx512(const DetPass&, std::size_t lo, std::size_t, WindowSelector&,
                               WindowSelector::Pass&, double*, double*) {
  return lo;
}

#endif

}  // namespace crawleval::detail
