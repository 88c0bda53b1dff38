#pragma once
// OpenCost's allocation parameters as its clients send them (kubectl cost, dashboards, scripts
// written against OpenCost), turned into gpuledger's with OpenCost's meaning, or refused with
// why: never ignored, never a different answer under the same words (issue 60).
//   aggregate   OpenCost's groupings: namespace, cluster, node, controller, pod, container,
//               label:KEY as they are; deployment, statefulset, daemonset, job, cronjob,
//               replicaset: controller, only controllers of that kind (a filter, so no
//               __idle__); team, department, environment, owner, product: label:team, ...;
//               controllerKind, service, annotation:KEY refused (not kept as a grouping).
//   accumulate  true or all: the window in one set; hour, day, week: that step; false: `step`.
//   includeIdle true (the default) or false: whether __idle__ is an entry.
//   shareIdle   true: idle=share (the idle cost spread over the consumers); false: kept apart.
//   idleByNode  false; true refused (idle is one entry: the devices no grant held).
//   resolution  a duration, accepted: Prometheus' query step in OpenCost; the ledger is exact
//               per device-hour, so there is nothing for it to change.
//   idle        true or false: Kubecost's includeIdle (kubectl cost sends both); gpuledger's
//               own values (keep, share, namespace:NS) as they are.
//   filterNamespaces, filterClusters, filterNodes, filterPods, filterContainers,
//   filterControllerKinds, filterControllers, filterLabels
//               OpenCost's first filter language: comma-separated values, any of which may
//               hold (a trailing '*' matches a prefix), every parameter must hold; the same
//               clauses as `filter` (ledger/filter.h), joined to it by '+'. filterControllers
//               takes NAME or KIND:NAME, filterLabels KEY:VALUE. filterServices and
//               filterAnnotations refused, as aggregate is.

#include <string>
#include <string_view>

#include "common/result.h"
#include "server/api.h"

namespace gpuledger::server {

struct OpenCostRequest {
  Params params;             // gpuledger's own parameters
  bool include_idle = true;  // __idle__ among the entries
  // The controller kind aggregate named (aggregate=deployment: "deployment"), "" for none: its
  // entries are named by the controller's name alone, as OpenCost names them.
  std::string controller_kind;
};

// OpenCost's first filter parameters, the names FromOpenCost takes.
inline constexpr std::string_view kOpenCostFilterParams[] = {
    "filterClusters",   "filterNodes",       "filterNamespaces",      "filterPods",
    "filterContainers", "filterControllers", "filterControllerKinds", "filterLabels",
    "filterServices",   "filterAnnotations"};

// kInvalidArgument naming the parameter ("parameter 'aggregate': ...").
Result<OpenCostRequest> FromOpenCost(Params given);

}  // namespace gpuledger::server
