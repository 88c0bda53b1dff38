#pragma once
// Reading ../shared/data in the rightsizing tests (the library does no I/O), through the
// project's own file reader and CSV parser. Header-only; the tests that include it link
// gpuledger_io and gpuledger_billing. Include as "rightsizing_data/rightsizing_data.h".

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/csv.h"
#include "io/file_util.h"
#include "test_paths.h"

namespace gpuledger::rightsizing::testutil {

inline std::string SharedData(const std::string& rel) {
  return std::string(gpuledger::test_paths::kSharedData) + "/" + rel;
}

// The whole file, or nullopt when it cannot be read (the test then skips).
inline std::optional<std::string> ReadFile(const std::string& path) {
  auto content = gpuledger::ReadFile(path);
  if (!content) return std::nullopt;
  return std::move(*content);
}

// The records of CSV text, each as its fields' values (empty when it does not parse).
inline std::vector<std::vector<std::string>> CsvRows(std::string_view text) {
  std::vector<std::vector<std::string>> rows;
  auto records = ParseCsv(text, "csv");
  if (!records) return rows;
  for (const auto& r : *records) {
    std::vector<std::string> fields;
    for (const auto& f : r.fields) fields.push_back(f.value);
    rows.push_back(std::move(fields));
  }
  return rows;
}

}  // namespace gpuledger::rightsizing::testutil
