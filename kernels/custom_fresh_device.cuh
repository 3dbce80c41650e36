// `--policy custom`'s score on the GPU engines (kernels/fresh_engine.cu,
// kernels/fresh_keyed_pass.cu): the header CMake's CRAWLEVAL_FRESH_POLICY names where the build
// compiles it into them (CRAWLEVAL_FRESH_POLICY_ON_GPU), or none, and then
// cuda::fresh_policy_refusal refuses the policy before any launch.
#pragma once

#include <cmath>

#include "crawleval/base/hd.hpp"
#include "crawleval/model/freshness.hpp"

#if defined(CRAWLEVAL_FRESH_POLICY_HEADER)
#include "crawleval/model/custom_fresh_policy.hpp"
#endif

namespace crawleval::cuda::detail {

struct DeviceCustom {
  CE_HD static double score(const FreshView& v, const FreshParams& p, double epoch_length) {
#if defined(CRAWLEVAL_FRESH_POLICY_HEADER)
    return custom::fresh_score(v, p, epoch_length);
#else
    (void)v, (void)p, (void)epoch_length;
    return NAN;
#endif
  }
};

}  // namespace crawleval::cuda::detail
