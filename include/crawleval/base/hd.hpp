// Host/device annotations shared by the model headers. Plain C++ compilers see nothing.
#pragma once

#if defined(__CUDACC__)
#define CE_HD __host__ __device__
#define CE_HD_INLINE __host__ __device__ __forceinline__
/// A rare path kept out of line on the device (its registers are not reserved in the caller).
#define CE_HD_NOINLINE inline __host__ __device__ __noinline__
/// A loop over a small constant count unrolled on the device, so that the arrays it indexes stay
/// in registers (a run-time index puts an array in local memory).
#define CE_UNROLL _Pragma("unroll")
/// Before a __host__ __device__ template whose argument's members may be __device__ only (a
/// kernel's accessor) or host only (a host twin's): each instantiation is checked where it runs.
#define CE_HD_TEMPLATE_CHECK_OFF _Pragma("nv_exec_check_disable")
#else
#define CE_HD
#define CE_HD_INLINE inline
#define CE_HD_NOINLINE inline
#define CE_UNROLL
#define CE_HD_TEMPLATE_CHECK_OFF
#endif
