// A stand-in for libcuda.so.1, for host tests of `tmakit check --driver` on machines without a
// GPU: the entry points tmakit's driver loader binds (src/host/driver.cpp), answering as a
// driver with one device that accepts every tensor map. Loaded only where a test puts its
// folder on LD_LIBRARY_PATH. Plain C types, not cuda.h's, so that no macro renames a symbol.
#include <cstdint>

namespace {
void* g_current = nullptr;
int g_context_storage = 0;
}  // namespace

extern "C" {

int cuInit(unsigned) {
  return 0;
}
int cuDriverGetVersion(int* version) {
  *version = 12040;
  return 0;
}
int cuGetErrorName(int, const char** text) {
  *text = "CUDA_ERROR_STAND_IN";
  return 0;
}
int cuGetErrorString(int, const char** text) {
  *text = "the stand-in driver of tmakit's host tests";
  return 0;
}
int cuTensorMapEncodeTiled(void*, int, std::uint32_t, void*, const std::uint64_t*,
                           const std::uint64_t*, const std::uint32_t*, const std::uint32_t*, int,
                           int, int, int) {
  return 0;
}
int cuTensorMapEncodeIm2col(void*, int, std::uint32_t, void*, const std::uint64_t*,
                            const std::uint64_t*, const int*, const int*, std::uint32_t,
                            std::uint32_t, const std::uint32_t*, int, int, int, int) {
  return 0;
}
int cuDeviceGet(int* device, int) {
  *device = 0;
  return 0;
}
int cuDevicePrimaryCtxRetain(void** context, int) {
  *context = &g_context_storage;
  return 0;
}
int cuCtxGetCurrent(void** context) {
  *context = g_current;
  return 0;
}
int cuCtxSetCurrent(void* context) {
  g_current = context;
  return 0;
}

}  // extern "C"
