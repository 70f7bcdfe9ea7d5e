// Vendor libraries (cuBLAS, cuBLASLt, cuDNN) opened at run time with dlopen: the benchmark
// builds without their headers' libraries and starts on a machine without them, and a
// missing baseline says which files were tried and why each failed.
#pragma once

#include <dlfcn.h>

#include <initializer_list>
#include <string>
#include <string_view>

namespace tmakit::bench {

class VendorLibrary {
 public:
  // Opens the first candidate that loads: the file named by the environment variable `env`
  // when it is set, each of `sonames` through the loader's own search, each in
  // /usr/local/cuda/lib64, then each in Python wheels (site-packages or dist-packages of
  // /opt/torch/.venv/lib, /usr/local/lib or /usr/lib: nvidia/<wheel_dir>/lib, the CUDA 12
  // layout, and nvidia/cu13/lib). `name` ("libcublas") names the library in why().
  VendorLibrary(std::string_view name, const char* env,
                std::initializer_list<std::string_view> sonames, std::string_view wheel_dir);
  // NOTE: never closed: handles the library made (cuBLAS, cuDNN) may be destroyed late in
  // the process's exit, and dlopen counts references, so opening one file twice costs nothing.
  ~VendorLibrary() = default;
  VendorLibrary(const VendorLibrary&) = delete;
  VendorLibrary& operator=(const VendorLibrary&) = delete;

  bool loaded() const { return handle_ != nullptr; }
  // The file that loaded; empty when none did.
  const std::string& path() const { return path_; }
  // Why the library cannot be used: "libcublas not found (<each dlerror>)", or the first
  // symbol bind() did not find ("<path>: symbol cublasSgeam missing"); empty while usable.
  const std::string& why() const { return why_; }

  // Points `fn` at the symbol `name`; false, with why() naming the symbol, when it is missing.
  template <class F>
  bool bind(const char* name, F& fn) {
    fn = handle_ != nullptr ? reinterpret_cast<F>(dlsym(handle_, name)) : nullptr;
    if (fn == nullptr && why_.empty()) why_ = path_ + ": symbol " + name + " missing";
    return fn != nullptr;
  }

 private:
  void* handle_ = nullptr;
  std::string path_;
  std::string why_;
};

}  // namespace tmakit::bench
