#pragma once
// The pure parser of dcgm-exporter's /metrics (docs/dcgm.md): Prometheus text in, one DcgmUnit
// per physical GPU and per MIG instance out, every value normalised to one unit set (0..1
// fractions, bytes, watts) whichever field set the exporter speaks: the classic names and units
// (DCGM_FI_DEV_GPU_UTIL in percent, DCGM_FI_DEV_FB_USED in MiB, DCGM_FI_PROF_SM_ACTIVE, label
// DCGM_FI_DRIVER_VERSION), dcgm-exporter 4.9's renamed fields (DCGM_FI_DEV_GPU_UTIL_RATIO,
// DCGM_FI_DEV_FB_USED_BYTES, DCGM_FI_PROF_SM_UTIL_RATIO, label DCGM_FI_SYSTEM_DRIVER_VERSION, ...)
// and the 1.x-compatibility names (dcgm_gpu_utilization, label uuid).
//
// A third-party body is data: a malformed line never fails the scrape. It is skipped and counted,
// with its line number and the reason: a line the Prometheus text parser rejects, or a sample of
// a field this parser uses that cannot be used (no UUID label, NaN or infinite, negative, DCGM's
// blank sentinels for "not supported / not sampled yet", a ratio above 1, a percentage above 100,
// a GPU_I_ID that is not an instance id, or a second series for the same unit and field with a
// different value). Series of fields the parser does not use are ignored, labelled or not.
// The whole scrape fails (kInvalidArgument) only when it yields no unit at all: an HTML error
// page, another exporter's metrics, an empty body.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/ids.h"
#include "common/result.h"
#include "common/units.h"

namespace gpuledger::sources::dcgm {

// One GPU as dcgm-exporter reports it: a physical GPU, or (gpu_instance_id set) one MIG GPU
// instance of the physical GPU `gpu_uuid`. dcgm-exporter labels MIG series with the parent's
// UUID and the instance's GPU_I_ID / GPU_I_PROFILE; it has no MIG-... UUID.
struct DcgmUnit {
  GpuUuid gpu_uuid;                    // label UUID (1.x compatibility: uuid)
  std::optional<int> gpu_index;        // label gpu
  std::optional<int> gpu_instance_id;  // label GPU_I_ID; set: a MIG instance
  std::string gpu_instance_profile;    // label GPU_I_PROFILE, "3g.40gb" (DCGM's spelling)
  std::string driver_version;          // label DCGM_FI_DRIVER_VERSION / _SYSTEM_DRIVER_VERSION

  // Gauges as dcgm-exporter last sampled them; unset when the scrape has no usable series.
  // Fractions are 0..1 of the unit (a MIG instance's are relative to the instance).
  std::optional<double> sm_active;         // PROF_SM_ACTIVE / PROF_SM_UTIL_RATIO
  std::optional<double> sm_occupancy;      // PROF_SM_OCCUPANCY / PROF_SM_OCCUPANCY_RATIO
  std::optional<double> tensor_active;     // PROF_PIPE_TENSOR_ACTIVE / PROF_TENSOR_UTIL_RATIO
  std::optional<double> dram_active;       // PROF_DRAM_ACTIVE / PROF_DRAM_UTIL_RATIO
  std::optional<double> gr_engine_active;  // PROF_GR_ENGINE_ACTIVE / PROF_GR_ENGINE_UTIL_RATIO
  std::optional<double> gpu_util;          // DEV_GPU_UTIL (%) / DEV_GPU_UTIL_RATIO
  std::optional<Bytes> fb_used_bytes;      // DEV_FB_USED (MiB) / DEV_FB_USED_BYTES
  std::optional<double> power_watts;       // DEV_POWER_USAGE / DEV_BOARD_POWER_WATTS

  bool is_mig() const { return gpu_instance_id.has_value(); }
  friend bool operator==(const DcgmUnit&, const DcgmUnit&) = default;
};

struct DcgmBadLine {
  std::size_t line = 0;  // 1-based line number in the body
  std::string reason;    // "no UUID label", "NaN", "ratio 1.7 above 1", ...
  friend bool operator==(const DcgmBadLine&, const DcgmBadLine&) = default;
};

// Which spellings the body used (both may be set: a custom counters file can mix them).
struct DcgmFieldSets {
  bool classic = false;  // names and units before dcgm-exporter 4.9 (and 1.x compatibility)
  bool renamed = false;  // dcgm-exporter 4.9+ names (DCGM 4.7 field names, base units)
  friend bool operator==(const DcgmFieldSets&, const DcgmFieldSets&) = default;
};

inline constexpr std::size_t kMaxBadLinesKept = 32;

struct DcgmScrape {
  std::vector<DcgmUnit> units;         // physical GPUs and MIG instances, in first-seen order
  std::int64_t bad_line_count = 0;     // every skipped line
  std::vector<DcgmBadLine> bad_lines;  // the first kMaxBadLinesKept of them
  DcgmFieldSets field_sets;

  // The physical GPU `uuid` (gpu_instance_id unset) or its MIG instance `gpu_instance_id`.
  const DcgmUnit* Find(const GpuUuid& uuid, std::optional<int> gpu_instance_id = {}) const;
};

Result<DcgmScrape> ParseDcgmExporter(std::string_view text);

}  // namespace gpuledger::sources::dcgm
