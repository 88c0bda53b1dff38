#include "nvml_capture.h"

#include <cmath>
#include <exception>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "io/file_util.h"

namespace gpuledger::testing {
namespace {

using nlohmann::json;

std::vector<CapturedProcess> Processes(const json& list) {
  std::vector<CapturedProcess> out;
  for (const json& p : list) {
    out.push_back({p.at("pid").get<unsigned>(), p.at("used_bytes").get<Bytes>()});
  }
  return out;
}

CapturedRead ReadOf(const json& line) {
  CapturedRead r;
  r.at_us = std::llround(line.at("t").get<double>() * 1e6);
  const json& d = line.at("devices").at(0);
  r.memory_used = d.at("memory_used").get<Bytes>();
  r.util_gpu = d.at("util").at("gpu").get<unsigned>();
  r.util_memory = d.at("util").at("memory").get<unsigned>();
  for (const json& s : d.at("samples")) {
    r.device_samples.emplace_back(s.at(0).get<Micros>(), s.at(1).get<unsigned>());
  }
  if (const json& pu = d.at("proc_util"); pu.is_array()) {  // else {"error": ...}: none
    for (const json& s : pu) {
      r.process_samples.push_back({s.at("pid").get<unsigned>(), s.at("ts").get<Micros>(),
                                   s.at("sm").get<unsigned>(), s.at("mem").get<unsigned>()});
    }
  }
  r.compute = Processes(d.at("compute_procs"));
  r.mps = Processes(d.at("mps_procs"));
  r.energy_mj = d.at("energy_mj").get<std::int64_t>();
  r.power_mw = d.at("power_mw").get<unsigned>();
  if (auto g = d.find("gpm"); g != d.end() && g->is_object()) {
    for (const auto& [name, value] : g->items()) {
      if (value.is_number()) r.gpm[name] = value.get<double>();
    }
  }
  return r;
}

}  // namespace

Result<NvmlCapture> LoadNvmlCapture(const std::string& path) {
  auto text = ReadFile(path);
  if (!text) return text.error();
  NvmlCapture capture;
  int line_no = 0;
  std::size_t at = 0;
  while (at < text->size()) {
    std::size_t end = text->find('\n', at);
    if (end == std::string::npos) end = text->size();
    const std::string line = text->substr(at, end - at);
    at = end + 1;
    ++line_no;
    if (line.empty()) continue;
    try {
      const json j = json::parse(line);
      if (line_no == 1) {
        const json& s = j.at("static").at(0);
        capture.name = s.at("name").get<std::string>();
        capture.uuid = s.at("uuid").get<std::string>();
        capture.driver = s.at("driver").get<std::string>();
        capture.memory_total = s.at("memory_total").get<Bytes>();
        capture.gpm_supported = s.at("gpm_supported").get<int>() != 0;
      } else {
        capture.reads.push_back(ReadOf(j));
      }
    } catch (const std::exception& e) {
      return InvalidArgument(fmt::format("{}:{}: {}", path, line_no, e.what()));
    }
  }
  if (capture.reads.empty()) return InvalidArgument(path + ": no reads");
  return capture;
}

}  // namespace gpuledger::testing
