// Runs the built tmakit binary (TMAKIT_CLI, set by the build) and captures stdout + exit code.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#ifndef TMAKIT_CLI
#error "TMAKIT_CLI (path of the tmakit binary) must be defined by the build"
#endif

namespace tmakit::testing {

struct CliResult {
  int code = -1;  // exit code; -1 when the process did not exit normally (a crash)
  std::string out;
};

// `args` is appended to the binary's path; stderr is dropped, or captured with stdout.
// `environment`: assignments the shell puts before the command ("PATH=... ").
inline CliResult run_cli(const std::string& args, bool with_stderr = false,
                         const std::string& environment = "") {
  const std::string cmd = environment + std::string(TMAKIT_CLI) + " " + args +
                          (with_stderr ? " 2>&1" : " 2>/dev/null");
  CliResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// A scratch directory removed at the end of the scope.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag)
      : path_(std::filesystem::temp_directory_path() /
              ("tmakit_" + tag + "_" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  std::string write(const std::string& name, const std::string& bytes) const {
    const auto p = path_ / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p.string();
  }
  std::string path(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace tmakit::testing
