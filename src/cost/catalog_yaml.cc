// Catalog files (docs/pricing.md). yaml-cpp throws; its exceptions are caught here and never
// leave this file.

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <sstream>
#include <tuple>

#include "common/money.h"
#include "cost/catalog.h"
#include "io/file_util.h"
#include "io/yaml_document.h"

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
    auto loaded = LoadYamlDocument(text, file_);
    if (!loaded) return loaded.error();
    const YAML::Node root = *loaded;
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
    YAML::Node prices;
    int prices_line = 1;
    std::map<std::string, std::pair<YAML::Node, int>> sections;
    for (const auto& kv : root) {
      int key_line = Line(kv.first, 1);
      if (!kv.first.IsScalar()) return Reject(key_line, "(key)", "expected a plain key");
      std::string key = kv.first.Scalar();
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
      } else if (key == "host_rates" || key == "instance_types" || key == "overrides" ||
                 key == "on_prem") {
        sections[key] = {kv.second, line};
      } else {
        return Reject(key_line, key,
                      "unknown key; expected currency, default_class, prices, host_rates, "
                      "instance_types, overrides or on_prem");
      }
    }
    if (!Prices(prices, prices_line)) return false;
    // Host rates before instance types: a type names its rates.
    for (const char* name : {"host_rates", "instance_types", "overrides", "on_prem"}) {
      auto it = sections.find(name);
      if (it == sections.end() || !it->second.first.IsDefined() || it->second.first.IsNull()) {
        continue;
      }
      const auto& [node, line] = it->second;
      bool ok = std::string_view(name) == "host_rates"       ? HostRatesList(node, line)
                : std::string_view(name) == "instance_types" ? InstanceTypes(node, line)
                : std::string_view(name) == "overrides"      ? Overrides(node, line)
                                                             : OnPrem(node, line);
      if (!ok) return false;
    }
    return true;
  }

  bool Prices(const YAML::Node& prices, int prices_line) {
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
    bool has_hourly = false;
    for (const auto& kv : item) {
      int key_line = Line(kv.first, line);
      if (!kv.first.IsScalar()) return Reject(key_line, "(key)", "expected a plain key");
      std::string key = kv.first.Scalar();
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
        if (!Money(kv.second, value_line, key, entry.hourly_nanos)) return false;
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

  // Iterates a mapping's keys, rejecting non-plain ones (a key given twice never gets here:
  // LoadYamlDocument refuses it); `on` returns false to stop (having called Reject).
  template <typename F>
  bool Fields(const YAML::Node& item, int line, const std::string& what, F&& on) {
    if (!item.IsMap()) return Reject(line, what, "expected a mapping");
    for (const auto& kv : item) {
      int key_line = Line(kv.first, line);
      if (!kv.first.IsScalar()) return Reject(key_line, "(key)", "expected a plain key");
      std::string key = kv.first.Scalar();
      if (!on(key, kv.second, key_line, Line(kv.second, key_line))) return false;
    }
    return true;
  }

  // An amount: a price per hour unless `max` says otherwise (kMaxHourlyPriceNanos, catalog.h).
  bool Money(const YAML::Node& node, int line, const std::string& field, Nanos& out,
             Nanos max = kMaxHourlyPriceNanos) {
    std::string text;
    if (!Scalar(node, line, field, text, "a non-negative decimal number like 6.88")) return false;
    auto nanos = NanosFromDecimal(text);
    if (!nanos || *nanos < 0) {
      return Reject(line, field,
                    fmt::format("expected a non-negative decimal number with at most 9 decimals, "
                                "like 6.88; got '{}'",
                                text));
    }
    if (*nanos > max) {
      return Reject(line, field,
                    fmt::format("expected at most {}; got '{}'", DecimalFromNanos(max), text));
    }
    out = *nanos;
    return true;
  }

  bool Int(const YAML::Node& node, int line, const std::string& field, int min, int& out) {
    std::string text;
    if (!Scalar(node, line, field, text, "a whole number")) return false;
    auto nanos = NanosFromDecimal(text);
    if (!nanos || text.find('.') != std::string::npos || *nanos < Nanos{min} * kNanosPerUnit ||
        *nanos > Nanos{1'000'000} * kNanosPerUnit) {
      return Reject(line, field, fmt::format("expected a whole number >= {}; got '{}'", min, text));
    }
    out = static_cast<int>(*nanos / kNanosPerUnit);
    return true;
  }

  std::string Where(int line) const { return fmt::format("{}:{}", file_, line); }

  // host_rates: [{name, per_vcpu, per_gib, source}]
  bool HostRatesList(const YAML::Node& list, int list_line) {
    if (!list.IsSequence()) return Reject(list_line, "host_rates", "expected a list");
    for (const auto& item : list) {
      int line = Line(item, list_line);
      HostRates r;
      bool has_cpu = false, has_ram = false;
      bool ok = Fields(
          item, line, "host_rates",
          [&](const std::string& key, const YAML::Node& v, int key_line, int value_line) {
            if (key == "name")
              return Scalar(v, value_line, key, r.name, "a name like aws-amd-gen3");
            if (key == "per_vcpu") return has_cpu = Money(v, value_line, key, r.per_vcpu_num);
            if (key == "per_gib") return has_ram = Money(v, value_line, key, r.per_gib_num);
            if (key == "source") return Scalar(v, value_line, key, r.source, "a string");
            return Reject(key_line, key, "unknown key; expected name, per_vcpu, per_gib or source");
          });
      if (!ok) return false;
      if (r.name.empty()) return Reject(line, "name", "expected a name (missing)");
      if (!has_cpu) return Reject(line, "per_vcpu", "expected a price per vCPU-hour (missing)");
      if (!has_ram) return Reject(line, "per_gib", "expected a price per GiB-hour (missing)");
      r.denominator = 1;
      r.source = fmt::format("{} ({})", r.source.empty() ? "catalog file" : r.source, Where(line));
      auto it = std::find_if(out_.host_rates.begin(), out_.host_rates.end(),
                             [&](const HostRates& h) { return h.name == r.name; });
      if (it != out_.host_rates.end()) {
        *it = std::move(r);
      } else {
        out_.host_rates.push_back(std::move(r));
      }
    }
    return true;
  }

  static std::string DefaultRatesFor(std::string_view provider) {
    if (provider == "aws") return "aws-intel-gen5";
    if (provider == "gcp") return "gcp-n2";
    if (provider == "azure") return "aws-amd-gen3";
    return "";
  }

  // instance_types: [{name, provider, gpu_model, gpu_count, vcpu, memory_gib, hourly,
  //                   spot_hourly, region, host_rates, source}]
  bool InstanceTypes(const YAML::Node& list, int list_line) {
    if (!list.IsSequence()) return Reject(list_line, "instance_types", "expected a list");
    std::map<std::pair<std::string, std::string>, int> first_line;
    for (const auto& item : list) {
      int line = Line(item, list_line);
      InstanceType t;
      bool has_hourly = false, has_count = false, has_vcpu = false, has_mem = false;
      int rates_line = line;
      bool ok = Fields(
          item, line, "instance_types",
          [&](const std::string& key, const YAML::Node& v, int key_line, int value_line) {
            if (key == "name") return Scalar(v, value_line, key, t.name, "an instance type name");
            if (key == "provider")
              return Scalar(v, value_line, key, t.provider, "aws, gcp or azure");
            if (key == "gpu_model") {
              if (!Scalar(v, value_line, key, t.gpu_model, "a GPU model name like H100-80GB")) {
                return false;
              }
              t.gpu_model = NormalizeGpuModel(t.gpu_model);
              return t.gpu_model.empty() ? Reject(value_line, key, "expected a GPU model name")
                                         : true;
            }
            if (key == "gpu_count") return has_count = Int(v, value_line, key, 1, t.gpu_count);
            if (key == "vcpu") return has_vcpu = Int(v, value_line, key, 0, t.vcpu);
            if (key == "memory_gib") return has_mem = Int(v, value_line, key, 0, t.memory_gib);
            if (key == "hourly") return has_hourly = Money(v, value_line, key, t.hourly_nanos);
            if (key == "spot_hourly") {
              Nanos spot = 0;
              if (!Money(v, value_line, key, spot)) return false;
              t.spot_hourly_nanos = spot;
              return true;
            }
            if (key == "region") return Scalar(v, value_line, key, t.region, "a region name");
            if (key == "host_rates") {
              rates_line = value_line;
              return Scalar(v, value_line, key, t.host_rates, "the name of host rates");
            }
            if (key == "source") return Scalar(v, value_line, key, t.source, "a string");
            return Reject(key_line, key,
                          "unknown key; expected name, provider, gpu_model, gpu_count, vcpu, "
                          "memory_gib, hourly, spot_hourly, region, host_rates or source");
          });
      if (!ok) return false;
      if (t.name.empty()) return Reject(line, "name", "expected an instance type name (missing)");
      if (t.gpu_model.empty()) return Reject(line, "gpu_model", "expected a GPU model (missing)");
      if (!has_count) return Reject(line, "gpu_count", "expected a whole number >= 1 (missing)");
      if (!has_vcpu) return Reject(line, "vcpu", "expected a whole number (missing)");
      if (!has_mem) return Reject(line, "memory_gib", "expected a whole number (missing)");
      if (!has_hourly) return Reject(line, "hourly", "expected the on-demand price (missing)");
      if (t.host_rates.empty()) t.host_rates = DefaultRatesFor(t.provider);
      if (t.host_rates.empty()) {
        return Reject(line, "host_rates",
                      "expected host rates to split the price by (missing; the default exists "
                      "only for provider aws, gcp or azure)");
      }
      if (out_.FindHostRates(t.host_rates) == nullptr) {
        std::string known;
        for (const auto& r : out_.host_rates) known += (known.empty() ? "" : ", ") + r.name;
        return Reject(
            rates_line, "host_rates",
            fmt::format("unknown host rates '{}'; expected one of: {}", t.host_rates, known));
      }
      auto [it, inserted] = first_line.emplace(std::make_pair(t.name, t.region), line);
      if (!inserted) {
        return Reject(line, "name",
                      fmt::format("duplicate instance type {}/{} (first at line {})", t.name,
                                  t.region.empty() ? "any region" : t.region, it->second));
      }
      t.source = fmt::format("{} ({})", t.source.empty() ? "catalog file" : t.source, Where(line));
      auto same = std::find_if(
          out_.instance_types.begin(), out_.instance_types.end(),
          [&](const InstanceType& x) { return x.name == t.name && x.region == t.region; });
      if (same != out_.instance_types.end()) {
        *same = std::move(t);
      } else {
        out_.instance_types.push_back(std::move(t));
      }
    }
    return true;
  }

  // overrides: [{node | selector: {k: v}, class, hourly_per_gpu | instance_hourly, source}]
  bool Overrides(const YAML::Node& list, int list_line) {
    if (!list.IsSequence()) return Reject(list_line, "overrides", "expected a list");
    for (const auto& item : list) {
      int line = Line(item, list_line);
      NodeOverride o;
      bool has_selector = false;
      bool ok = Fields(
          item, line, "overrides",
          [&](const std::string& key, const YAML::Node& v, int key_line, int value_line) {
            if (key == "node") return Scalar(v, value_line, key, o.node, "a node name");
            if (key == "selector") {
              has_selector = true;
              return Fields(v, value_line, key,
                            [&](const std::string& k, const YAML::Node& val, int, int val_line) {
                              std::string text;
                              if (!Scalar(val, val_line, "selector." + k, text, "a label value"))
                                return false;
                              o.selector[k] = text;
                              return true;
                            });
            }
            if (key == "class") {
              if (!Scalar(v, value_line, key, o.pricing_class, "a pricing class like reserved")) {
                return false;
              }
              return IsClassName(o.pricing_class)
                         ? true
                         : Reject(
                               value_line, key,
                               "expected a pricing class like reserved (lowercase, digits, '-')");
            }
            if (key == "hourly_per_gpu") {
              Nanos n = 0;
              if (!Money(v, value_line, key, n)) return false;
              o.hourly_per_gpu_nanos = n;
              return true;
            }
            if (key == "instance_hourly") {
              Nanos n = 0;
              if (!Money(v, value_line, key, n)) return false;
              o.instance_hourly_nanos = n;
              return true;
            }
            if (key == "source") return Scalar(v, value_line, key, o.source, "a string");
            return Reject(key_line, key,
                          "unknown key; expected node, selector, class, hourly_per_gpu, "
                          "instance_hourly or source");
          });
      if (!ok) return false;
      if (o.node.empty() == !has_selector) {
        return Reject(line, "node", "expected exactly one of node and selector");
      }
      if (has_selector && o.selector.empty()) {
        return Reject(line, "selector", "expected at least one label");
      }
      if (o.hourly_per_gpu_nanos && o.instance_hourly_nanos) {
        return Reject(line, "instance_hourly",
                      "expected at most one of hourly_per_gpu and instance_hourly");
      }
      if (o.pricing_class.empty() && !o.hourly_per_gpu_nanos && !o.instance_hourly_nanos) {
        return Reject(line, "class",
                      "expected at least one of class, hourly_per_gpu and instance_hourly");
      }
      o.where = Where(line);
      out_.overrides.push_back(std::move(o));
    }
    return true;
  }

  // on_prem: {depreciation_years, purchase_price: {model: usd}, electricity_per_kwh, pue}
  bool OnPrem(const YAML::Node& node, int line) {
    OnPremConfig c;
    c.where = Where(line);
    bool has_kwh = false;
    bool ok = Fields(
        node, line, "on_prem",
        [&](const std::string& key, const YAML::Node& v, int key_line, int value_line) {
          if (key == "depreciation_years") {
            Nanos years = 0;
            if (!Money(v, value_line, key, years)) return false;
            // hours = years x 8760, rounded half up.
            __int128 hours =
                (static_cast<__int128>(years) * 8760 + kNanosPerUnit / 2) / kNanosPerUnit;
            if (hours < 1 || hours > 100 * 8760) {
              return Reject(value_line, key, "expected a number of years in (0, 100]");
            }
            c.depreciation_hours = static_cast<std::int64_t>(hours);
            return true;
          }
          if (key == "purchase_price") {
            return Fields(
                v, value_line, key,
                [&](const std::string& model, const YAML::Node& val, int, int val_line) {
                  Nanos n = 0;
                  if (!Money(val, val_line, "purchase_price." + model, n, kMaxPurchasePriceNanos))
                    return false;
                  c.purchase_price_nanos[NormalizeGpuModel(model)] = n;
                  return true;
                });
          }
          if (key == "electricity_per_kwh") {
            return has_kwh = Money(v, value_line, key, c.electricity_per_kwh_nanos);
          }
          if (key == "pue") {
            Nanos pue = 0;
            if (!Money(v, value_line, key, pue)) return false;
            if (pue < kNanosPerUnit || pue > 10 * kNanosPerUnit || pue % 1'000'000 != 0) {
              return Reject(
                  value_line, key,
                  "expected a facility overhead factor in [1, 10] with at most 3 decimals");
            }
            c.pue_permille = static_cast<int>(pue / 1'000'000);
            return true;
          }
          return Reject(key_line, key,
                        "unknown key; expected depreciation_years, purchase_price, "
                        "electricity_per_kwh or pue");
        });
    if (!ok) return false;
    if (c.purchase_price_nanos.empty()) {
      return Reject(line, "purchase_price", "expected a purchase price per GPU model (missing)");
    }
    if (!has_kwh) {
      return Reject(line, "electricity_per_kwh", "expected a price per kWh (missing)");
    }
    out_.on_prem = std::move(c);
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
  auto text = ReadFile(path, kConfigFile);
  if (!text) return text.error();
  return ParseCatalogYaml(*text, path, base);
}

}  // namespace gpuledger::cost
