#include "cli/flag_error.h"

#include <string>

#include "common/field_error.h"

namespace gpuledger::cli {

Error AsFlagError(const Error& e, std::initializer_list<std::string_view> fields) {
  return BadInputField(e, fields) ? InvalidArgument("--" + e.message) : e;
}

}  // namespace gpuledger::cli
