// Host/device annotations shared by the model headers. Plain C++ compilers see nothing.
#pragma once

#if defined(__CUDACC__)
#define CE_HD __host__ __device__
#define CE_HD_INLINE __host__ __device__ __forceinline__
/// A rare path kept out of line on the device (its registers are not reserved in the caller).
#define CE_HD_NOINLINE inline __host__ __device__ __noinline__
#else
#define CE_HD
#define CE_HD_INLINE inline
#define CE_HD_NOINLINE inline
#endif
