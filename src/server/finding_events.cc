#include "server/finding_events.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <utility>

#include "common/json_text.h"
#include "common/time_util.h"
#include "prometheus/exposition_writer.h"
#include "prometheus/metric_table.h"

namespace gpuledger::server {
namespace {

using nlohmann::json;

constexpr std::string_view kComponent = "gpuledger-server";
constexpr Micros kRateWindowUs = 60 * kMicrosPerSecond;
// Kubernetes limits: a name is a DNS subdomain (253), an Event's message (its
// note) 1024 bytes.
constexpr std::size_t kMaxNameBytes = 253;
constexpr std::size_t kMaxMessageBytes = 1024;

// FNV-1a, 64 bit, over the key's fields each ended by a NUL: fixed by its
// definition, unlike std::hash, so names stay the same across builds, platforms
// and restarts.
std::uint64_t StableKeyHash(const Finding& f) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  auto add = [&](std::string_view field) {
    for (unsigned char c : field) {
      h ^= c;
      h *= 0x100000001b3ULL;
    }
    h *= 0x100000001b3ULL;  // the NUL after the field (x ^ 0 == x)
  };
  add(f.cluster);
  add(f.node);
  add(ToString(f.kind));
  add(f.subject.namespace_name);
  add(f.subject.pod);
  add(f.subject.pod_uid.str());
  add(f.subject.container);
  add(f.gpu_uuid);
  add(std::to_string(f.first_seen_us));
  return h;
}

// "unallocated-access" -> "GpuledgerUnallocatedAccess".
std::string Reason(FindingKind kind) {
  std::string out = "Gpuledger";
  bool upper = true;
  for (char c : ToString(kind)) {
    if (c == '-') {
      upper = true;
      continue;
    }
    out.push_back(upper && c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c);
    upper = false;
  }
  return out;
}

// RFC 3339 in whole seconds (an Event's firstTimestamp/lastTimestamp) or with
// µs (eventTime, a MicroTime), UTC.
Micros FloorSecond(Micros t) {
  Micros r = t % kMicrosPerSecond;
  return r < 0 ? t - r - kMicrosPerSecond : t - r;
}
std::string SecondTime(Micros t) { return FormatRfc3339(FloorSecond(t)); }
std::string MicroTime(Micros t) {
  std::string text = SecondTime(t);  // "...:SSZ"
  text.insert(text.size() - 1, fmt::format(".{:06}", t - FloorSecond(t)));
  return text;
}

// One line, at most kMaxMessageBytes, cut at a UTF-8 character boundary with
// "…".
std::string OneLine(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  if (text.size() <= kMaxMessageBytes) return text;
  constexpr std::string_view kEllipsis = "\xe2\x80\xa6";
  std::size_t cut = kMaxMessageBytes - kEllipsis.size();
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  text.resize(cut);
  text += kEllipsis;
  return text;
}

std::string Message(const guardrails::PricedFinding& p) {
  const Finding& f = p.finding;
  std::string text = fmt::format("{} (node {}): {}", ToString(f.kind), f.node, Summary(p));
  if (!f.evidence.empty()) text += fmt::format(" ({})", f.evidence);
  return OneLine(std::move(text));
}

// "POST <target>: HTTP 403: <the Status message>" for an answer that created
// nothing.
std::string Refusal(const std::string& target, const k8s::HttpResponse& r) {
  json body = json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  std::string why = body.is_object() && body.contains("message") && body["message"].is_string()
                        ? body["message"].get<std::string>()
                        : r.body.substr(0, 200);
  return fmt::format("POST {}: HTTP {}: {}", target, r.status, why);
}

}  // namespace

std::string FindingEventName(const Finding& f, std::int64_t repeat) {
  std::string suffix = fmt::format(".gpuledger-{:016x}", StableKeyHash(f));
  if (repeat > 0) suffix += fmt::format("-{}", repeat);
  std::string prefix = f.subject.pod.substr(0, kMaxNameBytes - suffix.size());
  while (!prefix.empty() && (prefix.back() == '.' || prefix.back() == '-')) prefix.pop_back();
  return prefix + suffix;
}

std::string FindingEventBody(const guardrails::PricedFinding& p, std::int64_t repeat) {
  const Finding& f = p.finding;
  const ConsumerRef& pod = f.subject;
  json involved = {
      {"apiVersion", "v1"}, {"kind", "Pod"}, {"namespace", pod.namespace_name}, {"name", pod.pod}};
  if (!pod.pod_uid.empty()) involved["uid"] = pod.pod_uid.str();
  json event = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"name", FindingEventName(f, repeat)}, {"namespace", pod.namespace_name}}},
      {"involvedObject", involved},
      {"type", "Warning"},
      {"reason", Reason(f.kind)},
      {"message", Message(p)},
      {"action", "Detected"},
      {"source", {{"component", kComponent}}},
      {"reportingComponent", kComponent},
      {"reportingInstance", kComponent},
      // All from the finding, none from the clock: a re-post after a restart is
      // the same Event.
      {"firstTimestamp", SecondTime(f.first_seen_us)},
      {"lastTimestamp", SecondTime(f.last_seen_us)},
      {"eventTime", MicroTime(f.first_seen_us)},
      {"count", 1},
  };
  return JsonText(event);
}

FindingEvents::FindingEvents(k8s::ApiTransport& transport, const guardrails::Policy& policy,
                             std::function<Micros()> now)
    : transport_(transport), policy_(policy), now_(std::move(now)) {}

bool FindingEvents::Announces(const Finding& f) const {
  const guardrails::Action action = policy_.For(f.kind).action;
  const bool warns = action == guardrails::Action::kWarn || action == guardrails::Action::kDeny;
  const bool on_pod =
      !f.subject.IsHost() && !f.subject.namespace_name.empty() && !f.subject.pod.empty();
  return warns && on_pod && !f.resolved_us;
}

std::int64_t FindingEvents::RepeatNumber(const Finding& f, Micros now_us) const {
  if (policy_.event_repeat_us <= 0 || now_us <= f.first_seen_us) return 0;
  return (now_us - f.first_seen_us) / policy_.event_repeat_us;
}

Status FindingEvents::Publish(std::span<const guardrails::PricedFinding> open) {
  const Micros now_us = now_();
  while (!recent_posts_.empty() && recent_posts_.front() <= now_us - kRateWindowUs) {
    recent_posts_.pop_front();
  }
  const std::size_t limit =
      policy_.events_per_minute > 0 ? static_cast<std::size_t>(policy_.events_per_minute) : 0;

  std::set<Finding::KeyType> still_open;
  std::optional<Error> first_error;
  int failures = 0;
  auto fail = [&](Error e) {
    ++errors_;
    ++failures;
    if (!first_error) first_error = std::move(e);
  };
  for (const guardrails::PricedFinding& p : open) {
    const Finding& f = p.finding;
    if (!Announces(f)) continue;
    Finding::KeyType key = f.Key();
    const std::int64_t repeat = RepeatNumber(f, now_us);
    auto it = announced_.find(key);
    still_open.insert(key);
    if (it != announced_.end() && it->second >= repeat) continue;
    if (recent_posts_.size() >= limit) {
      ++deferred_;
      continue;
    }
    recent_posts_.push_back(now_us);
    const std::string target = "/api/v1/namespaces/" + f.subject.namespace_name + "/events";
    auto r = transport_.Post(target, FindingEventBody(p, repeat));
    if (!r) {
      fail(r.error());
      continue;
    }
    if (r->status == 201 || r->status == 409) {  // 409: announced before, by us or a restart
      ++(r->status == 201 ? created_ : exists_);
      announced_[std::move(key)] = repeat;
      continue;
    }
    fail(Unavailable(Refusal(target, *r)));
  }
  std::erase_if(announced_, [&](const auto& entry) { return !still_open.contains(entry.first); });

  if (!first_error) return Status::Ok();
  if (failures > 1) first_error->message += fmt::format(" (and {} more failed)", failures - 1);
  return *first_error;
}

std::string FindingEvents::RenderMetrics() const {
  prometheus::ExpositionWriter w;
  constexpr std::string_view kName = prometheus::kServerEventsTotal.name;
  w.Family(prometheus::kServerEventsTotal);
  w.Sample(kName, {{"result", "created"}}, static_cast<double>(created_.load()));
  w.Sample(kName, {{"result", "exists"}}, static_cast<double>(exists_.load()));
  w.Sample(kName, {{"result", "error"}}, static_cast<double>(errors_.load()));
  w.Sample(kName, {{"result", "deferred"}}, static_cast<double>(deferred_.load()));
  return w.Take();
}

}  // namespace gpuledger::server
