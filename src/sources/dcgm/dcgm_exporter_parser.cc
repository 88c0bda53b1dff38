#include "sources/dcgm/dcgm_exporter_parser.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "prometheus/exposition_parser.h"

namespace gpuledger::sources::dcgm {
namespace {

enum class Field {
  kSmActive,
  kSmOccupancy,
  kTensorActive,
  kDramActive,
  kGrEngineActive,
  kGpuUtil,
  kFbUsed,
  kPower
};
constexpr std::size_t kFieldCount = 8;

enum class Scale { kRatio, kPercent, kMiB, kBytes, kWatts };

// One spelling of a field. Names are matched case-insensitively (the 1.x-compatibility set
// lower-cases them). Where they come from, and which are verified: docs/dcgm.md.
struct Spelling {
  std::string_view name;  // upper case
  Field field;
  Scale scale;
  bool renamed;  // dcgm-exporter 4.9+ (DCGM 4.7 names)
};

constexpr std::array<Spelling, 19> kSpellings{{
    {"DCGM_FI_PROF_SM_ACTIVE", Field::kSmActive, Scale::kRatio, false},
    {"DCGM_FI_PROF_SM_UTIL_RATIO", Field::kSmActive, Scale::kRatio, true},
    {"DCGM_FI_PROF_SM_OCCUPANCY", Field::kSmOccupancy, Scale::kRatio, false},
    {"DCGM_FI_PROF_SM_OCCUPANCY_RATIO", Field::kSmOccupancy, Scale::kRatio, true},
    {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", Field::kTensorActive, Scale::kRatio, false},
    {"DCGM_FI_PROF_TENSOR_UTIL_RATIO", Field::kTensorActive, Scale::kRatio, true},
    {"DCGM_FI_PROF_DRAM_ACTIVE", Field::kDramActive, Scale::kRatio, false},
    {"DCGM_FI_PROF_DRAM_UTIL_RATIO", Field::kDramActive, Scale::kRatio, true},
    {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", Field::kGrEngineActive, Scale::kRatio, false},
    {"DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO", Field::kGrEngineActive, Scale::kRatio, true},
    {"DCGM_FI_DEV_GPU_UTIL", Field::kGpuUtil, Scale::kPercent, false},
    {"DCGM_GPU_UTILIZATION", Field::kGpuUtil, Scale::kPercent, false},  // 1.x compatibility
    {"DCGM_FI_DEV_GPU_UTIL_RATIO", Field::kGpuUtil, Scale::kRatio, true},
    {"DCGM_FI_DEV_FB_USED", Field::kFbUsed, Scale::kMiB, false},
    {"DCGM_FB_USED", Field::kFbUsed, Scale::kMiB, false},  // 1.x compatibility
    {"DCGM_FI_DEV_FB_USED_BYTES", Field::kFbUsed, Scale::kBytes, true},
    {"DCGM_FI_DEV_POWER_USAGE", Field::kPower, Scale::kWatts, false},
    {"DCGM_POWER_USAGE", Field::kPower, Scale::kWatts, false},  // 1.x compatibility
    {"DCGM_FI_DEV_BOARD_POWER_WATTS", Field::kPower, Scale::kWatts, true},
}};

// DCGM's "no value" sentinels (dcgm_structs.h), which dcgm-exporter prints as numbers:
// DCGM_FP64_BLANK = 2^47 and its codes just above (NOT_FOUND, NOT_SUPPORTED, NOT_PERMISSIONED);
// DCGM_INT64_BLANK = 0x7ffffffffffffff0 and its codes, which all read back as the double 2^63.
// (The fields used here are INT64 or FP64; an INT32 blank, 0x7ffffff0, fails the range checks
// below anyway.)
constexpr double kFp64Blank = 140737488355328.0;
constexpr double kInt64BlankAsDouble = 9223372036854775808.0;

bool IsBlank(double v) {
  return (v >= kFp64Blank && v <= kFp64Blank + 16) ||
         (v >= kInt64BlankAsDouble - 4096 && v <= kInt64BlankAsDouble);
}
// Beyond these a value is no GPU's: 1 PiB of device memory, 100 kW of board power.
constexpr double kMaxBytes = 1125899906842624.0;
constexpr double kMaxWatts = 100000.0;
// A ratio a hair above 1 (or a percentage above 100) is rounding in DCGM; more is an error.
constexpr double kRatioSlack = 1e-3;

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return out;
}

const Spelling* FindSpelling(std::string_view upper) {
  for (const Spelling& s : kSpellings)
    if (s.name == upper) return &s;
  return nullptr;
}

const std::string* Label(const prometheus::Labels& labels, std::string_view name) {
  for (const auto& [k, v] : labels)
    if (k == name) return &v;
  return nullptr;
}

std::optional<int> ParseIndex(std::string_view s) {
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

// The value in the unit set of DcgmUnit (fraction, bytes, watts), or why it cannot be used.
struct Normalised {
  double value = 0;
  std::string error;
};

Normalised Normalise(double v, Scale scale) {
  if (std::isnan(v)) return {0, "NaN"};
  if (std::isinf(v)) return {0, "infinite value"};
  if (IsBlank(v))
    return {0, fmt::format("DCGM blank value {} (field not supported or not sampled yet)", v)};
  if (v < 0) return {0, fmt::format("negative value {}", v)};
  switch (scale) {
    case Scale::kRatio:
      if (v > 1 + kRatioSlack) return {0, fmt::format("ratio {} above 1", v)};
      return {std::min(v, 1.0), {}};
    case Scale::kPercent:
      if (v > 100 * (1 + kRatioSlack)) return {0, fmt::format("percentage {} above 100", v)};
      return {std::min(v, 100.0) / 100, {}};
    case Scale::kMiB:
      v *= static_cast<double>(kMiB);
      [[fallthrough]];
    case Scale::kBytes:
      if (v > kMaxBytes) return {0, fmt::format("{} bytes of GPU memory is implausible", v)};
      return {std::round(v), {}};
    case Scale::kWatts:
      if (v > kMaxWatts) return {0, fmt::format("{} W of board power is implausible", v)};
      return {v, {}};
  }
  return {0, "unknown scale"};
}

// Where a unit's field value came from, to tell a duplicate series from a second spelling.
struct Origin {
  std::size_t line = 0;  // 0: not set
  const Spelling* spelling = nullptr;
  double value = 0;
};

struct UnitState {
  DcgmUnit unit;
  std::array<Origin, kFieldCount> origin{};
};

void Store(DcgmUnit& u, Field f, double v) {
  switch (f) {
    case Field::kSmActive:
      u.sm_active = v;
      break;
    case Field::kSmOccupancy:
      u.sm_occupancy = v;
      break;
    case Field::kTensorActive:
      u.tensor_active = v;
      break;
    case Field::kDramActive:
      u.dram_active = v;
      break;
    case Field::kGrEngineActive:
      u.gr_engine_active = v;
      break;
    case Field::kGpuUtil:
      u.gpu_util = v;
      break;
    case Field::kFbUsed:
      u.fb_used_bytes = static_cast<Bytes>(v);
      break;
    case Field::kPower:
      u.power_watts = v;
      break;
  }
}

class Parser {
 public:
  void Line(std::size_t number, std::string_view line) {
    auto parsed = prometheus::ParseExposition(line);
    if (!parsed) {
      // The line parser numbers its one line 1; the body's number is ours.
      std::string reason = parsed.error().message;
      if (reason.rfind("line 1: ", 0) == 0) reason.erase(0, 8);
      Bad(number, std::move(reason));
      return;
    }
    for (const prometheus::Sample& s : parsed->samples) Sample(number, s);
  }

  Result<DcgmScrape> Finish(std::size_t lines) && {
    if (units_.empty()) {
      std::string why = fmt::format("no dcgm-exporter series with a UUID label in {} lines", lines);
      if (out_.bad_line_count > 0)
        why += fmt::format(" ({} malformed; line {}: {})", out_.bad_line_count,
                           out_.bad_lines.front().line, out_.bad_lines.front().reason);
      return InvalidArgument(why);
    }
    for (UnitState& u : units_) out_.units.push_back(std::move(u.unit));
    return std::move(out_);
  }

 private:
  void Bad(std::size_t line, std::string reason) {
    ++out_.bad_line_count;
    if (out_.bad_lines.size() < kMaxBadLinesKept)
      out_.bad_lines.push_back({line, std::move(reason)});
  }

  void Sample(std::size_t line, const prometheus::Sample& s) {
    const std::string upper = Upper(s.name);
    // Not DCGM's: the exporter's own go_* / process_* series, or another exporter's.
    if (upper.rfind("DCGM_", 0) != 0) return;
    const Spelling* spelling = FindSpelling(upper);
    const std::string* uuid = Label(s.labels, "UUID");
    if (uuid == nullptr) uuid = Label(s.labels, "uuid");
    if (uuid == nullptr || uuid->empty()) {
      if (spelling != nullptr) Bad(line, fmt::format("{}: no UUID label", s.name));
      return;
    }
    std::optional<int> gi;
    if (const std::string* id = Label(s.labels, "GPU_I_ID"); id != nullptr && !id->empty()) {
      gi = ParseIndex(*id);
      if (!gi) {
        if (spelling != nullptr)
          Bad(line, fmt::format("{}: GPU_I_ID '{}' is not an instance id", s.name, *id));
        return;
      }
    }
    UnitState& u = Unit(*uuid, gi, s.labels);
    if (spelling == nullptr) return;
    (spelling->renamed ? out_.field_sets.renamed : out_.field_sets.classic) = true;
    const Normalised n = Normalise(s.value, spelling->scale);
    if (!n.error.empty()) {
      Bad(line, fmt::format("{}: {}", s.name, n.error));
      return;
    }
    Origin& o = u.origin[static_cast<std::size_t>(spelling->field)];
    if (o.line != 0) {
      if (o.spelling == spelling) {
        // One series per pod on a shared GPU repeats the device's value: fold it. A different
        // value for the same unit and field cannot both be right: keep the first.
        if (n.value != o.value)
          Bad(line, fmt::format("{}: duplicate series (first at line {}) with a different value",
                                s.name, o.line));
        return;
      }
      // A second spelling of the field (a counters file with both): the exact one wins (bytes
      // over MiB), else the first.
      if (!(spelling->scale == Scale::kBytes && o.spelling->scale != Scale::kBytes)) return;
    }
    o = {line, spelling, n.value};
    Store(u.unit, spelling->field, n.value);
  }

  UnitState& Unit(const std::string& uuid, std::optional<int> gi,
                  const prometheus::Labels& labels) {
    auto [it, fresh] = index_.try_emplace({uuid, gi.value_or(-1)}, units_.size());
    if (fresh) {
      units_.emplace_back();
      units_.back().unit.gpu_uuid = GpuUuid{uuid};
      units_.back().unit.gpu_instance_id = gi;
    }
    DcgmUnit& u = units_[it->second].unit;
    if (!u.gpu_index)
      if (const std::string* g = Label(labels, "gpu")) u.gpu_index = ParseIndex(*g);
    if (u.gpu_instance_profile.empty())
      if (const std::string* p = Label(labels, "GPU_I_PROFILE")) u.gpu_instance_profile = *p;
    if (u.driver_version.empty()) {
      if (const std::string* d = Label(labels, "DCGM_FI_SYSTEM_DRIVER_VERSION")) {
        u.driver_version = *d;
        out_.field_sets.renamed = true;
      } else if (const std::string* d = Label(labels, "DCGM_FI_DRIVER_VERSION")) {
        u.driver_version = *d;
        out_.field_sets.classic = true;
      }
    }
    return units_[it->second];
  }

  DcgmScrape out_;
  std::vector<UnitState> units_;
  std::map<std::pair<std::string, int>, std::size_t> index_;
};

}  // namespace

const DcgmUnit* DcgmScrape::Find(const GpuUuid& uuid, std::optional<int> gpu_instance_id) const {
  for (const DcgmUnit& u : units)
    if (u.gpu_uuid == uuid && u.gpu_instance_id == gpu_instance_id) return &u;
  return nullptr;
}

Result<DcgmScrape> ParseDcgmExporter(std::string_view text) {
  Parser parser;
  std::size_t number = 0;
  while (!text.empty()) {
    ++number;
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
      line.remove_suffix(1);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (line.empty()) continue;
    parser.Line(number, line);
  }
  return std::move(parser).Finish(number);
}

}  // namespace gpuledger::sources::dcgm
