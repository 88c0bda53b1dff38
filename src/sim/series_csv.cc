#include <algorithm>
#include <charconv>
#include <cmath>
#include <memory>
#include <utility>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "common/csv.h"
#include "common/strings.h"
#include "http/gzip.h"
#include "io/file_util.h"
#include "sim/scenario_parser.h"

namespace gpuledger::sim::scenario {

Result<std::string> ReadDataFile(const std::string& path, FileKind kind) {
  auto text = ReadFile(path, kind);
  if (!text.ok() || !path.ends_with(".gz")) return text;
  auto inflated = http::Gunzip(*text);
  if (!inflated.ok()) return IoError(fmt::format("{}: {}", path, inflated.error().message));
  return inflated;
}

std::shared_ptr<const Series> LoadSeries(Parser& p, const YAML::Node& c, const std::string& path,
                                         SeriesUnit unit) {
  std::string file = p.RequiredStr(c, "file", path);
  std::string column = p.Str(c["column"], path + ".column", "value");
  std::string time_column = p.Str(c["time_column"], path + ".time_column", "");
  double scale = p.Number(c["scale"], path + ".scale", 0, 1e9, 1.0);
  std::map<std::string, std::string> where = p.Labels(c["where"], path + ".where");
  if (p.failed()) return nullptr;
  std::string full =
      (file.starts_with("/") || p.base_dir().empty()) ? file : p.base_dir() + "/" + file;
  auto text = ReadDataFile(full);
  if (!text.ok()) {
    p.Fail(c["file"], path + ".file", text.error().message);
    return nullptr;
  }
  auto records = ParseCsv(*text, full);
  if (!records.ok()) {
    p.Fail(c["file"], path + ".file", records.error().message);
    return nullptr;
  }
  // Cells as written, but for the spaces some exporters pad them with.
  auto cell = [](const CsvRecord& r, int i) { return Trim(r.fields[i].value); };
  std::vector<std::string> header;
  if (!records->empty()) {
    for (int i = 0; i < static_cast<int>(records->front().fields.size()); ++i) {
      header.emplace_back(cell(records->front(), i));
    }
  }
  int vcol = -1, tcol = -1;
  std::vector<std::pair<int, std::string>> wcols;
  for (int i = 0; i < static_cast<int>(header.size()); ++i) {
    if (header[i] == column) vcol = i;
    if (time_column.empty() ? (tcol < 0 && header[i].find("time") != std::string::npos)
                            : header[i] == time_column)
      tcol = i;
    for (auto& [k, v] : where)
      if (header[i] == k) wcols.emplace_back(i, v);
  }
  if (vcol < 0 || tcol < 0 || wcols.size() != where.size()) {
    std::string columns;
    for (const std::string& h : header) columns += (columns.empty() ? "" : ",") + h;
    p.Fail(c, path,
           fmt::format("{}: header lacks the value, time or where columns ({})", full, columns));
    return nullptr;
  }
  std::vector<std::pair<double, double>> rows;  // (seconds, value)
  for (std::size_t r = 1; r < records->size(); ++r) {
    const CsvRecord& record = (*records)[r];
    const int cells = static_cast<int>(record.fields.size());
    bool keep = true;
    for (auto& [i, v] : wcols)
      if (i >= cells || cell(record, i) != v) keep = false;
    if (!keep) continue;
    double t = 0, v = 0;
    auto number = [&](int i, double& out) {
      std::string_view s = cell(record, i);
      return std::from_chars(s.data(), s.data() + s.size(), out).ec == std::errc() &&
             std::isfinite(out);
    };
    if (std::max(vcol, tcol) >= cells || !number(tcol, t) || !number(vcol, v)) {
      p.Fail(c, path,
             fmt::format("{}:{}: expected numbers in columns {} and {}", full, record.line,
                         header[tcol], header[vcol]));
      return nullptr;
    }
    rows.emplace_back(t, v);
  }
  if (rows.empty()) {
    p.Fail(c, path, fmt::format("{}: no rows match", full));
    return nullptr;
  }
  std::stable_sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.first < b.first; });
  auto s = std::make_shared<Series>();
  double t0 = rows.front().first;
  // Offsets are whole microseconds: a span past ten years (or a time that is no finite number)
  // is a wrong column or unit, not a trace.
  if (const double span = rows.back().first - t0; !(span >= 0 && span <= 10 * 366 * 86400.0)) {
    p.Fail(c, path, fmt::format("{}: the times span {} s; expected a trace of at most ten years in "
                                "seconds", full, span));
    return nullptr;
  }
  for (auto& [t, v] : rows) {
    Micros off = static_cast<Micros>(std::llround((t - t0) * 1e6));
    const double frac = unit == SeriesUnit::kPercent ? std::clamp(v / 100.0 * scale, 0.0, 1.0)
                                                     : std::max(v * scale, 0.0);
    if (!s->offset_us.empty() && s->offset_us.back() == off) {
      s->value.back() = frac;  // duplicate timestamp: the later row wins
      continue;
    }
    s->offset_us.push_back(off);
    s->value.push_back(frac);
  }
  std::vector<Micros> gaps;
  for (std::size_t i = 1; i < s->offset_us.size(); ++i)
    gaps.push_back(s->offset_us[i] - s->offset_us[i - 1]);
  Micros spacing = kMicrosPerSecond * 60;
  if (!gaps.empty()) {
    std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
    spacing = gaps[gaps.size() / 2];
  }
  s->period_us = s->offset_us.back() + spacing;
  s->prefix.resize(s->offset_us.size() + 1);
  s->prefix[0] = 0;
  for (std::size_t i = 0; i < s->offset_us.size(); ++i) {
    Micros next = i + 1 < s->offset_us.size() ? s->offset_us[i + 1] : s->period_us;
    s->prefix[i + 1] = s->prefix[i] + s->value[i] * static_cast<double>(next - s->offset_us[i]);
  }
  return s;
}

}  // namespace gpuledger::sim::scenario
