#pragma once
// The scenario parser's internals, shared by its files and used nowhere else: the YAML field
// reader with first-error semantics (Parser), and the two jobs ParseScenario hands off: loading a
// series CSV (series_csv.cc) and placing workloads on nodes (placer.cc).

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "common/result.h"
#include "common/time_util.h"
#include "common/units.h"
#include "io/file_util.h"
#include "sim/scenario.h"

namespace gpuledger::sim::scenario {

inline std::string Join(const std::vector<std::string_view>& v) {
  std::string out;
  for (auto& s : v) out += (out.empty() ? "" : ", ") + std::string(s);
  return out;
}

inline std::string Describe(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "nothing";
  if (n.IsScalar()) return "'" + n.Scalar() + "'";
  if (n.IsSequence()) return "a list";
  return "a map";
}

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

  void Fail(int line, const std::string& path, const std::string& what) {
    if (error_) return;
    error_ = InvalidArgument(fmt::format("{}:{}: {}: {}", file_, line, path, what));
  }
  void Fail(const YAML::Node& at, const std::string& path, const std::string& what) {
    Fail(Line(at), path, what);
  }
  static int Line(const YAML::Node& n) {
    if (!n.IsDefined()) return 0;
    int l = n.Mark().line;
    return l < 0 ? 0 : l + 1;
  }

  bool IsMap(const YAML::Node& n, const std::string& path) {
    if (n.IsMap()) return true;
    Fail(n, path, "expected a map, got " + Describe(n));
    return false;
  }
  bool IsList(const YAML::Node& n, const std::string& path) {
    if (n.IsSequence()) return true;
    Fail(n, path, "expected a list, got " + Describe(n));
    return false;
  }

  void CheckKeys(const YAML::Node& map, const std::string& path,
                 std::initializer_list<std::string_view> allowed) {
    if (!map.IsMap()) return;
    for (auto it = map.begin(); it != map.end(); ++it) {
      std::string key = it->first.IsScalar() ? it->first.Scalar() : "?";
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        std::vector<std::string_view> a(allowed);
        Fail(it->first, Sub(path, key), "unknown key (expected one of: " + Join(a) + ")");
        return;
      }
    }
  }

  static std::string Sub(const std::string& path, std::string_view key) {
    return path.empty() ? std::string(key) : path + "." + std::string(key);
  }

  std::string Str(const YAML::Node& n, const std::string& path, std::string def = "") {
    if (!n.IsDefined() || n.IsNull()) return def;
    if (!n.IsScalar()) {
      Fail(n, path, "expected a string, got " + Describe(n));
      return def;
    }
    return n.Scalar();
  }
  std::string RequiredStr(const YAML::Node& parent, std::string_view key, const std::string& path) {
    auto n = parent[std::string(key)];
    std::string p = Sub(path, key);
    if (!n.IsDefined() || n.IsNull()) {
      Fail(parent, p, "required, missing");
      return "";
    }
    std::string s = Str(n, p);
    if (!failed() && s.empty()) Fail(n, p, "expected a non-empty string");
    return s;
  }

  double Number(const YAML::Node& n, const std::string& path, double lo, double hi, double def) {
    if (!n.IsDefined() || n.IsNull()) return def;
    double v = 0;
    std::string s = n.IsScalar() ? n.Scalar() : "";
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (!n.IsScalar() || r.ec != std::errc() || r.ptr != s.data() + s.size() || !(v >= lo) ||
        !(v <= hi)) {
      Fail(n, path, fmt::format("expected a number in [{}, {}], got {}", lo, hi, Describe(n)));
      return def;
    }
    return v;
  }
  std::int64_t Int(const YAML::Node& n, const std::string& path, std::int64_t lo, std::int64_t hi,
                   std::int64_t def) {
    if (!n.IsDefined() || n.IsNull()) return def;
    std::int64_t v = 0;
    std::string s = n.IsScalar() ? n.Scalar() : "";
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (!n.IsScalar() || r.ec != std::errc() || r.ptr != s.data() + s.size() || v < lo || v > hi) {
      Fail(n, path, fmt::format("expected an integer in [{}, {}], got {}", lo, hi, Describe(n)));
      return def;
    }
    return v;
  }
  bool Bool(const YAML::Node& n, const std::string& path, bool def) {
    if (!n.IsDefined() || n.IsNull()) return def;
    std::string s = n.IsScalar() ? n.Scalar() : "";
    if (s == "true" || s == "yes") return true;
    if (s == "false" || s == "no") return false;
    Fail(n, path, "expected true or false, got " + Describe(n));
    return def;
  }
  Micros Duration(const YAML::Node& n, const std::string& path, Micros def) {
    if (!n.IsDefined() || n.IsNull()) return def;
    if (!n.IsScalar()) {
      Fail(n, path, "expected a duration (e.g. 90s, 15m, 168h), got " + Describe(n));
      return def;
    }
    auto d = ParseDuration(n.Scalar());
    if (!d.ok() || *d < 0) {
      Fail(n, path, "expected a duration (e.g. 90s, 15m, 168h), got " + Describe(n));
      return def;
    }
    return *d;
  }
  Bytes Size(const YAML::Node& n, const std::string& path, Bytes def) {
    if (!n.IsDefined() || n.IsNull()) return def;
    if (!n.IsScalar()) {
      Fail(n, path, "expected a size (e.g. 20GiB, 512MiB), got " + Describe(n));
      return def;
    }
    auto b = ParseBytes(n.Scalar());
    if (!b.ok() || *b < 0) {
      Fail(n, path, "expected a size (e.g. 20GiB, 512MiB), got " + Describe(n));
      return def;
    }
    return *b;
  }
  std::map<std::string, std::string> Labels(const YAML::Node& n, const std::string& path) {
    std::map<std::string, std::string> out;
    if (!n.IsDefined() || n.IsNull()) return out;
    if (!IsMap(n, path)) return out;
    for (auto it = n.begin(); it != n.end(); ++it) {
      std::string k = Str(it->first, path);
      out[k] = Str(it->second, Sub(path, k));
    }
    return out;
  }

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
