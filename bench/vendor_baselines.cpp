// cuBLAS geam and cuDNN convolution, loaded at run time (vendor_library.hpp): no header or
// library is needed to build, and a machine without them reports the baseline unavailable,
// saying why. The few entry points are declared here with the C ABI their headers give
// (cublas_api.h, cudnn_*.h).
#include "baselines.hpp"
#include "tmakit/core/cuda_check.hpp"
#include "harness.hpp"
#include "vendor_library.hpp"

namespace tmakit::bench {

// ---- cuBLAS -----------------------------------------------------------------------------

struct CublasGeam::Api {
  VendorLibrary lib{"libcublas", "TMAKIT_CUBLAS_LIBRARY", {"libcublas.so.13", "libcublas.so.12"},
                    "cublas"};
  void* handle = nullptr;
  int (*create)(void**) = nullptr;
  int (*destroy)(void*) = nullptr;
  int (*set_stream)(void*, cudaStream_t) = nullptr;
  // cublasStatus_t cublas?geam(handle, transa, transb, m, n, alpha, A, lda, beta, B, ldb, C, ldc)
  int (*sgeam)(void*, int, int, int, int, const float*, const float*, int, const float*,
               const float*, int, float*, int) = nullptr;
  int (*dgeam)(void*, int, int, int, int, const double*, const double*, int, const double*,
               const double*, int, double*, int) = nullptr;
};

CublasGeam::CublasGeam() : api_(std::make_unique<Api>()) {
  VendorLibrary& lib = api_->lib;
  path_ = lib.path();
  if (!lib.bind("cublasCreate_v2", api_->create) || !lib.bind("cublasDestroy_v2", api_->destroy) ||
      !lib.bind("cublasSetStream_v2", api_->set_stream) || !lib.bind("cublasSgeam", api_->sgeam) ||
      !lib.bind("cublasDgeam", api_->dgeam)) {
    why_ = lib.why();
    return;
  }
  if (const int st = api_->create(&api_->handle); st != 0) {
    why_ = "cublasCreate returned " + std::to_string(st);
  }
}

CublasGeam::~CublasGeam() {
  if (api_ && api_->handle != nullptr) api_->destroy(api_->handle);
}

void CublasGeam::transpose(DataType type, const void* in, void* out, std::uint64_t rows,
                           std::uint64_t cols, cudaStream_t stream) {
  // NOTE: cuBLAS is column-major. Row-major in (rows x cols) is column-major A (cols x rows,
  // lda = cols); row-major out (cols x rows) is column-major C (rows x cols, ldc = rows), and
  // C = A^T. B is C itself with beta = 0.
  constexpr int kN = 0;
  constexpr int kT = 1;
  const int m = static_cast<int>(rows);
  const int n = static_cast<int>(cols);
  api_->set_stream(api_->handle, stream);
  int st = 0;
  if (type == DataType::float32) {
    const float one = 1.0f;
    const float zero = 0.0f;
    st = api_->sgeam(api_->handle, kT, kN, m, n, &one, static_cast<const float*>(in), n, &zero,
                     static_cast<const float*>(out), m, static_cast<float*>(out), m);
  } else {
    const double one = 1.0;
    const double zero = 0.0;
    st = api_->dgeam(api_->handle, kT, kN, m, n, &one, static_cast<const double*>(in), n, &zero,
                     static_cast<const double*>(out), m, static_cast<double*>(out), m);
  }
  if (st != 0) throw Error("cublas?geam returned status " + std::to_string(st));
}

// ---- cuDNN ------------------------------------------------------------------------------

struct CudnnConv::Api {
  VendorLibrary lib{"libcudnn.so.9", "TMAKIT_CUDNN_LIBRARY", {"libcudnn.so.9"}, "cudnn"};
  void* handle = nullptr;
  int (*create)(void**) = nullptr;
  int (*destroy)(void*) = nullptr;
  int (*set_stream)(void*, cudaStream_t) = nullptr;
  std::size_t (*get_version)() = nullptr;
  int (*create_tensor)(void**) = nullptr;
  int (*destroy_tensor)(void*) = nullptr;
  int (*set_tensor4d)(void*, int, int, int, int, int, int) = nullptr;
  int (*create_filter)(void**) = nullptr;
  int (*destroy_filter)(void*) = nullptr;
  int (*set_filter4d)(void*, int, int, int, int, int, int) = nullptr;
  int (*create_conv)(void**) = nullptr;
  int (*destroy_conv)(void*) = nullptr;
  int (*set_conv2d)(void*, int, int, int, int, int, int, int, int) = nullptr;
  int (*find_fwd)(void*, void*, void*, void*, void*, int, int*, void*) = nullptr;
  int (*workspace_size)(void*, void*, void*, void*, void*, int, std::size_t*) = nullptr;
  int (*forward)(void*, const void*, void*, const void*, void*, const void*, void*, int, void*,
                 std::size_t, const void*, void*, void*) = nullptr;
};

// cudnnConvolutionFwdAlgoPerf_t (cudnn_cnn.h).
struct FwdAlgoPerf {
  int algo;
  int status;
  float time;
  std::size_t memory;
  int determinism;
  int math_type;
  int reserved[3];
};

// One shape's descriptors, taps and workspace, all released with the plan.
struct CudnnConv::Plan {
  explicit Plan(const Api& api) : a(api) {}
  ~Plan() {
    if (x) a.destroy_tensor(x);
    if (y) a.destroy_tensor(y);
    if (w) a.destroy_filter(w);
    if (conv) a.destroy_conv(conv);
  }
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  const Api& a;
  void* x = nullptr;
  void* y = nullptr;
  void* w = nullptr;
  void* conv = nullptr;
  int algo = 0;
  std::unique_ptr<DeviceBuffer> weights;  // the taps, on the device
  std::unique_ptr<DeviceBuffer> workspace;
  std::size_t workspace_bytes = 0;
  DataType type = DataType::float32;
};

CudnnConv::CudnnConv() : api_(std::make_unique<Api>()) {
  auto& a = *api_;
  VendorLibrary& lib = a.lib;
  path_ = lib.path();
  if (!lib.bind("cudnnCreate", a.create) || !lib.bind("cudnnDestroy", a.destroy) ||
      !lib.bind("cudnnSetStream", a.set_stream) || !lib.bind("cudnnGetVersion", a.get_version) ||
      !lib.bind("cudnnCreateTensorDescriptor", a.create_tensor) ||
      !lib.bind("cudnnDestroyTensorDescriptor", a.destroy_tensor) ||
      !lib.bind("cudnnSetTensor4dDescriptor", a.set_tensor4d) ||
      !lib.bind("cudnnCreateFilterDescriptor", a.create_filter) ||
      !lib.bind("cudnnDestroyFilterDescriptor", a.destroy_filter) ||
      !lib.bind("cudnnSetFilter4dDescriptor", a.set_filter4d) ||
      !lib.bind("cudnnCreateConvolutionDescriptor", a.create_conv) ||
      !lib.bind("cudnnDestroyConvolutionDescriptor", a.destroy_conv) ||
      !lib.bind("cudnnSetConvolution2dDescriptor", a.set_conv2d) ||
      !lib.bind("cudnnFindConvolutionForwardAlgorithm", a.find_fwd) ||
      !lib.bind("cudnnGetConvolutionForwardWorkspaceSize", a.workspace_size) ||
      !lib.bind("cudnnConvolutionForward", a.forward)) {
    why_ = lib.why();
    return;
  }
  if (const int st = a.create(&a.handle); st != 0) {
    why_ = "cudnnCreate returned " + std::to_string(st);
    return;
  }
  path_ += " (cuDNN " + std::to_string(a.get_version()) + ")";
}

CudnnConv::~CudnnConv() {
  plan_.reset();  // its descriptors before the handle
  if (api_ && api_->handle != nullptr) api_->destroy(api_->handle);
}

std::string CudnnConv::plan(DataType type, std::uint64_t batch, std::uint64_t rows,
                            std::uint64_t cols, const Filter3x3& filter, cudaStream_t stream) {
  if (!why_.empty()) return why_;
  auto& a = *api_;
  plan_.reset();  // one plan at a time
  plan_ = std::make_unique<Plan>(a);
  Plan& p = *plan_;
  p.type = type;
  // CUDNN_TENSOR_NCHW = 0; CUDNN_DATA_FLOAT = 0, CUDNN_DATA_DOUBLE = 1;
  // CUDNN_CROSS_CORRELATION = 1 (cudnn_graph.h)
  const int dt = type == DataType::float64 ? 1 : 0;
  const int n = static_cast<int>(batch);
  const int h = static_cast<int>(rows);
  const int w = static_cast<int>(cols);
  a.set_stream(a.handle, stream);
  int st = a.create_tensor(&p.x);
  st = st ? st : a.create_tensor(&p.y);
  st = st ? st : a.create_filter(&p.w);
  st = st ? st : a.create_conv(&p.conv);
  st = st ? st : a.set_tensor4d(p.x, 0, dt, n, 1, h, w);
  st = st ? st : a.set_tensor4d(p.y, 0, dt, n, 1, h, w);
  st = st ? st : a.set_filter4d(p.w, dt, 0, 1, 1, 3, 3);
  st = st ? st : a.set_conv2d(p.conv, 1, 1, 1, 1, 1, 1, 1, dt);
  if (st != 0) return "cuDNN descriptor setup returned " + std::to_string(st);
  FwdAlgoPerf perf[8]{};
  int found = 0;
  st = a.find_fwd(a.handle, p.x, p.w, p.conv, p.y, 8, &found, perf);
  if (st != 0 || found == 0) {
    return "cudnnFindConvolutionForwardAlgorithm returned " +
           std::to_string(st);
  }
  int best = -1;
  for (int i = 0; i < found; ++i) {
    if (perf[i].status == 0) {
      best = i;
      break;  // sorted fastest first
    }
  }
  if (best < 0) return "cuDNN has no working algorithm for this shape";
  p.algo = perf[best].algo;
  st = a.workspace_size(a.handle, p.x, p.w, p.conv, p.y, p.algo, &p.workspace_bytes);
  if (st != 0) return "cuDNN workspace query returned " + std::to_string(st);
  if (p.workspace_bytes > 0) p.workspace = std::make_unique<DeviceBuffer>(p.workspace_bytes);
  const std::size_t esize = type == DataType::float64 ? 8 : 4;
  p.weights = std::make_unique<DeviceBuffer>(9 * esize);
  if (type == DataType::float64) {
    TMAKIT_CUDA_CHECK(
        cudaMemcpy(p.weights->get(), filter.taps.data(), 72, cudaMemcpyHostToDevice));
  } else {
    float taps[9];
    for (int i = 0; i < 9; ++i) taps[i] = static_cast<float>(filter.taps[i]);
    TMAKIT_CUDA_CHECK(cudaMemcpy(p.weights->get(), taps, 36, cudaMemcpyHostToDevice));
  }
  return "";
}

std::string CudnnConv::algorithm() const {
  static const char* names[] = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT",
                                "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
  if (!plan_) return "";
  return plan_->algo >= 0 && plan_->algo < 8 ? names[plan_->algo] : std::to_string(plan_->algo);
}

void CudnnConv::run(const void* in, void* out, cudaStream_t stream) {
  auto& a = *api_;
  Plan& p = *plan_;
  a.set_stream(a.handle, stream);
  const double one_d = 1.0;
  const double zero_d = 0.0;
  const float one_f = 1.0f;
  const float zero_f = 0.0f;
  const bool f64 = p.type == DataType::float64;
  const int st = a.forward(a.handle, f64 ? static_cast<const void*>(&one_d) : &one_f, p.x, in, p.w,
                           p.weights->get(), p.conv, p.algo,
                           p.workspace ? p.workspace->get() : nullptr, p.workspace_bytes,
                           f64 ? static_cast<const void*>(&zero_d) : &zero_f, p.y, out);
  if (st != 0) throw Error("cudnnConvolutionForward returned status " + std::to_string(st));
}

}  // namespace tmakit::bench
