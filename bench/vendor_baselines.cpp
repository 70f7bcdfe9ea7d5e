// cuBLAS geam and cuDNN convolution, loaded with dlopen: no header or library is needed to
// build, and a machine without them gets "baseline unavailable: <why>". The few entry
// points are declared here with the C ABI their headers give (cublas_api.h, cudnn_*.h).
#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "baselines.hpp"
#include "tmakit/core/cuda_check.hpp"

namespace tmakit::bench {
namespace {

// Candidate paths: an environment override, the loader's search, the CUDA toolkit, then
// Python wheels (PyTorch ships cuDNN as nvidia/cudnn/lib inside site-packages).
std::vector<std::string> candidates(const char* env, const std::vector<std::string>& sonames,
                                    const std::string& wheel_dir) {
  std::vector<std::string> out;
  if (const char* e = std::getenv(env); e != nullptr && *e != '\0') out.emplace_back(e);
  for (const auto& s : sonames) out.push_back(s);
  for (const auto& s : sonames) out.push_back("/usr/local/cuda/lib64/" + s);
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const char* root : {"/opt/torch/.venv/lib", "/usr/local/lib", "/usr/lib"}) {
    if (!fs::is_directory(root, ec)) continue;
    for (const auto& py : fs::directory_iterator(root, ec)) {
      const std::string name = py.path().filename().string();
      if (name.rfind("python3", 0) != 0) continue;
      for (const char* site : {"site-packages", "dist-packages"}) {
        for (const auto& s : sonames) {
          // NOTE: CUDA 12 wheels use nvidia/<lib>/lib, CUDA 13 wheels nvidia/cu13/lib.
          for (const std::string& dir : {wheel_dir, std::string("cu13")}) {
            const fs::path p = py.path() / site / "nvidia" / dir / "lib" / s;
            if (fs::exists(p, ec)) out.push_back(p.string());
          }
        }
      }
    }
  }
  return out;
}

// Opens the first candidate that loads; `path` names it, `why` collects the failures.
void* open_first(const std::vector<std::string>& paths, std::string& path, std::string& why) {
  for (const auto& p : paths) {
    if (void* h = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      path = p;
      return h;
    }
    if (why.size() < 400) why += (why.empty() ? "" : "; ") + std::string(dlerror());
  }
  return nullptr;
}

template <class F>
bool bind(void* h, const char* name, F& fn, std::string& why) {
  fn = reinterpret_cast<F>(dlsym(h, name));
  if (fn == nullptr) why = std::string("symbol ") + name + " missing";
  return fn != nullptr;
}

}  // namespace

// ---- cuBLAS -----------------------------------------------------------------------------

struct CublasGeam::Api {
  void* lib = nullptr;
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
  std::string errors;
  api_->lib = open_first(candidates("TMAKIT_CUBLAS_LIBRARY", {"libcublas.so.13", "libcublas.so.12"},
                                    "cublas"),
                         path_, errors);
  if (api_->lib == nullptr) {
    why_ = "baseline unavailable: libcublas not found (" + errors + ")";
    return;
  }
  std::string miss;
  if (!bind(api_->lib, "cublasCreate_v2", api_->create, miss) ||
      !bind(api_->lib, "cublasDestroy_v2", api_->destroy, miss) ||
      !bind(api_->lib, "cublasSetStream_v2", api_->set_stream, miss) ||
      !bind(api_->lib, "cublasSgeam", api_->sgeam, miss) ||
      !bind(api_->lib, "cublasDgeam", api_->dgeam, miss)) {
    why_ = "baseline unavailable: " + path_ + ": " + miss;
    return;
  }
  if (const int st = api_->create(&api_->handle); st != 0) {
    why_ = "baseline unavailable: cublasCreate returned " + std::to_string(st);
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
  void* lib = nullptr;
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

struct CudnnConv::Plan {
  void* x = nullptr;
  void* y = nullptr;
  void* w = nullptr;
  void* conv = nullptr;
  int algo = 0;
  void* weights = nullptr;  // device copy of the taps
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  DataType type = DataType::float32;
};

CudnnConv::CudnnConv() : api_(std::make_unique<Api>()) {
  std::string errors;
  api_->lib = open_first(candidates("TMAKIT_CUDNN_LIBRARY", {"libcudnn.so.9"}, "cudnn"), path_,
                         errors);
  if (api_->lib == nullptr) {
    why_ = "baseline unavailable: libcudnn.so.9 not found (" + errors + ")";
    return;
  }
  std::string miss;
  auto* h = api_->lib;
  auto& a = *api_;
  if (!bind(h, "cudnnCreate", a.create, miss) || !bind(h, "cudnnDestroy", a.destroy, miss) ||
      !bind(h, "cudnnSetStream", a.set_stream, miss) ||
      !bind(h, "cudnnGetVersion", a.get_version, miss) ||
      !bind(h, "cudnnCreateTensorDescriptor", a.create_tensor, miss) ||
      !bind(h, "cudnnDestroyTensorDescriptor", a.destroy_tensor, miss) ||
      !bind(h, "cudnnSetTensor4dDescriptor", a.set_tensor4d, miss) ||
      !bind(h, "cudnnCreateFilterDescriptor", a.create_filter, miss) ||
      !bind(h, "cudnnDestroyFilterDescriptor", a.destroy_filter, miss) ||
      !bind(h, "cudnnSetFilter4dDescriptor", a.set_filter4d, miss) ||
      !bind(h, "cudnnCreateConvolutionDescriptor", a.create_conv, miss) ||
      !bind(h, "cudnnDestroyConvolutionDescriptor", a.destroy_conv, miss) ||
      !bind(h, "cudnnSetConvolution2dDescriptor", a.set_conv2d, miss) ||
      !bind(h, "cudnnFindConvolutionForwardAlgorithm", a.find_fwd, miss) ||
      !bind(h, "cudnnGetConvolutionForwardWorkspaceSize", a.workspace_size, miss) ||
      !bind(h, "cudnnConvolutionForward", a.forward, miss)) {
    why_ = "baseline unavailable: " + path_ + ": " + miss;
    return;
  }
  if (const int st = a.create(&a.handle); st != 0) {
    why_ = "baseline unavailable: cudnnCreate returned " + std::to_string(st);
    return;
  }
  path_ += " (cuDNN " + std::to_string(a.get_version()) + ")";
}

CudnnConv::~CudnnConv() {
  if (plan_) {
    auto& a = *api_;
    if (plan_->x) a.destroy_tensor(plan_->x);
    if (plan_->y) a.destroy_tensor(plan_->y);
    if (plan_->w) a.destroy_filter(plan_->w);
    if (plan_->conv) a.destroy_conv(plan_->conv);
    if (plan_->weights) cudaFree(plan_->weights);
    if (plan_->workspace) cudaFree(plan_->workspace);
  }
  if (api_ && api_->handle != nullptr) api_->destroy(api_->handle);
}

std::string CudnnConv::plan(DataType type, std::uint64_t batch, std::uint64_t rows,
                            std::uint64_t cols, const Filter3x3& filter, cudaStream_t stream) {
  if (!why_.empty()) return why_;
  auto& a = *api_;
  if (plan_) {  // one plan at a time
    a.destroy_tensor(plan_->x);
    a.destroy_tensor(plan_->y);
    a.destroy_filter(plan_->w);
    a.destroy_conv(plan_->conv);
    cudaFree(plan_->weights);
    if (plan_->workspace) cudaFree(plan_->workspace);
    plan_.reset();
  }
  plan_ = std::make_unique<Plan>();
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
  if (st != 0) return "baseline unavailable: cuDNN descriptor setup returned " + std::to_string(st);
  FwdAlgoPerf perf[8]{};
  int found = 0;
  st = a.find_fwd(a.handle, p.x, p.w, p.conv, p.y, 8, &found, perf);
  if (st != 0 || found == 0) {
    return "baseline unavailable: cudnnFindConvolutionForwardAlgorithm returned " +
           std::to_string(st);
  }
  int best = -1;
  for (int i = 0; i < found; ++i) {
    if (perf[i].status == 0) {
      best = i;
      break;  // sorted fastest first
    }
  }
  if (best < 0) return "baseline unavailable: cuDNN has no working algorithm for this shape";
  p.algo = perf[best].algo;
  st = a.workspace_size(a.handle, p.x, p.w, p.conv, p.y, p.algo, &p.workspace_bytes);
  if (st != 0) return "baseline unavailable: cuDNN workspace query returned " + std::to_string(st);
  if (p.workspace_bytes > 0) TMAKIT_CUDA_CHECK(cudaMalloc(&p.workspace, p.workspace_bytes));
  const std::size_t esize = type == DataType::float64 ? 8 : 4;
  TMAKIT_CUDA_CHECK(cudaMalloc(&p.weights, 9 * esize));
  if (type == DataType::float64) {
    TMAKIT_CUDA_CHECK(cudaMemcpy(p.weights, filter.taps.data(), 72, cudaMemcpyHostToDevice));
  } else {
    float taps[9];
    for (int i = 0; i < 9; ++i) taps[i] = static_cast<float>(filter.taps[i]);
    TMAKIT_CUDA_CHECK(cudaMemcpy(p.weights, taps, 36, cudaMemcpyHostToDevice));
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
                           p.weights, p.conv, p.algo, p.workspace, p.workspace_bytes,
                           f64 ? static_cast<const void*>(&zero_d) : &zero_f, p.y, out);
  if (st != 0) throw Error("cudnnConvolutionForward returned status " + std::to_string(st));
}

}  // namespace tmakit::bench
