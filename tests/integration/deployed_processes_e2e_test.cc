// Issue 33: the manifests run, without a cluster. deploy/overlays/embedded is rendered
// (`kubectl kustomize`), and its agent and server run as a kubelet would run them: in the
// image's file system (scripts/image-rootfs.sh) as their root, read-only, each in a mount and
// PID namespace of its own, with exactly the arguments, environment and volume mounts the
// manifests give them (the container's args with $(VAR) expanded from its env), as the user the
// manifests name. What stands in for the cluster: a simulated GPU node (its procfs, kubelet and
// CRI sockets, and NVML through the stand-in library where the NVIDIA runtime would mount the
// driver's), a fake API server over TLS for the in-cluster client (service-account token and CA
// where a pod has them, the agents' Endpoints), temp directories for the volumes. The only
// change to the manifests: the listen ports, so that tests can run side by side.
//
// It passes when the server, from what the manifests say alone, finds the agent through the
// API server, scrapes it, and writes the node's GPU time into the ledger on its volume.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <regex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "fake_apiserver/fake_apiserver.h"
#include "free_port.h"
#include "http/client.h"
#include "io/file_util.h"
#include "process_util.h"
#include "temp_dir.h"
#include "test_paths.h"
#include "test_tls/test_tls.h"

namespace gpuledger {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Single-quoted for sh.
std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The object of `kind` named `name` among the rendered ones.
const json* Find(const json& objects, const std::string& kind, const std::string& name) {
  for (const json& o : objects)
    if (o.value("kind", "") == kind && o["metadata"].value("name", "") == name) return &o;
  return nullptr;
}

// One container as a kubelet runs it, here.
struct ContainerRun {
  std::string root;                                                // the image's file system
  std::vector<std::tuple<std::string, std::string, bool>> mounts;  // source, target, read-only
  std::map<std::string, std::string> env;
  std::vector<std::string> argv;  // in the container
  std::string user = "0:0";       // "UID:GID"
  std::string capabilities = "-";  // what the manifest adds to drop [ALL], comma-separated
};

// `unshare` (mount and PID namespaces), the root bound read-only with the volumes over it,
// /proc of the new PID namespace, then container_exec: chroot, exactly the manifest's
// capabilities, the user, exactly `env`. When unshare ends, the namespace ends with it.
std::vector<std::string> Command(const ContainerRun& run) {
  std::string script = "set -e\n";
  script += "mount --bind " + Quote(run.root) + " " + Quote(run.root) + "\n";
  script += "mount -o remount,bind,ro " + Quote(run.root) + "\n";
  script += "mount -t proc proc " + Quote(run.root + "/proc") + "\n";
  for (const auto& [source, target, read_only] : run.mounts) {
    const std::string at = Quote(run.root + target);
    script += "mount --bind " + Quote(source) + " " + at + "\n";
    if (read_only) script += "mount -o remount,bind,ro " + at + "\n";
  }
  // Not exec'd: this root shell stays the namespace's first process. The container's process
  // runs as another user, which clears the parent-death signal unshare arranges, so only a
  // first process that keeps it can take the whole namespace down with it (it leaked a server
  // a run before).
  script += "env -i";
  for (const auto& [k, v] : run.env) script += " " + Quote(k + "=" + v);
  const fs::path exec = fs::read_symlink("/proc/self/exe").parent_path() / "container_exec";
  script += " " + Quote(exec.string()) + " " + Quote(run.root) + " " + Quote(run.user) + " " +
            Quote(run.capabilities);
  for (const std::string& a : run.argv) script += " " + Quote(a);
  script += "\nexit $?\n";  // a last command, or the shell would exec the one before
  // SIGKILL: a namespace's first process ignores any other signal it has no handler for.
  return {"/usr/bin/unshare",     "--mount", "--pid", "--fork",
          "--kill-child=SIGKILL", "/bin/sh", "-c",    script};
}

// /proc/<pid>/status of the gpuledger process whose arguments hold `argument`, or "".
std::string StatusOf(const std::string& argument) {
  for (const auto& entry : fs::directory_iterator("/proc")) {
    auto cmdline = ReadFile((entry.path() / "cmdline").string());
    if (!cmdline || !cmdline->starts_with("/usr/bin/gpuledger")) continue;
    if (cmdline->find(argument + '\0') == std::string::npos) continue;
    if (auto status = ReadFile((entry.path() / "status").string())) return *status;
  }
  return "";
}

class DeployedProcessesE2e : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) const { return (dir_.path() / name).string(); }
  // A mount point in the image's root for `target` (a directory, or a file for a file source).
  void MountPoint(const std::string& source, const std::string& target) {
    const fs::path at = fs::path(root_) / fs::path(target).relative_path();
    if (fs::is_directory(source)) {
      fs::create_directories(at);
    } else {
      fs::create_directories(at.parent_path());
      if (!fs::exists(at)) {
        ASSERT_TRUE(WriteFile(at.string(), "").ok()) << at;
      }
    }
  }
  // The container's volumes as `run.mounts`: each volume of the pod by what it is.
  void MountVolumes(const json& pod, const json& container, ContainerRun& run,
                    const std::map<std::string, std::string>& host_paths,
                    const std::map<std::string, std::string>& claims) {
    std::map<std::string, json> volumes;
    for (const json& v : pod.value("volumes", json::array())) volumes[v["name"]] = v;
    for (const json& m : container.value("volumeMounts", json::array())) {
      ASSERT_TRUE(volumes.contains(m["name"])) << m.dump();
      const json& v = volumes[m["name"]];
      std::string source;
      if (v.contains("hostPath")) {
        auto it = host_paths.find(v["hostPath"]["path"]);
        ASSERT_NE(it, host_paths.end()) << "the manifests mount host path " << v["hostPath"]["path"]
                                        << ", which this test does not stand in for: add it";
        source = it->second;
      } else if (v.contains("configMap") || v.contains("secret")) {
        const bool config_map = v.contains("configMap");
        const std::string name = config_map ? v["configMap"]["name"] : v["secret"]["secretName"];
        source = Path((config_map ? "configmaps/" : "secrets/") + name);
        ASSERT_TRUE(fs::is_directory(source)) << "no " << source << " for " << v.dump();
      } else if (v.contains("emptyDir")) {
        source = Path("emptydirs/" + v["name"].get<std::string>());
        fs::create_directories(source);
        fs::permissions(source, fs::perms::all);
      } else if (v.contains("persistentVolumeClaim")) {
        auto it = claims.find(v["persistentVolumeClaim"]["claimName"]);
        ASSERT_NE(it, claims.end()) << v.dump();
        source = it->second;
      } else {
        FAIL() << "a volume this test does not know: " << v.dump();
      }
      MountPoint(source, m["mountPath"]);
      run.mounts.emplace_back(source, m["mountPath"], m.value("readOnly", false));
    }
  }
  // The container's env (values and the downward API), then its args with $(VAR) expanded.
  void EnvAndArgs(const json& container, const std::map<std::string, std::string>& field_refs,
                  ContainerRun& run) {
    for (const json& e : container.value("env", json::array())) {
      if (e.contains("value")) {
        run.env[e["name"]] = e["value"];
      } else {
        const std::string field = e["valueFrom"]["fieldRef"]["fieldPath"];
        ASSERT_TRUE(field_refs.contains(field)) << e.dump();
        run.env[e["name"]] = field_refs.at(field);
      }
    }
    run.argv.push_back(container.value("command", json::array({"/usr/bin/gpuledger"}))[0]);
    for (const json& a : container["args"]) {
      std::string arg = a;
      for (const auto& [k, v] : run.env) {
        for (std::size_t at; (at = arg.find("$(" + k + ")")) != std::string::npos;)
          arg.replace(at, k.size() + 3, v);
      }
      run.argv.push_back(arg);
    }
  }
  // The capabilities the container's securityContext adds to `drop: [ALL]`.
  static std::string Capabilities(const json& container) {
    const json caps = container.value("securityContext", json::object())
                          .value("capabilities", json::object());
    EXPECT_EQ(caps.value("drop", json::array()), json::array({"ALL"})) << container["name"];
    std::string out;
    for (const json& c : caps.value("add", json::array()))
      out += (out.empty() ? "" : ",") + c.get<std::string>();
    return out.empty() ? "-" : out;
  }
  // The listen flag's port replaced (the one change to the manifests).
  static void Listen(ContainerRun& run, const std::string& address) {
    for (std::string& a : run.argv)
      if (a.starts_with("--listen=")) a = "--listen=" + address;
  }

  testing::TempDir dir_{"gpuledger-deployed"};
  std::string root_;
};

TEST_F(DeployedProcessesE2e, TheEmbeddedOverlaysAgentAndServerMeterASimulatedNode) {
  if (::geteuid() != 0) GTEST_SKIP() << "mount namespaces and chroot need root";
  int code = 0;
  const std::string repo = test_paths::kSourceDir;
  const std::string rendered =
      RunCapture("kubectl kustomize " + repo + "/deploy/overlays/embedded | node " + repo +
                     "/tests/deploy/to_json.mjs",
                 &code);
  ASSERT_EQ(code, 0) << rendered;
  const json objects = json::parse(rendered);
  const json* daemonset = Find(objects, "DaemonSet", "gpuledger-agent");
  const json* deployment = Find(objects, "Deployment", "gpuledger-server");
  const json* policy = Find(objects, "ConfigMap", "gpuledger-policy");
  ASSERT_TRUE(daemonset && deployment && policy);
  const json& agent_pod = (*daemonset)["spec"]["template"]["spec"];
  const json& server_pod = (*deployment)["spec"]["template"]["spec"];

  // The image's file system, as the Dockerfile makes it.
  root_ = Path("rootfs");
  const std::string build =
      fs::path(test_paths::kGpuledgerBin).parent_path().parent_path().parent_path().string();
  RunCapture(repo + "/scripts/image-rootfs.sh " + build + " " + root_, &code);
  ASSERT_EQ(code, 0);
  fs::create_directories(root_ + "/proc");

  // The node: a simulated one with two GPUs and three containers on them.
  ASSERT_TRUE(WriteFile(Path("scenario.yaml"), R"(
name: deployed
start: "2026-11-23T00:00:00Z"
duration: 2h
nodes:
  - {name: n1, gpu_model: A100-80GB, gpus: 2, sharing: time-slicing, replicas: 4}
workloads:
  - {namespace: web, name: api, replicas: 3, compute: {profile: constant, duty: 0.2}, memory: {bytes: 3GiB}}
)")
                  .ok());
  const std::string node = Path("node");
  Child sim(
      {test_paths::kSimNodeBin, "--scenario", Path("scenario.yaml"), "--node", "n1", "--dir", node},
      Path("sim.out"));
  const std::string printed =
      WaitFor(Path("sim.out"), std::regex("^(GPULEDGER_NVML_SCENARIO=\\S+)"), 20s);
  ASSERT_FALSE(printed.empty()) << *ReadFile(Path("sim.out.err"));
  fs::create_directories(node + "/host/etc");
  if (!fs::exists(node + "/host/etc/passwd")) {
    ASSERT_TRUE(WriteFile(node + "/host/etc/passwd", "root:x:0:0:root:/root:/bin/sh\n").ok());
  }
  fs::create_directories(node + "/host/run/gpuledger/kerneltime");

  // ConfigMaps and Secrets as the kubelet projects them: a file per key.
  for (const auto& [key, value] : (*policy)["data"].items()) {
    fs::create_directories(Path("configmaps/gpuledger-policy"));
    ASSERT_TRUE(WriteFile(Path("configmaps/gpuledger-policy/" + key), value).ok());
  }
  fs::create_directories(Path("secrets/gpuledger-api-token"));
  ASSERT_TRUE(WriteFile(Path("secrets/gpuledger-api-token/token"), "deployed-token").ok());

  // The agent: uid 0 with exactly the manifest's capabilities (none), the node's paths where
  // its hostPath volumes point (no runtime socket among them: containers are found from the
  // kubelet's files), and NVML where the NVIDIA runtime mounts the driver's library.
  const int agent_port = testing::FreePort();
  ContainerRun agent{root_};
  for (const char* kubelet_dir : {"/host/var/log/pods", "/host/var/log/containers",
                                  "/host/sys/fs/cgroup"})
    fs::create_directories(node + kubelet_dir);
  MountVolumes(agent_pod, agent_pod["containers"][0], agent,
               {{"/proc", node + "/host/proc"},
                {"/etc/passwd", node + "/host/etc/passwd"},
                {"/run/gpuledger/kerneltime", node + "/host/run/gpuledger/kerneltime"},
                {"/var/lib/kubelet/pod-resources", node},
                {"/var/log/pods", node + "/host/var/log/pods"},
                {"/var/log/containers", node + "/host/var/log/containers"},
                {"/sys/fs/cgroup", node + "/host/sys/fs/cgroup"}},
               {});
  agent.capabilities = Capabilities(agent_pod["containers"][0]);
  EXPECT_EQ(agent.capabilities, "-") << "the agent holds no capability by default";
  MountPoint(test_paths::kNvmlStandin, "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1");
  agent.mounts.emplace_back(test_paths::kNvmlStandin, "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
                            true);
  // The stand-in reads its scenario from the test's directory: the same path inside.
  MountPoint(dir_.path().string(), dir_.path().string());
  agent.mounts.emplace_back(dir_.path().string(), dir_.path().string(), true);
  EnvAndArgs(agent_pod["containers"][0], {{"spec.nodeName", "n1"}}, agent);
  agent.env["GPULEDGER_NVML_SCENARIO"] = printed.substr(printed.find('=') + 1);
  EXPECT_EQ(agent_pod["containers"][0]["securityContext"].value("runAsUser", -1), 0);
  Listen(agent, "127.0.0.1:" + std::to_string(agent_port));
  Child agent_process(Command(agent), Path("agent.out"));
  ASSERT_FALSE(WaitFor(Path("agent.out"), std::regex("serving http://[^:]+:(\\d+)/"), 20s).empty())
      << *ReadFile(Path("agent.out.err"));
  // As the kernel sees it: uid 0 and not one effective or permitted capability.
  const std::string status = StatusOf("--listen=127.0.0.1:" + std::to_string(agent_port));
  EXPECT_NE(status.find("\nUid:\t0\t0\t0\t0\n"), std::string::npos) << status;
  EXPECT_NE(status.find("\nCapEff:\t0000000000000000\n"), std::string::npos) << status;
  EXPECT_NE(status.find("\nCapPrm:\t0000000000000000\n"), std::string::npos) << status;

  // The API server the server's in-cluster client finds: HTTPS, verified against the CA in
  // the service account's directory, wanting its token; the agents' Endpoints as the
  // DaemonSet's Service would have them.
  fs::create_directories(Path("sa"));
  fs::create_directories(Path("sa-certs"));
  auto certs = webhook::testing::MakeTestCertificates(Path("sa-certs"));
  ASSERT_TRUE(certs) << certs.error().message;
  fs::copy_file(certs->ca_file, Path("sa/ca.crt"));
  ASSERT_TRUE(WriteFile(Path("sa/token"), "sa-token").ok());
  ASSERT_TRUE(WriteFile(Path("sa/namespace"), "gpuledger").ok());
  fake::FakeApiServer::Options api_options;
  api_options.bearer_token = "sa-token";
  api_options.tls_cert_file = certs->cert_file;
  api_options.tls_key_file = certs->key_file;
  fake::FakeApiServer api(api_options);
  ASSERT_TRUE(api.Start().ok());
  api.Upsert("endpoints", {{"apiVersion", "v1"},
                           {"kind", "Endpoints"},
                           {"metadata", {{"namespace", "gpuledger"}, {"name", "gpuledger-agent"}}},
                           {"subsets",
                            {{{"addresses", {{{"ip", "127.0.0.1"}}}},
                              {"ports", {{{"name", "metrics"}, {"port", agent_port}}}}}}}});

  // The server: its user, its volumes (the ledger's claim owned by its fsGroup), the
  // service-account token a pod gets, and the kubelet's KUBERNETES_SERVICE_* variables.
  const json& sc = server_pod["securityContext"];
  const int uid = sc.value("runAsUser", -1);
  const int gid = sc.value("fsGroup", -1);
  ASSERT_GT(uid, 0);
  fs::create_directories(Path("claims/gpuledger-ledger"));
  ASSERT_EQ(::chown(Path("claims/gpuledger-ledger").c_str(), uid, gid), 0);
  ContainerRun server{root_};
  MountVolumes(server_pod, server_pod["containers"][0], server, {},
               {{"gpuledger-ledger", Path("claims/gpuledger-ledger")}});
  MountPoint(Path("sa"), "/var/run/secrets/kubernetes.io/serviceaccount");
  server.mounts.emplace_back(Path("sa"), "/var/run/secrets/kubernetes.io/serviceaccount", true);
  EnvAndArgs(server_pod["containers"][0], {{"metadata.namespace", "gpuledger"}}, server);
  server.env["KUBERNETES_SERVICE_HOST"] = "127.0.0.1";
  server.env["KUBERNETES_SERVICE_PORT"] = std::to_string(api.port());
  server.user = std::to_string(uid) + ":" + std::to_string(gid);
  server.capabilities = Capabilities(server_pod["containers"][0]);
  Listen(server, "127.0.0.1:0");
  Child server_process(Command(server), Path("server.out"));
  const std::string port = WaitFor(Path("server.out"), std::regex("http://[^:]+:(\\d+)/"), 30s);
  ASSERT_FALSE(port.empty()) << *ReadFile(Path("server.out.err"));
  const std::string base = "http://127.0.0.1:" + port;

  // The agent found through the API server and scraped, and its node's GPU time in the ledger.
  const std::string up =
      "gpuledger_server_scrape_up{target=\"127.0.0.1:" + std::to_string(agent_port) + "\"} 1";
  std::string metrics;
  for (int i = 0; i < 300 && metrics.find(up) == std::string::npos; ++i) {
    std::this_thread::sleep_for(100ms);
    auto r = http::Get({base + "/metrics"});
    if (r && r->status == 200) metrics = r->body;
  }
  ASSERT_NE(metrics.find(up), std::string::npos) << metrics << "\n"
                                                 << *ReadFile(Path("server.out.err"));
  EXPECT_EQ(http::Get({base + "/readyz"})->status, 200);
  std::string report;
  for (int i = 0; i < 100; ++i) {
    report = RunCapture(std::string(test_paths::kGpuledgerBin) + " report --server " + base +
                            " --token-file " + Path("secrets/gpuledger-api-token/token") +
                            " --format json",
                        &code);
    if (code == 0 && report.find("\"key\": \"web\"") != std::string::npos) break;
    std::this_thread::sleep_for(200ms);
  }
  ASSERT_EQ(code, 0) << report;
  EXPECT_NE(report.find("\"key\": \"web\""), std::string::npos) << report;
  // Every process tied to its pod from the kubelet's files: none left by pod UID alone.
  EXPECT_EQ(report.find("__unresolved__"), std::string::npos) << report;
  // The ledger is on the claim, written by the server's user; the image's root untouched.
  struct stat st {};
  ASSERT_EQ(::stat(Path("claims/gpuledger-ledger/ledger.db").c_str(), &st), 0);
  EXPECT_EQ(static_cast<int>(st.st_uid), uid);
  EXPECT_FALSE(fs::exists(root_ + "/var/lib/gpuledger/ledger.db"));
}

}  // namespace
}  // namespace gpuledger
