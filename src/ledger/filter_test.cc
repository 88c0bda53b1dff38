// OpenCost's filter language v2 (ledger/filter.h): every example its documentation gives (the
// Kubecost/OpenCost filter docs: "Filter Parameters (v2)"), and every operator and combinator,
// matched against a small cluster's rows; each expected set written out by the example's
// documented meaning, not by the parser. What is not the language (or names what gpuledger does
// not record) is an error naming the position: never a silent empty answer.
#include "ledger/filter.h"

#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

namespace gpuledger::ledger {
namespace {

struct Row {
  std::string cluster, node, ns, pod, container, kind, name, gpu_model;
  LabelMap labels, namespace_labels;
};

const std::vector<Row>& Rows() {
  static const std::vector<Row> rows = {
      {"cluster-one",
       "n1",
       "kubecost",
       "cost-model-0",
       "cost-model",
       "Deployment",
       "cost-model",
       "H100-80GB",
       {{"app", "cost-analyzer"}},
       {}},
      {"cluster-one",
       "n1",
       "kubecost",
       "cost-model-0",
       "sidecar",
       "Deployment",
       "cost-model",
       "H100-80GB",
       {{"app", "cost-analyzer"}},
       {}},
      {"cluster-one", "n2", "kube-system", "dns-1", "coredns", "DaemonSet", "dns", "L4", {}, {}},
      {"cluster-two",
       "n3",
       "research",
       "nb-0",
       "main",
       "StatefulSet",
       "jupyter",
       "A100-80GB",
       {{"team", "science"}},
       {{"env", "dev"}}},
      {"cluster-two",
       "n3",
       "inference",
       "llm-7f",
       "server",
       "Deployment",
       "llm",
       "H200-141GB",
       {},
       {{"team", "serving"}, {"env", "prod"}}},
      {"cluster-two", "n4", "batch", "job-x", "worker", "Job", "ingest", "L4", {}, {}},
  };
  return rows;
}

std::set<int> Selected(const Filter& f) {
  std::set<int> out;
  for (int i = 0; i < static_cast<int>(Rows().size()); ++i) {
    const Row& r = Rows()[static_cast<std::size_t>(i)];
    ConsumerInfo c;
    c.ref = {r.ns, r.pod, PodUid{}, r.container};
    c.owner_kind = r.kind;
    c.owner_name = r.name;
    c.labels = r.labels;
    c.namespace_labels = r.namespace_labels;
    const GpuUuid gpu{"GPU-" + r.node};
    if (Matches(f, c, report::Placed{r.cluster, r.node, r.gpu_model, gpu, SharingMode::kExclusive}))
      out.insert(i);
  }
  return out;
}

std::set<int> Where(const std::function<bool(const Row&)>& keep) {
  std::set<int> out;
  for (int i = 0; i < static_cast<int>(Rows().size()); ++i)
    if (keep(Rows()[static_cast<std::size_t>(i)])) out.insert(i);
  return out;
}

std::string Label(const Row& r, const std::string& key) {
  if (auto it = r.labels.find(key); it != r.labels.end()) return it->second;
  if (auto it = r.namespace_labels.find(key); it != r.namespace_labels.end()) return it->second;
  return "";
}

struct Example {
  std::string filter;
  std::function<bool(const Row&)> meaning;
};

TEST(Filter, OpenCostsExamplesSelectWhatTheySay) {
  const std::vector<Example> examples = {
      // The documentation's own examples.
      {R"(namespace:"kubecost"+container:"cost-model")",
       [](const Row& r) { return r.ns == "kubecost" && r.container == "cost-model"; }},
      {R"(cluster:"cluster-one"+label[app]:"cost-analyzer")",
       [](const Row& r) {
         return r.cluster == "cluster-one" && Label(r, "app") == "cost-analyzer";
       }},
      {R"(cluster!:"cluster-one")", [](const Row& r) { return r.cluster != "cluster-one"; }},
      {R"(namespace:"kubecost","kube-system")",
       [](const Row& r) { return r.ns == "kubecost" || r.ns == "kube-system"; }},
      {R"(namespace!:"kubecost","kube-system")",
       [](const Row& r) { return r.ns != "kubecost" && r.ns != "kube-system"; }},
      // Every operator.
      {R"(namespace~:"kube")", [](const Row& r) { return r.ns.find("kube") != std::string::npos; }},
      {R"(namespace!~:"kube")",
       [](const Row& r) { return r.ns.find("kube") == std::string::npos; }},
      {R"(pod<~:"cost")", [](const Row& r) { return r.pod.starts_with("cost"); }},
      {R"(pod!<~:"cost","dns")",
       [](const Row& r) { return !r.pod.starts_with("cost") && !r.pod.starts_with("dns"); }},
      {R"(gpu_model~>:"80GB")", [](const Row& r) { return r.gpu_model.ends_with("80GB"); }},
      {R"(gpu_model!~>:"80GB")", [](const Row& r) { return !r.gpu_model.ends_with("80GB"); }},
      // Combinators: '|', parentheses, whitespace; the issue's filter among them.
      {R"(namespace:"research"|namespace:"inference")",
       [](const Row& r) { return r.ns == "research" || r.ns == "inference"; }},
      {R"(namespace:"research" | namespace:"inference")",
       [](const Row& r) { return r.ns == "research" || r.ns == "inference"; }},
      {R"((namespace:"research"|namespace:"inference")+node:"n3")",
       [](const Row& r) { return (r.ns == "research" || r.ns == "inference") && r.node == "n3"; }},
      {R"(node:"n1"|(cluster:"cluster-two"+gpu_model:"L4"))",
       [](const Row& r) {
         return r.node == "n1" || (r.cluster == "cluster-two" && r.gpu_model == "L4");
       }},
      // OpenCost's lower-case controller kinds, and ours.
      {R"(controllerKind:"deployment")", [](const Row& r) { return r.kind == "Deployment"; }},
      {R"(controllerKind!:"Deployment","job")",
       [](const Row& r) { return r.kind != "Deployment" && r.kind != "Job"; }},
      {R"(controllerName:"llm")", [](const Row& r) { return r.name == "llm"; }},
      // Maps: a key's value, the keys, the namespace's labels, the aliases.
      {R"(label:"app")", [](const Row& r) { return r.labels.contains("app"); }},
      {R"(label!:"team")",
       [](const Row& r) {
         return !r.labels.contains("team") && !r.namespace_labels.contains("team");
       }},
      {R"(label<~:"en")", [](const Row& r) { return r.namespace_labels.contains("env"); }},
      {R"(namespaceLabel[env]:"prod")",
       [](const Row& r) {
         return r.namespace_labels.contains("env") && r.namespace_labels.at("env") == "prod";
       }},
      {R"(team:"science","serving")",
       [](const Row& r) { return Label(r, "team") == "science" || Label(r, "team") == "serving"; }},
      {R"(label[team]:"")", [](const Row& r) { return Label(r, "team").empty(); }},
      // Quotes are optional where the value is one word.
      {"namespace:batch", [](const Row& r) { return r.ns == "batch"; }},
  };
  for (const Example& e : examples) {
    auto f = ParseFilter(e.filter);
    ASSERT_TRUE(f.ok()) << e.filter << ": " << f.error().message;
    const std::set<int> expected = Where(e.meaning);
    EXPECT_EQ(Selected(*f), expected) << e.filter;
    EXPECT_FALSE(expected.empty()) << e.filter << ": an example that selects nothing proves little";
    EXPECT_NE(expected.size(), Rows().size()) << e.filter << ": nor one that keeps everything";
  }
}

TEST(Filter, WhatIsNotTheLanguageIsRefusedWhereItGoesWrong) {
  const std::vector<std::pair<std::string, std::string>> refused = {
      {R"(namespace:"research" and namespace:"inference")", "at position 22: expected '+'"},
      {R"(namespace:"a"|namespace:"b"+pod:"c")", "at position 28: '+' after '|'"},
      {R"(namespace:~"res")", "at position 11: '~' is not an operator"},
      {R"(namespace:"a" namespace:"b")", "%2B"},
      {R"(services:"kube-dns")",
       "at position 1: 'services' is an OpenCost field gpuledger does not record"},
      {R"(annotation[owner]:"x")", "'annotation' is an OpenCost field"},
      {R"(colour:"red")", "at position 1: unknown field 'colour'"},
      {R"(namespace:"ml)", "at position 11: the '\"' is not closed"},
      {R"((namespace:"a")", "at position 1: the '(' is not closed"},
      {R"(namespace:"a"))", "at position 14: ')' without '('"},
      {R"(namespace)", "expected an operator after 'namespace'"},
      {R"(namespace:)", "expected a value"},
      {R"(label[team]:)", "expected a value"},
      {R"(namespaceLabel:"x")", "namespaceLabel's [KEY]"},
      {R"(namespace="a")", "'=' is not an operator"},
      {std::string(40, '(') + "namespace:\"a\"" + std::string(40, ')'), "deeper than"},
  };
  for (const auto& [text, says] : refused) {
    auto f = ParseFilter(text);
    ASSERT_FALSE(f.ok()) << text;
    EXPECT_EQ(f.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(f.error().message.find(says), std::string::npos) << text << ": " << f.error().message;
  }
  EXPECT_TRUE(ParseFilter("")->empty());
  EXPECT_TRUE(ParseFilter("   ")->empty());
}

TEST(Filter, KeysTellFiltersApartAndPlacementPartsHoldForEveryRow) {
  const std::vector<std::string> texts = {
      R"(namespace:"a")",     R"(namespace!:"a")",         R"(namespace~:"a")",
      R"(namespace:"a","b")", R"(namespace:"a"+node:"b")", R"(namespace:"a"|node:"b")",
      R"(label[a]:"b")",      R"(namespaceLabel[a]:"b")",  R"(label:"a")"};
  std::set<std::string> keys;
  for (const std::string& t : texts) keys.insert(FilterKey(*ParseFilter(t)));
  EXPECT_EQ(keys.size(), texts.size());
  EXPECT_EQ(FilterKey(*ParseFilter(R"(namespace:"a" + node:"b")")),
            FilterKey(*ParseFilter(R"(namespace:a+node:b)")));

  // The part a placement decides, and where an '|' mixes who and where, none.
  auto f = ParseFilter(R"(namespace:"kubecost"+(node:"n1"|node:"n2")+gpu_model:"L4")");
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(ReadsPlacement(*f));
  const Filter part = PlacementPart(*f);
  EXPECT_EQ(Selected(part), Where([](const Row& r) {
              return (r.node == "n1" || r.node == "n2") && r.gpu_model == "L4";
            }));
  EXPECT_TRUE(PlacementPart(*ParseFilter(R"(namespace:"a"|node:"b")")).empty());
  EXPECT_FALSE(ReadsPlacement(*ParseFilter(R"(namespace:"a"|pod:"b")")));
}

}  // namespace
}  // namespace gpuledger::ledger
