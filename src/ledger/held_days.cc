#include "ledger/held_days.h"

#include <algorithm>
#include <iterator>

#include "ledger/day_map.h"

namespace gpuledger::ledger {
namespace {

// Tables this small are never compacted: reading them again costs more than they hold.
constexpr std::size_t kCompactFrom = std::size_t{1} << 16;

}  // namespace

const SummedDay* HeldDays::Find(const std::string& kind, Micros day_us) {
  auto k = kinds_.find(kind);
  if (k == kinds_.end()) return nullptr;
  k->second.last_used = ++uses_;
  auto d = k->second.days.find(day_us);
  return d == k->second.days.end() ? nullptr : &d->second;
}

void HeldDays::Hold(const std::string& kind, SummedDay day) {
  if (!kinds_.contains(kind) && kinds_.size() >= kHeldKinds) {
    auto least = std::min_element(kinds_.begin(), kinds_.end(), [](const auto& a, const auto& b) {
      return a.second.last_used < b.second.last_used;
    });
    kinds_.erase(least);
    dropped_ = true;
  }
  Kind& k = kinds_[kind];
  k.last_used = ++uses_;
  const Micros from = day.from_us;
  k.days.insert_or_assign(from, std::move(day));
}

void HeldDays::Drop(const TimeRange& touched) {
  for (auto& [name, kind] : kinds_)
    if (EraseDaysTouched(kind.days, touched)) dropped_ = true;
}

void HeldDays::DropBefore(Micros from_us) {
  for (auto& [name, kind] : kinds_)
    if (EraseDaysBefore(kind.days, from_us)) dropped_ = true;
}

void HeldDays::Clear() {
  kinds_.clear();
  tables_ = std::make_unique<DayTables>();
  entries_after_compact_ = 0;
  dropped_ = false;
}

void HeldDays::Compact() {
  const std::size_t entries = tables_->entries();
  if (!dropped_ || entries < kCompactFrom || entries < 2 * entries_after_compact_) return;
  dropped_ = false;
  auto fresh = std::make_unique<DayTables>();
  const DayTables& old = *tables_;
  std::vector<std::uint32_t> entry_of(entries, 0);  // new id + 1; 0 not named yet
  std::vector<std::uint16_t> rule_of(old.rules().size(), 0);
  for (std::size_t i = 1; i < old.rules().size(); ++i) rule_of[i] = fresh->Rule(old.rules()[i]);
  for (auto& [name, kind] : kinds_)
    for (auto& [day_us, day] : kind.days)
      for (SummedRow& row : day.rows) {
        std::uint32_t& id = entry_of[row.entry];
        if (id == 0) id = fresh->Entry(old.entry(row.entry)) + 1;
        row.entry = id - 1;
        for (std::uint16_t& rule : row.rules) rule = rule_of[rule];
      }
  tables_ = std::move(fresh);
  entries_after_compact_ = tables_->entries();
}

std::size_t HeldDays::days() const {
  std::size_t n = 0;
  for (const auto& [name, kind] : kinds_) n += kind.days.size();
  return n;
}

std::size_t HeldDays::rows() const {
  std::size_t n = 0;
  for (const auto& [name, kind] : kinds_)
    for (const auto& [day_us, day] : kind.days) n += day.rows.size();
  return n;
}

}  // namespace gpuledger::ledger
