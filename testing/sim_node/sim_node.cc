#include "sim_node/sim_node.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "cli/exit_code.h"
#include "common/time_util.h"
#include "fake_grpc/fake_cri.h"
#include "fake_grpc/fake_kubelet.h"
#include "io/file_util.h"
#include "sim/scenario.h"
#include "sim/simulated_node.h"
#include "sim/simulator.h"

namespace gpuledger::simnode {
namespace {

namespace fs = std::filesystem;

Micros WallNowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class NodeWorld {
 public:
  NodeWorld(const sim::Scenario& scenario, const SimNodeOptions& o, Micros origin)
      : scenario_(scenario), o_(o), origin_(origin), host_(fs::path(o.dir) / "host") {}

  Status Update(fake::FakeKubelet& kubelet, fake::FakeCri& cri) {
    const Micros wall = WallNowUs();
    const Micros sim_now = scenario_.start_us + (wall - origin_);
    auto state = sim::StateAt(scenario_, o_.node, sim_now);
    if (!state) return state.status();
    if (Status s = LayOutProcfs(*state); !s.ok()) return s;
    UpdateKube(*state, wall, kubelet, cri);
    return Status::Ok();
  }

 private:
  Status LayOutProcfs(const sim::NodeState& state) {
    std::set<int> live;
    for (const ProcessObservation& p : state.processes) live.insert(p.pid);
    for (const auto& [path, content] :
         sim::ProcfsFiles(state.processes, state.grants, state.gpus, uids_)) {
      fs::path file = host_ / path.substr(1);
      std::error_code ec;
      fs::create_directories(file.parent_path(), ec);
      if (ec) return IoError(fmt::format("{}: {}", file.parent_path().string(), ec.message()));
      if (Status s = WriteFile(file.string(), content); !s.ok()) return s;
    }
    // Processes that ended leave /proc, as they do on a real node.
    for (int pid : laid_out_)
      if (!live.count(pid)) fs::remove_all(host_ / "proc" / std::to_string(pid));
    laid_out_ = live;
    return Status::Ok();
  }

  void UpdateKube(const sim::NodeState& state, Micros wall, fake::FakeKubelet& kubelet,
                  fake::FakeCri& cri) {
    std::set<ConsumerRef> running;
    for (const ConsumerInfo& pod : state.pods) {
      running.insert(pod.ref);
      ended_.erase(pod.ref);
    }
    // Pods that stopped running linger as terminal for a while, grants and all.
    for (const Grant& g : last_grants_)
      if (!running.count(g.consumer) && !ended_.count(g.consumer)) ended_[g.consumer] = wall;
    std::erase_if(ended_, [&](const auto& kv) {
      return wall - kv.second > static_cast<Micros>(o_.terminal_linger_seconds * 1e6);
    });
    std::vector<Grant> grants = state.grants;
    for (const Grant& g : last_grants_)
      if (ended_.count(g.consumer) && !running.count(g.consumer)) grants.push_back(g);
    last_grants_ = grants;
    std::set<ConsumerRef> ended;
    for (const auto& [ref, since] : ended_) ended.insert(ref);
    sim::KubeLists lists =
        sim::KubeListsFor(o_.node, grants, running, ended, state.gpus, state.mig_instances);
    kubelet.SetGrants(lists.grants);
    kubelet.SetAllocatable(lists.allocatable);
    cri.SetSandboxes(lists.sandboxes);
    cri.SetContainers(lists.containers);
    LayOutKubeletFiles(lists);
  }

  // What the kubelet and containerd leave on a node for the agent's CRI-free mapping
  // (sources/cri/kubelet_files.h): a log directory per pod and a link per container while the
  // pod is listed, and the pod's and each running container's cgroup while they run.
  void LayOutKubeletFiles(const sim::KubeLists& lists) {
    std::set<fs::path> paths;
    std::map<std::string, const cri::PodSandbox*> sandbox;
    for (const cri::PodSandbox& sb : lists.sandboxes) sandbox[sb.id] = &sb;
    std::error_code ec;
    for (const cri::Container& c : lists.containers) {
      auto it = sandbox.find(c.pod_sandbox_id);
      if (it == sandbox.end()) continue;
      const cri::PodSandbox& sb = *it->second;
      const std::string pod_dir =
          fmt::format("var/log/pods/{}_{}_{}", sb.namespace_name, sb.name, sb.uid);
      fs::create_directories(host_ / pod_dir / c.name, ec);
      paths.insert(host_ / pod_dir);
      const fs::path link = host_ / fmt::format("var/log/containers/{}_{}_{}-{}.log", sb.name,
                                                sb.namespace_name, c.name, c.id);
      fs::create_directories(link.parent_path(), ec);
      if (!fs::is_symlink(link))
        fs::create_symlink("/" + pod_dir + "/" + c.name + "/0.log", link, ec);
      paths.insert(link);
      if (!sb.ready) continue;
      const fs::path cgroups = host_ / "sys/fs/cgroup";
      const fs::path pod_cgroup = cgroups / sim::PodCgroupDir(sb.uid).substr(1);
      fs::create_directories(pod_cgroup, ec);
      paths.insert(pod_cgroup);
      if (c.running) {
        const fs::path container = cgroups / sim::ContainerCgroupDir(sb.uid, c.id).substr(1);
        fs::create_directories(container, ec);
        paths.insert(container);
      }
    }
    // What ended is removed as the kubelet removes it; innermost first.
    for (auto it = kubelet_paths_.rbegin(); it != kubelet_paths_.rend(); ++it)
      if (!paths.count(*it)) fs::remove_all(*it, ec);
    kubelet_paths_ = std::move(paths);
  }

  const sim::Scenario& scenario_;
  const SimNodeOptions& o_;
  Micros origin_;
  fs::path host_;
  std::set<int> laid_out_;
  sim::HostUids uids_;
  std::vector<Grant> last_grants_;
  std::map<ConsumerRef, Micros> ended_;
  std::set<fs::path> kubelet_paths_;
};

// The simulator's truth of what ran on the node: the same scenario, node and step as the NVML
// stand-in's, from the same origin, so its intervals are exactly those the stand-in's samples
// describe (sim::NodeStepper equals the stand-in's stepper field for field).
class TruthKeeper {
 public:
  static Result<std::unique_ptr<TruthKeeper>> Open(const sim::Scenario& scenario,
                                                   const SimNodeOptions& o, Micros step_us,
                                                   Micros origin) {
    auto stepper = sim::NodeStepper::Create(scenario, o.node, step_us);
    if (!stepper) return stepper.error();
    std::unique_ptr<TruthKeeper> k(new TruthKeeper(std::move(*stepper), o, origin));
    if (!o.truth_log.empty()) {
      k->log_.open(o.truth_log, std::ios::out | std::ios::trunc);
      if (!k->log_) return IoError(fmt::format("--truth-log '{}': cannot write", o.truth_log));
      k->log_ << "at_unix_us,key,allocated_gpu_us,compute_gpu_us,memory_byte_us\n";
    }
    return k;
  }

  // Delivers the intervals that ended by `wall` (µs since the epoch), logging each end.
  Status Advance(Micros wall) {
    const Micros start = stepper_.scenario().start_us;
    const Micros sim_now = start + (wall - origin_);
    while (!stepper_.done() && stepper_.next_end_us() <= sim_now) {
      const Micros end = stepper_.next_end_us();
      stepper_.AdvanceTo(end);
      if (!log_.is_open()) continue;
      for (const auto& [ref, t] : stepper_.truth())
        log_ << fmt::format("{},{},{},{:.0f},{:.0f}\n", origin_ + (end - start), ref.Key(),
                            t.AllocatedUs(), t.compute_gpu_us, t.memory_byte_us);
    }
    if (log_.is_open() && !log_.flush())
      return IoError(fmt::format("--truth-log '{}': write failed", o_.truth_log));
    return Status::Ok();
  }

  Status Write() const {
    if (o_.truth.empty()) return Status::Ok();
    if (Status s = WriteFile(o_.truth, sim::TruthCsv(stepper_.truth())); !s.ok())
      return IoError("--truth: " + s.error().message);
    return Status::Ok();
  }

 private:
  TruthKeeper(sim::NodeStepper stepper, const SimNodeOptions& o, Micros origin)
      : stepper_(std::move(stepper)), o_(o), origin_(origin) {}

  sim::NodeStepper stepper_;
  const SimNodeOptions& o_;
  Micros origin_;
  std::ofstream log_;
};

}  // namespace

struct SimNode::Impl {
  SimNodeOptions options;
  sim::Scenario scenario;
  fs::path dir;
  Micros origin = 0;
  fake::FakeKubelet kubelet;
  fake::FakeCri cri;
  std::unique_ptr<NodeWorld> world;
  std::unique_ptr<TruthKeeper> truth;  // null unless --truth or --truth-log
};

SimNode::SimNode(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SimNode::~SimNode() {
  impl_->kubelet.Stop();
  impl_->cri.Stop();
}

Result<std::unique_ptr<SimNode>> SimNode::Start(const SimNodeOptions& o) {
  auto impl = std::make_unique<Impl>();
  impl->options = o;
  auto scenario = sim::LoadScenarioFile(o.scenario);
  if (!scenario) return scenario.error();
  impl->scenario = std::move(*scenario);
  bool found = false;
  for (const auto& n : impl->scenario.nodes) found = found || n.name == o.node;
  if (!found)
    return InvalidArgument(fmt::format("--node '{}': the scenario has no such node", o.node));
  auto step = ParseDuration(o.standin_step);
  if (!step || *step <= 0)
    return InvalidArgument(fmt::format(
        "--standin-step '{}': expected a duration > 0 (e.g. 1s, 100ms)", o.standin_step));
  std::error_code ec;
  impl->dir = fs::absolute(o.dir);
  fs::create_directories(impl->dir / "host" / "proc", ec);
  if (ec) return InvalidArgument(fmt::format("--dir '{}': {}", o.dir, ec.message()));
  // The scenario's start is now: the stand-in and this world follow the same clock.
  impl->origin = WallNowUs();
  Status s = WriteFile((impl->dir / "nvml-standin.yaml").string(),
                       fmt::format("scenario: \"{}\"\nnode: \"{}\"\norigin_unix_us: {}\n"
                                   "step: {}\nfaults: \"{}\"\n",
                                   fs::absolute(o.scenario).string(), o.node, impl->origin,
                                   o.standin_step, (impl->dir / "nvml-faults").string()));
  if (!s.ok()) return s.error();
  std::unique_ptr<SimNode> node(new SimNode(std::move(impl)));
  Impl& i = *node->impl_;
  i.world = std::make_unique<NodeWorld>(i.scenario, i.options, i.origin);
  if (!o.truth.empty() || !o.truth_log.empty()) {
    auto truth = TruthKeeper::Open(i.scenario, i.options, *step, i.origin);
    if (!truth) return truth.error();
    i.truth = std::move(*truth);
  }
  if (Status u = node->Update(); !u.ok()) return u.error();
  if (Status k = i.kubelet.Start(node->kubelet_socket()); !k.ok()) return k.error();
  if (Status c = i.cri.Start(node->cri_socket()); !c.ok()) return c.error();
  return node;
}

Status SimNode::Update() {
  if (Status s = impl_->world->Update(impl_->kubelet, impl_->cri); !s.ok()) return s;
  return WriteTruth();
}

Status SimNode::WriteTruth() {
  if (!impl_->truth) return Status::Ok();
  if (Status s = impl_->truth->Advance(WallNowUs()); !s.ok()) return s;
  return impl_->truth->Write();
}
fake::FakeKubelet& SimNode::kubelet() { return impl_->kubelet; }
fake::FakeCri& SimNode::cri() { return impl_->cri; }
std::string SimNode::host_root() const { return (impl_->dir / "host").string(); }
std::string SimNode::kubelet_socket() const { return (impl_->dir / "kubelet.sock").string(); }
std::string SimNode::cri_socket() const { return (impl_->dir / "cri.sock").string(); }
std::string SimNode::standin_config() const { return (impl_->dir / "nvml-standin.yaml").string(); }
std::string SimNode::faults_file() const { return (impl_->dir / "nvml-faults").string(); }

std::string SimNode::AgentCommand() const {
  const SimNodeOptions& o = impl_->options;
  return fmt::format(
      "GPULEDGER_NVML_SCENARIO={} {} agent --node-name {} --host-root {} --nvml-library {} "
      "--pod-resources-socket {} --listen 127.0.0.1:9400 --interval 1s",
      standin_config(), o.agent_binary, o.node, host_root(), o.nvml_standin, kubelet_socket());
}

int RunSimNode(const SimNodeOptions& o, const std::atomic<bool>& stop, std::ostream& out,
               std::ostream& err) {
  auto node = SimNode::Start(o);
  if (!node) {
    err << "error: " << node.error().message << "\n";
    return cli::ExitCodeFor(node.error());
  }
  out << fmt::format(
      "simulated node '{}' is up under {}\nrun the agent against it with:\n\n{}\n\n"
      "faults: write lines to {} (see testing/nvml_standin/README.md); Ctrl-C stops the node\n",
      o.node, o.dir, (*node)->AgentCommand(), (*node)->faults_file());
  out.flush();
  while (!stop.load()) {
    std::this_thread::sleep_for(
        std::chrono::milliseconds(static_cast<int>(o.refresh_seconds * 1000)));
    if (Status s = (*node)->Update(); !s.ok()) err << "warning: " << s.error().message << "\n";
  }
  // The truth up to the moment the node stopped.
  if (Status s = (*node)->WriteTruth(); !s.ok()) {
    err << "error: " << s.error().message << "\n";
    return 1;
  }
  if (!o.truth.empty()) out << "truth written to " << o.truth << "\n";
  return 0;
}

}  // namespace gpuledger::simnode
