#pragma once
// RFC 4180 CSV: a reader that remembers where each field started (for "file:line:column"
// errors) and a writer's field quoting. Pure: text in, text out.

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace gpuledger {

struct CsvField {
  std::string value;
  int column = 1;  // 1-based character column of the field's first character in its line
};

struct CsvRecord {
  int line = 1;  // 1-based line where the record starts
  std::vector<CsvField> fields;
};

// Splits `content` into records: fields separated by ',', records by LF or CRLF, fields may be
// quoted with '"' ('""' inside quotes is one quote; a quoted field may span lines). A UTF-8 BOM
// is skipped. Blank lines are skipped. Errors name `file:line:column` (an unterminated quote, a
// character after a closing quote).
Result<std::vector<CsvRecord>> ParseCsv(std::string_view content, std::string_view file);

// `value` as one CSV field: quoted when it holds ',', '"', CR or LF (quotes doubled).
std::string CsvQuote(std::string_view value);

}  // namespace gpuledger
