// CUDA error handling: every runtime call goes through CE_CUDA_TRY, which throws crawleval::Error
// with the call's text, file:line and the error's name; CE_CUDA_CHECK_LAUNCH() follows every
// kernel launch (and synchronises in Debug builds so an error names the right kernel);
// CE_CUDA_TRY_NOTHROW is for destructors.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <string>

#include "crawleval/base/error.hpp"

namespace crawleval::cuda::detail {

[[noreturn]] inline void throw_cuda_error(cudaError_t e, const char* call, const char* file,
                                          int line) {
  throw Error(std::string("CUDA error ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) +
              ") in " + call + " at " + file + ":" + std::to_string(line));
}

}  // namespace crawleval::cuda::detail

#define CE_CUDA_TRY(call)                                                                 \
  do {                                                                                    \
    const cudaError_t ce_status_ = (call);                                                \
    if (ce_status_ != cudaSuccess)                                                        \
      ::crawleval::cuda::detail::throw_cuda_error(ce_status_, #call, __FILE__, __LINE__); \
  } while (0)

#ifdef NDEBUG
#define CE_CUDA_CHECK_LAUNCH() CE_CUDA_TRY(cudaGetLastError())
#else
#define CE_CUDA_CHECK_LAUNCH()            \
  do {                                    \
    CE_CUDA_TRY(cudaGetLastError());      \
    CE_CUDA_TRY(cudaDeviceSynchronize()); \
  } while (0)
#endif

#define CE_CUDA_TRY_NOTHROW(call)                                                 \
  do {                                                                            \
    const cudaError_t ce_status_ = (call);                                        \
    if (ce_status_ != cudaSuccess)                                                \
      std::fprintf(stderr, "crawleval: CUDA error %s in %s at %s:%d (ignored)\n", \
                   cudaGetErrorName(ce_status_), #call, __FILE__, __LINE__);      \
  } while (0)
