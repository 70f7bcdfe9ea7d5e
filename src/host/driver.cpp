#include "tmakit/host/driver.hpp"

#include <dlfcn.h>

#include <string>
#include <utility>

#include "tmakit/core/cuda_check.hpp"

namespace tmakit {
namespace {

struct Loaded {
  DriverApi api{};
  std::string error;  // empty when loaded
};

template <class F>
bool bind(void* lib, const char* symbol, F& out) {
  out = reinterpret_cast<F>(dlsym(lib, symbol));
  return out != nullptr;
}

Loaded load() {
  Loaded l;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    l.error = std::string("no CUDA driver: dlopen(libcuda.so.1) failed: ") + dlerror();
    return l;
  }
  DriverApi& a = l.api;
  const bool ok = bind(lib, "cuInit", a.cuInit) &&
                  bind(lib, "cuDriverGetVersion", a.cuDriverGetVersion) &&
                  bind(lib, "cuGetErrorName", a.cuGetErrorName) &&
                  bind(lib, "cuGetErrorString", a.cuGetErrorString) &&
                  bind(lib, "cuTensorMapEncodeTiled", a.cuTensorMapEncodeTiled) &&
                  bind(lib, "cuTensorMapEncodeIm2col", a.cuTensorMapEncodeIm2col) &&
                  bind(lib, "cuDeviceGet", a.cuDeviceGet) &&
                  bind(lib, "cuDevicePrimaryCtxRetain", a.cuDevicePrimaryCtxRetain) &&
                  bind(lib, "cuCtxGetCurrent", a.cuCtxGetCurrent) &&
                  bind(lib, "cuCtxSetCurrent", a.cuCtxSetCurrent);
  if (!ok) {
    l.error = "the CUDA driver in libcuda.so.1 lacks the tensor-map entry points (driver 525+ "
              "needed)";
    return l;
  }
  // NOTE: looked up after the required ones: a driver without them still serves the rest.
  bind(lib, "cuTensorMapEncodeIm2colWide", a.cuTensorMapEncodeIm2colWide);
  bind(lib, "cuDeviceGetAttribute", a.cuDeviceGetAttribute);
  a.init_result = a.cuInit(0);
  return l;
}

const Loaded& loaded() {
  static const Loaded l = load();
  return l;
}

}  // namespace

const DriverApi& driver() {
  const Loaded& l = loaded();
  if (!l.error.empty()) throw CudaError(CUDA_ERROR_NOT_FOUND, l.error);
  return l.api;
}

CUresult ensure_current_context() noexcept {
  const Loaded& l = loaded();
  if (!l.error.empty()) return CUDA_ERROR_NOT_FOUND;
  if (l.api.init_result != CUDA_SUCCESS) return l.api.init_result;
  CUcontext current = nullptr;
  if (l.api.cuCtxGetCurrent(&current) == CUDA_SUCCESS && current != nullptr) return CUDA_SUCCESS;
  // The primary context is retained once per process and never released: it lives as long
  // as the runtime's would.
  static const std::pair<CUresult, CUcontext> primary = [&l] {
    CUdevice device = 0;
    CUcontext ctx = nullptr;
    CUresult r = l.api.cuDeviceGet(&device, 0);
    if (r == CUDA_SUCCESS) r = l.api.cuDevicePrimaryCtxRetain(&ctx, device);
    return std::pair{r, ctx};
  }();
  if (primary.first != CUDA_SUCCESS) return primary.first;
  return l.api.cuCtxSetCurrent(primary.second);
}

ComputeCapability device_compute_capability() noexcept {
  const Loaded& l = loaded();
  if (!l.error.empty() || l.api.init_result != CUDA_SUCCESS ||
      l.api.cuDeviceGetAttribute == nullptr) {
    return {};
  }
  CUdevice dev = 0;
  if (l.api.cuDeviceGet(&dev, 0) != CUDA_SUCCESS) return {};
  ComputeCapability cc;
  if (l.api.cuDeviceGetAttribute(&cc.major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) !=
          CUDA_SUCCESS ||
      l.api.cuDeviceGetAttribute(&cc.minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) !=
          CUDA_SUCCESS) {
    return {};
  }
  return cc;
}

bool driver_available() noexcept {
  const Loaded& l = loaded();
  return l.error.empty() && l.api.init_result == CUDA_SUCCESS;
}

const char* driver_error_name(CUresult r) noexcept {
  const char* s = nullptr;
  const Loaded& l = loaded();
  if (l.error.empty() && l.api.cuGetErrorName(r, &s) == CUDA_SUCCESS && s != nullptr) return s;
  return "CUDA_ERROR_UNKNOWN";
}

namespace detail {
void check_driver(CUresult status, const char* call, const char* file, int line) {
  if (status == CUDA_SUCCESS) return;
  const char* text = nullptr;
  if (loaded().error.empty()) loaded().api.cuGetErrorString(status, &text);
  throw_cuda_error(static_cast<int>(status), driver_error_name(status),
                   text != nullptr ? text : "", call, file, line);
}
}  // namespace detail

}  // namespace tmakit
