#include "plan/strict_json.h"

#include "gtest/gtest.h"

namespace compatlab {
namespace {

TEST(StrictJsonTest, ParsesJsonWithDistinctKeys) {
  absl::StatusOr<nlohmann::json> j = ParseStrictJson(R"({"a": {"a": 1}, "b": [{"a": 2}]})", "f");
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ((*j)["a"]["a"], 1);
}

TEST(StrictJsonTest, RefusesAKeyTwiceInOneObjectAtAnyDepth) {
  for (const char* text : {R"({"name": "a", "name": "b"})", R"({"x": {"k": 1, "k": 2}})",
                           R"({"x": [{"k": 1, "j": 0, "k": 2}]})"}) {
    absl::StatusOr<nlohmann::json> j = ParseStrictJson(text, "suite.json");
    ASSERT_FALSE(j.ok()) << text;
    EXPECT_NE(j.status().message().find("appears twice"), std::string::npos) << j.status();
  }
}

TEST(StrictJsonTest, RefusesWhatIsNotJson) {
  absl::StatusOr<nlohmann::json> j = ParseStrictJson("{", "f");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().message(), "f: not valid JSON");
}

}  // namespace
}  // namespace compatlab
