#include "sim/alibaba_import.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <queue>
#include <vector>

#include <fmt/format.h>

#include "common/csv.h"
#include "common/strings.h"
#include "common/units.h"

namespace gpuledger::sim {
namespace {

// A CSV table with a header; cells addressed by column name.
class Csv {
 public:
  static Result<Csv> Read(std::string_view text, std::string_view file) {
    auto records = ParseCsv(text, file);
    if (!records.ok()) return records.error();
    Csv csv;
    csv.file_ = std::string(file);
    for (CsvRecord& record : *records) {
      std::vector<std::string> cells;
      for (CsvField& field : record.fields) cells.push_back(std::move(field.value));
      if (csv.header_.empty()) {
        csv.header_ = std::move(cells);
      } else {
        csv.rows_.push_back(std::move(cells));
        csv.lines_.push_back(record.line);
      }
    }
    return csv;
  }

  std::size_t size() const { return rows_.size(); }
  int line(std::size_t r) const { return lines_[r]; }

  // Index of a required column, or an error naming the file and the header.
  Result<int> Column(std::string_view name) const {
    for (std::size_t i = 0; i < header_.size(); ++i)
      if (header_[i] == name) return static_cast<int>(i);
    return InvalidArgument(fmt::format("{}:1: column '{}': missing from the header", file_, name));
  }

  Result<std::string_view> Cell(std::size_t r, int col, std::string_view name) const {
    if (col >= static_cast<int>(rows_[r].size()))
      return InvalidArgument(fmt::format("{}:{}: column '{}': missing (row has {} cells)", file_,
                                         lines_[r], name, rows_[r].size()));
    return std::string_view(rows_[r][col]);
  }

  // Empty cells give `empty`; anything else must be a whole number.
  Result<std::int64_t> Int(std::size_t r, int col, std::string_view name,
                           std::int64_t empty) const {
    auto cell = Cell(r, col, name);
    if (!cell.ok()) return cell.error();
    std::string_view s = *cell;
    if (s.empty()) return empty;
    std::int64_t v = 0;
    auto res = std::from_chars(s.data(), s.data() + s.size(), v);
    if (res.ec != std::errc() || res.ptr != s.data() + s.size() || v < 0)
      return InvalidArgument(
          fmt::format("{}:{}: column '{}': expected a non-negative integer, "
                      "got '{}'",
                      file_, lines_[r], name, s));
    return v;
  }

 private:
  std::string file_;
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<int> lines_;
};

struct TraceNode {
  std::string name;
  std::string model;
  std::vector<int> free_milli;  // per GPU, at the current replay time
  bool used = false;
  bool overflow = false;
};

struct TracePod {
  std::string name;
  std::string ns;
  std::int64_t num_gpu, milli, sched, del;
  std::vector<std::string> models;  // accepted; empty: any
  std::size_t order;
  int node = -1;
  std::vector<int> gpus;
};

Bytes TraceModelMemory(std::string_view model) {
  if (model == "V100M32" || model == "G1" || model == "G2" || model == "G3") return 32 * kGiB;
  if (model == "A10") return 24 * kGiB;
  return 16 * kGiB;  // P100, T4, V100M16
}

// Tries to place `p` on node `n` at the current free capacity; fills p.gpus.
bool TryPlace(TracePod& p, TraceNode& n) {
  if (!p.models.empty() && std::find(p.models.begin(), p.models.end(), n.model) == p.models.end())
    return false;
  p.gpus.clear();
  int need = p.milli < 1000 ? static_cast<int>(p.milli) : 1000;
  for (int g = 0; g < static_cast<int>(n.free_milli.size()) &&
                  static_cast<std::int64_t>(p.gpus.size()) < p.num_gpu;
       ++g)
    if (n.free_milli[g] >= need) p.gpus.push_back(g);
  if (static_cast<std::int64_t>(p.gpus.size()) < p.num_gpu) return false;
  for (int g : p.gpus) n.free_milli[g] -= need;
  return true;
}

// The trace's GPU nodes (CPU nodes dropped), each with all its GPUs free.
Result<std::vector<TraceNode>> ReadTraceNodes(std::string_view nodes_csv,
                                              std::string_view nodes_file_name) {
  auto nodes_t = Csv::Read(nodes_csv, nodes_file_name);
  if (!nodes_t.ok()) return nodes_t.error();
  auto c_sn = nodes_t->Column("sn");
  auto c_gpu = nodes_t->Column("gpu");
  auto c_model = nodes_t->Column("model");
  for (auto* c : {&c_sn, &c_gpu, &c_model})
    if (!c->ok()) return c->error();
  std::vector<TraceNode> nodes;
  for (std::size_t r = 0; r < nodes_t->size(); ++r) {
    auto name = nodes_t->Cell(r, *c_sn, "sn");
    auto gpus = nodes_t->Int(r, *c_gpu, "gpu", 0);
    auto model = nodes_t->Cell(r, *c_model, "model");
    if (!name.ok()) return name.error();
    if (!gpus.ok()) return gpus.error();
    if (!model.ok()) return model.error();
    if (*gpus == 0) continue;  // CPU nodes hold no GPU pods
    if (name->empty() || model->empty())
      return InvalidArgument(fmt::format("{}:{}: column '{}': empty", nodes_file_name,
                                         nodes_t->line(r), name->empty() ? "sn" : "model"));
    nodes.push_back({std::string(*name), std::string(*model),
                     std::vector<int>(static_cast<std::size_t>(*gpus), 1000)});
  }
  return nodes;
}

// The trace's pods that held GPUs, in scheduling order.
Result<std::vector<TracePod>> ReadTracePods(std::string_view pods_csv,
                                            std::string_view pods_file_name) {
  auto pods_t = Csv::Read(pods_csv, pods_file_name);
  if (!pods_t.ok()) return pods_t.error();
  const char* names[] = {"name", "num_gpu",       "gpu_milli",     "gpu_spec",
                         "qos",  "deletion_time", "scheduled_time"};
  int col[7];
  for (int i = 0; i < 7; ++i) {
    auto c = pods_t->Column(names[i]);
    if (!c.ok()) return c.error();
    col[i] = *c;
  }
  std::vector<TracePod> pods;
  for (std::size_t r = 0; r < pods_t->size(); ++r) {
    auto name = pods_t->Cell(r, col[0], "name");
    auto num_gpu = pods_t->Int(r, col[1], "num_gpu", 0);
    auto milli = pods_t->Int(r, col[2], "gpu_milli", 0);
    auto spec = pods_t->Cell(r, col[3], "gpu_spec");
    auto qos = pods_t->Cell(r, col[4], "qos");
    auto del = pods_t->Int(r, col[5], "deletion_time", -1);
    auto sched = pods_t->Int(r, col[6], "scheduled_time", -1);
    for (const Status& s : {name.status(), num_gpu.status(), milli.status(), spec.status(),
                            qos.status(), del.status(), sched.status()})
      if (!s.ok()) return s.error();
    // Pods never scheduled, never deleted, or without GPUs hold nothing (docs/scenarios.md).
    if (*sched < 0 || *del < 0 || *num_gpu == 0 || *milli == 0 || *del <= *sched) continue;
    if (*milli > 1000)
      return InvalidArgument(fmt::format("{}:{}: column 'gpu_milli': expected 0..1000, got {}",
                                         pods_file_name, pods_t->line(r), *milli));
    if (*milli < 1000 && *num_gpu > 1)
      return InvalidArgument(fmt::format(
          "{}:{}: column 'gpu_milli': a sharing pod (gpu_milli {}) must have num_gpu 1, got {}",
          pods_file_name, pods_t->line(r), *milli, *num_gpu));
    if (qos->empty())
      return InvalidArgument(
          fmt::format("{}:{}: column 'qos': empty", pods_file_name, pods_t->line(r)));
    TracePod p{std::string(*name), Lower(*qos), *num_gpu, *milli, *sched, *del, {}, r, -1, {}};
    std::string_view s = *spec;
    while (!s.empty()) {
      auto bar = s.find('|');
      if (bar != 0) p.models.emplace_back(s.substr(0, bar));
      if (bar == std::string_view::npos) break;
      s.remove_prefix(bar + 1);
    }
    pods.push_back(std::move(p));
  }
  std::stable_sort(pods.begin(), pods.end(),
                   [](const TracePod& a, const TracePod& b) { return a.sched < b.sched; });

  return pods;
}

// Places the pods as the trace's scheduler would have: in scheduling order, releasing what pods
// deleted by then held, on the first node with room, else on a new overflow node. Returns the
// last deletion time.
Result<std::int64_t> ReplayTrace(std::vector<TracePod>& pods, std::vector<TraceNode>& nodes,
                                 std::string_view pods_file_name) {
  using Release = std::pair<std::int64_t, std::size_t>;  // (deletion, pod index)
  std::priority_queue<Release, std::vector<Release>, std::greater<>> running;
  int overflow_count = 0;
  std::int64_t max_del = 0;
  for (std::size_t i = 0; i < pods.size(); ++i) {
    TracePod& p = pods[i];
    while (!running.empty() && running.top().first <= p.sched) {
      TracePod& q = pods[running.top().second];
      running.pop();
      int give = q.milli < 1000 ? static_cast<int>(q.milli) : 1000;
      for (int g : q.gpus) nodes[q.node].free_milli[g] += give;
    }
    for (std::size_t n = 0; n < nodes.size() && p.node < 0; ++n)
      if (TryPlace(p, nodes[n])) p.node = static_cast<int>(n);
    if (p.node < 0) {
      std::string model = !p.models.empty() ? p.models.front()
                          : !nodes.empty()  ? nodes.front().model
                                            : std::string("T4");
      int gpus = static_cast<int>(std::max<std::int64_t>(8, p.num_gpu));
      nodes.push_back({fmt::format("overflow-{}", overflow_count++), model,
                       std::vector<int>(static_cast<std::size_t>(gpus), 1000), false, true});
      if (!TryPlace(p, nodes.back()))
        return Internal(
            fmt::format("{}: pod {} does not fit an empty overflow node", pods_file_name, p.name));
      p.node = static_cast<int>(nodes.size() - 1);
    }
    nodes[p.node].used = true;
    running.push({p.del, i});
    max_del = std::max(max_del, p.del);
  }

  return max_del;
}

// The scenario YAML of the placed trace: the nodes that held a pod, each pod as a workload.
std::string ScenarioOfTrace(std::vector<TracePod>& pods, const std::vector<TraceNode>& nodes,
                            std::int64_t max_del, std::string_view pods_file_name,
                            std::string_view nodes_file_name) {
  std::int64_t hours = (max_del + 3599) / 3600;
  std::string out;
  out.reserve(pods.size() * 220 + nodes.size() * 120);
  out += "# Imported from the Alibaba openb GPU trace (cluster-trace-gpu-v2023): ";
  out += fmt::format("{} + {}.\n", pods_file_name, nodes_file_name);
  out += "# Only nodes that held a pod are listed; the trace has no usage, so compute is idle.\n";
  out += "name: alibaba-openb\ncluster: alibaba-openb\nseed: 2023\n";
  out += "start: \"2023-01-01T00:00:00Z\"\n";
  out += fmt::format("duration: {}h\n", std::max<std::int64_t>(1, hours));
  std::map<std::string, std::string> namespaces;
  for (const TracePod& p : pods) namespaces[p.ns] = p.ns;
  out += "namespaces:\n";
  for (auto& [ns, _] : namespaces) out += fmt::format("  {}: {{labels: {{qos: {}}}}}\n", ns, ns);
  out += "nodes:\n";
  for (const TraceNode& n : nodes) {
    if (!n.used) continue;
    out += fmt::format(
        "  - {{name: {}, gpu_model: {}, gpus: {}, memory: {}, sharing: fractional, "
        "pricing_class: on-demand{}}}\n",
        n.name, n.model, n.free_milli.size(), TraceModelMemory(n.model),
        n.overflow ? ", labels: {overflow: \"true\"}" : "");
  }
  out += "workloads:\n";
  std::sort(pods.begin(), pods.end(),
            [](const TracePod& a, const TracePod& b) { return a.order < b.order; });
  for (const TracePod& p : pods) {
    std::string gpus;
    for (int g : p.gpus) gpus += (gpus.empty() ? "" : ", ") + std::to_string(g);
    std::string share =
        p.milli < 1000 ? fmt::format("gpu_milli: {}", p.milli) : fmt::format("gpus: {}", p.num_gpu);
    out += fmt::format(
        "  - {{namespace: {}, name: {}, owner_kind: Pod, {}, placement: {{node: {}, gpus: [{}]}}, "
        "start: {}s, end: {}s, processes: 0, compute: {{profile: idle}}}}\n",
        p.ns, p.name, share, nodes[p.node].name, gpus, p.sched, p.del);
  }
  return out;
}

}  // namespace

Result<std::string> ImportAlibabaTrace(std::string_view pods_csv, std::string_view pods_file_name,
                                       std::string_view nodes_csv,
                                       std::string_view nodes_file_name) {
  auto nodes = ReadTraceNodes(nodes_csv, nodes_file_name);
  if (!nodes.ok()) return nodes.error();
  auto pods = ReadTracePods(pods_csv, pods_file_name);
  if (!pods.ok()) return pods.error();
  auto max_del = ReplayTrace(*pods, *nodes, pods_file_name);
  if (!max_del.ok()) return max_del.error();
  return ScenarioOfTrace(*pods, *nodes, *max_del, pods_file_name, nodes_file_name);
}

}  // namespace gpuledger::sim
