// model.hpp's index_log1p and index_expm1 on the host: SLEEF's deterministic ("cinz") variants,
// whose results do not depend on the vector width they are computed at (SLEEF's libm tester checks
// every width against one hash), so the scalar index here and the eight-wide one of
// whittle_avx512.cpp agree bit for bit (tests/test_cpu_backend.cpp checks it too). One value at a
// time they run on SSE2, which every x86-64 has (faster than the portable C variant).
#include <sleef.h>

#include "crawleval/model/model.hpp"

namespace crawleval {

#if defined(__x86_64__)
double index_log1p(double v) { return _mm_cvtsd_f64(Sleef_cinz_log1pd2_u10sse2(_mm_set_sd(v))); }
double index_expm1(double v) { return _mm_cvtsd_f64(Sleef_cinz_expm1d2_u10sse2(_mm_set_sd(v))); }
#else
double index_log1p(double v) { return Sleef_cinz_log1pd1_u10purec(v); }
double index_expm1(double v) { return Sleef_cinz_expm1d1_u10purec(v); }
#endif

}  // namespace crawleval
