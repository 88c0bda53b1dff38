// The one YAML document reader (yaml_document.h).
#include "io/yaml_document.h"

#include <gtest/gtest.h>

#include <string>

#include <yaml-cpp/yaml.h>

namespace gpuledger {
namespace {

TEST(LoadYamlDocument, ReadsADocument) {
  auto doc = LoadYamlDocument("a: 1\nb: [x, {c: 2}]\n", "f.yaml");
  ASSERT_TRUE(doc.ok()) << doc.error().message;
  EXPECT_EQ((*doc)["b"][1]["c"].as<int>(), 2);
}

// Issue 29: yaml-cpp keeps both copies of a key and a lookup sees the first, so the second was
// ignored without a word.
TEST(LoadYamlDocument, AKeyGivenTwiceInOneMappingIsRefusedWithBothLines) {
  EXPECT_EQ(LoadYamlDocument("a: 1\nb: 2\na: 3\n", "f.yaml").error().message,
            "f.yaml:3: key 'a' given twice in one mapping (first on line 1)");
  EXPECT_EQ(LoadYamlDocument("nodes:\n  - {name: n, gpus: 1, gpus: 2}\n", "s.yaml").error().message,
            "s.yaml:2: key 'gpus' given twice in one mapping (first on line 2)");
  // The same key in two different mappings is fine.
  EXPECT_TRUE(LoadYamlDocument("- {a: 1}\n- {a: 2}\n", "f.yaml").ok());
}

TEST(LoadYamlDocument, ASyntaxErrorNamesFileAndLine) {
  EXPECT_EQ(LoadYamlDocument("a: 1\nb: [\n", "f.yaml").error().message.rfind("f.yaml:", 0), 0u);
}

TEST(LoadYamlDocument, AliasesThatExpandExponentiallyAreRefused) {
  // Nine levels of ten aliases each: 10^9 nodes once expanded.
  std::string doc = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 9; ++i) {
    doc += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) doc += (k ? ", *a" : "*a") + std::to_string(i - 1);
    doc += "]\n";
  }
  auto loaded = LoadYamlDocument(doc, "bomb.yaml");
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.error().message.find("more than 4000000 YAML nodes"), std::string::npos)
      << loaded.error().message;
}

}  // namespace
}  // namespace gpuledger
