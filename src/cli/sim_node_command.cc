#include "cli/sim_node_command.h"

#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "cli/report_command.h"
#include "common/file_util.h"
#include "fake_grpc/fake_cri.h"
#include "fake_grpc/fake_kubelet.h"
#include "sources/sim/scenario.h"
#include "sources/sim/simulator.h"

namespace gpuledger::cli {
namespace {

namespace fs = std::filesystem;

Micros WallNowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Underscored(std::string uid) {
  for (char& c : uid)
    if (c == '-') c = '_';
  return uid;
}

// A cgroup v2 path as the kubelet's systemd driver names it.
std::string PodCgroup(const ConsumerRef& ref) {
  return fmt::format(
      "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice/"
      "cri-containerd-{}.scope\n",
      Underscored(ref.pod_uid.value), sim::ContainerIdFor(ref));
}

struct HostUser {
  std::string cgroup;
  int uid;
  std::string user;
};

// "user:alice" -> a login session of alice; "unit:x.service" -> a system service.
HostUser HostIdentity(const std::string& host_name, std::map<std::string, int>& uids) {
  if (host_name.starts_with("unit:"))
    return {fmt::format("0::/system.slice/{}\n", host_name.substr(5)), 0, "root"};
  std::string user = host_name.starts_with("user:") ? host_name.substr(5) : host_name;
  auto [it, fresh] = uids.try_emplace(user, 1000 + static_cast<int>(uids.size()));
  return {fmt::format("0::/user.slice/user-{0}.slice/session-{0}.scope\n", it->second), it->second,
          user};
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
    std::string passwd = "root:x:0:0:root:/root:/bin/bash\n";
    for (const ProcessObservation& p : state.processes) {
      live.insert(p.pid);
      fs::path dir = host_ / "proc" / std::to_string(p.pid);
      std::error_code ec;
      fs::create_directories(dir, ec);
      if (ec) return IoError(fmt::format("{}: {}", dir.string(), ec.message()));
      std::string cgroup;
      int uid = 0;
      if (p.consumer) {
        cgroup = PodCgroup(*p.consumer);
      } else {
        HostUser h = HostIdentity(p.host_name, uids_);
        cgroup = h.cgroup;
        uid = h.uid;
      }
      std::string environ = "PATH=/usr/local/bin:/usr/bin";
      environ.push_back('\0');
      std::string visible = p.visible_devices.empty() ? p.device.value : p.visible_devices;
      environ += "NVIDIA_VISIBLE_DEVICES=" + visible;
      environ.push_back('\0');
      for (auto [name, content] :
           {std::pair<const char*, std::string>{"cgroup", cgroup},
            {"status", fmt::format("Name:\tpython3\nPid:\t{}\nUid:\t{}\t{}\t{}\t{}\n", p.pid, uid,
                                   uid, uid, uid)},
            {"comm", "python3\n"},
            {"environ", environ}}) {
        if (Status s = WriteFile((dir / name).string(), content); !s.ok()) return s;
      }
    }
    for (const auto& [user, uid] : uids_) passwd += fmt::format("{0}:x:{1}:{1}::/home/{0}:/bin/bash\n", user, uid);
    fs::create_directories(host_ / "etc");
    if (Status s = WriteFile((host_ / "etc" / "passwd").string(), passwd); !s.ok()) return s;
    // Processes that ended leave /proc, as they do on a real node.
    for (int pid : laid_out_)
      if (!live.count(pid)) fs::remove_all(host_ / "proc" / std::to_string(pid));
    laid_out_ = live;
    return Status::Ok();
  }

  void UpdateKube(const sim::NodeState& state, Micros wall, fake::FakeKubelet& kubelet,
                  fake::FakeCri& cri) {
    // Grants grouped per container and resource, as the kubelet lists them.
    std::map<std::pair<ConsumerRef, std::string>, kubelet::ContainerGrant> grants;
    for (const Grant& g : state.grants) {
      auto& cg = grants[{g.consumer, g.dra_claim.empty() ? g.resource_name : ""}];
      cg.namespace_name = g.consumer.namespace_name;
      cg.pod = g.consumer.pod;
      cg.container = g.consumer.container;
      if (g.dra_claim.empty()) {
        cg.resource_name = g.resource_name;
        cg.device_ids.push_back(g.device_id);
      } else {
        cg.dra.push_back(kubelet::DraDevice{g.dra_claim, "gpu.nvidia.com", o_.node, "", "",
                                            {"k8s.gpu.nvidia.com/device=" + g.device_id}});
      }
    }
    std::set<ConsumerRef> running;
    for (const ConsumerInfo& pod : state.pods) {
      running.insert(pod.ref);
      ended_.erase(pod.ref);
    }
    // Pods that stopped running linger as terminal for a while, grants and all.
    for (const auto& [ref, grant] : last_grants_)
      if (!running.count(ref.first) && !ended_.count(ref.first)) ended_[ref.first] = wall;
    std::erase_if(ended_, [&](const auto& kv) {
      return wall - kv.second > static_cast<Micros>(o_.terminal_linger_seconds * 1e6);
    });
    for (const auto& [key, grant] : last_grants_)
      if (ended_.count(key.first) && !grants.count(key)) grants[key] = grant;
    last_grants_ = grants;
    std::vector<kubelet::ContainerGrant> list;
    for (auto& [k, g] : grants) list.push_back(g);
    kubelet.SetGrants(list);

    std::vector<kubelet::AllocatableDevice> allocatable;
    for (const PhysicalGpu& gpu : state.gpus) {
      bool mig = false;
      for (const MigInstance& m : state.mig_instances)
        if (m.parent == gpu.uuid) {
          mig = true;
          allocatable.push_back({"nvidia.com/mig-" + m.profile, m.uuid.value});
        }
      if (mig) continue;
      if (gpu.replicas > 1)
        for (int r = 0; r < gpu.replicas; ++r)
          allocatable.push_back({"nvidia.com/gpu", fmt::format("{}::{}", gpu.uuid.value, r)});
      else
        allocatable.push_back({"nvidia.com/gpu", gpu.uuid.value});
    }
    kubelet.SetAllocatable(allocatable);

    std::vector<cri::PodSandbox> sandboxes;
    std::vector<cri::Container> containers;
    std::set<std::string> seen_pods;
    auto add = [&](const ConsumerRef& ref, bool ready) {
      std::string sandbox_id = sim::ContainerIdFor(ConsumerRef{ref.namespace_name, ref.pod, ref.pod_uid, "__sandbox__"});
      if (seen_pods.insert(sandbox_id).second)
        sandboxes.push_back(cri::PodSandbox{sandbox_id, ref.pod, ref.namespace_name, ref.pod_uid.value, ready, {}});
      containers.push_back(cri::Container{sim::ContainerIdFor(ref), sandbox_id, ref.container, ready});
    };
    for (const ConsumerRef& ref : running) add(ref, true);
    for (const auto& [ref, since] : ended_) add(ref, false);
    cri.SetSandboxes(sandboxes);
    cri.SetContainers(containers);
  }

  const sim::Scenario& scenario_;
  const SimNodeOptions& o_;
  Micros origin_;
  fs::path host_;
  std::set<int> laid_out_;
  std::map<std::string, int> uids_;
  std::map<std::pair<ConsumerRef, std::string>, kubelet::ContainerGrant> last_grants_;
  std::map<ConsumerRef, Micros> ended_;
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
  if (!found) return InvalidArgument(fmt::format("--node '{}': the scenario has no such node", o.node));
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
  if (Status u = node->Update(); !u.ok()) return u.error();
  if (Status k = i.kubelet.Start(node->kubelet_socket()); !k.ok()) return k.error();
  if (Status c = i.cri.Start(node->cri_socket()); !c.ok()) return c.error();
  return node;
}

Status SimNode::Update() { return impl_->world->Update(impl_->kubelet, impl_->cri); }
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
      "--pod-resources-socket {} --cri-socket {} --listen 127.0.0.1:9400 --interval 1s",
      standin_config(), o.agent_binary, o.node, host_root(), o.nvml_standin, kubelet_socket(),
      cri_socket());
}

int RunSimNode(const SimNodeOptions& o, const std::atomic<bool>& stop, std::ostream& out,
               std::ostream& err) {
  auto node = SimNode::Start(o);
  if (!node) {
    err << "error: " << node.error().message << "\n";
    return ExitCodeFor(node.error());
  }
  out << fmt::format(
      "simulated node '{}' is up under {}\nrun the agent against it with:\n\n{}\n\n"
      "faults: write lines to {} (see testing/nvml_standin/README.md); Ctrl-C stops the node\n",
      o.node, o.dir, (*node)->AgentCommand(), (*node)->faults_file());
  out.flush();
  while (!stop.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(o.refresh_seconds * 1000)));
    if (Status s = (*node)->Update(); !s.ok()) err << "warning: " << s.error().message << "\n";
  }
  return 0;
}

}  // namespace gpuledger::cli
