// The stochastic model's Whittle index and pass with AVX-512 (whittle_avx512.hpp). Each step names
// the scalar expression it computes (model.hpp, rng.hpp, cpu_backend.cpp's scalar pass);
// comparisons use the predicates of the scalar code (ordered: a NaN compares false), so every lane
// takes the scalar branch.
#include "engine/cpu/whittle_avx512.hpp"

#include <algorithm>

#include "engine/cpu/arrival_words.hpp"
#include "engine/cpu/avx512_classify.hpp"

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

namespace {

/// Where the index phases read group g's state and columns: eight consecutive sources...
struct Consecutive {
  const double* x;    // the first source's state
  std::size_t first;  // the first source's index in the columns
  CE_AVX512 __m512d state(std::size_t g) const { return _mm512_loadu_pd(x + 8 * g); }
  CE_AVX512 __m512d col(const std::vector<double>& c, std::size_t g) const {
    return _mm512_loadu_pd(c.data() + first + 8 * g);
  }
};

/// ... or the eight sources at offsets at[8 g .. 8 g + 7] from `first` (the filter's survivors).
struct Listed {
  const double* x;  // the state of source `first`
  std::size_t first;
  const int32_t* at;
  CE_AVX512 __m256i offsets(std::size_t g) const {
    return _mm256_load_si256(reinterpret_cast<const __m256i*>(at + 8 * g));
  }
  CE_AVX512 __m512d state(std::size_t g) const { return _mm512_i32gather_pd(offsets(g), x, 8); }
  CE_AVX512 __m512d col(const std::vector<double>& c, std::size_t g) const {
    return _mm512_i32gather_pd(offsets(g), c.data() + first, 8);
  }
};

// Phases over the whole block, so that the eight-wide log1p and expm1 calls of different groups
// are independent and overlap (one group through the whole chain at a time waits on each call's
// latency: measured 1.5x slower). Scratch: t (the log1p argument, then r's ceiling k), e (the
// expm1 argument, then 1 - alpha^k) and the lanes on the general branch. out[8 g + l]: lane l of
// group g, for g < groups <= kIndexBlock / 8.
template <bool Unit, class Groups>
CE_AVX512 void index_groups(const Groups& at, const ParamColumns& c, std::size_t groups,
                            double* out) {
  constexpr std::size_t kMax = kIndexBlock;
  alignas(64) double t[kMax], e[kMax];
  __mmask8 general[kMax / 8], below[kMax / 8], positive[kMax / 8];
  const __m512d zero = _mm512_setzero_pd(), one = _mm512_set1_pd(1.0);
  // at_or_above_u_star(x) || !(x < x_cap) (x_cap = u* in the base model): !(x < u*) || !(x/u* < 1).
  // The log1p argument -x / u* is -(x / u*) bit for bit (division rounds symmetrically); lanes on
  // the other branches take log1p(0) and expm1(0).
  for (std::size_t g = 0; g < groups; ++g) {
    const __m512d x = at.state(g);
    const __m512d u_star = at.col(c.u_star, g);
    const __m512d q = _mm512_div_pd(x, u_star);
    below[g] = _mm512_cmp_pd_mask(x, u_star, _CMP_LT_OQ) & _mm512_cmp_pd_mask(q, one, _CMP_LT_OQ);
    positive[g] = _mm512_cmp_pd_mask(x, zero, _CMP_GT_OQ);  // x > 0
    general[g] = below[g] & positive[g];
    _mm512_store_pd(t + 8 * g, _mm512_maskz_mov_pd(general[g], neg(q)));
  }
  for (std::size_t g = 0; g < groups; ++g)  // log1p(-x / u*)
    _mm512_store_pd(t + 8 * g, Sleef_cinz_log1pd8_u10avx512fnofma(_mm512_load_pd(t + 8 * g)));
  for (std::size_t g = 0; g < groups; ++g) {  // k = ceil(-log1p(..) / mu T); -mu T * k
    const __m512d mu_t = at.col(c.mu_t, g);
    const __m512d r = _mm512_div_pd(neg(_mm512_load_pd(t + 8 * g)), mu_t);
    const __m512d k = _mm512_roundscale_pd(r, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC);
    _mm512_store_pd(t + 8 * g, k);
    _mm512_store_pd(e + 8 * g, _mm512_maskz_mov_pd(general[g], _mm512_mul_pd(neg(mu_t), k)));
  }
  for (std::size_t g = 0; g < groups; ++g)  // om_k = -expm1(-mu T * k)
    _mm512_store_pd(e + 8 * g, neg(Sleef_cinz_expm1d8_u10avx512fnofma(_mm512_load_pd(e + 8 * g))));
  for (std::size_t g = 0; g < groups; ++g) {
    const __m512d x = at.state(g);
    const __m512d u_star = at.col(c.u_star, g);
    const __m512d inv_cost = Unit ? _mm512_set1_pd(1.0) : at.col(c.inv_cost, g);  // 1/1 = 1
    const __m512d alpha = at.col(c.alpha, g);
    const __m512d om_alpha = at.col(c.om_alpha, g);
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
            small, _mm512_mul_pd(neg(at.col(c.mu_t, g)), _mm512_sub_pd(k, one)));
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
}

}  // namespace

CE_AVX512 void whittle_index_block(const double* xs, const ParamColumns& c, std::size_t first,
                                   std::size_t count, double* out) {
  const std::size_t groups = count / 8;
  index_groups<false>(Consecutive{xs, first}, c, groups, out);
  for (std::size_t j = 8 * groups; j < count; ++j)
    out[j] = whittle_index(xs[j], c.at_base(first + j));
}

// The bound of whittle_below_floor eight wide (the same operations; ordered comparisons, so NaN
// fails them as it fails the scalar ones), the other sources' offsets compacted into a list, their
// indices computed from it eight at a time, then expanded back into place.
namespace {

template <bool Unit>
CE_AVX512 void index_block_above(const double* xs, const ParamColumns& c, std::size_t first,
                                 std::size_t count, uint32_t floor, double* out, uint8_t* sure) {
  const std::size_t groups = count / 8;
  const double threshold = lump_threshold(floor);
  if (!(threshold > 0.0)) {
    std::fill(sure, sure + (count + 7) / 8, uint8_t(0));
    return whittle_index_block(xs, c, first, count, out);
  }
  alignas(64) int32_t at[kIndexBlock + 8];
  alignas(64) double v[kIndexBlock];
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m512d limit = _mm512_set1_pd(threshold);
  const __m512d slack = _mm512_set1_pd(kIndexBoundSlack),
                min_ratio = _mm512_set1_pd(kIndexBoundMinRatio), zero = _mm512_setzero_pd(),
                min_w = _mm512_set1_pd(kIndexBoundMinW), two = _mm512_set1_pd(2.0),
                normal = _mm512_set1_pd(kMinNormal);
  std::size_t listed = 0;
  for (std::size_t g = 0; g < groups; ++g) {
    const __m512d x = _mm512_loadu_pd(xs + 8 * g);
    const __m512d u_star = _mm512_loadu_pd(c.u_star.data() + first + 8 * g);
    const __m512d inv_cost =
        Unit ? _mm512_set1_pd(1.0) : _mm512_loadu_pd(c.inv_cost.data() + first + 8 * g);
    const __m512d b1 = _mm512_mul_pd(_mm512_mul_pd(x, inv_cost), slack);
    __mmask8 m = _mm512_cmp_pd_mask(x, _mm512_mul_pd(u_star, min_ratio), _CMP_GE_OQ) &
                 _mm512_cmp_pd_mask(b1, zero, _CMP_GT_OQ) &
                 _mm512_cmp_pd_mask(b1, limit, _CMP_LT_OQ);
    if (m != 0xFF) {
      const __m512d mu_t = _mm512_loadu_pd(c.mu_t.data() + first + 8 * g);
      const __m512d om_alpha = _mm512_loadu_pd(c.om_alpha.data() + first + 8 * g);
      const __m512d d = _mm512_sub_pd(u_star, x), a = _mm512_mul_pd(u_star, mu_t);
      const __m512d ds = _mm512_mul_pd(d, om_alpha);
      const __m512d e = _mm512_sub_pd(a, ds);
      const __m512d e2 = _mm512_mul_pd(e, e), den = _mm512_mul_pd(_mm512_mul_pd(two, ds), mu_t);
      const __m512d lhs = _mm512_mul_pd(_mm512_mul_pd(e2, inv_cost), slack);
      m |= _mm512_cmp_pd_mask(d, zero, _CMP_GT_OQ) &
           _mm512_cmp_pd_mask(e, _mm512_mul_pd(a, min_w), _CMP_GE_OQ) &
           _mm512_cmp_pd_mask(ds, normal, _CMP_GE_OQ) & _mm512_cmp_pd_mask(e2, normal, _CMP_GE_OQ) &
           _mm512_cmp_pd_mask(den, normal, _CMP_GE_OQ) &
           _mm512_cmp_pd_mask(lhs, normal, _CMP_GE_OQ) &
           _mm512_cmp_pd_mask(lhs, _mm512_mul_pd(limit, den), _CMP_LT_OQ);
    }
    sure[g] = uint8_t(m);
    const __mmask8 kept = __mmask8(~m);
    _mm256_storeu_si256(
        reinterpret_cast<__m256i*>(at + listed),
        _mm256_maskz_compress_epi32(kept, _mm256_add_epi32(_mm256_set1_epi32(int(8 * g)), lane)));
    listed += std::size_t(__builtin_popcount(kept));
  }
  if (count % 8) {
    uint8_t m = 0;
    for (std::size_t j = 8 * groups; j < count; ++j) {
      const std::size_t i = first + j;
      if (whittle_below_floor(xs[j], c.u_star[i], c.mu_t[i], c.om_alpha[i], c.inv_cost[i],
                              threshold))
        m = uint8_t(m | (1u << (j % 8)));
      else
        out[j] = whittle_index(xs[j], c.at_base(i));
    }
    sure[groups] = m;
  }
  if (listed == 0) return;
  for (std::size_t j = listed; j % 8; ++j) at[j] = at[listed - 1];  // a whole last group
  index_groups<Unit>(Listed{xs, first, at}, c, (listed + 7) / 8, v);
  std::size_t pos = 0;
  for (std::size_t g = 0; g < groups; ++g) {
    const __mmask8 kept = __mmask8(~sure[g]);
    if (!kept) continue;
    _mm512_storeu_pd(out + 8 * g, _mm512_mask_expandloadu_pd(zero, kept, v + pos));
    pos += std::size_t(__builtin_popcount(kept));
  }
}

}  // namespace

CE_AVX512 void whittle_index_block_above(const double* xs, const ParamColumns& c, std::size_t first,
                                         std::size_t count, uint32_t floor, bool unit, double* out,
                                         uint8_t* sure) {
  if (unit) return index_block_above<true>(xs, c, first, count, floor, out, sure);
  index_block_above<false>(xs, c, first, count, floor, out, sure);
}

namespace {

/// sample_arrivals_from with the exponential law for the sources at offsets at[0 .. listed - 1]
/// from `first` (block 0 of their streams in w[0..3]), into out[at[j]], bit for bit. Most such
/// source-epochs have one arrival, whose words are the first three (gap, utility, gap): their
/// logarithms are taken first for the whole list, with no branch between the calls, so that
/// glibc's calls overlap rather than wait on each other's results; each source then follows the
/// loop with those values, and the rare source with a second arrival goes on from its fourth word.
void exponential_arrivals(const StochasticPass& p, std::size_t first, const int32_t* at,
                          std::size_t listed, const uint32_t (*w)[kArrivalBlock], double* out) {
  const ParamColumns& c = *p.c;
  alignas(64) double l0[kIndexBlock], l1[kIndexBlock], l2[kIndexBlock];
  for (std::size_t j = 0; j < listed; ++j) l0[j] = fp_log(uniform(w[0][at[j]]));
  for (std::size_t j = 0; j < listed; ++j) l1[j] = fp_log(uniform(w[1][at[j]]));
  for (std::size_t j = 0; j < listed; ++j) l2[j] = fp_log(uniform(w[2][at[j]]));
  for (std::size_t j = 0; j < listed; ++j) {
    const std::size_t k = std::size_t(at[j]), i = first + k;
    const double lambda_t = c.lambda_t[i], xi = c.xi[i], mu_t = c.mu_t[i];
    out[k] = 0.0;
    if (!(lambda_t > 0.0) || !(xi > 0.0)) continue;
    const double inv_rate = 1.0 / lambda_t;
    double s = sub_rn(0.0, mul_rn(l0[j], inv_rate));
    if (s >= 1.0) continue;
    double total = add_rn(0.0, mul_rn(mul_rn(-xi, l1[j]), fp_exp(mul_rn(-mu_t, sub_rn(1.0, s)))));
    s = sub_rn(s, mul_rn(l2[j], inv_rate));
    if (!(s >= 1.0)) {  // another arrival: the loop from the fourth word on
      DrawStream draws(p.seed, p.first_id + i, p.prev, p.replication, Stream::arrivals,
                       Words4{{w[0][k], w[1][k], w[2][k], w[3][k]}});
      for (int m = 0; m < 3; ++m) draws.next_word();
      for (;;) {
        const double xi_n = mul_rn(-xi, fp_log(draws.next_uniform()));
        total = add_rn(total, mul_rn(xi_n, fp_exp(mul_rn(-mu_t, sub_rn(1.0, s)))));
        s = sub_rn(s, mul_rn(fp_log(draws.next_uniform()), inv_rate));
        if (s >= 1.0) break;
      }
    }
    out[k] = total;
  }
}

}  // namespace

CE_AVX512 std::size_t stochastic_whittle_avx512(const StochasticPass& p, std::size_t lo,
                                                std::size_t hi, WindowSelector& sel,
                                                WindowSelector::Pass& ps, double* reward,
                                                double* spent) {
  const ParamColumns& c = *p.c;
  uint64_t* count = ps.count.data();
  alignas(64) double sc[kIndexBlock], tmp[8];
  alignas(64) uint64_t keys[8];
  alignas(32) uint32_t bins[8];
  alignas(64) uint32_t words[4][kArrivalBlock];
  static_assert(kArrivalBlock >= kIndexBlock, "a block's words");
  alignas(8) uint8_t sure[kIndexBlock / 8];
  alignas(64) double arrived[kIndexBlock];        // the block's arrivals (0 where none)
  alignas(64) int32_t drawn_at[kIndexBlock + 8];  // offsets in the block of those with an arrival
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const uint32_t floor = window::lump_floor(p.plan);
  uint64_t lumped = 0;
  double rw = *reward, sp = *spent;
  std::size_t b = lo, cnt = 0;
  for (; hi - b >= 8; b += cnt) {
    cnt = std::min(kIndexBlock, (hi - b) & ~std::size_t(7));
    if (p.apply) {
      // Block 0 of every source's arrival stream: its first word decides most epochs (no
      // arrival), its other three start the stream of the sources with one.
      first_arrival_blocks(p.seed, p.first_id + b, cnt, p.prev, p.replication, true, words);
      // The sources with an arrival first, listed over the whole block: their columns (lambda T,
      // xi, mu T: read for them alone, so no stream brings them into the cache) are prefetched
      // together, and the misses overlap instead of each waiting behind the previous source's
      // logarithms.
      std::size_t listed = 0;
      for (std::size_t o = 0; o < cnt; o += 8) {
        // sample_arrivals_below: no arrival where w0 < no_arrival, else sample_arrivals, one
        // source at a time
        const __mmask8 drawn = _mm256_cmpge_epu32_mask(
            _mm256_load_si256(reinterpret_cast<const __m256i*>(words[0] + o)),
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c.no_arrival.data() + b + o)));
        _mm512_store_pd(arrived + o, _mm512_setzero_pd());
        _mm256_storeu_si256(
            reinterpret_cast<__m256i*>(drawn_at + listed),
            _mm256_maskz_compress_epi32(drawn, _mm256_add_epi32(_mm256_set1_epi32(int(o)), lane)));
        listed += std::size_t(__builtin_popcount(drawn));
      }
      for (std::size_t j = 0; j < listed; ++j) {
        const std::size_t i = b + std::size_t(drawn_at[j]);
        __builtin_prefetch(c.lambda_t.data() + i);
        __builtin_prefetch(c.xi.data() + i);
        __builtin_prefetch(c.mu_t.data() + i);
      }
      if (p.utility.law == UtilityLaw::exponential) {
        exponential_arrivals(p, b, drawn_at, listed, words, arrived);
      } else {
        for (std::size_t j = 0; j < listed; ++j) {
          const std::size_t k = std::size_t(drawn_at[j]), i = b + k;
          DrawStream draws(p.seed, p.first_id + i, p.prev, p.replication, Stream::arrivals,
                           Words4{{words[0][k], words[1][k], words[2][k], words[3][k]}});
          arrived[k] = sample_arrivals_from(c.at_base(i), p.utility, draws);
        }
      }
      for (std::size_t g = b; g < b + cnt; g += 8) {
        const __m512d x = _mm512_loadu_pd(p.x + g);
        // rule.crawled(cls[i], i)
        const __m256i cls =
            _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p.cls + g)));
        const __mmask8 crawled = avx512::crawled8(p.rule, cls, g);
        const __m512d arrivals = _mm512_load_pd(arrived + (g - b));
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
      whittle_index_block_above(p.x + b, c, b, cnt, floor, true, sc, sure);
    for (std::size_t g = 0; g < cnt; g += 8) {
      // The sources shown below the floor are kBelow and lumped; the others recorded
      const __mmask8 below = p.greedy ? __mmask8(0) : __mmask8(sure[g / 8]);
      if (below == 0xFF) {
        _mm_storel_epi64(reinterpret_cast<__m128i*>(p.cls + b + g), _mm_setzero_si128());
        lumped += 8;
        continue;
      }
      const avx512::Classified k = avx512::classify8(_mm512_load_pd(sc + g), p.plan);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(p.cls + b + g),
                       _mm256_cvtepi32_epi8(_mm256_maskz_mov_epi32(__mmask8(~below), k.cls)));
      _mm256_store_si256(reinterpret_cast<__m256i*>(bins), k.bin);
      if (below) {
        for (unsigned m = __mmask8(~below); m; m &= m - 1) count[bins[__builtin_ctz(m)]] += 1;
        lumped += unsigned(__builtin_popcount(below));
      } else {
        for (int l = 0; l < 8; ++l) count[bins[l]] += 1;
      }
      if (k.note & __mmask8(~below)) {  // listed candidates and tie members, rare: one at a time
        _mm512_store_si512(keys, k.key);
        for (unsigned m = k.note & __mmask8(~below); m; m &= m - 1) {
          const int l = __builtin_ctz(m);
          sel.note(ps, keys[l], (k.tie >> l) & 1 ? window::kTie : window::kCandidate,
                   uint32_t(b + g + std::size_t(l)), 1);
        }
      }
    }
  }
  WindowSelector::lump(ps, lumped, lumped);
  *reward = rw;
  *spent = sp;
  return b;
}

#else

void whittle_index_block(const double* x, const ParamColumns& c, std::size_t first,
                         std::size_t count, double* out) {
  for (std::size_t j = 0; j < count; ++j) out[j] = whittle_index(x[j], c.at_base(first + j));
}
void whittle_index_block_above(const double* x, const ParamColumns& c, std::size_t first,
                               std::size_t count, uint32_t floor, bool, double* out,
                               uint8_t* sure) {
  whittle_index_run(x, c, first, count, false, floor, out, sure);
}
std::size_t stochastic_whittle_avx512(const StochasticPass&, std::size_t lo, std::size_t,
                                      WindowSelector&, WindowSelector::Pass&, double*, double*) {
  return lo;
}

#endif

}  // namespace crawleval::detail
