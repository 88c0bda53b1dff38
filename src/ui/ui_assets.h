#pragma once
// The web UI's static files (ui/src and ui/vendor, embedded at build time by embed_assets.cmake),
// as the server answers them: `/` is index.html, `/ui/NAME` any other file. They carry no data: every
// figure a page shows it reads from the REST API.

#include <cstddef>
#include <optional>
#include <string_view>

namespace gpuledger::ui {

struct EmbeddedFile {
  const char* name;
  const unsigned char* data;
  std::size_t size;
};
// The generated table, sorted by name.
extern const EmbeddedFile kEmbeddedFiles[];
extern const std::size_t kEmbeddedFileCount;

struct Asset {
  std::string_view content_type;
  std::string_view body;
};

// The file a GET of `path` answers, or nullopt when the path is not the UI's (the API's, or no
// such file).
std::optional<Asset> FindAsset(std::string_view path);

}  // namespace gpuledger::ui
