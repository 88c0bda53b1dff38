#include "ingest/token_ledger.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/apportion.h"
#include "common/json_text.h"
#include "ingest/agent_series.h"
#include "ingest/token_series.h"

namespace gpuledger::ingest {
namespace {

using json = nlohmann::json;

constexpr std::string_view kStateKind = "gpuledger token-ledger state";
constexpr int kStateVersion = 1;

struct SeriesState {
  std::int64_t value = 0;
  Micros at_us = 0;
};

struct EngineState {
  Micros last_at_us = INT64_MIN;
  Micros started_us = INT64_MIN;  // its process_start_time_seconds; INT64_MIN: not exported
  std::map<std::string, SeriesState> series;  // SeriesKey -> last value
};

// A row's identity: (hour, consumer, model, engine).
using RowKey = std::tuple<Micros, ConsumerRef, std::string, std::string>;

void AddTo(TokenHour& row, TokenField field, std::int64_t part) {
  switch (field) {
    case TokenField::kInput:
      row.input_tokens += part;
      return;
    case TokenField::kOutput:
      row.output_tokens += part;
      return;
    case TokenField::kRequests:
      row.requests += part;
      return;
    case TokenField::kPrefill:
      row.prefill_us += part;
      return;
    case TokenField::kDecode:
      row.decode_us += part;
      return;
  }
}

json ConsumerJson(const ConsumerRef& r) {
  return {r.namespace_name, r.pod, r.pod_uid.str(), r.container};
}
ConsumerRef ConsumerFrom(const json& j) {
  return {j.at(0).get<std::string>(), j.at(1).get<std::string>(),
          PodUid(j.at(2).get<std::string>()), j.at(3).get<std::string>()};
}

}  // namespace

struct TokenLedger::Impl {
  std::string cluster;
  std::map<ConsumerRef, EngineState> engines;
  std::map<RowKey, TokenHour> rows;
  std::set<RowKey> touched;
  Micros forgotten_before_us = INT64_MIN;
  Micros observing_since_us = INT64_MAX;
  Micros latest_us = INT64_MIN;
  std::int64_t ignored = 0, resets = 0, restarts = 0, late_dropped = 0, skipped = 0;

  // When a series that is new, or went back, started counting from zero: the engine's start
  // where that is known and inside the interval, else the engine's last scrape; INT64_MIN
  // where nothing before this scrape was observed (a baseline).
  static Micros CountedFrom(Micros prev_at, Micros started_us) {
    if (started_us == INT64_MIN) return prev_at;
    return prev_at == INT64_MIN ? started_us : std::max(prev_at, started_us);
  }

  void Spread(const EngineScrape& scrape, const TokenSeries& kind, const Sample& s,
              std::int64_t delta, Micros t0, Micros t1) {
    std::string model(ModelOf(s));
    if (model.empty()) model = scrape.model;
    for (const auto [hour_us, part] : ApportionOverHours(delta, t0, t1)) {
      if (part == 0) continue;
      if (hour_us < forgotten_before_us) {
        ++late_dropped;
        continue;
      }
      RowKey key{hour_us, scrape.consumer, model, std::string(kind.engine)};
      auto [it, added] = rows.try_emplace(key);
      TokenHour& row = it->second;
      if (added) {
        row.hour_us = hour_us;
        row.cluster = cluster;
        row.consumer = scrape.consumer;
        row.model = model;
        row.engine = kind.engine;
      }
      AddTo(row, kind.field, part);
      touched.insert(key);
    }
  }

  void Feed(const EngineScrape& scrape) {
    const Micros at = scrape.at_us;
    auto [engine_it, first] = engines.try_emplace(scrape.consumer);
    EngineState& e = engine_it->second;
    if (!first && at <= e.last_at_us) {
      ++ignored;
      return;
    }
    Micros started_us = INT64_MIN;
    for (const Sample& s : scrape.samples)
      if (s.name == kProcessStart && std::isfinite(s.value) && s.value > 0 && s.value < 1e11)
        started_us = static_cast<Micros>(std::llround(s.value * 1e6));
    if (started_us >= at) started_us = INT64_MIN;  // a clock the engine's host disagrees with
    const Micros prev_at = first ? INT64_MIN : e.last_at_us;
    // A new start time: the engine restarted, and every counter began again at zero then.
    const bool restarted =
        !first && started_us != INT64_MIN && e.started_us != INT64_MIN && started_us != e.started_us;
    if (restarted) ++restarts;
    // An engine first seen that started while we were observing counts from its start.
    const bool whole_life = first && started_us != INT64_MIN && started_us >= observing_since_us;
    const Micros counted_from =
        first && !whole_life ? INT64_MIN : CountedFrom(prev_at, started_us);
    for (const Sample& s : scrape.samples) {
      const TokenSeries* kind = FindTokenSeries(s);
      if (kind == nullptr) continue;
      const auto value = TokenCount(*kind, s.value);
      if (!value) {
        ++skipped;
        continue;
      }
      auto [it, fresh] = e.series.try_emplace(SeriesKey(s));
      SeriesState& st = it->second;
      std::int64_t delta = 0;
      Micros from = INT64_MIN;
      if (!fresh && !restarted && *value >= st.value) {
        delta = *value - st.value;
        from = st.at_us;
      } else if (!fresh) {
        if (!restarted) ++resets;
        delta = *value;
        from = std::max(st.at_us, CountedFrom(prev_at, started_us));
      } else if (counted_from != INT64_MIN) {
        delta = *value;  // a series new on a known engine (or one counted from its start)
        from = counted_from;
      }  // else: the engine's first scrape only sets the baseline
      st.value = *value;
      st.at_us = at;
      if (from != INT64_MIN && from < at && delta > 0) Spread(scrape, *kind, s, delta, from, at);
    }
    e.last_at_us = at;
    if (started_us != INT64_MIN) e.started_us = started_us;
    latest_us = std::max(latest_us, at);
  }
};

TokenLedger::TokenLedger(std::string cluster) : impl_(std::make_shared<Impl>()) {
  impl_->cluster = std::move(cluster);
}

void TokenLedger::ObserveSince(Micros since_us) { impl_->observing_since_us = since_us; }

void TokenLedger::Feed(const EngineScrape& scrape) { impl_->Feed(scrape); }

std::vector<TokenHour> TokenLedger::Hours(Micros before_us) const {
  std::vector<TokenHour> out;
  for (const auto& [key, row] : impl_->rows)
    if (row.hour_us < before_us) out.push_back(row);
  return out;
}

std::vector<TokenHour> TokenLedger::TakeTouched() {
  std::vector<TokenHour> out;
  out.reserve(impl_->touched.size());
  for (const RowKey& key : impl_->touched)
    if (auto it = impl_->rows.find(key); it != impl_->rows.end()) out.push_back(it->second);
  impl_->touched.clear();
  return out;
}

void TokenLedger::Retouch(const std::vector<TokenHour>& rows) {
  for (const TokenHour& r : rows) {
    RowKey key{r.hour_us, r.consumer, r.model, r.engine};
    if (impl_->rows.contains(key)) impl_->touched.insert(std::move(key));
  }
}

void TokenLedger::Forget(Micros before_us) {
  Impl& m = *impl_;
  m.forgotten_before_us = std::max(m.forgotten_before_us, before_us);
  const auto end = m.rows.lower_bound(RowKey{before_us, ConsumerRef{}, "", ""});
  for (auto it = m.rows.begin(); it != end; ++it) m.touched.erase(it->first);
  m.rows.erase(m.rows.begin(), end);
}

void TokenLedger::Prune(Micros before_us) {
  std::erase_if(impl_->engines,
                [&](const auto& entry) { return entry.second.last_at_us < before_us; });
}

std::string TokenLedger::State() const {
  const Impl& m = *impl_;
  json engines = json::array();
  for (const auto& [ref, e] : m.engines) {
    json series = json::array();
    for (const auto& [key, st] : e.series) series.push_back({key, st.value, st.at_us});
    engines.push_back({ConsumerJson(ref), e.last_at_us, e.started_us, series});
  }
  json rows = json::array();
  for (const auto& [key, r] : m.rows)
    rows.push_back({r.hour_us, ConsumerJson(r.consumer), r.model, r.engine, r.input_tokens,
                    r.output_tokens, r.requests, r.prefill_us, r.decode_us,
                    m.touched.contains(key)});
  json j = {{"kind", kStateKind},
            {"version", kStateVersion},
            {"cluster", m.cluster},
            {"forgotten_before_us", m.forgotten_before_us},
            {"observing_since_us", m.observing_since_us},
            {"latest_us", m.latest_us},
            {"counts", {m.ignored, m.resets, m.restarts, m.late_dropped, m.skipped}},
            {"engines", engines},
            {"rows", rows}};
  return JsonText(j);
}

Status TokenLedger::Restore(std::string_view state_json) {
  json j = json::parse(state_json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || j.value("kind", "") != kStateKind)
    return InvalidArgument("not a gpuledger token-ledger state");
  try {
    const int version = j.at("version").get<int>();
    if (version != kStateVersion)
      return InvalidArgument(fmt::format("token-ledger state version {}, this build reads {}",
                                         version, kStateVersion));
    Impl m;
    m.cluster = impl_->cluster;
    m.forgotten_before_us = j.at("forgotten_before_us").get<Micros>();
    m.observing_since_us = j.at("observing_since_us").get<Micros>();
    m.latest_us = j.at("latest_us").get<Micros>();
    const json& counts = j.at("counts");
    std::tie(m.ignored, m.resets, m.restarts, m.late_dropped, m.skipped) =
        std::tuple{counts.at(0).get<std::int64_t>(), counts.at(1).get<std::int64_t>(),
                   counts.at(2).get<std::int64_t>(), counts.at(3).get<std::int64_t>(),
                   counts.at(4).get<std::int64_t>()};
    for (const json& ej : j.at("engines")) {
      EngineState& e = m.engines[ConsumerFrom(ej.at(0))];
      e.last_at_us = ej.at(1).get<Micros>();
      e.started_us = ej.at(2).get<Micros>();
      for (const json& s : ej.at(3))
        e.series[s.at(0).get<std::string>()] = {s.at(1).get<std::int64_t>(),
                                                s.at(2).get<Micros>()};
    }
    for (const json& rj : j.at("rows")) {
      TokenHour r;
      r.hour_us = rj.at(0).get<Micros>();
      r.cluster = m.cluster;
      r.consumer = ConsumerFrom(rj.at(1));
      r.model = rj.at(2).get<std::string>();
      r.engine = rj.at(3).get<std::string>();
      r.input_tokens = rj.at(4).get<std::int64_t>();
      r.output_tokens = rj.at(5).get<std::int64_t>();
      r.requests = rj.at(6).get<std::int64_t>();
      r.prefill_us = rj.at(7).get<Micros>();
      r.decode_us = rj.at(8).get<Micros>();
      RowKey key{r.hour_us, r.consumer, r.model, r.engine};
      if (rj.at(9).get<bool>()) m.touched.insert(key);
      m.rows.emplace(std::move(key), std::move(r));
    }
    *impl_ = std::move(m);
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("token-ledger state: ") + e.what());
  }
  return Status::Ok();
}

TokenLedger::Footprint TokenLedger::footprint() const {
  Footprint f;
  f.engines = static_cast<std::int64_t>(impl_->engines.size());
  for (const auto& [ref, e] : impl_->engines) f.series += static_cast<std::int64_t>(e.series.size());
  f.rows = static_cast<std::int64_t>(impl_->rows.size());
  return f;
}

std::int64_t TokenLedger::ignored_scrapes() const { return impl_->ignored; }
std::int64_t TokenLedger::resets() const { return impl_->resets; }
std::int64_t TokenLedger::restarts() const { return impl_->restarts; }
std::int64_t TokenLedger::late_dropped() const { return impl_->late_dropped; }
std::int64_t TokenLedger::skipped_values() const { return impl_->skipped; }
Micros TokenLedger::latest_us() const { return impl_->latest_us; }

}  // namespace gpuledger::ingest
