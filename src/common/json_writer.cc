#include "common/json_writer.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>

#include <nlohmann/json.hpp>

#include "common/json_text.h"

namespace gpuledger {
namespace {

// Bytes written as they are: printable ASCII but the two JSON escapes. Any other string (control
// characters, UTF-8, invalid bytes) goes through JsonText, which escapes and replaces as
// nlohmann's serializer does; names and labels in a report are ASCII, so that path is rare.
bool Plain(std::string_view s) {
  for (const char c : s)
    if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') return false;
  return true;
}

void AppendString(std::string& out, std::string_view s) {
  if (Plain(s)) {
    out += '"';
    out += s;
    out += '"';
  } else {
    out += JsonText(nlohmann::json(std::string(s)));
  }
}

}  // namespace

void JsonWriter::NewLine(std::size_t depth) {
  out_ += '\n';
  out_.append(depth * static_cast<std::size_t>(indent_), ' ');
}

void JsonWriter::Separate() {
  if (after_key_) {  // the value of a key just written
    after_key_ = false;
    return;
  }
  if (has_member_.empty()) return;  // the document's one value
  if (has_member_.back()) out_ += ',';
  has_member_.back() = true;
  if (indent_ >= 0) NewLine(has_member_.size());
}

void JsonWriter::Open(char bracket) {
  Separate();
  out_ += bracket;
  has_member_.push_back(false);
}

void JsonWriter::Close(char bracket) {
  const bool had_member = has_member_.back();
  has_member_.pop_back();
  if (had_member && indent_ >= 0) NewLine(has_member_.size());
  out_ += bracket;
}

void JsonWriter::BeginObject() { Open('{'); }
void JsonWriter::EndObject() { Close('}'); }
void JsonWriter::BeginArray() { Open('['); }
void JsonWriter::EndArray() { Close(']'); }

void JsonWriter::Key(std::string_view key) {
  Separate();
  AppendString(out_, key);
  out_ += indent_ >= 0 ? ": " : ":";
  after_key_ = true;
}

void JsonWriter::String(std::string_view value) {
  Separate();
  AppendString(out_, value);
}

void JsonWriter::Int(std::int64_t value) {
  Separate();
  std::array<char, 24> buffer{};
  const auto end = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value).ptr;
  out_.append(buffer.data(), static_cast<std::size_t>(end - buffer.data()));
}

void JsonWriter::Double(double value) {
  Separate();
  if (!std::isfinite(value)) {
    out_ += "null";
    return;
  }
  // nlohmann's own Grisu2 and layout (its serializer's dump_float), so a number reads as
  // JsonText writes it; std::to_chars may pick another of the shortest forms.
  std::array<char, 64> buffer{};
  const char* end = nlohmann::detail::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  out_.append(buffer.data(), static_cast<std::size_t>(end - buffer.data()));
}

void JsonWriter::Bool(bool value) {
  Separate();
  out_ += value ? "true" : "false";
}

void JsonWriter::Null() {
  Separate();
  out_ += "null";
}

void JsonWriter::String(std::string_view key, std::string_view value) {
  Key(key);
  String(value);
}

void JsonWriter::Int(std::string_view key, std::int64_t value) {
  Key(key);
  Int(value);
}

void JsonWriter::Double(std::string_view key, double value) {
  Key(key);
  Double(value);
}

std::vector<std::size_t> KeyOrder(std::span<const std::string_view> keys) {
  std::vector<std::size_t> order(keys.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return keys[a] < keys[b]; });
  std::vector<std::size_t> last;
  last.reserve(order.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    if (i + 1 == order.size() || keys[order[i + 1]] != keys[order[i]]) last.push_back(order[i]);
  return last;
}

}  // namespace gpuledger
