#include "store/row_codec.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/json_text.h"

namespace gpuledger::store {

std::string EncodeLabels(const LabelMap& labels) {
  return labels.empty() ? std::string() : JsonText(nlohmann::json(labels));
}

bool DecodeLabels(std::string_view text, LabelMap& labels, std::string* what) {
  labels.clear();
  if (text.empty()) return true;
  const nlohmann::json parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) {
    *what = fmt::format("labels '{}' are not a JSON object", text);
    return false;
  }
  for (const auto& [key, value] : parsed.items()) {
    if (!value.is_string()) {
      *what = fmt::format("label '{}' in '{}' is not a string", key, text);
      return false;
    }
    labels.emplace(key, value.get<std::string>());
  }
  return true;
}

bool DecodeUsageEnums(UsageRow& u, std::string_view mode, std::string_view compute_quality,
                      std::string_view memory_quality, std::string* what) {
  auto sharing = ParseSharingMode(mode);
  auto cq = ParseQuality(compute_quality);
  auto mq = ParseQuality(memory_quality);
  if (!sharing || !cq || !mq) {
    *what = fmt::format("consumer {}: unknown sharing_mode '{}' or quality '{}'/'{}'",
                        u.consumer.ref.Key(), mode, compute_quality, memory_quality);
    return false;
  }
  u.sharing = *sharing;
  u.compute_quality = *cq;
  u.memory_quality = *mq;
  return true;
}

bool DecodeActivityQuality(UsageRow& u, std::string_view activity_quality, std::string* what) {
  auto q = ParseQuality(activity_quality);
  if (!q) {
    *what = fmt::format("consumer {}: unknown activity_quality '{}'", u.consumer.ref.Key(),
                        activity_quality);
    return false;
  }
  u.activity_quality = *q;
  return true;
}

std::string EncodeHistogram(const UsageHistogram& h) {
  if (h.empty()) return "";
  return fmt::format("{};{}", fmt::join(h.compute, ","), fmt::join(h.memory, ","));
}

bool DecodeHistogram(UsageRow& u, std::string_view text, std::string* what) {
  u.histogram = {};
  if (text.empty()) return true;
  // Reads `n` comma-separated non-negative integers from `part` into `out`.
  auto read = [](std::string_view part, std::int64_t* out, int n) {
    for (int i = 0; i < n; ++i) {
      const std::size_t comma = i + 1 < n ? part.find(',') : part.size();
      if (comma == std::string_view::npos) return false;
      const std::string_view field = part.substr(0, comma);
      auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), out[i]);
      if (ec != std::errc() || end != field.data() + field.size() || out[i] < 0) return false;
      part.remove_prefix(std::min(part.size(), comma + 1));
    }
    return true;
  };
  const std::size_t semi = text.find(';');
  if (semi == std::string_view::npos ||
      !read(text.substr(0, semi), u.histogram.compute.data(), UsageHistogram::kComputeBuckets) ||
      !read(text.substr(semi + 1), u.histogram.memory.data(), UsageHistogram::kMemoryBuckets)) {
    *what = fmt::format("consumer {}: histogram '{}' is not {} counts ';' {} counts",
                        u.consumer.ref.Key(), text, UsageHistogram::kComputeBuckets,
                        UsageHistogram::kMemoryBuckets);
    u.histogram = {};
    return false;
  }
  return true;
}

std::string StoredPricingClass(const DeviceHour& d) {
  return d.price_state == PriceState::kUnpriced ? "unpriced" : d.pricing_class;
}

void DecodePricingClass(std::string text, DeviceHour& d) {
  d.price_state = text == "unpriced" ? PriceState::kUnpriced : PriceState::kPriced;
  d.pricing_class = d.price_state == PriceState::kUnpriced ? "" : std::move(text);
}

std::optional<RowProblem> CheckHours(std::span<const LedgerHour> hours) {
  for (const LedgerHour& hour : hours) {
    const DeviceHour& d = hour.device;
    if (HourStart(d.hour_us) != d.hour_us) {
      return RowProblem{"device_hours", d.hour_us, d.gpu.str(), "hour_us is not an hour start"};
    }
    if (d.gpu.empty()) return RowProblem{"device_hours", d.hour_us, "", "empty gpu uuid"};
    for (const UsageRow& u : hour.usage) {
      if (u.hour_us != d.hour_us || u.gpu != d.gpu) {
        return RowProblem{
            "usage_hours", u.hour_us, u.gpu.str(),
            fmt::format("filed under device hour (hour_us {}, gpu {})", d.hour_us, d.gpu.str())};
      }
    }
    // A consumer has one row per device-hour (the key schema 7 enforced).
    std::vector<const ConsumerRef*> consumers;
    for (const UsageRow& u : hour.usage) consumers.push_back(&u.consumer.ref);
    std::sort(consumers.begin(), consumers.end(),
              [](const ConsumerRef* a, const ConsumerRef* b) { return *a < *b; });
    auto twice =
        std::adjacent_find(consumers.begin(), consumers.end(),
                           [](const ConsumerRef* a, const ConsumerRef* b) { return *a == *b; });
    if (twice != consumers.end()) {
      return RowProblem{"usage_hours", d.hour_us, d.gpu.str(),
                        fmt::format("consumer {} (pod UID '{}') has two rows in one device-hour",
                                    (*twice)->Key(), (*twice)->pod_uid.str())};
    }
  }
  return std::nullopt;
}

}  // namespace gpuledger::store
