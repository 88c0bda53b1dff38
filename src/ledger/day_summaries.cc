#include "ledger/day_summaries.h"

#include <algorithm>
#include <utility>

#include "ledger/day_map.h"

namespace gpuledger::ledger {

std::shared_ptr<const DaySummary> HeldSummaries::Find(const std::string& key, Micros day_us) {
  auto held =
      std::find_if(by_key_.begin(), by_key_.end(), [&](const Held& h) { return h.key == key; });
  if (held == by_key_.end()) return nullptr;
  auto day = held->days.find(day_us);
  return day == held->days.end() ? nullptr : day->second;
}

void HeldSummaries::Hold(const std::string& key, Micros day_us,
                         std::shared_ptr<const DaySummary> summary) {
  auto held =
      std::find_if(by_key_.begin(), by_key_.end(), [&](const Held& h) { return h.key == key; });
  if (held == by_key_.end()) {
    if (by_key_.size() == kKeys) by_key_.pop_front();
    by_key_.push_back({key, {}});
  } else if (held + 1 != by_key_.end()) {
    Held moved = std::move(*held);
    by_key_.erase(held);
    by_key_.push_back(std::move(moved));
  }
  by_key_.back().days.insert_or_assign(day_us, std::move(summary));
}

void HeldSummaries::Drop(const TimeRange& touched) {
  for (Held& held : by_key_) EraseDaysTouched(held.days, touched);
}

void HeldSummaries::DropBefore(Micros from_us) {
  for (Held& held : by_key_) EraseDaysBefore(held.days, from_us);
}

std::size_t HeldSummaries::days() const {
  std::size_t n = 0;
  for (const Held& held : by_key_) n += held.days.size();
  return n;
}

}  // namespace gpuledger::ledger
