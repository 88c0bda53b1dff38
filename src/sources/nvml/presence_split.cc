#include "sources/nvml/presence_split.h"

#include <algorithm>
#include <cmath>

namespace gpuledger::nvml {
namespace {

bool Earlier(const UtilSample& a, const UtilSample& b) { return a.ts < b.ts; }

}  // namespace

void ShiftPresence(PresenceState& state, Micros step_us) {
  for (UtilSample& s : state.samples) s.ts = MovedTimestamp(s.ts, step_us);
  if (state.last_device_ts) state.last_device_ts = MovedTimestamp(*state.last_device_ts, step_us);
}

std::map<unsigned, std::int64_t> SplitByPresence(PresenceState& state,
                                                 std::vector<UtilSample> device,
                                                 std::vector<UtilSample> processes,
                                                 Micros previous_read_us, Micros max_period_us) {
  std::stable_sort(processes.begin(), processes.end(), Earlier);
  std::deque<UtilSample> merged;
  std::merge(state.samples.begin(), state.samples.end(), processes.begin(), processes.end(),
             std::back_inserter(merged), Earlier);
  state.samples = std::move(merged);

  std::map<unsigned, std::int64_t> out;
  const auto half = static_cast<unsigned long long>(kPresenceHalfWidthUs);
  std::map<unsigned, double> present;  // pid -> its highest SM % near the window
  std::stable_sort(device.begin(), device.end(), Earlier);
  for (const UtilSample& s : device) {
    if (state.last_device_ts && s.ts <= *state.last_device_ts) continue;
    // The first window ever starts at the previous read, as IntegrateSamples counts it.
    const unsigned long long start = state.last_device_ts.value_or(static_cast<unsigned long long>(
        std::clamp<Micros>(previous_read_us, 0, static_cast<Micros>(s.ts))));
    state.last_device_ts = s.ts;
    const Micros length = Clamp(static_cast<Micros>(s.ts - start), max_period_us);
    if (s.percent <= 0 || length <= 0) continue;
    present.clear();
    const unsigned long long from = start > half ? start - half : 0;
    auto it = std::lower_bound(state.samples.begin(), state.samples.end(), UtilSample{from, 0, 0},
                               Earlier);
    for (; it != state.samples.end() && it->ts <= s.ts + half; ++it)
      present[it->key] = std::max(present[it->key], it->percent);
    double total = 0;
    for (const auto& [pid, percent] : present) total += percent;
    if (total <= 0) continue;                                     // nobody NVML sampled near it
    const double busy = s.percent * static_cast<double>(length);  // percent-µs
    for (const auto& [pid, percent] : present)
      if (percent > 0) out[pid] += std::llround(busy * percent / total);
  }
  // The next window starts at the latest device sample: older samples cannot be near it.
  if (state.last_device_ts) {
    const unsigned long long keep_from =
        *state.last_device_ts > half ? *state.last_device_ts - half : 0;
    while (!state.samples.empty() && state.samples.front().ts < keep_from)
      state.samples.pop_front();
  }
  // Bounded whatever NVML does (a device that stops sampling while processes keep reporting).
  while (state.samples.size() > kPresenceMaxSamples) state.samples.pop_front();
  return out;
}

}  // namespace gpuledger::nvml
