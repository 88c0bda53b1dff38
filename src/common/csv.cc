#include "common/csv.h"

#include <fmt/format.h>

namespace gpuledger {

Result<std::vector<CsvRecord>> ParseCsv(std::string_view content, std::string_view file) {
  std::vector<CsvRecord> records;
  std::size_t i = 0;
  if (content.starts_with("\xEF\xBB\xBF")) i = 3;
  int line = 1;
  std::size_t line_start = i;
  auto column_of = [&](std::size_t pos) { return static_cast<int>(pos - line_start) + 1; };

  while (i < content.size()) {
    // Skip blank lines.
    if (content[i] == '\n' ||
        (content[i] == '\r' && i + 1 < content.size() && content[i + 1] == '\n')) {
      i += content[i] == '\r' ? 2 : 1;
      ++line;
      line_start = i;
      continue;
    }
    CsvRecord record;
    record.line = line;
    bool end_of_record = false;
    while (!end_of_record) {
      CsvField field;
      field.column = column_of(i);
      if (i < content.size() && content[i] == '"') {
        const int open_line = line;
        const int open_column = column_of(i);
        ++i;
        bool closed = false;
        while (i < content.size()) {
          char c = content[i];
          if (c == '"') {
            if (i + 1 < content.size() && content[i + 1] == '"') {
              field.value += '"';
              i += 2;
              continue;
            }
            ++i;
            closed = true;
            break;
          }
          if (c == '\n') {
            ++line;
            line_start = i + 1;
          }
          field.value += c;
          ++i;
        }
        if (!closed)
          return InvalidArgument(
              fmt::format("{}:{}:{}: unterminated quoted field", file, open_line, open_column));
        if (i < content.size() && content[i] != ',' && content[i] != '\n' &&
            !(content[i] == '\r' && i + 1 < content.size() && content[i + 1] == '\n'))
          return InvalidArgument(fmt::format("{}:{}:{}: '{}' after a closing quote", file, line,
                                             column_of(i), content[i]));
      } else {
        while (i < content.size() && content[i] != ',' && content[i] != '\n' &&
               !(content[i] == '\r' && i + 1 < content.size() && content[i + 1] == '\n')) {
          field.value += content[i++];
        }
      }
      record.fields.push_back(std::move(field));
      if (i >= content.size()) {
        end_of_record = true;
      } else if (content[i] == ',') {
        ++i;
      } else {
        i += content[i] == '\r' ? 2 : 1;
        ++line;
        line_start = i;
        end_of_record = true;
      }
    }
    records.push_back(std::move(record));
  }
  return records;
}

std::string CsvQuote(std::string_view value) {
  if (value.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(value);
  std::string out = "\"";
  for (char c : value) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

}  // namespace gpuledger
