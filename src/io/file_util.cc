#include "io/file_util.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <sys/statvfs.h>

#include <cstdio>

namespace gpuledger {

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) return IoError(fmt::format("{}: read failed", path));
  return content.str();
}

Status WriteFile(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return IoError(fmt::format("{}: cannot create: {}", tmp, std::strerror(errno)));
    out << content;
    out.flush();
    if (!out) return IoError(fmt::format("{}: write failed", tmp));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return IoError(fmt::format("{}: cannot rename into place: {}", path, std::strerror(errno)));
  return Status::Ok();
}

bool OnReadOnlyFileSystem(const std::string& path) {
  struct statvfs fs {};
  return ::statvfs(path.c_str(), &fs) == 0 && (fs.f_flag & ST_RDONLY) != 0;
}

}  // namespace gpuledger
