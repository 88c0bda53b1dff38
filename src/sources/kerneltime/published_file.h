#pragma once
// The tracer's kernel-time file (publication.h) as a shared mapping: created at
// <dir>/<pid>, sized to one FileLayout, rewritten in place so the agent's reader never sees a
// file that is missing or half long, and removed when the process ends (the agent counts a file
// only while NVML lists its process, so an ended process's file is only clutter in a directory
// that lives as long as the pod).
//
// Thread-compatible: one writer (the tracer, under its lock).

#include <memory>
#include <string>

#include "sources/kerneltime/publication.h"

namespace gpuledger::kerneltime {

class PublishedFile {
 public:
  // Creates or reuses the file; null with `error` set when it cannot be created or mapped.
  static std::unique_ptr<PublishedFile> Create(const std::string& path, std::string& error);
  ~PublishedFile();
  PublishedFile(const PublishedFile&) = delete;
  PublishedFile& operator=(const PublishedFile&) = delete;

  void Write(const Publication& p) { WritePublication(p, *layout_); }
  // Unlinks the file; later writes go to the unlinked mapping (harmless).
  void Remove();
  const std::string& path() const { return path_; }

 private:
  PublishedFile(std::string path, int fd, FileLayout* layout)
      : path_(std::move(path)), fd_(fd), layout_(layout) {}

  std::string path_;
  int fd_;
  FileLayout* layout_;
  bool removed_ = false;
};

}  // namespace gpuledger::kerneltime
