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
  EXPECT_NE(text.find(gpt2 + "\thf:gpt2\tforward\teager\tcpu\toom\tmodel\n"), std::string::npos)
      << text;
  EXPECT_LT(text.find("hf:bert"), text.find("hf:gpt2"));
  EXPECT_LT(text.find("hf:gpt2"), text.find("hf:llama"));
  auto parsed = ParseExpectedStatus(text, "golden.tsv");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), 3u);
  EXPECT_EQ((*parsed)[1].test_id, gpt2);
  EXPECT_EQ((*parsed)[1].status, TestStatus::kOom);
  EXPECT_TRUE(CheckExpectedStatus(*parsed, ExpectedRuns()).empty());
  EXPECT_EQ(FormatExpectedMismatches({}, *parsed, ExpectedRuns()),
            "expected status: 3 tests, 0 changed, 0 missing, 0 unexpected\n"
            "pass rate: expected 33.3% (1 of 3 runs blamed on the model); actual 33.3% (1 of 3 "
            "runs blamed on the model)\n");
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
  const std::string text = FormatExpectedMismatches(mismatches, *expected, now);
  EXPECT_NE(text.find("expected status: 3 tests, 1 changed, 1 missing, 1 unexpected"),
            std::string::npos)
      << text;
}

TEST(ExpectedStatusTest, AFailureNotBlamedOnTheModelDoesNotLowerThePassRate) {
  std::vector<RunRecord> runs = ExpectedRuns();  // llama passes, gpt2 oom, bert fail_to_run
  runs[2].result.blame = "reduction";            // bert: compatlab's reduction failed
  const std::string text = FormatExpectedStatus(runs);
  EXPECT_NE(text.find("# pass rate: 50.0% (1 of 2 runs blamed on the model; 1 not the "
                      "model's)\n"),
            std::string::npos)
      << text;
  auto parsed = ParseExpectedStatus(text, "golden.tsv");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ((*parsed)[0].blame, "reduction");  // bert, first in file order
  EXPECT_EQ(*ExpectedPassRate(*parsed).Rate(), 0.5);
  EXPECT_TRUE(CheckExpectedStatus(*parsed, runs).empty());
  // The same status blamed on the model now is a change (the pass rate moved).
  std::vector<RunRecord> now = runs;
  now[2].result.blame = "model";
  auto mismatches = CheckExpectedStatus(*parsed, now);
  ASSERT_EQ(mismatches.size(), 1u);
  EXPECT_EQ(mismatches[0].actual, "fail_to_run");
  EXPECT_NE(FormatExpectedMismatches(mismatches, *parsed, now)
                .find("pass rate: expected 50.0% (1 of 2 runs blamed on the model; 1 not the "
                      "model's); actual 33.3% (1 of 3 runs blamed on the model)"),
            std::string::npos);
  // A format 1 file (six fields) reads as blamed on the model.
  auto old = ParseExpectedStatus(MakeSpec("llama").TestId() + "\ta\tb\tc\td\tpass\n", "g");
  ASSERT_TRUE(old.ok());
  EXPECT_EQ((*old)[0].blame, "model");
}

TEST(ExpectedStatusTest, RejectsMalformedFiles) {
  const std::string id = MakeSpec("llama").TestId();
  struct Case {
    std::string text;
    std::string needle;
  };
  for (const Case& c : std::vector<Case>{
           {id + "\thf:llama\tforward\teager\tcpu\n", "golden.tsv:1: expected 7"},
           {id + "\thf:llama\tforward\teager\tcpu\tpass\tnobody\n", "'nobody' is not a blame"},
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
