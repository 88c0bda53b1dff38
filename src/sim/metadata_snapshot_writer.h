#pragma once
// A scenario's Kubernetes objects as `kubectl get namespaces,nodes,pods,replicasets,jobs -A
// -o json` prints them (a v1 List): the metadata the server would watch from the API server,
// for replays of a simulated cluster (`gpuledger demo --expositions DIR` writes it beside the
// exposition files as metadata.json; `server --source files=DIR` reads it back through
// k8s::ParseMetadataSnapshot). Pods of a Deployment are owned by a ReplicaSet and pods of a
// CronJob by a Job, as in a real cluster, so owners resolve the way the watch resolves them.
// Nodes carry their scenario labels plus topology.kubernetes.io/region and
// gpuledger.io/pricing-class from the scenario's region and pricing_class when the labels do
// not say.

#include <map>
#include <string>

#include "model/consumer.h"
#include "sim/scenario.h"

namespace gpuledger::sim {

std::string MetadataSnapshotJson(const Scenario& scenario,
                                 const std::map<ConsumerRef, ConsumerInfo>& consumers);

}  // namespace gpuledger::sim
