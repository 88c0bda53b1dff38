#include "io/file_reader.h"
#include "common/strings.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace gpuledger {
namespace {

// Lexically normalizes an absolute host path: drops empty and "." components, applies "..".
// A ".." that would climb above the host root is an escape and is refused. This is a lexical
// guard only; symlinks inside the host tree (e.g. /proc/<pid>/root) are not followed here, and
// callers must not hand untrusted paths to a reader that resolves them.
Result<std::string> Normalize(std::string_view path) {
  if (path.empty() || path.front() != '/')
    return InvalidArgument(fmt::format("{}: host path must be absolute", path));
  if (path.find('\0') != std::string_view::npos)
    return InvalidArgument("host path contains a NUL byte");
  std::vector<std::string_view> parts;
  for (TextParts names(path, '/'); auto next = names.Next();) {
    const std::string_view part = *next;
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (parts.empty())
        return InvalidArgument(fmt::format("{}: host path escapes the host root", path));
      parts.pop_back();
      continue;
    }
    parts.push_back(part);
  }
  std::string out;
  for (const auto part : parts) {
    out += '/';
    out += part;
  }
  if (out.empty()) out = "/";
  return out;
}

bool IsGone(int err) { return err == ENOENT || err == ESRCH || err == ENOTDIR; }

Error ErrnoError(const std::string& resolved, const char* what, int err) {
  std::string message = fmt::format("{}: {}: {}", resolved, what, std::strerror(err));
  return IsGone(err) ? NotFound(std::move(message)) : IoError(std::move(message));
}

class PosixFileReader final : public FileReader {
 public:
  explicit PosixFileReader(std::string host_root) : root_(std::move(host_root)) {
    // "/" and "" both mean the machine's own root; "/host/" is kept as "/host".
    while (!root_.empty() && root_.back() == '/') root_.pop_back();
  }

  Result<std::string> Read(std::string_view path) override {
    auto normalized = Normalize(path);
    if (!normalized) return normalized.error();
    const std::string resolved = root_ + *normalized;
    // Non-blocking, and regular files only: some of what the agent reads sits in directories a
    // tenant can write (the kernel-time files), where a FIFO would block the cycle forever.
    const int fd = ::open(resolved.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) return ErrnoError(resolved, "cannot open", errno);
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      return InvalidArgument(fmt::format("{}: not a regular file", resolved));
    }
    // /proc files report size 0: read until EOF rather than trusting fstat.
    std::string content;
    char buf[16384];
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof(buf));
      if (n > 0) {
        content.append(buf, static_cast<std::size_t>(n));
        if (content.size() > kMaxReadBytes) {
          ::close(fd);
          return InvalidArgument(
              fmt::format("{}: larger than {} bytes, not read", resolved, kMaxReadBytes));
        }
        continue;
      }
      if (n == 0) break;
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return ErrnoError(resolved, "read failed", err);
    }
    ::close(fd);
    return content;
  }

  Result<std::vector<std::string>> List(std::string_view path) override {
    auto normalized = Normalize(path);
    if (!normalized) return normalized.error();
    const std::string resolved = root_ + *normalized;
    DIR* dir = ::opendir(resolved.c_str());
    if (dir == nullptr) return ErrnoError(resolved, "cannot list", errno);
    std::vector<std::string> names;
    errno = 0;
    while (const dirent* entry = ::readdir(dir)) {
      const std::string_view name = entry->d_name;
      if (name != "." && name != "..") names.emplace_back(name);
    }
    const int err = errno;
    ::closedir(dir);
    if (err != 0) return ErrnoError(resolved, "cannot list", err);
    std::sort(names.begin(), names.end());  // deterministic order for callers and tests
    return names;
  }

  bool Exists(std::string_view path) override {
    auto normalized = Normalize(path);
    if (!normalized) return false;
    struct stat st {};
    return ::stat((root_ + *normalized).c_str(), &st) == 0;
  }

  std::string Resolve(std::string_view path) const override {
    auto normalized = Normalize(path);
    // An invalid path resolves to its plain concatenation, for the log line that reports it.
    return root_ + (normalized ? *normalized : std::string(path));
  }

 private:
  std::string root_;  // without a trailing '/'; empty for the machine's own root
};

}  // namespace

std::unique_ptr<FileReader> MakePosixFileReader(std::string host_root) {
  return std::make_unique<PosixFileReader>(std::move(host_root));
}

}  // namespace gpuledger
