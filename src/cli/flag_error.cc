#include "cli/flag_error.h"

#include <string>

namespace gpuledger::cli {

Error AsFlagError(const Error& e, std::initializer_list<std::string_view> fields) {
  if (e.code != ErrorCode::kInvalidArgument) return e;
  const std::string_view m = e.message;
  for (std::string_view field : fields) {
    if (m.size() > field.size() && m.starts_with(field) &&
        (m[field.size()] == ':' || m[field.size()] == ' '))
      return InvalidArgument("--" + e.message);
  }
  return e;
}

}  // namespace gpuledger::cli
