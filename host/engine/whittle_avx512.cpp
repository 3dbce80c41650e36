// The stochastic model's Whittle index and pass with AVX-512 (whittle_avx512.hpp). Each step names
// the scalar expression it computes (model.hpp, rng.hpp, cpu_backend.cpp's scalar pass);
// comparisons use the predicates of the scalar code (ordered: a NaN compares false), so every lane
// takes the scalar branch.
#include "whittle_avx512.hpp"

#include <algorithm>

#include "arrival_words.hpp"
#include "avx512_classify.hpp"

#if CE_HAVE_AVX512_PASS
// sleef.h declares its AVX-512 functions only when the whole file is compiled for AVX-512 (this
// file is not: the functions below carry the target attribute, so the binary runs anywhere).
// Declared with the target attribute: a __m512d argument is passed in a zmm register only where
// AVX-512 is enabled (clang refuses the call otherwise).
extern "C" {
CE_AVX512 __m512d Sleef_cinz_log1pd8_u10avx512fnofma(__m512d);
CE_AVX512 __m512d Sleef_cinz_expm1d8_u10avx512fnofma(__m512d);
}
#endif

namespace crawleval::detail {

#if CE_HAVE_AVX512_PASS

namespace {

/// whittle_line(x, k, om, p): (u* om - k (1 - alpha) (u* - x)) / C.
CE_AVX512 inline __m512d line(__m512d x, __m512d k, __m512d om, __m512d u_star, __m512d om_alpha,
                              __m512d inv_cost) {
  return _mm512_mul_pd(
      _mm512_sub_pd(_mm512_mul_pd(u_star, om),
                    _mm512_mul_pd(_mm512_mul_pd(k, om_alpha), _mm512_sub_pd(u_star, x))),
      inv_cost);
}

/// -v: the sign bit flipped, as the scalar negation.
CE_AVX512 inline __m512d neg(__m512d v) {
  return _mm512_castsi512_pd(_mm512_xor_si512(_mm512_castpd_si512(v),
                                              _mm512_set1_epi64((long long)0x8000000000000000ull)));
}

}  // namespace

// Phases over the whole block, so that the eight-wide log1p and expm1 calls of different groups
// are independent and overlap (one group through the whole chain at a time waits on each call's
// latency: measured 1.5x slower). Scratch: t (the log1p argument, then r's ceiling k), e (the
// expm1 argument, then 1 - alpha^k) and the lanes on the general branch.
CE_AVX512 void whittle_index_block(const double* xs, const ParamColumns& c, std::size_t first,
                                   std::size_t count, double* out) {
  constexpr std::size_t kMax = kIndexBlock;
  alignas(64) double t[kMax], e[kMax];
  __mmask8 general[kMax / 8], below[kMax / 8], positive[kMax / 8];
  const std::size_t groups = count / 8;
  const double* u_star_c = c.u_star.data() + first;
  const double* mu_t_c = c.mu_t.data() + first;
  const __m512d zero = _mm512_setzero_pd(), one = _mm512_set1_pd(1.0);
  // at_or_above_u_star(x) || !(x < x_cap) (x_cap = u* in the base model): !(x < u*) || !(x/u* < 1).
  // The log1p argument -x / u* is -(x / u*) bit for bit (division rounds symmetrically); lanes on
  // the other branches take log1p(0) and expm1(0).
  for (std::size_t g = 0; g < groups; ++g) {
    const __m512d x = _mm512_loadu_pd(xs + 8 * g);
    const __m512d u_star = _mm512_loadu_pd(u_star_c + 8 * g);
    const __m512d q = _mm512_div_pd(x, u_star);
    below[g] = _mm512_cmp_pd_mask(x, u_star, _CMP_LT_OQ) & _mm512_cmp_pd_mask(q, one, _CMP_LT_OQ);
    positive[g] = _mm512_cmp_pd_mask(x, zero, _CMP_GT_OQ);  // x > 0
    general[g] = below[g] & positive[g];
    _mm512_store_pd(t + 8 * g, _mm512_maskz_mov_pd(general[g], neg(q)));
  }
  for (std::size_t g = 0; g < groups; ++g)  // log1p(-x / u*)
    _mm512_store_pd(t + 8 * g, Sleef_cinz_log1pd8_u10avx512fnofma(_mm512_load_pd(t + 8 * g)));
  for (std::size_t g = 0; g < groups; ++g) {  // k = ceil(-log1p(..) / mu T); -mu T * k
    const __m512d mu_t = _mm512_loadu_pd(mu_t_c + 8 * g);
    const __m512d r = _mm512_div_pd(neg(_mm512_load_pd(t + 8 * g)), mu_t);
    const __m512d k = _mm512_roundscale_pd(r, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC);
    _mm512_store_pd(t + 8 * g, k);
    _mm512_store_pd(e + 8 * g, _mm512_maskz_mov_pd(general[g], _mm512_mul_pd(neg(mu_t), k)));
  }
  for (std::size_t g = 0; g < groups; ++g)  // om_k = -expm1(-mu T * k)
    _mm512_store_pd(e + 8 * g, neg(Sleef_cinz_expm1d8_u10avx512fnofma(_mm512_load_pd(e + 8 * g))));
  for (std::size_t g = 0; g < groups; ++g) {
    const std::size_t i = first + 8 * g;
    const __m512d x = _mm512_loadu_pd(xs + 8 * g);
    const __m512d u_star = _mm512_loadu_pd(u_star_c + 8 * g);
    const __m512d inv_cost = _mm512_loadu_pd(c.inv_cost.data() + i);
    const __m512d alpha = _mm512_loadu_pd(c.alpha.data() + i);
    const __m512d om_alpha = _mm512_loadu_pd(c.om_alpha.data() + i);
    const __m512d k = _mm512_load_pd(t + 8 * g);
    const __m512d om_k = _mm512_load_pd(e + 8 * g);
    __m512d best = line(x, k, om_k, u_star, om_alpha, inv_cost);
    // k >= 1: om = k == 1 ? 0 : alpha > kNeighbourAlpha ? (om_k - (1 - alpha)) / alpha
    // : -expm1(-mu T (k - 1)) (the same bits as whittle_argmax); the line at k - 1
    {
      const __mmask8 from_one = _mm512_cmp_pd_mask(k, one, _CMP_GE_OQ);
      const __mmask8 small =
          general[g] & _mm512_cmp_pd_mask(alpha, _mm512_set1_pd(kNeighbourAlpha), _CMP_LE_OQ);
      __m512d om = _mm512_div_pd(_mm512_sub_pd(om_k, om_alpha), alpha);
      if (small) {  // fast sources (mu T > 6.9): rare, so the second expm1 runs only for them
        const __m512d arg = _mm512_maskz_mov_pd(
            small, _mm512_mul_pd(neg(_mm512_loadu_pd(mu_t_c + 8 * g)), _mm512_sub_pd(k, one)));
        om = _mm512_mask_mov_pd(om, small, neg(Sleef_cinz_expm1d8_u10avx512fnofma(arg)));
      }
      om = _mm512_mask_mov_pd(om, _mm512_cmp_pd_mask(k, one, _CMP_EQ_OQ), zero);
      const __m512d v = line(x, _mm512_sub_pd(k, one), om, u_star, om_alpha, inv_cost);
      best = _mm512_mask_mov_pd(best, from_one & _mm512_cmp_pd_mask(v, best, _CMP_GT_OQ), v);
    }
    // om = (1 - alpha) + alpha om_k; the line at k + 1
    {
      const __m512d om = _mm512_add_pd(om_alpha, _mm512_mul_pd(alpha, om_k));
      const __m512d v = line(x, _mm512_add_pd(k, one), om, u_star, om_alpha, inv_cost);
      best = _mm512_mask_mov_pd(best, _mm512_cmp_pd_mask(v, best, _CMP_GT_OQ), v);
    }
    // whittle_index: x / C at or above u*; 0 for an empty source; else the best line
    __m512d index = _mm512_maskz_mov_pd(positive[g], best);
    index = _mm512_mask_mov_pd(_mm512_mul_pd(x, inv_cost), below[g], index);
    _mm512_storeu_pd(out + 8 * g, index);
  }
  for (std::size_t j = 8 * groups; j < count; ++j)
    out[j] = whittle_index(xs[j], c.at_base(first + j));
}

CE_AVX512 std::size_t stochastic_whittle_avx512(const StochasticPass& p, std::size_t lo,
                                                std::size_t hi, WindowSelector& sel,
                                                WindowSelector::Pass& ps, double* reward,
                                                double* spent) {
  const ParamColumns& c = *p.c;
  uint64_t* count = ps.count.data();
  alignas(64) double sc[kIndexBlock], tmp[8];
  alignas(64) uint64_t keys[8];
  alignas(32) uint32_t w0[8], bins[8];
  double rw = *reward, sp = *spent;
  std::size_t b = lo, cnt = 0;
  for (; hi - b >= 8; b += cnt) {
    cnt = std::min(kIndexBlock, (hi - b) & ~std::size_t(7));
    if (p.apply) {
      for (std::size_t g = b; g < b + cnt; g += 8) {
        const __m512d x = _mm512_loadu_pd(p.x + g);
        // rule.crawled(cls[i], i)
        const __m256i cls =
            _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p.cls + g)));
        const __mmask8 crawled = avx512::crawled8(p.rule, cls, g);
        // sample_arrivals_fast: no arrival where uniform(w0) <= no_arrival (uniform(w) = (w + 1/2)
        // 2^-32), else sample_arrivals, one source at a time
        first_arrival_words(p.seed, p.first_id + g, 8, p.prev, p.replication, true, w0);
        const __m512d u = _mm512_mul_pd(
            _mm512_add_pd(
                _mm512_cvtepu32_pd(_mm256_load_si256(reinterpret_cast<const __m256i*>(w0))),
                _mm512_set1_pd(0.5)),
            _mm512_set1_pd(2.3283064365386962890625e-10));
        const __mmask8 drawn =
            _mm512_cmp_pd_mask(u, _mm512_loadu_pd(c.no_arrival.data() + g), _CMP_NLE_UQ);
        __m512d arrivals = _mm512_setzero_pd();
        if (drawn) {
          _mm512_store_pd(tmp, arrivals);
          for (unsigned m = drawn; m; m &= m - 1) {
            const std::size_t i = g + std::size_t(__builtin_ctz(m));
            tmp[i - g] = sample_arrivals(c.at_base(i), p.utility, p.seed, p.replication,
                                         p.first_id + i, p.prev);
          }
          arrivals = _mm512_load_pd(tmp);
        }
        // crawled ? arrivals : alpha * x + arrivals
        const __m512d passive =
            _mm512_add_pd(_mm512_mul_pd(_mm512_loadu_pd(c.alpha.data() + g), x), arrivals);
        _mm512_storeu_pd(p.x + g, _mm512_mask_blend_pd(crawled, passive, arrivals));
        if (crawled) {  // rewards in source order, as the scalar pass adds them
          _mm512_store_pd(tmp, x);
          for (unsigned m = crawled; m; m &= m - 1) rw += tmp[__builtin_ctz(m)];
          sp += double(__builtin_popcount(crawled));
        }
      }
    }
    if (!p.score) continue;
    if (p.greedy)
      std::copy(p.x + b, p.x + b + cnt, sc);  // base_score<greedy, Unit>: x
    else
      whittle_index_block(p.x + b, c, b, cnt, sc);
    for (std::size_t g = 0; g < cnt; g += 8) {
      const avx512::Classified k = avx512::classify8(_mm512_load_pd(sc + g), p.plan);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(p.cls + b + g), _mm256_cvtepi32_epi8(k.cls));
      _mm256_store_si256(reinterpret_cast<__m256i*>(bins), k.bin);
      for (int l = 0; l < 8; ++l) count[bins[l]] += 1;
      if (k.note) {  // listed candidates and tie members, rare: one at a time
        _mm512_store_si512(keys, k.key);
        for (unsigned m = k.note; m; m &= m - 1) {
          const int l = __builtin_ctz(m);
          sel.note(ps, keys[l], (k.tie >> l) & 1 ? window::kTie : window::kCandidate,
                   uint32_t(b + g + std::size_t(l)), 1);
        }
      }
    }
  }
  *reward = rw;
  *spent = sp;
  return b;
}

#else

void whittle_index_block(const double* x, const ParamColumns& c, std::size_t first,
                         std::size_t count, double* out) {
  for (std::size_t j = 0; j < count; ++j) out[j] = whittle_index(x[j], c.at_base(first + j));
}
std::size_t stochastic_whittle_avx512(const StochasticPass&, std::size_t lo, std::size_t,
                                      WindowSelector&, WindowSelector::Pass&, double*, double*) {
  return lo;
}

#endif

}  // namespace crawleval::detail
