#pragma once
// Which field a bad input was in: lower layers start their messages with the field's name
// ("policy: expected ...", "window '9x': ..."), and each front end says it in its own words (the
// CLI's flag, the API's parameter).

#include <initializer_list>
#include <optional>
#include <string_view>

#include "common/result.h"

namespace gpuledger {

// The one of `fields` a kInvalidArgument error's message starts with, followed by ':' or ' ';
// nullopt for another error or message.
inline std::optional<std::string_view> BadInputField(
    const Error& e, std::initializer_list<std::string_view> fields) {
  if (e.code != ErrorCode::kInvalidArgument) return std::nullopt;
  const std::string_view m = e.message;
  for (std::string_view field : fields)
    if (m.size() > field.size() && m.starts_with(field) &&
        (m[field.size()] == ':' || m[field.size()] == ' '))
      return field;
  return std::nullopt;
}

}  // namespace gpuledger
