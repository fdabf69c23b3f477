#include "plan/suite.h"

#include <algorithm>
#include <cstdlib>

#include "gtest/gtest.h"

namespace compatlab {
namespace {

TEST(SuiteTest, ParsesMatrixAndHarnessTests) {
  auto s = ParseSuite(R"({"name":"x","models":["llama","gpt2"],"kinds":["forward"],
      "seq_lens":[32,64],"ranks":[1,2],"timeout_s":10,
      "tests":[{"kind":"noop","repeat":3},{"kind":"hang","timeout_s":2,"ranks":2}]})",
                      "x.json");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->models.size(), 2u);
  EXPECT_EQ(s->seq_lens, (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(s->tests[0].repeat, 3);
  EXPECT_EQ(*s->tests[1].timeout_s, 2);
  EXPECT_EQ(s->ranks, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(s->tests[0].ranks, 1);
  EXPECT_EQ(s->tests[1].ranks, 2);
  EXPECT_EQ(s->targets, std::vector<std::string>{"cpu"});
}

TEST(SuiteTest, RejectsMalformedSuitesWithTheKeyInTheMessage) {
  struct Case {
    const char* text;
    const char* needle;
  } cases[] = {
      {"{", "not valid JSON"},
      {R"([1])", "must be an object"},
      {R"({"name":"x","models":["a"],"colour":"red"})", "'colour'"},
      {R"({"name":"x","models":[]})", "'models'"},
      {R"({"name":"x","models":["a"],"kinds":["dance"]})", "'kinds'"},
      {R"({"name":"x","models":["a"],"seq_lens":[0]})", "'seq_lens'"},
      {R"({"name":"x","models":["a"],"timeout_s":-1})", "'timeout_s'"},
      {R"({"name":"x","tests":[{"kind":"forward"}]})", "tests[0].kind"},
      {R"({"name":"x","tests":[{"repeat":2}]})", "needs a 'kind'"},
      {R"({"name":"x","tests":[{"kind":"noop","ranks":65}]})", "tests[0].ranks"},
      {R"({"models":["a"]})", "needs a 'name'"},
      {R"({"name":"x"})", "neither"},
      {R"({"name":"x","code_models":[]})", "'code_models'"},
      {R"({"name":"x","code_models":["m.py"]})", "'code_models'"},
      {R"({"name":"x","code_models":["m.py:2x"]})", "'code_models'"},
      {R"({"name":"x","code_models":["../m.py:build"]})", "'code_models'"},
      {R"({"name":"x","code_models":["d/../../m.py:build"]})", "'code_models'"},
      {R"({"name":"x","code_models":["/abs/m.py:build"]})", "'code_models'"},
  };
  for (const Case& c : cases) {
    auto s = ParseSuite(c.text, "bad.json");
    ASSERT_FALSE(s.ok()) << c.text;
    EXPECT_NE(std::string(s.status().message()).find(c.needle), std::string::npos)
        << c.text << " -> " << s.status();
    EXPECT_EQ(std::string(s.status().message()).find('\n'), std::string::npos);
  }
}

TEST(SuiteTest, CodeModelsAreAModelSourceAndASuiteKnowsWhereItCameFrom) {
  auto s = ParseSuite(R"({"name":"x","code_models":["cases/flex.py:causal_d64"]})", "x.json");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->code_models, std::vector<std::string>{"cases/flex.py:causal_d64"});
  EXPECT_FALSE(s->shipped);  // only LoadSuite by name says so

  const char* src = std::getenv("COMPATLAB_SOURCE_DIR");
  ASSERT_NE(src, nullptr);
  const std::filesystem::path dir = std::filesystem::path(src) / "suites";
  auto by_name = LoadSuite("flex-attention", dir);
  ASSERT_TRUE(by_name.ok()) << by_name.status();
  EXPECT_TRUE(by_name->shipped);
  EXPECT_EQ(by_name->dir, dir.lexically_normal());
  auto by_path = LoadSuite((dir / "flex-attention.json").string(), dir);
  ASSERT_TRUE(by_path.ok()) << by_path.status();
  EXPECT_FALSE(by_path->shipped);
}

TEST(SuiteTest, ShippedSuitesParse) {
  const char* src = std::getenv("COMPATLAB_SOURCE_DIR");
  ASSERT_NE(src, nullptr);
  std::filesystem::path dir = std::filesystem::path(src) / "suites";
  std::vector<std::string> names = ListSuiteNames(dir);
  for (const char* expected : {"smoke", "ci", "faults", "noop", "hf-all", "flex-attention"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  }
  for (const std::string& name : names) {
    auto s = LoadSuite(name, dir);
    EXPECT_TRUE(s.ok()) << s.status();
    if (s.ok()) {
      EXPECT_EQ(s->name, name);
    }
  }
}

TEST(SuiteTest, UnknownSuiteNameListsTheKnownOnes) {
  const char* src = std::getenv("COMPATLAB_SOURCE_DIR");
  ASSERT_NE(src, nullptr);
  auto s = LoadSuite("nope", std::filesystem::path(src) / "suites");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(std::string(s.status().message()).find("smoke"), std::string::npos);
}

}  // namespace
}  // namespace compatlab
