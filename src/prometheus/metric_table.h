#pragma once
// Every Prometheus family gpuledger exports, once: its name, type, labels, help text and the
// process that carries it. The code that renders an exposition names a family only through
// these constants (ExpositionWriter::Family(const MetricDef&), samples by `def.name`), so the
// reference in docs/metrics.md (`gpuledger metrics --format markdown`) is the exported truth;
// metric_table_test (tests/integration) renders the real expositions and checks them against
// MetricTable().
//
// Fields:
//   name      the family name; counters carry their "_total" suffix (ExpositionWriter's
//             convention); a histogram's series add _bucket, _sum and _count
//   type      as in "# TYPE"
//   labels    the label names, comma-separated, in the order the samples carry them ("" for
//             none); for a histogram the labels besides `le`
//   help      the "# HELP" text
//   exporter  whose /metrics carries it: "agent" (the node agent), "server" (the server's API
//             listener), or "server, webhook": the admission webhook's counters, served on the
//             webhook's own HTTPS listener and appended to the server's /metrics as well (the
//             webhook runs inside `gpuledger server --webhook`)
//
// Adding a family: a constant here, an entry in MetricTable() (metric_table.cc), the rendering
// code, then regenerate docs/metrics.md. Plain constants: thread-safe.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "prometheus/exposition_writer.h"

namespace gpuledger::prometheus {

struct MetricDef {
  std::string_view name;
  MetricType type = MetricType::kUntyped;
  std::string_view labels;
  std::string_view help;
  std::string_view exporter;
};

inline constexpr std::string_view kExporterAgent = "agent";
inline constexpr std::string_view kExporterServer = "server";
inline constexpr std::string_view kExporterServerWebhook = "server, webhook";

// Labels of every per-container series.
inline constexpr std::string_view kContainerLabels = "namespace,pod,pod_uid,container,gpu_uuid";

// --- Agent: devices -------------------------------------------------------------------------
inline constexpr MetricDef kDeviceInfo{
    "gpuledger_device_info", MetricType::kGauge,
    "gpu_uuid,gpu_model,node,parent_uuid,mig_profile,sharing_mode,layout",
    "A GPU or MIG instance on this node (value 1). layout, on a GPU: its MIG instances' "
    "profiles, most compute slices first, or N replicas (time-slicing, MPS).",
    kExporterAgent};
inline constexpr MetricDef kDeviceMeteredSecondsTotal{
    "gpuledger_device_metered_seconds_total", MetricType::kCounter, "gpu_uuid",
    "Seconds the agent measured this physical GPU.", kExporterAgent};
inline constexpr MetricDef kDeviceBusySecondsTotal{
    "gpuledger_device_busy_seconds_total", MetricType::kCounter, "gpu_uuid",
    "Seconds any kernel ran on this physical GPU.", kExporterAgent};
inline constexpr MetricDef kDeviceIdleSecondsTotal{
    "gpuledger_device_idle_seconds_total", MetricType::kCounter, "gpu_uuid",
    "Metered seconds this physical GPU was not busy.", kExporterAgent};
inline constexpr MetricDef kDeviceUnattributedSecondsTotal{
    "gpuledger_device_unattributed_seconds_total", MetricType::kCounter, "gpu_uuid",
    "Busy seconds no known process explains.", kExporterAgent};
inline constexpr MetricDef kDeviceEnergyJoulesTotal{
    "gpuledger_device_energy_joules_total", MetricType::kCounter, "gpu_uuid",
    "Energy this physical GPU used while metered.", kExporterAgent};
inline constexpr MetricDef kDeviceUnattributedMemoryByteSecondsTotal{
    "gpuledger_device_unattributed_memory_byte_seconds_total", MetricType::kCounter, "gpu_uuid",
    "GPU memory in use that no known process explains, integrated over time.", kExporterAgent};
inline constexpr MetricDef kDeviceMemoryUsedBytes{"gpuledger_device_memory_used_bytes",
                                                  MetricType::kGauge, "gpu_uuid",
                                                  "GPU memory in use.", kExporterAgent};
inline constexpr MetricDef kDeviceMemoryTotalBytes{"gpuledger_device_memory_total_bytes",
                                                   MetricType::kGauge, "gpu_uuid",
                                                   "GPU memory in all.", kExporterAgent};
inline constexpr MetricDef kDevicePowerWatts{"gpuledger_device_power_watts", MetricType::kGauge,
                                             "gpu_uuid", "GPU power draw at the last cycle.",
                                             kExporterAgent};

// --- Agent: containers ----------------------------------------------------------------------
inline constexpr MetricDef kContainerAllocatedGpuSecondsTotal{
    "gpuledger_container_allocated_gpu_seconds_total", MetricType::kCounter, kContainerLabels,
    "GPU-seconds of the physical GPU granted to the container.", kExporterAgent};
inline constexpr MetricDef kContainerComputeGpuSecondsTotal{
    "gpuledger_container_compute_gpu_seconds_total", MetricType::kCounter, kContainerLabels,
    "GPU-seconds of the physical GPU the container's kernels used.", kExporterAgent};
inline constexpr MetricDef kContainerMemoryByteSecondsTotal{
    "gpuledger_container_memory_byte_seconds_total", MetricType::kCounter, kContainerLabels,
    "GPU memory held by the container, integrated over time (whole KiB-seconds).", kExporterAgent};
inline constexpr MetricDef kContainerEnergyJoulesTotal{
    "gpuledger_container_energy_joules_total", MetricType::kCounter, kContainerLabels,
    "The container's share of the GPU's energy (split by busy time).", kExporterAgent};
inline constexpr MetricDef kContainerSmActiveGpuSecondsTotal{
    "gpuledger_container_sm_active_gpu_seconds_total", MetricType::kCounter, kContainerLabels,
    "GPU-seconds of the physical GPU's SMs the container kept active (a warp resident), as its "
    "activity source measured it (attribution_info).",
    kExporterAgent};
inline constexpr MetricDef kContainerSmOccupancyGpuSecondsTotal{
    "gpuledger_container_sm_occupancy_gpu_seconds_total", MetricType::kCounter, kContainerLabels,
    "GPU-seconds of SM occupancy (resident warps over the SMs' maximum).", kExporterAgent};
inline constexpr MetricDef kContainerTensorActiveGpuSecondsTotal{
    "gpuledger_container_tensor_active_gpu_seconds_total", MetricType::kCounter, kContainerLabels,
    "GPU-seconds any tensor pipe of the physical GPU was busy for the container.", kExporterAgent};
inline constexpr MetricDef kContainerDramActiveGpuSecondsTotal{
    "gpuledger_container_dram_active_gpu_seconds_total", MetricType::kCounter, kContainerLabels,
    "GPU-seconds of DRAM bandwidth (used over peak) the container drew.", kExporterAgent};
inline constexpr MetricDef kContainerMemoryUsedBytes{
    "gpuledger_container_memory_used_bytes", MetricType::kGauge, kContainerLabels,
    "GPU memory the container held in the last cycle.", kExporterAgent};
inline constexpr MetricDef kContainerMemoryPeakBytes{
    "gpuledger_container_memory_peak_bytes", MetricType::kGauge, kContainerLabels,
    "The most GPU memory the container held at any cycle of the agent's current UTC hour "
    "(gpuledger_agent_hour_start_seconds).",
    kExporterAgent};
inline constexpr MetricDef kContainerMemoryPreviousHourPeakBytes{
    "gpuledger_container_memory_previous_hour_peak_bytes", MetricType::kGauge, kContainerLabels,
    "The most GPU memory the container held at any cycle of the UTC hour before the agent's "
    "current one (while it is known).",
    kExporterAgent};
inline constexpr MetricDef kContainerAttributionInfo{
    "gpuledger_container_attribution_info", MetricType::kGauge,
    "namespace,pod,pod_uid,container,gpu_uuid,compute_source,compute_error_band,memory_source,"
    "activity_source,share_source",
    "How the container's figures were obtained (value 1).", kExporterAgent};
inline constexpr MetricDef kContainerComputeShare{
    "gpuledger_container_compute_share", MetricType::kHistogram, kContainerLabels,
    "Fraction of the physical GPU the container used, observed once per cycle.", kExporterAgent};
inline constexpr MetricDef kContainerMemoryUsageBytes{
    "gpuledger_container_memory_usage_bytes", MetricType::kHistogram, kContainerLabels,
    "GPU memory the container held, observed once per cycle.", kExporterAgent};

// --- Agent: guardrail findings (docs/guardrails.md) -----------------------------------------
inline constexpr MetricDef kFinding{
    "gpuledger_finding", MetricType::kGauge, "kind,severity,namespace,pod,container,gpu_uuid",
    "An open guardrail finding (value 1; docs/guardrails.md).", kExporterAgent};
inline constexpr MetricDef kFindingEvidenceInfo{
    "gpuledger_finding_evidence_info", MetricType::kGauge,
    "kind,severity,namespace,pod,pod_uid,container,gpu_uuid,evidence",
    "What a finding rests on: PIDs, the grant, the environment, the figure against the limit "
    "(value 1).",
    kExporterAgent};
inline constexpr MetricDef kFindingFirstSeenTimestampSeconds{
    "gpuledger_finding_first_seen_timestamp_seconds", MetricType::kGauge,
    "kind,namespace,pod,container,gpu_uuid", "When the finding's condition began.", kExporterAgent};
inline constexpr MetricDef kFindingLastSeenTimestampSeconds{
    "gpuledger_finding_last_seen_timestamp_seconds", MetricType::kGauge,
    "kind,namespace,pod,container,gpu_uuid", "When the condition was last seen.", kExporterAgent};
inline constexpr MetricDef kFindingResolvedTimestampSeconds{
    "gpuledger_finding_resolved_timestamp_seconds", MetricType::kGauge,
    "kind,namespace,pod,container,gpu_uuid",
    "When a resolved finding's condition ended (its last sight).", kExporterAgent};
inline constexpr MetricDef kFindingsTotal{"gpuledger_findings_total", MetricType::kCounter, "kind",
                                          "Findings opened since the agent started, by kind.",
                                          kExporterAgent};

// --- Agent: itself --------------------------------------------------------------------------
inline constexpr MetricDef kAgentCycleDurationSeconds{
    "gpuledger_agent_cycle_duration_seconds", MetricType::kHistogram, "",
    "Time one collection cycle took.", kExporterAgent};
inline constexpr MetricDef kAgentSourceUp{"gpuledger_agent_source_up", MetricType::kGauge, "source",
                                          "Whether the source answered in the last cycle.",
                                          kExporterAgent};
inline constexpr MetricDef kAgentSourceErrorsTotal{
    "gpuledger_agent_source_errors_total", MetricType::kCounter, "source,code",
    "Errors from a source, by code.", kExporterAgent};
inline constexpr MetricDef kAgentUnresolvedProcessesTotal{
    "gpuledger_agent_unresolved_processes_total", MetricType::kCounter, "reason",
    "GPU processes not tied to a known container, by reason.", kExporterAgent};
inline constexpr MetricDef kAgentKernelTimeFilesTotal{
    "gpuledger_agent_kernel_time_files_total", MetricType::kCounter, "result",
    "Kernel-time files of in-process tracers, by what the agent made of them.", kExporterAgent};
inline constexpr MetricDef kAgentClockJumpsTotal{
    "gpuledger_agent_clock_jumps_total", MetricType::kCounter, "",
    "Steps of the wall clock beyond 1 s (NTP step, VM resume). Metered time is monotonic: a step "
    "is counted here, never metered.",
    kExporterAgent};
inline constexpr MetricDef kAgentStartTimeSeconds{
    "gpuledger_agent_start_time_seconds", MetricType::kGauge, "",
    "When this agent started (its counters began).", kExporterAgent};
inline constexpr MetricDef kAgentHourStartSeconds{
    "gpuledger_agent_hour_start_seconds", MetricType::kGauge, "",
    "Start of the agent's current UTC hour: the hour the memory peaks refer to.", kExporterAgent};
inline constexpr MetricDef kAgentLastCycleTimestampSeconds{
    "gpuledger_agent_last_cycle_timestamp_seconds", MetricType::kGauge, "",
    "When the last cycle ended.", kExporterAgent};

// --- The HTTP listener's counters (RenderHttpStats), the agent's and the server's -----------
inline constexpr std::string_view kHttpConnectionsHelp =
    "Connections accepted by the HTTP listener.";
inline constexpr std::string_view kHttpConnectionsEvictedHelp =
    "Connections closed at the connection cap to make room for a newer one.";
inline constexpr std::string_view kHttpRequestsTimedOutHelp =
    "Requests not received whole within the request timeout (slow or stalled clients).";
inline constexpr std::string_view kHttpRequestsRefusedHelp =
    "Requests refused as malformed or over a size limit.";

inline constexpr MetricDef kAgentHttpConnectionsTotal{"gpuledger_agent_http_connections_total",
                                                      MetricType::kCounter, "",
                                                      kHttpConnectionsHelp, kExporterAgent};
inline constexpr MetricDef kAgentHttpConnectionsEvictedTotal{
    "gpuledger_agent_http_connections_evicted_total", MetricType::kCounter, "",
    kHttpConnectionsEvictedHelp, kExporterAgent};
inline constexpr MetricDef kAgentHttpRequestsTimedOutTotal{
    "gpuledger_agent_http_requests_timed_out_total", MetricType::kCounter, "",
    kHttpRequestsTimedOutHelp, kExporterAgent};
inline constexpr MetricDef kAgentHttpRequestsRefusedTotal{
    "gpuledger_agent_http_requests_refused_total", MetricType::kCounter, "",
    kHttpRequestsRefusedHelp, kExporterAgent};

inline constexpr MetricDef kServerHttpConnectionsTotal{"gpuledger_server_http_connections_total",
                                                       MetricType::kCounter, "",
                                                       kHttpConnectionsHelp, kExporterServer};
inline constexpr MetricDef kServerHttpConnectionsEvictedTotal{
    "gpuledger_server_http_connections_evicted_total", MetricType::kCounter, "",
    kHttpConnectionsEvictedHelp, kExporterServer};
inline constexpr MetricDef kServerHttpRequestsTimedOutTotal{
    "gpuledger_server_http_requests_timed_out_total", MetricType::kCounter, "",
    kHttpRequestsTimedOutHelp, kExporterServer};
inline constexpr MetricDef kServerHttpRequestsRefusedTotal{
    "gpuledger_server_http_requests_refused_total", MetricType::kCounter, "",
    kHttpRequestsRefusedHelp, kExporterServer};

// The four families of one HTTP listener, in the order RenderHttpStats writes them.
struct HttpStatsDefs {
  MetricDef connections;
  MetricDef connections_evicted;
  MetricDef requests_timed_out;
  MetricDef requests_refused;
};
inline constexpr HttpStatsDefs kAgentHttpStats{
    kAgentHttpConnectionsTotal, kAgentHttpConnectionsEvictedTotal, kAgentHttpRequestsTimedOutTotal,
    kAgentHttpRequestsRefusedTotal};
inline constexpr HttpStatsDefs kServerHttpStats{
    kServerHttpConnectionsTotal, kServerHttpConnectionsEvictedTotal,
    kServerHttpRequestsTimedOutTotal, kServerHttpRequestsRefusedTotal};

// --- Server ---------------------------------------------------------------------------------
inline constexpr MetricDef kServerRequestsTotal{
    "gpuledger_server_requests_total", MetricType::kCounter, "path,code",
    "API requests by path and status.", kExporterServer};
inline constexpr MetricDef kServerLedgerUp{"gpuledger_server_ledger_up", MetricType::kGauge, "",
                                           "Whether the ledger could be read.", kExporterServer};
inline constexpr MetricDef kServerLedgerEndTimestampSeconds{
    "gpuledger_server_ledger_end_timestamp_seconds", MetricType::kGauge, "",
    "End of the last hour in the ledger.", kExporterServer};
inline constexpr MetricDef kServerReportSnapshotsTotal{
    "gpuledger_server_report_snapshots_total", MetricType::kCounter, "result",
    "Reports and allocations by where their rows came from: the kept snapshot (hit), the kept "
    "snapshot after loading it whole (load) or after reading again the days written since "
    "(refresh), a window outside it read alone (direct), or the days the ledger keeps summed, "
    "read while the kept snapshot loads (kept_days) or as the server holds them in memory "
    "(held_days).",
    kExporterServer};
// The ledger's last complete hour, priced (server/hour_cost.h): what dashboards and alerts on
// spend read; the exact bill is the API's.
inline constexpr MetricDef kServerHourStartTimestampSeconds{
    "gpuledger_server_hour_start_timestamp_seconds", MetricType::kGauge, "",
    "Start of the ledger's last complete UTC hour, the one the gpuledger_server_hour_* cost "
    "series describe. With --token-file they are shown only to a scrape that sends the token "
    "(the chargeback the token protects; the ServiceMonitor sends it).",
    kExporterServer};
inline constexpr MetricDef kServerHourCost{
    "gpuledger_server_hour_cost", MetricType::kGauge, "namespace,currency",
    "What each namespace's pods cost in that hour: allocation policy, idle kept apart (in the "
    "ledger's currency).",
    kExporterServer};
inline constexpr MetricDef kServerHourIdleCost{
    "gpuledger_server_hour_idle_cost", MetricType::kGauge, "currency",
    "What that hour's GPU time nobody was allocated cost.", kExporterServer};
inline constexpr MetricDef kServerHourDeviceCost{
    "gpuledger_server_hour_device_cost", MetricType::kGauge, "currency",
    "What that hour's GPUs cost in all: the sum of their prices.", kExporterServer};
// The same hour's tokens and what they cost (issue 63, docs/tokens.md): what a panel and an
// alert on $/1M tokens read.
inline constexpr MetricDef kServerHourTokens{
    "gpuledger_server_hour_tokens", MetricType::kGauge, "namespace,model,kind",
    "Tokens the inference engines of a namespace served in that hour, by model; kind input or "
    "output.",
    kExporterServer};
inline constexpr MetricDef kServerHourTokenCostPerMillion{
    "gpuledger_server_hour_token_cost_per_million", MetricType::kGauge,
    "namespace,model,kind,currency",
    "What a million of those tokens cost: the serving pods' GPU cost in that hour (allocation "
    "policy, idle kept apart) over their tokens; kind input, output or blended (in the ledger's "
    "currency).",
    kExporterServer};
inline constexpr MetricDef kServerScrapeErrorsTotal{
    "gpuledger_server_scrape_errors_total", MetricType::kCounter, "target",
    "Failed scrapes of an agent or an inference engine, by target.", kExporterServer};
inline constexpr MetricDef kServerScrapeUp{
    "gpuledger_server_scrape_up", MetricType::kGauge, "target",
    "Whether the last scrape of the target succeeded.", kExporterServer};
inline constexpr MetricDef kServerScrapeRoundsTotal{"gpuledger_server_scrape_rounds_total",
                                                    MetricType::kCounter, "", "Scrape rounds run.",
                                                    kExporterServer};
// Written by the scrape source and by the Prometheus source (one of them per server).
inline constexpr MetricDef kServerIngestSkippedSamplesTotal{
    "gpuledger_server_ingest_skipped_samples_total", MetricType::kCounter, "",
    "Samples skipped as NaN, infinite or negative (the last good value is kept).", kExporterServer};
inline constexpr MetricDef kServerEventsTotal{
    "gpuledger_server_events_total", MetricType::kCounter, "result",
    "Kubernetes Events for guardrail findings, by result: created; exists (announced before, "
    "e.g. by a previous run); error (not created, retried later); deferred (held back by the "
    "rate limit until a later call).",
    kExporterServer};

// --- Webhook --------------------------------------------------------------------------------
inline constexpr MetricDef kWebhookRequestsTotal{
    "gpuledger_webhook_requests_total", MetricType::kCounter, "verdict",
    "AdmissionReviews answered, by verdict.", kExporterServerWebhook};
inline constexpr MetricDef kWebhookFindingsTotal{
    "gpuledger_webhook_findings_total", MetricType::kCounter, "kind",
    "Pods an admission kind fired on (neither off nor exempt), at any action.",
    kExporterServerWebhook};

// Every family above, once, in reference order: agent devices, containers, findings, the
// agent itself; the server; the webhook.
std::span<const MetricDef> MetricTable();

// The names of a comma-separated list (a def's labels or exporter), in order; none for "".
std::vector<std::string> SplitNames(std::string_view list);

}  // namespace gpuledger::prometheus
