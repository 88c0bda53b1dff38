#pragma once
// The scenario parser's internals, shared by its files and used nowhere else: the YAML field
// reader with first-error semantics (Parser), and the two jobs ParseScenario hands off: loading a
// series CSV (series_csv.cc) and placing workloads on nodes (placer.cc).

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/time_util.h"
#include "common/units.h"
#include "io/file_util.h"
#include "sim/scenario.h"

namespace YAML {
class Node;  // yaml-cpp's: the parsing itself is in the .cc files (issue 26)
}

namespace gpuledger::sim::scenario {

std::string Join(const std::vector<std::string_view>& v);
// How a node reads in a message: "nothing", "'<scalar>'", "a list" or "a map".
std::string Describe(const YAML::Node& n);

// Parses with first-error semantics: after a failure every getter returns its default, and the
// caller checks failed() at the end; this keeps the field-by-field code flat.
class Parser {
 public:
  Parser(std::string file, std::string base_dir)
      : file_(std::move(file)), base_dir_(std::move(base_dir)) {}

  bool failed() const { return error_.has_value(); }
  const Error& error() const { return *error_; }
  const std::string& file() const { return file_; }
  const std::string& base_dir() const { return base_dir_; }

  void Fail(int line, const std::string& path, const std::string& what);
  void Fail(const YAML::Node& at, const std::string& path, const std::string& what);
  static int Line(const YAML::Node& n);

  bool IsMap(const YAML::Node& n, const std::string& path);
  bool IsList(const YAML::Node& n, const std::string& path);
  void CheckKeys(const YAML::Node& map, const std::string& path,
                 std::initializer_list<std::string_view> allowed);
  static std::string Sub(const std::string& path, std::string_view key);

  std::string Str(const YAML::Node& n, const std::string& path, std::string def = "");
  std::string RequiredStr(const YAML::Node& parent, std::string_view key, const std::string& path);
  double Number(const YAML::Node& n, const std::string& path, double lo, double hi, double def);
  std::int64_t Int(const YAML::Node& n, const std::string& path, std::int64_t lo, std::int64_t hi,
                   std::int64_t def);
  bool Bool(const YAML::Node& n, const std::string& path, bool def);
  Micros Duration(const YAML::Node& n, const std::string& path, Micros def);
  Bytes Size(const YAML::Node& n, const std::string& path, Bytes def);
  std::map<std::string, std::string> Labels(const YAML::Node& n, const std::string& path);

 private:
  std::string file_;
  std::string base_dir_;
  std::optional<Error> error_;
};

// A MIG profile without its "+me" (media extensions) suffix: "1g.10gb+me" -> "1g.10gb".
std::string StripMe(std::string_view profile);

// A user-named data file: as it is, or inflated when its name ends in ".gz" (capped, so a small
// file cannot inflate into all memory). Errors name the path.
Result<std::string> ReadDataFile(const std::string& path, FileKind kind = kDataFile);

// What a series' value column holds: percent of the unit (compute; duty = value/100 x scale,
// clamped to [0, 1]) or bytes (memory; value x scale, at least 0).
enum class SeriesUnit { kPercent, kBytes };

// The series at `path` (node `c`: file, column, time_column, scale, where): reads its CSV.
// Null when `p` failed.
std::shared_ptr<const Series> LoadSeries(Parser& p, const YAML::Node& c, const std::string& path,
                                         SeriesUnit unit);

// Places every workload's pods on the scenario's nodes (explicit placements first, then first
// fit, time-aware); a workload that does not fit fails `p` naming its line.
void PlaceWorkloads(Parser& p, Scenario& sc);

}  // namespace gpuledger::sim::scenario
