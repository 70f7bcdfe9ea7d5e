// Reads tests/data/driver_corpus.jsonl.gz: specs with the real driver's verdict ("driver").
#pragma once

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace tmakit::testing {

// The corpus file: next to the sources when the tests run where they were built, else
// relative to the working directory (scripts/gpu_check runs from the repository root).
inline std::string driver_corpus_path() {
  for (const std::string& p : {std::string(TMAKIT_SOURCE_DIR) + "/tests/data/driver_corpus.jsonl.gz",
                              std::string("tests/data/driver_corpus.jsonl.gz")}) {
    if (std::filesystem::exists(p)) return p;
  }
  return {};
}

// All lines, decompressed by gzip (present wherever the tests build); empty when missing.
inline std::vector<std::string> read_driver_corpus() {
  std::vector<std::string> lines;
  const std::string path = driver_corpus_path();
  if (path.empty()) return lines;
  const std::string cmd = "gzip -dc '" + path + "'";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  if (!pipe) return lines;
  std::string line;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, pipe.get()) != nullptr) {
    line += buf;
    if (!line.empty() && line.back() == '\n') {
      line.pop_back();
      lines.push_back(std::move(line));
      line.clear();
    }
  }
  if (!line.empty()) lines.push_back(std::move(line));
  return lines;
}

}  // namespace tmakit::testing
