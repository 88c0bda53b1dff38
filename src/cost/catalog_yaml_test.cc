#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "cost/catalog.h"

namespace gpuledger::cost {
namespace {

constexpr const char* kExample = R"(# prices.yaml
currency: USD
default_class: on-demand
prices:
  - gpu_model: H100-80GB
    class: on-demand
    region: us-east-1
    hourly: 6.88
    source: "aws p5.48xlarge 55.04/8, 2026-07-20"
  - gpu_model: NVIDIA L4
    class: on-prem
    hourly: 0.35
  - gpu_model: T4
    class: on-demand
    hourly: 0.5
)";

TEST(ParseDecimalNanos, ExactFromTheText) {
  EXPECT_EQ(*ParseDecimalNanos("6.88"), 6'880'000'000);  // 6.88 is not exact as a double
  EXPECT_EQ(*ParseDecimalNanos("0.1"), 100'000'000);
  EXPECT_EQ(*ParseDecimalNanos("0.000000001"), 1);
  EXPECT_EQ(*ParseDecimalNanos("3.430881250"), 3'430'881'250);
  EXPECT_EQ(*ParseDecimalNanos("55"), 55'000'000'000);
  EXPECT_EQ(*ParseDecimalNanos("007.5"), 7'500'000'000);
  EXPECT_EQ(*ParseDecimalNanos("0"), 0);
  EXPECT_EQ(*ParseDecimalNanos("-1.5"), -1'500'000'000);
  EXPECT_EQ(*ParseDecimalNanos("9223372036.854775807"), INT64_MAX);
  for (const char* bad : {"", ".5", "5.", "1.2345678901", "6.88e0", "1e3", "+1", "1,5", "abc",
                          "9223372036.854775808", "99999999999", " 1", "1 ", "-", "0x10"}) {
    EXPECT_FALSE(ParseDecimalNanos(bad)) << bad;
  }
  EXPECT_NE(ParseDecimalNanos("1.2345678901").error().message.find("9 decimals"),
            std::string::npos);
}

TEST(ParseCatalogYaml, ExampleOnTopOfTheDefaults) {
  Catalog base = DefaultCatalog();
  auto c = ParseCatalogYaml(kExample, "prices.yaml", base);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->Find("H100-80GB", "on-demand", "us-east-1")->hourly_nanos, 6'880'000'000);
  EXPECT_EQ(c->Find("H100-80GB", "on-demand", "us-east-1")->source,
            "aws p5.48xlarge 55.04/8, 2026-07-20");
  EXPECT_EQ(c->Find("L4", "on-prem")->hourly_nanos, 350'000'000);    // replaced, normalised name
  EXPECT_EQ(c->Find("T4", "on-demand")->hourly_nanos, 500'000'000);  // replaced
  EXPECT_EQ(c->Find("T4", "on-demand")->source, "");
  // Entries the file does not name are kept; a region entry is added beside the any-region one.
  EXPECT_EQ(c->Find("H100-80GB", "on-demand")->hourly_nanos, 6'880'000'000);
  EXPECT_EQ(c->Find("A10G", "on-demand")->hourly_nanos, 2'036'000'000);
  EXPECT_EQ(c->entries.size(), base.entries.size() + 1);
}

TEST(ParseCatalogYaml, EmptyDocumentKeepsTheBase) {
  auto c = ParseCatalogYaml("", "empty.yaml", DefaultCatalog());
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->entries.size(), DefaultCatalog().entries.size());
  auto d = ParseCatalogYaml("currency: EUR\ndefault_class: reserved\nprices:\n", "eur.yaml", {});
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->currency, "EUR");
  EXPECT_EQ(d->default_class, "reserved");
}

std::string ErrorOf(const std::string& text, const Catalog& base = {}) {
  auto c = ParseCatalogYaml(text, "prices.yaml", base);
  if (c) return "parsed";
  EXPECT_EQ(c.error().code, ErrorCode::kInvalidArgument);
  return c.error().message;
}

TEST(ParseCatalogYaml, ErrorsNameFileLineAndField) {
  EXPECT_EQ(ErrorOf("prices:\n  - gpu_model: T4\n    class: on-demand\n    hourly: cheap\n"),
            "prices.yaml:4: field 'hourly': expected a non-negative decimal number with at most 9 "
            "decimals, like 6.88; got 'cheap'");
  EXPECT_EQ(ErrorOf("prices:\n  - gpu_model: T4\n    class: on-demand\n    hourly: 0.1234567891\n"),
            "prices.yaml:4: field 'hourly': expected a non-negative decimal number with at most 9 "
            "decimals, like 6.88; got '0.1234567891'");
  EXPECT_EQ(
      ErrorOf("currency: USD\nprice: []\n"),
      "prices.yaml:2: field 'price': unknown key; expected currency, default_class or prices");
  EXPECT_EQ(ErrorOf("prices:\n  - gpu_model: T4\n    class: on-demand\n    hourly: 1\n"
                    "    zone: a\n"),
            "prices.yaml:5: field 'zone': unknown key; expected gpu_model, class, region, hourly "
            "or source");
  EXPECT_EQ(ErrorOf("prices:\n  - gpu_model: T4\n    class: on-demand\n"),
            "prices.yaml:2: field 'hourly': expected a number (missing)");
  EXPECT_EQ(ErrorOf("prices:\n  - gpu_model: T4\n    class: On Demand\n    hourly: 1\n"),
            "prices.yaml:3: field 'class': expected a pricing class like on-demand (lowercase, "
            "digits, '-')");
  EXPECT_EQ(ErrorOf("prices:\n  - gpu_model: T4\n    class: spot\n    hourly: -1\n"),
            "prices.yaml:4: field 'hourly': expected a non-negative decimal number with at most 9 "
            "decimals, like 6.88; got '-1'");
  EXPECT_EQ(ErrorOf("prices:\n  - gpu_model: [T4]\n    class: spot\n    hourly: 1\n"),
            "prices.yaml:2: field 'gpu_model': expected a GPU model name like H100-80GB");
  EXPECT_EQ(ErrorOf("prices: {gpu_model: T4}\n"),
            "prices.yaml:1: field 'prices': expected a list of prices");
  EXPECT_EQ(ErrorOf("prices:\n  - gpu_model: T4\n    class: spot\n    hourly: 1\n"
                    "  - gpu_model: Tesla T4\n    class: spot\n    hourly: 2\n"),
            "prices.yaml:5: field 'gpu_model': duplicate price for T4/spot/any region (first at "
            "line 2)");
  EXPECT_EQ(ErrorOf("currency: EUR\n", DefaultCatalog()),
            "prices.yaml:1: field 'currency': expected USD (the base catalog's currency; one "
            "catalog holds one currency)");
  EXPECT_EQ(ErrorOf("currency: dollars\n"),
            "prices.yaml:1: field 'currency': expected a 3-letter currency code like USD");
  EXPECT_EQ(ErrorOf("- a\n- b\n"),
            "prices.yaml:1: field '(document)': expected a mapping with keys currency, "
            "default_class, prices");
}

TEST(ParseCatalogYaml, InvalidYamlNamesTheLine) {
  std::string e = ErrorOf("currency: USD\nprices:\n  - gpu_model: T4\n   class: [on-demand\n");
  EXPECT_EQ(e.rfind("prices.yaml:", 0), 0u) << e;
  EXPECT_NE(e.find("invalid YAML"), std::string::npos) << e;
  e = ErrorOf("a: 1\n\tb: 2\n");
  EXPECT_EQ(e.rfind("prices.yaml:2:", 0), 0u) << e;
}

TEST(LoadCatalogFile, ReadsAFileAndReportsAMissingOne) {
  std::string path =
      ::testing::TempDir() + "/gpuledger_catalog_" + std::to_string(::getpid()) + ".yaml";
  {
    std::ofstream out(path);
    out << kExample;
  }
  auto c = LoadCatalogFile(path, Catalog{});
  std::remove(path.c_str());
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->entries.size(), 3u);
  auto missing = LoadCatalogFile(path, Catalog{});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kIo);
  EXPECT_NE(missing.error().message.find(path), std::string::npos);
}

}  // namespace
}  // namespace gpuledger::cost
