#pragma once
// A fresh directory for one test, removed with everything in it when the test ends. Unique per
// process and instance, so tests running in parallel (ctest -j) never share one.

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>

namespace gpuledger::testing {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "gpuledger-test") {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            (prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace gpuledger::testing
