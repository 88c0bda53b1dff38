#pragma once
// Whole-file reads and writes for user-named files (scenarios, catalogs, CSVs). Host paths of a
// node go through the agent's FileReader instead (style rule 4).

#include <fstream>
#include <string>
#include <string_view>

#include "common/result.h"

namespace gpuledger {

Result<std::string> ReadFile(const std::string& path);
// Writes via a temporary file and rename, so a reader never sees half a file.
Status WriteFile(const std::string& path, const std::string& content);

// A file written a part at a time the same way: into `path`.tmp, renamed into place by
// Commit(); the temporary file is removed when the writer goes uncommitted.
class FileWriter {
 public:
  explicit FileWriter(std::string path);
  ~FileWriter();
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;

  Status Write(std::string_view text);
  Status Restart();  // empties what was written
  Status Commit();

 private:
  void Open();

  std::string path_;
  std::string tmp_;
  std::ofstream out_;
  std::string open_error_;  // why the temporary file could not be created
  bool committed_ = false;
};

// Whether `path` lies on a file system mounted read-only (a ConfigMap, a read-only volume, a
// snapshot). False when it cannot be told (no such path).
bool OnReadOnlyFileSystem(const std::string& path);

}  // namespace gpuledger
