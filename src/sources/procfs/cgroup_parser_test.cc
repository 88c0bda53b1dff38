#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "sources/procfs/proc_source.h"
#include "test_paths.h"

namespace gpuledger::procfs {
namespace {

namespace fs = std::filesystem;

constexpr char kId[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
constexpr char kUid[] = "1b2c3d4e-0000-4a4a-8b8b-123456789abc";
constexpr char kUidSystemd[] = "1b2c3d4e_0000_4a4a_8b8b_123456789abc";

std::string Slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::vector<std::string> SplitCsvLine(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, ',')) fields.push_back(field);
  if (!line.empty() && line.back() == ',') fields.emplace_back();
  return fields;
}

// Every real /proc/<pid>/cgroup in shared/data/cgroup against index.csv's expectations.
TEST(ParseProcCgroup, SharedDataCases) {
  const fs::path dir = fs::path(gpuledger::test_paths::kSharedData) / "cgroup";
  if (!fs::exists(dir / "index.csv"))
    GTEST_SKIP() << "shared test data missing: " << dir << " (expected ../shared/data/cgroup)";
  std::ifstream index(dir / "index.csv");
  std::string line;
  std::getline(index, line);  // header
  ASSERT_EQ(SplitCsvLine(line)[0], "file");
  int cases = 0;
  while (std::getline(index, line)) {
    if (line.empty()) continue;
    const std::vector<std::string> f = SplitCsvLine(line);
    ASSERT_GE(f.size(), 6u) << line;
    const std::string& file = f[0];
    const std::string& want_id = f[4];
    const std::string& want_pod = f[5];
    const std::string content = Slurp(dir / file);
    ASSERT_FALSE(content.empty()) << file;
    auto ref = ParseProcCgroup(content);
    if (want_id.empty()) {
      ASSERT_FALSE(ref) << file << " gave " << ref->container_id;
      EXPECT_EQ(ref.error().code, ErrorCode::kNotFound) << file;
    } else {
      ASSERT_TRUE(ref) << file << ": " << ref.error().message;
      EXPECT_EQ(ref->container_id, want_id) << file;
      EXPECT_EQ(ref->pod_uid, want_pod) << file;
    }
    ++cases;
  }
  EXPECT_EQ(cases, 10);
}

struct V2Case {
  const char* name;
  std::string content;
  std::string want_id;  // empty: no container
  std::string want_pod;
  std::string want_runtime;
};

// cgroup v2 files written from the kubelet naming rules (shared/data/README.md).
std::vector<V2Case> V2Cases() {
  const std::string id = kId;
  const std::string uid = kUid;
  const std::string us = kUidSystemd;
  return {
      {"systemd_guaranteed_containerd",
       "0::/kubepods.slice/kubepods-pod" + us + ".slice/cri-containerd-" + id + ".scope\n", id, uid,
       "containerd"},
      {"systemd_burstable_containerd",
       "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + us +
           ".slice/cri-containerd-" + id + ".scope\n",
       id, uid, "containerd"},
      {"systemd_besteffort_crio",
       "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + us +
           ".slice/crio-" + id + ".scope\n",
       id, uid, "crio"},
      {"systemd_docker",
       "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + us +
           ".slice/docker-" + id + ".scope\n",
       id, uid, "docker"},
      {"crio_conmon_is_not_the_workload",
       "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + us +
           ".slice/crio-conmon-" + id + ".scope\n",
       "", "", ""},
      {"crio_container_subcgroup",
       "0::/kubepods.slice/kubepods-pod" + us + ".slice/crio-" + id + ".scope/container\n", id, uid,
       "crio"},
      {"cgroupfs_guaranteed", "0::/kubepods/pod" + uid + "/" + id + "\n", id, uid, ""},
      {"cgroupfs_burstable", "0::/kubepods/burstable/pod" + uid + "/" + id + "\n", id, uid, ""},
      {"cgroupfs_besteffort_subcgroup",
       "0::/kubepods/besteffort/pod" + uid + "/" + id + "/worker/1\n", id, uid, ""},
      {"systemd_subcgroup_below_scope",
       "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + us +
           ".slice/cri-containerd-" + id + ".scope/init\n",
       id, uid, "containerd"},
      {"static_pod_32_hex_systemd",
       "0::/kubepods.slice/kubepods-burstable.slice/"
       "kubepods-burstable-pod0a1b2c3d4e5f60718293a4b5c6d7e8f9.slice/cri-containerd-" +
           id + ".scope\n",
       id, "0a1b2c3d4e5f60718293a4b5c6d7e8f9", "containerd"},
      {"static_pod_32_hex_cgroupfs",
       "0::/kubepods/burstable/pod0a1b2c3d4e5f60718293a4b5c6d7e8f9/" + id + "\n", id,
       "0a1b2c3d4e5f60718293a4b5c6d7e8f9", ""},
      {"containerd_colon_form",
       "0::/system.slice/containerd.service/kubepods-besteffort-pod" + us +
           ".slice:cri-containerd:" + id + "\n",
       id, uid, "containerd"},
      {"kind_node_seen_from_the_host",
       "0::/docker/" + std::string(64, 'f') + "/kubepods/besteffort/pod" + uid + "/" + id + "\n",
       id, uid, ""},
      {"docker_systemd_no_pod", "0::/system.slice/docker-" + id + ".scope\n", id, "", "docker"},
      {"docker_cgroupfs_no_pod", "0::/docker/" + id + "\n", id, "", "docker"},
      {"podman_container_subcgroup", "0::/machine.slice/libpod-" + id + ".scope/container\n", id,
       "", "podman"},
      {"podman_conmon", "0::/machine.slice/libpod-conmon-" + id + ".scope\n", "", "", ""},
      {"pod_level_cgroup_only", "0::/kubepods.slice/kubepods-pod" + us + ".slice\n", "", "", ""},
      {"user_slice", "0::/user.slice/user-1000.slice/session-3.scope\n", "", "", ""},
      {"user_manager_app", "0::/user.slice/user-1000.slice/user@1000.service/app.slice/x.scope\n",
       "", "", ""},
      {"init_scope", "0::/init.scope\n", "", "", ""},
      {"root", "0::/\n", "", "", ""},
      {"service", "0::/system.slice/jupyter.service\n", "", "", ""},
      {"short_id_is_not_a_container", "0::/docker/0123abcd\n", "", "", ""},
      {"uppercase_id_is_not_a_container", "0::/docker/" + std::string(64, 'A') + "\n", "", "", ""},
      {"no_trailing_newline", "0::/kubepods/pod" + uid + "/" + id, id, uid, ""},
  };
}

TEST(ParseProcCgroup, CgroupV2NamingRules) {
  for (const V2Case& c : V2Cases()) {
    SCOPED_TRACE(c.name);
    auto ref = ParseProcCgroup(c.content);
    if (c.want_id.empty()) {
      ASSERT_FALSE(ref) << ref->container_id;
      EXPECT_EQ(ref.error().code, ErrorCode::kNotFound);
      continue;
    }
    ASSERT_TRUE(ref) << ref.error().message;
    EXPECT_EQ(ref->container_id, c.want_id);
    EXPECT_EQ(ref->pod_uid, c.want_pod);
    EXPECT_EQ(ref->runtime, c.want_runtime);
  }
}

// Containers inside the pod's container (docker-in-docker, a CI runner's builds) are listed,
// outermost first; plain sub-cgroups are not containers.
TEST(ParseProcCgroup, ListsContainersNestedInTheFirstOne) {
  const std::string uid = "0b5c3a8e-1c2d-4e5f-8a9b-0c1d2e3f4a5b";
  const std::string a(64, 'a'), b(64, 'b'), c(64, 'c');
  auto dind = ParseProcCgroup("0::/kubepods/burstable/pod" + uid + "/" + a + "/docker/" + b +
                              "/docker-" + c + ".scope\n");
  ASSERT_TRUE(dind) << dind.error().message;
  EXPECT_EQ(dind->container_id, a);
  EXPECT_EQ(dind->pod_uid, uid);
  EXPECT_EQ(dind->nested_ids, (std::vector<std::string>{b, c}));
  auto plain =
      ParseProcCgroup("0::/kubepods/pod" + uid + "/cri-containerd-" + a + ".scope/init.scope\n");
  ASSERT_TRUE(plain) << plain.error().message;
  EXPECT_EQ(plain->container_id, a);
  EXPECT_TRUE(plain->nested_ids.empty());
  auto host = ParseProcCgroup("0::/docker/" + a + "/docker/" + b + "\n");  // no pod at all
  ASSERT_TRUE(host) << host.error().message;
  EXPECT_EQ(host->container_id, a);
  EXPECT_EQ(host->nested_ids, (std::vector<std::string>{b}));
}

TEST(ParseProcCgroup, ConmonSaysSo) {
  auto ref = ParseProcCgroup(std::string("0::/kubepods.slice/kubepods-pod") + kUidSystemd +
                             ".slice/crio-conmon-" + kId + ".scope\n");
  ASSERT_FALSE(ref);
  EXPECT_NE(ref.error().message.find("conmon"), std::string::npos);
}

TEST(ParseProcCgroup, V1PrefersTheUnifiedLineThenSystemdThenCpu) {
  const std::string a(64, 'a');
  const std::string b(64, 'b');
  const std::string c(64, 'c');
  // Hybrid: the unified line wins over the v1 controllers.
  auto ref = ParseProcCgroup("3:memory:/docker/" + c + "\n2:cpu,cpuacct:/docker/" + b +
                             "\n1:name=systemd:/docker/" + a + "\n0::/docker/" + b + "\n");
  ASSERT_TRUE(ref);
  EXPECT_EQ(ref->container_id, b);
  // Without it, name=systemd wins over cpu and memory whatever the file order.
  ref = ParseProcCgroup("3:memory:/docker/" + c + "\n2:cpu,cpuacct:/docker/" + b +
                        "\n1:name=systemd:/docker/" + a + "\n");
  ASSERT_TRUE(ref);
  EXPECT_EQ(ref->container_id, a);
  // A preferred line that names no container gives way to one that does.
  ref = ParseProcCgroup("0::/\n5:pids:/\n4:memory:/docker/" + c + "\n2:cpuacct,cpu:/docker/" + b +
                        "\n");
  ASSERT_TRUE(ref);
  EXPECT_EQ(ref->container_id, b);
}

TEST(ParseProcCgroup, EmptyAndMalformedInputs) {
  const std::vector<std::string> inputs = {"",        "\n",
                                           "garbage", "0:",
                                           "0::",     "0::relative/" + std::string(kId),
                                           ":::::",   std::string("\0\0\0", 3)};
  for (const std::string& s : inputs) {
    auto ref = ParseProcCgroup(s);
    EXPECT_FALSE(ref) << s;
  }
}

TEST(SystemdUnit, InnermostServiceElseInnermostScope) {
  EXPECT_EQ(SystemdUnit("0::/system.slice/jupyter.service\n"), "jupyter.service");
  EXPECT_EQ(SystemdUnit("0::/user.slice/user-1000.slice/user@1000.service/app.slice/x.scope\n"),
            "user@1000.service");
  EXPECT_EQ(SystemdUnit("0::/user.slice/user-1000.slice/session-3.scope\n"), "session-3.scope");
  EXPECT_EQ(SystemdUnit("0::/system.slice/slurmstepd.scope/job_42/step_0/user/task_0\n"),
            "slurmstepd.scope");
  EXPECT_EQ(SystemdUnit("0::/init.scope\n"), "init.scope");
  EXPECT_EQ(SystemdUnit("0::/\n"), "");
  EXPECT_EQ(SystemdUnit("0::/kubepods/besteffort/pod" + std::string(kUid) + "/" + kId + "\n"), "");
  EXPECT_EQ(SystemdUnit(""), "");
  // v1: the name=systemd line is consulted before the other controllers.
  EXPECT_EQ(SystemdUnit("4:memory:/system.slice/other.service\n"
                        "1:name=systemd:/system.slice/sshd.service\n"),
            "sshd.service");
  EXPECT_EQ(SystemdUnit("4:memory:/\n1:name=systemd:/user/1000.user/c2.session\n"), "");
}

TEST(EnvironValue, FindsExactNamesInNulSeparatedContent) {
  using namespace std::string_literals;
  const std::string env =
      "PATH=/bin\0NVIDIA_VISIBLE_DEVICES_X=0\0NVIDIA_VISIBLE_DEVICES=GPU-1,GPU-2\0"
      "EMPTY=\0NVIDIA_VISIBLE_DEVICES=later\0"s;
  EXPECT_EQ(EnvironValue(env, "NVIDIA_VISIBLE_DEVICES"), "GPU-1,GPU-2");
  EXPECT_EQ(EnvironValue(env, "PATH"), "/bin");
  EXPECT_EQ(EnvironValue(env, "EMPTY"), "");
  EXPECT_EQ(EnvironValue(env, "NVIDIA"), std::nullopt);
  EXPECT_EQ(EnvironValue(env, "MISSING"), std::nullopt);
  EXPECT_EQ(EnvironValue(env, ""), std::nullopt);
  EXPECT_EQ(EnvironValue(env, "A=B"), std::nullopt);
  EXPECT_EQ(EnvironValue("", "PATH"), std::nullopt);
  EXPECT_EQ(EnvironValue("PATH=/usr/bin", "PATH"), "/usr/bin");  // no trailing NUL
}

TEST(ParsePercentage, WholePercentsFromOneToAHundredOnly) {
  EXPECT_EQ(ParsePercentage("30"), 30);
  EXPECT_EQ(ParsePercentage("100"), 100);
  EXPECT_EQ(ParsePercentage("1"), 1);
  for (const char* bad : {"", "0", "101", "30%", "-5", "3.5", "abc", "0100"})
    EXPECT_EQ(ParsePercentage(std::string(bad)), std::nullopt) << bad;
  EXPECT_EQ(ParsePercentage(std::nullopt), std::nullopt);
}

TEST(ParseStatusRealUid, TakesTheFirstUidField) {
  EXPECT_EQ(*ParseStatusRealUid("Name:\tpython\nUid:\t1000\t0\t0\t0\nGid:\t100\n"), 1000);
  EXPECT_EQ(*ParseStatusRealUid("Uid:    0 0 0 0"), 0);
  EXPECT_FALSE(ParseStatusRealUid("Name:\tx\n"));
  EXPECT_FALSE(ParseStatusRealUid("Uid:\t\n"));
  EXPECT_FALSE(ParseStatusRealUid("Uid:\t-1\t0\n"));
  EXPECT_FALSE(ParseStatusRealUid("Uid:\t99999999999\t0\n"));
}

TEST(ParsePasswd, MapsUidsToNames) {
  auto users = ParsePasswd(
      "root:x:0:0:root:/root:/bin/bash\n# comment\nbroken\nalice:x:1000:1000::/home/alice:/bin/sh\n"
      "dup:x:1000:1000::/:/bin/sh\n+nis::::::\nbad:x:abc:0::/:/bin/sh\n:x:5:5::/:\n");
  EXPECT_EQ(users.size(), 2u);
  EXPECT_EQ(users[0], "root");
  EXPECT_EQ(users[1000], "alice");
}

// Pure parsers must survive anything: random bytes and random splices of meaningful tokens.
TEST(ProcParsers, NeverCrashOnGarbage) {
  std::mt19937 rng(20240601);  // fixed seed: deterministic
  const std::vector<std::string> tokens = {"0::",
                                           "1:name=systemd:",
                                           "2:cpu,cpuacct:",
                                           "/",
                                           "\n",
                                           ":",
                                           "kubepods",
                                           "kubepods-pod",
                                           ".slice",
                                           ".scope",
                                           "-pod",
                                           "pod",
                                           kId,
                                           kUid,
                                           kUidSystemd,
                                           "cri-containerd-",
                                           "crio-",
                                           "crio-conmon-",
                                           "docker-",
                                           "docker",
                                           "_",
                                           "-",
                                           std::string(1, '\0'),
                                           "Uid:",
                                           "\t",
                                           "=",
                                           "NVIDIA_VISIBLE_DEVICES",
                                           ":cri-containerd:",
                                           ".service",
                                           "0123abcd"};
  for (int i = 0; i < 20000; ++i) {
    std::string s;
    const int n = static_cast<int>(rng() % 40);
    for (int j = 0; j < n; ++j) {
      if (rng() % 4 == 0) {
        s.push_back(static_cast<char>(rng() % 256));
      } else {
        s += tokens[rng() % tokens.size()];
      }
    }
    auto ref = ParseProcCgroup(s);
    if (ref) {
      EXPECT_EQ(ref->container_id.size(), 64u) << s;
      EXPECT_TRUE(ref->pod_uid.empty() || ref->pod_uid.size() == 32 || ref->pod_uid.size() == 36);
    }
    (void)SystemdUnit(s);
    (void)EnvironValue(s, "NVIDIA_VISIBLE_DEVICES");
    (void)ParseStatusRealUid(s);
    (void)ParsePasswd(s);
  }
}

}  // namespace
}  // namespace gpuledger::procfs
