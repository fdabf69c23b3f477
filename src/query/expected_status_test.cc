#include "query/expected_status.h"

#include "gtest/gtest.h"
#include "store/testing.h"

namespace compatlab {
namespace {

using test::MakeRun;
using test::MakeSpec;

std::vector<RunRecord> ExpectedRuns() {
  return {MakeRun("s1", MakeSpec("llama")), MakeRun("s1", MakeSpec("gpt2"), TestStatus::kOom),
          MakeRun("s1", MakeSpec("bert"), TestStatus::kFailToRun)};
}

TEST(ExpectedStatusTest, WritesSortedLinesAndReadsThemBack) {
  const std::string text = FormatExpectedStatus(ExpectedRuns());
  EXPECT_EQ(text.rfind("# compatlab expected status", 0), 0u) << text;
  const std::string gpt2 = MakeSpec("gpt2").TestId();
  EXPECT_NE(text.find(gpt2 + "\thf:gpt2\tforward\teager\tcpu\toom\n"), std::string::npos) << text;
  EXPECT_LT(text.find("hf:bert"), text.find("hf:gpt2"));
  EXPECT_LT(text.find("hf:gpt2"), text.find("hf:llama"));
  auto parsed = ParseExpectedStatus(text, "golden.tsv");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), 3u);
  EXPECT_EQ((*parsed)[1].test_id, gpt2);
  EXPECT_EQ((*parsed)[1].status, TestStatus::kOom);
  EXPECT_TRUE(CheckExpectedStatus(*parsed, ExpectedRuns()).empty());
  EXPECT_EQ(FormatExpectedMismatches({}, 3),
            "expected status: 3 tests, 0 changed, 0 missing, 0 unexpected\n");
}

TEST(ExpectedStatusTest, ReportsEveryChange) {
  auto expected = ParseExpectedStatus(FormatExpectedStatus(ExpectedRuns()), "golden.tsv");
  ASSERT_TRUE(expected.ok());
  std::vector<RunRecord> now = ExpectedRuns();
  now[0].result.status = TestStatus::kTimeout;   // llama changed
  now.erase(now.begin() + 1);                    // gpt2 missing
  now.push_back(MakeRun("s1", MakeSpec("t5")));  // t5 unexpected
  auto mismatches = CheckExpectedStatus(*expected, now);
  ASSERT_EQ(mismatches.size(), 3u);
  EXPECT_EQ(mismatches[0].what, ExpectedMismatch::kMissing);
  EXPECT_EQ(mismatches[0].expected.model_id, "hf:gpt2");
  EXPECT_EQ(mismatches[1].what, ExpectedMismatch::kChanged);
  EXPECT_EQ(mismatches[1].actual, "timeout");
  EXPECT_EQ(mismatches[2].what, ExpectedMismatch::kUnexpected);
  EXPECT_EQ(mismatches[2].expected.model_id, "hf:t5");
  const std::string text = FormatExpectedMismatches(mismatches, expected->size());
  EXPECT_NE(text.find("expected status: 3 tests, 1 changed, 1 missing, 1 unexpected"),
            std::string::npos)
      << text;
}

TEST(ExpectedStatusTest, RejectsMalformedFiles) {
  const std::string id = MakeSpec("llama").TestId();
  struct Case {
    std::string text;
    std::string needle;
  };
  for (const Case& c : std::vector<Case>{
           {id + "\thf:llama\tforward\teager\tcpu\n", "golden.tsv:1: expected 6"},
           {"# c\n\n" + id + "\thf:llama\tforward\teager\tcpu\tgreat\n", "golden.tsv:3: "},
           {"xyz\thf:llama\tforward\teager\tcpu\tpass\n", "'xyz' is not a test_id"},
           {id + "\ta\tb\tc\td\tpass\n" + id + "\ta\tb\tc\td\tpass\n", ":2: test"}}) {
    auto parsed = ParseExpectedStatus(c.text, "golden.tsv");
    ASSERT_FALSE(parsed.ok()) << c.text;
    EXPECT_NE(std::string(parsed.status().message()).find(c.needle), std::string::npos)
        << parsed.status();
  }
  EXPECT_TRUE(ParseExpectedStatus("", "golden.tsv")->empty());
  EXPECT_EQ(ParseExpectedStatus(id + "\ta\tb\tc\td\tpass\r\n", "g")->size(), 1u);
}

}  // namespace
}  // namespace compatlab
