// The deterministic Whittle pass with AVX-512 (det_whittle_avx512.hpp). Each line below names the
// scalar expression it computes (source_step.hpp's det_word, selection.hpp's score_key and
// coarse_bin_of_score, window_select.hpp's classify).
#include "engine/cpu/det_whittle_avx512.hpp"

#include <cstdlib>

#include "engine/cpu/source_step.hpp"

#include "engine/cpu/avx512_classify.hpp"

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

namespace {

/// Keeps a constant in a register: GCC otherwise rematerialises broadcasts inside the loop (a
/// scalar move and a broadcast per use, about 20 instructions per group of eight).
template <class V>
CE_AVX512 inline void pin(V& v) {
  __asm__("" : "+v"(v));
}

// The pass with its flags as template parameters and every field of the DetPass in a local (the
// stores through x and word may alias the DetPass as far as the compiler knows, so fields read in
// the loop were reloaded for every group of eight), the apply rule and the plan as vectors made
// once, and the ids as vectors that step by eight.
template <bool Apply, bool Score, bool Split>
CE_AVX512 std::size_t det_pass(const DetPass& p, std::size_t lo, std::size_t hi,
                               WindowSelector& sel, WindowSelector::Pass& ps, double* reward,
                               double* spent) {
  using namespace det_word;
  using namespace window;
  __m256i general = _mm256_set1_epi32(int(kGeneral));
  __m256i state_mask = _mm256_set1_epi32(int(kStateMask));
  __m256i age_mask = _mm256_set1_epi32(int(kGeneral - 1));
  __m256i eta_max = _mm256_set1_epi32(int(kEtaMax));
  __m256i one = _mm256_set1_epi32(1);
  __m256i v_tie = _mm256_set1_epi32(int(kTie));
  __m256i v_candidate = _mm256_set1_epi32(int(kCandidate));
  __m512d one_d = _mm512_set1_pd(1.0);
  __m512i sign64 = _mm512_set1_epi64((long long)0x8000000000000000ull);
  __m256i sign32 = _mm256_set1_epi32(int(0x80000000u));
  double* const xs = p.x;
  uint32_t* const word = p.word;
  const double* const alphas = p.alpha;
  const double* const us = p.u;
  const uint16_t* const loc = p.loc;
  const uint32_t id0 = p.id0;
  __m256i id0_32 = _mm256_set1_epi32(int(id0));
  const ApplyRule rule = p.rule;
  const Plan plan = p.plan;
  // ApplyRule::crawled and ::selected: ids are at most kMaxId, so i < stop_id for every id when
  // stop_id >= 2^32 - 1.
  __m256i stop_id32 = _mm256_set1_epi32(
      int(uint32_t(rule.stop_id >= 0xFFFFFFFFull ? 0xFFFFFFFFull : rule.stop_id)));
  __m512i stop_id64 = _mm512_set1_epi64((long long)rule.stop_id);
  __m512i stop_key = _mm512_set1_epi64((long long)rule.stop_key);
  // The classes crawled whatever the id, as bits of a table shifted by the class: kAbove, every
  // class when all are crawled, kTie when the whole tie group is.
  __m256i crawled_table = _mm256_set1_epi32(
      int((1u << kAbove) | (rule.all ? 0xFu : 0u) | (rule.tie_all ? 1u << kTie : 0u)));
  const bool tie_some = rule.tie_some;
  // classify against the plan
  __m256i plan_lo = _mm256_set1_epi32(int(plan.lo)), plan_hi = _mm256_set1_epi32(int(plan.hi));
  __m512i tie_key = _mm512_set1_epi64((long long)plan.tie_key);
  const __mmask8 tie_on = plan.has_tie ? 0xFF : 0;
  // The class bits of the word, shifted into place: kAbove, kCandidate, kTie (OR-ed in that order).
  __m256i c_above = _mm256_set1_epi32(int(uint32_t(kAbove) << kClassShift));
  __m256i c_candidate = _mm256_set1_epi32(int(uint32_t(kCandidate) << kClassShift));
  __m256i c_tie = _mm256_set1_epi32(int(uint32_t(kTie) << kClassShift));
  __m256i iota32 = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  __m256 zero_s = _mm256_setzero_ps();
  __m512d zero_d = _mm512_setzero_pd();
  pin(general), pin(state_mask), pin(age_mask), pin(eta_max), pin(one), pin(crawled_table),
      pin(v_tie);
  pin(v_candidate), pin(one_d), pin(sign64), pin(sign32), pin(stop_id32), pin(stop_id64);
  pin(stop_key), pin(plan_lo), pin(plan_hi), pin(tie_key), pin(iota32), pin(c_above);
  pin(c_candidate), pin(c_tie), pin(zero_s), pin(zero_d);
  if constexpr (Split) pin(id0_32);
  uint64_t* const count = ps.count.data();
  // The selection's records of a block of up to eight groups, made after the block from the bins
  // and keys it stored and the classes it wrote: a bit per lane at or above the lump floor (its
  // bin counted) and per listed or tie lane (class bit 31), sixteen lanes per comparison. The
  // lanes below the floor (most of them) are counted in one lump, and the loops run over the set
  // bits alone, without a branch per group on its masks.
  const uint32_t floor_s = lump_floor(plan);  // at most kBins - 3
  __m512i floor16 = _mm512_set1_epi32(int(floor_s));
  __m512i floor1_16 = _mm512_set1_epi32(int(floor_s + 1));
  __m512i floor2_16 = _mm512_set1_epi32(int(floor_s + 2));
  __m512i floor3_16 = _mm512_set1_epi32(int(floor_s + 3));
  __m512i sign16 = _mm512_set1_epi32(int(0x80000000u));
  pin(floor16), pin(floor1_16), pin(floor2_16), pin(floor3_16), pin(sign16);
  alignas(64) double x_old[8];
  alignas(64) uint64_t keys[64];
  alignas(64) uint32_t bins[64];
  uint64_t lumped = 0;
  unsigned g = 0;       // groups in the block
  std::size_t i0 = lo;  // the block's first source
  const uint64_t tie_key_s = plan.tie_key;
  const bool has_tie = plan.has_tie;
  const auto flush = [&]() CE_AVX512 __attribute__((always_inline)) {
    if (g == 0) return;
    const uint64_t valid = g == 8 ? ~0ull : (1ull << (8 * g)) - 1;
    // The two bins at the floor (the two under the window, where most counted sources lie) and
    // the one above them (the window's lowest: in a steady state the whole window, where the
    // boundary lies) are counted by comparisons; the bins above them one source at a time.
    __mmask16 h[4], nb[4], e0[4], e1[4], e2[4];
    for (int k = 0; k < 4; ++k) {  // masked loads: a partial block may end at the array's end
      const __mmask16 m = __mmask16(valid >> (16 * k));
      const __m512i b = _mm512_maskz_load_epi32(m, bins + 16 * k);
      h[k] = _mm512_mask_cmp_epu32_mask(m, b, floor3_16, _MM_CMPINT_NLT);
      e0[k] = _mm512_mask_cmpeq_epi32_mask(m, b, floor16);
      e1[k] = _mm512_mask_cmpeq_epi32_mask(m, b, floor1_16);
      e2[k] = _mm512_mask_cmpeq_epi32_mask(m, b, floor2_16);
      nb[k] =
          _mm512_mask_test_epi32_mask(m, _mm512_maskz_loadu_epi32(m, word + i0 + 16 * k), sign16);
    }
    const auto bits = [](const __mmask16* q) CE_AVX512 __attribute__((always_inline)) {
      return _cvtmask64_u64(
          _mm512_kunpackd(_mm512_kunpackw(q[3], q[2]), _mm512_kunpackw(q[1], q[0])));
    };
    const uint64_t hot = bits(h), noted = bits(nb);
    const unsigned at0 = unsigned(__builtin_popcountll(bits(e0)));
    const unsigned at1 = unsigned(__builtin_popcountll(bits(e1)));
    const unsigned at2 = unsigned(__builtin_popcountll(bits(e2)));
    count[floor_s] += at0;
    count[floor_s + 1] += at1;
    count[floor_s + 2] += at2;
    lumped += 8 * g - unsigned(__builtin_popcountll(hot)) - at0 - at1 - at2;
    for (uint64_t m = hot; m; m &= m - 1) count[bins[__builtin_ctzll(m)]] += 1;
    for (uint64_t m = noted; m; m &= m - 1) {
      const int l = __builtin_ctzll(m);
      const std::size_t slot = i0 + std::size_t(l);
      sel.note(ps, keys[l], has_tie && keys[l] == tie_key_s ? kTie : kCandidate,
               Split ? id0 + loc[slot] : uint32_t(slot), 1);
    }
    g = 0;
  };
  double r = *reward, s = *spent;

  // One group of eight at i, the gi-th of its block; false (nothing done) when one of them is off
  // the grid: the scalar pass scores that group.
  const auto group = [&](std::size_t i, unsigned gi) CE_AVX512 __attribute__((always_inline)) {
    const __m256i stored = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(word + i));
    const __m256i w = _mm256_and_si256(stored, state_mask);
    const __mmask8 off = _mm256_test_epi32_mask(w, general);
    if (!_kortestz_mask8_u8(off, off)) return false;
    const __m512d x = _mm512_loadu_pd(xs + i);
    const __m512d alpha = _mm512_loadu_pd(alphas + i);
    const __m512d u = _mm512_loadu_pd(us + i);
    // The eight sources' ids (split: from loc; plain: i ..), made only where a rare path needs
    // them.
    const auto ids32 = [&]() CE_AVX512 __attribute__((always_inline)) {
      if constexpr (Split)
        return _mm256_add_epi32(
            id0_32,
            _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(loc + i))));
      return _mm256_add_epi32(_mm256_set1_epi32(int(uint32_t(i))), iota32);
    };
    const __m512d om_alpha = _mm512_sub_pd(one_d, alpha);
    __m512d xn = x;
    __m256i wn = w;
    if constexpr (Apply) {
      // rule.crawled(stored >> kClassShift, i)
      const __m256i cls = _mm256_srli_epi32(stored, int(kClassShift));
      __mmask8 crawled = _mm256_test_epi32_mask(_mm256_srlv_epi32(crawled_table, cls), one);
      if (tie_some) {  // the stop inside the tie group: the members below the stop id
        const __m256i id32 = ids32();
        crawled |=
            _mm256_mask_cmpeq_epi32_mask(_mm256_cmplt_epu32_mask(id32, stop_id32), cls, v_tie);
      }
      // Listed last epoch: rule.selected(key, i) with the key of the state it was scored in,
      // x + eta ((1 - alpha) x - u).
      const __mmask8 listed = _mm256_cmpeq_epi32_mask(cls, v_candidate) & ~crawled;
      if (listed) {
        const __m512d eta0 = _mm512_cvtepu32_pd(_mm256_and_si256(w, age_mask));
        const __m512d s0 =
            _mm512_add_pd(x, _mm512_mul_pd(eta0, _mm512_sub_pd(_mm512_mul_pd(om_alpha, x), u)));
        const __m512i key0 = avx512::key8(s0);
        const __m512i id64 = _mm512_cvtepu32_epi64(ids32());
        crawled |= _mm512_mask_cmpgt_epu64_mask(listed, key0, stop_key) |
                   _mm512_mask_cmpeq_epi64_mask(
                       _mm512_mask_cmplt_epu64_mask(listed, id64, stop_id64), key0, stop_key);
      }
      // crawled ? u : alpha * x + u
      xn = _mm512_mask_blend_pd(crawled, _mm512_add_pd(_mm512_mul_pd(alpha, x), u), u);
      // next(w, crawled, moved): 1 after a crawl, else w + 1 where w < kEtaMax and the state
      // moved (w is on the grid)
      const __mmask8 moved = _mm512_cmp_pd_mask(xn, x, _CMP_NEQ_UQ);
      wn = _mm256_mask_add_epi32(w, _mm256_mask_cmplt_epu32_mask(moved, w, eta_max), w, one);
      wn = _mm256_mask_mov_epi32(wn, crawled, one);
      _mm512_storeu_pd(xs + i, xn);
      if (crawled) {  // rewards in source order, as the scalar pass adds them
        _mm512_store_pd(x_old, x);
        for (unsigned m = crawled; m; m &= m - 1) r += x_old[__builtin_ctz(m)];
        s += double(__builtin_popcount(crawled));
      }
    }
    if constexpr (!Score) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(word + i), wn);
    } else {
      // grid_index(xn, wn, alpha, u, 1): xn + eta ((1 - alpha) xn - u)
      const __m512d eta = _mm512_cvtepu32_pd(_mm256_and_si256(wn, age_mask));
      const __m512d score =
          _mm512_add_pd(xn, _mm512_mul_pd(eta, _mm512_sub_pd(_mm512_mul_pd(om_alpha, xn), u)));
      // avx512_classify.hpp's classify8 with the plan's vectors made once
      const __mmask8 number = _mm512_cmp_pd_mask(score, score, _CMP_ORD_Q);  // NaN: key 0, bin 0
      const __m512i b64 = _mm512_castpd_si512(_mm512_add_pd(score, zero_d));
      const __m512i key =
          _mm512_maskz_xor_epi64(number, b64, _mm512_or_si512(_mm512_srai_epi64(b64, 63), sign64));
      const __m256i b32 = _mm256_castps_si256(_mm256_add_ps(_mm512_cvtpd_ps(score), zero_s));
      const __m256i bin = _mm256_maskz_srli_epi32(
          number, _mm256_xor_si256(b32, _mm256_or_si256(_mm256_srai_epi32(b32, 31), sign32)), 21);
      // classify(): kTie, else kAbove over the window, kCandidate in it, kBelow under it
      const __mmask8 tie = _mm512_mask_cmpeq_epi64_mask(tie_on, key, tie_key);
      const __mmask8 above = _mm256_cmpgt_epu32_mask(bin, plan_hi);
      const __mmask8 inside = _mm256_mask_cmp_epu32_mask(
          _mm256_cmp_epu32_mask(bin, plan_lo, _MM_CMPINT_NLT), bin, plan_hi, _MM_CMPINT_LE);
      __m256i out = _mm256_mask_or_epi32(wn, above, wn, c_above);
      out = _mm256_mask_or_epi32(out, inside, out, c_candidate);
      out = _mm256_mask_or_epi32(out, tie, out, c_tie);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(word + i), out);
      _mm256_store_si256(reinterpret_cast<__m256i*>(bins + 8 * gi), bin);
      _mm512_store_si512(keys + 8 * gi, key);
    }
    return true;
  };
  std::size_t i = lo;
  if constexpr (Score) {
    // Whole blocks with the eight groups unrolled (the offsets into the block's buffers are
    // constants), then the groups left.
    bool on = true;
    while (on && i + 64 <= hi) {
      unsigned gi = 0;
#pragma GCC unroll 8
      for (; gi < 8; ++gi)
        if (!group(i + 8 * gi, gi)) {
          on = false;
          break;
        }
      i0 = i, g = gi;
      flush();
      i += 8 * gi;
    }
    if (on) {
      unsigned gi = 0;
      i0 = i;
      for (; i + 8 <= hi && group(i, gi); i += 8) ++gi;
      g = gi;
      flush();
    }
    WindowSelector::lump(ps, lumped, lumped);
  } else {
    while (i + 8 <= hi && group(i, 0)) i += 8;
  }
  *reward = r;
  *spent = s;
  return i;
}

}  // namespace

CE_AVX512 std::size_t det_whittle_avx512(const DetPass& p, std::size_t lo, std::size_t hi,
                                         WindowSelector& sel, WindowSelector::Pass& ps,
                                         double* reward, double* spent) {
  if (p.loc) {
    if (p.apply)
      return p.score ? det_pass<true, true, true>(p, lo, hi, sel, ps, reward, spent)
                     : det_pass<true, false, true>(p, lo, hi, sel, ps, reward, spent);
    return p.score ? det_pass<false, true, true>(p, lo, hi, sel, ps, reward, spent)
                   : det_pass<false, false, true>(p, lo, hi, sel, ps, reward, spent);
  }
  if (p.apply)
    return p.score ? det_pass<true, true, false>(p, lo, hi, sel, ps, reward, spent)
                   : det_pass<true, false, false>(p, lo, hi, sel, ps, reward, spent);
  return p.score ? det_pass<false, true, false>(p, lo, hi, sel, ps, reward, spent)
                 : det_pass<false, false, false>(p, lo, hi, sel, ps, reward, spent);
}

#else

std::size_t det_whittle_avx512(const DetPass&, std::size_t lo, std::size_t, WindowSelector&,
                               WindowSelector::Pass&, double*, double*) {
  return lo;
}

#endif

}  // namespace crawleval::detail
