#pragma once
// Kubernetes metadata from a file instead of a watch: the output of `kubectl get namespaces,
// nodes,pods,replicasets,jobs -A -o json` (a v1 List whose items name their kind). For replays
// (`server --source files=DIR` reads DIR/metadata.json) and for clusters the server cannot
// reach. Items of other kinds are skipped; a malformed item is an error naming its index.

#include <string_view>

#include "common/result.h"
#include "k8s/metadata_view.h"

namespace gpuledger::k8s {

// `where` names the source in errors ("metadata.json").
Result<MetadataTables> ParseMetadataSnapshot(std::string_view json_text, std::string_view where);

}  // namespace gpuledger::k8s
