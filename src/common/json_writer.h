#pragma once
// JSON written straight to text, for documents too large to build as a tree first: a 30-day
// report by controller at 10,000 GPUs is 1,440 rows and 1.9 MB, and building nlohmann's tree of
// it, then dumping it, was 55% of the server's answer (issue 32). The text is byte for byte what
// JsonText writes for the same document, so an answer does not change with the way it was
// written: the same indentation, strings escaped alike (invalid UTF-8 as U+FFFD), numbers in
// nlohmann's shortest round-trip form, non-finite ones as null.
//
// The writer does not sort: nlohmann's objects hold their keys sorted (byte order), so a caller
// writes an object's keys in that order, each once. Tests hold a document written here to
// JsonText of its parse (json_writer_test.cc does so on random documents).

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpuledger {

class JsonWriter {
 public:
  // `indent` as JsonText's: -1 for one line, n for pretty-printed with n spaces.
  explicit JsonWriter(int indent = -1) : indent_(indent) {}

  void BeginObject();
  void EndObject();
  void BeginArray();
  void EndArray();
  // The next member's key, inside an object; its value follows.
  void Key(std::string_view key);

  void String(std::string_view value);
  void Int(std::int64_t value);
  void Double(double value);
  void Bool(bool value);
  void Null();
  // A member: its key, then its value.
  void String(std::string_view key, std::string_view value);
  void Int(std::string_view key, std::int64_t value);
  void Double(std::string_view key, double value);

  // The text so far (the whole document once every object and array is ended).
  const std::string& text() const { return out_; }
  std::string Take() && { return std::move(out_); }

 private:
  // Before any value or key: the comma after an earlier member, the line break and indentation.
  void Separate();
  void NewLine(std::size_t depth);
  void Open(char bracket);
  void Close(char bracket);

  std::string out_;
  int indent_;
  // Per open object or array: whether it has a member yet ("{}" when it has none).
  std::vector<bool> has_member_;
  bool after_key_ = false;
};

// The order in which a tree holds members named `keys`, for a writer that writes them from a list:
// their indices by key in byte order, and of a key given twice only the last (in a tree a later
// assignment replaces the earlier).
std::vector<std::size_t> KeyOrder(std::span<const std::string_view> keys);

}  // namespace gpuledger
