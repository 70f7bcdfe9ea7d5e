#include "vendor_library.hpp"

#include <cstdlib>
#include <filesystem>
#include <vector>

namespace tmakit::bench {
namespace {

std::vector<std::string> candidates(const char* env,
                                    std::initializer_list<std::string_view> sonames,
                                    std::string_view wheel_dir) {
  std::vector<std::string> out;
  if (const char* e = std::getenv(env); e != nullptr && *e != '\0') out.emplace_back(e);
  for (const auto s : sonames) out.emplace_back(s);
  for (const auto s : sonames) out.push_back("/usr/local/cuda/lib64/" + std::string(s));
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const char* root : {"/opt/torch/.venv/lib", "/usr/local/lib", "/usr/lib"}) {
    if (!fs::is_directory(root, ec)) continue;
    for (const auto& py : fs::directory_iterator(root, ec)) {
      if (py.path().filename().string().rfind("python3", 0) != 0) continue;
      for (const char* site : {"site-packages", "dist-packages"}) {
        for (const auto s : sonames) {
          // NOTE: CUDA 12 wheels use nvidia/<lib>/lib, CUDA 13 wheels nvidia/cu13/lib.
          for (const std::string_view dir : {wheel_dir, std::string_view("cu13")}) {
            const fs::path p = py.path() / site / "nvidia" / dir / "lib" / s;
            if (fs::exists(p, ec)) out.push_back(p.string());
          }
        }
      }
    }
  }
  return out;
}

}  // namespace

VendorLibrary::VendorLibrary(std::string_view name, const char* env,
                             std::initializer_list<std::string_view> sonames,
                             std::string_view wheel_dir) {
  std::string errors;
  for (const auto& p : candidates(env, sonames, wheel_dir)) {
    // NOTE: RTLD_LOCAL: the library's symbols are reached through bind() alone. cuBLAS finds
    // the cuBLASLt it needs by its soname, loaded already or next to it.
    if (void* h = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      handle_ = h;
      path_ = p;
      return;
    }
    if (errors.size() < 400) errors += (errors.empty() ? "" : "; ") + std::string(dlerror());
  }
  why_ = std::string(name) + " not found (" + errors + ")";
}

}  // namespace tmakit::bench
