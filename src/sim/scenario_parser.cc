#include "sim/scenario_parser.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "common/time_util.h"

namespace gpuledger::sim::scenario {

std::string Join(const std::vector<std::string_view>& v) {
  std::string out;
  for (auto& s : v) out += (out.empty() ? "" : ", ") + std::string(s);
  return out;
}

std::string Describe(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "nothing";
  if (n.IsScalar()) return "'" + n.Scalar() + "'";
  if (n.IsSequence()) return "a list";
  return "a map";
}

void Parser::Fail(int line, const std::string& path, const std::string& what) {
  if (error_) return;
  error_ = InvalidArgument(fmt::format("{}:{}: {}: {}", file_, line, path, what));
}
void Parser::Fail(const YAML::Node& at, const std::string& path, const std::string& what) {
  Fail(Line(at), path, what);
}
int Parser::Line(const YAML::Node& n) {
  if (!n.IsDefined()) return 0;
  int l = n.Mark().line;
  return l < 0 ? 0 : l + 1;
}

bool Parser::IsMap(const YAML::Node& n, const std::string& path) {
  if (n.IsMap()) return true;
  Fail(n, path, "expected a map, got " + Describe(n));
  return false;
}
bool Parser::IsList(const YAML::Node& n, const std::string& path) {
  if (n.IsSequence()) return true;
  Fail(n, path, "expected a list, got " + Describe(n));
  return false;
}

void Parser::CheckKeys(const YAML::Node& map, const std::string& path,
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

std::string Parser::Sub(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

std::string Parser::Str(const YAML::Node& n, const std::string& path, std::string def) {
  if (!n.IsDefined() || n.IsNull()) return def;
  if (!n.IsScalar()) {
    Fail(n, path, "expected a string, got " + Describe(n));
    return def;
  }
  return n.Scalar();
}
std::string Parser::RequiredStr(const YAML::Node& parent, std::string_view key,
                                const std::string& path) {
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

double Parser::Number(const YAML::Node& n, const std::string& path, double lo, double hi,
                      double def) {
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
std::int64_t Parser::Int(const YAML::Node& n, const std::string& path, std::int64_t lo,
                         std::int64_t hi, std::int64_t def) {
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
bool Parser::Bool(const YAML::Node& n, const std::string& path, bool def) {
  if (!n.IsDefined() || n.IsNull()) return def;
  std::string s = n.IsScalar() ? n.Scalar() : "";
  if (s == "true" || s == "yes") return true;
  if (s == "false" || s == "no") return false;
  Fail(n, path, "expected true or false, got " + Describe(n));
  return def;
}
Micros Parser::Duration(const YAML::Node& n, const std::string& path, Micros def) {
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
Bytes Parser::Size(const YAML::Node& n, const std::string& path, Bytes def) {
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
std::map<std::string, std::string> Parser::Labels(const YAML::Node& n, const std::string& path) {
  std::map<std::string, std::string> out;
  if (!n.IsDefined() || n.IsNull()) return out;
  if (!IsMap(n, path)) return out;
  for (auto it = n.begin(); it != n.end(); ++it) {
    std::string k = Str(it->first, path);
    out[k] = Str(it->second, Sub(path, k));
  }
  return out;
}

}  // namespace gpuledger::sim::scenario
