// The embedded UI: `/` is index.html, every file of ui/src and ui/vendor is served under /ui/
// with its type and exact bytes, and nothing else is the UI's.
#include "ui/ui_assets.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_paths.h"

namespace gpuledger::ui {
namespace {

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(UiAssets, ServesEveryBuiltFileAsItIs) {
  const std::filesystem::path ui = std::filesystem::path(test_paths::kSourceDir) / "ui";
  int files = 0;
  for (const char* folder : {"src", "vendor"}) {
    for (const auto& entry : std::filesystem::directory_iterator(ui / folder)) {
      const std::string name = entry.path().filename().string();
      auto asset = FindAsset("/ui/" + name);
      ASSERT_TRUE(asset) << name;
      EXPECT_EQ(asset->body, ReadFile(entry.path())) << name;
      ++files;
    }
  }
  EXPECT_GE(files, 6);
  auto index = FindAsset("/");
  ASSERT_TRUE(index);
  EXPECT_EQ(index->content_type, "text/html; charset=utf-8");
  EXPECT_NE(index->body.find("<title>gpuledger</title>"), std::string_view::npos);
  EXPECT_EQ(FindAsset("/ui/app.js")->content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(FindAsset("/ui/app.css")->content_type, "text/css; charset=utf-8");
  // The glossary the footer links to, from the user docs, shown as text.
  auto glossary = FindAsset("/ui/glossary.md");
  ASSERT_TRUE(glossary);
  EXPECT_EQ(glossary->content_type, "text/plain; charset=utf-8");
  EXPECT_EQ(glossary->body,
            ReadFile(std::filesystem::path(test_paths::kSourceDir) / "docs/glossary.md"));
}

TEST(UiAssets, LeavesEveryOtherPathToTheApi) {
  for (const char* path : {"/api/v1/report", "/metrics", "/healthz", "/ui/", "/ui/missing.js",
                           "/ui/../CMakeLists.txt", "/index.htm", ""})
    EXPECT_FALSE(FindAsset(path)) << path;
}

}  // namespace
}  // namespace gpuledger::ui
