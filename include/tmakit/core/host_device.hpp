// TMAKIT_HOST_DEVICE: a function both host and device code call (nvcc's __host__ __device__;
// nothing for a host compiler). NOTE: a constexpr function without it is host-only to nvcc
// unless the consumer builds with --expt-relaxed-constexpr, which tmakit's headers never ask of
// its users.
#pragma once

#if defined(__CUDACC__)
#define TMAKIT_HOST_DEVICE __host__ __device__
#else
#define TMAKIT_HOST_DEVICE
#endif
