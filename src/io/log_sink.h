#pragma once
// The one logging path of the long-running commands (`server`, `agent`): everything they write to
// std::cerr, line by line, as log records. Installed as std::cerr's buffer by main, so every part
// logs the way it already does (`err << "error: ..."`) and the format is chosen once, at the edge.
//
// Each thread collects its own line and hands it over whole at '\n', so lines of concurrent
// threads never interleave. A line's level is what it starts with: "error:" (or a "BUG"),
// "warning:", else info; lines below the minimum level are dropped.
//   text: the line as written (what a terminal wants);
//   json: {"time":"2026-12-05T06:40:47.123Z","level":"error","component":"server","msg":"..."},
//         one object a line, as cluster log pipelines (Fluent Bit, Vector, Loki) parse them.
//
// Thread-safe.

#include <mutex>
#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/result.h"

namespace gpuledger {

enum class LogFormat { kText, kJson };
enum class LogLevel { kInfo = 0, kWarning = 1, kError = 2 };

Result<LogFormat> ParseLogFormat(std::string_view text);  // "text" | "json"
Result<LogLevel> ParseLogLevel(std::string_view text);    // "info" | "warning" | "error"
LogLevel LevelOfLine(std::string_view line);

class LogSink : public std::streambuf {
 public:
  // `out` must outlive the sink (it is std::cerr's original buffer in production).
  LogSink(std::streambuf* out, LogFormat format, LogLevel min_level, std::string component,
          const Clock& clock);
  ~LogSink() override;

 protected:
  int_type overflow(int_type c) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;
  int sync() override;

 private:
  std::string& Pending();  // this thread's unfinished line
  void Emit(std::string_view line);

  std::streambuf* out_;
  const LogFormat format_;
  const LogLevel min_level_;
  const std::string component_;
  const Clock& clock_;
  std::mutex mu_;  // one record at a time on `out_`
};

}  // namespace gpuledger
