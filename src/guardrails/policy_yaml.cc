// Guardrail policy files (docs/guardrails-policy.md). yaml-cpp throws; its exceptions are caught
// here and never leave this file.

#include "guardrails/policy_yaml.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <functional>
#include <map>

#include "common/time_util.h"
#include "io/file_util.h"
#include "io/yaml_document.h"

namespace gpuledger::guardrails {
namespace {

// "a, b, c or d"
std::string OneOf(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += names[i];
  }
  return out;
}

std::string KindNames() {
  std::vector<std::string> names;
  names.reserve(kFindingKinds);
  for (int k = 0; k < kFindingKinds; ++k) names.emplace_back(ToString(static_cast<FindingKind>(k)));
  return OneOf(names);
}

// What a node is, for the "got" half of a message: a scalar is quoted as written.
std::string Got(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "nothing";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  return fmt::format("'{}'", node.Scalar());
}

std::string Join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

// Called per key of a mapping with the key, its value and their lines; false stops the walk
// (the callee has recorded why).
using EntryFn =
    std::function<bool(const std::string& key, const YAML::Node& value, int key_line, int line)>;

class Parser {
 public:
  explicit Parser(std::string_view file_name) : file_(file_name), policy_(DefaultPolicy()) {}

  Result<Policy> Run(std::string_view text) {
    auto loaded = LoadYamlDocument(text, file_);
    if (!loaded) return loaded.error();
    const YAML::Node root = *loaded;
    if (!Document(root)) return InvalidArgument(failure_);
    return std::move(policy_);
  }

 private:
  static int Line(const YAML::Node& node, int fallback) {
    const YAML::Mark mark = node.Mark();
    return mark.is_null() ? fallback : mark.line + 1;
  }

  // Records the failure (the first one wins) and returns false, so callers `return Reject(...)`.
  bool Reject(int line, const std::string& path, const std::string& expected,
              const std::string& got) {
    if (failure_.empty())
      failure_ = fmt::format("{}:{}: {}: expected {}, got {}", file_, line, path, expected, got);
    return false;
  }

  // Walks a mapping; null (a key with nothing under it) is an empty one.
  bool Mapping(const YAML::Node& node, int line, const std::string& path, const EntryFn& on) {
    if (!node.IsDefined() || node.IsNull()) return true;
    if (!node.IsMap()) return Reject(line, path, "a mapping", Got(node));
    // A key given twice never gets here: LoadYamlDocument refuses it.
    for (const auto& kv : node) {
      const int key_line = Line(kv.first, line);
      if (!kv.first.IsScalar()) return Reject(key_line, path, "a plain key", Got(kv.first));
      const std::string key = kv.first.Scalar();
      if (!on(key, kv.second, key_line, Line(kv.second, key_line))) return false;
    }
    return true;
  }

  bool Text(const YAML::Node& node, int line, const std::string& path, const std::string& what,
            std::string& out) {
    if (!node.IsScalar() || node.Scalar().empty()) return Reject(line, path, what, Got(node));
    out = node.Scalar();
    return true;
  }

  // A number in [min, max]; `min_open` excludes min itself.
  bool Number(const YAML::Node& node, int line, const std::string& path, double min, bool min_open,
              double max, double& out) {
    const std::string expected =
        fmt::format("a number in {}{}, {}]", min_open ? "(" : "[", min, max);
    if (!node.IsScalar()) return Reject(line, path, expected, Got(node));
    const std::string& text = node.Scalar();
    double value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    const bool in_range = min_open ? value > min : value >= min;
    if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value) ||
        !in_range || value > max) {
      return Reject(line, path, expected, Got(node));
    }
    out = value;
    return true;
  }

  bool WholeNumber(const YAML::Node& node, int line, const std::string& path, int min, int max,
                   int& out) {
    const std::string expected = fmt::format("a whole number from {} to {}", min, max);
    if (!node.IsScalar()) return Reject(line, path, expected, Got(node));
    const std::string& text = node.Scalar();
    long long value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max)
      return Reject(line, path, expected, Got(node));
    out = static_cast<int>(value);
    return true;
  }

  bool Duration(const YAML::Node& node, int line, const std::string& path, Micros& out) {
    const std::string expected = "a duration like 30s, 5m or 2h";
    if (!node.IsScalar()) return Reject(line, path, expected, Got(node));
    auto parsed = ParseDuration(node.Scalar());
    if (!parsed || *parsed < 0) return Reject(line, path, expected, Got(node));
    out = *parsed;
    return true;
  }

  bool Kind(const YAML::Node& node, int line, const std::string& path, FindingKind& out) {
    auto kind = node.IsScalar() ? ParseFindingKind(node.Scalar()) : std::nullopt;
    if (!kind) return Reject(line, path, "a finding kind (" + KindNames() + ")", Got(node));
    out = *kind;
    return true;
  }

  bool Document(const YAML::Node& root) {
    return Mapping(root, 1, "(top level)",
                   [&](const std::string& key, const YAML::Node& v, int key_line, int line) {
                     if (key == "kinds") return Kinds(v, line);
                     if (key == "thresholds") return Thresholds(v, line);
                     if (key == "tolerance") return Tolerance(v, line);
                     if (key == "exemptions") return Exemptions(v, line);
                     if (key == "webhook") return Webhook(v, line);
                     if (key == "events") return Events(v, line);
                     return Reject(key_line, "(top level)",
                                   "kinds, thresholds, tolerance, exemptions, webhook or events",
                                   fmt::format("'{}'", key));
                   });
  }

  // kinds: {<kind>: {action, severity}}; a kind not named keeps its default.
  bool Kinds(const YAML::Node& node, int line) {
    return Mapping(
        node, line, "kinds",
        [&](const std::string& name, const YAML::Node& v, int key_line, int value_line) {
          FindingKind kind;
          if (!Kind(YAML::Node(name), key_line, "kinds", kind)) return false;
          const std::string path = Join("kinds", name);
          KindPolicy& kp = policy_.For(kind);
          if (!v.IsMap())
            return Reject(value_line, path, "a mapping with action and/or severity", Got(v));
          return Mapping(
              v, value_line, path,
              [&](const std::string& key, const YAML::Node& value, int field_key_line,
                  int field_line) {
                if (key == "action")
                  return ActionOf(kind, value, field_line, Join(path, key), kp.action);
                if (key == "severity") {
                  auto severity = value.IsScalar() ? ParseSeverity(value.Scalar()) : std::nullopt;
                  if (!severity)
                    return Reject(field_line, Join(path, key), "info, warning or critical",
                                  Got(value));
                  kp.severity = *severity;
                  return true;
                }
                return Reject(field_key_line, path, "action or severity", fmt::format("'{}'", key));
              });
        });
  }

  bool ActionOf(FindingKind kind, const YAML::Node& node, int line, const std::string& path,
                Action& out) {
    const std::string text = node.IsScalar() ? node.Scalar() : "";
    if (text == "off")
      out = Action::kOff;
    else if (text == "report")
      out = Action::kReport;
    else if (text == "warn")
      out = Action::kWarn;
    else if (text == "deny" && IsAdmissionKind(kind))
      out = Action::kDeny;
    else if (IsAdmissionKind(kind))
      return Reject(line, path, "off, report, warn or deny", Got(node));
    else if (text == "deny")
      return Reject(line, path,
                    "off, report or warn (deny applies only to admission kinds; a running "
                    "process cannot be denied)",
                    Got(node));
    else
      return Reject(line, path, "off, report or warn", Got(node));
    return true;
  }

  bool Thresholds(const YAML::Node& node, int line) {
    Policy& p = policy_;
    return Mapping(node, line, "thresholds",
                   [&](const std::string& key, const YAML::Node& v, int key_line, int value_line) {
                     const std::string path = Join("thresholds", key);
                     if (key == "memory_together_fraction")
                       return Number(v, value_line, path, 0, true, 1, p.memory_together_fraction);
                     if (key == "memory_fair_margin")
                       return Number(v, value_line, path, 0, false, 1, p.memory_fair_margin);
                     if (key == "isolation_compute_margin")
                       return Number(v, value_line, path, 0, false, 1, p.isolation_compute_margin);
                     if (key == "idle_compute_fraction")
                       return Number(v, value_line, path, 0, false, 1, p.idle_compute_fraction);
                     // A year of ledger hours at most: longer is not a window anyone reads.
                     if (key == "idle_allocation_hours")
                       return WholeNumber(v, value_line, path, 1, 8760, p.idle_allocation_hours);
                     return Reject(
                         key_line, "thresholds",
                         "memory_together_fraction, memory_fair_margin, isolation_compute_margin, "
                         "idle_compute_fraction or idle_allocation_hours",
                         fmt::format("'{}'", key));
                   });
  }

  bool Tolerance(const YAML::Node& node, int line) {
    Policy& p = policy_;
    return Mapping(node, line, "tolerance",
                   [&](const std::string& key, const YAML::Node& v, int key_line, int value_line) {
                     const std::string path = Join("tolerance", key);
                     if (key == "isolation_breach")
                       return Duration(v, value_line, path, p.isolation_tolerance_us);
                     if (key == "stale_grant")
                       return Duration(v, value_line, path, p.stale_grant_tolerance_us);
                     if (key == "resolve_after")
                       return Duration(v, value_line, path, p.resolve_after_us);
                     return Reject(key_line, "tolerance",
                                   "isolation_breach, stale_grant or resolve_after",
                                   fmt::format("'{}'", key));
                   });
  }

  bool Exemptions(const YAML::Node& node, int line) {
    if (!node.IsDefined() || node.IsNull()) return true;
    if (!node.IsSequence()) return Reject(line, "exemptions", "a list", Got(node));
    for (std::size_t i = 0; i < node.size(); ++i) {
      const YAML::Node item = node[i];
      const std::string path = fmt::format("exemptions[{}]", i);
      Exemption e;
      e.line = Line(item, line);
      if (!item.IsMap())
        return Reject(e.line, path, "a mapping with namespace, labels and/or kinds", Got(item));
      bool ok = Mapping(
          item, e.line, path,
          [&](const std::string& key, const YAML::Node& v, int key_line, int value_line) {
            if (key == "namespace")
              return Text(v, value_line, Join(path, key), "a namespace name", e.namespace_name);
            if (key == "labels") return Labels(v, value_line, Join(path, key), e.labels);
            if (key == "kinds") return KindList(v, value_line, Join(path, key), e.kinds);
            return Reject(key_line, path, "namespace, labels or kinds", fmt::format("'{}'", key));
          });
      if (!ok) return false;
      if (e.namespace_name.empty() && e.labels.empty()) {
        return Reject(e.line, path,
                      "namespace, labels or both (an exemption with neither would match nothing)",
                      "neither");
      }
      policy_.exemptions.push_back(std::move(e));
    }
    return true;
  }

  bool Labels(const YAML::Node& node, int line, const std::string& path,
              std::map<std::string, std::string>& out) {
    if (!node.IsMap()) return Reject(line, path, "a mapping of label names to values", Got(node));
    return Mapping(node, line, path,
                   [&](const std::string& key, const YAML::Node& v, int, int value_line) {
                     // An empty label value is a real value in Kubernetes; only a missing one is an
                     // error.
                     if (!v.IsScalar())
                       return Reject(value_line, Join(path, key), "a label value", Got(v));
                     out[key] = v.Scalar();
                     return true;
                   });
  }

  bool KindList(const YAML::Node& node, int line, const std::string& path,
                std::vector<FindingKind>& out) {
    if (!node.IsSequence()) return Reject(line, path, "a list of finding kinds", Got(node));
    for (std::size_t i = 0; i < node.size(); ++i) {
      FindingKind kind;
      if (!Kind(node[i], Line(node[i], line), fmt::format("{}[{}]", path, i), kind)) return false;
      out.push_back(kind);
    }
    return true;
  }

  bool Webhook(const YAML::Node& node, int line) {
    return Mapping(node, line, "webhook",
                   [&](const std::string& key, const YAML::Node& v, int key_line, int value_line) {
                     if (key == "kernel_time") return KernelTime(v, value_line);
                     if (key != "failure")
                       return Reject(key_line, "webhook", "failure or kernel_time",
                                     fmt::format("'{}'", key));
                     const std::string text = v.IsScalar() ? v.Scalar() : "";
                     if (text != "open" && text != "closed")
                       return Reject(value_line, "webhook.failure", "open or closed", Got(v));
                     policy_.webhook_fail_open = text == "open";
                     return true;
                   });
  }

  // webhook.kernel_time: {inject, namespaces, label, library_dir, publish_dir} (issue 31).
  bool KernelTime(const YAML::Node& node, int line) {
    KernelTimeInjection& k = policy_.kernel_time;
    const std::string path = "webhook.kernel_time";
    return Mapping(node, line, path,
                   [&](const std::string& key, const YAML::Node& v, int key_line, int value_line) {
                     const std::string at = path + "." + key;
                     if (key == "inject") {
                       const std::string text = v.IsScalar() ? v.Scalar() : "";
                       if (text != "true" && text != "false")
                         return Reject(value_line, at, "true or false", Got(v));
                       k.inject = text == "true";
                       return true;
                     }
                     if (key == "namespaces") {
                       if (!v.IsSequence())
                         return Reject(value_line, at, "a list of namespaces", Got(v));
                       for (std::size_t i = 0; i < v.size(); ++i) {
                         std::string ns;
                         if (!Text(v[i], Line(v[i], value_line), fmt::format("{}[{}]", at, i),
                                   "a namespace", ns))
                           return false;
                         k.namespaces.insert(ns);
                       }
                       return true;
                     }
                     if (key == "label") return Text(v, value_line, at, "a label key", k.label);
                     if (key == "library_dir" || key == "publish_dir") {
                       std::string& dir = key == "library_dir" ? k.library_dir : k.publish_dir;
                       if (!Text(v, value_line, at, "an absolute path on the node", dir))
                         return false;
                       if (dir.front() != '/' || dir.find("..") != std::string::npos)
                         return Reject(value_line, at, "an absolute path on the node", Got(v));
                       return true;
                     }
                     return Reject(key_line, path,
                                   "inject, namespaces, label, library_dir or publish_dir",
                                   fmt::format("'{}'", key));
                   });
  }

  bool Events(const YAML::Node& node, int line) {
    Policy& p = policy_;
    return Mapping(
        node, line, "events",
        [&](const std::string& key, const YAML::Node& v, int key_line, int value_line) {
          if (key == "repeat") return Duration(v, value_line, "events.repeat", p.event_repeat_us);
          // At most 5 a second, client-go's default rate limit: Events must not crowd out the
          // server's own API calls.
          if (key == "per_minute")
            return WholeNumber(v, value_line, "events.per_minute", 1, 300, p.events_per_minute);
          return Reject(key_line, "events", "repeat or per_minute", fmt::format("'{}'", key));
        });
  }

  std::string file_;
  Policy policy_;
  std::string failure_;
};

}  // namespace

Result<Policy> ParsePolicyYaml(std::string_view text, std::string_view file_name) {
  try {
    return Parser(file_name).Run(text);
  } catch (const std::exception& e) {  // not expected after the checks; never let one out
    return InvalidArgument(fmt::format("{}: {}", file_name, e.what()));
  }
}

Result<Policy> LoadPolicyFile(const std::string& path) {
  auto text = ReadFile(path, kConfigFile);
  if (!text) return text.error();
  return ParsePolicyYaml(*text, path);
}

}  // namespace gpuledger::guardrails
