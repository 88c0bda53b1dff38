#pragma once
// Whole-file reads and writes for user-named files (scenarios, catalogs, CSVs). Host paths of a
// node go through the agent's FileReader instead (style rule 4).

#include <string>

#include "common/result.h"

namespace gpuledger {

Result<std::string> ReadFile(const std::string& path);
// Writes via a temporary file and rename, so a reader never sees half a file.
Status WriteFile(const std::string& path, const std::string& content);

// Whether `path` lies on a file system mounted read-only (a ConfigMap, a read-only volume, a
// snapshot). False when it cannot be told (no such path).
bool OnReadOnlyFileSystem(const std::string& path);

}  // namespace gpuledger
