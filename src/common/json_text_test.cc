#include "common/json_text.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace gpuledger {
namespace {

TEST(JsonText, InvalidUtf8BecomesTheReplacementCharacterInsteadOfThrowing) {
  const nlohmann::json doc = {{"namespace", std::string("team-\xff\xfe-a")}, {"n", 1}};
  EXPECT_THROW((void)doc.dump(), nlohmann::json::type_error);  // what every site did before
  EXPECT_EQ(JsonText(doc), "{\"n\":1,\"namespace\":\"team-\xef\xbf\xbd\xef\xbf\xbd-a\"}");
  EXPECT_EQ(JsonText(nlohmann::json{{"a", "ok"}}, 1), "{\n \"a\": \"ok\"\n}");
}

}  // namespace
}  // namespace gpuledger
