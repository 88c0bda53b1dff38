#include "ui/ui_assets.h"

#include <algorithm>
#include <array>
#include <utility>

namespace gpuledger::ui {
namespace {

constexpr std::string_view kPrefix = "/ui/";

std::string_view ContentTypeOf(std::string_view name) {
  // Markdown (the glossary) as text: every browser shows it rather than downloading it.
  constexpr std::array<std::pair<std::string_view, std::string_view>, 7> kTypes = {{
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".svg", "image/svg+xml"},
      {".json", "application/json"},
      {".txt", "text/plain; charset=utf-8"},
      {".md", "text/plain; charset=utf-8"},
  }};
  for (const auto& [suffix, type] : kTypes)
    if (name.ends_with(suffix)) return type;
  return "application/octet-stream";
}

}  // namespace

std::optional<Asset> FindAsset(std::string_view path) {
  std::string_view name;
  if (path == "/" || path == "/index.html") {
    name = "index.html";
  } else if (path.starts_with(kPrefix)) {
    name = path.substr(kPrefix.size());
  } else {
    return std::nullopt;
  }
  const EmbeddedFile* begin = kEmbeddedFiles;
  const EmbeddedFile* end = kEmbeddedFiles + kEmbeddedFileCount;
  const EmbeddedFile* file = std::lower_bound(
      begin, end, name, [](const EmbeddedFile& f, std::string_view n) { return f.name < n; });
  if (file == end || file->name != name) return std::nullopt;
  return Asset{ContentTypeOf(name),
               std::string_view(reinterpret_cast<const char*>(file->data), file->size)};
}

}  // namespace gpuledger::ui
