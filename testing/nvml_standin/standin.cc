#include "testing/nvml_standin/standin.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "common/time_util.h"
#include "sim/scenario.h"
#include "sources/nvml/nvml.h"

namespace gpuledger::nvml_standin {

namespace {

std::string Resolve(const std::string& path, const std::string& dir) {
  if (path.empty() || path.front() == '/' || dir.empty()) return path;
  return (std::filesystem::path(dir) / path).string();
}

// NVML return codes by the names faults use ("GPU_IS_LOST" or "NVML_ERROR_GPU_IS_LOST").
std::optional<int> ParseReturnCode(std::string_view s) {
  static const std::map<std::string_view, int> kCodes = {
      {"UNINITIALIZED", NVML_ERROR_UNINITIALIZED},
      {"INVALID_ARGUMENT", NVML_ERROR_INVALID_ARGUMENT},
      {"NOT_SUPPORTED", NVML_ERROR_NOT_SUPPORTED},
      {"NO_PERMISSION", NVML_ERROR_NO_PERMISSION},
      {"NOT_FOUND", NVML_ERROR_NOT_FOUND},
      {"INSUFFICIENT_SIZE", NVML_ERROR_INSUFFICIENT_SIZE},
      {"DRIVER_NOT_LOADED", NVML_ERROR_DRIVER_NOT_LOADED},
      {"TIMEOUT", NVML_ERROR_TIMEOUT},
      {"GPU_IS_LOST", NVML_ERROR_GPU_IS_LOST},
      {"RESET_REQUIRED", NVML_ERROR_RESET_REQUIRED},
      {"MEMORY", NVML_ERROR_MEMORY},
      {"NO_DATA", NVML_ERROR_NO_DATA},
      {"ARGUMENT_VERSION_MISMATCH", NVML_ERROR_ARGUMENT_VERSION_MISMATCH},
      {"NOT_READY", NVML_ERROR_NOT_READY},
      {"UNKNOWN", NVML_ERROR_UNKNOWN},
  };
  if (s.starts_with("NVML_ERROR_")) s.remove_prefix(11);
  if (auto it = kCodes.find(s); it != kCodes.end()) return it->second;
  char* end = nullptr;
  std::string str(s);
  long v = std::strtol(str.c_str(), &end, 10);
  if (!str.empty() && end && *end == '\0' && v >= 0) return static_cast<int>(v);
  return std::nullopt;
}

unsigned Percent(GpuMicros busy_us, Micros dt_us) {
  if (dt_us <= 0) return 0;
  double p = std::round(100.0 * static_cast<double>(busy_us) / static_cast<double>(dt_us));
  return static_cast<unsigned>(std::clamp(p, 0.0, 100.0));
}

template <typename T>
void Trim(std::deque<T>& q, Micros keep_us = Node::kKeepUs) {
  if (q.empty()) return;
  Micros newest = q.back().ts_us;
  while (q.size() > 2 && q.front().ts_us < newest - keep_us) q.pop_front();
}

GpmCounters Lerp(const GpmCounters& a, const GpmCounters& b, double f) {
  auto at = [f](double x, double y) { return x + (y - x) * f; };
  return {at(a.graphics_us, b.graphics_us), at(a.sm_active_us, b.sm_active_us),
          at(a.sm_occupancy_us, b.sm_occupancy_us), at(a.tensor_active_us, b.tensor_active_us),
          at(a.dram_active_us, b.dram_active_us)};
}

}  // namespace

Result<Config> ParseConfig(std::string_view yaml_text, const std::string& config_dir) {
  Config c;
  try {
    YAML::Node y = YAML::Load(std::string(yaml_text));
    if (!y.IsMap()) return InvalidArgument("expected a map {scenario, node, origin_unix_us}");
    for (const auto& kv : y) {
      std::string key = kv.first.as<std::string>();
      if (key != "scenario" && key != "node" && key != "origin_unix_us" && key != "step" &&
          key != "faults")
        return InvalidArgument("unknown key '" + key + "'");
    }
    if (!y["scenario"] || !y["node"] || !y["origin_unix_us"])
      return InvalidArgument("scenario, node and origin_unix_us are required");
    c.scenario_path = Resolve(y["scenario"].as<std::string>(), config_dir);
    c.node = y["node"].as<std::string>();
    c.origin_unix_us = y["origin_unix_us"].as<std::int64_t>();
    if (y["step"]) {
      auto step = ParseDuration(y["step"].as<std::string>());
      if (!step.ok()) return InvalidArgument("step: " + step.error().message);
      if (*step <= 0) return InvalidArgument("step: must be positive");
      c.step_us = *step;
    }
    if (y["faults"]) c.faults_path = Resolve(y["faults"].as<std::string>(), config_dir);
  } catch (const std::exception& e) {
    return InvalidArgument(e.what());
  }
  return c;
}

double Faults::HangFor(const std::string& fn) const {
  double s = 0;
  if (auto it = hang_s.find(fn); it != hang_s.end()) s = it->second;
  if (auto it = hang_s.find("all"); it != hang_s.end()) s = std::max(s, it->second);
  return s;
}

std::optional<int> Faults::ErrorFor(const std::string& fn) const {
  if (auto it = error.find(fn); it != error.end()) return it->second;
  if (auto it = error.find("all"); it != error.end()) return it->second;
  return std::nullopt;
}

Result<Faults> ParseFaults(std::string_view text) {
  Faults f;
  std::istringstream in{std::string(text)};
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (auto h = line.find('#'); h != std::string::npos) line.resize(h);
    std::istringstream words(line);
    std::string verb, a, b, extra;
    words >> verb >> a >> b >> extra;
    if (verb.empty()) continue;
    auto bad = [&] { return InvalidArgument(fmt::format("faults line {}: '{}'", n, line)); };
    if (!extra.empty()) return bad();
    char* end = nullptr;
    if (verb == "hang" && !a.empty() && !b.empty()) {
      double s = std::strtod(b.c_str(), &end);
      if (*end != '\0' || !(s >= 0)) return bad();
      f.hang_s[a] = s;
    } else if (verb == "lost" && !a.empty() && b.empty()) {
      long i = std::strtol(a.c_str(), &end, 10);
      if (*end != '\0' || i < 0) return bad();
      f.lost.insert(static_cast<unsigned>(i));
    } else if (verb == "unsupported" && !a.empty() && b.empty()) {
      f.unsupported.insert(a);
    } else if (verb == "error" && !a.empty() && !b.empty()) {
      auto code = ParseReturnCode(b);
      if (!code) return bad();
      f.error[a] = *code;
    } else if (verb == "count" && !a.empty() && b.empty()) {
      long i = std::strtol(a.c_str(), &end, 10);
      if (*end != '\0' || i < 0) return bad();
      f.count = static_cast<unsigned>(i);
    } else {
      return bad();
    }
  }
  return f;
}

std::string ProductName(std::string_view m) {
  static const std::map<std::string_view, std::string_view> kNames = {
      {"H100-80GB", "NVIDIA H100 80GB HBM3"},
      {"H200-141GB", "NVIDIA H200"},
      {"A100-80GB", "NVIDIA A100-SXM4-80GB"},
      {"A100-40GB", "NVIDIA A100-SXM4-40GB"},
      {"L4", "NVIDIA L4"},
      {"T4", "Tesla T4"},
      {"A10", "NVIDIA A10"},
      {"A10G", "NVIDIA A10G"},
      {"A30", "NVIDIA A30"},
      {"L40S", "NVIDIA L40S"},
      {"V100-16GB", "Tesla V100-SXM2-16GB"},
      {"V100-32GB", "Tesla V100-SXM2-32GB"},
      {"P100", "Tesla P100-PCIE-16GB"},
  };
  if (auto it = kNames.find(m); it != kNames.end()) return std::string(it->second);
  return "NVIDIA " + std::string(m);
}

bool MigCapable(std::string_view m) {
  return m.starts_with("A100") || m.starts_with("A30") || m.starts_with("H100") ||
         m.starts_with("H200") || m.starts_with("GH200") || m.starts_with("B200");
}

unsigned SmCount(std::string_view m) {
  if (m.starts_with("H100") || m.starts_with("H200")) return 132;
  if (m.starts_with("A100")) return 108;
  if (m.starts_with("A30")) return 56;
  if (m == "L4") return 58;
  if (m == "T4") return 40;
  if (m == "L40S") return 142;
  if (m.starts_with("A10")) return 72;
  if (m.starts_with("V100")) return 80;
  return 80;
}

Node::Node(Config config, sim::NodeStepper stepper)
    : config_(std::move(config)), stepper_(std::move(stepper)) {}

Result<Node> Node::Open(const Config& config, Micros now_wall_us) {
  auto scenario = sim::LoadScenarioFile(config.scenario_path);
  if (!scenario.ok()) return scenario.error();
  auto stepper = sim::NodeStepper::Create(std::move(*scenario), config.node, config.step_us);
  if (!stepper.ok()) return stepper.error();
  Node node(config, std::move(*stepper));
  const sim::NodeSpec& spec = node.spec();
  for (const PhysicalGpu& g : node.stepper_->gpus()) {
    Device d;
    d.gpu = static_cast<int>(node.devices_.size());
    d.uuid = g.uuid;
    d.name = ProductName(g.model);
    d.total_bytes = g.memory_total_bytes;
    node.devices_.push_back(std::move(d));
  }
  int layout = static_cast<int>(spec.mig_layout.size());
  const auto& migs = node.stepper_->mig_instances();
  for (std::size_t i = 0; i < migs.size(); ++i) {
    Device d;
    d.gpu = static_cast<int>(i) / layout;
    d.mig = static_cast<int>(i) % layout;
    d.uuid = migs[i].uuid;
    d.name = ProductName(spec.gpu_model) + " MIG " + migs[i].profile;
    d.total_bytes = migs[i].memory_total_bytes;
    d.slices = migs[i].compute_slices;
    d.gpu_instance_id = static_cast<unsigned>(d.mig) + 1;
    node.devices_.push_back(std::move(d));
  }
  for (std::size_t i = 0; i < node.devices_.size(); ++i)
    node.by_uuid_[node.devices_[i].uuid] = static_cast<int>(i);
  node.gpm_capable_ = sim::GpmCapable(spec.gpu_model);
  if (node.gpm_capable_) {
    const Micros start = node.WallOf(node.stepper_->scenario().start_us);
    for (Device& d : node.devices_) d.gpm.push_back({start, GpmCounters{}});
  }
  node.AdvanceTo(now_wall_us);
  return node;
}

Micros Node::WallOf(Micros sim_us) const {
  return config_.origin_unix_us + (sim_us - stepper_->scenario().start_us);
}

void Node::AdvanceTo(Micros now_wall_us) {
  Micros sim_now = stepper_->scenario().start_us + (now_wall_us - config_.origin_unix_us);
  if (stepper_->done() || sim_now <= stepper_->position_us()) return;
  for (const NodeSnapshot& s : stepper_->AdvanceTo(sim_now)) Fold(s);
}

void Node::Fold(const NodeSnapshot& s) {
  Micros dt = s.duration_us();
  Micros ts = WallOf(s.end_us);
  for (Device& d : devices_) {
    d.processes.clear();
    d.mps_clients.clear();
  }
  for (const DeviceSignals& sig : s.signals) {
    auto it = by_uuid_.find(sig.device);
    if (it == by_uuid_.end()) continue;
    Device& d = devices_[it->second];
    d.used_bytes = sig.memory_used_bytes;
    if (gpm_capable_) {
      // The counters run on whatever measured the unit (GPM, or DCGM reading the same ones).
      GpmCounters c = d.gpm.empty() ? GpmCounters{} : d.gpm.back().c;
      if (sig.busy_us) c.graphics_us += static_cast<double>(*sig.busy_us);
      if (sig.activity) {
        c.sm_active_us += static_cast<double>(sig.activity->sm_active_us);
        c.sm_occupancy_us += static_cast<double>(sig.activity->sm_occupancy_us);
        c.tensor_active_us += static_cast<double>(sig.activity->tensor_active_us);
        c.dram_active_us += static_cast<double>(sig.activity->dram_active_us);
      }
      d.gpm.push_back({ts, c});
      Trim(d.gpm, kKeepUs + 2 * config_.step_us);  // the lag needs a step more
    }
    if (d.mig >= 0) continue;  // NVML gives MIG devices neither utilization nor power
    if (sig.busy_us && !mig_mode()) {
      d.util.push_back({ts, Percent(*sig.busy_us, dt)});
      Trim(d.util);
    }
    if (sig.energy_mj) {
      d.energy_mj += *sig.energy_mj;
      d.power_mw = dt > 0 ? *sig.energy_mj * kMicrosPerSecond / dt : 0;
      d.power.push_back({ts, static_cast<unsigned>(d.power_mw)});
      Trim(d.power);
    }
  }
  for (const ProcessObservation& p : s.processes) {
    auto it = by_uuid_.find(p.device);
    if (it == by_uuid_.end()) continue;
    Device& d = devices_[it->second];
    auto pid = static_cast<unsigned>(p.pid);
    d.processes.push_back({pid, p.used_memory_bytes, d.gpu_instance_id});
    if (d.mig >= 0)
      devices_[d.gpu].processes.push_back({pid, p.used_memory_bytes, d.gpu_instance_id});
    if (mps() && !IsMpsServer(p.comm))
      d.mps_clients.push_back({pid, p.used_memory_bytes, d.gpu_instance_id});
    // NVML samples only processes that owned a sample window; none on MIG; on MPS only the
    // server, whose samples are its clients' kernels (measured on an H200).
    if (d.mig < 0 && p.sm_busy_us && *p.sm_busy_us > 0) {
      d.proc.push_back({ts, pid, Percent(*p.sm_busy_us, dt)});
    }
  }
  for (Device& d : devices_) Trim(d.proc);
}

GpmCounters Node::GpmCountersAt(const Device& d, Micros wall_us) const {
  if (d.mig < 0 && mig_mode()) {
    GpmCounters sum;
    const double total = spec().total_slices;
    for (const Device& m : devices_) {
      if (m.mig < 0 || m.gpu != d.gpu) continue;
      GpmCounters c = GpmCountersAt(m, wall_us);
      const double w = m.slices / total;
      sum.graphics_us += c.graphics_us * w;
      sum.sm_active_us += c.sm_active_us * w;
      sum.sm_occupancy_us += c.sm_occupancy_us * w;
      sum.tensor_active_us += c.tensor_active_us * w;
      sum.dram_active_us += c.dram_active_us * w;
    }
    return sum;
  }
  const std::deque<GpmPoint>& q = d.gpm;
  if (q.empty()) return {};
  const Micros t = wall_us - config_.step_us;
  if (t <= q.front().ts_us) return q.front().c;
  if (t >= q.back().ts_us) return q.back().c;
  auto next = std::upper_bound(q.begin(), q.end(), t,
                               [](Micros v, const GpmPoint& p) { return v < p.ts_us; });
  const GpmPoint& b = *next;
  const GpmPoint& a = *std::prev(next);
  const double f = b.ts_us > a.ts_us
                       ? static_cast<double>(t - a.ts_us) / static_cast<double>(b.ts_us - a.ts_us)
                       : 1.0;
  return Lerp(a.c, b.c, f);
}

}  // namespace gpuledger::nvml_standin
