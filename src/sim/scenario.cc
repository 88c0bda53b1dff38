#include "sim/scenario.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "common/time_util.h"
#include "cost/gpu_memory.h"
#include "io/yaml_document.h"
#include "sim/scenario_parser.h"
#include "sim/sim_util.h"

namespace gpuledger::sim {
namespace {

using scenario::Join;
using scenario::LoadSeries;
using scenario::Parser;
using scenario::SeriesUnit;
using scenario::StripMe;

// MIG profiles per GPU family (NVIDIA mig-parted config-default.yaml, via
// shared/data/mig/mig_profiles_by_gpu.csv). Models not listed accept any "<n>g.<m>gb".
struct MigFamily {
  std::vector<std::string_view> models;
  std::vector<std::string_view> profiles;
};

const std::vector<MigFamily>& MigFamilies() {
  static const auto* families = new std::vector<MigFamily>{
      {{"H100-80GB", "H100", "A100-80GB"},
       {"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}},
      {{"H200-141GB"}, {"1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"}},
      {{"A100-40GB"}, {"1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"}},
      {{"A30", "A30-24GB"}, {"1g.6gb", "2g.12gb", "4g.24gb"}},
  };
  return *families;
}

Bytes MigProfileMemory(std::string_view profile) {
  std::string p = StripMe(profile);
  auto dot = p.find('.');
  if (dot == std::string::npos) return 0;
  double gb = 0;
  auto r = std::from_chars(p.data() + dot + 1, p.data() + p.size(), gb);
  // No GPU holds 10 TB: a larger (or negative, or not finite) figure names no profile, and its
  // bytes would not fit an integer (the fuzzer's 1g.2222...2gb, CI 2026-12-07).
  constexpr double kMaxProfileGb = 10'000;
  if (r.ec != std::errc() || !(gb > 0 && gb <= kMaxProfileGb)) return 0;
  return static_cast<Bytes>(gb * 1e9);
}

ComputeProfile ParseCompute(Parser& p, const YAML::Node& c, const std::string& path,
                            std::uint64_t seed) {
  ComputeProfile out;
  if (!c.IsDefined() || c.IsNull()) return out;
  if (!p.IsMap(c, path)) return out;
  p.CheckKeys(c, path,
              {"profile", "duty", "period", "on", "mean_duty", "burst", "file", "column",
               "time_column", "scale", "where"});
  std::string kind = p.RequiredStr(c, "profile", path);
  if (p.failed()) return out;
  auto only = [&](std::initializer_list<std::string_view> keys) {
    std::vector<std::string_view> allowed{"profile"};
    allowed.insert(allowed.end(), keys);
    for (auto it = c.begin(); it != c.end(); ++it) {
      std::string k = it->first.Scalar();
      if (std::find(allowed.begin(), allowed.end(), k) == allowed.end())
        p.Fail(it->first, Parser::Sub(path, k),
               fmt::format("not a field of profile '{}' (expected: {})", kind, Join(allowed)));
    }
  };
  if (kind == "idle") {
    only({});
  } else if (kind == "constant") {
    only({"duty"});
    out.kind = ProfileKind::kConstant;
    if (!c["duty"].IsDefined()) p.Fail(c, path + ".duty", "required, missing");
    out.duty = p.Number(c["duty"], path + ".duty", 0, 1, 0);
  } else if (kind == "periodic") {
    only({"duty", "period", "on"});
    out.kind = ProfileKind::kPeriodic;
    out.duty = p.Number(c["duty"], path + ".duty", 0, 1, 1.0);
    out.period_us = p.Duration(c["period"], path + ".period", 0);
    out.on_us = p.Duration(c["on"], path + ".on", 0);
    if (!p.failed() && out.period_us <= 0) p.Fail(c, path + ".period", "required, expected > 0");
    if (!p.failed() && out.on_us > out.period_us)
      p.Fail(c["on"], path + ".on", "expected a duration no longer than period");
  } else if (kind == "bursty") {
    only({"mean_duty", "burst"});
    out.kind = ProfileKind::kBursty;
    if (!c["mean_duty"].IsDefined()) p.Fail(c, path + ".mean_duty", "required, missing");
    out.duty = p.Number(c["mean_duty"], path + ".mean_duty", 0, 1, 0);
    out.burst_us = p.Duration(c["burst"], path + ".burst", 5 * 60 * kMicrosPerSecond);
    if (!p.failed() && out.burst_us < kMicrosPerSecond)
      p.Fail(c["burst"], path + ".burst", "expected a duration of at least 1s");
    out.seed = seed;
  } else if (kind == "series") {
    only({"file", "column", "time_column", "scale", "where"});
    out.kind = ProfileKind::kSeries;
    out.series = LoadSeries(p, c, path, SeriesUnit::kPercent);
  } else {
    p.Fail(c["profile"], path + ".profile",
           fmt::format("expected one of idle, constant, periodic, bursty, series, got '{}'", kind));
  }
  return out;
}

EfficiencyProfile ParseEfficiency(Parser& p, const YAML::Node& e, const std::string& path) {
  EfficiencyProfile out;
  if (!e.IsDefined() || e.IsNull()) return out;
  if (!p.IsMap(e, path)) return out;
  p.CheckKeys(e, path, {"sm_active", "sm_occupancy", "tensor_active", "dram_active"});
  out.sm_active = p.Number(e["sm_active"], path + ".sm_active", 0, 1, out.sm_active);
  out.sm_occupancy = p.Number(e["sm_occupancy"], path + ".sm_occupancy", 0, 1, out.sm_occupancy);
  out.tensor_active =
      p.Number(e["tensor_active"], path + ".tensor_active", 0, 1, out.tensor_active);
  out.dram_active = p.Number(e["dram_active"], path + ".dram_active", 0, 1, out.dram_active);
  return out;
}

MemoryProfile ParseMemory(Parser& p, const YAML::Node& m, const std::string& path) {
  MemoryProfile out;
  if (!m.IsDefined() || m.IsNull()) return out;
  if (!p.IsMap(m, path)) return out;
  p.CheckKeys(m, path, {"bytes", "peak", "period", "series"});
  if (m["series"].IsDefined()) {
    if (m["bytes"].IsDefined() || m["peak"].IsDefined() || m["period"].IsDefined())
      p.Fail(m, path, "series replaces bytes, peak and period: give one or the other");
    else if (p.IsMap(m["series"], path + ".series")) {
      p.CheckKeys(m["series"], path + ".series",
                  {"file", "column", "time_column", "scale", "where"});
      out.series = LoadSeries(p, m["series"], path + ".series", SeriesUnit::kBytes);
    }
    return out;
  }
  out.bytes = p.Size(m["bytes"], path + ".bytes", 0);
  out.peak_bytes = p.Size(m["peak"], path + ".peak", 0);
  out.period_us = p.Duration(m["period"], path + ".period", 0);
  if (p.failed()) return out;
  if (out.peak_bytes != 0 && out.peak_bytes < out.bytes)
    p.Fail(m["peak"], path + ".peak", "expected a size no smaller than bytes");
  if (out.peak_bytes != 0 && out.period_us <= 0)
    p.Fail(m, path + ".period", "required with peak, expected > 0");
  return out;
}

// --- top level ------------------------------------------------------------------------------

void ParseNode(Parser& p, const YAML::Node& y, const std::string& path, NodeSpec& n,
               std::uint64_t seed, Micros duration) {
  if (!p.IsMap(y, path)) return;
  p.CheckKeys(
      y, path,
      {"name", "gpu_model", "gpus", "memory", "sharing", "replicas", "mig_layout", "total_slices",
       "pricing_class", "region", "labels", "dcgm", "fractional_layer", "host_processes"});
  n.name = p.RequiredStr(y, "name", path);
  n.gpu_model = p.RequiredStr(y, "gpu_model", path);
  n.gpus = static_cast<int>(p.Int(y["gpus"], path + ".gpus", 0, 64, 1));
  if (p.failed()) return;
  Bytes def_mem = DefaultGpuMemory(n.gpu_model);
  n.memory_per_gpu_bytes = p.Size(y["memory"], path + ".memory", def_mem);
  if (!p.failed() && n.memory_per_gpu_bytes <= 0)
    p.Fail(y, path + ".memory",
           fmt::format("required: '{}' is not a known GPU model, give its memory (e.g. 24GiB)",
                       n.gpu_model));
  std::string sharing = p.Str(y["sharing"], path + ".sharing", "exclusive");
  if (auto m = ParseSharingMode(sharing)) {
    n.sharing = *m;
  } else {
    p.Fail(y["sharing"], path + ".sharing",
           "expected one of exclusive, time-slicing, mps, mig, fractional, dra, got '" + sharing +
               "'");
  }
  n.replicas = static_cast<int>(p.Int(y["replicas"], path + ".replicas", 1, 16, 1));
  if (!p.failed() && n.replicas > 1 && n.sharing != SharingMode::kTimeSlicing &&
      n.sharing != SharingMode::kMps && n.sharing != SharingMode::kMig)
    p.Fail(y["replicas"], path + ".replicas",
           "replicas > 1 needs sharing time-slicing, mps or mig");
  n.total_slices = n.gpu_model.starts_with("A30") ? 4 : 7;
  n.total_slices =
      static_cast<int>(p.Int(y["total_slices"], path + ".total_slices", 1, 8, n.total_slices));
  auto layout = y["mig_layout"];
  if (layout.IsDefined() && !layout.IsNull() && p.IsList(layout, path + ".mig_layout")) {
    if (n.sharing != SharingMode::kMig)
      p.Fail(layout, path + ".mig_layout", "only valid with sharing: mig");
    const MigFamily* family = nullptr;
    for (auto& f : MigFamilies())
      if (std::find(f.models.begin(), f.models.end(), n.gpu_model) != f.models.end()) family = &f;
    int used = 0;
    for (std::size_t i = 0; i < layout.size(); ++i) {
      std::string ip = fmt::format("{}.mig_layout[{}]", path, i);
      std::string prof = p.Str(layout[i], ip);
      int slices = MigComputeSlices(prof);
      bool known = slices > 0 && MigProfileMemory(prof) > 0;
      if (known && family)
        known = std::find(family->profiles.begin(), family->profiles.end(), StripMe(prof)) !=
                family->profiles.end();
      if (!known) {
        p.Fail(
            layout[i], ip,
            fmt::format("unknown MIG profile '{}' for {} (expected one of: {})", prof, n.gpu_model,
                        family ? Join(family->profiles) : std::string("<n>g.<m>gb")));
        return;
      }
      used += slices;
      if (used > n.total_slices) {
        p.Fail(layout[i], ip,
               fmt::format("MIG layout needs {} compute slices so far, more than the {} of a {}",
                           used, n.total_slices, n.gpu_model));
        return;
      }
      n.mig_layout.push_back(prof);
    }
  }
  if (!p.failed() && n.sharing == SharingMode::kMig && n.mig_layout.empty())
    p.Fail(y, path + ".mig_layout", "required with sharing: mig (e.g. [3g.40gb, 2g.20gb])");
  n.pricing_class = p.Str(y["pricing_class"], path + ".pricing_class", "on-demand");
  n.region = p.Str(y["region"], path + ".region", "");
  n.labels = p.Labels(y["labels"], path + ".labels");
  n.has_dcgm = p.Bool(y["dcgm"], path + ".dcgm", false);
  if (y["fractional_layer"].IsDefined()) {
    n.fractional_layer = p.Str(y["fractional_layer"], path + ".fractional_layer");
    if (!p.failed() && n.fractional_layer != "gpu-milli" && n.fractional_layer != "hami" &&
        n.fractional_layer != "gpushare")
      p.Fail(
          y["fractional_layer"], path + ".fractional_layer",
          fmt::format("unknown '{}' (expected gpu-milli, hami or gpushare)", n.fractional_layer));
    if (!p.failed() && n.sharing != SharingMode::kFractional)
      p.Fail(y["fractional_layer"], path + ".fractional_layer", "only with sharing: fractional");
  }
  auto hp = y["host_processes"];
  if (hp.IsDefined() && !hp.IsNull() && p.IsList(hp, path + ".host_processes")) {
    for (std::size_t i = 0; i < hp.size() && !p.failed(); ++i) {
      std::string hpath = fmt::format("{}.host_processes[{}]", path, i);
      auto h = hp[i];
      if (!p.IsMap(h, hpath)) return;
      p.CheckKeys(h, hpath, {"name", "gpu", "compute", "efficiency", "memory", "start", "end"});
      HostProcessSpec spec;
      spec.name = p.RequiredStr(h, "name", hpath);
      spec.gpu = static_cast<int>(p.Int(h["gpu"], hpath + ".gpu", 0, std::max(0, n.gpus - 1), 0));
      spec.compute = ParseCompute(p, h["compute"], hpath + ".compute",
                                  HashOf(seed, "host", n.name, spec.name));
      spec.efficiency = ParseEfficiency(p, h["efficiency"], hpath + ".efficiency");
      spec.memory = ParseMemory(p, h["memory"], hpath + ".memory");
      spec.start_us = p.Duration(h["start"], hpath + ".start", 0);
      spec.end_us = std::min(p.Duration(h["end"], hpath + ".end", duration), duration);
      if (!p.failed() && spec.start_us >= spec.end_us)
        p.Fail(h, hpath + ".start", "expected start before end (and before the scenario ends)");
      n.host_processes.push_back(std::move(spec));
    }
  }
}

// A workload's share of a GPU: fraction or gpu_milli, MPS thread percentage, a DRA claim.
void ParseWorkloadShare(Parser& p, const YAML::Node& y, const std::string& path, WorkloadSpec& w) {
  if (y["fraction"].IsDefined() && y["gpu_milli"].IsDefined())
    p.Fail(y["gpu_milli"], path + ".gpu_milli", "give fraction or gpu_milli, not both");
  if (y["fraction"].IsDefined()) {
    double f = p.Number(y["fraction"], path + ".fraction", 0, 1, 0);
    if (!p.failed() && f <= 0) p.Fail(y["fraction"], path + ".fraction", "expected > 0");
    w.fraction_ppd = static_cast<SharePpd>(std::llround(f * static_cast<double>(kWholeGpu)));
  }
  if (y["gpu_milli"].IsDefined())
    w.fraction_ppd = p.Int(y["gpu_milli"], path + ".gpu_milli", 1, 1000, 1000) * (kWholeGpu / 1000);
  if (w.fraction_ppd && w.gpus != 1 && !p.failed())
    p.Fail(y["gpus"], path + ".gpus", "a fractional pod holds a share of one GPU: gpus must be 1");
  if (y["mps_active_thread_percentage"].IsDefined())
    w.mps_active_thread_percentage = static_cast<int>(p.Int(
        y["mps_active_thread_percentage"], path + ".mps_active_thread_percentage", 1, 100, 100));
  auto claim = y["dra_claim"];
  if (claim.IsDefined() && !claim.IsNull() && p.IsMap(claim, path + ".dra_claim")) {
    p.CheckKeys(claim, path + ".dra_claim", {"name", "shared"});
    w.dra_claim = p.RequiredStr(claim, "name", path + ".dra_claim");
    w.dra_shared = p.Bool(claim["shared"], path + ".dra_claim.shared", false);
  }
}

// What a workload asks for and what it touches besides: request (gpu or none), the GPU a
// request-none pod uses anyway, a grant that outlives the pod, NVIDIA_VISIBLE_DEVICES=all.
void ParseWorkloadAccess(Parser& p, const YAML::Node& y, const std::string& path, WorkloadSpec& w) {
  std::string request = p.Str(y["request"], path + ".request", "gpu");
  if (request == "none") {
    w.request_none = true;
  } else if (request != "gpu") {
    p.Fail(y["request"], path + ".request", "expected gpu or none, got '" + request + "'");
  }
  auto uses = y["uses_gpu"];
  if (uses.IsDefined() && !uses.IsNull()) {
    if (!w.request_none) p.Fail(uses, path + ".uses_gpu", "only valid with request: none");
    if (p.IsMap(uses, path + ".uses_gpu")) {
      p.CheckKeys(uses, path + ".uses_gpu", {"node", "index"});
      w.uses_gpu_node = p.RequiredStr(uses, "node", path + ".uses_gpu");
      w.uses_gpu_index = static_cast<int>(p.Int(uses["index"], path + ".uses_gpu.index", 0, 63, 0));
    }
  } else if (w.request_none && !p.failed()) {
    p.Fail(y, path + ".uses_gpu", "required with request: none ({node, index})");
  }
  auto linger = y["grant_lingers"];
  if (linger.IsDefined() && !linger.IsNull()) {
    if (w.request_none)
      p.Fail(linger, path + ".grant_lingers", "a pod with request: none holds no grant");
    w.grant_linger_us = p.Duration(linger, path + ".grant_lingers", 0);
  }
  std::string vis = p.Str(y["visible_devices"], path + ".visible_devices", "");
  if (vis == "all") {
    w.visible_devices_all = true;
  } else if (!vis.empty()) {
    p.Fail(y["visible_devices"], path + ".visible_devices", "expected 'all', got '" + vis + "'");
  }
}

// The inference engine a workload's pods run, when it says (InferenceSpec).
void ParseInference(Parser& p, const YAML::Node& y, const std::string& path, WorkloadSpec& w) {
  if (!y.IsDefined() || y.IsNull() || !p.IsMap(y, path)) return;
  p.CheckKeys(y, path,
              {"engine", "model", "input_per_gpu_second", "output_per_gpu_second",
               "output_per_request", "prefill_share"});
  InferenceSpec spec;
  spec.engine = p.RequiredStr(y, "engine", path);
  if (!p.failed() && spec.engine != "vllm" && spec.engine != "sglang" && spec.engine != "tgi" &&
      spec.engine != "triton")
    p.Fail(y["engine"], path + ".engine",
           "expected vllm, sglang, tgi or triton, got '" + spec.engine + "'");
  spec.model = p.RequiredStr(y, "model", path);
  spec.input_per_gpu_second =
      p.Number(y["input_per_gpu_second"], path + ".input_per_gpu_second", 0, 1e7, 0);
  spec.output_per_gpu_second =
      p.Number(y["output_per_gpu_second"], path + ".output_per_gpu_second", 0, 1e7, 0);
  spec.output_per_request =
      p.Number(y["output_per_request"], path + ".output_per_request", 1, 1e6, 256);
  spec.prefill_share = p.Number(y["prefill_share"], path + ".prefill_share", 0, 1, 0.25);
  w.inference = std::move(spec);
}

void ParseWorkload(Parser& p, const YAML::Node& y, const std::string& path, WorkloadSpec& w,
                   const Scenario& sc) {
  if (!p.IsMap(y, path)) return;
  w.line = Parser::Line(y);
  p.CheckKeys(y, path,
              {"namespace",
               "name",
               "owner_kind",
               "owner_name",
               "labels",
               "replicas",
               "container",
               "node",
               "gpu_model",
               "gpus",
               "mig_profile",
               "fraction",
               "gpu_milli",
               "mps_active_thread_percentage",
               "dra_claim",
               "start",
               "end",
               "processes",
               "compute",
               "efficiency",
               "memory",
               "placement",
               "request",
               "uses_gpu",
               "visible_devices",
               "grant_lingers",
               "inference"});
  w.namespace_name = p.RequiredStr(y, "namespace", path);
  w.name = p.RequiredStr(y, "name", path);
  w.owner_kind = p.Str(y["owner_kind"], path + ".owner_kind", "Deployment");
  w.owner_name = p.Str(y["owner_name"], path + ".owner_name", w.name);
  w.labels = p.Labels(y["labels"], path + ".labels");
  w.replicas = static_cast<int>(p.Int(y["replicas"], path + ".replicas", 0, 10000, 1));
  w.container = p.Str(y["container"], path + ".container", "main");
  w.node = p.Str(y["node"], path + ".node", "");
  w.gpu_model = p.Str(y["gpu_model"], path + ".gpu_model", "");
  w.gpus = static_cast<int>(p.Int(y["gpus"], path + ".gpus", 1, 64, 1));
  w.mig_profile = p.Str(y["mig_profile"], path + ".mig_profile", "");
  ParseWorkloadShare(p, y, path, w);
  w.start_us = p.Duration(y["start"], path + ".start", 0);
  w.end_us = std::min(p.Duration(y["end"], path + ".end", sc.duration_us), sc.duration_us);
  if (!p.failed() && w.start_us >= w.end_us)
    p.Fail(y["start"].IsDefined() ? y["start"] : y, path + ".start",
           "expected start before end (and before the scenario ends)");
  w.processes = static_cast<int>(p.Int(y["processes"], path + ".processes", 0, 64, 1));
  w.compute = ParseCompute(p, y["compute"], path + ".compute",
                           HashOf(sc.seed, "workload", w.namespace_name, w.name));
  w.efficiency = ParseEfficiency(p, y["efficiency"], path + ".efficiency");
  w.memory = ParseMemory(p, y["memory"], path + ".memory");
  auto pl = y["placement"];
  if (pl.IsDefined() && !pl.IsNull() && p.IsMap(pl, path + ".placement")) {
    p.CheckKeys(pl, path + ".placement", {"node", "gpus"});
    w.placement_node = p.RequiredStr(pl, "node", path + ".placement");
    auto g = pl["gpus"];
    if (g.IsDefined() && p.IsList(g, path + ".placement.gpus")) {
      for (std::size_t i = 0; i < g.size(); ++i)
        w.placement_gpus.push_back(
            static_cast<int>(p.Int(g[i], fmt::format("{}.placement.gpus[{}]", path, i), 0, 63, 0)));
    }
    if (!p.failed() && w.placement_gpus.empty())
      p.Fail(pl, path + ".placement.gpus", "required, a list of GPU indices");
    if (!p.failed() && w.replicas != 1)
      p.Fail(pl, path + ".placement", "explicit placement needs replicas: 1");
  }
  ParseWorkloadAccess(p, y, path, w);
  ParseInference(p, y["inference"], path + ".inference", w);
  if (!p.failed() && !sc.namespace_labels.empty() &&
      !sc.namespace_labels.contains(w.namespace_name)) {
    // Namespaces are optional, but when listed a typo in one must not create a new one.
    p.Fail(y["namespace"], path + ".namespace",
           "namespace '" + w.namespace_name + "' is not listed under namespaces");
  }
}

Result<Scenario> ParseImpl(std::string_view yaml_text, std::string_view file_name) {
  std::string file(file_name.empty() ? "<scenario>" : file_name);
  std::string base_dir;
  if (auto slash = file.rfind('/'); slash != std::string::npos) base_dir = file.substr(0, slash);
  Parser p(file, base_dir);
  auto loaded = LoadYamlDocument(yaml_text, file);
  if (!loaded) return loaded.error();
  YAML::Node root = std::move(*loaded);
  Scenario sc;
  if (!p.IsMap(root, "scenario")) return p.error();
  p.CheckKeys(root, "",
              {"name", "cluster", "seed", "start", "duration", "namespaces", "nodes", "workloads"});
  sc.name = p.RequiredStr(root, "name", "");
  sc.cluster = p.Str(root["cluster"], "cluster", "default");
  sc.seed = static_cast<std::uint64_t>(
      p.Int(root["seed"], "seed", 0, std::numeric_limits<std::int64_t>::max(), 1));
  std::string start = p.RequiredStr(root, "start", "");
  if (!p.failed()) {
    auto t = ParseRfc3339(start);
    if (!t.ok()) {
      p.Fail(root["start"], "start",
             "expected an RFC 3339 time (2026-11-23T00:00:00Z), got '" + start + "'");
    } else {
      sc.start_us = *t;
    }
  }
  if (!root["duration"].IsDefined()) p.Fail(root, "duration", "required, missing");
  sc.duration_us = p.Duration(root["duration"], "duration", 0);
  if (!p.failed() && sc.duration_us <= 0)
    p.Fail(root["duration"], "duration", "expected a positive duration");
  // A typo of a few digits should not simulate for hours and write millions of device-hours.
  if (!p.failed() && sc.duration_us > kMaxScenarioUs)
    p.Fail(root["duration"], "duration",
           fmt::format("expected at most {}h (ten years), got {}h", kMaxScenarioUs / kMicrosPerHour,
                       sc.duration_us / kMicrosPerHour));
  if (!p.failed() && sc.start_us + sc.duration_us > kMaxInstantUs)
    p.Fail(root["duration"], "duration", "expected to end by 9999-12-31");
  auto ns = root["namespaces"];
  if (ns.IsDefined() && !ns.IsNull() && p.IsMap(ns, "namespaces")) {
    for (auto it = ns.begin(); it != ns.end() && !p.failed(); ++it) {
      std::string name = p.Str(it->first, "namespaces");
      std::string path = "namespaces." + name;
      auto& labels = sc.namespace_labels[name];
      if (it->second.IsNull()) continue;
      if (!p.IsMap(it->second, path)) break;
      p.CheckKeys(it->second, path, {"labels"});
      labels = p.Labels(it->second["labels"], path + ".labels");
    }
  }
  if (p.failed()) return p.error();
  auto nodes = root["nodes"];
  if (!nodes.IsDefined()) p.Fail(root, "nodes", "required, a list of nodes");
  if (!p.failed() && p.IsList(nodes, "nodes")) {
    std::set<std::string> names;
    for (std::size_t i = 0; i < nodes.size() && !p.failed(); ++i) {
      NodeSpec n;
      std::string path = fmt::format("nodes[{}]", i);
      ParseNode(p, nodes[i], path, n, sc.seed, sc.duration_us);
      if (!p.failed() && !names.insert(n.name).second)
        p.Fail(nodes[i]["name"], path + ".name", "duplicate node name '" + n.name + "'");
      sc.nodes.push_back(std::move(n));
    }
  }
  auto wl = root["workloads"];
  if (!p.failed() && wl.IsDefined() && !wl.IsNull() && p.IsList(wl, "workloads")) {
    std::set<std::pair<std::string, std::string>> names;
    sc.workloads.reserve(wl.size());
    for (std::size_t i = 0; i < wl.size() && !p.failed(); ++i) {
      WorkloadSpec w;
      std::string path = fmt::format("workloads[{}]", i);
      ParseWorkload(p, wl[i], path, w, sc);
      if (!p.failed() && !names.insert({w.namespace_name, w.name}).second)
        p.Fail(wl[i]["name"], path + ".name",
               "duplicate workload '" + w.namespace_name + "/" + w.name + "'");
      sc.workloads.push_back(std::move(w));
    }
  }
  if (p.failed()) return p.error();
  scenario::PlaceWorkloads(p, sc);
  if (p.failed()) return p.error();
  return sc;
}

}  // namespace

namespace scenario {
std::string StripMe(std::string_view p) {
  std::string s(p);
  if (s.size() > 3 && s.ends_with("+me")) s.resize(s.size() - 3);
  return s;
}

}  // namespace scenario

int MigComputeSlices(std::string_view profile) {
  std::string p = StripMe(profile);
  auto g = p.find("g.");
  if (g == std::string::npos || g == 0) return 0;
  int n = 0;
  auto r = std::from_chars(p.data(), p.data() + g, n);
  if (r.ec != std::errc() || r.ptr != p.data() + g || n < 1 || n > 8) return 0;
  if (!p.ends_with("gb")) return 0;
  return n;
}

Bytes DefaultGpuMemory(std::string_view gpu_model) { return cost::GpuModelMemory(gpu_model); }

bool GpmCapable(std::string_view gpu_model) {
  // Hopper (H100, H200, H20, H800, GH200) and Blackwell (B100, B200, B300, GB200, GB300). "H20"
  // also covers "H200"; L40S and L4 are Ada, A100/A30/A10 Ampere: no GPM.
  constexpr std::string_view kPrefixes[] = {"H100", "H20",  "H800",  "GH200", "B100",
                                            "B200", "B300", "GB200", "GB300"};
  return std::any_of(std::begin(kPrefixes), std::end(kPrefixes),
                     [&](std::string_view p) { return gpu_model.starts_with(p); });
}

Bytes MigInstanceMemory(std::string_view profile, Bytes gpu_memory) {
  return std::min(MigProfileMemory(profile), gpu_memory);
}

Result<Scenario> ParseScenario(std::string_view yaml_text, std::string_view file_name) {
  try {
    return ParseImpl(yaml_text, file_name);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(fmt::format("{}:{}: {}", file_name.empty() ? "<scenario>" : file_name,
                                       e.mark.line + 1, e.msg));
  }
}

Result<Scenario> LoadScenarioFile(const std::string& path) {
  auto text = scenario::ReadDataFile(path, kConfigFile);
  if (!text.ok()) return text.error();
  return ParseScenario(*text, path);
}

}  // namespace gpuledger::sim