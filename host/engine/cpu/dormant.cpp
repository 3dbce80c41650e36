// Dormant sources of the deterministic Whittle pass (dormant.hpp).
#include "engine/cpu/dormant.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "crawleval/base/error.hpp"
#include "crawleval/model/selection.hpp"
#include "engine/cpu/avx512_classify.hpp"
#include "engine/cpu/source_step.hpp"

namespace crawleval::detail {

namespace {

using namespace det_word;

/// A dormant word's class bits: 0 (kBelow), or kConverged once its state is a fixed point of its
/// passive step (alpha x + u == x: no later step changes it, so catch_up only ages it).
constexpr uint32_t kConverged = 3u << kClassShift;

inline bool bit(const uint64_t* m, std::size_t i) { return (m[i / 64] >> (i % 64)) & 1u; }

#if CE_HAVE_AVX512_PASS
/// catch_up_chunk's steps for the dormant slots x[0, nd), word[0, nd) (sources ids[j] of the
/// chunk whose constants alpha and u point at): eight sources a vector, four vectors a batch (each
/// step's multiply and add wait on the previous step: four chains keep the units busy). A source
/// ages by the steps that moved its state (det_word::next) and is flagged once one did not; a
/// batch whose sources are all flagged is left as it is, and a batch stops stepping once no
/// source of it moved.
CE_AVX512 void catch_up_avx512(const uint16_t* ids, std::size_t nd, uint64_t k, double* x,
                               uint32_t* word, const double* alpha, const double* u) {
  const __m256i conv_bits = _mm256_set1_epi32(int(kConverged));
  const __m256i age_mask = _mm256_set1_epi32(int(kGeneral - 1));
  const __m256i age_max = _mm256_set1_epi32(int(kEtaMax));
  const __m256i one = _mm256_set1_epi32(1);
  const __m512d zero = _mm512_setzero_pd();
  for (std::size_t j = 0; j < nd; j += 32) {
    __m512d xv[4], av[4], uv[4];
    __m256i wv[4], idx[4], age[4];
    __mmask8 m[4], conv[4];
    bool work = false;
    for (int g = 0; g < 4; ++g) {
      const std::size_t at = j + 8 * std::size_t(g);
      const std::size_t left = at < nd ? nd - at : 0;
      m[g] = left >= 8 ? __mmask8(0xFF) : __mmask8((1u << left) - 1);
      idx[g] = _mm256_cvtepu16_epi32(_mm_maskz_loadu_epi16(m[g], ids + at));
      wv[g] = _mm256_maskz_loadu_epi32(m[g], word + at);
      xv[g] = _mm512_maskz_loadu_pd(m[g], x + at);
      conv[g] = _mm256_mask_cmpeq_epi32_mask(m[g], _mm256_and_si256(wv[g], conv_bits), conv_bits);
      work |= (m[g] & ~conv[g]) != 0;
    }
    if (!work) continue;  // every source at its fixed point: neither state nor age moves
    for (int g = 0; g < 4; ++g) {
      av[g] = _mm512_mask_i32gather_pd(zero, m[g], idx[g], alpha, 8);
      uv[g] = _mm512_mask_i32gather_pd(zero, m[g], idx[g], u, 8);
      age[g] = _mm256_and_si256(wv[g], age_mask);
    }
    __mmask8 moved[4] = {0, 0, 0, 0};
    for (uint64_t s = 0; s < k; ++s) {
      unsigned any = 0;
      for (int g = 0; g < 4; ++g) {
        const __m512d next = _mm512_add_pd(_mm512_mul_pd(av[g], xv[g]), uv[g]);
        moved[g] = _mm512_cmp_pd_mask(next, xv[g], _CMP_NEQ_UQ);
        xv[g] = next;
        age[g] = _mm256_mask_add_epi32(
            age[g], _mm256_mask_cmplt_epu32_mask(moved[g], age[g], age_max), age[g], one);
        any |= moved[g];
      }
      if (!any) break;
    }
    for (int g = 0; g < 4; ++g) {
      const std::size_t at = j + 8 * std::size_t(g);
      conv[g] = m[g] & ~moved[g];  // the last step left it as it was: a fixed point
      _mm512_mask_storeu_pd(x + at, m[g], xv[g]);
      _mm256_mask_storeu_epi32(word + at, m[g],
                               _mm256_mask_or_epi32(age[g], conv[g], age[g], conv_bits));
    }
  }
}
#endif

}  // namespace

void DormantSet::reset(std::size_t n, std::size_t chunk) {
  CE_EXPECTS(chunk % 64 == 0 && chunk <= 65536, "internal: a dormant chunk of 64k sources at most");
  n_ = n;
  chunk_ = chunk;
  on_ = false;
  bound_ = 0;
  stamp_ = split_at_ = dormant_ = 0;
  live_.clear();
  loc_.clear();
  loc_off_.clear();
  lowered = wakes = 0;
}

void DormantSet::catch_up_chunk(std::size_t c, uint64_t t, const Arrays& a) {
  const uint64_t k = t - stamp_;
  if (k == 0) return;
  const std::size_t lo = c * chunk_, cnt = size(c), nl = live_[c];
  const uint64_t* mask = mask_.data() + lo / 64;
  double* x = a.x + lo;
  uint32_t* word = a.word + lo;
  const double* alpha = a.alpha + lo;
  const double* u = a.u + lo;
  // The dormant sources' offsets in id order (slots nl, nl + 1, ...).
  thread_local std::vector<uint16_t> id_buffer;
  id_buffer.resize(chunk_);
  uint16_t* ids = id_buffer.data();
  std::size_t nd = 0;
  for (std::size_t wi = 0; wi * 64 < cnt; ++wi) {
    const std::size_t left = cnt - wi * 64;
    uint64_t z = ~mask[wi] & (left >= 64 ? ~uint64_t(0) : (uint64_t(1) << left) - 1);
    for (; z; z &= z - 1) ids[nd++] = uint16_t(wi * 64 + std::size_t(__builtin_ctzll(z)));
  }
#if CE_HAVE_AVX512_PASS
  if (avx512_pass_available()) {
    catch_up_avx512(ids, nd, k, x + nl, word + nl, alpha, u);
    return;
  }
#endif
  for (std::size_t j = 0; j < nd; ++j) {  // as catch_up_avx512, one source at a time
    double& xj = x[nl + j];
    uint32_t& wj = word[nl + j];
    if ((wj & kConverged) == kConverged) continue;
    const double al = alpha[ids[j]], uj = u[ids[j]];
    uint32_t age = wj & (kGeneral - 1);
    bool moved = true;
    for (uint64_t s = 0; s < k && moved; ++s) {
      const double next = al * xj + uj;
      moved = next != xj;
      xj = next;
      age += uint32_t(moved && age < kEtaMax);
    }
    wj = age | (moved ? 0u : kConverged);
  }
}

void DormantSet::unsplit_chunk(std::size_t c, uint64_t t, const Arrays& a, double* tx,
                               uint32_t* tw) {
  catch_up_chunk(c, t, a);
  const std::size_t lo = c * chunk_, cnt = size(c), nl = live_[c];
  const uint64_t* mask = mask_.data() + lo / 64;
  std::size_t live = 0, dormant = nl;
  for (std::size_t i = 0; i < cnt; ++i) {
    if (bit(mask, i)) {
      tx[i] = a.x[lo + live];
      tw[i] = a.word[lo + live];
      ++live;
    } else {
      tx[i] = a.x[lo + dormant];
      tw[i] = a.word[lo + dormant] & kStateMask;  // class kBelow
      ++dormant;
    }
  }
  std::copy(tx, tx + cnt, a.x + lo);
  std::copy(tw, tw + cnt, a.word + lo);
  live_[c] = kPlain;
}

void DormantSet::split(uint32_t bound, uint64_t t, const Arrays& a) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  const std::size_t chunks = (n_ + chunk_ - 1) / chunk_;
  if (!on_) {
    live_.assign(chunks, kPlain);
    mask_.assign((n_ + 63) / 64, 0);
  }
  if (on_ && bound < bound_) lowered += 1;
  // 1. Every chunk back in id order with iteration t's states, and its live sources marked (a
  //    bit each, padded to whole groups of eight): those whose ceiling's bin reaches the bound.
  std::vector<uint32_t> want(chunks, kPlain);
#pragma omp parallel num_threads(a.threads) if (a.threads > 1)
  {
    std::vector<double> tx(chunk_);
    std::vector<uint32_t> tw(chunk_);
#pragma omp for schedule(dynamic, 1)
    for (std::size_t c = 0; c < chunks; ++c) {
      if (live_[c] != kPlain) unsplit_chunk(c, t, a, tx.data(), tw.data());
      const std::size_t lo = c * chunk_, cnt = size(c);
      uint64_t* mask = mask_.data() + lo / 64;
      std::fill(mask, mask + (cnt + 63) / 64, 0);
      if (cnt < 64 || bound == 0) continue;
      std::size_t nl = 0;
      bool on_grid = true;
      for (std::size_t i = 0; i < cnt && on_grid; ++i) {
        on_grid = !(a.word[lo + i] & kGeneral);
        const double s = grid_index_ceiling(a.alpha[lo + i], a.u[lo + i]);
        const bool live = !(s < inf) || coarse_bin_of_score(s) >= bound;
        mask[i / 64] |= uint64_t(live) << (i % 64);
        nl += live;
      }
      // Worth it only where at least a quarter sleeps.
      if (!on_grid || 4 * (nl + 7) > 3 * cnt) continue;
      for (std::size_t i = 0; nl % 8 != 0; ++i)
        if (!bit(mask, i)) mask[i / 64] |= uint64_t(1) << (i % 64), ++nl;
      want[c] = uint32_t(nl);
    }
  }
  // 2. The live sources' copies take 18 B each: at most kMaxLiveShare of the sources are copied,
  //    the chunks with the fewest live sources first (the others stay plain), so the memory
  //    crawleval run states before it starts holds whatever the budget.
  std::vector<std::size_t> order;
  for (std::size_t c = 0; c < chunks; ++c)
    if (want[c] != kPlain) order.push_back(c);
  std::sort(order.begin(), order.end(), [&](std::size_t p, std::size_t q) {
    return want[p] != want[q] ? want[p] < want[q] : p < q;
  });
  std::size_t copied = 0;
  const double cap = kMaxLiveShare * double(n_);
  for (std::size_t c : order) {
    if (double(copied + want[c]) > cap)
      want[c] = kPlain;
    else
      copied += want[c];
  }
  // 3. The split chunks' live sources first, then the dormant ones (classes cleared: kBelow).
#pragma omp parallel num_threads(a.threads) if (a.threads > 1)
  {
    std::vector<double> tx(chunk_);
    std::vector<uint32_t> tw(chunk_);
#pragma omp for schedule(dynamic, 1)
    for (std::size_t c = 0; c < chunks; ++c) {
      const std::size_t lo = c * chunk_, cnt = size(c);
      uint64_t* mask = mask_.data() + lo / 64;
      if (want[c] == kPlain) {
        std::fill(mask, mask + (cnt + 63) / 64, 0);
        continue;
      }
      const std::size_t nl = want[c];
      std::size_t live = 0, dormant = nl;
      for (std::size_t i = 0; i < cnt; ++i) {
        const std::size_t s = bit(mask, i) ? live++ : dormant++;
        tx[s] = a.x[lo + i];
        tw[s] = s < nl ? a.word[lo + i] : a.word[lo + i] & kStateMask;
      }
      std::copy(tx.data(), tx.data() + cnt, a.x + lo);
      std::copy(tw.data(), tw.data() + cnt, a.word + lo);
    }
  }
  live_ = std::move(want);
  bound_ = bound;
  stamp_ = split_at_ = t;
  build_loc(a);
}

std::size_t DormantSet::slot_of(std::size_t i) const {
  const std::size_t c = i / chunk_;
  if (!on_ || live_[c] == kPlain) return i;
  const std::size_t lo = c * chunk_, off = i - lo;
  const uint64_t* mask = mask_.data() + lo / 64;
  if (!bit(mask, off)) return kAsleep;
  std::size_t slot = lo;
  for (std::size_t w = 0; w < off / 64; ++w) slot += std::size_t(__builtin_popcountll(mask[w]));
  return slot +
         std::size_t(__builtin_popcountll(mask[off / 64] & ((uint64_t(1) << (off % 64)) - 1)));
}

void DormantSet::wake(uint64_t t, const Arrays& a) {
  if (!on_) return;
  const std::size_t chunks = live_.size();
#pragma omp parallel num_threads(a.threads) if (a.threads > 1)
  {
    std::vector<double> tx(chunk_);
    std::vector<uint32_t> tw(chunk_);
#pragma omp for schedule(dynamic, 1)
    for (std::size_t c = 0; c < chunks; ++c)
      if (live_[c] != kPlain) unsplit_chunk(c, t, a, tx.data(), tw.data());
  }
  live_.assign(chunks, kPlain);
  on_ = false;
  bound_ = 0;
  dormant_ = 0;
  stamp_ = split_at_ = t;
  wakes += 1;
  loc_.clear();
  loc_.shrink_to_fit();
  alpha_.clear();
  alpha_.shrink_to_fit();
  u_.clear();
  u_.shrink_to_fit();
}

void DormantSet::catch_up(uint64_t t, const Arrays& a) {
  if (!on_) return;
  const std::size_t chunks = live_.size();
#pragma omp parallel for schedule(dynamic, 1) num_threads(a.threads) if (a.threads > 1)
  for (std::size_t c = 0; c < chunks; ++c)
    if (live_[c] != kPlain) catch_up_chunk(c, t, a);
  stamp_ = t;
}

void DormantSet::build_loc(const Arrays& a) {
  const std::size_t chunks = live_.size();
  loc_off_.assign(chunks + 1, 0);
  dormant_ = 0;
  for (std::size_t c = 0; c < chunks; ++c) {
    const bool split = live_[c] != kPlain;
    loc_off_[c + 1] = loc_off_[c] + (split ? live_[c] : 0);
    if (split) dormant_ += size(c) - live_[c];
  }
  on_ = dormant_ > 0 || loc_off_[chunks] > 0;
  for (auto* v : {&alpha_, &u_}) {  // no copy of the old ones on the way
    v->clear();
    v->shrink_to_fit();
    v->resize(loc_off_[chunks]);
  }
  loc_.clear();
  loc_.shrink_to_fit();
  loc_.resize(loc_off_[chunks]);
#pragma omp parallel for schedule(dynamic, 1) num_threads(a.threads) if (a.threads > 1)
  for (std::size_t c = 0; c < chunks; ++c) {
    if (live_[c] == kPlain) continue;
    const std::size_t lo = c * chunk_;
    const uint64_t* mask = mask_.data() + lo / 64;
    const std::size_t off = loc_off_[c];
    std::size_t j = off;
    for (std::size_t i = 0, cnt = size(c); i < cnt; ++i)
      if (bit(mask, i)) {
        loc_[j] = uint16_t(i);
        alpha_[j] = a.alpha[lo + i];
        u_[j] = a.u[lo + i];
        ++j;
      }
  }
}

}  // namespace crawleval::detail
