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

TEST(StrictJsonTest, RefusesValuesNestedPastTheBoundWithoutRecursingIntoThem) {
  // 100,000 levels: dumping or walking what nlohmann keeps of them would overflow the stack.
  const std::string deep =
      R"({"test": )" + std::string(100000, '[') + std::string(100000, ']') + "}";
  absl::StatusOr<nlohmann::json> j = ParseStrictJson(deep, "plan.json");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().message(), "plan.json: nested deeper than 64 levels");
  const std::string shallow = std::string(20, '[') + std::string(20, ']');
  EXPECT_TRUE(ParseStrictJson(shallow, "f").ok());
}

}  // namespace
}  // namespace compatlab
