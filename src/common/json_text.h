#pragma once
// JSON text that never throws. nlohmann's dump() throws type_error 316 on a string that is not
// UTF-8, and gpuledger's strings come from the wire (labels, names, reasons): one bad byte from
// an exporter crashed the ingesting server while it saved its state and turned every API answer
// about it into an empty 500 (issue 29, finding 4). Ingestion refuses such labels now; this is
// the second line, for whatever else reaches a document: invalid sequences become U+FFFD.

#include <string>

#include <nlohmann/json_fwd.hpp>

namespace gpuledger {

// `indent` as nlohmann's: -1 for one line, n for pretty-printed with n spaces.
std::string JsonText(const nlohmann::json& value, int indent = -1);

}  // namespace gpuledger
