#include "io/log_sink.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <unordered_map>

#include "common/json_text.h"
#include "common/time_util.h"

namespace gpuledger {

Result<LogFormat> ParseLogFormat(std::string_view text) {
  if (text == "text") return LogFormat::kText;
  if (text == "json") return LogFormat::kJson;
  return InvalidArgument(fmt::format("--log-format '{}': expected text or json", text));
}

Result<LogLevel> ParseLogLevel(std::string_view text) {
  if (text == "info") return LogLevel::kInfo;
  if (text == "warning") return LogLevel::kWarning;
  if (text == "error") return LogLevel::kError;
  return InvalidArgument(fmt::format("--log-level '{}': expected info, warning or error", text));
}

LogLevel LevelOfLine(std::string_view line) {
  if (line.starts_with("error:") || line.find(": BUG:") != std::string_view::npos)
    return LogLevel::kError;
  if (line.starts_with("warning:")) return LogLevel::kWarning;
  return LogLevel::kInfo;
}

LogSink::LogSink(std::streambuf* out, LogFormat format, LogLevel min_level, std::string component,
                 const Clock& clock)
    : out_(out),
      format_(format),
      min_level_(min_level),
      component_(std::move(component)),
      clock_(clock) {}

LogSink::~LogSink() {
  if (std::string& rest = Pending(); !rest.empty()) Emit(std::exchange(rest, {}));
}

std::string& LogSink::Pending() {
  // Each thread's unfinished line per sink: lines of concurrent threads never interleave.
  thread_local std::unordered_map<const LogSink*, std::string> pending;
  return pending[this];
}

LogSink::int_type LogSink::overflow(int_type c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  const char ch = traits_type::to_char_type(c);
  xsputn(&ch, 1);
  return c;
}

std::streamsize LogSink::xsputn(const char* s, std::streamsize n) {
  std::string& line = Pending();
  for (std::streamsize i = 0; i < n; ++i) {
    if (s[i] == '\n') {
      Emit(line);
      line.clear();
    } else {
      line += s[i];
    }
  }
  return n;
}

int LogSink::sync() { return 0; }  // a record leaves whole, at its '\n'

void LogSink::Emit(std::string_view line) {
  const LogLevel level = LevelOfLine(line);
  if (level < min_level_) return;
  std::string record;
  if (format_ == LogFormat::kText) {
    record = std::string(line) + "\n";
  } else {
    static constexpr const char* kNames[] = {"info", "warning", "error"};
    const Micros now = clock_.Now().wall_us;
    record = JsonText(nlohmann::json{
                 {"time", fmt::format("{}.{:03}Z",
                                      FormatRfc3339(now - now % kMicrosPerSecond).substr(0, 19),
                                      (now % kMicrosPerSecond) / 1000)},
                 {"level", kNames[static_cast<int>(level)]},
                 {"component", component_},
                 {"msg", std::string(line)}}) +
             "\n";
  }
  std::lock_guard lock(mu_);
  out_->sputn(record.data(), static_cast<std::streamsize>(record.size()));
  out_->pubsync();
}

}  // namespace gpuledger
