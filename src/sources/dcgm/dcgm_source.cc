#include "sources/dcgm/dcgm_source.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <utility>

#include <fmt/format.h>

namespace gpuledger::sources::dcgm {
namespace {

// "MIG-GPU-<uuid>/<gi>/<ci>", the MIG UUID of drivers before R470: it names its GPU instance.
std::optional<int> LegacyGpuInstanceId(const std::string& mig_uuid) {
  if (mig_uuid.rfind("MIG-GPU-", 0) != 0) return std::nullopt;
  const std::size_t first = mig_uuid.find('/');
  if (first == std::string::npos) return std::nullopt;
  const std::size_t second = mig_uuid.find('/', first + 1);
  const char* begin = mig_uuid.data() + first + 1;
  const char* end =
      second == std::string::npos ? mig_uuid.data() + mig_uuid.size() : mig_uuid.data() + second;
  int gi = 0;
  auto [at, ec] = std::from_chars(begin, end, gi);
  if (ec != std::errc() || at != end || gi < 0) return std::nullopt;
  return gi;
}

// The compute slices of a profile, "3g.40gb" -> 3; -1 when it does not say.
int Slices(const std::string& profile) {
  int n = 0;
  auto [at, ec] = std::from_chars(profile.data(), profile.data() + profile.size(), n);
  if (ec != std::errc() || at == profile.data() + profile.size() || *at != 'g' || n <= 0) return -1;
  return n;
}

GpuMicros Integral(double fraction, Micros dt) {
  return static_cast<GpuMicros>(std::llround(fraction * static_cast<double>(dt)));
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const std::string& p : parts) {
    if (!out.empty()) out += sep;
    out += p;
  }
  return out;
}

}  // namespace

std::map<GpuUuid, const DcgmUnit*> MatchMigInstances(const GpuReading& reading,
                                                     const DcgmScrape& scrape,
                                                     std::vector<std::string>* unmatched) {
  std::map<GpuUuid, const DcgmUnit*> out;
  std::map<GpuUuid, std::vector<const DcgmUnit*>> exporter;  // parent -> instances by GPU_I_ID
  for (const DcgmUnit& u : scrape.units)
    if (u.is_mig()) exporter[u.gpu_uuid].push_back(&u);
  for (auto& [parent, units] : exporter)
    std::sort(units.begin(), units.end(), [](const DcgmUnit* a, const DcgmUnit* b) {
      return *a->gpu_instance_id < *b->gpu_instance_id;
    });
  std::map<GpuUuid, std::vector<const MigInstance*>> nvml;  // parent -> instances, NVML's order
  for (const MigInstance& m : reading.mig_instances) nvml[m.parent].push_back(&m);

  for (const auto& [parent, instances] : nvml) {
    std::vector<const DcgmUnit*> candidates = exporter[parent];
    std::map<int, std::vector<const MigInstance*>> by_slices;
    for (const MigInstance* m : instances) {
      // NVML's GPU instance id is DCGM's GPU_I_ID: exact. Else the legacy UUID names it.
      auto gi = m->gpu_instance_id;
      if (!gi) gi = LegacyGpuInstanceId(m->uuid.value);
      if (gi) {
        auto it = std::find_if(candidates.begin(), candidates.end(),
                               [&](const DcgmUnit* u) { return *u->gpu_instance_id == *gi; });
        if (it != candidates.end()) {
          out[m->uuid] = *it;
          candidates.erase(it);
          continue;
        }
      }
      by_slices[m->compute_slices].push_back(m);
    }
    std::map<int, std::vector<const DcgmUnit*>> exporter_by_slices;
    for (const DcgmUnit* u : candidates)
      exporter_by_slices[Slices(u->gpu_instance_profile)].push_back(u);
    for (const auto& [slices, ms] : by_slices) {
      const auto it = exporter_by_slices.find(slices);
      const std::size_t have = it == exporter_by_slices.end() ? 0 : it->second.size();
      if (have != ms.size()) {
        if (unmatched != nullptr)
          unmatched->push_back(fmt::format("{}: {} NVML instance(s) of {} slices, {} in {}",
                                           parent.value, ms.size(), slices, have, kSourceName));
        continue;
      }
      for (std::size_t i = 0; i < ms.size(); ++i) out[ms[i]->uuid] = it->second[i];
    }
  }
  return out;
}

ApplyStats ApplyScrape(const DcgmScrape& scrape, GpuReading& reading) {
  ApplyStats stats;
  const Micros dt = reading.end_us - reading.start_us;
  if (dt <= 0) return stats;
  const std::map<GpuUuid, const DcgmUnit*> mig =
      MatchMigInstances(reading, scrape, &stats.unmatched_mig);
  std::set<GpuUuid> mig_uuids;
  for (const MigInstance& m : reading.mig_instances) mig_uuids.insert(m.uuid);

  for (DeviceSignals& s : reading.signals) {
    const bool is_mig = mig_uuids.count(s.device) > 0;
    // A physical GPU by its UUID; a MIG instance by the join (or by its own UUID, should an
    // exporter label it so).
    const DcgmUnit* u = scrape.Find(s.device);
    if (u == nullptr && is_mig) {
      if (auto it = mig.find(s.device); it != mig.end()) u = it->second;
    }
    if (u == nullptr) continue;
    ++stats.matched;
    if (!s.activity) {
      if (u->sm_active && u->sm_occupancy && u->tensor_active && u->dram_active) {
        s.activity = Activity{Integral(*u->sm_active, dt), Integral(*u->sm_occupancy, dt),
                              Integral(*u->tensor_active, dt), Integral(*u->dram_active, dt)};
        s.activity_source = SignalSource::kDcgm;
        ++stats.activity_filled;
      } else {
        std::vector<std::string> lack;
        if (!u->sm_active) lack.emplace_back("PROF_SM_ACTIVE");
        if (!u->sm_occupancy) lack.emplace_back("PROF_SM_OCCUPANCY");
        if (!u->tensor_active) lack.emplace_back("PROF_PIPE_TENSOR_ACTIVE");
        if (!u->dram_active) lack.emplace_back("PROF_DRAM_ACTIVE");
        stats.missing_fields.push_back(fmt::format("{}: {}", s.device.value, Join(lack, ", ")));
      }
    }
    if (is_mig && !s.busy_us && u->gr_engine_active) {
      s.busy_us = Integral(*u->gr_engine_active, dt);
      s.busy_source = SignalSource::kDcgm;
      ++stats.busy_filled;
    }
  }
  return stats;
}

DcgmGpuSource::DcgmGpuSource(std::unique_ptr<GpuSource> inner, Fetch fetch, DcgmOptions options)
    : inner_(std::move(inner)), fetch_(std::move(fetch)), options_(std::move(options)) {}

std::string DcgmGpuSource::Describe() const {
  return fmt::format("{}; {} at {}", inner_->Describe(), kSourceName, options_.url);
}

void DcgmGpuSource::Condition(GpuReading& reading, const std::string& code,
                              const std::string& detail) {
  auto it = conditions_.find(code);
  if (detail.empty()) {
    if (it != conditions_.end()) conditions_.erase(it);
    return;
  }
  if (it != conditions_.end() && it->second == detail) return;
  conditions_[code] = detail;
  reading.faults.push_back(SourceFault{std::string(kSourceName), code, detail});
}

std::vector<double> DcgmGpuSource::Fingerprint(const DcgmScrape& scrape) {
  // Unset values as -1: a fingerprint must compare equal to itself (NaN would not).
  auto v = [](const auto& o) { return o ? static_cast<double>(*o) : -1.0; };
  std::vector<double> out;
  out.reserve(scrape.units.size() * 9);
  for (const DcgmUnit& u : scrape.units) {
    out.push_back(static_cast<double>(u.gpu_instance_id.value_or(-1)));
    for (double x : {v(u.sm_active), v(u.sm_occupancy), v(u.tensor_active), v(u.dram_active),
                     v(u.gr_engine_active), v(u.gpu_util), v(u.fb_used_bytes), v(u.power_watts)})
      out.push_back(x);
  }
  return out;
}

void DcgmGpuSource::Refresh(GpuReading& reading) {
  last_attempt_us_ = elapsed_us_;
  usable_ = false;
  auto body = fetch_();
  if (!body) {
    const std::string& why = body.error().message;
    const bool timeout = why.find("timed out") != std::string::npos;
    reading.faults.push_back(
        SourceFault{std::string(kSourceName), timeout ? "TIMEOUT" : "FETCH_FAILED", why});
    return;
  }
  auto scrape = ParseDcgmExporter(*body);
  if (!scrape) {
    reading.faults.push_back(
        SourceFault{std::string(kSourceName), "PARSE_FAILED", scrape.error().message});
    return;
  }
  Condition(reading, "MALFORMED_LINES",
            scrape->bad_line_count == 0
                ? std::string()
                : fmt::format("{} line(s) skipped; line {}: {}", scrape->bad_line_count,
                              scrape->bad_lines.front().line, scrape->bad_lines.front().reason));
  std::vector<double> fingerprint = Fingerprint(*scrape);
  if (fingerprint != fingerprint_) {
    fingerprint_ = std::move(fingerprint);
    fingerprint_since_us_ = elapsed_us_;
  }
  const bool moving_matters =
      std::any_of(fingerprint_.begin(), fingerprint_.end(), [](double x) { return x > 0; });
  const bool stale =
      moving_matters && elapsed_us_ - fingerprint_since_us_ >= options_.stale_after_us;
  Condition(reading, "STALE",
            stale ? fmt::format("every value unchanged for {} s or more; not used until one moves",
                                options_.stale_after_us / kMicrosPerSecond)
                  : std::string());
  scrape_ = std::move(*scrape);
  usable_ = !stale;
}

Result<GpuReading> DcgmGpuSource::Read() {
  auto reading = inner_->Read();
  if (!reading) return reading;
  const Micros dt = reading->end_us - reading->start_us;
  if (dt > 0) elapsed_us_ += dt;
  if (reading->gpus.empty() || dt <= 0) return reading;  // nothing to fill
  if (!last_attempt_us_ || elapsed_us_ - *last_attempt_us_ >= options_.refresh_us)
    Refresh(*reading);
  if (!usable_ || !scrape_) return reading;

  ApplyStats stats = ApplyScrape(*scrape_, *reading);
  std::string no_match;
  if (stats.matched == 0 && !reading->signals.empty()) {
    std::vector<std::string> theirs;
    for (const DcgmUnit& u : scrape_->units)
      if (!u.is_mig() && theirs.size() < 4) theirs.push_back(u.gpu_uuid.value);
    no_match = fmt::format(
        "none of the exporter's GPUs ({}) is one of this node's: is {} this "
        "node's exporter?",
        Join(theirs, ", "), options_.url);
  }
  Condition(*reading, "NO_MATCHING_GPU", no_match);
  // Matching nothing says it all; the finer conditions would only repeat it.
  Condition(*reading, "MIG_UNMATCHED", no_match.empty() ? Join(stats.unmatched_mig, "; ") : "");
  Condition(*reading, "MISSING_FIELDS",
            stats.missing_fields.empty() || !no_match.empty()
                ? std::string()
                : fmt::format("{} unit(s) without activity: the exporter lacks {}{}",
                              stats.missing_fields.size(), stats.missing_fields.front(),
                              stats.missing_fields.size() > 1 ? ", ..." : ""));
  return reading;
}

}  // namespace gpuledger::sources::dcgm
