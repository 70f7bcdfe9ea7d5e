// The few CUDA driver entry points tmakit needs, fetched at run time from libcuda.so.1, so
// no binary links the driver and a machine without one gets a clear error, not a loader
// failure. cuInit(0) is called once on first use.
#pragma once

#include <cuda.h>

namespace tmakit {

struct DriverApi {
  CUresult (*cuInit)(unsigned int);
  CUresult (*cuDriverGetVersion)(int*);
  CUresult (*cuGetErrorName)(CUresult, const char**);
  CUresult (*cuGetErrorString)(CUresult, const char**);
  CUresult (*cuTensorMapEncodeTiled)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                     const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                     const cuuint32_t*, CUtensorMapInterleave,
                                     CUtensorMapSwizzle, CUtensorMapL2promotion,
                                     CUtensorMapFloatOOBfill);
  CUresult (*cuTensorMapEncodeIm2col)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                      const cuuint64_t*, const cuuint64_t*, const int*,
                                      const int*, cuuint32_t, cuuint32_t, const cuuint32_t*,
                                      CUtensorMapInterleave, CUtensorMapSwizzle,
                                      CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  // Optional (nullptr when the driver lacks it): cuTensorMapEncodeIm2colWide (CUDA 12.8+).
  CUresult (*cuTensorMapEncodeIm2colWide)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                          const cuuint64_t*, const cuuint64_t*, int, int,
                                          cuuint32_t, cuuint32_t, const cuuint32_t*,
                                          CUtensorMapInterleave, CUtensorMapIm2ColWideMode,
                                          CUtensorMapSwizzle, CUtensorMapL2promotion,
                                          CUtensorMapFloatOOBfill);
  // Optional: cuDeviceGetAttribute, to read device 0's compute capability.
  CUresult (*cuDeviceGetAttribute)(int*, CUdevice_attribute, CUdevice);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxGetCurrent)(CUcontext*);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  // Result of the one cuInit(0) call (CUDA_ERROR_NO_DEVICE on a machine without a GPU).
  CUresult init_result;
};

// The loaded driver; throws tmakit::CudaError naming libcuda.so.1 when there is none.
const DriverApi& driver();

// NOTE: the driver refuses to encode tensor maps without a current context
// (CUDA_ERROR_INVALID_CONTEXT). When the calling thread has none, make device 0's primary
// context current: the one the CUDA runtime uses, so runtime users see no difference.
// Returns the driver's error, CUDA_SUCCESS when a context is current.
CUresult ensure_current_context() noexcept;

// True when libcuda.so.1 loads and cuInit(0) succeeded.
bool driver_available() noexcept;

// Device 0's compute capability {major, minor}, or {0, 0} when there is no driver, no device or
// the driver cannot say.
struct ComputeCapability {
  int major = 0;
  int minor = 0;
};
ComputeCapability device_compute_capability() noexcept;

// The driver's name of `r` ("CUDA_ERROR_INVALID_VALUE"), or "CUDA_ERROR_UNKNOWN" where there is
// no driver to ask (throw_cuda_error, core/cuda_check.hpp, adds the code and the text).
const char* driver_error_name(CUresult r) noexcept;

namespace detail {
void check_driver(CUresult status, const char* call, const char* file, int line);
}  // namespace detail

}  // namespace tmakit

#define TMAKIT_DRIVER_CHECK(call) \
  ::tmakit::detail::check_driver((call), #call, __FILE__, __LINE__)
