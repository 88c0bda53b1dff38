#include "prometheus/exposition_parser.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>

#include "common/strings.h"

namespace gpuledger::prometheus {
namespace {

bool IsNameStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }
bool IsLabelStart(char c) { return IsNameStart(c) && c != ':'; }
bool IsLabelChar(char c) { return IsNameChar(c) && c != ':'; }
bool IsBlank(char c) { return c == ' ' || c == '\t'; }

// What the line holds at the point of an error, short and printable.
std::string Snippet(std::string_view rest) {
  if (rest.empty()) return "end of line";
  std::string out = "'";
  for (char c : rest.substr(0, 24)) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    else
      out += c;
  }
  if (rest.size() > 24) out += "...";
  return out + "'";
}

// Go's strconv.ParseFloat as Prometheus uses it: decimal or exponent forms, an optional sign,
// Inf/+Inf/-Inf/NaN in any case.
bool ParseValue(std::string_view s, double& out) {
  if (s.empty()) return false;
  bool negative = false;
  std::string_view body = s;
  if (body[0] == '+' || body[0] == '-') {
    negative = body[0] == '-';
    body.remove_prefix(1);
  }
  auto lower_eq = [](std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if ((a[i] | 0x20) != b[i]) return false;
    return true;
  };
  if (lower_eq(body, "inf") || lower_eq(body, "infinity")) {
    out = negative ? -std::numeric_limits<double>::infinity()
                   : std::numeric_limits<double>::infinity();
    return true;
  }
  if (lower_eq(body, "nan")) {
    out = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (body.empty() || !(std::isdigit(static_cast<unsigned char>(body[0])) || body[0] == '.'))
    return false;
  double v = 0;
  auto [end, ec] =
      std::from_chars(body.data(), body.data() + body.size(), v, std::chars_format::general);
  if (end != body.data() + body.size()) return false;
  if (ec == std::errc::result_out_of_range) {
    // Go returns ±Inf for overflow (and an error); Prometheus rejects it: so do we. Underflow
    // to 0 is harmless. strtod tells the two apart (from_chars leaves v untouched).
    const std::string copy(body);
    if (std::abs(std::strtod(copy.c_str(), nullptr)) > 1) return false;
    v = 0;
  } else if (ec != std::errc()) {
    return false;
  }
  out = negative ? -v : v;
  return true;
}

class LineParser {
 public:
  LineParser(std::string_view line, std::size_t number) : line_(line), number_(number) {}

  // One non-comment line into `sample` and `ts`; an error message otherwise.
  Status ParseSample(Sample& sample, std::int64_t& ts) {
    std::size_t start = pos_;
    if (pos_ >= line_.size() || !IsNameStart(line_[pos_])) return Expected("a metric name");
    while (pos_ < line_.size() && IsNameChar(line_[pos_])) ++pos_;
    sample.name.assign(line_.substr(start, pos_ - start));
    SkipBlanks();
    if (pos_ < line_.size() && line_[pos_] == '{') {
      ++pos_;
      if (Status s = ParseLabels(sample.labels); !s.ok()) return s;
      SkipBlanks();
    }
    std::string_view value = Token();
    if (value.empty()) return Expected("a value");
    if (!ParseValue(value, sample.value)) return Error("expected a number as value", value);
    SkipBlanks();
    ts = kNoTimestamp;
    if (pos_ < line_.size()) {
      std::string_view t = Token();
      std::int64_t v = 0;
      auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
      // Digits only: Prometheus reads no sign.
      if (ec != std::errc() || end != t.data() + t.size() || t[0] < '0' || t[0] > '9')
        return Error("expected an integer timestamp (ms)", t);
      ts = v;
      SkipBlanks();
      if (pos_ < line_.size()) return Expected("end of line after the timestamp");
    }
    return Status::Ok();
  }

  // "# HELP name text" / "# TYPE name type" / any other comment, as Prometheus's lexer reads
  // them (model/textparse/promlex.l; the differential test holds us to it): HELP and TYPE are
  // keywords only after '#' and a blank and only with a blank after them, else the line is a
  // comment; the name is a metric name; the text is the rest of the line less its first
  // character (Prometheus takes that as the separator, whatever it is). HELP's text must be
  // UTF-8, TYPE's exactly a type. `pos_` is after '#'.
  Status ParseComment(std::map<std::string, std::string>& types) {
    if (pos_ >= line_.size() || !IsBlank(line_[pos_])) return Status::Ok();  // "#...": comment
    SkipBlanks();
    const std::string_view keyword = line_.substr(pos_, 4);
    if ((keyword != "HELP" && keyword != "TYPE") || pos_ + 4 >= line_.size() ||
        !IsBlank(line_[pos_ + 4]))
      return Status::Ok();  // a plain comment
    pos_ += 4;
    SkipBlanks();
    const std::size_t start = pos_;
    if (pos_ >= line_.size() || !IsNameStart(line_[pos_]))
      return Expected("a metric name after # " + std::string(keyword));
    while (pos_ < line_.size() && IsNameChar(line_[pos_])) ++pos_;
    std::string name(line_.substr(start, pos_ - start));
    std::string_view text = line_.substr(pos_);
    text = text.size() > 1 ? text.substr(1) : std::string_view();
    if (keyword == "HELP") {
      if (!IsValidUtf8(text)) return Error("invalid UTF-8 in the # HELP text of", name);
      return Status::Ok();  // docstring: anything, may be empty
    }
    static constexpr std::string_view kTypes[] = {"counter", "gauge", "histogram", "summary",
                                                  "untyped"};
    if (std::find(std::begin(kTypes), std::end(kTypes), text) == std::end(kTypes))
      return Error("expected a type (counter, gauge, histogram, summary, untyped)", text);
    types[name] = std::string(text);  // a later # TYPE line for the name wins, as in Prometheus
    return Status::Ok();
  }

  std::size_t pos_ = 0;

 private:
  Status ParseLabels(Labels& labels) {
    labels.clear();
    for (;;) {
      SkipBlanks();
      if (pos_ < line_.size() && line_[pos_] == '}') {
        ++pos_;
        break;
      }
      std::size_t start = pos_;
      if (pos_ >= line_.size() || !IsLabelStart(line_[pos_]))
        return Expected("a label name or '}'");
      while (pos_ < line_.size() && IsLabelChar(line_[pos_])) ++pos_;
      std::string name(line_.substr(start, pos_ - start));
      SkipBlanks();
      if (pos_ >= line_.size() || line_[pos_] != '=') return Expected("'=' after label " + name);
      ++pos_;
      SkipBlanks();
      if (pos_ >= line_.size() || line_[pos_] != '"')
        return Expected("'\"' to open the value of label " + name);
      ++pos_;
      std::string value;
      for (;;) {
        if (pos_ >= line_.size()) return Expected("'\"' to close the value of label " + name);
        char c = line_[pos_++];
        if (c == '"') break;
        if (c != '\\') {
          value += c;
          continue;
        }
        if (pos_ >= line_.size()) return Expected("an escape after '\\' in label " + name);
        // \\, \" and \n are unescaped; any other pair stays as written, as in Prometheus.
        char e = line_[pos_++];
        if (e == '\\' || e == '"') {
          value += e;
        } else if (e == 'n') {
          value += '\n';
        } else {
          value += '\\';
          value += e;
        }
      }
      // Prometheus's parsers refuse it too, and every JSON answer about the series would fail.
      if (!IsValidUtf8(value)) return Error("invalid UTF-8 in the value of label", name);
      // The metric name is the series' __name__: a second one is a duplicate label there.
      if (name == "__name__") return Error("a label may not be named", name);
      labels.emplace_back(std::move(name), std::move(value));
      SkipBlanks();
      // A comma between pairs is optional, as in Prometheus (`{a="1" b="2"}` is read too).
      if (pos_ < line_.size() && line_[pos_] == ',') ++pos_;
    }
    std::sort(labels.begin(), labels.end());
    for (std::size_t i = 1; i < labels.size(); ++i)
      if (labels[i].first == labels[i - 1].first) return Error("duplicate label", labels[i].first);
    return Status::Ok();
  }

  void SkipBlanks() {
    while (pos_ < line_.size() && IsBlank(line_[pos_])) ++pos_;
  }
  std::string_view Token() {
    std::size_t start = pos_;
    while (pos_ < line_.size() && !IsBlank(line_[pos_])) ++pos_;
    return line_.substr(start, pos_ - start);
  }
  Status Expected(const std::string& what) {
    return InvalidArgument(fmt::format("line {}: expected {}, got {}", number_, what,
                                       Snippet(line_.substr(std::min(pos_, line_.size())))));
  }
  Status Error(const std::string& what, std::string_view got) {
    return InvalidArgument(fmt::format("line {}: {} {}", number_, what, Snippet(got)));
  }

  std::string_view line_;
  std::size_t number_;
};

}  // namespace

Result<Exposition> ParseExposition(std::string_view text, const ParseOptions& options) {
  Exposition out;
  std::size_t number = 0;
  Sample sample;
  while (!text.empty()) {
    ++number;
    std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    // As Prometheus reads lines: blanks may open a comment but not a sample, may end a sample
    // but not a # TYPE line, and a CR is a character like any other (a CRLF document is
    // refused, as Prometheus refuses it).
    std::size_t lead = 0;
    while (lead < line.size() && IsBlank(line[lead])) ++lead;
    if (lead == line.size()) continue;
    LineParser p(line, number);
    Status status;
    sample.labels.clear();
    if (line[lead] == '#') {
      p.pos_ = lead + 1;
      status = p.ParseComment(out.types);
    } else if (lead > 0) {
      status = InvalidArgument(fmt::format(
          "line {}: expected a metric name at the start of the line, got a blank", number));
    } else {
      std::int64_t ts = kNoTimestamp;
      status = p.ParseSample(sample, ts);
      if (status.ok()) {
        out.samples.push_back(std::move(sample));
        out.timestamps_ms.push_back(ts);
        sample = Sample{};
      }
    }
    if (!status.ok()) {
      if (!options.skip_bad_lines) return status.error();
      ++out.bad_lines;
      if (out.errors.size() < options.max_errors_kept) out.errors.push_back(status.error().message);
    }
  }
  return out;
}

}  // namespace gpuledger::prometheus
