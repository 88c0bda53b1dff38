#include "io/yaml_document.h"

#include <map>
#include <string>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

namespace gpuledger {
namespace {

// Nodes visited, aliases expanded: far more than the largest file we read (a scenario imported
// from a trace), and a bound on a document whose aliases nest to expand exponentially.
constexpr long kMaxNodes = 4'000'000;

// The first key given twice in a mapping anywhere under `node`, as an error; ok when none.
Status CheckUniqueKeys(const YAML::Node& node, std::string_view file, int depth, long& visits) {
  if (++visits > kMaxNodes)
    return InvalidArgument(
        fmt::format("{}: more than {} YAML nodes with aliases expanded: refused", file, kMaxNodes));
  // Deeper than any file of ours nests; yaml-cpp already refused what would overflow its parser.
  if (depth > 64) return Status::Ok();
  if (node.IsMap()) {
    std::map<std::string, int> first_line;
    for (const auto& kv : node) {
      const int line = kv.first.Mark().line + 1;
      if (kv.first.IsScalar()) {
        auto [it, fresh] = first_line.try_emplace(kv.first.Scalar(), line);
        if (!fresh)
          return InvalidArgument(
              fmt::format("{}:{}: key '{}' given twice in one mapping (first on line {})", file,
                          line, kv.first.Scalar(), it->second));
      }
      if (Status s = CheckUniqueKeys(kv.second, file, depth + 1, visits); !s.ok()) return s;
    }
  } else if (node.IsSequence()) {
    for (const auto& item : node)
      if (Status s = CheckUniqueKeys(item, file, depth + 1, visits); !s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace

Result<YAML::Node> LoadYamlDocument(std::string_view text, std::string_view file) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return InvalidArgument(fmt::format("{}:{}: invalid YAML: {}", file, e.mark.line + 1, e.msg));
  }
  long visits = 0;
  if (Status s = CheckUniqueKeys(root, file, 0, visits); !s.ok()) return s.error();
  return root;
}

}  // namespace gpuledger
