// Files the CLI commands write (bench's reports, swizzle's pictures): checked before any work
// or output, and written whole or not at all.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

namespace tmakit::cli {

// Why a file could not be written to `path`, checked before a command's work (bench's run
// takes minutes) without creating it: nullopt when it exists and is writable, or its folder is.
inline std::optional<std::string> unwritable(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) return "is a directory";
  if (fs::exists(path, ec)) {
    if (::access(path.c_str(), W_OK) != 0) return std::strerror(errno);
    return std::nullopt;
  }
  const fs::path parent = fs::path(path).parent_path();
  const std::string folder = parent.empty() ? std::string(".") : parent.string();
  if (!fs::is_directory(folder, ec)) return "its folder " + folder + " does not exist";
  if (::access(folder.c_str(), W_OK) != 0)
    return "its folder " + folder + ": " + std::strerror(errno);
  return std::nullopt;
}

// Whether two paths name one file: the same path once made absolute and normal (`r.json`
// and `./r.json`, existing or not), or existing files of one device and inode (links).
inline bool same_file(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  std::error_code ea, eb;
  const fs::path ca = fs::weakly_canonical(fs::absolute(a, ea).lexically_normal(), ea);
  const fs::path cb = fs::weakly_canonical(fs::absolute(b, eb).lexically_normal(), eb);
  if (a == b || (!ea && !eb && ca == cb)) return true;
  struct stat sa {}, sb {};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

// Why a command's two output files (an empty path: not asked for) cannot be written, checked
// before its work: each writable (unwritable), the two not one file. nullopt when they may be.
inline std::optional<std::string> outputs_unwritable(const char* flag_a, const std::string& a,
                                                     const char* flag_b, const std::string& b) {
  for (const auto& [flag, path] : {std::pair{flag_a, &a}, std::pair{flag_b, &b}}) {
    if (path->empty()) continue;
    if (const auto why = unwritable(*path)) {
      return std::string(flag) + " " + *path + " cannot be written: " + *why;
    }
  }
  if (!a.empty() && !b.empty() && same_file(a, b)) {
    return std::string(flag_a) + " and " + flag_b + " name one file (" + a + ")";
  }
  return std::nullopt;
}

// Writes `text` to `path` whole, or leaves it as it was: a temporary file beside it, written,
// synced to the disk's answer (a full disk shows at the write or the close), then renamed over
// `path`. A new file or a regular one in a folder that may be written only: anything else (a
// link, whose target is what is meant; a FIFO, /dev/full, a terminal; a writable file in a
// folder that is not) is written in place, its failure reported the same. nullopt on success,
// else why.
inline std::optional<std::string> write_whole(const std::string& path, const std::string& text) {
  auto write_all = [&](int fd) -> int {
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return errno;
      done += static_cast<std::size_t>(n);
    }
    return 0;
  };
  struct stat st {};
  const bool exists = ::lstat(path.c_str(), &st) == 0;
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const std::string folder = parent.empty() ? std::string(".") : parent.string();
  if (exists && (!S_ISREG(st.st_mode) || ::access(folder.c_str(), W_OK) != 0)) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0) return std::strerror(errno);
    int err = write_all(fd);
    if (::close(fd) != 0 && err == 0) err = errno;
    return err == 0 ? std::nullopt : std::optional<std::string>(std::strerror(err));
  }
  std::string temporary = path + ".tmp-XXXXXX";
  const int fd = ::mkstemp(temporary.data());
  if (fd < 0) return std::strerror(errno);
  int err = write_all(fd);
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  // (mkstemp makes the file 0600: the mode the file had, or a new file's under the umask)
  if (err == 0) {
    const ::mode_t mask = ::umask(0);
    ::umask(mask);
    ::chmod(temporary.c_str(), exists ? st.st_mode & 07777 : 0666 & ~mask);
  }
  if (err == 0 && std::rename(temporary.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(temporary.c_str());
    return std::strerror(err);
  }
  return std::nullopt;
}

}  // namespace tmakit::cli
