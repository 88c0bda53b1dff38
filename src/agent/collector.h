#pragma once
// The agent's collection loop body (design section 6). Each Cycle() reads the GPUs, the
// processes behind them and (when present) the kubelet and CRI views, builds an immutable
// NodeSnapshot, attributes it and adds the result to monotonic counters. /metrics renders
// those counters on demand, at most once per cycle however many scrapers ask: no NVML, kubelet
// or CRI call is ever on the scrape path, so a hung driver cannot stall a scrape. A cycle applies
// its results under a lock held for microseconds; a rendering holds it for a few milliseconds, so a
// scrape can delay a cycle by that much, never the other way round.
//
// Why not render every cycle, as design section 6 first said: with 200 containers the
// exposition is ~1.7 MB (two histograms per container); rendering and gzipping it cost
// ~16 ms of CPU per 1 s cycle, while Prometheus scrapes every 15-60 s. Rendering on demand
// keeps the scrape path free of sources and the cycle's own cost near 1 ms.
//
// Thread-safety: Cycle() from one thread; Exposition()/Healthy() from any thread.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "agent/node_view.h"
#include "common/clock.h"
#include "common/counter_units.h"
#include "guardrails/detect.h"
#include "model/usage.h"
#include "prometheus/exposition_writer.h"
#include "sources/cri/runtime.h"
#include "sources/gpu_source.h"
#include "sources/kerneltime/kernel_time_reader.h"
#include "sources/kubelet/pod_resources.h"
#include "sources/procfs/proc_source.h"

namespace gpuledger::agent {

struct CollectorOptions {
  std::string node;
  Micros kube_refresh_us = 10 * kMicrosPerSecond;  // PodResources has a global rate limit
  Micros series_ttl_us = 3600 * kMicrosPerSecond;  // drop series of containers gone this long
  bool kubelet_socket_configured = true;
  // Guardrails (guardrails/detect.h): what is detected, thresholds and tolerance windows.
  guardrails::Policy policy = guardrails::DefaultPolicy();
};

// One rendering of the exposition.
struct Rendered {
  std::string text;
  Micros at_us = 0;         // wall time of the cycle it shows
  std::uint64_t cycle = 0;  // which cycle (wall time can repeat after a step back)
};

class Collector {
 public:
  // Sources and the clock are owned by the caller and must outlive the collector. `kubelet`
  // and `runtime` may be null (no Kubernetes on this node). The clock's wall part stamps the
  // exposition; its monotonic part times ages (kube refresh, series TTL, health), so a wall
  // step neither drops series nor fakes an outage. Metered lengths come from the GPU source's
  // intervals (monotonic too); a wall step it reports is counted in
  // gpuledger_agent_clock_jumps_total.
  // `kernel_time` (may be null): the in-process tracers' files, which give a process its own
  // kernel time each cycle (sources/kerneltime/kernel_time_reader.h).
  Collector(CollectorOptions options, sources::GpuSource& gpus, procfs::ProcSource& procs,
            kubelet::PodResourcesClient* kubelet, cri::RuntimeClient* runtime, const Clock& clock,
            kerneltime::KernelTimeReader* kernel_time = nullptr);

  void Cycle();

  // The exposition of the latest cycle (rendered now if no scrape rendered it yet).
  std::shared_ptr<const Rendered> Exposition() const;
  // The last cycle finished within `max_age_us`.
  bool Healthy(Micros max_age_us) const;

 private:
  // Totals are exact integers (design section 2); Render turns each into one correctly
  // rounded float64 of the base unit that the server turns back (common/counter_units.h).
  struct DeviceSeries {
    std::string model, parent_uuid, mig_profile, sharing;
    std::string layout;  // a physical GPU's DescribeLayout; "" for a MIG instance
    GpuMicros metered_us = 0, busy_us = 0, idle_us = 0, unattributed_us = 0;
    MilliJoules energy_mj = 0;
    unsigned __int128 unattributed_memory_byte_us = 0;
    Bytes memory_used_bytes = 0, memory_total_bytes = 0;
    MilliWatts power_mw = 0;
    Micros last_seen_us = 0;
  };
  struct ContainerKey {
    ConsumerRef ref;
    std::string gpu;
    auto operator<=>(const ContainerKey&) const = default;
  };
  struct ContainerSeries {
    // Share of the physical GPU x time in ppd-µs: exposed as whole GPU-µs (the floor of the
    // exact total, so deltas telescope and nothing drifts).
    unsigned __int128 allocated_ppd_us = 0;
    GpuMicros compute_us = 0;
    unsigned __int128 memory_byte_us = 0;  // exposed as whole KiB-s (floor of the exact total)
    MilliJoules energy_mj = 0;
    Activity activity;  // GPU-µs of SM/tensor/DRAM activity (exact)
    Bytes memory_used_bytes = 0;
    std::string share_source;  // the grant's declared share's origin, as of the last cycle
    // How the figures were obtained over every cycle of the current wall-clock hour `hour`
    // (the worst quality, the union of rules): attribution_info's *_source labels.
    std::int64_t hour = -1;
    Quality compute_quality = Quality::kNone, memory_quality = Quality::kNone,
            activity_quality = Quality::kNone;
    std::string compute_rule, activity_rule;
    prometheus::HistogramData compute_share, memory_usage;
    Micros last_seen_us = 0;
  };
  // The most memory a (container, GPU) held at any cycle of the last two UTC hours it was seen
  // in (gpuledger_container_memory_{,previous_hour_}peak_bytes). Apart from ContainerSeries,
  // whose TTL is monotonic and may outlast or cut short the hours: an entry lives while its
  // container was seen in the agent's current or previous hour.
  struct HourPeaks {
    Micros hour_us = -1;  // the last hour it was seen in, and its peak
    Bytes peak_bytes = 0;
    Micros earlier_hour_us = -1;  // the hour seen in before that one, and its peak
    Bytes earlier_peak_bytes = 0;
    // The peak of hour `h`, if the container was seen in it.
    std::optional<Bytes> PeakOf(Micros h) const {
      if (h == hour_us) return peak_bytes;
      if (h == earlier_hour_us) return earlier_peak_bytes;
      return std::nullopt;
    }
  };

  // Everything /metrics shows. Guarded by mu_.
  struct Counters {
    std::map<std::string, DeviceSeries> devices;
    std::map<ContainerKey, ContainerSeries> containers;
    std::map<ContainerKey, HourPeaks> peaks;
    std::map<std::pair<std::string, std::string>, double> source_errors;  // (source, code)
    std::map<std::string, bool> source_up;
    prometheus::HistogramData cycle_seconds;
    JoinStats join_totals;
    std::optional<kerneltime::ReaderStats> kernel_time;  // when the reader is on
    // Open findings and those resolved within series_ttl_us; opened since start, per kind.
    std::vector<Finding> findings;
    std::map<FindingKind, std::int64_t> findings_opened;
    std::int64_t clock_jumps = 0;
    std::uint64_t cycles = 0;
    Micros at_us = 0;       // wall time of the last cycle
    Micros at_mono_us = 0;  // monotonic time of the last cycle
    // Start of the UTC hour, by the wall clock, that holds the last cycle's interval (one that
    // ends on the hour closes the hour before): the hour the peaks' "current" means; -1 before
    // the first cycle.
    Micros hour_us = -1;
    Micros started_us = 0;  // when this agent started: its counters began at zero then
  };

  // `now_mono` is the monotonic time of the cycle.
  void RefreshKube(Micros now_mono, bool force);
  // `peak_hour_us` is Counters::hour_us of this cycle.
  void Account(const std::vector<DeviceUsage>& usage, const sources::GpuReading& reading,
               Micros now_mono, std::int64_t wall_hour, Micros peak_hour_us);
  void CountFault(const std::string& source, const std::string& code);
  void SetSourceUp(const std::string& source, bool up);
  static std::string Render(const Counters& c, const std::string& node);
  // Render's parts: each GPU's series, each container's, the findings, the agent's own.
  static void RenderDevices(prometheus::ExpositionWriter& w, const Counters& c,
                            const std::string& node);
  static void RenderContainers(prometheus::ExpositionWriter& w, const Counters& c);
  static void RenderFindings(prometheus::ExpositionWriter& w, const Counters& c);
  static void RenderAgent(prometheus::ExpositionWriter& w, const Counters& c);

  CollectorOptions options_;
  sources::GpuSource& gpus_;
  procfs::ProcSource& procs_;
  kubelet::PodResourcesClient* kubelet_;
  cri::RuntimeClient* runtime_;
  const Clock& clock_;
  kerneltime::KernelTimeReader* kernel_time_;

  KubeView kube_;
  guardrails::FindingTracker findings_;
  std::optional<Micros> kube_refreshed_mono_us_;
  // A cycle's fault counts and source states, applied with its results (collector thread).
  std::vector<std::pair<std::string, std::string>> pending_faults_;
  std::map<std::string, bool> pending_up_;

  mutable std::mutex mu_;
  Counters counters_;                                 // guarded by mu_
  mutable std::shared_ptr<const Rendered> rendered_;  // guarded by mu_
  mutable std::mutex render_mu_;                      // one rendering at a time
};

}  // namespace gpuledger::agent
