// The host twin of the CUDA wide engine's arrivals kernel (kernels/epoch_kernels.cu,
// arrivals_kernel) and of the stochastic scoring pass's reads of its output: the kernel's layout
// (tiles of 1024 sources, 8 warps, 4 items per lane; a word of flags per 32 sources, the flagged
// sources' sums packed in lane order, include/crawleval/engine/wide_arrivals.hpp) emulated lane by
// lane, and every source's arrivals read back as the scoring pass reads them: sample_arrivals of
// the CPU engines and the reference, bit for bit (the draw contract: CPU = GPU draw for draw).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "crawleval/engine/wide_arrivals.hpp"
#include "crawleval/model/model.hpp"
#include "crawleval/model/rng.hpp"

namespace {

namespace ce = crawleval;
namespace wd = crawleval::wide;

constexpr uint32_t kThreads = 256, kItems = 4;

struct Source {
  double lambda_t, xi, mu_t;
};

/// The arrivals kernel on the host: what each warp writes for each of its items.
void arrivals_pass(const std::vector<Source>& src, uint64_t seed, uint32_t rep, uint64_t first_id,
                   uint32_t epoch, const ce::UtilityDist& dist, std::vector<uint32_t>& flags,
                   std::vector<double>& sums) {
  const uint64_t n = src.size(), tiles = (n + 1023) / 1024;
  flags.assign(tiles * 32, 0xDEADBEEFu);  // the kernel writes every word of a valid item
  sums.assign(tiles * 1024, std::nan(""));
  for (uint64_t tile = 0; tile < tiles; ++tile)
    for (uint32_t warp = 0; warp < kThreads / 32; ++warp)
      for (uint32_t j = 0; j < kItems; ++j) {
        const uint64_t first = tile * 1024 + warp * 32 + uint64_t(j) * kThreads;
        uint32_t word = 0;
        for (uint32_t lane = 0; lane < 32; ++lane) {
          const uint64_t i = first + lane;
          if (i < n && wd::has_arrivals(src[i].lambda_t, seed, rep, first_id + i, epoch))
            word |= 1u << lane;
        }
        if (first < n) flags[first >> 5] = word;
        for (uint32_t lane = 0; lane < 32; ++lane) {
          if (!(word >> lane & 1u)) continue;
          const uint64_t i = first + lane;
          ce::SourceParams p{};
          p.mu_t = src[i].mu_t, p.lambda_t = src[i].lambda_t, p.xi = src[i].xi;
          sums[wd::arrival_slot(i, word)] =
              ce::sample_arrivals<false>(p, dist, seed, rep, first_id + i, epoch);
        }
      }
}

TEST(GpuArrivalsTwin, EverySourceReadsItsOwnArrivalsBitForBit) {
  std::mt19937_64 rng(12);
  std::lognormal_distribution<double> rate(std::log(0.5), 1.5), util(0.0, 1.0),
      mu(std::log(0.1), 1.0);
  int flagged_zero = 0, with_arrivals = 0, checked = 0;
  for (const uint64_t n : {1ull, 31ull, 33ull, 1023ull, 1025ull, 5000ull}) {
    std::vector<Source> src(n);
    for (uint64_t i = 0; i < n; ++i) {
      src[i] = {std::min(rate(rng), 50.0), util(rng), mu(rng)};
      if (i % 97 == 5) src[i].lambda_t = 0.0;  // no rate: never drawn
      if (i % 89 == 7) src[i].xi = 0.0;        // no utility: flagged maybe, sum 0
      if (i % 83 == 3) src[i].lambda_t = 1e-300;
      if (i % 79 == 2) src[i].lambda_t = 200.0;  // many arrivals
    }
    for (const uint64_t first_id : {0ull, (1ull << 32) + 17}) {
      for (const ce::UtilityLaw law :
           {ce::UtilityLaw::exponential, ce::UtilityLaw::deterministic}) {
        ce::UtilityDist dist;
        dist.law = law;
        for (uint32_t epoch : {0u, 1u, 77u}) {
          std::vector<uint32_t> flags;
          std::vector<double> sums;
          arrivals_pass(src, 9, 2, first_id, epoch, dist, flags, sums);
          for (uint64_t i = 0; i < n; ++i) {
            // The scoring pass's read (kernels/epoch_kernels.cu, the stochastic branch).
            const uint32_t word = flags[i >> 5];
            ASSERT_NE(word, 0xDEADBEEFu) << "word of source " << i << " never written";
            const bool flagged = (word >> (i & 31u)) & 1u;
            // A flagged source's sum lies among its word's first popcount(word) slots (packed).
            if (flagged)
              ASSERT_LT(wd::arrival_slot(i, word) - (i & ~uint64_t(31)), wd::popcount32(word));
            const double got = flagged ? sums[wd::arrival_slot(i, word)] : 0.0;
            ce::SourceParams p{};
            p.mu_t = src[i].mu_t, p.lambda_t = src[i].lambda_t, p.xi = src[i].xi;
            const double want = ce::sample_arrivals<true>(p, dist, 9, 2, first_id + i, epoch);
            ASSERT_EQ(std::memcmp(&got, &want, sizeof got), 0)
                << "n " << n << " source " << i << ": " << got << " against " << want;
            flagged_zero += flagged && want == 0.0;
            with_arrivals += want != 0.0;
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(with_arrivals, 1000);
  EXPECT_GT(flagged_zero, 0);  // a flag is a maybe: sample_arrivals decides
  EXPECT_EQ(checked, 2 * 2 * 3 * (1 + 31 + 33 + 1023 + 1025 + 5000));
}

}  // namespace
