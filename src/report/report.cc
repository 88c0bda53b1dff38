#include "report/report.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "common/strings.h"
#include "model/compute_band.h"
#include "model/usage.h"

namespace gpuledger::report {
namespace {

struct DimName {
  std::string_view name;
  Dimension::Kind kind;
};
constexpr DimName kDimNames[] = {
    {"cluster", Dimension::Kind::kCluster},          {"namespace", Dimension::Kind::kNamespace},
    {"controller", Dimension::Kind::kController},    {"node", Dimension::Kind::kNode},
    {"gpu_model", Dimension::Kind::kGpuModel},       {"device", Dimension::Kind::kDevice},
    {"container", Dimension::Kind::kContainer},      {"pod", Dimension::Kind::kPod},
    {"sharing_mode", Dimension::Kind::kSharingMode},
};

// `namespace_shown`: an earlier level of the key is the namespace, so the controller, pod and
// container levels leave it out ("ml/Job/train", not "ml/ml/Job/train").
std::string Level(const ConsumerInfo& c, const ConsumerLabels& labels, const Placed& row,
                  const Dimension& d, bool namespace_shown) {
  const std::string ns = namespace_shown ? "" : c.ref.namespace_name + "/";
  switch (d.kind) {
    case Dimension::Kind::kCluster:
      return row.cluster;
    case Dimension::Kind::kNamespace:
      return c.ref.namespace_name;
    case Dimension::Kind::kLabel: {
      const std::string* value = labels.Find(d.label);
      return value != nullptr ? *value : std::string(kUnlabelled);
    }
    case Dimension::Kind::kController:
      return ns + (c.owner_kind.empty() ? "Pod" : c.owner_kind) + "/" +
             (c.owner_name.empty() ? c.ref.pod : c.owner_name);
    case Dimension::Kind::kNode:
      return row.node;
    case Dimension::Kind::kGpuModel:
      return row.gpu_model;
    case Dimension::Kind::kDevice:
      return row.gpu.value;
    case Dimension::Kind::kContainer:
      return ns + c.ref.pod + "/" + c.ref.container;
    case Dimension::Kind::kPod:
      return ns + c.ref.pod;
    case Dimension::Kind::kSharingMode:
      return std::string(ToString(row.sharing));
    case Dimension::Kind::kEntry:
      return EncodeEntry(c, labels, row);
  }
  return {};
}

void Put(std::string& out, std::string_view field) { AppendLengthPrefixed(out, field); }

// Reads a field Put wrote from the front of `in`.
std::optional<std::string> Take(std::string_view& in) {
  const std::size_t colon = in.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon > 9) return std::nullopt;
  std::size_t size = 0;
  for (char c : in.substr(0, colon)) {
    if (c < '0' || c > '9') return std::nullopt;
    size = size * 10 + static_cast<std::size_t>(c - '0');
  }
  if (in.size() - colon - 1 < size) return std::nullopt;
  std::string field(in.substr(colon + 1, size));
  in.remove_prefix(colon + 1 + size);
  return field;
}

void PutLabels(std::string& out, const std::map<std::string, std::string>& labels) {
  Put(out, std::to_string(labels.size()));
  for (const auto& [key, value] : labels) {
    Put(out, key);
    Put(out, value);
  }
}

bool TakeLabels(std::string_view& in, std::map<std::string, std::string>& labels) {
  auto count = Take(in);
  if (!count || count->empty() || count->size() > 9 ||
      count->find_first_not_of("0123456789") != std::string::npos)
    return false;
  for (std::size_t n = std::stoul(*count); n > 0; --n) {
    auto key = Take(in);
    auto value = key ? Take(in) : std::nullopt;
    if (!value) return false;
    labels.emplace(std::move(*key), std::move(*value));
  }
  return true;
}

}  // namespace

Result<std::vector<Dimension>> ParseGroupBy(std::string_view text) {
  std::vector<Dimension> dims;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view part = text.substr(start, end - start);
    start = end + 1;
    if (part.starts_with("label:") && part.size() > 6) {
      dims.push_back(Dimension{Dimension::Kind::kLabel, std::string(part.substr(6))});
      continue;
    }
    auto it = std::find_if(std::begin(kDimNames), std::end(kDimNames),
                           [&](const DimName& n) { return n.name == part; });
    if (it == std::end(kDimNames)) {
      // A word that could be a label key (OpenCost's "team", a label "app") is most likely one.
      const bool label_like = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' ||
               c == '.' || c == '/';
      });
      return InvalidArgument(fmt::format(
          "unknown grouping '{}' in '{}'{} (cluster, namespace, label:KEY, controller, node, "
          "gpu_model, device, container, pod, sharing_mode; several joined by commas)",
          part, text,
          label_like ? fmt::format("; did you mean 'label:{}' (by the label {})?", part, part)
                     : ""));
    }
    dims.push_back(Dimension{it->kind, ""});
  }
  // A level given twice adds nothing but its key again in every entry; thousands of them made
  // one 16 KiB GET build a 680 MB answer (issue 58).
  const std::string shown =
      text.size() <= 200 ? std::string(text) : fmt::format("{}...", text.substr(0, 200));
  for (std::size_t i = 0; i < dims.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (dims[j] == dims[i])
        return InvalidArgument(
            fmt::format("grouping '{}' given twice in '{}'", ToString({dims[i]}), shown));
  if (dims.size() > kMaxGroupLevels)
    return InvalidArgument(
        fmt::format("{} groupings in '{}': at most {}", dims.size(), shown, kMaxGroupLevels));
  return dims;
}

std::string ToString(const std::vector<Dimension>& dims) {
  std::string out;
  for (const auto& d : dims) {
    if (!out.empty()) out += ",";
    if (d.kind == Dimension::Kind::kLabel) {
      out += "label:" + d.label;
      continue;
    }
    if (d.kind == Dimension::Kind::kEntry) out += "entry";
    for (const auto& n : kDimNames)
      if (n.kind == d.kind) out += n.name;
  }
  return out;
}

std::string EncodeEntry(const ConsumerInfo& c, const ConsumerLabels& labels, const Placed& placed) {
  std::string out;
  for (std::string_view field : {std::string_view(c.ref.namespace_name),
                                 std::string_view(c.ref.pod), std::string_view(c.ref.pod_uid.value),
                                 std::string_view(c.ref.container), std::string_view(c.owner_kind),
                                 std::string_view(c.owner_name), std::string_view(placed.cluster),
                                 std::string_view(placed.node), std::string_view(placed.gpu_model),
                                 std::string_view(placed.gpu.value), ToString(placed.sharing)})
    Put(out, field);
  PutLabels(out, labels.labels);
  PutLabels(out, labels.namespace_labels);
  return out;
}

std::optional<Entry> DecodeEntry(std::string_view key) {
  std::string fields[11];
  for (std::string& field : fields) {
    auto taken = Take(key);
    if (!taken) return std::nullopt;
    field = std::move(*taken);
  }
  Entry e;
  auto sharing = ParseSharingMode(fields[10]);
  if (!sharing) return std::nullopt;
  e.consumer.ref = ConsumerRef{fields[0], fields[1], PodUid(fields[2]), fields[3]};
  e.consumer.owner_kind = fields[4];
  e.consumer.owner_name = fields[5];
  e.cluster = fields[6];
  e.node = fields[7];
  e.gpu_model = fields[8];
  e.gpu = GpuUuid(fields[9]);
  e.sharing = *sharing;
  if (!TakeLabels(key, e.consumer.labels) || !TakeLabels(key, e.consumer.namespace_labels) ||
      !key.empty())
    return std::nullopt;
  return e;
}

std::string KeyOf(const ConsumerInfo& consumer, const Placed& placed,
                  const std::vector<Dimension>& dims) {
  return KeyOf(consumer, LabelsOf(consumer), placed, dims);
}

std::string KeyOf(const ConsumerInfo& consumer, const ConsumerLabels& labels, const Placed& placed,
                  const std::vector<Dimension>& dims) {
  std::string key;
  bool namespace_shown = false;
  for (const auto& d : dims) {
    if (!key.empty()) key += "/";
    key += Level(consumer, labels, placed, d, namespace_shown);
    namespace_shown = namespace_shown || d.kind == Dimension::Kind::kNamespace;
  }
  return key;
}

std::string KeyOf(const UsageRow& row, const std::vector<Dimension>& dims) {
  static const std::string kNoCluster;
  return KeyOf(row.consumer, Placed{kNoCluster, row.node, row.gpu_model, row.gpu, row.sharing},
               dims);
}

void SortRows(std::vector<Row>& rows) {
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return std::tie(b.figures.cost_nanos, a.key) < std::tie(a.figures.cost_nanos, b.key);
  });
}

void Figures::Add(const Figures& o) {
  allocated_gpu_us += o.allocated_gpu_us;
  compute_gpu_us += o.compute_gpu_us;
  memory_kib_s = AddKibSeconds(memory_kib_s, o.memory_kib_s);
  energy_mj += o.energy_mj;
  cost_nanos += o.cost_nanos;
  quality = Combine(quality, o.quality);
  compute_rule = MergeRules(compute_rule, o.compute_rule);
  activity += o.activity;
  activity_allocated_gpu_us += o.activity_allocated_gpu_us;
  activity_compute_gpu_us += o.activity_compute_gpu_us;
  activity_quality = Combine(activity_quality, o.activity_quality);
  activity_rule = MergeRules(activity_rule, o.activity_rule);
  granted_memory_kib_s = AddKibSeconds(granted_memory_kib_s, o.granted_memory_kib_s);
  share_source = MergeRules(share_source, o.share_source);
  naive_compute_gpu_us = AddSaturating(naive_compute_gpu_us, o.naive_compute_gpu_us);
  naive_cost_nanos = AddSaturating(naive_cost_nanos, o.naive_cost_nanos);
  compute_floor_gpu_us += o.compute_floor_gpu_us;
}

std::string FormatSource(Quality quality, const std::string& rule) {
  std::string out(ToString(quality));
  if (quality != Quality::kNone && !rule.empty()) out += ":" + rule;
  return out;
}

Result<std::pair<Quality, std::string>> ParseSource(std::string_view text) {
  auto [quality, rule] = ParseSourceLabel(text);
  if (!quality)
    return InvalidArgument(
        fmt::format("source '{}': unknown quality '{}'", text, text.substr(0, text.find(':'))));
  return std::pair{*quality, std::string(rule)};
}

utilization::Inputs UtilizationInputs(const Figures& f) {
  return {.allocated_us = f.allocated_gpu_us,
          .compute_us = f.compute_gpu_us,
          .compute_quality = f.quality,
          .compute_rule = f.compute_rule,
          .memory_kib_s = f.memory_kib_s,
          .granted_memory_kib_s = f.granted_memory_kib_s,
          .activity = f.activity,
          .activity_allocated_us = f.activity_allocated_gpu_us,
          .activity_compute_us = f.activity_compute_gpu_us,
          .activity_quality = f.activity_quality,
          .activity_rule = f.activity_rule,
          .device_busy_us = f.naive_compute_gpu_us,
          .compute_floor_us = f.compute_floor_gpu_us};
}

namespace {

// The sum of the magnitudes of one field over a window. Every figure of a report sums a subset
// of the window's values of one field (a row's cost is a part of device prices, its time a part
// of metered time), so when this fits in 64 bits, no figure can wrap.
void AddMagnitude(__int128& sum, std::int64_t v) { sum += v < 0 ? -static_cast<__int128>(v) : v; }

}  // namespace

void SumCheck::AddDevice(const DeviceHour& d) {
  const std::int64_t values[kDeviceSums] = {
      d.price_nanos, d.metered_us,      d.unmetered_us,   d.unallocated_us,        d.busy_us,
      d.idle_us,     d.unattributed_us, d.idle_energy_mj, d.unattributed_energy_mj};
  for (int i = 0; i < kDeviceSums; ++i) AddMagnitude(device_[i], values[i]);
}

void SumCheck::AddUsage(const cost::ConsumerWeights& w, const Activity& a) {
  const std::int64_t values[kUsageSums] = {w.allocated_us,  w.compute_us,      w.energy_mj,
                                           a.sm_active_us,  a.sm_occupancy_us, a.tensor_active_us,
                                           a.dram_active_us};
  for (int i = 0; i < kUsageSums; ++i) AddMagnitude(usage_[i], values[i]);
}

std::array<std::uint64_t, SumCheck::kWords> SumCheck::Words() const {
  std::array<std::uint64_t, kWords> words{};
  std::size_t at = 0;
  auto put = [&](__int128 sum) {
    const auto bits = static_cast<unsigned __int128>(sum);
    words[at++] = static_cast<std::uint64_t>(bits >> 64);
    words[at++] = static_cast<std::uint64_t>(bits);
  };
  for (const __int128 sum : device_) put(sum);
  for (const __int128 sum : usage_) put(sum);
  return words;
}

SumCheck SumCheck::FromWords(const std::array<std::uint64_t, kWords>& words) {
  SumCheck out;
  std::size_t at = 0;
  auto take = [&](__int128& sum) {
    const auto high = static_cast<unsigned __int128>(words[at++]) << 64;
    sum = static_cast<__int128>(high | words[at++]);
  };
  for (__int128& sum : out.device_) take(sum);
  for (__int128& sum : out.usage_) take(sum);
  return out;
}

void SumCheck::Merge(const SumCheck& other) {
  for (int i = 0; i < kDeviceSums; ++i) device_[i] += other.device_[i];
  for (int i = 0; i < kUsageSums; ++i) usage_[i] += other.usage_[i];
}

Status SumCheck::Check() const {
  static constexpr const char* kDeviceWhat[kDeviceSums] = {
      "device cost (past 9,223,372,036.854775807 in the currency)",
      "metered GPU time",
      "unmetered GPU time",
      "unallocated GPU time",
      "busy GPU time",
      "idle GPU time",
      "unattributed GPU time",
      "idle energy",
      "unattributed energy"};
  static constexpr const char* kUsageWhat[kUsageSums] = {
      "allocated GPU time", "compute GPU time",   "energy",          "SM-active time",
      "SM-occupancy time",  "tensor-active time", "DRAM-active time"};
  auto fail = [](const char* what) {
    return InvalidArgument(fmt::format(
        "window: the {} of this window does not fit in 64 bits and cannot be reported exactly; "
        "report a shorter window",
        what));
  };
  for (int i = 0; i < kDeviceSums; ++i)
    if (device_[i] > INT64_MAX) return fail(kDeviceWhat[i]);
  for (int i = 0; i < kUsageSums; ++i)
    if (usage_[i] > INT64_MAX) return fail(kUsageWhat[i]);
  return Status::Ok();
}

std::int64_t AddSaturating(std::int64_t a, std::int64_t b) {
  std::int64_t sum = 0;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? INT64_MAX : INT64_MIN;
}

KibSeconds AddKibSeconds(KibSeconds a, KibSeconds b) { return AddSaturating(a, b); }

namespace {

Status CheckSumsFit(std::span<const DeviceHour> devices, std::span<const UsageRow> usage,
                    Micros from_us, Micros to_us) {
  SumCheck sums;
  for (const DeviceHour& d : devices)
    if (d.hour_us >= from_us && d.hour_us < to_us) sums.AddDevice(d);
  for (const UsageRow& u : usage)
    if (u.hour_us >= from_us && u.hour_us < to_us) sums.AddUsage(cost::WeightsOf(u), u.activity);
  return sums.Check();
}

}  // namespace

UsageRow PlatformIdleRow(const std::string& namespace_name, const std::string& node,
                         const std::string& gpu_model, const GpuUuid& gpu, SharingMode sharing) {
  UsageRow platform;
  platform.consumer.ref = ConsumerRef{namespace_name, "__idle__", PodUid{}, ""};
  platform.consumer.owner_kind = "Idle";
  platform.consumer.owner_name = "__idle__";
  platform.node = node;
  platform.gpu_model = gpu_model;
  platform.gpu = gpu;
  platform.sharing = sharing;
  return platform;
}

Result<Report> BuildReport(std::span<const DeviceHour> devices, std::span<const UsageRow> usage,
                           const std::vector<Dimension>& group_by, const cost::Policy& policy,
                           const cost::IdleHandling& idle, Micros from_us, Micros to_us) {
  if (Status fits = CheckSumsFit(devices, usage, from_us, to_us); !fits.ok()) return fits.error();
  Report r;
  r.from_us = from_us;
  r.to_us = to_us;
  r.group_by = group_by;
  r.policy = policy;
  r.idle_handling = idle;

  using Key = std::tuple<Micros, std::string>;
  std::map<Key, std::vector<const UsageRow*>> by_device;
  std::map<std::string, std::map<std::string, std::string>> namespace_labels;
  for (const UsageRow& u : usage) {
    if (u.hour_us < from_us || u.hour_us >= to_us) continue;
    by_device[Key{u.hour_us, u.gpu.value}].push_back(&u);
    if (!u.consumer.namespace_labels.empty())
      namespace_labels[u.consumer.ref.namespace_name] = u.consumer.namespace_labels;
  }
  std::map<std::string, Figures> rows;
  std::set<std::string> unpriced;
  std::vector<UsageRow> span_rows;
  for (const DeviceHour& d : devices) {
    if (d.hour_us < from_us || d.hour_us >= to_us) continue;
    span_rows.clear();
    if (auto it = by_device.find(Key{d.hour_us, d.gpu.value}); it != by_device.end())
      for (const UsageRow* u : it->second) span_rows.push_back(*u);
    cost::DeviceHourCost split = cost::SplitDeviceHour(d, span_rows, policy, idle);
    for (std::size_t i = 0; i < span_rows.size(); ++i) {
      const UsageRow& u = span_rows[i];
      Figures f;
      f.allocated_gpu_us = u.allocated_us;
      f.compute_gpu_us = u.compute_us;
      f.memory_kib_s = u.memory_kib_s;
      f.energy_mj = u.energy_mj;
      f.cost_nanos = split.consumers[i];
      f.quality = u.compute_quality;
      f.compute_rule = u.compute_rule;
      f.activity = u.activity;
      if (u.activity_quality != Quality::kNone) {
        f.activity_allocated_gpu_us = u.allocated_us;
        f.activity_compute_gpu_us = u.compute_us;
        f.activity_quality = u.activity_quality;
        f.activity_rule = u.activity_rule;
      }
      f.granted_memory_kib_s = cost::MemoryCapacityKibSeconds(d.memory_total_bytes, u.allocated_us);
      f.share_source = u.share_source;
      f.naive_compute_gpu_us = d.busy_us;
      f.naive_cost_nanos = d.price_nanos;
      f.compute_floor_gpu_us =
          ComputeFloor(u.compute_us, u.compute_quality, MeasuredComputeBandOfRules(u.compute_rule));
      rows[KeyOf(u.consumer, Placed{d.cluster, u.node, u.gpu_model, u.gpu, u.sharing}, group_by)]
          .Add(f);
    }
    const KibSeconds capacity = cost::MemoryCapacityKibSeconds(d.memory_total_bytes, d.metered_us);
    KibSeconds used = d.unattributed_memory_kib_s;
    for (const UsageRow& u : span_rows) used = AddKibSeconds(used, u.memory_kib_s);
    const auto unused = static_cast<KibSeconds>(
        std::clamp<__int128>(static_cast<__int128>(capacity) - used, 0, INT64_MAX));
    Figures idle_f;
    idle_f.allocated_gpu_us = d.unallocated_us;
    idle_f.compute_gpu_us = d.idle_us;
    idle_f.memory_kib_s = unused;
    idle_f.energy_mj = d.idle_energy_mj;
    idle_f.cost_nanos = split.idle;
    if (idle.kind == cost::IdleHandling::Kind::kNamespace && split.idle != 0) {
      // The platform namespace pays for idle capacity; idle keeps its time, not its cost.
      UsageRow platform =
          PlatformIdleRow(idle.namespace_name, d.node, d.gpu_model, d.gpu, d.sharing);
      if (auto it = namespace_labels.find(idle.namespace_name); it != namespace_labels.end())
        platform.consumer.namespace_labels = it->second;
      rows[KeyOf(
               platform.consumer,
               Placed{d.cluster, platform.node, platform.gpu_model, platform.gpu, platform.sharing},
               group_by)]
          .cost_nanos += split.idle;
      idle_f.cost_nanos = 0;
    }
    r.idle.Add(idle_f);
    Figures unattributed_f;
    unattributed_f.compute_gpu_us = d.unattributed_us;
    unattributed_f.memory_kib_s = d.unattributed_memory_kib_s;
    unattributed_f.energy_mj = d.unattributed_energy_mj;
    unattributed_f.cost_nanos = split.unattributed;
    r.unattributed.Add(unattributed_f);
    r.total.device_cost_nanos += d.price_nanos;
    r.total.metered_us += d.metered_us;
    r.total.unmetered_us += d.unmetered_us;
    r.total.busy_us += d.busy_us;
    r.total.device_hours += 1;
    if (d.price_state == PriceState::kUnpriced) unpriced.insert(d.gpu_model);
  }
  for (auto& [key, f] : rows)
    r.rows.push_back(Row{key, f, utilization::Classify(UtilizationInputs(f))});
  SortRows(r.rows);
  r.total.unpriced_models.assign(unpriced.begin(), unpriced.end());
  return r;
}

std::string WorkloadOf(const ConsumerInfo& consumer) {
  const ConsumerRef& ref = consumer.ref;
  if (ref.IsHost() || ref.namespace_name == kUnresolvedNamespace) return "";
  static const std::string kNone;
  static const GpuUuid kNoGpu;
  static const std::vector<Dimension> kByController{{Dimension::Kind::kController, ""}};
  return KeyOf(consumer, Placed{kNone, kNone, kNone, kNoGpu, {}}, kByController);
}

}  // namespace gpuledger::report
