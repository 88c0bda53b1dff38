#pragma once
// Whole-file reads and writes for user-named files (scenarios, catalogs, CSVs). Host paths of a
// node go through the agent's FileReader instead (style rule 4).

#include <cstddef>
#include <fstream>
#include <string>
#include <string_view>

#include "common/result.h"

namespace gpuledger {

// What a user-named file of a kind may hold at most, named in the error when it holds more: no
// read takes a process's memory (issue 58: --catalog /dev/zero aborted with std::bad_alloc).
struct FileKind {
  std::string_view name;
  std::size_t max_bytes;
};
inline constexpr FileKind kSecretFile{"token or password file", 64 << 10};
inline constexpr FileKind kPemFile{"PEM file", 1 << 20};
// Catalogs, policies, scenarios, kubeconfigs, metadata snapshots.
inline constexpr FileKind kConfigFile{"configuration file", 64 << 20};
// Bills, traces, captures, replayed samples.
inline constexpr FileKind kDataFile{"data file", std::size_t{1} << 30};

// The file whole, read a part at a time up to `kind`'s size (a device or a pipe too); more is
// kInvalidArgument naming the file, its kind and the limit.
Result<std::string> ReadFile(const std::string& path, FileKind kind = kDataFile);
// A bearer token: the file's one line (trailing white space dropped), 1 to 4,096 visible ASCII
// characters, as an HTTP header carries it. A NUL, a space inside or a longer token is an error
// at start rather than a lock on every request later (issue 58).
Result<std::string> ReadTokenFile(const std::string& path);
// Whether `path` may be written by a --out: a new name in an existing folder, or a regular file
// (replaced whole). A device, a folder, a FIFO, or a missing folder is kInvalidArgument, named
// with `flag` (issue 58: --out /dev/full replaced the device node with a file).
Status CheckOutputPath(const std::string& path, std::string_view flag);
// Whether `a` and `b` name the same file (both exist): the same device and inode.
bool SameFile(const std::string& a, const std::string& b);
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
