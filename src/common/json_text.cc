#include "common/json_text.h"

#include <nlohmann/json.hpp>

namespace gpuledger {

std::string JsonText(const nlohmann::json& value, int indent) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace gpuledger
