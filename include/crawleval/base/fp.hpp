// Floating-point operations whose rounding no compiler flag can change, for the model's score
// functions (model.hpp, rng.hpp). A key that one GPU kernel computes and another recomputes (the
// fallback pass, the tie tile) must be the same bits, and a multiply followed by an add that the
// compiler may fuse into one fused multiply-add (nvcc's default -fmad=true) rounds once instead
// of twice, differently where it is fused and where not. The GPU build passes -fmad=false, but
// the score functions do not rely on it: each product, sum and difference is its own IEEE
// operation rounded to nearest (__dmul_rn, __dadd_rn, __dsub_rn: "never merged into a
// multiply-add"), so the keys are the same under any flag. On the host these are the plain
// operators (the host build keeps -ffp-contract=off, and the CPU engines' AVX-512 passes perform
// the same operations one by one).
//
// On the GPU, fp_expm1 is expm1_fast below.
//
// The transcendental functions go through fp_exp, fp_expm1, fp_log, fp_log1p (and fp_sqrt) so that
// the rounding check (tests/fp_probe.cu, ctest fp_rounding) can replace them by opaque calls and
// compare the score functions' machine code under -fmad=true and -fmad=false: only the
// functions' own arithmetic is left, and it must not change.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "crawleval/base/hd.hpp"

namespace crawleval {

CE_HD_INLINE double mul_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

CE_HD_INLINE double add_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

CE_HD_INLINE double sub_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}

CE_HD_INLINE double fma_rn(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return __fma_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

/// e^x - 1 on the GPU: within 1.2 ulp for x <= 0 (the model's every expm1 is of -mu T k) and 1.7
/// ulp above (tested against a long-double expm1 in tests/test_model.cpp; CUDA's expm1 is within
/// 1). About 25 instructions and no call instead of CUDA's 72 with a call: its polynomial is short
/// and its special cases are selects, which is what keeps the deterministic epoch kernel within
/// its instruction budget (docs/gpu-design.md). x = k ln2 + r with |r| <= ln2 / 2 (Cody-Waite:
/// k ln2_hi is exact); e^r - 1 = r + r^2 (1/2 + r q(r)) with q the Taylor series to r^10
/// (truncation below 0.05 ulp); e^x - 1 = 2 (2^(k-1) (e^r - 1) + (2^(k-1) - 1/2)), one rounding
/// (2^(k-1) is finite up to the overflow at 709.78). Below -38, e^x is under half an ulp of 1: -1.
/// NaN gives NaN; -0 gives +0 (the keys of +0 and -0 are equal).
/// 1/13!, 1/12!, ..., 1/3!: on the GPU in constant memory, so that each is an operand the
/// multiply-adds read (one uniform load each) instead of a 64-bit immediate built by two moves at
/// every use.
#define CE_EXPM1_TAYLOR                                                                       \
  {                                                                                           \
    1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0, \
        1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0          \
  }
inline constexpr int kExpm1Terms = 11;
#if defined(__CUDA_ARCH__)
static __constant__ double kExpm1Taylor[kExpm1Terms] = CE_EXPM1_TAYLOR;  // not const: not folded
#else
inline constexpr double kExpm1Taylor[kExpm1Terms] = CE_EXPM1_TAYLOR;
#endif
#undef CE_EXPM1_TAYLOR

CE_HD_INLINE double expm1_fast(double x) {
  const double shifter = 6755399441055744.0;  // 1.5 * 2^52: t's low word is k
  const double t = fma_rn(x, 1.4426950408889634, shifter);
  const double k = sub_rn(t, shifter);
  double r = fma_rn(k, -6.93147180369123816490e-01, x);
  r = fma_rn(k, -1.90821492927058770002e-10, r);
  double q = kExpm1Taylor[0];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int n = 1; n < kExpm1Terms; ++n) q = fma_rn(q, r, kExpm1Taylor[n]);
  const double e = fma_rn(mul_rn(r, r), fma_rn(q, r, 0.5), r);
#if defined(__CUDA_ARCH__)
  const int ki = __double2loint(t);
  const double half_k = __hiloint2double((1022 + ki) << 20, 0);
#else
  uint64_t tb;
  std::memcpy(&tb, &t, sizeof tb);
  const int32_t ki = int32_t(uint32_t(tb));
  const uint64_t hb = uint64_t(int64_t(1022) + int64_t(ki)) << 52;
  double half_k;
  std::memcpy(&half_k, &hb, sizeof half_k);
#endif
  const double y = ki == 0 ? e : mul_rn(2.0, fma_rn(half_k, e, sub_rn(half_k, 0.5)));
  return x < -38.0 ? -1.0 : x > 709.79 ? HUGE_VAL : y;
}

#if defined(__CUDA_ARCH__) && defined(CRAWLEVAL_FP_PROBE)
// The rounding check's build: the library functions become calls it cannot see into.
__device__ __noinline__ double fp_probe_exp(double);
__device__ __noinline__ double fp_probe_expm1(double);
__device__ __noinline__ double fp_probe_log(double);
__device__ __noinline__ double fp_probe_log1p(double);
__device__ __noinline__ double fp_probe_sqrt(double);
CE_HD_INLINE double fp_exp(double v) { return fp_probe_exp(v); }
CE_HD_INLINE double fp_expm1(double v) { return fp_probe_expm1(v); }
CE_HD_INLINE double fp_log(double v) { return fp_probe_log(v); }
CE_HD_INLINE double fp_log1p(double v) { return fp_probe_log1p(v); }
CE_HD_INLINE double fp_sqrt(double v) { return fp_probe_sqrt(v); }
#else
CE_HD_INLINE double fp_exp(double v) { return exp(v); }
CE_HD_INLINE double fp_expm1(double v) {
#if defined(__CUDA_ARCH__)
  return expm1_fast(v);
#else
  return expm1(v);
#endif
}
CE_HD_INLINE double fp_log(double v) { return log(v); }
CE_HD_INLINE double fp_log1p(double v) { return log1p(v); }
/// Correctly rounded (IEEE) on the host and on the GPU: the same bits everywhere.
CE_HD_INLINE double fp_sqrt(double v) { return sqrt(v); }
#endif

}  // namespace crawleval
