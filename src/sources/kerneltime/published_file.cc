#include "sources/kerneltime/published_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gpuledger::kerneltime {

std::unique_ptr<PublishedFile> PublishedFile::Create(const std::string& path, std::string& error) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    error = path + ": " + std::strerror(errno);
    return nullptr;
  }
  // The agent reads the file whole: it has its full size before the first record is written,
  // and a file left by an earlier process with this PID is overwritten field by field.
  if (::ftruncate(fd, sizeof(FileLayout)) != 0) {
    error = path + ": " + std::strerror(errno);
    ::close(fd);
    return nullptr;
  }
  void* map = ::mmap(nullptr, sizeof(FileLayout), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    error = path + ": " + std::strerror(errno);
    ::close(fd);
    return nullptr;
  }
  return std::unique_ptr<PublishedFile>(new PublishedFile(path, fd, static_cast<FileLayout*>(map)));
}

PublishedFile::~PublishedFile() {
  ::munmap(layout_, sizeof(FileLayout));
  ::close(fd_);
}

void PublishedFile::Remove() {
  if (removed_) return;
  removed_ = true;
  ::unlink(path_.c_str());
}

}  // namespace gpuledger::kerneltime
