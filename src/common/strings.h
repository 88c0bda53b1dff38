#pragma once
// Small text helpers every layer shares, one of each. Trim and Lower are ASCII only: the texts
// they see (flags, query strings, CSV and YAML fields, label values) are compared byte for byte
// elsewhere.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace gpuledger {

// The parts of `text` between `separator`s, one at a time, empty ones included; a separator at
// the end closes the last part rather than opening an empty one:
//   for (TextParts lines(content, '\n'); auto line = lines.Next();) ...
class TextParts {
 public:
  TextParts(std::string_view text, char separator) : text_(text), separator_(separator) {}
  std::optional<std::string_view> Next() {
    if (at_ >= text_.size()) return std::nullopt;
    std::size_t end = text_.find(separator_, at_);
    if (end == std::string_view::npos) end = text_.size();
    const std::string_view part = text_.substr(at_, end - at_);
    at_ = end + 1;
    return part;
  }

 private:
  std::string_view text_;
  char separator_;
  std::size_t at_ = 0;
};

// `s` without leading and trailing ASCII whitespace (space, \t, \n, \v, \f, \r).
std::string_view Trim(std::string_view s);

// `s` with ASCII letters lowered; other bytes kept.
std::string Lower(std::string_view s);

// Length of the valid UTF-8 sequence at s[i] (i < s.size()), or 0 if invalid: overlong forms,
// surrogates and code points above U+10FFFF are invalid, as in Go's utf8.ValidString that
// Prometheus applies.
std::size_t Utf8SequenceLength(std::string_view s, std::size_t i);
// Whether all of `s` is valid UTF-8 (what JSON output needs of every string).
bool IsValidUtf8(std::string_view s);

// The value of a hex digit (0-9, a-f, A-F), or -1 for any other byte.
int HexDigitValue(char c);

// Appends `field` as "<length>:<bytes>": fields so appended never join alike, whatever bytes
// they hold (keys of several texts, encoded entries).
void AppendLengthPrefixed(std::string& out, std::string_view field);

}  // namespace gpuledger
