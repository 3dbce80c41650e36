// The deterministic Whittle pass with AVX-512 (det_whittle_avx512.hpp). Each line below names the
// scalar expression it computes (source_step.hpp's det_word, selection.hpp's score_key and
// coarse_bin_of_score, window_select.hpp's classify).
#include "det_whittle_avx512.hpp"

#include <cstdlib>

#include "source_step.hpp"

#include "avx512_classify.hpp"

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
  const __m512d one_d = _mm512_set1_pd(1.0);
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
      __mmask8 crawled = avx512::crawled8(p.rule, cls, i);
      // Listed last epoch: the key of the state it was scored in, x + eta ((1 - alpha) x - u).
      const __mmask8 listed =
          _mm256_cmpeq_epi32_mask(cls, _mm256_set1_epi32(int(window::kCandidate))) & ~crawled;
      if (listed) {
        const __m512d eta0 = _mm512_cvtepu32_pd(_mm256_and_si256(w, age_mask));
        const __m512d s0 = _mm512_add_pd(
            x, _mm512_mul_pd(eta0, _mm512_sub_pd(_mm512_mul_pd(_mm512_sub_pd(one_d, alpha), x), u)));
        crawled |= listed & avx512::selected8(p.rule, avx512::key8(s0), i);
      }
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
    const avx512::Classified k = avx512::classify8(score, p.plan);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p.word + i),
                        _mm256_or_si256(wn, _mm256_slli_epi32(k.cls, int(kClassShift))));
    _mm256_store_si256(reinterpret_cast<__m256i*>(bins), k.bin);
    for (int l = 0; l < 8; ++l) count[bins[l]] += 1;
    const __mmask8 noted = k.note;
    if (noted) {  // listed candidates and tie members, rare: one at a time
      _mm512_store_si512(keys, k.key);
      for (unsigned m = noted; m; m &= m - 1) {
        const int l = __builtin_ctz(m);
        sel.note(ps, keys[l], (k.tie >> l) & 1 ? window::kTie : window::kCandidate,
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
