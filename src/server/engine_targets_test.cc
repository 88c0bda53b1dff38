#include "server/engine_targets.h"

#include <gtest/gtest.h>

namespace gpuledger::server {
namespace {

k8s::ObjectInfo Pod(std::string name, std::string ip, std::map<std::string, std::string> a) {
  k8s::ObjectInfo p;
  p.namespace_name = "llm";
  p.name = std::move(name);
  p.uid = "uid-" + p.name;
  p.pod_ip = std::move(ip);
  p.annotations = std::move(a);
  return p;
}

TEST(EngineTargets, PodsThatOptInAreScrapedWhereTheyServe) {
  k8s::ObjectInfo deleted = Pod("gone", "10.0.0.4", {{"gpuledger.io/tokens-port", "8000"}});
  deleted.deleted = true;
  std::vector<std::string> problems;
  auto targets = EngineTargets(
      {Pod("vllm-0", "10.0.0.7", {{"gpuledger.io/tokens-port", "8000"}}),
       Pod("tgi-0", "fd00::17",
           {{"gpuledger.io/tokens-port", "3000"},
            {"gpuledger.io/tokens-path", "/v1/metrics"},
            {"gpuledger.io/model", "mistralai/Mistral-7B-Instruct-v0.3"},
            {"gpuledger.io/tokens-container", "tgi"}}),
       Pod("web-0", "10.0.0.8", {}),                                             // no opt-in
       Pod("pending", "", {{"gpuledger.io/tokens-port", "8000"}}),               // no IP yet
       deleted,                                                                  // a tombstone
       Pod("bad-port", "10.0.0.9", {{"gpuledger.io/tokens-port", "http"}}),      // named port
       Pod("bad-path", "10.0.0.9",
           {{"gpuledger.io/tokens-port", "80"}, {"gpuledger.io/tokens-path", "metrics"}})},
      &problems);
  ASSERT_EQ(targets.size(), 2u);
  EXPECT_EQ(targets[0].url, "http://10.0.0.7:8000/metrics");
  EXPECT_EQ(targets[0].consumer, (ConsumerRef{"llm", "vllm-0", PodUid("uid-vllm-0"), ""}));
  EXPECT_EQ(targets[0].model, "");
  EXPECT_EQ(targets[1].url, "http://[fd00::17]:3000/v1/metrics");
  EXPECT_EQ(targets[1].consumer, (ConsumerRef{"llm", "tgi-0", PodUid("uid-tgi-0"), "tgi"}));
  EXPECT_EQ(targets[1].model, "mistralai/Mistral-7B-Instruct-v0.3");
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0],
            "pod llm/bad-port: gpuledger.io/tokens-port 'http': expected a port number, 1 to "
            "65535");
  EXPECT_EQ(problems[1],
            "pod llm/bad-path: gpuledger.io/tokens-path 'metrics': expected a path such as "
            "/metrics");
}

}  // namespace
}  // namespace gpuledger::server
