#pragma once
// Lower layers name the field a bad input is in ("policy: ...", "period '2026-13': ...");
// the command line says it in its own words, the flag.

#include <initializer_list>
#include <string_view>

#include "common/result.h"

namespace gpuledger::cli {

// `e` with "--" before its message where it is bad input about one of `fields` (the message
// starts with the field and then ':' or ' '); any other error unchanged.
Error AsFlagError(const Error& e, std::initializer_list<std::string_view> fields);

}  // namespace gpuledger::cli
