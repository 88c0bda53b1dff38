#pragma once
// Guardrail policy files (docs/guardrails-policy.md): YAML in, a Policy out. Apart from the pure
// guardrails layer because it needs yaml-cpp and reads files; yaml-cpp's exceptions are caught
// in the .cc and never leave it.

#include <string>
#include <string_view>

#include "common/result.h"
#include "guardrails/policy.h"

namespace gpuledger::guardrails {

// Applies the document to DefaultPolicy(): what the file does not name keeps its default, so an
// empty file is the default policy. Every error is kInvalidArgument, one line:
//   "FILE:LINE: field.path: expected ..., got '...'"
// (unknown keys at any level, unknown kinds, bad actions and severities, deny on a runtime kind,
// numbers out of range, bad durations, an exemption that names neither namespace nor labels).
Result<Policy> ParsePolicyYaml(std::string_view text, std::string_view file_name);

// Reads `path` and parses it; an unreadable file is the read's error (it names the path).
Result<Policy> LoadPolicyFile(const std::string& path);

}  // namespace gpuledger::guardrails
