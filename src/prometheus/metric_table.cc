#include "prometheus/metric_table.h"

#include <array>

namespace gpuledger::prometheus {
namespace {

constexpr std::array kTable{
    // Agent: devices.
    kDeviceInfo,
    kDeviceMeteredSecondsTotal,
    kDeviceBusySecondsTotal,
    kDeviceIdleSecondsTotal,
    kDeviceUnattributedSecondsTotal,
    kDeviceEnergyJoulesTotal,
    kDeviceUnattributedMemoryByteSecondsTotal,
    kDeviceMemoryUsedBytes,
    kDeviceMemoryTotalBytes,
    kDevicePowerWatts,
    // Agent: containers.
    kContainerAllocatedGpuSecondsTotal,
    kContainerComputeGpuSecondsTotal,
    kContainerMemoryByteSecondsTotal,
    kContainerEnergyJoulesTotal,
    kContainerSmActiveGpuSecondsTotal,
    kContainerSmOccupancyGpuSecondsTotal,
    kContainerTensorActiveGpuSecondsTotal,
    kContainerDramActiveGpuSecondsTotal,
    kContainerMemoryUsedBytes,
    kContainerMemoryPeakBytes,
    kContainerMemoryPreviousHourPeakBytes,
    kContainerAttributionInfo,
    kContainerComputeShare,
    kContainerMemoryUsageBytes,
    // Agent: findings.
    kFinding,
    kFindingEvidenceInfo,
    kFindingFirstSeenTimestampSeconds,
    kFindingLastSeenTimestampSeconds,
    kFindingResolvedTimestampSeconds,
    kFindingsTotal,
    // Agent: itself.
    kAgentCycleDurationSeconds,
    kAgentSourceUp,
    kAgentSourceErrorsTotal,
    kAgentUnresolvedProcessesTotal,
    kAgentKernelTimeFilesTotal,
    kAgentClockJumpsTotal,
    kAgentStartTimeSeconds,
    kAgentHourStartSeconds,
    kAgentLastCycleTimestampSeconds,
    kAgentHttpConnectionsTotal,
    kAgentHttpConnectionsEvictedTotal,
    kAgentHttpRequestsTimedOutTotal,
    kAgentHttpRequestsRefusedTotal,
    // Server.
    kServerRequestsTotal,
    kServerLedgerUp,
    kServerLedgerEndTimestampSeconds,
    kServerReportSnapshotsTotal,
    kServerHourStartTimestampSeconds,
    kServerHourCost,
    kServerHourIdleCost,
    kServerHourDeviceCost,
    kServerHourTokens,
    kServerHourTokenCostPerMillion,
    kServerHttpConnectionsTotal,
    kServerHttpConnectionsEvictedTotal,
    kServerHttpRequestsTimedOutTotal,
    kServerHttpRequestsRefusedTotal,
    kServerScrapeErrorsTotal,
    kServerScrapeUp,
    kServerScrapeRoundsTotal,
    kServerIngestSkippedSamplesTotal,
    kServerEventsTotal,
    // Webhook.
    kWebhookRequestsTotal,
    kWebhookFindingsTotal,
};

}  // namespace

std::span<const MetricDef> MetricTable() { return kTable; }

std::vector<std::string> SplitNames(std::string_view list) {
  std::vector<std::string> out;
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    std::string_view name = list.substr(0, comma);
    while (name.starts_with(' ')) name.remove_prefix(1);
    out.emplace_back(name);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
  }
  return out;
}

}  // namespace gpuledger::prometheus
