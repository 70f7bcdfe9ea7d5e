// Checked input and output for the CLI commands: files and stdin read line by line through
// read(2), so that a directory, a closed stdin or a failing read is reported (exit 2) instead
// of looking like an empty file, and no line longer than a limit is ever held whole.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>

#include "tmakit/host/driver.hpp"
#include "tmakit/host/tensor_map_spec.hpp"

namespace tmakit::cli {

// An opened input: a file, or stdin for "-". `error` says why it could not be opened.
class Input {
 public:
  // `what` names the input in messages ("--jsonl specs.jsonl").
  Input(const std::string& path, std::string what) : what_(std::move(what)) {
    if (path == "-") {
      fd_ = STDIN_FILENO;
    } else {
      fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      owned_ = fd_ >= 0;
      if (fd_ < 0) {
        error_ = std::strerror(errno);
        return;
      }
    }
    struct stat st {}, out {};
    if (::fstat(fd_, &st) != 0) {
      error_ = std::strerror(errno);  // a closed stdin: "Bad file descriptor"
    } else if (S_ISDIR(st.st_mode)) {
      error_ = "is a directory";
    } else if (S_ISREG(st.st_mode) && ::fstat(STDOUT_FILENO, &out) == 0 &&
               st.st_dev == out.st_dev && st.st_ino == out.st_ino) {
      // NOTE: `tmakit check --jsonl F >> F` would judge its own verdicts forever
      error_ = "it is also the output (stdout); write the output to another file";
    }
  }
  ~Input() {
    if (owned_) ::close(fd_);
  }
  Input(const Input&) = delete;
  Input& operator=(const Input&) = delete;

  bool ok() const { return error_.empty(); }
  // "cannot read --jsonl x: is a directory"
  std::string error() const { return "cannot read " + what_ + ": " + error_; }
  int fd() const { return fd_; }
  ::off_t regular_file_bytes() const {
    struct stat st {};
    return ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode) ? st.st_size : -1;
  }
  // Records a failed read (errno) for error().
  void failed(int err) { error_ = std::strerror(err); }

 private:
  std::string what_;
  int fd_ = -1;
  bool owned_ = false;
  std::string error_;
};

// Lines of an Input, "\n" or "\r\n" ended (the last may lack it). A line past `max_bytes` is
// not kept: it comes back as too_long with its length (without the "\r"), and the next line
// follows as usual.
class LineReader {
 public:
  enum class Got { line, too_long, end, failed };

  LineReader(Input& in, std::size_t max_bytes) : in_(in), max_bytes_(max_bytes) {}

  // Fills `line` (too_long: empty, `length` the line's full size).
  Got next(std::string& line, std::size_t& length) {
    line.clear();
    length = 0;
    if (done_) return Got::end;
    char last = 0;
    for (;;) {
      if (pos_ == end_) {
        const ssize_t n = read_some();
        if (n < 0) return Got::failed;
        if (n == 0) {
          done_ = true;
          if (length == 0) return Got::end;
          break;  // a last line without "\n"
        }
      }
      const char* begin = buffer_ + pos_;
      const void* nl = std::memchr(begin, '\n', end_ - pos_);
      const std::size_t take = nl ? static_cast<const char*>(nl) - begin : end_ - pos_;
      if (length + take <= max_bytes_ + 1) line.append(begin, take);  // +1: a "\r" to drop
      if (take > 0) last = begin[take - 1];
      length += take;
      pos_ += take;
      if (nl) {
        ++pos_;
        break;
      }
    }
    if (last == '\r') {
      --length;
      if (line.size() > length) line.pop_back();  // kept whole, "\r" included
    }
    if (length > max_bytes_) {
      line.clear();
      return Got::too_long;
    }
    return Got::line;
  }

 private:
  ssize_t read_some() {
    for (;;) {
      const ssize_t n = ::read(in_.fd(), buffer_, sizeof buffer_);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) in_.failed(errno);
      pos_ = 0;
      end_ = n > 0 ? static_cast<std::size_t>(n) : 0;
      return n;
    }
  }

  Input& in_;
  std::size_t max_bytes_;
  char buffer_[1 << 16];
  std::size_t pos_ = 0, end_ = 0;
  bool done_ = false;
};

// Whether a line holds nothing but JSON's whitespace: the commands skip it, as JSONL readers
// do (an editor's trailing newline, a blank line between groups).
inline bool blank_line(const std::string& line) {
  return line.find_first_not_of(" \t\r\n") == std::string::npos;
}

// Why what was written to std::cout did not all reach its destination, or nullopt when it did:
// flushes std::cout and stdout first.
// NOTE: a full disk shows only when a buffer is flushed, so main() calls this before every
// exit and turns a failure into exit 2 with this message.
inline std::optional<std::string> output_failure() {
  errno = 0;
  std::cout.flush();
  const bool flushed = std::fflush(stdout) == 0;
  const int err = errno;
  if (std::cout.good() && flushed && !std::ferror(stdout)) return std::nullopt;
  return std::string("cannot write the output") +
         (err != 0 ? ": " + std::string(std::strerror(err)) : "");
}

// The architecture named by `--arch NAME`, or, with no name, device 0's when the driver reports
// one tmakit knows (sm_90a otherwise). nullopt for an unknown name; `error` then says so and
// lists the known ones.
inline std::optional<tmakit::Arch> resolve_arch(const std::string& given, std::string* error) {
  if (given.empty()) {
    const auto cc = tmakit::device_compute_capability();
    return tmakit::arch_of_compute_capability(cc.major, cc.minor).value_or(tmakit::Arch::sm_90a);
  }
  if (auto a = tmakit::parse_arch(given)) return a;
  *error = "--arch " + given +
           ": unknown architecture (known: " + std::string(tmakit::arch_names()) + ")";
  return std::nullopt;
}

}  // namespace tmakit::cli
