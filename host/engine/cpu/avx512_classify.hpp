// The selection's per-source bookkeeping for eight scores at once with AVX-512, shared by the
// CPU engines' vector passes (det_whittle_avx512.cpp, whittle_avx512.cpp): selection.hpp's
// score_key and coarse_bin_of_score and window_select.hpp's classify, bit for bit. Functions carry
// the AVX-512 target attribute: include this only in files whose callers run where
// avx512_pass_available().
#pragma once

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12's AVX-512 headers start some conversions from _mm512_undefined_*, which
// -W(maybe-)uninitialized reports once inlined (GCC bug 105593); the values are all written.
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include "crawleval/select/window_select.hpp"
#include "engine/cpu/det_whittle_avx512.hpp"

#define CE_AVX512 __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw")))
#define CE_HAVE_AVX512_PASS 1

namespace crawleval::detail::avx512 {

/// rule.crawled(cls, i) for the eight sources first .. first + 7 (ids below 2^32 - 1).
CE_AVX512 inline __mmask8 crawled8(const ApplyRule& rule, __m256i cls, std::size_t first) {
  if (rule.all) return 0xFF;
  const __m256i id = _mm256_add_epi32(_mm256_set1_epi32(int(uint32_t(first))),
                                      _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  // ids are at most window::kMaxId, so i < stop_id for every id when stop_id >= 2^32 - 1.
  const __m256i stop_id = _mm256_set1_epi32(
      int(uint32_t(rule.stop_id >= 0xFFFFFFFFull ? 0xFFFFFFFFull : rule.stop_id)));
  const __mmask8 tie_all = rule.tie_all ? 0xFF : 0, tie_some = rule.tie_some ? 0xFF : 0;
  return _mm256_cmpeq_epi32_mask(cls, _mm256_set1_epi32(int(window::kAbove))) |
         (_mm256_cmpeq_epi32_mask(cls, _mm256_set1_epi32(int(window::kTie))) &
          (tie_all | (tie_some & _mm256_cmplt_epu32_mask(id, stop_id))));
}

/// score_key of eight scores: the bits of score + 0.0, flipped by sign; NaN gives 0.
CE_AVX512 inline __m512i key8(__m512d score) {
  const __m512i sign64 = _mm512_set1_epi64((long long)0x8000000000000000ull);
  const __mmask8 number = _mm512_cmp_pd_mask(score, score, _CMP_ORD_Q);
  const __m512i b64 = _mm512_castpd_si512(_mm512_add_pd(score, _mm512_setzero_pd()));
  return _mm512_maskz_xor_epi64(number, b64, _mm512_or_si512(_mm512_srai_epi64(b64, 63), sign64));
}

struct Classified {
  __m512i key;    ///< score_key(score)
  __m256i bin;    ///< coarse_bin_of_score(score)
  __m256i cls;    ///< classify(key, bin, plan)
  __mmask8 tie;   ///< cls == kTie
  __mmask8 note;  ///< cls >= kCandidate: listed or a tie member (the scalar WindowSelector::note)
};

CE_AVX512 inline Classified classify8(__m512d score, const window::Plan& plan) {
  const __m256i sign32 = _mm256_set1_epi32(int(0x80000000u));
  const __m256i cls_candidate = _mm256_set1_epi32(int(window::kCandidate));
  Classified r;
  const __mmask8 number = _mm512_cmp_pd_mask(score, score, _CMP_ORD_Q);  // NaN: key 0, bin 0
  r.key = key8(score);
  // coarse_bin_of_score: the top 11 bits of float(score) + 0.0f, flipped by sign
  const __m256i b32 =
      _mm256_castps_si256(_mm256_add_ps(_mm512_cvtpd_ps(score), _mm256_setzero_ps()));
  r.bin = _mm256_maskz_srli_epi32(
      number, _mm256_xor_si256(b32, _mm256_or_si256(_mm256_srai_epi32(b32, 31), sign32)), 21);
  // classify: kTie on the tie key, else kAbove above the window, kBelow below it, else kCandidate
  r.tie = plan.has_tie ? _mm512_cmpeq_epi64_mask(r.key, _mm512_set1_epi64((long long)plan.tie_key))
                       : __mmask8(0);
  __m256i k = cls_candidate;
  k = _mm256_mask_mov_epi32(k, _mm256_cmplt_epu32_mask(r.bin, _mm256_set1_epi32(int(plan.lo))),
                            _mm256_setzero_si256());
  k = _mm256_mask_mov_epi32(k, _mm256_cmpgt_epu32_mask(r.bin, _mm256_set1_epi32(int(plan.hi))),
                            _mm256_set1_epi32(int(window::kAbove)));
  r.cls = _mm256_mask_mov_epi32(k, r.tie, _mm256_set1_epi32(int(window::kTie)));
  r.note = _mm256_cmpge_epu32_mask(r.cls, cls_candidate);
  return r;
}

}  // namespace crawleval::detail::avx512

#else
#define CE_HAVE_AVX512_PASS 0
#endif
