#pragma once
// Host file access for the agent, rooted at --host-root (default "/", "/host" in the
// DaemonSet). No other code reads /proc or /sys directly (style rule 4).

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace gpuledger {

// The most Read returns: far above any /proc or /sys file the agent reads, far below memory.
inline constexpr std::size_t kMaxReadBytes = 32u << 20;

class FileReader {
 public:
  virtual ~FileReader() = default;
  // `path` is absolute on the host ("/proc/42/cgroup"); kNotFound when absent,
  // kInvalidArgument for what is not a regular file or is over kMaxReadBytes.
  virtual Result<std::string> Read(std::string_view path) = 0;
  // Entry names of a directory ("/proc" -> "1", "42", "self", ...).
  virtual Result<std::vector<std::string>> List(std::string_view path) = 0;
  virtual bool Exists(std::string_view path) = 0;
  // The real path on this machine (host_root + path), for sockets and logs.
  virtual std::string Resolve(std::string_view path) const = 0;
};

std::unique_ptr<FileReader> MakePosixFileReader(std::string host_root);

}  // namespace gpuledger
