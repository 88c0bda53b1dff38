#pragma once
// The one way gpuledger reads a YAML document (scenarios, catalogs, guardrail policies,
// kubeconfigs): yaml-cpp's parser plus what it lets through. A key given twice in one mapping is
// refused: yaml-cpp keeps both and a lookup sees only the first, so the second would be ignored
// without a word.

#include <string_view>

#include "common/result.h"

namespace YAML {
class Node;  // yaml-cpp's, declared so that this header does not pull yaml-cpp in
}

namespace gpuledger {

// kInvalidArgument "<file>:<line>: invalid YAML: <why>" or "<file>:<line>: key '<key>' given
// twice in one mapping (first on line <n>)".
Result<YAML::Node> LoadYamlDocument(std::string_view text, std::string_view file);

}  // namespace gpuledger
