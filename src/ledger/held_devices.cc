#include "ledger/held_devices.h"

#include <algorithm>
#include <limits>

#include "common/strings.h"
#include "ledger/day_map.h"

namespace gpuledger::ledger {
namespace {

// Tables this small are never compacted: reading them again costs more than they hold.
constexpr std::size_t kCompactFrom = 4096;

constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();

// A summary's figures (const or not), in the order HeldDevices::Gpu keeps them: one list for
// both ways.
template <typename Summary>
auto FieldsOf(Summary& d) {
  return std::array{&d.metered_us,      &d.unmetered_us,   &d.busy_us,   &d.idle_us,
                    &d.unattributed_us, &d.unallocated_us, &d.energy_mj, &d.cost_nanos};
}

std::array<std::int64_t, 8> FiguresOf(const DeviceSummary& d) {
  std::array<std::int64_t, 8> out{};
  const auto fields = FieldsOf(d);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = *fields[i];
  return out;
}

// What a head is: every field but the figures, each length-prefixed.
std::string HeadKey(const DeviceSummary& d) {
  std::string key;
  const Placement& p = d.placement;
  for (const std::string* field :
       {&p.cluster, &p.node, &p.gpu_model, &p.gpu.value, &p.pricing_class, &p.layout})
    AppendLengthPrefixed(key, *field);
  key += std::to_string(static_cast<int>(p.sharing));
  key += '/';
  key += std::to_string(d.memory_total_bytes);
  for (const std::string& layout : d.layouts) AppendLengthPrefixed(key, layout);
  return key;
}

}  // namespace

HeldDevices::Part HeldDevices::Intern(const std::vector<DeviceSummary>& summaries) {
  Part part;
  part.reserve(summaries.size());
  for (const DeviceSummary& d : summaries) {
    const std::string key = HeadKey(d);
    auto [it, fresh] = head_ids_.try_emplace(key, static_cast<std::uint32_t>(heads_.size()));
    if (fresh) {
      Head& head = heads_.emplace_back();
      head.summary.placement = d.placement;
      head.summary.memory_total_bytes = d.memory_total_bytes;
      head.summary.layouts = d.layouts;
      head.gpu =
          gpu_ids_.try_emplace(d.placement.gpu.value, static_cast<std::uint32_t>(gpu_ids_.size()))
              .first->second;
    }
    part.push_back({it->second, FiguresOf(d)});
  }
  return part;
}

const HeldDevices::Part* HeldDevices::Find(Micros day_us) const {
  auto it = days_.find(day_us);
  return it == days_.end() ? nullptr : &it->second;
}

void HeldDevices::Hold(Micros day_us, Part day) { days_.insert_or_assign(day_us, std::move(day)); }

void HeldDevices::Drop(const TimeRange& touched) {
  if (EraseDaysTouched(days_, touched)) dropped_ = true;
}

void HeldDevices::DropBefore(Micros from_us) {
  if (EraseDaysBefore(days_, from_us)) dropped_ = true;
}

void HeldDevices::Clear() { *this = HeldDevices(); }

void HeldDevices::Compact() {
  if (!dropped_ || heads_.size() < kCompactFrom || heads_.size() < 2 * heads_after_compact_) return;
  HeldDevices fresh;
  for (auto& [day_us, day] : days_) {
    Part renumbered = day;
    std::vector<DeviceSummary> heads;
    heads.reserve(day.size());
    for (const Gpu& g : day) heads.push_back(heads_[g.head].summary);
    const Part interned = fresh.Intern(heads);
    for (std::size_t i = 0; i < day.size(); ++i) renumbered[i].head = interned[i].head;
    fresh.days_.emplace(day_us, std::move(renumbered));
  }
  fresh.heads_after_compact_ = fresh.heads_.size();
  *this = std::move(fresh);
}

std::vector<DeviceSummary> HeldDevices::Sum(const std::vector<const Part*>& parts) const {
  struct Sums {
    std::uint32_t first_head = kNone;
    std::array<std::int64_t, 8> figures{};
    std::vector<const std::string*> layouts;  // in the order they first appeared
  };
  std::vector<Sums> by_gpu(gpu_ids_.size());
  for (const Part* part : parts)
    for (const Gpu& g : *part) {
      const Head& head = heads_[g.head];
      Sums& s = by_gpu[head.gpu];
      if (s.first_head == kNone) s.first_head = g.head;
      for (std::size_t i = 0; i < s.figures.size(); ++i) s.figures[i] += g.figures[i];
      for (const std::string& layout : head.summary.layouts)
        if (std::none_of(s.layouts.begin(), s.layouts.end(),
                         [&](const std::string* seen) { return *seen == layout; }))
          s.layouts.push_back(&layout);
    }
  std::vector<DeviceSummary> out;
  for (const Sums& s : by_gpu) {
    if (s.first_head == kNone) continue;
    DeviceSummary& d = out.emplace_back(heads_[s.first_head].summary);
    d.layouts.clear();
    for (const std::string* layout : s.layouts) d.layouts.push_back(*layout);
    const auto fields = FieldsOf(d);
    for (std::size_t i = 0; i < fields.size(); ++i) *fields[i] = s.figures[i];
  }
  std::sort(out.begin(), out.end(), [](const DeviceSummary& a, const DeviceSummary& b) {
    return a.placement.gpu < b.placement.gpu;
  });
  return out;
}

}  // namespace gpuledger::ledger
