#include "prometheus/metric_table.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "prometheus/exposition_parser.h"

namespace gpuledger::prometheus {
namespace {

// Every family is declared once, with a valid name, a type, help and a known exporter, and a
// counter is named with "_total" (promtool's convention).
TEST(MetricTable, EveryFamilyOnceAndWellFormed) {
  std::set<std::string_view> names;
  for (const MetricDef& def : MetricTable()) {
    SCOPED_TRACE(def.name);
    EXPECT_TRUE(names.insert(def.name).second) << "declared twice";
    EXPECT_TRUE(def.name.starts_with("gpuledger_"));
    EXPECT_NE(def.type, MetricType::kUntyped);
    EXPECT_FALSE(def.help.empty());
    EXPECT_TRUE(def.exporter == kExporterAgent || def.exporter == kExporterServer ||
                def.exporter == kExporterServerWebhook);
    EXPECT_EQ(def.type == MetricType::kCounter, def.name.ends_with("_total"));
    EXPECT_FALSE(def.labels.starts_with(',') || def.labels.ends_with(',') ||
                 def.labels.find(",,") != std::string_view::npos ||
                 def.labels.find(' ') != std::string_view::npos);
  }
}

// Family(def) writes what Family(name, help, type) does, and the parser reads it back.
TEST(MetricTable, FamilyOfADefWritesItsHelpAndType) {
  ExpositionWriter w;
  w.Family(kAgentSourceUp);
  w.Sample(kAgentSourceUp.name, {{"source", "nvml"}}, 1);
  const std::string text = w.Take();
  EXPECT_EQ(text,
            "# HELP gpuledger_agent_source_up Whether the source answered in the last cycle.\n"
            "# TYPE gpuledger_agent_source_up gauge\n"
            "gpuledger_agent_source_up{source=\"nvml\"} 1\n");
  auto parsed = ParseExposition(text);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->types.at("gpuledger_agent_source_up"), "gauge");
}

}  // namespace
}  // namespace gpuledger::prometheus
