#include "ingest/counter_ledger.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attribution/annotated_shares.h"
#include "attribution/close_hour.h"
#include "common/apportion.h"
#include "common/counter_units.h"
#include "common/json_text.h"
#include "ingest/agent_series.h"
#include "ingest/counter_ledger_impl.h"
#include "ingest/counter_state_codec.h"
#include "model/usage.h"

namespace gpuledger::ingest {

state::DeviceAcc& CounterLedger::Impl::Acc(Micros hour, const std::string& gpu,
                                           const InstanceState& inst) {
  HourKey key{hour, gpu};
  DeviceAcc& acc = hours[key];
  touched.insert(key);
  dirty_hours.insert(key);
  if (auto it = inst.devices.find(gpu); it != inst.devices.end()) {
    if (!it->second.node.empty()) acc.node = it->second.node;
    if (!it->second.model.empty()) acc.model = it->second.model;
    if (!it->second.sharing.empty()) acc.sharing = it->second.sharing;
    acc.layout = it->second.layout;  // "" too: a GPU whose MIG instances all went
  }
  return acc;
}

void CounterLedger::Impl::Book(ConsumerAcc& c, const InstanceState& inst, const std::string& gpu,
                               const ConsumerRef& ref) {
  auto it = inst.attribution.find(ConsumerKey(gpu, ref));
  if (it == inst.attribution.end()) return;
  // "measured:process-samples": the Quality before ':', the rule after it.
  auto [compute, rule] = ParseSourceLabel(it->second.compute);
  if (compute) c.compute_quality = Combine(c.compute_quality, *compute);
  c.rule = MergeRules(c.rule, std::string(rule));
  if (auto [memory, _] = ParseSourceLabel(it->second.memory); memory)
    c.memory_quality = Combine(c.memory_quality, *memory);
  // "none" (no activity source) and an older agent's absent label leave the quality kNone.
  auto [activity, activity_rule] = ParseSourceLabel(it->second.activity);
  if (activity && *activity != Quality::kNone) {
    c.activity_quality = Combine(c.activity_quality, *activity);
    c.activity_rule = MergeRules(c.activity_rule, std::string(activity_rule));
  }
  c.share_source = MergeRules(c.share_source, it->second.share);
}

void CounterLedger::Impl::Spread(const CounterKind& kind, const Sample& s, std::int64_t delta,
                                 Micros t0, Micros t1, const InstanceState& inst, int bucket) {
  const std::string gpu(Label(s.labels, "gpu_uuid"));
  if (gpu.empty() || delta < 0) return;
  const bool consumer = kind.field >= Field::kAllocated;
  if (consumer && delta == 0) return;  // a consumer row only where it has something
  const ConsumerRef ref = consumer ? RefOf(s.labels) : ConsumerRef{};
  for (const auto [h, part] : ApportionOverHours(delta, t0, t1)) {
    if (h < forgotten_before_us) {
      if (part != 0) ++late_dropped;
      continue;
    }
    if (consumer && part == 0) continue;
    DeviceAcc& acc = Acc(h, gpu, inst);
    switch (kind.field) {
      case Field::kMetered:
        acc.metered_us += part;
        continue;
      case Field::kBusy:
        acc.busy_us += part;
        continue;
      case Field::kIdle:
        acc.idle_us += part;
        continue;
      case Field::kUnattributed:
        acc.unattributed_us += part;
        continue;
      case Field::kDeviceEnergy:
        acc.energy_mj += part;
        continue;
      case Field::kUnattributedMemory:
        acc.unattributed_memory_kib_s += part;
        continue;
      default:
        break;
    }
    ConsumerAcc& c = acc.consumers[ref];
    switch (kind.field) {
      case Field::kAllocated:
        c.allocated_us += part;
        break;
      case Field::kCompute:
        c.compute_us += part;
        break;
      case Field::kMemory:
        c.memory_kib_s += part;
        break;
      case Field::kSmActive:
        c.activity.sm_active_us += part;
        break;
      case Field::kSmOccupancy:
        c.activity.sm_occupancy_us += part;
        break;
      case Field::kTensorActive:
        c.activity.tensor_active_us += part;
        break;
      case Field::kDramActive:
        c.activity.dram_active_us += part;
        break;
      case Field::kComputeBucket:
        c.compute_le[bucket] += part;
        break;
      case Field::kMemoryBucket:
        c.memory_le[bucket] += part;
        break;
      default:
        c.energy_mj += part;
        break;
    }
    Book(c, inst, gpu, ref);
  }
}

UsageHistogram CounterLedger::Impl::PerBucket(const ConsumerAcc& c) {
  UsageHistogram h;
  for (int i = 0; i < UsageHistogram::kComputeBuckets; ++i)
    h.compute[i] = std::max<std::int64_t>(0, c.compute_le[i] - (i > 0 ? c.compute_le[i - 1] : 0));
  for (int i = 0; i < UsageHistogram::kMemoryBuckets; ++i)
    h.memory[i] = std::max<std::int64_t>(0, c.memory_le[i] - (i > 0 ? c.memory_le[i - 1] : 0));
  return h;
}

LedgerHour CounterLedger::Impl::Close(const HourKey& key, const DeviceAcc& a) const {
  attribution::OpenDeviceHour open;
  DeviceHour& d = open.device;
  d.hour_us = key.first;
  d.cluster = cluster;
  d.node = a.node;
  d.gpu = GpuUuid{key.second};
  d.gpu_model = a.model;
  d.sharing = ParseSharingMode(a.sharing).value_or(SharingMode::kExclusive);
  d.layout = a.layout;
  d.metered_us = a.metered_us;
  d.busy_us = a.busy_us;
  d.idle_us = a.idle_us;
  d.unattributed_us = a.unattributed_us;
  d.energy_mj = a.energy_mj;
  d.unattributed_memory_kib_s = a.unattributed_memory_kib_s;
  d.memory_total_bytes = a.memory_total_bytes;
  for (const auto& [ref, c] : a.consumers) {
    UsageRow r;
    r.consumer = describe(ref);
    r.consumer.ref = ref;
    r.node = d.node;
    r.gpu_model = d.gpu_model;
    r.sharing = d.sharing;
    r.allocated_us = c.allocated_us;
    r.compute_us = c.compute_us;
    r.energy_mj = c.energy_mj;
    r.memory_kib_s = c.memory_kib_s;
    r.peak_memory_bytes = c.peak_memory_bytes;
    r.compute_quality = c.compute_quality;
    r.memory_quality = c.memory_quality;
    r.compute_rule = c.rule;
    r.activity = c.activity;
    r.activity_quality = c.activity_quality;
    r.activity_rule = c.activity_rule;
    r.share_source = c.share_source;
    r.histogram = PerBucket(c);
    open.usage.push_back(std::move(r));
  }
  LedgerHour closed = attribution::CloseDeviceHour(std::move(open));
  // Shares only the pod watch knows (KAI/Run:ai annotations) move allocation within the hour.
  attribution::ApplyAnnotatedShares(closed);
  return closed;
}

void CounterLedger::Impl::RaisePeak(Micros hour, const Sample& s, Bytes bytes) {
  auto h = hours.find({hour, std::string(Label(s.labels, "gpu_uuid"))});
  if (h == hours.end()) return;
  auto c = h->second.consumers.find(RefOf(s.labels));
  if (c != h->second.consumers.end() && bytes > c->second.peak_memory_bytes) {
    c->second.peak_memory_bytes = bytes;
    dirty_hours.insert(h->first);
  }
}

void CounterLedger::Impl::Feed(const TargetScrape& scrape) {
  InstanceState& inst = instances[scrape.instance];
  engine_dirty = true;
  if (scrape.at_us <= inst.last_at_us) {
    ++ignored;
    return;
  }
  dirty_instances.insert(scrape.instance);
  removed_instances.erase(scrape.instance);
  const Micros at = scrape.at_us;
  const Micros prev_at = inst.last_at_us;
  latest_us = std::max(latest_us, at);
  const Micros reset_from = FeedFacts(scrape, inst, prev_at);
  FeedCounters(scrape, inst, reset_from);
  FeedGauges(scrape);
  inst.last_at_us = at;
}

Micros CounterLedger::Impl::FeedFacts(const TargetScrape& scrape, InstanceState& inst,
                                      Micros prev_at) {
  const Micros at = scrape.at_us;
  // An agent first seen, that started while we were already observing: its counters began at
  // zero at its start, inside our window, so they count from there rather than being a
  // baseline. Every ingestion path then books the same totals.
  Micros agent_start_us = INT64_MIN;
  for (const Sample& s : scrape.samples)
    if (s.name == kAgentStart && std::isfinite(s.value) && s.value > 0)
      agent_start_us = ToCount(s.value, CounterScale::kMicrosPerSecond);
  const bool count_from_start = prev_at == INT64_MIN && agent_start_us != INT64_MIN &&
                                agent_start_us >= observing_since_us && agent_start_us < at;
  // Facts first: they label the deltas of this same scrape.
  std::int64_t restarted_us = -1;  // the largest metered counter that went backwards: uptime
  for (const Sample& s : scrape.samples) {
    if (s.name == kDeviceInfo) {
      DeviceFacts& f = inst.devices[std::string(Label(s.labels, "gpu_uuid"))];
      f.node = Label(s.labels, "node");
      f.model = Label(s.labels, "gpu_model");
      f.sharing = Label(s.labels, "sharing_mode");
      f.parent = Label(s.labels, "parent_uuid");
      f.layout = Label(s.labels, "layout");
      f.seen_us = at;
    } else if (s.name == kAttributionInfo) {
      Sources& src =
          inst.attribution[ConsumerKey(std::string(Label(s.labels, "gpu_uuid")), RefOf(s.labels))];
      src.compute = Label(s.labels, "compute_source");
      src.memory = Label(s.labels, "memory_source");
      src.activity = Label(s.labels, "activity_source");
      src.share = Label(s.labels, "share_source");
      src.seen_us = at;
    } else if (s.name == "gpuledger_device_metered_seconds_total") {
      auto it = inst.series.find(SeriesKey(s));
      auto count = CountOf(*FindCounter(s.name), s.value);
      if (count && it != inst.series.end() && *count < it->second.value)
        restarted_us = std::max(restarted_us, *count);
    }
  }
  // An agent restart: the new counters cover at most its uptime (the largest metered
  // counter), so reset and new series are booked over that, not the whole gap.
  Micros reset_from = count_from_start ? agent_start_us : prev_at;
  if (restarted_us >= 0 && prev_at != INT64_MIN) reset_from = std::max(prev_at, at - restarted_us);
  return reset_from;
}

void CounterLedger::Impl::FeedCounters(const TargetScrape& scrape, InstanceState& inst,
                                       Micros reset_from) {
  const Micros at = scrape.at_us;
  const auto memory_bounds = MemoryBucketBounds(scrape);
  for (const Sample& s : scrape.samples) {
    const CounterKind* kind = FindCounter(s.name);
    if (kind == nullptr) continue;
    const auto value = CountOf(*kind, s.value);
    if (!value) {  // not a counter value: keep the last, and count it
      ++skipped_values;
      continue;
    }
    int bucket = -1;
    if (kind->field == Field::kComputeBucket || kind->field == Field::kMemoryBucket) {
      bucket = kind->field == Field::kComputeBucket ? ComputeBucketOf(Label(s.labels, "le"))
                                                    : MemoryBucketOf(s, memory_bounds);
      if (bucket < 0) {
        ++skipped_buckets;
        continue;
      }
    }
    auto [it, fresh] = inst.series.try_emplace(SeriesKey(s));
    SeriesState& st = it->second;
    std::int64_t delta = 0;
    Micros from = INT64_MIN;
    if (!fresh && kind->field == Field::kMetered) {
      // Every hour since the last sample gets a row, so a gap shows as unmetered time.
      const std::string gpu(Label(s.labels, "gpu_uuid"));
      for (Micros h = HourStart(st.at_us + 1); h < at && !gpu.empty(); h += kMicrosPerHour)
        if (h >= forgotten_before_us) Acc(h, gpu, inst);
    }
    if (!fresh && *value >= st.value) {
      delta = *value - st.value;
      from = st.at_us;
    } else if (!fresh) {
      ++resets;  // counted since the reset: the new value is the delta
      delta = *value;
      from = std::max(st.at_us, reset_from);
    } else if (reset_from != INT64_MIN) {
      // A series new on a known agent (or on one counted from its start) started from 0.
      delta = *value;
      from = reset_from;
    }  // else: the first scrape of an agent only sets the baseline
    st.value = *value;
    st.at_us = at;
    if (from != INT64_MIN && from < at) Spread(*kind, s, delta, from, at, inst, bucket);
  }
}

void CounterLedger::Impl::FeedGauges(const TargetScrape& scrape) {
  const Micros at = scrape.at_us;
  // Gauges describe the instant just before the scrape: into the hour that holds it (a
  // scrape on the hour closes the hour before). The agent's hour peaks name their own hour
  // (gpuledger_agent_hour_start_seconds, by its clock): a peak between two scrapes is still
  // the hour's, and the previous hour's peak completes an hour whose last scrape came
  // before its last cycle.
  const Micros hour = HourStart(at - 1);
  Micros agent_hour_us = INT64_MIN;
  for (const Sample& s : scrape.samples)
    if (s.name == kAgentHourStart && std::isfinite(s.value) && s.value > 0)
      agent_hour_us = HourStart(ToCount(s.value, CounterScale::kMicrosPerSecond));
  for (const Sample& s : scrape.samples) {
    if (!std::isfinite(s.value) || s.value < 0 || s.value > 9e18) continue;
    const auto bytes = static_cast<Bytes>(std::llround(s.value));
    if (s.name == kMemoryTotal) {
      if (auto h = hours.find({hour, std::string(Label(s.labels, "gpu_uuid"))});
          h != hours.end() && h->second.memory_total_bytes != bytes) {
        h->second.memory_total_bytes = bytes;
        dirty_hours.insert(h->first);
      }
    } else if (s.name == kContainerMemoryUsed) {
      RaisePeak(hour, s, bytes);
    } else if (s.name == kContainerPeak && agent_hour_us != INT64_MIN) {
      RaisePeak(agent_hour_us, s, bytes);
    } else if (s.name == kContainerPreviousPeak && agent_hour_us != INT64_MIN) {
      RaisePeak(agent_hour_us - kMicrosPerHour, s, bytes);
    }
  }
}

CounterLedger::CounterLedger(std::string cluster,
                             std::function<ConsumerInfo(const ConsumerRef&)> describe)
    : impl_(std::make_shared<Impl>()) {
  impl_->cluster = std::move(cluster);
  impl_->describe = describe ? std::move(describe) : [](const ConsumerRef& ref) {
    ConsumerInfo info;
    info.ref = ref;
    return info;
  };
}

void CounterLedger::Feed(const TargetScrape& scrape) { impl_->Feed(scrape); }

std::vector<LedgerHour> CounterLedger::Hours(Micros before_us) const {
  std::vector<LedgerHour> out;
  for (const auto& [key, acc] : impl_->hours) {
    if (key.first >= before_us) break;
    out.push_back(impl_->Close(key, acc));
  }
  return out;
}

std::vector<LedgerHour> CounterLedger::TakeTouched() {
  std::vector<LedgerHour> out;
  for (const auto& key : impl_->touched)
    if (auto it = impl_->hours.find(key); it != impl_->hours.end())
      out.push_back(impl_->Close(key, it->second));
  impl_->touched.clear();
  return out;
}

void CounterLedger::Retouch(const std::vector<LedgerHour>& rows) {
  for (const LedgerHour& h : rows) {
    Impl::HourKey key{h.device.hour_us, h.device.gpu.value};
    if (impl_->hours.contains(key)) impl_->touched.insert(std::move(key));
  }
}

void CounterLedger::Forget(Micros before_us) {
  Impl& m = *impl_;
  before_us = HourStart(before_us);
  if (before_us <= m.forgotten_before_us) return;
  m.forgotten_before_us = before_us;
  m.engine_dirty = true;
  std::erase_if(m.hours, [&](const auto& kv) {
    if (kv.first.first >= before_us) return false;
    m.dirty_hours.erase(kv.first);
    m.removed_hours.insert(kv.first);
    return true;
  });
  std::erase_if(m.touched, [&](const auto& k) { return k.first < before_us; });
  // Series the agent stopped exporting (its instance was scraped since) are dropped once
  // forgotten; a silent instance keeps all its series for when it comes back (until Prune).
  for (auto& [name, inst] : m.instances) {
    const Micros last_at_us = inst.last_at_us;
    if (std::erase_if(inst.series, [&](const auto& kv) {
          return kv.second.at_us < before_us && kv.second.at_us < last_at_us;
        }) > 0)
      m.dirty_instances.insert(name);
  }
}

void CounterLedger::Prune(Micros before_us) {
  Impl& m = *impl_;
  for (auto it = m.instances.begin(); it != m.instances.end();) {
    auto& [name, inst] = *it;
    if (inst.last_at_us < before_us) {
      m.dirty_instances.erase(name);
      m.removed_instances.insert(name);
      it = m.instances.erase(it);
      continue;
    }
    const auto stale = [&](const auto& kv) { return kv.second.seen_us < before_us; };
    if (std::erase_if(inst.devices, stale) + std::erase_if(inst.attribution, stale) > 0)
      m.dirty_instances.insert(name);
    ++it;
  }
}

CounterLedger::Footprint CounterLedger::footprint() const {
  Footprint f;
  f.instances = static_cast<std::int64_t>(impl_->instances.size());
  for (const auto& [name, inst] : impl_->instances) {
    f.series += static_cast<std::int64_t>(inst.series.size());
    f.devices += static_cast<std::int64_t>(inst.devices.size());
    f.attribution += static_cast<std::int64_t>(inst.attribution.size());
  }
  f.hours = static_cast<std::int64_t>(impl_->hours.size());
  return f;
}

std::int64_t CounterLedger::ignored_scrapes() const { return impl_->ignored; }
std::int64_t CounterLedger::resets() const { return impl_->resets; }
std::int64_t CounterLedger::late_dropped() const { return impl_->late_dropped; }
std::int64_t CounterLedger::skipped_buckets() const { return impl_->skipped_buckets; }
std::int64_t CounterLedger::skipped_values() const { return impl_->skipped_values; }
Micros CounterLedger::latest_us() const { return impl_->latest_us; }

void CounterLedger::ObserveSince(Micros since_us) { impl_->observing_since_us = since_us; }

}  // namespace gpuledger::ingest
