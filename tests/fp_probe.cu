// The rounding check's probe (ctest fp_rounding, scripts/check_fp_rounding.py): every score
// function of the model (fp.hpp says why) in one kernel each, compiled with CRAWLEVAL_FP_PROBE
// (the library's exp, expm1, log and log1p become calls) under -fmad=true and -fmad=false. Their
// double-precision arithmetic must be the same (as many fused multiply-adds, products and sums):
// no product and sum of theirs may be left for the compiler to fuse. Not linked into anything.
#include "crawleval/model/grid_ceiling.hpp"
#include "crawleval/model/model.hpp"
#include "crawleval/model/policy.hpp"
#include "crawleval/model/rng.hpp"

namespace crawleval {
__device__ __noinline__ double fp_probe_exp(double v) { return v; }
__device__ __noinline__ double fp_probe_expm1(double v) { return v; }
__device__ __noinline__ double fp_probe_log(double v) { return v; }
__device__ __noinline__ double fp_probe_log1p(double v) { return v; }
__device__ __noinline__ double fp_probe_sqrt(double v) { return v; }
}  // namespace crawleval

namespace ce = crawleval;

__global__ void probe_params(const double* in, ce::SourceParams* out, uint32_t expiry) {
  const int i = threadIdx.x;
  out[i] = ce::derive_params(in[5 * i], in[5 * i + 1], in[5 * i + 2], in[5 * i + 3], in[5 * i + 4],
                             expiry);
}

__global__ void probe_index(const ce::SourceParams* p, const double* x, double* out) {
  const int i = threadIdx.x;
  out[i] = ce::whittle_index(x[i], p[i]);
}

__global__ void probe_age(const ce::SourceParams* p, const uint32_t* w, const double* x0,
                          double* out) {
  const int i = threadIdx.x;
  double om;
  const double v = ce::AgeState::value(w[i], w[i + 1], x0[i], p[i], &om);
  out[i] = ce::AgeState::index(w[i], v, om, p[i]);
}

__global__ void probe_grid(const ce::SourceParams* p, const double* x, double* out) {
  const int i = threadIdx.x;
  uint32_t eta;
  double om;
  ce::GridTracker::init(x[i], p[i], &eta, &om);
  ce::GridTracker::passive(p[i], &eta, &om);
  out[i] = ce::GridTracker::index(x[i], eta, om, p[i]);
}

__global__ void probe_arrivals(const ce::SourceParams* p, double* x, uint32_t* w, uint64_t seed,
                               int utility, double shape, const double* table) {
  const int i = threadIdx.x;
  // Every law of the items' utilities (rng.hpp), the empirical one on a device table.
  ce::UtilityDist law = ce::UtilityDist::of(ce::UtilityLaw(utility), shape);
  law.atoms = 4, law.table = table;
  const double a =
      ce::sample_arrivals_fast(p[i], ce::no_arrival_threshold(p[i].lambda_t),
                               ce::first_arrival_word(seed, 1, i, 2), law, seed, 1, i, 2);
  ce::general_transition(&x[i], &w[i], a > 1.0, 3, utility == 7, law, seed, 1, i, p[i]);
  x[i + 64] = ce::passive_next(x[i], a, p[i]) + ce::drift(p[i]);
}

__global__ void probe_scores(const ce::ScoreContext* c, const ce::SourceParams* p, const double* x,
                             const uint32_t* w, double* out) {
  const int i = threadIdx.x;
  out[i] = ce::policy_score(*c, i, x[i], w[i], x[i + 1], w[i + 1], x[i + 2], p[i]);
}

__global__ void probe_relaxed(const ce::SourceParams* p, const double* c, double* out) {
  const int i = threadIdx.x;
  uint32_t period = 0;
  out[i] = ce::relaxed_value(c[i], p[i], &period) + double(period);
}

__global__ void probe_grid_ceiling(const double* alpha, const double* u, double* out) {
  const int i = threadIdx.x;
  out[i] = ce::grid_index_ceiling(alpha[i], u[i]);
}
