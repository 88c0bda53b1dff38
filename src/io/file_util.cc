#include "io/file_util.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <cstdio>

#include "common/strings.h"

namespace gpuledger {

Result<std::string> ReadFile(const std::string& path, FileKind kind) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  std::string content;
  char buf[65536];
  while (in) {
    in.read(buf, sizeof buf);
    content.append(buf, static_cast<std::size_t>(in.gcount()));
    if (content.size() > kind.max_bytes)
      return InvalidArgument(
          fmt::format("{}: more than the {} bytes a {} may hold", path, kind.max_bytes, kind.name));
  }
  if (in.bad()) return IoError(fmt::format("{}: read failed", path));
  return content;
}

Result<std::string> ReadTokenFile(const std::string& path) {
  auto text = ReadFile(path, kSecretFile);
  if (!text) return text.error();
  const std::string token(Trim(*text));
  constexpr std::size_t kMaxToken = 4096;
  if (token.empty()) return InvalidArgument(fmt::format("{}: the file is empty", path));
  if (token.size() > kMaxToken)
    return InvalidArgument(fmt::format("{}: a token of {} bytes; at most {} fit a request header",
                                       path, token.size(), kMaxToken));
  for (std::size_t i = 0; i < token.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(token[i]);
    if (c < 0x21 || c > 0x7e)
      return InvalidArgument(
          fmt::format("{}: byte {} of the token is {:#04x}; a token is one line of visible ASCII",
                      path, i + 1, static_cast<unsigned>(c)));
  }
  return token;
}

Status CheckOutputPath(const std::string& path, std::string_view flag) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISREG(st.st_mode)) return Status::Ok();
    return InvalidArgument(
        fmt::format("{} '{}': not a regular file ({}); name a new file or one to replace", flag,
                    path, S_ISDIR(st.st_mode) ? "a folder" : "a device, FIFO or socket"));
  }
  if (errno != ENOENT)
    return InvalidArgument(fmt::format("{} '{}': {}", flag, path, std::strerror(errno)));
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const std::string folder = parent.empty() ? "." : parent.string();
  if (::stat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return InvalidArgument(
        fmt::format("{} '{}': the folder '{}' does not exist", flag, path, folder));
  return Status::Ok();
}

bool SameFile(const std::string& a, const std::string& b) {
  struct stat sa {};
  struct stat sb {};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

Status WriteFile(const std::string& path, const std::string& content) {
  FileWriter file(path);
  if (Status s = file.Write(content); !s.ok()) return s;
  return file.Commit();
}

FileWriter::FileWriter(std::string path) : path_(std::move(path)), tmp_(path_ + ".tmp") { Open(); }

void FileWriter::Open() {
  out_.open(tmp_, std::ios::binary | std::ios::trunc);
  if (!out_.is_open()) open_error_ = std::strerror(errno);
}

FileWriter::~FileWriter() {
  if (committed_) return;
  out_.close();
  std::remove(tmp_.c_str());
}

Status FileWriter::Write(std::string_view text) {
  if (!out_.is_open()) return IoError(fmt::format("{}: cannot create: {}", tmp_, open_error_));
  out_.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (!out_) return IoError(fmt::format("{}: write failed", tmp_));
  return Status::Ok();
}

Status FileWriter::Restart() {
  out_.close();
  out_.clear();
  Open();
  return Write("");
}

Status FileWriter::Commit() {
  if (Status s = Write(""); !s.ok()) return s;
  out_.flush();
  out_.close();
  if (!out_) return IoError(fmt::format("{}: write failed", tmp_));
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0)
    return IoError(fmt::format("{}: cannot rename into place: {}", path_, std::strerror(errno)));
  committed_ = true;
  return Status::Ok();
}

bool OnReadOnlyFileSystem(const std::string& path) {
  struct statvfs fs {};
  return ::statvfs(path.c_str(), &fs) == 0 && (fs.f_flag & ST_RDONLY) != 0;
}

}  // namespace gpuledger
