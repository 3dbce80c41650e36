// A freshness policy of your own, compiled into the engines: the per-URL score the CPU engine,
// the reference, every MPI rank and the GPU engines compute for `--policy custom`
// (`policies=["custom"]` in Python). This file is the default; build with yours instead:
//
//     cmake --preset default -DCRAWLEVAL_FRESH_POLICY=/path/to/my_policy.hpp
//
// The GPU engines compile it too, so its function is CE_HD_INLINE (host and device: no host-only
// library calls); a host-only header builds with -DCRAWLEVAL_FRESH_POLICY_ON_GPU=OFF, and
// `--backend cuda` then refuses `--policy custom`.
//
// The contract: a header that defines crawleval::custom::fresh_score below, a pure function of
// what the policy may see of one URL (FreshView: its age, the changes a completely observed URL
// has missed, whether it is completely observed) and of the constants it believes (FreshParams:
// D T, exp(-D T), importance, 1 / cost; the learning variant's estimates under --learn). The
// engines rank by it (higher first, ties by lower id, NaN last) within the budget and the host
// caps, exactly as for a built-in policy; it runs on threads, so it must keep no state.
// docs/freshness.md ("Your own policy in C++") says more.
#pragma once

#include "crawleval/model/freshness.hpp"

namespace crawleval::custom {

/// The example: the importance-weighted changes a crawl would catch up with, per unit of cost,
/// the expected ones (D T per epoch since the last crawl) where the URL is incompletely
/// observed, the seen ones where it is completely observed.
CE_HD_INLINE double fresh_score(const FreshView& v, const FreshParams& p, double epoch_length) {
  (void)epoch_length;
  const double missed = v.complete ? double(v.changes) : double(v.age) * p.rate_t;
  return p.weight * missed * p.inv_cost;
}

}  // namespace crawleval::custom
