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
