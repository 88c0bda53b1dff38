// Catalog files (docs/pricing.md). yaml-cpp throws; its exceptions are caught here and never
// leave this file.

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "cost/catalog.h"

namespace gpuledger::cost {

namespace {

// A parse failure at a line of the file; turned into an Error at the boundary.
struct Failure {
  int line = 0;
  std::string field;
  std::string what;
};

class Parser {
 public:
  Parser(std::string_view file_name, const Catalog& base) : file_(file_name), out_(base) {}

  Result<Catalog> Run(std::string_view text) {
    YAML::Node root;
    try {
      root = YAML::Load(std::string(text));
    } catch (const YAML::Exception& e) {
      return InvalidArgument(fmt::format("{}:{}: invalid YAML: {}", file_, e.mark.line + 1, e.msg));
    }
    try {
      if (!Document(root)) return Fail();
    } catch (const YAML::Exception& e) {  // not expected after the checks, but never let it out
      return InvalidArgument(fmt::format("{}:{}: {}", file_, e.mark.line + 1, e.msg));
    }
    return std::move(out_);
  }

 private:
  static int Line(const YAML::Node& node, int fallback) {
    const YAML::Mark mark = node.Mark();
    return mark.is_null() ? fallback : mark.line + 1;
  }

  bool Reject(int line, std::string field, std::string what) {
    failure_ = Failure{line, std::move(field), std::move(what)};
    return false;
  }

  gpuledger::Error Fail() const {
    return InvalidArgument(
        fmt::format("{}:{}: field '{}': {}", file_, failure_.line, failure_.field, failure_.what));
  }

  // A plain string scalar (not a map, list or null).
  bool Scalar(const YAML::Node& node, int line, const std::string& field, std::string& out,
              std::string_view expected) {
    if (!node.IsScalar()) return Reject(line, field, fmt::format("expected {}", expected));
    out = node.Scalar();
    return true;
  }

  static bool IsClassName(std::string_view s) {
    if (s.empty() || s.size() > 63) return false;
    for (char c : s) {
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
    }
    return true;
  }

  bool Document(const YAML::Node& root) {
    if (!root.IsDefined() || root.IsNull()) return true;  // an empty file changes nothing
    if (!root.IsMap()) {
      return Reject(Line(root, 1), "(document)",
                    "expected a mapping with keys currency, default_class, prices");
    }
    std::set<std::string> seen;
    YAML::Node prices;
    int prices_line = 1;
    for (const auto& kv : root) {
      int key_line = Line(kv.first, 1);
      if (!kv.first.IsScalar()) return Reject(key_line, "(key)", "expected a plain key");
      std::string key = kv.first.Scalar();
      if (!seen.insert(key).second) return Reject(key_line, key, "duplicate key");
      int line = Line(kv.second, key_line);
      if (key == "currency") {
        std::string currency;
        if (!Scalar(kv.second, line, key, currency, "a 3-letter currency code like USD")) {
          return false;
        }
        if (currency.size() != 3 || !std::all_of(currency.begin(), currency.end(),
                                                 [](char c) { return c >= 'A' && c <= 'Z'; })) {
          return Reject(line, key, "expected a 3-letter currency code like USD");
        }
        if (currency != out_.currency && !out_.entries.empty()) {
          return Reject(line, key,
                        fmt::format("expected {} (the base catalog's currency; one catalog holds "
                                    "one currency)",
                                    out_.currency));
        }
        out_.currency = currency;
      } else if (key == "default_class") {
        std::string cls;
        if (!Scalar(kv.second, line, key, cls, "a pricing class like on-demand")) return false;
        if (!IsClassName(cls)) {
          return Reject(line, key,
                        "expected a pricing class like on-demand (lowercase, digits, '-')");
        }
        out_.default_class = cls;
      } else if (key == "prices") {
        prices = kv.second;
        prices_line = line;
      } else {
        return Reject(key_line, key, "unknown key; expected currency, default_class or prices");
      }
    }
    if (!prices.IsDefined() || prices.IsNull()) return true;
    if (!prices.IsSequence()) return Reject(prices_line, "prices", "expected a list of prices");
    std::map<std::tuple<std::string, std::string, std::string>, int> first_line;
    for (const auto& item : prices) {
      PriceEntry entry;
      int line = Line(item, prices_line);
      if (!Price(item, line, entry)) return false;
      auto key = std::make_tuple(entry.gpu_model, entry.pricing_class, entry.region);
      auto [it, inserted] = first_line.emplace(key, line);
      if (!inserted) {
        return Reject(line, "gpu_model",
                      fmt::format("duplicate price for {}/{}/{} (first at line {})",
                                  entry.gpu_model, entry.pricing_class,
                                  entry.region.empty() ? "any region" : entry.region, it->second));
      }
      Upsert(std::move(entry));
    }
    return true;
  }

  bool Price(const YAML::Node& item, int line, PriceEntry& entry) {
    if (!item.IsMap()) {
      return Reject(line, "prices",
                    "expected a mapping with gpu_model, class, hourly (region, source optional)");
    }
    std::set<std::string> seen;
    bool has_hourly = false;
    for (const auto& kv : item) {
      int key_line = Line(kv.first, line);
      if (!kv.first.IsScalar()) return Reject(key_line, "(key)", "expected a plain key");
      std::string key = kv.first.Scalar();
      if (!seen.insert(key).second) return Reject(key_line, key, "duplicate key");
      int value_line = Line(kv.second, key_line);
      if (key == "gpu_model") {
        std::string model;
        if (!Scalar(kv.second, value_line, key, model, "a GPU model name like H100-80GB")) {
          return false;
        }
        entry.gpu_model = NormalizeGpuModel(model);
        if (entry.gpu_model.empty()) {
          return Reject(value_line, key, "expected a GPU model name like H100-80GB");
        }
      } else if (key == "class") {
        if (!Scalar(kv.second, value_line, key, entry.pricing_class,
                    "a pricing class like on-demand")) {
          return false;
        }
        if (!IsClassName(entry.pricing_class)) {
          return Reject(value_line, key,
                        "expected a pricing class like on-demand (lowercase, digits, '-')");
        }
      } else if (key == "region") {
        if (!Scalar(kv.second, value_line, key, entry.region, "a region name like us-east-1")) {
          return false;
        }
      } else if (key == "hourly") {
        std::string text;
        if (!Scalar(kv.second, value_line, key, text, "a number (price per GPU-hour)")) {
          return false;
        }
        auto nanos = ParseDecimalNanos(text);
        if (!nanos || *nanos < 0) {
          return Reject(value_line, key,
                        fmt::format("expected a non-negative decimal number with at most 9 "
                                    "decimals, like 6.88; got '{}'",
                                    text));
        }
        entry.hourly_nanos = *nanos;
        has_hourly = true;
      } else if (key == "source") {
        if (!Scalar(kv.second, value_line, key, entry.source, "a string")) return false;
      } else {
        return Reject(key_line, key,
                      "unknown key; expected gpu_model, class, region, hourly or source");
      }
    }
    if (entry.gpu_model.empty()) return Reject(line, "gpu_model", "expected a GPU model (missing)");
    if (entry.pricing_class.empty()) {
      return Reject(line, "class", "expected a pricing class like on-demand (missing)");
    }
    if (!has_hourly) return Reject(line, "hourly", "expected a number (missing)");
    return true;
  }

  void Upsert(PriceEntry entry) {
    for (auto& e : out_.entries) {
      if (e.gpu_model == entry.gpu_model && e.pricing_class == entry.pricing_class &&
          e.region == entry.region) {
        e = std::move(entry);
        return;
      }
    }
    out_.entries.push_back(std::move(entry));
  }

  std::string file_;
  Catalog out_;
  Failure failure_;
};

}  // namespace

Result<Catalog> ParseCatalogYaml(std::string_view text, std::string_view file_name,
                                 const Catalog& base) {
  try {
    return Parser(file_name, base).Run(text);
  } catch (const std::exception& e) {
    return InvalidArgument(fmt::format("{}: {}", file_name, e.what()));
  }
}

Result<Catalog> LoadCatalogFile(const std::string& path, const Catalog& base) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) return IoError(fmt::format("{}: read failed", path));
  return ParseCatalogYaml(content.str(), path, base);
}

}  // namespace gpuledger::cost
