#include "sim/scenario.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "common/time_util.h"
#include "sim/sim_util.h"

#ifdef GPULEDGER_SIM_HAVE_ZLIB
#include <zlib.h>
#endif

namespace gpuledger::sim {
namespace {

struct ModelInfo {
  std::string_view name;
  Bytes memory;
};

constexpr ModelInfo kModels[] = {
    {"H100-80GB", 80 * kGiB},
    {"H100", 80 * kGiB},
    {"H200-141GB", 143771000832},
    {"A100-80GB", 80 * kGiB},
    {"A100-40GB", 40 * kGiB},
    {"L4", 23034 * kMiB},
    {"T4", 15360 * kMiB},
    {"A10", 24 * kGiB},
    {"A10G", 24 * kGiB},
    {"L40S", 48 * kGiB},
    {"V100-16GB", 16 * kGiB},
    {"V100-32GB", 32 * kGiB},
    {"P100", 16 * kGiB},
    {"A30", 24 * kGiB},
    {"A30-24GB", 24 * kGiB},
    // Alibaba openb trace models (docs/scenarios.md: G1-G3 are undisclosed, 32 GiB assumed).
    {"V100M16", 16 * kGiB},
    {"V100M32", 32 * kGiB},
    {"G1", 32 * kGiB},
    {"G2", 32 * kGiB},
    {"G3", 32 * kGiB},
};

// MIG profiles per GPU family (NVIDIA mig-parted config-default.yaml, via
// shared/data/mig/mig_profiles_by_gpu.csv). Models not listed accept any "<n>g.<m>gb".
struct MigFamily {
  std::vector<std::string_view> models;
  std::vector<std::string_view> profiles;
};

const std::vector<MigFamily>& MigFamilies() {
  static const auto* families = new std::vector<MigFamily>{
      {{"H100-80GB", "H100", "A100-80GB"},
       {"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}},
      {{"H200-141GB"}, {"1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"}},
      {{"A100-40GB"}, {"1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"}},
      {{"A30", "A30-24GB"}, {"1g.6gb", "2g.12gb", "4g.24gb"}},
  };
  return *families;
}

std::string StripMe(std::string_view p) {
  std::string s(p);
  if (s.size() > 3 && s.ends_with("+me")) s.resize(s.size() - 3);
  return s;
}

// "<n>gb" part of a profile, in bytes (decimal GB, as NVIDIA names them).
Bytes MigProfileMemory(std::string_view profile) {
  std::string p = StripMe(profile);
  auto dot = p.find('.');
  if (dot == std::string::npos) return 0;
  double gb = 0;
  auto r = std::from_chars(p.data() + dot + 1, p.data() + p.size(), gb);
  if (r.ec != std::errc()) return 0;
  return static_cast<Bytes>(gb * 1e9);
}

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

// --- CSV time series ------------------------------------------------------------------------

Result<std::string> ReadWholeFile(const std::string& path) {
  if (path.ends_with(".gz")) {
#ifdef GPULEDGER_SIM_HAVE_ZLIB
    gzFile f = gzopen(path.c_str(), "rb");
    if (f == nullptr) return IoError(fmt::format("{}: cannot open", path));
    std::string out;
    char buf[1 << 16];
    int n = 0;
    while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
    bool bad = n < 0;
    gzclose(f);
    if (bad) return IoError(fmt::format("{}: corrupt gzip data", path));
    return out;
#else
    return Unsupported(fmt::format("{}: built without zlib, cannot read .gz", path));
#endif
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError(fmt::format("{}: cannot open", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string_view> SplitCsvLine(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t pos = 0;
  while (true) {
    auto c = line.find(',', pos);
    out.push_back(line.substr(pos, c == std::string_view::npos ? line.npos : c - pos));
    if (c == std::string_view::npos) break;
    pos = c + 1;
  }
  for (auto& f : out) {
    while (!f.empty() && (f.back() == '\r' || f.back() == ' ')) f.remove_suffix(1);
    if (f.size() >= 2 && f.front() == '"' && f.back() == '"') f = f.substr(1, f.size() - 2);
  }
  return out;
}

void LoadSeries(Parser& p, const YAML::Node& c, const std::string& path, ComputeProfile& out) {
  std::string file = p.RequiredStr(c, "file", path);
  std::string column = p.Str(c["column"], path + ".column", "value");
  std::string time_column = p.Str(c["time_column"], path + ".time_column", "");
  double scale = p.Number(c["scale"], path + ".scale", 0, 1e9, 1.0);
  std::map<std::string, std::string> where = p.Labels(c["where"], path + ".where");
  if (p.failed()) return;
  std::string full =
      (file.starts_with("/") || p.base_dir().empty()) ? file : p.base_dir() + "/" + file;
  auto text = ReadWholeFile(full);
  if (!text.ok()) {
    p.Fail(c["file"], path + ".file", text.error().message);
    return;
  }
  std::string_view all = *text;
  std::size_t eol = all.find('\n');
  auto header = SplitCsvLine(all.substr(0, eol));
  int vcol = -1, tcol = -1;
  std::vector<std::pair<int, std::string>> wcols;
  for (int i = 0; i < static_cast<int>(header.size()); ++i) {
    if (header[i] == column) vcol = i;
    if (time_column.empty() ? (tcol < 0 && header[i].find("time") != std::string_view::npos)
                            : header[i] == time_column)
      tcol = i;
    for (auto& [k, v] : where)
      if (header[i] == k) wcols.emplace_back(i, v);
  }
  if (vcol < 0 || tcol < 0 || wcols.size() != where.size()) {
    p.Fail(c, path,
           fmt::format("{}: header lacks the value, time or where columns ({})", full,
                       all.substr(0, std::min(eol, all.size()))));
    return;
  }
  std::vector<std::pair<double, double>> rows;  // (seconds, value)
  std::size_t pos = eol == std::string_view::npos ? all.size() : eol + 1;
  int line_no = 1;
  while (pos < all.size()) {
    std::size_t e = all.find('\n', pos);
    std::string_view line = all.substr(pos, e == std::string_view::npos ? all.npos : e - pos);
    pos = e == std::string_view::npos ? all.size() : e + 1;
    ++line_no;
    if (line.empty() || line == "\r") continue;
    auto f = SplitCsvLine(line);
    bool keep = true;
    for (auto& [i, v] : wcols)
      if (i >= static_cast<int>(f.size()) || f[i] != v) keep = false;
    if (!keep) continue;
    double t = 0, v = 0;
    if (std::max(vcol, tcol) >= static_cast<int>(f.size()) ||
        std::from_chars(f[tcol].data(), f[tcol].data() + f[tcol].size(), t).ec != std::errc() ||
        std::from_chars(f[vcol].data(), f[vcol].data() + f[vcol].size(), v).ec != std::errc()) {
      p.Fail(c, path,
             fmt::format("{}:{}: expected numbers in columns {} and {}", full, line_no,
                         header[tcol], header[vcol]));
      return;
    }
    rows.emplace_back(t, v);
  }
  if (rows.empty()) {
    p.Fail(c, path, fmt::format("{}: no rows match", full));
    return;
  }
  std::stable_sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.first < b.first; });
  auto s = std::make_shared<Series>();
  double t0 = rows.front().first;
  for (auto& [t, v] : rows) {
    Micros off = static_cast<Micros>(std::llround((t - t0) * 1e6));
    double frac = std::clamp(v / 100.0 * scale, 0.0, 1.0);
    if (!s->offset_us.empty() && s->offset_us.back() == off) {
      s->value.back() = frac;  // duplicate timestamp: the later row wins
      continue;
    }
    s->offset_us.push_back(off);
    s->value.push_back(frac);
  }
  std::vector<Micros> gaps;
  for (std::size_t i = 1; i < s->offset_us.size(); ++i)
    gaps.push_back(s->offset_us[i] - s->offset_us[i - 1]);
  Micros spacing = kMicrosPerSecond * 60;
  if (!gaps.empty()) {
    std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
    spacing = gaps[gaps.size() / 2];
  }
  s->period_us = s->offset_us.back() + spacing;
  s->prefix.resize(s->offset_us.size() + 1);
  s->prefix[0] = 0;
  for (std::size_t i = 0; i < s->offset_us.size(); ++i) {
    Micros next = i + 1 < s->offset_us.size() ? s->offset_us[i + 1] : s->period_us;
    s->prefix[i + 1] = s->prefix[i] + s->value[i] * static_cast<double>(next - s->offset_us[i]);
  }
  out.series = std::move(s);
}

ComputeProfile ParseCompute(Parser& p, const YAML::Node& c, const std::string& path,
                            std::uint64_t seed) {
  ComputeProfile out;
  if (!c.IsDefined() || c.IsNull()) return out;
  if (!p.IsMap(c, path)) return out;
  p.CheckKeys(c, path,
              {"profile", "duty", "period", "on", "mean_duty", "burst", "file", "column",
               "time_column", "scale", "where"});
  std::string kind = p.RequiredStr(c, "profile", path);
  if (p.failed()) return out;
  auto only = [&](std::initializer_list<std::string_view> keys) {
    std::vector<std::string_view> allowed{"profile"};
    allowed.insert(allowed.end(), keys);
    for (auto it = c.begin(); it != c.end(); ++it) {
      std::string k = it->first.Scalar();
      if (std::find(allowed.begin(), allowed.end(), k) == allowed.end())
        p.Fail(it->first, Parser::Sub(path, k),
               fmt::format("not a field of profile '{}' (expected: {})", kind, Join(allowed)));
    }
  };
  if (kind == "idle") {
    only({});
  } else if (kind == "constant") {
    only({"duty"});
    out.kind = ProfileKind::kConstant;
    if (!c["duty"].IsDefined()) p.Fail(c, path + ".duty", "required, missing");
    out.duty = p.Number(c["duty"], path + ".duty", 0, 1, 0);
  } else if (kind == "periodic") {
    only({"duty", "period", "on"});
    out.kind = ProfileKind::kPeriodic;
    out.duty = p.Number(c["duty"], path + ".duty", 0, 1, 1.0);
    out.period_us = p.Duration(c["period"], path + ".period", 0);
    out.on_us = p.Duration(c["on"], path + ".on", 0);
    if (!p.failed() && out.period_us <= 0) p.Fail(c, path + ".period", "required, expected > 0");
    if (!p.failed() && out.on_us > out.period_us)
      p.Fail(c["on"], path + ".on", "expected a duration no longer than period");
  } else if (kind == "bursty") {
    only({"mean_duty", "burst"});
    out.kind = ProfileKind::kBursty;
    if (!c["mean_duty"].IsDefined()) p.Fail(c, path + ".mean_duty", "required, missing");
    out.duty = p.Number(c["mean_duty"], path + ".mean_duty", 0, 1, 0);
    out.burst_us = p.Duration(c["burst"], path + ".burst", 5 * 60 * kMicrosPerSecond);
    if (!p.failed() && out.burst_us < kMicrosPerSecond)
      p.Fail(c["burst"], path + ".burst", "expected a duration of at least 1s");
    out.seed = seed;
  } else if (kind == "series") {
    only({"file", "column", "time_column", "scale", "where"});
    out.kind = ProfileKind::kSeries;
    LoadSeries(p, c, path, out);
  } else {
    p.Fail(c["profile"], path + ".profile",
           fmt::format("expected one of idle, constant, periodic, bursty, series, got '{}'", kind));
  }
  return out;
}

EfficiencyProfile ParseEfficiency(Parser& p, const YAML::Node& e, const std::string& path) {
  EfficiencyProfile out;
  if (!e.IsDefined() || e.IsNull()) return out;
  if (!p.IsMap(e, path)) return out;
  p.CheckKeys(e, path, {"sm_active", "sm_occupancy", "tensor_active", "dram_active"});
  out.sm_active = p.Number(e["sm_active"], path + ".sm_active", 0, 1, out.sm_active);
  out.sm_occupancy = p.Number(e["sm_occupancy"], path + ".sm_occupancy", 0, 1, out.sm_occupancy);
  out.tensor_active =
      p.Number(e["tensor_active"], path + ".tensor_active", 0, 1, out.tensor_active);
  out.dram_active = p.Number(e["dram_active"], path + ".dram_active", 0, 1, out.dram_active);
  return out;
}

MemoryProfile ParseMemory(Parser& p, const YAML::Node& m, const std::string& path) {
  MemoryProfile out;
  if (!m.IsDefined() || m.IsNull()) return out;
  if (!p.IsMap(m, path)) return out;
  p.CheckKeys(m, path, {"bytes", "peak", "period"});
  out.bytes = p.Size(m["bytes"], path + ".bytes", 0);
  out.peak_bytes = p.Size(m["peak"], path + ".peak", 0);
  out.period_us = p.Duration(m["period"], path + ".period", 0);
  if (p.failed()) return out;
  if (out.peak_bytes != 0 && out.peak_bytes < out.bytes)
    p.Fail(m["peak"], path + ".peak", "expected a size no smaller than bytes");
  if (out.peak_bytes != 0 && out.period_us <= 0)
    p.Fail(m, path + ".period", "required with peak, expected > 0");
  return out;
}

// --- placement ------------------------------------------------------------------------------

struct Occupancy {
  Micros start, end;
  SharePpd amount;
};

struct Unit {
  int gpu, mig, replica;
  std::vector<Occupancy> occ;
};

bool Fits(const Unit& u, Micros s, Micros e, SharePpd amount) {
  // Peak concurrent use over [s, e) occurs at s or at the start of an overlapping occupancy.
  std::vector<Micros> points{s};
  for (auto& o : u.occ)
    if (o.start > s && o.start < e) points.push_back(o.start);
  for (Micros t : points) {
    SharePpd used = 0;
    for (auto& o : u.occ)
      if (o.start <= t && t < o.end) used += o.amount;
    if (used + amount > kWholeGpu) return false;
  }
  return true;
}

struct Placer {
  Parser& p;
  Scenario& sc;
  std::vector<std::vector<Unit>> units;                      // per node
  std::map<std::string, std::pair<int, int>> shared_claims;  // ns/claim -> (node, unit)

  void Build() {
    units.resize(sc.nodes.size());
    for (std::size_t n = 0; n < sc.nodes.size(); ++n) {
      auto& node = sc.nodes[n];
      for (int g = 0; g < node.gpus; ++g) {
        switch (node.sharing) {
          case SharingMode::kTimeSlicing:
          case SharingMode::kMps:
            for (int r = 0; r < node.replicas; ++r) units[n].push_back({g, -1, r, {}});
            break;
          case SharingMode::kMig:
            for (int m = 0; m < static_cast<int>(node.mig_layout.size()); ++m)
              for (int r = 0; r < node.replicas; ++r)
                units[n].push_back({g, m, node.replicas > 1 ? r : -1, {}});
            break;
          default:
            units[n].push_back({g, -1, -1, {}});
        }
      }
    }
  }

  bool Compatible(const WorkloadSpec& w, const NodeSpec& n) const {
    if (!w.gpu_model.empty() && n.gpu_model != w.gpu_model) return false;
    if (!w.mig_profile.empty() != (n.sharing == SharingMode::kMig)) return false;
    if (w.fraction_ppd && n.sharing != SharingMode::kFractional) return false;
    if (!w.dra_claim.empty() && n.sharing != SharingMode::kDra) return false;
    if (w.mps_active_thread_percentage && n.sharing != SharingMode::kMps) return false;
    return true;
  }

  bool UnitMatches(const WorkloadSpec& w, const NodeSpec& n, const Unit& u) const {
    if (n.sharing != SharingMode::kMig) return true;
    return StripMe(n.mig_layout[u.mig]) == StripMe(w.mig_profile);
  }

  SharePpd Amount(const WorkloadSpec& w) const {
    return w.fraction_ppd ? *w.fraction_ppd : kWholeGpu;
  }

  PodGrantPlan GrantFor(const WorkloadSpec& w, const NodeSpec& n, const Unit& u,
                        const std::string& claim) const {
    PodGrantPlan g{u.gpu, u.mig, u.replica, 0, claim};
    if (n.sharing == SharingMode::kFractional) g.declared_ppd = Amount(w);
    if (n.sharing == SharingMode::kMps && w.mps_active_thread_percentage)
      g.declared_ppd = kWholeGpu / 100 * *w.mps_active_thread_percentage;
    return g;
  }

  // First fit of `count` distinct units on node n; fills `out` and commits when it fits.
  bool TryNode(const WorkloadSpec& w, int n, int count, Micros s, Micros e, std::vector<int>& out) {
    out.clear();
    auto& node = sc.nodes[n];
    SharePpd amount = Amount(w);
    for (int i = 0; i < static_cast<int>(units[n].size()) && static_cast<int>(out.size()) < count;
         ++i) {
      auto& u = units[n][i];
      if (!UnitMatches(w, node, u) || !Fits(u, s, e, amount)) continue;
      // Whole-GPU modes hold distinct GPUs; a second replica of the same GPU is fine.
      out.push_back(i);
    }
    if (static_cast<int>(out.size()) < count) return false;
    for (int i : out) units[n][i].occ.push_back({s, e, amount});
    return true;
  }

  void Place(WorkloadSpec& w, int wi) {
    std::string path = fmt::format("workloads[{}]", wi);
    for (int i = 0; i < w.replicas && !p.failed(); ++i) {
      PodPlan pod;
      pod.name =
          (w.owner_kind == "Pod" && w.replicas == 1) ? w.name : fmt::format("{}-{}", w.name, i);
      pod.uid = UuidFromHash(HashOf(sc.seed, "pod", w.namespace_name, pod.name));
      Micros s = w.start_us, e = w.end_us;
      if (w.request_none) {
        pod.node = FindNode(w.uses_gpu_node);
        if (pod.node < 0) {
          p.Fail(w.line, path + ".uses_gpu.node", "no node named '" + w.uses_gpu_node + "'");
          return;
        }
        if (w.uses_gpu_index >= sc.nodes[pod.node].gpus) {
          p.Fail(w.line, path + ".uses_gpu.index",
                 fmt::format("node '{}' has {} GPUs", w.uses_gpu_node, sc.nodes[pod.node].gpus));
          return;
        }
        pod.uses_gpu = w.uses_gpu_index;
        w.pods.push_back(std::move(pod));
        continue;
      }
      if (!w.placement_node.empty()) {
        PlaceExplicit(w, path, pod);
        if (p.failed()) return;
        w.pods.push_back(std::move(pod));
        continue;
      }
      std::string claim;
      bool dra_shared = false;
      if (!w.dra_claim.empty()) {
        dra_shared = w.dra_shared;
        claim =
            w.namespace_name + "/" + (w.dra_shared ? w.dra_claim : pod.name + "-" + w.dra_claim);
      }
      if (dra_shared) {
        auto it = shared_claims.find(claim);
        if (it == shared_claims.end()) {
          // The shared claim holds its device for the life of every pod that names it.
          Micros cs = s, ce = e;
          for (auto& o : sc.workloads)
            if (o.namespace_name == w.namespace_name && o.dra_claim == w.dra_claim &&
                o.dra_shared) {
              cs = std::min(cs, o.start_us);
              ce = std::max(ce, o.end_us);
            }
          if (!PlaceUnits(w, path, 1, cs, ce, pod, claim)) return;
          shared_claims[claim] = {pod.node, pod.grants[0].gpu};
        } else {
          auto& node = sc.nodes[it->second.first];
          if (!w.node.empty() && w.node != node.name) {
            p.Fail(w.line, path + ".node",
                   fmt::format("shared claim '{}' is on node '{}'", claim, node.name));
            return;
          }
          pod.node = it->second.first;
          Unit u{it->second.second, -1, -1, {}};
          pod.grants.push_back(GrantFor(w, node, u, claim));
        }
        w.pods.push_back(std::move(pod));
        continue;
      }
      if (sc.nodes.empty() ||
          !PlaceUnits(w, path, sc.nodes.empty() ? 0 : (w.fraction_ppd ? 1 : w.gpus), s, e, pod,
                      claim))
        return;
      if (sc.nodes[pod.node].sharing == SharingMode::kDra && claim.empty()) {
        // A DRA pod without a named claim gets its own, as a ResourceClaimTemplate would.
        for (auto& g : pod.grants) g.dra_claim = w.namespace_name + "/" + pod.name + "-gpu";
      }
      w.pods.push_back(std::move(pod));
    }
  }

  int FindNode(const std::string& name) const {
    for (std::size_t n = 0; n < sc.nodes.size(); ++n)
      if (sc.nodes[n].name == name) return static_cast<int>(n);
    return -1;
  }

  bool PlaceUnits(const WorkloadSpec& w, const std::string& path, int count, Micros s, Micros e,
                  PodPlan& pod, const std::string& claim) {
    std::vector<int> chosen;
    for (std::size_t n = 0; n < sc.nodes.size(); ++n) {
      auto& node = sc.nodes[n];
      if (!w.node.empty() && node.name != w.node) continue;
      if (!Compatible(w, node)) continue;
      if (TryNode(w, static_cast<int>(n), count, s, e, chosen)) {
        pod.node = static_cast<int>(n);
        for (int i : chosen) pod.grants.push_back(GrantFor(w, node, units[n][i], claim));
        return true;
      }
    }
    std::string where = !w.node.empty()        ? "node '" + w.node + "'"
                        : !w.gpu_model.empty() ? "any " + w.gpu_model + " node"
                                               : "any node";
    p.Fail(w.line, path,
           fmt::format("workload '{}/{}' pod {}: no room on {} for {} {} from {}s to {}s",
                       w.namespace_name, w.name, pod.name, where, count,
                       w.mig_profile.empty() ? "GPU share(s)" : w.mig_profile + " instance(s)",
                       s / kMicrosPerSecond, e / kMicrosPerSecond));
    return false;
  }

  void PlaceExplicit(const WorkloadSpec& w, const std::string& path, PodPlan& pod) {
    int n = FindNode(w.placement_node);
    if (n < 0) {
      p.Fail(w.line, path + ".placement.node", "no node named '" + w.placement_node + "'");
      return;
    }
    auto& node = sc.nodes[n];
    pod.node = n;
    std::string claim =
        w.dra_claim.empty()
            ? (node.sharing == SharingMode::kDra ? w.namespace_name + "/" + pod.name + "-gpu" : "")
            : w.namespace_name + "/" + w.dra_claim;
    for (int g : w.placement_gpus) {
      if (g < 0 || g >= node.gpus) {
        p.Fail(w.line, path + ".placement.gpus",
               fmt::format("GPU index {} out of range: node '{}' has {}", g, node.name, node.gpus));
        return;
      }
      bool replicated = node.sharing == SharingMode::kTimeSlicing ||
                        node.sharing == SharingMode::kMps || node.sharing == SharingMode::kMig;
      if (!replicated) {
        // Explicit placement is trusted (it comes from a real scheduler's decisions): no
        // capacity check, so an imported over-commitment shows as over-subscription.
        Unit u{g, -1, -1, {}};
        units[n][static_cast<std::size_t>(g)].occ.push_back({w.start_us, w.end_us, Amount(w)});
        pod.grants.push_back(GrantFor(w, node, u, claim));
        continue;
      }
      bool done = false;
      for (auto& u : units[n]) {
        if (u.gpu != g || !UnitMatches(w, node, u) || !Fits(u, w.start_us, w.end_us, kWholeGpu))
          continue;
        u.occ.push_back({w.start_us, w.end_us, kWholeGpu});
        pod.grants.push_back(GrantFor(w, node, u, claim));
        done = true;
        break;
      }
      if (!done) {
        p.Fail(w.line, path + ".placement.gpus",
               fmt::format("no free replica or instance on GPU {} of node '{}'", g, node.name));
        return;
      }
    }
  }
};

// --- top level ------------------------------------------------------------------------------

void ParseNode(Parser& p, const YAML::Node& y, const std::string& path, NodeSpec& n,
               std::uint64_t seed, Micros duration) {
  if (!p.IsMap(y, path)) return;
  p.CheckKeys(
      y, path,
      {"name", "gpu_model", "gpus", "memory", "sharing", "replicas", "mig_layout", "total_slices",
       "pricing_class", "region", "labels", "dcgm", "fractional_layer", "host_processes"});
  n.name = p.RequiredStr(y, "name", path);
  n.gpu_model = p.RequiredStr(y, "gpu_model", path);
  n.gpus = static_cast<int>(p.Int(y["gpus"], path + ".gpus", 0, 64, 1));
  if (p.failed()) return;
  Bytes def_mem = DefaultGpuMemory(n.gpu_model);
  n.memory_per_gpu_bytes = p.Size(y["memory"], path + ".memory", def_mem);
  if (!p.failed() && n.memory_per_gpu_bytes <= 0)
    p.Fail(y, path + ".memory",
           fmt::format("required: '{}' is not a known GPU model, give its memory (e.g. 24GiB)",
                       n.gpu_model));
  std::string sharing = p.Str(y["sharing"], path + ".sharing", "exclusive");
  if (auto m = ParseSharingMode(sharing)) {
    n.sharing = *m;
  } else {
    p.Fail(y["sharing"], path + ".sharing",
           "expected one of exclusive, time-slicing, mps, mig, fractional, dra, got '" + sharing +
               "'");
  }
  n.replicas = static_cast<int>(p.Int(y["replicas"], path + ".replicas", 1, 16, 1));
  if (!p.failed() && n.replicas > 1 && n.sharing != SharingMode::kTimeSlicing &&
      n.sharing != SharingMode::kMps && n.sharing != SharingMode::kMig)
    p.Fail(y["replicas"], path + ".replicas",
           "replicas > 1 needs sharing time-slicing, mps or mig");
  n.total_slices = n.gpu_model.starts_with("A30") ? 4 : 7;
  n.total_slices =
      static_cast<int>(p.Int(y["total_slices"], path + ".total_slices", 1, 8, n.total_slices));
  auto layout = y["mig_layout"];
  if (layout.IsDefined() && !layout.IsNull() && p.IsList(layout, path + ".mig_layout")) {
    if (n.sharing != SharingMode::kMig)
      p.Fail(layout, path + ".mig_layout", "only valid with sharing: mig");
    const MigFamily* family = nullptr;
    for (auto& f : MigFamilies())
      if (std::find(f.models.begin(), f.models.end(), n.gpu_model) != f.models.end()) family = &f;
    int used = 0;
    for (std::size_t i = 0; i < layout.size(); ++i) {
      std::string ip = fmt::format("{}.mig_layout[{}]", path, i);
      std::string prof = p.Str(layout[i], ip);
      int slices = MigComputeSlices(prof);
      bool known = slices > 0 && MigProfileMemory(prof) > 0;
      if (known && family)
        known = std::find(family->profiles.begin(), family->profiles.end(), StripMe(prof)) !=
                family->profiles.end();
      if (!known) {
        p.Fail(
            layout[i], ip,
            fmt::format("unknown MIG profile '{}' for {} (expected one of: {})", prof, n.gpu_model,
                        family ? Join(family->profiles) : std::string("<n>g.<m>gb")));
        return;
      }
      used += slices;
      if (used > n.total_slices) {
        p.Fail(layout[i], ip,
               fmt::format("MIG layout needs {} compute slices so far, more than the {} of a {}",
                           used, n.total_slices, n.gpu_model));
        return;
      }
      n.mig_layout.push_back(prof);
    }
  }
  if (!p.failed() && n.sharing == SharingMode::kMig && n.mig_layout.empty())
    p.Fail(y, path + ".mig_layout", "required with sharing: mig (e.g. [3g.40gb, 2g.20gb])");
  n.pricing_class = p.Str(y["pricing_class"], path + ".pricing_class", "on-demand");
  n.region = p.Str(y["region"], path + ".region", "");
  n.labels = p.Labels(y["labels"], path + ".labels");
  n.has_dcgm = p.Bool(y["dcgm"], path + ".dcgm", false);
  if (y["fractional_layer"].IsDefined()) {
    n.fractional_layer = p.Str(y["fractional_layer"], path + ".fractional_layer");
    if (!p.failed() && n.fractional_layer != "gpu-milli" && n.fractional_layer != "hami" &&
        n.fractional_layer != "gpushare")
      p.Fail(
          y["fractional_layer"], path + ".fractional_layer",
          fmt::format("unknown '{}' (expected gpu-milli, hami or gpushare)", n.fractional_layer));
    if (!p.failed() && n.sharing != SharingMode::kFractional)
      p.Fail(y["fractional_layer"], path + ".fractional_layer", "only with sharing: fractional");
  }
  auto hp = y["host_processes"];
  if (hp.IsDefined() && !hp.IsNull() && p.IsList(hp, path + ".host_processes")) {
    for (std::size_t i = 0; i < hp.size() && !p.failed(); ++i) {
      std::string hpath = fmt::format("{}.host_processes[{}]", path, i);
      auto h = hp[i];
      if (!p.IsMap(h, hpath)) return;
      p.CheckKeys(h, hpath, {"name", "gpu", "compute", "efficiency", "memory", "start", "end"});
      HostProcessSpec spec;
      spec.name = p.RequiredStr(h, "name", hpath);
      spec.gpu = static_cast<int>(p.Int(h["gpu"], hpath + ".gpu", 0, std::max(0, n.gpus - 1), 0));
      spec.compute = ParseCompute(p, h["compute"], hpath + ".compute",
                                  HashOf(seed, "host", n.name, spec.name));
      spec.efficiency = ParseEfficiency(p, h["efficiency"], hpath + ".efficiency");
      spec.memory = ParseMemory(p, h["memory"], hpath + ".memory");
      spec.start_us = p.Duration(h["start"], hpath + ".start", 0);
      spec.end_us = std::min(p.Duration(h["end"], hpath + ".end", duration), duration);
      if (!p.failed() && spec.start_us >= spec.end_us)
        p.Fail(h, hpath + ".start", "expected start before end (and before the scenario ends)");
      n.host_processes.push_back(std::move(spec));
    }
  }
}

void ParseWorkload(Parser& p, const YAML::Node& y, const std::string& path, WorkloadSpec& w,
                   const Scenario& sc) {
  if (!p.IsMap(y, path)) return;
  w.line = Parser::Line(y);
  p.CheckKeys(y, path,
              {"namespace",
               "name",
               "owner_kind",
               "owner_name",
               "labels",
               "replicas",
               "container",
               "node",
               "gpu_model",
               "gpus",
               "mig_profile",
               "fraction",
               "gpu_milli",
               "mps_active_thread_percentage",
               "dra_claim",
               "start",
               "end",
               "processes",
               "compute",
               "efficiency",
               "memory",
               "placement",
               "request",
               "uses_gpu",
               "visible_devices",
               "grant_lingers"});
  w.namespace_name = p.RequiredStr(y, "namespace", path);
  w.name = p.RequiredStr(y, "name", path);
  w.owner_kind = p.Str(y["owner_kind"], path + ".owner_kind", "Deployment");
  w.owner_name = p.Str(y["owner_name"], path + ".owner_name", w.name);
  w.labels = p.Labels(y["labels"], path + ".labels");
  w.replicas = static_cast<int>(p.Int(y["replicas"], path + ".replicas", 0, 10000, 1));
  w.container = p.Str(y["container"], path + ".container", "main");
  w.node = p.Str(y["node"], path + ".node", "");
  w.gpu_model = p.Str(y["gpu_model"], path + ".gpu_model", "");
  w.gpus = static_cast<int>(p.Int(y["gpus"], path + ".gpus", 1, 64, 1));
  w.mig_profile = p.Str(y["mig_profile"], path + ".mig_profile", "");
  if (y["fraction"].IsDefined() && y["gpu_milli"].IsDefined())
    p.Fail(y["gpu_milli"], path + ".gpu_milli", "give fraction or gpu_milli, not both");
  if (y["fraction"].IsDefined()) {
    double f = p.Number(y["fraction"], path + ".fraction", 0, 1, 0);
    if (!p.failed() && f <= 0) p.Fail(y["fraction"], path + ".fraction", "expected > 0");
    w.fraction_ppd = static_cast<SharePpd>(std::llround(f * static_cast<double>(kWholeGpu)));
  }
  if (y["gpu_milli"].IsDefined())
    w.fraction_ppd = p.Int(y["gpu_milli"], path + ".gpu_milli", 1, 1000, 1000) * (kWholeGpu / 1000);
  if (w.fraction_ppd && w.gpus != 1 && !p.failed())
    p.Fail(y["gpus"], path + ".gpus", "a fractional pod holds a share of one GPU: gpus must be 1");
  if (y["mps_active_thread_percentage"].IsDefined())
    w.mps_active_thread_percentage = static_cast<int>(p.Int(
        y["mps_active_thread_percentage"], path + ".mps_active_thread_percentage", 1, 100, 100));
  auto claim = y["dra_claim"];
  if (claim.IsDefined() && !claim.IsNull() && p.IsMap(claim, path + ".dra_claim")) {
    p.CheckKeys(claim, path + ".dra_claim", {"name", "shared"});
    w.dra_claim = p.RequiredStr(claim, "name", path + ".dra_claim");
    w.dra_shared = p.Bool(claim["shared"], path + ".dra_claim.shared", false);
  }
  w.start_us = p.Duration(y["start"], path + ".start", 0);
  w.end_us = std::min(p.Duration(y["end"], path + ".end", sc.duration_us), sc.duration_us);
  if (!p.failed() && w.start_us >= w.end_us)
    p.Fail(y["start"].IsDefined() ? y["start"] : y, path + ".start",
           "expected start before end (and before the scenario ends)");
  w.processes = static_cast<int>(p.Int(y["processes"], path + ".processes", 0, 64, 1));
  w.compute = ParseCompute(p, y["compute"], path + ".compute",
                           HashOf(sc.seed, "workload", w.namespace_name, w.name));
  w.efficiency = ParseEfficiency(p, y["efficiency"], path + ".efficiency");
  w.memory = ParseMemory(p, y["memory"], path + ".memory");
  auto pl = y["placement"];
  if (pl.IsDefined() && !pl.IsNull() && p.IsMap(pl, path + ".placement")) {
    p.CheckKeys(pl, path + ".placement", {"node", "gpus"});
    w.placement_node = p.RequiredStr(pl, "node", path + ".placement");
    auto g = pl["gpus"];
    if (g.IsDefined() && p.IsList(g, path + ".placement.gpus")) {
      for (std::size_t i = 0; i < g.size(); ++i)
        w.placement_gpus.push_back(
            static_cast<int>(p.Int(g[i], fmt::format("{}.placement.gpus[{}]", path, i), 0, 63, 0)));
    }
    if (!p.failed() && w.placement_gpus.empty())
      p.Fail(pl, path + ".placement.gpus", "required, a list of GPU indices");
    if (!p.failed() && w.replicas != 1)
      p.Fail(pl, path + ".placement", "explicit placement needs replicas: 1");
  }
  std::string request = p.Str(y["request"], path + ".request", "gpu");
  if (request == "none") {
    w.request_none = true;
  } else if (request != "gpu") {
    p.Fail(y["request"], path + ".request", "expected gpu or none, got '" + request + "'");
  }
  auto uses = y["uses_gpu"];
  if (uses.IsDefined() && !uses.IsNull()) {
    if (!w.request_none) p.Fail(uses, path + ".uses_gpu", "only valid with request: none");
    if (p.IsMap(uses, path + ".uses_gpu")) {
      p.CheckKeys(uses, path + ".uses_gpu", {"node", "index"});
      w.uses_gpu_node = p.RequiredStr(uses, "node", path + ".uses_gpu");
      w.uses_gpu_index = static_cast<int>(p.Int(uses["index"], path + ".uses_gpu.index", 0, 63, 0));
    }
  } else if (w.request_none && !p.failed()) {
    p.Fail(y, path + ".uses_gpu", "required with request: none ({node, index})");
  }
  auto linger = y["grant_lingers"];
  if (linger.IsDefined() && !linger.IsNull()) {
    if (w.request_none)
      p.Fail(linger, path + ".grant_lingers", "a pod with request: none holds no grant");
    w.grant_linger_us = p.Duration(linger, path + ".grant_lingers", 0);
  }
  std::string vis = p.Str(y["visible_devices"], path + ".visible_devices", "");
  if (vis == "all") {
    w.visible_devices_all = true;
  } else if (!vis.empty()) {
    p.Fail(y["visible_devices"], path + ".visible_devices", "expected 'all', got '" + vis + "'");
  }
  if (!p.failed() && !sc.namespace_labels.empty() &&
      !sc.namespace_labels.contains(w.namespace_name)) {
    // Namespaces are optional, but when listed a typo in one must not create a new one.
    p.Fail(y["namespace"], path + ".namespace",
           "namespace '" + w.namespace_name + "' is not listed under namespaces");
  }
}

Result<Scenario> ParseImpl(std::string_view yaml_text, std::string_view file_name) {
  std::string file(file_name.empty() ? "<scenario>" : file_name);
  std::string base_dir;
  if (auto slash = file.rfind('/'); slash != std::string::npos) base_dir = file.substr(0, slash);
  Parser p(file, base_dir);
  YAML::Node root = YAML::Load(std::string(yaml_text));
  Scenario sc;
  if (!p.IsMap(root, "scenario")) return p.error();
  p.CheckKeys(root, "",
              {"name", "cluster", "seed", "start", "duration", "namespaces", "nodes", "workloads"});
  sc.name = p.RequiredStr(root, "name", "");
  sc.cluster = p.Str(root["cluster"], "cluster", "default");
  sc.seed = static_cast<std::uint64_t>(
      p.Int(root["seed"], "seed", 0, std::numeric_limits<std::int64_t>::max(), 1));
  std::string start = p.RequiredStr(root, "start", "");
  if (!p.failed()) {
    auto t = ParseRfc3339(start);
    if (!t.ok()) {
      p.Fail(root["start"], "start",
             "expected an RFC 3339 time (2026-11-23T00:00:00Z), got '" + start + "'");
    } else {
      sc.start_us = *t;
    }
  }
  if (!root["duration"].IsDefined()) p.Fail(root, "duration", "required, missing");
  sc.duration_us = p.Duration(root["duration"], "duration", 0);
  if (!p.failed() && sc.duration_us <= 0)
    p.Fail(root["duration"], "duration", "expected a positive duration");
  auto ns = root["namespaces"];
  if (ns.IsDefined() && !ns.IsNull() && p.IsMap(ns, "namespaces")) {
    for (auto it = ns.begin(); it != ns.end() && !p.failed(); ++it) {
      std::string name = p.Str(it->first, "namespaces");
      std::string path = "namespaces." + name;
      auto& labels = sc.namespace_labels[name];
      if (it->second.IsNull()) continue;
      if (!p.IsMap(it->second, path)) break;
      p.CheckKeys(it->second, path, {"labels"});
      labels = p.Labels(it->second["labels"], path + ".labels");
    }
  }
  if (p.failed()) return p.error();
  auto nodes = root["nodes"];
  if (!nodes.IsDefined()) p.Fail(root, "nodes", "required, a list of nodes");
  if (!p.failed() && p.IsList(nodes, "nodes")) {
    std::set<std::string> names;
    for (std::size_t i = 0; i < nodes.size() && !p.failed(); ++i) {
      NodeSpec n;
      std::string path = fmt::format("nodes[{}]", i);
      ParseNode(p, nodes[i], path, n, sc.seed, sc.duration_us);
      if (!p.failed() && !names.insert(n.name).second)
        p.Fail(nodes[i]["name"], path + ".name", "duplicate node name '" + n.name + "'");
      sc.nodes.push_back(std::move(n));
    }
  }
  auto wl = root["workloads"];
  if (!p.failed() && wl.IsDefined() && !wl.IsNull() && p.IsList(wl, "workloads")) {
    std::set<std::pair<std::string, std::string>> names;
    sc.workloads.reserve(wl.size());
    for (std::size_t i = 0; i < wl.size() && !p.failed(); ++i) {
      WorkloadSpec w;
      std::string path = fmt::format("workloads[{}]", i);
      ParseWorkload(p, wl[i], path, w, sc);
      if (!p.failed() && !names.insert({w.namespace_name, w.name}).second)
        p.Fail(wl[i]["name"], path + ".name",
               "duplicate workload '" + w.namespace_name + "/" + w.name + "'");
      sc.workloads.push_back(std::move(w));
    }
  }
  if (p.failed()) return p.error();
  Placer placer{p, sc, {}, {}};
  placer.Build();
  // Explicit placements first, so first-fit pods see the capacity they take.
  for (std::size_t i = 0; i < sc.workloads.size() && !p.failed(); ++i)
    if (!sc.workloads[i].placement_node.empty()) placer.Place(sc.workloads[i], static_cast<int>(i));
  for (std::size_t i = 0; i < sc.workloads.size() && !p.failed(); ++i)
    if (sc.workloads[i].placement_node.empty()) placer.Place(sc.workloads[i], static_cast<int>(i));
  if (p.failed()) return p.error();
  return sc;
}

}  // namespace

int MigComputeSlices(std::string_view profile) {
  std::string p = StripMe(profile);
  auto g = p.find("g.");
  if (g == std::string::npos || g == 0) return 0;
  int n = 0;
  auto r = std::from_chars(p.data(), p.data() + g, n);
  if (r.ec != std::errc() || r.ptr != p.data() + g || n < 1 || n > 8) return 0;
  if (!p.ends_with("gb")) return 0;
  return n;
}

Bytes DefaultGpuMemory(std::string_view gpu_model) {
  for (auto& m : kModels)
    if (m.name == gpu_model) return m.memory;
  return 0;
}

bool GpmCapable(std::string_view gpu_model) {
  // Hopper (H100, H200, H20, H800, GH200) and Blackwell (B100, B200, B300, GB200, GB300). "H20"
  // also covers "H200"; L40S and L4 are Ada, A100/A30/A10 Ampere: no GPM.
  constexpr std::string_view kPrefixes[] = {"H100", "H20",  "H800",  "GH200", "B100",
                                            "B200", "B300", "GB200", "GB300"};
  return std::any_of(std::begin(kPrefixes), std::end(kPrefixes),
                     [&](std::string_view p) { return gpu_model.starts_with(p); });
}

Bytes MigInstanceMemory(std::string_view profile, Bytes gpu_memory) {
  return std::min(MigProfileMemory(profile), gpu_memory);
}

Result<Scenario> ParseScenario(std::string_view yaml_text, std::string_view file_name) {
  try {
    return ParseImpl(yaml_text, file_name);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(fmt::format("{}:{}: {}", file_name.empty() ? "<scenario>" : file_name,
                                       e.mark.line + 1, e.msg));
  }
}

Result<Scenario> LoadScenarioFile(const std::string& path) {
  auto text = ReadWholeFile(path);
  if (!text.ok()) return text.error();
  return ParseScenario(*text, path);
}

}  // namespace gpuledger::sim
